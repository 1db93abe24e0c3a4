"""GradScaler against hand-computed sequences: scaling, unscaling, growth after
``growth_interval`` clean steps, backoff and skipped steps when an inf or NaN gradient is
injected, ``update(new_scale)``, the stage errors, state dict round trips, the disabled scaler,
and a small MLP trained under autocast + GradScaler on the (emulated) CUDA device."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn, optim
from tritongrad.nn import functional as F


def setup(values=(1.0, 2.0), device="cpu", **kw):
    p = nn.Parameter(tg.tensor(list(values), device=device))
    opt = optim.SGD([p], lr=1.0)
    return p, opt, tg.amp.GradScaler(device, **kw)


def iteration(scaler, p, opt, grad, update=True):
    """One training iteration whose scaled loss gives ``p`` the gradient ``scale * grad``
    (an inf or NaN in ``grad`` reaches the gradient as it would from an overflowed loss)."""
    opt.zero_grad()
    g = tg.tensor(list(grad), device=p.device)
    with np.errstate(invalid="ignore", over="ignore"):
        scaler.scale((p * g).sum()).backward()
    out = scaler.step(opt)
    if update:
        scaler.update()
    return out


def test_scale_multiplies_by_the_scale_and_keeps_the_dtype():
    s = tg.amp.GradScaler("cpu", init_scale=8.0)
    assert s.get_scale() == 8.0 and s.is_enabled()
    x = tg.tensor([1.0, -2.0], dtype=tg.bfloat16)
    y = s.scale(x)
    assert y.dtype is tg.bfloat16 and y.tolist() == [8.0, -16.0]
    a, b = s.scale([tg.tensor(1.0), (tg.tensor(2.0), tg.tensor(3.0))])
    assert a.item() == 8.0 and [t.item() for t in b] == [16.0, 24.0]
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        s.scale(3.0)


def test_step_unscales_then_steps():
    p, opt, s = setup(init_scale=4.0)
    iteration(s, p, opt, (0.5, -1.0), update=False)
    assert p.grad.tolist() == [0.5, -1.0]          # 4 * g unscaled by 1/4
    assert p.tolist() == [0.5, 3.0]                # SGD lr=1: p - g
    s.update()
    assert s.get_scale() == 4.0 and s._get_growth_tracker() == 1


def test_growth_after_growth_interval_clean_steps():
    p, opt, s = setup(init_scale=4.0, growth_interval=3, growth_factor=3.0)
    scales, trackers = [], []
    for _ in range(7):
        iteration(s, p, opt, (0.25, 0.25))
        scales.append(s.get_scale())
        trackers.append(s._get_growth_tracker())
    assert scales == [4.0, 4.0, 12.0, 12.0, 12.0, 36.0, 36.0]
    assert trackers == [1, 2, 0, 1, 2, 0, 1]


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_inf_or_nan_skips_the_step_and_backs_off(bad):
    p, opt, s = setup(init_scale=16.0, growth_interval=2, backoff_factor=0.25)
    iteration(s, p, opt, (1.0, 1.0))               # clean: tracker 1
    assert p.tolist() == [0.0, 1.0] and s._get_growth_tracker() == 1
    out = iteration(s, p, opt, (bad, 1.0))         # skipped: p unchanged, scale * 0.25
    assert out is None
    assert p.tolist() == [0.0, 1.0]
    assert s.get_scale() == 4.0 and s._get_growth_tracker() == 0
    iteration(s, p, opt, (1.0, 1.0))               # clean again: the tracker restarted
    iteration(s, p, opt, (1.0, 1.0))
    assert s.get_scale() == 8.0 and p.tolist() == [-2.0, -1.0]


def test_one_bad_gradient_among_many_parameters_skips_every_update():
    ps = [nn.Parameter(tg.ones(3)) for _ in range(3)]
    lin = nn.Parameter(tg.ones(2, dtype=tg.bfloat16))  # another dtype, the same reduction
    opt = optim.SGD([{"params": ps[:2]}, {"params": ps[2:] + [lin]}], lr=0.1)
    s = tg.amp.GradScaler("cpu", init_scale=2.0)
    loss = ps[0].sum() + ps[1].sum() + (ps[2] * tg.tensor([1.0, math.inf, 1.0])).sum() \
        + lin.float().sum()
    s.scale(loss).backward()
    s.step(opt)
    assert all(p.tolist() == [1.0] * 3 for p in ps) and lin.tolist() == [1.0, 1.0]
    s.update()
    assert s.get_scale() == 1.0


def test_unscale_then_clip_then_step():
    p, opt, s = setup(init_scale=1024.0)
    s.scale((p * tg.tensor([3.0, 4.0])).sum()).backward()
    s.unscale_(opt)
    assert p.grad.tolist() == [3.0, 4.0]
    nn.utils.clip_grad_norm_([p], 1.0)
    s.step(opt)                                    # not unscaled a second time
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 0.6, 2.0 - 0.8], rtol=1e-5)
    s.update()


def test_stage_errors():
    p, opt, s = setup()
    for name, call in (("unscale_", lambda: s.unscale_(opt)), ("step", lambda: s.step(opt)),
                       ("update", lambda: s.update())):
        with pytest.raises(AssertionError, match=f"Attempted {name} but _scale is None"):
            call()
    s.scale((p * 1.0).sum()).backward()
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this "
                                           "optimizer since the last update\\(\\)"):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        s.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last "
                                           "update\\(\\)"):
        s.step(opt)
    s.update()
    s.unscale_(opt)                                # a new iteration may unscale again
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        s.step(opt, closure=lambda: 0.0)


def test_float16_gradients_are_refused():
    p = nn.Parameter(tg.ones(2, dtype=tg.float16))
    opt = optim.SGD([p], lr=0.1)
    s = tg.amp.GradScaler("cpu", init_scale=4.0)
    s.scale(p.sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        s.step(opt)


def test_update_with_a_new_scale():
    p, opt, s = setup(init_scale=8.0)
    iteration(s, p, opt, (1.0, 1.0), update=False)
    s.update(2.0)
    assert s.get_scale() == 2.0
    iteration(s, p, opt, (1.0, 1.0), update=False)
    s.update(tg.tensor([5.0]))
    assert s.get_scale() == 5.0
    with pytest.raises(AssertionError, match="new_scale should be a float"):
        s.update(tg.tensor([1.0, 2.0]))


def test_growth_never_overflows_the_scale():
    p, opt, s = setup(init_scale=2.0**127, growth_interval=1)
    iteration(s, p, opt, (0.0, 0.0))
    assert s.get_scale() == 2.0**127 and s._get_growth_tracker() == 0


def test_state_dict_round_trip():
    p, opt, s = setup(init_scale=32.0, growth_interval=5, growth_factor=4.0,
                      backoff_factor=0.125)
    for g in ((1.0, 1.0), (1.0, 1.0), (math.inf, 1.0), (1.0, 1.0)):
        iteration(s, p, opt, g)
    sd = s.state_dict()
    assert sd == {"scale": 4.0, "growth_factor": 4.0, "backoff_factor": 0.125,
                  "growth_interval": 5, "_growth_tracker": 1}
    fresh = tg.amp.GradScaler("cpu")
    fresh.load_state_dict(sd)
    assert fresh.state_dict() == sd                # before its first scale()
    p2, opt2, used = setup(init_scale=1.0)
    iteration(used, p2, opt2, (1.0, 1.0))
    used.load_state_dict(sd)                       # after: the live tensors are filled
    assert used.state_dict() == sd
    for _ in range(4):                             # 4 more clean steps reach the interval
        iteration(used, p2, opt2, (1.0, 1.0))
    assert used.get_scale() == 16.0 and used._get_growth_tracker() == 0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        fresh.load_state_dict({})


def test_disabled_scaler_is_a_pass_through():
    p, opt, s = setup(enabled=False)
    assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
    loss = (p * 2.0).sum()
    assert s.scale(loss) is loss
    loss.backward()
    s.unscale_(opt)
    s.step(opt)
    s.update()
    assert p.tolist() == [-1.0, 0.0]


def test_growth_and_backoff_factors_are_checked():
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        tg.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        tg.amp.GradScaler("cpu", backoff_factor=1.0)


def test_cuda_alias_and_a_cuda_sequence():
    with pytest.warns(FutureWarning, match=r"torch.amp.GradScaler\('cuda', args...\)"):
        s = tg.cuda.amp.GradScaler(init_scale=4.0, growth_interval=1)
    assert isinstance(s, tg.amp.GradScaler) and tg.optim.GradScaler is tg.amp.GradScaler
    p, opt, _ = setup(device="cuda")
    iteration(s, p, opt, (0.5, math.nan))
    assert p.tolist() == [1.0, 2.0] and s.get_scale() == 2.0
    iteration(s, p, opt, (0.5, 0.5))
    assert p.tolist() == [0.5, 1.5] and s.get_scale() == 4.0


# the first iterations overflow float16 on purpose: the scaler must back off from 2**16
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_mlp_converges_under_autocast_and_grad_scaler_on_cuda():
    tg.manual_seed(0)
    r = np.random.default_rng(0)
    xs = r.uniform(-1, 1, (32, 2))
    x = tg.tensor(xs, dtype=tg.float32, device="cuda")
    y = tg.tensor(xs @ [[1.0], [-2.0]] + 0.5, dtype=tg.float32, device="cuda")
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1)).to("cuda")
    opt = optim.Adam(model.parameters(), lr=0.05)
    scaler = tg.amp.GradScaler("cuda", init_scale=2.0**16)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        with tg.autocast("cuda"):
            out = model(x)
            loss = F.mse_loss(out, y)
        assert out.dtype is tg.float16 and loss.dtype is tg.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype is tg.float32 for p in model.parameters())
    assert losses[-1] < 0.05 * losses[0], losses[::8]
    assert scaler.get_scale() < 2.0**16  # steps were skipped and the scale backed off
