"""The TMA matmul kernel (Note [TMA matmul] in kernels/triton/matmul.py): tensor-descriptor
loads and stores, persistent programs, and the plans that pick it.

Under Triton's interpreter the descriptors are emulated (zero-padded loads, clipped stores), so
the kernel's arithmetic, its edges and its persistent loop run against float64 in CI; on a GPU
the same tests run the TMA hardware. Which products may take it is decided by the plan's
shapes and strides, and at each call by the operands' addresses: both are checked here.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from tritongrad.kernels import triton as tk
from tritongrad.kernels.triton import _launch, autotune
from tritongrad.runtime import dtype as D

mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed

HALF = [D.float16, D.bfloat16]
TOL = {D.float16: 2e-2, D.bfloat16: 8e-2, D.float32: 1e-5}
SMALL = (32, 32, 16, 4, 2, 1)  # (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, TMA): quick to interpret


def _operand(kit, rng, shape, dtype, by_cols):
    """(device array, float64 reference) of ``shape``, stored by rows or by columns."""
    host = kit.values(shape, dtype, rng)
    if by_cols:
        dev = kit.up(np.ascontiguousarray(host.T), dtype)
        dev = dev.as_strided(shape, dev.strides[::-1], dev.offset)
    else:
        dev = kit.up(host, dtype)
    return dev, host.astype(np.float64)


def _key(a, b, M, N, K, s_bias=None):
    return (1, M, N, K, (0, *a.strides), (0, *b.strides), a.dtype, True, mm._precision(a.dtype),
            s_bias)


def _check(kit, got, want, dtype, K, precision="ieee"):
    tol = TOL[dtype]
    if dtype is D.float32 and precision == "tf32":  # (inputs rounded to 10 mantissa bits)
        tol = 2.0 ** -9
    np.testing.assert_allclose(kit.down(got).astype(np.float64), want, rtol=tol,
                               atol=tol * np.sqrt(K) * 3)


@pytest.mark.parametrize("dtype", HALF + [D.float32], ids=str)
@pytest.mark.parametrize("a_cols", [False, True], ids=["A rows", "A cols"])
@pytest.mark.parametrize("b_cols", [False, True], ids=["B rows", "B cols"])
def test_tma_kernel_against_float64(kit, rng, monkeypatch, dtype, a_cols, b_cols):
    """Ragged edges in M, N and K (descriptor loads past the edge read zeros, stores past it
    are dropped), both operand layouts, addmm's bias row, and three persistent programs for
    twelve tiles (each program loops over several)."""
    M, N, K = 88, 48, 40  # 3 x 2 tiles of 32, K in 3 steps of 16 (the last one half empty)
    a, ra = _operand(kit, rng, (M, K), dtype, a_cols)
    b, rb = _operand(kit, rng, (K, N), dtype, b_cols)
    bias, rbias = kit.pair((N,), dtype, rng)
    monkeypatch.setattr(mm, "PERSISTENT_PROGRAMS", 3)
    for row, s_bias, want in ((None, None, ra @ rb), (bias, 1, ra @ rb + rbias)):
        key = _key(a, b, M, N, K, s_bias)
        assert mm._tma_fits(key)
        launch = mm._launcher(key, SMALL, 1, K, kit.dev)
        assert isinstance(launch, mm._TmaLaunch) and launch.tma.grid == (3,)
        assert launch.tma.tail[6:8] == (a_cols, b_cols)
        c = tk.empty((M, N), dtype)
        launch(a, b, c, row, key[-2])
        _check(kit, c, want, dtype, K)


@pytest.mark.parametrize("family,config", [(f, c) for f, cs in mm.TMA_CANDIDATES.items()
                                           for c in cs], ids=str)
def test_every_tma_candidate_computes_the_product(kit, rng, family, config):
    """Each candidate's tiles on a product smaller than one tile in M or N (one program);
    float32 in the family's precision (IEEE, or TF32 on a GPU)."""
    M, N, K = 72, 40, 80
    dtype = D.bfloat16 if family == "half" else D.float32
    precision = "ieee" if family == "f32" else "tf32"
    a, ra = _operand(kit, rng, (M, K), dtype, False)
    b, rb = _operand(kit, rng, (K, N), dtype, True)
    c = tk.empty((M, N), dtype)
    key = _key(a, b, M, N, K)[:-2] + (precision, None)
    mm._launcher(key, (*config, mm.TMA), 1, K, kit.dev)(a, b, c, None, precision)
    _check(kit, c, ra @ rb, dtype, K, precision)


def test_which_plans_may_take_it(kit, rng):
    """TMA's rules (Note [TMA matmul]): half precision, one batch, one contiguous dimension per
    operand with a 16-byte multiple for the other stride, C's rows a 16-byte multiple."""
    dt = D.float16
    a, _ = _operand(kit, rng, (64, 32), dt, False)
    b, _ = _operand(kit, rng, (32, 48), dt, False)
    key = _key(a, b, 64, 48, 32)
    assert mm._tma_fits(key)
    assert not mm._tma_fits((2, *key[1:]))  # batched
    assert mm._tma_fits(key[:6] + (D.float32,) + key[7:])  # (its rows 128 bytes apart)
    assert not mm._tma_fits(key[:6] + (D.float64,) + key[7:])
    assert not mm._tma_fits(key[:6] + (D.float32,) + (False,) + key[8:])  # no tl.dot
    assert not mm._tma_fits((1, 64, 44, 32, *key[4:]))  # C's rows 88 bytes
    assert not mm._tma_fits(key[:4] + ((0, 36, 1),) + key[5:])  # A's rows 72 bytes apart
    assert not mm._tma_fits(key[:4] + ((0, 0, 1),) + key[5:])  # A's rows broadcast
    assert not mm._tma_fits(key[:4] + ((0, 64, 2),) + key[5:])  # no contiguous dimension
    assert mm._tma_fits(key[:4] + ((0, 1, 64),) + key[5:])  # A by columns
    assert not mm._tma_fits(key[:5] + ((0, 48, 2),) + key[6:])
    assert mm._tma_layout((0, 1, 64), 64, 32, 2) == (True, 64)
    assert mm._tma_layout((0, 40, 1), 64, 32, 2) == (False, 40)  # rows padded to 40


def test_a_misaligned_operand_takes_the_pointer_kernel(kit, rng, monkeypatch):
    """A plan is keyed by shapes and strides, not addresses: a TMA plan's call with an operand
    at a base address off 16 bytes launches the pointer kernel with the same tiles."""
    M, N, K = 40, 32, 32
    dt = D.float16
    host = kit.values((M * K + 1,), dt, rng)
    whole = kit.up(host, dt)
    b, rb = _operand(kit, rng, (K, N), dt, False)
    aligned = whole.as_strided((M, K), (K, 1), 0)
    shifted = whole.as_strided((M, K), (K, 1), 1)  # 2 bytes in
    launch = mm._launcher(_key(aligned, b, M, N, K), SMALL, 1, K, kit.dev)
    fallback = launch.fallback
    assert fallback.kernel is mm._matmul_kernel and mm.config_of(fallback) == (*SMALL[:5], 0)
    calls = []
    for name in ("tma", "fallback"):
        inner = getattr(launch, name)
        setattr(launch, name, lambda *args, name=name, inner=inner: calls.append(name)
                or inner(*args))
    for a, ra in ((aligned, host[:M * K]), (shifted, host[1:])):
        c = tk.empty((M, N), dt)
        launch(a, b, c, None, "tf32")
        _check(kit, c, ra.reshape(M, K).astype(np.float64) @ rb, dt, K)
    assert calls == ["tma", "fallback"]


@pytest.fixture
def tuning(monkeypatch, tmp_path, kit):
    """Tuning on for every size with made-up times (the TMA candidates win), results in a
    fresh file; yields the configs timed."""
    monkeypatch.setenv("TRITONGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotune, "MODE", "all")
    monkeypatch.setattr(autotune, "_on_hardware", lambda: True)
    monkeypatch.setattr(mm, "TMA_CANDIDATES", {"half": [SMALL[:5]]})
    monkeypatch.setattr(mm, "CANDIDATES", {**mm.CANDIDATES, "half": [(32, 32, 16, 4, 2)]})
    timed = []

    def fake(config, run):
        timed.append(config)
        run()
        return 1.0 if config[-1] == mm.TMA else 2.0
    monkeypatch.setattr(autotune, "_time", fake)
    autotune.clear()
    _launch.clear_plans()
    yield timed
    autotune.clear()
    _launch.clear_plans()


def test_tuning_times_the_tma_kernel_where_it_fits(kit, rng, tuning, tmp_path):
    """A product TMA can run times its candidates beside the pointer kernel's and plans with
    the faster; one it cannot (C's rows of 70 halves, float64, a misaligned tuning call)
    times the pointer kernel's only."""
    M, N, K = 72, 48, 40
    a, ra = _operand(kit, rng, (M, K), D.float16, False)
    b, rb = _operand(kit, rng, (K, N), D.float16, True)
    _check(kit, tk.matmul(a, b), ra @ rb, D.float16, K)
    assert SMALL in tuning and (*SMALL[:5], mm.POINTER) in tuning
    ((launch, split),) = mm._PLANS.values()
    assert isinstance(launch, mm._TmaLaunch) and split == 1 and mm.config_of(launch) == SMALL
    _check(kit, tk.matmul(a, b), ra @ rb, D.float16, K)  # the kept plan
    for m, n, dt in ((M, 70, D.float16), (M, N, D.float64)):
        tuning.clear()
        a2, r2 = _operand(kit, rng, (m, K), dt, False)
        b2, s2 = _operand(kit, rng, (K, n), dt, False)
        _check(kit, tk.matmul(a2, b2), r2 @ s2, D.float16, K)
        assert tuning and all(c[-1] == mm.POINTER for c in tuning)
    host = kit.values((M * K + 8,), D.float16, rng)
    whole = kit.up(host, D.float16)
    shifted = whole.as_strided((M, K), (K, 1), 1)
    tuning.clear()
    _launch.clear_plans()
    autotune.clear()
    (tmp_path / "autotune.json").unlink()  # (the class is the first product's: forget it)
    _check(kit, tk.matmul(shifted, b), host[1:M * K + 1].reshape(M, K).astype(np.float64) @ rb,
           D.float16, K)
    assert tuning and all(c[-1] == mm.POINTER for c in tuning)
