"""``channel_shuffle`` and ``pdist``: ``nn.functional``'s (and the top level's) channel
shuffle and pairwise distances between rows, composed from views, gathers and norms."""

from __future__ import annotations

from ..autograd import checks
from ..autograd.ops.combinations import triu_indices
from ..autograd.ops.linalg_ext import vector_norm
from ..autograd.tensor import Tensor

__all__ = ["channel_shuffle", "pdist"]


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
    return (input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
            .reshape((n, c) + rest))


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of the 2-D ``input`` (N, M), for each pair
    ``i < j`` in row-major order: N (N - 1) / 2 values (the upper triangle of
    ``cdist(input, input)`` without its diagonal).

    Example:
        >>> F.pdist(tg.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]))
        tensor([ 5., 10.,  5.])
    """
    if checks.tensor_arg(input, "pdist").ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = triu_indices(n, n, 1, device=input.device)
    return vector_norm(input[i] - input[j], p, -1)
