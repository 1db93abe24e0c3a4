"""Bad input and edge cases found in session 25's sweeps (PyTorch 2.13 beside tritongrad on
the same inputs): each case here failed before its fix with an error from deep inside (an
AttributeError naming a list's missing attribute), silently returned its non-tensor input, or
gave a result PyTorch does not give."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.nn import functional as F

RNG = np.random.default_rng(25)


def _x(*shape):
    return tg.tensor(RNG.standard_normal(shape).astype(np.float32))


# -- nn.functional's composites take a Tensor first: PyTorch's TypeError naming the op --------

_FIRST_ARG = {  # op -> its other positional arguments (valid ones)
    "leaky_relu": (), "elu": (), "softplus": (), "mish": (), "hardtanh": (), "relu6": (),
    "selu": (), "celu": (), "softsign": (), "hardswish": (), "hardsigmoid": (),
    "logsigmoid": (), "glu": (), "tanhshrink": (), "softshrink": (), "hardshrink": (),
    "rrelu": (), "dropout": (), "alpha_dropout": (), "feature_alpha_dropout": (),
    "dropout1d": (), "dropout2d": (), "dropout3d": (), "local_response_norm": (2,),
    "pixel_shuffle": (2,), "pixel_unshuffle": (2,), "channel_shuffle": (2,), "pdist": (),
    "unfold": (2,), "fold": ((4, 4), 2), "instance_norm": (), "interpolate": (None, 2.0),
    "pad": ((1, 1),), "rms_norm": ((2,),), "max_pool1d": (2,), "max_pool2d": (2,),
    "max_pool3d": (2,), "avg_pool1d": (2,), "avg_pool2d": (2,), "avg_pool3d": (2,),
    "adaptive_max_pool1d": (2,), "adaptive_max_pool2d": (2,), "adaptive_max_pool3d": (2,),
    "adaptive_avg_pool1d": (2,), "adaptive_avg_pool2d": (2,), "adaptive_avg_pool3d": (2,),
}


@pytest.mark.parametrize("op", sorted(_FIRST_ARG))
@pytest.mark.parametrize("bad", [[[1.0, 2.0]], np.ones((2, 3, 4, 4))], ids=["list", "ndarray"])
def test_functional_input_must_be_a_tensor(op, bad):
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'input' must be Tensor, not "
                                        rf"{type(bad).__name__}"):
        getattr(F, op)(bad, *_FIRST_ARG[op])


@pytest.mark.parametrize("op", ["max_unpool1d", "max_unpool2d"])
def test_max_unpool_indices_must_be_a_tensor(op):
    x = _x(1, 2, 4) if op == "max_unpool1d" else _x(1, 2, 4, 4)
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'indices' must be Tensor, not "
                                        r"NoneType"):
        getattr(F, op)(x, None, 2)


def test_the_checks_keep_the_results():
    """The added checks sit before the computations they guard: values as before (NumPy
    references)."""
    x = _x(2, 3, 4, 4)
    a = x.numpy().astype(np.float64)
    np.testing.assert_allclose(F.leaky_relu(x, 0.2).numpy(), np.where(a > 0, a, 0.2 * a),
                               rtol=1e-6)
    np.testing.assert_allclose(F.softsign(x).numpy(), a / (1 + np.abs(a)), rtol=1e-6)
    np.testing.assert_allclose(F.max_pool2d(x, 2).numpy(),
                               a.reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(F.avg_pool2d(x, 2).numpy(),
                               a.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(F.pad(x, (1, 1)).numpy(),
                               np.pad(a, ((0, 0), (0, 0), (0, 0), (1, 1))), rtol=1e-6)
    assert F.dropout(x, 0.5, training=False) is x


# -- ELU, SELU, CELU: one node with PyTorch's elu_backward (from x, not from expm1's result) ----

_ELU_CASES = {  # name -> (function, alpha, scale, input_scale)
    "elu": (lambda x: F.elu(x, 0.7), 0.7, 1.0, 1.0),
    "selu": (F.selu, 1.6732632423543772, 1.0507009873554805, 1.0),
    "celu": (lambda x: F.celu(x, 1.5), 1.5, 1.0, 1.0 / 1.5),
}


@pytest.mark.parametrize("name", sorted(_ELU_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_elu_family_values_and_derivatives(name, dtype):
    f, alpha, scale, s_in = _ELU_CASES[name]
    a = np.array([-30.0, -20.0, -3.0, -0.5, 0.0, 1e-8, 0.5, 2.0])
    x = tg.tensor(a, dtype=getattr(tg, dtype), requires_grad=True)
    y = f(x)
    g, = tg.autograd.grad(y.sum(), x, create_graph=True)
    h, = tg.autograd.grad(g.sum(), x)
    neg = a <= 0
    want_y = np.where(neg, alpha * scale * np.expm1(s_in * np.minimum(a, 0)), scale * a)
    want_g = np.where(neg, alpha * scale * s_in * np.exp(s_in * np.minimum(a, 0)), scale)
    # the second derivative is the exponential branch's strictly below 0; 0 at 0 (PyTorch)
    want_h = np.where(a < 0, alpha * scale * s_in ** 2 * np.exp(s_in * np.minimum(a, 0)), 0.0)
    rtol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(y.detach().numpy(), want_y, rtol=rtol, atol=1e-30)
    # at x = -20 the float32 gradient is ~1e-9, not the 0 that expm1's rule (y + 1) gives
    np.testing.assert_allclose(g.detach().numpy(), want_g, rtol=rtol, atol=1e-30)
    assert g.detach().numpy()[1] > 0
    np.testing.assert_allclose(h.numpy(), want_h, rtol=rtol, atol=1e-30)


@pytest.mark.parametrize("name", sorted(_ELU_CASES))
def test_elu_family_nan_takes_the_linear_branch_and_gradchecks(name):
    f, _, scale, _ = _ELU_CASES[name]
    x = tg.tensor([float("nan"), -1.0], requires_grad=True)
    g, = tg.autograd.grad(f(x).sum(), x)
    assert g.numpy()[0] == np.float32(scale)  # (PyTorch's: NaN <= 0 is false)
    xd = tg.tensor(RNG.standard_normal(6) + 0.05, requires_grad=True)
    assert tg.autograd.gradcheck(f, (xd,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(f, (xd,))


@pytest.mark.parametrize("op", ["elu", "selu", "celu"])
def test_elu_family_refuses_integer_input(op):
    with pytest.raises(NotImplementedError, match="\"elu\" not implemented for 'Long'"):
        getattr(F, op)(tg.tensor([1, -1]))


# -- autograd API corners --------------------------------------------------------------------

def test_set_grad_enabled_takes_a_bool_only():
    for bad in (0, "x", None, 1.0):
        with pytest.raises(TypeError, match=r"set_grad_enabled\(\): argument 'enabled' "
                                            r"\(position 1\) must be bool"):
            tg.set_grad_enabled(bad)
    assert tg.is_grad_enabled()


def test_grad_mode_context_managers_bind_none():
    for cm in (tg.no_grad(), tg.enable_grad(), tg.set_grad_enabled(True), tg.inference_mode()):
        with cm as v:
            assert v is None


def test_grad_with_no_inputs_is_refused():
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"`inputs` argument to `grad\(\)` cannot be empty"):
        tg.autograd.grad(x.sum(), [])


def test_unsafe_preserve_version_counter_hides_the_write():
    from tritongrad.autograd import grad_mode
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    saved = x.detach().clone()
    y = (x * saved).sum()  # mul saves ``saved``
    v = saved._version
    with grad_mode._unsafe_preserve_version_counter(saved):
        saved.mul_(3.0)
    assert saved._version == v
    y.backward()  # no "modified by an inplace operation": the write is hidden
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 6.0])  # the refilled values
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2 = (x * saved).sum()
        saved.add_(1.0)
        y2.backward()
    assert grad_mode.set_multithreading_enabled is tg.autograd.set_multithreading_enabled


def test_disabling_saved_tensor_hooks_inside_active_ones_raises():
    graph = tg.autograd.graph
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with graph.disable_saved_tensors_hooks("no hooks here"):
                pass
    with graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass


def test_multi_grad_hook_all_passes_a_list():
    a, b = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    seen = []
    tg.autograd.graph.register_multi_grad_hook((a, b), seen.append)
    (a * 2 + b).sum().backward()
    assert type(seen[0]) is list and len(seen[0]) == 2
    np.testing.assert_allclose(seen[0][0].numpy(), [2.0, 2.0])


def test_function_backward_returning_a_float_is_a_runtime_error():
    class Twice(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 1.0

    with pytest.raises(RuntimeError, match=r"^expected Variable or None \(got float\)$"):
        Twice.apply(tg.ones(2, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("op", ["erf", "erfc", "erfinv"])
def test_error_functions_have_forward_ad(op):
    fwd = tg.autograd.forward_ad
    a = np.array([-0.9, -0.3, 0.1, 0.45, 0.8]) * (1 if op == "erfinv" else 3)
    t = np.arange(1.0, 6.0)
    with fwd.dual_level():
        y = getattr(tg, op)(fwd.make_dual(tg.tensor(a), tg.tensor(t)))
        primal, tangent = fwd.unpack_dual(y)
    c = 2 / np.sqrt(np.pi)
    want = {"erf": c * np.exp(-a * a), "erfc": -c * np.exp(-a * a),
            "erfinv": np.exp(primal.numpy() ** 2) / c}[op] * t
    np.testing.assert_allclose(tangent.numpy(), want, rtol=1e-12)


def test_weights_only_unpickling_refuses_build_on_a_tensor():
    """A pickle in a tritongrad file may not BUILD (set the state of) a tensor it got by
    persistent id: weights-only loading allows BUILD on plain containers and allowed classes
    only, as PyTorch's."""
    import io
    import struct

    from tritongrad import serialization as ser
    key = b"_data"
    data = (b"\x80\x02K\x00Q}X" + struct.pack("<I", len(key)) + key + b"Nsb.")
    target = tg.ones(2)
    u = ser._WeightsOnlyUnpickler(io.BytesIO(data))
    u.persistent_load = lambda pid: target
    with pytest.raises(ser._NotAllowed, match="BUILD on tritongrad"):
        u.load()
    np.testing.assert_allclose(target.numpy(), [1.0, 1.0])
    ok = b"\x80\x02ccollections\nOrderedDict\n)R}X\x01\x00\x00\x00aK\x01sb."
    assert dict(ser._WeightsOnlyUnpickler(io.BytesIO(ok)).load()) == {}
