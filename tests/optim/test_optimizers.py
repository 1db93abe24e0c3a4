"""Optimizers against hand-computed update sequences (literal numbers for a few steps, and an
independent float64 NumPy transcription of PyTorch's formulas over six steps), the fused and
unfused paths agreeing, parameter groups, zero_grad, state dicts and argument checks."""

import math
import re

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn, optim
from tests.helpers import run_optimizer

rng = np.random.default_rng(11)


def param(values, device="cpu", dtype=tg.float64):
    return nn.Parameter(tg.tensor(values, dtype=dtype, device=device))


def run(opt_cls, grads, p0, device="cpu", dtype=tg.float64, **kw):
    """Parameter values after each step with the given gradient sequence."""
    return run_optimizer(opt_cls, grads, p0, device, dtype, **kw)[0]


# -- literal hand-computed sequences -------------------------------------------------------------

def test_sgd_momentum_by_hand():
    # p = 1, constant g = 1, lr 0.1, momentum 0.9: b = 1, 1.9, 2.71; p = .9, .71, .439
    seq = run(optim.SGD, [[1.0]] * 3, [1.0], lr=0.1, momentum=0.9)
    np.testing.assert_allclose([s[0] for s in seq], [0.9, 0.71, 0.439], rtol=1e-12)


def test_sgd_nesterov_and_weight_decay_by_hand():
    # g' = g + 0.5 p; b1 = g'; step = g' + 0.9 b
    # p0 = 2: g' = 1 + 1 = 2, b = 2, step = 3.8, p1 = 2 - 0.38 = 1.62
    # g' = 1 + .81 = 1.81, b = 1.8 + 1.81 = 3.61, step = 1.81 + 3.249 = 5.059, p2 = 1.1141
    seq = run(optim.SGD, [[1.0]] * 2, [2.0], lr=0.1, momentum=0.9, nesterov=True,
              weight_decay=0.5)
    np.testing.assert_allclose([s[0] for s in seq], [1.62, 1.1141], rtol=1e-12)


def test_sgd_dampening_and_maximize_by_hand():
    # maximize: g -> -g; b1 = -1 (no dampening on the first step), b2 = .5 * -1 + .75 * -1
    seq = run(optim.SGD, [[1.0]] * 2, [0.0], lr=1.0, momentum=0.5, dampening=0.25,
              maximize=True)
    np.testing.assert_allclose([s[0] for s in seq], [1.0, 2.25], rtol=1e-12)


def test_adam_first_steps_by_hand():
    # step 1: m = .1 g, v = .001 g^2, bias-corrected m/sqrt(v) = g/|g|: p -= lr g / (|g| + eps)
    seq = run(optim.Adam, [[2.0, -0.5]], [1.0, 1.0], lr=0.1, eps=1e-8)
    np.testing.assert_allclose(seq[0], [1 - 0.1 * 2 / (2 + 1e-8), 1 + 0.1 * 0.5 / (0.5 + 1e-8)],
                               rtol=1e-14)
    # step 2 with g = 1 then 3: m = .09 + .3 = .39, v = .000999 + .009 = .009999
    # mhat = .39 / .19, vhat = .009999 / .001999
    seq = run(optim.Adam, [[1.0], [3.0]], [0.0], lr=0.1, eps=0.0)
    mhat, vhat = 0.39 / 0.19, 0.009999 / (1 - 0.999 ** 2)
    np.testing.assert_allclose(seq[1][0], -0.1 - 0.1 * mhat / math.sqrt(vhat), rtol=1e-12)


def test_adamw_decoupled_decay_by_hand():
    # p0 = 1, g = 0: only the decay acts (m = v = 0 -> update 0 with eps > 0): p *= 1 - lr wd
    seq = run(optim.AdamW, [[0.0]] * 3, [1.0], lr=0.1, weight_decay=0.5)
    np.testing.assert_allclose([s[0] for s in seq], [0.95, 0.9025, 0.857375], rtol=1e-12)
    # Adam's weight_decay instead adds wd * p to the gradient: first step moves by lr
    seq = run(optim.Adam, [[0.0]], [1.0], lr=0.1, weight_decay=0.5)
    np.testing.assert_allclose(seq[0][0], 0.9, rtol=1e-7)


def test_amsgrad_uses_the_running_maximum():
    # g = 3 then 0: v2 = .999 * .009 = .008991 < vmax = .009; denominators use vmax
    seq = run(optim.Adam, [[3.0], [0.0]], [0.0], lr=0.1, eps=0.0, amsgrad=True)
    m2 = 0.9 * 0.3
    denom = math.sqrt(0.009) / math.sqrt(1 - 0.999 ** 2)
    np.testing.assert_allclose(seq[1][0], seq[0][0] - 0.1 / (1 - 0.81) * m2 / denom, rtol=1e-12)


# -- six steps against an independent transcription of the formulas -----------------------------

def ref_sgd(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False):
    p, buf, out = p.copy(), None, []
    for g in grads:
        g = -g if maximize else g.copy()
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p.copy())
    return out


def ref_adam(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
             maximize=False, decoupled=False):
    b1, b2 = betas
    p, m, v, vmax, out = p.copy(), 0.0, 0.0, 0.0, []
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        mhat = m / (1 - b1 ** t)
        vhat = (vmax if amsgrad else v) / (1 - b2 ** t)
        p = p - lr * mhat / (np.sqrt(vhat) + eps)
        out.append(p.copy())
    return out


SGD_CASES = [{"lr": 0.1}, {"lr": 0.1, "momentum": 0.9},
             {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1},
             {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "maximize": True}]
ADAM_CASES = [{"lr": 0.01},
              {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True, "betas": (0.8, 0.99)},
              {"lr": 0.02, "maximize": True, "eps": 1e-3}]


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_matches_formulas(device, kw, fused):
    p0 = rng.standard_normal((3, 4))
    grads = [rng.standard_normal((3, 4)) for _ in range(6)]
    got = run(optim.SGD, grads, p0, device, fused=fused, **kw)
    for a, b in zip(got, ref_sgd(p0, grads, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("kw", ADAM_CASES)
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_adam_matches_formulas(device, cls, kw, fused):
    p0 = rng.standard_normal((3, 4))
    grads = [rng.standard_normal((3, 4)) for _ in range(6)]
    kw = dict(kw)
    if cls == "AdamW":
        kw.setdefault("weight_decay", 0.01)
    got = run(getattr(optim, cls), grads, p0, device, fused=fused, **kw)
    kw.pop("fused", None)
    ref = ref_adam(p0, grads, decoupled=cls == "AdamW", **kw)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls, kw", [("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True,
                                                    "weight_decay": 0.01}),
                                     ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
                                     ("AdamW", {"lr": 0.01})])
def test_fused_and_unfused_agree_bitwise_in_float32(cls, kw):
    p0 = rng.standard_normal(50).astype(np.float32)
    grads = [rng.standard_normal(50).astype(np.float32) for _ in range(5)]
    a = run(getattr(optim, cls), grads, p0, dtype=tg.float32, fused=True, **kw)
    b = run(getattr(optim, cls), grads, p0, dtype=tg.float32, fused=False, **kw)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


# -- the Optimizer surface -----------------------------------------------------------------------

def test_step_runs_under_no_grad_in_place_and_bumps_versions():
    p = param([1.0, 2.0])
    opt = optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    v0, ptr = p._version, p.data_ptr()
    opt.step()
    assert p.is_leaf and p.grad_fn is None and p.data_ptr() == ptr and p._version > v0
    assert opt.state[p]["step"].item() == 1 and opt.state[p]["exp_avg"].shape == (2,)


def test_parameters_without_grad_are_skipped_and_zero_grad():
    a, b = param([1.0]), param([2.0])
    opt = optim.SGD([a, b], lr=1.0)
    a.grad = tg.tensor([1.0], dtype=tg.float64)
    opt.step()
    assert a.item() == 0.0 and b.item() == 2.0
    opt.zero_grad(set_to_none=False)
    assert a.grad.item() == 0.0
    opt.zero_grad()
    assert a.grad is None


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_zero_grad_in_place_is_one_zero_per_gradient(device):
    # PyTorch's zero_grad(set_to_none=False) calls grad.zero_() (its profiler shows
    # aten::zero_ per gradient), keeping each gradient's memory and bumping its version
    m = nn.Linear(3, 2).to(device)
    opt = optim.SGD(m.parameters(), lr=0.1)
    m(tg.ones(4, 3, device=device)).sum().backward()
    ptrs = [p.grad.data_ptr() for p in m.parameters()]
    versions = [p.grad._version for p in m.parameters()]
    with tg.profiler.profile() as prof:
        opt.zero_grad(set_to_none=False)
    names = [e.name for e in prof.events()]
    assert names == ["Optimizer.zero_grad#SGD.zero_grad", "aten::zero_", "aten::zero_"]
    for p, ptr, v in zip(m.parameters(), ptrs, versions):
        assert p.grad.data_ptr() == ptr and p.grad._version == v + 1
        assert not p.grad.requires_grad and not p.grad.cpu().numpy().any()


def test_param_groups_and_add_param_group():
    a, b, c = param([1.0]), param([1.0]), param([1.0])
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.0)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    opt.add_param_group({"params": c, "lr": 1.0})
    for p in (a, b, c):
        p.grad = tg.tensor([1.0], dtype=tg.float64)
    opt.step()
    assert [a.item(), b.item(), c.item()] == [0.9, 0.5, 0.0]
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a, b}}])
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([])
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2])
    assert "Parameter Group 0" in repr(opt) and "lr: 0.1" in repr(opt)


def test_invalid_hyperparameters():
    p = [param([1.0])]
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        optim.Adam(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="epsilon"):
        optim.AdamW(p, eps=-1)


def test_closure():
    p = param([3.0])
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 9.0
    assert p.item() == 1.5


@pytest.mark.parametrize("cls, kw", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                     ("Adam", {"lr": 0.1, "amsgrad": True}),
                                     ("AdamW", {"lr": 0.1})])
def test_state_dict_round_trip_continues_identically(cls, kw):
    grads = [rng.standard_normal(4) for _ in range(6)]
    p0 = rng.standard_normal(4)
    straight = run(getattr(optim, cls), grads, p0, **kw)
    p = param(p0)
    opt = getattr(optim, cls)([p], **kw)
    for g in grads[:3]:
        p.grad = tg.tensor(g, dtype=tg.float64)
        opt.step()
    sd = opt.state_dict()
    assert list(sd) == ["state", "param_groups"] and sd["param_groups"][0]["params"] == [0]
    q = param(p.detach().numpy())
    opt2 = getattr(optim, cls)([q], lr=123.0)  # hyperparameters come from the state dict
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kw["lr"] and opt2.param_groups[0]["params"][0] is q
    for g in grads[3:]:
        q.grad = tg.tensor(g, dtype=tg.float64)
        opt2.step()
    np.testing.assert_allclose(q.detach().numpy(), straight[-1], rtol=1e-12)
    # as PyTorch's: the state tensors were loaded as they are (same device and dtype), so the
    # live optimizer's state dict shares them with it
    for k, v in opt2.state[q].items():
        if isinstance(v, tg.Tensor):
            assert v is sd["state"][0][k] is opt.state[p][k], k


def test_load_state_dict_errors_and_casting():
    a, b = param([1.0]), param([2.0])
    opt = optim.Adam([a, b])
    a.grad = b.grad = tg.tensor([1.0], dtype=tg.float64)
    opt.step()
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="number of parameter groups"):
        optim.Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.Adam([a]).load_state_dict(sd)
    c, d = nn.Parameter(tg.tensor([1.0])), nn.Parameter(tg.tensor([2.0]))  # float32 now
    opt32 = optim.Adam([c, d])
    opt32.load_state_dict(sd)
    assert opt32.state[c]["exp_avg"].dtype is tg.float32
    assert opt32.state[c]["step"].dtype is tg.float32


def test_saved_optimizer_state_round_trips_through_tg_save(tmp_path):
    from tritongrad.serialization import load, save
    model = nn.Linear(3, 2)
    opt = optim.AdamW(model.parameters(), lr=0.01)
    model(tg.randn(4, 3)).sum().backward()
    opt.step()
    save({"model": model.state_dict(), "optim": opt.state_dict()}, tmp_path / "ckpt.tg")
    ck = load(tmp_path / "ckpt.tg")
    opt2 = optim.AdamW(nn.Linear(3, 2).parameters(), lr=0.01)
    opt2.load_state_dict(ck["optim"])
    st = next(iter(opt2.state.values()))
    assert st["step"].item() == 1 and set(st) == {"step", "exp_avg", "exp_avg_sq"}


def test_training_converges_on_least_squares():
    tg.manual_seed(0)
    device = "cpu"  # 450 steps: too many for the emulated device (the formulas run there)
    x = tg.randn(64, 3, device=device)
    y = x @ tg.tensor([[1.0], [-2.0], [0.5]], device=device) + 0.3
    for cls, kw in (("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.05}),
                    ("AdamW", {"lr": 0.05, "weight_decay": 0.0})):
        model = nn.Linear(3, 1).to(device)
        opt = getattr(optim, cls)(model.parameters(), **kw)
        for _ in range(150):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        assert loss.item() < 1e-3, (cls, loss.item())


@pytest.mark.parametrize("cls, kw, key", [("SGD", {"lr": 0.1, "momentum": 0.9}, "momentum_buffer"),
                                          ("Adam", {"lr": 0.1}, "exp_avg"),
                                          ("AdamW", {"lr": 0.1, "amsgrad": True}, "exp_avg")])
def test_load_state_dict_rejects_state_of_other_shapes(cls, kw, key):
    """A state dict saved from a model of other shapes: refused at load, naming the state, the
    parameter and both shapes, rather than failing (or broadcasting) inside a later step()."""
    def trained(shapes):
        ps = [param(np.ones(s)) for s in shapes]
        opt = getattr(optim, cls)(ps, **kw)
        for p in ps:
            p.grad = tg.ones(*p.shape, dtype=tg.float64)
        opt.step()
        return ps, opt

    _, saved = trained([(3, 4), (1,)])
    cases = [([(4, 3), (1,)], "(3, 4) for parameter 0", "(4, 3)"),
             ([(3, 4), (5,)], "(1,) for parameter 1", "(5,)")]  # (1,) would broadcast in step()
    for shapes, saved_shape, shape in cases:
        ps, opt = trained(shapes)
        before = {id(p): dict(opt.state[p]) for p in ps}
        msg = f"state '{key}' of shape {saved_shape}, but that parameter has shape {shape}"
        with pytest.raises(ValueError, match=re.escape(msg)):
            opt.load_state_dict(saved.state_dict())
        # nothing was loaded: the optimizer keeps its own state and hyperparameters
        assert all(opt.state[p] == before[id(p)] for p in ps)
        opt.step()


def test_load_state_dict_moves_state_to_each_parameter_s_device_and_dtype(device):
    src = param([1.0, -2.0, 3.0])  # float64 on the CPU
    opt = optim.Adam([src], lr=0.1, amsgrad=True)
    src.grad = tg.tensor([0.5, 0.5, -1.0], dtype=tg.float64)
    opt.step()
    q = param([1.0, -2.0, 3.0], device=device, dtype=tg.float32)
    opt2 = optim.Adam([q], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    st = opt2.state[q]
    for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        assert st[k].device == q.device and st[k].dtype is tg.float32, k
        np.testing.assert_allclose(st[k].cpu().numpy(), opt.state[src][k].numpy(), rtol=1e-6)
    assert st["step"].device.type == "cpu" and st["step"].item() == 1  # step stays as saved
    q.grad = tg.tensor([0.5, 0.5, -1.0], device=device)
    opt2.step()
    assert st["step"].item() == 2 and st["exp_avg"].device == q.device
