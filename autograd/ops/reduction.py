"""Reductions: sum and mean over all dims or a set of dims, with ``keepdim``."""

from __future__ import annotations

from ...runtime import dtype as dtypes
from ..dispatch import Primitive, apply
from ..tensor import Tensor

__all__ = ["sum", "mean", "any", "all", "reduce_dims"]


def reduce_dims(x: Tensor, dim, op: str) -> tuple:
    """``dim`` (None, an int or a sequence) as a sorted tuple of non-negative dims."""
    nd = x.ndim
    if dim is None:
        return tuple(range(nd))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return tuple(range(nd))  # PyTorch: an empty dim list reduces everything
    n = max(nd, 1)
    out = set()
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"{op}: dimension out of range (expected to be in range of "
                             f"[{-n}, {n - 1}], but got {d})")
        d %= n
        if d in out:
            raise RuntimeError(f"{op}: dim {d} appears multiple times in the list of dims")
        out.add(d)
    return tuple(sorted(d for d in out if d < nd or nd == 0)) if nd else ()


def _expand_back(g: Tensor, shape, dims, keepdim: bool) -> Tensor:
    if not keepdim and dims:
        kept = list(g.shape)
        for d in dims:
            kept.insert(d, 1)
        g = g.reshape(kept)
    return g.expand(shape)


class SumBackward0(Primitive):
    """sum over all elements: the gradient is broadcast back to the input's shape."""

    __slots__ = ()
    op_name = "sum"

    @staticmethod
    def forward(ctx, k, x, dims, keepdim):
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return k.sum(x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim)


class SumBackward1(SumBackward0):
    """sum over some dims (PyTorch's dim overload)."""

    __slots__ = ()


class MeanBackward0(Primitive):
    """mean = sum / n: the gradient is broadcast back and divided by n."""

    __slots__ = ()
    op_name = "mean"

    @staticmethod
    def forward(ctx, k, x, dims, keepdim, n):
        ctx.in_shape, ctx.dims, ctx.keepdim, ctx.n = x.shape, dims, keepdim, n
        return k.div(k.sum(x, dims, keepdim), n)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim) / ctx.n


class MeanBackward1(MeanBackward0):
    __slots__ = ()


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001
    """The sum of the elements, over all dims or over ``dim`` (an int or a tuple).

    Integer and bool tensors sum to int64, as in PyTorch.
    """
    if dtype is not None:
        input = input.to(dtype)
    elif not (input.dtype.is_floating_point or input.dtype.is_complex) \
            and input.dtype is not dtypes.int64:
        input = input.to(dtypes.int64)
    dims = reduce_dims(input, dim, "sum")
    op = SumBackward0 if dim is None else SumBackward1
    return apply(op, (input,), dims, bool(keepdim))


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of the elements, over all dims or over ``dim``."""
    if dtype is not None:
        input = input.to(dtype)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {input.dtype.name.capitalize()}")
    dims = reduce_dims(input, dim, "mean")
    n = 1
    for d in dims:
        n *= input.shape[d]
    op = MeanBackward0 if dim is None else MeanBackward1
    return apply(op, (input,), dims, bool(keepdim), n if n else float("nan"))


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where any element (over ``dim``) is nonzero."""
    return sum(input.ne(0), dim, keepdim) > 0


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where every element (over ``dim``) is nonzero."""
    return sum(input.eq(0), dim, keepdim) == 0
