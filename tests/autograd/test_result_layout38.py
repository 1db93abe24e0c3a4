"""Reductions, scans and a few copies give C-contiguous results whatever the input's layout,
as PyTorch's (Note [Reductions are C-contiguous], kernels/numpy/reduction.py), so
``x.transpose(1, 2).sum(-1).view(n, -1)`` works; values against NumPy."""
import numpy as np
import pytest

import tritongrad as tg

BASE = np.random.RandomState(0).rand(2, 3, 4) + 0.5
PERM = (2, 0, 1)  # -> shape (4, 2, 3), strides (1, 12, 4)

CASES = {
    "sum": (lambda x: x.sum(1), lambda a: a.sum(1)),
    "sum_keepdim": (lambda x: x.sum(1, keepdim=True), lambda a: a.sum(1, keepdims=True)),
    "mean": (lambda x: x.mean(1), lambda a: a.mean(1)),
    "prod": (lambda x: x.prod(2), lambda a: a.prod(2)),
    "var": (lambda x: x.var(1), lambda a: a.var(1, ddof=1)),
    "norm": (lambda x: x.norm(dim=1), lambda a: np.sqrt((a * a).sum(1))),
    "logsumexp": (lambda x: x.logsumexp(1), lambda a: np.log(np.exp(a).sum(1))),
    "all": (lambda x: (x > 0.7).all(1), lambda a: (a > 0.7).all(1)),
    "count_nonzero": (lambda x: (x > 0.7).count_nonzero(1), lambda a: (a > 0.7).sum(1)),
    "cumsum": (lambda x: x.cumsum(1), lambda a: a.cumsum(1)),
    "cumprod": (lambda x: x.cumprod(0), lambda a: a.cumprod(0)),
    "logcumsumexp": (lambda x: x.logcumsumexp(0), lambda a: np.log(np.exp(a).cumsum(0))),
    "cummax": (lambda x: x.cummax(1)[0], lambda a: np.maximum.accumulate(a, 1)),
    "tril": (lambda x: x.tril(), lambda a: np.tril(a)),
    "triu": (lambda x: x.triu(1), lambda a: np.triu(a, 1)),
    "roll": (lambda x: x.roll(1, 1), lambda a: np.roll(a, 1, 1)),
}


@pytest.mark.parametrize("dtype", [tg.float64, tg.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_result_is_contiguous_and_views(name, dtype):
    mine, ref = CASES[name]
    x = tg.tensor(BASE, dtype=dtype).permute(*PERM)
    assert not x.is_contiguous()
    r = mine(x)
    assert r.is_contiguous(), (name, r.stride())
    r.view(-1)  # (what a program relying on PyTorch's layout does next)
    tol = 1e-12 if dtype is tg.float64 else 1e-5
    np.testing.assert_allclose(r.numpy().astype(np.float64), ref(BASE.transpose(PERM)),
                               rtol=tol, atol=tol)


def test_gradient_of_a_permuted_reduction():
    a = tg.tensor(BASE, requires_grad=True)
    a.permute(*PERM).sum(1).view(-1).mul(tg.arange(12.0, dtype=tg.float64)).sum().backward()
    w = np.arange(12.0).reshape(4, 3)  # d/dx of sum_{i,k} w[i,k] x[i,j,k], x = a.permute
    np.testing.assert_allclose(a.grad.numpy(), np.broadcast_to(w[:, None, :], (4, 2, 3))
                               .transpose(1, 2, 0))


def test_renorm_is_contiguous():
    x = tg.tensor(BASE).permute(*PERM)
    r = x.renorm(2, 0, 1.0)
    assert r.is_contiguous()
    norms = np.sqrt((BASE.transpose(PERM) ** 2).reshape(4, -1).sum(1))
    want = BASE.transpose(PERM) * np.where(norms > 1.0, 1.0 / (norms + 1e-7), 1.0)[:, None, None]
    np.testing.assert_allclose(r.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_contiguity_as_torch(name):
    torch = pytest.importorskip("torch")
    mine = CASES[name][0](tg.tensor(BASE).permute(*PERM))
    theirs = CASES[name][0](torch.tensor(BASE).permute(*PERM))
    assert mine.is_contiguous() == theirs.is_contiguous()
