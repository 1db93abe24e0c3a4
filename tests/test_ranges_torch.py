"""``arange`` and ``linspace`` round as PyTorch's CPU kernels (Note [PyTorch's ranges] in
kernels/numpy/ranges.py): checksums of the bytes torch 2.13 printed, so CI without torch checks
them, and a dev-only comparison with torch itself over random ranges."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.kernels.numpy import ranges

# (function, arguments, dtype, length, CRC-32 of the values' little-endian bytes) as torch
# 2.13 computed them on the CPU (bfloat16 as its 16-bit patterns)
TORCH_VALUES = [
    ("linspace", (-4.0, 4.0, 7), "float32", 7, 0xc0217928),
    ("linspace", (1.05, -5.36, 36), "float32", 36, 0xe6700989),
    ("linspace", (-23.25, -2.188, 29), "float64", 29, 0x79c1dd97),
    ("linspace", (-7.5, 3.25, 1000), "float64", 1000, 0x63590536),
    ("linspace", (-1.0, 1.0, 5), "int64", 5, 0xa61cb24b),
    ("linspace", (2, 250, 7), "uint8", 7, 0x218c10fe),
    ("linspace", (0.3, 2.9, 11), "float16", 11, 0x55351695),
    ("linspace", (0.3, 2.9, 11), "bfloat16", 11, 0xf3b4b1bb),
    ("linspace", ((1 + 2j), (-3 + 0.5j), 9), "complex64", 9, 0x28964be5),
    ("linspace", (-0.0, 5.0, 4), "float32", 4, 0x37f55c04),
    ("arange", (-8.7, 12.3, 0.3), "float32", 70, 0x22397a49),
    ("arange", (-1.65, 2.35, 0.1), "float64", 40, 0x5051aef3),
    ("arange", (-6.01, 30.89, 0.3), "bfloat16", 123, 0x2bdfb4ed),
    ("arange", (-1.05, 71.25, 0.3), "float16", 241, 0x44a5c865),
]


def _bits(t) -> np.ndarray:
    """The values' bytes; bfloat16's as its 16-bit patterns (the upper halves of float32)."""
    if str(t.dtype).endswith("bfloat16"):
        return (t.float().numpy().view(np.uint32) >> 16).astype(np.uint16)
    return np.ascontiguousarray(t.numpy())


def _crc(t: tg.Tensor) -> int:
    return zlib.crc32(_bits(t).tobytes())


@pytest.mark.parametrize("fn,args,dtype,n,crc", TORCH_VALUES)
def test_torch_values(fn, args, dtype, n, crc):
    t = getattr(tg, fn)(*args, dtype=getattr(tg, dtype))
    assert t.numel() == n
    assert _crc(t) == crc


def test_torch_values_split_across_two_threads():
    # 46020 values: ATen's two threads each start their vectorized loop at their own chunk
    vals = ranges.arange(2.81, 0.3, 46020, tg.float32, threads=2)
    assert zlib.crc32(vals.astype(np.float32).tobytes()) == 0x45457cd5


def test_linspace_ends_and_the_halfway_formula():
    x = tg.linspace(-4, 4, 7).numpy()
    # the upper half counts back from the end: 4 - 3 * step rounds to -2^-23, as in PyTorch
    assert x[3] == np.float32(-1.1920928955078125e-07)
    assert x[0] == -4 and x[-1] == 4
    f = np.float64(np.float32(8 / 6))
    assert x[1] == np.float32(-4 + f) and x[5] == np.float32(4 - f)
    one = tg.linspace(-0.0, 7.0, 1).numpy()
    assert one.tolist() == [0.0] and np.signbit(one[0])  # one step is the start itself


def test_float64_values_are_fused_multiply_adds():
    from fractions import Fraction
    start, end, steps = -1.65, 2.35, 37
    got = tg.linspace(start, end, steps, dtype=tg.float64).numpy()
    step = (end - start) / (steps - 1)
    for i in range(steps):  # exact products and sums rounded once
        k = i if i < steps // 2 else steps - 1 - i
        base, s = (start, step) if i < steps // 2 else (end, -step)
        assert got[i] == float(Fraction(base) + Fraction(s) * k)


def test_arange_keeps_the_old_contract():
    assert tg.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert tg.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert tg.arange(3, -2, -1.5, dtype=tg.float64).tolist() == [3.0, 1.5, 0.0, -1.5]
    assert tg.arange(0.0, 1.0, 0.1, requires_grad=True).requires_grad


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "complex64", "complex128"])
def test_linspace_against_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    for _ in range(80):
        a, b = rng.normal(0, 10, 2).round(int(rng.integers(0, 4)))
        if "complex" in dtype:
            a, b = complex(a, rng.normal()), complex(b, rng.normal())
        elif dtype == "int64":
            a, b = abs(a), abs(b) + 3
        n = int(rng.choice([1, 2, 3, 7, 40, 100, 1000]))
        if dtype in ("float16", "bfloat16"):
            n = min(n, 100)  # longer half-precision ranges can differ in the last bit
        want = torch.linspace(a, b, n, dtype=getattr(torch, dtype))
        got = tg.linspace(a, b, n, dtype=getattr(tg, dtype))
        np.testing.assert_array_equal(_bits(got).view(np.uint8), _bits(want).view(np.uint8))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_arange_against_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    for _ in range(80):
        a = round(float(rng.normal(0, 10)), 2)
        step = float(rng.choice([0.1, 0.3, 1.7, 0.01, -0.7]))
        b = a + step * int(rng.integers(1, 300 if dtype == "float16" else 50000))
        want = torch.arange(a, b, step, dtype=getattr(torch, dtype)).numpy()
        got = tg.arange(a, b, step, dtype=getattr(tg, dtype)).numpy()
        if len(want) > ranges.GRAIN and torch.get_num_threads() != tg.get_num_threads():
            continue  # PyTorch's own values depend on its thread count there
        np.testing.assert_array_equal(got, want)
