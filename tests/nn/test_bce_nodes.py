"""binary_cross_entropy and binary_cross_entropy_with_logits as one node each (PyTorch's
BinaryCrossEntropyBackward0 / BinaryCrossEntropyWithLogitsBackward0, nn/functional.py):
values and gradients (input and target) against float64 NumPy formulas and finite
differences, every reduction, broadcast weights, PyTorch's gradients at 0 and 1, forward AD,
double backward, the weights' refusal, and what is saved."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host
from tritongrad.nn import functional as F

REDUCTIONS = ["none", "mean", "sum"]


def _reduce(a, reduction):
    return a if reduction == "none" else a.mean() if reduction == "mean" else a.sum()


def _softplus(z):
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_values_and_gradients(device, reduction, weighted):
    rng = np.random.default_rng(1)
    p0, t0, w0 = rng.uniform(0.05, 0.95, (3, 4)), rng.uniform(0, 1, (3, 4)), rng.uniform(1, 2, 4)
    p = tg.tensor(p0, device=device, requires_grad=True)
    t = tg.tensor(t0, device=device, requires_grad=True)
    w = tg.tensor(w0, device=device) if weighted else None
    loss = F.binary_cross_entropy(p, t, w, reduction=reduction)
    assert loss.grad_fn.name() == "BinaryCrossEntropyBackward0"
    ww = w0 if weighted else 1.0
    np.testing.assert_allclose(
        host(loss), _reduce(-ww * (t0 * np.log(p0) + (1 - t0) * np.log1p(-p0)), reduction),
        rtol=1e-12)
    g0 = rng.standard_normal(p0.shape) if reduction == "none" else np.array(1.7)
    loss.backward(tg.tensor(g0, device=device))
    scale = g0 / p0.size if reduction == "mean" else g0
    np.testing.assert_allclose(host(p.grad), scale * ww * (p0 - t0) / (p0 * (1 - p0)),
                               rtol=1e-10)
    np.testing.assert_allclose(host(t.grad), scale * ww * (np.log1p(-p0) - np.log(p0)),
                               rtol=1e-10)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
def test_bce_with_logits_values_and_gradients(device, reduction, weights):
    rng = np.random.default_rng(2)
    x0, t0 = rng.uniform(-40, 40, (3, 4)), rng.uniform(0, 1, (3, 4))
    w0, p0 = rng.uniform(1, 2, (3, 1)), rng.uniform(0.5, 3, 4)
    x = tg.tensor(x0, device=device, requires_grad=True)
    t = tg.tensor(t0, device=device, requires_grad=True)
    w = tg.tensor(w0, device=device) if weights in ("weight", "both") else None
    pw = tg.tensor(p0, device=device) if weights in ("pos_weight", "both") else None
    loss = F.binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw)
    assert loss.grad_fn.name() == "BinaryCrossEntropyWithLogitsBackward0"
    ww = 1.0 if w is None else w0
    pp = 1.0 if pw is None else p0
    # -w (p t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), logs as -softplus
    want = ww * (pp * t0 * _softplus(-x0) + (1 - t0) * _softplus(x0))
    np.testing.assert_allclose(host(loss), _reduce(want, reduction), rtol=1e-12)
    g0 = rng.standard_normal(x0.shape) if reduction == "none" else np.array(0.6)
    loss.backward(tg.tensor(g0, device=device))
    scale = g0 / x0.size if reduction == "mean" else g0
    sig = 1 / (1 + np.exp(-x0))
    np.testing.assert_allclose(host(x.grad), scale * ww * ((pp * t0 + 1 - t0) * sig - pp * t0),
                               rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(host(t.grad),
                               scale * ww * (pp * _softplus(-x0) - _softplus(x0)), rtol=1e-10)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradcheck_forward_ad_and_double_backward(reduction):
    rng = np.random.default_rng(3)
    p = tg.tensor(rng.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    x = tg.tensor(rng.uniform(-3, 3, (2, 3)), requires_grad=True)
    t = tg.tensor(rng.uniform(0, 1, (2, 3)), requires_grad=True)
    w, pw = tg.tensor(rng.uniform(1, 2, 3)), tg.tensor(rng.uniform(0.5, 2, 3))

    def bce(p, t):
        return F.binary_cross_entropy(p, t, w, reduction=reduction)

    def logits(x, t):
        return F.binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw)

    for fn, a in ((bce, p), (logits, x)):
        assert tg.autograd.gradcheck(fn, (a, t), check_forward_ad=True)
        assert tg.autograd.gradgradcheck(fn, (a, t))


def test_pytorch_gradients_at_zero_and_one():
    # the input's gradient divides by max(x (1 - x), 1e-12), the target's is -logit(x): both
    # as PyTorch's kernels, not the derivative of the clamped logs (which is 0 there)
    p = tg.tensor([0.0, 1.0, 0.0, 1.0], dtype=tg.float64, requires_grad=True)
    t = tg.tensor([1.0, 0.0, 0.0, 1.0], dtype=tg.float64, requires_grad=True)
    with np.errstate(all="ignore"):
        loss = F.binary_cross_entropy(p, t, reduction="sum")
        loss.backward()
    assert loss.item() == 200.0  # each log clamped at -100
    np.testing.assert_array_equal(host(p.grad), [-1e12, 1e12, 0.0, 0.0])
    np.testing.assert_array_equal(host(t.grad), [np.inf, -np.inf, np.inf, -np.inf])


def test_weights_are_not_differentiable():
    x, t = tg.rand(3, requires_grad=True), tg.rand(3)
    w = tg.ones(3, requires_grad=True)
    for call, arg in ((lambda: F.binary_cross_entropy(x, t, w), "weight"),
                      (lambda: F.binary_cross_entropy_with_logits(x, t, w), "weight"),
                      (lambda: F.binary_cross_entropy_with_logits(x, t, pos_weight=w),
                       "pos_weight")):
        with pytest.raises(RuntimeError, match=f"not differentiable with respect to argument "
                                               f"'{arg}'"):
            call()
    with tg.no_grad():  # (nothing is recorded: accepted)
        F.binary_cross_entropy(x, t, w)


def test_saves_inputs_alone():
    x, t = tg.rand(64, 32, dtype=tg.float64, requires_grad=True), tg.rand(64, 32,
                                                                          dtype=tg.float64)
    for fn in (F.binary_cross_entropy, F.binary_cross_entropy_with_logits):
        packed = []
        with tg.autograd.graph.saved_tensors_hooks(lambda s: packed.append(s) or s, lambda s: s):
            fn(x, t)
        assert [s.shape for s in packed] == [x.shape, t.shape]


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x0, t0, w0, p0 = (rng.uniform(-6, 6, (5, 3)), rng.uniform(0, 1, (5, 3)),
                      rng.uniform(0.5, 2, (5, 1)), rng.uniform(0.5, 2, 3))
    for reduction in REDUCTIONS:
        for logits in (False, True):
            outs = []
            for m in (tg, torch):
                x = m.tensor(x0 if logits else 1 / (1 + np.exp(-x0)), requires_grad=True)
                t = m.tensor(t0, requires_grad=True)
                w = m.tensor(w0)
                if logits:
                    loss = m.nn.functional.binary_cross_entropy_with_logits(
                        x, t, w, reduction=reduction, pos_weight=m.tensor(p0))
                else:
                    loss = m.nn.functional.binary_cross_entropy(x, t, w, reduction=reduction)
                loss.sum().backward()
                outs.append((loss.grad_fn.name(), np.asarray(loss.detach().tolist()),
                             np.asarray(x.grad.tolist()), np.asarray(t.grad.tolist())))
            assert outs[0][0] == outs[1][0]
            for a, b in zip(outs[0][1:], outs[1][1:]):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
