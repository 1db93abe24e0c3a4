"""float8 dtypes (runtime/dtype.py), their conversions, and ``_scaled_mm`` (CPU, the emulated
CUDA device through Triton's interpreter, and an sm_90 compile of the kernel).

Every behaviour is checked against a reference written here from the formats' definitions
(no torch); where torch is installed, also against torch bit for bit.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import triton
import triton.language as tl

import tritongrad as tg
from tritongrad.autograd.ops.float8 import SUPPORTED_OPS, _scaled_mm, check_float8_op
from tritongrad.kernels.triton.scaled_mm import _float8_bits
from tritongrad.runtime import dtype as D

pytest.importorskip("ml_dtypes")
pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered")


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch

# name -> (exponent bits, mantissa bits, bias, has inf, NaN codes rule, max)
FORMATS = {
    "float8_e4m3fn": (4, 3, 7, 448.0),
    "float8_e5m2": (5, 2, 15, 57344.0),
    "float8_e4m3fnuz": (4, 3, 8, 240.0),
    "float8_e5m2fnuz": (5, 2, 16, 57344.0),
}
NAMES = list(FORMATS) + ["float8_e8m0fnu"]


def decode(name: str) -> np.ndarray:
    """float64 values of the 256 codes, from the format's definition (NaN where a NaN)."""
    codes = np.arange(256)
    if name == "float8_e8m0fnu":
        out = 2.0 ** (codes - 127.0)
        out[255] = np.nan
        return out
    e_bits, m_bits, bias, _ = FORMATS[name]
    sign = np.where(codes >> 7, -1.0, 1.0)
    e = (codes >> m_bits) & ((1 << e_bits) - 1)
    m = codes & ((1 << m_bits) - 1)
    out = sign * np.where(e == 0, m / 2.0 ** m_bits * 2.0 ** (1 - bias),
                          (1 + m / 2.0 ** m_bits) * 2.0 ** (e - bias))
    if name == "float8_e5m2":
        out[(e == 31) & (m == 0)] = sign[(e == 31) & (m == 0)] * np.inf
        out[(e == 31) & (m != 0)] = np.nan
    elif name == "float8_e4m3fn":
        out[(e == 15) & (m == 7)] = np.nan
    else:  # fnuz: 0x80 is the only NaN, no negative zero
        out[0x80] = np.nan
    return out


def encode_reference(name: str, x: np.ndarray) -> np.ndarray:
    """PyTorch's rounding written from the definitions: the nearest finite code (ties to the
    even code), then each format's overflow and NaN rule."""
    x = x.astype(np.float32).astype(np.float64)
    vals = decode(name)
    if name == "float8_e8m0fnu":
        a = np.abs(x)
        out = np.zeros(x.shape, np.int64)
        normal = np.isfinite(a) & (a >= 2.0 ** -126)
        e = np.floor(np.log2(a[normal]))
        frac = a[normal] / 2.0 ** e  # in [1, 2): from 1.5 up (ties too) the next power
        out[normal] = np.minimum(e + 127 + (frac >= 1.5), 255).astype(np.int64)
        # float32 subnormals (exponent field 0): anything above 2 ** -127 goes up to 2 ** -126
        out[a < 2.0 ** -126] = (a[a < 2.0 ** -126] > 2.0 ** -127).astype(np.int64)
        out[~np.isfinite(a)] = 255
        return out.astype(np.uint8)
    pos = [c for c in range(128) if np.isfinite(vals[c])]
    grid = np.array([vals[c] for c in pos])
    codes = np.array(pos)
    a = np.abs(x)
    i = np.clip(np.searchsorted(grid, a), 1, len(grid) - 1)
    lo, hi = grid[i - 1], grid[i]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (codes[i] % 2 == 0))
    code = np.where(pick_hi, codes[i], codes[i - 1])
    mx = FORMATS[name][3]
    half_ulp_over = mx + (grid[-1] - grid[-2]) / 2  # the first value that rounds past max
    over = a >= half_ulp_over
    neg = np.signbit(x)
    nan = np.isnan(x)
    if name == "float8_e4m3fn":
        code = np.where(over, 0x7E, code)
        code = np.where(nan, 0x7F, code)
        return (code | np.where(neg, 0x80, 0)).astype(np.uint8)
    if name == "float8_e5m2":
        code = np.where(over, 0x7C, code)
        code = np.where(nan, 0x7F, code)
        return (code | np.where(neg, 0x80, 0)).astype(np.uint8)
    code = code | np.where(neg & (code != 0), 0x80, 0)  # fnuz: no negative zero
    return np.where(over | nan, 0x80, code).astype(np.uint8)


def samples(n: int = 200_000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([
        np.clip(rng.standard_normal(n) * 10.0 ** rng.uniform(-45, 39, n), -3e38, 3e38
                ).astype(np.float32),
        rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32),
        np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 448, 464, 480, 57344, 61440,
                  2.0 ** -127, 2.0 ** -128, 1e-45], np.float32)])


def ties(name: str) -> np.ndarray:
    v = decode(name)
    fin = np.unique(v[np.isfinite(v)])
    mid = ((fin[1:] + fin[:-1]) / 2).astype(np.float32)
    return np.concatenate([mid, -mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf),
                           fin.astype(np.float32)])


@pytest.mark.parametrize("name", NAMES)
def test_decode_matches_the_format_definition(name):
    d = getattr(D, name)
    got = D.float8_values(np.arange(256, dtype=np.uint8), d).astype(np.float64)
    if torch_or_none() is not None:  # the float32 bits too, NaNs included
        torch = torch_or_none()
        codes = torch.arange(256, dtype=torch.uint8).view(getattr(torch, name))
        assert np.array_equal(D.float8_values(np.arange(256, dtype=np.uint8), d).view(
            np.uint32), codes.float().numpy().view(np.uint32))
    want = decode(name)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


@pytest.mark.parametrize("name", NAMES)
def test_encode_matches_the_reference_rounding(name):
    d = getattr(D, name)
    x = np.concatenate([samples(), ties(name)])
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        want = encode_reference(name, x)
    got = D.float8_bits(x, d).view(np.uint8)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", NAMES)
def test_encode_matches_torch_bit_for_bit(name):
    # (torch 2.11 turned e4m3fn's overflow into NaN; 2.13 saturates, as float8_bits does)
    torch = pytest.importorskip("torch", minversion="2.13")
    td, d = getattr(torch, name), getattr(D, name)
    x = np.concatenate([samples(seed=1), ties(name)])
    for src in (x, x.astype(np.float64) * (1 + 2.0 ** -30), x.astype(np.float16)):
        with np.errstate(over="ignore"):
            src = np.asarray(src)
        want = torch.from_numpy(src).to(td).view(torch.uint8).numpy()
        assert np.array_equal(D.float8_bits(src, d).view(np.uint8), want)
    codes = np.arange(256, dtype=np.uint8)  # float8 -> float8, every pair of formats
    for other in NAMES:
        src = D.float8_values(codes, getattr(D, other))
        want = torch.from_numpy(codes.copy()).view(getattr(torch, other)).to(td)
        got = D.float8_bits(codes.view(getattr(D, other).np), d) if other == name else \
            D.float8_bits(src, d)
        assert np.array_equal(got.view(np.uint8), want.view(torch.uint8).numpy()), other


@pytest.mark.parametrize("name", NAMES)
def test_finfo(name):
    d = getattr(D, name)
    f = tg.finfo(d)
    v = decode(name)
    fin = v[np.isfinite(v)]
    assert f.bits == 8 and f.max == fin.max() and f.dtype == name
    if name == "float8_e8m0fnu":
        assert f.min == f.tiny == 2.0 ** -127 and f.eps == 1.0
    else:
        e_bits, m_bits, bias, _ = FORMATS[name]
        # (PyTorch reports e5m2fnuz's eps as 2 ** -3, one bit finer than its mantissa)
        eps = 2.0 ** -3 if name == "float8_e5m2fnuz" else 2.0 ** -m_bits
        assert f.min == -f.max and f.eps == eps and f.tiny == 2.0 ** (1 - bias)
    torch = pytest.importorskip("torch")
    t = torch.finfo(getattr(torch, name))
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal, f.resolution) == (
        t.bits, t.eps, t.max, t.min, t.tiny, t.smallest_normal, t.resolution)
    assert repr(f) == repr(t)


def test_dtype_attributes_and_promotion():
    for name in NAMES:
        d = getattr(D, name)
        assert d.itemsize == 1 and d.is_floating_point and not d.is_complex
        assert repr(d) == f"tritongrad.{name}" and pickle.loads(pickle.dumps(d)) is d
        assert D.promote_types(d, d) is d
        assert D.from_numpy_dtype(d.np) is d
    assert D.float8_e4m3fn.is_signed and not D.float8_e8m0fnu.is_signed
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported, "
                                           "attempted to promote Float8_e4m3fn and Float"):
        D.promote_types(D.float8_e4m3fn, D.float32)
    with pytest.raises(RuntimeError, match="Float8_e5m2 and Float8_e4m3fn"):
        D.promote_types(D.float8_e5m2, D.float8_e4m3fn)
    x = tg.zeros(3).to(D.float8_e4m3fn)
    assert D.result_type(x, 2.0) is D.float8_e4m3fn  # a scalar never promotes a category
    # existing rules unchanged
    assert D.promote_types(D.float16, D.bfloat16) is D.float32
    with pytest.raises(RuntimeError, match="UInt16 and Int"):
        D.promote_types(D.uint16, D.int32)


@pytest.mark.parametrize("name", NAMES)
def test_tensor_conversions_copies_and_views(name):
    d = getattr(D, name)
    vals = np.array([1.0, 2.0, 0.5, 4.0, 0.25, 8.0], np.float32)  # exact in every format
    x = tg.tensor(vals).to(d)
    assert x.dtype is d and x.element_size() == 1
    np.testing.assert_array_equal(x.float().numpy(), vals)
    np.testing.assert_array_equal(x.double().numpy(), vals)
    assert x.tolist() == vals.tolist() and x[1].item() == 2.0
    np.testing.assert_array_equal(x.view(tg.uint8).numpy(), D.float8_bits(vals, d).view(np.uint8))
    y = x.view(tg.uint8).view(d)
    assert y.dtype is d and y.tolist() == vals.tolist()
    np.testing.assert_array_equal(tg.cat([x, x[::2]]).float().numpy(),
                                  np.concatenate([vals, vals[::2]]))
    np.testing.assert_array_equal(x.reshape(2, 3).t().contiguous().float().numpy(),
                                  vals.reshape(2, 3).T)
    np.testing.assert_array_equal(x[tg.tensor([5, 0])].float().numpy(), vals[[5, 0]])
    z = x.clone()
    assert z.dtype is d and z.tolist() == x.tolist()
    assert pickle.loads(pickle.dumps(x)).tolist() == vals.tolist()


def _routed() -> bool:
    # whether the CPU backend's casts (kernels/numpy/memory.py) go through float8.astype,
    # PyTorch's rounding, rather than ml_dtypes' own (which makes 1000 NaN, not 448)
    return tg.tensor([1000.0]).to(D.float8_e4m3fn).float().item() == 448.0


@pytest.mark.skipif(not _routed(), reason="kernels/numpy/memory.py does not yet route float8 "
                                          "casts through kernels/numpy/float8.py")
@pytest.mark.parametrize("name", NAMES)
def test_tensor_casts_follow_pytorch_at_the_edges(name):
    d = getattr(D, name)
    x = np.concatenate([samples(5000, seed=4), ties(name)])
    want = encode_reference(name, x)
    for src in (tg.tensor(x), tg.tensor(x).double(), tg.tensor(x).bfloat16()):
        ref = want if src.dtype is not tg.bfloat16 else encode_reference(
            name, src.float().numpy())
        assert np.array_equal(src.to(d).view(tg.uint8).numpy(), ref)
    y = tg.empty(x.size, dtype=d)
    y.copy_(tg.tensor(x))
    assert np.array_equal(y.view(tg.uint8).numpy(), want)
    s = y[:12].as_strided((3, 2), (1, 3), 2)  # a strided view keeps the dtype
    assert s.dtype is d and np.array_equal(s.view(tg.uint8).numpy(),
                                           want[2:12].reshape(1, 10)[0][[0, 3, 1, 4, 2, 5]]
                                           .reshape(3, 2))
    assert np.array_equal(y[:6].reshape(2, 3).t().contiguous().view(tg.uint8).numpy(),
                          want[:6].reshape(2, 3).T)
    codes = tg.tensor(np.arange(256, dtype=np.uint8)).view(d)
    for other in NAMES:  # float8 -> float8 through the exact float32 values
        o = getattr(D, other)
        got = codes.to(o).view(tg.uint8).numpy()
        assert np.array_equal(got, D.float8_bits(codes.numpy(), o).view(np.uint8))


def _full_checks_float8() -> bool:
    from tritongrad.autograd.ops import creation
    return D.float8_e4m3fn in creation._FLOAT_MAX


@pytest.mark.skipif(not (_routed() and _full_checks_float8()),
                    reason="autograd/ops/creation.py has no float8 overflow limits yet")
def test_full_and_fill_check_overflow_as_pytorch():
    for name in NAMES:
        d = getattr(D, name)
        got = tg.full((3,), 0.3, dtype=d).view(tg.uint8).numpy()
        assert np.array_equal(got, encode_reference(name, np.full(3, 0.3)))
    with pytest.raises(RuntimeError, match="value cannot be converted to type "
                                           "c10::Float8_e4m3fn without overflow"):
        tg.full((2,), 449.0, dtype=D.float8_e4m3fn)
    with pytest.raises(RuntimeError, match="c10::Float8_e8m0fnu without overflow"):
        tg.zeros(2, dtype=D.float8_e8m0fnu).fill_(-1.0)
    assert tg.full((2,), float("inf"), dtype=D.float8_e5m2).float().tolist() == [np.inf] * 2


def test_save_and_load(tmp_path):
    x = tg.tensor([1.0, -2.0, 0.5]).to(D.float8_e4m3fn)
    tg.save({"w": x, "s": tg.tensor([0.5])}, tmp_path / "f8.pt")
    got = tg.load(tmp_path / "f8.pt")
    assert got["w"].dtype is D.float8_e4m3fn and got["w"].tolist() == [1.0, -2.0, 0.5]


def test_loads_a_torch_checkpoint_with_float8(tmp_path):
    torch = pytest.importorskip("torch")
    for name in NAMES:
        t = torch.tensor([1.0, 2.0, 0.5, 4.0]).to(getattr(torch, name))
        torch.save({"w": t}, tmp_path / f"{name}.pt")
        got = tg.load(tmp_path / f"{name}.pt")["w"]
        assert got.dtype is getattr(D, name) and got.tolist() == t.float().tolist()


# ----------------------------------------------------------------------------------------
# _scaled_mm
# ----------------------------------------------------------------------------------------
def _operands(M, K, N, fa=D.float8_e4m3fn, fb=D.float8_e4m3fn, seed=0):
    rng = np.random.default_rng(seed)
    a = tg.tensor(rng.standard_normal((M, K)).astype(np.float32)).to(fa)
    b = tg.tensor(rng.standard_normal((N, K)).astype(np.float32)).to(fb).t()  # column-major
    return a, b


def _reference(a, b, sa, sb, bias=None):
    fa, fb = a.float().numpy().astype(np.float64), b.float().numpy().astype(np.float64)
    out = fa @ fb * sa.numpy().astype(np.float64) * sb.numpy().astype(np.float64)
    return out if bias is None else out + bias.float().numpy()


@pytest.mark.parametrize("M,K,N", [(16, 32, 64), (3, 5, 7), (1, 48, 1)])
def test_scaled_mm_cpu_against_float64(M, K, N):
    a, b = _operands(M, K, N, fb=D.float8_e5m2)
    sa, sb = tg.tensor(0.5), tg.tensor(3.0)
    out = _scaled_mm(a, b, sa, sb, out_dtype=tg.float32)
    assert out.dtype is tg.float32 and out.shape == (M, N)
    np.testing.assert_allclose(out.numpy(), _reference(a, b, sa, sb), rtol=1e-6, atol=1e-6)
    ra, rb = tg.rand(M, 1) + 0.5, tg.rand(1, N) + 0.5  # rowwise
    bias = tg.randn(N).bfloat16()
    out = _scaled_mm(a, b, ra, rb, bias=bias, out_dtype=tg.bfloat16)
    want = _reference(a, b, ra, rb, bias)
    np.testing.assert_allclose(out.float().numpy(), want, rtol=2 ** -8, atol=1e-6)
    # default out_dtype: input's, converted once (saturating for e4m3fn), scale_result divides
    big = _scaled_mm(a, b, tg.tensor(1e4), tg.tensor(1e4))
    assert big.dtype is D.float8_e4m3fn
    assert np.abs(big.float().numpy()).max() == 448.0
    sr = _scaled_mm(a, b, sa, sb, scale_result=tg.tensor(2.0))
    want = D.float8_bits((_reference(a, b, sa, sb) / 2).astype(np.float32), D.float8_e4m3fn)
    assert np.array_equal(sr.view(tg.uint8).numpy(), want.view(np.uint8))


def test_scaled_mm_errors():
    a, b = _operands(16, 32, 64)
    one = tg.tensor(1.0)
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(16x32 and 16x64\)"):
        _scaled_mm(a, b[:16], one, one)
    with pytest.raises(RuntimeError, match="mat1 must be a matrix"):
        _scaled_mm(a[0], b, one, one)
    with pytest.raises(ValueError, match="Invalid scaling configuration"):
        _scaled_mm(a.float(), b, one, one)
    with pytest.raises(ValueError, match=r"scale_a should be \(16, 1\)"):
        _scaled_mm(a, b, tg.ones(16), tg.ones(64))
    with pytest.raises(ValueError, match="Invalid scaling"):
        _scaled_mm(a, b, one.double(), one)
    with pytest.raises(RuntimeError, match="Bias must be size 64 but got 63"):
        _scaled_mm(a, b, one, one, bias=tg.ones(63))
    out = _scaled_mm(a, b, one.clone().requires_grad_(), one, out_dtype=tg.float32)
    with pytest.raises(RuntimeError, match="derivative for _scaled_mm is not implemented"):
        out.sum().backward()


def test_scaled_mm_against_torch():
    torch = pytest.importorskip("torch")
    a, b = _operands(24, 40, 20, fb=D.float8_e5m2)
    ta = torch.from_numpy(a.view(tg.uint8).numpy().copy()).view(torch.float8_e4m3fn)
    tb = torch.from_numpy(b.t().contiguous().view(tg.uint8).numpy().copy()).view(
        torch.float8_e5m2).t()
    for out_dtype, tdt in ((tg.float32, torch.float32), (tg.bfloat16, torch.bfloat16),
                           (D.float8_e4m3fn, torch.float8_e4m3fn)):
        got = _scaled_mm(a, b, tg.tensor(0.5), tg.tensor(2.0), out_dtype=out_dtype,
                         bias=tg.ones(20) if out_dtype is tg.bfloat16 else None)
        want = torch._scaled_mm(ta, tb, torch.tensor(0.5), torch.tensor(2.0), out_dtype=tdt,
                                bias=torch.ones(20) if tdt is torch.bfloat16 else None)
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=0.07,
                                   atol=1e-5)


def _device_f8(t):  # float8 to the device and back as bytes (the device copy is uint8's)
    return t.view(tg.uint8).cuda().view(t.dtype)


def test_scaled_mm_cuda_matches_cpu():
    if os.environ.get("TRITON_INTERPRET") != "1" and not tg.cuda.is_available():
        pytest.skip("needs CUDA or the emulated device")
    a, bn = _operands(37, 70, 21, fb=D.float8_e5m2)
    b = bn  # (K, N) column-major view
    ac = _device_f8(a)
    bc = _device_f8(b.t().contiguous()).t()
    sa, sb = tg.rand(37, 1) + 0.5, tg.rand(1, 21) + 0.5
    bias = tg.randn(21).bfloat16()
    # on sm_90 each float8 MMA instruction (32 deep) sums in fewer bits than float32 (Note
    # [float8 accumulation]): off the float32 product by a few 2**-13 of the magnitudes summed;
    # the interpreter multiplies float32 values
    mag = np.abs(a.float().numpy()) @ np.abs(b.float().numpy()) * sa.numpy() * sb.numpy()
    atol = 1e-5 if os.environ.get("TRITON_INTERPRET") == "1" else 1e-5 + 2 ** -11 * mag
    for out_dtype in (tg.float32, tg.bfloat16, D.float8_e4m3fn, D.float8_e5m2):
        cpu = _scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out_dtype,
                         scale_result=tg.tensor(2.0))
        gpu = _scaled_mm(ac, bc, sa.cuda(), sb.cuda(), bias=bias.cuda(), out_dtype=out_dtype,
                         scale_result=tg.tensor(2.0).cuda())
        assert gpu.device.type == "cuda" and gpu.dtype is out_dtype
        g = gpu.view(tg.uint8).cpu().view(out_dtype) if out_dtype.itemsize == 1 else gpu.cpu()
        # float32 sums in another order: a few float32 ulps, or one float8 step at a tie
        tol = {tg.float32: 1e-5, tg.bfloat16: 2 ** -8, D.float8_e4m3fn: 2 ** -3,
               D.float8_e5m2: 2 ** -2}[out_dtype]
        np.testing.assert_allclose(g.float().numpy(), cpu.float().numpy(), rtol=tol,
                                   atol=atol)
    with pytest.raises(NotImplementedError, match="float8_e4m3fnuz is not supported"):
        _scaled_mm(ac, bc, sa.cuda(), sb.cuda(), out_dtype=D.float8_e4m3fnuz)


@triton.jit
def _convert(x_ptr, y_ptr, n, E5M2: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=0.0)
    tl.store(y_ptr + i, _float8_bits(x, E5M2), mask=i < n)


def test_kernel_float8_conversion_matches_float8_bits():
    """The Triton epilogue's float32 -> float8 conversion, bit for bit against PyTorch's rule
    (runtime.dtype.float8_bits), on the emulated device or a GPU."""
    if os.environ.get("TRITON_INTERPRET") != "1" and not tg.cuda.is_available():
        pytest.skip("needs CUDA or the emulated device")
    for name, e5m2 in (("float8_e4m3fn", False), ("float8_e5m2", True)):
        x = np.concatenate([samples(20_000, seed=3), ties(name)])
        xd = tg.tensor(x).cuda()
        yd = tg.zeros(x.size, dtype=tg.uint8).cuda()
        _convert[(triton.cdiv(x.size, 1024),)](xd._data, yd._data, x.size, e5m2, 1024)
        want = D.float8_bits(x, getattr(D, name)).view(np.uint8)
        got = yd.cpu().numpy()
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_device_conversions_match_float8_bits(name):
    """kernels/triton/float8.py's astype (strided sources too) against float8_bits and
    float8_values, bit for bit, on the emulated device or a GPU."""
    if os.environ.get("TRITON_INTERPRET") != "1" and not tg.cuda.is_available():
        pytest.skip("needs CUDA or the emulated device")
    from tritongrad.kernels.triton import float8 as TF
    from tritongrad.runtime import memory

    d = getattr(D, name)
    x = np.concatenate([samples(3000, seed=5), ties(name)])
    for src in (tg.float32, tg.float16, tg.bfloat16, tg.float64):  # narrowing
        t = tg.tensor(x).to(src)
        got = memory.to_host(TF.astype(t.cuda()._data, d)).view(np.uint8)
        values = x.astype(np.float64) if src is tg.float64 else t.float().numpy()
        assert np.array_equal(got, D.float8_bits(values, d).view(np.uint8)), src
    codes = np.arange(256, dtype=np.uint8).view(d.np)
    dev = memory.to_device(codes, tg.device("cuda"))
    exact = D.float8_values(codes, d)
    for out in (tg.float32, tg.float16, tg.bfloat16, tg.float64):  # widening
        got = memory.to_host(TF.astype(dev, out))
        want = (D.bfloat16_bits(exact) if out is tg.bfloat16 else exact.astype(out.np))
        got = got.view(np.uint16) if out is tg.bfloat16 else got
        same = (got == want) | (np.isnan(got) & np.isnan(want)) if out is not tg.bfloat16 \
            else got == want
        assert same.all(), out
    assert np.array_equal(memory.to_host(TF.astype(dev, tg.float32)).view(np.uint32),
                          exact.view(np.uint32))  # PyTorch's NaN bits too
    for out in D.FLOAT8_TYPES[:2]:  # between the two formats
        got = memory.to_host(TF.astype(dev, out)).view(np.uint8)
        assert np.array_equal(got, D.float8_bits(exact, out).view(np.uint8))
    m = tg.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7).cuda().permute(2, 0, 1)
    got = memory.to_host(TF.astype(m._data, d)).view(np.uint8)
    assert np.array_equal(got, D.float8_bits(m.cpu().numpy(), d).view(np.uint8))
    with pytest.raises(TypeError, match="float8_e4m3fnuz is not supported"):
        TF.astype(dev, D.float8_e4m3fnuz)


_COMPILE_SM90 = """
import sys
sys.path.insert(0, "tests/kernels")
import compile_sm90 as C
C.compile_only()
from tritongrad.kernels.triton import _launch
_launch._driver_ready = True
import numpy as np
from tritongrad.runtime import dtype as D, memory
from tritongrad.runtime.device import device
from tritongrad.kernels.triton import scaled_mm as S
dev = device("cuda", 0)
def arr(shape, dt):
    if dt is D.bfloat16:
        return memory.to_device(np.zeros(shape, np.uint16), dev, dtype=dt)
    return memory.to_device(np.zeros(shape, np.float32).astype(dt.np), dev)
for fb, out, rowwise, M in ((D.float8_e4m3fn, D.bfloat16, False, 512),
                            (D.float8_e5m2, D.float8_e4m3fn, True, 17)):
    a, b = arr((M, 96), D.float8_e4m3fn), arr((384, 96), fb).permute((1, 0))
    sa = arr((M, 1) if rowwise else (), D.float32)
    sb = arr((1, 384) if rowwise else (), D.float32)
    for _ in range(2):  # the second launch goes through the cached launcher
        S.scaled_mm(a, b, sa, sb, arr((384,), D.float32), arr((), D.float32), out)
from tritongrad.kernels.triton import float8 as F
x = memory.to_device(np.zeros((4, 8, 5), np.float32), dev).permute((2, 0, 1))
for src, out in ((D.float32, D.float8_e4m3fn), (D.bfloat16, D.float8_e5m2),
                 (D.float16, D.float8_e4m3fn), (D.float64, D.float8_e5m2),
                 (D.float8_e4m3fn, D.float32), (D.float8_e5m2, D.bfloat16)):
    for _ in range(2):
        F.astype(arr((64, 48), src) if src is not D.float32 else x, out)
assert all(c[1] for c in C.LAUNCHED.values()) and not C.OVER_SHARED, (C.LAUNCHED, C.OVER_SHARED)
print("compiled", len(C.COMPILED))
"""


def test_scaled_mm_kernel_compiles_for_sm90():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-c", _COMPILE_SM90], cwd=root, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "compiled 8" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]


def test_unsupported_ops_raise_as_pytorch():
    x = tg.tensor([1.0, -2.0]).to(D.float8_e4m3fn)
    for op in ("add", "exp", "sum"):
        with pytest.raises(NotImplementedError,
                           match=f'"{op}_cpu" not implemented for \'Float8_e4m3fn\''):
            check_float8_op(op, x, tg.ones(2))
    check_float8_op("add", tg.ones(2), tg.ones(2))  # no float8 operand: nothing to refuse
    for op in SUPPORTED_OPS:
        check_float8_op(op, x, x)
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, -2.0]).to(torch.float8_e4m3fn)
    calls = {"add": lambda: t + t, "exp": lambda: t.exp(), "sum": lambda: t.sum(),
             "mul": lambda: t * t, "abs": lambda: t.abs(), "eq": lambda: t == t,
             "ne": lambda: t != t, "isnan": lambda: t.isnan(), "any": lambda: t.any(),
             "matmul": lambda: t[None] @ t[:, None], "neg": lambda: -t}
    for op, call in calls.items():  # the table says what torch does
        try:
            call()
            ran = True
        except NotImplementedError:
            ran = False
        assert ran == (op in SUPPORTED_OPS), op
