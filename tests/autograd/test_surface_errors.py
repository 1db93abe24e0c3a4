"""The errors PyTorch's autograd tests pin, with PyTorch's wording: backward through freed
saved tensors (also after index_put and in-place writes through views), and in-place
operations autograd cannot allow on views."""

import numpy as np
import pytest

import tritongrad as tg

FREED = "Trying to backward through the graph a second time"


def _f64(values, requires_grad=True):
    return tg.tensor(values, dtype=tg.float64, requires_grad=requires_grad)


def _index_put_graph(a):
    b = a * 2
    b[tg.tensor([0, 2])] = tg.tensor([5.0, 6.0], dtype=tg.float64)
    return (b * b).sum()


def _view_write_graph(a):
    b = a * 2
    b[:2].mul_(3)  # CopySlices rewrites b's history
    return (b * b).sum()


@pytest.mark.parametrize("build", [_index_put_graph, _view_write_graph])
def test_second_backward_through_freed_saved_tensors_raises(build):
    a = _f64([1.0, 2.0, 3.0])
    s = build(a)
    s.backward()
    with pytest.raises(RuntimeError, match=FREED):
        s.backward()
    with pytest.raises(RuntimeError, match=FREED):
        tg.autograd.grad(s, a)


@pytest.mark.parametrize("op, slope", [(lambda x: x * 2, 2.0), (lambda x: 2 * x, 2.0),
                                       (lambda x: x.mul(2.5), 2.5), (lambda x: x / 2, 0.5)])
def test_second_backward_through_a_scalar_product_raises(op, slope):
    """PyTorch's x * 2 and x / 2 save the wrapped 2: a second backward refuses, where x + 2
    (its node saves only alpha, a number) runs again."""
    a = _f64([1.0, 2.0, 3.0])
    s = op(a).sum()
    s.backward()
    with pytest.raises(RuntimeError, match=FREED):
        s.backward()
    t = (a + 2).sum()
    t.backward()
    t.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [slope + 2.0] * 3)


def test_a_node_that_saved_nothing_runs_again():
    """addcmul saves each factor only for the other's gradient: with neither requiring grad
    nothing is saved, and a second backward runs, as PyTorch's (its SavedVariables are
    undefined); x * w with w saved refuses."""
    a = _f64([1.0, 2.0, 3.0])
    t1, t2 = _f64([2.0, 2.0, 2.0], False), _f64([0.5, 1.0, 1.5], False)
    s = a.addcmul(t1, t2, value=2).sum()
    s.backward()
    s.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0, 2.0])
    s = (a * t1).sum()
    s.backward()
    with pytest.raises(RuntimeError, match=FREED):
        s.backward()


@pytest.mark.parametrize("build, expected", [
    (_index_put_graph, [0.0, 16.0, 0.0]),         # only b[1] = 2a is left: d (2a)^2 = 8a
    (_view_write_graph, [72.0, 144.0, 24.0]),     # (6a)^2 for a[:2], (2a)^2 for a[2]
])
def test_retained_graph_backward_twice_accumulates(build, expected):
    a = _f64([1.0, 2.0, 3.0])
    s = build(a)
    s.backward(retain_graph=True)
    np.testing.assert_allclose(a.grad.numpy(), expected)
    s.backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.array(expected))


def test_in_place_on_a_view_of_a_leaf_that_requires_grad():
    a = _f64([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        a[:2].mul_(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation."):
        a.mul_(2)
    with tg.no_grad():  # allowed where nothing is recorded
        a[:2].mul_(2)
    np.testing.assert_allclose(a.detach().numpy(), [2.0, 4.0, 3.0])


def test_saved_tensor_modified_through_a_view_is_detected():
    a = _f64([1.0, 2.0, 3.0])
    b = a * 1
    y = (b.exp()).sum()  # saves exp's output, not b
    z = (b * b).sum()    # saves b
    b[1:].add_(1)        # bumps the version b and its views share
    y.backward()         # exp's output was not modified: fine
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# -- views that must not be modified in place (Note [View + in-place], tensor.py) --------------
# view_inplace_error gives PyTorch's message; dispatch.check_inplace raises it.

NOGRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad mode "
               "enabled. Given that this use case is ambiguous and error-prone, it is forbidden.")


def test_view_made_in_no_grad_mode_may_only_be_modified_in_no_grad_mode():
    from tritongrad.autograd.tensor import view_inplace_error
    b = _f64([1.0, 2.0, 3.0]) * 1
    with tg.no_grad():
        v = b[:2]
        assert view_inplace_error(v) is None  # both in no_grad: allowed
    assert view_inplace_error(v).startswith(NOGRAD_VIEW)
    plain = tg.ones(3)
    with tg.no_grad():
        w = plain[:2]
    assert view_inplace_error(w) is None  # its base needs no grad: nothing to get wrong
    assert view_inplace_error(b[:2]) is None  # an ordinary view of a non-leaf
    assert view_inplace_error(b) is None  # not a view


@pytest.mark.parametrize("views, name", [
    (lambda b: b.unbind(), "Unbind"),
    (lambda b: b.split(1), "Split"),
    (lambda b: b.split([1, 2]), "SplitWithSizes"),
])
def test_outputs_of_multi_view_ops_may_not_be_modified_in_place(views, name):
    from tritongrad.autograd.tensor import view_inplace_error
    b = _f64([1.0, 2.0, 3.0]) * 1
    out = views(b)[1]
    assert view_inplace_error(out) == (
        f"Output 1 of {name} is a view and is being modified inplace. This view is the output "
        f"of a function that returns multiple views. Such functions do not allow the output "
        f"views to be modified inplace. You should replace the inplace operation by an "
        f"out-of-place one.")
    with tg.no_grad():
        assert view_inplace_error(out) is None


def test_view_returned_by_a_custom_function_may_not_be_modified_in_place():
    from tritongrad.autograd.tensor import view_inplace_error

    class AsView(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g

    out = AsView.apply(_f64([1.0, 2.0]) * 1)
    assert view_inplace_error(out).startswith(
        "Output 0 of AsView is a view and is being modified inplace. This view was created "
        "inside a custom Function")


# -- hooks' results, assigned gradients, root gradients ----------------------------------------

def test_tensor_hook_results_are_checked_with_pytorchs_messages():
    def run(hook):
        a = tg.tensor([1.0, 2.0], requires_grad=True)
        b = a * 2
        b.register_hook(hook)
        b.sum().backward()

    def widen(g):
        return tg.ones(3)

    with pytest.raises(RuntimeError, match="^hook 'widen' has changed the size of value$"):
        run(widen)
    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has changed the type of value "
                                           r"\(was tritongrad.FloatTensor got "
                                           r"tritongrad.DoubleTensor\)$"):
        run(lambda g: g.double())
    with pytest.raises(TypeError, match="^expected Variable, but hook returned 'int'$"):
        run(lambda g: 3)


def test_node_hook_results_are_checked_with_pytorchs_messages():
    def run(pre=None, post=None):
        a = _f64([1.0])
        w = _f64([2.0])
        y = a * w  # two inputs: the post-hook's grad_inputs has two entries
        if pre:
            y.grad_fn.register_prehook(pre)
        if post:
            y.grad_fn.register_hook(post)
        y.sum().backward()
        return a.grad, w.grad

    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has returned an incorrect number "
                                           r"of values \(got 1, but expected 2\)$"):
        run(post=lambda gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match=r"got 2, but expected 1"):
        run(pre=lambda go: (go[0], go[0]))
    with pytest.raises(TypeError, match="^expected tuple, but hook returned 'int'$"):
        run(pre=lambda go: 5)
    with pytest.raises(TypeError, match="^expected tuple, but hook returned 'list'$"):
        run(post=lambda gi, go: [gi[0] * 10, None])  # (PyTorch's: a tuple, not a list)


def test_assigning_a_mismatched_grad_uses_pytorchs_messages():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^attempting to assign a gradient of size '\[3\]' to "
                                           r"a tensor of size '\[2\]'. Please ensure that the "
                                           r"gradient and the tensor are the same size$"):
        x.grad = tg.ones(3)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype "
                                           "'double' to a tensor with grad_dtype 'Float'"):
        x.grad = tg.ones(2, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with device type "
                                           "'cuda' to a tensor with device type 'cpu'"):
        x.grad = tg.ones(2, device="cuda")
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = [1.0, 2.0]


def test_root_gradients_take_their_outputs_dtype_and_counts_must_match():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad(x * 3, x, tg.ones(2, dtype=tg.float64))
    assert g.dtype is tg.float32
    np.testing.assert_allclose(g.numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="^got 2 tensors and 1 gradients$"):
        tg.autograd.backward([x * 2, x * 3], [tg.ones(2)])
    with pytest.raises(RuntimeError, match="^`inputs` argument to `backward\\(\\)` cannot be "
                                           "empty.$"):
        (x * 2).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match="^The differentiated Tensor at index 1 appears to "
                                           "not have been used in the graph. Set "
                                           "allow_unused=True if this is the desired behavior.$"):
        tg.autograd.grad((x * 2).sum(), [x, tg.ones(2, requires_grad=True)])


def test_gradient_edges_as_outputs_of_grad_and_backward():
    from tritongrad.autograd.graph import get_gradient_edge
    x = _f64([1.0, 2.0])
    y = x * x
    edge = get_gradient_edge(y)
    (g,) = tg.autograd.grad(edge, x, tg.tensor([1.0, 10.0], dtype=tg.float64),
                            retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [2.0, 40.0])  # 2x * v
    (g,) = tg.autograd.grad([edge, y.sum()], x, [tg.ones(2, dtype=tg.float64), None],
                            retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [4.0, 8.0])
    tg.autograd.backward(edge, tg.ones(2, dtype=tg.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        tg.autograd.grad(edge, x)
