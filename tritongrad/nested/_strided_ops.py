"""The ops on strided nested tensors, by public name (Note [Strided layout] in _strided.py).

``handle`` is StridedNestedTensor's ``__torch_function__``, as ``_ops.handle`` is the jagged
layout's: the handler of ``func``'s public name in ``_TABLE``, run with subclass dispatch off,
or a ``NotImplementedError`` naming the op. The names of the pointwise ops are the jagged
table's; the handlers differ because the structure does (sizes that may differ in any dim).
"""

from __future__ import annotations

import tritongrad as tg
from tritongrad.autograd.tensor import Tensor, wrap_dim

from ._ops import _INPLACE_OPERATORS, _NO_BROADCAST, _OPERATORS, FUNCTIONAL_POINTWISE, OpTable, \
    POINTWISE, _arg, _key, _name, _to_padded, select_via
from ._strided import StridedNestedTensor, _numel, pack, wrap
from ._tensor import NestedTensor

__all__ = ["handle", "supported"]


def _describe(t) -> str:
    if isinstance(t, StridedNestedTensor):
        return f"a strided nested tensor with component sizes {list(t._sizes)}"
    if isinstance(t, NestedTensor):
        return "a jagged nested tensor"
    if isinstance(t, Tensor):
        return f"a dense tensor of shape {tuple(t.shape)}"
    return type(t).__name__


def _strided_only(op: str, values) -> list:
    """The nested tensors among ``values``, all strided (a jagged one is refused)."""
    nts = [v for v in values if isinstance(v, NestedTensor)]
    for t in nts:
        if not isinstance(t, StridedNestedTensor):
            raise RuntimeError(f"{op}: cannot combine a strided nested tensor with a jagged "
                               f"one; build both with the same layout")
    return nts


# -- elementwise --------------------------------------------------------------------------------

def _pointwise(func, args: tuple, kwargs: dict):
    op = _name(func)
    nts = _strided_only(op, (*args, *kwargs.values()))
    nt = nts[0]
    for other in nts[1:]:
        if other._sizes != nt._sizes:
            raise RuntimeError(f"{op} does not support broadcasting when given a NestedTensor "
                               f"(component sizes {list(nt._sizes)} and {list(other._sizes)})")
    operands = getattr(func, "__name__", "") not in _NO_BROADCAST

    def conv(a):
        if isinstance(a, NestedTensor):
            return a.values()
        if operands and isinstance(a, Tensor) and a.dim() > 0:
            # (PyTorch's strided nested tensors take numbers and 0-dim tensors only)
            # PyTorch's first words, then which op and operand
            raise RuntimeError(f"Expected both self and other to be nested, but got a nested "
                               f"self and non-nested other ({op}: expected both operands to be "
                               f"nested (or a number), got a nested tensor and {_describe(a)})")
        return a
    vargs = tuple(conv(a) for a in args)
    vkwargs = {k: conv(v) for k, v in kwargs.items()}
    name = getattr(func, "__name__", "")
    inplace = (name.endswith("_") and not name.startswith("__")) or name in _INPLACE_OPERATORS \
        or vkwargs.get("inplace") is True
    if inplace and tg.is_grad_enabled() and any(
            isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values())):
        raise RuntimeError(f"{op}: in-place ops on nested tensors that require grad are not "
                           f"supported; use the out-of-place op")
    result = func(*vargs, **vkwargs)
    if inplace and isinstance(args[0], NestedTensor):
        return args[0]
    if not isinstance(result, Tensor) or tuple(result.shape) != tuple(nt._data.shape):
        raise RuntimeError(f"{op}: this use is not supported for strided nested tensors (the "
                           f"result on the buffer is not elementwise)")
    return wrap(result, nt._sizes)


# -- helpers ------------------------------------------------------------------------------------

def _rows(nt: StridedNestedTensor, k: int) -> tuple | None:
    """The common sizes of ``nt``'s last ``k`` dims when all components share them (the
    buffer is then ``(rows, *those)``), else None."""
    if not nt._sizes or k > nt.dim() - 1:
        return None
    tails = {s[len(s) - k:] for s in nt._sizes}
    return tails.pop() if len(tails) == 1 else None


def _on_rows(nt: StridedNestedTensor, tail: tuple, fn, new_tail: tuple | None = None):
    """``fn`` applied once to the buffer seen as ``(rows, *tail)``; the result's trailing sizes
    are ``new_tail`` (default ``tail``)."""
    out = fn(nt.values().view(-1, *tail))
    new_tail = tuple(out.shape[1:]) if new_tail is None else new_tail
    k = len(tail)
    sizes = tuple(s[:len(s) - k] + new_tail for s in nt._sizes)
    return wrap(out.reshape(-1), sizes)


def _per_component(nt: StridedNestedTensor, fn):
    return pack([fn(c) for c in nt._components()], nt.values())


def _nonbatch_dim(nt: StridedNestedTensor, dim, op: str, message: str) -> int:
    if dim is None:
        raise TypeError(f"{op}(): a nested tensor needs an explicit dim")
    d = wrap_dim(dim, nt.dim(), op)
    if d == 0:
        raise RuntimeError(message)
    return d


# -- reductions ---------------------------------------------------------------------------------

_REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "nansum", "nanmean", "logsumexp")


def _reduction(func, args: tuple, kwargs: dict):
    nt = args[0]
    op = _name(func)
    rest = dict(kwargs)
    dim = args[1] if len(args) > 1 else rest.pop("dim", None)
    keepdim = args[2] if len(args) > 2 else rest.pop("keepdim", False)
    if len(args) > 3:
        raise TypeError(f"{op}(): pass the arguments after keepdim by keyword for nested "
                        f"tensors")
    if dim is None or dim == () or dim == []:
        if op == "logsumexp":
            raise TypeError("logsumexp(): a nested tensor needs an explicit dim")
        # everything: a dense 0-dim result, the buffer holding every element once
        return func(nt.values(), **rest)
    dims = [dim] if isinstance(dim, int) else list(dim)
    nd = nt.dim()
    if len(set(wrap_dim(d, nd, op) for d in dims)) > 1:
        raise RuntimeError("NestedTensor only allows reduction of a single dimension for now.")
    for d in dims:
        d = wrap_dim(d, nd, op)
        if d != nd - 1:
            raise RuntimeError(f"NestedTensor can only be reduced across the last dimension "
                               f"for now got dimension {d} instead.")
    if not keepdim:
        raise RuntimeError("NestedTensor always requires keepdim=True for now.")
    tail = _rows(nt, 1)
    if tail is not None:
        return _on_rows(nt, tail, lambda v: func(v, 1, True, **rest))
    return _per_component(nt, lambda c: func(c, -1, True, **rest))


# -- along one dim ------------------------------------------------------------------------------

def _softmax(func, args: tuple, kwargs: dict):
    nt = args[0]
    op = _name(func)
    rest = dict(kwargs)
    dim = args[1] if len(args) > 1 else rest.pop("dim", None)
    d = _nonbatch_dim(nt, dim, op, f"Cannot apply {op} across nested dimension 0")
    extra = args[2:]
    if d == nt.dim() - 1:
        tail = _rows(nt, 1)
        if tail is not None:
            return _on_rows(nt, tail, lambda v: func(v, 1, *extra, **rest))
    return _per_component(nt, lambda c: func(c, d - 1, *extra, **rest))


def _layer_norm(func, args: tuple, kwargs: dict):
    nt = args[0]
    op = _name(func)
    shape = _arg(args, kwargs, 1, "normalized_shape")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(isinstance(a, NestedTensor) for a in (*args[1:], *kwargs.values())):
        raise RuntimeError(f"{op}(): weight and bias must be dense tensors")
    tail = _rows(nt, len(shape)) if len(shape) < nt.dim() else None
    if tail is None:
        raise RuntimeError("normalized_shape extends into irregular dimensions for the nested "
                           "tensor")
    if tail != shape:
        raise RuntimeError(f"{op}(): normalized_shape {list(shape)} does not match the "
                           f"components' trailing sizes {list(tail)}")
    return _on_rows(nt, tail, lambda v: func(v, *args[1:], **kwargs))


def _linear(func, args: tuple, kwargs: dict):
    nt = args[0]
    op = _name(func)
    if not isinstance(nt, StridedNestedTensor) or any(
            isinstance(a, NestedTensor) for a in (*args[1:], *kwargs.values())):
        raise RuntimeError(f"{op}(): only a nested input with a dense weight is supported for "
                           f"nested tensors")
    tail = _rows(nt, 1)
    if tail is None:
        last = [s[-1] if s else None for s in nt._sizes]
        raise RuntimeError(f"{op}(): expected all tensors in the nested tensor to have the same "
                           f"trailing dimension, got {last}")
    return _on_rows(nt, tail, lambda v: func(v, *args[1:], **kwargs))


def _matmul(func, args: tuple, kwargs: dict):
    op = _name(func)
    a, b = args[0], _arg(args, kwargs, 1, "other" if op != "bmm" else "mat2")
    _strided_only(op, (a, b))
    if not (isinstance(a, StridedNestedTensor) and isinstance(b, StridedNestedTensor)):
        which = ("a nested self and non-nested other" if isinstance(a, NestedTensor)
                 else "a non-nested self and nested other")
        raise RuntimeError(f"Expected both to be nested, but got {which} ({op}: expected both "
                           f"operands to be nested, got {_describe(a)} and {_describe(b)})")
    if len(a) != len(b):
        raise RuntimeError(f"{op}: expected the nested tensors to have the same number of "
                           f"components, got {len(a)} and {len(b)}")
    if op == "bmm":
        for name, t in (("batch1", a), ("batch2", b)):
            if t.dim() != 3:
                raise RuntimeError(f"{name} must be a 3D tensor")
    parts = []
    for i, (x, y) in enumerate(zip(a._components(), b._components())):
        if x.dim() >= 2 and y.dim() >= 2 and x.shape[-1] != y.shape[-2]:
            raise RuntimeError(f"{i}-th nested matrices in batch cannot be multiplied "
                               f"({x.shape[-2]}x{x.shape[-1]} and {y.shape[-2]}x{y.shape[-1]})")
        parts.append(tg.matmul(x, y))
    return pack(parts, a.values())


# -- shape --------------------------------------------------------------------------------------

def _transpose(func, args: tuple, kwargs: dict):
    nt = args[0]
    nd = nt.dim()
    d0 = wrap_dim(_arg(args, kwargs, 1, "dim0"), nd, "transpose")
    d1 = wrap_dim(_arg(args, kwargs, 2, "dim1"), nd, "transpose")
    if d0 == d1:
        return nt
    if 0 in (d0, d1):
        raise RuntimeError("Nested tensor dimension 0 cannot be transposed")
    # (components stay contiguous here: a transpose copies, where PyTorch's is a view)
    return _per_component(nt, lambda c: c.transpose(d0 - 1, d1 - 1).contiguous())


def _view(func, args: tuple, kwargs: dict):
    nt = args[0]
    op = _name(func)
    sizes = args[1:] if len(args) > 1 else tuple(kwargs.get("shape", kwargs.get("size", ())))
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if not sizes or sizes[0] != len(nt):
        raise RuntimeError(f"{op}: For now nested {op} cannot change or infer the implicit "
                           f"batch dimension")
    if sum(s == -1 for s in sizes[1:]) > 1:
        raise RuntimeError("only one dimension can be inferred")
    new = []
    for old in nt._sizes:
        shape = []
        for i, s in enumerate(sizes[1:]):
            if s == -1:
                # -1 keeps the component's own size in that dim (how an irregular dim is
                # named): PyTorch's rule, not an inferred size
                if i >= len(old):
                    raise RuntimeError("nested tensor does not infer shape")
                s = old[i]
            elif s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            shape.append(s)
        if _numel(shape) != _numel(old):
            raise RuntimeError(f"shape '{list(sizes)}' is invalid for input of size "
                               f"{_numel(old)}")
        new.append(tuple(shape))
    return wrap(nt.values(), tuple(new))


def _unsqueeze(func, args: tuple, kwargs: dict):
    nt = args[0]
    d = wrap_dim(_arg(args, kwargs, 1, "dim"), nt.dim() + 1, "unsqueeze")
    if d == 0:
        raise RuntimeError("unsqueeze(): For nested tensors, unsqueezing dimension 0 is not "
                           "supported at the moment if you need this feature, please open an "
                           "issue on github describing your use case.")
    return wrap(nt.values(), tuple(s[:d - 1] + (1,) + s[d - 1:] for s in nt._sizes))


def _squeeze(func, args: tuple, kwargs: dict):
    nt = args[0]
    dim = _arg(args, kwargs, 1, "dim")
    if dim is None:
        raise RuntimeError("squeeze(): For nested tensors, squeeze without the dim argument is "
                           "not supported at the moment, however you can use squeeze(Tensor "
                           "self, int dim) instead if you need this feature, please open an "
                           "issue")
    d = wrap_dim(dim, nt.dim(), "squeeze")
    if d == 0:
        raise RuntimeError("squeeze(): For nested tensors, squeezing dimension 0 is not "
                           "supported at the moment if you need this feature, please open an "
                           "issue on github describing your use case.")
    n = nt._regular(d)
    if n != 1:
        if n is None and any(s[d - 1] == 1 for s in nt._sizes):
            raise RuntimeError(f"squeeze(): dimension {d} has size 1 in some components only")
        return nt
    return wrap(nt.values(), tuple(s[:d - 1] + s[d:] for s in nt._sizes))


def _chunk(func, args: tuple, kwargs: dict):
    """``chunk`` / ``split`` with a list of sizes, along the last dim only (PyTorch's
    support): one nested tensor per piece, of the components' pieces."""
    nt = args[0]
    # the method's __name__ may be a private helper's (_split_method)
    op = "chunk" if _name(func) == "chunk" else "split_with_sizes"
    how = _arg(args, kwargs, 1, "chunks" if op == "chunk" else "split_size_or_sections")
    if how is None:
        how = kwargs.get("split_size", kwargs.get("split_sizes"))
    d = wrap_dim(_arg(args, kwargs, 2, "dim", 0), nt.dim(), op)
    if op == "split_with_sizes" and isinstance(how, int):
        raise NotImplementedError("split does not support nested tensors (strided layout) with "
                                  "an int split size; give the sizes as a list")
    if d != nt.dim() - 1:
        what = "Chunk" if op == "chunk" else "split_with_sizes"
        raise RuntimeError(f"{what} for nested tensors is currently only supported for the "
                           f"last dimension.")
    n = nt._regular(d)
    if n is None:
        raise RuntimeError(f"Expected all tensors in nested tensor to have the same trailing "
                           f"dimension, instead last dimension equals: "
                           f"{[s[-1] for s in nt._sizes]}")
    if op == "chunk":
        if not isinstance(how, int) or how <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {how}")
        if n % how:
            raise RuntimeError(f"Chunk for nested tensors is only supported for nested tensors "
                               f"with trailing dimension divisible by chunks, got: "
                               f"{n} % {how} != 0")
        sizes = [n // how] * how
    else:
        sizes = [int(k) for k in how]
        if sum(sizes) != n or any(k < 0 for k in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    pieces = [c.split(sizes, -1) for c in nt._components()]
    return tuple(pack([p[i] for p in pieces], nt.values()) for i in range(len(sizes)))


def _narrow(func, args: tuple, kwargs: dict):
    """``narrow`` along the batch dim only (PyTorch's support): components start..start+length."""
    nt = args[0]
    dim = _arg(args, kwargs, 1, "dim")
    if wrap_dim(dim, nt.dim(), "narrow") != 0:
        raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: {dim}")
    start, length = int(_arg(args, kwargs, 2, "start")), int(_arg(args, kwargs, 3, "length"))
    b = len(nt)
    if start < 0:
        start += b
    if not 0 <= start <= b or length < 0 or start + length > b:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({b}).")
    return pack(nt._components()[start:start + length], nt.values())


def _unbind(func, args: tuple, kwargs: dict):
    nt = args[0]
    if wrap_dim(_arg(args, kwargs, 1, "dim", 0), nt.dim(), "unbind") != 0:
        raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
    return tuple(nt._components())


def _getitem(func, args: tuple, kwargs: dict):
    nt, index = args[0], args[1]
    rest = ()
    if isinstance(index, tuple) and index:
        index, rest = index[0], index[1:]
    if isinstance(index, int) and not isinstance(index, bool):
        n = len(nt)
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {n}")
        c = nt._component(index % n)
        return c[rest] if rest else c
    raise NotImplementedError(f"indexing a strided nested tensor with {args[1]!r}: only an "
                              f"integer index along the batch dimension (then any index into "
                              f"that component) is supported")


_select = select_via(_getitem)


# -- attention ----------------------------------------------------------------------------------

def _sdpa(func, args: tuple, kwargs: dict):
    q, k, v = (_arg(args, kwargs, i, n) for i, n in enumerate(("query", "key", "value")))
    _strided_only("scaled_dot_product_attention", (q, k, v))
    if not all(isinstance(t, StridedNestedTensor) for t in (q, k, v)):
        raise RuntimeError("scaled_dot_product_attention(): query, key and value must all be "
                           "nested tensors (or all dense)")
    if _arg(args, kwargs, 3, "attn_mask") is not None:
        raise RuntimeError("scaled_dot_product_attention(): attn_mask is not supported for "
                           "nested tensors")
    if not len(q) == len(k) == len(v):
        raise RuntimeError(f"scaled_dot_product_attention(): batch sizes differ: "
                           f"{len(q)}, {len(k)}, {len(v)}")
    rest = {n: kwargs[n] for n in ("dropout_p", "is_causal", "scale", "enable_gqa")
            if n in kwargs}
    for i, n in enumerate(("dropout_p", "is_causal", "scale"), start=4):
        if len(args) > i:
            rest[n] = args[i]
    parts = [func(qi, ki, vi, **rest) for qi, ki, vi in zip(q._components(), k._components(),
                                                             v._components())]
    return pack(parts, q.values())


# -- the rest -----------------------------------------------------------------------------------

def _passthrough(func, args, kwargs):
    """Ops that read what the buffer is (its storage, dtype, device)."""
    return func(*args, **kwargs)


def _own_method(name: str):
    def handler(func, args, kwargs):
        return getattr(StridedNestedTensor, name)(*args, **kwargs)
    return handler


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
    # (a nested mask of the same sizes is an operand like any other)
    put(("masked_fill",), _pointwise)
    put(("masked_fill_",), _pointwise, ("Tensor",))
    put(_REDUCTIONS, _reduction)
    put(("softmax", "log_softmax"), _softmax, ("tritongrad", "Tensor",
                                               "tritongrad.nn.functional"))
    put(("layer_norm", "rms_norm"), _layer_norm, ("tritongrad.nn.functional",))
    put(("linear",), _linear, ("tritongrad.nn.functional",))
    put(("matmul", "__matmul__", "bmm"), _matmul)
    for f in (tg.bmm, Tensor.bmm):  # (bound from the op table under their module's name)
        table[_key(f)] = _matmul
    put(("transpose", "swapaxes", "swapdims"), _transpose)
    put(("view", "reshape"), _view, ("Tensor",))
    put(("reshape",), _view, ("tritongrad",))
    put(("unsqueeze",), _unsqueeze)
    put(("squeeze",), _squeeze)
    put(("unbind",), _unbind)
    put(("chunk", "split", "split_with_sizes"), _chunk)
    put(("narrow",), _narrow)
    put(("__getitem__",), _getitem, ("Tensor",))
    put(("select",), _select)
    put(("scaled_dot_product_attention",), _sdpa, ("tritongrad.nn.functional",))
    put(("to_padded_tensor",), _to_padded, ("Tensor",))
    put(("data_ptr", "get_device", "element_size", "is_floating_point", "is_complex",
         "storage_offset", "untyped_storage", "__hash__", "is_pinned"), _passthrough,
        ("Tensor",))
    put(("is_floating_point", "is_complex"), _passthrough, ("tritongrad",))
    for name in ("requires_grad_", "backward", "is_contiguous", "values", "size", "dim",
                 "numel", "__len__", "__repr__", "__str__"):
        table[f"Tensor.{name}"] = _own_method(name)
    table["Tensor.contiguous"] = lambda func, args, kwargs: args[0]
    table["tritongrad.numel"] = table["Tensor.numel"]
    table["tritongrad.Tensor.dim"] = table["Tensor.dim"]
    return table


_STRIDED = OpTable(_build, "strided")
handle, supported = _STRIDED.handle, _STRIDED.supported  # (StridedNestedTensor's dispatch)
