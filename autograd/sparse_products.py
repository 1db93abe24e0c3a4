"""PyTorch's top-level sparse-dense products: ``smm``, ``hspmm``, ``hsmm``, ``sspaddmm``,
``saddmm`` (sparse results) and ``dsmm``, ``spmm`` (dense results), each a thin composition
of the sparse COO ops (autograd/sparse_ops.py), so gradients come from their parts (PyTorch
gives ``smm``, ``hspmm`` and ``sspaddmm`` no derivative).

Which layout each returns, as PyTorch's:

    smm(sparse, dense)            sparse COO (n, p): every column of each row of mat1 that
                                  holds an entry (2 sparse dims)
    hspmm / hsmm(sparse, dense)   hybrid sparse COO (n, p): 1 sparse dim (those rows), 1 dense
    sspaddmm / saddmm(sparse, sparse, dense, *, beta, alpha)
                                  sparse COO: beta * input + alpha * smm(mat1, mat2), the
                                  entries concatenated (uncoalesced)
    dsmm / spmm(mat1, dense)      dense: ``mm`` (mat1 sparse or dense)
"""

from __future__ import annotations

import numpy as np

from .sparse import _FromParts, _host_indices, _index_tensor, is_sparse
from .sparse_ops import _check_mm
from .sparse_ops import mm as _sparse_mm
from .tensor import Tensor

__all__ = ["dsmm", "hsmm", "hspmm", "saddmm", "smm", "spmm", "sspaddmm"]


def _rows(op: str, mat1, mat2: Tensor):
    """(the dense product, the sorted rows of mat1 that hold an entry, as an index tensor)."""
    _check_mm(op, mat1, mat2)
    rows = np.unique(_host_indices(mat1)[0])
    return _sparse_mm(mat1, mat2), _index_tensor(rows, mat2)


def hspmm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """Performs a matrix multiplication of a sparse COO matrix ``mat1`` and a strided matrix
    ``mat2``. The result is a (1 + 1)-dimensional hybrid COO matrix: one sparse dim (the rows
    of ``mat1`` that hold an entry) and one dense dim (their whole rows of the product).

    Example:
        >>> s = tg.sparse_coo_tensor([[0, 0], [0, 2]], [1., 2.], (3, 3))
        >>> r = tg.hspmm(s, tg.ones(3, 2))
        >>> r.sparse_dim(), r.dense_dim(), r.to_dense().tolist()
        (1, 1, [[3.0, 3.0], [0.0, 0.0], [0.0, 0.0]])
    """
    dense, rows = _rows("hspmm", mat1, mat2)
    return _FromParts.apply(rows.unsqueeze(0), dense.index_select(0, rows),
                            (mat1.shape[0], mat2.shape[1]), True)


hsmm = hspmm


def smm(input: Tensor, mat: Tensor) -> Tensor:
    """Performs a matrix multiplication of the sparse matrix ``input`` with the dense matrix
    ``mat``, giving a sparse COO matrix (2 sparse dims) holding every column of each row of
    ``input`` that has an entry.

    Example:
        >>> s = tg.sparse_coo_tensor([[1], [0]], [2.], (2, 2))
        >>> tg.smm(s, tg.ones(2, 2)).to_dense().tolist()
        [[0.0, 0.0], [2.0, 2.0]]
    """
    from .ops import arange, cartesian_prod
    dense, rows = _rows("smm", input, mat)
    p = mat.shape[1]
    cols = arange(p, device=mat.device)
    idx = cartesian_prod(rows, cols).reshape(-1, 2).t() if len(rows) and p else \
        _index_tensor(np.zeros((2, 0), np.int64), mat)
    vals = dense.index_select(0, rows).reshape(-1)
    return _FromParts.apply(idx, vals, (input.shape[0], p), False)  # (as PyTorch)


def sspaddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """Matrix multiplies a sparse tensor ``mat1`` with a dense tensor ``mat2``, then adds the
    sparse tensor ``input`` to the result: ``beta * input + alpha * (mat1 @ mat2)``, sparse
    (the entries of both terms, uncoalesced).

    Args:
        input (Tensor): a sparse matrix to be added
        mat1 (Tensor): a sparse matrix to be matrix multiplied
        mat2 (Tensor): a dense matrix to be matrix multiplied

    Keyword args:
        beta (Number, optional): multiplier for ``input``
        alpha (Number, optional): multiplier for ``mat1 @ mat2``
    """
    if not is_sparse(input):
        raise RuntimeError(f"sspaddmm: expected input to be a sparse COO tensor, got a "
                           f"{'dense' if isinstance(input, Tensor) else type(input).__name__} "
                           f"one (use addmm for a dense input)")
    prod = smm(mat1, mat2)
    if tuple(input.shape) != tuple(prod.shape):
        raise RuntimeError(f"sspaddmm: input of shape {list(input.shape)} cannot be added to "
                           f"the product of shape {list(prod.shape)}")
    a = input * beta if beta != 1 else input
    b = prod * alpha if alpha != 1 else prod
    from .ops import cat
    (i1, v1, _), (i2, v2, _) = a._parts(), b._parts()
    return _FromParts.apply(cat([i1, i2], 1), cat([v1, v2.to(v1.dtype)], 0), prod.shape, False)


def saddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """:func:`sspaddmm` (PyTorch's older name for it)."""
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha)


def dsmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``mm(input, mat2)`` as a dense (strided) matrix, ``input`` sparse or dense."""
    from .ops import mm
    return mm(input, mat2)


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``mm(input, mat2)`` as a dense (strided) matrix, ``input`` sparse or dense."""
    from .ops import mm
    return mm(input, mat2)
