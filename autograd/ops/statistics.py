"""Statistics and small composites PyTorch programs reach for: ``nansum``, ``nanmean``,
``count_nonzero``, ``aminmax``, ``dist``, ``cov``, ``corrcoef``, ``fmax``, ``fmin``, ``frac``,
``rot90``, ``broadcast_tensors``, ``logspace`` (and ``tg.can_cast``, a dtype rule).

``nansum``, ``aminmax``, ``dist``, ``fmax``/``fmin`` (the maximum / minimum ignoring NaN),
``frac`` and ``rot90`` (flips and a transpose) are one node each, as PyTorch records them
(``NansumBackward0``, ``AminmaxBackward0``, ``DistBackward0``, ``FmaxBackward0``/
``FminBackward0``, ``FracBackward0``, ``Rot90Backward0``), their forwards made of the kernel
contract's reductions, comparisons, ``where`` and flips; the others are composites of
differentiable ops (no kernel of their own), so both backends run them and their derivatives
come through their parts:

- nanmean: nansum / the non-NaN count;
- cov: ``sum_i w_i (x_i - mean_w)(y_i - mean_w) / (sum w - correction)`` with
  w = fweights * aweights (PyTorch's weighted, bias-corrected estimate; with aweights the
  correction is scaled by sum(w a) / sum(w)); corrcoef: cov / sqrt(var_x var_y), clipped to
  [-1, 1] as NumPy and PyTorch do.
"""

from __future__ import annotations

import collections
import warnings

from ...runtime import dtype as dtypes
from ..checks import check_ordered, kernel_not_implemented, scalar_type_name, tensor_arg
from ..dispatch import SINK, Primitive, apply, call, elementwise_jvp, linear_jvp
from ..registry import OpInfo, with_inplace
from ..storage import _c_type as c_type_name
from ..tensor import Tensor, array_meta, int_arg, wrap_dim
from .combinations import FlipBackward0
from .elementwise import _result, binary_operands, broadcast_shapes, isnan, where
from .linalg_ext import LinalgVectorNormBackward0
from .reduction import _expand_back, _ties_backward, _ties_jvp, reduce_dims, return_types


class _MinMax(collections.namedtuple("aminmax", ["min", "max"])):
    """aminmax's result, printed as PyTorch's ``torch.return_types.aminmax``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"tritongrad.return_types.aminmax(\nmin={self.min!r},\nmax={self.max!r})"


_MinMax.__name__, _MinMax.__qualname__ = "aminmax", "return_types.aminmax"  # (pickle's path)
return_types.aminmax = _MinMax

__all__ = ["aminmax", "broadcast_tensors", "can_cast", "corrcoef", "count_nonzero", "cov",
           "dist", "fmax", "fmin", "frac", "logspace", "nanmean", "nansum", "rot90"]


class NansumBackward0(Primitive):
    """nansum over ``dims``, saving the input (PyTorch's): dx = g broadcast back, times
    ``not isnan(x)`` (a product, not a selection, as PyTorch's ``grad * self.isnan()
    .logical_not()``: an infinite g gives NaN at a NaN, which is what makes nanmean's gradient
    NaN over an all-NaN slice, where its count is 0). The product's ``g * 0`` at the NaNs is
    computed as ``g / inf`` (0 for a finite g, NaN otherwise) because the contract's ``div``
    is silent where NumPy's ``mul`` warns on ``inf * 0``. jvp: the tangent with NaN places
    zeroed, summed."""

    __slots__ = ()
    op_name = "nansum"
    save_inputs = (0,)

    @staticmethod
    def forward(ctx, k, x, dims, keepdim):
        ctx.dims, ctx.keepdim = dims, keepdim
        return k.sum(k.where(k.ne(x, x), 0, x), dims, keepdim)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        g = _expand_back(k, g, tuple(x.shape), ctx.dims, ctx.keepdim)
        return k.where(k.eq(x, x), g, k.div(g, float("inf")))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, dims, keepdim):
        return where(isnan(primals[0]), 0.0, tangents[0]).sum(dims, keepdim)


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The sum of the elements over ``dim`` (all by default), NaN counted as zero; in
    ``dtype`` when given (the input cast first, as PyTorch). Floating inputs (complex ones on
    CUDA; PyTorch's CPU kernel refuses them) are one ``NansumBackward0`` node saving the input, whose gradient is 0 at the NaNs.

    Example:
        >>> tg.nansum(tg.tensor([1., float("nan"), 2.]))
        tensor(3.)
    """
    x = tensor_arg(input, "nansum")
    dims = reduce_dims(x, dim, "nansum")  # (its errors name this op, not sum)
    if x.device.type == "cpu" and (x.dtype.is_complex or (dtype is not None
                                                          and dtype.is_complex)):
        if x.dtype.is_complex:  # (PyTorch's CPU kernel has no complex form; CUDA's has)
            raise RuntimeError("nansum on CPU does not support complex inputs")
        raise kernel_not_implemented("nansum_cpu", dtype)
    if dim is None:  # (every dim; keepdim keeps them all, as PyTorch's)
        dim = tuple(range(x.ndim))
    floating = x.dtype.is_floating_point or x.dtype.is_complex
    if dtype is not None and (dtype.is_floating_point or dtype.is_complex):
        x = x.to(dtype)
    elif dtype is not None or not floating:  # (integers: no NaN; an integer dtype= takes
        if floating:                          # sum's rules, refused where autograd records)
            x = where(isnan(x), 0.0, x)
        return x.sum(dim, keepdim, dtype=dtype)
    return apply(NansumBackward0, (x,), dims, bool(keepdim))


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of the non-NaN elements over ``dim`` (all by default): ``nansum / count``, NaN
    where a slice has no non-NaN element. Its gradient is ``g / count`` at the non-NaN
    elements, 0 at NaNs, and NaN over an all-NaN slice (0 / 0), as PyTorch's.

    Example:
        >>> tg.nanmean(tg.tensor([1., float("nan"), 2.]))
        tensor(1.5000)
    """
    x = tensor_arg(input, "nanmean")
    reduce_dims(x, dim, "nanmean")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {x.dtype}")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"nanmean(): could not infer output dtype. Optional dtype must be "
                           f"either a floating point or complex dtype. Got: {dtype}")
    keep = isnan(x).logical_not()
    if dim is None:
        dim = tuple(range(x.ndim))
    return nansum(x, dim, keepdim, dtype=dtype) / keep.sum(dim, keepdim)


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """The number of nonzero elements (int64), over ``dim`` (an int or tuple) or all."""
    x = tensor_arg(input, "count_nonzero")
    reduce_dims(x, dim, "count_nonzero")  # (its errors name this op, not sum)
    nz = (x != 0).to(dtypes.int64)
    return nz.sum() if dim is None else nz.sum(dim)


class AminmaxBackward0(Primitive):
    """(amin, amax) over ``dims``, one node with two outputs as PyTorch's (a hook on it sees
    both gradients), saving the input and both results: each gradient is shared evenly
    among the elements tied at its extreme (amin's and amax's rule; a NaN extreme gives NaN).
    jvp: the mean of the tied elements' tangents, per output."""

    __slots__ = ()
    op_name = "aminmax"
    save_inputs = (0,)
    keep_outputs = (0, 1)
    saved_names = ("self", "min", "max")
    _saved_dim = property(lambda n: n.dim)  # (as PyTorch's node shows them: None for all)
    _saved_keepdim = property(lambda n: n.keepdim)

    @staticmethod
    def forward(ctx, k, x, dims, keepdim, dim):
        ctx.dims, ctx.keepdim, ctx.dim, ctx.nan_equal = dims, keepdim, dim, False
        return k.reduce("amin", x, dims, keepdim), k.reduce("amax", x, dims, keepdim)

    @staticmethod
    def vjp(ctx, k, saved, g_min, g_max):
        x, lo, hi = saved
        dims, keep = ctx.dims, ctx.keepdim
        gx = None if g_min is None else _ties_backward(k, g_min, x, lo, dims, keep, False)
        if g_max is not None:
            other = _ties_backward(k, g_max, x, hi, dims, keep, False)
            gx = other if gx is None else k.add(gx, other)
        return gx

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        return _ties_jvp(ctx, k, primals, tangents, out[0]), \
            _ties_jvp(ctx, k, primals, tangents, out[1])


def aminmax(input: Tensor, *, dim=None, keepdim: bool = False, out=None):
    """``(min, max)`` of the elements, over ``dim`` or all (a named tuple); ``out``: a pair of
    tensors of the input's dtype to write them into. One ``AminmaxBackward0`` node: tied
    elements share each gradient evenly."""
    x = tensor_arg(input, "aminmax")
    if out is not None:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError("aminmax(): argument 'out' must be tuple of Tensors")
        for o in out:
            if isinstance(o, Tensor) and o.dtype is not x.dtype:
                raise RuntimeError(f"Expected out tensor to have dtype {c_type_name(x.dtype)}, "
                                   f"but got {c_type_name(o.dtype)} instead")
        lo, hi = aminmax(x, dim=dim, keepdim=keepdim)
        return _MinMax(_result(lo, out[0], "aminmax"), _result(hi, out[1], "aminmax"))
    check_ordered(x, "aminmax")
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = tuple(range(x.ndim))
    else:
        if not isinstance(dim, int):
            dim = int_arg(dim, "aminmax", "dim")
        dims = reduce_dims(x, dim, "aminmax")
        for d in dims:
            if x.shape[d] == 0:
                raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return _MinMax(*apply(AminmaxBackward0, (x,), dims, bool(keepdim), dim))


class DistBackward0(LinalgVectorNormBackward0):
    """The ``p``-norm of ``input - other`` (broadcast) over all elements, one node saving both
    operands and the result (PyTorch's): the norm's rule (linalg_vector_norm's, 0 where the
    norm is 0) for the difference, to ``input`` and negated to ``other``; none for p = 0, a
    count (PyTorch's backward fails there). jvp: the norm's tangent of ``t_input -
    t_other``."""

    __slots__ = ()
    op_name = "dist"
    save_inputs = (0, 1)
    save_output = True
    broadcasts = True
    _saved_p = property(lambda n: n.ord)  # (as PyTorch's node shows it)

    @staticmethod
    def forward(ctx, k, a, b, p):
        diff = k.sub(a, b)
        return LinalgVectorNormBackward0.forward(ctx, k, diff, p, tuple(range(len(diff.shape))),
                                                 False, None)

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, b, y = saved
        gd = LinalgVectorNormBackward0.vjp(ctx, k, (k.sub(a, b), y), g)
        if gd is None:
            return None, None
        need_a, need_b = ctx.needs_input_grad
        return gd if need_a else None, k.neg(gd) if need_b else None

    complex_vjp = vjp  # (the norm's rule, written with sgn(x): PyTorch's for complex too)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        (a, b), (ta, tb) = primals, tangents
        t = k.neg(tb) if ta is None else ta if tb is None else k.sub(ta, tb)
        diff = k.sub(a, b)
        if tuple(t.shape) != tuple(diff.shape):  # (one operand broadcast)
            t = k.expand(t, tuple(diff.shape))
        return LinalgVectorNormBackward0.jvp(ctx, k, (diff,), (t,), out)

    complex_jvp = jvp


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of ``input - other`` (broadcast), over all elements: ``p`` any number
    (0: the count of differing elements, +-inf: the largest / smallest ``|difference|``). One
    ``DistBackward0`` node.

    Example:
        >>> tg.dist(tg.tensor([1., 2.]), tg.tensor([4., 6.]))
        tensor(5.)
    """
    tensor_arg(input, "dist")
    tensor_arg(other, "dist", "other")
    a, b = binary_operands(input, other, "dist")
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {scalar_type_name(a.dtype)} instead.")
    if isinstance(p, Tensor):
        p = p.item()
    return apply(DistBackward0, (a, b), float(p))


def _cov_weights(w, name: str, n: int, integral: bool) -> Tensor:
    """``fweights`` (``integral``) or ``aweights`` checked as PyTorch's cov does, in its order:
    rank, dtype, count, then sign (a NaN fails it too, as PyTorch's ``min() >= 0``)."""
    w = tensor_arg(w, "cov", name)
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.ndim} dimensions")
    dt = w.dtype
    if integral:  # (bool is no integral dtype to PyTorch's check)
        ok = not (dt.is_floating_point or dt.is_complex or dt is dtypes.bool)
    else:
        ok = dt.is_floating_point
    if not ok:
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{scalar_type_name(w.dtype)} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n}")
    if n and not bool((w >= 0).all()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w.reshape(-1)


def _cov_input(input, op: str) -> Tensor:
    """``input`` as cov's 2-D (variables, observations) view, or PyTorch's errors (corrcoef's
    rank error names corrcoef, its dtype error cov, as PyTorch's)."""
    x = tensor_arg(input, op)
    if x.ndim > 2:
        raise RuntimeError(f"{op}(): expected input to have two or fewer dimensions but got an "
                           f"input with {x.ndim} dimensions")
    if x.dtype is dtypes.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    return x.reshape(1, -1) if x.ndim < 2 else x


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance of the variables in the rows of ``input`` (observations in the
    columns; a 1-D input is one variable), PyTorch's weighted estimate (module docstring).
    As PyTorch's, the result is squeezed: one variable gives a 0-d tensor."""
    x = _cov_input(input, "cov")
    if type(correction) is not int:
        if isinstance(correction, bool):  # (operator.index takes a bool; PyTorch refuses it)
            raise TypeError("cov(): argument 'correction' must be int, not bool")
        correction = int_arg(correction, "cov", "correction")
    n = x.shape[1]
    if fweights is not None:
        fweights = _cov_weights(fweights, "fweights", n, True)
    if aweights is not None:
        aweights = _cov_weights(aweights, "aweights", n, False)
    # the dtype PyTorch's products give: an integer input computes in the default float
    # dtype, and float64 aweights promote a float32 input
    dt = x.dtype if x.dtype.is_floating_point or x.dtype.is_complex else \
        dtypes.get_default_dtype()
    if aweights is not None:
        dt = dtypes.promote_types(dt, aweights.dtype)
    x = x.to(dt)
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        total = float(n)
        mean = x.mean(1, keepdim=True)
        norm = total - correction
    else:
        total = w.sum()
        if not bool(total != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        mean = (x * w).sum(1, keepdim=True) / total
        if correction == 0:
            norm = total
        elif aweights is None:
            norm = total - correction
        else:
            norm = total - correction * (w * aweights.to(x.dtype)).sum() / total
    if isinstance(norm, Tensor):
        norm = norm.clamp(min=0.0)
    elif norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", stacklevel=2)
        norm = 0.0
    xc = x - mean
    xw = xc if w is None else xc * w
    return (xw.matmul(xc.transpose(0, 1).conj()) / norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in the rows of ``input``:
    cov / sqrt(var_i var_j), clipped to [-1, 1]."""
    _cov_input(input, "corrcoef")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    stddev = d.sqrt() if not d.dtype.is_complex else d.real.sqrt()
    c = c / stddev.unsqueeze(1) / stddev.unsqueeze(0)
    return c.clamp(-1.0, 1.0) if not c.dtype.is_complex else c


class FmaxBackward0(Primitive):
    """fmax: the larger operand, ``input`` where the two tie or ``other`` is NaN (NaN only
    where both are), one node saving both (PyTorch's): ``g`` goes to the operand chosen,
    ``input`` on ties (not split, as maximum's). The operands broadcast."""

    __slots__ = ()
    op_name = "fmax"
    save_inputs = (0, 1)
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)
    _cmp = "ge"

    @classmethod
    def forward(cls, ctx, k, a, b):
        return k.where(k.ne(b, b), a, k.where(getattr(k, cls._cmp)(a, b), a, b))

    @classmethod
    def vjp(cls, ctx, k, saved, g):
        a, b = saved
        # (input is chosen where other is NaN or it wins or ties; other elsewhere)
        to_a = k.where(k.ne(b, b), True, getattr(k, cls._cmp)(a, b))
        need_a, need_b = ctx.needs_input_grad
        return (k.where(to_a, g, 0.0) if need_a else None,
                k.where(to_a, 0.0, g) if need_b else None)


FminBackward0 = FmaxBackward0.variant("FminBackward0", "fmin", _cmp="le")


def _fmax_like(op: type, input: Tensor, other: Tensor, out) -> Tensor:
    name = op.op_name
    tensor_arg(input, name)
    tensor_arg(other, name, "other")
    a, b = binary_operands(input, other, name)
    if a.dtype.is_complex:
        raise RuntimeError(f"{name} not implemented for complex tensors.")
    return _result(apply(op, (a, b)), out, name)


def fmax(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The elementwise maximum, ignoring NaN: NaN only where both are NaN; broadcasting and
    promoting. One ``FmaxBackward0`` node: the gradient goes to ``input`` where it is
    chosen, ties included, as PyTorch's (not split as maximum's)."""
    return _fmax_like(FmaxBackward0, input, other, out)


def fmin(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The elementwise minimum, ignoring NaN: NaN only where both are NaN; broadcasting and
    promoting. One ``FminBackward0`` node: the gradient goes to ``input`` where it is
    chosen, ties included, as PyTorch's."""
    return _fmax_like(FminBackward0, input, other, out)


class FracBackward0(Primitive):
    """x - trunc(x), one node as PyTorch's (not a SubBackward0 with a detached operand):
    the gradient (and the tangent) passes through unchanged."""

    __slots__ = ()
    op_name = "frac"

    @staticmethod
    def forward(ctx, k, x):
        return k.sub(x, k.unary("trunc", x))

    @staticmethod
    def vjp(ctx, k, saved, g):
        return g

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        return tangents[0]


def frac(input: Tensor) -> Tensor:
    """The fractional part, ``x - trunc(x)`` (sign of x); gradient 1."""
    x = tensor_arg(input, "frac")
    if not x.dtype.is_floating_point:
        raise kernel_not_implemented(f"frac_{x.device.type}", x.dtype)
    return apply(FracBackward0, (x,))


class Rot90Backward0(Primitive):
    """rot90 by ``k`` quarter turns in the plane of ``dims``, one node (PyTorch's): a flip and
    a transpose (the result non-contiguous, as PyTorch's), two flips, or a copy; the
    gradient is ``g`` turned back (rot90 by ``-k``)."""

    __slots__ = ()
    op_name = "rot90"
    jvp = linear_jvp()
    _saved_k = property(lambda n: n.k)  # (as PyTorch's node shows them)
    _saved_dims = property(lambda n: n.dims)

    @staticmethod
    def forward(ctx, k, x, turns, dims, dense=False):
        ctx.k, ctx.dims = turns, dims
        d0, d1 = dims
        turns %= 4
        if turns == 0:
            return k.astype(x, array_meta(x)[1])
        if turns == 2:
            return FlipBackward0.forward(SINK, k, x, (d0, d1))
        perm = list(range(len(x.shape)))
        perm[d0], perm[d1] = d1, d0
        if dense:  # (the same rotation, transposed first: the flip's copy is row-major)
            return FlipBackward0.forward(SINK, k, k.permute(x, tuple(perm)),
                                         (d0 if turns == 1 else d1,))
        return k.permute(FlipBackward0.forward(SINK, k, x, (d1 if turns == 1 else d0,)),
                         tuple(perm))

    @staticmethod
    def vjp(ctx, k, saved, g):
        # (a row-major gradient: a leaf's .grad then needs no copy into its layout)
        return call(k, Rot90Backward0, (g,), -ctx.k, ctx.dims, True)

    complex_vjp = vjp  # (it moves elements: the same map for complex values)
    complex_jvp = jvp


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotates by 90 degrees ``k`` times in the plane of ``dims``, from the first towards the
    second dimension. One ``Rot90Backward0`` node."""
    x = tensor_arg(input, "rot90")
    if type(k) is not int:
        k = int_arg(k, "rot90", "k", 2)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    d0, d1 = (wrap_dim(d, x.ndim, "rot90", "dims") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    return apply(Rot90Backward0, (x,), k, (d0, d1))


def broadcast_tensors(*tensors: Tensor) -> tuple:
    """The tensors expanded to their common broadcast shape, as a tuple: each a view made by
    ``expand`` (``ExpandBackward0``), except one that already has that shape, which comes back
    as itself (the same object, as PyTorch's), so no node is recorded for it.

    Example:
        >>> a, b = tg.broadcast_tensors(tg.zeros(3, 1), tg.zeros(1, 4))
        >>> a.shape, b.shape
        (tritongrad.Size([3, 4]), tritongrad.Size([3, 4]))
    """
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in tensors)


def logspace(start, end, steps: int, base: float = 10.0, *, out=None, dtype=None, layout=None,
             device=None, requires_grad: bool = False) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the
    exponent; ``out=``: written into that tensor, in its dtype (as the other factories').

    Example:
        >>> tg.logspace(0, 2, 3)
        tensor([  1.,  10., 100.])
    """
    from .creation import _factory_out, as_dtype, check_layout, check_range_bounds, linspace

    check_layout("logspace", layout)
    check_range_bounds("logspace", start, end)
    if out is not None:
        return _factory_out("logspace", out, lambda dt, dev: logspace(
            start, end, steps, base, dtype=dt, device=dev), dtype, device, requires_grad)

    target = as_dtype(dtype)
    if target is not None and not (target.is_floating_point or target.is_complex):
        # PyTorch reads the endpoints as integers of an integer dtype: 10 ** [0, 1, 2], not
        # 10 ** [0.5, 1.5, 2.5], for logspace(0.5, 2.5, 3, dtype=int64)
        start, end = (int(v.item() if isinstance(v, Tensor) else v) for v in (start, end))
    exps = linspace(start, end, steps, device=device,
                    dtype=dtypes.complex128 if complex in (type(start), type(end))
                    else dtypes.float64)
    default = dtypes.get_default_dtype()
    out = (float(base) ** exps).to(dtype or (default.to_complex() if exps.is_complex()
                                             else default))
    return out.requires_grad_() if requires_grad else out


def can_cast(from_: dtypes.dtype, to: dtypes.dtype) -> bool:
    """Whether a value of ``from_`` may be cast to ``to`` under PyTorch's casting rule: not
    to a lower category (complex > floating > integral > bool)."""
    for name, d in (("from_", from_), ("to", to)):
        if not isinstance(d, dtypes.dtype):
            raise TypeError(f"can_cast(): argument '{name}' must be tritongrad.dtype, not "
                            f"{type(d).__name__}")

    def category(d):
        return 3 if d.is_complex else 2 if d.is_floating_point else 0 if d is dtypes.bool else 1
    return category(from_) <= category(to)


OPS = (
    OpInfo("nansum", nansum, dtypes="all; NaN as 0", grad="g * not isnan(x)", out="dtype",
           node=NansumBackward0),
    OpInfo("nanmean", nanmean, dtypes="floats", grad="g / count where not NaN", out="cast"),
    OpInfo("count_nonzero", count_nonzero, dtypes="all; int64 result", grad="none"),
    OpInfo("aminmax", aminmax, dtypes="all but complex", node=AminmaxBackward0,
           grad="g_min, g_max shared among the tied extremes"),
    OpInfo("dist", dist, dtypes="floats, complex", node=DistBackward0,
           grad="the norm's, of input - other (negated for other)"),
    OpInfo("cov", cov, dtypes="floats (integers promote)", grad="through its parts"),
    OpInfo("corrcoef", corrcoef, dtypes="floats (integers promote)", grad="through its parts"),
    OpInfo("fmax", fmax, dtypes="promoted; not complex", node=FmaxBackward0,
           grad="g to the larger non-NaN operand"),
    OpInfo("fmin", fmin, dtypes="promoted; not complex", node=FminBackward0,
           grad="g to the smaller non-NaN operand"),
    OpInfo("frac", frac, dtypes="floats", grad="g", out="same"),
    OpInfo("rot90", rot90, dtypes="all", node=Rot90Backward0, grad="the rotation back"),
    OpInfo("broadcast_tensors", broadcast_tensors, method=False, dtypes="all",
           grad="summed back"),
    OpInfo("logspace", logspace, method=False, dtypes="float", grad="none"),
)


# -- quantiles -----------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q, dim, keepdim: bool, interpolation: str, op: str,
              ignore_nan: bool) -> Tensor:
    from .composite import lerp
    from .creation import tensor as _tensor

    x = tensor_arg(input, op)
    if x.dtype is not dtypes.float32 and x.dtype is not dtypes.float64:
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {interpolation}")
    scalar_q = not isinstance(q, Tensor) or q.ndim == 0
    # the ranks in the input's dtype, as PyTorch's (a float32 q * (n - 1) rounds there first:
    # 'nearest' takes 0.1 * 5 = 0.5 to 0 where float64's 0.50000000745 goes to 1)
    qs = q.reshape(-1) if isinstance(q, Tensor) else \
        _tensor([float(q)], dtype=x.dtype, device=x.device)
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
    if isinstance(q, Tensor) and q.dtype is not x.dtype:
        raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
    if bool(((qs < 0) | (qs > 1)).any()):
        raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = wrap_dim(dim, max(x.ndim, 1), op, "dim")
        if x.ndim == 0:
            x = x.reshape(1)
    n = x.shape[d]
    if n == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    values = x.sort(d).values.movedim(d, -1)          # (..., n), NaN last
    nan = isnan(values)
    if ignore_nan:
        count = nan.logical_not().sum(-1, keepdim=True).to(x.dtype)  # (..., 1)
    else:
        count = values.new_full(tuple(values.shape[:-1]) + (1,), float(n))
    ranks = qs.reshape((-1,) + (1,) * values.ndim) * (count - 1).clamp(min=0)  # (Q, ..., 1)
    if not ignore_nan:
        # a slice with NaN takes its last sorted value, a NaN: its result is NaN and its
        # gradient goes there, as PyTorch's (nanquantile's all-NaN slice: rank 0, a NaN too)
        ranks = ranks.where(nan.any(-1, keepdim=True).logical_not(), float(n - 1))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    lo, hi = ranks.floor(), ranks.ceil()
    expand = tuple(ranks.shape[:1]) + tuple(values.shape)
    vals = values.unsqueeze(0).expand(expand)
    last = n - 1
    v_lo = vals.gather(-1, lo.clamp(0, last).to(dtypes.int64))
    v_hi = vals.gather(-1, hi.clamp(0, last).to(dtypes.int64))
    # (PyTorch's lerp, whose rounding for weights >= 0.5 is end - (end - start) (1 - w))
    out = lerp(v_lo, v_hi, 0.5 if interpolation == "midpoint" else ranks - lo)
    out = out.squeeze(-1)                                  # (Q, ...)
    if keepdim:
        if dim is None:
            out = out.reshape((out.shape[0],) + (1,) * input.ndim)
        else:
            out = out.unsqueeze(d + 1)
    return out.squeeze(0) if scalar_q else out


def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles of ``input`` (over ``dim``, or all): the sorted values at rank
    ``q (n - 1)``, between neighbours as ``interpolation`` says (``linear``, ``lower``,
    ``higher``, ``midpoint``, ``nearest``). A 1-D ``q`` adds a leading dimension; NaN in a
    slice makes its result NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, "quantile", False)


def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN (a slice of NaN only gives NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, "nanquantile", True)


OPS = OPS + (
    OpInfo("quantile", quantile, dtypes="floats", grad="g to the neighbours, by the weights",
           out="exact", autocast="float32 on cpu"),
    OpInfo("nanquantile", nanquantile, dtypes="floats", grad="as quantile's", out="exact",
           autocast="float32 on cpu"),
)
OPS = with_inplace(OPS, ("frac",))
