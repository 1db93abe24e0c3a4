"""optim.swa_utils: AveragedModel (SWA mean, EMA through avg_fn and multi_avg_fn, buffers),
SWALR's annealing and update_bn, against values computed by hand in float64."""

import math

import numpy as np
import pytest
from tritongrad.optim import swa_utils as su

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn


def _model(device="cpu"):
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).double().to(device)


def _run(averaged, model, steps=4, device="cpu"):
    """``steps`` updates of ``model`` (a forward in training mode, which moves the batch norm
    statistics, and a random step of the parameters), each followed by
    ``averaged.update_parameters(model)``; returns every parameter's and buffer's values
    after each step."""
    rng = np.random.default_rng(3)
    history = []
    for _ in range(steps):
        model(tg.tensor(rng.standard_normal((5, 3)), device=device))
        with tg.no_grad():
            for p in model.parameters():
                p.add_(tg.tensor(rng.standard_normal(tuple(p.shape)), device=device))
        averaged.update_parameters(model)
        history.append(([host(p).copy() for p in model.parameters()],
                        [host(b).copy() for b in model.buffers()]))
    return history


def test_swa_is_the_running_mean(device):
    model = _model(device)
    swa = su.AveragedModel(model)
    steps = 4 if device == "cpu" else 2  # (the emulated device is slow)
    history = _run(swa, model, steps, device=device)
    assert int(swa.n_averaged) == steps and swa.n_averaged.dtype is tg.int64
    for i, p in enumerate(swa.module.parameters()):
        expected = np.mean([params[i] for params, _ in history], axis=0)
        np.testing.assert_allclose(host(p), expected, rtol=1e-12)
    # without use_buffers, the buffers are the model's latest
    for b, expected in zip(swa.module.buffers(), history[-1][1]):
        np.testing.assert_array_equal(host(b), expected)
    x = tg.randn(2, 3, dtype=tg.float64, device=device)
    swa.eval()
    np.testing.assert_array_equal(host(swa(x)), host(swa.module(x)))


@pytest.mark.parametrize("how", ["avg_fn", "multi_avg_fn"])
def test_ema(how):
    decay = 0.8
    model = _model()
    fn = (su.get_ema_avg_fn(decay) if how == "avg_fn" else su.get_ema_multi_avg_fn(decay))
    ema = su.AveragedModel(model, **{how: fn}, use_buffers=True)
    history = _run(ema, model)
    own = list(ema.module.parameters()) + list(ema.module.buffers())
    for i, t in enumerate(own):
        values = [params[i] if i < len(params) else buffers[i - len(params)]
                  for params, buffers in history]
        expected = values[0].astype(np.float64)
        for v in values[1:]:
            expected = decay * expected + (1 - decay) * v
            if not t.dtype.is_floating_point:  # num_batches_tracked: truncated each time
                expected = np.trunc(expected)
        np.testing.assert_allclose(host(t), expected, rtol=1e-12)


def test_multi_avg_fn_gets_lists_per_device_and_dtype_and_avg_fn_each_tensor():
    model = _model()
    calls = []

    def record(own, current, n):
        calls.append((len(own), len(current), int(n)))
        su.get_swa_multi_avg_fn()(own, current, n)

    avg = su.AveragedModel(model, multi_avg_fn=record, use_buffers=True)
    _run(avg, model, steps=3)
    # float64 parameters and buffers in one call, the int64 counter in another; the first
    # update only copies
    assert sorted(calls) == sorted([(8, 8, 1), (1, 1, 1), (8, 8, 2), (1, 1, 2)])
    seen = []
    avg = su.AveragedModel(model, avg_fn=lambda a, c, n: seen.append(int(n)) or a * 0 + c)
    _run(avg, model, steps=3)
    assert seen == [1] * 6 + [2] * 6  # one call per parameter
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        su.AveragedModel(model, avg_fn=su.get_swa_avg_fn(),
                         multi_avg_fn=su.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a "
                                         r"value in \[0,1\] range."):
        su.get_ema_avg_fn(1.5)


def test_update_bn_recomputes_statistics(device):
    model = _model(device)
    momentum = model[1].momentum
    model.eval()
    rng = np.random.default_rng(5)
    batches = [rng.standard_normal((6, 3)) for _ in range(3)]
    loader = [(tg.tensor(b), 0) for b in batches]  # (input, target) pairs on the CPU
    su.update_bn(loader, model, device=device)
    assert not model.training and model[1].momentum == momentum
    hidden = [host(model[0](tg.tensor(b, device=device))) for b in batches]
    bn = model[1]
    # momentum None: the plain average of the batches' statistics
    np.testing.assert_allclose(host(bn.running_mean), np.mean([h.mean(0) for h in hidden], 0),
                               rtol=1e-10)
    np.testing.assert_allclose(host(bn.running_var),
                               np.mean([h.var(0, ddof=1) for h in hidden], 0), rtol=1e-10)
    assert int(bn.num_batches_tracked) == 3
    su.update_bn(loader, nn.Linear(3, 3).double())  # nothing to update: nothing happens


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr(strategy):
    anneal = {"cos": lambda t: (1 - math.cos(math.pi * t)) / 2, "linear": lambda t: t}[strategy]
    p = nn.Parameter(tg.zeros(2))
    opt = tg.optim.SGD([p], lr=1.0)
    opt.add_param_group({"params": [nn.Parameter(tg.zeros(1))], "lr": 0.5})
    sched = su.SWALR(opt, swa_lr=[0.1, 0.2], anneal_epochs=3, anneal_strategy=strategy)
    lrs = [[g["lr"] for g in opt.param_groups]]
    for _ in range(4):
        opt.step()
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
    # from each group's rate towards swa_lr by anneal(t), t = step / 3, then swa_lr
    for step, got in enumerate(lrs):
        a = anneal(min(step / 3, 1.0))
        np.testing.assert_allclose(got, [0.1 * a + 1.0 * (1 - a), 0.2 * a + 0.5 * (1 - a)],
                                   rtol=1e-12)
    state = sched.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == strategy
    again = su.SWALR(opt, swa_lr=0.3, anneal_strategy="cos")
    again.load_state_dict(state)
    assert again.anneal_func is again._cosine_anneal or strategy == "linear"
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got exp"):
        su.SWALR(opt, 0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got "
                                         "-1"):
        su.SWALR(opt, 0.1, anneal_epochs=-1)


def test_swalr_without_annealing_jumps_to_swa_lr():
    opt = tg.optim.SGD([nn.Parameter(tg.zeros(1))], lr=1.0)
    su.SWALR(opt, swa_lr=0.05, anneal_epochs=0)
    assert opt.param_groups[0]["lr"] == 0.05
