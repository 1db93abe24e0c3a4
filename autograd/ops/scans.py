"""Scans and differences: ``cumprod cummax cummin logcumsumexp diff trapezoid`` (``trapz``)
``cumulative_trapezoid gradient``.

``cumprod`` and ``logcumsumexp`` are one node each, saving the input and the result as
PyTorch's (Note [Scans as one node]); their forwards and rules are Hillis-Steele prefix scans
over the kernel contract: ``ceil(log2 n)`` rounds, each combining every element with the one
``2^r`` places before it (``cat`` of the untouched head and the combined tail). That is
O(n log n) work in a handful of launches, stays on the tensor's device, and is exact where a
shortcut is not: ``exp(cumsum(log x))`` breaks on zeros and negatives, and shifting
``logcumsumexp`` by the overall max underflows the early terms. ``cummax``/``cummin`` are one
node each too (``CummaxBackward0``/``CumminBackward0``, saving the input and the indices, as
PyTorch's): the same scan over (value, index) pairs, and a gradient that is ``g`` added at
the indices (each ``g_j`` to the element that was the running extreme at j), PyTorch's
``cummaxmin_backward``. The other ops here are composites of public ops, differentiable
through their parts.
"""

from __future__ import annotations

import numbers

from ...runtime import dtype as dtypes
from ..checks import check_ordered, kernel_not_implemented, scalar_type_name, tensor_arg
from ..dispatch import SINK, Primitive, apply, call, meta, opmath
from ..dispatch import zeros as _zeros
from ..registry import OpInfo, with_inplace, with_jvp
from ..tensor import Tensor, int_arg, wrap_dim
from .composite import LogaddexpBackward0, logaddexp
from .elementwise import _result, sub
from .indexing import ScatterAddBackward0
from .pointwise import logical_xor
from .reduction import (
    _return_type,
    accumulating,
    as_requested,
    check_scan_dtype,
    return_types,
    sum,
    write_pair,
)
from .shape import cat, narrow

# (values, indices) named tuples, beside PyTorch's others in tg.return_types
return_types.cummax = _return_type("cummax")
return_types.cummin = _return_type("cummin")
return_types.cummax_out = _return_type("cummax_out")
return_types.cummin_out = _return_type("cummin_out")


def _scan_axis(x: Tensor, dim, op: str) -> int:
    """``dim`` wrapped for ``x`` (a 0-d tensor takes -1 and 0 and scans as one element)."""
    return wrap_dim(int_arg(dim, op, "dim"), x.ndim, op)


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative products along ``dim``; integers and bools multiply in int64 (as PyTorch).
    One ``CumprodBackward0`` node saving the input and the result, as PyTorch's; its gradient
    is exact at zeros (no division by the input), to any order.

    Example:
        >>> tg.cumprod(tg.tensor([1., 2., 3., 0., 5.]), 0)
        tensor([1., 2., 6., 0., 0.])
    """
    x = tensor_arg(input, "cumprod")
    d = _scan_axis(x, dim, "cumprod")
    check_scan_dtype(x, dtype, "cumprod")
    if x.dtype.is_floating_point or x.dtype.is_complex:
        # (the cast is the node's, as PyTorch's: it saves the input, not a converted copy)
        to = x.dtype if dtype is None else dtype
        if isinstance(to, dtypes.dtype) and (to.is_complex or (
                to.is_floating_point and x.dtype.is_floating_point)):
            return apply(CumprodBackward0, (x,), d, to)
    return as_requested(apply(CumprodBackward0, (accumulating(x, dtype),), d, None), dtype)


_NO_OUT_GRAD = ("{}(): functions with out=... arguments don't support automatic "
                "differentiation, but one of the arguments requires grad.")


def _scalar_type_error(want, got, which: str = "") -> str:
    """The text of PyTorch's dtype check in the scans' out= forms."""
    return f"expected scalar_type {scalar_type_name(want)} but found {scalar_type_name(got)}"


def logcumsumexp(input: Tensor, dim: int, *, out=None) -> Tensor:
    """``log(cumsum(exp(input), dim))`` without overflow or underflow (each step is a
    :func:`logaddexp`). Floating and complex dtypes only, as PyTorch. One
    ``LogcumsumexpBackward0`` node saving the input and the result, as PyTorch's. ``out``
    must have the result's dtype (PyTorch's RuntimeError otherwise).

    Example:
        >>> tg.logcumsumexp(tg.tensor([-1000., 0., 1000.]), 0)
        tensor([-1000., 0., 1000.])
    """
    x = tensor_arg(input, "logcumsumexp")
    d = _scan_axis(x, dim, "logcumsumexp")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise kernel_not_implemented(f"logcumsumexp_out_{x.device.type}", x.dtype)
    if out is not None:
        tensor_arg(out, "logcumsumexp", "out")
        if x.requires_grad:
            raise RuntimeError(_NO_OUT_GRAD.format("logcumsumexp"))
        if out.dtype is not x.dtype:
            raise RuntimeError(_scalar_type_error(x.dtype, out.dtype))
    return _result(apply(LogcumsumexpBackward0, (x,), d), out, "logcumsumexp")


# -- cumprod and logcumsumexp: one node each ----------------------------------------------
#
# Note [Scans as one node]: composed of Tensor ops, cumprod and logcumsumexp were 2 log2(n)
# nodes each saving its operands (3.5 times PyTorch's bytes at n = 256). Each is now one
# primitive saving the input and the result, as PyTorch's. Its forward is the Hillis-Steele
# scan on the backend's arrays (``_scan_arrays``). Its rules are first-order linear
# recurrences, s_i = a_i s_(i-1) + b_i, run as the same kind of scan over (a, b) pairs
# (``_linear_scan``), where PyTorch divides by the input (cumprod: then a second, O(n^2),
# formula at zeros under create_graph) or shifts by logs of |g| (logcumsumexp). So: exact
# with any number of zeros, every factor of logcumsumexp's in [0, 1] (no overflow), no host
# sync, and only mul, add, exp, cat and slices, so a recorded rule (create_graph) is
# differentiable again, to any order, with the same formulas.

def _part(k, a, dim: int, start: int, stop: int):
    """``a[..., start:stop]`` along ``dim`` (a view)."""
    return k.getitem(a, (slice(None),) * dim + (slice(start, stop),))


def _edge(k, like, dim: int, value):
    """A slice of ``like`` one long along ``dim``, filled with ``value``."""
    shape = list(like.shape)
    shape[dim] = 1
    dev, dt = meta(like)
    return k.full(tuple(shape), value, dt, dev)


def _shifted(k, a, dim: int, value, later: bool):
    """``a`` moved one place along ``dim``, ``value`` filling the place it left: ``later``,
    element i holds a[i - 1] (value first); else a[i + 1] (value last)."""
    n = a.shape[dim]
    if later:
        return k.cat([_edge(k, a, dim, value), _part(k, a, dim, 0, n - 1)], dim)
    return k.cat([_part(k, a, dim, 1, n), _edge(k, a, dim, value)], dim)


def _scan_arrays(k, x, dim: int, combine):
    """The inclusive prefix scan of backend array ``x`` along ``dim`` (at least two long)
    under the associative ``combine(earlier, later)``: Hillis-Steele, ``ceil(log2 n)``
    rounds, each combining every element with the one ``2^r`` places before it."""
    return _scan_pairs(k, (x,), dim, lambda a, b: (combine(a[0], b[0]),))[0]


def _scan_pairs(k, xs: tuple, dim: int, combine) -> tuple:
    """``_scan_arrays`` of a tuple of backend arrays of one shape, scanned together:
    ``combine(earlier, later)`` takes and returns tuples."""
    n = xs[0].shape[dim]
    step = 1
    while step < n:
        tail = combine(tuple(_part(k, x, dim, 0, n - step) for x in xs),
                       tuple(_part(k, x, dim, step, n) for x in xs))
        xs = tuple(k.cat([_part(k, x, dim, 0, step), t], dim) for x, t in zip(xs, tail))
        step *= 2
    return tuple(k.contiguous(x) for x in xs)  # (cat keeps a permuted input's layout)


def _linear_scan(k, a, b, dim: int, reverse: bool = False):
    """``s`` with ``s_i = a_i s_(i-1) + b_i`` along ``dim`` from ``s_(-1) = 0`` (``reverse``:
    ``s_i = a_i s_(i+1) + b_i`` from the end). Hillis-Steele over the maps ``s -> A s + B``
    of windows of 1, 2, 4, ... elements: a window and the one before it compose to
    ``(A A', A B' + B)``. a's first (reverse: last) element multiplies nothing: keep it
    finite."""
    n = b.shape[dim]
    step = 1
    while step < n:
        if reverse:  # element i takes the window starting at i + step
            own, other = (0, n - step), (step, n)
        else:        # element i takes the window ending at i - step
            own, other = (step, n), (0, n - step)
        a_own = _part(k, a, dim, *own)
        tail = k.add(k.mul(a_own, _part(k, b, dim, *other)), _part(k, b, dim, *own))
        join = (lambda new, x: k.cat([new, _part(k, x, dim, n - step, n)], dim)) if reverse \
            else (lambda new, x: k.cat([_part(k, x, dim, 0, step), new], dim))
        if 2 * step < n:  # (the last round needs no A)
            a = join(k.mul(a_own, _part(k, a, dim, *other)), a)
        b = join(tail, b)
        step *= 2
    return b


def _copy(k, x):
    """A new array with ``x``'s values (a forward's result must not be its input), C-contiguous
    as every scan's result (Note [Reductions are C-contiguous], kernels/numpy/reduction.py)."""
    return k.contiguous(k.mul(x, 1))


def _in_dtype(k, a, dt):
    """``a`` in dtype ``dt`` (a real one keeps a complex gradient: the engine takes its real
    part, Note [Complex autograd])."""
    have = meta(a)[1]
    if have is dt or (have.is_complex and not dt.is_complex):
        return a
    return k.astype(a, dt)


class CumprodBackward0(Primitive):
    """y = cumprod(x) along ``dim`` (in dtype ``to``: the node casts, as PyTorch's), saving x
    and y (PyTorch's):  dx_k = sum_(j >= k) g_j prod_(i <= j, i != k) x_i = y_(k-1) S_k,
    with y_(-1) = 1 and S_k = g_k + x_(k+1) S_(k+1) (a reverse linear scan: no division, so
    exact at any zeros). jvp:  dy_j = x_j dy_(j-1) + t_j y_(j-1). float16/bfloat16 compute
    in float32, rounded once; complex inputs are holomorphic (Note [Complex autograd])."""

    __slots__ = ()
    op_name = "cumprod"
    save_inputs = (0,)
    save_output = True
    _saved_dim = property(lambda n: n.dim)  # (as PyTorch's node shows it)

    @staticmethod
    def forward(ctx, k, x, dim, to):
        ctx.dim, ctx.to = dim, to
        if to is not None and meta(x)[1] is not to:
            x = k.astype(x, to)
        (x,), back = opmath(k, x)
        if len(x.shape) == 0 or x.shape[dim] < 2:
            return back(_copy(k, x))
        return back(_scan_arrays(k, x, dim, k.mul))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, y = saved
        dt = meta(x)[1]
        if ctx.to is not None and dt is not ctx.to:
            x = k.astype(x, ctx.to)
        dim = ctx.dim
        if len(x.shape) == 0 or x.shape[dim] < 2:
            return _in_dtype(k, g, dt)
        (x, y, g), back = opmath(k, x, y, g)
        s = _linear_scan(k, _shifted(k, x, dim, 0, later=False), g, dim, reverse=True)
        return _in_dtype(k, back(k.mul(_shifted(k, y, dim, 1, later=True), s)), dt)

    @staticmethod
    def complex_vjp(ctx, k, saved, g):
        return k.conj(CumprodBackward0.vjp(ctx, k, saved, k.conj(g)))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, dim, to):
        x, t = primals[0], tangents[0]
        if to is not None and meta(x)[1] is not to:
            x, t = k.astype(x, to), k.astype(t, to)
        if len(x.shape) == 0 or x.shape[dim] < 2:
            return t
        (x, t, y), back = opmath(k, x, t, out)
        return back(_linear_scan(k, x, k.mul(t, _shifted(k, y, dim, 1, later=True)), dim))

    complex_jvp = jvp


_NEG_INF = float("-inf")


def _logaddexp_arrays(k, a, b):
    """logaddexp of two backend arrays (a real dtype: LogaddexpBackward0's forward; complex:
    the composite, run unrecorded)."""
    if not meta(a)[1].is_complex:
        return LogaddexpBackward0.forward(SINK, k, a, b)
    from ..grad_mode import no_grad
    from ..tensor import make
    with no_grad():
        return logaddexp(make(a), make(b))._data


def _lcse_weights(k, x, y, dim: int):
    """exp(x_k - y_k), the share of x_k in y_k, as 1 exactly where y_k = x_k by construction
    (k = 0, or every earlier element -inf and x_k not): no inf - inf there, whose NaN a
    recorded rule's where would still pass on (0 * NaN)."""
    if meta(x)[1].is_complex:
        return k.exp(k.sub(x, y))
    n = x.shape[dim]
    fresh = k.binary("bitwise_and", k.eq(_part(k, y, dim, 0, n - 1), _NEG_INF),
                     k.gt(_part(k, x, dim, 1, n), _NEG_INF))
    one = k.cat([k.eq(_edge(k, x, dim, 0), 0), fresh], dim)
    return k.exp(k.sub(k.where(one, 0.0, x), k.where(one, 0.0, y)))


class LogcumsumexpBackward0(Primitive):
    """y = logcumsumexp(x) along ``dim``, saving x and y (PyTorch's):
    dx_k = sum_(j >= k) g_j exp(x_k - y_j) = exp(x_k - y_k) R_k, with
    R_k = g_k + exp(y_k - y_(k+1)) R_(k+1) (a reverse linear scan; y is non-decreasing, so
    every factor is in [0, 1]). jvp:  dy_j = exp(y_(j-1) - y_j) dy_(j-1) + t_j exp(x_j - y_j).
    Where two -inf meet (y_k = y_(k+1) = -inf) the derivative does not exist: NaN, as
    PyTorch's; an x_k = -inf after a finite element gets 0. float16/bfloat16 compute in
    float32, rounded once; complex inputs are holomorphic."""

    __slots__ = ()
    op_name = "logcumsumexp"
    save_inputs = (0,)
    save_output = True
    _saved_dim = property(lambda n: n.dim)

    @staticmethod
    def forward(ctx, k, x, dim):
        ctx.dim = dim
        (x,), back = opmath(k, x)
        if len(x.shape) == 0 or x.shape[dim] < 2:
            return back(_copy(k, x))
        return back(_scan_arrays(k, x, dim, lambda a, b: _logaddexp_arrays(k, a, b)))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, y = saved
        dim = ctx.dim
        if len(x.shape) == 0 or x.shape[dim] < 2:
            return g
        (x, y, g), back = opmath(k, x, y, g)
        n = x.shape[dim]
        ratio = k.exp(k.sub(_part(k, y, dim, 0, n - 1), _part(k, y, dim, 1, n)))
        a = k.cat([ratio, _edge(k, ratio, dim, 0)], dim)
        r = _linear_scan(k, a, g, dim, reverse=True)
        return back(k.mul(_lcse_weights(k, x, y, dim), r))

    @staticmethod
    def complex_vjp(ctx, k, saved, g):
        return k.conj(LogcumsumexpBackward0.vjp(ctx, k, saved, k.conj(g)))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, dim):
        x, t = primals[0], tangents[0]
        if len(x.shape) == 0 or x.shape[dim] < 2:
            return t
        (x, t, y), back = opmath(k, x, t, out)
        n = x.shape[dim]
        ratio = k.exp(k.sub(_part(k, y, dim, 0, n - 1), _part(k, y, dim, 1, n)))
        a = k.cat([_edge(k, ratio, dim, 0), ratio], dim)
        return back(_linear_scan(k, a, k.mul(t, _lcse_weights(k, x, y, dim)), dim))

    complex_jvp = jvp


# -- cummax and cummin: one node each ---------------------------------------------------------

def _running_pairs(k, x, dim: int, better: str):
    """(values, indices) of the running extreme of backend array ``x`` along ``dim`` (at
    least two long): a Hillis-Steele scan over (value, index) pairs where the later element
    wins when ``better`` (``ge``/``le``) holds or it is NaN, unless the earlier is NaN. So
    ties and NaNs take the later index and a NaN stays until the next NaN: PyTorch's
    kernel."""
    dev = meta(x)[0]
    n, nd = x.shape[dim], len(x.shape)
    idx = k.arange(0, 1, n, dtypes.int64, dev)
    idx = k.contiguous(k.expand(_along(k, idx, nd, dim), tuple(x.shape)))

    def combine(earlier, later):
        (va, ia), (vb, ib) = earlier, later
        nan_a, nan_b = k.ne(va, va), k.ne(vb, vb)
        wins = k.binary("bitwise_and", k.unary("bitwise_not", nan_a), getattr(k, better)(vb, va))
        take = k.binary("bitwise_or", nan_b, wins)
        return k.where(take, vb, va), k.where(take, ib, ia)
    return _scan_pairs(k, (x, idx), dim, combine)


def _along(k, a, nd: int, dim: int):
    """1-d backend array ``a`` shaped to broadcast along ``dim`` of an ``nd``-d array."""
    shape = [1] * nd
    shape[dim] = a.shape[0]
    view = k.view(a, tuple(shape))
    return view if view is not None else k.view(k.contiguous(a), tuple(shape))


class CummaxBackward0(Primitive):
    """(values, indices) = cummax(x) along ``dim``, saving x and the indices (PyTorch's):
    dx = zeros like x with g added at the indices (``scatter_add``; each g_j goes to the
    element that was the running maximum at j), so an element that stays the maximum over
    several places gets the sum of their gradients. jvp: the tangent at the indices. The
    indices are not differentiable."""

    __slots__ = ()
    op_name = "cummax"
    save_inputs = (0,)
    nondiff_outputs = (1,)
    keep_outputs = (1,)  # the indices (Note [Saved indices])
    _better = "ge"

    @classmethod
    def forward(cls, ctx, k, x, dim):
        ctx.dim = dim
        if len(x.shape) == 0 or x.shape[dim] < 2:
            dev = meta(x)[0]
            return _copy(k, x), k.full(tuple(x.shape), 0, dtypes.int64, dev)
        return _running_pairs(k, x, dim, cls._better)

    @staticmethod
    def vjp(ctx, k, saved, g, _g_indices=None):
        x, idx = saved
        if len(x.shape) == 0 or 0 in x.shape:
            return g
        return call(k, ScatterAddBackward0, (_zeros(k, x.shape, g), g), ctx.dim, idx)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        t, idx = tangents[0], out[1]
        return (t.clone() if t.ndim == 0 else t.gather(ctx.dim, idx)), None


CumminBackward0 = CummaxBackward0.variant("CumminBackward0", "cummin", _better="le")


def _running_extreme(name: str, node: type):
    rt, rt_out = getattr(return_types, name), getattr(return_types, name + "_out")

    def op(input: Tensor, dim: int, *, out=None):
        x = tensor_arg(input, name)
        check_ordered(x, name)
        dim = int_arg(dim, name, "dim")
        if x.ndim == 0 and dim not in (-1, 0):
            raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got "
                             f"{dim}")
        d = wrap_dim(dim, x.ndim, name)
        values, indices = apply(node, (x,), d)
        if out is None:
            return rt(values, indices)
        return write_pair(name, values, indices, out, _scalar_type_error, position=2)

    op.__name__ = op.__qualname__ = name
    return op


cummax = _running_extreme("cummax", CummaxBackward0)
cummax.__doc__ = """The running maximum of ``input`` along ``dim`` and where it was found, as
    the named tuple ``(values, indices)``: ``values[i]`` is the maximum of ``input[:i + 1]``
    (along ``dim``) and ``indices[i]`` its index. Ties take the later index and NaN propagates
    (the index of the latest NaN), as PyTorch. One ``CummaxBackward0`` node saving the input
    and the indices; the gradient of ``values`` is added at the indices. ``out``: a pair of
    tensors of the values' dtype and int64.

    Example:
        >>> tg.cummax(tg.tensor([1., 3., 2., 3.]), 0)
        tritongrad.return_types.cummax(
        values=tensor([1., 3., 3., 3.]),
        indices=tensor([0, 1, 1, 3]))
    """
cummin = _running_extreme("cummin", CumminBackward0)
cummin.__doc__ = """The running minimum of ``input`` along ``dim`` and where it was found, as
    the named tuple ``(values, indices)``; ties take the later index and NaN propagates, as
    :func:`cummax`. One ``CumminBackward0`` node saving the input and the indices; the
    gradient of ``values`` is added at the indices."""


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

OPS = (
    OpInfo("cumprod", cumprod, dtypes="all; integers and bool give int64",
           grad="y_(k-1) S_k, S_k = g_k + x_(k+1) S_(k+1) (exact at zeros)", out="dtype"),
    OpInfo("cummax", cummax, dtypes="all but complex; int64 indices",
           grad="g added at the indices (scatter_add)", node=CummaxBackward0),
    OpInfo("cummin", cummin, dtypes="all but complex; int64 indices",
           grad="g added at the indices (scatter_add)", node=CumminBackward0),
    OpInfo("logcumsumexp", logcumsumexp, dtypes="floats and complex",
           grad="exp(x_k - y_k) R_k, R_k = g_k + exp(y_k - y_(k+1)) R_(k+1)"),
    OpInfo("diff", diff, dtypes="all (bool: xor)", grad="through its parts", out="cast"),
    OpInfo("trapezoid", trapezoid, method=False, aliases=("trapz",),
           dtypes="floats; integers promote", grad="through its parts"),
    OpInfo("cumulative_trapezoid", cumulative_trapezoid, method=False,
           dtypes="floats; integers promote", grad="through its parts"),
    OpInfo("gradient", gradient, method=False, dtypes="all but uint8 and bool; integers give "
           "floats", grad="through its parts (differences of slices)"),
)
OPS = with_jvp(OPS)  # forward AD goes through the parts (each has a jvp rule)
OPS = with_inplace(OPS, ("cumprod",))
