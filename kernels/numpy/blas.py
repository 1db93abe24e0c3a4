"""Matrix products through a CBLAS library called directly: Intel MKL on Intel CPUs where it is
installed.

NumPy's ``matmul`` runs its own BLAS (OpenBLAS in NumPy's wheels). PyTorch's CPU wheels run
MKL, which on Intel CPUs is 1.1-1.35x faster on the single-precision GEMMs of a training step
(docs/performance.md, "session 13"): a transformer's projections, an MLP's layers, a
convolution's im2col product; on AMD's it is slower (Note [MKL on AMD]). The ``mkl`` extra
(``pip install tritongrad[mkl]``, Intel's ``mkl`` wheel: about 700 MB) makes those products
run MKL's ``cblas_sgemm``/``cblas_dgemm`` through ctypes.

``gemm(a, b)`` is the one entry (kernels/numpy/linalg.py calls it): float32 or float64 plain
ndarrays, products large enough that the library's faster kernels save more than its call costs
(Note [Small products]: ``MIN_WORK``, ``SKINNY_WORK``), each operand read in place when one of its strides is the element size (a
transposed view is BLAS's "T" operand), copied otherwise. Anything else returns None and
NumPy computes it. Batched products of small matrices (attention's heads) stay with NumPy:
its loop over OpenBLAS beats MKL's strided batch there.

``TRITONGRAD_BLAS`` picks the library at the first product: ``auto`` (the default: MKL when
installed and the CPU is Intel's, for the products made while NumPy's OpenBLAS runs one thread,
else NumPy; see Note [MKL on AMD] and Note [Two thread pools]), ``mkl`` (MKL always, an error
naming the extra when it is missing), ``numpy`` (``np.matmul`` only), ``openblas`` (NumPy's own
OpenBLAS through this same binding: no faster than ``np.matmul``; it exists so that CI, which
does not install MKL, runs the binding's layout logic against a real CBLAS). ``use(name)``
switches it for a block (tests).
MKL's threads follow ``MKL_NUM_THREADS``/``OMP_NUM_THREADS`` and ``tg.set_num_threads``
(threadpoolctl sees the loaded library); without Intel's OpenMP runtime it runs sequential.

Note [Two thread pools]: NumPy keeps calling its own OpenBLAS for everything else (batched and
small products, BLAS sums, ``dot``), and OpenBLAS's threads and MKL's OpenMP threads each
busy-wait after their work: with several threads each they take turns spinning on the cores
the other pool needs. The GPT step of perf/bench_transformer.py with two threads on two cores:
49.5 ms with NumPy alone, 135-148 ms with MKL beside it (75 ms with ``KMP_BLOCKTIME=0``). With
OpenBLAS on one thread (``OPENBLAS_NUM_THREADS=1``/``OMP_NUM_THREADS=1``,
``tg.set_num_threads(1)``: a training process per core, the benchmarks) nothing contends and
MKL is 1.1-1.35x faster. So ``auto`` asks OpenBLAS for its thread count at each product (a
C call, 0.1 us) and uses MKL only while it is one; ``mkl`` uses it regardless.

Note [MKL on AMD]: the 1.1-1.35x above was measured on Intel Xeons (Sapphire Rapids). On an
AMD EPYC (Zen 3, AVX2; 2-core VM, MKL 2026.2.0 against NumPy 2.4.6's OpenBLAS 0.3.31 Haswell
kernels, one thread, float32, median of 9 interleaved rounds of thread time, 2026-11-29) MKL
is slower on every product of the benchmarks' steps: the MLP's five large ones 1.19-1.51x
(the 256 x 1024 x 1024 layer 13.6 against 9.0 ms), its three with a dimension of 10
1.2-3.7x, 52.1 against 39.0 ms in all; the GPT step's 1.02-1.59x (29.4 against 23.0 ms), the
CNN's im2col products 1.12-2.0x, the LSTM's 1.3x (2.6-3.3x per time step), 1024^3 1.17x. So
``auto`` uses MKL only on a CPU whose vendor is ``GenuineIntel`` (``/proc/cpuinfo``; the
``mkl`` wheel exists for Linux x86-64 only); elsewhere ``np.matmul`` computes (NumPy's
OpenBLAS called through this binding instead was 2.5% slower on the MLP's eight products in
one interleaved run, and adding linear's bias inside the GEMM, beta = 1, did not win it
back). ``mkl`` still forces MKL. (Reading ``/proc/cpuinfo`` costs ~0.4 ms of CPU, once.)
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import importlib.metadata
import os
import sys
import threading

import numpy as np

__all__ = ["MIN_WORK", "SKINNY_DIM", "SKINNY_WORK", "gemm", "provider", "use"]

# Which products go to the library (Note [Small products]): m * n * k of at least MIN_WORK,
# or of at least SKINNY_WORK when one of m, n, k is at most SKINNY_DIM.
MIN_WORK = 1 << 23
SKINNY_WORK, SKINNY_DIM = 1 << 21, 32

# Note [Small products]: a call into MKL costs ~9 us however small the product (measured
# through this binding, one thread, session 16: a 2x2 product 8.7-10.9 us; np.matmul's
# OpenBLAS ~1 us), so MKL only pays where its faster kernels save more than that. One
# thread, float32, MKL against np.matmul (session 16, loaded VM, min of 7 rounds):
# (8, 64, 256) 11-12 against 3.7 us (an LSTM step's product), (128, 128, 128) 51 against 43,
# (256, 128, 128) 80 against 69, (128, 256, 256) 127 against 131, (256, 1024, 1024) 3623
# against 4003; with a small dimension MKL wins earlier: (8, 256, 1024) 54 against 96,
# (256, 10, 1024) 73 against 120, (16, 512, 512) 86 against 112, but (8, 128, 512) 21
# against 12. (The threshold was 1 << 17 before, which sent the LSTM's per-step products to
# MKL at 3x their NumPy time.)
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS's enum values
_I32 = 2**31 - 1
_f32, _f64 = np.dtype(np.float32), np.dtype(np.float64)
_ndarray = np.ndarray


class _Library:
    """One CBLAS library's sgemm and dgemm (``int_t``: its integer width, LP64 or ILP64)."""

    def __init__(self, name: str, lib, sgemm: str, dgemm: str, int_t):
        self.name = name
        self.lib = lib
        self.fns = {}
        for dtype, symbol, real in ((_f32, sgemm, ctypes.c_float), (_f64, dgemm, ctypes.c_double)):
            fn = getattr(lib, symbol)
            fn.restype = None
            fn.argtypes = [ctypes.c_int] * 3 + [int_t] * 3 + [real, ctypes.c_void_p, int_t,
                                                              ctypes.c_void_p, int_t, real,
                                                              ctypes.c_void_p, int_t]
            self.fns[dtype] = fn

    def __repr__(self) -> str:
        return f"<CBLAS {self.name}>"


def _lib_dirs(dist: str) -> list[str]:
    """Directories holding a pip distribution's shared libraries (the ``mkl`` wheel installs
    them in ``<prefix>/lib``), then the interpreter prefix's own."""
    dirs = []
    try:
        for f in importlib.metadata.files(dist) or ():
            if f.name.startswith("lib") and ".so" in f.name:
                d = os.path.dirname(os.path.abspath(f.locate()))
                if d not in dirs:
                    dirs.append(d)
    except importlib.metadata.PackageNotFoundError:
        pass
    return dirs + [os.path.join(sys.prefix, "lib")]


def _load_mkl() -> _Library | None:
    for d in _lib_dirs("mkl"):
        for so in ("libmkl_rt.so.3", "libmkl_rt.so.2", "libmkl_rt.so"):
            path = os.path.join(d, so)
            if not os.path.exists(path):
                continue
            if "MKL_THREADING_LAYER" not in os.environ:
                # MKL's default threading layer needs Intel's OpenMP runtime (the intel-openmp
                # wheel) and aborts the process where it cannot load it: choose before the
                # first call, sequential when the runtime is absent.
                layer = 0 if _loads(os.path.join(d, "libiomp5.so")) else 1  # INTEL, SEQUENTIAL
                os.environ["MKL_THREADING_LAYER"] = ("INTEL", "SEQUENTIAL")[layer]
            lib = ctypes.CDLL(path)
            return _Library("mkl", lib, "cblas_sgemm", "cblas_dgemm", ctypes.c_int)
    return None


def _loads(path: str) -> bool:
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def _numpy_openblas():
    """The shared library of NumPy's bundled OpenBLAS (scipy-openblas, ILP64 with prefixed
    symbols), or None (a NumPy built on another BLAS)."""
    root = os.path.dirname(os.path.dirname(np.__file__))
    for path in sorted(glob.glob(os.path.join(root, "numpy.libs", "libscipy_openblas64_*.so"))):
        lib = ctypes.CDLL(path)
        if hasattr(lib, "scipy_cblas_sgemm64_"):
            return lib
    return None


def _load_numpy_openblas() -> _Library | None:
    lib = _numpy_openblas()
    if lib is None:
        return None
    return _Library("openblas", lib, "scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_",
                    ctypes.c_int64)


def _numpy_threads():
    """``() -> int``: the threads NumPy's OpenBLAS runs now (Note [Two thread pools]), or None
    when NumPy has no bundled OpenBLAS to ask."""
    lib = _numpy_openblas()
    fn = getattr(lib, "scipy_openblas_get_num_threads64_", None) if lib is not None else None
    if fn is not None:
        fn.restype, fn.argtypes = ctypes.c_int, []
    return fn


def _cpu_vendor() -> str | None:
    """The CPU's vendor as the kernel reports it (``GenuineIntel``, ``AuthenticAMD``, ...), or
    None where ``/proc/cpuinfo`` does not say (not Linux, not x86)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


_lock = threading.Lock()
_UNSET = object()
_library = _UNSET  # the loaded _Library, None for NumPy's matmul, _UNSET before the first use
_threads = None  # auto's MKL: () -> NumPy's OpenBLAS threads (Note [Two thread pools])
_CHOICES = ("auto", "mkl", "numpy", "openblas")


def _select(name: str):
    """The library for ``name``, with ``_threads`` set for it."""
    global _threads
    name = name.strip().lower()
    if name not in _CHOICES:
        raise ValueError(f"TRITONGRAD_BLAS: expected one of {', '.join(_CHOICES)}, got {name!r}")
    _threads = None
    if name == "numpy":
        return None
    if name == "openblas":
        lib = _load_numpy_openblas()
        if lib is None:
            raise RuntimeError("TRITONGRAD_BLAS=openblas: this NumPy has no bundled OpenBLAS "
                               "(scipy-openblas) to call")
        return lib
    if name == "mkl" or _cpu_vendor() == "GenuineIntel":  # Note [MKL on AMD]
        lib = _load_mkl()
        if lib is None and name == "mkl":
            raise RuntimeError("TRITONGRAD_BLAS=mkl: Intel MKL is not installed; install it "
                               "with `pip install tritongrad[mkl]`")
        if lib is not None:
            if name == "auto":
                _threads = _numpy_threads()
                if _threads is None:  # NumPy runs another BLAS, whose threads cannot be asked
                    return None
            return lib
    return None  # auto without MKL (or off Intel's CPUs): NumPy computes


def provider():
    """The CBLAS library products go to (``<CBLAS mkl>``, ...), or None for NumPy's matmul."""
    global _library
    lib = _library
    if lib is _UNSET:
        with _lock:
            if _library is _UNSET:
                _library = _select(os.environ.get("TRITONGRAD_BLAS", "auto"))
            lib = _library
    return lib


@contextlib.contextmanager
def use(name: str):
    """Runs the block with the library ``name`` (one of ``TRITONGRAD_BLAS``'s values)."""
    global _library, _threads
    saved = _library, _threads
    _library = _select(name)
    try:
        yield _library
    finally:
        _library, _threads = saved


def _operand(x: np.ndarray):
    """(trans, ld, x) for BLAS: row-major rows as they are, a column-major (transposed) view
    as the "T" operand, anything else copied to rows."""
    item = x.itemsize
    rows, cols = x.shape
    s0, s1 = x.strides
    if not x.flags.aligned:
        x = np.ascontiguousarray(x)
        s0, s1 = x.strides
    if cols == 1:
        s1 = item
    if rows == 1:
        s0 = max(cols, 1) * item
    if s1 == item and s0 >= cols * item and s0 % item == 0 and s0 // item <= _I32:
        return _NO_TRANS, s0 // item, x
    if rows > 1 and s0 == item and s1 >= rows * item and s1 % item == 0 and s1 // item <= _I32:
        return _TRANS, s1 // item, x
    x = np.ascontiguousarray(x)
    return _NO_TRANS, max(cols, 1), x


def gemm(a, b) -> np.ndarray | None:
    """``a @ b`` for 2-D ``a`` (m, k) and ``b`` (k, n) of one dtype through the CBLAS library,
    as a new C-contiguous array; None where NumPy should compute it (no library, another
    dtype or array type, a small product, sizes past 32-bit BLAS integers)."""
    lib = _library if _library is not _UNSET else provider()
    if lib is None or type(a) is not _ndarray or type(b) is not _ndarray:
        return None
    if _threads is not None and _threads() != 1:  # Note [Two thread pools]
        return None
    dt = a.dtype
    fn = lib.fns.get(dt)
    if fn is None or b.dtype != dt or a.ndim != 2 or b.ndim != 2:
        return None
    m, k = a.shape
    n = b.shape[1]
    work = m * n * k
    if (b.shape[0] != k or max(m, n, k) > _I32 or work < MIN_WORK
            and (work < SKINNY_WORK or min(m, n, k) > SKINNY_DIM)):  # Note [Small products]
        return None
    ta, lda, a = _operand(a)
    tb, ldb, b = _operand(b)
    out = np.empty((m, n), dt)
    fn(_ROW_MAJOR, ta, tb, m, n, k, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, 0.0,
       out.ctypes.data, max(n, 1))
    return out
