"""tritongrad.autograd.graph beyond saved_tensors_hooks (GradientEdge, multi-grad hooks,
increment_version, allow_mutation_on_saved_tensors) and saved-value introspection on nodes
(``grad_fn._saved_self``, ``_raw_saved_self.register_hooks``)."""

import numpy as np
import pytest
from tritongrad.autograd import graph

import tritongrad as tg


def _f64(values, requires_grad=True):
    return tg.tensor(values, dtype=tg.float64, requires_grad=requires_grad)


# -- GradientEdge ------------------------------------------------------------------------------

def test_gradient_edge_as_grad_input_equals_the_tensor():
    a = _f64([1.0, 2.0])
    b = a * a
    loss = (b * 3).sum()
    (by_tensor,) = tg.autograd.grad(loss, b, retain_graph=True)
    (by_edge,) = tg.autograd.grad(loss, graph.get_gradient_edge(b))
    np.testing.assert_allclose(by_edge.numpy(), by_tensor.numpy())
    np.testing.assert_allclose(by_edge.numpy(), [3.0, 3.0])


def test_gradient_edge_outlives_an_in_place_change_of_its_tensor():
    # the edge names the node b had when it was taken: gradients w.r.t. the old value
    a = _f64([1.0, 2.0])
    b = a * 2
    edge = graph.get_gradient_edge(b)
    b.mul_(5)
    loss = (b * b).sum()  # = 25 * old_b ** 2, d/d old_b = 50 * old_b
    (g_old,) = tg.autograd.grad(loss, edge)
    np.testing.assert_allclose(g_old.numpy(), [100.0, 200.0])


def test_gradient_edge_of_a_leaf_and_backward_inputs():
    a = _f64([1.0, 2.0])
    c = _f64([5.0, 6.0])
    edge = graph.get_gradient_edge(a)
    assert edge.node.name() == "torch::autograd::AccumulateGrad" and edge.output_nr == 0
    (g,) = tg.autograd.grad((a * c).sum(), edge, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [5.0, 6.0])
    (a * c).sum().backward(inputs=[edge])
    np.testing.assert_allclose(a.grad.numpy(), [5.0, 6.0])
    assert c.grad is None


def test_gradient_edge_needs_a_tensor_that_requires_grad():
    with pytest.raises(RuntimeError, match="It is not possible to get the gradient edge for a "
                                           "Tensor that does not require gradients"):
        graph.get_gradient_edge(tg.ones(2))


# -- register_multi_grad_hook ------------------------------------------------------------------

def test_multi_grad_hook_all_waits_for_every_gradient_of_the_backward():
    a = _f64([1.0, 2.0])
    b = _f64([3.0, 4.0])
    c = a * b
    d = a * b
    calls = []
    graph.register_multi_grad_hook((a, b, c, d), lambda grads: calls.append(grads))
    c.sum().backward(retain_graph=True)
    assert [g is not None for g in calls[0]] == [True, True, True, False]  # d is not in it
    np.testing.assert_allclose(calls[0][0].numpy(), [3.0, 4.0])
    np.testing.assert_allclose(calls[0][1].numpy(), [1.0, 2.0])
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert [g is not None for g in calls[1]] == [True, False, True, False]
    (c + d).sum().backward()
    assert len(calls) == 3 and all(g is not None for g in calls[2])


def test_multi_grad_hook_all_with_grad_and_handle_remove():
    a = _f64([1.0])
    b = _f64([2.0])
    calls = []
    h = graph.register_multi_grad_hook([a, b], lambda grads: calls.append(len(grads)))
    tg.autograd.grad((a * b).sum(), [a, b])
    assert calls == [2]
    h.remove()
    (a * b).sum().backward()
    assert calls == [2]


def test_multi_grad_hook_any_runs_once_per_backward_with_the_first_gradient():
    a = _f64([1.0])
    b = _f64([2.0])
    calls = []
    graph.register_multi_grad_hook((a, b), lambda g: calls.append(g.item()), mode="any")
    (a * b * 10).sum().backward()
    assert len(calls) == 1 and calls[0] in (10.0, 20.0)
    (a * 3).sum().backward()
    assert len(calls) == 2 and calls[1] == 3.0


def test_multi_grad_hook_rejects_unknown_modes():
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got "
                                         r"some"):
        graph.register_multi_grad_hook((_f64([1.0]),), print, mode="some")


# -- increment_version, allow_mutation_on_saved_tensors ----------------------------------------

def test_increment_version_makes_saved_tensor_checks_fire():
    a = _f64([1.0, 2.0])
    b = a * 2
    y = (b * b).sum()  # saves b
    b.detach().numpy()[0] = 7.0  # a change autograd cannot see
    v = b._version
    graph.increment_version(b)
    assert b._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    t1, t2 = tg.ones(2), tg.ones(3)
    graph.increment_version([t1, t2])
    assert (t1._version, t2._version) == (1, 1)


def test_allow_mutation_on_saved_tensors_backward_uses_the_saved_values():
    with graph.allow_mutation_on_saved_tensors():
        a = _f64([1.0, 2.0])
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()
        out.backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0])  # 2 * b before sin_
    # outside the context the usual check is back
    b = a.clone()
    out = (b ** 2).sum()
    b.sin_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_allow_mutation_on_saved_tensors_keeps_double_backward_and_outputs():
    with graph.allow_mutation_on_saved_tensors():
        a = _f64([1.0, 2.0])
        e = a.exp()  # saves its output
        y = (a * a).sum()  # saves a, which requires grad: its copy keeps the edge to a
        (g,) = tg.autograd.grad(y, a, create_graph=True)
        g.sum().backward()
        e.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2.0 + np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="cannot be nested"), \
            graph.allow_mutation_on_saved_tensors(), graph.allow_mutation_on_saved_tensors():
        pass


# -- saved values on nodes ---------------------------------------------------------------------

def test_saved_self_other_and_result():
    x = _f64([1.0, 2.0])
    w = _f64([3.0, 4.0])
    y = x * w
    assert y.grad_fn._saved_self is x
    assert y.grad_fn._saved_other is w
    e = x.exp()
    r = e.grad_fn._saved_result
    np.testing.assert_allclose(r.detach().numpy(), np.exp([1.0, 2.0]))
    assert r.grad_fn is e.grad_fn  # the output, with its history
    with pytest.raises(AttributeError):
        _ = y.grad_fn._saved_nothing_by_this_name
    with pytest.raises(AttributeError):
        _ = (x + w).grad_fn._saved_self  # add saves nothing
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        _ = y.grad_fn._saved_self


def test_saved_values_check_versions():
    x = _f64([1.0, 2.0])
    b = x * 1
    y = b * b
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _ = y.grad_fn._saved_self


def test_raw_saved_tensor_register_hooks_changes_what_backward_sees():
    x = _f64([1.0, 2.0])
    y = x * x
    packed = []

    def pack(t):
        packed.append(t)
        return t * 10

    y.grad_fn._raw_saved_self.register_hooks(pack, lambda p: p)
    # (a detached alias of x, as PyTorch packs: the hook sees the value, not the graph)
    assert len(packed) == 1 and packed[0] is not x and not packed[0].requires_grad
    assert y.grad_fn._raw_saved_self.unpack() is not x
    np.testing.assert_allclose(y.grad_fn._saved_self.detach().numpy(), [10.0, 20.0])
    np.testing.assert_allclose(y.grad_fn._saved_other.detach().numpy(), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="hooks have already been set"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    y.sum().backward()
    # d(self * other)/dx with self packed as 10x: other + self = x + 10x
    np.testing.assert_allclose(x.grad.numpy(), [11.0, 22.0])
    with pytest.raises(RuntimeError, match="Calling register_hooks on a saved tensor after it "
                                           "has been freed"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)


def test_raw_saved_tensor_unpack_hook_must_return_a_tensor():
    x = _f64([1.0, 2.0])
    y = x * x
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda p: 5)
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a "
                                        "Tensor but got result of type int"):
        _ = y.grad_fn._saved_self
    with pytest.raises(TypeError, match="must be callable"):
        (x * x).grad_fn._raw_saved_self.register_hooks(lambda t: t, 1)
