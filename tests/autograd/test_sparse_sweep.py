"""Sparse tensors against PyTorch's behaviour: the elementwise and shape ops of COO tensors, the
layouts of their gradients, and the errors PyTorch gives. Values are checked against float64
NumPy on the dense form, gradients by finite differences (gradcheck at the values); one test
compares a table of cases with PyTorch itself where it is installed."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import gradcheck

IDX = [[0, 1, 1], [2, 0, 2]]
VALS = [3., -4., 5.]


def _c(requires_grad=False):
    """A coalesced (2, 3) float64 COO tensor with 3 of its 6 elements specified."""
    s = tg.sparse_coo_tensor(IDX, tg.tensor(VALS, dtype=tg.float64), (2, 3)).coalesce()
    return s.requires_grad_() if requires_grad else s


def _ref():
    a = np.zeros((2, 3))
    a[tuple(np.array(IDX))] = VALS
    return a


def _d(requires_grad=False):
    d = tg.tensor(np.arange(6.).reshape(2, 3) - 2.5, dtype=tg.float64)
    return d.requires_grad_() if requires_grad else d


def _at_values(fn, idx=IDX, size=(2, 3)):
    """``fn`` of the sparse tensor rebuilt from values ``v``, densified (gradcheck's input)."""
    def f(v):
        out = fn(tg.sparse_coo_tensor(idx, v, size))
        return out.to_dense() if out.layout is tg.sparse_coo else out
    return f


def _vals(requires_grad=True):
    return tg.tensor(VALS, dtype=tg.float64, requires_grad=requires_grad)


# -- zero-preserving elementwise ops ------------------------------------------------------------

UNARY = {"abs": np.abs, "sin": np.sin, "sinh": np.sinh, "tan": np.tan, "tanh": np.tanh,
         "atan": np.arctan, "asinh": np.arcsinh, "expm1": np.expm1, "sign": np.sign,
         "neg": np.negative, "relu": lambda a: np.maximum(a, 0), "square": np.square,
         "deg2rad": np.deg2rad, "trunc": np.trunc, "floor": np.floor, "ceil": np.ceil,
         "signbit": np.signbit, "isnan": np.isnan, "frac": lambda a: a - np.trunc(a)}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_keeps_the_pattern(name):
    r = getattr(_c(), name)()
    assert r.layout is tg.sparse_coo and r.is_coalesced() and r._nnz() == 3
    np.testing.assert_allclose(r.to_dense().numpy(), UNARY[name](_ref()), rtol=1e-12)


def test_unary_coalesces_duplicates_first():
    s = tg.sparse_coo_tensor([[0, 0, 1]], tg.tensor([-1., -2., 3.], dtype=tg.float64), (2,))
    r = s.abs()  # |-1 + -2|, not |-1| + |-2|
    assert r.is_coalesced() and r._nnz() == 2
    assert r.to_dense().tolist() == [3., 3.]


def test_unary_gradients_by_finite_differences():
    for name in ("abs", "sin", "tanh", "expm1", "square", "atan"):
        assert gradcheck(_at_values(lambda s, n=name: getattr(s, n)()), (_vals(),))
    assert gradcheck(_at_values(lambda s: s.pow(3)), (_vals(),))
    assert gradcheck(_at_values(lambda s: (s * s).sqrt()), (_vals(),))


def test_pow_and_refused_ops():
    np.testing.assert_allclose((_c() ** 2).to_dense().numpy(), _ref() ** 2)
    np.testing.assert_allclose(_c().pow(-1).to_dense().numpy()[_ref() != 0],
                               1 / _ref()[_ref() != 0])
    with pytest.raises(RuntimeError, match="cannot raise to zeroth power on sparse tensor"):
        _c().pow(0)
    with pytest.raises(NotImplementedError, match="does not support sparse COO tensors"):
        _c().exp()  # exp(0) != 0: PyTorch has no sparse exp either


def test_compressed_unary():
    c = _d().to_sparse_csr()
    r = c.abs()
    assert r.layout is tg.sparse_csr and r.col_indices().tolist() == c.col_indices().tolist()
    np.testing.assert_allclose(r.to_dense().numpy(), np.abs(_d().numpy()))
    np.testing.assert_allclose(c.sin().to_dense().numpy(), np.sin(_d().numpy()))
    with pytest.raises(NotImplementedError, match="square: not supported for sparse CSR"):
        c.square()


# -- products with dense and sparse tensors -----------------------------------------------------

def test_mul_by_dense_is_sparse_with_sparse_gradients():
    s, d = _c(True), _d(True)
    for r in (s * d, d * s):
        assert r.layout is tg.sparse_coo and r.is_coalesced() and r._nnz() == 3
        np.testing.assert_allclose(r.to_dense().detach().numpy(), _ref() * d.detach().numpy())
    w = np.arange(1., 7.).reshape(2, 3)
    ((s * d).to_dense() * tg.tensor(w)).sum().backward()
    mask = _ref() != 0
    assert s.grad.layout is tg.sparse_coo and d.grad.layout is tg.sparse_coo  # (PyTorch's)
    np.testing.assert_allclose(s.grad.to_dense().numpy(), mask * w * d.detach().numpy())
    np.testing.assert_allclose(d.grad.to_dense().numpy(), w * _ref())
    # (the dense leaf's gradient is sparse: gradcheck compares it densified)
    assert gradcheck(lambda v, m: _at_values(lambda t: t * m)(v), (_vals(), _d(True)))


def test_mul_broadcasts_dense_and_intersects_sparse():
    row = tg.tensor([1., 2., 3.], dtype=tg.float64)
    np.testing.assert_allclose((_c() * row).to_dense().numpy(), _ref() * [1, 2, 3])
    other = tg.sparse_coo_tensor([[1, 0], [2, 0]], tg.tensor([2., 7.], dtype=tg.float64),
                                 (2, 3))
    r = _c() * other
    assert r.is_coalesced() and r._nnz() == 1 and r.indices().tolist() == [[1], [2]]
    np.testing.assert_allclose(r.to_dense().numpy(), _ref() * other.to_dense().numpy())
    assert gradcheck(lambda v: _at_values(lambda t: t * t)(v), (_vals(),))
    with pytest.raises(RuntimeError, match="does not broadcast"):
        _c() * tg.ones(4, dtype=tg.float64)


def test_division_needs_a_scalar_divisor():
    np.testing.assert_allclose((_c() / tg.tensor(2., dtype=tg.float64)).to_dense().numpy(),
                               _ref() / 2)
    with pytest.raises(RuntimeError, match=r"Sparse division requires a scalar or zero-dim "
                                           r"dense tensor divisor \(got shape \[2, 3\]"):
        _c() / _d()


def test_add_sparse_dense_refused_dense_sparse_gives_a_dense_gradient():
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use "
                                           r"add\(dense, sparse\) instead."):
        _c() + _d()
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\)"):
        _c() - _d()
    s, d = _c(True), _d(True)
    w = np.arange(1., 7.).reshape(2, 3)
    out = d + s
    np.testing.assert_allclose(out.detach().numpy(), d.detach().numpy() + _ref())
    ((out - s * 0.5 + (d - s)) * tg.tensor(w)).sum().backward()
    # d + s, d - s: AddBackward0 / SubBackward0 hand s the whole dense gradient
    assert s.grad.layout is tg.strided
    np.testing.assert_allclose(s.grad.numpy(), w - 0.5 * w * (_ref() != 0) - w)
    np.testing.assert_allclose(d.grad.numpy(), 2 * w)


def test_sum_gradients_dense_for_tensor_sum_masked_for_sparse_sum():
    s = _c(True)
    s.sum().backward()
    assert s.grad.layout is tg.strided and s.grad.tolist() == [[1.] * 3] * 2
    s = _c(True)
    tg.sparse.sum(s).backward()
    assert s.grad.layout is tg.sparse_coo
    np.testing.assert_array_equal(s.grad.to_dense().numpy(), (_ref() != 0) * 1.)
    assert _c().sum(dtype=tg.float32).dtype is tg.float32


def test_to_dense_masked_grad_false_and_dtype():
    s = _c(True)
    (s.to_dense(masked_grad=False) * tg.tensor(np.arange(1., 7.).reshape(2, 3))).sum() \
        .backward()
    assert s.grad.layout is tg.sparse_coo and s.grad._nnz() == 6  # every element a variable
    np.testing.assert_allclose(s.grad.to_dense().numpy(), np.arange(1., 7.).reshape(2, 3))
    with pytest.raises(RuntimeError, match="dtype argument is not supported by "
                                           "sparse_to_dense"):
        _c().to_dense(tg.float32)
    with pytest.raises(RuntimeError, match="not supported by sparse_csr_to_dense"):
        _d().to_sparse_csr().to_dense(tg.float32)


def test_dense_at_sparse_and_sparse_at_vector():
    s, d = _c(True), tg.tensor(np.arange(6.).reshape(3, 2) - 1, dtype=tg.float64,
                               requires_grad=True)
    out = d @ s  # (3, 2) @ (2, 3)
    np.testing.assert_allclose(out.detach().numpy(), d.detach().numpy() @ _ref())
    w = np.arange(1., 10.).reshape(3, 3)
    (out * tg.tensor(w)).sum().backward()
    assert s.grad.layout is tg.strided  # (torch.mm(dense, sparse)'s: not masked)
    np.testing.assert_allclose(s.grad.numpy(), d.detach().numpy().T @ w)
    np.testing.assert_allclose(d.grad.numpy(), w @ _ref().T)
    assert gradcheck(lambda v, m: m @ _at_values(lambda t: t)(v).to_sparse(),
                     (_vals(), d.detach().requires_grad_()))
    assert gradcheck(lambda v, m: m @ tg.sparse_coo_tensor(IDX, v, (2, 3)),
                     (_vals(), d.detach().requires_grad_()))
    vec = tg.tensor([1., 2., 3.], dtype=tg.float64)
    np.testing.assert_allclose((_c() @ vec).numpy(), _ref() @ [1, 2, 3])
    np.testing.assert_allclose((tg.tensor([1., -1.], dtype=tg.float64) @ _c()).numpy(),
                               np.array([1, -1]) @ _ref())
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        tg.ones(2, 2, dtype=tg.float64) @ _c().t()


def test_sparse_times_sparse():
    b = tg.sparse_coo_tensor([[0, 2, 2], [1, 0, 1]], tg.tensor([2., 7., -1.], dtype=tg.float64),
                             (3, 2)).coalesce()
    bref = b.to_dense().numpy()
    for r in (tg.sparse.mm(_c(), b), _c() @ b, _c().mm(b)):
        assert r.layout is tg.sparse_coo and r.is_coalesced()
        np.testing.assert_allclose(r.to_dense().numpy(), _ref() @ bref)
    assert gradcheck(lambda v, w: tg.sparse.mm(tg.sparse_coo_tensor(IDX, v, (2, 3)),
                                               tg.sparse_coo_tensor(b.indices(), w, (3, 2)))
                     .to_dense(), (_vals(), b.values().detach().requires_grad_()))
    s = _c(True)
    tg.sparse.mm(s, b).to_dense().sum().backward()
    assert s.grad.layout is tg.sparse_coo  # masked to s's pattern
    np.testing.assert_allclose(s.grad.to_dense().numpy(),
                               (_ref() != 0) * (np.ones((2, 2)) @ bref.T))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        tg.sparse.mm(_c(), _c())


def test_add_in_place_merges_coalesced_operands():
    a = _c()
    a.add_(_c(), alpha=2)
    assert a.is_coalesced() and a._nnz() == 3
    np.testing.assert_allclose(a.to_dense().numpy(), 3 * _ref())
    u = tg.sparse_coo_tensor([[0, 0]], tg.tensor([1., 2.], dtype=tg.float64), (2,))
    u.add_(u.coalesce())  # an uncoalesced operand: concatenated, as PyTorch's
    assert not u.is_coalesced() and u._nnz() == 3 and u.to_dense().tolist() == [6., 0.]


def test_coo_to_compressed_gradient_is_the_incoming_one_in_coo_form():
    s, d = _c(True), _d()
    (s.to_sparse_csr() @ d.t()).sum().backward()  # torch.mm's dense gradient: not masked
    full = np.ones((2, 2)) @ d.numpy()
    assert s.grad.layout is tg.sparse_coo and s.grad._nnz() == np.count_nonzero(full) > 3
    np.testing.assert_allclose(s.grad.to_dense().numpy(), full)
    s = _c(True)
    s.to_sparse_csc().to_dense().sum().backward()  # masked through to_dense
    np.testing.assert_allclose(s.grad.to_dense().numpy(), (_ref() != 0) * 1.)
    assert gradcheck(lambda v: (tg.sparse_coo_tensor(IDX, v, (2, 3)).to_sparse_csr()
                                @ _d().t()), (_vals(),))


# -- shape ops ------------------------------------------------------------------------------------

def _hybrid():
    return tg.sparse_coo_tensor([[0, 2], [1, 0]], tg.tensor([[1., 2.], [3., 4.]],
                                                           dtype=tg.float64), (3, 2, 2))


def test_transpose():
    r = _c().transpose(0, 1)
    assert r.shape == (3, 2) and not r.is_coalesced()
    np.testing.assert_allclose(r.to_dense().numpy(), _ref().T)
    h = _hybrid()
    np.testing.assert_allclose(h.transpose(0, 1).to_dense().numpy(),
                               h.to_dense().numpy().transpose(1, 0, 2))
    with pytest.raises(RuntimeError, match="transposed dimensions must be sparse"):
        h.transpose(1, 2)
    assert gradcheck(_at_values(lambda t: t.transpose(1, 0)), (_vals(),))


@pytest.mark.parametrize("dim, index", [(0, [1, 1, 0]), (1, [2, 0]), (1, [-1, 1, 2, 2]),
                                        (0, [])])
def test_index_select(dim, index):
    r = _c().index_select(dim, tg.tensor(index, dtype=tg.int64))
    np.testing.assert_allclose(r.to_dense().numpy(),
                               np.take(_ref(), np.array(index, np.int64), axis=dim))
    assert gradcheck(_at_values(lambda t: t.index_select(dim, tg.tensor(index,
                                                                         dtype=tg.int64))),
                     (_vals(),))


def test_index_select_dense_dim_and_errors():
    h = _hybrid()
    np.testing.assert_allclose(h.index_select(2, tg.tensor([1])).to_dense().numpy(),
                               h.to_dense().numpy()[:, :, [1]])
    with pytest.raises(IndexError, match="index out of range"):
        _c().index_select(0, tg.tensor([2]))


@pytest.mark.parametrize("dim, start, length", [(1, 1, 2), (0, 1, 1), (1, -2, 1), (0, 0, 0)])
def test_narrow_copy(dim, start, length):
    r = _c().narrow_copy(dim, start, length)
    ref = np.take(_ref(), np.arange(start % _ref().shape[dim],
                                    start % _ref().shape[dim] + length), axis=dim)
    np.testing.assert_allclose(r.to_dense().numpy(), ref)
    assert r.is_coalesced()
    assert gradcheck(_at_values(lambda t: t.narrow_copy(dim, start, length)), (_vals(),))
    with pytest.raises(IndexError, match="exceeds dimension size"):
        _c().narrow_copy(1, 2, 2)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_unsqueeze(dim):
    r = _c().unsqueeze(dim)
    np.testing.assert_allclose(r.to_dense().numpy(), np.expand_dims(_ref(), dim))
    assert r.sparse_dim() == 3 and r.dense_dim() == 0
    h = _hybrid().unsqueeze(3)
    assert (h.sparse_dim(), h.dense_dim()) == (2, 2)
    np.testing.assert_allclose(h.to_dense().numpy(), _hybrid().to_dense().numpy()[..., None])
    assert gradcheck(_at_values(lambda t: t.unsqueeze(dim)), (_vals(),))


# -- errors and parts ---------------------------------------------------------------------------

def test_pytorch_messages():
    with pytest.raises(RuntimeError, match="sparse_dim argument must be in >0 when self.dim"):
        _d().to_sparse(0)
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed tensor "
                                           "layout but got Sparse"):
        _c().crow_indices()
    with pytest.raises(RuntimeError, match="row_indices expected sparse column compressed"):
        _c().row_indices()
    with pytest.raises(RuntimeError, match=r"size is inconsistent with indices: for dim 0, "
                                           r"size is 3 but found index 3"):
        tg.sparse_coo_tensor([[0, 3]], [1., 2.], (3,), check_invariants=True)


def test_smm_result_is_uncoalesced_as_pytorch_says():
    r = tg.smm(_c(), _d().t())
    assert not r.is_coalesced() and r._nnz() == 4
    np.testing.assert_allclose(r.to_dense().numpy(), _ref() @ _d().numpy().T)


# -- against PyTorch ----------------------------------------------------------------------------

CASES = {
    "abs": lambda m, s, d: (-s).abs(),
    "pow": lambda m, s, d: s.pow(3),
    "relu": lambda m, s, d: s.relu(),
    "mul_sd": lambda m, s, d: s * d,
    "mul_ds": lambda m, s, d: d * s,
    "mul_ss": lambda m, s, d: s * s,
    "add_ds": lambda m, s, d: d + s,
    "sub_ds": lambda m, s, d: d - s,
    "sum": lambda m, s, d: s.sum(),
    "sparse.sum": lambda m, s, d: m.sparse.sum(s),
    "sparse.sum0": lambda m, s, d: m.sparse.sum(s, 0),
    "mm": lambda m, s, d: m.mm(s, d.t()),
    "sparse.mm": lambda m, s, d: m.sparse.mm(s, d.t()),
    "rmatmul": lambda m, s, d: d.t() @ s,
    "matvec": lambda m, s, d: s @ d[0],
    "softmax": lambda m, s, d: m.sparse.softmax(s, 1),
    "log_softmax": lambda m, s, d: m.sparse.log_softmax(s, 0),
    "to_dense_unmasked": lambda m, s, d: s.to_dense(masked_grad=False),
    "transpose": lambda m, s, d: s.transpose(0, 1),
    "t": lambda m, s, d: s.t(),
    "clone": lambda m, s, d: s.clone(),
    "sparse_mask": lambda m, s, d: d.sparse_mask(s.detach()),
    "csr_mm": lambda m, s, d: d.to_sparse_csr() @ d.t(),
    "coo_to_csr": lambda m, s, d: s.to_sparse_csr(),
    "coo_to_csr_mm": lambda m, s, d: s.to_sparse_csr() @ d.t(),
    "sparse_sparse_mm": lambda m, s, d: m.sparse.mm(s, s.t()),
    "add_": lambda m, s, d: s.detach().clone().add_(s.detach()) + 0 * d.sum(),
}


def _describe(m, fn):
    """(layout and dense value of the result, and of the two leaves' gradients) or the
    error's type, for module ``m`` (torch or tritongrad)."""
    def dense(t):
        if t is None:
            return None
        lay = str(t.layout).rsplit(".", 1)[-1]
        v = t.to_dense() if lay != "strided" else t
        return lay, np.round(np.asarray(v.detach().tolist(), float), 8).tolist()
    s = m.sparse_coo_tensor(IDX, VALS, (2, 3), dtype=m.float64).coalesce().requires_grad_()
    d = (m.arange(6., dtype=m.float64).reshape(2, 3) - 2.5).requires_grad_()
    try:
        out = fn(m, s, d)
        o = out.to_dense() if out.layout != m.strided else out
        (o * m.arange(1., o.numel() + 1, dtype=m.float64).reshape(o.shape)).sum().backward()
    except Exception as e:  # noqa: BLE001 - the error's type is the result compared
        return type(e).__name__
    return dense(out), dense(s.grad), dense(d.grad)


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_pytorch(name):
    torch = pytest.importorskip("torch")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _describe(torch, CASES[name])
    assert _describe(tg, CASES[name]) == expected


def test_new_ops_on_each_device(device):
    """The same ops on the CPU and the emulated CUDA device (dense kernels on the values)."""
    s = tg.sparse_coo_tensor(IDX, tg.tensor(VALS, dtype=tg.float64), (2, 3), device=device)
    s = s.coalesce().requires_grad_()
    d = tg.tensor(np.arange(6.).reshape(2, 3) - 2.5, dtype=tg.float64, device=device,
                  requires_grad=True)
    w = tg.tensor(np.arange(6.).reshape(3, 2), dtype=tg.float64, device=device)
    t = s.transpose(0, 1).narrow_copy(0, 0, 3).unsqueeze(2)  # (3, 2, 1)
    out = (s * d).abs().to_dense() + (d + s) + (w.t() @ t.sum(2).coalesce()).t().sum()
    out.sum().backward()
    dn, wn = d.detach().cpu().numpy(), w.cpu().numpy()
    ref = np.abs(_ref() * dn) + dn + _ref() + (wn.T @ _ref().T).sum()
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref)
    assert s.grad.layout is tg.strided and d.grad.device == d.device
    # (d + s hands s a dense gradient; the other terms reach it through its values, masked)
    mask = _ref() != 0
    np.testing.assert_allclose(s.grad.cpu().numpy(),
                               1 + mask * (np.sign(_ref() * dn) * dn + 6 * wn.sum(1)[None, :]))
    np.testing.assert_allclose(d.grad.cpu().numpy(), np.sign(_ref() * dn) * _ref() + 1)


def test_in_place_unary_and_select():
    s = _c()
    assert s.abs_() is s and s.is_coalesced()
    np.testing.assert_allclose(s.to_dense().numpy(), np.abs(_ref()))
    s.neg_()
    np.testing.assert_allclose(s.to_dense().numpy(), -np.abs(_ref()))
    c = _d().to_sparse_csr()
    c.sin_()
    np.testing.assert_allclose(c.to_dense().numpy(), np.sin(_d().numpy()))
    with pytest.raises(RuntimeError, match="requires grad cannot be changed in place"):
        _c(True).abs_()
    r = _c().select(0, 1)
    assert r.layout is tg.sparse_coo and r.shape == (3,)
    np.testing.assert_allclose(r.to_dense().numpy(), _ref()[1])
    np.testing.assert_allclose(_c().select(1, -1).to_dense().numpy(), _ref()[:, -1])
    h = _hybrid()
    np.testing.assert_allclose(h.select(2, 1).to_dense().numpy(), h.to_dense().numpy()[:, :, 1])
    one = tg.sparse_coo_tensor([[0, 2, 0]], tg.tensor([1., 2., 4.], dtype=tg.float64), (3,))
    assert one.select(0, 0).layout is tg.strided and one.select(0, 0).item() == 5.
    assert gradcheck(_at_values(lambda t: t.select(1, 2)), (_vals(),))
    with pytest.raises(IndexError, match="out of range"):
        _c().select(0, 2)


def test_mul_by_dense_keeps_an_uncoalesced_order():
    u = tg.sparse_coo_tensor([[1, 0], [0, 2]], tg.tensor([1., 2.], dtype=tg.float64), (2, 3))
    r = u * _d()
    assert not r.is_coalesced() and r._indices().tolist() == [[1, 0], [0, 2]]
    np.testing.assert_allclose(r.to_dense().numpy(), u.to_dense().numpy() * _d().numpy())


def test_compressed_times_dense():
    c, d = _d().to_sparse_csr(), tg.tensor(np.arange(6.).reshape(2, 3), dtype=tg.float64)
    for r in (c * d, d * c, c * d[0]):
        assert r.layout is tg.sparse_csr and r.col_indices().tolist() == c.col_indices().tolist()
    np.testing.assert_allclose((c * d).to_dense().numpy(), _d().numpy() * d.numpy())
    np.testing.assert_allclose((c * d[0]).to_dense().numpy(), _d().numpy() * d.numpy()[0])
    crow, col = c.crow_indices(), c.col_indices()
    assert gradcheck(lambda v, m: (tg.sparse_csr_tensor(crow, col, v, (2, 3)) * m).to_dense(),
                     (c.values().detach().requires_grad_(), d.requires_grad_()))


def test_mm_of_dense_and_sparse_through_the_function():
    # tg.mm(dense, sparse) went through the dense path and refused the sparse operand
    d = tg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tg.float64, requires_grad=True)
    s = tg.tensor([[0.0, 1.0], [2.0, 0.0]], dtype=tg.float64).to_sparse()
    np.testing.assert_allclose(tg.mm(d, s).detach().numpy(), d.detach().numpy() @ s.to_dense()
                               .numpy())
    assert gradcheck(lambda x: tg.mm(x, s), (d,))


def test_top_level_functions_take_sparse_tensors_as_their_methods_do():
    # tg.abs(s), tg.transpose(s, 0, 1), ...: PyTorch's functions dispatch on the layout; they
    # refused sparse tensors here (the methods took them)
    s = tg.tensor([[0.0, -1.0], [2.0, 0.0]]).to_sparse()
    d = s.to_dense().numpy()
    for call, want in ((lambda: tg.abs(s), np.abs(d)), (lambda: tg.neg(s), -d),
                       (lambda: tg.sin(s), np.sin(d)), (lambda: tg.transpose(s, 0, 1), d.T),
                       (lambda: tg.mul(s, s), d * d), (lambda: tg.add(s, s), 2 * d),
                       (lambda: tg.index_select(s, 0, tg.tensor([1])), d[[1]])):
        r = call()
        assert r.layout is tg.sparse_coo
        np.testing.assert_allclose(r.to_dense().numpy(), want)
    assert tg.sum(s).item() == 1.0
    joined = tg.cat([s, s])  # (a list first: routed by sparse_ops.sparse_function)
    assert joined.layout is tg.sparse_coo
    np.testing.assert_allclose(joined.to_dense().numpy(), np.concatenate([d, d]))
    with pytest.raises(NotImplementedError, match="does not support sparse COO tensors"):
        tg.exp(s)  # exp(0) != 0: PyTorch has no sparse exp either
