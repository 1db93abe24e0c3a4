"""Options of tritongrad.optim not covered elsewhere, against float64 references written out
here (no torch needed): NAdam and ASGD with differentiable=True (values, and gradients through
the steps by finite differences), capturable=True of RMSprop, Adadelta, Rprop, Adamax, NAdam,
RAdam and ASGD (refused on CPU parameters at step; captured in a CUDA graph and replayed on the
emulated device, against eager steps and float32 transcriptions of PyTorch's formulas),
PyTorch's check of a Tensor ``lr``, ``swap_in_optimizer_params_and_state`` (against a second
optimizer loaded with the same state), the small PyTorch helpers (Adagrad.share_memory,
Optimizer.profile_hook_step, SequentialLR.recursive_undo); then, where torch is installed,
the same programs under torch: the differentiable steps and their gradients to 1e-12, the
option flags' errors (foreach, fused, differentiable, maximize) on CPU, many option sets'
values and state dicts, SparseAdam, the hooks' order, and swap_in's errors."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn, optim

f32 = np.float32
RNG = np.random.default_rng(30)
X0 = RNG.standard_normal(5)
GRADS = [RNG.standard_normal(5) for _ in range(7)]


# -- float64 references of the differentiable steps -------------------------------------------

def _maximize_and_decay(x, g, lr, weight_decay, decoupled, maximize):
    """The step's first part in every rule here: the gradient negated for ``maximize``, then
    the weight decay, on the parameter (``decoupled``) or added to the gradient; (x, g)."""
    g = -g if maximize else g
    if weight_decay:
        if decoupled:
            x = x * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * x
    return x, g


def _nadam_ref(x, grads, lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
               momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    """NAdam as PyTorch's differentiable step computes it: the momentum product P a float32
    scalar, both step sizes float32 arithmetic on it (``c / t`` as ``reciprocal(t) * c``)."""
    b1, b2 = betas
    m, v, P = np.zeros_like(x), np.zeros_like(x), f32(1)
    for t, g in enumerate(grads, 1):
        x, g = _maximize_and_decay(x, g, lr, weight_decay, decoupled_weight_decay, maximize)
        mu = b1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        P = f32(P * f32(mu))
        m = m + (1 - b1) * (g - m)
        v = v * b2 + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        size = f32(f32(1) / (f32(1) - P)) * f32(-lr * (1.0 - mu))
        size_next = f32(f32(1) / (f32(1) - f32(P * f32(mu_next)))) * f32(-lr * mu_next)
        x = x + g * float(size) / denom
        x = x + m * float(size_next) / denom
    return x


def _asgd_ref(x, grads, lr=0.1, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0,
              maximize=False):
    """ASGD with eta and mu float32 scalars (PyTorch's state); returns (x, ax)."""
    eta, mu, ax = f32(lr), f32(1), np.zeros_like(x)
    for t, g in enumerate(grads, 1):
        x, g = _maximize_and_decay(x, g, lr, weight_decay, False, maximize)
        x = x * (1 - lambd * float(eta))
        x = x - float(eta) * g
        ax = x if mu == 1 else ax + (x - ax) * float(mu)
        eta = f32(lr / (1 + lambd * lr * t) ** alpha)
        mu = f32(1 / max(1, t - t0))
    return x, ax


def _loss_ref(name, x, grads, kw):
    if name == "NAdam":
        x = _nadam_ref(x, grads, **kw)
        return (x * x).sum()
    x, ax = _asgd_ref(x, grads, **kw)
    return (x * x).sum() + (ax ** 3).sum()


def _differentiable_run(lib, name, x0, grads, kw):
    """Steps ``name``(differentiable=True) over a non-leaf copy of x0 with gradients that
    require grad; returns the parameter and the gradients of the loss to x0 and each grad."""
    x = lib.tensor(x0, requires_grad=True)
    gs = [lib.tensor(g, requires_grad=True) for g in grads]
    p = x.clone()
    opt = getattr(lib.optim, name)([p], differentiable=True, **kw)
    for g in gs:
        p.grad = g * 1.0
        opt.step()
    loss = (p * p).sum()
    if name == "ASGD":
        loss = loss + (opt.state[p]["ax"] ** 3).sum()
    got = lib.autograd.grad(loss, [x] + gs, allow_unused=True)
    return p.detach().numpy(), [np.zeros(len(x0)) if v is None else v.detach().numpy()
                                for v in got]


DIFF_CASES = [
    ("NAdam", dict(lr=0.1), 7),
    ("NAdam", dict(lr=0.1, weight_decay=0.1), 5),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True, maximize=True), 5),
    ("NAdam", dict(lr=0.05, momentum_decay=0.3, betas=(0.8, 0.9)), 6),
    ("ASGD", dict(lr=0.1), 6),
    ("ASGD", dict(lr=0.1, t0=2, weight_decay=0.1, lambd=0.1), 4),
    # (past t0 the average moves by mu; PyTorch's own step cannot be differentiated there,
    # its saved mu overwritten in place: checked against finite differences only)
    ("ASGD", dict(lr=0.1, t0=1, lambd=0.05, alpha=0.5, maximize=True), 6),
]


@pytest.mark.parametrize("name,kw,n", DIFF_CASES,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(DIFF_CASES)])
def test_differentiable_nadam_asgd_values_and_gradients(name, kw, n):
    grads = GRADS[:n]
    value, got = _differentiable_run(tg, name, X0, grads, kw)
    want = _nadam_ref(X0, grads, **kw) if name == "NAdam" else _asgd_ref(X0, grads, **kw)[0]
    np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-15)
    args, h = [X0] + grads, 1e-6
    for k, a in enumerate(args):
        fd = np.zeros_like(a)
        for i in range(len(a)):
            bump = np.zeros_like(a)
            bump[i] = h
            hi = [b + bump if j == k else b for j, b in enumerate(args)]
            lo = [b - bump if j == k else b for j, b in enumerate(args)]
            fd[i] = (_loss_ref(name, hi[0], hi[1:], kw) - _loss_ref(name, lo[0], lo[1:], kw)) \
                / (2 * h)
        np.testing.assert_allclose(got[k], fd, rtol=1e-6, atol=1e-7, err_msg=f"input {k}")


def test_differentiable_nadam_asgd_refuse_a_leaf_and_need_it_for_non_leaves():
    for cls in (optim.NAdam, optim.ASGD):
        p = nn.Parameter(tg.ones(3))
        opt = cls([p], differentiable=True)
        assert opt.defaults["differentiable"] is True
        p.grad = tg.ones(3)
        # (the update is recorded, so an in-place change of a leaf is refused, as PyTorch's)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            opt.step()
        with pytest.raises(ValueError, match="non-leaf"):
            cls([tg.ones(3, requires_grad=True) * 2])


def test_non_differentiable_nadam_is_unchanged_by_the_option_path():
    # without differentiable the float64 step sizes are used (PyTorch's other branch): the
    # two paths differ by the float32 rounding of the step sizes only
    p, q = nn.Parameter(tg.tensor(X0)), tg.tensor(X0, requires_grad=True).clone()
    a, b = optim.NAdam([p], lr=0.1), optim.NAdam([q], lr=0.1, differentiable=True)
    for g in GRADS:
        p.grad, q.grad = tg.tensor(g), tg.tensor(g)
        a.step()
        b.step()
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)
    assert not np.array_equal(p.detach().numpy(), q.detach().numpy())


ALL = ["SGD", "Adam", "AdamW", "RMSprop", "Adadelta", "Adagrad", "Rprop", "Adamax", "NAdam",
       "RAdam", "ASGD", "SparseAdam", "Adafactor", "LBFGS"]


@pytest.mark.parametrize("name", ALL)
def test_tensor_lr_must_have_one_element(name):
    cls = getattr(optim, name)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        cls([nn.Parameter(tg.ones(2))], lr=tg.tensor([0.1, 0.2]))
    cls([nn.Parameter(tg.ones(2))], lr=tg.tensor(0.1))  # one element: accepted


# -- swap_in_optimizer_params_and_state ---------------------------------------------------------

def _pair(cls, **kw):
    """An optimizer over ``live`` (two groups) after one step, and a shadow model."""
    live, shadow = nn.Linear(3, 2), nn.Linear(3, 2)
    with tg.no_grad():
        for i, (a, b) in enumerate(zip(live.parameters(), shadow.parameters())):
            a.copy_(tg.arange(a.numel(), dtype=tg.float32).reshape(a.shape) * 0.1 + i)
            b.copy_(tg.arange(b.numel(), dtype=tg.float32).reshape(b.shape) * -0.2 + i)
    opt = cls([{"params": [live.weight]}, {"params": [live.bias], "lr": 0.05}], **kw)
    live(tg.ones(1, 3)).sum().backward()
    opt.step()
    shadow(tg.ones(1, 3) * 2).pow(2).sum().backward()
    return live, shadow, opt


def _clone_sd(sd):
    return {"state": {k: {n: v.clone() if isinstance(v, tg.Tensor) else v
                          for n, v in s.items()} for k, s in sd["state"].items()},
            "param_groups": [dict(g) for g in sd["param_groups"]]}


@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9)),
                                    (optim.Adam, dict(lr=0.1)),
                                    (optim.AdamW, dict(lr=0.1, amsgrad=True))])
def test_swap_in_steps_the_given_tensors_with_the_given_state(cls, kw):
    live, shadow, opt = _pair(cls, **kw)
    osd = _clone_sd(opt.state_dict())
    osd["param_groups"][1]["lr"] = 0.5
    # the reference: a second optimizer over the shadow's parameters, loaded with osd
    ref_model = nn.Linear(3, 2)
    with tg.no_grad():
        for a, b in zip(ref_model.parameters(), shadow.parameters()):
            a.copy_(b)
            a.grad = b.grad.clone()
    ref = cls([{"params": [ref_model.weight]}, {"params": [ref_model.bias], "lr": 0.05}], **kw)
    ref.load_state_dict(_clone_sd(osd))
    ref.step()
    live_before = [p.detach().numpy().copy() for p in live.parameters()]
    live_state = {k: dict(v) for k, v in opt.state.items()}
    params_list = opt.param_groups[1]["params"]
    with optim.swap_in_optimizer_params_and_state(opt, dict(shadow.named_parameters()), osd):
        assert opt.param_groups[0]["params"][0] is shadow.weight
        assert opt.param_groups[1]["lr"] == 0.5
        opt.step()
    for a, b in zip(shadow.parameters(), ref_model.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    # the saved state moved in place as the reference's did
    for i, p in enumerate([ref_model.weight, ref_model.bias]):
        for key, value in ref.state[p].items():
            if isinstance(value, tg.Tensor) and key != "step":
                np.testing.assert_array_equal(osd["state"][i][key].numpy(), value.numpy())
    # the live optimizer is as it was
    assert opt.param_groups[1]["lr"] == 0.05 and opt.param_groups[1]["params"] is params_list
    assert {k: dict(v) for k, v in opt.state.items()} == live_state
    for a, b in zip(live.parameters(), live_before):
        np.testing.assert_array_equal(a.detach().numpy(), b)


def test_swap_in_drops_entries_made_inside_and_restores_on_error():
    live, shadow, opt = _pair(optim.SGD, lr=0.1, momentum=0.9)
    osd = _clone_sd(opt.state_dict())
    osd["state"] = {}  # no momentum buffers: the step makes new ones, in its own dicts
    with pytest.raises(KeyError):
        with optim.swap_in_optimizer_params_and_state(opt, dict(shadow.named_parameters()),
                                                      osd):
            opt.step()
            assert "momentum_buffer" in opt.state[shadow.weight]
            raise KeyError("inside")
    assert osd["state"] == {}
    assert opt.param_groups[0]["params"][0] is live.weight


SWAP_ERRORS = [
    (lambda o, p, sd: [], "requires a DCP-style optimizer state_dict"),
    (lambda o, p, sd: {"state": [], "param_groups": []}, "to be a dict mapping packed"),
    (lambda o, p, sd: {"state": {p: {}}, "param_groups": []}, "keyed by packed parameter ids"),
    (lambda o, p, sd: {"state": {0: 1}, "param_groups": []}, "entries to be dictionaries"),
    (lambda o, p, sd: {"state": {}, "param_groups": ()}, "to be a list of param-group dicts"),
    (lambda o, p, sd: {"state": {}, "param_groups": []}, "different number of parameter groups"),
    (lambda o, p, sd: {"state": {}, "param_groups": [3]}, "each optimizer param group"),
    (lambda o, p, sd: {"state": {}, "param_groups": [{"params": ["x"]}]},
     "entries keyed by packed parameter ids"),
    (lambda o, p, sd: {"state": {}, "param_groups": [{"params": [0, 1]}]},
     "param group 0 has a different number of params"),
    (lambda o, p, sd: {"state": {}, "param_groups": [
        {**{k: v for k, v in sd["param_groups"][0].items() if k != "lr"}, "foo": 1}]},
     "Keys only in swap-in: ['foo']. Keys only in live: ['lr']."),
    (lambda o, p, sd: {"state": {0: {}, 5: {}}, "param_groups": sd["param_groups"]},
     "got extra keys [5]"),
]


def _swap_error(i, lib):
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
    if i < 0:  # no state yet
        sd, bad = opt.state_dict(), opt.state_dict()
    else:
        p.grad = lib.ones(2)
        opt.step()
        sd = opt.state_dict()
        bad = SWAP_ERRORS[i][0](opt, p, sd)
    params = {} if i == -2 else {"w": p}
    try:
        with lib.optim.swap_in_optimizer_params_and_state(opt, params, bad):
            pass
    except RuntimeError as e:
        return str(e)
    return None


@pytest.mark.parametrize("i", range(-1, len(SWAP_ERRORS)))
def test_swap_in_checks_the_state_dict(i):
    text = "requires initialized optimizer state" if i < 0 else SWAP_ERRORS[i][1]
    message = _swap_error(i, tg)
    assert message is not None and text in message
    torch = pytest.importorskip("torch", minversion="2.13")
    assert message == _swap_error(i, torch)


# -- against torch ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kw,n", DIFF_CASES[:-1],
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(DIFF_CASES[:-1])])
def test_differentiable_nadam_asgd_match_torch(name, kw, n):
    torch = pytest.importorskip("torch", minversion="2.13")
    want = _differentiable_run(torch, name, X0, GRADS[:n], kw)
    got = _differentiable_run(tg, name, X0, GRADS[:n], kw)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    for k, (a, b) in enumerate(zip(got[1], want[1])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"input {k}")


FLAGS = [dict(), dict(foreach=True), dict(foreach=False), dict(fused=True), dict(fused=False),
         dict(differentiable=True), dict(maximize=True), dict(fused=True, foreach=True),
         dict(fused=True, differentiable=True)]


def _flag_outcome(lib, name, flags):
    p = lib.nn.Parameter(lib.tensor([1.0, 2.0, 3.0]))
    try:
        opt = getattr(lib.optim, name)([p], **({"lr": 0.1} if name == "SGD" else {}), **flags)
    except Exception as e:  # (what is compared: the type and the message's start)
        return "init", type(e).__name__, str(e).split(".__init__()")[-1][:60]
    try:
        p.grad = lib.tensor([0.1, -0.2, 0.3])
        opt.step((lambda: (p * p).sum()) if name == "LBFGS" else None)
    except Exception as e:
        return "step", type(e).__name__, str(e)[:40]
    return "ok", p.detach().tolist()


@pytest.mark.parametrize("name", ALL)
def test_option_flags_errors_match_torch(name):
    torch = pytest.importorskip("torch", minversion="2.13")
    for flags in FLAGS:
        want, got = _flag_outcome(torch, name, flags), _flag_outcome(tg, name, flags)
        if want[0] == "ok" and got[0] == "ok":
            np.testing.assert_allclose(got[1], want[1], rtol=1e-6, err_msg=str(flags))
        else:
            assert got == want, flags


VALUE_CASES = [
    ("SGD", dict(lr=0.1, maximize=True, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("Adam", dict(lr=0.1, maximize=True, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.1, maximize=True, amsgrad=True)),
    ("Adam", dict(lr=0.1, foreach=True)), ("Adam", dict(lr=0.1, fused=True)),
    ("Adam", dict(lr=0.1, decoupled_weight_decay=True, weight_decay=0.3)),
    ("RMSprop", dict(lr=0.01, maximize=True, centered=True, momentum=0.5, weight_decay=0.1)),
    ("Adadelta", dict(lr=1.0, maximize=True, weight_decay=0.1, rho=0.5)),
    ("Adagrad", dict(lr=0.1, maximize=True, lr_decay=0.01, weight_decay=0.1,
                     initial_accumulator_value=0.1)),
    ("Adagrad", dict(lr=0.1, fused=True)),
    ("Rprop", dict(lr=0.01, maximize=True, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1))),
    ("Adamax", dict(lr=0.1, maximize=True, weight_decay=0.1)),
    ("NAdam", dict(lr=0.1, maximize=True, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.1, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(lr=0.1, maximize=True, weight_decay=0.1)),
    ("RAdam", dict(lr=0.1, decoupled_weight_decay=True, weight_decay=0.1, betas=(0.8, 0.9))),
    ("ASGD", dict(lr=0.1, maximize=True, weight_decay=0.1, t0=3, lambd=0.01)),
    ("Adafactor", dict(lr=0.1, maximize=True, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.1, beta2_decay=-0.5, d=2.0, eps=(None, 1e-2))),
]


def _values(lib, name, kw):
    x0 = np.random.default_rng(3).standard_normal((3, 4))
    p = lib.nn.Parameter(lib.tensor(x0))
    opt = getattr(lib.optim, name)([p], **kw)
    for k in range(12):
        p.grad = lib.tensor(np.sin(x0 * (k + 1)) + 0.1 * k)
        opt.step()
    sd = opt.state_dict()
    kinds = {k: (type(v).__name__, str(getattr(v, "dtype", "")).split(".")[-1],
                 tuple(getattr(v, "shape", ()))) for k, v in sd["state"][0].items()}
    return p.detach().numpy(), kinds, sd["param_groups"]


@pytest.mark.parametrize("name,kw", VALUE_CASES,
                         ids=[f"{c}-{i}" for i, (c, _) in enumerate(VALUE_CASES)])
def test_values_and_state_dicts_match_torch(name, kw):
    torch = pytest.importorskip("torch", minversion="2.13")
    want, got = _values(torch, name, kw), _values(tg, name, kw)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-14)
    assert got[1] == want[1]
    assert got[2] == want[2]


def _hooks_log(lib, optmod):
    log = []
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.Adam([p], lr=0.1)
    opt.register_state_dict_pre_hook(lambda o: log.append("sd_pre1"))
    opt.register_state_dict_pre_hook(lambda o: log.append("sd_pre0"), prepend=True)

    def post(o, sd):
        log.append(("sd_post", sorted(sd)))
        sd["extra"] = 1

    opt.register_state_dict_post_hook(post)
    opt.register_state_dict_post_hook(lambda o, sd: log.append(("sd_post0", "extra" in sd)),
                                      prepend=True)

    def load_pre(o, sd):
        log.append(("load_pre", sorted(sd)))
        return {k: v for k, v in sd.items() if k != "extra"}

    opt.register_load_state_dict_pre_hook(load_pre)
    opt.register_load_state_dict_post_hook(lambda o: log.append("load_post"))
    opt.register_load_state_dict_post_hook(lambda o: log.append("load_post0"), prepend=True)
    opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", len(a), sorted(k))))
    opt.register_step_post_hook(lambda o, a, k: log.append(("post", len(a), sorted(k))))
    handles = [optmod.register_optimizer_step_pre_hook(lambda o, a, k: log.append("gpre")),
               optmod.register_optimizer_step_post_hook(lambda o, a, k: log.append("gpost"))]
    try:
        p.grad = lib.ones(2)
        opt.step()
        opt.step(closure=lambda: lib.tensor(1.0))
        opt.load_state_dict(opt.state_dict())
    finally:
        for h in handles:
            h.remove()
    opt.step()
    log.append(p.detach().tolist())
    return log


def test_hooks_order_matches_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    import torch.optim.optimizer as torch_optimizer

    from tritongrad.optim import optimizer as tg_optimizer
    got = _hooks_log(tg, tg_optimizer)
    assert got[:4] == ["gpre", ("pre", 1, []), ("post", 1, []), "gpost"]
    want = _hooks_log(torch, torch_optimizer)
    assert got[:-1] == want[:-1]
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-6)
    assert math.isfinite(got[-1][0])


def _sparse_adam_run(lib, kw):
    w0 = np.random.default_rng(0).standard_normal((6, 3))
    emb = lib.nn.Embedding(6, 3, sparse=True)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(w0, dtype=lib.float32))
    opt = lib.optim.SparseAdam(emb.parameters(), **kw)
    for i in range(8):
        opt.zero_grad()
        idx = lib.tensor([[0, 2, 2, 5][i % 4:], [1, 1, 3]][i % 2])
        (emb(idx) ** 2 * (i + 1)).sum().backward()
        opt.step()
    sd = opt.state_dict()
    kinds = {k: (type(v).__name__, str(getattr(v, "dtype", "")).split(".")[-1])
             for k, v in sd["state"][0].items()}
    # a reloaded optimizer takes the next step as the first would have
    again = lib.optim.SparseAdam(emb.parameters(), **kw)
    again.load_state_dict(sd)
    opt.zero_grad()
    emb(lib.tensor([1, 4])).sum().backward()
    again.step()
    return emb.weight.detach().numpy(), kinds, sd["param_groups"], sd["state"][0]["step"]


@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.1, maximize=True, betas=(0.5, 0.9)),
                                dict(lr=0.05, eps=1e-3)])
def test_sparse_adam_matches_torch(kw):
    torch = pytest.importorskip("torch", minversion="2.13")
    want, got = _sparse_adam_run(torch, kw), _sparse_adam_run(tg, kw)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
    assert got[1:] == want[1:]


def test_pytorch_helpers_of_the_classes():
    # Adagrad.share_memory shares each state sum; Optimizer.profile_hook_step leaves a step
    # hooked once; the hook type aliases are there; SequentialLR.recursive_undo walks nested
    # composites
    p = nn.Parameter(tg.ones(2))
    opt = optim.Adagrad([p], lr=0.1, initial_accumulator_value=0.5)
    opt.share_memory()
    assert opt.state[p]["sum"].is_shared()
    calls = []

    class Decorated(optim.SGD):
        @optim.Optimizer.profile_hook_step
        def step(self, closure=None):
            return super().step(closure)

    q = nn.Parameter(tg.ones(2))
    d = Decorated([q], lr=0.5)
    d.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    q.grad = tg.ones(2)
    d.step()
    assert calls == ["pre"] and q.tolist() == [0.5, 0.5]
    assert optim.Optimizer.OptimizerPreHook is not None
    assert optim.Optimizer.OptimizerPostHook is not None
    S = tg.optim.lr_scheduler
    o = optim.SGD([nn.Parameter(tg.ones(1))], lr=0.1)
    inner = S.ChainedScheduler([S.StepLR(o, 2), S.ExponentialLR(o, 0.5)])
    seq = S.SequentialLR(o, [S.ConstantLR(o, 0.5, total_iters=2), inner], milestones=[2])
    before = [s.last_epoch for s in inner._schedulers]
    seq.recursive_undo(inner)
    assert [s.last_epoch for s in inner._schedulers] == [e - 1 for e in before]


# -- capturable=True (Note [capturable step counts]) -------------------------------------------

CAPTURABLE = [("RMSprop", dict(momentum=0.5, centered=True)), ("Adadelta", {}), ("Rprop", {}),
              ("Adamax", dict(weight_decay=0.1)), ("NAdam", dict(weight_decay=0.1)),
              ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
              # (beta2 = 0.9: the rectified branch from the sixth step on)
              ("RAdam", dict(betas=(0.9, 0.9))), ("ASGD", dict(t0=3, lambd=0.05))]
# (the updates that do not read the count: the same numbers as the CPU steps)
COUNT_FREE = ("RMSprop", "Adadelta", "Rprop")


@pytest.mark.parametrize("name,kw", CAPTURABLE)
def test_capturable_is_accepted_and_refuses_cpu_parameters_at_step(name, kw):
    # as PyTorch: built with capturable=True, the first step on CPU parameters raises (PyTorch
    # an AssertionError, tritongrad a RuntimeError with its message)
    p = nn.Parameter(tg.ones(3))
    opt = getattr(optim, name)([p], capturable=True, **kw)
    assert opt.defaults["capturable"] is True
    p.grad = tg.ones(3)
    with pytest.raises(RuntimeError, match=r"If capturable=True, params and state_steps must "
                                           r"be on supported devices: \['cuda'\]"):
        opt.step()


def _adamax_f32_ref(x, grads, lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1):
    """Adamax with PyTorch's capturable bias correction: float32 ops on the float32 count."""
    m, u = np.zeros_like(x), np.zeros_like(x)
    for t, g in enumerate(grads, 1):
        g = g + weight_decay * x
        m = m + (1 - betas[0]) * (g - m)
        u = np.maximum(u * betas[1], np.abs(g) + eps)
        neg = (f32(betas[0]) ** f32(t) - f32(1)) / f32(lr)
        x = x + m / (u * float(neg))
    return x


def _nadam_f32_ref(x, grads, lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                   momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    """NAdam as PyTorch's capturable step computes it: mu, mu_next, the momentum product, the
    second bias correction and both step sizes float32 tensor ops on the float32 count."""
    b1, b2 = betas
    m, v, P = np.zeros_like(x), np.zeros_like(x), f32(1)
    for t, g in enumerate(grads, 1):
        x, g = _maximize_and_decay(x, g, lr, weight_decay, decoupled_weight_decay, maximize)
        st = f32(t)
        mu = f32(b1) * (f32(1) - f32(0.5) * f32(0.96) ** (st * f32(momentum_decay)))
        mu_next = f32(b1) * (f32(1) - f32(0.5) * f32(0.96) ** ((st + f32(1))
                                                                * f32(momentum_decay)))
        P = f32(P * mu)
        m = m + (1 - b1) * (g - m)
        v = v * b2 + (1 - b2) * g * g
        denom = np.sqrt(v / float(f32(1) - f32(b2) ** st)) + eps
        size = (f32(-lr) * (f32(1) - mu)) / (f32(1) - P)
        size_next = (f32(-lr) * mu_next) / (f32(1) - P * mu_next)
        x = x + g * float(size) / denom + m * float(size_next) / denom
    return x


@pytest.mark.parametrize("name,kw", CAPTURABLE)
def test_capturable_step_replays_in_a_cuda_graph(name, kw):
    # one eager step makes the state (its count on the device), then a captured step replayed
    # for each further gradient: the very numbers of eager capturable steps, and those of CPU
    # steps up to the float32 rounding of what is computed from the count
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    grads = GRADS if name == "RAdam" else GRADS[:4]  # (the emulated device is slow)
    cls = getattr(optim, name)
    ref = nn.Parameter(tg.tensor(X0))
    eager = nn.Parameter(tg.tensor(X0, device="cuda"))
    ref_opt = cls([ref], lr=0.1, **kw)
    eager_opt = cls([eager], lr=0.1, capturable=True, **kw)
    for g in grads:
        ref.grad, eager.grad = tg.tensor(g), tg.tensor(g, device="cuda")
        ref_opt.step()
        eager_opt.step()
    p = nn.Parameter(tg.tensor(X0, device="cuda"))
    p.grad = tg.tensor(grads[0], device="cuda")
    opt = cls([p], lr=0.1, capturable=True, **kw)
    opt.step()
    assert all(v.device.type == "cuda" for v in opt.state[p].values())
    graph = tg.cuda.CUDAGraph()
    with tg.cuda.graph(graph):
        opt.step()
    for g in grads[1:]:
        p.grad.copy_(tg.tensor(g, device="cuda"))
        graph.replay()
    got = p.detach().cpu().numpy()
    assert float(opt.state[p]["step"].cpu()) == len(grads)
    np.testing.assert_array_equal(got, eager.detach().cpu().numpy())
    if name in COUNT_FREE:
        np.testing.assert_allclose(got, ref.detach().numpy(), rtol=1e-12, atol=1e-15)
    else:  # (float32 scalars there: NAdam's mu is 1 - 0.5 * 0.96^(t psi) in float32, and
        # 1 - beta2^t cancels at t = 1: its float32 rounding is 1e-4 of it for beta2 = 0.999;
        # the H200 was 1.5e-5 off the float64 steps, the emulated device under 1e-5)
        np.testing.assert_allclose(got, ref.detach().numpy(), rtol=1e-4, atol=1e-6)
        if name != "ASGD":  # (bias corrections from the float32 count, not float64 ones)
            assert not np.array_equal(got, ref.detach().numpy())
    if name == "NAdam":
        np.testing.assert_allclose(got, _nadam_f32_ref(X0, grads, lr=0.1, **kw), rtol=0,
                                   atol=3e-8)
    if name == "Adamax":
        # the bias correction in float32, as PyTorch's capturable step has it: ~1e-8 from the
        # float32 reference (beta1 ** t may differ by an ulp), ~1e-7 from the float64 steps
        np.testing.assert_allclose(got, _adamax_f32_ref(X0, grads), rtol=0, atol=3e-8)
