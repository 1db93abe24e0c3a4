"""Autocast and GradScaler against PyTorch's behaviour (sweep 33): the state functions'
argument checks and device strings, regions entered and left inside a listed op, the
decorator, GradScaler's unscaling (low precision gradients rounded once, the inf check made
before unscaling), its update rule, pickling and PyTorch's private helpers; and the
op-side differences the sweep found (policies missing from op rows, ``out=`` under autocast,
addmm's double rounding in float16/bfloat16; more in test_autocast_ops33.py). Expected
values are computed here with NumPy in float32/float64; a comparison with torch runs where
torch is installed."""

import pickle
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import autocast as ac
from tritongrad.nn import functional as F


@pytest.fixture(autouse=True)
def _clean_state():
    yield
    # every test leaves the thread's autocast state as it found it
    assert not tg.is_autocast_enabled("cpu") and not tg.is_autocast_enabled("cuda")
    assert tg.get_autocast_dtype("cpu") is tg.bfloat16 and tg.is_autocast_cache_enabled()
    assert ac._tls.nesting == 0 and ac._threads_on == 0


# -- device strings and argument types ----------------------------------------------------------

def test_device_strings_with_an_index_name_their_type():
    with tg.autocast("cpu:0") as region:
        assert region.device == "cpu:0"
        assert tg.is_autocast_enabled("cpu") and tg.is_autocast_enabled("cpu:0")
        assert (tg.ones(2, 2) @ tg.ones(2, 2)).dtype is tg.bfloat16
    assert tg.is_autocast_available("cuda:1") and tg.is_autocast_available("cpu")


def test_unknown_device_strings_and_types():
    for fn in (tg.autocast, tg.is_autocast_enabled, tg.get_autocast_dtype,
               tg.is_autocast_available):
        with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* at start of "
                                               "device string: foo"):
            fn("foo")
    with pytest.raises(RuntimeError, match="Expected one of"):
        tg.autocast("cpu:x")
    # a device type PyTorch knows but autocast here has not
    assert not tg.is_autocast_available("meta")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'meta'"):
        tg.autocast("meta")
    with pytest.raises(TypeError, match=r"is_autocast_enabled\(\): argument 'device_type' "
                                        r"\(position 1\) must be str, not int"):
        tg.is_autocast_enabled(1)


def test_setters_take_only_their_types():
    with pytest.raises(TypeError, match=r"set_autocast_enabled\(\): argument 'enabled' "
                                        r"\(position 2\) must be bool, not int"):
        tg.set_autocast_enabled("cpu", 1)
    with pytest.raises(TypeError, match=r"argument 'dtype' \(position 2\) must be "):
        tg.set_autocast_dtype("cpu", "float16")
    with pytest.raises(TypeError, match=r"enabled must be a bool \(got int\)"):
        tg.set_autocast_cache_enabled(0)
    assert tg.get_autocast_dtype("cpu") is tg.bfloat16 and tg.is_autocast_cache_enabled()


def test_set_autocast_enabled_older_form_sets_cuda():
    tg.set_autocast_enabled(True)
    try:
        assert tg.is_autocast_enabled() and tg.is_autocast_enabled("cuda")
        assert not tg.is_autocast_enabled("cpu")
    finally:
        tg.set_autocast_enabled(False)


@pytest.mark.parametrize("kwargs, message", [
    ({"enabled": 1}, r"argument 'enabled' \(position 2\) must be bool, not int"),
    ({"enabled": "yes"}, r"must be bool, not str"),
    ({"cache_enabled": 0}, r"enabled must be a bool \(got int\)"),
])
def test_a_region_with_a_non_bool_flag_is_refused_without_changing_state(kwargs, message):
    region = tg.autocast("cpu", **kwargs)
    with pytest.raises(TypeError, match=message), region:
        pass
    # (PyTorch's leaves the region half entered: enabled, one level deeper)
    assert ac._tls.nesting == 0 and not tg.is_autocast_enabled("cpu")


def test_numpy_bools_are_bools():
    with tg.autocast("cpu", enabled=np.bool_(True), cache_enabled=np.bool_(False)):
        assert tg.is_autocast_enabled("cpu") and not tg.is_autocast_cache_enabled()


# -- the decorator ------------------------------------------------------------------------------

def test_decorating_a_non_callable_is_a_type_error():
    with pytest.raises(TypeError, match=r"autocast\(\)\(func\) requires a callable, but got "
                                        r"int. Did you mean to use autocast as a context"):
        tg.autocast("cpu")(3)


def test_a_recursive_decorated_function_restores_the_state():
    @tg.autocast("cpu", dtype=tg.float16)
    def f(n):
        if n == 0:
            return tg.get_autocast_dtype("cpu"), tg.is_autocast_enabled("cpu")
        return f(n - 1)

    assert f(3) == (tg.float16, True)
    # (PyTorch's decorator shares one region object among the calls: after a recursive
    # call it leaves autocast enabled with float16; the fixture checks that this one does not)


# -- regions inside a listed op -----------------------------------------------------------------

def test_suspended_turns_casting_off_and_back():
    a = tg.ones(2, 2)
    with ac.suspended():  # (outside any region: nothing to do)
        assert (a @ a).dtype is tg.float32
    with tg.autocast("cpu"):
        with ac.suspended():
            assert tg.is_autocast_enabled("cpu")  # (the state is left as it is)
            assert (a @ a).dtype is tg.float32
            # a region entered and left inside does not turn casting back on
            with tg.autocast("cpu", enabled=False):
                pass
            assert (a @ a).dtype is tg.float32
            with tg.autocast("cpu"):  # (one enabled inside casts, as asked)
                assert (a @ a).dtype is tg.bfloat16
            assert (a @ a).dtype is tg.float32
        assert (a @ a).dtype is tg.bfloat16


def test_nesting_counter():
    assert ac.autocast_increment_nesting() == 1
    assert ac.autocast_increment_nesting() == 2
    assert ac.autocast_decrement_nesting() == 1
    assert ac.autocast_decrement_nesting() == 0


def test_amp_submodules():
    from tritongrad.amp.autocast_mode import autocast, custom_fwd, is_autocast_available
    from tritongrad.amp.grad_scaler import GradScaler, OptState
    assert autocast is tg.autocast and custom_fwd is tg.amp.custom_fwd
    assert is_autocast_available("cpu") and GradScaler is tg.amp.GradScaler
    assert OptState.READY.value == 0


# -- GradScaler ---------------------------------------------------------------------------------

def _params(dtype=tg.float32):
    p1 = tg.nn.Parameter(tg.tensor([1.0, -2.0, 3.0], dtype=dtype))
    p2 = tg.nn.Parameter(tg.tensor([[0.5, 0.25], [-1.0, 2.0]], dtype=dtype))
    return p1, p2


def _bf16(x) -> np.ndarray:
    """float32 values rounded to bfloat16 (to nearest, ties to even), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def test_low_precision_gradients_are_unscaled_in_float32_and_rounded_once():
    p = tg.nn.Parameter(tg.tensor([1.0, 3.0, -7.0, 0.1], dtype=tg.bfloat16))
    opt = tg.optim.SGD([p], lr=0.1)
    scaler = tg.amp.GradScaler("cpu", init_scale=3.0)
    w = tg.tensor([1.1, 2.3, 5.7, 0.37], dtype=tg.bfloat16)
    scaler.scale((p * w).sum()).backward()
    scaled = p.grad.float().numpy()
    scaler.unscale_(opt)
    inv = np.float32(1 / np.float64(np.float32(3.0)))
    want = _bf16(scaled * inv)
    np.testing.assert_array_equal(p.grad.float().numpy(), want)
    assert p.grad.dtype is tg.bfloat16
    # multiplying by inv_scale rounded to bfloat16 first gives a different answer here
    assert not np.array_equal(want, _bf16(scaled * _bf16(inv)))


def test_inf_check_is_made_before_unscaling():
    # a scale below 1 can turn a finite gradient infinite when unscaled: PyTorch checks the
    # gradients as they were, so that step is not skipped
    p = tg.nn.Parameter(tg.tensor([1.0, 1.0]))
    opt = tg.optim.SGD([p], lr=0.0)
    scaler = tg.amp.GradScaler("cpu", init_scale=0.5)
    scaler.scale(p.sum())
    p.grad = tg.tensor([2e38, 1.0])  # (a scaled gradient, finite)
    with np.errstate(over="ignore"):
        scaler.unscale_(opt)
    assert np.isinf(p.grad.numpy()[0])
    found = scaler._found_inf_per_device(opt)
    assert list(found) == [p.device]
    f = found[p.device]
    assert f.shape == () and f.dtype is tg.float32 and f.item() == 0.0


def test_found_inf_per_device_and_the_skipped_step():
    p1, p2 = _params()
    opt = tg.optim.SGD([p1, p2], lr=0.1)
    scaler = tg.amp.GradScaler("cpu", init_scale=8.0)
    loss = (p1 * tg.tensor([float("nan"), 1.0, 1.0])).sum() + p2.sum()
    scaler.scale(loss).backward()
    assert scaler.step(opt) is None
    (f,) = scaler._found_inf_per_device(opt).values()
    assert f.shape == () and f.item() == 1.0
    scaler.update()
    assert scaler.get_scale() == 4.0 and scaler._get_growth_tracker() == 0
    np.testing.assert_array_equal(p1.detach().numpy(), [1.0, -2.0, 3.0])  # not stepped


def test_check_inf_per_device_leaves_the_gradients():
    p1, p2 = _params()
    opt = tg.optim.SGD([p1, p2], lr=0.1)
    scaler = tg.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale((p1 * p1).sum() + p2.sum()).backward()
    g = p1.grad.numpy().copy()
    (f,) = scaler._check_inf_per_device(opt).values()
    assert f.item() == 0.0
    np.testing.assert_array_equal(p1.grad.numpy(), g)
    assert scaler._get_scale_async() is scaler._scale


def _update_rule(scale, tracker, found, growth, backoff, interval):
    """PyTorch's _amp_update_scale_, written out in float64 then rounded to float32."""
    if found:
        return float(np.float32(scale * backoff)), 0
    if tracker + 1 == interval:
        grown = np.float64(scale) * growth
        return (float(np.float32(grown)) if np.isfinite(np.float32(grown)) else scale), 0
    return scale, tracker + 1


def test_update_follows_pytorchs_rule():
    p1, p2 = _params()
    opt = tg.optim.SGD([p1, p2], lr=0.1)
    scaler = tg.amp.GradScaler("cpu", init_scale=4.0, growth_factor=3.0, backoff_factor=0.3,
                               growth_interval=3)
    scale, tracker = 4.0, 0
    for i in range(9):
        opt.zero_grad()
        bad = i in (4, 5)
        factor = tg.tensor([float("inf") if bad else 1.0, 1.0, 1.0])
        scaler.scale((p1 * factor).sum() + (p2 ** 2).sum()).backward()
        scaler.step(opt)
        scaler.update()
        scale, tracker = _update_rule(scale, tracker, bad, 3.0, 0.3, 3)
        assert (scaler.get_scale(), scaler._get_growth_tracker()) == (scale, tracker)


def test_private_helpers():
    from tritongrad.optim.grad_scaler import (_amp_foreach_non_finite_check_and_unscale_,
                                              _amp_update_scale_)
    grads = [tg.tensor([2.0, 4.0]), tg.tensor([float("inf")]),
             tg.tensor([6.0], dtype=tg.float64)]
    found = tg.zeros(())
    _amp_foreach_non_finite_check_and_unscale_(grads, found, tg.tensor(0.5))
    assert found.item() == 1.0
    assert grads[0].tolist() == [1.0, 2.0] and grads[1].tolist() == [float("inf")]
    assert grads[2].tolist() == [3.0] and grads[2].dtype is tg.float64
    scale, tracker = tg.tensor(4.0), tg.tensor(1, dtype=tg.int32)
    assert _amp_update_scale_(scale, tracker, tg.tensor(0.0), 2.0, 0.5, 2) is scale
    assert (scale.item(), tracker.item()) == (8.0, 0)
    _amp_update_scale_(scale, tracker, tg.tensor(1.0), 2.0, 0.5, 2)
    assert (scale.item(), tracker.item()) == (4.0, 0)
    # never grown to infinity
    big = tg.tensor(3e38)
    _amp_update_scale_(big, tracker, tg.tensor(0.0), 2.0, 0.5, 1)
    assert big.item() == np.float32(3e38)


def test_pickling_keeps_the_state_as_numbers():
    p1, _ = _params()
    opt = tg.optim.SGD([p1], lr=0.1)
    scaler = tg.amp.GradScaler("cpu", init_scale=8.0)
    scaler.scale(p1.sum()).backward()
    scaler.step(opt)
    with pytest.raises(AssertionError, match="A GradScaler instance may only be pickled at "
                                             "the beginning of an iteration"):
        pickle.dumps(scaler)
    scaler.update()
    state = scaler.__getstate__()
    assert state["_scale"] is None and state["_growth_tracker"] is None
    assert state["_init_scale"] == 8.0 and state["_init_growth_tracker"] == 1
    copy = pickle.loads(pickle.dumps(scaler))
    assert copy._scale is None and copy.state_dict() == scaler.state_dict()
    disabled = pickle.loads(pickle.dumps(tg.amp.GradScaler("cpu", enabled=False)))
    assert not disabled.is_enabled()


def test_lazy_init_twice_is_refused():
    scaler = tg.amp.GradScaler("cpu")
    scaler.scale(tg.ones(1))
    with pytest.raises(AssertionError, match="_growth_tracker initialized before _scale"):
        scaler._lazy_init_scale_growth_tracker(tg.device("cpu"))


def test_training_loop_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w0, x, y = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    results = []
    for lib in (torch, tg):
        lin = lib.nn.Linear(4, 3)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w0, dtype=lib.float32))
            lin.bias.zero_()
        opt = lib.optim.SGD(lin.parameters(), lr=0.05)
        scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
        xs, ys = lib.tensor(x, dtype=lib.float32), lib.tensor(y, dtype=lib.float32)
        history = []
        for i in range(6):
            opt.zero_grad()
            with lib.autocast("cpu"):
                out = lin(xs).sum(1)
                loss = lib.nn.functional.mse_loss(out, ys) * (float("inf") if i == 2 else 1)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                scaler.scale(loss).backward()
                scaler.step(opt)
            scaler.update()
            history.append((loss.dtype is lib.float32, scaler.get_scale(),
                            scaler._get_growth_tracker()))
        results.append((history, lin.weight.detach().double().numpy(),
                        lin.weight.grad.dtype is lib.float32))
    (h_t, w_t, g_t), (h_g, w_g, g_g) = results
    assert h_t == h_g and g_t and g_g
    np.testing.assert_allclose(w_g, w_t, rtol=2e-2, atol=2e-2)  # (bfloat16 forward)


def test_unscale_matches_torch_for_each_dtype():
    torch = pytest.importorskip("torch")
    vals = np.array([1.1, -2.3, 5.7, 1e-3, 300.0])
    for name in ("float32", "bfloat16", "float64"):
        got = []
        for lib in (torch, tg):
            p = lib.nn.Parameter(lib.tensor(vals, dtype=getattr(lib, name)))
            opt = lib.optim.SGD([p], lr=0.1)
            scaler = lib.amp.GradScaler("cpu", init_scale=3.0)
            scaler.scale((p * p).sum()).backward()
            scaler.unscale_(opt)
            got.append(p.grad.double().numpy())
        np.testing.assert_array_equal(got[1], got[0], err_msg=name)


# -- op-side differences (files other than autocast's; see the sweep 33 report) ----------------

def _cpu_dtype(fn, *shapes, dtype=tg.bfloat16, **kw):
    rng = np.random.default_rng(1)
    args = [tg.tensor(rng.standard_normal(s) + (3 * np.eye(s[-1]) if len(s) == 2 and s[0] == s[1]
                                                else 0), dtype=dtype) for s in shapes]
    with tg.autocast("cpu"):
        return fn(*args, **kw).dtype


_FLOAT32_ON_CPU = {  # PyTorch's CPU float32 list: bfloat16 inputs come out float32
    "cdist": lambda: _cpu_dtype(tg.cdist, (3, 4), (2, 4)),
    "trace": lambda: _cpu_dtype(tg.trace, (3, 3)),
    "pinverse": lambda: _cpu_dtype(tg.pinverse, (3, 2), dtype=tg.float32),
    "linalg.lstsq": lambda: _cpu_dtype(lambda a, b: tg.linalg.lstsq(a, b).solution, (3, 2),
                                       (3, 1), dtype=tg.float32),
    "replication_pad1d": lambda: _cpu_dtype(lambda x: F.pad(x, (1, 1), mode="replicate"),
                                            (1, 2, 4)),
    "reflection_pad2d": lambda: _cpu_dtype(lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"),
                                           (1, 1, 3, 3)),
    "cosine_embedding_loss": lambda: _cpu_dtype(
        lambda a, b: F.cosine_embedding_loss(a, b, tg.tensor([1, -1])), (2, 3), (2, 3)),
    "triplet_margin_loss": lambda: _cpu_dtype(F.triplet_margin_loss, (2, 3), (2, 3), (2, 3)),
    "multi_margin_loss": lambda: _cpu_dtype(lambda a: F.multi_margin_loss(a, tg.tensor([0, 2])),
                                            (2, 3)),
    "grid_sample": lambda: _cpu_dtype(lambda x, g: F.grid_sample(x, g * 0.1,
                                                                 align_corners=False),
                                      (1, 1, 3, 3), (1, 2, 2, 2)),
}


@pytest.mark.parametrize("name", sorted(_FLOAT32_ON_CPU))
def test_pytorchs_cpu_float32_list(name):
    assert _FLOAT32_ON_CPU[name]() is tg.float32


def test_vecdot_runs_in_lower_precision():
    assert _cpu_dtype(tg.linalg.vecdot, (3, 4), (3, 4), dtype=tg.float32) is tg.bfloat16


def test_gru_stays_float32_on_cpu():
    gru = tg.nn.GRU(3, 4)
    with tg.autocast("cpu"):
        assert gru(tg.ones(2, 1, 3))[0].dtype is tg.float32


def test_out_forms_are_not_autocast():
    out = tg.empty(2, 2)
    with tg.autocast("cpu"):
        assert tg.mm(tg.ones(2, 2), tg.ones(2, 2), out=out) is out
    assert out.dtype is tg.float32


def test_low_precision_addmm_rounds_once():
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((8, 32)), rng.standard_normal((32, 4)), rng.standard_normal(4)
    h = [tg.tensor(v, dtype=tg.float16) for v in (c, a, b)]
    exact = (h[1].double().numpy() @ h[2].double().numpy() + h[0].double().numpy())
    np.testing.assert_array_equal(tg.addmm(*h).double().numpy(),
                                  exact.astype(np.float16).astype(np.float64))


# -- the (emulated) CUDA device -----------------------------------------------------------------

def test_cuda_regions_and_a_scaler_over_two_devices():
    a = tg.ones(2, 2, device="cuda")
    with tg.autocast("cuda:0", dtype=tg.bfloat16):
        assert tg.is_autocast_enabled("cuda") and not tg.is_autocast_enabled("cpu")
        assert (a @ a).dtype is tg.bfloat16 and (a.cpu() @ a.cpu()).dtype is tg.float32
    # one optimizer over parameters on both devices: one inf check per device, and an inf on
    # either skips the step
    pc = tg.nn.Parameter(tg.tensor([1.0, 2.0], device="cuda"))
    pb = tg.nn.Parameter(tg.tensor([3.0], dtype=tg.bfloat16))
    opt = tg.optim.SGD([pc, pb], lr=1.0)
    scaler = tg.amp.GradScaler("cuda", init_scale=4.0)
    loss = (pc * 1.5).sum().cpu() + (pb * float("inf")).sum()
    with np.errstate(all="ignore"):
        scaler.scale(loss).backward()
        assert scaler.step(opt) is None
    found = scaler._found_inf_per_device(opt)
    assert {d.type for d in found} == {"cpu", "cuda"}
    assert {d.type: f.item() for d, f in found.items()} == {"cpu": 1.0, "cuda": 0.0}
    assert pc.grad.tolist() == [1.5, 1.5] and pc.tolist() == [1.0, 2.0]  # unscaled, not stepped
    scaler.update()
    assert scaler.get_scale() == 2.0
    assert scaler._scale.device.type == "cpu"  # (made on the device of what it first scaled)


def test_cpu_amp_grad_scaler_is_the_deprecated_form():
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.GradScaler\(args...\)` is "
                                           r"deprecated. Please use `torch.amp.GradScaler\('cpu'"):
        scaler = tg.cpu.amp.GradScaler(init_scale=4.0, growth_interval=3)
    assert isinstance(scaler, tg.amp.GradScaler) and type(scaler).__name__ == "GradScaler"
    assert scaler._device == "cpu" and scaler.is_enabled()
    assert scaler.state_dict()["growth_interval"] == 3 and scaler.get_scale() == 4.0
