"""Sparse tensors against PyTorch 2.13, second sweep: repeated coordinates kept by the ops
that move or scale entries (with correct gradients), sparse + sparse merged as PyTorch's,
dtype promotion of sparse * dense, floor division, casts, ``permute`` / ``T`` / ``t_`` /
indexing, ``norm`` / ``any`` / ``float_power``, compressed * sparse, and PyTorch's errors.
Expected values are explicit or NumPy's; a PyTorch comparison runs where it is installed."""

import io
import pickle

import numpy as np
import pytest

import tritongrad as tg

DUP = [[1, 0, 1, 1], [2, 2, 2, 0]]  # (1, 2) twice: uncoalesced
DUP_VALS = [1., 2., 3., 4.]
IDX = [[0, 1, 1, 2], [2, 0, 2, 1]]  # sorted, unique, not flagged coalesced
VALS = [1., 2., 3., 4.]


def _dup(L=tg, dtype="float64", **kw):
    return L.sparse_coo_tensor(L.tensor(DUP), L.tensor(DUP_VALS, dtype=getattr(L, dtype)),
                               (2, 3), **kw)


def _s(L=tg, dtype="float32", idx=IDX, vals=VALS, size=(3, 3), **kw):
    return L.sparse_coo_tensor(L.tensor(idx), L.tensor(vals, dtype=getattr(L, dtype)), size,
                               **kw)


def _dense(idx, vals, size):
    out = np.zeros(size)
    np.add.at(out, tuple(np.asarray(idx)), vals)
    return out


# -- repeated coordinates: kept, gradients counted once -----------------------------------------

W = np.arange(1., 7.).reshape(2, 3)
MASK = _dense(DUP, np.ones(4), (2, 3)) != 0  # (the specified coordinates)

KEEPING = {  # op -> (f, dense result of f from the input's dense form x, d<W, f>/dx)
    "mul": (lambda s: s * 2, lambda x: 2 * x, lambda: 2 * W),
    "neg": (lambda s: -s, lambda x: -x, lambda: -W),
    "div": (lambda s: s / 4, lambda x: x / 4, lambda: W / 4),
    "clone": (lambda s: s.clone(), lambda x: x, lambda: W),
    "to": (lambda s: s.to(tg.float32).to(tg.float64), lambda x: x, lambda: W),
    "t": (lambda s: s.t().t(), lambda x: x, lambda: W),
    "permute": (lambda s: s.permute(1, 0).t(), lambda x: x, lambda: W),
    "narrow_copy": (lambda s: s.narrow_copy(1, 1, 2), lambda x: x[:, 1:],
                    lambda: np.concatenate([np.zeros((2, 1)), W[:, :2]], 1)),
    "index_select": (lambda s: s.index_select(1, tg.tensor([2, 0])), lambda x: x[:, [2, 0]],
                     lambda: np.stack([W[:, 1], np.zeros(2), W[:, 0]], 1)),
}


@pytest.mark.parametrize("name", sorted(KEEPING))
def test_ops_keep_repeated_coordinates_and_count_their_gradient_once(name):
    f, ref, grad = KEEPING[name]
    s = _dup(requires_grad=True)
    out = f(s)
    x = _dense(DUP, DUP_VALS, (2, 3))
    np.testing.assert_allclose(out.detach().to_dense().numpy(), ref(x))
    if name != "index_select":  # (the entries there: (1, 2) twice, (1, 0) once, in order)
        assert out._nnz() == (3 if name == "narrow_copy" else 4) and not out.is_coalesced()
    else:
        assert out._indices().tolist() == [[1, 0, 1, 1], [0, 0, 0, 1]]
    dw = ref(W) if name in ("narrow_copy", "index_select") else W
    (out.to_dense() * tg.tensor(dw)).sum().backward()
    assert s.grad.layout is tg.sparse_coo
    # the gradient of <dw, f(x)> at the specified coordinates (a repeat summed would be 2x)
    want = np.where(MASK, grad() if name not in ("narrow_copy", "index_select") else
                    _grad_through(name, dw), 0)
    np.testing.assert_allclose(s.grad.to_dense().numpy(), want)


def _grad_through(name, dw):
    g = np.zeros((2, 3))
    if name == "narrow_copy":
        g[:, 1:] = dw
    else:
        g[:, 2] += dw[:, 0]
        g[:, 0] += dw[:, 1]
    return g


def test_repeated_coordinates_values_gradient():
    v = tg.tensor(DUP_VALS, dtype=tg.float64, requires_grad=True)
    s = tg.sparse_coo_tensor(tg.tensor(DUP), v, (2, 3))
    (s.t() * 3).to_dense().mul(tg.tensor(W.T)).sum().backward()
    # each value's own gradient: 3 * W at its coordinate
    np.testing.assert_allclose(v.grad.numpy(), [3 * W[1, 2], 3 * W[0, 2], 3 * W[1, 2],
                                                3 * W[1, 0]])


# -- sparse + sparse -----------------------------------------------------------------------------

def test_add_merges_operands_in_order():
    a = _s()
    b = _s(idx=[[0, 2], [0, 2]], vals=[7., 8.])
    r = a + b  # (both in order: PyTorch's two-pointer merge, not coalesced as a is not)
    assert r._indices().tolist() == [[0, 0, 1, 1, 2, 2], [0, 2, 0, 2, 1, 2]]
    assert r._values().tolist() == [7., 1., 2., 3., 4., 8.] and not r.is_coalesced()
    same = a + _s(dtype="float64")  # equal coordinates meet: values added, dtype promoted
    assert same._nnz() == 4 and same.dtype is tg.float64
    assert same._values().tolist() == [2., 4., 6., 8.]
    c = a.coalesce() + b.coalesce()
    assert c.is_coalesced() and c._nnz() == 6
    # repeats: the k-th of a coordinate in one meets its k-th in the other
    u = tg.sparse_coo_tensor([[0, 0]], tg.tensor([1., 2.]), (2,))
    r = u + tg.sparse_coo_tensor([[0]], tg.tensor([5.]), (2,))
    assert r._indices().tolist() == [[0, 0]] and r._values().tolist() == [6., 2.]
    i = _s(dtype="int64") + a
    assert i.dtype is tg.float32 and i._values().tolist() == [2., 4., 6., 8.]


def test_add_of_unordered_operands_walks_them_as_pytorch():
    a = tg.sparse_coo_tensor([[3, 1, 0]], tg.tensor([1., 2., 3.]), (4,))
    b = tg.sparse_coo_tensor([[1, 0, 3]], tg.tensor([10., 20., 30.]), (4,))
    r = a + b  # (the smaller head first, equal heads together: 1, 0, 3 + 3, then a's 1, 0)
    assert r._indices().tolist() == [[1, 0, 3, 1, 0]]
    assert r._values().tolist() == [10., 20., 31., 2., 3.] and not r.is_coalesced()
    assert r.to_dense().tolist() == [23., 12., 0., 31.]
    d = _dup() + _dup()  # (a repeat meets its own: nnz stays 4)
    assert d._indices().tolist() == DUP and d._values().tolist() == [2., 4., 6., 8.]


def test_add_gradients_through_the_merge():
    va = tg.tensor(VALS, dtype=tg.float64, requires_grad=True)
    vb = tg.tensor([7., 8.], dtype=tg.float64, requires_grad=True)
    a = tg.sparse_coo_tensor(tg.tensor(IDX), va, (3, 3))
    b = tg.sparse_coo_tensor(tg.tensor([[0, 1], [2, 1]]), vb, (3, 3))
    w = np.arange(9.).reshape(3, 3)
    ((a + b).to_dense() * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(va.grad.numpy(), w[tuple(np.array(IDX))])
    np.testing.assert_allclose(vb.grad.numpy(), [w[0, 2], w[1, 1]])


def test_add_of_a_number_is_refused_as_pytorch():
    for f in (lambda: _s() + 1, lambda: 1 + _s()):
        with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
            f()


# -- products with dense operands, division, casts -----------------------------------------------

def test_mul_by_dense_promotes():
    r = _s() * tg.tensor(np.full((3, 3), 0.5))
    assert r.dtype is tg.float64 and r._values().tolist() == [0.5, 1., 1.5, 2.]
    assert (_s() * tg.tensor(2.0, dtype=tg.float64)).dtype is tg.float32  # (0-d: no promotion)
    r = _s(dtype="int64") * tg.tensor(np.ones((3, 3)), dtype=tg.float32)
    assert r.dtype is tg.float32


def test_floor_and_trunc_division():
    s = _s(vals=[-3., 2., -1., 5.])
    assert (s // 2)._values().tolist() == [-2., 1., -1., 2.]
    assert s.div(2, rounding_mode="trunc")._values().tolist() == [-1., 1., -0., 2.]
    assert tg.div(s, 2, rounding_mode="floor")._values().tolist() == [-2., 1., -1., 2.]
    i = _s(dtype="int64") // 2
    assert i.dtype is tg.int64 and i._values().tolist() == [0, 1, 1, 2]


def test_casts_keep_the_layout():
    s = _s()
    for name, dt in (("int", tg.int32), ("long", tg.int64), ("half", tg.float16),
                     ("bool", tg.bool), ("cdouble", tg.complex128)):
        r = getattr(s, name)()
        assert r.layout is tg.sparse_coo and r.dtype is dt
    assert s.int()._values().tolist() == [1, 2, 3, 4]
    c = tg.tensor(np.eye(2)).to_sparse_csr().int()
    assert c.layout is tg.sparse_csr and c.dtype is tg.int32


def test_bool_negation_and_reading_data_are_refused():
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -_s(dtype="bool")
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        _s().numpy()
    with pytest.raises(TypeError, match="can't convert SparseCsr layout tensor to numpy"):
        tg.eye(2).to_sparse_csr().numpy()
    for f in (lambda: _s().tolist(), lambda: _s().data_ptr()):
        with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor"):
            f()


def test_pickle_drops_requires_grad_as_pytorch():
    s = _s(requires_grad=True)
    back = pickle.loads(pickle.dumps(s))
    assert not back.requires_grad and back.to_dense().tolist() == s.to_dense().tolist()


def test_sparse_mask_keeps_a_unique_masks_order():
    m = tg.arange(9.).reshape(3, 3).sparse_mask(_s())
    assert not m.is_coalesced() and m._indices().tolist() == IDX
    assert m._values().tolist() == [2., 3., 5., 7.]
    assert tg.ones(3, 3).sparse_mask(_s().coalesce()).is_coalesced()


# -- shape ---------------------------------------------------------------------------------------

def test_transposes_permute_and_indexing():
    one = tg.sparse_coo_tensor([[0, 3]], tg.tensor([1., 2.]), (5,))
    assert one.t() is one
    x = np.arange(24.).reshape(2, 3, 4)
    s3 = tg.tensor(x).to_sparse()
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 sparse and 0 "
                                           r"dense dimensions, but got 3 sparse"):
        s3.t()
    np.testing.assert_array_equal(s3.T.to_dense().numpy(), x.transpose(2, 1, 0))
    np.testing.assert_array_equal(s3.mT.to_dense().numpy(), x.swapaxes(1, 2))
    np.testing.assert_array_equal(s3.permute(2, 0, 1).to_dense().numpy(), x.transpose(2, 0, 1))
    h = tg.tensor(x).to_sparse(1)  # (1 sparse dim, 2 dense)
    np.testing.assert_array_equal(h.permute([0, 2, 1]).to_dense().numpy(), x.swapaxes(1, 2))
    with pytest.raises(RuntimeError, match="permute\\(sparse_coo\\): transpositions between "
                                           "sparse and dense dimensions are not allowed"):
        h.permute(1, 0, 2)
    s = _s()
    assert s.t_() is s and s._indices().tolist() == [[2, 0, 2, 1], [0, 1, 1, 2]]
    assert s.transpose_(0, 1) is s and s._indices().tolist() == IDX
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        _s(requires_grad=True).t_()
    r = _s()[1]
    assert r.layout is tg.sparse_coo and r.to_dense().tolist() == [2., 0., 3.]
    assert _s()[-1, 1].item() == 4.0
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        _s()[5]
    with pytest.raises(NotImplementedError, match="indexing a sparse COO tensor"):
        _s()[0:1]


def test_coalesced_flags_of_small_results():
    s = _s()
    assert s.index_select(0, tg.tensor([2])).is_coalesced()
    assert not s.index_select(0, tg.tensor([1, 0])).is_coalesced()
    assert s.select(0, 0).is_coalesced()
    d = tg.tensor(np.arange(6.).reshape(2, 3))
    assert not tg.sparse.spdiags(d, tg.tensor([0, 1]), (3, 3)).is_coalesced()
    assert tg.sparse.spdiags(d[:1], tg.tensor([2]), (3, 5)).is_coalesced()  # (one entry)


# -- reductions, softmax, products: PyTorch's errors ----------------------------------------------

def test_reductions():
    s = _s(vals=[-3., 2., -1., 5.])
    assert s.norm().item() == pytest.approx(np.sqrt(39.))
    assert s.norm(1).item() == 11. and s.norm(float("inf")).item() == 5.
    assert _dup().norm().item() == pytest.approx(6.)  # (of 2, 4 and 4: repeats summed)
    with pytest.raises(RuntimeError, match="norm_sparse currently only supports full"):
        s.norm(dim=0)
    assert s.any().item() is True and _s(vals=[0.] * 4).any().item() is False
    p = _s(dtype="int64").float_power(2)
    assert p.dtype is tg.float64 and p._values().tolist() == [1., 4., 9., 16.]
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        tg.sparse.sum(s, (0, -2))
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        tg.sparse.sum(s, 2)
    with pytest.raises(RuntimeError, match="coalesce expected sparse coordinate tensor layout "
                                           "but got Strided"):
        tg.sparse.sum(tg.ones(2, 2))
    with pytest.raises(NotImplementedError, match="Could not run 'aten::_indices'"):
        tg.sparse.sum(tg.ones(2, 2), 0)


def test_softmax_errors():
    with pytest.raises(NotImplementedError, match="\"softmax\" not implemented for 'Long'"):
        tg.sparse.softmax(_s(dtype="int64"), 1)
    with pytest.raises(NotImplementedError, match="\"log_softmax\" not implemented for "
                                                  "'ComplexFloat'"):
        tg.sparse.log_softmax(_s(dtype="complex64"), 1)
    r = tg.sparse.softmax(_s(dtype="int64"), 1, dtype=tg.float32)
    np.testing.assert_allclose(r.to_dense().numpy()[1], [np.exp(2) / (np.exp(2) + np.exp(3)),
                                                         0, np.exp(3) / (np.exp(2) + np.exp(3))],
                               rtol=1e-6)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::_sparse_softmax' with "
                                                  "arguments from the 'CPU' backend"):
        tg.sparse.softmax(tg.ones(2, 2), 1)
    with pytest.raises(IndexError, match="^Dimension out of range"):
        tg.sparse.softmax(_s(), 2)


def test_product_errors():
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double"):
        tg.sparse.mm(_s(), tg.ones(3, 2, dtype=tg.float64))
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range "
                                         r"of \[-1, 0\], but got 1\)"):
        tg.sparse.mm(_s(), tg.ones(3))
    c = tg.tensor(np.eye(3)).to_sparse_csr()
    for inp, backend in ((_s(dtype="float64"), "SparseCPU"), (tg.ones(3, 3), "CPU")):
        with pytest.raises(NotImplementedError, match=f"Could not run "
                                                      f"'aten::sparse_sampled_addmm' with "
                                                      f"arguments from the '{backend}'"):
            tg.sparse.sampled_addmm(inp, tg.ones(3, 2, dtype=inp.dtype),
                                    tg.ones(2, 3, dtype=inp.dtype))
    assert tg.sparse.sampled_addmm(c, tg.ones(3, 2, dtype=tg.float64),
                                   tg.ones(2, 3, dtype=tg.float64)).layout is tg.sparse_csr


def test_compressed_times_sparse():
    a = np.array([[1., 0, 2], [0, 3, 0]])
    b = np.array([[0., 5, 7], [1, 3, 0]])
    va = tg.tensor([1., 2., 3.], dtype=tg.float64, requires_grad=True)
    ca = tg.sparse_csr_tensor([0, 2, 3], [0, 2, 1], va, (2, 3))
    r = ca * tg.tensor(b).to_sparse_csr()  # one layout: the elements both specify
    assert r.layout is tg.sparse_csr and r.col_indices().tolist() == [2, 1]
    assert r.values().tolist() == [14., 9.]
    r.to_dense().sum().backward()
    assert va.grad.tolist() == [0., 7., 3.]
    r = tg.tensor(a).to_sparse_csr() * tg.tensor(b).to_sparse_csc()  # other's pattern
    assert r.layout is tg.sparse_csr and r.col_indices().tolist() == [1, 2, 0, 1]
    np.testing.assert_array_equal(r.to_dense().numpy(), a * b)
    r = tg.tensor(a).to_sparse_csr() * tg.tensor(b).to_sparse()  # coalesced COO: both's
    assert r.col_indices().tolist() == [2, 1]


def test_construction_and_conversion_messages():
    with pytest.raises(RuntimeError, match=r"^values has incorrect size, expected \[2, 3\], "
                                           r"got \[2, 2\]"):
        tg.sparse_coo_tensor(tg.tensor([[0, 2]]), tg.ones(2, 2), (4, 3))
    with pytest.raises(RuntimeError, match="^found negative index -1 for dim 1"):
        tg.sparse_coo_tensor(tg.tensor([[0, 0], [0, -1]]), tg.ones(2), (2, 2))
    with pytest.raises(RuntimeError, match=r"^dense_to_sparse: sparse_dim argument must be in "
                                           r"\[0,3\] range, but 4 is given"):
        tg.ones(2, 3, 4).to_sparse(4)
    h = tg.sparse_coo_tensor(tg.tensor([[0, 2]]), tg.ones(2, 2), (3, 2))
    with pytest.raises(RuntimeError, match="^coo_to_sparse_csr: conversion from Sparse to "
                                           "SparseCsr for input tensors with sparse_dim"):
        h.to_sparse_csr()


# -- against PyTorch -----------------------------------------------------------------------------

CASES = {
    "dup_mul": lambda L: _dup(L) * 2,
    "dup_t": lambda L: _dup(L).t(),
    "dup_clone": lambda L: _dup(L).clone(),
    "dup_to": lambda L: _dup(L).to(L.float32),
    "dup_index_select": lambda L: _dup(L).index_select(1, L.tensor([2, 0])),
    "dup_narrow": lambda L: _dup(L).narrow_copy(1, 1, 2),
    "add": lambda L: _s(L) + _s(L, idx=[[0, 2], [0, 2]], vals=[7., 8.]),
    "add_same": lambda L: _s(L) + _s(L, dtype="float64"),
    "add_coalesced": lambda L: _s(L).coalesce() - _s(L, idx=[[0, 2], [0, 2]],
                                                     vals=[7., 8.]).coalesce(),
    "add_repeats": lambda L: L.sparse_coo_tensor([[0, 0]], L.tensor([1., 2.]), (2,))
    + L.sparse_coo_tensor([[0]], L.tensor([5.]), (2,)),
    "add_unordered": lambda L: _dup(L) + _dup(L).t().t() * 2,
    "mul_f64": lambda L: _s(L) * L.tensor(np.full((3, 3), 0.5)),
    "floor": lambda L: _s(L, vals=[-3., 2., -1., 5.]) // 2,
    "permute": lambda L: L.tensor(np.arange(24.).reshape(2, 3, 4)).to_sparse().permute(2, 0, 1),
    "T": lambda L: L.tensor(np.arange(24.).reshape(2, 3, 4)).to_sparse().T,
    "getitem": lambda L: _s(L)[0],
    "mask": lambda L: L.tensor(np.arange(9.).reshape(3, 3)).sparse_mask(_s(L, "float64")),
    "csr_csr": lambda L: L.tensor([[1., 0, 2], [0, 3, 0]]).to_sparse_csr()
    * L.tensor([[0., 5, 7], [1, 3, 0]]).to_sparse_csr(),
    "csr_csc": lambda L: L.tensor([[1., 0, 2], [0, 3, 0]]).to_sparse_csr()
    * L.tensor([[0., 5, 7], [1, 3, 0]]).to_sparse_csc(),
    "index_select_one": lambda L: _s(L).index_select(0, L.tensor([2])),
    "spdiags": lambda L: L.sparse.spdiags(L.tensor(np.arange(6.).reshape(2, 3)),
                                          L.tensor([0, 1]), (3, 3)),
}


def _form(t):
    if t.layout is not None and "csr" in str(t.layout):
        return ("csr", str(t.dtype).split(".")[-1], t.crow_indices().tolist(),
                t.col_indices().tolist(), t.values().tolist())
    return (str(t.dtype).split(".")[-1], tuple(t.shape), t._indices().tolist(),
            t._values().tolist(), t.is_coalesced())


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_pytorch(name):
    torch = pytest.importorskip("torch")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = _form(CASES[name](torch))
    assert _form(CASES[name](tg)) == theirs


def test_uncoalesced_leaf_gradients_against_pytorch():
    torch = pytest.importorskip("torch")
    import warnings
    for f in (lambda s: s * 2, lambda s: s.t(), lambda s: s.clone(), lambda s: -s):
        grads = []
        for L in (torch, tg):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = _dup(L, requires_grad=True)
                out = f(s).to_dense()
                (out * L.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape)
                                + 1)).sum().backward()
                grads.append(s.grad.to_dense().numpy())
        np.testing.assert_allclose(grads[1], grads[0])


def test_save_load_round_trip():
    buf = io.BytesIO()
    tg.save({"s": _dup(), "c": tg.tensor(np.eye(3)).to_sparse_csr()}, buf)
    buf.seek(0)
    back = tg.load(buf)
    assert back["s"]._indices().tolist() == DUP and not back["s"].is_coalesced()
    assert back["c"].layout is tg.sparse_csr


def test_sum_keepdim():
    s = _s()
    r = s.sum(0, keepdim=True)  # (a sparse dim kept: sparse, as PyTorch's)
    assert r.layout is tg.sparse_coo and r.shape == (1, 3) and r.sparse_dim() == 2
    assert r.to_dense().tolist() == [[2., 4., 4.]]
    r = s.sum((0, 1), keepdim=True)
    assert r.layout is tg.strided and r.tolist() == [[10.]]
    h = tg.sparse_coo_tensor(tg.tensor([[0, 2]]), tg.tensor([[1., 2.], [3., 4.]]), (3, 2))
    r = h.sum(1, keepdim=True)
    assert r.layout is tg.sparse_coo and r.sparse_dim() == 2 and r.shape == (3, 1)
    assert r.to_dense().tolist() == [[3.], [0.], [7.]]
    assert h.sum(0, keepdim=True).tolist() == [[4., 6.]]
    with pytest.raises(TypeError, match=r"sum\(\) received an invalid combination"):
        s.sum(keepdim=True)
    v = tg.tensor(VALS, dtype=tg.float64, requires_grad=True)
    (tg.sparse_coo_tensor(tg.tensor(IDX), v, (3, 3)).sum(1, keepdim=True).to_dense()
     * tg.tensor([[1.], [2.], [3.]], dtype=tg.float64)).sum().backward()
    assert v.grad.tolist() == [1., 2., 2., 3.]


def test_reshape_like_ops_and_leaf_flags():
    s = _s()
    for f in (lambda: s.reshape(9), lambda: s.flatten()):
        with pytest.raises(RuntimeError, match="^reshape is not implemented for sparse"):
            f()
    with pytest.raises(NotImplementedError, match="^Could not run 'aten::view'"):
        s.view(9)
    with pytest.raises(RuntimeError, match="^unsupported memory format option"):
        s.contiguous()
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype"):
        _s(dtype="int64", requires_grad=True)
    u = _s(requires_grad=True, check_invariants=False)  # (the unchecked path makes a leaf too)
    assert u.requires_grad and u.is_leaf

