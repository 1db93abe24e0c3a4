"""Hooks on tensors and graph nodes as PyTorch checks them (sweep 35): what node pre- and
post-hooks may return, what built-in nodes' post-hooks see, saved-tensor handles taken before
the backward that frees them, and the edges PyTorch gives a wrapped Python scalar."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd.node import FREED_MSG


def _leaf(values=(1.0, 2.0, 3.0)):
    return tg.tensor(list(values), dtype=tg.float64, requires_grad=True)


# -- what node hooks may return ---------------------------------------------------------------

def test_node_hook_tuple_result_replaces_gradients():
    a, b = _leaf(), _leaf((4.0, 5.0, 6.0))
    c = a * b
    c.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    c.grad_fn.register_hook(lambda gi, go: (gi[0] * 2, None))
    c.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 20 * np.array([4.0, 5.0, 6.0]))
    assert b.grad is None  # (a None entry is no gradient, as in PyTorch: not "keep it")


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_node_hook_changing_the_size_is_refused(kind):
    def mine(grads, *rest):
        return (grads[0][:1],) + tuple(grads[1:])

    a, b = _leaf(), _leaf()
    c = a * b
    if kind == "pre":
        c.grad_fn.register_prehook(mine)
    else:
        c.grad_fn.register_hook(mine)
    with pytest.raises(RuntimeError, match="hook 'mine' has changed the size of value"):
        c.sum().backward()


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_node_hook_changing_the_dtype_is_refused(kind):
    a, b = _leaf(), _leaf()
    c = a * b
    if kind == "pre":
        c.grad_fn.register_prehook(lambda go: (go[0].float(),))
    else:
        c.grad_fn.register_hook(lambda gi, go: (gi[0].float(), gi[1]))
    with pytest.raises(RuntimeError, match=r"has changed the type of value \(was "
                                           r"tritongrad.DoubleTensor got tritongrad.FloatTensor"):
        c.sum().backward()


def test_node_hook_entry_that_is_not_a_tensor_is_refused():
    a, b = _leaf(), _leaf()
    c = a * b
    c.grad_fn.register_hook(lambda gi, go: (gi[0], 3))
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        c.sum().backward()


@pytest.mark.parametrize("where", ["tensor", "node"])
def test_type_is_checked_before_size(where):
    # PyTorch's check_variable_result: a result of another dtype and size names the type
    a, b = _leaf(), _leaf()
    c = a * b
    if where == "tensor":
        c.register_hook(lambda g: g[:1].float())
    else:
        c.grad_fn.register_hook(lambda gi, go: (gi[0][:1].float(), gi[1]))
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        c.sum().backward()


def test_tensor_hook_cannot_replace_a_missing_gradient():
    x = _leaf((1.0, 2.0, 3.0, 4.0))
    p, q = x.split(2)
    seen = []
    q.register_hook(lambda g: seen.append(g) or tg.ones(2, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None"):
        (p * 2).sum().backward()
    assert seen == [None]  # (the hook ran, on the output that got no gradient)


def test_builtin_post_hook_cannot_replace_a_missing_gradient():
    a, b = _leaf(), tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    c = a * b
    c.grad_fn.register_hook(lambda gi, go: (gi[0], tg.ones(3, dtype=tg.float64)))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None"):
        c.sum().backward()


# -- what built-in nodes' post-hooks see --------------------------------------------------------

def test_post_hook_sees_none_for_an_input_that_needs_no_gradient():
    a, b = _leaf(), tg.tensor([4.0, 5.0, 6.0], dtype=tg.float64)
    seen = []
    c = a + b
    c.grad_fn.register_hook(lambda gi, go: seen.append(gi))
    c.sum().backward()
    (gi,) = seen
    assert gi[1] is None
    np.testing.assert_allclose(gi[0].numpy(), [1.0, 1.0, 1.0])


def test_custom_function_post_hook_sees_what_backward_returned_under_inputs():
    # a module's full backward hook is a post-hook of an identity Function: under
    # backward(inputs=[x]) it still sees the gradient of the other argument, as in PyTorch
    class M(tg.nn.Module):
        def forward(self, a, b):
            return a * 2, b * 3

    m = M()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append([g.tolist() for g in gi]))
    x, y = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    p, q = m(x, y)
    (p.sum() + q.sum()).backward(inputs=[x])
    assert seen == [[[2.0, 2.0], [3.0, 3.0]]]
    assert x.grad.tolist() == [2.0, 2.0] and y.grad is None
    # an output that gets no gradient: its input's grad_input is zeros, which reach y
    seen.clear()
    x.grad = None
    p, q = m(x, y)
    p.sum().backward()
    assert seen == [[[2.0, 2.0], [0.0, 0.0]]]
    assert y.grad.tolist() == [0.0, 0.0]


# -- saved-tensor handles taken before the backward that frees them ---------------------------

def test_raw_saved_tensor_taken_before_backward_is_freed_with_the_graph():
    a, b = _leaf(), _leaf((2.0, 3.0, 4.0))
    c = a * b
    raw = c.grad_fn._raw_saved_self
    np.testing.assert_allclose(raw.unpack().detach().numpy(), [1.0, 2.0, 3.0])
    c.sum().backward()
    with pytest.raises(RuntimeError) as e:
        raw.unpack()
    assert str(e.value) == FREED_MSG
    assert raw.data is None and raw.unpack_hook is None
    with pytest.raises(RuntimeError, match="Calling register_hooks on a saved tensor after it "
                                           "has been freed"):
        raw.register_hooks(lambda t: t, lambda t: t)


def test_raw_saved_tensor_survives_retain_graph():
    a, b = _leaf(), _leaf((2.0, 3.0, 4.0))
    c = a * b
    raw = c.grad_fn._raw_saved_other
    c.sum().backward(retain_graph=True)
    np.testing.assert_allclose(raw.unpack().detach().numpy(), [2.0, 3.0, 4.0])


# -- Note [Edges of wrapped scalars] ----------------------------------------------------------

def test_wrapped_scalar_edges_extend_next_functions_hooks_and_calls(monkeypatch):
    a = _leaf((1.0, 2.0))
    cls = type((a * 2).grad_fn)
    monkeypatch.setattr(cls, "_none_edges", 1)
    y = a * 2
    nf = y.grad_fn.next_functions
    assert len(nf) == 2 and nf[1] == (None, 0)
    assert nf[0][0] is not None
    out = y.grad_fn(tg.ones(2, dtype=tg.float64))
    assert type(out) is tuple and len(out) == 2 and out[1] is None
    np.testing.assert_allclose(out[0].numpy(), [2.0, 2.0])
    seen = []
    # a hook written for PyTorch returns one entry per input, the scalar's None included
    y.grad_fn.register_hook(lambda gi, go: seen.append(len(gi)) or (gi[0] * 10, None))
    y.sum().backward()
    assert seen == [2]
    np.testing.assert_allclose(a.grad.numpy(), [20.0, 20.0])


def test_scalar_operand_has_a_none_edge_as_in_pytorch():
    a = _leaf()
    for y in (a * 2, a + 2, a - 2, a / 2):
        assert [n is None for n, _ in y.grad_fn.next_functions] == [False, True]


def test_c_engine_introspection_functions():
    assert tg._C._current_graph_task_id() == -1
    assert callable(tg._C._will_engine_execute_node)


# -- against PyTorch ------------------------------------------------------------------------

def _record(L):
    """A run of several hook kinds on one graph, recorded as plain values."""
    rec = []
    a = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
    b = L.tensor([4.0, 5.0, 6.0], dtype=L.float64)
    c = a * b
    d = c + b
    d.grad_fn.register_hook(lambda gi, go: rec.append(("d", [g is None for g in gi])))
    c.grad_fn.register_prehook(lambda go: rec.append(("c-pre", go[0].tolist())) or
                               (go[0] * 2,))
    c.register_hook(lambda g: rec.append(("c", g.tolist())) or g + 1)
    a.register_hook(lambda g: rec.append(("a", g.tolist())))
    a.register_post_accumulate_grad_hook(lambda p: rec.append(("acc", p.grad.tolist())))
    d.sum().backward()
    for hook in (lambda go: 5, lambda go: (go[0][:1],), lambda go: (go[0].float(),)):
        e = a * 3
        e.grad_fn.register_prehook(hook)
        try:
            e.sum().backward()
        except (TypeError, RuntimeError) as err:
            rec.append((type(err).__name__, " ".join(str(err).split()[:5])))
    return rec


def test_hook_runs_and_refusals_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _record(tg) == _record(torch)
