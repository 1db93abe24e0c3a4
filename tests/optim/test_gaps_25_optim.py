"""PyTorch 2.13's optimizer surface where a differential sweep found tritongrad apart: named
parameters (``param_names``), the repr of several groups, SGD's empty state without momentum,
the order of state_dict keys, LBFGS's ``al`` and the lr schedulers' state dicts. The expected
values are PyTorch 2.13's, written out (these tests run without torch)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import optim

ALL = [optim.SGD, optim.Adam, optim.AdamW, optim.Adagrad, optim.Adamax, optim.ASGD,
       optim.Rprop, optim.RMSprop, optim.NAdam, optim.RAdam, optim.Adadelta, optim.LBFGS,
       optim.SparseAdam, optim.Adafactor, optim.Muon]


def _model():
    """A tiny regression model with fixed weights (no RNG)."""
    m = tg.nn.Linear(3, 2)
    with tg.no_grad():
        m.weight.copy_(tg.tensor([[0.3, -0.2, 0.1], [0.05, 0.4, -0.3]]))
        m.bias.copy_(tg.tensor([0.1, -0.1]))
    return m


_X = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0], [-1.5, 1.0, 0.0], [2.0, 0.0, 1.0]],
              dtype=np.float32)


def _closure(m, opt):
    def closure():
        opt.zero_grad()
        loss = (m(tg.tensor(_X)) - 1.0).pow(2).sum()
        loss.backward()
        return loss
    return closure


def _kwargs(cls) -> dict:
    return {"lr": 0.1} if cls in (optim.SGD, optim.Muon) else {}


def _named(m, cls):
    # Muon takes matrices only
    return [(n, p) for n, p in m.named_parameters() if cls is not optim.Muon or p.ndim == 2]


# -- named parameters -------------------------------------------------------------------------

@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_optimizer_takes_named_parameters(cls):
    m = _model()
    opt = cls(_named(m, cls), **_kwargs(cls))
    names = ["weight"] if cls is optim.Muon else ["weight", "bias"]
    assert opt.param_groups[0]["param_names"] == names
    assert opt.param_groups[0]["params"][0] is m.weight
    group = opt.state_dict()["param_groups"][0]
    assert group["param_names"] == names
    assert list(group)[0] == "param_names" and list(group)[-1] == "params"
    assert f"    param_names: {names}\n" in repr(opt)
    if cls is not optim.SparseAdam:  # (it needs sparse gradients)
        opt.step(_closure(m, opt))


def test_named_groups_keep_the_callers_key_order_then_param_names():
    m = _model()
    opt = optim.SGD([{"lr": 0.3, "params": [("w", m.weight)]},
                     {"params": [("b", m.bias)]}], lr=0.1)
    assert list(opt.param_groups[0]) == ["lr", "params", "param_names", "momentum", "dampening",
                                         "weight_decay", "nesterov", "maximize", "foreach",
                                         "differentiable", "fused"]
    assert [g["param_names"] for g in opt.param_groups] == [["w"], ["b"]]
    assert [g["lr"] for g in opt.state_dict()["param_groups"]] == [0.3, 0.1]


def test_names_on_some_parameters_only_are_refused():
    m = _model()
    with pytest.raises(ValueError, match=r"^all optimizer params should be with/without names\. "
                                         r"Some param names are missing$"):
        optim.Adam([("weight", m.weight), m.bias])


@pytest.mark.parametrize("first_named", [True, False])
def test_named_and_unnamed_groups_are_not_mixed(first_named):
    m = _model()
    w, b = ("weight", m.weight), m.bias
    groups = [{"params": [w]}, {"params": [b]}] if first_named else \
        [{"params": [b]}, {"params": [w]}]
    kind = "without" if first_named else "with"
    with pytest.raises(ValueError, match=rf"^all optimizer param groups should be with/without "
                                         rf"names\. cannot add param group {kind} names to the "
                                         rf"optimizer$"):
        optim.SGD(groups, lr=0.1)


def test_repr_separates_groups_with_a_blank_line():
    m = _model()
    opt = optim.SGD([{"params": [m.weight]}, {"params": [m.bias], "lr": 0.5}], lr=0.1)
    keys = ["dampening: 0", "differentiable: False", "foreach: None", "fused: None",
            "lr: {}", "maximize: False", "momentum: 0", "nesterov: False", "weight_decay: 0"]
    group = "Parameter Group {}\n" + "".join(f"    {k}\n" for k in keys)
    assert repr(opt) == ("SGD (\n" + group.format(0, 0.1) + "\n" + group.format(1, 0.5)
                         + ")")
    assert repr(optim.SGD([m.bias], lr=0.1)) == "SGD (\n" + group.format(0, 0.1) + ")"


# -- load_state_dict and param_names ----------------------------------------------------------

def _sgd(m, names=None):
    params = m.parameters() if names is None else zip(names, m.parameters())
    return optim.SGD(params, lr=0.2)


def test_saved_names_replace_the_optimizers_and_missing_ones_keep_them():
    m = _model()
    saved = _sgd(m, ["a", "b"]).state_dict()
    opt = _sgd(m, ["x", "y"])
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["param_names"] == ["a", "b"]
    # an unnamed state dict keeps the optimizer's names (added after "params", as PyTorch)
    opt = _sgd(m, ["x", "y"])
    opt.load_state_dict(_sgd(m).state_dict())
    assert opt.param_groups[0]["param_names"] == ["x", "y"]
    assert list(opt.param_groups[0])[-2:] == ["params", "param_names"]
    # an unnamed optimizer takes the saved names, and from then on refuses unnamed groups
    opt = _sgd(m)
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["param_names"] == ["a", "b"]
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [tg.nn.Parameter(tg.ones(2))]})


def test_names_never_match_parameters_and_the_callers_dict_is_not_shared():
    m = _model()
    src = optim.SGD(m.named_parameters(), lr=0.1, momentum=0.9)
    src.step(_closure(m, src))
    saved = src.state_dict()
    # names in the other order: the state still goes by number (weight's buffer to weight)
    dst = optim.SGD([("bias", m.weight), ("weight", m.bias)], lr=0.1, momentum=0.9)
    dst.load_state_dict(saved)
    assert tuple(dst.state[m.weight]["momentum_buffer"].shape) == (2, 3)
    dst.param_groups[0]["param_names"].append("extra")
    assert saved["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_a_group_keeps_the_saved_key_order():
    m = _model()
    opt = _sgd(m, ["a", "b"])
    saved = opt.state_dict()
    group = saved["param_groups"][0]
    saved["param_groups"][0] = {"params": group.pop("params"), **group}
    opt.load_state_dict(saved)
    assert list(opt.param_groups[0])[:3] == ["params", "param_names", "lr"]


# -- per-parameter state ----------------------------------------------------------------------

@pytest.mark.parametrize("fused", [None, False])
def test_sgd_without_momentum_keeps_no_state(fused):
    m = _model()
    opt = optim.SGD(m.parameters(), lr=0.1, fused=fused)
    before = m.weight.detach().numpy().copy()
    for _ in range(2):
        opt.step(_closure(m, opt))
    assert not np.allclose(m.weight.detach().numpy(), before)  # (it did update)
    assert len(opt.state) == 0
    assert opt.state_dict()["state"] == {}
    opt.load_state_dict(opt.state_dict())
    assert len(opt.state) == 0
    with_momentum = optim.SGD(m.parameters(), lr=0.1, momentum=0.5, fused=fused)
    with_momentum.step(_closure(m, with_momentum))
    assert [list(s) for s in with_momentum.state_dict()["state"].values()] == \
        [["momentum_buffer"], ["momentum_buffer"]]


def test_sgd_without_momentum_keeps_no_state_for_sparse_gradients():
    emb = tg.nn.Embedding(5, 3, sparse=True)
    opt = optim.SGD(emb.parameters(), lr=0.1)
    emb(tg.tensor([1, 3])).sum().backward()
    opt.step()
    assert len(opt.state) == 0


# PyTorch 2.13's order of the group hyperparameters and of a parameter's state, after one step
KEY_ORDER = [
    (optim.SGD, {"lr": 0.1, "momentum": 0.9},
     ["lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "foreach",
      "differentiable", "fused"],
     ["momentum_buffer"]),
    (optim.Adam, {},
     ["lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable",
      "differentiable", "fused", "decoupled_weight_decay"],
     ["step", "exp_avg", "exp_avg_sq"]),
    (optim.AdamW, {},
     ["lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable",
      "differentiable", "fused", "decoupled_weight_decay"],
     ["step", "exp_avg", "exp_avg_sq"]),
    (optim.Adagrad, {},
     ["lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value", "foreach",
      "maximize", "differentiable", "fused"],
     ["step", "sum"]),
    (optim.Adamax, {},
     ["lr", "betas", "eps", "weight_decay", "foreach", "maximize", "differentiable",
      "capturable"],
     ["step", "exp_avg", "exp_inf"]),
    (optim.ASGD, {},
     ["lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable",
      "capturable"],
     ["step", "eta", "mu", "ax"]),
    (optim.Rprop, {},
     ["lr", "etas", "step_sizes", "foreach", "maximize", "differentiable", "capturable"],
     ["step", "prev", "step_size"]),
    (optim.RMSprop, {"momentum": 0.9, "centered": True},
     ["lr", "momentum", "alpha", "eps", "centered", "weight_decay", "capturable", "foreach",
      "maximize", "differentiable"],
     ["step", "square_avg", "momentum_buffer", "grad_avg"]),
    (optim.NAdam, {},
     ["lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay",
      "maximize", "foreach", "capturable", "differentiable"],
     ["step", "mu_product", "exp_avg", "exp_avg_sq"]),
    (optim.RAdam, {},
     ["lr", "betas", "eps", "weight_decay", "maximize", "foreach", "capturable",
      "decoupled_weight_decay", "differentiable"],
     ["step", "exp_avg", "exp_avg_sq"]),
    (optim.Adadelta, {},
     ["lr", "rho", "eps", "weight_decay", "maximize", "capturable", "foreach",
      "differentiable"],
     ["step", "square_avg", "acc_delta"]),
    (optim.LBFGS, {},
     ["lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size",
      "line_search_fn"],
     ["func_evals", "n_iter", "al", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
      "prev_flat_grad", "prev_loss"]),
    (optim.Adafactor, {},
     ["lr", "beta2_decay", "eps", "d", "weight_decay", "foreach", "maximize"],
     ["step", "row_var", "col_var"]),
    (optim.Muon, {"lr": 0.1},
     ["lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps",
      "adjust_lr_fn"],
     ["momentum_buffer"]),
]


@pytest.mark.parametrize("cls, kwargs, group_keys, state_keys", KEY_ORDER,
                         ids=[c[0].__name__ for c in KEY_ORDER])
def test_state_dict_keys_are_in_pytorchs_order(cls, kwargs, group_keys, state_keys):
    m = _model()
    opt = cls([p for _, p in _named(m, cls)], **kwargs)
    opt.step(_closure(m, opt))
    sd = opt.state_dict()
    assert list(sd["param_groups"][0]) == group_keys + ["params"]
    assert list(sd["state"][0]) == state_keys


def test_sparse_adam_group_keys_are_in_pytorchs_order():
    emb = tg.nn.Embedding(5, 3, sparse=True)
    opt = optim.SparseAdam(emb.named_parameters())
    emb(tg.tensor([1, 3])).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert list(sd["param_groups"][0]) == ["param_names", "lr", "betas", "eps", "maximize",
                                           "params"]
    assert list(sd["state"][0]) == ["step", "exp_avg", "exp_avg_sq"]


def test_lbfgs_keeps_al_once_the_recursion_has_run():
    w = tg.nn.Parameter(tg.tensor([1.0, -2.0, 0.5]))
    scale = tg.tensor([1.0, 3.0, 0.5])
    opt = optim.LBFGS([w], lr=0.5, max_iter=1)

    def closure():
        opt.zero_grad()
        loss = (scale * (w - 1.0) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    assert "al" not in opt.state[w]  # the first iteration runs no recursion (PyTorch's too)
    opt.step(closure)
    al = opt.state[w]["al"]
    assert list(opt.state[w])[-1] == "al" and len(al) == 100  # one slot per history entry
    assert al[0] == pytest.approx(5.1706, abs=1e-4) and al[1] is None   # PyTorch 2.13's
    np.testing.assert_allclose(w.detach().numpy(), [1.0, -0.2560, 0.5832], atol=1e-4)


# -- round trips ------------------------------------------------------------------------------

ROUND_TRIP = [(optim.SGD, {"lr": 0.05}), (optim.SGD, {"lr": 0.05, "momentum": 0.9}),
              (optim.NAdam, {"lr": 0.05}), (optim.RMSprop, {"lr": 0.01, "momentum": 0.5}),
              (optim.RAdam, {"lr": 0.05}), (optim.Adadelta, {"lr": 1.0}),
              (optim.LBFGS, {"lr": 0.5, "max_iter": 3, "history_size": 2})]


@pytest.mark.parametrize("cls, kwargs", ROUND_TRIP,
                         ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(ROUND_TRIP)])
def test_a_named_state_dict_saved_mid_training_resumes_the_same_trajectory(cls, kwargs):
    m = _model()
    opt = cls(m.named_parameters(), **kwargs)
    for _ in range(3):
        opt.step(_closure(m, opt))
    saved = copy.deepcopy(opt.state_dict())
    weights = copy.deepcopy(m.state_dict())
    for _ in range(3):
        opt.step(_closure(m, opt))
    m2 = _model()
    m2.load_state_dict(weights)
    opt2 = cls(m2.named_parameters(), **kwargs)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["param_names"] == ["weight", "bias"]
    for _ in range(3):
        opt2.step(_closure(m2, opt2))
    for a, b in zip(m.parameters(), m2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert not np.allclose(m.weight.detach().numpy(), weights["weight"].numpy())


# -- lr schedulers ----------------------------------------------------------------------------

def _sched_opt():
    return optim.SGD(_model().parameters(), lr=0.1, momentum=0.9)


def test_cyclic_lr_load_takes_the_scale_fn_key_out_of_the_callers_dict():
    sched = optim.lr_scheduler.CyclicLR(_sched_opt(), 0.01, 0.1, step_size_up=3)
    for _ in range(4):
        sched.optimizer.step()
        sched.step()
    saved = sched.state_dict()
    assert saved["_scale_fn_custom"] is None
    other = optim.lr_scheduler.CyclicLR(_sched_opt(), 0.01, 0.1, step_size_up=3)
    other.load_state_dict(saved)
    assert "_scale_fn_custom" not in saved   # popped, as PyTorch's load_state_dict does
    assert other.last_epoch == 4 and other.get_last_lr() == sched.get_last_lr()
    other.load_state_dict(saved)   # (loads again; PyTorch would raise KeyError here)
    assert other._scale_fn_custom is None and other.scale_fn(3) == 1.0


def test_cyclic_lr_custom_scale_object_round_trip():
    class Halve:
        def __init__(self):
            self.base = 0.5

        def __call__(self, x):
            return self.base ** x

    fn = Halve()
    sched = optim.lr_scheduler.CyclicLR(_sched_opt(), 0.01, 0.1, step_size_up=2, scale_fn=fn)
    fn.base = 0.25
    saved = sched.state_dict()
    assert saved["_scale_fn_custom"] == {"base": 0.25}
    fresh = Halve()
    other = optim.lr_scheduler.CyclicLR(_sched_opt(), 0.01, 0.1, step_size_up=2,
                                        scale_fn=fresh)
    other.load_state_dict(saved)
    assert fresh.base == 0.25 and other.scale_fn(2) == 0.0625


def test_one_cycle_lr_state_dict_order():
    sched = optim.lr_scheduler.OneCycleLR(_sched_opt(), 0.1, total_steps=10)
    assert list(sched.state_dict()) == ["total_steps", "_schedule_phases", "_anneal_func_type",
                                        "cycle_momentum", "use_beta1", "base_lrs",
                                        "last_epoch", "_step_count", "_is_initial",
                                        "_get_lr_called_within_step", "_last_lr"]
