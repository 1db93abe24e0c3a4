"""``channel_shuffle`` and ``pdist``: ``nn.functional``'s (and the top level's) channel
shuffle, composed from views, and pairwise distances between rows, one node over the kernel
contract sharing cdist's formulas (autograd/ops/products.py)."""

from __future__ import annotations

from ..autograd import checks
from ..autograd.dispatch import SINK, Primitive, apply, as_shape, meta, opmath, zeros
from ..autograd.ops.products import CdistBackward0, _cdist_weights, _differences
from ..autograd.tensor import Tensor
from ._padding import _channels_last_like

__all__ = ["channel_shuffle", "native_channel_shuffle", "pdist"]


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Divides the channels (dim 1) of ``input`` (N, C, *) into ``groups`` groups and
    interleaves them: channel ``g * (C / groups) + i`` moves to ``i * groups + g``.

    Example:
        >>> F.channel_shuffle(tg.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    if checks.tensor_arg(input, "channel_shuffle").ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError("channel_shuffle: Number of groups to divide channels in must be "
                           f"positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError("channel_shuffle: Number of channels must be divisible by groups. Got "
                           f"{c} channels and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    y = input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape((n, c) + rest)
    if y._base is not None or y is input:  # (one group: a new tensor all the same, as PyTorch's)
        y = y.clone()
    return _channels_last_like(y, input)  # (PyTorch's: in the format the input suggests)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Native kernel level implementation of the ``channel_shuffle`` (the same result here)."""
    return channel_shuffle(input, groups)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of the 2-D ``input`` (N, M), for each pair
    ``i < j`` in row-major order: N (N - 1) / 2 values (the upper triangle of
    ``cdist(input, input)`` without its diagonal). One ``PdistBackward0`` node saving
    ``input`` and the result, as PyTorch's; the gradient is 0 where a distance is 0.

    Example:
        >>> F.pdist(tg.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]))
        tensor([ 5., 10.,  5.])
    """
    if checks.tensor_arg(input, "pdist").ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return apply(PdistBackward0, (input,), float(p))


def _condensed(k, square, n: int):
    """The strict upper triangle of the (n, n) ``square``, row by row (n >= 2)."""
    return k.cat([k.getitem(square, (i, slice(i + 1, n))) for i in range(n - 1)], 0)


def _square(k, condensed, n: int):
    """The (n, n) matrix holding ``condensed`` in its strict upper triangle, zeros elsewhere
    (``_condensed``'s inverse)."""
    dev, dt = meta(condensed)
    rows, at = [], 0
    for i in range(n):
        rows.append(k.full((i + 1,), 0, dt, dev))
        if i < n - 1:
            rows.append(k.getitem(condensed, (slice(at, at + n - 1 - i),)))
            at += n - 1 - i
    return as_shape(k, k.cat(rows, 0), (n, n))


class PdistBackward0(Primitive):
    """y = pdist(x, p), the pairs i < j of cdist(x, x, p), saving x and y (PyTorch's): with
    G the (N, N) matrix of g in the pairs' places and w = dy_ij / dx_i (cdist's weights),
    dx = sum_j G w - sum_i G w; jvp: dy_ij = sum_m w_ijm (t_i - t_j)_m. The differences of
    all N^2 pairs are formed (twice pdist's), one row of the triangle per slice."""

    __slots__ = ()
    op_name = "_pdist_forward"
    save_inputs = (0,)
    save_output = True

    @staticmethod
    def forward(ctx, k, x, p):
        ctx.p = p
        n = x.shape[0]
        dev, dt = meta(x)
        if n < 2:
            return k.full((0,), 0, dt, dev)
        return _condensed(k, CdistBackward0.forward(SINK, k, x, x, p, False), n)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, y = saved
        n = x.shape[0]
        if n < 2 or ctx.p == 0:
            return zeros(k, x.shape, x)
        (x, y, g), back = opmath(k, x, y, g)
        gw = k.mul(k.getitem(_square(k, g, n), (slice(None), slice(None), None)),
                   _cdist_weights(k, x, x, _square(k, y, n), ctx.p))
        return back(k.sub(k.sum(gw, (1,), False), k.sum(gw, (0,), False)))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, p):
        x, t = primals[0], tangents[0]
        n = x.shape[0]
        if n < 2 or p == 0:
            return zeros(k, out.shape, out)
        (x, t, y), back = opmath(k, x, t, out)
        w = _cdist_weights(k, x, x, _square(k, y, n), p)
        tangent = k.sum(k.mul(w, _differences(k, t, t)), (2,), False)
        return back(_condensed(k, tangent, n))
