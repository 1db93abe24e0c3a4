"""The layers against NumPy references, and the initialisations' statistics (PyTorch's
defaults: Linear's kaiming_uniform(a=sqrt(5)) and bias bound, Embedding N(0, 1), LayerNorm
ones/zeros) and nn.init's functions."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn

init = nn.init


def test_linear_forward_backward_against_numpy(device):
    tg.manual_seed(0)
    m = nn.Linear(5, 3).to(device)
    x = tg.randn(4, 5, device=device)
    y = m(x)
    ref = host(x) @ host(m.weight).T + host(m.bias)
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(host(m.weight.grad), np.ones((3, 4)) @ host(x), rtol=1e-5)
    np.testing.assert_allclose(host(m.bias.grad), [4, 4, 4])
    assert nn.Linear(5, 3, bias=False).bias is None
    assert nn.Linear(2, 2, dtype=tg.float64).weight.dtype is tg.float64


def test_linear_default_init_statistics():
    tg.manual_seed(1)
    m = nn.Linear(400, 300)
    w, b = host(m.weight), host(m.bias)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) on fan_in 400
    assert w.min() >= -bound and w.max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert abs(w.mean()) < 0.01 * bound
    assert b.min() >= -bound and b.max() <= bound and b.std() > 0.5 * bound / math.sqrt(3)


def test_embedding_and_layer_norm_default_init():
    tg.manual_seed(2)
    e = host(nn.Embedding(500, 64).weight)
    assert abs(e.mean()) < 0.01 and abs(e.std() - 1) < 0.01
    p = nn.Embedding(10, 4, padding_idx=2)
    assert host(p.weight)[2].tolist() == [0, 0, 0, 0]
    ln = nn.LayerNorm((3, 4))
    assert host(ln.weight).tolist() == np.ones((3, 4)).tolist()
    assert host(ln.bias).tolist() == np.zeros((3, 4)).tolist()
    assert nn.LayerNorm(4, elementwise_affine=False).weight is None
    assert nn.LayerNorm(4, bias=False).bias is None


def test_init_functions_statistics():
    tg.manual_seed(3)
    t = tg.empty(300, 200)
    assert init.uniform_(t, -2, 3) is t
    a = host(t)
    assert a.min() >= -2 and a.max() <= 3 and abs(a.mean() - 0.5) < 0.03
    a = host(init.normal_(t, 1.0, 0.5))
    assert abs(a.mean() - 1) < 0.01 and abs(a.std() - 0.5) < 0.01
    a = host(init.xavier_uniform_(t, gain=2.0))
    bound = 2.0 * math.sqrt(6 / 500)
    assert a.max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.02 * bound
    a = host(init.xavier_normal_(t))
    assert abs(a.std() - math.sqrt(2 / 500)) < 0.02 * math.sqrt(2 / 500)
    a = host(init.kaiming_uniform_(t, nonlinearity="relu"))
    bound = math.sqrt(2) * math.sqrt(3 / 200)
    assert a.max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.02 * bound
    a = host(init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"))
    assert abs(a.std() - math.sqrt(2 / 300)) < 0.02 * math.sqrt(2 / 300)
    a = host(init.trunc_normal_(t, std=1.0, a=-1.0, b=1.5))
    assert a.min() >= -1.0 and a.max() <= 1.5
    assert host(init.constant_(t, 0.25)).max() == 0.25
    assert host(init.zeros_(t)).max() == 0 and host(init.ones_(t)).min() == 1
    assert host(init.eye_(tg.empty(3, 3))).tolist() == np.eye(3).tolist()
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(tg.empty(5))


def test_init_is_reproducible_and_does_not_record_history():
    tg.manual_seed(4)
    a = nn.Linear(3, 3)
    tg.manual_seed(4)
    b = nn.Linear(3, 3)
    assert host(a.weight).tolist() == host(b.weight).tolist()
    assert a.weight.is_leaf and a.weight.grad_fn is None


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(1 / 3)
    with pytest.raises(ValueError, match="Unsupported"):
        init.calculate_gain("swish")


def test_layer_modules(device):
    tg.manual_seed(5)
    x = tg.randn(2, 3, 8, device=device)
    ln = nn.LayerNorm(8).to(device)
    y = host(ln(x))
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-6)
    np.testing.assert_allclose(y.var(-1), 1, rtol=1e-3)
    emb = nn.Embedding(6, 4).to(device)
    out = emb(tg.tensor([[1, 5], [0, 1]], device=device))
    np.testing.assert_array_equal(host(out)[0, 0], host(emb.weight)[1])
    for mod, fn in ((nn.ReLU(), lambda a: np.maximum(a, 0)), (nn.Tanh(), np.tanh),
                    (nn.Sigmoid(), lambda a: 1 / (1 + np.exp(-a))),
                    (nn.SiLU(), lambda a: a / (1 + np.exp(-a))), (nn.Identity(), lambda a: a)):
        np.testing.assert_allclose(host(mod(x)), fn(host(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(nn.Softmax(dim=-1)(x)).sum(-1), 1, rtol=1e-6)
    assert tuple(nn.Flatten()(x).shape) == (2, 24)
    d = nn.Dropout(0.5)
    assert host(d(x)).tolist() != host(x).tolist()
    d.eval()
    assert d(x) is x


def test_loss_modules(device):
    x = tg.tensor([[2.0, 0.0, -1.0], [0.5, 0.5, 0.5]], device=device)
    t = tg.tensor([0, 2], device=device)
    logp = x.log_softmax(1)
    ref = -(host(logp)[0, 0] + host(logp)[1, 2]) / 2
    np.testing.assert_allclose(host(nn.CrossEntropyLoss()(x, t)), ref, rtol=1e-6)
    np.testing.assert_allclose(host(nn.CrossEntropyLoss(reduction="sum")(x, t)), 2 * ref,
                               rtol=1e-6)
    assert tuple(nn.CrossEntropyLoss(reduction="none")(x, t).shape) == (2,)
    np.testing.assert_allclose(host(nn.CrossEntropyLoss(ignore_index=2)(x, t)),
                               -host(logp)[0, 0], rtol=1e-6)
    ls = nn.CrossEntropyLoss(label_smoothing=0.1)(x, t)
    ref_ls = np.mean([0.9 * -host(logp)[i, c] - 0.1 * host(logp)[i].mean()
                      for i, c in ((0, 0), (1, 2))])
    np.testing.assert_allclose(host(ls), ref_ls, rtol=1e-6)
    np.testing.assert_allclose(host(nn.NLLLoss()(logp, t)), ref, rtol=1e-6)
    np.testing.assert_allclose(host(nn.MSELoss()(x, tg.zeros_like(x))), (host(x) ** 2).mean(),
                               rtol=1e-6)
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16", "complex64"])
def test_clip_grad_norm_2_norm_against_float64(device, dt):
    # the 2-norm runs on the backend's arrays (one product and one sum per gradient): the
    # total against NumPy float64, gradients scaled in place with their versions bumped, the
    # result real and in the gradients' (real) dtype, untouched below the bound
    rng = np.random.default_rng(11)
    vals = [rng.standard_normal(s) for s in [(4, 5), (7,), (3, 2, 2), (0, 3)]]
    if dt == "complex64":
        vals = [v + 1j * rng.standard_normal(v.shape) for v in vals]
    dtype = getattr(tg, dt)
    params = [nn.Parameter(tg.zeros(v.shape, dtype=dtype, device=device)) for v in vals]
    for p, v in zip(params, vals):
        p.grad = tg.tensor(v, dtype=dtype, device=device)
    stored = [host(p.grad).astype(np.complex128) for p in params]
    want = math.sqrt(sum(float((np.abs(v) ** 2).sum()) for v in stored))
    versions = [p.grad._version for p in params]
    total = nn.utils.clip_grad_norm_(params, 0.5)
    tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dt, 1e-6)
    assert total.dtype is dtype.to_real() and total.shape == ()
    assert abs(total.item() - want) <= tol * want
    coef = 0.5 / (total.item() + 1e-6)
    for p, v, ver in zip(params, stored, versions):
        np.testing.assert_allclose(host(p.grad).astype(np.complex128), v * coef,
                                   rtol=tol, atol=tol)
        assert p.grad._version == ver + 1
    again = [host(p.grad).copy() for p in params]
    nn.utils.clip_grad_norm_(params, 100.0)
    for p, a in zip(params, again):
        np.testing.assert_array_equal(host(p.grad), a)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_clip_grad_norm_non_finite_total_as_pytorch(device, bad, monkeypatch):
    # PyTorch multiplies every gradient by min(max_norm / (total + 1e-6), 1): a NaN total
    # makes them all NaN, an infinite one zeroes the finite ones (inf * 0 is NaN); on a CUDA
    # device the factor stays there (no read of the norm: no sync) unless error_if_nonfinite
    grads = [np.array([3.0, -4.0], np.float32), np.array([bad, 1.0], np.float32)]
    params = [nn.Parameter(tg.zeros(2, device=device)) for _ in grads]
    for p, g in zip(params, grads):
        p.grad = tg.tensor(g, device=device)
    if device != "cpu":
        def no_read(*args, **kwargs):
            raise AssertionError("clip_grad_norm_ read the norm back from the device")
        monkeypatch.setattr(tg.Tensor, "item", no_read)
    total = nn.utils.clip_grad_norm_(params, 1.0)
    monkeypatch.undo()
    with np.errstate(invalid="ignore"):
        want = [g * (0.0 if bad == np.inf else np.nan) for g in grads]
    assert math.isnan(total.item()) if bad != np.inf else total.item() == math.inf
    for p, w in zip(params, want):
        np.testing.assert_array_equal(host(p.grad), w)
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)


def test_gelu_module():
    x = tg.tensor([-1.0, 0.0, 2.0])
    np.testing.assert_allclose(host(nn.GELU()(x)), [-0.15865525, 0.0, 1.9544997], rtol=1e-6)
    np.testing.assert_allclose(host(nn.GELU("tanh")(x)), [-0.15880801, 0.0, 1.9545977],
                               rtol=1e-6)
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("fast")


def test_clip_grad_norm_():
    a = nn.Parameter(tg.tensor([3.0, 0.0]))
    b = nn.Parameter(tg.tensor([4.0]))
    a.grad, b.grad = tg.tensor([3.0, 0.0]), tg.tensor([4.0])
    total = nn.utils.clip_grad_norm_([a, b], 1.0)
    assert abs(total.item() - 5.0) < 1e-6
    np.testing.assert_allclose(host(a.grad), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(host(b.grad), [0.8], rtol=1e-5)
    total = nn.utils.clip_grad_norm_([a, b], 10.0)  # under the bound: unchanged
    np.testing.assert_allclose(host(b.grad), [0.8], rtol=1e-5)
    assert abs(nn.utils.clip_grad_norm_([a, b], 1.0, norm_type="inf").item() - 0.8) < 1e-5
    nn.utils.clip_grad_value_([a, b], 0.5)
    np.testing.assert_allclose(host(a.grad), [0.5, 0.0], rtol=1e-5)
    v = nn.utils.parameters_to_vector([a, b])
    assert v.tolist() == [3.0, 0.0, 4.0]
