"""float32 2-D convolutions through oneDNN, Intel's library of deep-learning primitives, called
by ctypes on its C API (``dnnl_*``).

Why: conv.py's im2col over BLAS copies KH*KW times the input into a column matrix, multiplies,
and transposes the product back to channels first; the backward does the same for the weight
gradient and scatters the column gradients back (col2im). On the mid-sized layers of a small
CNN those copies cost about as much as the GEMMs themselves. oneDNN's direct convolutions
(JIT-generated for the machine's vector ISA, run on channel-blocked layouts) read each operand
once; PyTorch's CPU convolutions run the same library (statically linked, as "mkldnn").
Forward + backward of one layer, one thread (perf/bench_conv.py, against the NumPy path and
torch in the same process): the digits CNN's 16->32 8x8 layer 0.50x the NumPy path's time
(0.98x torch's), 64->64 28x28 0.45x (0.84x), stride 2 32->64 0.91x (1.02x), depthwise 64
0.11x (0.87x); the digits CNN's training step (perf/bench_cnn.py) 0.76-0.81x (0.89-0.93x
torch's, from 1.11-1.22x).

The library comes from PyPI's ``onednn-cpu-gomp`` wheel (oneDNN 3.2, GNU OpenMP threads,
``libdnnl.so.3`` in ``<prefix>/lib``, no pip dependencies). PyPI's newer ``onednn`` wheel is
built with the SYCL runtime: its CPU engine needs a SYCL CPU device, which pip's Unified
Runtime wheels do not provide (no OpenCL adapter), so ``_load`` refuses a library whose CPU
runtime is SYCL, as one it cannot run. Without a usable library nothing changes: conv.py runs
its NumPy path, silently.

Entries (conv.py calls them on float32 compute arrays, after its own checks; None means "not
here, run the NumPy path"):

    forward(x, w, b, stride, pads, dilation, groups, OH, OW) -> y (N, O, OH, OW) | None
    backward(g, x, w, stride, pads, dilation, groups, need_x, need_w, need_b)
        -> (dx, dw, db) | None

Each call looks up a plan, keyed by every shape and parameter: the convolution primitives,
created once with the layouts oneDNN prefers ("any"), and the reorders between those and the
plain NCHW/OIHW arrays NumPy holds (Note [Plans]). Inputs that are not C-contiguous are copied
first.

``TRITONGRAD_ONEDNN`` chooses at the first convolution: ``auto`` (the default: oneDNN where
it is installed and usable, for the layer shapes where it wins: ``wins``), ``on`` (every
float32 convolution it can take, an error naming the wheel when it is missing), ``off`` (the
NumPy path always: the A/B switch). ``use(name)`` switches it for a block (tests, benchmarks).

Threads follow blas.py's policy for MKL (Note [Two thread pools] there): ``auto`` uses oneDNN
only while NumPy's OpenBLAS runs one thread (``OMP_NUM_THREADS=1``, ``tg.set_num_threads(1)``:
a training process per core, the benchmarks), and then on one thread; ``on`` uses it always,
its OpenMP team given as many threads as OpenBLAS runs now. Two pools that each spin after
their work take turns on the cores the other needs: the digits CNN's step with two threads on
two busy cores took 1.3-2x as long with oneDNN beside OpenBLAS as with OpenBLAS alone.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import importlib.metadata
import os
import sys
import threading

import numpy as np

__all__ = ["MIN_WORK", "OneDNNError", "backward", "forward", "provider", "use", "wins"]

# -- the C API: the enum values and the functions used (oneDNN 3.x, dnnl_types.h) ---------------

_V = ctypes.c_void_p
_Dims = ctypes.c_int64 * 12  # dnnl_dims_t
_F32 = 3  # dnnl_f32
_TAG_ANY = 1  # dnnl_format_tag_any
_CPU = 1  # dnnl_cpu
_IN_ORDER = 1  # dnnl_stream_in_order
_FORWARD_TRAINING, _FORWARD_INFERENCE = 64, 96
_DIRECT = 1  # dnnl_convolution_direct
_Q_IMPL = 8  # dnnl_query_impl_info_str
_Q_SRC, _Q_DIFF_SRC, _Q_WEIGHTS, _Q_DIFF_WEIGHTS, _Q_DST, _Q_DIFF_DST = range(129, 135)
_SRC, _DST, _WEIGHTS, _BIAS = 1, 17, 33, 41  # DNNL_ARG_*
_DIFF_SRC, _DIFF_DST, _DIFF_WEIGHTS, _DIFF_BIAS = 129, 145, 161, 169
_SYCL = 0x200  # dnnl_runtime_sycl
_ALIGN = 64


class _Arg(ctypes.Structure):  # dnnl_exec_arg_t
    _fields_ = [("arg", ctypes.c_int), ("memory", _V)]


class _Version(ctypes.Structure):  # dnnl_version_t
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint),
                ("gpu_runtime", ctypes.c_uint)]


_P = ctypes.POINTER(_V)
_SIGNATURES = {
    "dnnl_engine_create": [_P, ctypes.c_int, ctypes.c_size_t],
    "dnnl_stream_create": [_P, _V, ctypes.c_uint],
    "dnnl_stream_wait": [_V],
    "dnnl_memory_desc_create_with_strides": [_P, ctypes.c_int, _Dims, ctypes.c_int, _Dims],
    "dnnl_memory_desc_create_with_tag": [_P, ctypes.c_int, _Dims, ctypes.c_int, ctypes.c_int],
    "dnnl_memory_desc_destroy": [_V],
    "dnnl_convolution_forward_primitive_desc_create":
        [_P, _V, ctypes.c_int, ctypes.c_int, _V, _V, _V, _V, _Dims, _Dims, _Dims, _Dims, _V],
    "dnnl_convolution_backward_data_primitive_desc_create":
        [_P, _V, ctypes.c_int, _V, _V, _V, _Dims, _Dims, _Dims, _Dims, _V, _V],
    "dnnl_convolution_backward_weights_primitive_desc_create":
        [_P, _V, ctypes.c_int, _V, _V, _V, _V, _Dims, _Dims, _Dims, _Dims, _V, _V],
    "dnnl_reorder_primitive_desc_create": [_P, _V, _V, _V, _V, _V],
    "dnnl_primitive_desc_query": [_V, ctypes.c_int, ctypes.c_int, _V],
    "dnnl_primitive_desc_destroy": [_V],
    "dnnl_primitive_create": [_P, _V],
    "dnnl_primitive_destroy": [_V],
    "dnnl_primitive_execute": [_V, _V, ctypes.c_int, ctypes.POINTER(_Arg)],
    "dnnl_memory_create": [_P, _V, _V, _V],
    "dnnl_memory_set_data_handle": [_V, _V],
    "dnnl_memory_destroy": [_V],
}


class OneDNNError(RuntimeError):
    """A oneDNN call that returned an error status (only from building a plan: a shape
    oneDNN rejects makes the caller fall back to NumPy)."""


class _Library:
    """libdnnl's functions, a CPU engine and an in-order stream."""

    def __init__(self, path: str, lib):
        self.path = path
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = ctypes.c_int, argtypes
            setattr(self, name[5:], fn)
        for name, restype, argtypes in (
                ("dnnl_primitive_desc_query_md", _V, [_V, ctypes.c_int, ctypes.c_int]),
                ("dnnl_memory_desc_equal", ctypes.c_int, [_V, _V]),
                ("dnnl_memory_desc_get_size", ctypes.c_size_t, [_V])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name[5:], fn)
        lib.dnnl_version.restype = ctypes.POINTER(_Version)
        v = lib.dnnl_version().contents
        self.version = (v.major, v.minor, v.patch)
        if v.major != 3 or v.cpu_runtime == _SYCL:
            raise OneDNNError(f"oneDNN {v.major}.{v.minor}.{v.patch} at {path}: expected a 3.x "
                              f"library with a native CPU runtime (this one's is "
                              f"{'SYCL' if v.cpu_runtime == _SYCL else hex(v.cpu_runtime)}); "
                              f"install `onednn-cpu-gomp`")
        self.engine, self.stream = _V(), _V()
        self.check(self.engine_create(ctypes.byref(self.engine), _CPU, 0), "dnnl_engine_create")
        self.check(self.stream_create(ctypes.byref(self.stream), self.engine, _IN_ORDER),
                   "dnnl_stream_create")
        self.threads = _omp_threads_setter()
        from . import blas
        self.blas_threads = blas._numpy_threads()  # (None: NumPy runs another BLAS)

    @staticmethod
    def check(status: int, what: str) -> None:
        if status:
            raise OneDNNError(f"{what}: oneDNN status {status}")

    def __repr__(self) -> str:
        return f"<oneDNN {'.'.join(map(str, self.version))} {self.path}>"


def _omp_threads_setter():
    """``(n) -> None``: GNU OpenMP's ``omp_set_num_threads`` (the runtime libdnnl loaded), or
    None (another runtime)."""
    try:
        gomp = ctypes.CDLL("libgomp.so.1")
    except OSError:
        return None
    fn = gomp.omp_set_num_threads
    fn.restype, fn.argtypes = None, [ctypes.c_int]
    return fn


def _candidates() -> list[str]:
    """Paths where a libdnnl.so.3 may be: the pip distributions that ship it, then the
    interpreter prefix's lib/."""
    paths = []
    for dist in ("onednn-cpu-gomp", "onednn"):
        try:
            files = importlib.metadata.files(dist) or ()
        except importlib.metadata.PackageNotFoundError:
            continue
        for f in files:
            if f.name == "libdnnl.so.3":
                paths.append(os.path.abspath(f.locate()))
    paths.append(os.path.join(sys.prefix, "lib", "libdnnl.so.3"))
    return [p for i, p in enumerate(paths) if os.path.exists(p) and p not in paths[:i]]


def _load() -> _Library | None:
    """The first usable libdnnl, else None; ``_load.why`` says why none was."""
    _load.why = "no libdnnl.so.3 found (install it with `pip install onednn-cpu-gomp`)"
    for path in _candidates():
        try:
            return _Library(path, ctypes.CDLL(path))
        except (OSError, AttributeError, OneDNNError) as e:
            _load.why = f"{path}: {e}"
    return None


# -- the choice ------------------------------------------------------------------------------------

_lock = threading.Lock()
_UNSET = object()
_library = _UNSET  # the _Library, None for the NumPy path, _UNSET before the first call
_mode = "auto"
_CHOICES = ("auto", "on", "off")
_loaded = _UNSET  # _load()'s result, once


def _select(name: str) -> tuple:
    """(library or None, mode) for ``name``; raises before anything is changed."""
    global _loaded
    mode = name.strip().lower()
    if mode not in _CHOICES:
        raise ValueError(f"TRITONGRAD_ONEDNN: expected one of {', '.join(_CHOICES)}, "
                         f"got {name!r}")
    if mode == "off":
        return None, mode
    if _loaded is _UNSET:
        _loaded = _load()
    if _loaded is None and mode == "on":
        raise RuntimeError(f"TRITONGRAD_ONEDNN=on: oneDNN cannot be used: {_load.why}")
    return _loaded, mode


def provider():
    """The oneDNN library convolutions go to (``<oneDNN 3.2.0 ...>``), or None (NumPy)."""
    global _library, _mode
    lib = _library
    if lib is _UNSET:
        with _lock:
            if _library is _UNSET:
                _library, _mode = _select(os.environ.get("TRITONGRAD_ONEDNN", "auto"))
            lib = _library
    return lib


@contextlib.contextmanager
def use(name: str):
    """Runs the block with ``name`` (one of ``TRITONGRAD_ONEDNN``'s values); yields the
    library or None."""
    global _library, _mode
    saved = _library, _mode
    _library, _mode = _select(name)
    try:
        yield _library
    finally:
        _library, _mode = saved


MIN_WORK = 1 << 17  # multiply-adds of the forward: below it the NumPy path wins


def wins(x_shape, w_shape, out_hw) -> bool:
    """Whether ``auto`` sends this convolution to oneDNN: at least ``MIN_WORK`` multiply-adds.
    Measured on one thread against the NumPy path (im2col with the compiled loops, MKL's
    GEMMs): every layer of perf/bench_conv.py and perf/bench_cnn.py is 1.3-8x faster forward
    and 1.3-17x backward; a ctypes call and its reorders cost 20-30 us, so layers of ~5-70 k
    multiply-adds (x (2, 8, 8, 8), w (8, 8, 3, 3): 27 against 37 us forward) are faster in
    NumPy, and from ~300 k on (x (4, 8, 8, 8), w (16, 8, 3, 3): 53 against 43 us) in oneDNN."""
    n, o = x_shape[0], w_shape[0]
    return n * o * out_hw[0] * out_hw[1] * w_shape[1] * w_shape[2] * w_shape[3] >= MIN_WORK


# -- plans -----------------------------------------------------------------------------------------
# Note [Plans]: a plan is a list of primitives run in order over named buffers: the caller's
# plain arrays ("x", "w", "b", "g", "y", "dx", "dw", "db") and temporaries in the layouts the
# convolution primitives chose (oneDNN's blocked nChw16c and the like), with a reorder
# primitive wherever a chosen layout differs from the plain one; a temporary reordered once
# serves every primitive that reads it (the backward's two primitives share g's reorder when
# they chose one layout). The dnnl_memory objects are made once with no data; each call sets
# the plain buffers' data pointers. The temporaries live in one scratch arena shared by all
# plans (as large as the largest plan's; a fresh buffer per call cost page faults on every
# call), so plans run one at a time, under ``_run_lock`` (which also guards the memory
# objects, which are not thread-safe; oneDNN parallelizes inside a primitive).

_run_lock = threading.Lock()
_ARENA_MAX = 64 << 20  # bytes: a plan needing more takes a buffer of its own for each call
_scratch = {"array": None, "base": 0, "bytes": 0}


def _aligned(nbytes: int) -> tuple:
    """(buffer, its first ``_ALIGN``-aligned address) of at least ``nbytes``."""
    buf = np.empty(nbytes + _ALIGN, np.uint8)
    ptr = buf.ctypes.data
    return buf, ptr + (-ptr) % _ALIGN


def _arena(nbytes: int) -> tuple:
    """(buffer, aligned address) of at least ``nbytes`` for a plan's temporaries (under
    ``_run_lock``): the shared arena up to ``_ARENA_MAX``, else a buffer of their own (not kept:
    the arena would hold it for good)."""
    if nbytes > _ARENA_MAX:
        return _aligned(nbytes)
    if nbytes > _scratch["bytes"]:
        _scratch["array"], _scratch["base"] = _aligned(nbytes)
        _scratch["bytes"] = nbytes
    return _scratch["array"], _scratch["base"]


_PLANS: collections.OrderedDict = collections.OrderedDict()
_MAX_PLANS = 128


class _Plan:
    def __init__(self, lib: _Library):
        self.lib = lib
        self.mems: dict[str, _V] = {}  # buffer name -> dnnl_memory_t
        self.temp_offsets: dict[str, int] = {}  # temporary name -> its offset in the arena
        self.temp_bytes = 0
        self.base = None  # the arena address the temporaries point into
        self.steps: list = []  # (primitive, dnnl_exec_arg_t array, count)
        self._mds: list[_V] = []  # (destroyed with the plan)
        self._pds: list[_V] = []
        self._layouts: list = []  # (name of a plain buffer, temp name, its md)
        self.impl: list[str] = []

    def md(self, shape, strides=None) -> _V:
        """A float32 memory descriptor: plain with ``strides`` (elements), else "any"."""
        m = _V()
        n = len(shape)
        if strides is None:
            st = self.lib.memory_desc_create_with_tag(ctypes.byref(m), n, _Dims(*shape), _F32,
                                                      _TAG_ANY)
        else:
            st = self.lib.memory_desc_create_with_strides(ctypes.byref(m), n, _Dims(*shape),
                                                          _F32, _Dims(*strides))
        self.lib.check(st, "dnnl_memory_desc_create")
        self._mds.append(m)
        return m

    def memory(self, name: str, md) -> None:
        if name not in self.mems:
            m = _V()
            self.lib.check(self.lib.memory_create(ctypes.byref(m), md, self.lib.engine, None),
                           "dnnl_memory_create")
            self.mems[name] = m

    def temporary(self, name: str, md) -> None:
        self.memory(name, md)
        self.temp_offsets[name] = self.temp_bytes
        self.temp_bytes += -(-self.lib.memory_desc_get_size(md) // _ALIGN) * _ALIGN

    def pd(self, create, *args) -> _V:
        pd = _V()
        self.lib.check(create(ctypes.byref(pd), *args), create.__name__)
        self._pds.append(pd)
        return pd

    def step(self, pd, args: list) -> None:
        prim = _V()
        self.lib.check(self.lib.primitive_create(ctypes.byref(prim), pd), "dnnl_primitive_create")
        arr = (_Arg * len(args))(*(_Arg(a, self.mems[name]) for a, name in args))
        self.steps.append((prim, arr, len(args)))
        info = ctypes.c_char_p()
        if not self.lib.primitive_desc_query(pd, _Q_IMPL, 0, ctypes.byref(info)):
            self.impl.append(info.value.decode())

    def reorder(self, src: str, src_md, dst: str, dst_md) -> None:
        pd = self.pd(self.lib.reorder_primitive_desc_create, src_md, self.lib.engine, dst_md,
                     self.lib.engine, None)
        self.step(pd, [(_SRC, src), (_DST, dst)])

    def chosen(self, pd, query: int) -> _V:
        return self.lib.primitive_desc_query_md(pd, query, 0)

    def operand(self, name: str, plain, pd, query: int) -> str:
        """The buffer a primitive reads for plain buffer ``name``: itself where the primitive
        chose its plain layout, else a temporary filled by a reorder (made once per layout)."""
        want = self.chosen(pd, query)
        self.memory(name, plain)
        if self.lib.memory_desc_equal(want, plain):
            return name
        for src, temp, md in self._layouts:
            if src == name and self.lib.memory_desc_equal(want, md):
                return temp
        temp = f"{name}:{len(self._layouts)}"
        self._layouts.append((name, temp, want))
        self.temporary(temp, want)
        self.reorder(name, plain, temp, want)
        return temp

    def result(self, name: str, plain, pd, query: int) -> tuple[str, list]:
        """(buffer the primitive writes, the reorders to run after it) for plain output
        ``name``."""
        want = self.chosen(pd, query)
        self.memory(name, plain)
        if self.lib.memory_desc_equal(want, plain):
            return name, []
        temp = f"{name}:out"
        self.temporary(temp, want)
        return temp, [(temp, want, name, plain)]

    def run(self, arrays: dict) -> None:
        """Runs the steps over ``arrays`` (plain buffer name -> C-contiguous float32 array),
        the temporaries laid out in the shared scratch arena."""
        lib = self.lib
        with _run_lock:
            _buf, base = _arena(self.temp_bytes)  # (_buf: alive until the steps have run)
            if base != self.base:  # (the arena moved: point the temporaries into it again)
                for name, offset in self.temp_offsets.items():
                    lib.memory_set_data_handle(self.mems[name], base + offset)
                self.base = base
            for name, a in arrays.items():
                lib.memory_set_data_handle(self.mems[name], a.ctypes.data)
            for prim, arr, n in self.steps:
                lib.check(lib.primitive_execute(prim, lib.stream, n, arr),
                          "dnnl_primitive_execute")
            lib.stream_wait(lib.stream)

    def close(self) -> None:
        """Frees the plan's oneDNN objects (never raises: it runs on eviction)."""
        lib = self.lib
        for prim, _, _ in self.steps:
            lib.primitive_destroy(prim)
        for m in self.mems.values():
            lib.memory_destroy(m)
        for pd in self._pds:
            lib.primitive_desc_destroy(pd)
        for md in self._mds:
            lib.memory_desc_destroy(md)
        self.steps, self.mems, self._pds, self._mds = [], {}, [], []


def _plain(plan: _Plan, shape) -> _V:
    """The plain (C-contiguous) descriptor of ``shape``."""
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return plan.md(shape, strides[::-1])


def _weights_shape(w_shape, groups: int) -> tuple:
    """OIHW, or (G, O/G, C/G, KH, KW) for grouped weights (the same plain bytes)."""
    O, Cg, KH, KW = w_shape
    return tuple(w_shape) if groups == 1 else (groups, O // groups, Cg, KH, KW)


def _geometry(stride, pads, dilation):
    (pt, pb), (pl, pr) = pads
    return (_Dims(*stride), _Dims(dilation[0] - 1, dilation[1] - 1), _Dims(pt, pl),
            _Dims(pb, pr))


def _forward_pd(plan, x_shape, w_shape, y_shape, groups, geo, bias: bool, prop: int):
    any_ = plan.md
    return plan.pd(plan.lib.convolution_forward_primitive_desc_create, plan.lib.engine, prop,
                   _DIRECT, any_(x_shape), any_(_weights_shape(w_shape, groups)),
                   _plain(plan, (w_shape[0],)) if bias else None, any_(y_shape), *geo, None)


def _forward_plan(lib, x_shape, w_shape, y_shape, groups, geo, bias: bool) -> _Plan:
    plan = _Plan(lib)
    pd = _forward_pd(plan, x_shape, w_shape, y_shape, groups, geo, bias, _FORWARD_INFERENCE)
    src = plan.operand("x", _plain(plan, x_shape), pd, _Q_SRC)
    wts = plan.operand("w", _plain(plan, _weights_shape(w_shape, groups)), pd, _Q_WEIGHTS)
    dst, after = plan.result("y", _plain(plan, y_shape), pd, _Q_DST)
    args = [(_SRC, src), (_WEIGHTS, wts), (_DST, dst)]
    if bias:
        plan.memory("b", _plain(plan, (w_shape[0],)))
        args.append((_BIAS, "b"))
    plan.step(pd, args)
    for a in after:
        plan.reorder(*a)
    return plan


def _backward_plan(lib, x_shape, w_shape, y_shape, groups, geo, need_x, need_w,
                   need_b) -> _Plan:
    plan = _Plan(lib)
    hint = _forward_pd(plan, x_shape, w_shape, y_shape, groups, geo, need_b, _FORWARD_TRAINING)
    ws = _weights_shape(w_shape, groups)
    after = []
    if need_x:
        pd = plan.pd(lib.convolution_backward_data_primitive_desc_create, lib.engine, _DIRECT,
                     plan.md(x_shape), plan.md(ws), plan.md(y_shape), *geo, hint, None)
        gd = plan.operand("g", _plain(plan, y_shape), pd, _Q_DIFF_DST)
        wts = plan.operand("w", _plain(plan, ws), pd, _Q_WEIGHTS)
        dx, more = plan.result("dx", _plain(plan, x_shape), pd, _Q_DIFF_SRC)
        plan.step(pd, [(_DIFF_DST, gd), (_WEIGHTS, wts), (_DIFF_SRC, dx)])
        after += more
    if need_w:
        db = _plain(plan, (w_shape[0],)) if need_b else None
        pd = plan.pd(lib.convolution_backward_weights_primitive_desc_create, lib.engine,
                     _DIRECT, plan.md(x_shape), plan.md(ws), db, plan.md(y_shape), *geo, hint,
                     None)
        src = plan.operand("x", _plain(plan, x_shape), pd, _Q_SRC)
        gd = plan.operand("g", _plain(plan, y_shape), pd, _Q_DIFF_DST)
        dw, more = plan.result("dw", _plain(plan, ws), pd, _Q_DIFF_WEIGHTS)
        args = [(_SRC, src), (_DIFF_DST, gd), (_DIFF_WEIGHTS, dw)]
        if need_b:
            plan.memory("db", db)
            args.append((_DIFF_BIAS, "db"))
        plan.step(pd, args)
        after += more
    for a in after:
        plan.reorder(*a)
    return plan


_FAILED = object()  # a plan oneDNN could not build: that key runs NumPy


def _plan(key, build):
    plan = _PLANS.get(key)
    if plan is None:
        with _lock:
            plan = _PLANS.get(key)
            if plan is None:
                try:
                    plan = build()
                except OneDNNError:
                    plan = _FAILED
                _PLANS[key] = plan
                if len(_PLANS) > _MAX_PLANS:
                    old = _PLANS.pop(next(iter(_PLANS)))
                    if old is not _FAILED:
                        with _run_lock:  # (not while another thread runs it)
                            old.close()
    return None if plan is _FAILED else plan


# -- threads ---------------------------------------------------------------------------------------

_local = threading.local()  # .n: the OpenMP threads set on this thread (a per-thread setting)


def _blas_threads(lib: _Library) -> int:
    """The threads NumPy's OpenBLAS runs now (0: unknown, NumPy runs another BLAS)."""
    return lib.blas_threads() if lib.blas_threads is not None else 0


def _set_threads(lib: _Library, n: int) -> None:
    """Gives oneDNN's OpenMP team on this thread ``n`` threads (module docstring)."""
    n = max(n, 1)
    if lib.threads is not None and getattr(_local, "n", None) != n:
        lib.threads(n)
        _local.n = n


# -- the entries -----------------------------------------------------------------------------------

_f32 = np.dtype(np.float32)


def _library_for(x, w, out_hw):
    """The library for this convolution, its OpenMP threads set; None for the NumPy path."""
    lib = _library if _library is not _UNSET else provider()
    if lib is None or x.dtype != _f32 or w.dtype != _f32 or not x.size or not w.size:
        return None
    n = _blas_threads(lib)
    if _mode == "auto" and (n != 1 or not wins(x.shape, w.shape, out_hw)):
        return None  # (n != 1: Note [Two thread pools] in blas.py, module docstring)
    _set_threads(lib, n)
    return lib


def _c(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous and a.flags.aligned else np.ascontiguousarray(a)


def forward(x, w, b, stride, pads, dilation, groups: int, OH: int, OW: int):
    """conv2d of float32 ``x`` (N, C, H, W), ``w`` (O, C/g, KH, KW), ``b`` (O,) or None
    (checked by the caller; ``pads`` ((top, bottom), (left, right))): a new (N, O, OH, OW)
    array, or None where oneDNN is not used for it."""
    lib = _library_for(x, w, (OH, OW))
    if lib is None or (b is not None and b.dtype != _f32):
        return None
    y_shape = (x.shape[0], w.shape[0], OH, OW)
    geo = (tuple(stride), tuple(map(tuple, pads)), tuple(dilation))
    key = ("fwd", x.shape, w.shape, groups, geo, b is not None)
    plan = _plan(key, lambda: _forward_plan(lib, x.shape, w.shape, y_shape, groups,
                                             _geometry(*geo), b is not None))
    if plan is None:
        return None
    y = np.empty(y_shape, _f32)
    arrays = {"x": _c(x), "w": _c(w), "y": y}
    if b is not None:
        arrays["b"] = _c(b)
    plan.run(arrays)
    return y


def backward(g, x, w, stride, pads, dilation, groups: int, need_x: bool, need_w: bool,
             need_b: bool):
    """(dx, dw, db) of conv2d for float32 ``g`` (N, O, OH, OW), each None where not needed
    (db only with dw: oneDNN sums it in the weight gradient's pass), or None where oneDNN is
    not used for it."""
    lib = _library_for(x, w, g.shape[2:])
    if lib is None or g.dtype != _f32 or not g.size or not (need_x or need_w):
        return None
    need_b = need_b and need_w
    geo = (tuple(stride), tuple(map(tuple, pads)), tuple(dilation))
    key = ("bwd", x.shape, w.shape, groups, geo, need_x, need_w, need_b)
    plan = _plan(key, lambda: _backward_plan(lib, x.shape, w.shape, g.shape, groups,
                                              _geometry(*geo), need_x, need_w, need_b))
    if plan is None:
        return None
    arrays = {"g": _c(g), "w": _c(w)}
    dx = dw = db = None
    if need_x:
        arrays["dx"] = dx = np.empty(x.shape, _f32)
    if need_w:
        arrays["x"] = _c(x)
        arrays["dw"] = dw = np.empty(w.shape, _f32)
    if need_b:
        arrays["db"] = db = np.empty(w.shape[0], _f32)
    plan.run({k: v for k, v in arrays.items() if k in plan.mems})
    return dx, dw, db
