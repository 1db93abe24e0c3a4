"""``embedding`` and ``embedding_bag`` with ``sparse=True``: the weight's gradient is a sparse
COO tensor (autograd/sparse.py) with one row per looked-up index, as PyTorch's.

``embedding``'s node reads the looked-up rows forward and, backward, makes the sparse gradient
from the output gradient directly: indices = the flattened ``input`` (the ``padding_idx``
positions left out), values = the output gradient's rows, so a step costs O(len(input) * dim)
and never a dense (num_embeddings, dim) gradient. ``embedding_bag`` is composed from it: the
rows picked (sparse gradients), scaled by ``per_sample_weights`` or ``1 / bag_size``, then
``index_add``-ed into their bags, which nn/_embedding_bag.py's ``_bags`` cuts (with its
checks).
"""

from __future__ import annotations

import numpy as np

from ..autograd import checks
from ..autograd.function import Function
from ..autograd.ops.creation import host_to, ones, zeros
from ..autograd.sparse import deliver_sparse
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes

__all__ = ["embedding_sparse", "embedding_bag_sparse"]


class _EmbeddingSparse(Function):
    """weight[input], whose backward gives ``weight`` a sparse gradient (PyTorch's
    EmbeddingBackward0 with ``sparse=True``)."""

    @staticmethod
    def forward(ctx, weight, input, padding_idx, scale_grad_by_freq):
        ctx.input, ctx.size, ctx.padding_idx = input, tuple(weight.shape), padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        return weight.index_select(0, input.reshape(-1)).reshape(*input.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, g):
        if ctx.scale_grad_by_freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with "
                               "sparse gradients")
        idx = ctx.input.reshape(-1)
        vals = g.reshape(-1, ctx.size[1])
        if ctx.padding_idx is not None:
            keep = (idx != ctx.padding_idx).nonzero().reshape(-1)
            idx, vals = idx.index_select(0, keep), vals.index_select(0, keep)
        return deliver_sparse(ctx, 0, idx.unsqueeze(0), vals, ctx.size), None, None, None


# the node's name is PyTorch's (the dense lookup's node is an EmbeddingBackward0 too)
_EmbeddingSparse._backward_cls.__name__ = "EmbeddingBackward0"
_EmbeddingSparse._backward_cls.__qualname__ = "EmbeddingBackward0"


def embedding_sparse(input: Tensor, weight: Tensor, padding_idx=None,
                     scale_grad_by_freq: bool = False) -> Tensor:
    """``F.embedding(input, weight, padding_idx, sparse=True)`` after its checks and
    ``max_norm`` (nn/functional.py): ``padding_idx`` is non-negative or None here."""
    return _EmbeddingSparse.apply(weight, input.long(), padding_idx, scale_grad_by_freq)


def embedding_bag_sparse(weight: Tensor, input: Tensor, offsets: Tensor, mode: int,
                         per_sample_weights: Tensor | None, include_last_offset: bool,
                         padding_idx: int | None) -> Tensor:
    """The output of ``embedding_bag`` (``mode`` 0 sum or 1 mean; PyTorch refuses max with
    sparse) for a 1-D ``input`` cut at ``offsets``, with a sparse gradient for ``weight``."""
    from ._embedding_bag import _bags, _check, _out_of_range
    _check(weight, input, offsets, mode, per_sample_weights)
    num, n, dev = weight.shape[0], input.shape[0], weight.device
    bag_of, bags, end = _bags(offsets, n, include_last_offset)
    idx = checks.guard_index(input.long(), num, _out_of_range)
    # the positions that count: inside a bag (include_last_offset may end the last one early)
    # and not padding
    keep = host_to(np.arange(n) < end, dtypes.bool, dev)
    if padding_idx is not None:
        keep = keep & (idx != padding_idx % num)
    pos = keep.nonzero().reshape(-1)
    o2b = host_to(bag_of, dtypes.int64, dev).index_select(0, pos)
    rows = embedding_sparse(idx.index_select(0, pos), weight)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.index_select(0, pos).unsqueeze(1)
    if mode == 1:
        count = zeros((bags,), dtype=rows.dtype, device=dev).index_add(
            0, o2b, ones((o2b.shape[0],), dtype=rows.dtype, device=dev))
        rows = rows / count.clamp(min=1).index_select(0, o2b).unsqueeze(1)
    return zeros((bags, weight.shape[1]), dtype=weight.dtype, device=dev).index_add(0, o2b, rows)
