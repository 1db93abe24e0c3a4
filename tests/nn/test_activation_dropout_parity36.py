"""Activations, softmax and the dropout family against PyTorch's behaviour (sweep 36): the nodes
PyTorch records (LeakyReluBackward0/1, CeluBackward0/1, EluBackward1, SoftshrinkBackward0,
RreluWithNoiseBackward0/1, the in-place activations as their own node rather than a copy),
the in-place forms' negative-slope refusal, softmax of 0-d and transposed inputs, PyTorch's
error order and kernel names, and dropout's p = 1, empty, unbatched and in-place paths.

Values and gradients are checked against float64 NumPy references (and central differences);
the torch comparisons at the end run only where torch is installed."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order
from tritongrad import nn

F = nn.functional

_SPECIAL = [-np.inf, -3.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 3.0, np.inf, np.nan]


def _name(t) -> str:
    return type(t.grad_fn).__name__


def _x(values, device="cpu", dtype=tg.float64, requires_grad=False):
    return tg.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


# -- leaky_relu / rrelu in evaluation: one node each -------------------------------------------

@pytest.mark.parametrize("slope", [0.01, -0.3, 2.5, 0.0])
def test_leaky_relu_node_values_and_gradient(slope, device):
    a = np.array([-2.0, -0.5, 0.0, 0.5, 2.0, np.nan])
    x = _x(a, device, requires_grad=True)
    y = F.leaky_relu(x, slope)
    assert _name(y) == "LeakyReluBackward0" and len(y.grad_fn.next_functions) == 1
    np.testing.assert_array_equal(host(y), np.where(a > 0, a, a * slope))
    y.backward(tg.ones_like(y) * 0.7)
    # the gradient at 0 (and at NaN) is the slope's, as PyTorch's leaky_relu_backward
    np.testing.assert_allclose(host(x.grad), np.where(a > 0, 0.7, 0.7 * slope))


def test_leaky_relu_second_order_and_half():
    x = _x(np.linspace(-2, 2, 9) + 0.05, requires_grad=True)
    assert_grads_match(lambda t: F.leaky_relu(t, -0.3), [x])
    second_order(lambda t: F.leaky_relu(t, 2.5) * t, [x])
    h = tg.tensor([-1.5, 0.25, 3.0], dtype=tg.float16)
    y = F.leaky_relu(h, 0.1)
    assert y.dtype is tg.float16
    np.testing.assert_allclose(host(y).astype(np.float64), [-0.15, 0.25, 3.0], rtol=1e-3)


def test_leaky_relu_refuses_non_floating_inputs():
    with pytest.raises(NotImplementedError, match='"leaky_relu_cpu" not implemented for '
                                                  "'ComplexFloat'"):
        F.leaky_relu(tg.tensor([1 + 1j], dtype=tg.complex64))
    with pytest.raises(NotImplementedError, match='"leaky_relu_cpu" not implemented for '
                                                  "'Long'"):
        F.leaky_relu(tg.tensor([1, -1]))


def test_rrelu_evaluation_is_one_rrelu_node():
    a = np.array([-2.0, 0.0, 3.0])
    x = _x(a, requires_grad=True)
    y = F.rrelu(x, 0.2, 0.6)
    assert _name(y) == "RreluWithNoiseBackward0"
    np.testing.assert_allclose(host(y), [-0.8, 0.0, 3.0])
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), [0.4, 0.4, 1.0])
    assert _name(nn.RReLU(0.1, 0.3).eval()(x)) == "RreluWithNoiseBackward0"
    z = x * 1.0
    assert F.rrelu_(z, 0.2, 0.6) is z and _name(z) == "RreluWithNoiseBackward1"
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
        F.rrelu_(z, 0.6, 0.2)


def test_rrelu_training_bounds_gradient_and_half_refused():
    tg.manual_seed(0)
    a = np.linspace(-3, 3, 201)
    x = _x(a, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    yv, g = host(y), host(x.grad)
    neg = a < 0
    slope = yv[neg] / a[neg]
    assert ((slope >= 0.1) & (slope <= 0.3)).all() and len(np.unique(slope)) > 50
    np.testing.assert_allclose(g[neg], slope)  # the gradient is the drawn slope
    np.testing.assert_array_equal(yv[a > 0], a[a > 0])
    np.testing.assert_array_equal(g[a > 0], 1.0)
    # PyTorch's CPU kernel takes no float16 in training (bfloat16 it takes)
    with pytest.raises(NotImplementedError, match='"rrelu_with_noise_out_cpu" not implemented'):
        F.rrelu(tg.tensor([1.0, -1.0], dtype=tg.float16), training=True)
    assert F.rrelu(tg.tensor([1.0, -1.0], dtype=tg.bfloat16), training=True).dtype \
        is tg.bfloat16


# -- CELU / ELU / SELU ---------------------------------------------------------------------------

def test_celu_is_its_own_node_and_elu_refuses_integers():
    a = np.array([-3.0, -0.5, 0.0, 0.5, 2.0])
    for alpha in (2.0, -1.5):
        x = _x(a, requires_grad=True)
        y = F.celu(x, alpha)
        assert _name(y) == "CeluBackward0" and len(y.grad_fn.next_functions) == 1
        want = np.where(a > 0, a, alpha * np.expm1(a / alpha))
        np.testing.assert_allclose(host(y), want, rtol=1e-14)
        assert_grads_match(lambda t: F.celu(t, alpha), [x + 0.01])
    assert _name(tg.celu(_x(a, requires_grad=True))) == "CeluBackward0"
    assert _name(nn.CELU(2.0)(_x(a, requires_grad=True))) == "CeluBackward0"
    for fn in (F.elu, F.selu, F.celu):  # (PyTorch's kernel name is "elu_cpu")
        with pytest.raises(NotImplementedError, match='not implemented for \'Long\''):
            fn(tg.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(_x(a), 0.0)


# -- in-place activations: recorded as their own nodes -------------------------------------------

_INPLACE_NODES = [
    ("elu", lambda t: F.elu_(t, 0.7), "EluBackward1",
     lambda a: np.where(a > 0, a, 0.7 * np.expm1(a))),
    ("selu", lambda t: F.selu(t, inplace=True), "EluBackward1", None),
    ("celu", lambda t: F.celu_(t, 1.5), "CeluBackward1",
     lambda a: np.where(a > 0, a, 1.5 * np.expm1(a / 1.5))),
    ("leaky_relu", lambda t: F.leaky_relu_(t, 0.2), "LeakyReluBackward1",
     lambda a: np.where(a > 0, a, 0.2 * a)),
    ("silu", lambda t: F.silu(t, inplace=True), "SiluBackward0", lambda a: a / (1 + np.exp(-a))),
    ("mish", lambda t: F.mish(t, inplace=True), "MishBackward0",
     lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    ("hardtanh", lambda t: F.hardtanh_(t, -0.5, 0.5), "HardtanhBackward0",
     lambda a: np.clip(a, -0.5, 0.5)),
    ("relu6", lambda t: F.relu6(t, inplace=True), "HardtanhBackward0",
     lambda a: np.clip(a, 0, 6)),
    ("hardswish", lambda t: F.hardswish(t, inplace=True), "HardswishBackward0",
     lambda a: a * np.clip(a + 3, 0, 6) / 6),
    ("hardsigmoid", lambda t: F.hardsigmoid(t, inplace=True), "HardsigmoidBackward0",
     lambda a: np.clip(a + 3, 0, 6) / 6),
]


@pytest.mark.parametrize("name, fn, node, ref", _INPLACE_NODES, ids=[c[0] for c in _INPLACE_NODES])
def test_inplace_activation_records_its_node(name, fn, node, ref):
    a = np.array([[-4.0, -1.3, -0.2, 0.3], [1.1, 2.5, 4.0, 7.0]])
    x = _x(a, requires_grad=True)
    out_of_place = {"elu": lambda t: F.elu(t, 0.7), "selu": F.selu,
                    "celu": lambda t: F.celu(t, 1.5), "leaky_relu": lambda t: F.leaky_relu(t, 0.2),
                    "silu": F.silu, "mish": F.mish, "hardtanh": lambda t: F.hardtanh(t, -0.5, 0.5),
                    "relu6": F.relu6, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid}[name]
    want_y = out_of_place(x)
    want_g, = tg.autograd.grad(want_y.sum(), x)
    z = x * 1.0
    y = fn(z)
    assert y is z and _name(y) == node and len(y.grad_fn.next_functions) == 1
    if ref is not None:
        np.testing.assert_allclose(host(y), ref(a), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(host(y), host(want_y), rtol=1e-15)
    g, = tg.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(host(g), host(want_g), rtol=1e-14)
    # on a view of a non-leaf: the base's gradient
    z = x * 1.0
    fn(z[1:])
    g, = tg.autograd.grad(z.sum(), x)
    want = np.ones_like(a)
    want[1:] = host(want_g)[1:]
    np.testing.assert_allclose(host(g), want, rtol=1e-14)
    # on a leaf that requires grad: PyTorch's error
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        fn(_x(a, requires_grad=True))


def test_inplace_hardtanh_and_leaky_relu_save_their_result():
    """As PyTorch's: the rule reads the written result, so no copy of the input is kept (the
    others, whose rules need the input, save a copy of it)."""
    x = tg.randn(10, requires_grad=True)
    for fn, saves_result in ((lambda t: F.relu6(t, inplace=True), True),
                             (lambda t: F.leaky_relu_(t, 0.1), True),
                             (lambda t: F.silu(t, inplace=True), False)):
        z = x * 1.0
        packed = []
        with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
            fn(z)
        assert len(packed) == 1 and (packed[0].data_ptr() == z.data_ptr()) is saves_result


def test_inplace_activation_double_backward():
    x = _x(np.linspace(-2, 2, 7) + 0.1, requires_grad=True)
    second_order(lambda t: F.silu(t * 1.0, inplace=True), [x])
    second_order(lambda t: F.elu_(t * 1.0, 0.5), [x])


@pytest.mark.parametrize("fn, what", [
    (lambda t: F.leaky_relu_(t, -0.5), "leakyReLu"),
    (lambda t: F.elu_(t, -0.5), "elu"),
    (lambda t: F.celu_(t, -0.5), "elu"),
], ids=["leaky_relu_", "elu_", "celu_"])
def test_inplace_negative_slope_backward_is_refused(fn, what):
    a = np.array([-1.0, 2.0])
    x = _x(a, requires_grad=True)
    z = x * 1.0
    fn(z)  # (the forward is allowed, as PyTorch's)
    with pytest.raises(RuntimeError, match=f"In-place {what} backward calculation is triggered "
                                           "with a negative slope"):
        z.sum().backward()
    with tg.no_grad():  # nothing to differentiate: fine
        t = _x(a)
        fn(t)
    assert host(t)[1] == 2.0


# -- softshrink ------------------------------------------------------------------------------------

def test_softshrink_node_values_gradient_and_no_numpy_warning(device):
    a = np.array(_SPECIAL)
    x = _x(a, device, requires_grad=True)
    middle = np.where(np.abs(a) > 0.5, 0.0, a) * 0  # (x * 0 where it applies: -0.0, NaN)
    want = np.where(a > 0.5, a - 0.5, np.where(a < -0.5, a + 0.5, middle))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (an inf * 0 in a discarded lane warned)
        y = F.softshrink(x, 0.5)
        assert _name(y) == "SoftshrinkBackward0"
        np.testing.assert_array_equal(host(y), want)
        assert np.signbit(host(y)[4])  # (-0.25 shrinks to -0.0, as PyTorch's)
        y.backward(tg.ones_like(y))
    # 0 inside [-lambd, lambd] (bounds included), 1 outside, a NaN passes the gradient
    want_g = np.where(np.abs(a) <= 0.5, 0.0, 1.0)
    np.testing.assert_array_equal(host(x.grad), want_g)
    assert_grads_match(lambda t: F.softshrink(t, 0.3), [_x(np.linspace(-1, 1, 6) + 0.01)])
    assert _name(nn.Softshrink(0.3)(x)) == "SoftshrinkBackward0"


def test_softshrink_errors_in_pytorch_order():
    for dt, name in ((tg.int64, "Long"), (tg.complex64, "ComplexFloat")):
        with pytest.raises(NotImplementedError,
                           match=f'"softshrink_check" not implemented for \'{name}\''):
            F.softshrink(tg.ones(2, dtype=dt), -1.0)  # (the dtype before the lambda)
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(tg.ones(2), -0.5)


# -- softmax ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, node, value", [
    (lambda t: F.softmax(t, 0), "SoftmaxBackward0", 1.0),
    (lambda t: F.log_softmax(t, -1), "LogSoftmaxBackward0", 0.0),
    (lambda t: F.softmin(t, 0), "SoftmaxBackward0", 1.0),
    (lambda t: t.softmax(0), "SoftmaxBackward0", 1.0),
], ids=["softmax", "log_softmax", "softmin", "method"])
def test_softmax_of_a_0d_tensor_is_one_node(fn, node, value, device):
    x = _x(-0.7, device, requires_grad=True)
    y = fn(x)
    assert y.shape == () and y.grad_fn is not None and _name(y).endswith(node)
    assert float(host(y)) == value
    g, = tg.autograd.grad(y, x, create_graph=True)
    assert float(host(g)) == 0.0
    for special in (np.inf, np.nan):  # (x - x: NaN, as PyTorch's)
        assert np.isnan(host(fn(_x(special, device))))


def test_softmax_of_a_transposed_input_is_contiguous(device):
    a = np.random.default_rng(3).normal(size=(3, 5))
    x = _x(a, device, requires_grad=True)
    for fn in (F.softmax, F.log_softmax):
        y = fn(x.t(), -1)
        assert y.is_contiguous()
        e = np.exp(a.T - a.T.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
        np.testing.assert_allclose(host(y), want if fn is F.softmax else np.log(want),
                                   rtol=1e-12)
        assert y.view(15).shape == (15,)  # (a view of the result, as PyTorch allows)
    w = tg.arange(15.0, dtype=tg.float64).view(5, 3)
    assert_grads_match(lambda t: F.softmax(t.t(), -1) * w, [_x(a, requires_grad=True)])


def test_softmax_errors_in_pytorch_order():
    with pytest.raises(IndexError):  # the dim's range before the dtype
        F.softmax(tg.ones(2, 2, dtype=tg.int64), 5)
    with pytest.raises(NotImplementedError,
                       match='"softmax_lastdim_kernel_impl" not implemented for \'Long\''):
        F.softmax(tg.ones(2, 2, dtype=tg.int64), -1)
    with pytest.raises(NotImplementedError,
                       match='"softmax_kernel_impl" not implemented for \'Long\''):
        F.softmax(tg.ones(2, 2, dtype=tg.int64), 0)
    with pytest.raises(NotImplementedError,
                       match='"log_softmax_lastdim_kernel_impl" not implemented for \'Int\''):
        F.log_softmax(tg.ones(2, dtype=tg.int32), 0)
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        F.softmin(tg.ones(2, dtype=tg.bool), 0, dtype=tg.float64)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        with pytest.raises(RuntimeError, match="Negation"):
            F.softmin(tg.ones(2, dtype=tg.bool))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        with pytest.raises(NotImplementedError):
            F.softmax(tg.ones(2, dtype=tg.int64))
    # dtype= casts first: an integer input is fine then
    y = F.softmax(tg.tensor([1, 2]), 0, dtype=tg.float64)
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(host(y), e / e.sum(), rtol=1e-15)


def test_glu_shape_errors_before_the_dtype_error():
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(tg.ones(3, 2, dtype=tg.int64), 0)
    with pytest.raises(NotImplementedError, match='"glu_cpu" not implemented'):
        F.glu(tg.ones(2, 2, dtype=tg.int64), 0)


def test_relu6_bounds_are_instance_attributes():
    m = nn.ReLU6(inplace=True)
    assert vars(m)["min_val"] == 0.0 and vars(m)["max_val"] == 6.0
    assert repr(m) == "ReLU6(inplace=True)"


# -- dropout ---------------------------------------------------------------------------------------

_DROPOUTS = {
    "dropout": F.dropout, "alpha_dropout": F.alpha_dropout,
    "feature_alpha_dropout": F.feature_alpha_dropout, "dropout1d": F.dropout1d,
    "dropout2d": F.dropout2d, "dropout3d": F.dropout3d,
}


@pytest.mark.parametrize("name", list(_DROPOUTS))
def test_dropout_p1_zeroes_in_the_input_dtype(name):
    fn = _DROPOUTS[name]
    shape = (2, 3, 4) if name == "dropout1d" else (1, 2, 3, 4)
    x = tg.arange(24).reshape(shape) - 5  # (int64: p = 1 is a product with zero)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the rank warnings of dropout2d)
        y = fn(x, 1.0, True)
    assert y.dtype is tg.int64
    np.testing.assert_array_equal(host(y), np.zeros(shape))
    # alpha dropout's p = 1 is zeros too (no affine correction), as ATen's
    xf = _x(np.ones((2, 3, 4)) * 0.5, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yf = fn(xf, 1.0, True)
    np.testing.assert_array_equal(host(yf), np.zeros((2, 3, 4)))
    yf.sum().backward()
    np.testing.assert_array_equal(host(xf.grad), np.zeros((2, 3, 4)))


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_alpha_dropout"])
def test_dropout_of_an_empty_input_is_the_input(name):
    x = tg.zeros(0, 3, 4, requires_grad=True)
    for p in (0.3, 1.0):
        assert _DROPOUTS[name](x, p, True) is x


def test_feature_alpha_dropout_of_1d_input():
    x = tg.ones(5)
    assert F.feature_alpha_dropout(x, 0.0, True) is x
    assert F.feature_alpha_dropout(x, 0.5, False) is x
    np.testing.assert_array_equal(host(F.feature_alpha_dropout(x, 1.0, True)), np.zeros(5))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(x, 0.5, True)


def test_unbatched_channel_dropout_is_a_view():
    for fn, shape in ((F.dropout1d, (3, 4)), (F.dropout3d, (3, 2, 2, 2))):
        x = tg.ones(*shape, requires_grad=True)
        y = fn(x, 0.5, True)
        assert y.shape == x.shape and _name(y) == "SqueezeBackward1"
        # (nothing to drop: the input itself; PyTorch returns a squeezed view of it)
        assert fn(x, 0.0, True) is x and fn(x, 0.5, False) is x
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            fn(x, 0.5, True, True)
        z = x * 1.0
        assert fn(z, 0.5, True, True) is z and z.shape == x.shape


@pytest.mark.parametrize("name", list(_DROPOUTS))
def test_dropout_statistics_and_gradient(name, device):
    fn = _DROPOUTS[name]
    tg.manual_seed(0)
    p = 0.3
    shape = (16, 32, 6, 1, 1) if name == "dropout3d" else (16, 32, 6)
    a = np.random.default_rng(5).uniform(0.5, 1.5, shape)
    x = _x(a, device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(x, p, True)
    y.backward(tg.ones_like(y))
    yv, g = host(y), host(x.grad)
    if name in ("alpha_dropout", "feature_alpha_dropout"):
        a_ = 1.0 / np.sqrt((1.7580993408473766 ** 2 * p + 1) * (1 - p))
        kept = np.isclose(g, a_)
        assert np.all(kept | (g == 0))
        drop_value = 1.7580993408473766 * a_ * (p - 1)
        np.testing.assert_allclose(yv[kept], a[kept] * a_ + 1.7580993408473766 * a_ * p,
                                   rtol=1e-12)
        np.testing.assert_allclose(yv[~kept], drop_value, rtol=1e-12)
    else:
        kept = yv != 0
        np.testing.assert_allclose(yv[kept], a[kept] / (1 - p), rtol=1e-12)
        np.testing.assert_allclose(g, kept / (1 - p), rtol=1e-12)  # grads = mask * scale
        assert abs(yv.mean() - a.mean()) < 0.1  # the mean is kept
    assert abs(kept.mean() - (1 - p)) < 0.08
    if name not in ("dropout", "alpha_dropout"):  # one draw per (sample, channel)
        k2 = kept.reshape(16, 32, -1)
        assert (k2.all(-1) | (~k2).all(-1)).all()
    assert fn(x, p, False) is x and fn(x, 0.0, True) is x


@pytest.mark.parametrize("name, node", [("dropout", "MulBackward0"), ("dropout2d", "MulBackward0"),
                                        ("alpha_dropout", "AddBackward0"),
                                        ("feature_alpha_dropout", "AddBackward0")])
def test_inplace_dropout_is_recorded_in_place(name, node):
    fn = _DROPOUTS[name]
    tg.manual_seed(1)
    x = tg.ones(8, 6, 5, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = x * 2.0
        out = fn(z, 0.4, True, True)
        assert out is z and _name(z) == node
        z.sum().backward()
        if node == "MulBackward0":
            np.testing.assert_allclose(host(x.grad) * 0.6, (host(z) != 0) * 2.0, rtol=1e-6)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            fn(tg.ones(8, 6, 5, requires_grad=True), 0.4, True, True)
        leaf = tg.ones(8, 6, 5, requires_grad=True)
        assert fn(leaf, 0.4, False, True) is leaf  # (evaluation: nothing written)


def test_dropout_integer_input_errors_and_p_checked_first():
    for name in ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout2d"):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            _DROPOUTS[name](tg.ones(2, 3, 4, dtype=tg.int64), 0.5, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the p error before dropout2d's rank warning)
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            F.dropout2d(tg.ones(2, 3, 4), 1.5)


# -- against torch ---------------------------------------------------------------------------------

def _pair(torch, a, dtype="float64"):
    return (torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True),
            tg.tensor(a, dtype=getattr(tg, dtype), requires_grad=True))


_TORCH_CASES = {
    "leaky_relu": lambda F_, t: F_.leaky_relu(t, -0.3),
    "celu": lambda F_, t: F_.celu(t, 1.5),
    "softshrink": lambda F_, t: F_.softshrink(t, 0.5),
    "rrelu": lambda F_, t: F_.rrelu(t, 0.1, 0.3),
    "elu_": lambda F_, t: F_.elu_(t * 1.0, 0.5),
    "celu_": lambda F_, t: F_.celu_(t * 1.0, 0.5),
    "leaky_relu_": lambda F_, t: F_.leaky_relu_(t * 1.0, 0.2),
    "silu_": lambda F_, t: F_.silu(t * 1.0, inplace=True),
    "hardtanh_": lambda F_, t: F_.hardtanh_(t * 1.0),
    "rrelu_": lambda F_, t: F_.rrelu_(t * 1.0),
    "softmax0d": lambda F_, t: F_.softmax(t[0], 0),
    "log_softmax_t": lambda F_, t: F_.log_softmax(t.reshape(3, 4).t(), -1),
}


@pytest.mark.parametrize("case", list(_TORCH_CASES))
def test_against_torch(case):
    torch = pytest.importorskip("torch")
    fn = _TORCH_CASES[case]
    # (not a NaN for hardtanh_: PyTorch's gradient there depends on its vector lane)
    a = np.array(_SPECIAL[:-1] if case == "hardtanh_" else _SPECIAL)
    xt, xg = _pair(torch, a)
    yt, yg = fn(torch.nn.functional, xt), fn(F, xg)
    assert _name(yt) == _name(yg)
    assert len(yt.grad_fn.next_functions) == len(yg.grad_fn.next_functions)
    assert yt.is_contiguous() == yg.is_contiguous()
    np.testing.assert_allclose(host(yg), yt.detach().numpy(), rtol=1e-12, equal_nan=True)
    gt, = torch.autograd.grad(yt.sum(), xt)
    gg, = tg.autograd.grad(yg.sum(), xg)
    np.testing.assert_allclose(host(gg), gt.numpy(), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", list(_DROPOUTS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_dropout_draws_are_torchs(name, dtype):
    """The CPU keep masks are ATen's draws: a seed gives PyTorch's numbers."""
    torch = pytest.importorskip("torch")
    shape = (2, 3, 4) if name == "dropout1d" else (2, 3, 4, 5)
    a = np.random.default_rng(2).uniform(0.5, 1.5, shape)
    out = []
    for lib, F_ in ((torch, torch.nn.functional), (tg, F)):
        lib.manual_seed(3)
        x = lib.tensor(a, dtype=getattr(lib, dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(getattr(F_, name)(x, 0.3, True).to(lib.float64).numpy())
    np.testing.assert_array_equal(out[1], out[0])


def test_threshold_of_integers_stays_integer():
    # PyTorch's kernel converts threshold and value to the tensor's type (truncating)
    for dt in (tg.int64, tg.int8):
        r = tg.nn.functional.threshold(tg.tensor([0, 1, 2], dtype=dt), 1.5, -2.7)
        assert r.dtype is dt and r.tolist() == [-2, -2, 2]
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t"):
        tg.nn.functional.threshold(tg.tensor([0, 1, 2], dtype=tg.uint8), 1.5, -2.7)
    with pytest.raises(NotImplementedError, match="\"threshold_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        tg.nn.functional.threshold(tg.tensor([1j]), 1.0, 0.0)


def test_prelu_refuses_non_float_input_and_zero_dim_with_channels():
    for x in (tg.tensor([1, -2]), tg.tensor([1j])):
        with pytest.raises(NotImplementedError, match="\"prelu_cpu\" not implemented for"):
            tg.nn.functional.prelu(x, tg.ones(1, dtype=x.dtype))
    with pytest.raises(RuntimeError, match="Not allow zero-dim input tensor"):
        tg.nn.functional.prelu(tg.tensor(1.0), tg.tensor([0.25, 0.5]))
    # one weight with a 0-d input still works, the shape kept
    r = tg.nn.functional.prelu(tg.tensor(-2.0), tg.tensor([0.25]))
    assert r.shape == () and float(r) == -0.5
