"""RMSprop and Adagrad against hand-computed first steps and an independent float64 NumPy
transcription of PyTorch's documented update rules over six steps; state, state dicts,
parameter groups and argument checks."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn, optim
from tests.helpers import run_optimizer

rng = np.random.default_rng(5)


run = run_optimizer


# -- the documented algorithms, transcribed in float64 ------------------------------------------

def ref_rmsprop(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                centered=False, maximize=False):
    p = np.array(p, dtype=np.float64)
    v = np.zeros_like(p)
    b = np.zeros_like(p)
    g_avg = np.zeros_like(p)
    out = []
    for g in grads:
        g = -np.asarray(g) if maximize else np.asarray(g)
        if weight_decay:
            g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        v_tilde = v
        if centered:
            g_avg = alpha * g_avg + (1 - alpha) * g
            v_tilde = v - g_avg ** 2
        if momentum > 0:
            b = momentum * b + g / (np.sqrt(v_tilde) + eps)
            p = p - lr * b
        else:
            p = p - lr * g / (np.sqrt(v_tilde) + eps)
        out.append(p.copy())
    return out


def ref_adagrad(p, grads, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                initial_accumulator_value=0.0, eps=1e-10, maximize=False):
    p = np.array(p, dtype=np.float64)
    s = np.full_like(p, initial_accumulator_value)
    out = []
    for t, g in enumerate(grads, start=1):
        g = -np.asarray(g) if maximize else np.asarray(g)
        if weight_decay:
            g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (np.sqrt(s) + eps)
        out.append(p.copy())
    return out


RMSPROP_CASES = [{}, {"lr": 0.05, "alpha": 0.9, "momentum": 0.8},
                 {"lr": 0.02, "centered": True, "weight_decay": 0.1},
                 {"lr": 0.02, "centered": True, "momentum": 0.5, "maximize": True, "eps": 1e-3}]
ADAGRAD_CASES = [{}, {"lr": 0.1, "lr_decay": 0.5, "weight_decay": 0.2},
                 {"lr": 0.05, "initial_accumulator_value": 0.3, "eps": 1e-3, "maximize": True}]


@pytest.mark.parametrize("opt_cls, ref, kw, shape",
                         [(optim.RMSprop, ref_rmsprop, kw, (3, 5)) for kw in RMSPROP_CASES]
                         + [(optim.Adagrad, ref_adagrad, kw, (4, 3)) for kw in ADAGRAD_CASES],
                         ids=lambda v: getattr(v, "__name__", None))
def test_matches_the_formulas(device, opt_cls, ref, kw, shape):
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(6)]
    got, _, _ = run(opt_cls, grads, p0, device, **kw)
    for a, b in zip(got, ref(p0, grads, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


def test_rmsprop_first_steps_by_hand():
    # alpha .5, g = 2: v = .5 * 4 = 2, p = 1 - .1 * 2 / sqrt(2) = 1 - .1 sqrt(2)
    got, _, _ = run(optim.RMSprop, [[2.0]], [1.0], lr=0.1, alpha=0.5, eps=0.0)
    np.testing.assert_allclose(got[0][0], 1 - 0.1 * math.sqrt(2), rtol=1e-14)
    # centered: g_avg = .5 * 2 = 1, v - g_avg^2 = 2 - 1 = 1: p = 1 - .1 * 2 / 1 = .8
    got, _, _ = run(optim.RMSprop, [[2.0]], [1.0], lr=0.1, alpha=0.5, eps=0.0, centered=True)
    np.testing.assert_allclose(got[0][0], 0.8, rtol=1e-14)
    # momentum .9, g = 2 then 2: b1 = 2/sqrt(2) = sqrt 2; v2 = 1 * 2 + 2 = 3 (alpha .5:
    # .5 * 2 + .5 * 4 = 3); b2 = .9 sqrt 2 + 2 / sqrt 3
    got, _, _ = run(optim.RMSprop, [[2.0], [2.0]], [0.0], lr=1.0, alpha=0.5, eps=0.0,
                    momentum=0.9)
    b1 = math.sqrt(2)
    b2 = 0.9 * b1 + 2 / math.sqrt(3)
    np.testing.assert_allclose([got[0][0], got[1][0]], [-b1, -b1 - b2], rtol=1e-14)


def test_adagrad_first_steps_by_hand():
    # g = 3 then 4: s = 9, 25; lr_decay 1: clr = 1, 1/2; p = -3/3 = -1, -1 - .5 * 4/5 = -1.4
    got, _, _ = run(optim.Adagrad, [[3.0], [4.0]], [0.0], lr=1.0, lr_decay=1.0, eps=0.0)
    np.testing.assert_allclose([got[0][0], got[1][0]], [-1.0, -1.4], rtol=1e-14)
    # initial_accumulator_value 16, g = 3: s = 25, p = -.1 * 3 / 5
    got, _, _ = run(optim.Adagrad, [[3.0]], [0.0], lr=0.1, initial_accumulator_value=16.0,
                    eps=0.0)
    np.testing.assert_allclose(got[0][0], -0.06, rtol=1e-14)


def test_float32_tracks_the_float64_reference():
    p0 = rng.standard_normal(7)
    grads = [rng.standard_normal(7) for _ in range(4)]
    got, _, _ = run(optim.RMSprop, grads, p0, dtype=tg.float32, lr=0.01, centered=True,
                    momentum=0.9)
    np.testing.assert_allclose(got[-1], ref_rmsprop(p0, grads, lr=0.01, centered=True,
                                                    momentum=0.9)[-1], rtol=1e-5, atol=1e-6)


def test_state_entries_as_pytorch():
    _, opt, p = run(optim.RMSprop, [[1.0]], [0.0], momentum=0.9, centered=True)
    st = opt.state[p]
    assert set(st) == {"step", "square_avg", "momentum_buffer", "grad_avg"}
    assert st["step"].item() == 1.0 and st["step"].dtype == tg.float32
    _, opt, p = run(optim.RMSprop, [[1.0]], [0.0])
    assert set(opt.state[p]) == {"step", "square_avg"}
    # Adagrad's state exists from construction (and for added groups), sum filled
    q = nn.Parameter(tg.zeros(2, dtype=tg.float64))
    opt = optim.Adagrad([q], initial_accumulator_value=0.25)
    assert opt.state[q]["step"].item() == 0.0
    np.testing.assert_array_equal(opt.state[q]["sum"].numpy(), [0.25, 0.25])
    r = nn.Parameter(tg.zeros(3, dtype=tg.float64))
    opt.add_param_group({"params": [r], "initial_accumulator_value": 1.0})
    np.testing.assert_array_equal(opt.state[r]["sum"].numpy(), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("cls, kw", [(optim.RMSprop, {"momentum": 0.9, "centered": True}),
                                     (optim.Adagrad, {"lr_decay": 0.1})])
def test_state_dict_round_trip_continues_identically(cls, kw):
    p0 = rng.standard_normal(4)
    grads = [rng.standard_normal(4) for _ in range(5)]
    whole, _, _ = run(cls, grads, p0, **kw)
    first, opt, _ = run(cls, grads[:3], p0, **kw)
    q = nn.Parameter(tg.tensor(first[-1], dtype=tg.float64))
    opt2 = cls([q], **kw)
    opt2.load_state_dict(opt.state_dict())
    for g in grads[3:]:
        q.grad = tg.tensor(g, dtype=tg.float64)
        opt2.step()
    np.testing.assert_array_equal(q.detach().numpy(), whole[-1])


def test_parameter_groups_use_their_own_hyperparameters():
    a = nn.Parameter(tg.tensor([0.0], dtype=tg.float64))
    b = nn.Parameter(tg.tensor([0.0], dtype=tg.float64))
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1, eps=0.0)
    a.grad = tg.tensor([2.0], dtype=tg.float64)
    b.grad = tg.tensor([2.0], dtype=tg.float64)
    opt.step()
    assert a.item() == pytest.approx(-0.1) and b.item() == pytest.approx(-1.0)


def test_parameters_without_grad_are_skipped():
    a = nn.Parameter(tg.ones(2))
    opt = optim.RMSprop([a])
    opt.step()
    assert a not in opt.state and a.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("cls, kw, match", [
    (optim.RMSprop, {"lr": -1}, "Invalid learning rate: -1"),
    (optim.RMSprop, {"alpha": -0.1}, "Invalid alpha value: -0.1"),
    (optim.RMSprop, {"momentum": -0.5}, "Invalid momentum value"),
    (optim.RMSprop, {"eps": -1e-8}, "Invalid epsilon value"),
    (optim.RMSprop, {"weight_decay": -1}, "Invalid weight_decay value"),
    (optim.Adagrad, {"lr_decay": -1}, "Invalid lr_decay value"),
    (optim.Adagrad, {"initial_accumulator_value": -1}, "Invalid initial_accumulator_value"),
])
def test_invalid_hyperparameters(cls, kw, match):
    with pytest.raises(ValueError, match=match):
        cls([nn.Parameter(tg.ones(1))], **kw)


def test_unsupported_options_raise():
    p = [nn.Parameter(tg.ones(1))]
    assert optim.RMSprop(p, capturable=True).defaults["capturable"] is True


def test_rmsprop_trains_least_squares():
    tg.manual_seed(0)
    x = tg.randn(64, 3, dtype=tg.float64)
    w_true = tg.tensor([[1.0], [-2.0], [0.5]], dtype=tg.float64)
    y = x @ w_true
    lin = nn.Linear(3, 1, bias=False).double()
    opt = optim.RMSprop(lin.parameters(), lr=0.01, momentum=0.5)
    for _ in range(300):
        opt.zero_grad()
        loss = (lin(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
    assert loss.item() < 1e-4
