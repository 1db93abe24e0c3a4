"""The multi-tensor kernels (kernels/triton/foreach.py) against float64 NumPy: the joint norm
of a list of arrays, the clip coefficient, the in-place scaling, and clip_grad_norm_ on CUDA
through them (a few launches for all gradients, nothing read back)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_kit import D, round_bf16, tk
from tritongrad.kernels.triton import _launch, foreach, launcher
from tritongrad.runtime import memory

import tritongrad as tg
from tritongrad import nn

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FLOATS = [D.float16, D.bfloat16, D.float32, D.float64]
# (rtol) of a total: float32 (float64) accumulation, then one rounding to the dtype
TOTAL_RTOL = {D.float16: 1e-3, D.bfloat16: 8e-3, D.float32: 2e-6, D.float64: 1e-13}
SHAPES = [(1,), (7,), (257,), (0, 3), (5, 13), (3, 2, 40)]


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 16 elements walked 4 at a time: many table rows, several loads per program,
    several loads in the finishing program (the paths large GPU inputs take)."""
    monkeypatch.setattr(foreach, "CHUNK", 16)
    monkeypatch.setattr(foreach, "WIDTH", 4)
    _launch.clear_plans()
    yield
    _launch.clear_plans()


def _arrays(kit, rng, dtypes, shapes=SHAPES, scale=1.0):
    """Device arrays of ``shapes`` (dtypes cycled) and their stored values in float64."""
    dev, host = [], []
    for i, shape in enumerate(shapes):
        dt = dtypes[i % len(dtypes)]
        v = kit.values(shape, dt, rng) * np.asarray(scale, dtype=np.float32)
        a = kit.up(v, dt)
        dev.append(a)
        host.append(kit.down(a).astype(np.float64))
    return dev, host


def _want(host, p):
    """The norm from np.linalg.norm of all values together (independent of reference_norm)."""
    x = np.concatenate([h.ravel() for h in host])
    return float(np.linalg.norm(x, ord=p)) if x.size else 0.0


def _scalar(kit, a):
    assert a.shape == ()
    return float(kit.down(a))


@pytest.mark.parametrize("chunks", ["default", "small"])
@pytest.mark.parametrize("p", [2.0, math.inf, 1.0, 3.0])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_norm_against_float64(kit, rng, request, dtype, p, chunks):
    if chunks == "small":
        request.getfixturevalue("small_chunks")
    dev, host = _arrays(kit, rng, [dtype])
    total, coef = foreach.norm(dev, p, 0.5)
    want = _want(host, p)
    assert total.dtype is dtype and coef.dtype is dtype
    assert abs(_scalar(kit, total) - want) <= TOTAL_RTOL[dtype] * want
    assert foreach.reference_norm(host, p)[0] == pytest.approx(want, rel=1e-12)
    # the coefficient from the total as stored (rounded to the dtype), clamped at 1
    stored = _scalar(kit, total)
    c = min(0.5 / (stored + 1e-6), 1.0)
    assert _scalar(kit, coef) == pytest.approx(c, rel=TOTAL_RTOL[dtype])
    assert foreach.norm(dev, p)[1] is None


def test_norm_over_many_chunks(kit, rng):
    # arrays longer than a chunk and not a multiple of it, next to tiny ones
    dev, host = _arrays(kit, rng, [D.float32], [(2 * foreach.CHUNK + 5,), (3,),
                                                (foreach.CHUNK - 1,), (foreach.CHUNK,)])
    for p in (2.0, math.inf):
        total, _ = foreach.norm(dev, p)
        assert _scalar(kit, total) == pytest.approx(_want(host, p), rel=2e-6)


def test_norm_mixed_dtypes(kit, rng, small_chunks):
    # float16, bfloat16 and float32 arrays together: one table and launch per dtype, float32
    # accumulation, the total in the first array's dtype
    dev, host = _arrays(kit, rng, [D.float32, D.float16, D.bfloat16])
    total, coef = foreach.norm(dev, 2.0, 1.0)
    assert total.dtype is D.float32
    assert _scalar(kit, total) == pytest.approx(_want(host, 2.0), rel=2e-6)
    foreach.mul_(dev, coef)
    c = _scalar(kit, coef)
    for a, h in zip(dev, host):
        want = h * np.float64(np.float32(c) if a.dtype is D.float32 else
                              np.float16(c) if a.dtype is D.float16 else round_bf16(c))
        kit.check(a, want, a.dtype, check_dtype=False)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("p", [2.0, math.inf, 3.0])
def test_non_finite(kit, rng, small_chunks, p, bad):
    # a NaN anywhere makes the total and the coefficient NaN (the max too, which tl.max alone
    # would skip); an infinity gives an infinite total and a zero coefficient
    dev, host = _arrays(kit, rng, [D.float32], [(40,), (9,)])
    host[0][23] = bad
    dev[0] = kit.up(host[0].astype(np.float32))
    total, coef = foreach.norm(dev, p, 1.0)
    t, c = _scalar(kit, total), _scalar(kit, coef)
    if np.isnan(bad):
        assert math.isnan(t) and math.isnan(c)
    else:
        assert t == math.inf and c == 0.0
    assert foreach.reference_norm(host, p, 1.0) == pytest.approx((t, c), nan_ok=True)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_mul_against_float64(kit, rng, small_chunks, dtype):
    dev, host = _arrays(kit, rng, [dtype])
    factor = kit.up(np.array(0.37, dtype=np.float32))
    foreach.mul_(dev, factor)
    f = float(np.float32(0.37))
    if dtype is D.float16:
        f = float(np.float16(f))
    elif dtype is D.bfloat16:
        f = float(round_bf16(f))
    for a, h in zip(dev, host):
        foreach.reference_mul_([h], f)
        kit.check(a, h, dtype, check_dtype=False)


def test_mul_by_one_and_nan(kit, rng):
    dev, _ = _arrays(kit, rng, [D.float32, D.float16])
    before = [kit.down(a).copy() for a in dev]
    foreach.mul_(dev, kit.up(np.array(1.0, dtype=np.float32)))
    for a, b in zip(dev, before):
        np.testing.assert_array_equal(kit.down(a), b)
    foreach.mul_(dev, kit.up(np.array(np.nan, dtype=np.float32)))
    for a in dev:
        assert np.isnan(kit.down(a)).all()


def test_refusals(kit, rng):
    # what the kernels do not handle raises TypeError, for the caller's per-array path
    a = kit.up(rng.standard_normal((4, 5)).astype(np.float32))
    cases = [
        [tk.permute(a, (1, 0))],                                  # not contiguous
        [a, kit.up(np.ones(3))],                                  # float64 with float32
        [kit.up(np.arange(3, dtype=np.int64))],                   # not floating point
    ]
    for arrays in cases:
        with pytest.raises(TypeError):
            foreach.norm(arrays, 2.0)
    for p in (0.0, -1.0, -math.inf):
        with pytest.raises(TypeError, match="norm_type"):
            foreach.norm([a], p)
    with pytest.raises(TypeError, match="no elements"):
        foreach.norm([kit.up(np.ones((0, 3), np.float32))], 2.0)


def test_tables_are_kept(kit, rng, monkeypatch):
    # the chunk map is kept per shapes, the address table per addresses (Note [chunk tables])
    dev, _ = _arrays(kit, rng, [D.float32])
    foreach.norm(dev, 2.0)
    copies = []
    real = memory.to_device
    monkeypatch.setattr(memory, "to_device",
                        lambda host, *a, **k: copies.append(host.shape) or real(host, *a, **k))
    foreach.norm(dev, 2.0, 1.0)
    foreach.mul_(dev, kit.up(np.array(0.5, dtype=np.float32)))
    assert copies == [()]  # the factor's upload only: both tables were reused
    moved = [kit.up(kit.down(a)) for a in dev]  # the same shapes elsewhere: addresses only
    del copies[:]
    foreach.norm(moved, 2.0)
    assert copies == [(len(dev), 1)]
    foreach.norm(dev[1:], 2.0)  # other shapes: both
    assert len(copies) == 3 and copies[2] == (len(dev) - 1, 1)


def test_a_dropped_chunk_is_caught(kit, rng, small_chunks, monkeypatch):
    # negative control: a chunk map missing its last row (a chunk left out) must fail the check
    dev, host = _arrays(kit, rng, [D.float32], [(40,), (9,)])
    real = foreach._tables

    def short(dtype, columns, device):
        chunks, addresses, rows = real(dtype, columns, device)
        return chunks, addresses, rows - 1

    monkeypatch.setattr(foreach, "_tables", short)
    total, _ = foreach.norm(dev, 2.0)
    with pytest.raises(AssertionError):
        assert _scalar(kit, total) == pytest.approx(_want(host, 2.0), rel=2e-6)


# -- clip_grad_norm_ on CUDA through the multi-tensor kernels -----------------------------------
def _params(rng, dtype, shapes):
    params = []
    for s in shapes:
        p = nn.Parameter(tg.zeros(s, dtype=dtype, device="cuda"))
        p.grad = tg.tensor(rng.standard_normal(s), dtype=dtype, device="cuda")
        params.append(p)
    return params


@pytest.mark.parametrize("p", [2.0, math.inf, 1.5])
@pytest.mark.parametrize("dtype", [D.float32, D.float16], ids=str)
def test_clip_grad_norm_launches_and_agrees(rng, monkeypatch, dtype, p):
    shapes = [(16, 8), (8,), (300,), (0,), (3, 3, 3)]
    a, b = _params(rng, dtype, shapes), _params(rng, dtype, shapes)
    for x, y in zip(a, b):
        y.grad = x.grad.clone()
    host = [x.grad.cpu().numpy().astype(np.float64) for x in a]
    versions = [x.grad._version for x in a]
    kernels = []
    call = launcher.Launch.__call__

    def counted(launch, *head):
        kernels.append(launch.kernel.__name__)
        return call(launch, *head)

    def no_read(*args, **kwargs):
        raise AssertionError("clip_grad_norm_ read the norm back from the device")

    monkeypatch.setattr(launcher.Launch, "__call__", counted)
    monkeypatch.setattr(tg.Tensor, "item", no_read)
    total = nn.utils.clip_grad_norm_(a, 0.5, norm_type=p)
    monkeypatch.undo()
    assert kernels == ["_norm_partials_kernel", "_norm_finish_kernel", "_mul_kernel"]
    # the per-gradient path gives the same total and gradients (up to the additions' order)
    per_grad = nn.utils.clip_grad_norm_(b, 0.5, norm_type=p, foreach=False)
    want = _want(host, p)
    rtol = TOTAL_RTOL[dtype]
    assert total.dtype is dtype and total.device.type == "cuda"
    assert total.item() == pytest.approx(want, rel=rtol)
    assert per_grad.item() == pytest.approx(want, rel=rtol)
    coef = min(0.5 / (want + 1e-6), 1.0)
    for x, y, h, v in zip(a, b, host, versions):
        assert x.grad._version == v + 1
        np.testing.assert_allclose(x.grad.cpu().numpy().astype(np.float64), h * coef,
                                   rtol=2 * rtol, atol=1e-7)
        np.testing.assert_allclose(x.grad.cpu().numpy().astype(np.float64),
                                   y.grad.cpu().numpy().astype(np.float64), rtol=2 * rtol)


def test_clip_grad_norm_falls_back(rng, monkeypatch):
    # a non-contiguous gradient sends all of them down the per-gradient path
    a = _params(rng, D.float32, [(6, 4), (5,)])
    a[0].grad = tg.tensor(rng.standard_normal((4, 6)), dtype=D.float32, device="cuda").t()
    assert not a[0].grad.is_contiguous()
    host = [x.grad.cpu().numpy().astype(np.float64) for x in a]
    called = []
    monkeypatch.setattr(foreach, "mul_", lambda *args: called.append(1))
    total = nn.utils.clip_grad_norm_(a, 1.0)
    assert not called
    assert total.item() == pytest.approx(_want(host, 2.0), rel=2e-6)


def test_clip_grad_norm_error_if_nonfinite(rng):
    a = _params(rng, D.float32, [(4,), (3,)])
    a[1].grad = tg.tensor([1.0, float("nan"), 2.0], device="cuda")
    before = [x.grad.cpu().numpy().copy() for x in a]
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(a, 1.0, error_if_nonfinite=True)
    for x, b in zip(a, before):  # raised before scaling
        np.testing.assert_array_equal(x.grad.cpu().numpy(), b)


# -- the multi-tensor Adam/AdamW step -----------------------------------------------------------
ADAM_TOL = {D.float32: (1e-5, 1e-6), D.float64: (1e-12, 1e-14), D.float16: (2e-3, 2e-3),
            D.bfloat16: (1.6e-2, 1.6e-2)}


def _adam64(p, g, m, v, step, lr, b1, b2, eps, wd, maximize, decoupled):
    """Adam/AdamW in float64 (optim/adam.py's formulas)."""
    g = -g if maximize else g
    if wd and decoupled:
        p = p * (1 - lr * wd)
    elif wd:
        g = g + wd * p
    m = m + (1 - b1) * (g - m)
    v = v * b2 + (1 - b2) * g * g
    denom = np.sqrt(v) / math.sqrt(1 - b2 ** step) + eps
    return p - lr / (1 - b1 ** step) * m / denom, m, v


def _bitwise_and_near(kit, got: tuple, same: tuple, want: tuple, rtol: float, atol: float):
    """Each list of ``got`` equal bit for bit to ``same``'s and near ``want``'s float64."""
    for arrays, others, wanted in zip(got, same, want):
        for a, b, w in zip(arrays, others, wanted):
            np.testing.assert_array_equal(kit.down(a), kit.down(b))
            np.testing.assert_allclose(kit.down(a).astype(np.float64), w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("wd,maximize,decoupled", [(0.0, False, False), (0.01, False, True),
                                                   (0.01, True, False), (0.1, True, True)])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adam_step_against_float64_and_per_parameter(kit, rng, small_chunks, dtype, wd,
                                                     maximize, decoupled):
    shapes = [(1,), (37,), (5, 13), (0,), (16,)]
    sets = []  # [p, g, m, v] lists: one for the multi-tensor step, one per parameter
    for _ in range(2):
        r = np.random.default_rng(5)
        sets.append([_arrays(kit, r, [dtype], shapes)[0] for _ in range(4)])
    (ps, gs, ms, vs), (qs, hs, ns, ws) = sets
    for lst in (vs, ws):  # second moments are non-negative
        lst[:] = [tk.mul(a, a) for a in lst]
    host = [[kit.down(a).astype(np.float64) for a in lst] for lst in (ps, gs, ms, vs)]
    args = (1e-2, 0.9, 0.999, 1e-8, wd, maximize, decoupled)
    for step in (1, 2):
        foreach.adam_step(ps, gs, ms, vs, step, *args)
        for q, h, n, w in zip(qs, hs, ns, ws):
            tk.adam_step(q, h, n, w, None, step, 1e-2, 0.9, 0.999, 1e-8, wd, False, maximize,
                         decoupled)
        host[0], host[2], host[3] = zip(*[_adam64(p, g, m, v, step, *args)
                                          for p, g, m, v in zip(*host)])
    _bitwise_and_near(kit, (ps, ms, vs), (qs, ns, ws), (host[0], host[2], host[3]),
                      *ADAM_TOL[dtype])


def test_adam_step_refusals(kit, rng):
    a = kit.up(rng.standard_normal(6).astype(np.float32))
    b = kit.up(rng.standard_normal(6).astype(np.float16))
    with pytest.raises(TypeError, match="one dtype"):
        foreach.adam_step([a], [b], [a], [a], 1, 1e-3, 0.9, 0.999, 1e-8, 0.0, False, True)
    with pytest.raises(ValueError, match="sizes differ"):
        foreach.adam_step([a], [kit.up(np.ones(5, np.float32))], [a], [a], 1, 1e-3, 0.9, 0.999,
                          1e-8, 0.0, False, True)


@pytest.mark.parametrize("wd,maximize,decoupled", [(0.0, False, False), (0.01, True, True)])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adam_step_capturable_is_the_per_parameter_kernel(kit, rng, small_chunks, dtype, wd,
                                                          maximize, decoupled):
    """Every count advanced once, each parameter updated with the bias corrections of its own
    count (two counts here: a parameter that joined later), bit for bit as optim.py's
    per-parameter capturable kernel, and near float64 Adam."""
    shapes = [(1,), (37,), (5, 13), (0,), (16,)]
    sets = []
    for _ in range(2):
        r = np.random.default_rng(6)
        sets.append([_arrays(kit, r, [dtype], shapes)[0] for _ in range(4)])
    (ps, gs, ms, vs), (qs, hs, ns, ws) = sets
    for lst in (vs, ws):
        lst[:] = [tk.mul(a, a) for a in lst]
    first = [0.0, 3.0, 3.0, 0.0, 3.0]  # the counts before the first step
    steps, steps2 = ([kit.up(np.array([c], np.float32)).as_strided((), (), 0) for c in first]
                     for _ in range(2))
    host = [[kit.down(a).astype(np.float64) for a in lst] for lst in (ps, gs, ms, vs)]
    args = (1e-2, 0.9, 0.999, 1e-8, wd, maximize, decoupled)
    for k in (1, 2):
        foreach.adam_step_capturable(ps, gs, ms, vs, steps, *args)
        for q, h, n, w, c in zip(qs, hs, ns, ws, steps2):
            tk.add(c, 1.0, out=c)  # (optim.py's kernel takes the count advanced)
            tk.adam_step_capturable(q, h, n, w, None, c, 1e-2, 0.9, 0.999, 1e-8, wd, False,
                                    maximize, decoupled)
        host[0], host[2], host[3] = zip(*[_adam64(p, g, m, v, c + k, *args)
                                          for p, g, m, v, c in zip(*host, first)])
    assert [float(kit.down(c)) for c in steps] == [c + 2 for c in first]
    rtol, atol = ADAM_TOL[dtype]
    _bitwise_and_near(kit, (ps, ms, vs), (qs, ns, ws), (host[0], host[2], host[3]),
                      max(rtol, 1e-5), max(atol, 1e-6))  # (float32 bias corrections)


def test_adam_step_capturable_refuses_before_launching(kit, rng):
    a = kit.up(rng.standard_normal(6).astype(np.float32))
    count = kit.up(np.zeros(1, np.float32))
    args = (1e-3, 0.9, 0.999, 1e-8, 0.0, False, True)
    for bad in (kit.up(np.zeros(1, np.float64)), kit.up(np.zeros(2, np.float32))):
        with pytest.raises(TypeError, match="one-element float32 step counts"):
            foreach.adam_step_capturable([a, a], [a, a], [a, a], [a, a], [count, bad], *args)
    with pytest.raises(ValueError, match="1 step counts for 2 parameters"):
        foreach.adam_step_capturable([a, a], [a, a], [a, a], [a, a], [count], *args)
    assert float(kit.down(count)[0]) == 0.0  # nothing launched


def _adam_launches(monkeypatch, kernel: str = "_adam_kernel"):
    """The Adam kernels (or those named ``kernel``: "_sgd_kernel") launched while installed:
    "multi" (foreach.py's), "single" (optim.py's)."""
    from tritongrad.kernels.triton import optim

    kernels = []
    call = launcher.Launch.__call__
    names = {id(getattr(foreach, kernel)): "multi", id(getattr(optim, kernel)): "single"}

    def counted(launch, *head):
        if id(launch.kernel) in names:
            kernels.append(names[id(launch.kernel)])
        return call(launch, *head)

    monkeypatch.setattr(launcher.Launch, "__call__", counted)
    return kernels


@pytest.mark.parametrize("opt", ["AdamW", "Adam"])
def test_adam_optimizer_one_launch_per_group(rng, monkeypatch, opt):
    # a group's parameters updated together, bit for bit as one at a time (foreach=False);
    # a parameter joining later (another step count) is its own launch
    shapes = [(16, 8), (8,), (300,), (3, 3, 3)]
    models = [_params(np.random.default_rng(3), D.float32, shapes) for _ in range(2)]
    kw = {"lr": 1e-2, "weight_decay": 0.05, "maximize": opt == "Adam"}
    multi = getattr(tg.optim, opt)(models[0], **kw)
    single = getattr(tg.optim, opt)(models[1], foreach=False, **kw)
    for step in range(3):
        kernels = _adam_launches(monkeypatch)
        multi.step()
        monkeypatch.undo()
        assert kernels == ["multi"]
        kernels = _adam_launches(monkeypatch)
        single.step()
        monkeypatch.undo()
        assert kernels == ["single"] * len(shapes)
        for a, b in zip(*models):
            np.testing.assert_array_equal(a.detach().cpu().numpy(),
                                          b.detach().cpu().numpy())
            a.grad = b.grad = tg.tensor(rng.standard_normal(a.shape), dtype=D.float32,
                                        device="cuda")
    # parameters joining the first group: step count 1 beside 4, so two launches
    extra = [_params(np.random.default_rng(4), D.float32, [(7,), (5,)]) for _ in range(2)]
    multi.param_groups[0]["params"] += extra[0]
    single.param_groups[0]["params"] += extra[1]
    kernels = _adam_launches(monkeypatch)
    multi.step()
    monkeypatch.undo()
    assert kernels == ["multi", "multi"]
    single.step()
    for a, b in zip(models[0] + extra[0], models[1] + extra[1]):
        np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
        assert multi.state[a]["step"].item() == single.state[b]["step"].item()


@pytest.mark.parametrize("warm", [True, False])
def test_clip_grad_norm_in_a_cuda_graph(rng, monkeypatch, warm):
    # captured and replayed on fresh gradients; without tables made before on the capturing
    # stream (cold) the capture copies them from page-locked memory (a copy the graph repeats)
    # and still takes the multi-tensor kernels (Note [chunk tables])
    params = _params(rng, D.float32, [(40,), (9,), (3, 5)])
    side = tg.cuda.Stream()
    if warm:
        with tg.cuda.stream(side):
            nn.utils.clip_grad_norm_(params, 0.5)
    side.synchronize()
    kernels = []
    call = launcher.Launch.__call__
    monkeypatch.setattr(launcher.Launch, "__call__",
                        lambda launch, *head: kernels.append(launch.kernel) or call(launch, *head))
    g = tg.cuda.CUDAGraph()
    with tg.cuda.graph(g, stream=side):
        total = nn.utils.clip_grad_norm_(params, 0.5)
    monkeypatch.undo()
    assert foreach._norm_partials_kernel in kernels
    for _ in range(2):
        host = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
        for p, h in zip(params, host):
            p.grad.copy_(tg.tensor(h, device="cuda"))
        g.replay()
        want = _want([h.astype(np.float64) for h in host], 2.0)
        assert total.item() == pytest.approx(want, rel=2e-6)
        for p, h in zip(params, host):
            np.testing.assert_allclose(p.grad.cpu().numpy(), h * (0.5 / (want + 1e-6)),
                                       rtol=1e-5)


# -- the multi-tensor SGD step --------------------------------------------------------------------
def _sgd64(p, g, buf, lr, momentum, dampening, wd, nesterov, maximize):
    """SGD in float64 (optim/sgd.py's formulas); ``buf`` None: the first step."""
    g = -g if maximize else g
    if wd:
        g = g + wd * p
    if momentum:
        buf = g if buf is None else buf * momentum + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf
    return p - lr * g, buf


@pytest.mark.parametrize("momentum,dampening,wd,nesterov,maximize", [
    (0.0, 0.0, 0.0, False, False), (0.9, 0.0, 0.01, False, True), (0.9, 0.1, 0.0, False, False),
    (0.5, 0.0, 0.1, True, False)])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_sgd_step_against_float64_and_per_parameter(kit, small_chunks, dtype, momentum,
                                                    dampening, wd, nesterov, maximize):
    shapes = [(1,), (37,), (5, 13), (0,), (16,)]
    sets = []  # [p, g] lists: one for the multi-tensor step, one per parameter
    for _ in range(2):
        r = np.random.default_rng(7)
        sets.append([_arrays(kit, r, [dtype], shapes)[0] for _ in range(2)])
    (ps, gs), (qs, hs) = sets
    host_p, host_g = ([kit.down(a).astype(np.float64) for a in lst] for lst in (ps, gs))
    host_b = [None] * len(shapes)
    bufs = [tk.empty(a.shape, dtype) for a in ps] if momentum else None  # (written: first)
    cbufs = [tk.empty(a.shape, dtype) for a in qs]
    args = (1e-1, momentum, dampening, wd, nesterov, maximize)
    for first in (True, False):
        foreach.sgd_step(ps, gs, bufs, *args, first)
        for q, h, b in zip(qs, hs, cbufs):
            tk.sgd_step(q, h, b, *args, first)
        host_p, host_b = zip(*[_sgd64(p, g, b, *args) for p, g, b in zip(host_p, host_g, host_b)])
    rtol, atol = ADAM_TOL[dtype]
    if momentum:
        _bitwise_and_near(kit, (ps, bufs), (qs, cbufs), (host_p, host_b), rtol, atol)
    else:
        _bitwise_and_near(kit, (ps,), (qs,), (host_p,), rtol, atol)


def test_sgd_step_refusals(kit, rng):
    a = kit.up(rng.standard_normal(6).astype(np.float32))
    b = kit.up(rng.standard_normal(6).astype(np.float16))
    with pytest.raises(TypeError, match="one dtype"):
        foreach.sgd_step([a], [b], None, 0.1, 0.0, 0.0, 0.0, False, False, False)
    with pytest.raises(ValueError, match="sizes differ"):
        foreach.sgd_step([a], [a], [kit.up(np.ones(5, np.float32))], 0.1, 0.9, 0.0, 0.0, False,
                         False, False)
    t = kit.up(rng.standard_normal((3, 4)).astype(np.float32))
    with pytest.raises(TypeError, match="contiguous"):
        foreach.sgd_step([t.permute((1, 0))], [t], None, 0.1, 0.0, 0.0, 0.0, False, False, False)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_optimizer_one_launch_per_group(rng, monkeypatch, momentum):
    # a group's parameters updated together, bit for bit as one at a time (foreach=False), the
    # momentum buffers too; parameters joining later (new buffers) are their own launch, and
    # a float64 parameter its own dtype's
    shapes = [(16, 8), (8,), (300,), (3, 3, 3)]
    models = [_params(np.random.default_rng(3), D.float32, shapes) for _ in range(2)]
    kw = {"lr": 1e-2, "momentum": momentum, "weight_decay": 0.05, "nesterov": bool(momentum)}
    multi = tg.optim.SGD(models[0], **kw)
    single = tg.optim.SGD(models[1], foreach=False, **kw)

    def step(opt, want):
        kernels = _adam_launches(monkeypatch, "_sgd_kernel")
        opt.step()
        monkeypatch.undo()
        assert kernels == want

    def agree(ms, ss):
        for a, b in zip(ms, ss):
            np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
            if momentum:
                np.testing.assert_array_equal(multi.state[a]["momentum_buffer"].cpu().numpy(),
                                              single.state[b]["momentum_buffer"].cpu().numpy())
            else:
                assert a not in multi.state and b not in single.state  # (as PyTorch: no state)

    for _ in range(3):
        step(multi, ["multi"])
        step(single, ["single"] * len(shapes))
        agree(*models)
        for a, b in zip(*models):
            a.grad = b.grad = tg.tensor(rng.standard_normal(a.shape), dtype=D.float32,
                                        device="cuda")
    extra = [_params(np.random.default_rng(4), D.float32, [(7,), (5,)])
             + _params(np.random.default_rng(4), D.float64, [(6,)]) for _ in range(2)]
    multi.param_groups[0]["params"] += extra[0]
    single.param_groups[0]["params"] += extra[1]
    versions = [p._version for p in models[0] + extra[0]]
    # with momentum: old buffers, new buffers, float64 (one parameter: its own launch still)
    step(multi, ["multi", "multi", "multi"] if momentum else ["multi", "multi"])
    single.step()
    agree(models[0] + extra[0], models[1] + extra[1])
    assert [p._version for p in models[0] + extra[0]] == [v + 1 for v in versions]
