"""The margin, ranking and embedding losses (nn/_margin_losses.py) and the Poisson and Gaussian
negative log-likelihoods (nn/functional.py): values against NumPy float64 transcriptions of
PyTorch's documented formulas, each reduction, gradients by central differences, modules."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(13)
X1, X2 = rng.standard_normal(6), rng.standard_normal(6)
Y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
A, B, C = (rng.standard_normal((4, 5)) for _ in range(3))
T01 = (rng.random((4, 5)) > 0.5).astype(np.float64)
CLS = np.array([0, 3, 4, 1])
W = rng.random(5) + 0.5


def softplus(v):
    return np.logaddexp(0.0, v)


def dist(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def multi_margin(x, t, p, margin, w):
    out = []
    for row, y in zip(x, t):
        terms = [max(0.0, margin - row[y] + row[i]) ** p for i in range(len(row)) if i != y]
        out.append(sum(terms) / len(row) * (1.0 if w is None else w[y]))
    return np.array(out)


# multilabel targets: each row's leading classes up to the first -1 (entries after it ignored;
# row 3 repeats a class, which counts twice, as PyTorch's loop counts it)
ML = np.array([[3, 0, -1, 1, 2], [1, -1, 4, 4, 4], [-1, 2, 3, 0, 1], [2, 2, 4, -1, 0]])


def multilabel_margin(x, y):
    out = []
    for row, t in zip(x, y):
        targets = list(t[:list(t).index(-1)] if -1 in t else t)
        others = [i for i in range(len(row)) if i not in targets]
        out.append(sum(max(0.0, 1 - (row[j] - row[i])) for j in targets for i in others)
                   / len(row))
    return np.array(out)


def cos_embed(a, b, y, margin):
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    return np.where(y == 1, 1 - cos, np.maximum(cos - margin, 0))


CASES = {
    "margin_ranking": (lambda r, x1, x2: F.margin_ranking_loss(x1, x2, tg.tensor(Y), 0.3,
                                                               reduction=r),
                       [X1, X2], np.maximum(0, -Y * (X1 - X2) + 0.3)),
    "hinge_embedding": (lambda r, x: F.hinge_embedding_loss(x, tg.tensor(Y), 0.7, reduction=r),
                        [X1], np.where(Y == 1, X1, np.maximum(0, 0.7 - X1))),
    "soft_margin": (lambda r, x: F.soft_margin_loss(x, tg.tensor(Y), reduction=r), [X1],
                    softplus(-Y * X1)),
    "multilabel_soft_margin": (
        lambda r, x: F.multilabel_soft_margin_loss(x, tg.tensor(T01), tg.tensor(W),
                                                   reduction=r),
        [A], ((T01 * softplus(-A) + (1 - T01) * softplus(A)) * W).mean(1)),
    "multi_margin": (lambda r, x: F.multi_margin_loss(x, tg.tensor(CLS), 2, 0.5, tg.tensor(W),
                                                      reduction=r),
                     [A], multi_margin(A, CLS, 2, 0.5, W)),
    "multilabel_margin": (lambda r, x: F.multilabel_margin_loss(x, tg.tensor(ML), reduction=r),
                          [A], multilabel_margin(A, ML)),
    "cosine_embedding": (lambda r, a, b: F.cosine_embedding_loss(a, b, tg.tensor(Y[:4]), 0.2,
                                                                 reduction=r),
                         [A, B], cos_embed(A, B, Y[:4], 0.2)),
    "triplet_margin": (lambda r, a, p, n: F.triplet_margin_loss(a, p, n, 0.5, 3, swap=True,
                                                                reduction=r),
                       [A, B, C], np.maximum(dist(A, B, 3) - np.minimum(dist(A, C, 3),
                                                                         dist(B, C, 3)) + 0.5,
                                             0)),
    "poisson_nll": (lambda r, x: F.poisson_nll_loss(x, tg.tensor(T01 * 3), full=True,
                                                    reduction=r),
                    [A], np.exp(A) - T01 * 3 * A + np.where(
                        T01 * 3 > 1, 3 * math.log(3) - 3 + 0.5 * math.log(2 * math.pi * 3), 0)),
    "gaussian_nll": (lambda r, x, v: F.gaussian_nll_loss(x, tg.tensor(B), v, full=True,
                                                         reduction=r),
                     [A, np.abs(C) + 0.1],
                     0.5 * (np.log(np.abs(C) + 0.1) + (A - B) ** 2 / (np.abs(C) + 0.1)
                            + math.log(2 * math.pi))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_reductions_and_gradients(name):
    fn, inputs, ref = CASES[name]
    ts = [tg.tensor(a) for a in inputs]
    np.testing.assert_allclose(host(fn("none", *ts)), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fn("sum", *ts).item(), ref.sum(), rtol=1e-12)
    np.testing.assert_allclose(fn("mean", *ts).item(), ref.mean(), rtol=1e-12)
    assert_grads_match(lambda *xs: fn("mean", *xs), ts)


def test_gaussian_nll_shapes_and_the_clamp():
    x, t = tg.tensor(A), tg.tensor(B)
    per_sample = F.gaussian_nll_loss(x, t, tg.tensor(np.full(4, 0.5)), reduction="none")
    np.testing.assert_allclose(host(per_sample), 0.5 * (math.log(0.5) + (A - B) ** 2 / 0.5),
                               rtol=1e-12)
    v = tg.tensor(np.full((4, 1), 1e-9), requires_grad=True)  # clamped to eps = 1e-6
    F.gaussian_nll_loss(x, t, v).backward()
    want = (0.5 / 1e-6 - 0.5 * (A - B) ** 2 / 1e-12).sum(1, keepdims=True) / A.size
    np.testing.assert_allclose(host(v.grad), want, rtol=1e-9)  # through the clamp unchanged
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, t, tg.ones(3))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, t, -tg.ones(4, 5, dtype=tg.float64))


def test_modules():
    x1, x2, y = tg.tensor(X1), tg.tensor(X2), tg.tensor(Y)
    assert nn.MarginRankingLoss(0.3)(x1, x2, y).item() == pytest.approx(
        np.maximum(0, -Y * (X1 - X2) + 0.3).mean())
    assert nn.HingeEmbeddingLoss()(x1, y).item() == pytest.approx(
        np.where(Y == 1, X1, np.maximum(0, 1 - X1)).mean())
    a, b, c = tg.tensor(A), tg.tensor(B), tg.tensor(C)
    assert nn.TripletMarginLoss(reduction="sum")(a, b, c).item() == pytest.approx(
        np.maximum(dist(A, B) - dist(A, C) + 1, 0).sum())
    l1 = nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: (u - v).abs().sum(-1))
    assert l1(a, b, c).item() == pytest.approx(
        np.maximum(np.abs(A - B).sum(1) - np.abs(A - C).sum(1) + 1, 0).mean())
    assert nn.MultiMarginLoss()(a, tg.tensor(CLS)).item() == pytest.approx(
        multi_margin(A, CLS, 1, 1.0, None).mean())
    assert nn.SoftMarginLoss(reduction="none")(x1, y).shape == (6,)
    assert nn.CosineEmbeddingLoss()(a, b, y[:4]).shape == ()
    assert nn.PoissonNLLLoss(log_input=False)(a.abs(), tg.tensor(T01)).shape == ()
    assert nn.GaussianNLLLoss()(a, b, tg.ones(4, 5, dtype=tg.float64)).item() == pytest.approx(
        0.5 * ((A - B) ** 2).mean())
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0)


def test_multilabel_margin_shapes_devices_and_gradients(device):
    x = tg.tensor(A, device=device, requires_grad=True)
    loss = F.multilabel_margin_loss(x, tg.tensor(ML, device=device), reduction="none")
    np.testing.assert_allclose(host(loss), multilabel_margin(A, ML), rtol=1e-12)
    loss.sum().backward()
    assert x.grad.device.type == device
    on_cpu = tg.tensor(A, requires_grad=True)  # (the CPU's gradient, checked by differences)
    assert tg.autograd.gradcheck(lambda v: F.multilabel_margin_loss(v, tg.tensor(ML)), (on_cpu,))
    F.multilabel_margin_loss(on_cpu, tg.tensor(ML), reduction="sum").backward()
    np.testing.assert_allclose(host(x.grad), host(on_cpu.grad), rtol=1e-12)
    # a vector and its target: a 0-d loss; no target at all: 0
    one = F.multilabel_margin_loss(tg.tensor(A[0], device=device), tg.tensor(ML[0], device=device),
                                   reduction="none")
    assert one.shape == () and one.item() == pytest.approx(multilabel_margin(A[:1], ML[:1])[0])
    none = F.multilabel_margin_loss(x, tg.full((4, 5), -1, device=device), reduction="none")
    np.testing.assert_array_equal(host(none), np.zeros(4))
    assert nn.MultiLabelMarginLoss(reduction="sum")(x, tg.tensor(ML, device=device)).item() == \
        pytest.approx(multilabel_margin(A, ML).sum())


def test_multilabel_margin_edges_and_errors():
    # at a margin of exactly 0 the hinge passes no gradient (PyTorch's kernel tests z > 0)
    x = tg.tensor([[1.0, 0.0, 0.5]], dtype=tg.float64, requires_grad=True)
    F.multilabel_margin_loss(x, tg.tensor([[0, -1, 2]])).backward()
    np.testing.assert_allclose(host(x.grad), [[-1 / 3, 0.0, 1 / 3]])
    empty = F.multilabel_margin_loss(tg.zeros(0, 4), tg.zeros(0, 4, dtype=tg.int64))
    assert empty.item() == 0.0  # (an empty batch's mean: 0, as PyTorch's)
    assert F.multilabel_margin_loss(tg.tensor(0.5), tg.tensor(0)).item() == 0.0
    x, t = tg.tensor(A), tg.tensor(ML)
    for args, error, message in [
        ((x, t[:, :3]), RuntimeError,
         r"inconsistent target size: \[4, 3\] for input of size: \[4, 5\]"),
        ((x, t.float()), RuntimeError, "expected scalar type Long but found Float"),
        ((x.reshape(2, 2, 5), t), RuntimeError,
         (r"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
          r"\[2, 2, 5\]")),
        ((tg.zeros(2, 0), tg.zeros(2, 0, dtype=tg.int64)), RuntimeError, "Expected non-empty"),
        ((x, t.where(t != 4, 5)), RuntimeError, "argument #2 'target' is out of range"),
        ((x, t.where(t != 4, -2)), RuntimeError, "argument #2 'target' is out of range"),
        ((x.long(), t), NotImplementedError, "not implemented for 'Long'"),
    ]:
        with pytest.raises(error, match=message):
            F.multilabel_margin_loss(*args)
