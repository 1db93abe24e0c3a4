"""Sparse compressed tensors: PyTorch's CSR, CSC, BSR and BSC layouts, and their autograd.

A compressed tensor of ``size`` (*batch, nrows, ncols, *dense) is a *pattern* and ``values``:

- the pattern (``_Pattern``): ``compressed_indices`` (*batch, ncompressed + 1), where the
  specified elements of compressed row (CSR, BSR) or column (CSC, BSC) ``i`` are those at
  ``compressed_indices[..., i]:compressed_indices[..., i + 1]``; ``plain_indices`` (*batch,
  nnz), their column (row) within it, sorted; the size, the layout and the block size;
- ``values`` (*batch, nnz, *blocksize, *dense): one value, or (BSR, BSC) one block, per
  specified element. Every batch holds the same nnz, as in PyTorch.

As the COO tensor (sparse.py), a ``SparseCompressedTensor`` has no dense data, and everything is
written over its values with the dense ops plus host bookkeeping of the indices with NumPy, so
it runs on whatever device the dense ops run on. Four primitives carry the rules:

- ``_FromValues``: (values, pattern) -> compressed tensor (PyTorch's
  SparseCompressedTensorBackward0); the gradient of the values is the incoming gradient read at
  the pattern.
- ``_ToDense``: compressed -> dense; the gradient is compressed with the input's pattern
  (PyTorch's masked rule: only the specified elements are variables).
- ``_Values``: compressed -> its values; the gradient is compressed with the same pattern.
- ``_FromDense`` (one subclass per layout): a dense tensor's ``to_sparse_csr()`` ...; the
  gradient is the incoming one's dense form (PyTorch's ToSparseCsrBackward0 and siblings).

Conversions between layouts permute the values (``index_select``) or read them from the dense
form, and products gather and ``index_add`` the values (sparse_ops.py's ``_spmm``), so they are
differentiated by composition. Only ``torch.mm``'s node has a rule of its own: its gradient for
the sparse operand is dense, as PyTorch's. The tensor and its factories are here;
the conversions from dense and COO tensors and between layouts (and the ``Tensor`` methods
``to_sparse_csr`` ...), the products, ``sampled_addmm`` and ``spdiags`` in
sparse_compressed_ops.py.
"""

from __future__ import annotations

import numpy as np

from ..runtime import dtype as dtypes
from .function import Function
from .sparse import (SPARSE_NODES, SparseBase, _densify, _FromParts, _index_tensor, _NoDense,
                     _read_at, check_sparse_tensor_invariants, takes_sparse)
from .tensor import Size, Tensor

__all__ = ["SparseCompressedTensor", "gradcheck_values", "is_compressed", "sparse_bsc_tensor",
           "sparse_bsr_tensor", "sparse_compressed_tensor", "sparse_csc_tensor",
           "sparse_csr_tensor"]

# layout -> (compressed indices' name, plain indices' name, blocked, rows compressed)
_INFO = {
    dtypes.sparse_csr: ("crow_indices", "col_indices", False, True),
    dtypes.sparse_csc: ("ccol_indices", "row_indices", False, False),
    dtypes.sparse_bsr: ("crow_indices", "col_indices", True, True),
    dtypes.sparse_bsc: ("ccol_indices", "row_indices", True, False),
}
# PyTorch's names of the layouts in its messages
_NAME = {dtypes.sparse_csr: "SparseCsr", dtypes.sparse_csc: "SparseCsc",
         dtypes.sparse_bsr: "SparseBsr", dtypes.sparse_bsc: "SparseBsc",
         dtypes.sparse_coo: "Sparse", dtypes.strided: "Strided"}
# the layout of the transpose (rows and columns trade places)
_TRANSPOSED = {dtypes.sparse_csr: dtypes.sparse_csc, dtypes.sparse_csc: dtypes.sparse_csr,
               dtypes.sparse_bsr: dtypes.sparse_bsc, dtypes.sparse_bsc: dtypes.sparse_bsr}
_NO_DENSE = {lay: _NoDense(str(lay).rsplit("_", 1)[-1]) for lay in _INFO}


def is_compressed(t) -> bool:
    """Whether ``t`` is a sparse tensor of a compressed layout (cheap: a type test)."""
    return type(t) is SparseCompressedTensor


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy(), dtype=np.int64)


# -- the pattern --------------------------------------------------------------------------------

class _Pattern:
    """Where a compressed tensor's values sit: its indices, size, layout and block size.
    Immutable, so shared by a tensor, its gradient, its detached and cast copies; the host
    coordinates it derives are cached."""

    __slots__ = ("cidx", "pidx", "size", "layout", "blocksize", "_blocks", "_index")

    def __init__(self, cidx: Tensor, pidx: Tensor, size, layout, blocksize=(1, 1)):
        self.cidx, self.pidx = cidx.detach(), pidx.detach()
        self.size, self.layout, self.blocksize = Size(size), layout, tuple(blocksize)
        self._blocks = self._index = None

    @property
    def n_batch(self) -> int:
        return self.cidx.ndim - 1

    @property
    def nnz(self) -> int:
        return self.pidx.shape[-1]

    @property
    def dense_shape(self) -> tuple:
        return tuple(self.size[self.n_batch + 2:])

    @property
    def values_shape(self) -> tuple:
        block = self.blocksize if _INFO[self.layout][2] else ()
        return (*self.size[:self.n_batch], self.nnz, *block, *self.dense_shape)

    def blocks(self) -> tuple:
        """(b, rows, cols) host arrays: for each specified element (block), in the values'
        order, its flat batch number and its (block) row and column."""
        if self._blocks is None:
            ci = _host(self.cidx).reshape(-1, self.cidx.shape[-1])
            pi = _host(self.pidx).reshape(ci.shape[0], -1)
            counts = np.diff(ci, axis=1)
            if (counts < 0).any() or (ci[:, -1] - ci[:, 0] != pi.shape[1]).any():
                raise RuntimeError(f"invalid {_INFO[self.layout][0]} (a tensor made with "
                                   f"check_invariants=False): its counts do not add up to nnz")
            comp = np.repeat(np.tile(np.arange(counts.shape[1]), ci.shape[0]), counts.ravel())
            b = np.repeat(np.arange(ci.shape[0]), pi.shape[1])
            plain = pi.ravel()
            self._blocks = (b, comp, plain) if _INFO[self.layout][3] else (b, plain, comp)
        return self._blocks

    def elements(self) -> tuple:
        """(b, rows, cols) host arrays of every element the values hold (a block's each), in
        the order of the values flattened over (*batch, nnz, *blocksize)."""
        b, r, c = self.blocks()
        if not _INFO[self.layout][2]:
            return b, r, c
        br, bc = self.blocksize
        r = r[:, None, None] * br + np.arange(br)[None, :, None]
        c = c[:, None, None] * bc + np.arange(bc)[None, None, :]
        return tuple(a.ravel() for a in np.broadcast_arrays(b[:, None, None], r, c))

    def index(self) -> Tensor:
        """The (n_batch + 2, N) int64 coordinates of ``elements()`` (a tensor on the
        indices' device)."""
        if self._index is None:
            b, r, c = self.elements()
            batch = np.unravel_index(b, tuple(self.size[:self.n_batch])) if self.n_batch \
                else ()
            self._index = _index_tensor(np.stack([*batch, r, c]).reshape(self.n_batch + 2, -1),
                                        self.cidx)
        return self._index

    def flat(self, values: Tensor) -> Tensor:
        """``values`` as (N, *dense), one row per element of ``index()``."""
        return values.reshape(-1, *self.dense_shape)

    def same(self, other: "_Pattern") -> bool:
        return self is other or (
            self.layout is other.layout and self.size == other.size
            and self.blocksize == other.blocksize and self.nnz == other.nnz
            and np.array_equal(_host(self.cidx), _host(other.cidx))
            and np.array_equal(_host(self.pidx), _host(other.pidx)))

    def to(self, device) -> "_Pattern":
        if self.cidx.device == device:
            return self
        return _Pattern(self.cidx.to(device), self.pidx.to(device), self.size, self.layout,
                        self.blocksize)


def _compress(b, rows, cols, batch_shape, grid, layout, like: Tensor) -> tuple:
    """The compressed and plain indices of the elements (blocks) at (b, rows, cols) of the
    (nrows, ncols) block ``grid`` in ``layout``, and the permutation that puts them in its
    order (host arrays in, the indices on ``like``'s device)."""
    rows_compressed = _INFO[layout][3]
    comp, plain = (rows, cols) if rows_compressed else (cols, rows)
    ncomp = grid[0] if rows_compressed else grid[1]
    n = int(np.prod(batch_shape, dtype=np.int64))
    perm = np.lexsort((plain, comp, b))
    per = np.bincount(b, minlength=n)
    if n and (per != per[0]).any():
        raise RuntimeError("Expect the same number of specified elements per batch.")
    nnz = int(per[0]) if n else 0
    cidx = np.zeros((n, ncomp + 1), np.int64)
    np.add.at(cidx, (b, comp + 1), 1)
    cidx = np.cumsum(cidx, axis=1).reshape(*batch_shape, ncomp + 1)
    pidx = plain[perm].reshape(*batch_shape, nnz)
    return (_index_tensor(cidx, like), _index_tensor(pidx, like)), perm


# -- the three primitives -----------------------------------------------------------------------

class _FromValues(Function):
    """(values, pattern) -> compressed tensor; the values' gradient is the incoming gradient
    (dense or sparse) read at the pattern."""

    @staticmethod
    def forward(ctx, values, pat):
        ctx.pat = pat
        return _new(pat, values)

    @staticmethod
    def backward(ctx, g):
        return _read(g, ctx.pat), None


class _ToDense(Function):
    """to_dense's node: the gradient is compressed with the input's pattern."""

    @staticmethod
    def forward(ctx, c):
        ctx.pat = pat = c._pat
        return _densify(pat.index(), pat.flat(c._vals), pat.size)

    @staticmethod
    def backward(ctx, g):
        return _deliver(ctx, ctx.pat, _read(g, ctx.pat))


class _Values(Function):
    """values()'s node: a gradient of the values is a compressed gradient, same pattern."""

    @staticmethod
    def forward(ctx, c):
        ctx.pat = c._pat
        return c._vals.detach()

    @staticmethod
    def backward(ctx, g):
        return _deliver(ctx, ctx.pat, g)


class _FromDense(Function):
    """A dense tensor's conversion (``x.to_sparse_csr()`` ...): the values read at the
    pattern; the gradient of ``x`` is the incoming gradient's dense form (PyTorch's
    ToSparseCsrBackward0 and siblings), so a compressed gradient stays masked and a dense one
    (``torch.mm``'s) passes whole."""

    @staticmethod
    def forward(ctx, x, pat):
        return _new(pat, _read_at(x.detach(), pat.index()).reshape(pat.values_shape))

    @staticmethod
    def backward(ctx, g):
        return (g.to_dense() if isinstance(g, SparseBase) else g), None


# one subclass per layout: the nodes print under PyTorch's names (ToSparseCsrBackward0 ...)
_FROM_DENSE = {lay: type(f"_ToSparse{_NAME[lay][6:]}", (_FromDense,), {}) for lay in _INFO}

SPARSE_NODES.update((_FromValues, _ToDense, _Values))
for _cls, _name in ((_FromValues, "SparseCompressedTensorBackward0"),
                    (_ToDense, "ToDenseBackward0"), (_Values, "ValuesBackward0"),
                    *((c, f"ToSparse{_NAME[lay][6:]}Backward0") for lay, c in _FROM_DENSE.items())):
    _cls._backward_cls.__name__ = _cls._backward_cls.__qualname__ = _name


def _deliver(ctx, pat: _Pattern, values: Tensor) -> Tensor:
    """A gradient (``values`` on ``pat``) for the node's one input: compressed when the node
    receiving it takes sparse gradients, else its dense form."""
    if takes_sparse(ctx, 0):
        return _FromValues.apply(values, pat)
    return _densify(pat.index(), pat.flat(values), pat.size)


def _read(g: Tensor, pat: _Pattern) -> Tensor:
    """``g``'s elements at ``pat`` as a tensor of ``pat``'s values' shape (``g`` dense, COO or
    compressed; an element ``g`` does not specify reads as zero)."""
    if is_compressed(g):
        if g._pat.same(pat):
            return g.values()
        g = g.to_dense()
    return _read_at(g, pat.index().to(g.device)).reshape(pat.values_shape)


def _new(pat: _Pattern, values: Tensor) -> "SparseCompressedTensor":
    """A compressed tensor of ``values`` on ``pat`` (the values taken without history)."""
    t = object.__new__(SparseCompressedTensor)
    t._data = _NO_DENSE[pat.layout]
    t._device, t._dtype = values._device, values._dtype
    t._requires_grad, t._fn, t._base, t._vc = False, None, None, [0]
    t._pat, t._vals, t._size = pat, values.detach(), pat.size
    return t


# -- the tensor ---------------------------------------------------------------------------------

class SparseCompressedTensor(SparseBase):
    """A sparse tensor of layout CSR, CSC, BSR or BSC; made by ``tritongrad.sparse_csr_tensor``
    and its siblings, or ``Tensor.to_sparse_csr`` / ``to_sparse_csc`` / ``to_sparse_bsr`` /
    ``to_sparse_bsc``.

    Example:
        >>> c = tg.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1., 2., 3.], (2, 3))
        >>> c.to_dense().tolist()
        [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]
    """

    # Fields (in the instance __dict__): _pat (the pattern), _vals, _size (the pattern's).
    is_sparse = property(lambda self: False)  # (PyTorch's: True for COO only)
    is_sparse_csr = property(lambda self: self._pat.layout is dtypes.sparse_csr)

    @property
    def layout(self):
        return self._pat.layout

    # -- parts --------------------------------------------------------------------------------
    def _indices_named(self, name: str, compressed: bool, rows_compressed: bool) -> Tensor:
        if _INFO[self.layout][3] is not rows_compressed:
            kind = "row" if rows_compressed else "column"
            raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but got "
                               f"{_NAME[self.layout]}")
        return self._pat.cidx if compressed else self._pat.pidx

    def crow_indices(self) -> Tensor:
        """The compressed row indices (*batch, nrows + 1) of a CSR or BSR tensor."""
        return self._indices_named("crow_indices", True, True)

    def col_indices(self) -> Tensor:
        """The column indices (*batch, nnz) of a CSR or BSR tensor."""
        return self._indices_named("col_indices", False, True)

    def ccol_indices(self) -> Tensor:
        """The compressed column indices (*batch, ncols + 1) of a CSC or BSC tensor."""
        return self._indices_named("ccol_indices", True, False)

    def row_indices(self) -> Tensor:
        """The row indices (*batch, nnz) of a CSC or BSC tensor."""
        return self._indices_named("row_indices", False, False)

    def values(self) -> Tensor:
        """The (*batch, nnz, *blocksize, *dense) values (differentiable)."""
        return _Values.apply(self)

    def indices(self):
        raise RuntimeError(f"indices expected sparse coordinate tensor layout but got "
                           f"{_NAME[self.layout]}")

    def _nnz(self) -> int:
        """The number of specified elements (blocks, for BSR and BSC) per batch."""
        return self._pat.nnz

    def sparse_dim(self) -> int:
        """2: the rows and columns (batch dims count neither as sparse nor as dense)."""
        return 2

    def dense_dim(self) -> int:
        """How many trailing dimensions each value carries."""
        return len(self._pat.dense_shape)

    # -- conversions --------------------------------------------------------------------------
    _densify = _ToDense  # (SparseBase.to_dense)

    def to_sparse(self, sparse_dim: int | None = None, *, layout=None, blocksize=None,
                  dense_dim=None) -> SparseBase:
        """This tensor in ``layout`` (COO by default; ``sparse_dim``, for COO only, must be
        the batch and the two compressed dims); ``blocksize`` for BSR and BSC."""
        layout = dtypes.sparse_coo if layout is None else layout
        if sparse_dim is not None:
            if layout is not dtypes.sparse_coo:
                raise TypeError("to_sparse() with a layout takes no sparse_dim")
            if sparse_dim != self._pat.n_batch + 2:
                raise RuntimeError(f"sparse_compressed_to_sparse: conversion from "
                                   f"{_NAME[self.layout]} to Sparse with sparse_dim argument "
                                   f"!={self._pat.n_batch + 2} is not supported")
        if layout is dtypes.sparse_coo:
            if blocksize is not None:
                raise RuntimeError(f"sparse_compressed_to_sparse: conversion from "
                                   f"{_NAME[self.layout]} to Sparse with blocksize argument "
                                   f"given is not supported")
            return self._to_coo()
        from .sparse_compressed_ops import check_to_sparse, compressed_to
        check_to_sparse(self, layout, blocksize)
        return compressed_to(self, layout, blocksize, dense_dim, "to_sparse")

    def to_sparse_coo(self) -> SparseBase:
        """This tensor as a COO tensor (``to_sparse()``)."""
        return self._to_coo()

    def to_sparse_csr(self, dense_dim=None) -> "SparseCompressedTensor":
        from .sparse_compressed_ops import compressed_to
        return compressed_to(self, dtypes.sparse_csr, None, dense_dim, "to_sparse_csr")

    def to_sparse_csc(self, dense_dim=None) -> "SparseCompressedTensor":
        from .sparse_compressed_ops import compressed_to
        return compressed_to(self, dtypes.sparse_csc, None, dense_dim, "to_sparse_csc")

    def to_sparse_bsr(self, blocksize, dense_dim=None) -> "SparseCompressedTensor":
        from .sparse_compressed_ops import compressed_to
        return compressed_to(self, dtypes.sparse_bsr, blocksize, dense_dim, "to_sparse_bsr")

    def to_sparse_bsc(self, blocksize, dense_dim=None) -> "SparseCompressedTensor":
        from .sparse_compressed_ops import compressed_to
        return compressed_to(self, dtypes.sparse_bsc, blocksize, dense_dim, "to_sparse_bsc")

    def _to_coo(self) -> SparseBase:
        """The COO tensor of the same elements (batch, row and column dims sparse; a block's
        elements each one entry), coalesced for CSR."""
        pat = self._pat
        # (CSR's elements are in row-major order, and so are those of BSR with 1 x 1 blocks,
        # which PyTorch flags coalesced too; larger blocks' are not)
        row_major = pat.layout is dtypes.sparse_csr or (
            pat.layout is dtypes.sparse_bsr and pat.blocksize == (1, 1))
        return _FromParts.apply(pat.index(), pat.flat(self.values()), pat.size, row_major)

    def detach(self) -> "SparseCompressedTensor":
        return _new(self._pat, self._vals)

    def clone(self, *, memory_format=None) -> "SparseCompressedTensor":
        pat = self._pat
        return _FromValues.apply(self.values().clone(), _Pattern(
            pat.cidx.clone(), pat.pidx.clone(), pat.size, pat.layout, pat.blocksize))

    def to(self, *args, **kwargs) -> "SparseCompressedTensor":
        """A copy with the values moved or cast (``to(dtype)``, ``to(device)``, ...)."""
        vals = self.values().to(*args, **kwargs)
        if vals.device == self.device and vals.dtype is self.dtype and \
                not kwargs.get("copy", False):
            return self
        return _FromValues.apply(vals, self._pat.to(vals.device))

    def t(self) -> "SparseCompressedTensor":
        """The transpose of a matrix: CSR <-> CSC, BSR <-> BSC over the same indices (each
        block transposed)."""
        if self._pat.n_batch or self.dense_dim():
            raise RuntimeError(f"t: expected a 2-D {_NAME[self.layout]} matrix without batch or "
                               f"dense dims, got size {list(self.shape)}")
        return self.transpose(0, 1)

    def transpose(self, dim0: int, dim1: int) -> "SparseCompressedTensor":
        """Swaps the row and column dims (any other pair of dims is not supported)."""
        from .tensor import wrap_dim
        pat, nb = self._pat, self._pat.n_batch
        dims = sorted(wrap_dim(d, self.ndim, "transpose") for d in (dim0, dim1))
        if dims[0] == dims[1]:
            return self
        if dims != [nb, nb + 1]:
            raise RuntimeError(f"transpose: of a {_NAME[self.layout]} tensor only the row and "
                               f"column dims ({nb}, {nb + 1}) can be swapped, got {dims}")
        size = list(pat.size)
        size[nb], size[nb + 1] = size[nb + 1], size[nb]
        vals = self.values()
        if _INFO[pat.layout][2]:
            vals = vals.transpose(nb + 1, nb + 2)
        return _FromValues.apply(vals, _Pattern(pat.cidx, pat.pidx, size,
                                                _TRANSPOSED[pat.layout], pat.blocksize[::-1]))

    # -- arithmetic ---------------------------------------------------------------------------
    def _map(self, f) -> "SparseCompressedTensor":
        """``f`` of the values, on the same pattern."""
        return _FromValues.apply(f(self.values()), self._pat)

    def __mul__(self, other):
        """``self * other`` by a scalar or a dense tensor that broadcasts to ``self``'s shape
        (read at the specified elements): compressed, with ``self``'s pattern."""
        if isinstance(other, (int, float, bool)) or (type(other) is Tensor and other.ndim == 0):
            return self._map(lambda v: v * other)
        if type(other) is Tensor:
            try:
                full = other.expand(*self.shape)
            except RuntimeError:
                raise RuntimeError(f"mul: the dense operand of shape {list(other.shape)} does "
                                   f"not broadcast to the sparse operand's "
                                   f"{list(self.shape)}") from None
            return self._map(lambda v: v * _read(full, self._pat).to(v.dtype))
        if isinstance(other, SparseBase) and _INFO[self.layout][2] is False and \
                not _INFO.get(other.layout, (0, 0, False))[2]:
            return self._mul_sparse(other)
        return NotImplemented if not isinstance(other, Tensor) else _refuse("mul", self, other)

    __rmul__ = mul = __mul__

    def _mul_sparse(self, other: SparseBase) -> "SparseCompressedTensor":
        """``self * other`` of a CSR or CSC ``self`` and a CSR, CSC or COO ``other``, in
        ``self``'s layout, as PyTorch's: the elements both specify when ``other`` has
        ``self``'s layout or is a coalesced COO tensor; else on ``other``'s pattern (each of
        its elements the product there). Differentiable in both."""
        from ..runtime.dtype import result_type
        from .sparse_compressed_ops import coo_to_compressed, compressed_to
        if tuple(other.shape) != tuple(self.shape):
            raise RuntimeError(f"mul: expected operands of one size, got {list(self.shape)} "
                               f"and {list(other.shape)}")
        coo = other.layout is dtypes.sparse_coo
        if other.layout is self.layout or (coo and other.is_coalesced()):
            both = self._to_coo() * (other if coo else other.to_sparse_coo())
            return coo_to_compressed(both, self.layout, None, self.dense_dim())
        dt = result_type(self, other)
        o = coo_to_compressed(other.coalesce(), self.layout, None, other.dense_dim()) if coo \
            else compressed_to(other, self.layout, None, None, "mul")
        return o.to(dt) * self.to_dense().to(dt)

    def __truediv__(self, other):
        if isinstance(other, (int, float)) or (type(other) is Tensor and other.ndim == 0):
            return self._map(lambda v: v / other)
        return NotImplemented if not isinstance(other, Tensor) else _refuse("div", self, other)

    div = __truediv__

    def __neg__(self) -> "SparseCompressedTensor":
        return self._map(lambda v: -v)

    neg = __neg__

    def add(self, other, *, alpha=1):
        """compressed + compressed of one layout is compressed (the union of the patterns);
        compressed + dense is dense."""
        if not isinstance(other, Tensor):
            return _refuse("add", self, other)
        if alpha != 1:
            other = other * alpha
        if not isinstance(other, SparseBase):
            return self.to_dense() + other
        if tuple(other.shape) != tuple(self.shape) or other.layout is not self.layout:
            raise RuntimeError(f"add: expected two {_NAME[self.layout]} tensors of one size, "
                               f"got {_NAME[other.layout]} of size {list(other.shape)} and "
                               f"size {list(self.shape)}")
        if self._pat.same(other._pat):
            return _FromValues.apply(self.values() + other.values(), self._pat)
        from .sparse_compressed_ops import coo_to_compressed, dense_to_compressed
        if _INFO[self.layout][2]:
            total = self.to_dense() + other.to_dense()
            return dense_to_compressed(total, self.layout, self._pat.blocksize,
                                       self.dense_dim(), "add")
        return coo_to_compressed(self._to_coo() + other._to_coo(), self.layout, None,
                                 self.dense_dim())

    def __add__(self, other):
        return self.add(other) if isinstance(other, Tensor) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        return self.add(-other) if isinstance(other, Tensor) else NotImplemented

    sub = __sub__

    def __rsub__(self, other):
        return (-self).add(other) if isinstance(other, Tensor) else NotImplemented

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        """The sum of all elements (a dense 0-d tensor); over ``dim``: of the dense form."""
        if dim is None and not keepdim:
            vals = self.values()
            return (vals if dtype is None else vals.to(dtype)).sum()
        return self.to_dense().sum(dim, keepdim=keepdim, dtype=dtype)

    def mm(self, mat2: Tensor) -> Tensor:
        """``torch.mm(self, mat2)``: dense; the gradient of ``self`` dense, as PyTorch's."""
        from .sparse_compressed_ops import mm_dense_grad
        return mm_dense_grad(self, mat2, "mm")

    def matmul(self, other: Tensor) -> Tensor:
        """``self @ other`` for a dense matrix or vector ``other`` (a batched CSR tensor times
        a batch of matrices too)."""
        from .sparse_compressed_ops import mm_dense_grad
        return mm_dense_grad(self, other, "matmul")

    __matmul__ = matmul

    def __rmatmul__(self, other: Tensor) -> Tensor:
        """``dense @ self``: ``(self^T @ dense^T)^T``."""
        if not isinstance(other, Tensor) or isinstance(other, SparseBase):
            return NotImplemented
        from .sparse_compressed_ops import mm_dense_grad
        if other.ndim == 1:
            return mm_dense_grad(self.transpose(-2, -1), other, "matmul")
        return mm_dense_grad(self.transpose(-2, -1), other.transpose(-2, -1),
                             "matmul").transpose(-2, -1)

    # -- printing, pickling --------------------------------------------------------------------
    def __repr__(self) -> str:
        from .printing import _part, _with_suffixes, sparse_suffixes
        cname, pname = _INFO[self.layout][:2]
        pre = len("tensor(")
        body = ("tensor(" + cname + "=" + _part(self._pat.cidx, pre + len(cname) + 8) + ",\n"
                + " " * pre + pname + "=" + _part(self._pat.pidx, pre + len(pname) + 8)
                + ",\n" + " " * pre + "values=" + _part(self._vals, pre + len("values=tensor(")))
        return _with_suffixes(body, sparse_suffixes(self), pre, force_newline=False)

    __str__ = __repr__

    def __reduce_ex__(self, protocol: int):
        pat = self._pat
        return (_rebuild, (pat.cidx, pat.pidx, self._vals.detach(), tuple(pat.size), pat.layout,
                           pat.blocksize, self._requires_grad))

    def __deepcopy__(self, memo: dict) -> "SparseCompressedTensor":
        if id(self) not in memo:
            pat = self._pat
            out = _new(_Pattern(pat.cidx.clone(), pat.pidx.clone(), pat.size, pat.layout,
                                pat.blocksize), self._vals.clone())
            out._requires_grad = self._requires_grad
            memo[id(self)] = out
        return memo[id(self)]


def _rebuild(cidx, pidx, values, size, layout, blocksize, requires_grad):
    t = _new(_Pattern(cidx, pidx, size, layout, blocksize), values)
    t._requires_grad = requires_grad
    return t


def _refuse(op: str, a, b):
    kinds = ", ".join(str(x.layout).rsplit(".", 1)[-1] if isinstance(x, Tensor)
                      else type(x).__name__ for x in (a, b))
    raise NotImplementedError(f"{op}: not supported for these operands ({kinds}) with a sparse "
                              f"compressed tensor; see docs/sparse.md for the sparse ops")


def gradcheck_values(t: SparseCompressedTensor, masked: bool) -> tuple:
    """For ``gradcheck`` (gradcheck.py's ``_sparse_as_values``): a dense tensor of the values
    ``t`` is checked at, and the function that rebuilds a tensor like ``t`` from them. With
    ``masked``, the specified values (the only variables of a masked function); otherwise every
    element, on a pattern that specifies all of them (so the Jacobian is the dense one)."""
    pat = t._pat
    if masked:
        return t._vals.detach(), lambda v: _FromValues.apply(v, pat)
    from .ops.creation import ones
    full = ones(tuple(pat.size), dtype=t.dtype, device=t.device).to_sparse(
        layout=pat.layout, blocksize=pat.blocksize if _INFO[pat.layout][2] else None,
        dense_dim=len(pat.dense_shape))
    every = full._pat
    return _read(t.detach().to_dense(), every).detach(), lambda v: _FromValues.apply(v, every)


# -- construction -------------------------------------------------------------------------------

def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, requires_grad: bool = False,
                             check_invariants=None) -> SparseCompressedTensor:
    """A sparse tensor in the compressed ``layout`` (``sparse_csr``, ``sparse_csc``,
    ``sparse_bsr`` or ``sparse_bsc``) with ``values`` at the given indices.

    Args:
        compressed_indices: (*batch, ncompressed + 1) integer tensor (or lists): the specified
            elements of compressed row (column) ``i`` are ``compressed_indices[..., i]`` to
            ``compressed_indices[..., i + 1]``.
        plain_indices: (*batch, nnz) their column (row) indices, sorted within each row.
        values: (*batch, nnz, *blocksize, *dense) values; a tensor keeps its history, so the
            result is differentiable in it.
        size: the full shape (*batch, nrows, ncols, *dense); inferred if None.
        dtype, device: of the values (default: the values').
        layout: required.
        requires_grad: make the result a leaf that requires grad.
        check_invariants: check the indices (PyTorch's rules and messages); None:
            ``tritongrad.sparse.check_sparse_tensor_invariants``'s setting (on by default).

    Example:
        >>> c = tg.sparse_compressed_tensor([0, 1, 2], [1, 0], [5., 6.], (2, 2),
        ...                                 layout=tg.sparse_csc)
        >>> c.to_dense().tolist()
        [[0.0, 6.0], [5.0, 0.0]]
    """
    if layout not in _INFO:
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {'none' if layout is None else _NAME.get(layout, layout)}")
    return _make("sparse_compressed_tensor", layout, compressed_indices, plain_indices, values,
                 size, dtype, device, requires_grad, check_invariants)


def _factory(layout):
    cname, pname, blocked, _ = _INFO[layout]
    kind = str(layout).rsplit("_", 1)[-1]

    def factory(compressed_indices, plain_indices, values, size=None, *, dtype=None,
                device=None, requires_grad: bool = False,
                check_invariants=None) -> SparseCompressedTensor:
        return _make(f"sparse_{kind}_tensor", layout, compressed_indices, plain_indices, values,
                     size, dtype, device, requires_grad, check_invariants)

    factory.__name__ = factory.__qualname__ = f"sparse_{kind}_tensor"
    factory.__doc__ = (
        f"A {kind.upper()} tensor (layout ``tritongrad.sparse_{kind}``): "
        f"``sparse_compressed_tensor(...)`` with ``{cname}`` (*batch, n + 1) and ``{pname}`` "
        f"(*batch, nnz) as the compressed and plain indices"
        + (", and ``values`` (*batch, nnz, *blocksize, *dense) holding one block per entry"
           if blocked else "") + " (PyTorch's ``torch.sparse_" + kind + "_tensor``).")
    return factory


sparse_csr_tensor = _factory(dtypes.sparse_csr)
sparse_csc_tensor = _factory(dtypes.sparse_csc)
sparse_bsr_tensor = _factory(dtypes.sparse_bsr)
sparse_bsc_tensor = _factory(dtypes.sparse_bsc)


def _as_index(a, like: Tensor) -> Tensor:
    from .ops.creation import tensor
    if not isinstance(a, Tensor):
        a = tensor(a, dtype=dtypes.int64, device=like.device)
    return a.to(like.device)


def _make(op, layout, cidx, pidx, values, size, dtype, device, requires_grad,
          check_invariants) -> SparseCompressedTensor:
    from .ops.creation import tensor
    cname, pname, blocked, rows_compressed = _INFO[layout]
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype, device=device)
    elif dtype is not None or device is not None:
        values = values.to(device=device if device is not None else values.device,
                           dtype=dtype if dtype is not None else values.dtype)
    cidx, pidx = _as_index(cidx, values), _as_index(pidx, values)
    if cidx.dtype is not pidx.dtype:
        raise RuntimeError(f"{cname} and {pname} must have the same dtype, bot got "
                           f"{_dtype_name(cidx.dtype)} and {_dtype_name(pidx.dtype)}, "
                           f"respectively")
    if cidx.dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError(f"{cname} and {pname} dtype must be Int or Long, but got "
                           f"{_dtype_name(cidx.dtype)}")
    if cidx.ndim < 1:
        raise RuntimeError(f"{cname} must have dimensionality >= 1 but got {cidx.ndim}")
    if cidx.ndim != pidx.ndim:
        raise RuntimeError(f"{cname} and {pname} dimensionalities must be equal but got "
                           f"{cidx.ndim} and {pidx.ndim}, respectively")
    nb, block_nd = cidx.ndim - 1, 2 if blocked else 0
    if values.ndim <= nb + block_nd:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block "
                           f"dimensionalities (={nb} + {block_nd}) but got {values.ndim}")
    bs = tuple(values.shape[nb + 1:nb + 3]) if blocked else (1, 1)
    dense_shape = tuple(values.shape[nb + 1 + block_nd:])
    nnz = values.shape[nb]
    if size is None:
        ncomp = cidx.shape[-1] - 1
        nplain = int(_host(pidx).max()) + 1 if pidx.numel() else 0
        nr, nc = (ncomp, nplain) if rows_compressed else (nplain, ncomp)
        size = (*cidx.shape[:-1], nr * bs[0], nc * bs[1], *dense_shape)
    size = tuple(int(s) for s in ((size,) if isinstance(size, int) else size))
    if len(size) != nb + 2 + len(dense_shape):
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense "
                           f"dimensionalities (={nb} + 2 + {len(dense_shape)}) but got "
                           f"{len(size)}")
    batch = [list(cidx.shape[:-1]), list(pidx.shape[:-1]), list(values.shape[:nb])]
    if any(b != list(size[:nb]) for b in batch):
        raise RuntimeError(f"all batch dimensions of {cname} (={batch[0]}), {pname} "
                           f"(={batch[1]}), and values (={batch[2]}) must be equal to tensor "
                           f"batch dimensions (={list(size[:nb])})")
    if dense_shape != tuple(size[nb + 2:]):
        raise RuntimeError(f"{op}: values' dense dims {list(dense_shape)} must match the size's "
                           f"{list(size[nb + 2:])}")
    for i in (0, 1):
        if size[nb + i] % bs[i]:
            raise RuntimeError(f"tensor shape[{nb + i}] (={size[nb + i]}) must be divisible with "
                               f"blocksize[{i}] (={bs[i]}) as defined by values shape")
    nrows, ncols = size[nb] // bs[0], size[nb + 1] // bs[1]
    ncomp, nplain = (nrows, ncols) if rows_compressed else (ncols, nrows)
    unit = ("row" if rows_compressed else "column") + (" blocks" if blocked else "s")
    if cidx.shape[-1] != ncomp + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {unit} + 1 "
                           f"(={ncomp + 1}), but got {cidx.shape[-1]}")
    if pidx.shape[-1] != nnz:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by "
                           f"values.shape[{nb}], but got {pidx.shape[-1]}")
    if check_invariants is None:
        check_invariants = check_sparse_tensor_invariants.is_enabled()
    if check_invariants:
        _check_indices(_host(cidx).reshape(-1, ncomp + 1), _host(pidx).reshape(-1, nnz), nnz,
                       nplain, cname, pname, rows_compressed)
    out = _FromValues.apply(values, _Pattern(cidx, pidx, size, layout, bs))
    if requires_grad and out._fn is None:  # (values with history: PyTorch keeps it)
        out.requires_grad_()
    return out


def _dtype_name(dt) -> str:
    return {dtypes.int64: "Long", dtypes.int32: "Int", dtypes.float32: "Float",
            dtypes.float64: "Double"}.get(dt, str(dt))


def _check_indices(ci, pi, nnz, nplain, cname, pname, rows_compressed) -> None:
    """PyTorch's invariants of compressed indices (batches flattened), in its words."""
    count, n_other = ("ncols", "nrows") if rows_compressed else ("nrows", "ncols")
    if ci.size and (ci[:, 0] != 0).any():
        raise RuntimeError(f"`{cname}[..., 0] == 0` is not satisfied.")
    if ci.size and (ci[:, -1] != nnz).any():
        raise RuntimeError(f"`{cname}[..., -1] == nnz` is not satisfied.")
    d = np.diff(ci, axis=1)
    if ((d < 0) | (d > nplain)).any():
        raise RuntimeError(f"`0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {count}` is not "
                           f"satisfied.")
    if pi.size and ((pi < 0) | (pi >= nplain)).any():
        raise RuntimeError(f"`0 <= {pname} < {count}` is not satisfied.")
    # within a compressed row, the plain indices increase: a step down or a repeat is allowed
    # only where a new row starts
    starts = np.zeros(pi.shape, bool)
    for b in range(ci.shape[0]):
        starts[b, ci[b, :-1][ci[b, :-1] < nnz]] = True
    if (~starts[:, 1:] & (np.diff(pi, axis=1) <= 0)).any():
        raise RuntimeError(f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = 1, "
                           f"..., {n_other} are sorted and distinct along the last dimension "
                           f"values` is not satisfied.")
