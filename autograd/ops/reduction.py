"""Reductions over all dims or a set of dims, with ``keepdim``: sum, mean, max/min (and their
(values, indices) form along a dim), amax/amin, argmax/argmin, var/std, prod, logsumexp; and
cumsum.

Forwards are the backend's ``sum``, ``reduce(op)``, ``argreduce(op)`` and ``cumsum``; the
derivative rules beside them are ``vjp``s over the kernel contract; double backward works for
all. Extremes follow
PyTorch: amax/amin and full max/min share the gradient evenly among ties; max/min along a dim
send it to the returned index (the first among ties). Each primitive's ``jvp`` (forward mode)
sits beside its ``vjp``: sums, means and cumsum are linear (the op applied to the tangent);
the extremes average the tangent over the tied elements (or pick it at the index).
"""

from __future__ import annotations

import builtins
import collections
import warnings

from ..checks import check_ordered, kernel_not_implemented, scalar_type_name
from ..registry import OpInfo, with_inplace, with_jvp
from ..state import state
from ...runtime import dtype as dtypes
from ..dispatch import Primitive, apply, array_of, as_shape, call, linear_jvp, meta
from ..tensor import Tensor, wrap_dim
from ..storage import _c_type as c_type_name
from .creation import as_dtype
from .elementwise import _result, maximum, minimum
from .views import note_args, shown_arg



def reduce_dims(x: Tensor, dim, op: str) -> tuple:
    """``dim`` (None, an int or a sequence) as a sorted tuple of non-negative dims (and the
    reductions' TypeError for an ``x`` that is no tensor: ``tg.sum(3)``)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    nd = x._data.ndim
    if dim is None:
        return tuple(range(nd))
    if dim.__class__ is int:  # (the usual call, x.sum(1): no set, no sort)
        d = wrap_dim(dim, nd, op)
        return (d,) if nd else ()
    # one dim (an int, a NumPy integer; anything else is named in wrap_dim's TypeError) or many
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not dims:
        return tuple(range(nd))  # PyTorch: an empty dim list reduces everything
    out = set()
    for d in dims:
        d = wrap_dim(d, nd, op)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.add(d)
    return tuple(sorted(d for d in out if d < nd or nd == 0)) if nd else ()


def _expand_back(k, g, shape, dims, keepdim: bool):
    """The gradient of a reduction over ``dims``, broadcast back to the input's ``shape``."""
    if not keepdim and dims:
        kept = list(g.shape)
        for d in dims:
            kept.insert(d, 1)
        g = as_shape(k, g, tuple(kept))
    return k.expand(g, tuple(shape))


def _cast_in(ctx, k, x, dtype):
    """Array ``x`` as ``dtype`` inside a sum's forward: PyTorch's ``sum(x, dtype=)`` and
    ``cumsum(x, dim, dtype=)`` of a float ``x`` are one node with no ToCopyBackward0 before
    it. The node notes ``x``'s dtype (``src_dtype``), which its gradient is cast back to."""
    if dtype is None:
        return x
    ctx.src_dtype = meta(x)[1]
    return k.astype(x, dtype)


def _cast_back(ctx, k, g):
    return g if ctx.src_dtype is None else k.astype(g, ctx.src_dtype)


def _float_cast(x: Tensor, dtype) -> bool:
    """Whether ``dtype=`` casts float ``x`` to another float dtype: done in the op's own
    node (_cast_in) rather than by a recorded ``to``."""
    return (dtype is not None and dtype is not x._dtype and dtype.is_floating_point
            and x._dtype.is_floating_point)


class SumBackward0(Primitive):
    """sum over all elements: the gradient is broadcast back to the input's shape."""

    __slots__ = ()
    op_name = "sum"
    jvp = linear_jvp()
    src_dtype = None  # (the input's dtype when dtype= cast it: _cast_in)

    @staticmethod
    def forward(ctx, k, x, dims, keepdim, dtype=None):
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return k.sum(_cast_in(ctx, k, x, dtype), dims, keepdim)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return _expand_back(k, _cast_back(ctx, k, g), ctx.in_shape, ctx.dims, ctx.keepdim)


class SumBackward1(SumBackward0):
    """sum over some dims (PyTorch's dim overload)."""

    __slots__ = ()


class MeanBackward0(Primitive):
    """mean = sum / n: the gradient is broadcast back and divided by n."""

    __slots__ = ()
    op_name = "mean"
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, x, dims, keepdim, n):
        ctx.in_shape, ctx.dims, ctx.keepdim, ctx.n = x.shape, dims, keepdim, n
        return k.div(k.sum(x, dims, keepdim), n)

    @staticmethod
    def vjp(ctx, k, saved, g):
        # g expanded, then divided: a fresh array (PyTorch's), which a hook may change in
        # place; dividing first would hand on a stride-0 view that refuses in-place writes
        return k.div(_expand_back(k, g, ctx.in_shape, ctx.dims, ctx.keepdim), ctx.n)


class MeanBackward1(MeanBackward0):
    __slots__ = ()


class _AllDims:
    """The default ``dim`` of sum and mean: PyTorch's overload without a dim (``SumBackward0``),
    told apart from an explicit ``dim=None`` (the ``dim_IntList`` overload, ``SumBackward1``);
    both reduce over all dims."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"


_ALL_DIMS = _AllDims()


def accumulating(x: Tensor, dtype) -> Tensor:
    """``x`` in the dtype its sums and products accumulate in: ``dtype`` when given, int64 for
    integers and bools (PyTorch's rule), else its own."""
    if dtype is not None:
        if (x.requires_grad and state.grad_enabled
                and not (dtype.is_floating_point or dtype.is_complex)):
            # (PyTorch refuses, where a cast would silently cut the graph)
            raise RuntimeError(f"Autograd not support dtype: {scalar_type_name(dtype)}")
        return x.to(dtype)
    dt = x._dtype
    if not (dt.is_floating_point or dt.is_complex) and dt is not dtypes.int64:
        return x.to(dtypes.int64)
    return x


def as_requested(out: Tensor, dtype) -> Tensor:
    """A sum's or product's result in the ``dtype=`` asked for (the integer kernels give
    int64: ``sum(x, dtype=int32)`` is int32, as PyTorch's)."""
    return out if dtype is None or out._dtype is dtype else out.to(dtype)


def _dtype_arg(dtype, op: str):
    """A ``dtype=`` that is no dtype: a Python number type as PyTorch's parser takes it
    (``float`` is float64), else its TypeError, where the op would fail on the object."""
    if isinstance(dtype, type) and dtype in (float, int, bool, complex):
        return as_dtype(dtype)
    raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")


def sum(input: Tensor, dim=_ALL_DIMS, keepdim: bool = False, *,  # noqa: A001
        dtype=None) -> Tensor:
    """The sum of the elements, over all dims or over ``dim`` (an int or a tuple).

    Integer and bool tensors sum to int64, as in PyTorch.
    """
    if dim is _ALL_DIMS:
        dim, op = None, SumBackward0
    else:
        op = SumBackward1
    dims = reduce_dims(input, dim, "sum")  # (first: its TypeError for an input no tensor)
    try:
        cast = _float_cast(input, dtype)
    except AttributeError:  # (a dtype= no dtype: checked once it fails, so no call pays)
        dtype = _dtype_arg(dtype, "sum")
        cast = _float_cast(input, dtype)
    if cast:
        return apply(op, (input,), dims, bool(keepdim), dtype)
    return as_requested(apply(op, (accumulating(input, dtype),), dims, bool(keepdim)), dtype)


def mean(input: Tensor, dim=_ALL_DIMS, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of the elements, over all dims or over ``dim``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"mean(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dtype is not None:
        input = input.to(dtype)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {input.dtype.name.capitalize()}")
    if dim is _ALL_DIMS:
        dim, op = None, MeanBackward0
    else:
        op = MeanBackward1
    dims = reduce_dims(input, dim, "mean")
    n = 1
    for d in dims:
        n *= input.shape[d]
    return apply(op, (input,), dims, bool(keepdim), n if n else float("nan"))


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where any element (over ``dim``) is nonzero; ``dim=()`` reduces nothing (each
    element's truth, as PyTorch's). A uint8 input gives a uint8 result (0 or 1), PyTorch's
    legacy rule."""
    reduce_dims(input, dim, "any")  # (its errors name this op, not sum)
    r = input.ne(0) if _no_dims(dim) else sum(input.ne(0), dim, keepdim) > 0
    return r.to(dtypes.uint8) if input.dtype is dtypes.uint8 else r


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where every element (over ``dim``) is nonzero; ``dim=()`` reduces nothing (a
    uint8 input gives uint8, as ``any``)."""
    reduce_dims(input, dim, "all")
    r = input.ne(0) if _no_dims(dim) else sum(input.eq(0), dim, keepdim) == 0
    return r.to(dtypes.uint8) if input.dtype is dtypes.uint8 else r


def _no_dims(dim) -> bool:
    # (an empty dim list: all/any reduce nothing, where sum's legacy rule reduces everything)
    return type(dim) in (tuple, list) and not dim


# -- return types ----------------------------------------------------------------------------

def _return_type(name: str):
    """A (values, indices) named tuple printing as PyTorch's ``torch.return_types.<name>``."""
    base = collections.namedtuple(name, ["values", "indices"])

    def __repr__(self):
        return (f"tritongrad.return_types.{name}(\nvalues={self.values!r},\n"
                f"indices={self.indices!r})")

    # (the qualified name pickle finds it by: the return_types class below)
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                                "__qualname__": f"return_types.{name}"})


class return_types:  # noqa: N801 - PyTorch's module name
    """The named tuples of ops returning (values, indices)."""

    max = _return_type("max")
    min = _return_type("min")
    sort = _return_type("sort")
    topk = _return_type("topk")
    kthvalue = _return_type("kthvalue")
    median = _return_type("median")
    nanmedian = _return_type("nanmedian")
    mode = _return_type("mode")
    # what the out= forms return, as PyTorch's (``torch.return_types.max_out``)
    max_out = _return_type("max_out")
    min_out = _return_type("min_out")
    median_out = _return_type("median_out")
    nanmedian_out = _return_type("nanmedian_out")
    mode_out = _return_type("mode_out")
    sort_out = _return_type("sort_out")
    topk_out = _return_type("topk_out")
    kthvalue_out = _return_type("kthvalue_out")


def write_pair(name: str, values: Tensor, indices: Tensor, out, mismatch, position: int = 3):
    """The out= form of an op returning (values, indices): ``values`` and ``indices`` written
    into the pair ``out`` (a tuple or list of two tensors; PyTorch's TypeErrors otherwise,
    ``position`` being out's argument number in them), refused when autograd would need them
    and when a tensor's dtype is not the result's (``mismatch(want, got, which)``, which is
    "values" or "indices", gives the RuntimeError's text: PyTorch's differs from op to op),
    each resized as ``_result`` resizes. Returns ``return_types.<name>_out`` of the two."""
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    for i, t in enumerate(out):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position}, but got "
                            f"{type(t).__name__}")
    if len(out) != 2:
        raise TypeError(f"expected tuple of 2 elements but got {len(out)}")
    if values.requires_grad:
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           f"automatic differentiation, but one of the arguments requires grad.")
    for want, got, which in ((values.dtype, out[0].dtype, "values"),
                             (dtypes.int64, out[1].dtype, "indices")):
        if got is not want:
            raise RuntimeError(mismatch(want, got, which))
    rt = getattr(return_types, name + "_out")
    return rt(_result(values, out[0], name), _result(indices, out[1], name))


# -- max / min / amax / amin / argmax / argmin ---------------------------------------------------

def _nonempty(x: Tensor, dims: tuple, op: str) -> None:
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _ties(k, x, out, dims, keepdim, nan_equal=True):
    """(mask, count): where ``x`` equals its extreme ``out``, and how many elements tie per
    reduced slice (keepdim). A NaN extreme equals the NaNs with ``nan_equal`` (full max/min
    and median, PyTorch's evenly_distribute_backward), else nothing: its count is 0
    (amax/amin)."""
    out_e = _expand_back(k, out, tuple(x.shape), dims, keepdim)
    mask = k.eq(x, out_e)
    if nan_equal and meta(x)[1].is_floating_point:
        mask = k.binary("bitwise_or", mask, k.binary("bitwise_and", k.ne(x, x),
                                                     k.ne(out_e, out_e)))
    return mask, k.sum(k.astype(mask, dtypes.int64), dims, True)  # (bools sum as int64)


def _ties_backward(k, g, x, out, dims, keepdim, nan_equal=True):
    """The gradient of an extreme value shared evenly among the elements equal to it, as
    PyTorch's amax/amin and full max/min do. An amax/amin slice whose extreme is NaN gets
    NaN (g / 0 times the empty mask), as PyTorch's and as finite differences give."""
    shape = tuple(x.shape)
    mask, count = _ties(k, x, out, dims, keepdim, nan_equal)
    g_e = _expand_back(k, g, shape, dims, keepdim)
    dt = meta(g_e)[1]
    return k.mul(k.div(g_e, k.astype(k.expand(count, shape), dt)), k.astype(mask, dt))


def _ties_jvp(ctx, k, primals, tangents, out, *params):
    """The tangent of an extreme value: the mean of the tangents of the elements tied at it
    (PyTorch's amax/amin jvp)."""
    x, t = primals[0], tangents[0]
    # (median's full reduction shares these rules and sets no nan_equal: NaN equals NaN)
    mask, count = _ties(k, x, out, ctx.dims, ctx.keepdim, getattr(ctx, "nan_equal", True))
    total = k.sum(k.where(mask, t, 0), ctx.dims, True)
    res = k.div(total, k.astype(count, meta(t)[1]))
    return res if ctx.keepdim else as_shape(k, res, tuple(out.shape))


def _mean(k, x, dims):
    """x.mean(dims, keepdim=True) on backend ``k``."""
    n = 1
    for d in dims:
        n *= x.shape[d]
    return k.div(k.sum(x, dims, True), n if n else float("nan"))


class _TiesBackward(Primitive):
    """amax over dims: the gradient goes to the maxima, split evenly among ties. (The base
    of amax, amin, and max() / min() of all elements, whose PyTorch nodes show no dim.)"""

    __slots__ = ()
    op_name = "amax"
    save_inputs = (0,)
    save_output = True
    _kind = "amax"
    _nan_equal = False

    @classmethod
    def forward(cls, ctx, k, x, dims, keepdim):
        ctx.dims, ctx.keepdim, ctx.nan_equal = dims, keepdim, cls._nan_equal
        return k.reduce(cls._kind, x, dims, keepdim)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, out = saved
        return _ties_backward(k, g, x, out, ctx.dims, ctx.keepdim, ctx.nan_equal)

    jvp = staticmethod(_ties_jvp)


_DIM_SHOWN = shown_arg("dim", lambda n: n.dims)  # (amax(x): dim (), all dims reduced)
AmaxBackward0 = _TiesBackward.variant("AmaxBackward0", "amax", _saved_dim=_DIM_SHOWN)
AminBackward0 = _TiesBackward.variant("AminBackward0", "amin", _kind="amin",
                                      _saved_dim=_DIM_SHOWN)


class MaxBackward1(_TiesBackward):
    """max() of all elements: ties share the gradient evenly (PyTorch's rule)."""

    __slots__ = ()
    op_name = "max"
    _nan_equal = True  # (a NaN maximum: the gradient goes to the NaNs)


MinBackward1 = _TiesBackward.variant("MinBackward1", "min", _kind="amin", _nan_equal=True)


class MaxBackward0(Primitive):
    """max(dim) -> (values, indices): the gradient goes to the selected index only."""

    __slots__ = ()
    op_name = "max"
    nondiff_outputs = (1,)
    keep_outputs = (1,)  # the indices (Note [Saved indices])
    _kind = "argmax"

    @classmethod
    def forward(cls, ctx, k, x, dim, keepdim):
        # the extreme value is the value at the returned index (a NaN where the index picks
        # the first NaN), gathered there: a pass over the output instead of a second
        # reduction over the input
        idx = k.argreduce(cls._kind, x, dim, keepdim)
        if keepdim or not x.shape:
            values = k.gather(x, dim, idx)
        else:
            kept = tuple(x.shape[:dim]) + (1,) + tuple(x.shape[dim + 1:])
            values = k.view(k.gather(x, dim, k.view(idx, kept)), tuple(idx.shape))
        ctx.in_shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        return values, idx

    @staticmethod
    def vjp(ctx, k, saved, g, _g_indices=None):
        from .indexing import gather_backward
        idx, = saved
        return gather_backward(k, g, ctx.in_shape, ctx.dim, array_of(idx), ctx.keepdim)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        """The tangent at the returned index."""
        dim, idx = ctx.dim, out[1]
        picked = tangents[0].gather(dim, idx if ctx.keepdim else idx.unsqueeze(dim))
        return (picked if ctx.keepdim else picked.squeeze(dim)), None


class MinBackward0(MaxBackward0):
    __slots__ = ()
    op_name = "min"
    _kind = "argmin"


def _extreme(name, full_op, dim_op, binary):
    rt = getattr(return_types, name)

    def fn(input: Tensor, dim=None, keepdim: bool = False, *, other=None, out=None):
        if other is not None:  # max(a, other=b): PyTorch's binding name
            if dim is not None:
                raise TypeError(f"{name}(): got both 'dim' and 'other'")
            dim = other
        if isinstance(dim, Tensor):  # max(a, b) is maximum(a, b)
            return _result(binary(input, dim), out, name)
        check_ordered(input, name if dim is not None else name + "_all")
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}(): keepdim=True needs a dim")
            if input.numel() == 0:
                raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                                   f"input.numel() == 0. Specify the reduction dim with the "
                                   f"'dim' argument.")
            return _result(apply(full_op, (input,), tuple(range(input.ndim)), False), out, name)
        if not isinstance(dim, int):
            raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
        d = wrap_dim(dim, input.ndim, name)
        if input.ndim == 0:
            values, indices = apply(dim_op, (input.reshape(1),), 0, False)
        else:
            _nonempty(input, (d,), name)
            values, indices = apply(dim_op, (input,), d, bool(keepdim))
        if out is not None:  # (values, indices): both written, as PyTorch's out= tuple
            return write_pair(name, values, indices, out, _out_dtype_error)
        return rt(values, indices)

    fn.__name__ = name
    fn.__doc__ = (f"``{name}(x)``: the {name}imum of all elements (NaN propagates; ties share "
                  f"the gradient). ``{name}(x, dim, keepdim=False)``: the named tuple (values, "
                  f"indices) along dim (the first index among ties). ``{name}(x, other)``: "
                  f"the elementwise {name}imum.")
    return fn


def _out_dtype_error(want, got, which: str) -> str:
    return (f"Expected out tensor to have dtype {c_type_name(want)}, but got "
            f"{c_type_name(got)} instead")


def _amax_like(name, op):
    def fn(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
        check_ordered(input, name)
        dims = reduce_dims(input, dim, name)
        if (dim is None or _no_dims(dim)) and input.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument.")
        _nonempty(input, dims, name)
        out = apply(op, (input,), dims, bool(keepdim))
        return out if not _no_dims(dim) else note_args(out, dim=())
    fn.__name__ = name
    fn.__doc__ = (f"The {name[1:]}imum over ``dim`` (all dims by default); NaN propagates and "
                  f"tied elements share the gradient evenly.")
    return fn


max = _extreme("max", MaxBackward1, MaxBackward0, maximum)  # noqa: A001
min = _extreme("min", MinBackward1, MinBackward0, minimum)  # noqa: A001
amax = _amax_like("amax", AmaxBackward0)
amin = _amax_like("amin", AminBackward0)


class ArgmaxOp(Primitive):
    __slots__ = ()
    op_name = "argmax"
    differentiable = False

    @staticmethod
    def forward(ctx, k, x, op, dim, keepdim):
        return k.argreduce(op, x, dim, keepdim)


def _arg(name):
    def fn(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        check_ordered(input, name)
        if input.dtype is dtypes.bool:
            raise RuntimeError(f"{name}(): does not support bool input")
        if dim is None:
            if input.numel() == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 f"input.numel() == 0.")
            flat = input.reshape(-1)
            out = apply(ArgmaxOp, (flat,), name, 0, False)
            return out.reshape((1,) * input.ndim) if keepdim else out
        d = wrap_dim(dim, input.ndim, name)
        if input.ndim == 0:
            out = apply(ArgmaxOp, (input.reshape(1),), name, 0, False)
            return out
        _nonempty(input, (d,), name)
        return apply(ArgmaxOp, (input,), name, d, bool(keepdim))
    fn.__name__ = name
    fn.__doc__ = (f"The index of the {name[3:]}imum (of the flattened tensor, or along "
                  f"``dim``): the first one among ties; int64; never differentiable.")
    return fn


argmax = _arg("argmax")
argmin = _arg("argmin")


# -- var / std -----------------------------------------------------------------------------------

# (var, std, var_mean, std_mean: their arguments as PyTorch's nodes show them, Note
# [Arguments nodes show] in views.py; var() gives dim None and correction None, as there)
_VAR_SHOWN = {"_saved_dim": shown_arg("dim", lambda n: n.dims),
              "_saved_keepdim": property(lambda n: n.keepdim),
              "_saved_correction": shown_arg("correction", lambda n: n.correction)}


class VarBackward0(Primitive):
    """var = sum((x - mean)^2) / (n - correction): d/dx = 2 (x - mean) / (n - correction)."""

    __slots__ = ()
    op_name = "var"
    save_inputs = (0,)
    locals().update(_VAR_SHOWN)

    @staticmethod
    def forward(ctx, k, x, dims, keepdim, n, divisor):
        ctx.dims, ctx.keepdim, ctx.divisor = dims, keepdim, divisor
        ctx.correction = n - divisor
        return _var(k, x, dims, keepdim, n, divisor)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        dims = ctx.dims
        g = _expand_back(k, g, tuple(x.shape), dims, ctx.keepdim)
        return k.mul(g, k.mul(k.sub(x, _mean(k, x, dims)),
                              2.0 / ctx.divisor if ctx.divisor else float("inf")))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        """2 sum(t (x - mean)) / (n - correction)."""
        return _var_jvp(ctx, k, primals[0], tangents[0])


def _var_jvp(ctx, k, x, t):
    s = k.sum(k.mul(t, k.sub(x, _mean(k, x, ctx.dims))), ctx.dims, ctx.keepdim)
    return k.mul(s, 2.0 / ctx.divisor if ctx.divisor else float("inf"))


class StdBackward0(Primitive):
    """std = sqrt(var): d/dx = (x - mean) / ((n - correction) std), and 0 where std == 0 (as
    PyTorch: a constant slice would otherwise give 0 / 0)."""

    __slots__ = ()
    op_name = "std"
    save_inputs = (0,)
    save_output = True
    locals().update(_VAR_SHOWN)

    @staticmethod
    def forward(ctx, k, x, dims, keepdim, n, divisor):
        ctx.dims, ctx.keepdim, ctx.divisor = dims, keepdim, divisor
        ctx.correction = n - divisor
        return k.sqrt(_var(k, x, dims, keepdim, n, divisor))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, out = saved
        shape, dims, keepdim = tuple(x.shape), ctx.dims, ctx.keepdim
        g = _expand_back(k, g, shape, dims, keepdim)
        std = _expand_back(k, out, shape, dims, keepdim)
        scale = k.where(k.eq(std, 0), 0.0, k.div(g, k.mul(std, float(ctx.divisor))))
        return k.mul(scale, k.sub(x, _mean(k, x, dims)))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        """var's tangent / (2 y); 0 where y = 0, as the gradient."""
        return k.where(k.eq(out, 0), 0.0,
                       k.div(_var_jvp(ctx, k, primals[0], tangents[0]), k.mul(out, 2)))


class VarMeanBackward0(Primitive):
    """(var, mean) over the same dims, one node with two outputs as PyTorch's var_mean: the
    gradient is var's for g_var plus mean's (g_mean / n, broadcast back) for g_mean, either
    of which may be absent."""

    __slots__ = ()
    op_name = "var_mean"
    save_inputs = (0,)
    _stat = VarBackward0
    locals().update(_VAR_SHOWN)

    @classmethod
    def forward(cls, ctx, k, x, dims, keepdim, n, divisor):
        ctx.n = count = n if n else float("nan")  # (the mean of nothing is NaN)
        return cls._stat.forward(ctx, k, x, dims, keepdim, n, divisor), \
            k.div(k.sum(x, dims, keepdim), count)

    @classmethod
    def vjp(cls, ctx, k, saved, g_stat, g_mean=None):
        x = saved[0]
        total = None if g_stat is None else cls._stat.vjp(ctx, k, saved, g_stat)
        if g_mean is not None:
            gm = _expand_back(k, k.div(g_mean, ctx.n), tuple(x.shape), ctx.dims, ctx.keepdim)
            total = gm if total is None else k.add(total, gm)
        return total

    @classmethod
    def jvp(cls, ctx, k, primals, tangents, out, *params):
        t = tangents[0]
        return cls._stat.jvp(ctx, k, primals, tangents, out[0], *params), \
            k.div(k.sum(t, ctx.dims, ctx.keepdim), ctx.n)


class StdMeanBackward0(VarMeanBackward0):
    """(std, mean), as VarMeanBackward0 with std's rule (which reads the saved std)."""

    __slots__ = ()
    op_name = "std_mean"
    save_output = True
    saved_names = ("self", "result0")
    _stat = StdBackward0


def _var(k, x, dims, keepdim, n, divisor):
    mean = k.div(k.sum(x, dims, True), n) if n else k.sum(x, dims, True)
    d = k.sub(x, mean)
    s = k.sum(k.mul(d, d), dims, keepdim)
    # (no divisor: s / 0, inf or NaN; the division is silent where s * inf would warn of 0 * inf)
    return k.div(s, divisor if divisor else 0.0)


def _var_args(input, dim, unbiased, keepdim, correction, op):
    if isinstance(dim, bool):  # var(x, unbiased)
        unbiased, dim = dim, None
    if correction is not None and unbiased is not None:
        raise TypeError(f"{op}(): cannot specify both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"std and var only support floating point and complex dtypes "
                           f"(got {input.dtype} in {op})")
    dims = reduce_dims(input, dim, op)
    n = 1
    for d in dims:
        n *= input.shape[d]
    divisor = n - correction
    if divisor <= 0:  # (then inf, or NaN where the squares sum to 0, as PyTorch)
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    return dims, bool(keepdim), n, builtins.max(divisor, 0)


def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """The variance over ``dim`` (all dims by default) with Bessel's ``correction``
    (default 1, the unbiased estimate; ``unbiased=False`` is correction 0)."""
    dims, keepdim, n, divisor = _var_args(input, dim, unbiased, keepdim, correction, "var")
    if input.dtype.is_complex:  # real: E|x - mean|^2 = var(real part) + var(imaginary part)
        return (apply(VarBackward0, (input.real,), dims, keepdim, n, divisor)
                + apply(VarBackward0, (input.imag,), dims, keepdim, n, divisor))
    return _shown_var_args(apply(VarBackward0, (input,), dims, keepdim, n, divisor), dim,
                           unbiased, correction)


def _shown_var_args(out: Tensor, dim, unbiased, correction) -> Tensor:
    """var's or std's result, its node showing dim and correction as PyTorch's: None where
    not given (``unbiased=`` shows as correction 1 or 0)."""
    if out._grad_fn is None:
        return out
    if isinstance(dim, bool):  # var(x, unbiased)
        dim, unbiased = None, dim
    if correction is None and unbiased is not None:
        correction = 1 if unbiased else 0
    elif correction is None and dim is not None:
        correction = 1  # (PyTorch's dim overload: unbiased=True by default)
    return note_args(out, dim=None if dim is None else out._grad_fn.dims,
                     correction=correction)


def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """The standard deviation: ``sqrt(var(...))`` with the same arguments."""
    if input.dtype.is_complex:
        return var(input, dim, unbiased, keepdim, correction=correction).sqrt()
    dims, keepdim, n, divisor = _var_args(input, dim, unbiased, keepdim, correction, "std")
    return _shown_var_args(apply(StdBackward0, (input,), dims, keepdim, n, divisor), dim,
                           unbiased, correction)


# -- prod ------------------------------------------------------------------------------------------

class ProdBackward0(Primitive):
    """prod over dims: d/dx_i = the product of the other elements, computed without dividing
    by zero (one zero in a slice: only it gets a gradient; two or more: none does)."""

    __slots__ = ()
    op_name = "prod"
    save_inputs = (0,)

    @staticmethod
    def forward(ctx, k, x, dims, keepdim):
        ctx.dims, ctx.keepdim = dims, keepdim
        return k.reduce("prod", x, dims, keepdim)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        return k.mul(_expand_back(k, g, tuple(x.shape), ctx.dims, ctx.keepdim),
                     _prod_partials(k, x, ctx.dims))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        """sum(t * d prod / d x)."""
        return k.sum(k.mul(tangents[0], _prod_partials(k, primals[0], ctx.dims)), ctx.dims,
                     ctx.keepdim)


def _prod_partials(k, x, dims):
    """d prod / d x: the product of the other elements of each slice, computed without
    dividing by zero (or infinity)."""
    if meta(x)[1].is_complex:
        return _prod_partials_finite(k, x, dims)
    # zeros and infinities kept apart: the product of the other ordinary elements (a safe
    # division), times that of the other special ones (0 with a zero among them, +-inf with
    # an infinity, NaN with both: 0 * inf), as the product itself would give them
    shape = tuple(x.shape)
    zero, inf = k.eq(x, 0), k.eq(k.unary("abs", x), float("inf"))
    special = k.binary("bitwise_or", zero, inf)
    safe = k.where(special, 1, x)
    ordinary = k.div(k.expand(call(k, ProdBackward1, (safe,), dims, True), shape), safe)

    def others(mask):  # per element: how many of the other elements of its slice are in mask
        m = k.astype(mask, dtypes.int64)
        return k.sub(k.expand(k.sum(m, dims, True), shape), m)

    sign = k.where(inf, k.unary("sign", x), 1)  # (+-1: the product of the others' is / by it)
    sign = k.mul(k.expand(call(k, ProdBackward1, (sign,), dims, True), shape), sign)
    rest = k.where(k.gt(others(inf), 0), k.mul(sign, float("inf")), 1)
    # With one other zero in the slice the partial is 0, but it depends on that zero (its
    # value times it): kept as that product, a second derivative sees it (torch's does).
    zeros_at = k.where(zero, x, 0)
    other_zero = k.sub(k.expand(k.sum(zeros_at, dims, True), shape), zeros_at)
    n_zero = others(zero)
    rest = k.where(k.gt(n_zero, 1), k.mul(rest, 0),
                   k.where(k.eq(n_zero, 1), k.mul(rest, other_zero), rest))
    return k.mul(ordinary, rest)


def _prod_partials_finite(k, x, dims):
    """_prod_partials for complex ``x``, whose infinities it does not single out."""
    shape = tuple(x.shape)
    zero = k.eq(x, 0)
    safe = k.where(zero, 1, x)
    nz_prod = k.expand(call(k, ProdBackward1, (safe,), dims, True), shape)
    n_zero = k.expand(k.sum(k.astype(zero, dtypes.int64), dims, True), shape)
    return k.where(k.eq(n_zero, 0), k.div(nz_prod, safe),
                   k.where(zero, k.where(k.eq(n_zero, 1), nz_prod, 0), 0))


class ProdBackward1(ProdBackward0):
    __slots__ = ()


def prod_dims(x: Tensor, dims: tuple) -> Tensor:
    return apply(ProdBackward1, (x,), dims, True)


def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The product of the elements (over ``dim`` if given). Integers and bools give int64."""
    input = accumulating(input, dtype)
    if dim is None:
        return as_requested(apply(ProdBackward0, (input,), tuple(range(input.ndim)), False),
                            dtype)
    if not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    return as_requested(apply(ProdBackward1, (input,), reduce_dims(input, dim, "prod"),
                              bool(keepdim)), dtype)


# -- logsumexp ------------------------------------------------------------------------------------

class LogsumexpBackward0(Primitive):
    """log(sum(exp(x))), stable: d/dx = exp(x - out)."""

    __slots__ = ()
    op_name = "logsumexp"
    save_inputs = (0,)
    save_output = True

    @staticmethod
    def forward(ctx, k, x, dims, keepdim):
        ctx.dims, ctx.keepdim = dims, keepdim
        m = k.reduce("amax", x, dims, True)
        m = k.where(k.eq(k.unary("abs", m), float("inf")), 0, m)  # inf rows: no shift
        out = k.add(k.log(k.sum(k.exp(k.sub(x, m)), dims, True)), m)
        if not keepdim:
            out = k.view(out, tuple(n for i, n in enumerate(x.shape) if i not in dims))
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, out = saved
        shape, dims, keepdim = tuple(x.shape), ctx.dims, ctx.keepdim
        return k.mul(_expand_back(k, g, shape, dims, keepdim),
                     k.exp(k.sub(x, _expand_back(k, out, shape, dims, keepdim))))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        """sum(t softmax(x))."""
        x, dims = primals[0], ctx.dims
        p = k.exp(k.sub(x, _expand_back(k, out, tuple(x.shape), dims, ctx.keepdim)))
        return k.sum(k.mul(tangents[0], p), dims, ctx.keepdim)


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))``, computed stably (the maximum is subtracted first).
    Integer inputs promote to the default float dtype."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(dtypes.get_default_dtype())
    dims = reduce_dims(input, dim, "logsumexp")
    if builtins.any(input.shape[d] == 0 for d in dims):
        # empty sums: log(0) = -inf, differentiable (an empty gradient) as PyTorch's
        return sum(input.exp(), dims, bool(keepdim)).log()
    if input.ndim == 0:
        return apply(LogsumexpBackward0, (input.reshape(1),), (0,), False)
    return apply(LogsumexpBackward0, (input,), dims, bool(keepdim))


# -- cumsum ----------------------------------------------------------------------------------------

class CumsumBackward0(Primitive):
    """cumsum along dim: the gradient is the reversed cumulative sum of g."""

    __slots__ = ()
    op_name = "cumsum"
    jvp = linear_jvp()
    src_dtype = None  # (as SumBackward0's)

    @staticmethod
    def forward(ctx, k, x, dim, reverse, dtype=None):
        ctx.dim, ctx.reverse = dim, reverse
        x = _cast_in(ctx, k, x, dtype)
        if not x.shape:  # (0-d: one element, its own cumulative sum; one node, as PyTorch's)
            return as_shape(k, k.cumsum(as_shape(k, x, (1,)), 0, reverse), ())
        return k.cumsum(x, dim, reverse)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return _cast_back(ctx, k, call(k, CumsumBackward0, (g,), ctx.dim, not ctx.reverse))


def check_scan_dtype(input: Tensor, dtype, op: str) -> None:
    """PyTorch's scans (cumsum, cumprod) have no bool kernel: a bool result asked for
    (``dtype=``, or an ``out=`` of bool, which arrives as ``dtype=``) is its
    NotImplementedError, not a scan in int64 cast to bool."""
    if dtype is dtypes.bool:
        raise kernel_not_implemented(f"{op}_out_{input.device.type}", dtype)


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative sums along ``dim``. Integers and bools accumulate in int64 (as PyTorch)."""
    d = wrap_dim(dim, input.ndim, "cumsum")
    check_scan_dtype(input, dtype, "cumsum")
    if _float_cast(input, dtype):
        return apply(CumsumBackward0, (input,), d, False, dtype)
    input = accumulating(input, dtype)
    return as_requested(apply(CumsumBackward0, (input,), d, False), dtype)


# -- the table ---------------------------------------------------------------------------------

_EXTREMA = "to the elements equal to the result, evenly shared (max(dim): the index)"

OPS = (
    OpInfo("sum", sum, flops="reduction", dtypes="all; integers and bool sum to int64",
           grad="g expanded", autocast="float32 on cuda", out="dtype"),
    OpInfo("mean", mean, flops="reduction", dtypes="floats (dtype= for others)",
           grad="g expanded / n", out="cast"),
    OpInfo("any", any, dtypes="all; bool result", grad="none", out="exact"),
    OpInfo("all", all, dtypes="all; bool result", grad="none", out="exact"),
    *(OpInfo(n, globals()[n], dtypes="all but complex", grad=_EXTREMA)
      for n in ("max", "min")),
    *(OpInfo(n, globals()[n], dtypes="all but complex", grad=_EXTREMA, out="exact")
      for n in ("amax", "amin")),
    *(OpInfo(n, globals()[n], dtypes="all but bool, complex; int64 result", grad="none",
             out="exact")
      for n in ("argmax", "argmin")),
    OpInfo("var", var, dtypes="floats, complex (real result)",
           grad="2 g (x - mean) / (n - correction)", out="cast"),
    OpInfo("std", std, dtypes="floats, complex (real result)",
           grad="g (x - mean) / ((n - correction) y); 0 at y = 0", out="cast"),
    OpInfo("prod", prod, dtypes="all; integers and bool give int64",
           grad="g y / x, without dividing by zero", autocast="float32", out="dtype"),
    OpInfo("logsumexp", logsumexp, dtypes="floats; integers promote", grad="g softmax(x)",
           autocast="float32 on cuda", out="cast"),
    OpInfo("cumsum", cumsum, dtypes="all; integers and bool give int64",
           grad="reversed cumsum of g", autocast="float32 on cuda", out="dtype"),
)
OPS = with_inplace(with_jvp(OPS), ("cumsum",))  # every primitive here has a jvp rule
