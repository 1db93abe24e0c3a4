"""``nn.utils``: gradient clipping and flattening parameters; ``nn.utils.rnn``: packing and
padding variable-length sequences (PackedSequence); ``nn.utils.stateless``: calling a module
with other parameters and buffers (``functional_call``); ``nn.utils.parametrize`` and
``nn.utils.parametrizations``: parametrized tensors (orthogonal, weight and spectral norms);
the older hook-based ``weight_norm`` and ``spectral_norm``; fusing batch norms into
convolutions and linear layers; ``nn.utils.prune``: pruning parameters with masks."""

from __future__ import annotations

import math

import numpy as np

from ...autograd.grad_mode import no_grad
from ...autograd.tensor import Tensor, make
from ...kernels import backend, multi_tensor
from ...runtime import dtype as dtypes
from . import parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import clip_grads_with_norm_, get_total_norm
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "get_total_norm", "parameters_to_vector", "parametrizations", "parametrize", "prune",
           "remove_spectral_norm", "remove_weight_norm", "rnn", "spectral_norm", "stateless",
           "vector_to_parameters", "weight_norm"]


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


def _convert_weight_memory_format(module, memory_format, kinds: tuple):
    if isinstance(module, kinds):
        with no_grad():
            module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert_weight_memory_format(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Converts the ``weight`` of every ``nn.Conv2d`` and ``nn.ConvTranspose2d`` in ``module``
    (itself included, recursively) to ``memory_format`` (``channels_last``), leaving the
    other layers as they are; returns ``module``."""
    from ..conv import Conv2d, ConvTranspose2d
    return _convert_weight_memory_format(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """:func:`convert_conv2d_weight_memory_format` for ``nn.Conv3d`` and
    ``nn.ConvTranspose3d`` (``channels_last_3d``)."""
    from ..conv import Conv3d, ConvTranspose3d
    return _convert_weight_memory_format(module, memory_format, (Conv3d, ConvTranspose3d))


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamps every gradient elementwise into [-clip_value, clip_value], in place.
    ``foreach`` (an implementation strategy in PyTorch) does not change the result: ignored."""
    with no_grad():
        for g in _grads(parameters):
            g.copy_(g.maximum(g.new_full((), -clip_value)).minimum(g.new_full((), clip_value)))


def _check_same_device(params: list, op: str) -> None:
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise TypeError(f"{op}: found two parameters on different devices, this is currently "
                        f"not supported ({sorted(str(d) for d in devices)})")


def parameters_to_vector(parameters) -> Tensor:
    """Flatten an iterable of parameters into a single vector (recorded: gradients flow back
    to the parameters, as PyTorch's ``cat`` of their views)."""
    from ...autograd.ops.shape import cat
    params = list(parameters)
    if isinstance(parameters, Tensor):
        params = [parameters]
    if not params:
        raise RuntimeError("parameters_to_vector: expected a non-empty iterable of tensors "
                           "(cat of an empty list)")
    _check_same_device(params, "parameters_to_vector")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy slices of a vector into an iterable of parameters: each parameter's ``data``
    becomes the next ``numel()`` elements of ``vec``, viewed in its shape (sharing ``vec``'s
    storage, as PyTorch's)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    _check_same_device(params + [vec], "vector_to_parameters")
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-D vector of {total} elements "
                           f"(the parameters' total), got one of size {list(vec.shape)}")
    pointer = 0
    for p in params:
        n = p.numel()
        p.data = vec.detach()[pointer:pointer + n].view(tuple(p.shape))
        pointer += n


def skip_init(module_cls, *args, **kwargs):
    """Creates an instance of ``module_cls`` (with ``args`` and ``kwargs``) whose parameters
    and buffers are meant to be overwritten before use (PyTorch leaves them uninitialized).
    tritongrad has no meta device to build it without allocating, so it runs the constructor
    on ``device`` (default 'cpu'): the values are the constructor's initialization.

    Example:
        >>> m = tg.nn.utils.skip_init(tg.nn.Linear, 5, 1)
        >>> m.weight.shape
        tritongrad.Size([1, 5])
    """
    import inspect

    from ..module import Module
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    return module_cls(*args, **kwargs)


from . import convert_parameters  # (after the functions it re-exports)

__all__ += ["convert_parameters", "skip_init"]
