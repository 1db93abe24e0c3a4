"""nn.functional's in-place activations (relu_, leaky_relu_, elu_, hardtanh_, selu_, celu_),
rrelu / rrelu_ / nn.RReLU, nn.Softmax2d, ChannelShuffle / channel_shuffle, pdist and
BatchNorm3d: values against float64 NumPy references, gradients against central
differences, on both backends."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64
from tritongrad import nn

F = nn.functional

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name, function called with its extra arguments, float64 reference
_INPLACE = [
    ("relu_", (), lambda x: np.maximum(x, 0)),
    ("leaky_relu_", (0.2,), lambda x: np.where(x > 0, x, 0.2 * x)),
    ("elu_", (0.7,), lambda x: np.where(x > 0, x, 0.7 * np.expm1(np.minimum(x, 0)))),
    ("hardtanh_", (-0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5)),
    ("selu_", (), lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(
        np.minimum(x, 0)))),
    ("celu_", (2.0,), lambda x: np.where(x > 0, x, 2.0 * np.expm1(np.minimum(x, 0) / 2.0))),
]


@pytest.mark.parametrize("name, args, ref", _INPLACE, ids=[c[0] for c in _INPLACE])
def test_inplace_activation_writes_input(name, args, ref, device):
    fn = getattr(F, name)
    x = t64((3, 7), device)
    expected = ref(host(x))
    version = x._version
    out = fn(x, *args)
    assert out is x and x._version > version
    np.testing.assert_allclose(host(x), expected, rtol=1e-12, atol=1e-12)
    # on a view: the base sees the write
    base = t64((4, 5), device)
    before = host(base).copy()
    fn(base[1:3], *args)
    after = host(base)
    np.testing.assert_array_equal(after[[0, 3]], before[[0, 3]])
    np.testing.assert_allclose(after[1:3], ref(before[1:3]), rtol=1e-12, atol=1e-12)
    assert name in F.__all__


@pytest.mark.parametrize("name, args, ref", _INPLACE, ids=[c[0] for c in _INPLACE])
def test_inplace_activation_gradients(name, args, ref, device):
    fn = getattr(F, name)
    x = t64((2, 5), device, low=-2.0, high=2.0)
    x = x.where(x.abs() > 0.05, 0.3)  # (away from the kinks)
    assert_grads_match(lambda a: fn(a * 1.0, *args), [x])
    leaf = x.detach().requires_grad_(True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(leaf, *args)


def test_rrelu_training_draws_slopes_in_range(device):
    x = tg.full((4000,), -1.0, dtype=tg.float64, device=device)
    x[:1000] = 2.0
    tg.manual_seed(0)
    y = host(F.rrelu(x, 0.1, 0.3, training=True))
    np.testing.assert_array_equal(y[:1000], 2.0)
    slopes = -y[1000:]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.05
    assert abs(slopes.mean() - 0.2) < 0.01  # uniform on [0.1, 0.3]
    # the gradient is the drawn slope where x <= 0 (0 included), 1 elsewhere
    a = tg.tensor([-1.5, 0.0, 2.0, -0.5], dtype=tg.float64, device=device, requires_grad=True)
    tg.manual_seed(1)
    out = F.rrelu(a, 0.1, 0.3, training=True)
    out.sum().backward()
    g = host(a.grad)
    assert g[2] == 1.0 and all(0.1 <= s <= 0.3 for s in g[[0, 1, 3]])
    np.testing.assert_allclose(host(out)[[0, 3]], host(a)[[0, 3]] * g[[0, 3]])
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the "
                                           "upper bound"):
        F.rrelu(a, 0.5, 0.1, training=True)


def test_rrelu_eval_is_the_mean_slope_and_module(device):
    x = t64((3, 4), device)
    expected = np.where(host(x) > 0, host(x), 0.2 * host(x))
    np.testing.assert_allclose(host(F.rrelu(x, 0.1, 0.3)), expected, rtol=1e-12)
    m = nn.RReLU(0.1, 0.3)
    assert repr(m) == "RReLU(lower=0.1, upper=0.3)"
    assert repr(nn.RReLU(inplace=True)) == ("RReLU(lower=0.125, upper=0.3333333333333333, "
                                            "inplace=True)")
    np.testing.assert_allclose(host(m.eval()(x)), expected, rtol=1e-12)
    tg.manual_seed(4)
    first = host(m.train()(x))
    assert not np.allclose(first, expected)
    y = x.clone()
    tg.manual_seed(4)
    assert F.rrelu_(y, 0.1, 0.3, training=True) is y
    np.testing.assert_array_equal(host(y), first)
    tg.manual_seed(4)
    z = x.clone()
    assert nn.RReLU(0.1, 0.3, inplace=True)(z) is z
    np.testing.assert_array_equal(host(z), first)
    # the top-level (ATen) form takes a generator
    g = tg.Generator(device).manual_seed(3)
    a = tg.rrelu(x, 0.1, 0.3, True, generator=g)
    np.testing.assert_array_equal(host(a), host(tg.rrelu(x, 0.1, 0.3, True,
                                                         generator=g.manual_seed(3))))


def test_softmax2d(device):
    x = t64((2, 3, 4, 5), device)
    a = host(x)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(host(nn.Softmax2d()(x)), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-12)
    assert nn.Softmax2d()(x[0]).shape == (3, 4, 5)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D "
                                         "instead"):
        nn.Softmax2d()(x[0, 0])


def test_channel_shuffle(device):
    x = tg.arange(2 * 6 * 3, dtype=tg.float64, device=device).reshape(2, 6, 3)
    out = host(F.channel_shuffle(x, 3))
    # channels (0 1 | 2 3 | 4 5) in 3 groups of 2 interleave to 0 2 4 1 3 5
    np.testing.assert_array_equal(out, host(x)[:, [0, 2, 4, 1, 3, 5]])
    m = nn.ChannelShuffle(2)
    assert repr(m) == "ChannelShuffle(groups=2)"
    np.testing.assert_array_equal(host(m(x)), host(x)[:, [0, 3, 1, 4, 2, 5]])
    assert tg.channel_shuffle is F.channel_shuffle
    with pytest.raises(RuntimeError, match=r"Number of channels must be divisible by groups. "
                                           r"Got 6 channels and 4 groups."):
        F.channel_shuffle(x, 4)
    with pytest.raises(RuntimeError, match=r"expects input with > 2 dims, but got input with "
                                           r"sizes \[2, 6\]"):
        F.channel_shuffle(x[:, :, 0], 2)
    assert_grads_match(lambda a: F.channel_shuffle(a, 2) * tg.arange(6.0, dtype=tg.float64,
                                                                      device=a.device)[:, None],
                       [t64((1, 6, 2), device)])


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf])
def test_pdist(p, device):
    x = t64((5, 3), device)
    a = host(x)
    expected = [np.linalg.norm(a[i] - a[j], ord=p) for i in range(5) for j in range(i + 1, 5)]
    np.testing.assert_allclose(host(F.pdist(x, p)), expected, rtol=1e-12)
    if not math.isinf(p):
        assert_grads_match(lambda t: F.pdist(t, p), [x], atol=1e-5)
    assert F.pdist(t64((1, 3), device)).shape == (0,)


def test_pdist_errors():
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        F.pdist(tg.ones(3))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(tg.ones(2, 2), -1.0)


def test_batch_norm3d(device):
    bn = nn.BatchNorm3d(3).double().to(device)
    x = t64((2, 3, 2, 3, 2), device)
    a = host(x)
    mean, var = a.mean(axis=(0, 2, 3, 4)), a.var(axis=(0, 2, 3, 4))
    expected = (a - mean[:, None, None, None]) / np.sqrt(var[:, None, None, None] + 1e-5)
    np.testing.assert_allclose(host(bn(x)), expected, rtol=1e-9, atol=1e-9)
    n = a.size / 3
    np.testing.assert_allclose(host(bn.running_var), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-9)
    assert repr(bn).startswith("BatchNorm3d(3, eps=1e-05")
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        bn(x[0])
