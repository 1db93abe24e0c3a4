"""Adamax, NAdam, RAdam and Adadelta against hand-computed first steps and an independent
float64 NumPy transcription of PyTorch's documented update rules over eight steps (RAdam's
rectification switches on at step 6 with the default betas); state, state dicts and argument
checks."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn, optim
from tests.helpers import run_optimizer as run

rng = np.random.default_rng(11)


def _decayed(p, g, lr, weight_decay, decoupled):
    if weight_decay and decoupled:
        return p * (1 - lr * weight_decay), g
    if weight_decay:
        return p, g + weight_decay * p
    return p, g


def ref_adamax(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
               maximize=False):
    p, (b1, b2) = np.array(p, dtype=np.float64), betas
    m, u, out = np.zeros_like(p), np.zeros_like(p), []
    for t, g in enumerate(grads, start=1):
        g = -np.asarray(g) if maximize else np.asarray(g)
        p, g = _decayed(p, g, lr, weight_decay, False)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1 ** t) * m / u
        out.append(p.copy())
    return out


def ref_nadam(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    p, (b1, b2) = np.array(p, dtype=np.float64), betas
    m, v, prod, out = np.zeros_like(p), np.zeros_like(p), np.float32(1.0), []
    for t, g in enumerate(grads, start=1):
        g = -np.asarray(g) if maximize else np.asarray(g)
        p, g = _decayed(p, g, lr, weight_decay, decoupled_weight_decay)
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        prod = np.float32(prod * np.float32(mu))  # PyTorch keeps the product in float32
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        p = p - lr * (1 - mu) / (1 - float(prod)) * g / denom
        p = p - lr * mu_next / (1 - float(prod) * mu_next) * m / denom
        out.append(p.copy())
    return out


def ref_radam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              decoupled_weight_decay=False, maximize=False):
    p, (b1, b2) = np.array(p, dtype=np.float64), betas
    m, v, out = np.zeros_like(p), np.zeros_like(p), []
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, start=1):
        g = -np.asarray(g) if maximize else np.asarray(g)
        p, g = _decayed(p, g, lr, weight_decay, decoupled_weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                          / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * m_hat * r * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
        else:
            p = p - lr * m_hat
        out.append(p.copy())
    return out


def ref_adadelta(p, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    p = np.array(p, dtype=np.float64)
    v, u, out = np.zeros_like(p), np.zeros_like(p), []
    for g in grads:
        g = -np.asarray(g) if maximize else np.asarray(g)
        p, g = _decayed(p, g, lr, weight_decay, False)
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta
        out.append(p.copy())
    return out


CASES = [
    (optim.Adamax, ref_adamax, {}),
    (optim.Adamax, ref_adamax, {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1,
                                "maximize": True}),
    (optim.NAdam, ref_nadam, {}),
    (optim.NAdam, ref_nadam, {"lr": 0.05, "momentum_decay": 0.01, "weight_decay": 0.1}),
    (optim.NAdam, ref_nadam, {"lr": 0.05, "weight_decay": 0.1,
                              "decoupled_weight_decay": True, "maximize": True}),
    (optim.RAdam, ref_radam, {}),
    (optim.RAdam, ref_radam, {"lr": 0.05, "weight_decay": 0.1}),
    (optim.RAdam, ref_radam, {"lr": 0.05, "betas": (0.8, 0.99), "weight_decay": 0.1,
                              "decoupled_weight_decay": True, "maximize": True}),
    (optim.Adadelta, ref_adadelta, {}),
    (optim.Adadelta, ref_adadelta, {"lr": 0.5, "rho": 0.8, "eps": 1e-3, "weight_decay": 0.1,
                                    "maximize": True}),
]


@pytest.mark.parametrize("opt_cls, ref, kw", CASES,
                         ids=lambda v: getattr(v, "__name__", None))
def test_matches_the_formulas(device, opt_cls, ref, kw):
    p0 = rng.standard_normal((3, 4))
    grads = [rng.standard_normal((3, 4)) for _ in range(8)]
    got, _, _ = run(opt_cls, grads, p0, device, **kw)
    for a, b in zip(got, ref(p0, grads, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


def test_first_steps_by_hand():
    # Adamax, g = 2: m = .2, u = max(0, 2 + 0) = 2, p = -lr / .1 * .2 / 2 = -lr
    got, _, _ = run(optim.Adamax, [[2.0]], [0.0], lr=0.5, eps=0.0)
    assert got[0][0] == pytest.approx(-0.5, rel=1e-14)
    # RAdam's first step is momentum only (rho_1 = 1 < 5): p = -lr * m_hat = -lr * g
    got, _, _ = run(optim.RAdam, [[3.0]], [0.0], lr=0.1)
    assert got[0][0] == pytest.approx(-0.3, rel=1e-14)
    # Adadelta, rho .5, eps 0 would divide 0 by 0; eps 1: v = 2, delta = 1/sqrt(3) * 2
    got, _, _ = run(optim.Adadelta, [[2.0]], [0.0], rho=0.5, eps=1.0)
    assert got[0][0] == pytest.approx(-2 / math.sqrt(3), rel=1e-14)


@pytest.mark.parametrize("cls, keys", [
    (optim.Adamax, {"step", "exp_avg", "exp_inf"}),
    (optim.NAdam, {"step", "mu_product", "exp_avg", "exp_avg_sq"}),
    (optim.RAdam, {"step", "exp_avg", "exp_avg_sq"}),
    (optim.Adadelta, {"step", "square_avg", "acc_delta"}),
])
def test_state_and_state_dict_round_trip(cls, keys):
    p0 = rng.standard_normal(4)
    grads = [rng.standard_normal(4) for _ in range(7)]
    whole, _, _ = run(cls, grads, p0, lr=0.05)
    first, opt, p = run(cls, grads[:4], p0, lr=0.05)
    assert set(opt.state[p]) == keys and opt.state[p]["step"].dtype is tg.float32
    q = nn.Parameter(tg.tensor(first[-1], dtype=tg.float64))
    opt2 = cls([q], lr=0.05)
    opt2.load_state_dict(opt.state_dict())
    for g in grads[4:]:
        q.grad = tg.tensor(g, dtype=tg.float64)
        opt2.step()
    # (NAdam's float32 momentum product loads in the parameter's dtype, as PyTorch's)
    np.testing.assert_allclose(q.detach().numpy(), whole[-1],
                               rtol=1e-7 if cls is optim.NAdam else 0, atol=0)


@pytest.mark.parametrize("cls, kw, match", [
    (optim.Adamax, {"lr": -1}, "Invalid learning rate: -1"),
    (optim.Adamax, {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
    (optim.NAdam, {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
    (optim.NAdam, {"momentum_decay": -1}, "Invalid momentum_decay value"),
    (optim.RAdam, {"eps": -1}, "Invalid epsilon value"),
    (optim.RAdam, {"weight_decay": -1}, "Invalid weight_decay value"),
    (optim.Adadelta, {"rho": 1.5}, "Invalid rho value: 1.5"),
])
def test_invalid_hyperparameters(cls, kw, match):
    with pytest.raises(ValueError, match=match):
        cls([nn.Parameter(tg.ones(1))], **kw)
    assert cls([nn.Parameter(tg.ones(1))], capturable=True).defaults["capturable"] is True


@pytest.mark.parametrize("cls", [optim.Adamax, optim.NAdam, optim.RAdam, optim.Adadelta])
def test_trains_least_squares(cls):
    tg.manual_seed(0)
    x = tg.randn(64, 3, dtype=tg.float64)
    y = x @ tg.tensor([[1.0], [-2.0], [0.5]], dtype=tg.float64)
    lin = nn.Linear(3, 1, bias=False).double()
    opt = cls(lin.parameters(), lr=0.05 if cls is not optim.Adadelta else 1.0)
    first = None
    for _ in range(200):
        opt.zero_grad()
        loss = (lin(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    # (Adadelta is slow: 0.40 of the first loss after 200 steps, here and in PyTorch 2.13
    # from this seed)
    assert loss.item() < (0.5 if cls is optim.Adadelta else 0.01) * first
