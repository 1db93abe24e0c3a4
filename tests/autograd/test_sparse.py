"""Sparse COO tensors (autograd/sparse.py): construction and its checks, the parts and their
invariants, conversions, arithmetic, ``tg.sparse`` products and sums against float64 NumPy
references, gradients through every primitive (tritongrad's gradcheck, masked and not, and
independent finite differences), the gradient-layout cases of leaf accumulation, and
PyTorch's repr."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import gradcheck
from tritongrad.autograd.gradcheck import GradcheckError
from tests.helpers import numeric_grads

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) twice: uncoalesced
VALS = [1.5, -2.0, 3.0, 0.25]


def _dense_ref(idx, vals, size) -> np.ndarray:
    out = np.zeros(size, np.float64)
    np.add.at(out, tuple(np.asarray(idx)), np.asarray(vals, np.float64))
    return out


def _s(device="cpu", dtype=tg.float64, **kw):
    return tg.sparse_coo_tensor(IDX, tg.tensor(VALS, dtype=dtype, device=device), (2, 3), **kw)


# -- construction and parts ---------------------------------------------------------------------

def test_parts_and_flags():
    s = _s()
    assert s.is_sparse and not tg.ones(2).is_sparse
    assert s.layout is tg.sparse_coo and tg.ones(1).layout is tg.strided
    assert s.shape == (2, 3) and s.size(-1) == 3 and s.dim() == 2 and s.numel() == 6
    assert (s._nnz(), s.sparse_dim(), s.dense_dim()) == (4, 2, 0)
    assert not s.is_coalesced()
    with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
        s.indices()
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 3
    assert c.indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    assert c.values().tolist() == [1.75, -2.0, 3.0]
    assert s._indices().tolist() == IDX and s._values().tolist() == VALS


def test_size_inferred_and_hybrid():
    s = tg.sparse_coo_tensor([[0, 3]], tg.ones(2, 4))  # one sparse dim, one dense dim
    assert s.shape == (4, 4) and (s.sparse_dim(), s.dense_dim()) == (1, 1)
    ref = np.zeros((4, 4))
    ref[[0, 3]] = 1
    np.testing.assert_array_equal(s.to_dense().numpy(), ref)


@pytest.mark.parametrize("args, message", [
    (([[0, 5]], [1., 2.], (3,)), "size is inconsistent with indices: for dim 0, size is 3"),
    (([[0, -1]], [1., 2.], (3,)), "negative index -1"),
    (([[0, 1]], [1., 2., 3.], (3,)),
     "indices and values must have same nnz, but got nnz from indices: 2, nnz from values: 3"),
    (([0, 1], [1., 2.], (3,)), "indices must be sparse_dim x nnz"),
    (([[0, 1]], [1., 2.], (3, 4)), "'len\\(size\\) == sparse_dim \\+ dense_dim' is not satisfied"),
    ((tg.tensor([[0., 1.]]), [1., 2.], (3,)), "indices must be an int64 tensor"),
])
def test_construction_errors(args, message):
    with pytest.raises(RuntimeError, match=message):
        tg.sparse_coo_tensor(*args)


def test_dense_ops_refuse_a_sparse_tensor_clearly():
    with pytest.raises(NotImplementedError, match="does not support sparse COO tensors"):
        _s().exp()
    with pytest.raises(RuntimeError, match="Sparse division requires a scalar"):
        _s() / tg.ones(2, 3, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="sparse COO tensors have no strides"):
        _s().stride()


# -- conversions and arithmetic against NumPy ---------------------------------------------------

def test_to_dense_sums_duplicates(device):
    np.testing.assert_allclose(_s(device).to_dense().cpu().numpy(),
                               _dense_ref(IDX, VALS, (2, 3)))


def test_to_sparse_round_trip_and_sparse_dim(device):
    a = np.array([[0., 1., 0.], [2., 0., 0.], [0., 0., 0.]])
    s = tg.tensor(a, device=device).to_sparse()
    assert s.is_coalesced() and s.indices().tolist() == [[0, 1], [1, 0]]
    assert s.values().tolist() == [1., 2.]
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), a)
    rows = tg.tensor(a, device=device).to_sparse(1)  # rows with any nonzero, dense rows
    assert rows.indices().tolist() == [[0, 1]] and rows.values().shape == (2, 3)
    assert tg.ones(2).to_dense() is not None  # a dense tensor's to_dense is itself


def test_arithmetic(device):
    s, ref = _s(device), _dense_ref(IDX, VALS, (2, 3))
    d = np.arange(6.).reshape(2, 3)
    dt = tg.tensor(d, device=device)
    np.testing.assert_allclose((s * 2).to_dense().cpu().numpy(), 2 * ref)
    np.testing.assert_allclose((3 * s).to_dense().cpu().numpy(), 3 * ref)
    np.testing.assert_allclose((s / 4).to_dense().cpu().numpy(), ref / 4)
    np.testing.assert_allclose((-s).to_dense().cpu().numpy(), -ref)
    both = s + s
    assert both.is_sparse and not both.is_coalesced()
    np.testing.assert_allclose(both.to_dense().cpu().numpy(), 2 * ref)
    c = s.coalesce()
    assert (c + c).is_coalesced() and (c + c)._nnz() == 3  # coalesced operands: merged
    np.testing.assert_allclose((s - c).to_dense().cpu().numpy(), 0 * ref)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + dt  # (as PyTorch's)
    np.testing.assert_allclose((dt + s).cpu().numpy(), ref + d)
    with pytest.raises(RuntimeError, match="must have the same size"):
        s + tg.sparse_coo_tensor([[0]], tg.ones(1, dtype=tg.float64, device=device), (4,))


def test_mm_sum_addmm_against_numpy(device):
    s, ref = _s(device), _dense_ref(IDX, VALS, (2, 3))
    b = np.random.default_rng(0).standard_normal((3, 4))
    bt = tg.tensor(b, device=device)
    for out in (tg.sparse.mm(s, bt), tg.mm(s, bt), s @ bt, s.mm(bt)):
        np.testing.assert_allclose(out.cpu().numpy(), ref @ b, rtol=1e-12)
    m = tg.ones(2, 4, dtype=tg.float64, device=device)
    np.testing.assert_allclose(tg.sparse.addmm(m, s, bt, beta=0.5, alpha=2).cpu().numpy(),
                               0.5 + 2 * ref @ b, rtol=1e-12)
    assert tg.sparse.sum(s).item() == pytest.approx(ref.sum())
    row_sums = tg.sparse.sum(s, 1)
    assert row_sums.is_sparse and row_sums.is_coalesced()
    np.testing.assert_allclose(row_sums.to_dense().cpu().numpy(), ref.sum(1))
    np.testing.assert_allclose(tg.sparse.sum(s, (0, 1)).item(), ref.sum())
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied \\(2x3 and 4x4\\)"):
        tg.sparse.mm(s, tg.ones(4, 4, dtype=tg.float64, device=device))


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_over_the_specified_elements(device, dim):
    idx = [[0, 1, 1, 0, 2], [2, 0, 2, 1, 1]]
    v = np.array([0.5, -1.0, 2.0, 3.0, 0.25])
    s = tg.sparse_coo_tensor(idx, tg.tensor(v, device=device), (3, 3))
    dense = np.full((3, 3), -np.inf)
    dense[tuple(np.array(idx))] = v
    e = np.exp(dense - dense.max(dim, keepdims=True))
    ref = np.nan_to_num(e / e.sum(dim, keepdims=True))
    out = tg.sparse.softmax(s, dim)
    assert out.is_sparse and out._nnz() == 5
    np.testing.assert_allclose(out.to_dense().cpu().numpy(), ref, rtol=1e-12)
    logs = tg.sparse.log_softmax(s, dim).to_dense().cpu().numpy()
    np.testing.assert_allclose(logs[ref > 0], np.log(ref[ref > 0]), rtol=1e-12)
    if device != "cpu":
        return  # (the gradients: on the CPU, where gradcheck's many backward calls are cheap)
    leaf = tg.sparse_coo_tensor(idx, tg.tensor(v), (3, 3), requires_grad=True)
    assert gradcheck(lambda a: tg.sparse.softmax(a, dim), (leaf,), masked=True)
    assert gradcheck(lambda a: tg.sparse.log_softmax(a, dim), (leaf,), masked=True)


def test_hybrid_sum_over_a_dense_dim():
    v = np.arange(8.).reshape(4, 2)
    s = tg.sparse_coo_tensor(IDX, tg.tensor(v), (2, 3, 2))
    ref = np.zeros((2, 3, 2))
    np.add.at(ref, tuple(np.asarray(IDX)), v)
    out = tg.sparse.sum(s, 2)
    assert out.is_sparse and out.shape == (2, 3)
    np.testing.assert_allclose(out.to_dense().numpy(), ref.sum(2))


def test_sparse_mask():
    d = tg.arange(6.).reshape(2, 3)
    m = d.sparse_mask(_s(dtype=tg.float32))
    assert m.is_coalesced() and m.indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    assert m.values().tolist() == [2., 3., 5.]


# -- autograd -----------------------------------------------------------------------------------

def _leaf(device="cpu"):
    return _s(device, requires_grad=True)


def test_gradcheck_masked_sparse_mm_and_ops():
    s = _leaf()
    d = tg.rand(3, 4, dtype=tg.float64, requires_grad=True)
    assert gradcheck(lambda a, b: tg.sparse.mm(a, b), (s, d), masked=True)
    assert gradcheck(lambda a, b: tg.sparse.mm(a, b), (s, d), check_sparse_nnz=True)
    assert gradcheck(lambda a, b: tg.mm(a, b), (s, d), masked=False)
    assert gradcheck(lambda a: (a.coalesce() * 3).to_dense().exp(), (s,), masked=True)
    assert gradcheck(lambda a: (a + a.coalesce()).t(), (s,), masked=True)  # sparse output
    assert gradcheck(lambda a: tg.sparse.sum(a, 0), (s,), masked=True)


def test_gradcheck_can_fail_on_a_wrong_sparse_rule(monkeypatch):
    """A negative control: a _FromParts rule that doubles its gradient is caught."""
    from tritongrad.autograd import sparse as sp
    rule = sp._FromParts.backward

    def doubled(ctx, g):
        out = rule(ctx, g)
        return (out[0], out[1] * 2) + out[2:]

    monkeypatch.setattr(sp._FromParts, "backward", staticmethod(doubled))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(lambda a: a.to_dense(), (_leaf(),), masked=True)


def test_gradient_of_values_against_finite_differences(device):
    v = tg.tensor(np.arange(1., 9.).reshape(4, 2) / 7, dtype=tg.float64, device=device,
                  requires_grad=True)
    w = np.linspace(-1, 1, 12).reshape(2, 3, 2)

    def f(vals):
        s = tg.sparse_coo_tensor(tg.tensor(IDX, device=vals.device), vals, (2, 3, 2))
        return (s.coalesce().to_dense().sin() * tg.tensor(w, device=vals.device)).sum()

    f(v).backward()
    np.testing.assert_allclose(v.grad.cpu().numpy(), numeric_grads(f, [v])[0], rtol=1e-6,
                               atol=1e-9)


def test_leaf_gradients_follow_pytorch(device):
    b = tg.tensor(np.random.default_rng(1).standard_normal((3, 2)), device=device)
    g_full = np.ones((2, 2)) @ b.cpu().numpy().T  # dC/dA of sum(A @ B)
    s = _leaf(device)
    tg.sparse.mm(s, b).sum().backward()  # sparse.mm: sparse, masked to the pattern
    assert s.grad.is_sparse
    c = s.grad.coalesce()
    assert c.indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    np.testing.assert_allclose(c.values().cpu().numpy(), g_full[(0, 1, 1), (2, 0, 2)])
    s.grad = None
    tg.mm(s, b).sum().backward()  # torch.mm: the dense gradient, as PyTorch's
    assert not s.grad.is_sparse
    np.testing.assert_allclose(s.grad.cpu().numpy(), g_full)
    s.grad = None
    s.to_dense().sum().backward()  # to_dense: sparse with the input's coordinates, once each
    assert s.grad.is_sparse
    np.testing.assert_allclose(s.grad.to_dense().cpu().numpy(),
                               (_dense_ref(IDX, VALS, (2, 3)) != 0).astype(float))


def test_grad_fn_names():
    v = tg.tensor(VALS, requires_grad=True)
    s = tg.sparse_coo_tensor(IDX, v, (2, 3))
    assert s.grad_fn.name() == "SparseCooTensorWithDimsAndTensorsBackward0"
    assert s.to_dense().grad_fn.name() == "ToDenseBackward0"
    assert s.coalesce().grad_fn.name() == "CoalesceBackward0"
    assert s.coalesce().values().grad_fn.name() == "ValuesBackward0"
    with pytest.raises(RuntimeError, match="values that do not require grad"):
        tg.sparse_coo_tensor(IDX, v, (2, 3), requires_grad=True)


# -- the gradient layouts of leaf accumulation (engine.accumulate_grad) ------------------------

def test_sparse_gradient_layouts():
    """PyTorch's rules: a first sparse gradient is stored as is (uncoalesced stays so);
    sparse + sparse stays sparse (in place); into a dense .grad it adds in place; a dense
    gradient into a sparse .grad makes it dense."""
    w = tg.zeros(5, 2, requires_grad=True)
    emb = lambda i: tg.nn.functional.embedding(tg.tensor(i), w, sparse=True)  # noqa: E731
    emb([1, 3, 1]).sum().backward()
    g1 = w.grad
    assert g1.is_sparse and not g1.is_coalesced() and g1._nnz() == 3
    emb([2]).sum().backward()
    assert w.grad is g1 and g1._nnz() == 4  # accumulated in place, still sparse
    (w * 2).sum().backward()  # a dense gradient into the sparse .grad: dense now
    dense = w.grad
    assert not dense.is_sparse
    np.testing.assert_allclose(dense.numpy(), [[2, 2], [4, 4], [3, 3], [3, 3], [2, 2]])
    emb([4]).sum().backward()  # sparse into dense: in place
    assert w.grad is dense
    np.testing.assert_allclose(dense.numpy()[4], [3, 3])


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_sparse_gradient_layouts_create_graph():
    w = tg.zeros(3, 2, requires_grad=True)
    tg.nn.functional.embedding(tg.tensor([0]), w, sparse=True).sum().backward(create_graph=True)
    first = w.grad
    tg.nn.functional.embedding(tg.tensor([2]), w, sparse=True).sum().backward(create_graph=True)
    assert w.grad is not first and w.grad.is_sparse  # replaced by .grad + new, not in place
    np.testing.assert_allclose(w.grad.to_dense().numpy(), [[1, 1], [0, 0], [1, 1]])


def test_sparse_gradients_summed_at_one_input():
    w = tg.zeros(4, 2, requires_grad=True)
    F = tg.nn.functional
    (F.embedding(tg.tensor([1]), w, sparse=True).sum()
     + F.embedding(tg.tensor([1, 3]), w, sparse=True).sum() * 2).backward()
    assert w.grad.is_sparse
    np.testing.assert_allclose(w.grad.to_dense().numpy(), [[0, 0], [3, 3], [0, 0], [2, 2]])


# -- printing -----------------------------------------------------------------------------------

def test_repr_matches_pytorch():
    s = tg.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
    assert repr(s) == (
        "tensor(indices=tensor([[0, 1, 1],\n"
        "                       [2, 0, 2]]),\n"
        "       values=tensor([3., 4., 5.]),\n"
        "       size=(2, 3), nnz=3, layout=tritongrad.sparse_coo)")
    v = tg.tensor([3., 4., 5.], requires_grad=True)
    assert repr(tg.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], v, (2, 3))).endswith(
        "       size=(2, 3), nnz=3, layout=tritongrad.sparse_coo,\n"
        "       grad_fn=<SparseCooTensorWithDimsAndTensorsBackward0>)")
    h = tg.sparse_coo_tensor([[0, 1]], tg.ones(2, 3, dtype=tg.float64), (4, 3),
                             requires_grad=True)
    assert repr(h) == (
        "tensor(indices=tensor([[0, 1]]),\n"
        "       values=tensor([[1., 1., 1.],\n"
        "                      [1., 1., 1.]]),\n"
        "       size=(4, 3), nnz=2, dtype=tritongrad.float64,\n"
        "       layout=tritongrad.sparse_coo, requires_grad=True)")
    e = tg.sparse_coo_tensor(tg.zeros(2, 0, dtype=tg.int64), tg.zeros(0), (2, 2))
    assert repr(e) == ("tensor(indices=tensor([], size=(2, 0)),\n"
                       "       values=tensor([], size=(0,)),\n"
                       "       size=(2, 2), nnz=0, layout=tritongrad.sparse_coo)")


def test_pickle_and_layout_singleton():
    s = _s()
    t = pickle.loads(pickle.dumps(s))
    assert t.is_sparse and t._indices().tolist() == IDX and t._values().tolist() == VALS
    assert pickle.loads(pickle.dumps(tg.sparse_coo)) is tg.sparse_coo
    assert pickle.loads(pickle.dumps(tg.strided)) is tg.strided
