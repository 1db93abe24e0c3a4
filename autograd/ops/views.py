"""View ops and in-place writes through views.

A view shares its input's storage and version counter and remembers the tensor whose storage
it views (``_base``, never itself a view). Forward rules here only touch metadata (the
backend's ``view``/``permute``/``expand``/``getitem``/``as_strided``).

In-place writes through a view (``y[0] = v``, ``y.view(-1).mul_(2)``) rewrite history as
PyTorch does: the base gets a ``CopySlices`` node (the gradient of the written region goes
through the in-place op's node, the rest passes through), and every view of that base whose
history predates the write (its ``_view_version`` is behind the version counter) is given a
fresh ``AsStridedBackward0`` history on top of the base's when its ``grad_fn`` is next read.
Geometry (shape, strides, offset) is taken relative to the base, and gradient buffers are laid
out like the base, so the same geometry applies to them. Which writes a view allows depends on
how it was made (its creation meta, set by ``_as_view``: Note [View + in-place], tensor.py).

In-place view ops (``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_``, ``as_strided_``:
``inplace_view``) give a tensor the geometry of its view, as an in-place op to autograd.
"""

from __future__ import annotations

import math
import operator
import warnings

from ..registry import OpInfo, with_jvp
from ...runtime import dtype as D
from ...runtime.array import check_sizes
from ..checks import out_of_bounds, tensor_arg
from ..dispatch import (Primitive, apply, apply_view, as_shape, call, check_inplace, linear_jvp,
                        meta, sum_to, zeros)
from ..node import Node
from ..overrides import note_instance
from ..state import anywhere, state
from ..tensor import _FIELDS, Tensor, int_arg, make, propagate_creation_meta, wrap_dim
from . import complex_parts, traced

__all__ = [
    "as_strided",
    "as_subclass",
    "broadcast_to",
    "expand",
    "expand_as",
    "flatten",
    "getitem",
    "infer_size",
    "inplace_view",
    "numpy_T",
    "permute",
    "rebase_history",
    "regenerate_view_history",
    "reshape",
    "squeeze",
    "sum_to_size",
    "t",
    "transpose",
    "unsqueeze",
    "view",
]


def _as_view(out: Tensor, src: Tensor, multi_output: bool = False) -> Tensor:
    """Makes ``out`` (an op's result sharing ``src``'s memory) a view of ``src``: one storage,
    one version counter, and the creation meta saying which in-place writes it allows (Note
    [View + in-place], tensor.py). ``multi_output``: one of several views one op made."""
    out._vc = src._vc
    if src._inference:
        # An inference tensor has no autograd: its views are plain inference tensors (not
        # views, no history), as PyTorch's, whose inference tensors skip view tracking.
        out._inference = True
        out._grad_fn, out._requires_grad = None, False
        return out
    out._inference = False
    base = src._base
    out._base = src if base is None else base
    out._view_version = src._vc[0]
    if anywhere.inference and state.inference:
        meta = "inference_mode"
    elif not state.grad_enabled:
        meta = "no_grad"
    else:
        meta = "multi_output" if multi_output else None
    if base is not None:
        meta = propagate_creation_meta(src._creation_meta, meta)
    if meta is not None:
        out._creation_meta = meta
    return out


def view_jvp(ctx, k, primals, tangents, out, *params):
    """The jvp of a view op (one output or several, as split's): the same view of the input's
    tangent, so that an in-place change of either reaches the other."""
    t = tangents[0]
    res = apply(type(ctx), (t,), *params)
    if type(res) is tuple:
        return tuple(_as_view(r, t, True) for r in res)
    return _as_view(res, t)


class _ViewPrimitive(Primitive):
    __slots__ = ()
    jvp = staticmethod(view_jvp)


def _view_apply(op, x: Tensor, *params) -> Tensor:
    return _as_view(apply_view(op, x, params), x)


# Note [Arguments nodes show]
#   PyTorch's nodes show the arguments their formula keeps as ``_saved_<name>``, as the user
#   gave them (``x.var().grad_fn._saved_dim`` is None, ``x.unsqueeze(1)...`` 1), where a
#   rule here keeps what its backward needs (all dims; the output shape). An op whose node
#   shows more than its rule keeps notes the arguments on the node after recording
#   (``note_args``: only when there is a node, so no cost without a graph), and the node
#   class reads them with ``shown_arg`` properties; PyTorch's other names come from
#   node.py's table (Note [Saved non-tensor values]).
_UNSET = object()


def note_args(out: Tensor, **args) -> Tensor:
    """Notes ``args`` on ``out``'s node (if it has one) for its ``shown_arg`` properties."""
    fn = out._fn
    if fn is not None:
        d = fn.__dict__
        for name, value in args.items():
            d["_shown_" + name] = value
    return out


def note_dim(out: Tensor, dim: int) -> Tensor:
    """``note_args(out, dim=dim)`` without the keyword call (unsqueeze's, on every call)."""
    fn = out._fn
    if fn is not None:
        fn._shown_dim = dim
    return out


def shown_arg(name: str, default=None) -> property:
    """A ``_saved_<name>`` property: the argument ``note_args`` noted, else ``default(node)``
    (a node recorded by a path that notes nothing), else None."""
    key = "_shown_" + name

    def get(node):
        v = node.__dict__.get(key, _UNSET)
        if v is _UNSET:
            return None if default is None else default(node)
        return v
    return property(get)


# -- shapes ----------------------------------------------------------------------------------

def int_tuple(values, op: str, name: str, pos: int = 1) -> tuple:
    """``values`` as a tuple of ints, or a TypeError naming ``op``, the argument and the first
    element that is not an int."""
    if type(values) is tuple and all(type(v) is int for v in values):  # (the usual call)
        return values
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be tuple of ints, not "
                        f"{type(values).__name__}") from None
    out = []
    for j, v in enumerate(items):
        try:
            out.append(operator.index(v))
        except TypeError:
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be tuple of ints, "
                            f"but found element of type {type(v).__name__} at pos {j}") from None
    return tuple(out)


def is_size(v) -> bool:
    """Whether ``v`` is one int-like (an int, np.int64, a 0-d tensor), not a sequence."""
    return hasattr(v, "__index__") and not getattr(v, "ndim", 0)


def infer_size(shape, numel: int, op: str) -> tuple:
    """Resolves one -1 in ``shape`` and checks the element count."""
    shape = int_tuple(shape, op, "shape" if op == "reshape" else "size")
    if -1 not in shape and math.prod(shape) == numel and (not shape or min(shape) >= 0):
        return shape  # (the usual call: nothing to infer, nothing wrong)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred, got shape {list(shape)}")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"{op}: invalid shape dimension in {list(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0:
            raise RuntimeError(f"{op}: cannot reshape tensor of {numel} elements into shape "
                               f"{list(shape)} because the unspecified dimension size -1 can "
                               f"be any value and is ambiguous" if numel == 0 else
                               f"{op}: shape '{list(shape)}' is invalid for input of size "
                               f"{numel}")
        if numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _args_or_kw(args: tuple, kw, op: str, name: str) -> tuple:
    """The sizes given unpacked (``x.view(2, 3)``) or as the keyword ``name``
    (``x.view(size=(2, 3))``), as PyTorch's bindings take them."""
    if kw is None:
        return args
    if args:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    return (kw,)


def _shape_args(shape, op: str = "view", name: str = "size") -> tuple:
    """The sizes given as ``f(2, 3)`` or ``f((2, 3))``; a lone np.int64 or 0-d tensor is one
    size."""
    if len(shape) == 1:
        s = shape[0]
        if type(s) is tuple:
            return s
        if not isinstance(s, int) and s is not None:
            if isinstance(s, str):
                raise TypeError(f"{op}(): argument '{name}' (position 1) must be tuple of ints, "
                                f"not str")
            if is_size(s):
                return (s,)
            try:
                return tuple(s)
            except TypeError:
                raise TypeError(f"{op}(): argument '{name}' (position 1) must be tuple of ints, "
                                f"not {type(s).__name__}") from None
    return tuple(shape)


# -- view/reshape ------------------------------------------------------------------------------

class _ReshapeBackward(_ViewPrimitive):
    """A view with another shape (view, reshape, unsqueeze, squeeze): the gradient is
    reshaped back. The nodes PyTorch names differently show different saved values, so
    they are siblings (variants of this), not subclasses of ViewBackward0."""

    __slots__ = ()

    @staticmethod
    def forward(ctx, k, x, shape):
        out = k.view(x, shape)
        if out is None:
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least one "
                f"dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
                f"(view of shape {list(x.shape)} with strides {list(k.strides(x))} as "
                f"{list(shape)})")
        ctx.in_shape = x.shape
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        return as_shape(k, g, ctx.in_shape)


ViewBackward0 = _ReshapeBackward.variant("ViewBackward0", "view")


def view(input: Tensor, *shape, dtype=None, size=None) -> Tensor:
    """A view of ``input`` with another shape (given unpacked or as ``size=``; one dimension
    may be -1); ``view(dtype)``: its memory read as ``dtype`` (``view_dtype``)."""
    if len(shape) == 1 and isinstance(shape[0], D.dtype) and dtype is None and size is None:
        return view_dtype(input, shape[0])
    if dtype is not None and not shape and size is None:
        return view_dtype(input, dtype)
    shape = _shape_args(_args_or_kw(shape, size, "view", "size"), "view")
    shape = infer_size(shape, input.numel(), "view")
    return _view_apply(ViewBackward0, input, shape)


def view_dtype(x: Tensor, dtype: D.dtype) -> Tensor:
    """``x``'s bytes read as elements of ``dtype`` (PyTorch's ``Tensor.view(dtype)``). Between
    dtypes of different sizes the last dimension must be contiguous and is scaled by the
    ratio, as the other strides and the storage offset are. As in PyTorch 2.13 the result
    shares ``x``'s memory and version counter but is not a view: no ``_base``, no history
    (it never requires grad, even for ``x``'s own dtype)."""
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"view(): argument 'dtype' must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    src, dst = x.dtype.itemsize, dtype.itemsize
    shape, strides, offset = list(x.shape), list(x.stride()), x.storage_offset()
    if src != dst:
        what = (f"to view {D.CPP_NAMES[x.dtype.name]} as {D.CPP_NAMES[dtype.name]} "
                f"(different element sizes)")
        if not shape:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
        if src < dst:  # several elements make one: every count and step must divide
            ratio = dst // src
            for name, v in [("size(-1)", shape[-1]), ("storage_offset()", offset)] + [
                    (f"stride({d})", st) for d, st in enumerate(strides[:-1])]:
                if v % ratio:
                    raise RuntimeError(f"self.{name} must be divisible by {ratio} {what}, but "
                                       f"got {v}")
            shape[-1] //= ratio
            strides = [st // ratio for st in strides[:-1]] + [1]
            offset //= ratio
        else:
            ratio = src // dst
            shape[-1] *= ratio
            strides = [st * ratio for st in strides[:-1]] + [1]
            offset *= ratio
    data = x._data
    if x.dtype is dtype:
        arr = data  # (the same memory; a new tensor of it)
    elif x.device.type == "cpu":
        if D.bfloat16 in (x.dtype, dtype):
            # (a CPU bfloat16 array is float32 values on bfloat16's grid, kernels/numpy/bf16.py:
            # its memory holds no bfloat16 bit patterns to reinterpret)
            raise NotImplementedError("view(dtype): bfloat16 tensors on the CPU cannot be "
                                      "viewed as another dtype (their memory is float32); "
                                      "move the tensor to CUDA or convert with .to()")
        arr = data.view(dtype.np)  # (NumPy scales the last axis as above)
    else:
        arr = type(data)(data.storage, offset, tuple(shape), tuple(strides), dtype)
    out = make(arr, dtype)
    out._vc = x._vc  # one memory, one version counter
    return out


def reshape(input: Tensor, *sizes, shape=None) -> Tensor:
    """``input`` with another shape (given unpacked or as ``shape=``): a view when strides
    allow, else a contiguous copy."""
    x = input
    shape = _shape_args(_args_or_kw(sizes, shape, "reshape", "shape"), "reshape", "shape")
    shape = infer_size(shape, x.numel(), "reshape")
    if shape != x._data.shape and x._k.view(x._data, shape) is None:
        # A copy, so no view of ``input``: as PyTorch's (``_unsafe_view`` of the clone), an
        # UnsafeViewBackward0 node with no ``_base``
        return apply(UnsafeViewBackward0, (x.contiguous(),), shape)
    return _view_apply(ViewBackward0, x, shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Flattens dims ``start_dim`` to ``end_dim`` into one (a view where the strides allow)."""
    x = input
    nd = x.ndim
    if type(start_dim) is not int:
        start_dim = int_arg(start_dim, "flatten", "start_dim", 1)
    if type(end_dim) is not int:
        end_dim = int_arg(end_dim, "flatten", "end_dim", 2)
    if nd == 0:  # (dims -1 and 0 only, as for any 0-d tensor)
        wrap_dim(start_dim, 0, "flatten")
        wrap_dim(end_dim, 0, "flatten")
        return reshape(x, (1,))
    s, e = wrap_dim(start_dim, nd, "flatten"), wrap_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:  # (PyTorch returns the input itself: no view, no node)
        return x if isinstance(x, Tensor) else tensor_arg(x, "flatten")
    shape = tuple(x.shape)
    return reshape(x, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


# -- permutations ------------------------------------------------------------------------------

class _PermuteBackward(_ViewPrimitive):
    """permute, transpose, t: the gradient is permuted back (siblings, as _ReshapeBackward's:
    each shows its own saved values)."""

    __slots__ = ()

    @staticmethod
    def forward(ctx, k, x, dims):
        ctx.dims = dims
        return k.permute(x, dims)

    @staticmethod
    def vjp(ctx, k, saved, g):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return k.permute(g, tuple(inverse))


PermuteBackward0 = _PermuteBackward.variant("PermuteBackward0", "permute")
TransposeBackward0 = _PermuteBackward.variant("TransposeBackward0", "transpose",
                                              _saved_dim0=shown_arg("dim0"),
                                              _saved_dim1=shown_arg("dim1"))
TBackward0 = _PermuteBackward.variant("TBackward0", "t")


def permute(input: Tensor, *args, dims=None) -> Tensor:
    """A view with the dims reordered as ``dims`` (given unpacked or as ``dims=``)."""
    x, dims = input, _args_or_kw(args, dims, "permute", "dims")
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    # PyTorch's checks, in its order: the count first (its message names sparse_coo for
    # dense tensors too), then each dim's range, then duplicates.
    dims = int_tuple(_shape_args(dims, "permute", "dims"), "permute", "dims")
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {x.ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, x.ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _view_apply(PermuteBackward0, x, dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view with dims ``dim0`` and ``dim1`` swapped."""
    x = input
    nd = x._data.ndim
    d0 = wrap_dim(dim0, nd, "transpose", "dim0", 1)
    d1 = wrap_dim(dim1, nd, "transpose", "dim1", 2)
    dims = list(range(nd))
    if nd:  # a 0-d tensor takes dims 0 and -1 and is its own transpose
        dims[d0], dims[d1] = dims[d1], dims[d0]
    out = _view_apply(TransposeBackward0, x, tuple(dims))
    fn = out._fn
    if fn is not None:  # (note_args without its keyword dict: transpose is a hot view)
        fn._shown_dim0, fn._shown_dim1 = d0, d1
    return out


def t(x: Tensor) -> Tensor:
    """Transposes a tensor of at most 2 dimensions."""
    nd = x._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return _view_apply(TBackward0, x, _T_DIMS[nd])


_T_DIMS = ((), (0,), (1, 0))  # (t's permutations: linear transposes its weight every call)


def numpy_T(x: Tensor) -> Tensor:
    """``x.T``: the dimensions reversed, a view; deprecated by PyTorch except on matrices, and
    warned about as PyTorch does."""
    nd = x.ndim
    if nd != 2:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                      "these cases." if nd == 0 else _T_DEPRECATED, UserWarning, stacklevel=2)
    return _view_apply(PermuteBackward0, x, tuple(reversed(range(nd))))


_T_DEPRECATED = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
    "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
    "matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
    "tensor.")


# -- broadcasting --------------------------------------------------------------------------------

class ExpandBackward0(_ViewPrimitive):
    __slots__ = ()
    op_name = "expand"

    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape = x.shape
        return k.expand(x, shape)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return sum_to(k, g, ctx.in_shape)


def expand(input: Tensor, *sizes, size=None) -> Tensor:
    """A view of ``input`` broadcast to ``sizes`` (given unpacked or as ``size=``; -1 keeps a
    dimension); no memory is copied."""
    x = input
    sizes = _shape_args(_args_or_kw(sizes, size, "expand", "size"), "expand")
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({x.ndim})")
    shape = []
    for i, s in enumerate(sizes):
        if type(s) is not int:
            s = int_tuple(sizes, "expand", "size")[i]
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            shape.append(s)
            continue
        have = x.shape[i - lead]
        if s == -1:
            s = have
        elif have != 1 and have != s:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({have}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(x.shape)}")
        shape.append(s)
    shape = tuple(shape)
    check_sizes(shape)  # a singleton may have been given a negative size
    return _view_apply(ExpandBackward0, x, shape)  # (PyTorch's node also for the same shape)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.expand(other.size())``."""
    return expand(input, tuple(tensor_arg(other, "expand_as", "other").shape))


def broadcast_to(input: Tensor, size) -> Tensor:
    """A view of ``input`` broadcast to ``size`` (``expand``; one int is a 1-D shape)."""
    return expand(input, _shape_args((size,), "broadcast_to", "size"))


def sum_to_size(x: Tensor, *sizes, size=None) -> Tensor:
    """Sums ``x`` down to ``size`` (the inverse of broadcasting ``size`` to ``x.shape``):
    ``x.sum_to_size(1, 3)``, ``x.sum_to_size((1, 3))`` or ``x.sum_to_size(size=(1, 3))``.

    Example:
        >>> tg.ones(2, 3).sum_to_size(size=(1, 3)).tolist()
        [[2.0, 2.0, 2.0]]
    """
    if size is not None:
        if sizes:
            raise TypeError("sum_to_size() got multiple values for argument 'size'")
        if not isinstance(size, (tuple, list)):  # (a bare int only by position, as PyTorch)
            raise TypeError(f"sum_to_size(): argument 'size' must be tuple of ints, not "
                            f"{type(size).__name__}")
        sizes = (size,)
    size = int_tuple(_shape_args(sizes, "sum_to_size"), "sum_to_size", "size")
    shape = tuple(x.shape)
    if shape == size:
        return x
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(shape)}")
    return sum_to(traced, x, size)


# -- squeeze / unsqueeze -----------------------------------------------------------------------

_SELF_SIZES = property(lambda n: tuple(n.in_shape))
UnsqueezeBackward0 = _ReshapeBackward.variant(
    "UnsqueezeBackward0", "unsqueeze", _saved_dim=shown_arg("dim"))
# (reshape's copy: the view rule on a fresh tensor, not made a view of anything)
UnsafeViewBackward0 = _ReshapeBackward.variant("UnsafeViewBackward0", "_unsafe_view",
                                               _saved_self_sym_sizes=_SELF_SIZES)


# PyTorch's three overloads name three nodes: squeeze() SqueezeBackward0, squeeze(dim)
# SqueezeBackward1, squeeze(dims) SqueezeBackward2
SqueezeBackward0 = _ReshapeBackward.variant("SqueezeBackward0", "squeeze",
                                            _saved_self_sym_sizes=_SELF_SIZES)
SqueezeBackward1 = _ReshapeBackward.variant("SqueezeBackward1", "squeeze",
                                            _saved_self_sym_sizes=_SELF_SIZES,
                                            _saved_dim=shown_arg("dim"))
SqueezeBackward2 = _ReshapeBackward.variant("SqueezeBackward2", "squeeze",
                                            _saved_self_sym_sizes=_SELF_SIZES,
                                            _saved_dim=shown_arg("dim"))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A view with a dim of size one inserted at ``dim``."""
    x = input
    shape = x._data.shape  # (the array's tuple: Tensor.shape builds a Size per read)
    d = wrap_dim(dim, len(shape) + 1, "unsqueeze", "dim", 1)
    return note_dim(_view_apply(UnsqueezeBackward0, x, shape[:d] + (1,) + shape[d:]), d)


def squeeze(input: Tensor, dim=None) -> Tensor:
    """A view without the dims of size one (all, or those of ``dim``: an int or a tuple, each
    dim at most once)."""
    x = input
    shape = list(x.shape)
    if dim is None:
        node = SqueezeBackward0
        new = [s for s in shape if s != 1]
    else:
        node = SqueezeBackward2 if isinstance(dim, (tuple, list)) else SqueezeBackward1
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        wrapped = [wrap_dim(d, x.ndim, "squeeze", "dim", 1) for d in dims]
        dims = set(wrapped)
        if len(dims) != len(wrapped):
            dup = next(d for i, d in enumerate(wrapped) if d in wrapped[:i])
            raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
        new = [s for i, s in enumerate(shape) if not (i in dims and s == 1)]
        return note_args(_view_apply(node, x, tuple(new)),
                         dim=tuple(wrapped) if node is SqueezeBackward2 else wrapped[0])
    return _view_apply(node, x, tuple(new))


# -- basic indexing ----------------------------------------------------------------------------

def list_as_tuple(index: list):
    """PyTorch's (and old NumPy's) heuristic: a list shorter than 32 holding a sequence, a
    tensor, a slice, None or Ellipsis is a tuple of indices (x[[[0, 1], [2, 3]]] is
    x[[0, 1], [2, 3]]); other lists are one index."""
    if len(index) < 32:
        for ix in index:
            if ix is None or ix is Ellipsis or isinstance(
                    ix, (slice, list, tuple, Tensor)) or hasattr(ix, "__array__"):
                warnings.warn(_LIST_AS_TUPLE, UserWarning, stacklevel=4)
                return tuple(index)
    return index


_LIST_AS_TUPLE = (  # (PyTorch 2.13's text, warned each time as there)
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error "
    "or a different result")


def is_basic_index(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    for ix in items:
        if ix is None or ix is Ellipsis or isinstance(ix, slice):
            continue
        if isinstance(ix, (bool, Tensor, list)) or hasattr(ix, "__array__"):
            return False
        try:
            operator.index(ix)
        except TypeError:
            return False
    return True


class _BasicIndexBackward(_ViewPrimitive):
    """Basic indexing (ints, slices, None): the gradient is scattered into zeros."""

    __slots__ = ()

    @staticmethod
    def forward(ctx, k, x, index):
        ctx.in_shape, ctx.index = x.shape, index
        return k.getitem(x, index)

    @staticmethod
    def vjp(ctx, k, saved, g):
        dev, dt = meta(g)
        return call(k, SliceScatterBackward0, (g,), tuple(ctx.in_shape), ctx.index, dt, dev)


class SliceScatterBackward0(Primitive):
    """zeros(shape) with ``src`` written at ``index``: the backward of basic indexing."""

    __slots__ = ()
    op_name = "slice_scatter"
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, src, shape, index, dtype, device):
        ctx.index = index
        out = k.full(shape, 0, dtype, device)
        k.copy_(k.getitem(out, index), src)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        return k.getitem(g, ctx.index)


# Note [Basic indexing as PyTorch's chain of views]
#   PyTorch indexes one index element at a time: ``x[0, 1:3]`` is select(0) then slice(1, 3),
#   ``x[:, None, 1]`` unsqueeze then select, each its own view and node (SelectBackward0,
#   SliceBackward0, UnsqueezeBackward0, what ``grad_fn``, the profiler and emit_nvtx show),
#   and a slice in a tuple that covers its whole dim is skipped, so ``x[:, :]``, ``x[...]``
#   and ``x[0:10,]`` of a 3-long dim are one alias (AliasBackward0); a lone slice is always
#   sliced (``x[:]`` is a SliceBackward0, as PyTorch's). ``getitem`` makes the same steps; the
#   common one-step case (``x[0]``, ``x[:, 1:]``, ``x[..., None]``) is one view, as before.
def _slice_of(node) -> tuple:
    """(dim, slice) of a SliceBackward0 node: its index is ``(:,) * dim + (slice,)``."""
    index = node.index
    return len(index) - 1, index[-1]


_INT64_MAX = (1 << 63) - 1


class SliceBackward0(_BasicIndexBackward):
    """``x[a:b:c]`` along one dim. Its saved values are the slice as written, as PyTorch's:
    an omitted end is INT64_MAX, an omitted start 0 (``x[:, ::2].grad_fn._saved_end``)."""

    __slots__ = ()
    op_name = "slice"
    _saved_dim = property(lambda n: _slice_of(n)[0])
    _saved_start = property(lambda n: _none_or(_slice_of(n)[1].start, 0))
    _saved_end = property(lambda n: _none_or(_slice_of(n)[1].stop, _INT64_MAX))
    _saved_step = property(lambda n: _none_or(_slice_of(n)[1].step, 1))


def _none_or(v, default: int) -> int:
    return default if v is None else operator.index(v)


# (not a SliceBackward0: a select node has no start, end or step)
SelectBackward0 = _BasicIndexBackward.variant("SelectBackward0", "select")
_FULL = slice(None)


def _index_steps(index, shape: tuple, op: str = "__getitem__") -> list:
    """The views ``x[index]`` is made of, in order, for basic ``index`` (ints, slices, None,
    Ellipsis) of a tensor of ``shape``: ``(primitive, view index)`` pairs, one per int, None
    and slice not covering its dim (Note [Basic indexing as PyTorch's chain of views]), ints
    wrapped and bounds-checked. One pass: it runs on every ``x[...]``."""
    if type(index) is not tuple:
        index = (index,)
    nd = len(shape)
    consumed = 0
    for ix in index:
        if ix is not None and ix is not Ellipsis:
            consumed += 1
    if consumed > nd:
        if not nd:  # (PyTorch's messages for a 0-d tensor)
            if any(type(ix) is slice for ix in index):
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    steps, d, src = [], 0, 0  # d: the dim in the view made so far; src: the dim of x
    for ix in index:
        if ix is None:
            steps.append((UnsqueezeBackward0, d))
            d += 1
        elif ix is Ellipsis:
            skipped = nd - consumed
            d, src, consumed = d + skipped, src + skipped, nd  # (a second one: nothing)
        elif type(ix) is slice:
            step = ix.step
            if step is not None and step <= 0:
                raise ValueError("slice step cannot be zero" if step == 0
                                 else "step must be greater than zero")
            n = shape[src]
            start, stop = ix.start, ix.stop
            whole = ((start is None or start == 0) and (step is None or step == 1)
                     and (stop is None or (type(stop) is int and stop >= n)))
            if not whole and ix.indices(n) != (0, n, 1):
                steps.append((SliceBackward0, (_FULL,) * d + (ix,)))
            d += 1
            src += 1
        else:
            i = ix if type(ix) is int else operator.index(ix)
            n = shape[src]
            if not -n <= i < n:
                raise IndexError(out_of_bounds(i, src, n, op))
            steps.append((SelectBackward0, (_FULL,) * d + (i % n,)))
            src += 1
    return steps


def getitem(x: Tensor, index) -> Tensor:
    """``x[index]`` for basic indices (ints, slices, None, Ellipsis): a view (Note [Basic
    indexing as PyTorch's chain of views])."""
    if type(index) is list:
        index = list_as_tuple(index)
    if not is_basic_index(index):
        from .indexing import advanced_getitem  # index tensors
        return advanced_getitem(x, index)
    steps = _index_steps(index, x._data.shape)
    if not steps:
        if type(index) is slice:
            # (PyTorch slices a lone slice even when it covers the dim: ``x[:]`` and ``x[0:]``
            # are SliceBackward0 nodes; only within a tuple is such a slice skipped)
            return _view_apply(SliceBackward0, x, (index,))
        return _view_apply(AliasBackward0, x)
    for op, step in steps:
        if op is UnsqueezeBackward0:
            shape = x._data.shape
            x = note_dim(_view_apply(op, x, shape[:step] + (1,) + shape[step:]), step)
        else:
            x = _view_apply(op, x, step)
    return x


# -- as_strided, and history through views ------------------------------------------------------

class AsStridedBackward0(_ViewPrimitive):
    """A view by explicit geometry; the offset is relative to the input's storage offset."""

    __slots__ = ()
    op_name = "as_strided"

    @staticmethod
    def forward(ctx, k, x, shape, strides, rel_offset):
        ctx.layout = (x.shape, k.strides(x))
        ctx.geom = (shape, strides, rel_offset)
        return k.as_strided(x, shape, strides, k.storage_offset(x) + rel_offset)

    @staticmethod
    def vjp(ctx, k, saved, g):
        in_shape, in_strides = ctx.layout
        shape, strides, rel = ctx.geom
        lo = min(0, rel)
        hi = max(_extent(in_shape, in_strides), rel + _extent(shape, strides))
        in_overlaps = _overlaps(in_shape, in_strides)
        if in_overlaps or _overlaps(shape, strides):
            # Several output elements read one storage element: their gradients add up.
            full = zeros(k, (hi - lo,), g)
            k.index_put_(full, (_storage_index(k, g, shape, strides, rel - lo),), g, True)
            if in_overlaps:
                # The input reads some storage elements through several of its own elements
                # (an expanded tensor): each gets the element's gradient divided by their
                # number, so that the backward of what made the input (expand's sum) adds it
                # up once, as ATen's as_strided_backward does (the full gradient in each:
                # x.expand(3, 2, 2).diagonal(0, -2, -1).sum() gave x 9 I for 3 I).
                count = zeros(k, (hi - lo,), g)
                ones = k.full(tuple(in_shape), 1, meta(g)[1], meta(g)[0])
                k.index_put_(count, (_storage_index(k, g, in_shape, in_strides, -lo),), ones,
                             True)
                full = k.div(full, k.where(k.gt(count, 0), count, 1))
            return k.as_strided(full, in_shape, in_strides, k.storage_offset(full) - lo)
        if lo == 0 and hi == _extent(in_shape, in_strides):
            return as_strided_scatter(k, _zeros_layout(k, g, *ctx.layout), g, *ctx.geom)
        # The output reaches storage outside the input's span (before its offset, or past its
        # last element): scatter into a buffer spanning both, then read the input's region.
        full = as_strided_scatter(k, zeros(k, (hi - lo,), g), g, shape, strides, rel - lo)
        return k.as_strided(full, in_shape, in_strides, k.storage_offset(full) - lo)


class AsStridedScatterBackward0(Primitive):
    """A copy of ``base`` (in ``base``'s layout) with the region ``geom`` replaced by ``src``;
    the region's offset is relative to the start of ``base``."""

    __slots__ = ()
    op_name = "as_strided_scatter"
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, base, src, shape, strides, rel_offset, dtype, device):
        ctx.geom = (shape, strides, rel_offset)
        st = k.strides(base)
        ctx.layout = (base.shape, st)
        out = k.as_strided(k.empty((_extent(base.shape, st),), dtype, device), base.shape, st, 0)
        k.copy_(out, base)
        k.copy_(k.as_strided(out, shape, strides, rel_offset), src)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        shape, strides, off = ctx.geom
        in_shape, in_strides = ctx.layout
        if tuple(k.strides(g)) != tuple(in_strides):
            # the region is found by the output's layout (a broadcast gradient has another)
            g = as_strided_scatter(k, _zeros_layout(k, g, in_shape, in_strides), g, in_shape,
                                   in_strides, 0)
        region = k.as_strided(g, shape, strides, k.storage_offset(g) + off)
        g_base = as_strided_scatter(k, g, zeros(k, region.shape, g), shape, strides, off)
        return g_base, region


def _overlaps(shape, strides) -> bool:
    """True unless the geometry is known to reach each storage element at most once (each
    stride, smallest first, steps past everything the smaller ones reach)."""
    reach = 1
    for s, n in sorted((abs(s), n) for n, s in zip(shape, strides) if n > 1):
        if s < reach:
            return True
        reach += (n - 1) * s
    return False


def _storage_index(k, like, shape, strides, offset):
    """The int64 storage positions of a geometry's elements, in its shape, on ``like``'s
    device."""
    dev, _ = meta(like)
    idx = k.full((1,) * len(shape), offset, D.int64, dev)
    for d, (n, s) in enumerate(zip(shape, strides)):
        if s == 0:  # (adds nothing: the final expand covers the dim)
            continue
        step = k.arange(0, s, n, D.int64, dev)
        idx = k.add(idx, k.view(step, tuple(n if i == d else 1 for i in range(len(shape)))))
    return k.expand(idx, tuple(shape)) if tuple(idx.shape) != tuple(shape) else idx


def _extent(shape, strides) -> int:
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def _zeros_layout(k, like, shape, strides):
    """Zeros of ``shape`` with ``strides`` (a buffer of the extent), ``like``'s dtype and
    device."""
    return k.as_strided(zeros(k, (_extent(shape, strides),), like), shape, strides, 0)


def _to_layout(g: Tensor, shape, strides) -> Tensor:
    """``g`` with the given strides: itself if it has them, else a recorded copy."""
    if g.stride() == tuple(strides):
        return g
    from .creation import empty_strided
    return empty_strided(shape, strides, dtype=g.dtype, device=g.device).copy_(g)


def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s storage with explicit ``size``, ``stride`` and ``storage_offset``
    (absolute, as PyTorch's; ``None`` keeps ``x``'s offset).

    The geometry is checked against the storage (non-negative sizes, strides and offset, and
    every element inside it) by the backend's ``as_strided``, through the one check both
    backends share (``runtime.array.check_view_bounds``)."""
    x = input
    size = int_tuple(size, "as_strided", "size", 1)
    stride = int_tuple(stride, "as_strided", "stride", 2)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided: mismatch in length of strides ({len(stride)}) and "
                           f"shape ({len(size)})")
    if storage_offset is None:
        rel = 0
    else:
        rel = int_arg(storage_offset, "as_strided", "storage_offset", 3) - x.storage_offset()
    return _view_apply(AsStridedBackward0, x, size, stride, rel)


class AliasBackward0(_ViewPrimitive):
    """The same elements under another name (``as_subclass``): a view of the whole tensor,
    whose gradient passes through."""

    __slots__ = ()
    op_name = "alias"

    @staticmethod
    def forward(ctx, k, x):
        return k.getitem(x, ())

    @staticmethod
    def vjp(ctx, k, saved, g):
        return g


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """Makes a ``cls`` instance with the same data pointer as ``self``. Changes in the output
    mirror changes in ``self``, and the output stays attached to the autograd graph. ``cls``
    must be a subclass of ``Tensor``.

    The output is a view (an ``AliasBackward0`` node where autograd records), made without
    calling ``cls``'s constructor. Ops on it return ``cls`` instances unless ``cls`` disables
    ``__torch_function__`` (autograd/overrides.py), as ``nn.Parameter`` does."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    note_instance(cls)
    out = _view_apply(AliasBackward0, self)
    try:
        out.__class__ = cls
    except TypeError:  # a subclass with slots of its own: a fresh instance, the same fields
        obj = object.__new__(cls)
        for f in _FIELDS:
            if hasattr(out, f):
                setattr(obj, f, getattr(out, f))
        obj.__dict__.update(out.__dict__)
        out = obj
    return out


def as_strided_scatter(k, base, src, size, stride, rel_offset: int):
    """A copy of ``base`` with the region (size, stride, rel_offset) replaced by ``src``, on
    backend ``k`` (any)."""
    dev, dt = meta(base)
    return call(k, AsStridedScatterBackward0, (base, src), tuple(size), tuple(stride),
                rel_offset, dt, dev)


# Note [Views across dtypes]
#   ``view_as_real`` (and ``real``/``imag``, views of it) reads a complex base's memory as
#   floats; ``view_as_complex`` reads a real base's as complex numbers. The geometry of such a
#   view is in its own element units, so the base-relative ``as_strided`` that regenerates a
#   view's history, and that ``CopySlices`` cuts the written region with, is taken over the
#   base's real view instead: ``as_strided(view_as_real(base), ...)``, whose offset counts
#   floats (twice the base's). A complex view of a real base has no such whole-base form (the
#   base's last dimension need not be 2), so writes that would rewrite its history raise (PyTorch
#   replays the view function there; a clone first is the way around).
def _real_domain(base: Tensor, view_: Tensor) -> bool:
    """Whether ``view_``'s geometry counts the floats of complex ``base`` (Note [Views across
    dtypes]); raises for the complex view of a real base."""
    if view_._dtype is base._dtype:
        return False
    if not base._dtype.is_complex:
        raise RuntimeError(
            "view_as_complex: a complex view of a real tensor, or its base, was modified "
            "in-place while autograd records, and tritongrad cannot rewrite the history of "
            "such a view (PyTorch replays the view there). Clone the view or its base before "
            "the in-place operation.")
    return True


class CopySlices(Node):
    """History of a base after an in-place op ``fn`` on one of its views: the gradient of
    the written region goes through ``fn``; the rest of the base's gradient passes through."""

    def name(self) -> str:
        return "torch::autograd::CopySlices"  # (PyTorch's C++ node's name, as AccumulateGrad's)

    def __init__(self, base: Tensor, view_: Tensor, fn: Node):
        super().__init__()
        self.real_domain = _real_domain(base, view_)
        self.next_functions = (base._edge(),) + fn.next_functions[1:]
        self._seq = fn._seq
        self._stream = fn._stream
        self.fn = fn
        self.layout = (tuple(base.shape), base.stride())
        unit = 2 if self.real_domain else 1  # (floats per complex element)
        self.geom = (tuple(view_.shape), view_.stride(),
                     view_.storage_offset() - unit * base.storage_offset())

    @property
    def num_outputs(self) -> int:
        return 1

    def apply(self, g):
        shape, strides, off = self.geom
        g = _to_layout(g, *self.layout)
        if self.real_domain:
            g = complex_parts.view_as_real(g)
        region = as_strided(g, shape, strides, g.storage_offset() + off)
        res = self.fn.apply(region)
        first = res[0] if res[0] is not None else zeros(traced, region.shape, region)
        out = as_strided_scatter(traced, g, first, shape, strides, off)
        if self.real_domain:
            out = complex_parts.view_as_complex(out.contiguous())
        return (out,) + tuple(res[1:])

    def _release(self) -> None:
        self.fn._release()


def rebase_history(t: Tensor, node: Node) -> None:
    """Makes ``node`` (an in-place op just applied to ``t``) the history of ``t``."""
    if t._base is None:
        t._grad_fn, t._output_nr, t._requires_grad = node, 0, True
        return
    base = t._base
    cs = CopySlices(base, t, node)
    base._grad_fn, base._output_nr, base._requires_grad = cs, 0, True
    regenerate_view_history(t)


def regenerate_view_history(v: Tensor) -> None:
    """Gives view ``v`` a history on top of its base's current one."""
    base = v._base
    prev = state.grad_enabled
    state.grad_enabled = True
    try:
        if _real_domain(base, v):  # (Note [Views across dtypes])
            base = apply(complex_parts.ViewAsRealBackward0, (base,))
        rel = v.storage_offset() - base.storage_offset()
        fresh = apply(AsStridedBackward0, (base,), tuple(v.shape), v.stride(), rel)
    finally:
        state.grad_enabled = prev
    v._grad_fn, v._output_nr = fresh._grad_fn, 0
    v._requires_grad = True
    v._view_version = v._vc[0]


# -- in-place views -----------------------------------------------------------------------------

def inplace_view(fn):
    """The in-place form of view op ``fn`` (``x.transpose_(0, 1)`` of ``transpose``): ``x``
    itself takes the view's geometry. Its values do not change, but it is an in-place op to
    autograd (PyTorch's inplace view ops): the view rules are checked (Note [View + in-place],
    tensor.py), its version is bumped, and a tensor with history gets the view's node as its
    new ``grad_fn``; a view keeps its base, and its history is regenerated from the base's on
    the next read of its ``grad_fn`` (as after any write through a view)."""
    def method(self: Tensor, *args, **kwargs) -> Tensor:
        check_inplace(tensor_arg(self, fn.__name__ + "_"))  # (tg.as_strided_ is this too)
        out = fn(self, *args, **kwargs)
        self._data = out._data
        self._vc[0] += 1
        if self._base is None and out._grad_fn is not None:
            self._grad_fn, self._output_nr = out._grad_fn, 0
        return self
    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__doc__ = (f"In-place version of :func:`{fn.__name__}`: this tensor takes the "
                      f"view's geometry.")
    return method


# -- the table ---------------------------------------------------------------------------------

_INPLACE_VIEWS = ("transpose", "t", "squeeze", "unsqueeze", "as_strided")
OPS = tuple(OpInfo(n, globals()[n], grad="g viewed back",
                   inplace=inplace_view(globals()[n]) if n in _INPLACE_VIEWS else None)
            for n in ("view", "reshape", "flatten", "permute", "transpose", "t", "expand",
                      "expand_as", "broadcast_to", "unsqueeze", "squeeze", "as_strided",
                      "sum_to_size")) + (
    OpInfo("getitem", getitem, function=False, method=False, operators=("__getitem__",),
           grad="g in a zero tensor"),
    OpInfo("as_subclass", as_subclass, function=False, node=AliasBackward0, grad="g"),
)
OPS = with_jvp(OPS)  # every primitive here has a jvp rule
