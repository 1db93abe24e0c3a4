"""The composite activations, losses, F.pad and F.normalize (nn/functional.py, nn/_padding.py)
against NumPy float64 references; gradients against central differences, also at the points
where a careless composition gives NaN (x = 0, overflow of the branch not taken)."""

import math
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(9)
X = np.concatenate([np.linspace(-6, 6, 25), [0.0, -40.0, 40.0, 800.0, -800.0]])


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.logaddexp(0.0, beta * x) / beta)


ACTS = {
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (lambda x: F.elu(x, 1.5),
            lambda x: np.where(x > 0, x, 1.5 * np.expm1(np.minimum(x, 0)))),
    "softplus": (F.softplus, _softplus),
    "softplus_beta": (lambda x: F.softplus(x, 2.0, 5.0), lambda x: _softplus(x, 2.0, 5.0)),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus(x))),
    "hardtanh": (lambda x: F.hardtanh(x, -2.0, 3.0), lambda x: np.clip(x, -2.0, 3.0)),
    "relu6": (F.relu6, lambda x: np.clip(x, 0.0, 6.0)),
    "selu": (F.selu, lambda x: 1.0507009873554804934193349852946 * np.where(
        x > 0, x, 1.6732632423543772848170429916717 * np.expm1(np.minimum(x, 0)))),
    "celu": (lambda x: F.celu(x, 0.7),
             lambda x: np.where(x > 0, x, 0.7 * np.expm1(np.minimum(x, 0) / 0.7))),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x))),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "logsigmoid": (F.logsigmoid, lambda x: -np.logaddexp(0.0, -x)),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x)),
    "softshrink": (lambda x: F.softshrink(x, 0.7),
                   lambda x: np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0.0))),
    "hardshrink": (lambda x: F.hardshrink(x, 0.7), lambda x: np.where(np.abs(x) > 0.7, x, 0.0)),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_values_and_finite_gradients(device, name):
    fn, ref = ACTS[name]
    x = tg.tensor(X, device=device, requires_grad=True)
    y = fn(x)
    np.testing.assert_allclose(host(y), ref(X), rtol=1e-12, atol=1e-300)
    y.sum().backward()
    assert np.isfinite(host(x.grad)).all()  # no NaN from the branch a where did not take
    xs = tg.tensor(rng.uniform(-3, 3, 7), device=device)
    assert_grads_match(fn, [xs])


def test_activation_gradients_at_kinks_match_pytorch():
    x = tg.tensor([0.0, -1.0, 1.0, 3.0, -2.0], requires_grad=True)
    F.leaky_relu(x, 0.1).sum().backward()
    assert x.grad.tolist() == pytest.approx([0.1, 0.1, 1.0, 1.0, 0.1])
    x.grad = None
    F.hardtanh(x, -2.0, 3.0).sum().backward()  # 0 on the boundaries, as PyTorch
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]
    x.grad = None
    F.softplus(x).sum().backward()  # sigmoid(x), also at 0
    np.testing.assert_allclose(host(x.grad), 1 / (1 + np.exp(-host(x))), rtol=1e-6)


def test_more_activation_gradients_at_kinks_match_pytorch():
    x = tg.tensor([-3.0, 3.0, -2.0, 0.0], dtype=tg.float64, requires_grad=True)
    F.hardswish(x).sum().backward()  # the outer pieces' at -3 and 3
    assert x.grad.tolist() == pytest.approx([0.0, 1.0, -1 / 6, 0.5])
    x.grad = None
    F.hardsigmoid(x).sum().backward()  # 1/6 strictly inside (-3, 3)
    assert x.grad.tolist() == pytest.approx([0.0, 0.0, 1 / 6, 1 / 6])
    x.grad = None
    F.celu(x, 0.5).sum().backward()  # exp(x / alpha) below 0, 1 at 0
    np.testing.assert_allclose(host(x.grad), [math.exp(-6), 1.0, math.exp(-4), 1.0])


def test_glu_prelu_softmin(device):
    a = rng.standard_normal((3, 4))
    x = tg.tensor(a, device=device)
    np.testing.assert_allclose(host(F.glu(x, 1)), a[:, :2] / (1 + np.exp(-a[:, 2:])),
                               rtol=1e-12)
    assert_grads_match(lambda t: F.glu(t, 0 if t.shape[0] % 2 == 0 else 1), [x])
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 0 "
                                           "is size 3"):
        F.glu(x, 0)
    e = np.exp(-a)
    np.testing.assert_allclose(host(F.softmin(x, 1)), e / e.sum(1, keepdims=True), rtol=1e-12)
    c = rng.standard_normal((2, 3, 4))
    w = np.array([0.1, -0.2, 0.3])
    y = F.prelu(tg.tensor(c, device=device), tg.tensor(w, device=device))
    np.testing.assert_allclose(host(y), np.where(c > 0, c, w[None, :, None] * c), rtol=1e-12)
    assert_grads_match(F.prelu, [tg.tensor(c, device=device), tg.tensor(w, device=device)])
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel "
                                           "size. Found parameter numbers = 2 and channel "
                                           "size = 3"):
        F.prelu(tg.tensor(c), tg.tensor([0.1, 0.2], dtype=tg.float64))
    m = nn.PReLU(3)
    assert repr(m) == "PReLU(num_parameters=3)" and m.weight.tolist() == [0.25] * 3
    m(tg.tensor(c, dtype=tg.float32)).sum().backward()
    np.testing.assert_allclose(host(m.weight.grad), np.minimum(c, 0).sum((0, 2)), rtol=1e-5)


def test_cosine_similarity_and_pairwise_distance(device):
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((1, 5))
    x1, x2 = tg.tensor(a, device=device), tg.tensor(b, device=device)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(host(F.cosine_similarity(x1, x2)), (a @ b.T)[:, 0] / (na * nb),
                               rtol=1e-12)
    assert_grads_match(F.cosine_similarity, [x1, x2])
    zero = F.cosine_similarity(tg.zeros(2, 5, dtype=tg.float64, device=device), x1[:2])
    assert host(zero).tolist() == [0.0, 0.0]  # the norms are clamped to eps: no NaN
    d = F.pairwise_distance(x1, x2, p=3.0, keepdim=True)
    np.testing.assert_allclose(host(d), (np.abs(a - b + 1e-6) ** 3).sum(1, keepdims=True)
                               ** (1 / 3), rtol=1e-12)
    assert_grads_match(F.pairwise_distance, [x1, x2])
    assert nn.CosineSimilarity(dim=1)(x1, x2).shape == (4,)
    assert nn.PairwiseDistance()(x1, x2).shape == (4,)


def test_activation_modules_and_inplace():
    x = tg.tensor([-1.0, 2.0])
    assert nn.LeakyReLU(0.5)(x).tolist() == [-0.5, 2.0]
    assert repr(nn.LeakyReLU(0.5, inplace=True)) == "LeakyReLU(negative_slope=0.5, inplace=True)"
    assert repr(nn.Softplus(2, 10)) == "Softplus(beta=2, threshold=10)"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"
    for m in (nn.ELU(), nn.Mish(), nn.ReLU6(), nn.Softplus(), nn.SiLU(), nn.Tanh(), nn.Sigmoid(),
              nn.GELU(approximate="tanh"), nn.Softmax(0), nn.LogSoftmax(0), nn.SELU(), nn.CELU(),
              nn.Softsign(), nn.Hardswish(), nn.Hardsigmoid(), nn.LogSigmoid(), nn.Tanhshrink(),
              nn.Softshrink(), nn.Hardshrink(), nn.Softmin(0), nn.PReLU()):
        assert m(x).shape == (2,)
    assert nn.GLU()(tg.ones(2, 4)).shape == (2, 2)
    assert repr(nn.Softshrink(0.3)) == "Softshrink(0.3)"
    assert repr(nn.CELU(0.5, inplace=True)) == "CELU(alpha=0.5, inplace=True)"
    for act in (nn.SELU, nn.Hardswish, nn.Hardsigmoid):  # in place: written into the input
        leaf = tg.tensor([-1.0, 2.0], requires_grad=True)
        y = leaf * 1.0
        assert act(inplace=True)(y) is y
        np.testing.assert_allclose(host(y), host(act()(leaf)))
    leaf = tg.tensor([-1.0, 2.0], requires_grad=True)
    y = leaf * 1.0
    out = nn.ELU(inplace=True)(y)
    assert out is y
    out.sum().backward()
    np.testing.assert_allclose(host(leaf.grad), [math.exp(-1.0), 1.0], rtol=1e-6)


# -- losses --------------------------------------------------------------------------------------

def _reduce(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(device, reduction):
    p, t, w = rng.uniform(0.02, 0.98, (3, 4)), rng.uniform(0, 1, (3, 4)), rng.uniform(0.5, 2, 4)
    y = F.binary_cross_entropy(tg.tensor(p, device=device), tg.tensor(t, device=device),
                               tg.tensor(w, device=device), reduction=reduction)
    ref = -w * (t * np.log(p) + (1 - t) * np.log(1 - p))
    np.testing.assert_allclose(host(y), _reduce(ref, reduction), rtol=1e-12)
    assert_grads_match(lambda p: F.binary_cross_entropy(p, tg.tensor(t, device=p.device)),
                       [tg.tensor(p, device=device)])


def test_binary_cross_entropy_clamps_the_log_at_minus_100():
    y = F.binary_cross_entropy(tg.tensor([0.0, 1.0, 0.0]), tg.tensor([1.0, 0.0, 0.0]),
                               reduction="none")
    assert y.tolist() == [100.0, 100.0, 0.0]
    p = tg.tensor([0.0, 1.0], requires_grad=True)
    F.binary_cross_entropy(p, tg.tensor([1.0, 0.0])).backward()
    assert np.isfinite(host(p.grad)).all()
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(tg.tensor([1.5]), tg.tensor([1.0]))
    with pytest.raises(ValueError, match="Using a target size"):
        F.binary_cross_entropy(tg.tensor([0.5]), tg.tensor([1.0, 0.0]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(device, reduction):
    x = np.concatenate([rng.standard_normal(6) * 3, [0.0, 200.0, -200.0]]).reshape(3, 3)
    t, pw, w = rng.uniform(0, 1, (3, 3)), rng.uniform(0.5, 3, 3), rng.uniform(0.5, 2, (3, 1))
    y = F.binary_cross_entropy_with_logits(tg.tensor(x, device=device),
                                           tg.tensor(t, device=device),
                                           tg.tensor(w, device=device), reduction=reduction,
                                           pos_weight=tg.tensor(pw, device=device))
    log_sig, log_1msig = -np.logaddexp(0, -x), -np.logaddexp(0, x)
    ref = -w * (pw * t * log_sig + (1 - t) * log_1msig)
    np.testing.assert_allclose(host(y), _reduce(ref, reduction), rtol=1e-12)
    xs = tg.tensor(x, device=device, requires_grad=True)
    F.binary_cross_entropy_with_logits(xs, tg.tensor(t, device=device), reduction="sum").backward()
    np.testing.assert_allclose(host(xs.grad), 1 / (1 + np.exp(-x)) - t, rtol=1e-12, atol=1e-15)


def test_regression_losses(device):
    x, t = rng.standard_normal((4, 3)) * 2, rng.standard_normal((4, 3))
    d = np.abs(x - t)
    xt, tt = tg.tensor(x, device=device), tg.tensor(t, device=device)
    cases = [
        (F.l1_loss(xt, tt, reduction="sum"), d.sum()),
        (F.smooth_l1_loss(xt, tt, beta=0.5), np.where(d < 0.5, d * d, d - 0.25).mean()),
        (F.smooth_l1_loss(xt, tt, beta=0.0), d.mean()),
        (F.huber_loss(xt, tt, reduction="none", delta=0.7),
         np.where(d < 0.7, 0.5 * d * d, 0.7 * (d - 0.35))),
        (nn.HuberLoss(delta=2.0)(xt, tt), np.where(d < 2.0, 0.5 * d * d, 2.0 * (d - 1.0)).mean()),
        (nn.SmoothL1Loss(beta=2.0)(xt, tt), np.where(d < 2, 0.25 * d * d, d - 1.0).mean()),
        (nn.L1Loss()(xt, tt), d.mean()),
    ]
    for got, ref in cases:
        np.testing.assert_allclose(host(got), ref, rtol=1e-12)
    assert_grads_match(lambda x: F.smooth_l1_loss(x, tg.tensor(t, device=x.device), beta=0.5),
                       [xt])
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values"):
        F.smooth_l1_loss(xt, tt, beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values"):
        F.huber_loss(xt, tt, delta=0.0)


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none", "mean"])
def test_kl_div(device, reduction):
    logq = np.log(rng.dirichlet(np.ones(5), 3))
    p = rng.dirichlet(np.ones(5), 3)
    p[0, 1] = 0.0  # 0 * log 0 = 0
    ref = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1)) - logq), 0.0)
    ref = {"batchmean": ref.sum() / 3, "sum": ref.sum(), "none": ref, "mean": ref.mean()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = F.kl_div(tg.tensor(logq, device=device), tg.tensor(p, device=device),
                     reduction=reduction)
        y_log = nn.KLDivLoss(reduction=reduction, log_target=True)(
            tg.tensor(logq, device=device), tg.tensor(np.log(np.where(p > 0, p, 1e-300)),
                                                      device=device))
    np.testing.assert_allclose(host(y), ref[reduction], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(host(y_log), ref[reduction], rtol=1e-10, atol=1e-12)
    pt = tg.tensor(p, device=device)
    assert_grads_match(lambda q: F.kl_div(q, pt.to(q.device), reduction="batchmean"),
                       [tg.tensor(logq, device=device)])
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(tg.tensor(logq), tg.tensor(p))


def test_loss_modules_hold_their_weights():
    m = nn.BCEWithLogitsLoss(pos_weight=tg.ones(3) * 2)
    assert "pos_weight" in dict(m.named_buffers())
    assert round(nn.BCEWithLogitsLoss()(tg.zeros(3), tg.ones(3)).item(), 4) == 0.6931
    assert round(nn.BCELoss(weight=tg.full((2,), 2.0))(tg.full((2,), 0.5),
                                                       tg.ones(2)).item(), 4) == 1.3863


# -- pad, normalize, one_hot -----------------------------------------------------------------------

@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_copying_modes(device, mode, np_mode):
    x = rng.standard_normal((2, 3, 4, 5))
    y = F.pad(tg.tensor(x, device=device), (2, 1, 3, 0), mode=mode)
    np.testing.assert_array_equal(host(y), np.pad(x, ((0, 0), (0, 0), (3, 0), (2, 1)),
                                                  mode=np_mode))
    x1 = rng.standard_normal((2, 4))
    y1 = F.pad(tg.tensor(x1, device=device), (3, 2), mode=mode)
    np.testing.assert_array_equal(host(y1), np.pad(x1, ((0, 0), (3, 2)), mode=np_mode))
    assert_grads_match(lambda x: F.pad(x, (2, 3), mode=mode),
                       [tg.tensor(rng.standard_normal((1, 4)), device=device)])


def test_pad_constant_any_dims_and_negative(device):
    x = rng.standard_normal((2, 3, 4))
    y = F.pad(tg.tensor(x, device=device), (1, 2, 0, 1, 2, 0), value=-7.0)
    np.testing.assert_array_equal(host(y), np.pad(x, ((2, 0), (0, 1), (1, 2)),
                                                  constant_values=-7.0))
    y = F.pad(tg.tensor(x, device=device), (-1, 2))
    np.testing.assert_array_equal(host(y), np.pad(x[:, :, 1:], ((0, 0), (0, 0), (0, 2))))
    assert_grads_match(lambda x: F.pad(x, (1, -1, 1, 1)), [tg.tensor(x[0], device=device)])


def test_pad_errors():
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(tg.randn(2, 3), (1,))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding "
                                           "input dimension"):
        F.pad(tg.randn(1, 3), (3, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="Only 2D, 3D, 4D, 5D padding"):
        F.pad(tg.randn(3), (1, 1), mode="replicate")


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf])
def test_normalize(device, p):
    x = rng.standard_normal((3, 4))
    x[1] = 0.0
    y = F.normalize(tg.tensor(x, device=device), p=p, dim=1)
    norm = np.linalg.norm(x, ord=p, axis=1, keepdims=True)
    np.testing.assert_allclose(host(y), x / np.maximum(norm, 1e-12), rtol=1e-12)
    xt = tg.tensor(x, device=device, requires_grad=True)
    F.normalize(xt, p=p).sum().backward()
    assert np.isfinite(host(xt.grad)).all()  # the zero row too, as PyTorch (1/eps)
    assert_grads_match(lambda x: F.normalize(x, p=p, dim=0),
                       [tg.tensor(x[0] + 0.1, device=device)])


def test_one_hot_infers_num_classes():
    y = F.one_hot(tg.tensor([0, 2, 1]))
    assert y.tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]] and y.dtype is tg.int64
    assert F.one_hot(tg.tensor([1]), num_classes=4).shape == (1, 4)


def test_second_order_gradients():
    from tests.helpers import second_order
    x = tg.tensor(rng.uniform(-3, 3, (2, 3)))
    t = tg.tensor(rng.uniform(0, 1, (2, 3)))
    second_order(lambda x: F.binary_cross_entropy_with_logits(x, t, reduction="none"), x)
    second_order(lambda x: F.mish(x), x)
    second_order(lambda x: F.softplus(x, 2.0), x)
    second_order(lambda x: F.normalize(x), x)


def test_prelu_refuses_type_promotion():
    # PyTorch's prelu: input and weight of one dtype (an int input gave a float result)
    for x, w, msg in ((tg.tensor([1, 2]), tg.tensor([0.1]), "Got Long and Float"),
                      (tg.ones(2), tg.ones(1, dtype=tg.float64), "Got Float and Double")):
        with pytest.raises(RuntimeError, match=f"prelu: Type promoting not supported. {msg}"):
            F.prelu(x, w)
