"""``Tensor.view(dtype)``: the same bytes read as another dtype, against NumPy's reinterpretation
of the same values, on the CPU and the (emulated) CUDA device."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host

CASES = [  # (source dtype, target dtype)
    ("float32", "int32"), ("float32", "float16"), ("float32", "complex64"), ("float32", "uint8"),
    ("int64", "float64"), ("uint8", "int32"), ("int16", "uint8"), ("uint8", "bool"),
    ("complex128", "float64"), ("float64", "int16"),
]


def _values(name: str, shape) -> np.ndarray:
    rng = np.random.default_rng(0)
    if name == "uint8":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if name.startswith("int"):
        return rng.integers(-1000, 1000, shape).astype(name)
    if name.startswith("complex"):
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(name)
    return rng.normal(size=shape).astype(name)


@pytest.mark.parametrize("src,dst", CASES)
def test_bytes_read_as_another_dtype(device, src, dst):
    a = _values(src, (3, 8))
    if dst == "bool":
        a = a % 2
    got = tg.tensor(a, device=device).view(getattr(tg, dst))
    want = a.view(np.dtype(dst))
    assert got.dtype is getattr(tg, dst)
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(host(got), want)


@pytest.mark.parametrize("src,dst", [("int32", "uint8"), ("uint8", "int32"), ("float64", "int16")])
def test_views_of_views_scale_strides_and_offset(device, src, dst):
    a = _values(src, (4, 16))
    t = tg.tensor(a, device=device)[1:, 4:12]
    got = t.view(getattr(tg, dst))
    want = a[1:, 4:12].view(np.dtype(dst))
    ratio = np.dtype(src).itemsize / np.dtype(dst).itemsize
    assert got.stride() == (int(16 * ratio), 1)
    assert got.storage_offset() == int((16 + 4) * ratio)
    np.testing.assert_array_equal(host(got), want)


def test_memory_and_version_counter_are_shared_but_not_history(device):
    x = tg.ones(2, 4, device=device, requires_grad=True)
    y = x.view(tg.int32)
    assert not y.requires_grad and y.grad_fn is None and y._base is None  # (PyTorch 2.13)
    assert not x.view(tg.float32).requires_grad
    z = tg.ones(2, 4, device=device)
    w = z.view(tg.int32)
    w.add_(1)  # the next float32 after 1.0
    assert host(z)[0, 0] == np.nextafter(np.float32(1), np.float32(2))
    assert z._version == w._version == 1


def test_keyword_dtype():
    assert tg.ones(2).view(dtype=tg.int16).shape == (4,)


@pytest.mark.parametrize("make,dst,msg", [
    (lambda: tg.ones(()), tg.int16, r"self.dim\(\) cannot be 0 to view Float as Short"),
    (lambda: tg.ones(3, 4).t(), tg.int16,
     r"self.stride\(-1\) must be 1 to view Float as Short \(different element sizes\), but "
     r"got 4"),
    (lambda: tg.ones(2, 3, dtype=tg.uint8), tg.int32,
     r"self.size\(-1\) must be divisible by 4 to view Byte as Int \(different element sizes\), "
     r"but got 3"),
    (lambda: tg.ones(2, 8, dtype=tg.uint8)[:, 1:5], tg.int32,
     r"self.storage_offset\(\) must be divisible by 4"),
    (lambda: tg.ones(2, 6, dtype=tg.uint8)[:, :4], tg.int32,
     r"self.stride\(0\) must be divisible by 4"),
])
def test_pytorchs_errors(make, dst, msg):
    with pytest.raises(RuntimeError, match=msg):
        make().view(dst)


def test_cpu_bfloat16_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="bfloat16 tensors on the CPU"):
        tg.ones(4, dtype=tg.bfloat16).view(tg.int16)
    assert tg.ones(4, dtype=tg.bfloat16).view(tg.bfloat16).dtype is tg.bfloat16


def test_cuda_bfloat16_bits():
    x = tg.tensor([1.0, -2.0, 0.5], dtype=tg.bfloat16, device="cuda")
    bits = np.array([1.0, -2.0, 0.5], np.float32).view(np.uint32) >> 16
    np.testing.assert_array_equal(host(x.view(tg.int16)).astype(np.uint16), bits)
