"""``nn.utils.clip_grad`` (PyTorch's module of the same name): ``clip_grad_norm_`` and its
two halves ``get_total_norm`` and ``clip_grads_with_norm_`` (PyTorch 2.6; for when the norm
is needed between them, to reduce it across ranks or to log it), ``clip_grad_value_`` and
the deprecated ``clip_grad_norm``; ``nn.utils`` re-exports them."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ...autograd.grad_mode import no_grad
from ...autograd.ops import creation
from ...autograd.ops.linalg_ext import vector_norm
from ...autograd.ops.shape import stack
from ...autograd.tensor import Tensor, make
from ...kernels import backend, multi_tensor
from ...runtime import dtype as dtypes

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm"]

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The norm of the norms of an iterable of tensors: the norm of their concatenation.

    Args:
        tensors: a tensor or an iterable of tensors (usually gradients).
        norm_type: the type of the p-norm (``inf`` for the infinity norm). Default: 2.
        error_if_nonfinite: if True, an error is raised when the total norm is NaN or
            infinite (which reads the norm back from a device). Default: False.
        foreach: accepted for PyTorch's signature; the result does not depend on it.

    Returns:
        The total norm, a 0-dim tensor on the first tensor's device.

    Example::

        >>> float(tg.nn.utils.get_total_norm([tg.tensor([3.0]), tg.tensor([4.0])]))
        5.0
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return creation.tensor(0.0)
    device = tensors[0].device
    with no_grad():
        norms = [vector_norm(t.detach(), norm_type).to(device) for t in tensors]
        total = vector_norm(stack(norms), norm_type)
    if error_if_nonfinite:
        _check_finite(float(total.item()), norm_type)
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scales the gradients of ``parameters`` in place by
    ``min(max_norm / (total_norm + 1e-6), 1)``, ``total_norm`` the norm of the gradients
    (from ``get_total_norm``): their norm is then at most ``max_norm``. Nothing is read back
    from a device.

    Args:
        parameters: a tensor or an iterable of tensors whose gradients are scaled.
        max_norm: the greatest norm of the gradients.
        total_norm: the total norm of the gradients, used for the scaling.
        foreach: accepted for PyTorch's signature; the result does not depend on it.
    """
    grads = _grads(parameters)
    if not grads:
        return
    if not isinstance(total_norm, Tensor):  # (PyTorch's clamp of a number: a TypeError)
        raise TypeError(f"clip_grads_with_norm_(): total_norm must be a Tensor (the result "
                        f"of get_total_norm), got {type(total_norm).__name__}")
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    with no_grad():
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))


def _grads(parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scales the gradients in place so that their joint ``norm_type``-norm is at most
    ``max_norm``: every gradient is multiplied by min(max_norm / (total + 1e-6), 1), as
    PyTorch's (a NaN total makes them NaN); returns the total norm before clipping, as a
    tensor. On a CUDA device nothing is read back (no sync) unless ``error_if_nonfinite``,
    which reads the total to raise RuntimeError when it is not finite. The total is PyTorch's:
    the ``norm_type``-norm of the gradients' norms (``inf`` the greatest |g|, ``-inf`` the
    least, 0 the number of gradients not all zero), in their promoted real dtype.

    ``foreach``: None (the default) or True computes with the backend's multi-tensor kernels
    where it has them and they apply (the Triton backend's kernels/triton/foreach.py: a few
    launches for all gradients together); False per gradient (a product, a sum and a
    scaling each). The result is the same either way, up to the order of the additions."""
    grads = _grads(parameters)
    from ...autograd.ops.creation import tensor
    if not grads:
        return tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        total = _clip_on_host(grads, max_norm, norm_type, error_if_nonfinite)
        if total is not None:
            return total
        if foreach is not False:
            total = _clip_multi_tensor(grads, max_norm, norm_type, error_if_nonfinite)
            if total is not None:
                return total
        if norm_type == math.inf:  # (Note [An empty gradient under the inf norm])
            parts = [g.detach().abs().amax() if hasattr(g, "amax") else
                     tensor(float(abs(g.detach().cpu().numpy()).max()), device=g.device)
                     for g in grads if g.numel()]
            total = parts[0] if parts else tensor(0.0, dtype=grads[0].dtype.to_real(),
                                                  device=grads[0].device)
            for p in parts[1:]:
                total = total.maximum(p.to(total.device))
        elif norm_type == 2.0:
            total = _sum_of_squares(grads).sqrt().to(_norm_dtype(grads))
        else:  # PyTorch's own way: the norm of the gradients' norms (-inf: the least |g|)
            total = get_total_norm(grads, norm_type)
        on_host = all(g.device.type == "cpu" for g in grads)
        if error_if_nonfinite or on_host:  # (a device's value is read only to raise, as PyTorch)
            value = float(total.item())
            if error_if_nonfinite:
                _check_finite(value, norm_type)
        # PyTorch multiplies every gradient by min(max_norm / (total + 1e-6), 1) (a NaN total
        # makes them NaN); in place on the arrays, as a fused optimizer update writes
        if on_host:
            coef = max_norm / (value + 1e-6)
            if not coef >= 1.0:  # (multiplying by 1 changes nothing: skipped)
                _scale(grads, lambda g: coef)
        else:  # on the device, without reading the norm back (no sync)
            clamped = (max_norm / (total + 1e-6)).clamp(max=1.0)
            cast = {}
            _scale(grads, lambda g: cast.get((g.device, g.dtype)) or cast.setdefault(
                (g.device, g.dtype), clamped.to(g.device, g.dtype)._data))
    return total


def _norm_dtype(grads: list):
    """The dtype of PyTorch's total: its per-gradient norms (each in its gradient's real dtype)
    are stacked, so the total has their promoted dtype (float32 and float64 gradients: a
    float64 total; float16 and bfloat16: float32)."""
    dt = grads[0].dtype.to_real()
    for g in grads[1:]:
        if g.dtype is not grads[0].dtype:
            dt = dtypes.promote_types(dt, g.dtype.to_real())
    return dt


# Note [An empty gradient under the inf norm]
# PyTorch's inf norm of an empty gradient raises ("_foreach_norm cannot compute the infinity
# norm on an empty tensor ..."): max has no identity. clip_grad_norm_ here lets an empty
# gradient count for nothing under inf, in all three paths alike (the host one, the
# multi-tensor kernels', the general one), rather than fail a step for a zero-size parameter.
# Negative norm types (-inf: the least |g|) go through get_total_norm, PyTorch's way, and raise
# on an empty gradient as PyTorch's linalg.vector_norm does.


def _check_finite(value: float, norm_type: float) -> None:
    if not math.isfinite(value):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           f"`parameters` is non-finite, so it cannot be clipped. To "
                           f"disable this error and scale the gradients by the "
                           f"non-finite norm anyway, set `error_if_nonfinite=False`")


def _clip_on_host(grads: list, max_norm: float, norm_type: float, error_if_nonfinite: bool):
    """clip_grad_norm_ for CPU gradients held as plain float32/float64 NumPy arrays (None for
    any other): each gradient's norm in one pass without temporaries where it can (a BLAS dot
    for the 2-norm, max and min for inf), then one in-place scaling each. A GPT step clips some
    fifty gradients, so the Tensor ops of the general path (a product, a sum, a node each) cost
    more than the arithmetic. The total is PyTorch's: the ``norm_type``-norm of the gradients'
    norms (for 0 that is the number of gradients with a nonzero element), in their dtype."""
    arrays = []
    for g in grads:
        a = g._data
        if g.device.type != "cpu" or type(a) is not np.ndarray or \
                a.dtype not in (_F32, _F64) or a.dtype != grads[0]._data.dtype:
            return None
        arrays.append(a)
    if norm_type < 0:  # (-inf and negative p: min-like, on the general path)
        return None
    flat = [a.reshape(-1) for a in arrays]  # (a view for contiguous gradients)
    if norm_type == 2.0:  # vdot accumulates in the arrays' dtype, as PyTorch's sum of squares
        total = math.sqrt(sum(float(np.vdot(f, f)) for f in flat))
    elif math.isinf(norm_type):  # max |g| without |g|: NaN propagates through max and min
        per = [max(float(f.max()), -float(f.min())) if f.size else 0.0 for f in flat]
        total = float(np.max(per)) if not any(map(math.isnan, per)) else math.nan
    elif norm_type == 0.0:
        total = float(sum(np.count_nonzero(f) > 0 for f in flat))
    else:
        total = sum(float(np.power(np.abs(f), norm_type).sum(dtype=f.dtype)) for f in flat) \
            ** (1.0 / norm_type)
    value = arrays[0].dtype.type(total)  # (rounded as PyTorch's, which computes in the dtype)
    if error_if_nonfinite:
        _check_finite(float(value), norm_type)
    coef = max_norm / (float(value) + 1e-6)
    if not coef >= 1.0:  # (multiplying by 1 changes nothing: skipped; a NaN total scales)
        c = arrays[0].dtype.type(coef)
        with np.errstate(invalid="ignore"):  # (inf * 0 under an infinite total: NaN, quietly)
            for g, a in zip(grads, arrays):
                np.multiply(a, c, out=a)
                g._vc[0] += 1
    return make(np.asarray(value))


def _clip_multi_tensor(grads: list, max_norm: float, norm_type: float,
                       error_if_nonfinite: bool):
    """clip_grad_norm_ through the backend's multi-tensor norm and scaling (the total, on the
    gradients' device), or None where the backend has none or they do not apply to these
    gradients (dtypes, layouts, devices, norm type: kernels/triton/foreach.py)."""
    multi = multi_tensor(grads[0].device)
    if multi is None:
        return None
    arrays = [g._data for g in grads]
    try:
        total, coef = multi.norm(arrays, norm_type, max_norm)
    except TypeError:
        return None
    total = make(total)  # (in the first gradient's dtype: PyTorch's promotes over all)
    dt = _norm_dtype(grads)
    if total.dtype is not dt:
        total = total.to(dt)
    if error_if_nonfinite:
        _check_finite(float(total.item()), norm_type)
    multi.mul_(arrays, coef)
    for g in grads:
        g._vc[0] += 1
    return total


def _scale(grads: list, factor) -> None:
    """Multiplies each gradient in place by ``factor(g)`` (a number or a 0-d array)."""
    for g in grads:
        backend(g.device).mul(g._data, factor(g), out=g._data)
        g._vc[0] += 1


def _sum_of_squares(grads: list) -> Tensor:
    """sum(|g|^2) over every element of every gradient, accumulated in float32 (float64 for
    float64 and complex128 gradients), as a 0-d tensor on the first gradient's device: one
    product and one sum per gradient on the backend's arrays (the gradient-clipping step runs
    it for every parameter, so Tensor bookkeeping would cost more than the arithmetic)."""
    sums = {}
    for g in grads:
        k, a = backend(g.device), g._data
        if g.dtype.is_complex:  # |g|^2 = conj(g) g, real
            sq = k.real(k.mul(k.conj(a), a))
        else:
            if g.dtype is not dtypes.float32 and g.dtype is not dtypes.float64:
                a = k.astype(a, dtypes.float32)
            sq = k.mul(a, a)
        s = k.sum(sq, tuple(range(g.ndim)), False)
        prev = sums.get(g.device)
        sums[g.device] = s if prev is None else k.add(prev, s)
    parts = [make(s) for s in sums.values()]
    total = parts[0]
    for p in parts[1:]:
        total = total + p.to(total.device, total.dtype)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """PyTorch's old name of :func:`clip_grad_norm_` (warns)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamps every gradient elementwise into [-clip_value, clip_value], in place.
    ``foreach`` (an implementation strategy in PyTorch) does not change the result: ignored."""
    with no_grad():
        for g in _grads(parameters):
            g.copy_(g.maximum(g.new_full((), -clip_value)).minimum(g.new_full((), clip_value)))
