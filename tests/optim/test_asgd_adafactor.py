"""ASGD and Adafactor (optim/asgd.py, optim/adafactor.py) against float64 NumPy transcriptions
of PyTorch's documented updates, their state dict round trips, flags and argument checks."""

import copy

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import run_optimizer as run
from tritongrad import nn, optim

rng = np.random.default_rng(16)


# -- ASGD ---------------------------------------------------------------------------------------------

def ref_asgd(p, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
             maximize=False):
    """(params, averages) after each step. eta and mu are float32 state scalars in PyTorch,
    so each update reads them rounded to float32."""
    p = np.array(p, dtype=np.result_type(np.asarray(p), np.float64))
    eta, mu, ax = np.float32(lr), np.float32(1.0), np.zeros_like(p)
    ps, axs = [], []
    for t, g in enumerate(grads, start=1):
        g = -np.asarray(g) if maximize else np.asarray(g)
        if weight_decay:
            g = g + weight_decay * p
        p = p * (1 - lambd * float(eta))
        p = p - float(eta) * g
        ax = ax + (p - ax) * float(mu) if mu != 1 else p.copy()
        eta = np.float32(lr / (1 + lambd * lr * t) ** alpha)
        mu = np.float32(1 / max(1, t - t0))
        ps.append(p.copy())
        axs.append(ax.copy())
    return ps, axs


ASGD_CASES = [{}, {"lr": 0.05, "lambd": 1e-2, "alpha": 0.6, "t0": 3, "weight_decay": 0.1},
              {"maximize": True, "t0": 0}]


@pytest.mark.parametrize("kw", ASGD_CASES, ids=str)
def test_asgd_matches_the_formula(device, kw):
    p0 = rng.standard_normal((3, 4))
    grads = [rng.standard_normal((3, 4)) for _ in range(8)]
    got, opt, p = run(optim.ASGD, grads, p0, device, **kw)
    want, averages = ref_asgd(p0, grads, **kw)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(opt.state[p]["ax"].cpu().numpy(), averages[-1], rtol=1e-12,
                               atol=1e-14)
    assert set(opt.state[p]) == {"step", "eta", "mu", "ax"}
    assert opt.state[p]["step"].item() == 8 and opt.state[p]["eta"].dtype is tg.float32


def test_asgd_complex_parameters():
    # (the update is real-linear, so a complex parameter steps as its two real parts)
    z0 = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    grads = [rng.standard_normal(4) + 1j * rng.standard_normal(4) for _ in range(3)]
    got, _, _ = run(optim.ASGD, grads, z0, dtype=tg.complex128, lr=0.1, weight_decay=0.1)
    for a, b in zip(got, ref_asgd(z0, grads, lr=0.1, weight_decay=0.1)[0]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_asgd_arguments_and_defaults():
    p = nn.Parameter(tg.zeros(2))
    opt = optim.ASGD([p], foreach=True)
    assert opt.defaults == {"lr": 1e-2, "lambd": 1e-4, "alpha": 0.75, "t0": 1e6,
                            "weight_decay": 0, "foreach": True, "maximize": False,
                            "differentiable": False, "capturable": False}
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.ASGD([p], lr=-1)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -0.5"):
        optim.ASGD([p], weight_decay=-0.5)
    assert optim.ASGD([p], differentiable=True).defaults["differentiable"] is True


# -- Adafactor -----------------------------------------------------------------------------------

def ref_adafactor(p, grads, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                  weight_decay=0.0, maximize=False):
    """PyTorch's documented Adafactor, with its row/column statistics as means of g^2 (the
    implementation's normalization: V = R C / mean(R))."""
    p = np.array(p, dtype=np.float64)
    eps1 = np.finfo(np.float64).eps if eps[0] is None else eps[0]
    factored = p.ndim > 1
    R = np.zeros(p.shape[:-1] + (1,)) if factored else None
    C = np.zeros(p.shape[:-2] + (1, p.shape[-1])) if factored else None
    V = np.zeros_like(p)
    out = []
    for t, g in enumerate(grads, start=1):
        g = -np.asarray(g) if maximize else np.array(g, dtype=np.float64)
        beta2 = 1 - t ** beta2_decay
        rho = min(lr, 1 / np.sqrt(t))
        a = max(eps[1], np.sqrt(np.mean(p ** 2))) * rho
        p = p * (1 - lr * weight_decay)
        if factored:
            R = beta2 * R + (1 - beta2) * np.mean(g * g, axis=-1, keepdims=True)
            C = beta2 * C + (1 - beta2) * np.mean(g * g, axis=-2, keepdims=True)
            Vhat = R @ C / np.maximum(np.mean(R, axis=-2, keepdims=True), eps1)
        else:
            V = beta2 * V + (1 - beta2) * g * g
            Vhat = V
        U = g / np.maximum(np.sqrt(Vhat), eps1)
        U = U / max(1.0, np.sqrt(np.mean(U ** 2)) / d)
        p = p - a * U
        out.append(p.copy())
    return out


ADAFACTOR_CASES = [
    ((3, 4), {}),
    ((2, 3, 5), {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-20, 1e-2), "d": 1.5,
                 "weight_decay": 0.1}),
    ((5,), {"maximize": True}),
    ((), {"lr": 0.3}),
]


@pytest.mark.parametrize("shape,kw", ADAFACTOR_CASES, ids=str)
def test_adafactor_matches_the_formula(device, shape, kw):
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(7)]
    got, opt, p = run(optim.Adafactor, grads, p0, device, **kw)
    for a, b in zip(got, ref_adafactor(p0, grads, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
    keys = {"step", "row_var", "col_var"} if len(shape) > 1 else {"step", "variance"}
    assert set(opt.state[p]) == keys


def test_adafactor_arguments():
    p = nn.Parameter(tg.zeros(2))
    assert optim.Adafactor([p]).defaults == {"lr": 1e-2, "beta2_decay": -0.8,
                                             "eps": (None, 1e-3), "d": 1.0,
                                             "weight_decay": 0.0, "foreach": None,
                                             "maximize": False}
    for kw, msg in [({"lr": -1}, "Learning rate should be >= 0 but is: -1"),
                    ({"beta2_decay": 0.5}, "beta2_decay should be <= 0 but is: 0.5"),
                    ({"eps": (-1, 1e-3)}, "epsilon1 should be >= 0 but is: -1"),
                    ({"eps": (None, -1)}, "epsilon2 should be >= 0 but is: -1"),
                    ({"d": 0.5}, "Clipping threshold d should be >= 1 but is: 0.5"),
                    ({"weight_decay": -1}, "weight_decay should be >= 0 but is: -1")]:
        with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
            optim.Adafactor([p], **kw)
    z = nn.Parameter(tg.zeros(2, dtype=tg.complex64))
    z.grad = tg.ones(2, dtype=tg.complex64)
    with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
        optim.Adafactor([z]).step()


# -- both: a state dict round trip continues the same trajectory ------------------------------------

@pytest.mark.parametrize("cls,kw", [(optim.ASGD, {"lr": 0.05, "t0": 2}),
                                    (optim.Adafactor, {"weight_decay": 0.01})], ids=str)
def test_state_dict_round_trip(cls, kw):
    tg.manual_seed(0)
    model = nn.Linear(4, 3).to(tg.float64)
    x = tg.randn(6, 4, dtype=tg.float64)

    def train(m, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()

    opt = cls(model.parameters(), **kw)
    train(model, opt, 3)
    clone = nn.Linear(4, 3).to(tg.float64)
    clone.load_state_dict(model.state_dict())
    opt2 = cls(clone.parameters(), **kw)
    # (a snapshot: as PyTorch's, load_state_dict uses the live optimizer's tensors as they are)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    train(model, opt, 3)
    train(clone, opt2, 3)
    # (ASGD's eta and mu load as the parameters' dtype, float64 here, as PyTorch casts them;
    # the original keeps reading them rounded to float32)
    for a, b in zip(model.parameters(), clone.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    assert set(opt2.state[clone.weight]) == set(opt.state[model.weight])
    if cls is optim.ASGD:  # (ax has its parameter's shape; Adafactor's moments do not)
        with pytest.raises(ValueError, match="loaded state dict has state 'ax'"):
            cls(nn.Linear(3, 3).to(tg.float64).parameters(), **kw).load_state_dict(
                {"state": {0: {k: tg.zeros(5) for k in opt.state[model.weight]}},
                 "param_groups": opt.state_dict()["param_groups"]})


def test_adafactor_load_checks_the_factored_shapes():
    w = tg.nn.Parameter(tg.randn(3, 4))
    opt = tg.optim.Adafactor([w])
    w.grad = tg.randn(3, 4)
    opt.step()
    sd = opt.state_dict()
    assert tuple(sd["state"][0]["row_var"].shape) == (3, 1)
    tg.optim.Adafactor([w]).load_state_dict(sd)  # the right shapes load
    sd["state"][0]["row_var"] = tg.zeros(4, 1)
    with pytest.raises(ValueError, match=r"state 'row_var' of shape \(4, 1\) for parameter 0, "
                                         r"but that parameter has shape \(3, 4\) \(so 'row_var' "
                                         r"has \(3, 1\)\)"):
        tg.optim.Adafactor([w]).load_state_dict(sd)
