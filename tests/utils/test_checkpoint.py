"""Activation checkpointing: gradients equal the un-checkpointed ones (first and second
order, with dropout's random masks replayed), the region's activations are not kept between
forward and backward, and what cannot be honoured raises."""

import gc
import weakref

import numpy as np
import pytest
from tritongrad.utils.checkpoint import (CheckpointError, checkpoint, checkpoint_sequential,
                                         set_checkpoint_early_stop)

import tritongrad as tg
from tritongrad import nn

# (most calls here leave use_reentrant out; test_use_reentrant_not_passed_warns checks the
# warning that gives)
pytestmark = pytest.mark.filterwarnings("ignore:.*use_reentrant parameter should be passed")


def make_block(seed=0):
    tg.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.3), nn.Linear(16, 16),
                         nn.Tanh(), nn.Linear(16, 4)).double()


def grads(model, x, run):
    """(loss, x.grad, parameter grads) with ``run(model, x)`` computing the block's output."""
    model.zero_grad()
    x.grad = None
    tg.manual_seed(42)  # the dropout masks
    out = run(model, x)
    loss = (out * out).sum() + out.exp().sum()
    loss.backward()
    return (loss.item(), x.grad.cpu().numpy().copy(),
            [p.grad.cpu().numpy().copy() for p in model.parameters()])


def assert_same(a, b):
    assert a[0] == pytest.approx(b[0], rel=1e-14)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-13, atol=1e-15)
    for ga, gb in zip(a[2], b[2]):
        np.testing.assert_allclose(ga, gb, rtol=1e-13, atol=1e-15)


def test_gradients_equal_the_uncheckpointed_ones_with_dropout():
    model = make_block()
    x = tg.randn(5, 6, dtype=tg.float64, requires_grad=True)
    plain = grads(model, x, lambda m, t: m(t))
    ckpt = grads(model, x, lambda m, t: checkpoint(m, t, use_reentrant=False))
    assert_same(plain, ckpt)


def test_cuda_dropout_masks_are_replayed():
    # CUDA draws come from the device's own generator (drawn on the device): checkpoint saves
    # and restores it too, as PyTorch's preserve_rng_state does for the inputs' devices
    model = make_block().to("cuda")
    x = tg.randn(5, 6, dtype=tg.float64, device="cuda", requires_grad=True)
    plain = grads(model, x, lambda m, t: m(t))
    ckpt = grads(model, x, lambda m, t: checkpoint(m, t, use_reentrant=False))
    assert_same(plain, ckpt)
    other = grads(model, x, lambda m, t: checkpoint(m, t, preserve_rng_state=False))
    assert not np.allclose(plain[1], other[1])


def test_without_preserve_rng_state_the_masks_differ():
    """The negative control: the replayed RNG state is what makes the gradients equal."""
    model = make_block()
    x = tg.randn(5, 6, dtype=tg.float64, requires_grad=True)
    plain = grads(model, x, lambda m, t: m(t))
    other = grads(model, x, lambda m, t: checkpoint(m, t, preserve_rng_state=False))
    assert not np.allclose(plain[1], other[1])


def test_the_global_generator_continues_as_without_checkpointing():
    model = make_block()
    x = tg.randn(3, 6, dtype=tg.float64, requires_grad=True)
    grads(model, x, lambda m, t: m(t))
    after_plain = tg.rand(3).tolist()
    grads(model, x, lambda m, t: checkpoint(m, t))
    assert tg.rand(3).tolist() == after_plain


def test_activations_of_the_region_are_not_kept_until_backward():
    lin1, lin2 = nn.Linear(8, 64).double(), nn.Linear(64, 1).double()
    x = tg.randn(32, 8, dtype=tg.float64, requires_grad=True)
    refs = []

    def region(t):
        h = lin1(t)
        a = h.tanh()          # tanh saves its output
        b = a * h             # mul saves both inputs
        refs.extend(weakref.ref(v._data) for v in (h, a, b))
        return lin2(b).sum()

    def alive_bytes(run):
        refs.clear()
        y = run()
        gc.collect()
        held = sum(r().nbytes for r in refs if r() is not None)
        y.backward()
        return held

    plain = alive_bytes(lambda: region(x))
    ckpt = alive_bytes(lambda: checkpoint(region, x))
    assert plain >= 2 * 32 * 64 * 8  # h and a at least, until backward
    assert ckpt == 0


def test_only_handles_are_packed_and_recomputation_happens_once():
    calls = []
    w = tg.randn(4, 4, dtype=tg.float64, requires_grad=True)

    def region(t):
        calls.append(1)
        return (t @ w).sin().cos().sum()

    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    y = checkpoint(region, x)
    assert len(calls) == 1
    y.backward()
    assert len(calls) == 2  # one recomputation for all the saved tensors
    gx = x.grad.numpy().copy()
    x.grad = None
    region(x).backward()
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-14)


def test_retain_graph_backward_twice_recomputes_again():
    x = tg.randn(4, dtype=tg.float64, requires_grad=True)
    y = checkpoint(lambda t: (t.exp() * t).sum(), x)
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first, rtol=1e-14)


def test_second_order_gradients_through_a_checkpoint():
    def f(t):
        return (t.sin() * t * t).sum()

    x = tg.randn(5, dtype=tg.float64, requires_grad=True)
    (g,) = tg.autograd.grad(f(x), x, create_graph=True)
    (gg,) = tg.autograd.grad(g.sum(), x)
    (g2,) = tg.autograd.grad(checkpoint(f, x), x, create_graph=True)
    (gg2,) = tg.autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(g2.detach().numpy(), g.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(gg2.numpy(), gg.numpy(), rtol=1e-13)


def test_keyword_arguments_and_no_grad():
    x = tg.randn(3, dtype=tg.float64, requires_grad=True)
    y = checkpoint(lambda t, scale=1.0: (t * scale).pow(2).sum(), x, scale=3.0)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 18 * x.detach().numpy(), rtol=1e-14)
    with tg.no_grad():
        assert checkpoint(lambda t: t * 2, x).requires_grad is False


def test_a_recomputation_that_saves_other_tensors_raises():
    state = {"n": 0}

    def changes(t):
        state["n"] += 1
        return t.exp().sum() if state["n"] == 1 else t.exp().exp().sum()

    # (a full recomputation: one that stops early never reaches the extra tensors)
    y = checkpoint(changes, tg.randn(3, dtype=tg.float64, requires_grad=True),
                   early_stop=False)
    with pytest.raises(CheckpointError, match="trying to save more tensors during "
                                              "recomputation than during the original"):
        y.backward()


def test_early_stop_skips_the_work_after_the_last_saved_tensor():
    tail = [0]

    def fn(t):
        y = t.exp()  # the last op that saves a tensor
        tail[0] += 1
        return y.sum()

    def runs(**kwargs):
        tail[0] = 0
        x = tg.randn(3, dtype=tg.float64, requires_grad=True)
        checkpoint(fn, x, **kwargs).backward()
        np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()))
        return tail[0]

    assert runs() == 1 and runs(early_stop=True) == 1
    assert runs(early_stop=False) == 2
    with set_checkpoint_early_stop(False):  # the context manager wins over the argument
        assert runs(early_stop=True) == 2
    with set_checkpoint_early_stop(True):
        assert runs(early_stop=False) == 1


def test_a_recomputation_with_other_shapes_raises_unless_unchecked():
    def make(check):
        state = {"n": 0}

        def changes(t):
            state["n"] += 1
            u = t if state["n"] == 1 else t[:2]
            return u.exp().sum()

        return checkpoint(changes, tg.randn(3, dtype=tg.float64, requires_grad=True),
                          determinism_check=check)

    with pytest.raises(CheckpointError, match=r"tensors have different metadata(.|\n)*"
                                              r"recomputed metadata: \{'shape': "
                                              r"tritongrad.Size\(\[2\]\)"):
        make("default").backward()
    with pytest.raises(Exception) as e:  # unchecked: the wrong shape fails in backward itself
        make("none").backward()
    assert not isinstance(e.value, CheckpointError)


def test_unknown_determinism_check_raises():
    x = tg.randn(2, requires_grad=True)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda t: t * 2, x, determinism_check="strict")


def test_checkpoint_sequential_matches_the_plain_model():
    model = make_block(1)
    x = tg.randn(4, 6, dtype=tg.float64, requires_grad=True)
    plain = grads(model, x, lambda m, t: m(t))
    for segments in (1, 2, 3):
        seq = grads(model, x, lambda m, t, k=segments: checkpoint_sequential(m, k, t))
        assert_same(plain, seq)


@pytest.mark.filterwarnings("error")
def test_use_reentrant_not_passed_warns():
    x = tg.randn(2, requires_grad=True)
    checkpoint(lambda t: t * 2, x, use_reentrant=False)  # passed: no warning (an error here)
    seq = [nn.Linear(2, 2), nn.Linear(2, 2)]
    checkpoint_sequential(seq, 2, x, use_reentrant=False)
    for call in (lambda: checkpoint(lambda t: t * 2, x),
                 lambda: checkpoint_sequential(seq, 2, x)):
        with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed "
                                             "explicitly"):
            call()
