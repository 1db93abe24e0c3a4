"""The backward engine's semantics (seed documents): accumulation, retain_graph, grad() and
inputs=, hooks, custom Functions, in-place checks, views, gradient layouts."""

import subprocess
import sys
import threading

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import Function
from tests.helpers import Exp


def test_gradients_accumulate_into_leaves(device):
    x = tg.tensor([1.0, 2.0], device=device, requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [5.0, 7.0])


def test_backward_with_a_root_given_twice_or_reached_from_another_root():
    # each root's gradient is added once into its node's buffer; the graph is walked once
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    tg.autograd.backward([y, y], [tg.ones(2), tg.tensor([1.0, 3.0])])
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    x.grad = None
    y = x * 2
    z = y * 3
    tg.autograd.backward([y, z], [tg.ones(2), tg.ones(2)])
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 8.0])


def test_second_backward_without_retain_graph_fails():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.exp([1, 2]) * np.array([2, 3])),
                               rtol=1e-6)


def test_nonscalar_backward_needs_gradient():
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    (x * 2).backward(tg.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])


def test_backward_on_tensor_without_grad_errors():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        tg.ones(2).sum().backward()


def test_grad_returns_without_accumulating():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.tensor([3.0, 4.0], requires_grad=True)
    out = (x * y).sum()
    gx, gy = tg.autograd.grad(out, (x, y))
    np.testing.assert_allclose(gx.numpy(), [3, 4])
    np.testing.assert_allclose(gy.numpy(), [1, 2])
    assert x.grad is None and y.grad is None


def test_grad_allow_unused():
    x = tg.ones(2, requires_grad=True)
    z = tg.ones(2, requires_grad=True)
    out = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        tg.autograd.grad(out, (x, z), retain_graph=True)
    gx, gz = tg.autograd.grad(out, (x, z), allow_unused=True)
    assert gz is None
    np.testing.assert_allclose(gx.numpy(), [2, 2])


def test_grad_wrt_intermediate():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    out = (h * h).sum()
    (gh,) = tg.autograd.grad(out, h)
    np.testing.assert_allclose(gh.numpy(), 2 * np.array([3.0, 6.0]))


def test_backward_inputs_only_accumulates_those():
    x = tg.ones(2, requires_grad=True)
    y = tg.ones(2, requires_grad=True)
    (x * y * 2).sum().backward(inputs=[x])
    np.testing.assert_allclose(x.grad.numpy(), [2, 2])
    assert y.grad is None


def test_create_graph_gives_second_derivative():
    x = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    y = (x ** 3).sum()
    (g,) = tg.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    (h,) = tg.autograd.grad(g.sum(), x, create_graph=True)
    np.testing.assert_allclose(h.detach().numpy(), 6 * x.detach().numpy())
    (t,) = tg.autograd.grad(h.sum(), x)
    np.testing.assert_allclose(t.numpy(), [6.0, 6.0])


def test_tensor_hook_replaces_gradient_and_can_be_removed():
    v = tg.tensor([0.0, 0.0, 0.0], requires_grad=True)
    h = v.register_hook(lambda grad: grad * 2)
    v.backward(tg.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(v.grad.numpy(), [2, 4, 6])
    h.remove()
    v.grad = None
    v.backward(tg.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(v.grad.numpy(), [1, 2, 3])


def test_hook_on_intermediate_sees_and_changes_its_gradient():
    x = tg.ones(2, requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    (y * 2).sum().backward()
    np.testing.assert_allclose(seen[0], [2, 2])
    np.testing.assert_allclose(x.grad.numpy(), [60, 60])


def test_retain_grad():
    x = tg.ones(2, requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [6, 6])


def test_grad_fn_and_next_functions():
    x = tg.ones(2, requires_grad=True)
    c = tg.ones(2)
    y = (x * c).exp()
    assert y.grad_fn.name() == "ExpBackward0"
    mul, _ = y.grad_fn.next_functions[0]
    assert mul.name() == "MulBackward0"
    (acc, _), (none, _) = mul.next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc.variable is x
    assert none is None


def test_is_leaf_rules():
    a = tg.rand(10, requires_grad=True)
    assert a.is_leaf
    c = tg.rand(10, requires_grad=True) + 2
    assert not c.is_leaf
    d = tg.rand(10)
    assert d.is_leaf
    b = tg.rand(10, requires_grad=True).cuda()
    assert not b.is_leaf
    e = tg.rand(10).cuda().requires_grad_()
    assert e.is_leaf
    f = tg.rand(10, requires_grad=True, device="cuda")
    assert f.is_leaf


def test_requires_grad_errors():
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        (x * 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require"):
        tg.ones(2, dtype=tg.int64).requires_grad_()  # (PyTorch's method's words)
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype"):
        tg.ones(2, dtype=tg.int64, requires_grad=True)  # (and its factories')


def test_detach_shares_storage_and_version():
    x = tg.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    d.add_(1)
    assert y._version == 1
    np.testing.assert_allclose(y.detach().numpy(), [3, 3, 3])


def test_detach_inplace_on_view_errors():
    y = tg.ones(4, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        y[1:].detach_()
    y.detach_()
    assert y.is_leaf and not y.requires_grad


def test_no_grad_and_enable_grad():
    x = tg.tensor([1.0], requires_grad=True)
    with tg.no_grad():
        y = x * 2
        with tg.enable_grad():
            z = x * 2
    assert not y.requires_grad and z.requires_grad

    @tg.no_grad()
    def doubler(v):
        return v * 2
    assert not doubler(x).requires_grad


def test_set_grad_enabled_function_and_context():
    x = tg.tensor([1.0], requires_grad=True)
    with tg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    tg.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    tg.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_grad_mode_is_thread_local():
    x = tg.tensor([1.0], requires_grad=True)
    seen = {}

    def worker():
        seen["other"] = (x * 2).requires_grad

    with tg.no_grad():
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        seen["here"] = (x * 2).requires_grad
    assert seen == {"other": True, "here": False}


def test_inplace_on_leaf_requiring_grad_errors():
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        x.add_(1)
    with tg.no_grad():
        x.add_(1)
    np.testing.assert_allclose(x.detach().numpy(), [2, 2])


def test_modified_saved_tensor_raises_at_backward():
    x = tg.ones(3, requires_grad=True)
    y = x * 2
    z = y.exp()
    out = z * y  # saves y and z
    z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_inplace_on_nonleaf_gives_correct_gradient():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = tg.tensor([4.0, 5.0, 6.0], requires_grad=True)
    y = x * 2
    y.mul_(w).add_(x).exp_()  # y = exp(2xw + x)
    y.sum().backward()
    xv, wv = x.detach().numpy(), w.detach().numpy()
    e = np.exp(2 * xv * wv + xv)
    np.testing.assert_allclose(x.grad.numpy(), e * (2 * wv + 1), rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), e * 2 * xv, rtol=1e-5)


def test_inplace_with_itself_as_other_is_detected():
    # PyTorch saves ``other`` before writing, so y.mul_(y) invalidates it: same error here.
    y = tg.tensor([1.0, 2.0], requires_grad=True) * 2
    y.mul_(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_on_view_of_nonleaf():
    x = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    y[1:3].mul_(10)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    (y * tg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1, 20, 30, 4])


def test_setitem_style_write_into_view_takes_values_gradient():
    x = tg.zeros(4)
    w = tg.tensor([5.0, 6.0], requires_grad=True)
    x[1:3].copy_(w * 2)
    assert x.requires_grad and not x.is_leaf
    (x * tg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [4, 6])


def test_other_views_see_rewritten_history():
    x = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    base = x * 1
    a, b = base[:2], base.view(2, 2)
    a.mul_(3)
    (b.sum() + a.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [6, 6, 1, 1])


def test_custom_function_exp():
    x = tg.tensor([0.0, 1.0], dtype=tg.float64, requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]))


def test_custom_function_wrong_gradient_count():
    class Bad(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g

    a, b = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        Bad.apply(a, b).sum().backward()


def test_custom_function_ctx_features():
    class F(Function):
        @staticmethod
        def forward(ctx, x, scale, y):
            ctx.scale = scale
            ctx.save_for_backward(x, None)
            idx = (x > 0)
            ctx.mark_non_differentiable(idx)
            return x * scale + y, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            x, none = ctx.saved_tensors
            assert none is None and ctx.needs_input_grad == (True, False, False)
            return g * ctx.scale, None, None

    x = tg.tensor([-1.0, 2.0], requires_grad=True)
    out, idx = F.apply(x, 3.0, tg.ones(2))
    assert not idx.requires_grad
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3])


def test_layout_rules_new_grad_matches_param_strides():
    p = tg.zeros(3, 4).t().requires_grad_()  # a dense, transposed leaf
    assert p.stride() == (1, 4)
    (p * 2).sum().backward()
    assert p.grad.stride() == p.stride()
    g0 = p.grad
    (p * 3).sum().backward()
    assert p.grad is g0 and p.grad.stride() == (1, 4)  # rule 3: in place
    np.testing.assert_allclose(p.grad.numpy(), 5.0)


def test_layout_rule_create_graph_replaces_grad():
    p = tg.ones(2, requires_grad=True)
    (p * 2).sum().backward()
    g0 = p.grad
    (p * p).sum().backward(create_graph=True)
    assert p.grad is not g0 and p.grad.requires_grad  # rule 4: .grad + new, recorded
    np.testing.assert_allclose(p.grad.detach().numpy(), [4, 4])


def test_manual_layout_preserved():
    p = tg.zeros(3, 4, requires_grad=True)
    p.grad = tg.zeros(4, 3).t()
    (p * 2).sum().backward()
    assert p.grad.stride() == (1, 3)


def test_hook_holding_gradient_prevents_aliasing():
    p = tg.ones(3, requires_grad=True)
    kept = []
    p.register_hook(lambda g: kept.append(g))
    (p * 2).sum().backward()
    (p * 2).sum().backward()
    np.testing.assert_allclose(kept[0].numpy(), [2, 2, 2])  # not mutated by accumulation
    np.testing.assert_allclose(p.grad.numpy(), [4, 4, 4])


def test_two_threads_backward_on_separate_graphs():
    results = {}

    def work(i):
        x = tg.full((50,), float(i), requires_grad=True)
        for _ in range(20):
            (x * x * i).sum().backward()
        results[i] = x.grad.numpy().copy()

    threads = [threading.Thread(target=work, args=(i,)) for i in (1, 2, 3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i in (1, 2, 3):
        np.testing.assert_allclose(results[i], 20 * 2 * i * i)


def test_torch_never_imported_after_cpu_training():
    code = ("import sys, runpy; sys.argv=['x','--device','cpu','--steps','5'];"
            "runpy.run_path('examples/train_mlp.py', run_name='__main__');"
            "assert 'torch' not in sys.modules, 'torch was imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_fresh_leaf_gradient_is_adopted_without_a_copy():
    # Rule 1 with nothing else holding the new gradient: .grad is that very memory.
    produced = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            out = g * 3
            produced["ptr"] = out.data_ptr()  # an int: no reference kept
            return out

    x = tg.ones(4, 5, requires_grad=True)
    Scale.apply(x).sum().backward()
    assert x.grad.data_ptr() == produced["ptr"]
    np.testing.assert_allclose(x.grad.numpy(), 3.0)


def _keeping(hold):
    """A Function computing x * 1 whose backward returns 2g and keeps ``hold(2g)`` alive in
    the list returned with it: what a backward that holds on to its gradient looks like."""
    kept = []

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            out = g * 2
            kept.append(hold(out))
            return out

    return Keep, kept


def test_gradient_shared_with_a_detached_alias_is_copied(device):
    Keep, kept = _keeping(lambda out: out.detach())  # another tensor on the same array
    x = tg.ones(3, device=device, requires_grad=True)
    Keep.apply(x).sum().backward()
    Keep.apply(x).sum().backward()
    assert x.grad.data_ptr() != kept[0].data_ptr()
    np.testing.assert_allclose(kept[0].cpu().numpy(), 2.0)  # not mutated by accumulation
    np.testing.assert_allclose(x.grad.cpu().numpy(), 4.0)


def test_node_pre_and_post_hooks():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    pre = y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 10,))
    post = y.grad_fn.register_hook(
        lambda grad_inputs, grad_outputs: seen.append((grad_inputs[0].numpy().copy(),
                                                       grad_outputs[0].numpy().copy())))
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), [30, 30])  # the pre-hook scaled the input
    np.testing.assert_allclose(seen[0][1], [10, 10])
    np.testing.assert_allclose(seen[0][0], [30, 30])
    pre.remove()
    post.remove()
    x.grad = None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3])
    assert len(seen) == 1


# -- the chain path: rules run on arrays along nodes that feed only each other -------------------

def _chain_of_squares(x):
    # x * x (two edges to one node) between one-edge ops: the whole backward is one chain
    y = x
    for _ in range(3):
        y = (y * 0.9 + 0.1).tanh()
        y = y * y
    return y.sum()


def _chain_of_squares_f64(x: np.ndarray) -> float:
    y = x
    for _ in range(3):
        y = np.tanh(y * 0.9 + 0.1)
        y = y * y
    return float(y.sum())


def test_chain_backward_matches_finite_differences(device):
    x0 = np.random.default_rng(0).standard_normal(5)
    x = tg.tensor(x0, dtype=tg.float64, device=device, requires_grad=True)
    _chain_of_squares(x).backward()
    eps, fd = 1e-6, []
    for i in range(5):
        e = np.zeros(5)
        e[i] = eps
        fd.append((_chain_of_squares_f64(x0 + e) - _chain_of_squares_f64(x0 - e)) / (2 * eps))
    np.testing.assert_allclose(x.grad.cpu().numpy(), fd, rtol=1e-6, atol=1e-9)


def test_chain_stops_at_hooks_and_shared_nodes():
    # a hook, a retained grad or a second consumer on an intermediate must each still see (or
    # receive) the right gradient when the rest of the backward runs on arrays
    seen = []
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    a = x * 3.0
    b = a.tanh()
    b.register_hook(lambda g: seen.append(g.numpy().copy()))
    c = b * b
    c.retain_grad()
    d = c + 1.0
    out = (d * 2.0).sum() + a.sum()  # a feeds two nodes
    out.backward()
    tb = np.tanh(3 * np.array([0.5, -1.0, 2.0]))
    np.testing.assert_allclose(c.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(seen[0], 4 * tb)
    np.testing.assert_allclose(x.grad.numpy(), 3 * (4 * tb * (1 - tb ** 2) + 1))


def test_square_of_a_tensor_reached_from_two_paths():
    # y * y where y also feeds another op: y's node waits for all three edges
    x = tg.tensor([1.5, -2.0], dtype=tg.float64, requires_grad=True)
    y = x.exp()
    out = (y * y).sum() + (y * 5.0).sum()
    out.backward()
    ex = np.exp([1.5, -2.0])
    np.testing.assert_allclose(x.grad.numpy(), (2 * ex + 5) * ex)


def test_square_saves_its_input_once_but_hooks_see_each_save():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * y
    assert z.grad_fn._saved[0] is z.grad_fn._saved[1]  # one record for both operands
    packed = []
    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        w = y * y
    assert len(packed) == 2  # as in PyTorch: pack runs for each saved operand
    (z.sum() + w.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [16.0, 32.0])


def test_modified_saved_output_names_its_node():
    x = tg.ones(3, requires_grad=True)
    y = (x * 2).tanh()  # tanh saves its output
    z = y * 3
    y.mul_(2)
    with pytest.raises(RuntimeError, match="which is output 0 of Tanh,"):
        z.sum().backward()


def test_modes_in_one_thread_do_not_leak_into_another():
    # the per-op path skips its thread's state while no thread has observers, saved-tensor
    # hooks or inference mode on: each must still apply in its own thread only
    started, release, seen = threading.Event(), threading.Event(), {}

    def packer(key):
        def pack(t):
            seen[key] = True
            return t
        return pack

    def worker():
        with tg.inference_mode(), tg.autograd.graph.saved_tensors_hooks(packer("packed"),
                                                                        lambda t: t):
            started.set()
            release.wait(5)
            seen["worker_inference"] = tg.ones(2).is_inference()

    th = threading.Thread(target=worker)
    th.start()
    started.wait(5)
    try:
        x = tg.ones(2, requires_grad=True)
        y = x.exp()  # saves its output: the worker's pack hook must not run for it
        assert not y.is_inference() and "packed" not in seen
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 1.0]))
    finally:
        release.set()
        th.join(5)
    assert seen["worker_inference"] is True
    x = tg.ones(2, requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(packer("mine"), lambda t: t):
        (x.exp()).sum().backward()
    assert "mine" in seen  # and this thread's own hooks run again once it sets them


# Note [Gradient stealing] in engine.py: the reference counts it relies on, each case run on
# every supported interpreter (CI runs this file under Python 3.11 and 3.12).

def test_stealing_counts_interpreter_is_one_they_were_proved_on():
    from tritongrad.autograd import engine
    assert engine._STEALING == (sys.version_info[:2] in ((3, 11), (3, 12)))


def test_stealing_counts_pass_through_gradient_reaches_two_leaves_unshared():
    # add's rule hands one gradient to both inputs: at most one leaf may adopt it
    a = tg.ones(3, requires_grad=True)
    b = tg.ones(3, requires_grad=True)
    ((a + b) * 2).backward(tg.ones(3))
    assert a.grad.data_ptr() != b.grad.data_ptr()
    ((a + b) * 2).backward(tg.ones(3))
    np.testing.assert_allclose(a.grad.numpy(), 4.0)
    np.testing.assert_allclose(b.grad.numpy(), 4.0)


def test_stealing_counts_numpy_view_kept_by_backward_blocks_adoption():
    Keep, kept = _keeping(lambda out: out.numpy())  # the array itself or a NumPy view of it
    x = tg.ones(3, requires_grad=True)
    Keep.apply(x).sum().backward()
    Keep.apply(x).sum().backward()
    np.testing.assert_allclose(kept[0], 2.0)  # not mutated by the second accumulation
    np.testing.assert_allclose(x.grad.numpy(), 4.0)


@pytest.mark.parametrize("keep_base", [False, True])
def test_stealing_counts_view_gradient_adopted_only_when_its_base_is_unheld(keep_base):
    produced, kept = {}, []

    class RowOf(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            big = g.reshape(1, 4) * 3  # owns its memory
            out = big[0]               # a view of it, held through out._base only
            produced["ptr"] = out.data_ptr()
            if keep_base:
                kept.append(big)
            return out

    x = tg.ones(4, requires_grad=True)
    RowOf.apply(x).sum().backward()
    assert (x.grad.data_ptr() == produced["ptr"]) is not keep_base
    RowOf.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6.0)
    if keep_base:
        np.testing.assert_allclose(kept[0].numpy(), 3.0)  # not mutated by accumulation


def test_setitem_on_a_clone_gives_the_leaf_its_gradient(device):
    # CopySlices' gradient reaches x as a strided view from the CPU backend's as_strided
    # (its NumPy base is no ndarray): _stealable must answer, not crash, and accumulation
    # must not write through memory shared with anything else
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, device=device, requires_grad=True)
    y = x.clone()
    y[0] = 0.0
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [0.0, 2.0, 2.0])
    y = x.clone()
    y[1:] = 5.0
    (y * 3).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [3.0, 2.0, 2.0])


@pytest.mark.parametrize("keep", [False, True])
def test_stealing_never_adopts_a_view_of_an_unknown_owner(keep):
    # a gradient that is an as_strided view: other views of the same memory may exist behind
    # the backend's wrapper, which the counts cannot see, so it is copied either way
    produced, kept = {}, []

    class Strided(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            big = (g.reshape(1, 4) * 3).expand(2, 4).contiguous()
            out = big.as_strided((4,), (1,), 4)  # the second row, through as_strided
            produced["ptr"] = out.data_ptr()
            if keep:
                kept.append(big.as_strided((4,), (1,), 4))  # another view of that memory
            return out

    x = tg.ones(4, requires_grad=True)
    Strided.apply(x).sum().backward()
    assert x.grad.data_ptr() != produced["ptr"]
    Strided.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6.0)
    if keep:
        np.testing.assert_allclose(kept[0].numpy(), 3.0)  # not mutated by accumulation


def test_hook_added_during_backward_takes_the_full_path():
    # _hooked is read per node when it runs, so a hook registered by an earlier node's hook
    # (after the task chose its fast path) still runs
    seen = []
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = a * 3

    def add_hook_on_a(g):
        a.register_hook(lambda ga: seen.append(ga.numpy().copy()))

    b.register_hook(add_hook_on_a)
    b.sum().backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def test_stealing_counts_linear_layer_gradients_are_all_adopted(monkeypatch):
    # the case stealing is for: every parameter's first gradient (mm's in the weight's layout,
    # a sum's for the bias) becomes .grad with no copy
    from tritongrad.autograd import engine
    nn = tg.nn
    copies = []
    clone = engine._clone_obeying_layout
    monkeypatch.setattr(engine, "_clone_obeying_layout",
                        lambda g, var: (copies.append(tuple(var.shape)), clone(g, var))[1])
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    nn.CrossEntropyLoss()(model(tg.randn(4, 6)), tg.tensor([0, 2, 1, 0])).backward()
    assert all(p.grad is not None for p in model.parameters())
    assert copies == []
