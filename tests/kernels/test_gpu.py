"""Kernel checks that need real hardware: compiled (not interpreted) kernels at sizes that take
the large-block configs, real libdevice math, float64 tl.dot, and int64 offsets past 2**31
elements. Skipped on the emulated device."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from kernel_kit import FLOATS, D, round_bf16, tk

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::RuntimeWarning")]


def test_large_elementwise_and_casts(kit, rng):
    a, ra = kit.pair((1024, 1536), D.float32, rng)  # >= 2**20 elements: the 4096-block path
    b, rb = kit.pair((1536,), D.float32, rng)
    kit.check(tk.add(a, b), ra + rb)
    kit.check(tk.div(a, b), ra / rb)
    kit.check(tk.exp(a), np.exp(ra), rtol=2e-6)
    kit.check(tk.log(tk.add(tk.mul(a, a), 1.0)), np.log(ra * ra + np.float32(1)), rtol=2e-6,
              atol=1e-6)
    kit.check(tk.sqrt(tk.mul(a, a)), np.sqrt(ra * ra))
    kit.check(tk.pow(tk.add(tk.mul(a, a), 0.5), b), (ra * ra + np.float32(0.5)) ** rb,
              rtol=1e-5)
    kit.check(tk.contiguous(tk.permute(a, (1, 0))), ra.T)
    kit.check(tk.astype(a, D.bfloat16), ra, D.bfloat16)
    kit.check(tk.where(tk.gt(a, 0.0), a, b), np.where(ra > 0, ra, rb))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_large_reductions(kit, rng, dtype):
    a, ra = kit.pair((2048, 1000), dtype, rng)
    for dims in [(1,), (0,), (0, 1)]:
        got = tk.sum(a, dims, False)
        ref = np.sum(ra.astype(np.float64), axis=dims)
        n = np.prod([ra.shape[d] for d in dims])
        tol = {D.float16: 2e-3, D.bfloat16: 1e-2, D.float32: 1e-5, D.float64: 1e-12}[dtype]
        kit.check(got, ref.astype(np.float32) if dtype is D.bfloat16 else ref.astype(dtype.np),
                  dtype, rtol=tol, atol=tol * np.sqrt(n))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_large_matmul(kit, rng, dtype):
    a, ra = kit.pair((512, 384), dtype, rng, layout="T")
    b, rb = kit.pair((384, 640), dtype, rng)
    ref = ra.astype(np.float64) @ rb.astype(np.float64)
    if dtype is D.bfloat16:
        ref = round_bf16(ref)
    tol = {D.float16: 2e-3, D.bfloat16: 1e-2, D.float32: 1e-5, D.float64: 1e-12}[dtype]
    kit.check(tk.matmul(a, b), ref.astype(np.float32) if dtype is D.bfloat16
              else ref.astype(dtype.np), dtype, rtol=tol, atol=tol * 20)
    if dtype is D.float64:
        mm = importlib.import_module("tritongrad.kernels.triton.matmul")
        assert mm._f64_dot in ([True], [False])  # which path this Triton took


@pytest.mark.slow
def test_int64_offsets_past_2_31_elements(kit):
    n = 2**31 + 4096
    x = tk.full((n,), 1, D.uint8)
    tk.copy_(tk.getitem(x, (slice(n - 3, n),)), 7)
    y = tk.astype(tk.getitem(x, (slice(n - 8, n),)), D.int32)
    kit.check(y, np.array([1] * 5 + [7] * 3, np.int32))
    s = tk.sum(x, (0,), False)
    kit.check(s, np.int64(n + 18))
    del x


def test_row_ops_and_optimizers_at_scale(kit, rng):
    x, rx = kit.pair((512, 3000), D.float32, rng)
    kit.check(tk.softmax(x, 1, False), kit.nk.softmax(rx, 1, False), rtol=1e-5, atol=1e-7)
    kit.check(tk.softmax(tk.permute(x, (1, 0)), 0, True), kit.nk.softmax(rx.T, 0, True),
              rtol=1e-5, atol=1e-5)
    y = tk.layer_norm(x, None, None, 1e-5)[0]
    ey = kit.nk.layer_norm(rx, None, None, 1e-5)[0]
    kit.check(y, ey, rtol=1e-4, atol=1e-5)
    t = rng.integers(0, 3000, 512).astype(np.int64)
    loss = tk.cross_entropy(x, kit.up(t), -100, 0.1)[0]
    el = kit.nk.cross_entropy(rx, t, -100, 0.1)[0]
    kit.check(loss, el, rtol=1e-5, atol=1e-5)
    kit.check(tk.cumsum(x, 1), kit.nk.cumsum(rx, 1), rtol=1e-4, atol=1e-3)
    kit.check(tk.argreduce("argmax", x, 1, False), kit.nk.argreduce("argmax", rx, 1, False))
    p, rp = kit.pair((1 << 20,), D.float32, rng)
    g, rg = kit.pair((1 << 20,), D.float32, rng)
    m, rm = kit.pair((1 << 20,), D.float32, rng)
    v, rv = kit.pair((1 << 20,), D.float32, rng)
    v, rv = tk.mul(v, v), rv * rv
    rp, rm = np.array(rp), np.array(rm)
    tk.adam_step(p, g, m, v, None, 3, 1e-3, 0.9, 0.999, 1e-8, 0.01, False, False, True)
    kit.nk.adam_step(rp, rg, rm, rv, None, 3, 1e-3, 0.9, 0.999, 1e-8, 0.01, False, False, True)
    kit.check(p, rp, rtol=0, atol=0)  # no FMA contraction: bit for bit, as in the interpreter


def test_launches_follow_the_current_stream(kit, rng):
    import tritongrad.cuda as tgc

    a, ra = kit.pair((2048, 2048), D.float32, rng)
    s = tgc.Stream()
    s.wait_stream(tgc.current_stream())
    with tgc.stream(s):
        out = tk.exp(tk.mul(a, 0.5))
        total = tk.sum(out, (0, 1), False)
    s.synchronize()
    kit.check(out, np.exp(ra * np.float32(0.5)), rtol=2e-6)
    np.testing.assert_allclose(kit.down(total), np.exp(ra * np.float32(0.5)).sum(), rtol=1e-4)


def test_cached_launches_agree_with_tritons_dispatch(kit, rng, monkeypatch):
    """Note [cached launches] on the device: repeated launches go through the cached launcher
    (checked against the kernel Triton's dispatch picks) and compute what the first did; a
    misaligned view and a length divisible by 16 or not get launchers of their own."""
    from tritongrad.kernels.triton import elementwise
    from tritongrad.kernels.triton.launcher import CachedLaunchJIT

    monkeypatch.setattr(CachedLaunchJIT, "check", True)
    kernel = elementwise._ew_flat_kernel
    # An empty cache of its own: earlier tests in this process may have cached some of these
    # launches already (seen on the first GPU run, 2026-11-29), which would hide a missing key.
    monkeypatch.setattr(kernel, "_launches", {})
    keys_per_n = []
    for n in (4096, 4099):
        a, ra = kit.pair((n,), D.float32, rng)
        b, rb = kit.pair((n,), D.float32, rng)
        for _ in range(3):
            kit.check(tk.mul(a, b), ra * rb)
        tail = tk.getitem(a, (slice(1, None),))  # 4 bytes past a 16-byte boundary
        for _ in range(2):
            kit.check(tk.mul(tail, 2.0), ra[1:] * np.float32(2.0))
        keys_per_n.append(set(kernel._launches))
    # 4096: the aligned product and the misaligned tail; 4099 adds at least the product of a
    # length not divisible by 16 (its tail, 4098 long and misaligned, may share 4095's key).
    assert len(keys_per_n[0]) >= 2
    assert len(keys_per_n[1] - keys_per_n[0]) >= 1
