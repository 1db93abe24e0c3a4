"""Sparse compressed tensors (autograd/sparse_compressed.py, sparse_compressed_ops.py): round
trips dense <-> CSR, CSC, BSR, BSC (hypothesis over shapes, densities, block sizes, batch and
dense dims) with the indices checked against NumPy references, conversions between layouts,
the factories' invariant checks and messages, products against float64 NumPy, gradients by
finite differences (the masked rule: only the specified elements are variables), printing,
pickling; and, where torch is installed, the same against PyTorch."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tritongrad.autograd import gradcheck
from tritongrad.autograd import sparse as coo
from tritongrad.autograd.sparse_compressed import (sparse_bsc_tensor, sparse_bsr_tensor,
                                                   sparse_compressed_tensor, sparse_csc_tensor,
                                                   sparse_csr_tensor)
from tests.helpers import numeric_grads

LAYOUTS = [tg.sparse_csr, tg.sparse_csc, tg.sparse_bsr, tg.sparse_bsc]
BLOCKED = {tg.sparse_bsr, tg.sparse_bsc}
ROWS = {tg.sparse_csr, tg.sparse_bsr}  # the layouts that compress rows


def _convert(x, layout, blocksize=None, dense_dim=None):
    name = "to_sparse_" + str(layout).rsplit("_", 1)[-1]
    if layout in BLOCKED:
        return getattr(x, name)(blocksize, dense_dim=dense_dim)
    return getattr(x, name)(dense_dim=dense_dim)


def _ref_indices(a: np.ndarray, nb: int, layout, blocksize=(1, 1)):
    """NumPy's compressed indices of the array ``a`` (*batch, nrows, ncols, *dense): the blocks
    with a nonzero element, compressed along rows (or columns), per batch."""
    batch = a.shape[:nb]
    flat = a.reshape(int(np.prod(batch, dtype=np.int64)), *a.shape[nb:])
    crows, plains = [], []
    for m in flat:
        br, bc = blocksize
        nr, nc = m.shape[0] // br, m.shape[1] // bc
        mask = np.zeros((nr, nc), bool)
        for i in range(nr):
            for j in range(nc):
                mask[i, j] = (m[i * br:(i + 1) * br, j * bc:(j + 1) * bc] != 0).any()
        if layout not in ROWS:
            mask = mask.T
        crows.append(np.concatenate([[0], np.cumsum(mask.sum(1))]))
        plains.append(np.nonzero(mask)[1])
    return (np.array(crows).reshape(*batch, -1),
            np.array(plains, dtype=np.int64).reshape(*batch, -1))


def _sparse_array(rng, shape, density, nb, blocksize=(1, 1), dense_dims=0):
    """A random array whose blocks are zero or not with probability ``density``, with the same
    number of nonzero blocks in every batch (PyTorch's requirement)."""
    batch, (nr, nc) = shape[:nb], shape[nb:nb + 2]
    br, bc = blocksize
    grid = (nr // br, nc // bc)
    pattern = rng.random(grid) < density  # (one pattern for all batches: equal counts)
    mask = np.kron(pattern, np.ones(blocksize)).astype(bool)
    mask = mask.reshape(mask.shape + (1,) * dense_dims)
    vals = rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)
    return np.where(np.broadcast_to(mask, shape), vals, 0.0)


# -- round trips --------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), nb=st.integers(0, 2), dense_dims=st.integers(0, 1),
       grid=st.tuples(st.integers(0, 4), st.integers(0, 4)),
       blocksize=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       density=st.sampled_from([0.0, 0.3, 0.7, 1.0]), seed=st.integers(0, 2 ** 16))
def test_round_trip_dense(layout, nb, dense_dims, grid, blocksize, density, seed):
    rng = np.random.default_rng(seed)
    bs = blocksize if layout in BLOCKED else (1, 1)
    shape = (2, 3)[:nb] + (grid[0] * bs[0], grid[1] * bs[1]) + (2,) * dense_dims
    a = _sparse_array(rng, shape, density, nb, bs, dense_dims)
    x = tg.tensor(a, dtype=tg.float64)
    c = _convert(x, layout, bs if layout in BLOCKED else None, dense_dims)
    assert c.layout is layout and c.shape == shape
    assert (c.sparse_dim(), c.dense_dim()) == (2, dense_dims)
    cref, pref = _ref_indices(a.any(axis=tuple(range(a.ndim - dense_dims, a.ndim)))
                              if dense_dims else a, nb, layout, bs)
    cname = "crow_indices" if layout in ROWS else "ccol_indices"
    pname = "col_indices" if layout in ROWS else "row_indices"
    np.testing.assert_array_equal(getattr(c, cname)().numpy(), cref)
    np.testing.assert_array_equal(getattr(c, pname)().numpy(), pref)
    assert c._nnz() == pref.shape[-1]
    assert c.values().shape == (*shape[:nb], c._nnz(), *(bs if layout in BLOCKED else ()),
                                *shape[nb + 2:])
    np.testing.assert_array_equal(c.to_dense().numpy(), a)
    # through COO and back
    np.testing.assert_array_equal(c.to_sparse().to_dense().numpy(), a)
    if layout not in BLOCKED:
        back = _convert(c.to_sparse(), layout)
        np.testing.assert_array_equal(getattr(back, pname)().numpy(), pref)
        np.testing.assert_array_equal(back.to_dense().numpy(), a)
    # to the layout with the other compressed dim, and back
    other = {tg.sparse_csr: tg.sparse_csc, tg.sparse_csc: tg.sparse_csr,
             tg.sparse_bsr: tg.sparse_bsc, tg.sparse_bsc: tg.sparse_bsr}[layout]
    flipped = _convert(c, other, bs if layout in BLOCKED else None)
    assert flipped.layout is other and flipped._nnz() == c._nnz()
    np.testing.assert_array_equal(flipped.to_dense().numpy(), a)
    again = _convert(flipped, layout, bs if layout in BLOCKED else None)
    np.testing.assert_array_equal(again.values().numpy(), c.values().numpy())


def test_unequal_batches_and_bad_blocks_refused():
    x = tg.tensor([[[1., 0], [0, 0]], [[1, 1], [0, 0]]])
    for layout in LAYOUTS:
        with pytest.raises(RuntimeError, match="same number of specified elements per batch"):
            _convert(x, layout, (1, 1) if layout in BLOCKED else None)
    with pytest.raises(RuntimeError, match=r"size \(4,4\) must be divisible by given blocksize "
                                           r"\(3,3\)"):
        tg.ones(4, 4).to_sparse_bsr((3, 3))
    with pytest.raises(RuntimeError, match=r"dense_dim argument must be in \[0,0\] range, but 1"):
        tg.ones(4, 4).to_sparse_csr(dense_dim=1)


def test_conversions_between_layouts():
    d = tg.tensor([[1., 0, 2, 0], [0, 0, 3, 4], [5, 0, 0, 0], [0, 0, 0, 6]])
    c = d.to_sparse_csr()
    assert c.to_sparse_csr() is c
    assert d.to_sparse(layout=tg.sparse_csr).layout is tg.sparse_csr
    b = c.to_sparse(layout=tg.sparse_bsr, blocksize=(2, 2))
    assert b.layout is tg.sparse_bsr and b.values().shape == (4, 2, 2)
    np.testing.assert_array_equal(b.to_sparse_bsc((2, 2)).to_dense().numpy(), d.numpy())
    np.testing.assert_array_equal(d.to_sparse().to_sparse_bsr((2, 2)).to_dense().numpy(),
                                  d.numpy())
    from_coo = d.to_sparse().to_sparse(layout=tg.sparse_csc)
    assert from_coo.layout is tg.sparse_csc
    np.testing.assert_array_equal(from_coo.to_dense().numpy(), d.numpy())
    assert d.to_sparse_bsr(2).values().shape == (4, 2, 2)  # (an int blocksize: square blocks)
    coo_t = b.to_sparse_coo()
    assert coo_t.layout is tg.sparse_coo and coo_t._nnz() == 16  # (every element of 4 blocks)
    with pytest.raises(RuntimeError, match="expected SparseCsr or SparseCsc layout but got "
                                           "SparseBsr"):
        b.to_sparse_csr()
    with pytest.raises(RuntimeError, match=r"blocksize changed from \[2, 2\] to \[1, 1\]"):
        b.to_sparse_bsr((1, 1))
    with pytest.raises(RuntimeError, match="without blocksize argument"):
        c.to_sparse(layout=tg.sparse_bsr)
    with pytest.raises(RuntimeError, match="with dense_dim argument given is not supported"):
        c.to_sparse_csr(dense_dim=1)
    # the transpose: CSR <-> CSC over the same indices
    t = c.t()
    assert t.layout is tg.sparse_csc and t.ccol_indices().tolist() == c.crow_indices().tolist()
    np.testing.assert_array_equal(t.to_dense().numpy(), d.numpy().T)
    np.testing.assert_array_equal(b.t().to_dense().numpy(), d.numpy().T)


# -- factories and their checks ---------------------------------------------------------------

def test_factories_and_parts():
    c = sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1., 2., 3.], (2, 3))
    assert c.layout is tg.sparse_csr and c.shape == (2, 3) and c.dtype is tg.float32
    assert not c.is_sparse and c.is_sparse_csr and not c.to_sparse_csc().is_sparse_csr
    assert (c._nnz(), c.sparse_dim(), c.dense_dim(), c.dim(), c.numel(), len(c)) == \
        (3, 2, 0, 2, 6, 2)
    np.testing.assert_array_equal(c.to_dense().numpy(), [[1, 0, 2], [0, 3, 0]])
    assert sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1., 2., 3.]).shape == (2, 3)  # inferred
    c64 = sparse_csr_tensor(tg.tensor([0, 1], dtype=tg.int32), tg.tensor([0], dtype=tg.int32),
                            [2.], (1, 1), dtype=tg.float64)
    assert c64.dtype is tg.float64 and c64.crow_indices().dtype is tg.int32
    s = sparse_csc_tensor([0, 1, 2], [1, 0], [5., 6.], (2, 2))
    np.testing.assert_array_equal(s.to_dense().numpy(), [[0, 6], [5, 0]])
    assert s.ccol_indices().tolist() == [0, 1, 2] and s.row_indices().tolist() == [1, 0]
    b = sparse_bsr_tensor([0, 1, 2], [0, 1], tg.arange(8.).reshape(2, 2, 2), (4, 4))
    ref = np.zeros((4, 4))
    ref[:2, :2], ref[2:, 2:] = np.arange(4.).reshape(2, 2), np.arange(4., 8).reshape(2, 2)
    np.testing.assert_array_equal(b.to_dense().numpy(), ref)
    bc = sparse_bsc_tensor([0, 1, 1], [0], tg.ones(1, 2, 1), (2, 2))
    np.testing.assert_array_equal(bc.to_dense().numpy(), [[1, 0], [1, 0]])
    g = sparse_compressed_tensor([0, 1, 2], [1, 0], [5., 6.], (2, 2), layout=tg.sparse_csc)
    np.testing.assert_array_equal(g.to_dense().numpy(), s.to_dense().numpy())
    hybrid = sparse_csr_tensor([0, 1], [0], [[1., 2.]], (1, 1, 2))
    assert hybrid.dense_dim() == 1 and hybrid.to_dense().tolist() == [[[1., 2.]]]
    batched = sparse_csr_tensor([[0, 1, 1], [0, 0, 1]], [[1], [0]], [[2.], [3.]], (2, 2, 2))
    np.testing.assert_array_equal(batched.to_dense().numpy(),
                                  [[[0, 2], [0, 0]], [[0, 0], [3, 0]]])
    for name in ("ccol_indices", "row_indices"):
        with pytest.raises(RuntimeError, match=f"{name} expected sparse column compressed tensor "
                                               f"layout but got SparseCsr"):
            getattr(c, name)()
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed"):
        s.crow_indices()
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout"):
        c.indices()
    for f in (c.stride, c.is_contiguous):
        with pytest.raises(RuntimeError, match="sparse CSR tensors have no strides"):
            f()
    with pytest.raises(NotImplementedError, match=r"does not support sparse CSR tensors \(layout "
                                                  r"tritongrad.sparse_csr\)"):
        tg.exp(c)
    with pytest.raises(NotImplementedError, match="sparse BSC tensors"):
        bc.exp()


T = [0, 2, 3], [0, 2, 1], [1., 2., 3.]


@pytest.mark.parametrize("factory, args, size, message", [
    (sparse_csr_tensor, T, (2, 2), "`0 <= col_indices < ncols` is not satisfied."),
    (sparse_csr_tensor, ([1, 2, 3], T[1], T[2]), (2, 3),
     r"`crow_indices\[..., 0\] == 0` is not satisfied."),
    (sparse_csr_tensor, ([0, 2, 2], T[1], T[2]), (2, 3),
     r"`crow_indices\[..., -1\] == nnz` is not satisfied."),
    (sparse_csr_tensor, ([0, 3, 1, 3], [0, 1, 2], T[2]), (3, 3),
     r"`0 <= crow_indices\[..., 1:\] - crow_indices\[..., :-1\] <= ncols` is not satisfied."),
    (sparse_csr_tensor, ([0, 2, 3], [2, 0, 1], T[2]), (2, 3),
     r"`col_indices\[..., crow_indices\[..., i - 1\]:crow_indices\[..., i\]\] for all i = 1, "
     r"..., nrows are sorted and distinct"),
    (sparse_csr_tensor, ([0, 2, 3], [0, 0, 1], T[2]), (2, 3), "are sorted and distinct"),
    (sparse_csr_tensor, ([0, 2, 3], [0, -1, 1], T[2]), (2, 3), "`0 <= col_indices < ncols`"),
    (sparse_csc_tensor, T, (2, 2), "`0 <= row_indices < nrows` is not satisfied."),
    (sparse_csc_tensor, ([0, 2, 3], [1, 0, 1], T[2]), (2, 2),
     r"for all i = 1, ..., ncols are sorted"),
    (sparse_csr_tensor, ([0, 2, 3], T[1], [1., 2.]), (2, 3),
     r"col_indices.shape\[-1\] must be equal to nnz \(=2\) as defined by values.shape\[0\], "
     r"but got 3"),
    (sparse_csr_tensor, T, (3, 3),
     r"crow_indices.shape\[-1\] must be equal to the number of rows \+ 1 \(=4\), but got 3"),
    (sparse_csc_tensor, T, (2, 3), r"ccol_indices.shape\[-1\] must be equal to the number of "
                                   r"columns \+ 1 \(=4\), but got 3"),
    (sparse_bsr_tensor, ([0, 1], [0, 1], np.ones((2, 2, 2))), (4, 4),
     r"crow_indices.shape\[-1\] must be equal to the number of row blocks \+ 1 \(=3\)"),
    (sparse_bsr_tensor, ([0, 1, 2], [0, 1], np.ones((2, 2, 2))), (4, 3),
     r"tensor shape\[1\] \(=3\) must be divisible with blocksize\[1\] \(=2\)"),
    (sparse_bsr_tensor, ([0, 1, 2], [0, 1], np.ones((2, 2))), (4, 4),
     r"values must have dimensionality > sum of batch and block dimensionalities \(=0 \+ 2\) "
     r"but got 2"),
    (sparse_csr_tensor, T, (2,), r"tensor dimensionality must be sum of batch, base, and dense "
                                 r"dimensionalities \(=0 \+ 2 \+ 0\) but got 1"),
    (sparse_csr_tensor, ([[0, 2, 3]], T[1], T[2]), (2, 3),
     "crow_indices and col_indices dimensionalities must be equal but got 2 and 1"),
    (sparse_csr_tensor, ([0., 2, 3], T[1], T[2]), (2, 3),
     "crow_indices and col_indices must have the same dtype"),
    (sparse_csr_tensor, ([[0, 1]], [[0]], [[1.]]), (2, 1, 1),
     r"all batch dimensions of crow_indices \(=\[1\]\), col_indices \(=\[1\]\), and values "
     r"\(=\[1\]\) must be equal to tensor batch dimensions \(=\[2\]\)"),
])
def test_invariant_errors(factory, args, size, message):
    cidx, pidx, vals = args
    if isinstance(cidx, list) and cidx and isinstance(cidx[0], float):
        cidx = tg.tensor(cidx)
    with pytest.raises(RuntimeError, match=message):
        factory(cidx, pidx, tg.tensor(np.asarray(vals, np.float32)), size)


def test_check_invariants_setting():
    bad = ([0, 2, 3], [0, 2, 1], [1., 2., 3.], (2, 2))
    cls = tg.sparse.check_sparse_tensor_invariants
    assert cls.is_enabled()
    with pytest.raises(RuntimeError, match="col_indices < ncols"):
        sparse_csr_tensor(*bad)
    assert sparse_csr_tensor(*bad, check_invariants=False)._nnz() == 3
    with cls(False):
        assert not cls.is_enabled()
        sparse_csr_tensor(*bad)  # not checked
        tg.sparse_coo_tensor([[5]], [1.], (2,))  # COO follows the setting too
        with pytest.raises(RuntimeError, match="col_indices < ncols"):
            sparse_csr_tensor(*bad, check_invariants=True)
    assert cls.is_enabled()

    @cls(enable=False)
    def unchecked():
        return sparse_csr_tensor(*bad)

    assert unchecked()._nnz() == 3 and cls.is_enabled()
    cls.disable()
    try:
        assert not cls.is_enabled()
        sparse_csr_tensor(*bad)
    finally:
        cls.enable()
    manager = cls()
    with manager, pytest.raises(RuntimeError, match="already activated"):
        with manager:
            pass


def test_sparse_compressed_tensor_needs_layout():
    with pytest.raises(RuntimeError, match="expected sparse compressed tensor layout but got none"):
        sparse_compressed_tensor(*T, (2, 3))


# -- products -----------------------------------------------------------------------------------

def _random_csr_pair(rng, n=5, m=4, p=3, batch=()):
    a = _sparse_array(rng, (*batch, n, m), 0.5, len(batch))
    return a, rng.standard_normal((*batch, m, p))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_mm_against_numpy(layout, device):
    rng = np.random.default_rng(0)
    a, d = _random_csr_pair(rng, 4, 6, 3)
    c = _convert(tg.tensor(a, dtype=tg.float32, device=device), layout,
                 (2, 3) if layout in BLOCKED else None)
    dt = tg.tensor(d, dtype=tg.float32, device=device)
    for out in (c @ dt, c.mm(dt), c.matmul(dt), tg.sparse.mm(c, dt)):
        np.testing.assert_allclose(out.cpu().numpy(), a @ d, rtol=1e-5, atol=1e-5)
    v = rng.standard_normal(6)
    np.testing.assert_allclose((c @ tg.tensor(v, dtype=tg.float32, device=device)).cpu().numpy(),
                               a @ v, rtol=1e-5, atol=1e-5)
    left = rng.standard_normal((2, 4))
    np.testing.assert_allclose((tg.tensor(left, dtype=tg.float32, device=device) @ c)
                               .cpu().numpy(), left @ a, rtol=1e-5, atol=1e-5)
    m = rng.standard_normal((4, 3))
    out = tg.sparse.addmm(tg.tensor(m, dtype=tg.float32, device=device), c, dt, beta=2, alpha=3)
    np.testing.assert_allclose(out.cpu().numpy(), 2 * m + 3 * (a @ d), rtol=1e-5, atol=1e-5)


def test_batched_mm_and_errors():
    rng = np.random.default_rng(1)
    a, d = _random_csr_pair(rng, batch=(2,))
    c = tg.tensor(a, dtype=tg.float32).to_sparse_csr()
    np.testing.assert_allclose((c @ tg.tensor(d, dtype=tg.float32)).numpy(), a @ d, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose((c @ tg.tensor(d[0], dtype=tg.float32)).numpy(), a @ d[0],
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="mm: expected 2-D matrices"):
        c.mm(tg.tensor(d, dtype=tg.float32))
    c2 = tg.tensor(a[0], dtype=tg.float32).to_sparse_csr()
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(5x4 and 5x4\)"):
        c2 @ tg.ones(5, 4)
    with pytest.raises(RuntimeError, match="same dtype"):
        c2 @ tg.ones(4, 2, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="with dense dims"):
        tg.ones(2, 2, 3).to_sparse_csr(dense_dim=1) @ tg.ones(2, 2)


def test_sampled_addmm_against_numpy(device):
    rng = np.random.default_rng(2)
    for batch in ((), (2,)):
        a = _sparse_array(rng, (*batch, 4, 5), 0.5, len(batch))
        m1, m2 = rng.standard_normal((*batch, 4, 3)), rng.standard_normal((*batch, 3, 5))
        c = tg.tensor(a, dtype=tg.float64, device=device).to_sparse_csr()
        out = tg.sparse.sampled_addmm(c, tg.tensor(m1, device=device),
                                      tg.tensor(m2, device=device), beta=0.5, alpha=2)
        assert out.layout is tg.sparse_csr
        np.testing.assert_array_equal(out.crow_indices().cpu().numpy(),
                                      c.crow_indices().cpu().numpy())
        ref = np.where(a != 0, 0.5 * a + 2 * (m1 @ m2), 0)
        np.testing.assert_allclose(out.to_dense().cpu().numpy(), ref, rtol=1e-12)
    c = tg.ones(2, 2).to_sparse_csr()
    with pytest.raises(RuntimeError, match="Expected result to have sparse csr layout, but got "
                                           "SparseCsc"):
        tg.sparse.sampled_addmm(c.to_sparse_csc(), tg.ones(2, 2), tg.ones(2, 2))
    with pytest.raises(RuntimeError, match="Expected mat1 and mat2 to have the same dtype, but "
                                           "got Float and Double"):
        tg.sparse.sampled_addmm(c, tg.ones(2, 2), tg.ones(2, 2, dtype=tg.float64))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 "
                                           r"and 2x2\)"):
        tg.sparse.sampled_addmm(c, tg.ones(2, 3), tg.ones(2, 2))


def _spdiags_ref(diags, offsets, shape):
    out = np.zeros(shape)
    for k, off in enumerate(offsets):
        for j in range(min(shape[1], diags.shape[1])):
            if 0 <= j - off < shape[0]:
                out[j - off, j] = diags[k, j]
    return out


@pytest.mark.parametrize("layout", [None, tg.sparse_coo, tg.sparse_csr, tg.sparse_csc])
@pytest.mark.parametrize("offsets, shape", [([0, -1], (3, 3)), ([0, 1, -2], (3, 5)),
                                            ([2], (4, 2)), ([-1, 3], (5, 4))])
def test_spdiags_against_numpy(layout, offsets, shape):
    diags = np.arange(1., 1 + 4 * len(offsets)).reshape(len(offsets), 4)
    out = tg.sparse.spdiags(tg.tensor(diags), tg.tensor(offsets), shape, layout=layout)
    assert out.layout is (layout or tg.sparse_coo)
    np.testing.assert_array_equal(out.to_dense().numpy(), _spdiags_ref(diags, offsets, shape))


def test_spdiags_errors():
    d = tg.ones(2, 3)
    with pytest.raises(RuntimeError, match="Offset tensor contains duplicate values"):
        tg.sparse.spdiags(d, tg.tensor([0, 0]), (3, 3))
    with pytest.raises(RuntimeError, match=r"Number of diagonals \(2\) does not match the number "
                                           r"of offsets \(1\)"):
        tg.sparse.spdiags(d, tg.tensor([0]), (3, 3))
    with pytest.raises(RuntimeError, match="Only output layouts"):
        tg.sparse.spdiags(d, tg.tensor([0, 1]), (3, 3), layout=tg.sparse_bsr)


# -- gradients ----------------------------------------------------------------------------------

CROW, COL = [0, 2, 2, 4], [0, 3, 1, 2]  # 3 x 4, an empty row


def _values(device="cpu"):
    return tg.tensor([1.5, -2.0, 0.5, 3.0], dtype=tg.float64, device=device,
                     requires_grad=True)


def test_gradients_through_values(device):
    v = _values(device)
    w = tg.tensor(np.arange(12.).reshape(3, 4), dtype=tg.float64, device=device)
    c = sparse_csr_tensor(CROW, COL, v, (3, 4))
    assert c.grad_fn.name() == "SparseCompressedTensorBackward0"
    (c.to_dense() * w).sum().backward()
    # masked: the gradient of each value is the weight at its element
    np.testing.assert_array_equal(v.grad.cpu().numpy(), [0, 3, 9, 10])


def test_gradcheck_through_values():
    # (on the CPU only: gradcheck's many forwards are slow on the emulated device)
    for fn in (lambda v: sparse_csr_tensor(CROW, COL, v, (3, 4)).to_dense(),
               lambda v: sparse_csr_tensor(CROW, COL, v, (3, 4)).to_sparse_csc().to_dense(),
               lambda v: sparse_csr_tensor(CROW, COL, v, (3, 4)).to_sparse().to_dense(),
               lambda v: sparse_csr_tensor(CROW, COL, v, (3, 4)).t().values() * 2,
               lambda v: (sparse_csr_tensor(CROW, COL, v, (3, 4)) * 3).values()):
        assert gradcheck(fn, (_values(),))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_product_gradients_by_finite_differences(layout, device):
    rng = np.random.default_rng(3)
    a = _sparse_array(rng, (4, 6), 0.6, 0, (2, 3) if layout in BLOCKED else (1, 1))
    pattern = _convert(tg.tensor(a, dtype=tg.float64), layout,
                       (2, 3) if layout in BLOCKED else None)
    idx = [getattr(pattern, n)() for n in (("crow_indices", "col_indices") if layout in ROWS
                                           else ("ccol_indices", "row_indices"))]

    def build(v):
        return sparse_compressed_tensor(idx[0].to(v.device), idx[1].to(v.device), v, (4, 6),
                                        layout=layout)

    vals = pattern.values().detach().to(device).requires_grad_()
    d = tg.tensor(rng.standard_normal((6, 2)), device=device, requires_grad=True)
    for product in (lambda v, d: build(v) @ d, lambda v, d: tg.sparse.mm(build(v), d),
                    lambda v, d: (d.t() @ build(v).t()).t() * 1.5):
        out = product(vals, d)
        g = tg.tensor(rng.standard_normal(out.shape), device=device)
        gv, gd = tg.autograd.grad(out, (vals, d), g)
        nv, nd = numeric_grads(lambda v, d: product(v, d), (vals, d), grad_output=g.cpu().numpy())
        np.testing.assert_allclose(gv.cpu().numpy(), nv, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gd.cpu().numpy(), nd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("masked", [True, False])
def test_gradcheck_values_of_an_input(masked):
    # what gradcheck(..., masked=) checks a compressed input at (gradcheck_values): its nnz
    # values, or every element
    from tritongrad.autograd.sparse_compressed import gradcheck_values
    c = tg.tensor([[1., 0, 2], [0, 3, 0]], dtype=tg.float64).to_sparse_bsr((1, 3))
    vals, rebuild = gradcheck_values(c, masked)
    assert vals.numel() == 6 and rebuild(vals).layout is tg.sparse_bsr  # (both blocks held)
    c = tg.tensor([[1., 0, 2], [0, 3, 0]], dtype=tg.float64).to_sparse_csc()
    vals, rebuild = gradcheck_values(c, masked)
    assert vals.numel() == (3 if masked else 6)
    np.testing.assert_array_equal(rebuild(vals).to_dense().numpy(), c.to_dense().numpy())
    w = tg.tensor(np.arange(1., 7).reshape(2, 3), dtype=tg.float64)
    leaf = vals.clone().requires_grad_()
    assert gradcheck(lambda v: (rebuild(v) @ w.t()) * 2, (leaf,))
    (rebuild(leaf).to_dense() * w).sum().backward()
    # masked: the weights at the specified elements; unmasked: all of them
    expected = [1., 5., 3.] if masked else [1., 4., 2., 5., 3., 6.]  # (column-major order)
    np.testing.assert_array_equal(leaf.grad.numpy(), expected)


def test_batched_and_sampled_gradcheck():
    rng = np.random.default_rng(4)
    a = _sparse_array(rng, (2, 3, 4), 0.5, 1)
    c = tg.tensor(a, dtype=tg.float64).to_sparse_csr()
    crow, col = c.crow_indices(), c.col_indices()
    v = c.values().detach().requires_grad_()
    d = tg.tensor(rng.standard_normal((2, 4, 2)), requires_grad=True)
    assert gradcheck(lambda v, d: sparse_csr_tensor(crow, col, v, (2, 3, 4)) @ d, (v, d))
    m1 = tg.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True)
    m2 = tg.tensor(rng.standard_normal((2, 2, 4)), requires_grad=True)
    assert gradcheck(lambda v, m1, m2: tg.sparse.sampled_addmm(
        sparse_csr_tensor(crow, col, v, (2, 3, 4)), m1, m2, beta=0.5, alpha=-2).to_dense(),
        (v, m1, m2))
    diags = tg.tensor(rng.standard_normal((2, 4)), requires_grad=True)
    assert gradcheck(lambda x: tg.sparse.spdiags(x, tg.tensor([0, -1]), (4, 4),
                                                 layout=tg.sparse_csr).to_dense(), (diags,))


def test_dense_to_compressed_gradients(device):
    x = tg.tensor([[1., 0, 2], [0, 0, 3]], dtype=tg.float64, device=device, requires_grad=True)
    w = tg.tensor(np.arange(1., 7).reshape(2, 3), dtype=tg.float64, device=device)
    for layout in LAYOUTS:
        x.grad = None
        c = _convert(x, layout, (1, 1) if layout in BLOCKED else None)
        (c.to_dense() * w).sum().backward()
        # only the specified elements (x's nonzeros) are variables
        np.testing.assert_array_equal(x.grad.cpu().numpy(), [[1, 0, 3], [0, 0, 6]])
    # as PyTorch's ToSparseCsrBackward0: a dense gradient (torch.mm's) reaches x whole
    x.grad = None
    c = x.to_sparse_csr()
    assert c.grad_fn.name() == "ToSparseCsrBackward0"
    (c @ tg.ones(3, 2, dtype=tg.float64, device=device)).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full((2, 3), 2.0))
    x.grad = None
    tg.sparse.mm(c, tg.ones(3, 2, dtype=tg.float64, device=device)).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[2, 0, 2], [0, 0, 2]])
    # a block's zeros are specified elements too (each block here holds a nonzero, so the
    # finite differences keep the pattern)
    assert gradcheck(lambda x: x.to_sparse_bsr((1, 3)).to_dense() * 2,
                     (tg.tensor([[1., 0, 2], [0, 3, 0]], dtype=tg.float64, requires_grad=True),))


def test_compressed_gradients_between_nodes():
    # to_dense's and values()'s gradients reach the factory's node compressed (the pattern
    # kept), and a dense op's node dense
    v = _values()
    c = sparse_csr_tensor(CROW, COL, v, (3, 4))
    (c.values() * tg.tensor([1., 2, 3, 4], dtype=tg.float64)).sum().backward()
    assert v.grad.tolist() == [1, 2, 3, 4]
    x = tg.tensor([[1., 0], [0, 2]], dtype=tg.float64, requires_grad=True)
    (x * 2).to_sparse_csr().values().sum().backward()
    assert x.grad.tolist() == [[2, 0], [0, 2]]


def test_accumulate_into_compressed_grad():
    c = sparse_csr_tensor(CROW, COL, [1., 2, 3, 4], (3, 4), requires_grad=True)
    assert c.requires_grad and c.grad_fn is None
    g1 = sparse_csr_tensor(CROW, COL, [1., 1, 1, 1], (3, 4))
    coo.accumulate(c, g1, False)
    assert c.grad.layout is tg.sparse_csr
    coo.accumulate(c, sparse_csr_tensor([0, 1, 1, 1], [2], [5.], (3, 4)), False)
    assert c.grad.layout is tg.sparse_csr
    ref = g1.to_dense().numpy()
    ref[0, 2] += 5
    np.testing.assert_array_equal(c.grad.to_dense().numpy(), ref)
    coo.accumulate(c, tg.ones(3, 4), False)  # (a dense gradient: torch.mm's) makes .grad dense
    np.testing.assert_array_equal(c.grad.numpy(), ref + 1)


def test_leaf_gradients_as_pytorch():
    c = sparse_csr_tensor(CROW, COL, [1., 2, 3, 4], (3, 4), requires_grad=True)
    w = tg.tensor(np.arange(12.).reshape(3, 4))
    (c.to_dense() * w).sum().backward()
    assert c.grad.layout is tg.sparse_csr  # masked, on c's pattern
    assert c.grad.values().tolist() == [0, 3, 9, 10]
    c.grad = None
    d = tg.ones(4, 2)
    (c @ d).sum().backward()
    assert c.grad.layout is tg.strided  # torch.mm's rule: dense
    np.testing.assert_array_equal(c.grad.numpy(), np.full((3, 4), 2.0))
    c.grad = None
    tg.sparse.mm(c, d).sum().backward()
    assert c.grad.layout is tg.sparse_csr and c.grad.values().tolist() == [2, 2, 2, 2]


# -- tensor methods, printing, pickling ---------------------------------------------------------

def test_arithmetic_and_copies(device):
    c = sparse_csr_tensor(CROW, COL, tg.tensor([1., 2, 3, 4], device=device), (3, 4))
    dense = c.to_dense().cpu().numpy()
    for out, ref in ((c * 2, dense * 2), (2 * c, dense * 2), (c / 2, dense / 2), (-c, -dense),
                     (c + c, 2 * dense), (c - c, 0 * dense)):
        assert out.layout is tg.sparse_csr
        np.testing.assert_array_equal(out.to_dense().cpu().numpy(), ref)
    other = tg.ones(3, 4, device=device)
    np.testing.assert_array_equal((c + other).cpu().numpy(), dense + 1)
    np.testing.assert_array_equal((other + c).cpu().numpy(), dense + 1)
    union = c + sparse_csr_tensor([0, 1, 1, 1], [1], tg.tensor([7.], device=device), (3, 4))
    assert union._nnz() == 5
    ref = dense.copy()
    ref[0, 1] += 7
    np.testing.assert_array_equal(union.to_dense().cpu().numpy(), ref)
    assert c.sum().item() == 10
    d64 = c.to(tg.float64)
    assert d64.dtype is tg.float64 and d64.layout is tg.sparse_csr and c.double().dtype is \
        tg.float64
    assert c.to(tg.float32) is c
    cl = c.clone()
    assert cl.crow_indices() is not c.crow_indices()
    np.testing.assert_array_equal(cl.to_dense().cpu().numpy(), dense)
    v = tg.tensor([1., 2, 3, 4], device=device, requires_grad=True)
    assert not sparse_csr_tensor(CROW, COL, v, (3, 4)).detach().requires_grad
    assert c.cpu().device.type == "cpu"


def test_repr_as_pytorch():
    c = sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1., 2., 3.], (2, 3))
    assert repr(c) == (
        "tensor(crow_indices=tensor([0, 2, 3]),\n"
        "       col_indices=tensor([0, 2, 1]),\n"
        "       values=tensor([1., 2., 3.]), size=(2, 3), nnz=3,\n"
        "       layout=tritongrad.sparse_csr)")
    z = tg.zeros(2, 3).to_sparse_bsc((1, 3))
    assert repr(z) == (
        "tensor(ccol_indices=tensor([0, 0]),\n"
        "       row_indices=tensor([], size=(0,)),\n"
        "       values=tensor([], size=(0, 1, 3)), size=(2, 3), nnz=0,\n"
        "       layout=tritongrad.sparse_bsc)")
    v = tg.tensor([1., 2., 3.], dtype=tg.float64, requires_grad=True)
    r = repr(sparse_csr_tensor([0, 2, 3], [0, 2, 1], v, (2, 3)))
    assert r.endswith("dtype=tritongrad.float64, layout=tritongrad.sparse_csr,\n"
                      "       grad_fn=<SparseCompressedTensorBackward0>)")
    assert str(c) == repr(c)


def test_pickle_and_deepcopy():
    c = tg.tensor([[1., 0, 2], [0, 3, 0]]).to_sparse_bsr((1, 3))
    for back in (pickle.loads(pickle.dumps(c)), copy.deepcopy(c)):
        assert back.layout is tg.sparse_bsr and back.shape == c.shape
        np.testing.assert_array_equal(back.to_dense().numpy(), c.to_dense().numpy())
        assert back.crow_indices().tolist() == c.crow_indices().tolist()
    leaf = sparse_csr_tensor([0, 1], [0], [1.], (1, 1), requires_grad=True)
    assert pickle.loads(pickle.dumps(leaf)).requires_grad


# -- against PyTorch ----------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    import warnings
    rng = np.random.default_rng(5)
    a = _sparse_array(rng, (2, 4, 6), 0.5, 1)
    layouts = {tg.sparse_csr: torch.sparse_csr, tg.sparse_csc: torch.sparse_csc,
               tg.sparse_bsr: torch.sparse_bsr, tg.sparse_bsc: torch.sparse_bsc}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for layout, tlayout in layouts.items():
            bs = (2, 3) if layout in BLOCKED else None
            ours = tg.tensor(a, dtype=tg.float32).to_sparse(layout=layout, blocksize=bs)
            theirs = torch.tensor(a, dtype=torch.float32).to_sparse(layout=tlayout, blocksize=bs)
            names = ("crow_indices", "col_indices") if layout in ROWS else \
                ("ccol_indices", "row_indices")
            for n in names:
                np.testing.assert_array_equal(getattr(ours, n)().numpy(),
                                              getattr(theirs, n)().numpy())
            np.testing.assert_array_equal(ours.values().numpy(), theirs.values().numpy())
            assert ours._nnz() == theirs._nnz()
        # products and gradients of a 2-D CSR tensor
        c = tg.tensor(a[0], dtype=tg.float64).to_sparse_csr()
        tc = torch.tensor(a[0]).to_sparse_csr()
        d = rng.standard_normal((6, 3))
        v = c.values().detach().requires_grad_()
        tv = tc.values().detach().requires_grad_()
        dd, tdd = tg.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
        out = tg.sparse.mm(sparse_csr_tensor(c.crow_indices(), c.col_indices(), v, (4, 6)), dd)
        tout = torch.sparse.mm(torch.sparse_csr_tensor(tc.crow_indices(), tc.col_indices(), tv,
                                                       (4, 6)), tdd)
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
        out.sum().backward()
        tout.sum().backward()
        np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(dd.grad.numpy(), tdd.grad.numpy(), rtol=1e-12)
        # a dense tensor's conversion: the gradient through c @ d and through sparse.mm
        for product, tproduct in ((lambda c, d: c @ d, lambda c, d: c @ d),
                                  (tg.sparse.mm, torch.sparse.mm)):
            x, tx = tg.tensor(a[0], requires_grad=True), torch.tensor(a[0], requires_grad=True)
            product(x.to_sparse_csr(), tg.tensor(d)).sum().backward()
            tproduct(tx.to_sparse_csr(), torch.tensor(d)).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
        m1, m2 = rng.standard_normal((4, 2)), rng.standard_normal((2, 6))
        ours = tg.sparse.sampled_addmm(c, tg.tensor(m1), tg.tensor(m2), beta=0.5, alpha=2)
        theirs = torch.sparse.sampled_addmm(tc, torch.tensor(m1), torch.tensor(m2), beta=0.5,
                                            alpha=2)
        np.testing.assert_allclose(ours.values().detach().numpy(), theirs.values().numpy(),
                                   rtol=1e-12)
        diags = rng.standard_normal((3, 5))
        for lay, tlay in ((tg.sparse_csr, torch.sparse_csr), (tg.sparse_csc, torch.sparse_csc)):
            ours = tg.sparse.spdiags(tg.tensor(diags), tg.tensor([0, 2, -1]), (4, 5), layout=lay)
            theirs = torch.sparse.spdiags(torch.tensor(diags), torch.tensor([0, 2, -1]), (4, 5),
                                          layout=tlay)
            np.testing.assert_array_equal(ours.values().numpy(), theirs.values().numpy())
        # the repr, up to the package's name
        t = torch.sparse_csr_tensor(torch.tensor([0, 2, 3]), torch.tensor([0, 2, 1]),
                                    torch.tensor([1., 2., 3.]), (2, 3))
        c = sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1., 2., 3.], (2, 3))
        assert repr(c).replace("tritongrad", "torch") == repr(t)
        # the invariant messages
        with torch.sparse.check_sparse_tensor_invariants():
            for args in (([0, 2, 3], [0, 2, 1], (2, 2)), ([1, 2, 3], [0, 2, 1], (2, 3)),
                         ([0, 2, 3], [2, 0, 1], (2, 3))):
                with pytest.raises(RuntimeError) as theirs:
                    torch.sparse_csr_tensor(torch.tensor(args[0]), torch.tensor(args[1]),
                                            torch.tensor([1., 2., 3.]), args[2])
                with pytest.raises(RuntimeError) as ours:
                    sparse_csr_tensor(args[0], args[1], [1., 2., 3.], args[2])
                assert str(ours.value) == str(theirs.value)


def test_top_level_products_route_compressed_tensors():
    c = sparse_csr_tensor(CROW, COL, [1., 2, 3, 4], (3, 4), dtype=tg.float64)
    d = tg.tensor(np.arange(8.).reshape(4, 2))
    dense = c.to_dense().numpy()
    np.testing.assert_allclose(tg.mm(c, d).numpy(), dense @ d.numpy())
    np.testing.assert_allclose(tg.matmul(c, d).numpy(), dense @ d.numpy())
    e = tg.tensor(np.arange(6.).reshape(2, 3))
    np.testing.assert_allclose(tg.matmul(e, c).numpy(), e.numpy() @ dense)
    m = tg.ones(3, 2, dtype=tg.float64)
    np.testing.assert_allclose(tg.addmm(m, c, d, beta=0.5, alpha=2).numpy(),
                               0.5 + 2 * dense @ d.numpy())


@pytest.mark.parametrize("masked", [True, False])
def test_gradcheck_takes_compressed_inputs(masked):
    c = sparse_csr_tensor(CROW, COL, [1., 2, 3, 4], (3, 4), dtype=tg.float64,
                          requires_grad=True)
    w = tg.tensor(np.arange(8.).reshape(4, 2))
    assert gradcheck(lambda s: (s.to_dense() @ w).sin(), (c,), masked=masked)
