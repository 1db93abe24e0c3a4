"""The recurrent layer's loop as one op (autograd/ops/recurrent.py): outputs and gradients equal
the step-by-step recording from the cell functions (float64), gradcheck and gradgradcheck
(create_graph recomputes the loop in Tensor ops), forwards and backwards in time, with and
without b_hh, only some outputs used, both devices, and nn.LSTM/GRU/RNN record one node per
layer and direction."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host
from tritongrad.autograd.ops.recurrent import rnn_layer
from tritongrad.nn.rnn import _gru_step, _lstm_step

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
L, N, H = 4, 3, 5


def _stepwise(mode, xs, h, c, w, b, reverse):
    """The same recurrence recorded op by op (what nn.rnn records without the fused op)."""
    ys = [None] * xs.shape[0]
    for t in (range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])):
        rec = h @ w.t() + (b if b is not None else 0)
        if mode == "LSTM":
            h, c = _lstm_step(xs[t] + rec, c, H)
        elif mode == "GRU":
            h = _gru_step(xs[t], rec, h, H)
        else:
            pre = xs[t] + rec
            h = pre.tanh() if mode == "RNN_TANH" else pre.relu()
        ys[t] = h
    return (tg.stack(ys), h, c) if mode == "LSTM" else (tg.stack(ys), h)


def _inputs(mode, bias, dtype=tg.float64, device="cpu", seed=0):
    rng = np.random.default_rng(seed)

    def t(*shape):
        return tg.tensor(rng.standard_normal(shape), dtype=dtype, device=device,
                         requires_grad=True)
    g = GATES[mode]
    return (t(L, N, g * H), t(N, H), t(N, H) if mode == "LSTM" else None, t(g * H, H),
            t(g * H) if bias else None)


def _present(args):
    return tuple(a for a in args if a is not None)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mode", sorted(GATES))
def test_matches_the_stepwise_recording(mode, bias, reverse):
    args = _inputs(mode, bias)
    fused = rnn_layer(mode, *args, reverse=reverse)
    ref = _stepwise(mode, *args, reverse=reverse)
    rng = np.random.default_rng(1)
    weights = [tg.tensor(rng.standard_normal(o.shape)) for o in ref]
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-12, atol=1e-12)
    ins = _present(args)
    g1 = tg.autograd.grad(sum((o * w).sum() for o, w in zip(fused, weights)), ins)
    g2 = tg.autograd.grad(sum((o * w).sum() for o, w in zip(ref, weights)), ins)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-10, atol=1e-12)
    assert type(fused[0].grad_fn).__name__ == "RnnLayerBackward0"


@pytest.mark.parametrize("mode", sorted(GATES))
def test_gradcheck_and_gradgradcheck(mode):
    args = _inputs(mode, True)
    lstm = mode == "LSTM"

    def f(xs, h0, *rest):
        c0 = rest[0] if lstm else None
        return rnn_layer(mode, xs, h0, c0, rest[-2], rest[-1], reverse=True)
    assert tg.autograd.gradcheck(f, _present(args))
    assert tg.autograd.gradgradcheck(f, _present(args))


@pytest.mark.parametrize("used", ["ys", "h", "c"])
def test_only_some_outputs_reach_the_loss(used):
    args = _inputs("LSTM", True)
    ys, h, c = rnn_layer("LSTM", *args)
    rys, rh, rc = _stepwise("LSTM", *args, reverse=False)
    pick = {"ys": (ys, rys), "h": (h, rh), "c": (c, rc)}[used]
    ins = _present(args)
    g1 = tg.autograd.grad(pick[0].sum(), ins, allow_unused=True)
    g2 = tg.autograd.grad(pick[1].sum(), ins, allow_unused=True)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-10, atol=1e-12)


def test_an_empty_sequence_keeps_the_state():
    xs = tg.zeros(0, N, 4 * H, requires_grad=True)
    h0, c0 = tg.randn(N, H, requires_grad=True), tg.randn(N, H)
    ys, h, c = rnn_layer("LSTM", xs, h0, c0, tg.randn(4 * H, H), None)
    assert ys.shape == (0, N, H)
    assert tg.equal(h, h0) and tg.equal(c, c0)
    h.sum().backward()
    np.testing.assert_array_equal(host(h0.grad), np.ones((N, H)))


def test_float32_on_both_devices(device):
    args64 = _inputs("GRU", True)
    args = tuple(None if a is None else a.detach().float().to(device).requires_grad_()
                 for a in args64)
    ys, h = rnn_layer("GRU", *args)
    ref, rh = _stepwise("GRU", *args64, reverse=False)
    np.testing.assert_allclose(host(ys), host(ref), rtol=1e-5, atol=1e-5)
    (ys.sum() + h.sum()).backward()
    (ref.sum() + rh.sum()).backward()
    for a, b in zip(_present(args), _present(args64)):
        np.testing.assert_allclose(host(a.grad), host(b.grad), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls", [tg.nn.LSTM, tg.nn.GRU, tg.nn.RNN])
def test_modules_record_one_node_per_layer_and_direction(cls):
    m = cls(3, H, num_layers=2, bidirectional=True)
    out, _ = m(tg.randn(L, N, 3))
    seen, stack = set(), [out.grad_fn]
    count = 0
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        count += type(n).__name__ == "RnnLayerBackward0"
        stack.extend(nx for nx, _ in n.next_functions)
    assert count == 4
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_modified_weight_is_caught_at_backward():
    args = _inputs("RNN_TANH", True)
    ys, _ = rnn_layer("RNN_TANH", *args)
    with tg.no_grad():
        args[3].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ys.sum().backward()


@pytest.mark.parametrize("xs_grad", [True, False])
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_forward_in_time_reuses_its_stacks_safely(mode, xs_grad):
    # forwards in time the rule reads W_hh's product from the states stacked by the forward,
    # and an LSTM's or Elman RNN's dgates from the stacked dxs: gradients as the stepwise
    # recording's whether or not xs wants one, and ys changed in place after the forward (it
    # is a copy, not those states) leaves W_hh's gradient alone
    args = list(_inputs(mode, True))
    args[0] = args[0].detach().requires_grad_(xs_grad)
    ys, *_ = rnn_layer(mode, *args)
    ref, *_ = _stepwise(mode, *args, reverse=False)
    weight = tg.tensor(np.random.default_rng(3).standard_normal(tuple(ys.shape)))
    loss = (ys * weight).sum()
    with tg.no_grad():
        ys.mul_(0.0)  # (ys is not saved: its version is not checked)
    ins = [a for a in _present(args) if a.requires_grad]
    g1 = tg.autograd.grad(loss, ins)
    g2 = tg.autograd.grad((ref * weight).sum(), ins)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-10, atol=1e-12)
    assert tg.autograd.gradcheck(lambda w, b: rnn_layer(mode, *args[:3], w, b)[0],
                                 tuple(args[3:]))
