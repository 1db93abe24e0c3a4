"""A sweep of tritongrad.optim.lr_scheduler and swa_utils.SWALR: 70 steps of every schedule
under many option sets against closed forms written out here (no torch needed), a state_dict
round trip into fresh objects mid-schedule, resuming with ``last_epoch``, deep copies,
``step(epoch)``, ReduceLROnPlateau against a small reference, warnings, argument errors, and
a Tensor ``lr`` filled in place (Note [Tensor learning rates]); then the same programs under
torch where it is installed (rates per step, get_last_lr, the state dicts' keys and value
types, warnings, resuming, step(epoch), a torch state dict loaded mid-schedule)."""

import copy
import math
import warnings

import pytest

import tritongrad as tg

N = 70
LRS = (0.1, 0.03)  # two groups with their own base rates


def _opt(lib, kind="sgd"):
    ps = [lib.nn.Parameter(lib.ones(2)) for _ in LRS]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(ps, LRS)]
    if kind == "adam":
        return lib.optim.Adam(groups, lr=0.1)
    if kind == "sgd0":
        return lib.optim.SGD(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def _ostep(lib, opt):
    for g in opt.param_groups:
        for p in g["params"]:
            p.grad = lib.ones_like(p)
    opt.step()


class _Pow:
    """A callable object: LambdaLR saves its __dict__ in the state dict."""

    def __init__(self, base):
        self.base = base

    def __call__(self, epoch):
        return self.base ** epoch


# -- closed forms (epoch e >= 0, base rate b); each a function of (e, b, group index) -----------

def _cos(e, b, T, eta_min=0.0):
    return eta_min + (b - eta_min) * (1 + math.cos(math.pi * e / T)) / 2


def _warm(e, b, T0, mult=1, eta_min=0.0):
    t, T = e, T0
    while t >= T:
        t, T = t - T, T * mult
    return eta_min + (b - eta_min) * (1 + math.cos(math.pi * t / T)) / 2


def _cyclic(e, base, top, up, down, mode="triangular", gamma=1.0):
    total = up + down
    cycle = math.floor(1 + e / total)
    x = 1.0 + e / total - cycle
    x = x / (up / total) if x <= up / total else (x - 1) / (up / total - 1)
    scale = {"triangular": 1.0, "triangular2": 1 / 2.0 ** (cycle - 1),
             "exp_range": gamma ** e}[mode]
    return base + (top - base) * x * scale


def _one_cycle(e, top, total, pct=0.3, div=25.0, final=1e4, cos=True, three=False):
    start, end = top / div, top / div / final
    ramp = lambda a, z, p: (z + (a - z) / 2 * (math.cos(math.pi * p) + 1) if cos  # noqa: E731
                            else (z - a) * p + a)
    if three:
        phases = [(pct * total - 1, start, top), (2 * pct * total - 2, top, start),
                  (total - 1, start, end)]
    else:
        phases = [(pct * total - 1, start, top), (total - 1, top, end)]
    begin = 0.0
    for i, (stop, a, z) in enumerate(phases):
        if e <= stop or i == len(phases) - 1:
            return ramp(a, z, (e - begin) / (stop - begin))
        begin = stop


S = tg.optim.lr_scheduler
CASES = {
    "lambda": (lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e),
               lambda e, b, i: b * 0.9 ** e),
    "lambda_list": (lambda L, o: L.optim.lr_scheduler.LambdaLR(
        o, [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]),
        lambda e, b, i: b * (0.9 ** e if i == 0 else 1 / (e + 1))),
    "lambda_obj": (lambda L, o: L.optim.lr_scheduler.LambdaLR(o, _Pow(0.95)),
                   lambda e, b, i: b * 0.95 ** e),
    "mult": (lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.95),
             lambda e, b, i: b * 0.95 ** e),
    "step": (lambda L, o: L.optim.lr_scheduler.StepLR(o, 7, gamma=0.5),
             lambda e, b, i: b * 0.5 ** (e // 7)),
    "multistep": (lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, [5, 12, 12, 30], gamma=0.5),
                  lambda e, b, i: b * 0.5 ** sum(e >= m for m in (5, 12, 12, 30))),
    "multistep_unsorted": (lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, [30, 5, 12]),
                           lambda e, b, i: b * 0.1 ** sum(e >= m for m in (5, 12, 30))),
    "constant": (lambda L, o: L.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=11),
                 lambda e, b, i: b * (0.5 if e < 11 else 1.0)),
    "linear": (lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.1, 0.7, total_iters=20),
               lambda e, b, i: b * (0.1 + 0.6 * min(e, 20) / 20)),
    "linear_down": (lambda L, o: L.optim.lr_scheduler.LinearLR(o, 1.0, 0.0, total_iters=9),
                    lambda e, b, i: b * (1 - min(e, 9) / 9)),
    "exp": (lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, 0.93),
            lambda e, b, i: b * 0.93 ** e),
    "poly": (lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, total_iters=40, power=2.0),
             lambda e, b, i: b * (1 - min(e, 40) / 40) ** 2),
    "poly_half": (lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, total_iters=13, power=0.5),
                  lambda e, b, i: b * (1 - min(e, 13) / 13) ** 0.5),
    "cos": (lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=17, eta_min=0.001),
            lambda e, b, i: _cos(e, b, 17, 0.001)),
    "warm": (lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 5),
             lambda e, b, i: _warm(e, b, 5)),
    "warm_mult": (lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, 3, T_mult=2, eta_min=0.001), lambda e, b, i: _warm(e, b, 3, 2, 0.001)),
    "cyclic": (lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=5),
               lambda e, b, i: _cyclic(e, 0.01, 0.1, 5, 5)),
    "cyclic_t2": (lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, [0.01, 0.02], [0.1, 0.3], step_size_up=4, step_size_down=7, mode="triangular2"),
        lambda e, b, i: _cyclic(e, (0.01, 0.02)[i], (0.1, 0.3)[i], 4, 7, "triangular2")),
    "cyclic_exp": (lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=6, mode="exp_range", gamma=0.97),
        lambda e, b, i: _cyclic(e, 0.01, 0.1, 6, 6, "exp_range", 0.97)),
    "onecycle": (lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, 0.5, total_steps=N + 1),
                 lambda e, b, i: _one_cycle(e, 0.5, N + 1)),
    "onecycle_lin3": (lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        o, [0.5, 1.0], epochs=7, steps_per_epoch=11, anneal_strategy="linear",
        three_phase=True),
        lambda e, b, i: _one_cycle(e, (0.5, 1.0)[i], 77, cos=False, three=True)),
    "seq": (lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=5),
            L.optim.lr_scheduler.ExponentialLR(o, 0.9)], milestones=[5]),
        lambda e, b, i: b * (0.1 + 0.9 * e / 5) if e < 5 else b * 0.9 ** (e - 5)),
    "chain": (lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.ConstantLR(o, 0.5, total_iters=4),
         L.optim.lr_scheduler.ExponentialLR(o, 0.9)]),
        lambda e, b, i: b * (0.5 if e < 4 else 1.0) * 0.9 ** e),
    "swalr": (lambda L, o: L.optim.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=5),
              lambda e, b, i: _swalr_rec(e, b, 0.05, 5, True)),
    "swalr_lin": (lambda L, o: L.optim.swa_utils.SWALR(o, swa_lr=[0.01, 0.2], anneal_epochs=7,
                                                       anneal_strategy="linear"),
                  lambda e, b, i: _swalr_rec(e, b, (0.01, 0.2)[i], 7, False)),
}


def _swalr_rec(e, b, swa, epochs, cos):
    """SWALR's rate after e steps: each step moves from the previous rate (with the previous
    step's mixing undone) to swa by alpha(t), t = e / epochs clipped to [0, 1]."""
    def alpha(t):
        t = max(0.0, min(1.0, t))
        return (1 - math.cos(math.pi * t)) / 2 if cos else t

    lr = b
    for k in range(e + 1):
        if epochs == 0:
            return swa
        prev = alpha((k - 1) / epochs) if k > 0 else 0.0
        start = (lr - prev * swa) / (1 - prev) if prev < 1 else b
        lr = swa * alpha(k / epochs) + start * (1 - alpha(k / epochs))
    return lr


def _run(lib, make, kind="sgd", reload_at=None, make_again=None):
    """Rates of each group after each of N steps (and get_last_lr), reloading the optimizer's
    and the scheduler's state dicts into fresh objects before step ``reload_at``."""
    opt = _opt(lib, kind)
    sched = make(lib, opt)
    rates, last = [[g["lr"] for g in opt.param_groups]], [list(sched.get_last_lr())]
    for i in range(N):
        if i == reload_at:
            osd, ssd = opt.state_dict(), sched.state_dict()
            opt = _opt(lib, kind)
            sched = (make_again or make)(lib, opt)
            opt.load_state_dict(osd)
            sched.load_state_dict(ssd)
        _ostep(lib, opt)
        sched.step()
        rates.append([g["lr"] for g in opt.param_groups])
        last.append(list(sched.get_last_lr()))
    return rates, last


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedules_follow_their_closed_forms_for_70_steps(name):
    make, closed = CASES[name]
    rates, last = _run(tg, make)
    want = [[closed(e, b, i) for i, b in enumerate(LRS)] for e in range(N + 1)]
    for e, (got, w, lst) in enumerate(zip(rates, want, last)):
        assert got == pytest.approx(w, rel=1e-9, abs=1e-15), f"{name} at epoch {e}"
        assert lst == got


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_round_trip_mid_schedule_changes_nothing(name):
    make, _ = CASES[name]
    straight = _run(tg, make)
    for at in (0, 13, 31):
        assert _run(tg, make, reload_at=at) == straight, f"{name}, reloaded at {at}"


@pytest.mark.parametrize("name,kind", [("cyclic", "sgd"), ("cyclic", "adam"),
                                       ("onecycle", "sgd"), ("onecycle", "adam")])
def test_cycled_momentum_mirrors_the_rate(name, kind):
    # momentum (SGD) or beta1 (Adam) moves between base and max opposite to the rate
    opt = _opt(tg, kind)
    sched = CASES[name][0](tg, opt)
    key = "betas" if kind == "adam" else "momentum"
    for _ in range(N):
        _ostep(tg, opt)
        sched.step()
        lr, m = opt.param_groups[0]["lr"], opt.param_groups[0][key]
        m = m[0] if kind == "adam" else m
        if name == "cyclic":  # base 0.01..0.1 <-> momentum 0.9..0.8
            frac = (lr - 0.01) / (0.1 - 0.01)
            assert m == pytest.approx(0.9 - 0.1 * frac, rel=1e-9)
        else:  # OneCycle: max_momentum 0.95 at the initial rate, base 0.85 at the peak
            assert 0.85 - 1e-12 <= m <= 0.95 + 1e-12


def _resume(lib, name, steps=15, more=20):
    """Rates of a scheduler built with last_epoch=steps over an optimizer whose state (with
    initial_lr) comes from one that ran the same schedule for ``steps`` steps."""
    opt = _opt(lib)
    sched = CASES[name][0](lib, opt)
    for _ in range(steps):
        _ostep(lib, opt)
        sched.step()
    before = [g["lr"] for g in opt.param_groups]
    opt2 = _opt(lib)
    opt2.load_state_dict(opt.state_dict())
    resumed = _with_last_epoch(lib, name, opt2, steps)
    rates = [list(resumed.get_last_lr())]
    for _ in range(more):
        _ostep(lib, opt2)
        resumed.step()
        rates.append([g["lr"] for g in opt2.param_groups])
    return before, rates


RESUMED = ("step", "exp", "cos", "linear", "poly", "warm_mult", "cyclic", "onecycle", "lambda")


def test_resuming_with_last_epoch():
    # the constructor's step takes the schedule to epoch 16: schedules computed from the epoch
    # (cyclic, one-cycle, lambda) are at their closed form of epoch 16; the recursive ones keep
    # the group's current rate on that step (PyTorch's _is_initial) and apply their factors
    # from epoch 17 on. (Warm restarts resume with T_cur = last_epoch in a first cycle of T_0,
    # as PyTorch's: compared with torch below.)
    for name in RESUMED:
        if name == "warm_mult":
            continue
        closed = CASES[name][1]
        before, rates = _resume(tg, name)
        if name in ("cyclic", "onecycle", "lambda"):
            for e, got in enumerate(rates, 16):
                want = [closed(e, b, i) for i, b in enumerate(LRS)]
                assert got == pytest.approx(want, rel=1e-9), f"{name} at {e}"
        else:
            assert rates[0] == before, name
    _, rates = _resume(tg, "exp")
    assert [r[0] / q[0] for q, r in zip(rates, rates[1:])] == pytest.approx([0.93] * 20)


def test_resuming_with_last_epoch_matches_torch():
    torch = pytest.importorskip("torch")
    for name in RESUMED:
        want, got = _resume(torch, name), _resume(tg, name)
        assert _flat(got) == pytest.approx(_flat(want), rel=1e-12), name


def _with_last_epoch(lib, name: str, opt, last: int):
    S = lib.optim.lr_scheduler
    return {
        "step": lambda: S.StepLR(opt, 7, gamma=0.5, last_epoch=last),
        "exp": lambda: S.ExponentialLR(opt, 0.93, last_epoch=last),
        "cos": lambda: S.CosineAnnealingLR(opt, 17, eta_min=0.001, last_epoch=last),
        "linear": lambda: S.LinearLR(opt, 0.1, 0.7, total_iters=20, last_epoch=last),
        "poly": lambda: S.PolynomialLR(opt, total_iters=40, power=2.0, last_epoch=last),
        "warm_mult": lambda: S.CosineAnnealingWarmRestarts(opt, 3, T_mult=2, eta_min=0.001,
                                                           last_epoch=last),
        "cyclic": lambda: S.CyclicLR(opt, 0.01, 0.1, step_size_up=5, last_epoch=last),
        "onecycle": lambda: S.OneCycleLR(opt, 0.5, total_steps=N + 1, last_epoch=last),
        "lambda": lambda: S.LambdaLR(opt, lambda e: 0.9 ** e, last_epoch=last),
    }[name]()


def test_deepcopy_and_step_epoch_use_the_closed_form():
    for name in ("step", "exp", "cos", "linear", "poly", "lambda", "multistep"):
        make, closed = CASES[name]
        opt = _opt(tg)
        sched = make(tg, opt)
        _ostep(tg, opt)
        sched.step()
        twin = copy.deepcopy(sched)
        assert twin.get_last_lr() == sched.get_last_lr()
        for e in (3, 7, 7, 20, 2):
            with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step"):
                sched.step(e)
            want = [closed(e, b, i) for i, b in enumerate(LRS)]
            assert [g["lr"] for g in opt.param_groups] == pytest.approx(want, rel=1e-12), name


def _plateau_ref(metrics, lr, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0.0, eps=1e-8):
    """ReduceLROnPlateau written out: the rate after each metric."""
    best = math.inf if mode == "min" else -math.inf
    bad, cool, out = 0, 0, []
    for m in metrics:
        if mode == "min":
            better = m < (best * (1 - threshold) if threshold_mode == "rel" else best - threshold)
        else:
            better = m > (best * (1 + threshold) if threshold_mode == "rel" else best + threshold)
        if better:
            best, bad = m, 0
        else:
            bad += 1
        if cool > 0:
            cool -= 1
            bad = 0
        if bad > patience:
            new = max(lr * factor, min_lr)
            if lr - new > eps:
                lr = new
            cool, bad = cooldown, 0
        out.append(lr)
    return out


_METRICS = [1.0, 0.9, 0.95, 0.9, 0.91, 0.92, 0.85, 0.85, 0.86, 0.87, 0.88]


def _metric(i):
    """A loss that plateaus, improves and worsens, drifting down by 1e-3 every 11 steps."""
    return _METRICS[i % 11] - 0.001 * (i // 11)


@pytest.mark.parametrize("kw", [
    dict(patience=2), dict(factor=0.3, patience=0, cooldown=1, min_lr=1e-4),
    dict(mode="max", factor=0.5, patience=1, threshold=0.1, threshold_mode="abs", cooldown=2),
    dict(threshold=0.05, patience=1, eps=1e-3)])
def test_reduce_on_plateau_against_a_reference_with_a_reload(kw):
    metrics = [_metric(i) for i in range(N)]
    want = _plateau_ref(metrics, LRS[0], **kw)
    opt = _opt(tg)
    sched = S.ReduceLROnPlateau(opt, **kw)
    got = []
    for i, m in enumerate(metrics):
        _ostep(tg, opt)
        if i == 33:
            sd = sched.state_dict()
            sched = S.ReduceLROnPlateau(opt, **kw)
            sched.load_state_dict(sd)
        sched.step(m)
        got.append(opt.param_groups[0]["lr"])
        assert sched.get_last_lr()[0] == got[-1]
    assert got == pytest.approx(want, rel=1e-12)


def test_warnings_of_the_call_order_get_lr_and_epoch():
    opt = _opt(tg)
    sched = S.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                         r"`optimizer.step\(\)`"):
        sched.step()
    opt = _opt(tg)
    sched = S.StepLR(opt, 2)
    _ostep(tg, opt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()  # the right order: no warning
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    opt = _opt(tg)
    sched = S.StepLR(opt, 2)
    opt.step = lambda *a, **k: None  # replaced after the scheduler was made: PyTorch warns
    with pytest.warns(UserWarning, match="has been overridden after learning rate scheduler"):
        sched.step()
    assert sched.get_last_lr() == list(LRS)


BAD = [
    (lambda o: S.ConstantLR(o, factor=2.0), ValueError, "between 0 and 1"),
    (lambda o: S.LinearLR(o, start_factor=0), ValueError, "greater than 0"),
    (lambda o: S.LinearLR(o, end_factor=2), ValueError, "between 0 and 1"),
    (lambda o: S.LambdaLR(o, [lambda e: 1]), ValueError, "Expected 2 lr_lambdas"),
    (lambda o: S.MultiplicativeLR(o, [lambda e: 1] * 3), ValueError, "Expected 2 lr_lambdas"),
    (lambda o: S.StepLR(object(), 2), TypeError, "is not an Optimizer"),
    (lambda o: S.StepLR(o, 2, last_epoch=3), KeyError, "initial_lr"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, 0), ValueError, "positive integer T_0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, 2, T_mult=1.5), ValueError, "T_mult"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, 2, eta_min="a"), ValueError, "eta_min"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, 2).step(-1), ValueError, "non-negative"),
    (lambda o: S.CyclicLR(o, 0.1, 1.0, mode="foo"), ValueError, "mode is invalid"),
    (lambda o: S.CyclicLR(o, [0.1], 1.0), ValueError, "base_lr must have the same length"),
    (lambda o: S.CyclicLR(tg.optim.Adagrad([tg.nn.Parameter(tg.ones(1))]), 0.1, 1.0),
     ValueError, "optimizer must support momentum or beta1"),
    (lambda o: S.OneCycleLR(o, 0.1), ValueError, "You must define either total_steps"),
    (lambda o: S.OneCycleLR(o, 0.1, total_steps=0), ValueError, "positive integer total"),
    (lambda o: S.OneCycleLR(o, 0.1, epochs=0, steps_per_epoch=3), ValueError, "epochs"),
    (lambda o: S.OneCycleLR(o, 0.1, total_steps=10, pct_start=1.5), ValueError, "pct_start"),
    (lambda o: S.OneCycleLR(o, 0.1, total_steps=10, anneal_strategy="x"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear'"),
    (lambda o: S.OneCycleLR(o, [0.1], total_steps=10), ValueError, "max_lr must have"),
    (lambda o: S.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0"),
    (lambda o: S.ReduceLROnPlateau(o, mode="x"), ValueError, "mode x is unknown"),
    (lambda o: S.ReduceLROnPlateau(o, threshold_mode="x"), ValueError, "threshold mode x"),
    (lambda o: S.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(o, 3)], [3, 4]), ValueError,
     "number of schedulers provided to be one more than the number of milestone"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(_opt(tg), 3)], [3]), ValueError,
     "same optimizer"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.ReduceLROnPlateau(o)], [3]), ValueError,
     "ReduceLROnPlateau"),
    (lambda o: S.ChainedScheduler([]), ValueError, "at least one scheduler"),
    (lambda o: S.ChainedScheduler([S.StepLR(o, 2)], optimizer=_opt(tg)), ValueError,
     "same optimizer"),
    (lambda o: tg.optim.swa_utils.SWALR(o, 0.1, anneal_strategy="x"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear'"),
    (lambda o: tg.optim.swa_utils.SWALR(o, 0.1, anneal_epochs=-1), ValueError,
     "anneal_epochs must be equal or greater than 0"),
    (lambda o: tg.optim.swa_utils.SWALR(o, [0.1]), ValueError, "swa_lr must have the same"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_arguments_raise_pytorchs_errors(i):
    make, exc, text = BAD[i]
    with pytest.raises(exc, match=_escape(text)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make(_opt(tg))


def _escape(text):
    import re
    return re.escape(text)


# -- against torch ------------------------------------------------------------------------------

def _summary(value):
    """A state dict's structure: keys, value types, numbers (rounded), callables as such."""
    if isinstance(value, dict):
        return {str(k): _summary(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_summary(v) for v in value])
    if isinstance(value, float):
        return ("float", value if math.isinf(value) else round(value, 12))
    if isinstance(value, (bool, int, str, type(None))):
        return (type(value).__name__, value)
    return "callable" if callable(value) else type(value).__name__


TORCH_EXTRA = {
    "cyclic_fn_it": lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=6, scale_fn=lambda x: 0.99 ** x, scale_mode="iterations"),
    "onecycle_nomom": lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        o, 0.5, total_steps=N + 1, cycle_momentum=False, div_factor=10,
        final_div_factor=100, pct_start=0.4),
    "seq3": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.ConstantLR(o, 0.5, total_iters=4),
            L.optim.lr_scheduler.CosineAnnealingLR(o, 10), L.optim.lr_scheduler.StepLR(o, 4)],
        milestones=[6, 20]),
    "chain_opt": lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.StepLR(o, 5), L.optim.lr_scheduler.LinearLR(o, 0.2, total_iters=8)],
        optimizer=o),
    "swalr_0": lambda L, o: L.optim.swa_utils.SWALR(o, swa_lr=0.02, anneal_epochs=0),
}
ALL = {**{k: v[0] for k, v in CASES.items()}, **TORCH_EXTRA}


def _flat(values) -> list:
    out = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, (list, tuple)) else [v])
    return out


def _trace(lib, make, kind):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt = _opt(lib, kind)
        sched = make(lib, opt)
        out = {"rates": [], "moms": [], "last": []}
        for i in range(N):
            _ostep(lib, opt)
            if i == 30:
                out["sd"] = _summary(sched.state_dict())
                out["osd"] = _summary(opt.state_dict()["param_groups"])
            sched.step()
            out["rates"].append([g["lr"] for g in opt.param_groups])
            out["last"].append(list(sched.get_last_lr()))
            out["moms"].append([g.get("momentum", g.get("betas")) for g in opt.param_groups])
    out["warnings"] = sorted({str(w.message)[:50] for w in caught})
    return out


@pytest.mark.parametrize("name", sorted(ALL))
def test_matches_torch_rates_state_dicts_and_warnings(name):
    torch = pytest.importorskip("torch")
    kinds = ("sgd", "adam", "sgd0") if name.startswith(("cyclic", "onecycle")) else ("sgd",)
    for kind in kinds:
        want, got = _trace(torch, ALL[name], kind), _trace(tg, ALL[name], kind)
        for key in ("rates", "last", "moms"):
            for e, (w, g) in enumerate(zip(want[key], got[key])):
                assert _flat(g) == pytest.approx(_flat(w), rel=1e-12, abs=1e-18), \
                    f"{name}/{kind} {key} {e}"
        assert got["sd"] == want["sd"]
        assert got["osd"] == want["osd"]
        assert got["warnings"] == want["warnings"]


def test_torch_state_dict_loads_mid_schedule():
    # a scheduler state dict saved by torch (plain Python values) continues the same schedule
    torch = pytest.importorskip("torch")
    for name in ("step", "cos", "warm_mult", "cyclic_t2", "onecycle", "linear", "swalr"):
        make = CASES[name][0]
        topt, gopt = _opt(torch), _opt(tg)
        tsched, gsched = make(torch, topt), make(tg, gopt)
        for _ in range(23):
            _ostep(torch, topt)
            tsched.step()
            _ostep(tg, gopt)
        sd = {k: v for k, v in tsched.state_dict().items()}
        gsched.load_state_dict(copy.deepcopy(sd) if "cyclic" not in name else sd)
        for g, tg_ in zip(gopt.param_groups, topt.param_groups):
            g["lr"] = tg_["lr"]
        for _ in range(20):
            _ostep(torch, topt)
            tsched.step()
            _ostep(tg, gopt)
            gsched.step()
            assert [g["lr"] for g in gopt.param_groups] == pytest.approx(
                [g["lr"] for g in topt.param_groups], rel=1e-12), name


def test_step_epoch_and_plateau_match_torch():
    torch = pytest.importorskip("torch")
    for name in ("step", "exp", "cos", "linear", "poly", "lambda", "warm", "multistep"):
        res = []
        for lib in (torch, tg):
            opt = _opt(lib)
            sched = CASES[name][0](lib, opt)
            out = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for e in (3, 7, 7, 20, 2, None, None):
                    _ostep(lib, opt)
                    sched.step(e) if e is not None else sched.step()
                    out.append([g["lr"] for g in opt.param_groups])
            res.append(out)
        assert _flat(res[1]) == pytest.approx(_flat(res[0]), rel=1e-12), name


TENSOR_LR = {
    "step": lambda L, o: L.optim.lr_scheduler.StepLR(o, 2),
    "cos": lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, 5),
    "warm": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 3),
    "onecycle": lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, 0.5, total_steps=10),
    "cyclic": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=2),
    "plateau": lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0),
    "lambda": lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: 0.5 ** e),
    "seq": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.ConstantLR(o, 0.5, total_iters=2),
            L.optim.lr_scheduler.ExponentialLR(o, 0.5)], milestones=[2]),
    "swalr": lambda L, o: L.optim.swa_utils.SWALR(o, 0.05, anneal_epochs=3),
}


def _tensor_lr_trace(lib, name, as_tensor):
    p = lib.nn.Parameter(lib.ones(2))
    lr = lib.tensor(0.1, dtype=lib.float64) if as_tensor else 0.1
    opt = lib.optim.SGD([p], lr=lr, momentum=0.9)
    sched = TENSOR_LR[name](lib, opt)
    out = []
    for _ in range(6):
        p.grad = lib.ones(2)
        opt.step()
        sched.step(1.0) if name == "plateau" else sched.step()
        group = opt.param_groups[0]
        last = sched.get_last_lr()[0]
        out.append((type(group["lr"]).__name__, float(group["lr"]), group["lr"] is lr,
                    type(last).__name__, last is group["lr"]))
    return out


@pytest.mark.parametrize("name", sorted(TENSOR_LR))
def test_a_tensor_lr_is_filled_in_place(name):
    # Note [Tensor learning rates]: the group keeps its tensor, filled with each new rate;
    # get_last_lr() gives clones; the rates are those of the same schedule over a float lr
    with_tensor, with_float = _tensor_lr_trace(tg, name, True), _tensor_lr_trace(tg, name, False)
    for t, f in zip(with_tensor, with_float):
        assert t[0] == "Tensor" and t[2] and t[3] == "Tensor" and not t[4]
        assert t[1] == pytest.approx(f[1], rel=1e-12)
    torch = pytest.importorskip("torch")
    want = _tensor_lr_trace(torch, name, True)
    assert [t[:1] + t[2:] for t in with_tensor] == [t[:1] + t[2:] for t in want]
    assert [t[1] for t in with_tensor] == pytest.approx([t[1] for t in want], rel=1e-12)
