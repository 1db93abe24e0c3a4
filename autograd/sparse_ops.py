"""``torch.sparse``'s products and reductions of sparse COO tensors (autograd/sparse.py holds
the tensor and its primitives): ``mm``, ``addmm``, ``sum``, ``softmax``, ``log_softmax``, and
``torch.mm(sparse, dense)``. Each is written over the values with dense ops (gather, multiply,
``index_add``, ``index_reduce``), so its gradients come by composition; only
``torch.mm``'s node has its own rule (its gradient for the sparse operand is dense, as
PyTorch's). Also here: ``gather(..., sparse_grad=True)``, a dense op whose node gives its input
a sparse gradient.
"""

from __future__ import annotations

import numpy as np

from .function import Function
from .sparse import (SparseBase, SparseTensor, _FromParts, _host_indices, _index_tensor, _linear,
                     deliver_sparse, is_sparse)
from .tensor import Tensor

__all__ = ["addmm", "gather_sparse_grad", "log_softmax", "mm", "mm_dense_grad", "softmax", "sum"]


def _check_mm(op: str, s, d) -> None:
    if not is_sparse(s) or s.ndim != 2 or s.sparse_dim() != 2:
        raise RuntimeError(f"{op}: expected mat1 to be a 2-D sparse COO matrix with 2 sparse "
                           f"dims, got {'a sparse' if is_sparse(s) else 'a dense'} tensor of "
                           f"shape {list(s.shape)}")
    if not isinstance(d, Tensor) or is_sparse(d) or d.ndim != 2:
        raise RuntimeError(f"{op}: expected mat2 to be a 2-D dense tensor")
    if s.shape[1] != d.shape[0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied "
                           f"({s.shape[0]}x{s.shape[1]} and {d.shape[0]}x{d.shape[1]})")
    if s.dtype is not d.dtype:
        raise RuntimeError(f"{op}: expected mat1 and mat2 to have the same dtype, but got: "
                           f"{s.dtype} != {d.dtype}")


def _spmm(vals: Tensor, rows: Tensor, cols: Tensor, n: int, d: Tensor) -> Tensor:
    """sum_k vals[k] * d[cols[k]] into row rows[k] of an (n, p) result: the product written
    with gather, multiply and index_add, so both operands are differentiated for free."""
    from .ops.creation import zeros
    out = zeros((n, d.shape[1]), dtype=d.dtype, device=d.device)
    return out.index_add(0, rows, vals.unsqueeze(1) * d.index_select(0, cols))


def mm(mat1: SparseTensor, mat2: Tensor) -> Tensor:
    """``mat1 @ mat2`` for a sparse (n, m) ``mat1`` (COO, or a compressed layout:
    sparse_compressed_ops.py) and a dense (m, p) ``mat2``; the gradient of ``mat1`` is sparse
    with ``mat1``'s pattern (``torch.sparse.mm``'s rule).

    Example:
        >>> s = tg.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
        >>> tg.sparse.mm(s, tg.eye(2)).tolist()
        [[0.0, 2.0], [3.0, 0.0]]
    """
    if type(mat1) is not SparseTensor and isinstance(mat1, SparseBase):  # CSR, CSC, BSR, BSC
        from .sparse_compressed_ops import mm as compressed_mm
        return compressed_mm(mat1, mat2)
    _check_mm("sparse.mm", mat1, mat2)
    idx, vals, _ = mat1._parts()
    rows, cols = idx.unbind(0)
    return _spmm(vals, rows, cols, mat1.shape[0], mat2)


class _MmDenseGrad(Function):
    """``torch.mm(sparse, dense)``: as PyTorch's, its gradient for the sparse operand is the
    dense ``dC @ mat2^T`` (not masked to the pattern, unlike ``sparse.mm``)."""

    @staticmethod
    def forward(ctx, s, d):
        ctx.s, ctx.d = s.detach(), d.detach()
        rows, cols = s._idx.unbind(0)
        return _spmm(s._vals, rows, cols, s.shape[0], d)

    @staticmethod
    def backward(ctx, g):
        gs = g.mm(ctx.d.t()) if ctx.needs_input_grad[0] else None
        gd = mm(ctx.s.t(), g) if ctx.needs_input_grad[1] else None
        return gs, gd


_MmDenseGrad._backward_cls.__name__ = _MmDenseGrad._backward_cls.__qualname__ = "MmBackward0"


def mm_dense_grad(s: SparseTensor, d: Tensor) -> Tensor:
    _check_mm("mm", s, d)
    return _MmDenseGrad.apply(s, d)


class _GatherSparseGrad(Function):
    """``gather(x, dim, index, sparse_grad=True)``: the dense gather's values, and for ``x`` a
    sparse gradient as PyTorch's ``_gather_sparse_backward`` builds it: one entry per element
    of ``index``, in its order, at that element's coordinates with ``dim``'s replaced by the
    index there (uncoalesced: repeated indices add up), holding the incoming gradient's
    element."""

    @staticmethod
    def forward(ctx, x, dim, index):
        from .dispatch import apply
        from .ops.indexing import GatherBackward0
        ctx.dim, ctx.index, ctx.size = dim, index, tuple(x.shape)
        return apply(GatherBackward0, (x,), dim, index._data)

    @staticmethod
    def backward(ctx, g):
        coords = _gather_coords(ctx.index, ctx.dim, len(ctx.size))
        return deliver_sparse(ctx, 0, coords, g.reshape(-1), ctx.size), None, None

    @staticmethod
    def jvp(ctx, tx, _dim, _index):
        from .dispatch import apply
        from .ops.indexing import GatherBackward0
        return apply(GatherBackward0, (tx,), ctx.dim, ctx.index._data)


_GatherSparseGrad._backward_cls.__name__ = _GatherSparseGrad._backward_cls.__qualname__ = \
    "GatherBackward0"


def _gather_coords(index: Tensor, dim: int, ndim: int) -> Tensor:
    """The (ndim, index.numel()) coordinates of the elements ``gather`` reads: for each
    element of ``index`` (row-major), its own coordinates with dimension ``dim``'s replaced by
    its value. (A 0-d or 1-d ``x`` may meet an index of the other rank: the index values alone
    are then the coordinates, and a 0-d ``x`` has none.)"""
    from .ops.creation import arange
    from .ops.shape import stack
    flat = index.reshape(-1)
    if ndim <= 1:
        return flat.reshape(1, -1)[:ndim]  # ((0, n) for a 0-d x)
    shape = tuple(index.shape)
    rows = []
    for j in range(ndim):
        if j == dim:
            rows.append(flat)
            continue
        along = arange(shape[j], device=index.device).reshape(
            *(-1 if i == j else 1 for i in range(ndim)))
        rows.append(along.expand(*shape).reshape(-1))
    return stack(rows)


def gather_sparse_grad(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``gather(x, dim, index, sparse_grad=True)`` after gather's checks (``dim`` wrapped,
    ``index`` the checked int64 index): the same values, ``x``'s gradient sparse."""
    return _GatherSparseGrad.apply(x, dim, index)


def addmm(mat: Tensor, mat1: SparseTensor, mat2: Tensor, *, beta=1.0, alpha=1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` (COO or compressed;
    ``torch.sparse.addmm``)."""
    prod = mm(mat1, mat2)
    return (mat * beta if beta != 1 else mat) + (prod * alpha if alpha != 1 else prod)


def sum(input: SparseTensor, dim=None, dtype=None) -> Tensor:  # noqa: A001 - PyTorch's name
    """The sum of all elements (a dense 0-d tensor) or over ``dim`` (``torch.sparse.sum``): a
    sparse tensor while sparse dims remain, dense when all sparse dims are summed."""
    if not is_sparse(input):
        raise RuntimeError("sparse.sum: expected a sparse COO tensor")
    idx, vals, _ = input._parts()
    if dtype is not None:
        vals = vals.to(dtype)
    if dim is None:
        return vals.sum()
    from .tensor import wrap_dim
    dims = sorted({wrap_dim(d, input.ndim, "sparse.sum")
                   for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = input.sparse_dim()
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(dense_dims)
    keep = [d for d in range(sd) if d not in dims]
    dense_size = [input.shape[d] for d in range(sd, input.ndim) if d not in dims]
    if not keep:
        return vals.sum(0)
    idx = idx.index_select(0, _index_tensor(np.array(keep), idx)) \
        if len(keep) < sd else idx
    out = _FromParts.apply(idx, vals, tuple(input.shape[d] for d in keep) + tuple(dense_size),
                           False)
    return out.coalesce()


def softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Softmax along ``dim`` over the specified elements only (the unspecified ones count as
    -inf, as ``torch.sparse.softmax``): a sparse tensor with ``input``'s coalesced pattern.

    Example:
        >>> s = tg.sparse_coo_tensor([[0, 0, 1], [0, 2, 1]], [1., 1., 5.], (2, 3))
        >>> tg.sparse.softmax(s, 1).to_dense().tolist()
        [[0.5, 0.0, 0.5], [0.0, 1.0, 0.0]]
    """
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """``log(softmax(input, dim))`` over the specified elements (``torch.sparse.log_softmax``)."""
    return _softmax(input, dim, dtype, log=True)


def _softmax(input, dim: int, dtype, log: bool) -> SparseTensor:
    if not is_sparse(input):
        raise RuntimeError("sparse.softmax: expected a sparse COO tensor")
    from .tensor import wrap_dim
    dim = wrap_dim(dim, input.ndim, "sparse.softmax")
    c = input.coalesce()
    idx, vals, _ = c._parts()
    if dtype is not None:
        vals = vals.to(dtype)
    sd = c.sparse_dim()
    if dim >= sd:  # a dense dim: each value row on its own
        out = vals.log_softmax(dim - sd + 1) if log else vals.softmax(dim - sd + 1)
        return _FromParts.apply(idx, out, c._size, True)
    # a sparse dim: the entries that differ only in ``dim`` form one group
    others = [d for d in range(sd) if d != dim]
    host = _host_indices(c)
    key = _linear(host[others], [c._size[d] for d in others])
    _, group = np.unique(key, return_inverse=True)
    group = group.reshape(-1)
    g = _index_tensor(group, vals)
    n = int(group.max()) + 1 if len(group) else 0
    from .ops.creation import full, zeros
    shape = (n, *vals.shape[1:])
    unrecorded = vals.detach()
    top = full(shape, -np.inf, dtype=vals.dtype, device=vals.device).index_reduce(
        0, g, unrecorded, "amax") if n else unrecorded[:0]
    shifted = vals - top.index_select(0, g)  # (the maximum, a constant, keeps exp in range)
    e = shifted.exp()
    total = zeros(shape, dtype=vals.dtype, device=vals.device).index_add(0, g, e)
    out = shifted - total.log().index_select(0, g) if log else e / total.index_select(0, g)
    return _FromParts.apply(idx, out, c._size, True)
