"""tritongrad.testing (assert_close with PyTorch's tolerances and messages, make_tensor),
tritongrad.random and default_generator, tritongrad.accelerator, tritongrad.version and the
dtype aliases. The expected messages are PyTorch's, written out by hand."""

import math
import re
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.testing import assert_close, make_tensor


def _fails(exc, pattern, actual, expected, **kw):
    with pytest.raises(exc, match=pattern) as info:
        assert_close(actual, expected, **kw)
    return str(info.value)


# -- assert_close: tolerances ------------------------------------------------------------------

@pytest.mark.parametrize("dt, rtol, atol", [
    (tg.float16, 1e-3, 1e-5), (tg.bfloat16, 1.6e-2, 1e-5), (tg.float32, 1.3e-6, 1e-5),
    (tg.float64, 1e-7, 1e-7)])
def test_default_tolerances_per_dtype(dt, rtol, atol):
    base = 256.0  # exact in every float dtype; its neighbours lie at the dtype's spacing
    expected = tg.tensor([base], dtype=tg.float64)
    inside = tg.tensor([base + 0.9 * (atol + rtol * base)], dtype=tg.float64)
    outside = tg.tensor([base + 1.1 * (atol + rtol * base)], dtype=tg.float64)
    if dt is tg.float64:
        assert_close(inside, expected)
        with pytest.raises(AssertionError):
            assert_close(outside, expected)
    msg = _fails(AssertionError, "not close", outside.to(dt) * 1.5, expected.to(dt))
    assert f"(up to {atol} allowed)" in msg and f"(up to {rtol} allowed)" in msg


def test_tolerance_arguments():
    a, b = tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.001])
    assert_close(a, b, rtol=1e-3, atol=0.0)
    with pytest.raises(AssertionError):
        assert_close(a, b)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                                         "omitted, but got no atol."):
        assert_close(a, b, rtol=1e-3)
    with pytest.raises(ValueError, match="but got no rtol"):
        assert_close(a, b, atol=1e-3)
    # the loosest tolerances of the two dtypes when they differ (check_dtype=False)
    assert_close(tg.tensor([1.0]), tg.tensor([1.0 + 5e-6], dtype=tg.float64), check_dtype=False)


def test_integers_and_bools_compare_exactly():
    msg = _fails(AssertionError, "not equal", tg.tensor([1, 2, 3]), tg.tensor([1, 5, 3]))
    assert msg == ("Tensor-likes are not equal!\n\nMismatched elements: 1 / 3 (33.3%)\n"
                   "Greatest absolute difference: 3 at index (1,)\n"
                   "Greatest relative difference: 0.6000000238418579 at index (1,)")
    # unsigned differences are taken in int64: no wrap-around
    msg = _fails(AssertionError, "not equal", tg.tensor([1], dtype=tg.uint8),
                 tg.tensor([3], dtype=tg.uint8))
    assert "Greatest absolute difference: 2 at index (0,)" in msg
    _fails(AssertionError, "Mismatched elements: 1 / 2", tg.tensor([True, False]),
           tg.tensor([True, True]))


# -- assert_close: messages --------------------------------------------------------------------

def test_mismatch_message_format():
    msg = _fails(AssertionError, None, tg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tg.float64),
                 tg.tensor([[1.0, 2.0], [3.5, 0.0]], dtype=tg.float64))
    assert msg == ("Tensor-likes are not close!\n\nMismatched elements: 2 / 4 (50.0%)\n"
                   "Greatest absolute difference: 4.0 at index (1, 1) (up to 1e-07 allowed)\n"
                   "Greatest relative difference: inf at index (1, 1) (up to 1e-07 allowed)")
    msg = _fails(AssertionError, None, tg.tensor(1.5), tg.tensor(1.0))
    assert msg == ("Scalars are not close!\n\nExpected 1.0 but got 1.5.\n"
                   "Absolute difference: 0.5 (up to 1e-05 allowed)\n"
                   "Relative difference: 0.5 (up to 1.3e-06 allowed)")


def test_nan_and_inf():
    nan = tg.tensor([1.0, math.nan])
    msg = _fails(AssertionError, "Mismatched elements: 1 / 2", nan, nan.clone())
    assert "Greatest absolute difference: nan at index (1,)" in msg
    assert_close(nan, nan.clone(), equal_nan=True)
    inf = tg.tensor([math.inf, 1.0])
    assert_close(inf, inf.clone())
    _fails(AssertionError, "Greatest absolute difference: inf", inf, -inf)


def test_attribute_checks(device):
    a = tg.tensor([1.0], device=device)
    _fails(AssertionError, re.escape("The values for attribute 'shape' do not match: "
                                     "tritongrad.Size([1]) != tritongrad.Size([2])."),
           a, tg.tensor([1.0, 2.0], device=device))
    _fails(AssertionError, "The values for attribute 'dtype' do not match: tritongrad.float32 "
                           "!= tritongrad.float64.", a, a.double())
    assert_close(a, a.double(), check_dtype=False)
    if device == "cuda":
        _fails(AssertionError, "The values for attribute 'device' do not match: cuda:0 != cpu.",
               a, a.cpu())
        assert_close(a, a.cpu(), check_device=False)
    column_major = tg.zeros(3, 2, device=device).t()  # strides (1, 2)
    _fails(AssertionError, r"'stride\(\)' do not match: \(1, 2\) != \(3, 1\)", column_major,
           tg.zeros(2, 3, device=device), check_stride=True)


def test_msg_and_nested_inputs():
    a, b = tg.tensor([1.0]), tg.tensor([2.0])
    assert _fails(AssertionError, None, a, b, msg="custom") == "custom"
    msg = _fails(AssertionError, None, a, b, msg=lambda generated: generated + "\nFooter")
    assert msg.startswith("Tensor-likes are not close!") and msg.endswith("\nFooter")
    msg = _fails(AssertionError, None, [a, {"w": a}], [a, {"w": b}])
    assert msg.endswith("The failure occurred for item [1]['w']")
    _fails(AssertionError, "The length of the sequences mismatch: 2 != 1", [1, 2], [1])
    _fails(AssertionError, r"Missing keys in the actual mapping: \['b'\]", {"a": 1}, {"b": 1})
    _fails(AssertionError, "None mismatch: None is not 1", None, 1)
    _fails(AssertionError, "Booleans mismatch: True is not False", True, False)
    _fails(AssertionError, "The \\(d\\)types do not match: <class 'int'> != <class 'float'>.",
           1, 1.0)
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]))
    _fails(TypeError, "No comparison pair was able to handle inputs", a, np.array([1.0]))
    assert_close(tg.nn.Parameter(tg.ones(2)), tg.ones(2))  # subclasses are allowed by default
    _fails(TypeError, "No comparison pair", tg.nn.Parameter(tg.ones(2)), tg.ones(2),
           allow_subclasses=False)


# -- make_tensor -------------------------------------------------------------------------------

@pytest.mark.parametrize("dt, lo, hi", [(tg.float32, -9, 9), (tg.float64, -9, 9),
                                        (tg.float16, -9, 9), (tg.int64, -9, 10),
                                        (tg.int8, -9, 10), (tg.uint8, 0, 10),
                                        (tg.bool, 0, 2)])
def test_make_tensor_default_ranges(dt, lo, hi):
    t = make_tensor(40, 50, dtype=dt, device="cpu")
    assert t.shape == (40, 50) and t.dtype is dt and t.is_contiguous()
    v = t.to(tg.float64).numpy()
    # (a float rounded to the dtype may reach ``high``, as PyTorch's do)
    assert v.min() >= lo and (v.max() <= hi if dt.is_floating_point else v.max() < hi)
    if not dt.is_floating_point:  # every integer of the range appears in 2000 draws
        assert set(np.unique(v).astype(int)) == set(range(lo, hi))


def test_make_tensor_options(device):
    t = make_tensor((3, 4), dtype=tg.float32, device=device, low=2, high=3, requires_grad=True,
                    noncontiguous=True)
    assert t.device.type == device and t.requires_grad and t.is_leaf
    assert not t.is_contiguous() and t.shape == (3, 4)
    assert 2 <= float(t.min()) and float(t.max()) < 3
    z = make_tensor(200, dtype=tg.int64, device=device, low=-1, high=2, exclude_zero=True)
    assert set(z.tolist()) <= {-1, 1} and 1 in z.tolist()
    f = make_tensor(2, dtype=tg.float32, device="cpu", low=0, high=1e-46, exclude_zero=True)
    assert f.tolist() == [tg.finfo(tg.float32).tiny] * 2
    assert make_tensor(1, 1, dtype=tg.float32, device="cpu", noncontiguous=True).is_contiguous()
    wide = make_tensor(1000, dtype=tg.float32, device="cpu", low=-1e100, high=1e100)
    assert bool(wide.isfinite().all())  # clamped to float32's finite range
    tg.manual_seed(3)
    a = make_tensor(5, dtype=tg.float64, device="cpu")
    tg.manual_seed(3)
    assert_close(make_tensor(5, dtype=tg.float64, device="cpu"), a)


def test_make_tensor_errors():
    with pytest.raises(ValueError, match="`requires_grad=True` is not supported for boolean "
                                         "and integral dtypes"):
        make_tensor(2, dtype=tg.int32, device="cpu", requires_grad=True)
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 3 >= 2"):
        make_tensor(2, dtype=tg.float32, device="cpu", low=3, high=2)
    with pytest.raises(ValueError, match="cannot be NaN"):
        make_tensor(2, dtype=tg.float32, device="cpu", low=math.nan)
    with pytest.raises(ValueError, match="only supports"):
        make_tensor(2, dtype=tg.uint8, device="cpu", low=-5, high=-1)
    with pytest.raises(ValueError, match="mutually exclusive"):
        make_tensor(2, 2, 2, 2, dtype=tg.float32, device="cpu", noncontiguous=True,
                    memory_format=tg.channels_last)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_tensor(2, dtype=tg.float32, device="cpu", low=1, high=1)
    assert any(issubclass(w.category, FutureWarning) for w in caught)


# -- random, default_generator -----------------------------------------------------------------

def test_random_module_is_the_global_generator():
    assert tg.random.default_generator is tg.default_generator
    g = tg.random.manual_seed(5)
    assert g is tg.default_generator and tg.random.initial_seed() == 5
    a = tg.rand(4)
    state = tg.random.get_rng_state()
    assert state.dtype is tg.uint8
    b = tg.rand(4)
    tg.random.set_rng_state(state)
    assert tg.equal(tg.rand(4), b) and not tg.equal(a, b)
    s = tg.random.seed()
    assert tg.random.initial_seed() == s == tg.default_generator.initial_seed()


def test_fork_rng_restores_cpu_and_cuda():
    tg.manual_seed(0)
    with tg.random.fork_rng(devices=[0]):
        inside = tg.rand(3), tg.rand(3, device="cuda")
    after = tg.rand(3), tg.rand(3, device="cuda")
    for x, y in zip(inside, after):
        assert tg.equal(x, y)
    with tg.random.fork_rng(enabled=False):
        first = tg.rand(3)
    assert not tg.equal(tg.rand(3), first)
    with tg.random.fork_rng(device_type="meta"):
        pass
    with pytest.raises(RuntimeError, match="no module of `xpu`"), \
            tg.random.fork_rng(device_type="xpu"):
        pass


# -- accelerator, version, aliases -------------------------------------------------------------

def test_accelerator_over_cuda():
    acc = tg.accelerator
    assert acc.current_accelerator() == tg.device("cuda")
    assert acc.is_available() == tg.cuda.is_available()
    assert acc.device_count() == tg.cuda.device_count()
    assert acc.current_accelerator(check_available=True) == tg.device("cuda")  # (emulated too)
    assert acc.current_device_index() == tg.cuda.current_device() == 0
    acc.set_device_index("cuda:0")
    acc.set_device_index(tg.device("cuda", 0))
    with acc.device_index(0):
        assert acc.current_device_index() == 0
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator cuda"):
        acc.set_device_index("cpu")
    with pytest.raises(ValueError, match="with a specified index or an integer"):
        acc.set_device_index("cuda")
    acc.synchronize()
    acc.synchronize("cuda:0")
    assert acc.current_stream() is tg.cuda.current_stream()
    assert acc.memory_allocated() == tg.cuda.memory_allocated()
    with pytest.warns(FutureWarning, match="current_device_index"):
        assert acc.current_device_idx() == 0


def test_version_and_aliases():
    assert tg.version.__version__ == tg.__version__
    assert tg.version.hip is None and isinstance(tg.version.git_version, str)
    assert tg.version.cuda is None or re.fullmatch(r"\d+\.\d+", tg.version.cuda)
    assert tg.short is tg.int16 and tg.zeros(2, dtype=tg.short).dtype is tg.int16
    assert tg.newaxis is None
    assert tg.ones(3)[tg.newaxis].shape == (1, 3)
