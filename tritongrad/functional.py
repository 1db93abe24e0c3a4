"""``tritongrad.functional``: the functions PyTorch keeps in ``torch.functional`` (its
``__all__``), re-exported: each is the same object as ``tritongrad.<name>`` (built in the op
tables, autograd/ops/), so ``torch.functional.einsum`` and ``torch.einsum`` agree by
construction.

Example:
    >>> tg.functional.broadcast_shapes((2, 1), (3,))
    tritongrad.Size([2, 3])
"""

from .autograd.ops import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    cartesian_prod,
    cdist,
    chain_matmul,
    einsum,
    istft,
    lu,
    meshgrid,
    norm,
    pca_lowrank,
    split,
    stft,
    svd_lowrank,
    tensordot,
    unique,
    unique_consecutive,
    unravel_index,
)

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "istft",
           "lu", "meshgrid", "norm", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot",
           "unique", "unique_consecutive", "unravel_index"]
