"""Grad modes, anomaly detection and activation checkpointing against PyTorch's behaviour:
set_grad_enabled re-entered after the mode changed, the switches' attributes and bool-only
arguments, PyTorch's private grad-mode names, anomaly tracebacks ending at the user's frame,
checkpoint's context_fn that swallows an error, checkpoint_sequential's arguments, and the
number of forward recomputations of each checkpoint variant (gradients checked against
float64 NumPy)."""

import contextlib
import warnings

import numpy as np
import pytest
from tritongrad.autograd import grad_mode
from tritongrad.utils.checkpoint import checkpoint, checkpoint_sequential

import tritongrad as tg


@pytest.fixture(autouse=True)
def _restore_modes():
    yield
    tg.set_grad_enabled(True)
    tg.autograd.set_detect_anomaly(False)
    tg.autograd.set_multithreading_enabled(True)


# -- grad modes --------------------------------------------------------------------------------

def test_set_grad_enabled_reentered_sets_its_mode_again():
    m = tg.set_grad_enabled(False)
    tg.set_grad_enabled(True)  # the mode changed after m was made
    with m:
        inside = tg.is_grad_enabled()
    assert (inside, tg.is_grad_enabled()) == (False, True)
    with m:  # a second block: the same again
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()


def test_set_grad_enabled_attributes_and_repr():
    m = tg.set_grad_enabled(False)
    assert (m.mode, m.prev) == (False, True)
    assert repr(m).endswith("set_grad_enabled(mode=False)") and str(m) == repr(m)
    tg.set_grad_enabled(True)
    assert tg.inference_mode(False).mode is False and tg.inference_mode().mode is True


def test_set_grad_enabled_as_decorator_does_not_change_the_mode_now():
    d = tg.set_grad_enabled(False)
    assert not tg.is_grad_enabled()  # called: at once
    f = d(lambda: tg.is_grad_enabled())
    assert tg.is_grad_enabled()  # decorating put it back
    assert f() is False and tg.is_grad_enabled()


def test_private_grad_mode_names():
    grad_mode._set_grad_enabled(False)
    assert not tg.is_grad_enabled()
    grad_mode._set_grad_enabled(True)
    with pytest.raises(TypeError, match=r"^set_grad_enabled\(\): argument 'enabled'"):
        grad_mode._set_grad_enabled(1)

    class flip(grad_mode._DecoratorContextManager):  # PyTorch's base, subclassed by users
        def __enter__(self):
            self.prev = tg.is_grad_enabled()
            tg.set_grad_enabled(not self.prev)

        def __exit__(self, *exc):
            tg.set_grad_enabled(self.prev)

    @flip()
    def g():
        return tg.is_grad_enabled()
    assert g() is False and tg.is_grad_enabled()


def test_multithreading_switch_is_function_context_and_decorator():
    r = tg.autograd.set_multithreading_enabled(False)
    assert not tg.autograd.is_multithreading_enabled()
    with tg.autograd.set_multithreading_enabled(True):
        assert tg.autograd.is_multithreading_enabled()
    assert not tg.autograd.is_multithreading_enabled()
    assert (r.mode, r.prev) == (False, True)
    f = r(lambda: tg.autograd.is_multithreading_enabled())
    assert f() is False
    with pytest.raises(TypeError, match=r"set_multithreading_enabled\(\): argument 'enabled'"):
        tg.autograd.set_multithreading_enabled(1)


def test_force_original_view_tracking():
    assert not grad_mode._is_view_replay_enabled()
    with grad_mode._force_original_view_tracking(True):
        assert grad_mode._is_view_replay_enabled()
    assert not grad_mode._is_view_replay_enabled()

    # (as PyTorch's, making the decorator sets the flag at once and nothing restores it)
    @grad_mode._force_original_view_tracking(True)
    def f():
        return grad_mode._is_view_replay_enabled()
    try:
        assert f() is True
    finally:
        grad_mode._set_view_replay_enabled(False)


def test_generator_decorators_apply_while_the_generator_runs():
    @tg.no_grad()
    def g():
        r = yield tg.is_grad_enabled()
        yield r, tg.is_grad_enabled()
    it = g()
    assert next(it) is False and tg.is_grad_enabled()
    assert it.send(5) == (5, False) and tg.is_grad_enabled()

    @tg.inference_mode()
    def h():
        yield tg.ones(1).is_inference()
    assert list(h()) == [True] and not tg.is_inference_mode_enabled()


def test_decorating_a_class_warns_and_runs_only_init_in_the_mode():
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        @tg.no_grad()
        class A:
            def __init__(self):
                self.e = tg.is_grad_enabled()

            def m(self):
                return tg.is_grad_enabled()
    a = A()
    assert (a.e, a.m()) == (False, True)


def test_inference_mode_false_inside_inference_mode():
    x = tg.tensor([1., 2.], requires_grad=True)
    with tg.inference_mode():
        with tg.inference_mode(False):
            y = x * 2
            assert tg.is_grad_enabled() and not tg.is_inference_mode_enabled()
        assert not tg.is_grad_enabled() and tg.is_inference_mode_enabled()
    assert y.requires_grad and not y.is_inference()


def test_inference_tensor_errors():
    with tg.inference_mode():
        y = tg.ones(2, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="^Inplace update to inference tensor outside"):
        y.add_(1)
    x = tg.tensor([1., 2.], dtype=tg.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Inference tensors cannot be saved for backward"):
        x * y


def test_inference_tensor_saved_after_promotion():
    with tg.inference_mode():
        y = tg.ones(2)  # float32, promoted to float64 by the product
    x = tg.tensor([1., 2.], dtype=tg.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Inference tensors cannot be saved for backward"):
        x * y


def test_inference_tensor_version_raises():
    with tg.inference_mode():
        y = tg.ones(2)
    with pytest.raises(RuntimeError, match="^Inference tensors do not track version counter"):
        y._version


# -- anomaly detection -------------------------------------------------------------------------

def test_anomaly_switches_bind_none_and_take_bools_only():
    with tg.autograd.set_detect_anomaly(True, check_nan=False) as v:
        assert v is None
        assert tg.is_anomaly_enabled() and not tg.is_anomaly_check_nan_enabled()
    assert not tg.is_anomaly_enabled() and tg.is_anomaly_check_nan_enabled()
    with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled"):
        with tg.autograd.detect_anomaly() as v:
            assert v is None
    with pytest.raises(TypeError, match=r"^set_anomaly_enabled\(\): argument 'enabled'"):
        tg.autograd.set_detect_anomaly(1)
    with pytest.raises(TypeError, match=r"^set_anomaly_enabled\(\): argument 'check_nan'"):
        tg.set_anomaly_enabled(True, 1)
    assert not tg.is_anomaly_enabled()


def test_anomaly_nan_error_names_node_and_trace_ends_at_user_frame():
    x = tg.tensor([0., 1.], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with tg.autograd.detect_anomaly():
            y = x / x  # the user's line the traceback must end at
            with pytest.raises(RuntimeError) as e:
                y.sum().backward()
    # (the gradient for the divisor, -x/x**2 at 0, is the NaN one; PyTorch's text)
    assert str(e.value) == "Function 'DivBackward0' returned nan values in its 1th output."
    msg = next(str(i.message) for i in w if "Error detected" in str(i.message))
    assert msg.startswith("Error detected in DivBackward0. Traceback of forward call that "
                          "caused the error:\n")
    frames = [ln for ln in msg.splitlines() if ln.strip().startswith("File ")]
    assert frames[-1].endswith(", in test_anomaly_nan_error_names_node_and_trace_ends_at_user_"
                               "frame")
    assert msg.rstrip().endswith("y = x / x  # the user's line the traceback must end at")


def test_anomaly_without_nan_check_lets_nan_through():
    x = tg.tensor([0., 1.], requires_grad=True)
    with pytest.warns(UserWarning):
        with tg.autograd.detect_anomaly(check_nan=False):
            (x / x).sum().backward()
    g = x.grad.numpy()
    assert np.isnan(g[0]) and g[1] == 0


def test_anomaly_nan_check_covers_complex_gradients():
    x = tg.tensor([0j, 1 + 1j], requires_grad=True)
    with pytest.warns(UserWarning):
        with tg.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="^Function 'AbsBackward0' returned nan"):
                (x / x).abs().sum().backward()


# -- checkpoint --------------------------------------------------------------------------------

def _f(a):
    return (a.sin() * a).exp()


def _f_grad(a):  # d/da exp(a sin a), float64
    return np.exp(a * np.sin(a)) * (np.sin(a) + a * np.cos(a))


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gradient_and_recomputations(reentrant):
    a = np.array([0.5, -1.25, 2.0])
    x = tg.tensor(a, requires_grad=True)
    calls = []

    def f(t):
        calls.append(1)
        return _f(t)
    y = checkpoint(f, x, use_reentrant=reentrant)
    assert len(calls) == 1
    y.sum().backward()
    assert len(calls) == 2  # one recomputation, either variant
    np.testing.assert_allclose(x.grad.numpy(), _f_grad(a), rtol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_preserves_dropout_mask(reentrant):
    tg.manual_seed(0)
    x = tg.ones(200, requires_grad=True)
    y = checkpoint(lambda t: tg.nn.functional.dropout(t, 0.5, True) * 1, x,
                   use_reentrant=reentrant)
    y.sum().backward()
    # the recomputation draws the same mask: gradient 2 exactly where the output is kept
    assert np.array_equal(x.grad.numpy(), np.where(y.detach().numpy() != 0, 2.0, 0.0))


def test_checkpoint_reentrant_refuses_grad_and_kwargs():
    x = tg.tensor([1., 2.], requires_grad=True)
    y = checkpoint(lambda t: t.sin() * t, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="^When use_reentrant=True, torch.utils.checkpoint "
                                           "is incompatible with .grad()"):
        tg.autograd.grad(y.sum(), x)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: s"):
        checkpoint(lambda t, s=1.0: t * s, x, s=3.0, use_reentrant=True)
    y = checkpoint(lambda t, s=1.0: t * s, x, s=3.0, use_reentrant=False)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_checkpoint_context_fn_swallowing_the_error_raises():
    class Swallow:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return True

    def f(t):
        raise KeyError("k")
    x = tg.tensor([1.], requires_grad=True)
    with pytest.raises(RuntimeError, match="^torch.utils.checkpoint: the forward context "
                                           "provided by context_fn suppressed an exception"):
        checkpoint(f, x, use_reentrant=False,
                   context_fn=lambda: (Swallow(), contextlib.nullcontext()))


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_sequential_segments_and_keywords(reentrant):
    calls = []

    def counted(fn):
        def g(t):
            calls.append(1)
            return fn(t)
        return g
    fs = [counted(tg.sin), counted(lambda t: t * 2), counted(tg.exp), counted(lambda t: t + 1)]
    a = np.array([0.3, -0.7])
    x = tg.tensor(a, requires_grad=True)
    y = checkpoint_sequential(fs, 2, x, use_reentrant=reentrant, preserve_rng_state=False)
    assert len(calls) == 4
    y.sum().backward()
    # the first segment recomputed, the last not; the non-reentrant variant stops once it has
    # what backward needs (sin's input), as PyTorch's early stop does
    assert len(calls) == (6 if reentrant else 5)
    np.testing.assert_allclose(y.detach().numpy(), np.exp(2 * np.sin(a)) + 1, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), np.exp(2 * np.sin(a)) * 2 * np.cos(a),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo"):
        checkpoint_sequential(fs, 2, x, use_reentrant=reentrant, foo=1)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(fs, 5, x, use_reentrant=reentrant)


# -- PyTorch itself, where it is installed ------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, tg):
        m = lib.set_grad_enabled(False)
        lib.set_grad_enabled(True)
        with m:
            assert not lib.is_grad_enabled()
        assert lib.is_grad_enabled()
        with lib.autograd.set_detect_anomaly(True) as v:
            assert v is None
        with pytest.raises(TypeError, match="set_anomaly_enabled"):
            lib.autograd.set_detect_anomaly(1)
        with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo"):
            lib.utils.checkpoint.checkpoint_sequential([lambda t: t], 1, lib.ones(1),
                                                       use_reentrant=False, foo=1)
    a = np.array([0.5, -1.25, 2.0])
    grads = []
    for lib in (torch, tg):
        x = lib.tensor(a, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(_f, x, use_reentrant=True)
        y.sum().backward()
        grads.append(np.asarray(x.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_torch_C_grad_mode_and_anomaly_switches():
    from tritongrad import _C
    prev = _C.is_grad_enabled()
    try:
        _C._set_grad_enabled(False)
        assert not tg.is_grad_enabled() and not _C.is_grad_enabled()
    finally:
        _C._set_grad_enabled(prev)
    assert tg.is_grad_enabled() is prev
    assert _C.is_anomaly_enabled() is False and _C.is_anomaly_check_nan_enabled() is True
    assert _C._is_multithreading_enabled() is True
    assert _C._is_view_replay_enabled() is False
