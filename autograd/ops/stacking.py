"""NumPy-style stacking and shape helpers of ``torch``: ``hstack``, ``vstack`` (``row_stack``),
``dstack``, ``column_stack``, ``atleast_1d/2d/3d``, ``broadcast_shapes``, ``unravel_index``
and ``vander``.

All are composites of views and ``cat`` (autograd/ops/shape.py, views.py), so they are
differentiable through their parts and run on either backend; ``broadcast_shapes`` works on
shapes only, and ``unravel_index`` on integer tensors (no gradient).
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Sequence

from ..checks import tensor_arg
from ..registry import OpInfo
from ..tensor import Size, Tensor
from .shape import cat

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "column_stack",
           "dstack", "hstack", "unravel_index", "vander", "vstack"]


# -- atleast_nd --------------------------------------------------------------------------------

def _at_least(x: Tensor, nd: int) -> Tensor:
    """``x`` viewed with at least ``nd`` dims as NumPy places the new ones: a vector (n,) is
    (1, n) in 2-D and (1, n, 1) in 3-D, a matrix (m, n) is (m, n, 1) in 3-D."""
    if x.ndim >= nd:
        return x
    if x.ndim == 0:
        return x.reshape((1,) * nd)
    if x.ndim == 1:
        return x.unsqueeze(0) if nd == 2 else x.unsqueeze(0).unsqueeze(-1)
    return x.unsqueeze(-1)  # (2-D, to 3-D)


def _atleast(nd: int):
    name = f"atleast_{nd}d"

    def fn(*tensors):
        # PyTorch's rule: one tensor gives a tensor, one sequence or several give a tuple
        one = len(tensors) == 1 and isinstance(tensors[0], Tensor)
        if len(tensors) == 1 and not one:
            tensors = tuple(tensors[0])
        out = tuple(_at_least(tensor_arg(t, name, "tensors"), nd) for t in tensors)
        return out[0] if one else out

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Returns a {nd}-dimensional view of each input tensor with fewer than {nd} "
                  f"dimensions; inputs with {nd} or more dimensions are returned as-is. One "
                  f"tensor gives a tensor; several (or a list) give a tuple.")
    return fn


atleast_1d = _atleast(1)
atleast_2d = _atleast(2)
atleast_3d = _atleast(3)


# -- hstack, vstack, dstack, column_stack ------------------------------------------------------

def _nonempty(tensors, op: str) -> list:
    if isinstance(tensors, Tensor):  # (PyTorch refuses a tensor for its sequence of rows)
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return [tensor_arg(t, op, "tensors") for t in tensors]


def hstack(tensors: list[Tensor] | tuple[Tensor, ...], *, out=None) -> Tensor:
    """Stack tensors in sequence horizontally (column wise): ``cat`` along dim 0 for 1-D
    tensors (0-d ones become 1-D first), along dim 1 otherwise."""
    ts = [_at_least(t, 1) for t in _nonempty(tensors, "hstack")]
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors: list[Tensor] | tuple[Tensor, ...], *, out=None) -> Tensor:
    """Stack tensors in sequence vertically (row wise): ``cat`` along dim 0 after
    ``atleast_2d`` (a vector (n,) is a row (1, n))."""
    return cat([_at_least(t, 2) for t in _nonempty(tensors, "vstack")], 0, out=out)


def row_stack(tensors: list[Tensor] | tuple[Tensor, ...], *, out=None) -> Tensor:
    """Alias of :func:`vstack`."""
    return cat([_at_least(t, 2) for t in _nonempty(tensors, "row_stack")], 0, out=out)


def dstack(tensors: list[Tensor] | tuple[Tensor, ...], *, out=None) -> Tensor:
    """Stack tensors in sequence depthwise (along the third axis), after ``atleast_3d``."""
    return cat([_at_least(t, 3) for t in _nonempty(tensors, "dstack")], 2, out=out)


def column_stack(tensors: list[Tensor] | tuple[Tensor, ...], *, out=None) -> Tensor:
    """Creates a new tensor by horizontally stacking the tensors: 0-d and 1-D tensors become
    columns (n, 1) first, then ``cat`` along dim 1."""
    ts = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t
          for t in _nonempty(tensors, "column_stack")]
    return cat(ts, 1, out=out)


# -- shapes and indices ------------------------------------------------------------------------

def broadcast_shapes(*shapes) -> Size:
    """The shape the given shapes (ints or sequences of ints) broadcast to, without making
    tensors; PyTorch's errors for a mismatch or a negative length.

    Example:
        >>> tg.broadcast_shapes((2,), (3, 1), (1, 1, 1))
        tritongrad.Size([1, 3, 2])
    """
    shapes = [(s,) if isinstance(s, numbers.Integral) else s for s in shapes if s is not None]
    for s in shapes:
        if not isinstance(s, Sequence):  # (PyTorch's RuntimeError, not a TypeError)
            raise RuntimeError(  # noqa: TRY004
                f"Input shapes should be of type ints, a tuple of ints, or a list of ints, "
                f"got {s}")
        for i, n in enumerate(s):
            if not isinstance(n, numbers.Integral):
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(n).__name__}')")
    if not shapes:
        return Size(())
    common = [1] * max(len(s) for s in shapes)
    for arg, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            n = int(shape[i])
            if n == common[i]:
                continue
            if common[i] == 1:
                if n < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = n
            elif n != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {n} at {i}! "
                                   f"Mismatching argument at index {arg} had {tuple(shape)}; "
                                   f"but expected shape should be broadcastable to {common}")
    return Size(common)


def unravel_index(indices: Tensor, shape) -> tuple:
    """Converts flat indices into a tuple of coordinate tensors that index into a tensor of
    ``shape``, one int64 tensor per dim, each of ``indices``' shape. Indices wrap modulo the
    shape's size (negative ones count from the end), as PyTorch's floor division does.

    Example:
        >>> tg.unravel_index(tg.tensor([4, 1]), (2, 3))
        (tensor([1, 0]), tensor([1, 1]))
    """
    from ...runtime import dtype as dtypes
    tensor_arg(indices, "unravel_index", "indices")
    dt = indices.dtype
    if dt.is_floating_point or dt.is_complex or dt is dtypes.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {dt}")
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    elif isinstance(shape, Sequence):
        for n in shape:
            if not isinstance(n, numbers.Integral):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got "
                                f"{type(n)}")
        shape = tuple(int(n) for n in shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape:
        raise RuntimeError("ZeroDivisionError")  # (PyTorch's integer division by 0)
    idx = indices.detach().long()
    out, stride = [], 1
    for n in reversed(shape):  # coordinate = (index // stride) mod n, last dim first
        out.append((idx // stride) % n)
        stride *= n
    return tuple(reversed(out))


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of the 1-D ``x``: columns ``x^(N-1), ..., x^1, x^0`` (``x^0``
    first with ``increasing=True``); ``N`` defaults to ``len(x)``. Integer and bool inputs
    give int64, as PyTorch's (which promotes through a cumulative product).

    Example:
        >>> tg.vander(tg.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
    """
    from ...runtime import dtype as dtypes
    from .creation import ones
    from .shape import stack
    tensor_arg(x, "vander", "x")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(dtypes.int64)
    if n == 0:
        return ones((x.shape[0], 0), dtype=x.dtype, device=x.device)
    cols = [x.new_ones(tuple(x.shape))]
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    out = stack(cols, 1)
    return out if increasing else out.flip(1)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("atleast_1d", atleast_1d, method=False, dtypes="all", grad="g viewed back"),
    OpInfo("atleast_2d", atleast_2d, method=False, dtypes="all", grad="g viewed back"),
    OpInfo("atleast_3d", atleast_3d, method=False, dtypes="all", grad="g viewed back"),
    OpInfo("hstack", hstack, method=False, dtypes="promoted", grad="through cat"),
    OpInfo("vstack", vstack, method=False, dtypes="promoted", grad="through cat"),
    OpInfo("row_stack", row_stack, method=False, dtypes="promoted", grad="through cat"),
    OpInfo("dstack", dstack, method=False, dtypes="promoted", grad="through cat"),
    OpInfo("column_stack", column_stack, method=False, dtypes="promoted", grad="through cat"),
    OpInfo("broadcast_shapes", broadcast_shapes, method=False, dtypes="shapes", grad="none"),
    OpInfo("unravel_index", unravel_index, method=False, dtypes="integers; int64 result",
           grad="none"),
    OpInfo("vander", vander, method=False, dtypes="all (integers: int64)",
           grad="through products"),
)
