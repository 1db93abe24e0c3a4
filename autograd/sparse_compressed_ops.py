"""What is done with sparse compressed tensors (sparse_compressed.py holds the tensor and its
factories): the conversions from dense and COO tensors and between layouts, with the
``Tensor`` methods ``to_sparse_csr``, ``to_sparse_csc``, ``to_sparse_bsr``, ``to_sparse_bsc``;
the products ``c @ d``, ``torch.mm``, ``torch.sparse.mm`` / ``addmm`` of a CSR, CSC, BSR or
BSC tensor and a dense one, ``torch.sparse.sampled_addmm``; and ``torch.sparse.spdiags``.

Each product runs over the specified elements with sparse_ops.py's ``_spmm`` (gather, multiply,
``index_add``), so its gradients come by composition; ``torch.mm`` / ``@``'s node has its own
rule, whose gradient for the sparse operand is dense (``dC @ d^T``), as PyTorch's.
"""

from __future__ import annotations

import numpy as np

from ..runtime import dtype as dtypes
from .function import Function
from .sparse import SPARSE_NODES, _FromParts, _host_indices, _index_tensor, is_sparse
from .sparse_compressed import (_FROM_DENSE, _INFO, _NAME, SparseCompressedTensor, _compress,
                                _FromValues, _Pattern, is_compressed)
from .sparse_compressed import _new as _new_compressed
from .sparse_ops import _spmm
from .tensor import Tensor

__all__ = ["check_to_sparse", "compressed_to", "coo_to_compressed", "dense_to_compressed", "mm",
           "mm_dense_grad", "mm_reduce", "sampled_addmm", "spdiags"]


# -- conversions --------------------------------------------------------------------------------

def _check_layout(layout, op: str) -> None:
    if layout not in _INFO:
        raise RuntimeError(f"{op}: expected a sparse compressed layout (tritongrad.sparse_csr, "
                           f"sparse_csc, sparse_bsr or sparse_bsc), got {layout}")


def _blocksize(blocksize, layout, op: str) -> tuple:
    if not _INFO[layout][2]:
        if blocksize is not None:
            raise RuntimeError(f"{op}: conversion to {_NAME[layout]} takes no blocksize, got "
                               f"{blocksize}")
        return (1, 1)
    if blocksize is None:
        raise RuntimeError(f"{op}: conversion to {_NAME[layout]} needs a blocksize")
    bs = (int(blocksize),) * 2 if isinstance(blocksize, int) else tuple(int(b) for b in blocksize)
    if len(bs) != 2 or min(bs) < 1:
        raise RuntimeError(f"{op}: blocksize must be two positive integers, got {blocksize}")
    return bs


def check_to_sparse(src, layout, blocksize) -> None:
    """``to_sparse(layout=, blocksize=)``'s argument checks, with PyTorch's messages: a block
    size for BSR and BSC only, and there required. ``src`` is the tensor converted."""
    from .sparse import layout_name
    blocked = _INFO[layout][2] if layout in _INFO else False
    if (blocksize is None) is not blocked:
        return
    src_name, dst_name = layout_name(src), _NAME[layout]
    if src_name == dst_name:
        op = "to_sparse"
    else:
        op = {"Strided": "dense_to_sparse", "Sparse": "sparse_coo_to_sparse"}.get(
            src_name, "sparse_compressed_to_sparse")
    how = "without" if blocked else "with"
    raise RuntimeError(f"{op}: conversion from {src_name} to {dst_name} {how} blocksize "
                       f"argument given is not supported")


def dense_to_compressed(x: Tensor, layout, blocksize=None, dense_dim=None,
                        op: str = "to_sparse") -> "SparseCompressedTensor":
    """The dense tensor ``x`` (*batch, nrows, ncols, *dense) in a compressed ``layout``: its
    elements (blocks) with a nonzero anywhere in them become the specified ones; every batch
    must hold as many. Differentiable in ``x``: its gradient is the incoming one's dense form."""
    _check_layout(layout, op)
    bs = _blocksize(blocksize, layout, op)
    dd = 0 if dense_dim is None else int(dense_dim)
    if not 0 <= dd <= x.ndim - 2:
        name = "" if op == "to_sparse" else "_" + str(layout).rsplit("_", 1)[-1]
        raise RuntimeError(f"dense_to_sparse{name}: dense_dim "
                           f"argument must be in [0,{max(x.ndim - 2, 0)}] range, but {dd} is "
                           f"given")
    nb = x.ndim - 2 - dd
    nrows, ncols = x.shape[nb], x.shape[nb + 1]
    if nrows % bs[0] or ncols % bs[1]:
        raise RuntimeError(f"dense_to_sparse_{str(layout).rsplit('_', 1)[-1]}: tensor sparse "
                           f"size ({nrows},{ncols}) must be divisible by given blocksize "
                           f"({bs[0]},{bs[1]})")
    batch_shape = tuple(x.shape[:nb])
    grid = (nrows // bs[0], ncols // bs[1])
    a = np.asarray(x.detach().cpu().numpy()) != 0
    dense_size = int(np.prod(x.shape[nb + 2:], dtype=np.int64))
    a = a.reshape(int(np.prod(batch_shape, dtype=np.int64)), grid[0], bs[0], grid[1], bs[1],
                  dense_size)
    b, r, c = np.nonzero(a.any(axis=(2, 4, 5)))
    indices, _ = _compress(b, r, c, batch_shape, grid, layout, x)
    return _FROM_DENSE[layout].apply(x, _Pattern(*indices, x.shape, layout, bs))


def coo_to_compressed(s, layout, blocksize=None, dense_dim=None) -> "SparseCompressedTensor":
    """A COO tensor with sparse dims (*batch, rows, cols) in a compressed ``layout``
    (differentiable in its values). BSR and BSC are made from its dense form."""
    op = f"to_sparse_{str(layout).rsplit('_', 1)[-1]}"
    _check_layout(layout, op)
    if dense_dim is not None and dense_dim != s.dense_dim():
        raise RuntimeError(f"{op}: conversion from Sparse with dense_dim {s.dense_dim()} to "
                           f"dense_dim {dense_dim} is not supported")
    if s.sparse_dim() < 2:
        raise RuntimeError(f"coo_{op}: conversion from Sparse to {_NAME[layout]} for input "
                           f"tensors with sparse_dim()!=2 is not supported (got sparse_dim "
                           f"{s.sparse_dim()}; batched COO tensors have more sparse dims)")
    if _INFO[layout][2]:
        return dense_to_compressed(s.to_dense(), layout, blocksize, s.dense_dim(), op)
    _blocksize(blocksize, layout, op)
    s = s.coalesce()
    idx, vals, _ = s._parts()
    host = _host_indices(s)
    sd = s.sparse_dim()
    batch_shape = tuple(s.shape[:sd - 2])
    b = np.ravel_multi_index(tuple(host[:sd - 2]), batch_shape) if sd > 2 else \
        np.zeros(host.shape[1], np.int64)
    indices, perm = _compress(b, host[sd - 2], host[sd - 1], batch_shape,
                              tuple(s.shape[sd - 2:sd]), layout, vals)
    pat = _Pattern(*indices, s.shape, layout)
    return _FROM_COO[layout].apply(s, pat, _index_tensor(perm, vals))


class _FromCoo(Function):
    """A coalesced COO tensor's conversion (``s.to_sparse_csr()`` ...): its values permuted
    onto ``pat``. The gradient of ``s`` is the incoming gradient in COO form, as PyTorch's
    ToSparseCsrBackward0 gives it: a compressed one keeps its pattern, a dense one
    (``torch.mm``'s) becomes its nonzero elements, every element a variable."""

    @staticmethod
    def forward(ctx, s, pat, perm):
        ctx.sd = s.sparse_dim()
        return _new_compressed(pat, s._vals.index_select(0, perm).reshape(pat.values_shape))

    @staticmethod
    def backward(ctx, g):
        from .sparse import takes_sparse, to_sparse
        if not takes_sparse(ctx, 0):
            return (g.to_dense() if is_compressed(g) else g), None, None
        return (g._to_coo() if is_compressed(g) else to_sparse(g, ctx.sd)), None, None


# one subclass per layout: the nodes print under PyTorch's names (ToSparseCsrBackward0 ...)
_FROM_COO = {lay: type(f"_CooToSparse{_NAME[lay][6:]}", (_FromCoo,), {}) for lay in _INFO}
for _lay, _cls in _FROM_COO.items():
    _cls._backward_cls.__name__ = _cls._backward_cls.__qualname__ = \
        f"ToSparse{_NAME[_lay][6:]}Backward0"
SPARSE_NODES.update(_FROM_COO.values())


def compressed_to(c: SparseCompressedTensor, layout, blocksize, dense_dim, op: str):
    """``c`` in another compressed layout: the values permuted where the blocks stay
    (CSR <-> CSC, BSR <-> BSC of one block size), else read from the dense form."""
    _check_layout(layout, op)
    if dense_dim is not None:
        raise RuntimeError(f"{op}: conversion from {_NAME[c.layout]} to {_NAME[layout]} with "
                           f"dense_dim argument given is not supported")
    bs = _blocksize(blocksize, layout, op)
    pat = c._pat
    if layout is pat.layout and (not _INFO[layout][2] or bs == pat.blocksize):
        return c
    if _INFO[layout][2] != _INFO[pat.layout][2]:
        if _INFO[pat.layout][2]:
            raise RuntimeError(f"sparse_compressed_to_sparse_{str(layout).rsplit('_', 1)[-1]}: "
                               f"expected SparseCsr or SparseCsc layout but got "
                               f"{_NAME[pat.layout]}")
        return dense_to_compressed(c.to_dense(), layout, bs, c.dense_dim(), op)
    if bs != pat.blocksize:
        if op == "to_sparse" and layout is not pat.layout:  # (PyTorch's name for it)
            op = "sparse_compressed_to_sparse"
        raise RuntimeError(f"{op}: conversion from {_NAME[pat.layout]} to {_NAME[layout]} with "
                           f"blocksize changed from {list(pat.blocksize)} to {list(bs)} is not "
                           f"supported")
    b, r, cc = pat.blocks()
    nb = pat.n_batch
    grid = (pat.size[nb] // bs[0], pat.size[nb + 1] // bs[1])
    indices, perm = _compress(b, r, cc, tuple(pat.size[:nb]), grid, layout, pat.cidx)
    new = _Pattern(*indices, pat.size, layout, bs)
    vals = c.values()
    flat = vals.reshape(-1, *vals.shape[nb + 1:])
    return _FromValues.apply(flat.index_select(0, _index_tensor(perm, flat))
                             .reshape(new.values_shape), new)


def _dense_method(layout, blocked: bool):
    """``Tensor.to_sparse_<layout>`` for dense tensors (and COO ones)."""
    name = f"to_sparse_{str(layout).rsplit('_', 1)[-1]}"

    def convert(self, *args, **kwargs):
        if is_compressed(self):
            return getattr(self, name)(*args, **kwargs)
        bs, dd = _method_args(name, blocked, args, kwargs)
        if is_sparse(self):
            return coo_to_compressed(self, layout, bs, dd)
        return dense_to_compressed(self, layout, bs, dd, name)

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = (f"This tensor in layout ``tritongrad.{str(layout).rsplit('.', 1)[-1]}``"
                       + (" of blocks ``blocksize``" if blocked else "")
                       + "; ``dense_dim`` trailing dims stay dense in each value (PyTorch's "
                       f"``Tensor.{name}``; differentiable).")
    return convert


def _method_args(name: str, blocked: bool, args, kwargs) -> tuple:
    names = ("blocksize", "dense_dim") if blocked else ("dense_dim",)
    if len(args) > len(names) or set(kwargs) - set(names):
        raise TypeError(f"{name}() takes ({', '.join(names)}), got {len(args)} positional "
                        f"arguments and {sorted(kwargs)}")
    got = dict(zip(names, args), **kwargs)
    if blocked and "blocksize" not in got:
        raise TypeError(f"{name}() missing required argument 'blocksize'")
    return got.get("blocksize"), got.get("dense_dim")


def _bind() -> None:
    """Binds the dense Tensor's compressed conversions (PyTorch's names)."""
    for layout in _INFO:
        method = _dense_method(layout, _INFO[layout][2])
        setattr(Tensor, method.__name__, method)


_bind()


def _check(op: str, c, d) -> None:
    if not is_compressed(c):
        raise RuntimeError(f"{op}: expected a sparse compressed tensor, got layout {c.layout}")
    if not isinstance(d, Tensor) or type(d) is not Tensor:
        raise RuntimeError(f"{op}: expected the second operand to be a dense (strided) tensor")
    if c.dense_dim():
        raise RuntimeError(f"{op}: {_NAME[c.layout]} tensors with dense dims (hybrid) are not "
                           f"supported, got dense_dim {c.dense_dim()}")
    nb = c._pat.n_batch
    n, m = c.shape[nb], c.shape[nb + 1]
    inner = d.shape[0] if d.ndim == 1 else d.shape[-2] if d.ndim >= 2 else None
    if inner != m:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({n}x{m} and "
                           f"{'x'.join(str(s) for s in d.shape) or 'scalar'})")
    if d.ndim > 2 and tuple(d.shape[:-2]) != tuple(c.shape[:nb]):
        raise RuntimeError(f"{op}: batch dims of mat1 {list(c.shape[:nb])} and mat2 "
                           f"{list(d.shape[:-2])} must be equal")
    if c.dtype is not d.dtype:
        raise RuntimeError(f"{op}: expected mat1 and mat2 to have the same dtype, but got: "
                           f"{c.dtype} != {d.dtype}")


def _rows_cols(pat: _Pattern, d_batched: bool, device):
    """The element rows (offset by batch, into the flattened (B * n) result) and columns
    (offset by batch when ``d`` is batched) of ``pat``'s elements, as index tensors."""
    b, r, c = pat.elements()
    nb = pat.n_batch
    n, m = pat.size[nb], pat.size[nb + 1]
    rows, cols = b * n + r, (b * m + c) if d_batched else c
    like = pat.cidx.to(device)
    return _index_tensor(rows, like), _index_tensor(cols, like)


def _product(pat: _Pattern, vals: Tensor, d: Tensor) -> Tensor:
    """``C @ d`` for the compressed ``C`` of ``vals`` on ``pat`` (written with ``_spmm``, so
    differentiable in both)."""
    nb = pat.n_batch
    vector = d.ndim == 1
    d2 = d.unsqueeze(-1) if vector else d
    batched = d2.ndim > 2
    rows, cols = _rows_cols(pat, batched, d.device)
    batch = tuple(pat.size[:nb])
    nbatch = int(np.prod(batch, dtype=np.int64))
    out = _spmm(vals.reshape(-1), rows, cols, nbatch * pat.size[nb],
                d2.reshape(-1, d2.shape[-1]))
    out = out.reshape(*batch, pat.size[nb], d2.shape[-1])
    return out.squeeze(-1) if vector else out


class _Mm(Function):
    """``torch.mm(c, d)`` / ``c @ d``: dense; as PyTorch's, its gradient for the compressed
    operand is the dense ``dC @ d^T`` (not masked, unlike ``sparse.mm``), for ``d`` it is
    ``c^T @ dC``."""

    @staticmethod
    def forward(ctx, c, d):
        ctx.pat, ctx.vals, ctx.d = c._pat, c._vals, d.detach()
        return _product(c._pat, c._vals, d)

    @staticmethod
    def backward(ctx, g):
        d, pat = ctx.d, ctx.pat
        gc = gd = None
        if ctx.needs_input_grad[0]:
            gc = g.unsqueeze(-1) * d if d.ndim == 1 else g.matmul(d.transpose(-2, -1))
        if ctx.needs_input_grad[1]:
            gd = _transposed_product(pat, ctx.vals, g, d)
        return gc, gd


_Mm._backward_cls.__name__ = _Mm._backward_cls.__qualname__ = "MmBackward0"


def _transposed_product(pat: _Pattern, vals: Tensor, g: Tensor, d: Tensor) -> Tensor:
    """``C^T @ g`` shaped as ``d`` (``d``'s gradient): each element's value times ``g``'s row
    added into ``d``'s row at the element's column."""
    vector = d.ndim == 1
    g2 = g.unsqueeze(-1) if vector else g
    batched = d.ndim > 2
    rows, cols = _rows_cols(pat, batched, g.device)
    nb = pat.n_batch
    nrows_d = (int(np.prod(d.shape[:-2], dtype=np.int64)) if batched else 1) * pat.size[nb + 1]
    out = _spmm(vals.reshape(-1), cols, rows, nrows_d, g2.reshape(-1, g2.shape[-1]))
    return out.reshape(d.shape)


def mm_dense_grad(c: SparseCompressedTensor, d: Tensor, op: str = "mm") -> Tensor:
    """``c @ d`` (``torch.mm``, ``matmul``, ``@``): dense, with a dense gradient for ``c``."""
    _check(op, c, d)
    if op == "mm" and (c._pat.n_batch or d.ndim != 2):
        raise RuntimeError(f"mm: expected 2-D matrices, got {c.ndim}-D and {d.ndim}-D")
    return _Mm.apply(c, d)


def mm(mat1: SparseCompressedTensor, mat2: Tensor) -> Tensor:
    """``torch.sparse.mm`` of a compressed ``mat1``: ``mat1 @ mat2`` with the gradient of
    ``mat1`` compressed on its pattern (masked)."""
    _check("sparse.mm", mat1, mat2)
    return _product(mat1._pat, mat1.values(), mat2)


_REDUCTIONS = ("sum", "mean", "amax", "amin")


def mm_reduce(mat1: SparseCompressedTensor, mat2: Tensor, reduce: str) -> Tensor:
    """``torch.sparse.mm(mat1, mat2, reduce)`` of a 2-D CSR ``mat1`` and a dense ``mat2``:
    row i of the result combines ``mat1[i, k] * mat2[k]`` over the specified k of row i with
    ``reduce`` (``sum``, ``mean``, ``amax``, ``amin``; 0 for a row without any). Written with
    ``index_add`` / ``index_reduce`` over the values, so differentiable in both operands (the
    gradient of ``mat1`` on its pattern)."""
    from .ops.creation import zeros
    if not isinstance(mat1, SparseCompressedTensor) or mat1.layout is not dtypes.sparse_csr:
        raise NotImplementedError(f"sparse.mm: reduce={reduce!r} needs a sparse CSR mat1, got "
                                  f"{mat1.layout if isinstance(mat1, Tensor) else mat1!r}")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, mean, amax or amin, got "
                           f"{reduce}")
    _check("sparse.mm", mat1, mat2)
    if mat1._pat.n_batch or mat2.ndim != 2 or mat1.dense_dim():
        raise RuntimeError(f"sparse.mm: reduce needs a 2-D CSR matrix and a 2-D dense one, "
                           f"got {mat1.ndim}-D and {mat2.ndim}-D")
    rows, cols = _rows_cols(mat1._pat, False, mat2.device)
    n, p = mat1.shape[0], mat2.shape[1]
    prods = mat1.values().unsqueeze(1) * mat2.index_select(0, cols)
    out = zeros((n, p), dtype=prods.dtype, device=prods.device)
    if reduce in ("sum", "mean"):
        out = out.index_add(0, rows, prods)
        if reduce == "mean":
            counts = np.bincount(np.asarray(rows.cpu().numpy()), minlength=n).clip(min=1)
            out = out / _index_tensor(counts, out).to(out.dtype).unsqueeze(1)
        return out
    # (include_self=False: a row's extremum over its products only; empty rows stay 0)
    return out.index_reduce(0, rows, prods, reduce, include_self=False)


def sampled_addmm(input: SparseCompressedTensor, mat1: Tensor, mat2: Tensor, *,
                  beta=1.0, alpha=1.0, out=None) -> SparseCompressedTensor:
    """``beta * input + alpha * (mat1 @ mat2)`` at the specified elements of the CSR tensor
    ``input`` only: a CSR tensor on ``input``'s pattern (``torch.sparse.sampled_addmm``).
    Differentiable in all three operands; only the sampled products are computed.

    Args:
        input: a CSR tensor (*batch, n, m), without dense dims.
        mat1, mat2: dense (*batch, n, k) and (*batch, k, m) (or 2-D, shared by the batches).
        beta, alpha: the scales.

    Example:
        >>> c = tg.sparse_csr_tensor([0, 1, 2], [1, 0], [1., 1.], (2, 2))
        >>> tg.sparse.sampled_addmm(c, tg.eye(2), tg.ones(2, 2)).to_dense().tolist()
        [[0.0, 2.0], [2.0, 0.0]]
    """
    if out is not None:
        raise NotImplementedError("sampled_addmm: out= is not supported")
    if isinstance(input, Tensor) and (is_sparse(input) or not is_compressed(input)):
        # (PyTorch has no kernel for COO or dense inputs: NotImplementedError)
        raise NotImplementedError(f"Could not run 'aten::sparse_sampled_addmm' with arguments "
                                  f"from the '{'Sparse' if is_sparse(input) else ''}CPU' backend "
                                  f"(sampled_addmm takes a CSR input)")
    if not is_compressed(input) or input.layout is not dtypes.sparse_csr:
        lay = _NAME.get(input.layout, input.layout) if isinstance(input, Tensor) else "none"
        raise RuntimeError(f"sampled_addmm: Expected result to have sparse csr layout, but got "
                           f"{lay}")
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if not isinstance(t, Tensor) or type(t) is not Tensor or t.ndim < 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a dense (strided) matrix "
                               f"or batch of matrices")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, but "
                           f"got {_name(mat1.dtype)} and {_name(mat2.dtype)}")
    if mat1.shape[-1] != mat2.shape[-2]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
                           f"({mat1.shape[-2]}x{mat1.shape[-1]} and "
                           f"{mat2.shape[-2]}x{mat2.shape[-1]})")
    pat = input._pat
    nb = pat.n_batch
    if input.dense_dim() or (mat1.shape[-2], mat2.shape[-1]) != tuple(pat.size[nb:nb + 2]):
        raise RuntimeError(f"sampled_addmm: Expected input of size {list(input.shape)} to be "
                           f"the shape of mat1 @ mat2 ({mat1.shape[-2]}x{mat2.shape[-1]}) "
                           f"without dense dims")
    if input.dtype is not mat1.dtype:
        raise RuntimeError(f"sampled_addmm: Expected input and mat1 to have the same dtype, "
                           f"but got {_name(input.dtype)} and {_name(mat1.dtype)}")
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if t.ndim > 2 and tuple(t.shape[:-2]) != tuple(pat.size[:nb]):
            raise RuntimeError(f"sampled_addmm: batch dims of {name} {list(t.shape[:-2])} must "
                               f"be those of input {list(pat.size[:nb])}")
    b, r, c = pat.elements()
    n, m = pat.size[nb], pat.size[nb + 1]
    like = pat.cidx.to(mat1.device)
    a_rows = _index_tensor(b * n + r if mat1.ndim > 2 else r, like)
    b_cols = _index_tensor(b * m + c if mat2.ndim > 2 else c, like)
    left = mat1.reshape(-1, mat1.shape[-1]).index_select(0, a_rows)
    right = mat2.transpose(-2, -1).reshape(-1, mat2.shape[-2]).index_select(0, b_cols)
    prod = (left * right).sum(-1).reshape(pat.values_shape)
    vals = input.values()
    vals = vals * beta if beta != 1 else vals
    return _FromValues.apply(vals + (prod * alpha if alpha != 1 else prod), pat)


def _name(dt) -> str:
    return {dtypes.float32: "Float", dtypes.float64: "Double", dtypes.float16: "Half",
            dtypes.bfloat16: "BFloat16"}.get(dt, str(dt))


def spdiags(diagonals: Tensor, offsets: Tensor, shape, layout=None):
    """A sparse 2-D tensor of ``shape`` with the rows of ``diagonals`` on the diagonals
    ``offsets`` (``torch.sparse.spdiags``, as SciPy's): element ``(i, i + offsets[k])`` is
    ``diagonals[k, i + offsets[k]]``, where in range. COO by default, or ``layout``
    ``sparse_csr`` / ``sparse_csc``. Differentiable in ``diagonals``.

    Example:
        >>> d = tg.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> tg.sparse.spdiags(d, tg.tensor([0, -1]), (3, 3)).to_dense().tolist()
        [[1.0, 0.0, 0.0], [4.0, 2.0, 0.0], [0.0, 5.0, 3.0]]
    """
    if layout not in (None, dtypes.sparse_coo, dtypes.sparse_csr, dtypes.sparse_csc):
        raise RuntimeError(f"Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, "
                           f"got {_NAME.get(layout, layout)}")
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2:
        raise RuntimeError(f"Output shape must be 2d, got {len(shape)}d")
    if diagonals.ndim > 2:
        raise RuntimeError(f"Diagonals must be vector or matrix, got {diagonals.ndim}d")
    if not isinstance(offsets, Tensor):
        from .ops.creation import tensor
        offsets = tensor(offsets, dtype=dtypes.int64)
    if offsets.ndim > 1:
        raise RuntimeError(f"Offsets must be scalar or vector, got {offsets.ndim}d")
    diags = diagonals.reshape(1, -1) if diagonals.ndim < 2 else diagonals
    offs = np.asarray(offsets.cpu().numpy(), np.int64).reshape(-1)
    if diags.shape[0] != len(offs):
        raise RuntimeError(f"Number of diagonals ({diags.shape[0]}) does not match the number "
                           f"of offsets ({len(offs)})")
    if len(np.unique(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    nrows, ncols = shape
    length = diags.shape[1]
    ks, rows, cols = [], [], []
    for k, off in enumerate(offs):
        lo, hi = max(0, -off), min(nrows, min(ncols, length) - off)
        i = np.arange(lo, max(lo, hi))
        ks.append(np.full(len(i), k))
        rows.append(i)
        cols.append(i + off)
    ks, rows, cols = (np.concatenate(a).astype(np.int64) for a in (ks, rows, cols))
    vals = diags[_index_tensor(ks, diags), _index_tensor(cols, diags)]
    out = _FromParts.apply(_index_tensor(np.stack([rows, cols]), diags), vals, shape,
                           len(rows) < 2)  # (PyTorch's says not coalesced, nnz < 2 aside)
    if layout in (None, dtypes.sparse_coo):
        return out
    return coo_to_compressed(out, layout)

