"""Interop (autograd/ops/interop.py, runtime/dlpack.py): DLPack for CPU tensors through NumPy
(shared memory, both directions); DLPack for CUDA tensors (the capsule's C structs, import
through wrappers and bare capsules, memory sharing, lifetimes and deleters, stream
synchronisation); __dlpack_device__, __cuda_array_interface__, and the documented errors.

Without a GPU "cuda" is the emulated device, whose pointers are host addresses: enough for the
struct contents and round trips between tritongrad tensors. The exchange with torch runs on a
real GPU only (``gpu``), in a subprocess, because other tests check that torch is never
imported.
"""

import ctypes
import gc
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from tritongrad.runtime import dlpack as dl
from tritongrad.runtime import driver

import tritongrad as tg


def test_numpy_consumes_cpu_tensor_without_copy():
    t = tg.arange(6, dtype=tg.float32).reshape(2, 3)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, [[0, 1, 2], [3, 4, 5]])
    t[0, 0] = 42.0
    assert a[0, 0] == 42.0  # the same memory
    nc = t.t()
    np.testing.assert_array_equal(np.from_dlpack(nc), t.numpy().T)


def test_from_dlpack_shares_memory_with_numpy():
    a = np.arange(5, dtype=np.int64)
    t = tg.from_dlpack(a)
    assert t.dtype is tg.int64 and t.tolist() == [0, 1, 2, 3, 4]
    t[1] = 10
    assert a[1] == 10
    b = np.ones((2, 3), dtype=np.float16)[:, ::2]
    u = tg.from_dlpack(b)
    assert u.dtype is tg.float16 and tuple(u.shape) == (2, 2) and u.stride() == (3, 2)
    assert tg.from_dlpack(t) is t


def test_round_trip_through_capsule():
    t = tg.tensor([[1.5, 2.5]], dtype=tg.float64)
    cap = t.__dlpack__()
    u = tg.from_dlpack(cap)
    assert u.tolist() == [[1.5, 2.5]]
    u.mul_(2)
    assert t.tolist() == [[3.0, 5.0]]
    assert tg.from_dlpack(tg.tensor([True, False])).tolist() == [True, False]


def test_from_dlpack_device_and_copy(device):
    a = np.arange(4.0)
    shared = tg.from_dlpack(a, copy=False)
    copied = tg.from_dlpack(a, copy=True)
    a[0] = 9.0
    assert shared[0].item() == 9.0 and copied[0].item() == 0.0
    same_place = tg.from_dlpack(a, device="cpu")
    a[1] = 8.0
    assert same_place[1].item() == 8.0  # device already right: no copy
    moved = tg.from_dlpack(a, device=device)
    assert moved.device.type == device
    np.testing.assert_array_equal(moved.cpu().numpy(), a)
    if device == "cuda":
        a[2] = 7.0
        assert moved[2].item() == 2.0  # moving to another device copies
        with pytest.raises(ValueError, match="copy=False"):
            tg.from_dlpack(a, device=device, copy=False)
        back = tg.from_dlpack(moved, device="cpu")
        np.testing.assert_array_equal(back.numpy(), moved.cpu().numpy())
    t = tg.ones(3, device=device)
    assert tg.from_dlpack(t) is t and tg.from_dlpack(t, copy=True) is not t


def test_dlpack_errors():
    with pytest.raises(RuntimeError, match="require gradient"):
        tg.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="bfloat16"):
        tg.ones(2, dtype=tg.bfloat16).__dlpack__()
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        tg.from_dlpack([1, 2, 3])
    assert not hasattr(tg.ones(2), "__cuda_array_interface__")


class _FakeRocmProducer:
    def __dlpack_device__(self):
        return (10, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("must not be consumed")


def test_unsupported_device_producer_is_refused_clearly():
    with pytest.raises(BufferError, match=r"from_dlpack: DLPack device type 10 \(ROCm\)"):
        tg.from_dlpack(_FakeRocmProducer())


def test_cuda_array_interface(device):
    if device == "cpu":
        pytest.skip("CUDA tensors only")
    t = tg.arange(12, dtype=tg.float32, device=device).reshape(3, 4)
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (3, 4)
    assert cai["strides"] is None and cai["data"] == (t.data_ptr(), False)
    assert cai["stream"] is not None and cai["stream"] != 0
    tt = t.t()
    assert tt.__cuda_array_interface__["strides"] == (4, 16)
    assert t.__dlpack_device__() == (2, t.device.index)
    with pytest.raises(TypeError, match="no bfloat16"):
        _ = t.to(tg.bfloat16).__cuda_array_interface__
    with pytest.raises(RuntimeError, match="requires grad"):
        _ = t.detach().requires_grad_(True).__cuda_array_interface__


# -- CUDA DLPack ----------------------------------------------------------------------------
CUDA = "cuda"
# NumPy writes our capsules (Note [NumPy writes the capsule]); before 2.1 only legacy ones
VERSIONED = np.lib.NumpyVersion(np.__version__) >= "2.1.0"
needs_versioned = pytest.mark.skipif(not VERSIONED, reason="NumPy < 2.1 writes no versioned "
                                                           "capsules")
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))


@pytest.fixture
def cuda():
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    gc.collect()  # earlier tests' garbage goes back before a test measures memory
    yield
    tg.cuda.synchronize()


def _struct(capsule):
    """The capsule's DLManagedTensor(Versioned), read in place (not consumed)."""
    name = dl.capsule_name(capsule)
    addr = _get_pointer(capsule, name.encode())
    cls = dl.DLManagedTensorVersioned if name == "dltensor_versioned" else dl.DLManagedTensor
    return cls.from_address(addr)


def _describe(capsule) -> dict:
    t = _struct(capsule).dl_tensor
    return {"device": (t.device.device_type, t.device.device_id), "ndim": t.ndim,
            "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes),
            "shape": tuple(t.shape[i] for i in range(t.ndim)),
            "strides": tuple(t.strides[i] for i in range(t.ndim)),
            "data": t.data or 0, "byte_offset": t.byte_offset}


class _Producer:
    """Another library's array over a tritongrad tensor: only the two protocol methods."""

    def __init__(self, t, legacy=False):
        self.t, self.calls = t, []
        if legacy:  # a pre-1.0 producer: no max_version keyword
            self.__dlpack__ = self._legacy_dlpack

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()

    def __dlpack__(self, stream=None, *, max_version=None, dl_device=None, copy=None):
        self.calls.append({"stream": stream, "max_version": max_version})
        return self.t.__dlpack__(stream=stream, max_version=max_version)

    def _legacy_dlpack(self, stream=None):
        self.calls.append({"stream": stream})
        return self.t.__dlpack__(stream=stream)


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# module-level: a capsule keeps a pointer to its name
_CAPSULE_NAMES = {False: b"dltensor", True: b"dltensor_versioned"}
_OTHER_NAME = b"something else"


class _CProducer:
    """A producer written against the C ABI: a struct over a tritongrad tensor's memory whose
    deleter counts its calls (the producer-side view of the ownership rules)."""

    def __init__(self, base, *, versioned=False, dtype=None, device=(2, 0), shape=None,
                 strides=None, byte_offset=0, version=(1, 0), flags=0):
        self.base = base  # keeps the memory alive for the test
        self.deleted = 0
        self._deleter = _Deleter(self._delete)  # alive as long as the producer
        shape = tuple(base.shape) if shape is None else shape
        strides = tuple(base.stride()) if strides is None else strides
        n = max(len(shape), 1)
        self._shape = (ctypes.c_int64 * n)(*shape)
        self._strides = (ctypes.c_int64 * n)(*strides)
        m = self.managed = dl.DLManagedTensorVersioned() if versioned else dl.DLManagedTensor()
        t = m.dl_tensor
        t.data = base.data_ptr()
        t.byte_offset = byte_offset
        t.device = dl.DLDevice(*device)
        t.ndim = len(shape)
        t.dtype = dl.DLDataType(*(dtype or (2, 32, 1)))
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        m.deleter = ctypes.cast(self._deleter, ctypes.c_void_p).value
        if versioned:
            m.version = dl.DLPackVersion(*version)
            m.flags = flags
        self.name = _CAPSULE_NAMES[versioned]

    def _delete(self, managed):
        assert managed == ctypes.addressof(self.managed)
        self.deleted += 1

    def capsule(self):
        # no destructor: an unconsumed capsule simply stays with this object
        return _new_capsule(ctypes.addressof(self.managed), self.name, None)


def test_cuda_capsule_describes_the_tensor(cuda):
    t = tg.arange(12, dtype=tg.float32, device=CUDA).reshape(3, 4)
    cap = t.__dlpack__()
    assert dl.capsule_name(cap) == "dltensor"
    d = _describe(cap)
    assert d["device"] == (2, t.device.index) and d["ndim"] == 2
    assert d["dtype"] == (2, 32, 1) and d["shape"] == (3, 4) and d["strides"] == (4, 1)
    assert d["data"] + d["byte_offset"] == t.data_ptr() and d["byte_offset"] == 0
    assert d["data"] % 256 == 0  # the allocator block: DLPack's alignment
    assert _struct(cap).deleter  # NumPy's (Note [NumPy writes the capsule])

    view = t[1:, 1::2]  # offset 5 elements into the same storage
    d = _describe(view.__dlpack__())
    assert d["shape"] == (2, 2) and d["strides"] == (4, 2)
    assert d["byte_offset"] == 5 * 4 and d["data"] + d["byte_offset"] == view.data_ptr()
    assert d["data"] == t.data_ptr()
    d = _describe(t.t().__dlpack__())
    assert d["shape"] == (4, 3) and d["strides"] == (1, 4)
    d = _describe(tg.tensor(3.5, device=CUDA).__dlpack__())
    assert d["ndim"] == 0 and d["shape"] == () and d["strides"] == ()
    d = _describe(tg.ones(2, 1, device=CUDA).expand(2, 3).__dlpack__())
    assert d["shape"] == (2, 3) and d["strides"] == (1, 0)


@pytest.mark.parametrize(("dtype", "code"), [
    (tg.float32, (2, 32, 1)), (tg.float16, (2, 16, 1)), (tg.bfloat16, (4, 16, 1)),
    (tg.float64, (2, 64, 1)), (tg.int64, (0, 64, 1)), (tg.int32, (0, 32, 1)),
    (tg.uint8, (1, 8, 1)), (tg.bool, (6, 8, 1)),
])
def test_cuda_dtypes_export_and_round_trip(cuda, dtype, code):
    values = [[1, 0, 3], [0, 5, 1]] if dtype is not tg.bool else [[True, False, True]]
    t = tg.tensor(values, dtype=dtype, device=CUDA)
    assert _describe(t.__dlpack__())["dtype"] == code
    u = tg.from_dlpack(_Producer(t))
    assert u.dtype is dtype and u.device == t.device and u.tolist() == t.tolist()
    assert u.data_ptr() == t.data_ptr()


@needs_versioned
def test_versioned_capsule_when_the_consumer_asks(cuda):
    t = tg.arange(4, dtype=tg.float32, device=CUDA)
    cap = t.__dlpack__(max_version=(1, 0))
    assert dl.capsule_name(cap) == "dltensor_versioned"
    m = _struct(cap)
    assert (m.version.major, m.version.minor) == (1, 0) and m.flags == 0
    assert m.dl_tensor.data == t.data_ptr() and m.dl_tensor.shape[0] == 4
    assert dl.capsule_name(t.__dlpack__(max_version=(1, 3))) == "dltensor_versioned"
    assert dl.capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    copied = t.__dlpack__(max_version=(1, 0), copy=True)
    m = _struct(copied)
    assert m.flags == dl.FLAG_IS_COPIED and m.dl_tensor.data != t.data_ptr()
    u = tg.from_dlpack(copied)
    t.fill_(9.0)
    assert u.tolist() == [0.0, 1.0, 2.0, 3.0]  # a copy: not affected by writes to t
    same = t.__dlpack__(dl_device=(2, t.device.index), copy=False)
    assert _describe(same)["data"] == t.data_ptr()


def test_round_trip_through_a_wrapper_shares_memory(cuda):
    t = tg.arange(6, dtype=tg.float32, device=CUDA).reshape(2, 3)
    p = _Producer(t)
    u = tg.from_dlpack(p)
    assert u is not t and u.is_cuda and tuple(u.shape) == (2, 3) and u.stride() == (3, 1)
    assert u.data_ptr() == t.data_ptr()
    assert p.calls == [{"stream": 1, "max_version": (1, 0)}]  # 1: the legacy default stream
    u[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    t.mul_(2)
    assert u.tolist() == [[84.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert tg.from_dlpack(t) is t

    view = t.t()[1:]  # non-contiguous, offset into the storage
    v = tg.from_dlpack(_Producer(view))
    assert v.stride() == view.stride() and v.data_ptr() == view.data_ptr()
    assert v.tolist() == view.tolist()
    w = tg.from_dlpack(_Producer(v))  # re-export of imported (foreign) memory
    w.zero_()
    assert t.tolist() == [[84.0, 0.0, 0.0], [6.0, 0.0, 0.0]]
    assert (v + 1).tolist() == [[1.0, 1.0], [1.0, 1.0]]  # kernels read foreign memory


def test_import_passes_our_current_stream_and_falls_back_for_legacy_producers(cuda):
    t = tg.ones(3, device=CUDA)
    s = tg.cuda.Stream()
    p = _Producer(t)
    with tg.cuda.stream(s):
        tg.from_dlpack(p)
    assert p.calls == [{"stream": s.cuda_stream, "max_version": (1, 0)}]
    old = _Producer(t, legacy=True)
    u = tg.from_dlpack(old)
    assert old.calls == [{"stream": 1}] and u.data_ptr() == t.data_ptr()


def test_bare_cuda_capsule_is_consumed_once(cuda):
    t = tg.arange(3, dtype=tg.int64, device=CUDA)
    cap = t.__dlpack__()
    u = tg.from_dlpack(cap)  # the struct's DLDevice says CUDA
    assert u.is_cuda and u.tolist() == [0, 1, 2] and u.data_ptr() == t.data_ptr()
    assert dl.capsule_name(cap) == "used_dltensor"
    with pytest.raises(BufferError, match="from_dlpack: the DLPack capsule was already consumed"):
        tg.from_dlpack(cap)
    vcap = t.__dlpack__(max_version=(1, 0))
    tg.from_dlpack(vcap)
    assert dl.capsule_name(vcap) == ("used_dltensor_versioned" if VERSIONED
                                     else "used_dltensor")


def test_imported_memory_outlives_the_source_and_is_released_once(cuda):
    before = tg.cuda.memory_allocated()
    t = tg.arange(1000, dtype=tg.float32, device=CUDA)
    held = tg.cuda.memory_allocated()
    assert held > before
    u = tg.from_dlpack(_Producer(t))
    part = u[10:20]
    del t, u
    gc.collect()
    assert tg.cuda.memory_allocated() == held  # the capsule's deleter was not called yet
    assert part.tolist() == [float(i) for i in range(10, 20)]
    del part
    gc.collect()
    assert tg.cuda.memory_allocated() == before  # ... and now it was


def test_unconsumed_capsule_releases_the_storage(cuda):
    before = tg.cuda.memory_allocated()
    t = tg.ones(1000, device=CUDA)
    caps = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0))]
    del t
    gc.collect()
    assert tg.cuda.memory_allocated() > before  # the capsules keep the storage
    del caps
    assert tg.cuda.memory_allocated() == before  # their destructors ran the deleter


def _pair(a, b):
    return a, b


def test_capsules_and_tensors_dying_while_an_exception_propagates(cuda):
    # Regression: with a deleter or capsule destructor written in Python, the pending exception
    # was lost (SystemError) or the interpreter crashed.
    before = tg.cuda.memory_allocated()
    t = tg.ones(1000, device=CUDA)
    with pytest.raises(ZeroDivisionError):
        _pair(t.__dlpack__(), 1 / 0)  # the unconsumed capsule dies during the unwinding
    with pytest.raises(ZeroDivisionError):
        _pair(t.__dlpack__(max_version=(1, 0)), 1 / 0)
    with pytest.raises((RuntimeError, BufferError), match="[Dd]evice"):
        np.from_dlpack(t)  # NumPy refuses CUDA memory and drops our capsule
    with pytest.raises(RuntimeError, match="shape"):
        tg.from_dlpack(_Producer(t)).view(7, 7)  # the imported temporary dies in the raise
    del t
    gc.collect()
    assert tg.cuda.memory_allocated() == before


def test_producer_deleter_runs_exactly_once(cuda):
    base = tg.arange(8, dtype=tg.float32, device=CUDA)
    for versioned in (False, True):
        prod = _CProducer(base, versioned=versioned)
        cap = prod.capsule()
        u = tg.from_dlpack(cap)
        assert dl.capsule_name(cap) == ("used_dltensor_versioned" if versioned
                                        else "used_dltensor")
        assert prod.deleted == 0
        view = u[2:]
        u.add_(1)
        assert base[0].item() == (1.0 if not versioned else 2.0)
        del u, cap
        gc.collect()
        assert prod.deleted == 0  # the view still holds the memory
        del view
        gc.collect()
        assert prod.deleted == 1
        gc.collect()
        assert prod.deleted == 1


def test_struct_fields_are_honoured_on_import(cuda):
    base = tg.arange(12, dtype=tg.float32, device=CUDA)
    # byte_offset 8 (two floats in), strides (1, 3): a transposed 3x3 window
    prod = _CProducer(base, shape=(3, 3), strides=(1, 3), byte_offset=8)
    u = tg.from_dlpack(prod.capsule())
    assert u.tolist() == base.cpu().numpy()[2:11].reshape(3, 3).T.tolist()
    assert u.data_ptr() == base.data_ptr() + 8
    prod = _CProducer(base, shape=(2, 6), strides=(0, 0))
    prod.managed.dl_tensor.strides = None  # NULL strides: row-major
    assert tg.from_dlpack(prod.capsule()).stride() == (6, 1)
    # a read-only versioned export still imports (tensors have no read-only mode)
    prod = _CProducer(base, versioned=True, flags=dl.FLAG_READ_ONLY)
    assert tg.from_dlpack(prod.capsule()).tolist() == base.tolist()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"dtype": (2, 32, 4)}, r"from_dlpack: vector types are not supported \(dtype with lanes=4"),
    ({"dtype": (3, 64, 1)}, r"from_dlpack: DLPack dtype opaque handle \(code 3\) with 64 bits"),
    ({"dtype": (1, 16, 1)}, r"from_dlpack: DLPack dtype uint \(code 1\) with 16 bits has no"),
    ({"device": (10, 0)}, r"from_dlpack: DLPack device type 10 \(ROCm\) is not supported"),
    ({"device": (2, 7)}, r"from_dlpack: the memory is on cuda:7, but \d+ CUDA device"),
    ({"strides": (-1,), "shape": (3,)}, r"from_dlpack: negative strides \(-1,\)"),
    ({"versioned": True, "version": (2, 0)}, r"from_dlpack: DLPack ABI version 2\.0 is not"),
])
def test_import_errors_leave_the_capsule_unconsumed(cuda, kwargs, match):
    prod = _CProducer(tg.zeros(4, device=CUDA), **kwargs)
    cap = prod.capsule()
    with pytest.raises(BufferError, match=match):
        tg.from_dlpack(cap)
    assert dl.capsule_name(cap) == prod.name.decode()  # still the producer's
    assert prod.deleted == 0


def test_cuda_export_errors(cuda):
    t = tg.ones(2, device=CUDA)
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient"):
        t.detach().requires_grad_(True).__dlpack__()
    with pytest.raises(TypeError, match="__dlpack__: stream must be an int or None, got str"):
        t.__dlpack__(stream="0")
    with pytest.raises(BufferError, match=r"__dlpack__: a tensor on cuda:0 can only be exported "
                                          r"to DLPack device \(2, 0\), not \(1, 0\)"):
        t.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="not a DLPack capsule"):
        tg.from_dlpack(_new_capsule(1234, _OTHER_NAME, None))


def test_export_makes_the_consumer_stream_wait_for_ours(cuda, monkeypatch):
    drv = driver.get_driver()
    waits = []
    real_wait = drv.stream_wait_event

    def spy(dev, stream, event):
        waits.append(stream)
        real_wait(dev, stream, event)

    monkeypatch.setattr(drv, "stream_wait_event", spy)
    t = tg.ones(4, device=CUDA)
    t.__dlpack__()  # None: the legacy default stream, our current one
    t.__dlpack__(stream=1)
    assert waits == []
    s = tg.cuda.Stream()
    t.__dlpack__(stream=s.cuda_stream)
    assert waits == [s.cuda_stream]
    with tg.cuda.stream(s):
        t.__dlpack__(stream=1)  # the consumer works on the legacy default stream
        assert waits == [s.cuda_stream, 0]
        t.__dlpack__(stream=s.cuda_stream)  # the same stream: nothing to order
        t.__dlpack__(stream=-1)  # the consumer asked for no synchronisation
        assert len(waits) == 2
        tg.from_dlpack(_Producer(t))  # a round trip passes our stream: nothing to order
        assert len(waits) == 2


@pytest.mark.gpu
def test_export_orders_the_consumer_after_slow_work_on_a_real_gpu(cuda):
    # Slow work on s1 (a chain of 1 GiB memsets, as in tests/runtime/test_gpu_ordering.py),
    # then a flag written on s1; exported to a consumer on s2, which must see the flag.
    drv = driver.get_driver()
    big = tg.empty(1 << 30, dtype=tg.uint8, device=CUDA)
    flag = tg.zeros(4096, dtype=tg.uint8, device=CUDA)
    tg.cuda.synchronize()
    s1, s2 = tg.cuda.Stream(), tg.cuda.Stream()
    for i in range(100):
        drv.memset_d8(0, big.data_ptr(), i & 0xFF, 1 << 30, s1.cuda_stream)
    drv.memset_d8(0, flag.data_ptr(), 7, 4096, s1.cuda_stream)
    with tg.cuda.stream(s1):
        cap = flag.__dlpack__(stream=s2.cuda_stream)  # s2 now waits for s1's work so far
    assert not s1.query(), "the chain ended before the export: make it longer"
    seen = tg.from_dlpack(cap)
    with tg.cuda.stream(s2):
        values = seen.cpu().tolist()  # copied on s2, then s2 synchronised
    assert set(values) == {7}


_TORCH_EXCHANGE = """
import gc
import torch
import tritongrad as tg

if not torch.cuda.is_available():
    print("skip: torch has no CUDA")
    raise SystemExit(0)

# tritongrad -> torch
t = tg.arange(6, dtype=tg.float32, device="cuda").reshape(2, 3)
x = torch.from_dlpack(t)
assert x.is_cuda and tuple(x.shape) == (2, 3) and x.dtype == torch.float32
assert x.data_ptr() == t.data_ptr(), (x.data_ptr(), t.data_ptr())
assert x.cpu().tolist() == t.tolist()
x[0, 0] = 42.0
torch.cuda.synchronize()
assert t[0, 0].item() == 42.0
view = t.t()[1:]
xv = torch.from_dlpack(view)
assert xv.stride() == view.stride() and xv.data_ptr() == view.data_ptr()
assert xv.cpu().tolist() == view.tolist()
for dt, tdt in ((tg.bfloat16, torch.bfloat16), (tg.float16, torch.float16),
                (tg.int64, torch.int64), (tg.bool, torch.bool)):
    a = tg.tensor([1, 0, 1], dtype=dt, device="cuda")
    b = torch.from_dlpack(a)
    assert b.dtype == tdt and b.cpu().tolist() == a.tolist(), (dt, b)
s = tg.cuda.Stream()
with tg.cuda.stream(s):
    y = t * 2  # queued on s (non-blocking); torch reads on its own current stream,
    z = torch.from_dlpack(y)  # which the export made wait for s
assert z.cpu().tolist() == [[84.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
del t, x, xv, view, y
# torch -> tritongrad
w = torch.arange(8, dtype=torch.float16, device="cuda").reshape(2, 4)[:, 1::2]
u = tg.from_dlpack(w)
assert u.dtype is tg.float16 and tuple(u.shape) == (2, 2) and u.stride() == (4, 2)
assert u.data_ptr() == w.data_ptr() and u.tolist() == w.cpu().tolist()
u.mul_(2)
tg.cuda.synchronize()
assert w.cpu().tolist() == [[2.0, 6.0], [10.0, 14.0]]
bf = tg.from_dlpack(torch.ones(3, dtype=torch.bfloat16, device="cuda"))
assert bf.dtype is tg.bfloat16 and bf.tolist() == [1.0, 1.0, 1.0]
del w  # torch's reference goes; the tritongrad tensor keeps the memory
torch.cuda.empty_cache()
assert u.tolist() == [[2.0, 6.0], [10.0, 14.0]]
before = torch.cuda.memory_allocated()
del u, bf
gc.collect()
tg.cuda.synchronize()
after = torch.cuda.memory_allocated()
assert after < before, (before, after)  # the deleter gave torch its memory back
print("ok")
"""


@pytest.mark.gpu
def test_exchange_with_torch_both_ways():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (it is only a test peer)")
    # a subprocess: the rest of the suite checks that torch is never imported
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_TORCH_EXCHANGE)],
                       env=dict(os.environ), capture_output=True, text=True, timeout=300,
                       check=False)
    if r.returncode == 0 and r.stdout.startswith("skip:"):
        pytest.skip(r.stdout.strip())
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
