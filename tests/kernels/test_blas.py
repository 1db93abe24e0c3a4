"""The CPU backend's direct CBLAS binding (kernels/numpy/blas.py): every operand layout,
dtype and size class against float64 products, for each library this machine has: NumPy's own
OpenBLAS (bundled in NumPy's wheels: CI runs the binding against it) and Intel MKL (the ``mkl``
extra, when installed); plus the choice of library by ``TRITONGRAD_BLAS``."""

from __future__ import annotations

import ctypes
import importlib
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

blas = importlib.import_module("tritongrad.kernels.numpy.blas")
linalg = importlib.import_module("tritongrad.kernels.numpy.linalg")


def _available(name: str) -> bool:
    try:
        with blas.use(name):
            return True
    except RuntimeError:
        return False


LIBRARIES = [pytest.param(name, marks=pytest.mark.skipif(
    not _available(name), reason=f"{name} is not installed")) for name in ("openblas", "mkl")]


@pytest.fixture(autouse=True)
def _small_products_reach_the_library(request, monkeypatch):
    # the tests run the binding on small matrices; which sizes go to the library in use
    # (Note [Small products]) is test_what_numpy_keeps's subject
    if request.function.__name__ != "test_what_numpy_keeps":
        monkeypatch.setattr(blas, "MIN_WORK", 0)


def test_numpy_wheels_bundle_openblas():
    # CI's only run of the binding is against NumPy's OpenBLAS: it must be found where NumPy's
    # wheel bundles it (a NumPy built on another BLAS has no numpy.libs)
    root = os.path.dirname(os.path.dirname(np.__file__))
    if os.path.isdir(os.path.join(root, "numpy.libs")):
        assert _available("openblas")


def _operand(rng, shape, dtype, layout):
    """An array of ``shape`` laid out as: rows, a transposed (column-major) view, a strided
    view (every other column), or a reversed view (negative strides)."""
    if layout == "rows":
        return rng.standard_normal(shape).astype(dtype)
    if layout == "transposed":
        return rng.standard_normal(shape[::-1]).astype(dtype).T
    if layout == "strided":
        return rng.standard_normal((shape[0], 2 * shape[1])).astype(dtype)[:, ::2]
    return rng.standard_normal(shape).astype(dtype)[::-1]


LAYOUTS = ["rows", "transposed", "strided", "reversed"]


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_gemm_layouts(library, dtype, la, lb):
    rng = np.random.default_rng(0)
    m, k, n = 67, 129, 33  # (odd sizes: no leading dimension equals another by chance)
    a, b = _operand(rng, (m, k), dtype, la), _operand(rng, (k, n), dtype, lb)
    a0, b0 = a.copy(), b.copy()
    with blas.use(library):
        got = blas.gemm(a, b)
    assert got is not None and got.dtype == dtype and got.shape == (m, n)
    assert got.flags.c_contiguous
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    np.testing.assert_array_equal(a, a0)  # operands untouched
    np.testing.assert_array_equal(b, b0)


@pytest.mark.parametrize("library", LIBRARIES)
@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 70), k=st.integers(1, 70), n=st.integers(1, 70),
       ta=st.booleans(), tb=st.booleans())
def test_gemm_shapes(library, m, k, n, ta, tb):
    # every shape, vectors and single rows included, in both layouts of each operand (the
    # threshold is lowered so that small products reach the library too)
    rng = np.random.default_rng(m * 10_000 + k * 100 + n)
    a = rng.standard_normal((k, m)).T if ta else rng.standard_normal((m, k))
    b = rng.standard_normal((n, k)).T if tb else rng.standard_normal((k, n))
    saved = blas.MIN_WORK
    blas.MIN_WORK = 0
    try:
        with blas.use(library):
            got = blas.gemm(a, b)
    finally:
        blas.MIN_WORK = saved
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("library", LIBRARIES)
def test_non_finite_values_propagate(library):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    a[3, 5], a[7, 9], b[2, 11] = np.nan, np.inf, -np.inf
    with blas.use(library):
        got = blas.gemm(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("library", LIBRARIES)
def test_what_numpy_keeps(library):
    # None (NumPy computes it): small products, other dtypes, array subclasses, mismatches
    rng = np.random.default_rng(2)
    big = rng.standard_normal((64, 64)).astype(np.float32)
    with blas.use(library):
        assert blas.gemm(big[:8, :8], big[:8, :8]) is None  # below MIN_WORK
        assert blas.gemm(big, big) is None  # 2^18: below it, and no dimension small
        tall = rng.standard_normal((1024, 512)).astype(np.float32)
        assert blas.gemm(tall[:8], tall[:512]) is not None  # 2^22 with m = 8: skinny
        assert blas.gemm(tall[:256, :128], tall[:128, :128]) is None  # 2^22, square-ish
        assert blas.gemm(big.astype(np.float16), big.astype(np.float16)) is None
        assert blas.gemm(big.astype(np.complex64), big.astype(np.complex64)) is None
        assert blas.gemm(big.astype(np.int32), big.astype(np.int32)) is None
        assert blas.gemm(big, big.astype(np.float64)) is None
        assert blas.gemm(big.view(np.matrix), big) is None
        assert blas.gemm(big, big[:32]) is None  # inner sizes differ: NumPy's error
        with pytest.raises(ValueError, match="matmul"):
            linalg.matmul(big, big[:32])


@pytest.mark.parametrize("library", LIBRARIES)
def test_matmul_routes(library):
    # linalg.matmul (the contract's matmul and bmm) sends 2-D products, (..., m, k) @ (k, n)
    # with contiguous rows, and single-group 3-D products to the library: same values as NumPy
    rng = np.random.default_rng(3)
    cases = [
        (rng.standard_normal((96, 80)), rng.standard_normal((80, 72))),
        (rng.standard_normal((4, 24, 80)), rng.standard_normal((80, 72))),
        (rng.standard_normal((1, 96, 80)), rng.standard_normal((1, 80, 72))),
        (rng.standard_normal((3, 96, 80)), rng.standard_normal((3, 80, 72))),  # NumPy's loop
        (rng.standard_normal((4, 80, 24)).transpose(0, 2, 1), rng.standard_normal((80, 72))),
    ]
    with blas.use(library):
        for a, b in cases:
            for dt in (np.float32, np.float64, np.float16):
                a_, b_ = a.astype(dt), b.astype(dt)
                got = linalg.matmul(a_, b_)
                want = a_.astype(np.float64) @ b_.astype(np.float64)
                assert got.dtype == dt and got.shape == want.shape
                tol = {np.float16: 2e-2, np.float32: 2e-5, np.float64: 1e-12}[dt]
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_numpy_choice_computes_with_numpy():
    with blas.use("numpy") as lib:
        assert lib is None
        a = np.ones((64, 64), np.float32)
        assert blas.gemm(a, a) is None
        np.testing.assert_array_equal(linalg.matmul(a, a), np.full((64, 64), 64, np.float32))


def test_choice_is_checked():
    with pytest.raises(ValueError, match="TRITONGRAD_BLAS: expected one of auto, mkl, numpy"), \
            blas.use("atlas"):
        pass


def _run(env_value: str) -> subprocess.CompletedProcess:
    code = ("import tritongrad.kernels.numpy.blas as b\n"
            "lib = b.provider()\n"
            "print('none' if lib is None else lib.name)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False,
                          env=dict(os.environ, TRITONGRAD_BLAS=env_value))


def test_environment_selects_the_library():
    assert _run("numpy").stdout.strip() == "none"
    auto = _run("auto").stdout.strip()
    intel = blas._cpu_vendor() == "GenuineIntel"  # Note [MKL on AMD]
    assert auto == ("mkl" if _available("mkl") and intel else "none")
    if _available("openblas"):
        assert _run("openblas").stdout.strip() == "openblas"
    r = _run("mkl")
    if _available("mkl"):
        assert r.stdout.strip() == "mkl"
    else:  # a clear error that names the extra
        assert r.returncode != 0 and "pip install tritongrad[mkl]" in r.stderr


def test_auto_keeps_numpy_while_openblas_runs_threads(monkeypatch):
    # Note [Two thread pools]: auto's MKL computes a product only while NumPy's OpenBLAS runs
    # one thread (asked at each product); the gate, exercised on the binding CI has
    a = np.ones((64, 64), np.float32)
    threads = [1]
    with blas.use("openblas" if _available("openblas") else "numpy") as lib:
        if lib is None:
            pytest.skip("no CBLAS library to call")
        monkeypatch.setattr(blas, "_threads", lambda: threads[0])
        assert blas.gemm(a, a) is not None
        threads[0] = 2
        assert blas.gemm(a, a) is None  # NumPy computes it
        np.testing.assert_array_equal(linalg.matmul(a, a), np.full((64, 64), 64, np.float32))


@pytest.mark.parametrize("vendor, chosen", [("GenuineIntel", "mkl"), ("AuthenticAMD", None),
                                            (None, None)])
def test_auto_uses_mkl_on_intel_cpus_only(monkeypatch, vendor, chosen):
    # Note [MKL on AMD]: MKL is slower than NumPy's OpenBLAS on AMD's CPUs, so auto leaves
    # their products to NumPy (and an unknown vendor's); mkl, chosen explicitly, still runs
    if chosen == "mkl" and not _available("mkl"):
        pytest.skip("mkl is not installed")
    monkeypatch.setattr(blas, "_cpu_vendor", lambda: vendor)
    with blas.use("auto") as lib:
        assert (lib.name if lib is not None else None) == chosen
    if _available("mkl"):
        with blas.use("mkl") as lib:
            assert lib.name == "mkl"


@pytest.mark.skipif(not _available("mkl"), reason="mkl is not installed")
def test_auto_mkl_asks_numpys_openblas(monkeypatch):
    # with MKL installed, auto asks NumPy's own OpenBLAS for its thread count (set through
    # its C API here); mkl, chosen explicitly, ignores it
    lib = blas._numpy_openblas()
    if lib is None:
        pytest.skip("this NumPy has no bundled OpenBLAS")
    monkeypatch.setattr(blas, "_cpu_vendor", lambda: "GenuineIntel")  # (auto's MKL: Intel only)
    get, put = lib.scipy_openblas_get_num_threads64_, lib.scipy_openblas_set_num_threads64_
    get.restype = ctypes.c_int
    before = get()
    a = np.ones((64, 64), np.float32)
    try:
        with blas.use("auto") as chosen:
            assert chosen.name == "mkl"
            put(ctypes.c_int(1))
            assert blas.gemm(a, a) is not None
            put(ctypes.c_int(2))
            assert blas.gemm(a, a) is None
        with blas.use("mkl"):
            assert blas.gemm(a, a) is not None
    finally:
        put(ctypes.c_int(before))
