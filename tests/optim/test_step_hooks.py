"""Optimizer step hooks (PyTorch's ``register_step_pre_hook``/``register_step_post_hook`` and
the global ``register_optimizer_step_*_hook``): order, arguments, argument replacement,
removal, subclasses, and the error for a bad pre-hook return value."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.optim.optimizer as optimizer_module


def _param_with_grad(value=1.0, grad=0.5):
    p = tg.nn.Parameter(tg.tensor([value]))
    p.grad = tg.tensor([grad])
    return p


@pytest.mark.parametrize("cls", [tg.optim.SGD, tg.optim.Adam, tg.optim.AdamW, tg.optim.RMSprop,
                                 tg.optim.Adagrad])
def test_hooks_run_in_pytorchs_order_with_the_optimizer_first_in_args(cls):
    p = _param_with_grad()
    opt = cls([p], lr=0.1)
    calls = []
    g_pre = optimizer_module.register_optimizer_step_pre_hook(
        lambda o, a, k: calls.append(("global pre", a[0] is o, dict(k))))
    g_post = optimizer_module.register_optimizer_step_post_hook(
        lambda o, a, k: calls.append(("global post", p.item() != 1.0)))
    try:
        opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", p.item() == 1.0)))
        opt.register_step_post_hook(lambda o, a, k: calls.append(("post", p.item() != 1.0)))
        opt.step(closure=None)
    finally:
        g_pre.remove()
        g_post.remove()
    # the pre-hooks see the parameter before the update, the post-hooks after it
    assert calls == [("global pre", True, {"closure": None}), ("pre", True), ("post", True),
                     ("global post", True)]


def test_pre_hook_replaces_the_arguments_of_step():
    p = tg.nn.Parameter(tg.tensor([3.0]))
    opt = tg.optim.LBFGS([p], lr=1.0, max_iter=5)
    seen = []

    def closure():
        opt.zero_grad()
        loss = (p - 1.0).pow(2).sum()
        loss.backward()
        seen.append(1)
        return loss

    # step is called without its closure: the pre-hook supplies it
    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": closure}))
    opt.step()
    assert seen and abs(p.item() - 1.0) < 1e-4


def test_removed_hooks_no_longer_run_and_handles_work_as_context_managers():
    p = _param_with_grad()
    opt = tg.optim.SGD([p], lr=0.1)
    calls = []
    handle = opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    with opt.register_step_pre_hook(lambda o, a, k: calls.append("pre")):
        opt.step()
    opt.step()
    handle.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 3 * 0.1 * 0.5], rtol=1e-6)


def test_hooks_run_once_for_a_subclass_calling_super_step():
    class Clipped(tg.optim.SGD):
        def step(self, closure=None):
            for group in self.param_groups:
                for q in group["params"]:
                    q.grad.clamp_(-0.1, 0.1)
            return super().step(closure)

    p = _param_with_grad(grad=5.0)
    opt = Clipped([p], lr=1.0)
    calls = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    opt.step()
    assert calls == ["pre", "post"]
    np.testing.assert_allclose(p.detach().numpy(), [0.9], rtol=1e-6)


def test_post_hook_keeps_an_ema_of_the_weights():
    model = tg.nn.Linear(3, 1)
    ema = tg.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=tg.optim.swa_utils.get_ema_multi_avg_fn(0.5))
    opt = tg.optim.SGD(model.parameters(), lr=0.1)
    opt.register_step_post_hook(lambda o, a, k: ema.update_parameters(model))
    expected = model.weight.detach().numpy().astype(np.float64).copy()
    for i in range(3):
        opt.zero_grad()
        model(tg.ones(2, 3)).sum().backward()
        opt.step()
        w = model.weight.detach().numpy().astype(np.float64)
        # AveragedModel copies the first update, then averages with decay 0.5
        expected = w.copy() if i == 0 else 0.5 * expected + 0.5 * w
    np.testing.assert_allclose(ema.module.weight.detach().numpy(), expected, rtol=1e-6)


def test_a_pre_hook_returning_something_else_raises_naming_the_step():
    opt = tg.optim.Adam([_param_with_grad()], lr=0.1)
    bad = opt.register_step_pre_hook(lambda o, a, k: 5)
    with pytest.raises(RuntimeError, match=r"Adam.step: .*must return None or a tuple of "
                                           r"\(new_args, new_kwargs\), but got 5"):
        opt.step()
    bad.remove()
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    opt.step()  # the failed step left nothing behind that stops the hooks from running
    assert calls == [1]


def test_a_deep_copy_drops_the_hooks_as_pytorch_does():
    opt = tg.optim.SGD([_param_with_grad()], lr=0.1)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    clone = copy.deepcopy(opt)
    clone.step()
    assert calls == []


def test_scheduler_tracking_still_sees_the_hooked_step():
    import warnings
    p = _param_with_grad()
    opt = tg.optim.SGD([p], lr=0.1)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    sched = tg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
    assert calls == [1] and opt.param_groups[0]["lr"] == pytest.approx(0.05)


# -- state_dict hooks ---------------------------------------------------------------------------

def _trained_adam():
    p = _param_with_grad()
    opt = tg.optim.Adam([p], lr=0.1)
    opt.step()
    return p, opt


def test_state_dict_hooks_order_and_replacement():
    _, opt = _trained_adam()
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_pre_hook(lambda o: calls.append("first pre"), prepend=True)

    def add_note(o, sd):
        calls.append("post")
        sd["note"] = "kept in place"

    def replace(o, sd):
        calls.append("second post")
        return {**sd, "replaced": True}

    opt.register_state_dict_post_hook(add_note)
    opt.register_state_dict_post_hook(replace)
    sd = opt.state_dict()
    assert calls == ["first pre", "pre", "post", "second post"]
    assert sd["note"] == "kept in place" and sd["replaced"] is True
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}


def test_load_state_dict_pre_hook_edits_a_copy_and_post_hook_runs_after_loading():
    p, opt = _trained_adam()
    saved = opt.state_dict()
    saved = {**saved, "note": 1}
    p2 = tg.nn.Parameter(tg.tensor([1.0]))
    opt2 = tg.optim.Adam([p2], lr=0.5)
    seen = []

    def drop_note(o, sd):
        sd.pop("note")
        group = dict(sd["param_groups"][0], lr=0.01)  # loaded instead of the saved lr
        return {**sd, "param_groups": [group]}

    opt2.register_load_state_dict_pre_hook(drop_note)
    opt2.register_load_state_dict_post_hook(lambda o: seen.append(o.param_groups[0]["lr"]))
    opt2.load_state_dict(saved)
    assert "note" in saved  # the caller's dict is not changed
    assert seen == [0.01]
    np.testing.assert_allclose(opt2.state[p2]["exp_avg"].numpy(),
                               opt.state[p]["exp_avg"].numpy())


def test_removed_state_dict_hook_no_longer_runs():
    _, opt = _trained_adam()
    handle = opt.register_state_dict_post_hook(lambda o, sd: {"gone": True})
    handle.remove()
    assert "state" in opt.state_dict()
