"""The ops on nested tensors, by public name (Note [Jagged layout] in _tensor.py).

``handle`` is NestedTensor's ``__torch_function__``: it finds the handler of ``func`` by its
public name (``tritongrad.add``, ``Tensor.add``, ``Tensor.__add__``,
``tritongrad.nn.functional.linear``) in ``_TABLE``. Each handler computes on the packed
``values()`` (so autograd records ordinary ops) with subclass dispatch off and wraps the
result with the input's offsets; an op without a handler is refused with a
``NotImplementedError`` naming it, never computed on the packed buffer as if it were dense.
"""

from __future__ import annotations

import types as _types

import tritongrad as tg
from tritongrad.autograd.tensor import Tensor, wrap_dim

from ._tensor import NestedTensor, _make, _Ragged, _same_structure, like

__all__ = ["handle", "supported"]

# -- elementwise --------------------------------------------------------------------------------

# ops whose result has the input's shape, element by element (functions, methods and the
# in-place methods of those that have one)
POINTWISE = (
    "abs", "absolute", "acos", "arccos", "acosh", "arccosh", "asin", "arcsin", "asinh",
    "arcsinh", "atan", "arctan", "atanh", "arctanh", "ceil", "clamp", "clip", "clamp_min",
    "clamp_max", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv", "exp", "exp2",
    "expm1", "fix", "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "logit",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num", "neg", "negative",
    "positive", "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn", "signbit",
    "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc", "relu", "logical_not",
    "bitwise_not", "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
    "floor_divide", "remainder", "fmod", "pow", "float_power", "maximum", "minimum", "fmax",
    "fmin", "atan2", "arctan2", "hypot", "copysign", "xlogy", "eq", "ne", "lt", "le", "gt",
    "ge", "greater", "greater_equal", "less", "less_equal", "not_equal", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "where", "lerp",
    "addcmul", "addcdiv", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
    "randn_like", "fill_", "zero_", "mul_", "add_", "sub_", "div_", "copy_",
    # conversions: the values converted, the structure kept
    "to", "type", "float", "double", "half", "bfloat16", "int", "long", "bool", "cpu", "cuda",
    "detach", "clone", "type_as")
# the same, as tritongrad.nn.functional functions
FUNCTIONAL_POINTWISE = (
    "relu", "relu6", "gelu", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "hardtanh",
    "hardswish", "hardsigmoid", "sigmoid", "tanh", "softplus", "softsign", "logsigmoid",
    "tanhshrink", "softshrink", "hardshrink", "threshold", "dropout", "alpha_dropout",
    "feature_alpha_dropout")
_OPERATORS = (
    "__neg__", "__pos__", "__abs__", "__invert__", "__add__", "__radd__", "__sub__",
    "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__",
    "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__eq__", "__ne__",
    "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__",
    "__xor__", "__rxor__", "__iadd__", "__isub__", "__imul__", "__itruediv__")
# ops whose dense tensor arguments are not operands (only their dtype or device is read)
_NO_BROADCAST = ("to", "type_as")
_INPLACE_OPERATORS = ("__iadd__", "__isub__", "__imul__", "__itruediv__")


def _name(func) -> str:
    n = getattr(func, "__name__", None) or repr(func)
    return n.strip("_") if n.startswith("__") else n


def _shape_str(nt) -> str:
    return "(" + ", ".join(str(d) for d in nt.shape) + ")"


def _dense_operand(t: Tensor, nt: NestedTensor, op: str) -> Tensor:
    """Dense operand ``t`` of an elementwise op with ``nt``, made to broadcast against
    ``nt.values()``: dims that align with the batch and ragged dims must have size 1, except a
    leading batch dim of size B, whose rows are repeated for each row of their component."""
    nd, r = nt.dim(), nt._ragged_idx
    if t.dim() <= nd - 1 - r:  # only the dims after the ragged one
        return t
    shape = tuple(t.shape)
    bad = RuntimeError(f"{op}: cannot broadcast a dense tensor of shape {tuple(shape)} with a "
                       f"nested tensor of shape {_shape_str(nt)}: only a dense tensor whose "
                       f"sizes are 1 (or B for the batch dim) along the batch and ragged dims is "
                       f"supported")
    if t.dim() > nd or shape[t.dim() - nd + r] != 1:
        raise bad
    if t.dim() < nd:
        return t
    if shape[0] == 1:
        return t.squeeze(0)
    if shape[0] != len(nt):
        raise bad
    # (B, ..., 1, ...) -> one row per packed row: the batch index of each packed row
    starts, lens = nt._ragged.host()
    rows = nt._data.shape[r - 1]
    seg = [0] * rows
    for b, (s, n) in enumerate(zip(starts, lens)):
        seg[s:s + n] = [b] * n
    index = tg.tensor(seg, dtype=tg.int64, device=t.device)
    return t.squeeze(r).index_select(0, index).movedim(0, r - 1)


def _check_same_structure(nts: list, func) -> None:
    first = nts[0]
    for other in nts[1:]:
        if (other._ragged.symbol != first._ragged.symbol
                or other._ragged_idx != first._ragged_idx or other.dim() != first.dim()):
            raise RuntimeError(f"cannot call binary pointwise function {_name(func)} with inputs "
                               f"of shapes {_shape_str(first)} and {_shape_str(other)}")


def _unwrap_args(args: tuple, kwargs: dict, func):
    """(``args``, ``kwargs``) with nested tensors replaced by their values and dense tensors
    made to broadcast; and the first nested tensor (whose structure the result takes)."""
    nts = [a for a in (*args, *kwargs.values()) if isinstance(a, NestedTensor)]
    _check_same_structure(nts, func)
    nt = nts[0]

    broadcast = getattr(func, "__name__", "") not in _NO_BROADCAST

    def conv(a):
        if isinstance(a, NestedTensor):
            return a.values()
        if broadcast and isinstance(a, Tensor) and a.dim() > 0:
            return _dense_operand(a, nt, _name(func))
        return a
    return tuple(conv(a) for a in args), {k: conv(v) for k, v in kwargs.items()}, nt


def _requires_grad(args, kwargs) -> bool:
    return tg.is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad
                                        for a in (*args, *kwargs.values()))


def _pointwise(func, args: tuple, kwargs: dict):
    vargs, vkwargs, nt = _unwrap_args(args, kwargs, func)
    name = getattr(func, "__name__", "")
    inplace = (name.endswith("_") and not name.startswith("__")) or name in _INPLACE_OPERATORS \
        or vkwargs.get("inplace") is True
    if inplace and _requires_grad(args, kwargs):
        raise RuntimeError(f"{_name(func)}: in-place ops on nested tensors that require grad "
                           f"are not supported; use the out-of-place op")
    result = func(*vargs, **vkwargs)
    if inplace and isinstance(args[0], NestedTensor):
        return args[0]
    if not isinstance(result, Tensor) or tuple(result.shape) != tuple(nt._data.shape):
        raise RuntimeError(f"{_name(func)}: the result on the packed values has shape "
                           f"{tuple(getattr(result, 'shape', ()))}, not the values' "
                           f"{tuple(nt._data.shape)}: this use is not supported for nested "
                           f"tensors")
    return like(nt, result)


# -- dims ---------------------------------------------------------------------------------------

def _dims(dim, nd: int, op: str) -> list:
    if dim is None or dim == () or dim == []:
        return list(range(nd))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({wrap_dim(d, nd, op) for d in dims})


def _arg(args: tuple, kwargs: dict, i: int, name: str, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _inner_dim(nt: NestedTensor, dim, op: str) -> int:
    """The values' dim for nested dim ``dim``, which must be neither the batch dim nor the
    ragged one."""
    d = wrap_dim(dim, nt.dim(), op)
    # PyTorch's wording
    if d == 0:
        raise RuntimeError(f"{op}(): not supported for NestedTensor on dim=0")
    if d == nt._ragged_idx:
        raise RuntimeError(f"{op}(): not supported for NestedTensor on ragged dim")
    return d - 1


# -- reductions ---------------------------------------------------------------------------------

_REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "all", "any", "nansum", "nanmean",
               "logsumexp")


def _reduction(func, args: tuple, kwargs: dict):
    nt = args[0]
    op = _name(func)
    rest = dict(kwargs)
    dim = args[1] if len(args) > 1 else rest.pop("dim", None)
    keepdim = args[2] if len(args) > 2 else rest.pop("keepdim", False)
    if len(args) > 3:
        raise TypeError(f"{op}(): pass the arguments after keepdim by keyword for nested "
                        f"tensors")
    nd, r = nt.dim(), nt._ragged_idx
    dims = _dims(dim, nd, op)
    values = nt.values()
    if r not in dims:
        if 0 in dims:
            raise RuntimeError(f"{op}(): reducing along the batch dimension but not the ragged "
                               f"dimension is not supported for nested tensors")
        out = func(values, _dim_arg([d - 1 for d in dims]), keepdim, **rest)
        shift = 0 if keepdim else sum(d < r for d in dims)
        return like(nt, out, r - shift)
    # the ragged dim: each component on its own, then stacked into a dense (B, ...) tensor
    inner = [d - 1 for d in dims if d != 0]
    if 0 in dims and nt._ragged.lengths is None:
        # no holes: the batch and ragged dims together are the packed dim of values
        out = func(values, _dim_arg(inner), keepdim, **rest)
        return out.unsqueeze(0) if keepdim else out
    if 0 in dims and op in ("mean", "nanmean"):
        total = _reduction(getattr(tg, "nansum" if op == "nanmean" else "sum"),
                           (nt, dims, keepdim), rest)
        if op == "nanmean":
            count = (~tg.isnan(values)).to(total.dtype)
            count = _reduction(tg.sum, (like(nt, count), dims, keepdim), {})
        else:
            count = tg.ones_like(values, dtype=total.dtype)
            count = _reduction(tg.sum, (like(nt, count), dims, keepdim), {})
        return total / count
    parts = [func(c, _dim_arg(inner), keepdim, **rest) for c in nt._components()]
    out = tg.stack(parts)
    if 0 in dims:
        out = _BATCH_REDUCE.get(op, func)(out, 0, keepdim)
    return out


def _dim_arg(dims: list):
    # (one dim as an int: prod, all and any take no tuple)
    return dims[0] if len(dims) == 1 else tuple(dims)


_BATCH_REDUCE = {"logsumexp": tg.logsumexp, "nansum": tg.sum}


# -- along one dim ------------------------------------------------------------------------------

def _softmax(func, args: tuple, kwargs: dict):
    nt = args[0]
    op = _name(func)
    rest = dict(kwargs)
    dim = args[1] if len(args) > 1 else rest.pop("dim", None)
    if dim is None:
        raise TypeError(f"{op}(): a nested tensor needs an explicit dim")
    d = wrap_dim(dim, nt.dim(), op)
    if d == 0:
        raise RuntimeError(f"{op}(): not supported when reducing across the batch dimension "
                           f"for NestedTensor")
    if d != nt._ragged_idx:
        return like(nt, func(nt.values(), d - 1, *args[2:], **rest))
    parts = [func(c, d - 1, *args[2:], **rest) for c in nt._components()]
    return _from_parts(nt, parts)


def _from_parts(nt: NestedTensor, parts: list) -> NestedTensor:
    """Components of ``nt``'s lengths packed again: ``nt``'s structure when it has no holes,
    else a contiguous one."""
    values = tg.cat(parts, nt._ragged_idx - 1)
    if nt._ragged.lengths is None:
        return like(nt, values)
    return _make(values, _compact(nt._ragged), nt._ragged_idx)


def _compact(ragged: _Ragged) -> _Ragged:
    lens = ragged.host()[1]
    offs = [0]
    for n in lens:
        offs.append(offs[-1] + n)
    offsets = tg.tensor(offs, dtype=ragged.offsets.dtype, device=ragged.offsets.device)
    return _Ragged.of(offsets, None)


def _contiguous(func, args, kwargs):
    nt = args[0]
    if nt.is_contiguous():
        return nt
    if nt._ragged.lengths is None:
        return like(nt, nt.values().contiguous())
    return _from_parts(nt, nt._components())


def _layer_norm(func, args: tuple, kwargs: dict):
    nt = args[0]
    shape = _arg(args, kwargs, 1, "normalized_shape")
    k = 1 if isinstance(shape, int) else len(shape)
    if nt.dim() - k <= nt._ragged_idx:
        raise RuntimeError(f"{_name(func)}(): normalizing over the ragged or batch dimension "
                           f"is not supported for nested tensors (normalized_shape="
                           f"{shape}, input shape {_shape_str(nt)})")
    if any(isinstance(a, NestedTensor) for a in (*args[1:], *kwargs.values())):
        raise RuntimeError(f"{_name(func)}(): weight and bias must be dense tensors")
    return like(nt, func(nt.values(), *args[1:], **kwargs))


def _linear(func, args: tuple, kwargs: dict):
    nt = args[0]
    if not isinstance(nt, NestedTensor) or any(isinstance(a, NestedTensor)
                                               for a in (*args[1:], *kwargs.values())):
        raise RuntimeError(f"{_name(func)}(): only a nested input with a dense weight is "
                           f"supported for nested tensors")
    if nt._ragged_idx == nt.dim() - 1:
        raise RuntimeError(f"{_name(func)}(): the last dimension of the nested input is "
                           f"ragged: shape {_shape_str(nt)}")
    return like(nt, func(nt.values(), *args[1:], **kwargs))


def _matmul(func, args: tuple, kwargs: dict):
    a, b = args[0], _arg(args, kwargs, 1, "other" if _name(func) != "bmm" else "mat2")
    if _name(func) != "bmm" and isinstance(a, NestedTensor) and isinstance(
            b, Tensor) and not isinstance(b, NestedTensor) and b.dim() == 2:
        return _linear(func, (a, b), {})
    shapes = [_shape_str(t) if isinstance(t, NestedTensor) else tuple(getattr(t, "shape", ()))
              for t in (a, b)]
    # PyTorch's first words, then what is supported
    raise RuntimeError(f"{_name(func)}(): not supported between inputs of shapes {shapes[0]} "
                       f"and {shapes[1]}: only matmul of a nested tensor with a dense 2-D "
                       f"matrix is supported (got {_describe(a)} and {_describe(b)}); use "
                       f"scaled_dot_product_attention for attention")


def _describe(t) -> str:
    if isinstance(t, NestedTensor):
        return f"a nested tensor of shape {_shape_str(t)}"
    if isinstance(t, Tensor):
        return f"a dense tensor of shape {tuple(t.shape)}"
    return type(t).__name__


def _embedding(func, args: tuple, kwargs: dict):
    nt = args[0]
    if not isinstance(nt, NestedTensor) or isinstance(_arg(args, kwargs, 1, "weight"),
                                                      NestedTensor):
        raise RuntimeError("embedding(): only nested indices with a dense weight are supported")
    return like(nt, func(nt.values(), *args[1:], **kwargs))


# -- shape --------------------------------------------------------------------------------------

def _transpose(func, args: tuple, kwargs: dict):
    nt = args[0]
    nd = nt.dim()
    d0 = wrap_dim(_arg(args, kwargs, 1, "dim0"), nd, "transpose")
    d1 = wrap_dim(_arg(args, kwargs, 2, "dim1"), nd, "transpose")
    if 0 in (d0, d1) and d0 != d1:
        raise ValueError("Transpose is not supported on the batch dimension for jagged NT")
    r = nt._ragged_idx
    new_r = d1 if r == d0 else d0 if r == d1 else r
    return like(nt, nt.values().transpose(max(d0 - 1, 0), max(d1 - 1, 0)), new_r)


def _unflatten(func, args: tuple, kwargs: dict):
    nt = args[0]
    d = _inner_dim(nt, _arg(args, kwargs, 1, "dim"), "unflatten")
    sizes = tuple(_arg(args, kwargs, 2, "sizes"))
    r = nt._ragged_idx
    return like(nt, nt.values().unflatten(d, sizes), r + (len(sizes) - 1 if d + 1 < r else 0))


def _flatten(func, args: tuple, kwargs: dict):
    nt = args[0]
    nd, r = nt.dim(), nt._ragged_idx
    s = wrap_dim(_arg(args, kwargs, 1, "start_dim", 0), nd, "flatten")
    e = wrap_dim(_arg(args, kwargs, 2, "end_dim", -1), nd, "flatten")
    if s == e:
        return nt
    if s == 0 or s <= r <= e:
        raise RuntimeError(f"flatten(): flattening dims {s} to {e} of a nested tensor of shape "
                           f"{_shape_str(nt)} would merge the batch or ragged dimension")
    return like(nt, nt.values().flatten(s - 1, e - 1), r - (e - s if e < r else 0))


def _view(func, args: tuple, kwargs: dict):
    nt = args[0]
    op = _name(func)
    sizes = args[1:] if len(args) > 1 else tuple(kwargs.get("shape", kwargs.get("size", ())))
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    r = nt._ragged_idx
    shape = nt.shape
    ok = len(sizes) > r and sizes[0] in (-1, len(nt)) and (
        sizes[r] == -1 or sizes[r] == shape[r]) and tuple(sizes[1:r]) == tuple(shape[1:r])
    if not ok:
        raise RuntimeError(f"{op}(): shape {list(sizes)} is invalid for a nested tensor of "
                           f"shape {_shape_str(nt)}: keep the batch size and the dims up to the "
                           f"ragged one (which may be given as -1)")
    inner = list(sizes[1:])
    inner[r - 1] = nt._data.shape[r - 1]
    return like(nt, func(nt.values(), inner), r)


def _chunk(func, args: tuple, kwargs: dict):
    nt = args[0]
    # the method's __name__ may be a private helper's (_split_method)
    name = "chunk" if getattr(func, "__name__", "") == "chunk" else "split"
    dim = _arg(args, kwargs, 2, "dim", 0)
    if name == "chunk" and wrap_dim(dim, nt.dim(), name) == 0 and nt._ragged_idx == 1:
        return _chunk_batch(nt, _arg(args, kwargs, 1, "chunks"))
    d = _inner_dim(nt, dim, name)
    how = _arg(args, kwargs, 1, "chunks" if name == "chunk" else "split_size_or_sections")
    if how is None:
        how = kwargs.get("split_size")
    parts = func(nt.values(), how, d)
    return tuple(like(nt, p) for p in parts)


def _chunk_batch(nt: NestedTensor, chunks: int) -> tuple:
    """``nt.chunk(chunks, 0)``: nested tensors of consecutive components, each a view of its
    part of the (packed) values with its own offsets, as PyTorch's."""
    if not isinstance(chunks, int) or chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if not nt.is_contiguous():
        nt = nt.contiguous()
    starts, lens = nt._ragged.host()
    b = len(starts)
    step = -(-b // chunks) if b else 1
    offsets = nt._ragged.offsets
    out = []
    for s in range(0, b, step):
        e = min(s + step, b)
        begin, end = starts[s], starts[e - 1] + lens[e - 1]
        values = nt.values().narrow(0, begin, end - begin)
        out.append(_make(values, _Ragged(offsets[s:e + 1] - begin, None), 1))
    return tuple(out)


def _unsqueeze(func, args: tuple, kwargs: dict):
    nt = args[0]
    d = wrap_dim(_arg(args, kwargs, 1, "dim"), nt.dim() + 1, "unsqueeze")
    if d == 0:
        raise RuntimeError("unsqueeze(): not supported for NestedTensor on dim=0")
    r = nt._ragged_idx
    return like(nt, nt.values().unsqueeze(d - 1), r + 1 if d <= r else r)


def _squeeze(func, args: tuple, kwargs: dict):
    nt = args[0]
    dim = _arg(args, kwargs, 1, "dim")
    if dim is None:
        # as PyTorch's (aten.squeeze.default has no jagged kernel)
        raise NotImplementedError("squeeze() without a dim does not support nested tensors: "
                                  "give the dim")
    d = _inner_dim(nt, dim, "squeeze")
    if nt.values().shape[d] != 1:
        return nt
    r = nt._ragged_idx
    return like(nt, nt.values().squeeze(d), r - 1 if d + 1 < r else r)


def _narrow(func, args: tuple, kwargs: dict):
    nt = args[0]
    d = _inner_dim(nt, _arg(args, kwargs, 1, "dim"), "narrow")
    start, length = _arg(args, kwargs, 2, "start"), _arg(args, kwargs, 3, "length")
    return like(nt, nt.values().narrow(d, start, length))


def _unbind(func, args: tuple, kwargs: dict):
    nt = args[0]
    if wrap_dim(_arg(args, kwargs, 1, "dim", 0), nt.dim(), "unbind") != 0:
        raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
    return tuple(nt._components())


def _getitem(func, args: tuple, kwargs: dict):
    nt, index = args[0], args[1]
    if isinstance(index, int) and not isinstance(index, bool):
        n = len(nt)
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {n}")
        return nt._components()[index]
    raise RuntimeError(f"nested tensor indexing supports an integer index along the batch "
                       f"dimension only (got {index!r})")


def select_via(getitem):
    """``select(nt, 0, i)`` as the layout's ``getitem(nt, i)`` (the batch dim only)."""
    def select(func, args: tuple, kwargs: dict):
        nt = args[0]
        if wrap_dim(_arg(args, kwargs, 1, "dim"), nt.dim(), "select") != 0:
            raise RuntimeError("select(): only supported for NestedTensor on dim=0")
        return getitem(func, (nt, _arg(args, kwargs, 2, "index")), {})
    return select


_select = select_via(_getitem)


# -- joining ------------------------------------------------------------------------------------

def _joined(func, args: tuple, kwargs: dict, op: str) -> tuple:
    """The tensors of ``cat``/``stack`` (a list, checked to share one ragged structure), the
    first nested one and the dim."""
    tensors = _arg(args, kwargs, 0, "tensors")
    dim = _arg(args, kwargs, 1, "dim", 0)
    if kwargs.get("out") is not None:
        raise RuntimeError(f"{op}(): out= is not supported for nested tensors")
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be a sequence of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"torch.{op}(): expected a non-empty list of Tensors")
    nts = [t for t in tensors if isinstance(t, NestedTensor)]
    first = nts[0]
    for t in nts[1:]:
        if t.dim() != first.dim():
            raise RuntimeError(f"{op}(): expected all nested tensors to have the same dim")
        if t._ragged_idx != first._ragged_idx or not (
                t._ragged.symbol == first._ragged.symbol
                or t._ragged.host() == first._ragged.host()):
            raise RuntimeError(f"{op}(): expected all nested tensors to have the same nested "
                               f"structure, got shapes {_shape_str(first)} and {_shape_str(t)}")
    return tensors, first, dim


def _outer_dim(dim, nd: int, r: int, op: str) -> int:
    """A nested dim of ``nd`` dims (ragged at ``r``), wrapped: neither the batch nor the ragged
    one (PyTorch's _wrap_jagged_dim messages)."""
    d = wrap_dim(dim, nd, op)
    if d == r:
        raise RuntimeError(f"{op}(): not supported for NestedTensor on ragged dim")
    if d == 0:
        raise RuntimeError(f"{op}(): not supported for NestedTensor on dim=0")
    return d


def _cat(func, args: tuple, kwargs: dict):
    """``cat`` of jagged nested tensors of one ragged structure along a dim that is neither the
    batch nor the ragged one: one ``cat`` of the packed values. A dense operand is broadcast to
    the first nested tensor's shape first (as PyTorch's ``expand_as``)."""
    tensors, nt, dim = _joined(func, args, kwargs, "cat")
    d = _outer_dim(dim, nt.dim(), nt._ragged_idx, "cat")
    values = nt.values()
    parts = [t.values() if isinstance(t, NestedTensor)
             else _dense_operand(t, nt, "cat").expand(values.shape) for t in tensors]
    return like(nt, tg.cat(parts, d - 1))


def _stack(func, args: tuple, kwargs: dict):
    """``stack`` of jagged nested tensors of one ragged structure along a new dim after the
    batch one (not at the ragged dim's place): one ``stack`` of the packed values; the ragged
    dim moves one on when the new dim comes before it."""
    tensors, nt, dim = _joined(func, args, kwargs, "stack")
    if not all(isinstance(t, NestedTensor) for t in tensors):
        raise RuntimeError("stack(): expected all nested tensors inputs")
    r = nt._ragged_idx
    d = _outer_dim(dim, nt.dim() + 1, r, "stack")
    return like(nt, tg.stack([t.values() for t in tensors], d - 1), r + (d < r))


# -- attention ----------------------------------------------------------------------------------

def _sdpa(func, args: tuple, kwargs: dict):
    q, k, v = (_arg(args, kwargs, i, n) for i, n in enumerate(("query", "key", "value")))
    if not all(isinstance(t, NestedTensor) for t in (q, k, v)):
        raise RuntimeError("scaled_dot_product_attention(): query, key and value must all be "
                           "nested tensors (or all dense)")
    if _arg(args, kwargs, 3, "attn_mask") is not None:
        raise RuntimeError("scaled_dot_product_attention(): attn_mask is not supported for "
                           "nested tensors")
    for name, t in (("query", q), ("key", k), ("value", v)):
        if t.dim() != 4 or t._ragged_idx != 2:
            raise RuntimeError(f"scaled_dot_product_attention(): expected nested {name} of "
                               f"shape (B, H, j, D) with the ragged dim at 2 (transpose a "
                               f"(B, j, H, D) tensor with .transpose(1, 2)), got "
                               f"{_shape_str(t)}")
    if not len(q) == len(k) == len(v):
        raise RuntimeError(f"scaled_dot_product_attention(): batch sizes differ: "
                           f"{len(q)}, {len(k)}, {len(v)}")
    if not _same_structure(k, v):
        raise RuntimeError(f"scaled_dot_product_attention(): key and value must have the same "
                           f"ragged structure, got {_shape_str(k)} and {_shape_str(v)}")
    rest = {n: kwargs[n] for n in ("dropout_p", "is_causal", "scale", "enable_gqa")
            if n in kwargs}
    for i, n in enumerate(("dropout_p", "is_causal", "scale"), start=4):
        if len(args) > i:
            rest[n] = args[i]
    parts = [func(qi, ki, vi, **rest) for qi, ki, vi in zip(q._components(), k._components(),
                                                             v._components())]
    return _from_parts(q, parts)


# -- the rest -----------------------------------------------------------------------------------

def _passthrough(func, args, kwargs):
    """Ops that read what the packed values are (their storage, dtype, device)."""
    return func(*args, **kwargs)


def _own_method(name: str):
    def handler(func, args, kwargs):
        return getattr(NestedTensor, name)(*args, **kwargs)
    return handler


def _numel(func, args, kwargs):
    return args[0].numel()


def _to_padded(func, args, kwargs):
    from . import to_padded_tensor
    return to_padded_tensor(*args, **kwargs)


def _build() -> dict:
    table: dict = {}

    def put(names, handler, where=("tritongrad", "Tensor")):
        for n in names:
            for w in where:
                table[f"{w}.{n}"] = handler

    put(POINTWISE, _pointwise)
    put([n + "_" for n in POINTWISE if not n.endswith("_")], _pointwise, ("Tensor",))
    put(_OPERATORS, _pointwise, ("Tensor",))
    put(FUNCTIONAL_POINTWISE, _pointwise, ("tritongrad.nn.functional",))
    put(_REDUCTIONS, _reduction)
    put(("softmax", "log_softmax"), _softmax, ("tritongrad", "Tensor",
                                               "tritongrad.nn.functional"))
    put(("layer_norm", "rms_norm"), _layer_norm, ("tritongrad.nn.functional",))
    put(("linear",), _linear, ("tritongrad.nn.functional",))
    put(("embedding",), _embedding, ("tritongrad.nn.functional",))
    # (bmm: always refused, with matmul's error, as PyTorch's jagged layout does)
    put(("matmul", "__matmul__", "bmm"), _matmul)
    put(("transpose", "swapaxes", "swapdims"), _transpose)
    put(("unflatten",), _unflatten)
    put(("flatten",), _flatten)
    put(("view", "reshape"), _view, ("Tensor",))
    put(("reshape",), _view, ("tritongrad",))
    put(("chunk", "split"), _chunk)
    put(("unbind",), _unbind)
    put(("unsqueeze",), _unsqueeze)
    put(("squeeze",), _squeeze)
    put(("narrow",), _narrow)
    put(("cat", "concat", "concatenate"), _cat, ("tritongrad",))
    put(("stack",), _stack, ("tritongrad",))
    put(("__getitem__",), _getitem, ("Tensor",))
    put(("select",), _select)
    put(("contiguous",), _contiguous, ("Tensor",))
    put(("scaled_dot_product_attention",), _sdpa, ("tritongrad.nn.functional",))
    put(("numel",), _numel)
    put(("to_padded_tensor",), _to_padded, ("Tensor",))
    put(("data_ptr", "get_device", "element_size", "is_floating_point", "is_complex",
         "storage_offset", "untyped_storage", "__hash__", "is_pinned"), _passthrough,
        ("Tensor",))
    put(("is_floating_point", "is_complex"), _passthrough, ("tritongrad",))
    for name in ("requires_grad_", "backward", "is_contiguous", "values", "offsets", "lengths",
                 "size", "dim", "__len__", "__repr__", "__str__"):
        table[f"Tensor.{name}"] = _own_method(name)
    table["tritongrad.Tensor.dim"] = table["Tensor.dim"]
    return table


def _key(func) -> str | None:
    """``func``'s public name: ``Tensor.<method>`` or ``<module>.<function>``."""
    if isinstance(func, _types.MethodWrapperType):
        return None
    qual = getattr(func, "__qualname__", None)
    if qual is None:
        return None
    if qual.startswith("Tensor."):
        return qual
    return f"{getattr(func, '__module__', '')}.{qual}"


class OpTable:
    """A layout's ops: the table ``build()`` makes (on first use), ``handle`` (the layout's
    ``__torch_function__``) and ``supported``."""

    def __init__(self, build, layout: str):
        self._build, self._layout, self._table = build, layout, None

    def _get(self) -> dict:
        if self._table is None:
            self._table = self._build()
        return self._table

    def handle(self, cls: type, func, types: tuple, args: tuple, kwargs: dict):
        """The op's handler, run with subclass dispatch off, or a NotImplementedError naming
        the op."""
        key = _key(func)
        handler = self._get().get(key)
        if handler is None:
            if not all(issubclass(cls, t) for t in types):
                return NotImplemented
            name = key or getattr(func, "__name__", repr(func))
            name = name.replace("tritongrad.nn.functional.", "F.").replace("tritongrad.", "")
            raise NotImplementedError(f"{name} does not support nested tensors ({self._layout} "
                                      f"layout); docs/nested.md lists the supported ops")
        with tg.DisableTorchFunctionSubclass():
            return handler(func, args, kwargs)

    def supported(self) -> list:
        """The public names of the ops the layout handles (for docs and tests)."""
        return sorted(self._get())


_JAGGED = OpTable(_build, "jagged")
handle, supported = _JAGGED.handle, _JAGGED.supported  # (NestedTensor's __torch_function__)
