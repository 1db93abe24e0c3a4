"""Shared helpers of the kernel tests (imported by conftest.py and the test modules).

``Kit`` moves arrays to the device and back, builds inputs in several layouts, computes NumPy
references (bfloat16 through float32, since the NumPy backend keeps bfloat16 as bit patterns)
and compares with per-dtype tolerances. The module has a unique name (not ``conftest``) so that
test modules can import it whichever conftest pytest loaded last.
"""

from __future__ import annotations

import numpy as np
from tritongrad.kernels import numpy as nk
from tritongrad.kernels import triton as tk
from tritongrad.kernels.triton.compat import INTERPRET  # noqa: F401 - for the tests
from tritongrad.runtime import dtype as D
from tritongrad.runtime import memory
from tritongrad.runtime.device import device as Device

FLOATS = [D.float16, D.bfloat16, D.float32, D.float64]
INTS = [D.uint8, D.int32, D.int64]
ALL = FLOATS + INTS + [D.bool]

# (rtol, atol) for one rounding step of each dtype after float32 (or exact) math.
TOL = {
    D.float16: (1e-3, 1e-3), D.bfloat16: (8e-3, 1e-2), D.float32: (1e-5, 1e-6),
    D.float64: (1e-12, 1e-12),
}


def f32_to_bf16_bits(x) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (NaN stays NaN)."""
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r).astype(np.uint16)


def bf16_bits_to_f32(bits) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_bf16(x) -> np.ndarray:
    return bf16_bits_to_f32(f32_to_bf16_bits(x))


class Kit:
    """Helpers shared by the kernel tests (see the module docstring)."""

    tk, nk, D = tk, nk, D
    dev = Device("cuda", 0)

    @property
    def real_gpu(self) -> bool:
        """True where the kernels run on a real GPU, not Triton's interpreter."""
        import tritongrad.cuda as tgc

        return not tgc.is_emulated()

    # -- moving data -------------------------------------------------------------------------
    def up(self, host, dtype=None):
        """A DeviceArray from a NumPy array; ``dtype=bfloat16`` rounds float values first."""
        host = np.asarray(host)
        if dtype is D.bfloat16:
            return memory.to_device(f32_to_bf16_bits(host.astype(np.float32)), self.dev,
                                    dtype=D.bfloat16)
        return memory.to_device(host if dtype is None else host.astype(dtype.np), self.dev)

    def down(self, a) -> np.ndarray:
        """A DeviceArray's values as NumPy (bfloat16 decoded to float32)."""
        h = memory.to_host(a)
        return bf16_bits_to_f32(h) if a.dtype is D.bfloat16 else h

    # -- inputs ------------------------------------------------------------------------------
    def values(self, shape, dtype, rng, kind="normal"):
        """Host values for ``dtype`` (bfloat16: float32 values already on the bf16 grid)."""
        if dtype is D.bool:
            return rng.random(shape) < 0.5
        if dtype in INTS:
            lo, hi = (0, 60) if dtype is D.uint8 else (-40, 40)
            return rng.integers(lo, hi, size=shape).astype(dtype.np)
        x = rng.standard_normal(shape)
        if kind == "positive":
            x = np.abs(x) + 0.25
        elif kind == "small":
            x = x * 0.5
        if dtype is D.bfloat16:
            return round_bf16(x)
        return x.astype(dtype.np)

    def pair(self, shape, dtype, rng, layout="contig", kind="normal"):
        """(device array, NumPy reference array) with equal values, the device one in
        ``layout``: contig, T (reversed dims), strided (every other element, offset 1),
        expanded (size-1 dims broadcast), or sliced (a window of a wider array)."""
        shape = tuple(shape)
        nd = len(shape)
        if layout == "contig" or nd == 0:
            host = self.values(shape, dtype, rng, kind)
            return self.up(host, dtype), host
        if layout == "T":
            host = self.values(shape[::-1], dtype, rng, kind)
            perm = tuple(range(nd))[::-1]
            return tk.permute(self.up(host, dtype), perm), host.transpose(perm)
        if layout == "strided":
            base = tuple(2 * n + 1 for n in shape)
            host = self.values(base, dtype, rng, kind)
            idx = tuple(slice(1, 1 + 2 * n, 2) for n in shape)
            return tk.getitem(self.up(host, dtype), idx), host[idx]
        if layout == "sliced":
            base = tuple(n + 3 for n in shape)
            host = self.values(base, dtype, rng, kind)
            idx = tuple(slice(2, 2 + n) for n in shape)
            return tk.getitem(self.up(host, dtype), idx), host[idx]
        if layout == "expanded":
            small = tuple(1 if i % 2 == 0 else n for i, n in enumerate(shape))
            host = self.values(small, dtype, rng, kind)
            return tk.expand(self.up(host, dtype), shape), np.broadcast_to(host, shape)
        raise ValueError(layout)

    # -- references and checks ---------------------------------------------------------------
    def ref(self, fn, *args, dtype=None):
        """``fn`` (a NumPy-backend op) on reference arrays; for bfloat16 it runs in float32
        and the float result is rounded to bfloat16 once, as the kernels do."""
        out = fn(*args)
        if dtype is D.bfloat16 and np.asarray(out).dtype.kind == "f":
            out = round_bf16(out)
        return np.asarray(out)

    def expect_dtype(self, ref, dtype):
        """The tritongrad dtype a result should have, given the reference's NumPy dtype."""
        if dtype is D.bfloat16 and ref.dtype == np.float32:
            return D.bfloat16
        return D.from_numpy_dtype(ref.dtype)

    def check(self, got, ref, dtype=None, rtol=None, atol=None, check_dtype=True):
        """Asserts a DeviceArray equals a NumPy reference: shape, dtype, values."""
        ref = np.asarray(ref)
        assert tuple(got.shape) == ref.shape, (got.shape, ref.shape)
        if check_dtype:
            want = self.expect_dtype(ref, dtype)
            assert got.dtype is want, (got.dtype, want)
        host = self.down(got)
        if ref.dtype.kind in "biu" and host.dtype.kind in "biu":
            np.testing.assert_array_equal(host, ref)
            return
        tol_dtype = got.dtype if got.dtype in TOL else dtype
        r, a = TOL.get(tol_dtype, (0, 0))
        np.testing.assert_allclose(host.astype(np.float64), ref.astype(np.float64),
                                   rtol=r if rtol is None else rtol,
                                   atol=a if atol is None else atol, equal_nan=True)
