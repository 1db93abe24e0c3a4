"""Hooks on tensors and nodes beyond register_hook: post-accumulate-grad hooks (what
DistributedDataParallel and optimizer-in-backward build on), their order, call counts and
lifetimes."""

import gc
import weakref

import numpy as np
import pytest

import tritongrad as tg


def test_post_accumulate_grad_hook_sees_the_accumulated_grad(device):
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, device=device, requires_grad=True)
    seen = []
    h = x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.cpu().numpy().copy()))
    (x * x).sum().backward()
    (x * 3).sum().backward()
    # after each backward the hook saw .grad with that backward's gradient already added
    np.testing.assert_allclose(seen[0], [2.0, 4.0])
    np.testing.assert_allclose(seen[1], [5.0, 7.0])
    h.remove()
    (x * 3).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_grad_hook_runs_once_per_backward_after_all_contributions():
    # x reaches the loss through three paths: its gradient is summed before accumulation, and
    # the hook runs once, on the sum
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.numpy().copy()))
    (x * 2 + x.exp() + x * x).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 2 + np.exp([1.0, 2.0]) + 2 * np.array([1.0, 2.0]))


def test_post_accumulate_grad_hook_can_update_the_parameter_in_place():
    # optimizer-in-backward: an SGD step in the hook (grad mode is off during backward)
    v = tg.tensor([0.0, 0.0, 0.0], requires_grad=True)
    lr = 0.01
    v.register_post_accumulate_grad_hook(lambda p: p.add_(p.grad, alpha=-lr))
    v.backward(tg.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(v.detach().numpy(), [-0.01, -0.02, -0.03], rtol=1e-6)


def test_post_accumulate_grad_hooks_run_in_order_after_tensor_hooks():
    x = tg.tensor([1.0], requires_grad=True)
    order = []
    x.register_post_accumulate_grad_hook(lambda p: order.append(("post1", p.grad.item())))
    x.register_hook(lambda g: order.append(("hook", None)) or g * 10)
    x.register_post_accumulate_grad_hook(lambda p: order.append(("post2", p.grad.item())))
    (x * 2).sum().backward()
    assert order == [("hook", None), ("post1", 20.0), ("post2", 20.0)]


def test_post_accumulate_grad_hook_not_called_by_grad_or_for_other_inputs():
    x = tg.tensor([1.0], requires_grad=True)
    w = tg.tensor([2.0], requires_grad=True)
    calls = []
    x.register_post_accumulate_grad_hook(lambda p: calls.append("x"))
    w.register_post_accumulate_grad_hook(lambda p: calls.append("w"))
    tg.autograd.grad((x * w).sum(), [x, w])  # accumulates nothing: no hook runs
    assert calls == []
    (x * w).sum().backward(inputs=[w])
    assert calls == ["w"]
    assert x.grad is None


def test_post_accumulate_grad_hook_not_called_without_a_gradient():
    # a leaf reached only through a None gradient accumulates nothing
    class Drop(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g, None

    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([1.0], requires_grad=True)
    calls = []
    b.register_post_accumulate_grad_hook(lambda p: calls.append(p))
    Drop.apply(a, b).sum().backward()
    assert calls == [] and b.grad is None


def test_post_accumulate_grad_hook_under_create_graph():
    x = tg.tensor([3.0], dtype=tg.float64, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad))
    (x ** 3).sum().backward(create_graph=True)
    assert len(seen) == 1 and seen[0].grad_fn is not None
    np.testing.assert_allclose(seen[0].detach().numpy(), [27.0])


def test_post_accumulate_grad_hook_must_return_none():
    x = tg.tensor([1.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: p.grad)
    with pytest.raises(RuntimeError, match="Tensor post accumulate grad hooks should return "
                                           "None."):
        (x * 2).sum().backward()


def test_post_accumulate_grad_hook_only_on_leaves_that_require_grad():
    x = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on "
                                           "non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        tg.tensor([1.0]).register_post_accumulate_grad_hook(lambda p: None)


def test_post_accumulate_grad_hook_handle_is_a_context_manager_and_keeps_nothing_alive():
    x = tg.tensor([1.0], requires_grad=True)
    calls = []
    with x.register_post_accumulate_grad_hook(lambda p: calls.append(1)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert calls == [1]
    # the handle refers to the hooks weakly: it does not keep the tensor alive
    h = x.register_post_accumulate_grad_hook(lambda p: None)
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None
    h.remove()  # removing after the tensor died is a no-op


def test_hook_order_across_tensor_node_and_leaf_hooks():
    # tensor hooks in registration order, retain_grad after them (it sees their result),
    # then the node's pre-hooks, its rule, its post-hooks; the leaf's tensor hooks before
    # its accumulation, post-accumulate hooks after
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    order = []
    y.retain_grad()
    y.register_hook(lambda g: order.append("t1") or g * 2)
    y.grad_fn.register_prehook(lambda gs: order.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: order.append("post"))
    y.register_hook(lambda g: order.append("t2"))
    x.register_hook(lambda g: order.append("leaf"))
    x.register_post_accumulate_grad_hook(lambda p: order.append("post-accumulate"))
    (y * 3).sum().backward()
    assert order == ["t1", "t2", "pre", "post", "leaf", "post-accumulate"]
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 6.0])
    np.testing.assert_allclose(x.grad.numpy(), [12.0, 12.0])


def test_hook_call_counts_and_lifetimes():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(g.tolist()))
    (x * 2 + x * 3).sum().backward()  # two uses, one summed gradient: one call
    (x * 2).sum().backward()          # a leaf's hooks stay for later backward calls
    assert calls == [[5.0, 5.0], [2.0, 2.0]]

    class Held:
        pass

    held = Held()
    ref = weakref.ref(held)
    z = x * 2
    z.register_hook(lambda g, held=held: None)  # a non-leaf's hooks live on its grad_fn
    del held, z
    gc.collect()
    assert ref() is None  # freed with the graph


# -- final callbacks (Variable._execution_engine.queue_callback) --------------------------------

def test_queue_callback_runs_after_every_node_of_the_backward():
    engine = tg.autograd.Variable._execution_engine
    w1 = tg.tensor([1.0, 2.0], requires_grad=True)
    w2 = tg.tensor([3.0], requires_grad=True)
    seen = []

    def finish():
        # every gradient of this backward is in .grad by now
        seen.append((w1.grad.tolist(), w2.grad.tolist()))
        engine.queue_callback(lambda: seen.append("queued by a callback"))

    queued = []

    def on_first_grad(p):
        if not queued:  # DDP's pattern: the first ready bucket queues the final step
            queued.append(True)
            engine.queue_callback(finish)

    w1.register_post_accumulate_grad_hook(on_first_grad)
    w2.register_post_accumulate_grad_hook(on_first_grad)
    ((w1 * 2).sum() * w2).sum().backward()
    assert seen == [([6.0, 6.0], [6.0]), "queued by a callback"]
    queued.clear()
    ((w1 * 2).sum() * w2).sum().backward()  # callbacks belong to one backward call
    assert len(seen) == 4


def test_queue_callback_outside_backward_and_errors_in_callbacks():
    engine = tg.autograd.Variable._execution_engine
    with pytest.raises(RuntimeError, match="^Final callbacks can only be installed during "
                                           "backward pass.$"):
        engine.queue_callback(lambda: None)
    x = tg.tensor([1.0], requires_grad=True)

    def fail():
        raise ValueError("from a final callback")

    x.register_hook(lambda g: engine.queue_callback(fail))
    with pytest.raises(ValueError, match="from a final callback"):
        (x * 2).sum().backward()
    assert tg.is_grad_enabled()
