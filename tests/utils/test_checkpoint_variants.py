"""Checkpoint's two variants as PyTorch defines them: the reentrant one (a Function that
recomputes and backpropagates in its backward), and the non-reentrant one's per-backward
recomputation (GraphExecGroup, tensors handed out once), nesting, determinism checks (with
the debug op logs), autocast replay and context_fn; plus EventList._populate_cpu_children."""

import contextlib
import weakref

import numpy as np
import pytest
from tritongrad.autograd.profiler_util import EventList, FunctionEvent
from tritongrad.utils.checkpoint import (
    CheckpointError,
    GraphExecGroup,
    checkpoint,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
)

import tritongrad as tg
from tritongrad import nn


def f64(*shape):
    return tg.randn(*shape, dtype=tg.float64, requires_grad=True)


# -- the reentrant variant ---------------------------------------------------------------------

def test_reentrant_gradients_equal_the_plain_ones_with_dropout():
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Dropout(0.4), nn.Tanh(), nn.Linear(8, 3)).double()
    x = f64(4, 5)

    def grads(run):
        model.zero_grad()
        x.grad = None
        tg.manual_seed(7)
        (run(x) ** 2).sum().backward()
        return [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]

    plain = grads(model)
    ckpt = grads(lambda t: checkpoint(model, t, use_reentrant=True))
    for a, b in zip(plain, ckpt):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_reentrant_runs_the_whole_function_again_and_only_with_backward():
    calls = []

    def fn(t):
        calls.append(1)
        return t.exp() * 2

    x = f64(3)
    y = checkpoint(fn, x, use_reentrant=True)
    assert y.requires_grad and len(calls) == 1
    with pytest.raises(RuntimeError, match="torch.utils.checkpoint is incompatible with "
                                           r"\.grad\(\) or passing an `inputs` parameter"):
        tg.autograd.grad(y.sum(), x)
    # a refused backward leaves nothing behind: a plain backward works afterwards
    checkpoint(fn, x, use_reentrant=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-14)
    assert tg.autograd._is_checkpoint_valid()  # outside backward


def test_reentrant_refuses_what_it_cannot_do():
    x = f64(2)

    def detached(t):
        with tg.no_grad():
            return t * 2

    out = checkpoint(detached, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="none of output has requires_grad=True"):
        (out + x).sum().backward()
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale: t * scale, x, scale=2, use_reentrant=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t * 2, x, use_reentrant=True, debug=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(lambda t: t * 2, tg.ones(2), use_reentrant=True)


# -- the non-reentrant variant -------------------------------------------------------------------

def test_a_recomputed_tensor_is_handed_out_once():
    class Twice(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 3

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors  # noqa: B018 - the first unpack
            with pytest.raises(CheckpointError, match="Unpack is being triggered for a tensor "
                                                      "that was already unpacked once"):
                ctx.saved_tensors  # noqa: B018
            return g * 3

    x = f64(2)
    checkpoint(lambda t: Twice.apply(t * t), x, use_reentrant=False).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy(), rtol=1e-14)


def run_two_grads(group: bool) -> int:
    calls = [0]

    def fn(x):
        calls[0] += 1
        y = x.sin().cos()
        return y, y.sin().cos()

    x = f64(3)
    y, z = checkpoint(fn, x, use_reentrant=False)
    with GraphExecGroup() if group else contextlib.nullcontext():
        (gy,) = tg.autograd.grad(z, (y,), grad_outputs=(tg.ones(3, dtype=tg.float64),))
        (gx,) = tg.autograd.grad(y, (x,), grad_outputs=(gy,))
    xv = x.detach().numpy()
    yv = np.cos(np.sin(xv))
    ref = -np.sin(np.sin(yv)) * np.cos(yv) * -np.sin(np.sin(xv)) * np.cos(xv)
    np.testing.assert_allclose(gx.numpy(), ref, rtol=1e-13)
    return calls[0]


def test_graph_exec_group_recomputes_once_for_several_backward_calls():
    assert run_two_grads(group=False) == 3  # a recomputation per backward call
    assert run_two_grads(group=True) == 2
    x = f64(3)
    out = checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)
    with GraphExecGroup():
        out.sum().backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="Performing two backward calls that overlap"):
            out.sum().backward()
        with pytest.raises(RuntimeError, match="GraphExecGroup contexts cannot be nested"), \
                GraphExecGroup():
            pass


def nondeterministic(first, later):
    calls = [0]

    def fn(x):
        calls[0] += 1
        return first(x) if calls[0] == 1 else later(x)
    return fn


def saves_two(x):
    return x.sin().exp()       # sin saves x, exp its output


def saves_three(x):
    return x.sin().exp().sin()


def saves_two_other_shape(x):
    return x[:1].sin().exp()


def test_determinism_checks():
    x = f64(2)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        checkpoint(nondeterministic(saves_three, saves_two), x, use_reentrant=False).sum() \
            .backward()
    with set_checkpoint_early_stop(False):
        y = checkpoint(nondeterministic(saves_two, saves_three), x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="trying to save more tensors during "
                                              "recomputation than during the original"):
        y.sum().backward()
    # stopping early, the recomputation never reaches the extra tensor: right gradients
    x.grad = None
    checkpoint(nondeterministic(saves_two, saves_three), x, use_reentrant=False).sum() \
        .backward()
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(np.sin(xv)) * np.cos(xv), rtol=1e-14)
    with pytest.raises(CheckpointError, match=r"tensors have different metadata(.|\n)*"
                                              r"tensor at position 0"):
        checkpoint(nondeterministic(saves_two, saves_two_other_shape), x,
                   use_reentrant=False).sum().backward()
    # unchecked, the other values go into backward (broadcast here): a wrong gradient
    x.grad = None
    checkpoint(nondeterministic(saves_two, saves_two_other_shape), x, use_reentrant=False,
               determinism_check="none").sum().backward()
    assert not np.allclose(x.grad.numpy(), np.exp(np.sin(xv)) * np.cos(xv))


def test_debug_mode_logs_the_ops_of_both_runs():
    x = f64(2)
    with pytest.raises(CheckpointError, match="You are seeing this error because you passed "
                                              "`debug=True`") as e:
        checkpoint(nondeterministic(saves_two, saves_two_other_shape), x, use_reentrant=False,
                   debug=True).sum().backward()
    msg = str(e.value)
    fwd, recompute = msg.split("Operations executed during recomputation:")
    assert "sin(tritongrad.float64[2])" in fwd.split("during the original forward:")[1]
    assert "sin(tritongrad.float64[1])" in recompute
    assert "saves_two_other_shape" in msg  # the stack of the op
    with set_checkpoint_debug_enabled(True), pytest.raises(CheckpointError, match="debug=True"):
        checkpoint(nondeterministic(saves_two, saves_two_other_shape), x,
                   use_reentrant=False).sum().backward()
    with set_checkpoint_debug_enabled(False), \
            pytest.raises(CheckpointError, match="Recomputed values for the following tensors"):
        checkpoint(nondeterministic(saves_two, saves_two_other_shape), x, use_reentrant=False,
                   debug=True).sum().backward()


def grad_of(fn):
    def wrapper(x):
        (g,) = tg.autograd.grad(fn(x).sum(), (x,), create_graph=True)
        return g
    return wrapper


def ckpt(fn):
    return lambda x: checkpoint(fn, x, use_reentrant=False)


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoints_give_higher_order_gradients_and_free_their_graph(early_stop):
    def f(x):
        return x.sin().exp().sin()

    def g(x):
        return x.cos().sin().exp()

    def nested(x):
        return ckpt(g)(ckpt(f)(x))

    x = f64(3)
    with set_checkpoint_early_stop(early_stop):
        expected = grad_of(grad_of(lambda t: g(f(t))))(x)
        for fn in (grad_of(grad_of(ckpt(nested))), grad_of(ckpt(grad_of(ckpt(nested))))):
            np.testing.assert_allclose(fn(x).detach().numpy(), expected.detach().numpy(),
                                       rtol=1e-12)

        def alive_after(fn):
            out = fn(x)
            refs, seen, todo = [], set(), [out.grad_fn]
            while todo:
                node = todo.pop()
                if node is None or node in seen:
                    continue
                seen.add(node)
                refs.append(weakref.ref(node))
                todo.extend(n for n, _ in node.next_functions)
            del out, seen, todo, node
            return [r() for r in refs if r() is not None and r().name() !=
                    "torch::autograd::AccumulateGrad"]  # (x's own, alive with x)

        # no reference cycle keeps the graph of the recomputation alive
        assert alive_after(grad_of(ckpt(nested))) == []
        assert alive_after(grad_of(ckpt(grad_of(ckpt(nested))))) == []


def test_recomputation_runs_under_the_forward_autocast_state():
    lin = nn.Linear(4, 4)
    x = tg.randn(3, 4, requires_grad=True)
    dtypes = []

    def fn(t):
        y = lin(t)
        dtypes.append(y.dtype)
        return y.relu()

    with tg.autocast("cpu", dtype=tg.bfloat16):
        out = checkpoint(fn, x, use_reentrant=False, early_stop=False)
    out.float().sum().backward()  # outside the region: the recomputation re-enters it
    assert dtypes == [tg.bfloat16, tg.bfloat16]
    assert x.grad.dtype == tg.float32


def test_context_fn_wraps_forward_and_each_recomputation():
    entered = []

    class Ctx:
        def __init__(self, label):
            self.label = label

        def __enter__(self):
            entered.append(self.label)

        def __exit__(self, *exc):
            return False

    x = f64(2)
    y = checkpoint(lambda t: t.exp(), x, use_reentrant=False,
                   context_fn=lambda: (Ctx("forward"), Ctx("recompute")))
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert entered == ["forward", "recompute", "recompute"]


# -- the profiler's event tree -------------------------------------------------------------------

def test_populate_cpu_children_nests_by_interval_per_thread():
    spans = [(1, 0, 1), (1, 1, 2), (0, 0, 2), (0, 1, 2), (0, 1, 3)]  # (thread, start, end)
    events = EventList(FunctionEvent(id=i + 1, name=f"e{i + 1}", thread=t, start_us=s, end_us=e)
                       for i, (t, s, e) in enumerate(spans))
    events._populate_cpu_children()
    # [1, 3) pushes [0, 2) out (partial overlap: no nesting); [1, 2) is inside [1, 3)
    assert [[c.id for c in evt.cpu_children] for evt in events] == [[], [], [], [], [4]]
    assert events[3].cpu_parent is events[4] and events[2].cpu_parent is None
