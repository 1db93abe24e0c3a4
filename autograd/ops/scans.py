"""Scans and differences: ``cumprod cummax cummin logcumsumexp diff trapezoid`` (``trapz``)
``cumulative_trapezoid gradient``.

Every op here is a composite of other public ops, so both backends run it and its gradient
(to any order) comes through its parts. The scans without a kernel of their own (a product, a
running extremum, a running log-sum-exp) are Hillis-Steele prefix scans: ``ceil(log2 n)``
rounds, each combining every element with the one ``2^r`` places before it (``cat`` of the
untouched head and the combined tail). That is O(n log n) work in a handful of launches, stays
on the tensor's device, and is exact where a shortcut is not: ``exp(cumsum(log x))`` breaks on
zeros and negatives, and shifting ``logcumsumexp`` by the overall max underflows the early
terms. ``cummax``/``cummin`` scan (value, index) pairs without a graph, then gather the
values from the input, so the gradient is ``gather``'s (each ``g`` goes to the index it came
from), as PyTorch's ``cummax_backward``.
"""

from __future__ import annotations

import numbers

from ...runtime import dtype as dtypes
from ..checks import check_ordered, kernel_not_implemented, tensor_arg
from ..registry import OpInfo, with_inplace, with_jvp
from ..tensor import Tensor, int_arg, wrap_dim
from .composite import logaddexp
from .creation import arange
from .elementwise import ge, isnan, le, mul, sub, where
from .indexing import gather
from .pointwise import logical_and, logical_not, logical_or, logical_xor
from .reduction import _return_type, accumulating, as_requested, return_types, sum
from .shape import cat, narrow

# (values, indices) named tuples, beside PyTorch's others in tg.return_types
return_types.cummax = _return_type("cummax")
return_types.cummin = _return_type("cummin")


def _scan(xs: tuple, dim: int, combine) -> tuple:
    """The inclusive prefix scan of the tensors ``xs`` (one shape) along ``dim`` under the
    associative ``combine(earlier, later) -> combined`` (tuples of tensors): Hillis-Steele."""
    n = xs[0].shape[dim]
    step = 1
    while step < n:
        head = tuple(narrow(x, dim, 0, step) for x in xs)
        tail = combine(tuple(narrow(x, dim, 0, n - step) for x in xs),
                       tuple(narrow(x, dim, step, n - step) for x in xs))
        xs = tuple(cat([h, t], dim) for h, t in zip(head, tail))
        step *= 2
    return xs


def _scan_dim(input: Tensor, dim, op: str) -> tuple:
    """(input as at least 1-d, the wrapped dim, whether input was 0-d)."""
    x = tensor_arg(input, op)
    d = wrap_dim(int_arg(dim, op, "dim"), x.ndim, op)
    return (x.reshape(1), 0, True) if x.ndim == 0 else (x, d, False)


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative products along ``dim``; integers and bools multiply in int64 (as PyTorch).
    The gradient is exact at zeros (no division by the input).

    Example:
        >>> tg.cumprod(tg.tensor([1., 2., 3., 0., 5.]), 0)
        tensor([1., 2., 6., 0., 0.])
    """
    x, d, scalar = _scan_dim(input, dim, "cumprod")
    (out,) = _scan((accumulating(x, dtype),), d, lambda a, b: (mul(a[0], b[0]),))
    return as_requested(out.reshape(()) if scalar else out, dtype)


def _running_extreme(name: str, better):
    """cummax / cummin: ``better(later, earlier)`` says where the later element wins a tie-free
    comparison; NaN beats everything and ties go to the later index (PyTorch's kernel)."""

    def combine(earlier, later):
        (va, ia), (vb, ib) = earlier, later
        take = logical_or(isnan(vb), logical_and(logical_not(isnan(va)), better(vb, va)))
        return where(take, vb, va), where(take, ib, ia)

    def op(input: Tensor, dim: int):
        check_ordered(input, name)
        x, d, scalar = _scan_dim(input, dim, name)
        shape = [1] * x.ndim
        shape[d] = x.shape[d]
        idx = arange(x.shape[d], device=x.device).reshape(shape).expand(x.shape)
        _, idx = _scan((x.detach(), idx), d, combine)
        idx = idx.contiguous()
        values = gather(x, d, idx)
        if scalar:
            values, idx = values.reshape(()), idx.reshape(())
        return getattr(return_types, name)(values, idx)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"The running {name[3:]}imum along ``dim`` and where it was found, as the "
                  f"named tuple ``(values, indices)``; NaN propagates and ties take the later "
                  f"index, as PyTorch. The gradient goes to the indices.")
    return op


cummax = _running_extreme("cummax", ge)
cummin = _running_extreme("cummin", le)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input), dim))`` without overflow or underflow (each step is a
    :func:`logaddexp`). Floating dtypes only, as PyTorch.

    Example:
        >>> tg.logcumsumexp(tg.tensor([-1000., 0., 1000.]), 0)
        tensor([-1000., 0., 1000.])
    """
    x, d, scalar = _scan_dim(input, dim, "logcumsumexp")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise kernel_not_implemented(f"logcumsumexp_out_{x.device.type}", x.dtype)
    (out,) = _scan((x,), d, lambda a, b: (logaddexp(a[0], b[0]),))
    return out.reshape(()) if scalar else out


# -- differences and the trapezoidal rule -----------------------------------------------------------

def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The ``n``-th forward difference along ``dim``: ``out[i] = x[i + 1] - x[i]``, applied
    ``n`` times, after ``prepend`` and ``append`` are joined to ``input`` along ``dim`` (bools:
    ``x[i + 1] != x[i]``).

    Example:
        >>> tg.diff(tg.tensor([1., 4., 9., 16.]))
        tensor([3., 5., 7.])
    """
    x = tensor_arg(input, "diff")
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = int_arg(n, "diff", "n")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(int_arg(dim, "diff", "dim"), x.ndim, "diff")
    if n == 0:  # (prepend and append are not joined then: NumPy's and PyTorch's rule)
        return x
    if prepend is not None or append is not None:
        parts = [tensor_arg(p, "diff", name) for p, name in ((prepend, "prepend"), (x, "input"),
                                                               (append, "append"))
                 if p is not None]
        x = cat(parts, d)
    step = logical_xor if x.dtype is dtypes.bool else sub
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        x = step(narrow(x, d, 1, m - 1), narrow(x, d, 0, m - 1))
    return x


def _trapezoid_widths(y: Tensor, x, dx, d: int, op: str):
    """The sample spacing: ``dx`` (a number), or the differences of ``x`` shaped to broadcast
    along ``d`` of ``y``."""
    if x is None:
        return 1.0 if dx is None else dx
    x = tensor_arg(x, op, "x")
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = x.shape[0] - 1 if x.shape[0] else 0
        return diff(x).reshape(shape)
    return diff(x, dim=d - y.ndim)


def _trapezoid_args(y, x, dx, dim, op: str):
    y = tensor_arg(y, op, "y")
    if y.dtype is dtypes.bool:
        raise RuntimeError(f"{op}: received a bool input for `y`, but bool is not supported")
    if x is not None and dx is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: x and dx")
    if dx is not None and not isinstance(dx, numbers.Number):
        raise TypeError(f"{op}(): argument 'dx' must be a number, not {type(dx).__name__}")
    if y.ndim == 0:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [-1, 0], "
                         f"but got {dim})")
    d = wrap_dim(int_arg(dim, op, "dim"), y.ndim, op)
    if not (y.dtype.is_floating_point or y.dtype.is_complex):
        y = y.to(dtypes.get_default_dtype())
    return y, d, _trapezoid_widths(y, x, dx, d, op)


def _trapezoid_areas(y: Tensor, d: int, widths) -> Tensor:
    """The area of each trapezoid along ``d``: ``(y[i] + y[i + 1]) / 2 * width[i]``."""
    m = y.shape[d]
    if m == 0:
        return narrow(y, d, 0, 0)
    return (narrow(y, d, 1, m - 1) + narrow(y, d, 0, m - 1)) * widths / 2


def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: samples ``y`` at the points ``x`` (a tensor, 1-d
    or shaped as ``y``) or spaced ``dx`` apart (default 1).

    Example:
        >>> tg.trapezoid(tg.tensor([1., 2., 3.]))
        tensor(4.)
    """
    y, d, widths = _trapezoid_args(y, x, dx, dim, "trapezoid")
    return sum(_trapezoid_areas(y, d, widths), d)


def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal rule along ``dim`` (one fewer element than ``y`` there)."""
    y, d, widths = _trapezoid_args(y, x, dx, dim, "cumulative_trapezoid")
    areas = _trapezoid_areas(y, d, widths)
    return areas.cumsum(d) if areas.shape[d] else areas


# -- numerical gradient ---------------------------------------------------------------------------

def _gradient_spacing(spacing, x: Tensor, dims, given_dims: bool) -> list:
    """``spacing`` as one entry per dim of ``dims``: a number, or a 1-D coordinate tensor;
    PyTorch's TypeErrors for what its overloads do not take and RuntimeErrors for a list of
    the wrong length."""
    if spacing is None:
        spacing = 1
    if isinstance(spacing, Tensor) and spacing.ndim == 0:
        spacing = spacing.item()
    if isinstance(spacing, numbers.Number):
        return [spacing] * len(dims)
    if isinstance(spacing, Tensor) or not isinstance(spacing, (list, tuple)):
        raise TypeError(f"gradient(): argument 'spacing' must be a Number, a tuple of Scalars or "
                        f"a tuple of Tensors, not {type(spacing).__name__}")
    spacing = list(spacing)
    if any(isinstance(s, Tensor) for s in spacing):
        for i, s in enumerate(spacing):
            if not isinstance(s, Tensor):
                raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                                f"{type(s).__name__}")
    elif not all(isinstance(s, numbers.Number) for s in spacing):
        raise TypeError("gradient(): argument 'spacing' must be a tuple of Scalars or a tuple "
                        "of Tensors")
    if not given_dims and len(spacing) != x.ndim:
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to 'self.dim() = {x.ndim}', since dim argument "
                           f"was not given, but got a list of length {len(spacing)}")
    if given_dims and len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's "
                           f"spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {len(spacing)} and a dim argument of "
                           f"length {len(dims)}.")
    return spacing


def _spaced_difference(x: Tensor, d: int, h, edge_order: int) -> Tensor:
    """The derivative along ``d`` of samples ``h`` apart: central differences inside, one-sided
    ones of order ``edge_order`` at both ends (PyTorch's formulas and operation order)."""
    n = x.shape[d]

    def at(start, length=1):
        return narrow(x, d, start % n, length)
    center = (at(2, n - 2) - at(0, n - 2)) / h / 2
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h, (at(-1) - at(-2)) / h
    else:
        first = (at(0) * -1.5 + at(1) * 2 - at(2) * 0.5) / h
        last = (at(-3) * 0.5 + at(-2) * -2 + at(-1) * 1.5) / h
    return cat([first, center, last], d)


def _coordinate_difference(x: Tensor, d: int, coords: Tensor, edge_order: int) -> Tensor:
    """The derivative along ``d`` of samples at the 1-D ``coords``: the second-order formula
    for uneven steps inside (``h_l`` before, ``h_r`` after each point), one-sided ones of order
    ``edge_order`` at both ends."""
    if coords.ndim != 1:
        raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                           f"dimension, but got an element with {coords.ndim} dimensions!")
    n = x.shape[d]
    shape = [1] * x.ndim
    shape[d] = -1

    def at(start, length=1):
        return narrow(x, d, start % n, length)
    h = diff(coords)
    hl, hr = h[:-1], h[1:]
    a = (-hr / (hl * (hl + hr))).reshape(shape)
    b = ((hr - hl) / (hl * hr)).reshape(shape)
    c = (hl / (hr * (hl + hr))).reshape(shape)
    center = a * at(0, n - 2) + b * at(1, n - 2) + c * at(2, n - 2)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h[0], (at(-1) - at(-2)) / h[-1]
    else:
        h0, h1, hm, hn = h[0], h[1], h[-2], h[-1]
        first = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * at(0) + (h0 + h1) / (h0 * h1) * at(1)
                 - h0 / (h1 * (h0 + h1)) * at(2))
        last = (hn / (hm * (hn + hm)) * at(-3) - (hn + hm) / (hn * hm) * at(-2)
                + (2 * hn + hm) / (hn * (hn + hm)) * at(-1))
    return cat([first, center, last], d)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Estimates the gradient of the function sampled by ``input`` along each dim of ``dim``
    (all by default), one tensor per dim: second-order accurate central differences at the
    interior points and first- or second-order (``edge_order``) one-sided differences at the
    boundaries. ``spacing`` says where the samples are: a scalar (the step, every dim), a list
    of scalars (one step per dim), or a list of 1-D coordinate tensors (one per dim, uneven
    steps allowed). Each dim needs at least ``edge_order + 1`` samples.

    Example:
        >>> tg.gradient(tg.tensor([1., 2., 4., 8., 16.]))
        (tensor([1.0000, 1.5000, 3.0000, 6.0000, 8.0000]),)
    """
    op = "torch.gradient"
    x = tensor_arg(input, "gradient")
    if x.dtype is dtypes.uint8:
        raise RuntimeError(f"{op} does not support uint8 input.")
    given_dims = dim is not None
    if not given_dims:
        dims = list(range(x.ndim))
    else:
        dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    steps = _gradient_spacing(spacing, x, dims, given_dims)
    edge_order = int_arg(edge_order, "gradient", "edge_order")
    if edge_order not in (1, 2):
        raise RuntimeError(f"{op} only supports edge_order=1 and edge_order=2.")
    wrapped = []
    for d in dims:
        d = wrap_dim(int_arg(d, "gradient", "dim"), x.ndim, "gradient")
        if d in wrapped:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        wrapped.append(d)
    if any(x.shape[d] < edge_order + 1 for d in wrapped):
        raise RuntimeError(f"{op} expected each dimension size to be at least edge_order+1")
    return tuple(_coordinate_difference(x, d, h, edge_order) if isinstance(h, Tensor)
                 else _spaced_difference(x, d, h, edge_order) for d, h in zip(wrapped, steps))


# -- the table ---------------------------------------------------------------------------------

_SCAN = "through its parts (a log2 n step scan)"

OPS = (
    OpInfo("cumprod", cumprod, dtypes="all; integers and bool give int64", grad=_SCAN,
           out="dtype"),
    OpInfo("cummax", cummax, dtypes="all but complex; int64 indices",
           grad="g to the indices (gather's)"),
    OpInfo("cummin", cummin, dtypes="all but complex; int64 indices",
           grad="g to the indices (gather's)"),
    OpInfo("logcumsumexp", logcumsumexp, dtypes="floats", grad=_SCAN),
    OpInfo("diff", diff, dtypes="all (bool: xor)", grad="through its parts"),
    OpInfo("trapezoid", trapezoid, method=False, aliases=("trapz",),
           dtypes="floats; integers promote", grad="through its parts"),
    OpInfo("cumulative_trapezoid", cumulative_trapezoid, method=False,
           dtypes="floats; integers promote", grad="through its parts"),
    OpInfo("gradient", gradient, method=False, dtypes="all but uint8 and bool; integers give "
           "floats", grad="through its parts (differences of slices)"),
)
OPS = with_jvp(OPS)  # forward AD goes through the parts (each has a jvp rule)
OPS = with_inplace(OPS, ("cumprod",))
