"""Creation functions (autograd/ops/creation.py): dtype inference, dtype=/device=/
requires_grad=, the random factories' forms and ranges, ranges and eye, and their errors."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host


def test_tensor_infers_dtypes_and_copies(device):
    assert tg.tensor([1.0, 2.0], device=device).dtype is tg.float32
    assert tg.tensor([1, 2], device=device).dtype is tg.int64
    assert tg.tensor([True], device=device).dtype is tg.bool
    assert tg.tensor([1.5], dtype=tg.float64, device=device).dtype is tg.float64
    a = np.arange(3.0)
    t = tg.tensor(a, device=device)
    a[0] = 7.0
    assert host(t).tolist() == [0.0, 1.0, 2.0]  # a copy, unlike from_numpy
    assert tg.tensor([tg.tensor(1.0), 2.0]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        tg.tensor([[1, 2], [3]])  # PyTorch's ValueError (tests/autograd/test_refusals.py)


def test_factories_take_dtype_device_and_requires_grad(device):
    for fn in (tg.zeros, tg.ones, tg.empty, tg.rand, tg.randn):
        t = fn(2, 3, dtype=tg.float64, device=device, requires_grad=True)
        assert (tuple(t.shape), t.dtype, t.device.type, t.requires_grad, t.is_leaf) == \
            ((2, 3), tg.float64, device, True, True)
    f = tg.full((2,), 2.5, device=device)
    assert f.dtype is tg.float32 and host(f).tolist() == [2.5, 2.5]
    assert tg.full((1,), 3, device=device).dtype is tg.int64
    like = tg.zeros_like(f, dtype=tg.float16)
    assert like.dtype is tg.float16 and like.device == f.device and host(like).tolist() == [0, 0]


def test_random_factories_ranges_and_seed(device):
    tg.manual_seed(3)
    a = host(tg.rand(1000, device=device))
    tg.manual_seed(3)
    np.testing.assert_array_equal(host(tg.rand(1000, device=device)), a)  # reproducible
    assert a.min() >= 0.0 and a.max() < 1.0 and 0.4 < a.mean() < 0.6
    n = host(tg.randn(4000, dtype=tg.float64, device=device))
    assert abs(n.mean()) < 0.1 and 0.9 < n.std() < 1.1


def test_randint_forms_and_errors(device):
    r = host(tg.randint(3, 7, (200,), device=device))
    assert r.dtype == np.int64 and r.min() >= 3 and r.max() <= 6
    high_only = tg.randint(5, (3, 2), device=device)  # randint(high, size)
    assert tuple(high_only.shape) == (3, 2) and host(high_only).max() < 5
    assert tuple(tg.randint(4, size=(2,)).shape) == (2,)
    assert tg.randint(0, 2, (2,), dtype=tg.int32).dtype is tg.int32
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        tg.randint(5, 2, (3,))
    with pytest.raises(TypeError, match="size"):
        tg.randint(5)


def test_ranges_and_eye(device):
    np.testing.assert_array_equal(host(tg.arange(5, device=device)), np.arange(5))
    np.testing.assert_allclose(host(tg.arange(1, 2, 0.25, device=device)), [1, 1.25, 1.5, 1.75])
    np.testing.assert_allclose(host(tg.linspace(0, 1, 5, device=device)), np.linspace(0, 1, 5),
                               rtol=1e-7)
    assert tg.linspace(0, 1, 0).numel() == 0
    np.testing.assert_array_equal(host(tg.eye(2, 3, device=device)), np.eye(2, 3))
    assert tg.eye(0).shape == (0, 0)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tg.arange(0, 1, 0)
    with pytest.raises(RuntimeError, match="steps must be non-negative"):
        tg.linspace(0, 1, -1)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        tg.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0"):
        tg.eye(2, -1)


# -- ranges and randint as torch 2.13 (a factory sweep against it) ------------------------------

def test_integer_arange_reads_its_bounds_as_integers():
    # PyTorch truncates start, end and step for an integer dtype (0.5 -> 0): a float step
    # gave a range of repeated values ([0, 0, 1, 1, 2, 2] for step 0.5)
    for args, want in (((0.5, 3), [0, 1, 2]), ((0, 3, 1.5), [0, 1, 2]), ((-2.5, 2), [-2, -1, 0, 1]),
                       ((0, 2.9), [0, 1])):
        assert tg.arange(*args, dtype=tg.int64).tolist() == want
    with pytest.raises(ValueError, match="step must be nonzero"):  # (PyTorch's type)
        tg.arange(0, 3, 0.5, dtype=tg.int64)
    # 0-d tensors are their numbers: an integer one makes an int64 range
    assert tg.arange(tg.tensor(3)).dtype is tg.int64
    assert tg.arange(tg.tensor(3.0)).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="unsupported range: 0 -> inf"):
        tg.arange(0, float("inf"))
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for 'Bool'"):
        tg.arange(3, dtype=tg.bool)


def test_complex_linspace_and_logspace():
    z = tg.linspace(0, 1j, 3)
    assert z.dtype is tg.complex64
    np.testing.assert_allclose(z.numpy(), [0, 0.5j, 1j])
    np.testing.assert_allclose(tg.linspace(1j, 2, 3, dtype=tg.complex128).numpy(),
                               np.linspace(1j, 2, 3))
    with pytest.raises(RuntimeError, match="inferred dtype c10::complex<float> can't be safely "
                                           "cast to passed dtype Float"):
        tg.linspace(0, 1j, 3, dtype=tg.float32)
    np.testing.assert_allclose(tg.logspace(0, 1j, 2).numpy(), [1, 10 ** 1j], rtol=1e-6)


def test_randint_range_must_fit_the_dtype():
    assert tg.randint(0, 256, (50,), dtype=tg.uint8).max().item() <= 255
    for low, high, dt, msg in ((-1, 2, tg.uint8, "from is out of bounds for unsigned char"),
                               (0, 129, tg.int8, "to - 1 is out of bounds for signed char"),
                               (0, 3, tg.bool, "to - 1 is out of bounds for bool")):
        with pytest.raises(RuntimeError, match=msg):
            tg.randint(low, high, (2,), dtype=dt)


def test_random_factories_refuse_integer_dtypes_with_the_kernel_error():
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for "
                                                  "'Long'"):
        tg.rand(2, dtype=tg.int64)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for "
                                                  "'Bool'"):
        tg.randn(2, dtype=tg.bool)
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for 'Bool'"):
        tg.randperm(3, dtype=tg.bool)  # (it gave a bool "permutation")
    assert sorted(tg.randperm(4, dtype=tg.float16).tolist()) == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="linspace\\(\\): argument 'steps' must be int"):
        tg.linspace(0, 1, 2.5)  # (it made 2 steps)
