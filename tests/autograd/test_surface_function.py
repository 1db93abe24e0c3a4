"""Custom Function and node surface that PyTorch's own autograd tests exercise: calling a
node directly, once_differentiable under create_graph, setup_context with default
arguments, saved_variables, reentrant backward deep enough to need more than one thread."""

import numpy as np
import pytest
from tritongrad.autograd import Function
from tritongrad.autograd.function import once_differentiable
from tests.helpers import Mul

import tritongrad as tg


def _f64(values, requires_grad=True):
    return tg.tensor(values, dtype=tg.float64, requires_grad=requires_grad)


# -- calling a node ----------------------------------------------------------------------------

def test_calling_a_node_with_the_wrong_number_of_gradients_is_a_type_error():
    x = _f64([1.0, 2.0])
    y = x * 2
    with pytest.raises(TypeError, match=r"^expected 1 arguments, got 2 instead$"):
        y.grad_fn(x, x)
    with pytest.raises(TypeError, match=r"^expected 1 arguments, got 0 instead$"):
        y.grad_fn()
    a, _ = x.unbind()  # a node with two outputs takes two gradients
    with pytest.raises(TypeError, match=r"^expected 2 arguments, got 1 instead$"):
        a.grad_fn(tg.tensor(1.0, dtype=tg.float64))
    with pytest.raises(TypeError, match="argument 0 is not a Variable"):
        y.grad_fn(3)


def test_calling_a_node_directly_computes_its_input_gradients():
    x = _f64([1.0, 2.0])
    ga, gb = (x * x).grad_fn(tg.ones(2, dtype=tg.float64))  # one gradient per operand
    np.testing.assert_allclose(ga.detach().numpy(), [1.0, 2.0])
    np.testing.assert_allclose(gb.detach().numpy(), [1.0, 2.0])
    # no gradient in, none out: one per edge, and PyTorch's x * 2 node has a second, None,
    # edge for the number (Note [Edges of wrapped scalars]); a one-input node's gradient
    # comes alone, not in a tuple, as PyTorch's binding returns it
    assert (x * 2).grad_fn(None) == (None, None)
    assert x.exp().grad_fn(None) is None
    a, _ = x.unbind()
    g = a.grad_fn(tg.tensor(3.0, dtype=tg.float64), tg.tensor(5.0, dtype=tg.float64))
    np.testing.assert_allclose(g.numpy(), [3.0, 5.0])
    acc = (x * 2).grad_fn.next_functions[0][0]  # a leaf's AccumulateGrad adds into .grad
    assert acc(tg.ones(2, dtype=tg.float64)) == ()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


# -- once_differentiable -----------------------------------------------------------------------

class _Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert not tg.is_grad_enabled()  # the backward itself records nothing
        return 3 * x * x * g


def test_once_differentiable_first_derivative_is_right():
    x = _f64([1.0, 2.0])
    _Cube.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])


def test_once_differentiable_grad_under_create_graph_raises_when_differentiated_again():
    x = _f64([1.0, 2.0])
    w = _f64([3.0, 4.0])
    (_Cube.apply(x) * w).sum().backward(create_graph=True)  # the incoming gradient is w
    np.testing.assert_allclose(x.grad.detach().numpy(), [9.0, 48.0])
    assert x.grad.grad_fn is not None  # a node that refuses, not silently no history
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        x.grad.sum().backward()


def test_once_differentiable_with_grad_outputs_that_need_no_grad_returns_plain_results():
    # as in PyTorch, only a gradient that requires grad gets the refusing node
    x = _f64([1.0, 2.0])
    (g,) = tg.autograd.grad(_Cube.apply(x).sum(), x, create_graph=True)
    assert g.grad_fn is None and not g.requires_grad
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])


# -- setup_context -----------------------------------------------------------------------------

class _Scale(Function):
    @staticmethod
    def forward(x, scale=2.0, *, shift=0.0):
        return x * scale + shift

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.scale = inputs[1] if len(inputs) > 1 else 2.0

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


def test_setup_context_with_default_and_keyword_arguments():
    x = _f64([1.0, 2.0])
    y = _Scale.apply(x)  # the default scale: inputs holds only what was passed
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), [2.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    x.grad = None
    y = _Scale.apply(x, 5.0, shift=1.0)
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), [6.0, 11.0])
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


# -- saved tensors of custom Functions ---------------------------------------------------------

_Mul = Mul


def test_saved_tensors_and_deprecated_saved_variables_on_the_node():
    a, b = _f64([1.0, 2.0]), _f64([3.0, 4.0])
    y = _Mul.apply(a, b)
    saved = y.grad_fn.saved_tensors
    assert saved[0] is a and saved[1] is b
    with pytest.warns(DeprecationWarning, match="'saved_variables' is deprecated; use "
                                                "'saved_tensors'"):
        assert y.grad_fn.saved_variables[1] is b
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        _ = y.grad_fn.saved_tensors


# -- reentrant backward ------------------------------------------------------------------------

class _Reenter(Function):
    """Identity whose backward runs a whole backward of its own, ``depth`` levels deep (with
    ``boom``, the deepest one raises)."""

    @staticmethod
    def forward(ctx, x, depth, boom=False):
        ctx.depth, ctx.boom = depth, boom
        return x * 1

    @staticmethod
    def backward(ctx, g):
        if ctx.boom:
            if ctx.depth == 0:
                raise ValueError("boom at the bottom")
            with tg.enable_grad():
                z = tg.tensor([1.0], requires_grad=True)
                _Reenter.apply(z, ctx.depth - 1, True).sum().backward()
        elif ctx.depth > 0:
            with tg.enable_grad():
                z = tg.tensor([2.0], dtype=tg.float64, requires_grad=True)
                (_Reenter.apply(z, ctx.depth - 1) * z).sum().backward()
                # each level checks its own inner gradient: R's backward scales by 3, so
                # the gradient of R(z) * z is 3z + z = 8 at z = 2
                assert z.grad.item() == 8.0
        return g * 3, None, None


@pytest.mark.parametrize("depth", [1, 150])
def test_reentrant_backward_nests_without_recursion_error(depth):
    x = _f64([1.0])
    _Reenter.apply(x, depth).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0])


def test_deep_reentrant_backward_propagates_errors_and_grad_mode():
    x = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="boom at the bottom"):
        _Reenter.apply(x, 80, True).sum().backward()
    assert tg.is_grad_enabled()  # restored on the way out


def test_current_graph_task_id_is_set_only_during_backward():
    from tritongrad.autograd import engine
    assert engine.current_graph_task_id() == -1
    seen = []
    x = tg.tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: seen.append(engine.current_graph_task_id()))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert seen[0] != -1 and seen[1] != -1 and seen[0] != seen[1]
    assert engine.current_graph_task_id() == -1
    with pytest.raises(RuntimeError, match="should only be called during the backward pass"):
        engine.will_engine_execute_node(x._edge()[0])


def test_setup_context_gets_forward_defaults_in_its_inputs():
    class Pow(Function):
        @staticmethod
        def forward(x, y=3):
            return x ** y

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y = inputs  # y: forward's default when not passed
            ctx.save_for_backward(x)
            ctx.y = y

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.y * x ** (ctx.y - 1), None

    x = _f64([2.0])
    Pow.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [12.0])
    x.grad = None
    Pow.apply(x, 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0])
