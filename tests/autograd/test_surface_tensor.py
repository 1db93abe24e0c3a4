"""Tensor and grad-mode surface: view_as, ``del t.grad``, is_inference, retain_grad across
in-place ops, grad modes decorating classes and generators, and how tensors with history
print."""

import warnings

import numpy as np
import pytest
from tritongrad.autograd.grad_mode import is_inference

import tritongrad as tg


def _f64(values, requires_grad=True):
    return tg.tensor(values, dtype=tg.float64, requires_grad=requires_grad)


def test_view_as_is_a_view_with_the_others_shape(device):
    x = tg.arange(6.0, device=device).requires_grad_()
    other = tg.zeros(2, 3, device=device)
    v = x.view_as(other)
    assert v.shape == (2, 3) and v._base is x
    assert v.grad_fn.name() == "ViewBackward0"
    (v * tg.tensor([[1.0], [2.0]], device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [1, 1, 1, 2, 2, 2])
    with pytest.raises(RuntimeError):
        x.view_as(tg.zeros(4))  # the view op's own size error
    with pytest.raises(TypeError, match="must be Tensor, not tuple"):
        x.view_as((2, 3))


def test_del_grad_sets_it_to_none():
    x = _f64([1.0, 2.0])
    (x * 2).sum().backward()
    assert x.grad is not None
    del x.grad
    assert x.grad is None
    (x * 3).sum().backward()  # a fresh gradient, not 2 + 3
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_is_inference_function_and_method():
    with tg.inference_mode():
        inf = tg.ones(2)
    normal = tg.ones(2)
    assert inf.is_inference() and is_inference(inf)
    assert not normal.is_inference() and not is_inference(normal)
    with pytest.raises(TypeError, match="must be Tensor"):
        is_inference([1.0])


# -- retain_grad and in-place ops --------------------------------------------------------------

def test_retain_grad_after_in_place_keeps_the_gradient_of_the_new_value():
    a = _f64([1.0, 2.0])
    y = a * 2
    y.retain_grad()
    y.mul_(3)
    (y * y).sum().backward()  # d/dy_new of y_new ** 2 = 2 * y_new = 12 * a
    np.testing.assert_allclose(y.grad.numpy(), [12.0, 24.0])
    np.testing.assert_allclose(a.grad.numpy(), [72.0, 144.0])  # 2 * y_new * 3 * 2
    assert y.retains_grad


def test_retain_grad_of_a_view_follows_its_base_being_modified():
    a = _f64([1.0, 2.0, 3.0])
    b = a * 1
    v = b[:2]
    v.retain_grad()
    b.mul_(2)  # v's history is regenerated on top of b's new one
    (v * tg.tensor([5.0, 7.0], dtype=tg.float64)).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), [5.0, 7.0])
    np.testing.assert_allclose(a.grad.numpy(), [10.0, 14.0, 0.0])


def test_tensor_hook_stays_with_the_old_value_while_retain_grad_moves():
    a = _f64([1.0])
    y = a * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.item()))
    y.retain_grad()
    y.mul_(3)
    (y * 5).sum().backward()
    assert seen == [15.0]  # the gradient w.r.t. y before mul_
    assert y.grad.item() == 5.0  # w.r.t. y after it


# -- grad modes as decorators ------------------------------------------------------------------

@pytest.mark.parametrize("mode, expected", [(tg.no_grad, False), (tg.enable_grad, True)])
def test_grad_mode_decorating_a_class_wraps_its_construction(mode, expected):
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        @mode()
        class Probe:
            def __init__(self):
                self.enabled = tg.is_grad_enabled()

            def later(self):
                return tg.is_grad_enabled()

    with tg.set_grad_enabled(not expected):
        p = Probe()
        assert p.enabled is expected  # __init__ ran in the mode
        assert p.later() is (not expected)  # methods did not


def test_grad_modes_decorate_generator_functions_per_step():
    @tg.no_grad()
    def gen():
        got = yield tg.is_grad_enabled()
        yield (got, tg.is_grad_enabled())

    g = gen()
    assert next(g) is False
    assert tg.is_grad_enabled()  # the caller's mode between steps
    assert g.send("hi") == ("hi", False)

    @tg.set_grad_enabled(False)
    def gen2():
        yield tg.is_grad_enabled()

    assert tg.is_grad_enabled()  # decorating changed nothing now
    assert list(gen2()) == [False]

    @tg.inference_mode()
    def gen3():
        yield tg.is_inference_mode_enabled()

    assert list(gen3()) == [True] and not tg.is_inference_mode_enabled()


def test_bare_grad_mode_decorators():
    @tg.no_grad
    def f():
        return tg.is_grad_enabled()

    @tg.inference_mode
    def g():
        return tg.is_inference_mode_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f() is False and g() is True


# -- printing ----------------------------------------------------------------------------------

def test_tensors_print_their_grad_fn_as_pytorch_does():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(tg.tensor([1.0], requires_grad=True) * 2) == "tensor([2.], grad_fn=<MulBackward0>)"
    assert repr(x.sum()) == "tensor(3., grad_fn=<SumBackward0>)"
    assert repr(x.double() * 1) == ("tensor([1., 2.], dtype=tritongrad.float64, "
                                    "grad_fn=<MulBackward0>)")
    assert repr(x.detach()) == "tensor([1., 2.])"
    with tg.no_grad():
        assert repr(x * 2) == "tensor([2., 4.])"
    a = x * 1
    v = a[:1]
    a.mul_(2)  # v's history is regenerated: it prints the new one
    assert repr(v) == "tensor([2.], grad_fn=<AsStridedBackward0>)"
