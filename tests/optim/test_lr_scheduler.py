"""Learning-rate schedulers against their documented formulas, computed here by hand: each
schedule's sequence of rates, recursive and closed forms agreeing, the side effects PyTorch's
have (initial_lr, momentum / beta1 cycling), state dicts, composition and argument checks."""

import math
import pickle
import warnings

import pytest
from tritongrad.optim import lr_scheduler as L

import tritongrad as tg
from tritongrad import nn, optim


def sgd(lr=0.1, groups=1, **kw):
    params = [nn.Parameter(tg.zeros(2)) for _ in range(groups)]
    return optim.SGD([{"params": [p]} for p in params], lr=lr, **kw)


def rates(sched, n, *metrics):
    """The rate of group 0 at epochs 0 .. n-1 (optimizer.step() before scheduler.step())."""
    out = []
    for i in range(n):
        out.append(sched.get_last_lr()[0])
        assert sched.optimizer.param_groups[0]["lr"] == out[-1]
        sched.optimizer.step()
        sched.step(*([metrics[i]] if metrics else []))
    return out


def close(a, b, rel=1e-12):
    assert len(a) == len(b), (a, b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x == pytest.approx(y, rel=rel, abs=1e-15), (i, a, b)


@pytest.fixture(autouse=True)
def no_warnings():
    """The documented call order must not warn (the warnings are checked where expected)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# -- one schedule each ----------------------------------------------------------------------------

def test_step_lr():
    s = L.StepLR(sgd(0.05), step_size=3, gamma=0.1)
    close(rates(s, 8), [0.05 * 0.1 ** (e // 3) for e in range(8)])


def test_multistep_lr_with_a_repeated_milestone():
    s = L.MultiStepLR(sgd(1.0), milestones=[2, 5, 5], gamma=0.5)
    close(rates(s, 7), [1, 1, 0.5, 0.5, 0.5, 0.125, 0.125])


def test_exponential_lr():
    s = L.ExponentialLR(sgd(2.0), gamma=0.9)
    close(rates(s, 6), [2.0 * 0.9 ** e for e in range(6)])


def test_constant_lr():
    s = L.ConstantLR(sgd(0.05), factor=0.5, total_iters=4)
    close(rates(s, 6), [0.025] * 4 + [0.05] * 2)


def test_linear_lr_docs_example():
    s = L.LinearLR(sgd(0.05), start_factor=0.5, total_iters=4)
    close(rates(s, 6), [0.025, 0.03125, 0.0375, 0.04375, 0.05, 0.05])


def test_linear_lr_decreasing_to_end_factor():
    s = L.LinearLR(sgd(1.0), start_factor=1.0, end_factor=0.2, total_iters=4)
    close(rates(s, 6), [1.0, 0.8, 0.6, 0.4, 0.2, 0.2])


def test_polynomial_lr():
    s = L.PolynomialLR(sgd(1.0), total_iters=4, power=2.0)
    close(rates(s, 6), [(1 - min(e, 4) / 4) ** 2 for e in range(6)])


def test_lambda_lr_per_group():
    opt = sgd(1.0, groups=2)
    opt.param_groups[1]["lr"] = 3.0
    s = L.LambdaLR(opt, [lambda e: 0.5 ** e, lambda e: 1 / (e + 1)])
    seen = []
    for _ in range(4):
        seen.append(s.get_last_lr())
        opt.step()
        s.step()
    close([a for a, _ in seen], [0.5 ** e for e in range(4)])
    close([b for _, b in seen], [3.0 / (e + 1) for e in range(4)])
    assert s.base_lrs == [1.0, 3.0]
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 3.0]


def test_multiplicative_lr():
    s = L.MultiplicativeLR(sgd(1.0), lambda e: 0.9 if e < 3 else 0.5)
    # epoch 0 keeps the rate; epoch e >= 1 multiplies by f(e): .9, .9, then .5 from epoch 3
    close(rates(s, 5), [1.0, 0.9, 0.81, 0.405, 0.2025])


def cosine(base, eta_min, T, t):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / T)) / 2


def test_cosine_annealing_recursive_form_follows_the_closed_form_past_T_max():
    s = L.CosineAnnealingLR(sgd(0.1), T_max=5, eta_min=0.01)
    # past T_max the cosine rises again (period 2 T_max), through the trough's special case
    close(rates(s, 16), [cosine(0.1, 0.01, 5, t) for t in range(16)], rel=1e-10)


def test_cosine_annealing_closed_form_via_step_epoch():
    s = L.CosineAnnealingLR(sgd(0.1), T_max=10)
    assert s._get_closed_form_lr() == [0.1]
    s.optimizer.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(7)
    assert s.get_last_lr()[0] == pytest.approx(cosine(0.1, 0.0, 10, 7), rel=1e-14)
    assert s.last_epoch == 7


@pytest.mark.parametrize("make, closed", [
    (lambda o: L.StepLR(o, 2, gamma=0.5), lambda e: 0.5 ** (e // 2)),
    (lambda o: L.MultiStepLR(o, [1, 3], gamma=0.1), lambda e: 0.1 ** ((e >= 1) + (e >= 3))),
    (lambda o: L.ExponentialLR(o, 0.7), lambda e: 0.7 ** e),
    (lambda o: L.ConstantLR(o, 0.25, total_iters=3), lambda e: 0.25 if e < 3 else 1.0),
    (lambda o: L.LinearLR(o, 0.2, 1.0, total_iters=4), lambda e: 0.2 + 0.8 * min(e, 4) / 4),
])
def test_recursive_and_closed_forms_agree(make, closed):
    s = make(sgd(1.0))
    for e in range(7):
        assert s.get_last_lr()[0] == pytest.approx(closed(e), rel=1e-12)
        s._get_lr_called_within_step = True  # (reading the closed form is not a step)
        assert s._get_closed_form_lr()[0] == pytest.approx(closed(e), rel=1e-12)
        s._get_lr_called_within_step = False
        s.optimizer.step()
        s.step()


# -- OneCycleLR -----------------------------------------------------------------------------------

def one_cycle_expected(total, max_lr, pct, div, final_div, anneal, three_phase=False,
                       lo_m=0.85, hi_m=0.95):
    """(lr, momentum) at each step, from the documented phases."""
    init, floor = max_lr / div, max_lr / div / final_div
    f = ((lambda a, b, p: b + (a - b) / 2 * (math.cos(math.pi * p) + 1)) if anneal == "cos"
         else (lambda a, b, p: a + (b - a) * p))
    if three_phase:
        phases = [(pct * total - 1, init, max_lr, hi_m, lo_m),
                  (2 * pct * total - 2, max_lr, init, lo_m, hi_m),
                  (total - 1, init, floor, hi_m, hi_m)]
    else:
        phases = [(pct * total - 1, init, max_lr, hi_m, lo_m),
                  (total - 1, max_lr, floor, lo_m, hi_m)]
    out = []
    for t in range(total):
        start = 0.0
        for i, (end, a, b, ma, mb) in enumerate(phases):
            if t <= end or i == len(phases) - 1:
                p = (t - start) / (end - start)
                out.append((f(a, b, p), f(ma, mb, p)))
                break
            start = end
    return out


@pytest.mark.parametrize("anneal", ["cos", "linear"])
@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_with_sgd_momentum(anneal, three_phase):
    opt = sgd(0.1, momentum=0.9)
    s = L.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25, anneal_strategy=anneal,
                     three_phase=three_phase, div_factor=10.0, final_div_factor=100.0)
    want = one_cycle_expected(20, 1.0, 0.25, 10.0, 100.0, anneal, three_phase)
    got = []
    for t in range(20):
        g = opt.param_groups[0]
        got.append((g["lr"], g["momentum"]))
        opt.step()
        if t < 19:
            s.step()
    close([a for a, _ in got], [a for a, _ in want])
    close([m for _, m in got], [m for _, m in want])
    assert got[0][0] == pytest.approx(0.1) and got[-1][0] == pytest.approx(0.001)
    g = opt.param_groups[0]
    assert (g["initial_lr"], g["max_lr"], g["min_lr"]) == (0.1, 1.0, 0.001)
    assert (g["max_momentum"], g["base_momentum"]) == (0.95, 0.85)


def test_one_cycle_cycles_adam_beta1_and_refuses_steps_past_the_end():
    p = nn.Parameter(tg.zeros(2))
    opt = optim.Adam([p], lr=1e-3, betas=(0.9, 0.99))
    s = L.OneCycleLR(opt, max_lr=[0.01], epochs=2, steps_per_epoch=5, base_momentum=0.8,
                     max_momentum=0.9)
    want = one_cycle_expected(10, 0.01, 0.3, 25.0, 1e4, "cos", lo_m=0.8, hi_m=0.9)
    for t in range(10):
        lr, (b1, b2) = opt.param_groups[0]["lr"], opt.param_groups[0]["betas"]
        assert lr == pytest.approx(want[t][0], rel=1e-12)
        assert b1 == pytest.approx(want[t][1], rel=1e-12) and b2 == 0.99
        opt.step()
        s.step()  # the 10th step goes to step 10 of 10: allowed, the 11th is not
    with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of "
                                         "total steps is 10"):
        s.step()


def test_one_cycle_argument_checks():
    opt = sgd(momentum=0.9)
    with pytest.raises(ValueError, match="either total_steps OR"):
        L.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="positive integer total_steps"):
        L.OneCycleLR(opt, max_lr=1.0, total_steps=0)
    with pytest.raises(ValueError, match="pct_start"):
        L.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=1.5)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        L.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="step")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        L.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=10)
    no_momentum = optim.Adagrad([nn.Parameter(tg.zeros(1))])
    with pytest.raises(ValueError, match="momentum or beta1"):
        L.OneCycleLR(no_momentum, max_lr=1.0, total_steps=10)
    L.OneCycleLR(no_momentum, max_lr=1.0, total_steps=10, cycle_momentum=False)


# -- composition ----------------------------------------------------------------------------------

def test_cosine_annealing_warm_restarts():
    def cosine(t_cur, t_i, lo=0.0, base=1.0):
        return lo + (base - lo) * (1 + math.cos(math.pi * t_cur / t_i)) / 2
    s = L.CosineAnnealingWarmRestarts(sgd(1.0), T_0=4)
    close(rates(s, 10), [cosine(e % 4, 4) for e in range(10)])
    # T_mult 2: cycles of 3, 6, 12 epochs, restarting at epochs 3 and 9
    s = L.CosineAnnealingWarmRestarts(sgd(1.0), T_0=3, T_mult=2, eta_min=0.1)
    expected = [cosine(e, 3, 0.1) for e in range(3)] + [cosine(e, 6, 0.1) for e in range(6)] \
        + [cosine(e, 12, 0.1) for e in range(3)]
    close(rates(s, 12), expected)


def test_cosine_annealing_warm_restarts_at_fractional_epochs():
    s = L.CosineAnnealingWarmRestarts(sgd(1.0), T_0=3, T_mult=2)
    for epoch, t_cur, t_i in [(1.5, 1.5, 3), (4.5, 1.5, 6), (9.25, 0.25, 12), (2.0, 2.0, 3)]:
        s.optimizer.step()
        s.step(epoch)  # (no deprecation warning: fractional epochs are this schedule's use)
        assert s.get_last_lr()[0] == pytest.approx((1 + math.cos(math.pi * t_cur / t_i)) / 2)
        assert s.last_epoch == math.floor(epoch)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        s.step(-1)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        L.CosineAnnealingWarmRestarts(sgd(), T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 1.5"):
        L.CosineAnnealingWarmRestarts(sgd(), T_0=2, T_mult=1.5)


@pytest.mark.parametrize(("mode", "scale"), [("triangular", lambda cycle, t: 1.0),
                                             ("triangular2", lambda cycle, t: 0.5 ** (cycle - 1)),
                                             ("exp_range", lambda cycle, t: 0.9 ** t)])
def test_cyclic_lr_modes_and_momentum(mode, scale):
    # up 2 steps, down 4: ramp 0, .5, 1, .75, .5, .25, then the next cycle
    opt = sgd(0.5, momentum=0.9)
    s = L.CyclicLR(opt, 0.1, 1.1, step_size_up=2, step_size_down=4, mode=mode, gamma=0.9)
    ramp = [0, 0.5, 1, 0.75, 0.5, 0.25]
    expected, moms = [], []
    for t in range(14):
        cycle = t // 6 + 1
        amp = ramp[t % 6] * scale(cycle, t)
        expected.append(0.1 + 1.0 * amp)
        moms.append(0.9 - 0.1 * amp)
    got_moms = []
    for t in range(14):
        got_moms.append(opt.param_groups[0]["momentum"])
        close([s.get_last_lr()[0]], [expected[t]])
        opt.step()
        s.step()
    close(got_moms, moms)


def test_cyclic_lr_custom_scale_adam_beta1_and_state_dict():
    class Halving:
        def __init__(self):
            self.base = 0.5

        def __call__(self, x):
            return self.base ** x

    opt = optim.Adam([nn.Parameter(tg.zeros(2))], lr=1.0, betas=(0.5, 0.99))
    fn = Halving()
    s = L.CyclicLR(opt, [0.1], [0.3], step_size_up=1, scale_fn=fn, scale_mode="iterations",
                   base_momentum=0.7, max_momentum=0.95)
    assert opt.param_groups[0]["betas"] == (0.95, 0.99)  # beta1 starts at max_momentum
    got = rates(s, 4)
    close(got, [0.1, 0.1 + 0.2 * 0.5, 0.1, 0.1 + 0.2 * 0.5 ** 3])
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.95)
    fn.base = 0.25  # a callable object's state is saved; a function is not
    state = s.state_dict()
    assert state["_scale_fn_custom"] == {"base": 0.25}
    fn.base = 0.5
    s.load_state_dict(state)
    assert fn.base == 0.25
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        L.CyclicLR(sgd(momentum=0.9), 0.1, 0.2, mode="zigzag")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        L.CyclicLR(optim.Adagrad([nn.Parameter(tg.zeros(1))]), 0.1, 0.2)


def test_sequential_lr_warmup_then_decay():
    opt = sgd(1.0)
    warm = L.LinearLR(opt, start_factor=0.1, total_iters=2)
    decay = L.ExponentialLR(opt, gamma=0.5)
    s = L.SequentialLR(opt, [warm, decay], milestones=[3])
    # warm-up: 0.1, 0.55, 1.0; from epoch 3 the decay restarts at its epoch 0: 1, .5, .25
    close(rates(s, 6), [0.1, 0.55, 1.0, 1.0, 0.5, 0.25])
    assert s.last_epoch == 6


def test_chained_scheduler_multiplies_the_factors():
    opt = sgd(1.0)
    s = L.ChainedScheduler([L.ConstantLR(opt, factor=0.1, total_iters=2),
                            L.ExponentialLR(opt, gamma=0.9)], optimizer=opt)
    close(rates(s, 5), [0.1, 0.09, 0.81, 0.729, 0.6561])


def test_composites_check_their_schedulers():
    opt, other = sgd(), sgd()
    a = L.StepLR(opt, 2)
    with pytest.raises(ValueError, match="same optimizer"):
        L.SequentialLR(opt, [a, L.StepLR(other, 2)], milestones=[1])
    with pytest.raises(ValueError, match="one more than the number of milestone points"):
        L.SequentialLR(opt, [a], milestones=[1])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        L.ChainedScheduler([a, L.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="at least one scheduler"):
        L.ChainedScheduler([])


# -- ReduceLROnPlateau ----------------------------------------------------------------------------

def test_plateau_patience_cooldown_and_min_lr():
    s = L.ReduceLROnPlateau(sgd(1.0), factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    # losses: improve, 2 bad (> patience 1) -> halve; cooldown swallows the next bad one;
    # 2 more bad -> halve; then the floor 0.2 holds it at max(0.25 * 0.5, 0.2) = 0.2
    metrics = [5, 4, 4, 4, 4, 4, 4, 4, 4, 4]
    lrs = rates(s, 10, *metrics)
    close(lrs, [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25])
    assert s.get_last_lr() == [0.2]
    assert s.best == 4 and s.last_epoch == 10


@pytest.mark.parametrize("mode, threshold_mode, seq, reduced", [
    # rel, min: 9.999 is not below 10 * (1 - 1e-3) = 9.99 -> bad epochs
    ("min", "rel", [10, 9.999, 9.999], True),
    ("min", "rel", [10, 9.98, 9.96], False),
    ("min", "abs", [10, 9.6, 9.7], True),     # not below best - 0.5 = 9.5
    ("min", "abs", [10, 9.4, 8.8], False),
    ("max", "rel", [10, 10.005, 10.009], True),
    ("max", "abs", [10, 10.6, 11.2], False),
])
def test_plateau_thresholds(mode, threshold_mode, seq, reduced):
    threshold = 1e-3 if threshold_mode == "rel" else 0.5
    s = L.ReduceLROnPlateau(sgd(1.0), mode=mode, patience=1, threshold=threshold,
                            threshold_mode=threshold_mode, factor=0.1)
    for m in seq:
        s.step(m)
    assert s.get_last_lr()[0] == pytest.approx(0.1 if reduced else 1.0)


def test_plateau_takes_a_tensor_metric_eps_and_checks():
    s = L.ReduceLROnPlateau(sgd(1e-9), patience=0, eps=1e-8)
    s.step(tg.tensor(1.0))
    s.step(tg.tensor(2.0))
    assert s.get_last_lr() == [1e-9]  # the change (9e-10) is below eps: kept
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        L.ReduceLROnPlateau(sgd(), factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown"):
        L.ReduceLROnPlateau(sgd(), mode="avg")
    with pytest.raises(ValueError, match="threshold mode x is unknown"):
        L.ReduceLROnPlateau(sgd(), threshold_mode="x")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        L.ReduceLROnPlateau(sgd(groups=2), min_lr=[0.1])


# -- state dicts ----------------------------------------------------------------------------------

def test_state_dict_resumes_the_schedule():
    opt = sgd(1.0)
    s = L.CosineAnnealingLR(opt, T_max=8, eta_min=0.1)
    rates(s, 3)
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 3 and sd["base_lrs"] == [1.0]
    rest = rates(s, 4)
    opt2 = sgd(1.0)
    opt2.load_state_dict(opt.state_dict())  # brings initial_lr along
    opt2.param_groups[0]["lr"] = sd["_last_lr"][0]
    s2 = L.CosineAnnealingLR(opt2, T_max=8, eta_min=0.1, last_epoch=2)
    s2.load_state_dict(sd)
    close(rates(s2, 4), rest)


def test_resuming_without_initial_lr_raises():
    with pytest.raises(KeyError, match="initial_lr"):
        L.StepLR(sgd(), step_size=2, last_epoch=3)


class Warmup:
    """A callable object: its attributes are saved by LambdaLR's state_dict."""

    def __init__(self, n):
        self.n = n

    def __call__(self, e):
        return min(1.0, (e + 1) / self.n)


def test_lambda_lr_state_dict_keeps_callable_objects_not_functions():
    opt = sgd(1.0, groups=2)
    s = L.LambdaLR(opt, [Warmup(4), lambda e: 1.0])
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [{"n": 4}, None]
    pickle.dumps(sd)  # savable: no function inside
    s2 = L.LambdaLR(sgd(1.0, groups=2), [Warmup(10), lambda e: 2.0])
    s2.load_state_dict(sd)
    assert s2.lr_lambdas[0].n == 4
    assert sd["lr_lambdas"] == [{"n": 4}, None]  # the caller's dict is left as it was


def test_composite_state_dicts_nest_their_schedulers():
    opt = sgd(1.0)
    s = L.SequentialLR(opt, [L.ConstantLR(opt, 0.5, 2), L.StepLR(opt, 2)], milestones=[2])
    rates(s, 3)
    sd = s.state_dict()
    # epoch 1 steps the first; epoch 2 restarts the second at 0, epoch 3 steps it to 1
    assert [c["last_epoch"] for c in sd["_schedulers"]] == [1, 1]
    opt2 = sgd(1.0)
    s2 = L.SequentialLR(opt2, [L.ConstantLR(opt2, 0.5, 2), L.StepLR(opt2, 2)], milestones=[2])
    s2.load_state_dict(sd)
    assert s2.last_epoch == 3 and s2._schedulers[1].last_epoch == 1


# -- the call order and the base class --------------------------------------------------------------

def test_scheduler_step_before_optimizer_step_warns():
    opt = sgd()
    s = L.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()


def test_get_lr_outside_step_warns():
    s = L.StepLR(sgd(), 2)
    with pytest.warns(UserWarning, match="get_last_lr"):
        s.get_lr()


def test_base_class_alias_and_subclassing():
    assert issubclass(L._LRScheduler, L.LRScheduler)

    class Halving(L._LRScheduler):
        def get_lr(self):
            return [b * 0.5 ** self.last_epoch for b in self.base_lrs]

    close(rates(Halving(sgd(1.0)), 4), [1, 0.5, 0.25, 0.125])
    with pytest.raises(TypeError, match="is not an Optimizer"):
        L.StepLR(object(), 2)
    with pytest.raises(ValueError, match="StepLR: step_size must be a positive integer, got 0"):
        L.StepLR(sgd(), 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        L.ConstantLR(sgd(), factor=2.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        L.LinearLR(sgd(), start_factor=0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        L.LambdaLR(sgd(groups=2), [lambda e: 1.0])


@pytest.mark.parametrize("make", [
    lambda o: L.MultiStepLR(o, [1, 3, 3], gamma=0.5),
    lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=10),
    lambda o: L.ReduceLROnPlateau(o, patience=0),
    lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.ExponentialLR(o, 0.9)], milestones=[2]),
])
def test_scheduler_state_dicts_survive_tg_save(tmp_path, make):
    opt = sgd(1.0, momentum=0.9)
    s = make(opt)
    tg.save(s.state_dict(), tmp_path / "s.tg")
    s.load_state_dict(tg.load(tmp_path / "s.tg"))
    metrics = [1.0, 2.0, 3.0] if isinstance(s, L.ReduceLROnPlateau) else ()
    rates(s, 3, *metrics)
    if isinstance(s, L.MultiStepLR):  # the closed form after a round trip (Counter -> dict)
        s._get_lr_called_within_step = True
        assert s._get_closed_form_lr() == [0.125]


def test_optimizer_with_scheduler_still_pickles_and_saves(tmp_path):
    opt = sgd(1.0)
    L.StepLR(opt, 2)
    tg.save({"optim": opt.state_dict()}, tmp_path / "o.tg")
    assert tg.load(tmp_path / "o.tg")["optim"]["param_groups"][0]["initial_lr"] == 1.0
