"""Sparse gradients in training: ``nn.Embedding`` / ``EmbeddingBag`` / ``F.embedding(_bag)``
with ``sparse=True`` (against the dense path's gradients), and the sparse updates of ``SGD``,
``Adagrad`` and ``SparseAdam`` against float64 NumPy references of PyTorch's algorithms."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg

F = tg.nn.functional
W0 = np.random.default_rng(0).standard_normal((6, 3))
STEPS = [[1, 3, 1], [2, 3], [5, 1, 1, 0]]  # the rows each step looks up (with repeats)


def _grad_rows(rows) -> np.ndarray:
    """The dense gradient of sum(emb(rows) ** 2) at the reference weights ``w``."""
    def g(w):
        out = np.zeros_like(w)
        np.add.at(out, rows, 2 * w[rows])
        return out
    return g


# -- embeddings ---------------------------------------------------------------------------------

@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_sparse_gradient(device, padding_idx):
    w = tg.tensor(W0, device=device, requires_grad=True)
    idx = tg.tensor([[1, 3], [1, 5]], device=device)
    go = np.arange(12.).reshape(2, 2, 3)
    out = F.embedding(idx, w, padding_idx=padding_idx, sparse=True)
    np.testing.assert_allclose(out.detach().cpu().numpy(), W0[[[1, 3], [1, 5]]])
    out.backward(tg.tensor(go, device=device))
    g = w.grad
    assert g.is_sparse and g.shape == (6, 3)
    keep = [i for i, r in enumerate([1, 3, 1, 5]) if r != padding_idx]
    assert g._indices().cpu().tolist() == [[[1, 3, 1, 5][i] for i in keep]]  # one per lookup
    ref = np.zeros((6, 3))
    np.add.at(ref, np.array([1, 3, 1, 5])[keep], go.reshape(4, 3)[keep])
    np.testing.assert_allclose(g.to_dense().cpu().numpy(), ref)


def test_embedding_module_and_refusals():
    emb = tg.nn.Embedding(6, 3, sparse=True)
    emb(tg.tensor([0, 2])).sum().backward()
    assert emb.weight.grad.is_sparse
    w = tg.tensor(W0, requires_grad=True)
    out = F.embedding(tg.tensor([1]), w, sparse=True, scale_grad_by_freq=True).sum()
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        out.backward()
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(tg.tensor([1]), w, tg.tensor([0]), mode="max", sparse=True)


def test_embedding_sparse_gradient_into_a_computed_weight_is_dense():
    """Through a dense op (here w * 2) the gradient continues dense (docs/sparse.md)."""
    w = tg.tensor(W0, requires_grad=True)
    F.embedding(tg.tensor([1, 2]), w * 2, sparse=True).sum().backward()
    assert not w.grad.is_sparse
    ref = np.zeros((6, 3))
    ref[[1, 2]] = 2
    np.testing.assert_allclose(w.grad.numpy(), ref)


@pytest.mark.parametrize("device, mode, padding_idx, last", [
    ("cpu", mode, pad, last) for mode in ("sum", "mean")
    for pad, last in ((None, False), (1, False), (1, True))] + [
    ("cuda", "sum", None, False), ("cuda", "mean", 1, True)])  # (CUDA: emulated, slow)
def test_embedding_bag_sparse_matches_dense(device, mode, padding_idx, last):
    idx = tg.tensor([1, 2, 4, 1, 3, 0, 1], device=device)
    off = tg.tensor([0, 2, 2, 5], device=device)  # last: bags [0, 2), [2, 2), [2, 5)
    psw = tg.tensor(np.linspace(0.5, 2, 7), device=device) if mode == "sum" else None
    go = tg.tensor(np.arange(12.).reshape(4, 3)[:3 if last else 4], device=device)
    grads = []
    for sparse in (False, True):
        w = tg.tensor(W0, device=device, requires_grad=True)
        out = F.embedding_bag(idx, w, off, mode=mode, sparse=sparse, padding_idx=padding_idx,
                              per_sample_weights=psw, include_last_offset=last)
        out.backward(go)
        grads.append((out.detach().cpu().numpy(), w.grad))
    (dense_out, dense_g), (sparse_out, sparse_g) = grads
    np.testing.assert_allclose(sparse_out, dense_out, rtol=1e-12)
    assert sparse_g.is_sparse and not dense_g.is_sparse
    np.testing.assert_allclose(sparse_g.to_dense().cpu().numpy(), dense_g.cpu().numpy(),
                               rtol=1e-12)


def test_embedding_bag_module_and_top_level():
    bag = tg.nn.EmbeddingBag(6, 3, mode="sum", sparse=True)
    bag(tg.tensor([[1, 2], [4, 4]])).sum().backward()
    assert bag.weight.grad.is_sparse and bag.weight.grad._nnz() == 4
    w = tg.tensor(W0, requires_grad=True)
    out, offset2bag, bag_size, _ = tg.embedding_bag(w, tg.tensor([1, 2, 3]), tg.tensor([0, 1]),
                                                    False, 1, True)
    np.testing.assert_allclose(out.detach().numpy(), [W0[1], (W0[2] + W0[3]) / 2])
    assert offset2bag.tolist() == [0, 1, 1] and bag_size.tolist() == [1, 2]
    out.sum().backward()
    assert w.grad.is_sparse


# -- optimizers ---------------------------------------------------------------------------------

def _sgd_ref(momentum=0.0, dampening=0.0, nesterov=False, maximize=False, lr=0.1):
    w, buf = W0.copy(), None
    for rows in STEPS:
        g = _grad_rows(rows)(w)
        g = -g if maximize else g
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
    return w


def _adagrad_ref(lr=0.1, lr_decay=0.0, eps=1e-10, maximize=False):
    w, s = W0.copy(), np.zeros_like(W0)
    for t, rows in enumerate(STEPS, 1):
        g = _grad_rows(rows)(w)
        g = -g if maximize else g
        clr = lr / (1 + (t - 1) * lr_decay)
        touched = np.zeros(len(w), bool)
        touched[rows] = True
        s[touched] += g[touched] ** 2
        w[touched] -= clr * g[touched] / (np.sqrt(s[touched]) + eps)
    return w


def _sparse_adam_ref(lr=0.1, betas=(0.9, 0.999), eps=1e-8, maximize=False):
    w, m, v = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    b1, b2 = betas
    for t, rows in enumerate(STEPS, 1):
        g = _grad_rows(rows)(w)
        g = -g if maximize else g
        r = np.unique(rows)  # only the rows the gradient specifies move, state included
        m[r] = b1 * m[r] + (1 - b1) * g[r]
        v[r] = b2 * v[r] + (1 - b2) * g[r] ** 2
        step = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w[r] -= step * m[r] / (np.sqrt(v[r]) + eps)
    return w


def _train(opt_cls, device="cpu", **kw) -> np.ndarray:
    emb = tg.nn.Embedding(6, 3, sparse=True, _weight=tg.tensor(W0), device=device)
    emb = emb.to(device)
    opt = opt_cls(emb.parameters(), **kw)
    for rows in STEPS:
        opt.zero_grad()
        emb(tg.tensor(rows, device=device)).pow(2).sum().backward()
        assert emb.weight.grad.is_sparse
        opt.step()
    return emb.weight.detach().cpu().numpy()


@pytest.mark.parametrize("kw", [{}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True},
                                {"momentum": 0.5, "dampening": 0.3}, {"maximize": True}])
def test_sgd_sparse(kw):
    np.testing.assert_allclose(_train(tg.optim.SGD, lr=0.1, **kw), _sgd_ref(**kw), rtol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"lr_decay": 0.1, "maximize": True}])
def test_adagrad_sparse(kw):
    np.testing.assert_allclose(_train(tg.optim.Adagrad, lr=0.1, **kw), _adagrad_ref(**kw),
                               rtol=1e-12)


@pytest.mark.parametrize("device, kw", [
    ("cpu", {}), ("cpu", {"maximize": True, "betas": (0.8, 0.99)}), ("cuda", {})])
def test_sparse_adam(device, kw):
    np.testing.assert_allclose(_train(tg.optim.SparseAdam, device, lr=0.1, **kw),
                               _sparse_adam_ref(**kw), rtol=1e-10)


def test_sparse_optimizer_refusals():
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        _train(tg.optim.SGD, lr=0.1, weight_decay=0.1)
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse"):
        _train(tg.optim.Adagrad, lr=0.1, weight_decay=0.1)
    p = tg.nn.Parameter(tg.ones(3))
    p.grad = tg.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        tg.optim.SparseAdam([p]).step()
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0: 1.0"):
        tg.optim.SparseAdam([p], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        tg.optim.SparseAdam([p], lr=-1)


def test_zero_grad_keeps_working_with_sparse_grads():
    emb = tg.nn.Embedding(6, 3, sparse=True)
    opt = tg.optim.SGD(emb.parameters(), lr=0.1)
    emb(tg.tensor([1])).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 0
    opt.zero_grad()
    assert emb.weight.grad is None
