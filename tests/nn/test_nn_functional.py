"""nn.functional and the fused primitives behind it (autograd/ops/nn.py, kernels/numpy/nn.py):
values against NumPy float64 references, gradients against central differences (first and
second order), reductions, ignore_index, label smoothing, padding rows, half precision."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, t64, host, second_order
from tritongrad import nn

F = nn.functional

rng = np.random.default_rng(7)


def on(t, like):
    """``t`` on ``like``'s device: the finite differences run on the CPU, the analytic
    gradients on the device under test."""
    return t.to(like.device)


def leaf(x):
    return x if x.requires_grad else x.detach().requires_grad_(True)


# -- GELU ----------------------------------------------------------------------------------------

def _gelu_grad_ref(x, approximate):
    """GELU'(x) in float64: Phi(x) + x phi(x), or the tanh form's derivative."""
    if approximate == "tanh":
        c, a = math.sqrt(2 / math.pi), 0.044715
        t = np.tanh(c * (x + a * x ** 3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * a * x * x)
    return _ndtr_ref(x) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _gelu_ref(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel()]).reshape(
        x.shape)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_values(device, approximate):
    x = np.concatenate([np.linspace(-9, 9, 181), [-30.0, 0.0, 1e-8, 30.0]])
    for dt, tol in ((tg.float64, 1e-13), (tg.float32, 3e-7)):
        y = F.gelu(tg.tensor(x, dtype=dt, device=device), approximate=approximate)
        assert y.dtype is dt
        np.testing.assert_allclose(host(y), _gelu_ref(x, approximate), rtol=tol, atol=tol)


def _ndtr_ref(x):
    """The standard normal CDF by math.erfc (no cancellation for negative x)."""
    return np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])


def test_gelu_float64_far_negative_tail(device):
    # 0.5 x (1 + erf(x / sqrt 2)) cancels: it gave -4e-15 at x = -10 (the true value is
    # -7.6e-23) and a positive gradient there (the true one is -7.6e-22)
    x = np.concatenate([np.linspace(-37, -2, 351), [-10.0]])
    xt = tg.tensor(x, dtype=tg.float64, device=device, requires_grad=True)
    y = F.gelu(xt)
    y.sum().backward()
    np.testing.assert_allclose(host(y), x * _ndtr_ref(x), rtol=1e-12, atol=0)
    dref = _ndtr_ref(x) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(host(xt.grad), dref, rtol=1e-12, atol=0)
    assert host(y)[-1] < 0 and host(xt.grad)[-1] < 0


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dt", [tg.float32, tg.float64], ids=str)
def test_gelu_infinities_and_nan(device, approximate, dt):
    # GELU(-inf) = -inf * Phi(-inf) = -inf * 0 = NaN, GELU(inf) = inf; the gradients
    # Phi(x) + x phi(x) are NaN at both infinities (inf * 0), as PyTorch's
    x = tg.tensor([-math.inf, math.inf, math.nan, 1.0], dtype=dt, device=device,
                  requires_grad=True)
    with np.errstate(invalid="ignore"):
        y = F.gelu(x, approximate=approximate)
        y.sum().backward()
    v, g = host(y), host(x.grad)
    assert np.isnan(v[0]) and v[1] == math.inf and np.isnan(v[2]) and np.isfinite(v[3])
    assert np.isnan(g[:3]).all() and np.isfinite(g[3])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradients_first_and_second_order(device, approximate):
    x = t64((3, 4), device, -3, 3)
    assert_grads_match(lambda x: F.gelu(x, approximate), [x])
    second_order(lambda x: F.gelu(x, approximate), [x])


def test_gelu_third_order(device):
    x = t64((5,), device, -2, 2)

    def second(x):
        x = leaf(x)
        g, = tg.autograd.grad(F.gelu(x).sum(), x, create_graph=True)
        gg, = tg.autograd.grad(g.sum(), x, create_graph=True)
        return gg

    assert_grads_match(second, [x], atol=1e-5)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_keeps_its_derivative_on_the_cpu_only_until_backward(device, approximate):
    # the CPU forward computes GELU'(x) with GELU(x) and keeps it on the node for a
    # one-multiply backward; the GPU recomputes it. Either way the gradients are the same, a
    # retained graph gives them twice, and an in-place change of x is still caught
    xs = rng.standard_normal((6, 9)).astype(np.float32)
    g = tg.tensor(rng.standard_normal((6, 9)).astype(np.float32), device=device)
    x = tg.tensor(xs, device=device, requires_grad=True)
    y = F.gelu(x, approximate)
    node = y.grad_fn
    assert (node._derivative is not None) == (x.device.type == "cpu")
    y.backward(g, retain_graph=True)
    first = host(x.grad).copy()
    x.grad = None
    y.backward(g)
    np.testing.assert_array_equal(host(x.grad), first)
    assert node._derivative is None  # dropped with the saved tensors
    expect = _gelu_grad_ref(xs.astype(np.float64).ravel(), approximate).reshape(6, 9) * host(g)
    np.testing.assert_allclose(first, expect, rtol=1e-5, atol=1e-6)
    y = F.gelu(x, approximate)
    with tg.no_grad():
        x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_gelu_keeps_no_derivative_under_saved_tensor_hooks():
    # what a node keeps for backward is then the hooks' alone: one pack, of x, as PyTorch's
    packed = []
    x = tg.randn(4, 5, requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = F.gelu(x)
    assert y.grad_fn._derivative is None and len(packed) == 1 and packed[0] is x
    y.sum().backward()
    x2 = x.detach().requires_grad_()
    F.gelu(x2).sum().backward()
    np.testing.assert_array_equal(host(x.grad), host(x2.grad))


def test_gelu_graph_names_and_errors():
    x = tg.randn(3, requires_grad=True)
    y = F.gelu(x)
    assert y.grad_fn.name() == "GeluBackward0"
    g, = tg.autograd.grad(y.sum(), x, create_graph=True)
    assert g.grad_fn.name() == "GeluBackwardBackward0"
    with pytest.raises(RuntimeError, match="approximate"):
        F.gelu(x, approximate="fast")
    with pytest.raises(RuntimeError, match="floating point"):
        F.gelu(tg.tensor([1, 2]))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_gelu_half_precision_matches_float32(dt):
    x = tg.tensor(rng.uniform(-4, 4, 64), dtype=getattr(tg, dt))
    y = F.gelu(x)
    assert y.dtype is getattr(tg, dt)
    ref = F.gelu(x.float())
    np.testing.assert_allclose(host(y.float()), host(ref), rtol=1e-2, atol=1e-2)


# -- layer norm ----------------------------------------------------------------------------------

def _layer_norm_ref(x, shape, w, b, eps):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("shape, norm", [((4, 6), (6,)), ((2, 3, 4), (3, 4)), ((5,), (5,)),
                                         ((3, 1, 7), (7,))])
def test_layer_norm_values(device, shape, norm):
    x = t64(shape, device, -3, 3)
    w, b = t64(norm, device), t64(norm, device)
    for args in ((w, b), (w, None), (None, None), (None, b)):
        y = F.layer_norm(x, norm, *args, eps=1e-5)
        ref = _layer_norm_ref(host(x), norm, *(None if a is None else host(a) for a in args),
                              1e-5)
        np.testing.assert_allclose(host(y), ref, rtol=1e-10, atol=1e-10)


def test_layer_norm_float32_and_noncontiguous(device):
    x = tg.tensor(rng.normal(3, 2, (6, 5)), dtype=tg.float32, device=device).t()  # (5, 6)
    y = F.layer_norm(x, (6,))
    np.testing.assert_allclose(host(y), _layer_norm_ref(host(x).astype(np.float64), (6,), None,
                                                        None, 1e-5), rtol=1e-5, atol=1e-5)


def test_layer_norm_gradients(device):
    x, w, b = t64((3, 5), device), t64((5,), device), t64((5,), device)
    weight = t64((3, 5), device)  # a non-uniform upstream gradient
    assert_grads_match(lambda x, w, b: F.layer_norm(x, (5,), w, b) * on(weight, x), [x, w, b])
    assert_grads_match(lambda x: F.layer_norm(x, (5,)) * on(weight, x), [x])
    x3 = t64((2, 2, 3), device)
    w3, b3 = t64((2, 3), device), t64((2, 3), device)
    assert_grads_match(lambda x, w, b: F.layer_norm(x, (2, 3), w, b) * on(x3, x), [x3, w3, b3])


def test_layer_norm_double_backward(device):
    x, w, b = t64((2, 4), device), t64((4,), device), t64((4,), device)
    up = t64((2, 4), device)
    second_order(lambda x, w, b: F.layer_norm(x, (4,), w, b) * on(up, x), [x, w, b])


def test_layer_norm_errors():
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(tg.randn(3, 4), (5,))
    with pytest.raises(RuntimeError, match="weight"):
        F.layer_norm(tg.randn(3, 4), (4,), tg.ones(3))


# -- cross-entropy -------------------------------------------------------------------------------

def _log_softmax_ref(x, axis=1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _ce_ref(x, t, ignore_index=-100, smoothing=0.0, reduction="mean", weight=None):
    logp = _log_softmax_ref(x)
    c = x.shape[1]
    valid = t != ignore_index
    ts = np.where(valid, t, 0)
    w = np.ones(c) if weight is None else weight
    nll = -logp[np.arange(len(t)), ts] * w[ts]
    smooth = -(logp * w).sum(1) / c
    loss = np.where(valid, (1 - smoothing) * nll + smoothing * smooth, 0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (w[ts] * valid).sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_values(device, reduction, smoothing):
    x = t64((6, 5), device, -4, 4)
    t = np.array([0, 4, -100, 2, 2, 1])
    out = F.cross_entropy(x, tg.tensor(t, device=device), reduction=reduction,
                          label_smoothing=smoothing)
    np.testing.assert_allclose(host(out), _ce_ref(host(x), t, -100, smoothing, reduction),
                               rtol=1e-12, atol=1e-12)


def test_cross_entropy_is_stable_for_large_logits():
    x = tg.tensor([[1000.0, 0.0, -1000.0], [-1e4, 1e4, 0.0]])
    loss = F.cross_entropy(x, tg.tensor([0, 1]), reduction="none")
    np.testing.assert_allclose(host(loss), [0.0, 0.0], atol=1e-6)
    assert np.isfinite(host(F.cross_entropy(x, tg.tensor([2, 0]), reduction="none"))).all()


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_gradients(device, smoothing):
    x = t64((4, 5), device)
    t = tg.tensor([1, -100, 4, 0], device=device)
    assert_grads_match(lambda x: F.cross_entropy(x, on(t, x), label_smoothing=smoothing), [x])
    up = t64((4,), device)
    assert_grads_match(lambda x: F.cross_entropy(x, on(t, x), reduction="none",
                                                 label_smoothing=smoothing) * on(up, x), [x])
    second_order(lambda x: F.cross_entropy(x, on(t, x), reduction="none",
                                           label_smoothing=smoothing) * on(up, x), [x])


def test_cross_entropy_spatial_and_unbatched(device):
    x = t64((2, 3, 4), device)  # (N, C, d1)
    t = np.array([[0, 1, 2, 1], [2, 2, 0, -100]])
    out = F.cross_entropy(x, tg.tensor(t, device=device), reduction="none")
    assert tuple(out.shape) == (2, 4)
    ref = _ce_ref(host(x).transpose(0, 2, 1).reshape(-1, 3), t.reshape(-1), reduction="none")
    np.testing.assert_allclose(host(out), ref.reshape(2, 4), rtol=1e-12)
    assert_grads_match(lambda x: F.cross_entropy(x, tg.tensor(t, device=x.device)), [x])
    single = F.cross_entropy(t64((5,), device), tg.tensor(3, device=device))
    assert single.shape == ()


def test_cross_entropy_probability_targets_and_class_weights(device):
    x = t64((4, 3), device)
    p = rng.dirichlet(np.ones(3), size=4)
    out = F.cross_entropy(x, tg.tensor(p, dtype=tg.float64, device=device))
    np.testing.assert_allclose(host(out), -(p * _log_softmax_ref(host(x))).sum(1).mean(),
                               rtol=1e-12)
    w = np.array([0.2, 1.0, 3.0])
    t = np.array([0, 2, 2, -100])
    out = F.cross_entropy(x, tg.tensor(t, device=device), tg.tensor(w, dtype=tg.float64,
                                                                     device=device))
    np.testing.assert_allclose(host(out), _ce_ref(host(x), t, weight=w), rtol=1e-12)
    assert_grads_match(lambda x: F.cross_entropy(x, tg.tensor(t, device=x.device),
                                                 tg.tensor(w, dtype=tg.float64,
                                                           device=x.device)), [x])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_class_weights_with_label_smoothing(device, reduction):
    x = t64((5, 4), device)
    w = tg.tensor([0.2, 1.0, 3.0, 0.7], dtype=tg.float64, device=device)
    t = np.array([0, 3, -100, 2, 3])

    def loss(x):
        return F.cross_entropy(x, tg.tensor(t, device=x.device), w.to(x.device),
                               reduction=reduction, label_smoothing=0.3)
    np.testing.assert_allclose(host(loss(x)), _ce_ref(host(x), t, -100, 0.3, reduction,
                                                      weight=host(w)), rtol=1e-12)
    assert_grads_match(loss, [x], grad_output=rng.normal(size=(5,)) if reduction == "none"
                       else None)


def test_cross_entropy_errors_and_edge_cases():
    x = tg.randn(3, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, tg.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="target"):
        F.cross_entropy(x, tg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="label_smoothing"):
        F.cross_entropy(x, tg.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(x, tg.tensor([0, 1, 2]), reduction="avg")
    with np.errstate(invalid="ignore"):  # every row ignored: 0 / 0, NaN as in PyTorch
        assert math.isnan(F.cross_entropy(x, tg.tensor([-100, -100, -100])).item())
    y = F.cross_entropy(x.requires_grad_(), tg.tensor([0, 1, 2], dtype=tg.uint8))
    assert y.grad_fn is not None


def test_nll_loss_matches_cross_entropy(device):
    x = t64((5, 4), device)
    t = tg.tensor([3, 0, -100, 1, 1], device=device)
    for red in ("mean", "sum", "none"):
        a = F.nll_loss(F.log_softmax(x, dim=1), t, reduction=red)
        b = F.cross_entropy(x, t, reduction=red)
        np.testing.assert_allclose(host(a), host(b), rtol=1e-12, atol=1e-12)
    assert_grads_match(lambda x: F.nll_loss(x, on(t, x)), [x])


def test_nll_loss_rejects_out_of_range_and_float_targets(device):
    x = tg.tensor([[.1, .2, .3, .4], [.5, .6, .7, .8]], device=device)
    for bad in (4, -1, -5):
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
            F.nll_loss(x, tg.tensor([0, bad], device=device))
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):  # the weighted path
        F.cross_entropy(x, tg.tensor([0, 4], device=device), weight=tg.ones(4, device=device))
    # targets equal to ignore_index are allowed, in range or not
    assert F.nll_loss(x, tg.tensor([0, -100], device=device)).item() == pytest.approx(-0.1)
    assert F.nll_loss(x, tg.tensor([0, 7], device=device), ignore_index=7).item() == \
        pytest.approx(-0.1)
    for t, name in ((tg.tensor([0.0, 1.0], device=device), "Float"),
                    (tg.tensor([True, False], device=device), "Bool")):
        with pytest.raises(RuntimeError,
                           match=f"^expected target dtype to be Long or Byte, but got {name}$"):
            F.nll_loss(x, t)


def test_class_index_target_dtypes_are_pytorchs(device):
    # PyTorch's nll_loss over (N, C) inputs takes Long or Byte targets (Byte gives Long's
    # result) and refuses the other integer dtypes; its spatial form and multi_margin_loss
    # take Long only
    x = tg.tensor([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], device=device).log()
    long_t = tg.tensor([1, 0], device=device)
    for f in (F.nll_loss, F.cross_entropy):
        assert f(x, long_t.to(tg.uint8)).item() == pytest.approx(f(x, long_t).item(), rel=1e-6)
        with pytest.raises(RuntimeError,
                           match="^expected target dtype to be Long or Byte, but got Int$"):
            f(x, long_t.int())
    spatial = tg.zeros(2, 3, 4, device=device)
    for t, name in ((tg.zeros(2, 4, dtype=tg.uint8, device=device), "Byte"),
                    (tg.zeros(2, 4, dtype=tg.int32, device=device), "Int")):
        with pytest.raises(RuntimeError, match=f"^expected scalar type Long but found {name}$"):
            F.cross_entropy(spatial, t)
    with pytest.raises(RuntimeError, match="^expected scalar type Long but found Float$"):
        F.multi_margin_loss(x, long_t.float())


def test_nll_loss_reads_only_the_target_class(device):
    # -inf log-probabilities of other classes (a masked softmax) and anything on ignored rows
    # must not turn the loss or its gradient into NaN (a one-hot product made inf * 0)
    x = tg.tensor([[-math.inf, -0.5, -2.0], [math.nan, math.inf, 0.0], [-1.0, -math.inf, -3.0]],
                  dtype=tg.float64, device=device, requires_grad=True)
    t = tg.tensor([1, -100, 2], device=device)
    w = tg.tensor([1.0, 2.0, 4.0], dtype=tg.float64, device=device)
    loss = F.nll_loss(x, t, weight=w)
    loss.backward()
    assert loss.item() == pytest.approx((2 * 0.5 + 4 * 3.0) / 6, rel=1e-15)
    np.testing.assert_array_equal(host(x.grad), [[0, -2 / 6, 0], [0, 0, 0], [0, 0, -4 / 6]])
    np.testing.assert_array_equal(host(F.nll_loss(x.detach(), t, reduction="none")),
                                  [0.5, 0.0, 3.0])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_losses_with_every_target_ignored(device, reduction):
    # 'mean' is 0 / 0 = NaN, as PyTorch's, but the gradient is 0 (the total weight is a
    # constant and ignored rows get none), not g / 0 * 0 = NaN
    w = tg.tensor([1.0, 2.0, 3.0, 4.0], dtype=tg.float64, device=device)
    t = tg.tensor([-100, -100], device=device)
    cases = [lambda x: F.nll_loss(x, t, reduction=reduction),
             lambda x: F.nll_loss(x, t, weight=w, reduction=reduction),
             lambda x: F.cross_entropy(x, t, reduction=reduction),
             lambda x: F.cross_entropy(x, t, weight=w, reduction=reduction),
             lambda x: F.cross_entropy(x, t, weight=w, reduction=reduction, label_smoothing=0.1)]
    for fn in cases:
        x = t64((2, 4), device).requires_grad_()
        with np.errstate(invalid="ignore", divide="ignore"):
            loss = fn(x)
            loss.backward()
        if reduction == "mean":
            assert math.isnan(loss.item())
        else:
            assert loss.item() == 0.0
        np.testing.assert_array_equal(host(x.grad), np.zeros((2, 4)))


def test_nll_loss_targets_of_zero_total_weight(device):
    # targets not ignored but of weight 0: -w[t] / 0 = NaN at the targets (PyTorch's), 0 else
    x = t64((2, 3), device).requires_grad_()
    w = tg.tensor([1.0, 0.0, 0.0], dtype=tg.float64, device=device)
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = F.nll_loss(x, tg.tensor([1, -100], device=device), weight=w)
        loss.backward()
    assert math.isnan(loss.item())
    g = host(x.grad)
    assert np.isnan(g[0, 1]) and (np.delete(g.ravel(), 1) == 0).all()


def test_mse_loss(device):
    a, b = t64((3, 4), device), t64((3, 4), device)
    np.testing.assert_allclose(host(F.mse_loss(a, b)), ((host(a) - host(b)) ** 2).mean())
    np.testing.assert_allclose(host(F.mse_loss(a, b, reduction="sum")),
                               ((host(a) - host(b)) ** 2).sum())
    assert tuple(F.mse_loss(a, b, reduction="none").shape) == (3, 4)
    assert_grads_match(lambda a, b: F.mse_loss(a, b), [a, b])
    with pytest.warns(UserWarning, match="target size"):
        F.mse_loss(a, b[0])


# -- embedding -----------------------------------------------------------------------------------

def test_embedding_values_and_gradients(device):
    w = t64((5, 3), device)
    idx = np.array([[0, 4, 4], [2, 0, 1]])
    out = F.embedding(tg.tensor(idx, device=device), w)
    np.testing.assert_array_equal(host(out), host(w)[idx])
    up = t64((2, 3, 3), device)
    assert_grads_match(lambda w: F.embedding(tg.tensor(idx, device=w.device), w) * on(up, w), [w])
    second_order(lambda w: F.embedding(tg.tensor(idx, device=w.device), w) * on(up, w) * w.sum(),
                 [w])


def test_embedding_padding_idx_gets_no_gradient(device):
    w = t64((4, 2), device).requires_grad_()
    idx = tg.tensor([0, 3, 3, 1], device=device)
    F.embedding(idx, w, padding_idx=3).sum().backward()
    np.testing.assert_array_equal(host(w.grad), [[1, 1], [1, 1], [0, 0], [0, 0]])
    w.grad = None
    F.embedding(idx, w, padding_idx=-1).sum().backward()  # -1 is row 3
    assert host(w.grad)[3].tolist() == [0, 0]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 0.5, math.inf, 0])
def test_embedding_max_norm_renormalises_picked_rows_in_place(norm_type, device):
    table = rng.normal(size=(6, 4)) * 2
    table[3] = [0.1, 0.0, -0.1, 0.05]  # a picked row already under the bound stays
    w = tg.tensor(table, device=device)
    idx = np.array([[0, 2, 2], [5, 0, 3]])
    out = F.embedding(tg.tensor(idx, device=device), w, max_norm=1.0, norm_type=norm_type)

    def norm(r):
        a = np.abs(r)
        if norm_type == math.inf:
            return a.max()
        return float(np.count_nonzero(a)) if norm_type == 0 else (a ** norm_type).sum() ** (
            1 / norm_type)

    want = table.copy()
    for i in np.unique(idx):
        n = norm(table[i])
        if n > 1.0:
            want[i] = table[i] * (1.0 / (n + 1e-7))
    np.testing.assert_allclose(host(w), want, rtol=1e-12)  # rows 1 and 4 (not picked) unchanged
    np.testing.assert_allclose(host(out), want[idx], rtol=1e-12)
    assert w._version == 1  # written in place, as PyTorch's embedding_renorm_


def test_embedding_max_norm_module_and_version_check(device):
    emb = nn.Embedding(5, 3, max_norm=0.5).to(device)
    y = emb(tg.tensor([1, 2], device=device))
    assert np.all(np.linalg.norm(host(y), axis=1) <= 0.5 + 1e-6)
    # the weight saved by an earlier lookup's backward is renormalised by the next one
    z = (emb.weight * emb.weight).sum()
    emb(tg.tensor([0, 4], device=device))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_embedding_scale_grad_by_freq(device):
    idx = np.array([[0, 4, 4], [2, 0, 4]])
    up = rng.normal(size=(2, 3, 3))
    w = t64((5, 3), device).requires_grad_()
    (F.embedding(tg.tensor(idx, device=device), w, scale_grad_by_freq=True)
     * tg.tensor(up, device=device)).sum().backward()
    want = np.zeros((5, 3))
    counts = np.bincount(idx.ravel(), minlength=5)
    for pos, i in np.ndenumerate(idx):
        want[i] += up[pos] / counts[i]
    np.testing.assert_allclose(host(w.grad), want, rtol=1e-12)
    # Double backward through the scaled rule is that rule's exact adjoint (gathered and
    # scaled), checked by differences of the rule itself in its incoming gradient. (PyTorch's
    # double backward leaves the scaling out; docs/training.md says so.)
    def weight_grad(gout):
        x = w.detach().to(gout.device).requires_grad_()
        y = F.embedding(tg.tensor(idx, device=gout.device), x, scale_grad_by_freq=True)
        return tg.autograd.grad(y, x, gout, create_graph=True)[0]
    assert_grads_match(weight_grad, [tg.tensor(up, device=device)],
                       grad_output=rng.normal(size=(5, 3)))


def test_embedding_errors():
    w = tg.randn(4, 2)
    with pytest.raises(IndexError, match="out of range"):
        F.embedding(tg.tensor([4]), w)
    with pytest.raises(IndexError, match="out of range"):  # checked before any renorm write
        F.embedding(tg.tensor([4]), w, max_norm=1.0)
    assert w._version == 0
    with pytest.raises(RuntimeError, match="indices"):
        F.embedding(tg.tensor([1.0]), w)
    with pytest.raises(IndexError, match="out of range"):  # the sparse path checks too
        F.embedding(tg.tensor([4]), w, sparse=True)


# -- activations, dropout, linear ----------------------------------------------------------------

def test_activations(device):
    x = t64((3, 4), device)
    xs = host(x)
    np.testing.assert_allclose(host(F.relu(x)), np.maximum(xs, 0))
    np.testing.assert_allclose(host(F.tanh(x)), np.tanh(xs), rtol=1e-12)
    np.testing.assert_allclose(host(F.sigmoid(x)), 1 / (1 + np.exp(-xs)), rtol=1e-12)
    np.testing.assert_allclose(host(F.silu(x)), xs / (1 + np.exp(-xs)), rtol=1e-12)
    np.testing.assert_allclose(host(F.softmax(x, dim=1)), np.exp(_log_softmax_ref(xs)),
                               rtol=1e-12)
    np.testing.assert_allclose(host(F.log_softmax(x, dim=-1)), _log_softmax_ref(xs), rtol=1e-12)
    assert_grads_match(F.silu, [x])
    assert_grads_match(lambda x: F.log_softmax(x, 1) * x, [x])


@pytest.mark.parametrize("dt", [tg.float32, tg.float64], ids=str)
def test_silu_infinities_and_nan(device, dt):
    # silu(-inf) = -inf * sigmoid(-inf) = -inf * 0 = NaN (PyTorch), not -inf; its gradient
    # sigmoid(x) (1 + x (1 - sigmoid(x))) is NaN at both infinities
    x = tg.tensor([-math.inf, math.inf, math.nan, -20.0], dtype=dt, device=device,
                  requires_grad=True)
    with np.errstate(invalid="ignore", over="ignore"):
        y = F.silu(x)
        y.sum().backward()
    v, g = host(y), host(x.grad)
    assert np.isnan(v[0]) and v[1] == math.inf and np.isnan(v[2])
    assert np.isnan(g[:3]).all()
    s = 1 / (1 + math.exp(20.0))
    tol = 1e-6 if dt is tg.float32 else 1e-14
    assert v[3] == pytest.approx(-20.0 * s, rel=tol)
    assert g[3] == pytest.approx(s * (1 - 20.0 * (1 - s)), rel=tol)


def test_linear(device):
    x, w, b = t64((2, 3, 4), device), t64((5, 4), device), t64((5,), device)
    np.testing.assert_allclose(host(F.linear(x, w, b)), host(x) @ host(w).T + host(b),
                               rtol=1e-12)
    np.testing.assert_allclose(host(F.linear(x, w)), host(x) @ host(w).T, rtol=1e-12)
    assert_grads_match(lambda x, w, b: F.linear(x, w, b), [x[0], w, b])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        F.linear(tg.randn(2, 3), tg.randn(5, 4))


def test_dropout_statistics_and_modes():
    tg.manual_seed(0)
    x = tg.ones(200, 100)
    y = F.dropout(x, 0.3)
    kept = host(y) != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(host(y)[kept], 1 / 0.7, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    assert host(F.dropout(x, 1.0)).sum() == 0
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)
    xr = tg.randn(10, requires_grad=True)
    F.dropout(xr, 0.5).sum().backward()
    assert set(np.unique(host(xr.grad)).tolist()) <= {0.0, 2.0}


def test_one_hot():
    out = F.one_hot(tg.tensor([0, 2, 1]), 4)
    assert out.dtype is tg.int64
    np.testing.assert_array_equal(host(out), np.eye(4, dtype=np.int64)[[0, 2, 1]])


def test_rms_norm_of_half_inputs_computes_in_float32():
    # PyTorch normalizes float16/bfloat16 in float32, whose epsilon is the default eps
    # (bfloat16's own, 2^-7, made a row of small values 6% too small)
    x = np.arange(16.0).reshape(4, 4) / 10 + 0.05
    want = x / np.sqrt((x * x).mean(1, keepdims=True) + np.finfo(np.float32).eps)
    for dt in (tg.bfloat16, tg.float16):
        y = F.rms_norm(tg.tensor(x, dtype=dt), (4,))
        assert y.dtype is dt
        np.testing.assert_allclose(y.float().numpy(), want, rtol=1e-2)
