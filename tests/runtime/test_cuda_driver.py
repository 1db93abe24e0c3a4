"""The driver layer: error messages, the emulated driver's checks, laziness, unavailability,
and (on machines without libcuda) that every call of the real driver passes arguments
cuda-python accepts."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import threading

import pytest
from tritongrad.runtime import driver
from tritongrad.runtime.driver import CudaDriver, CudaError, EmulatedDriver


def _run(code: str, **env_changes) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    # From a file, not ``-c``: a compiled @triton.jit reads its function's source (the
    # interpreter does not, so only the first real GPU run showed it, 2026-11-29)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "snippet.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(code))
        return subprocess.run([sys.executable, script], env=env, check=False,
                              capture_output=True, text=True, timeout=120)


# -- the emulated driver ------------------------------------------------------------------
def test_emulated_errors_read_like_the_driver_s():
    d = EmulatedDriver(total_memory=1 << 20)
    with pytest.raises(CudaError) as info:
        d.mem_free(0, 0x1234)
    assert str(info.value).startswith("CUDA_ERROR_INVALID_VALUE: invalid argument (in cuMemFree")
    assert info.value.code == "CUDA_ERROR_INVALID_VALUE"
    with pytest.raises(CudaError, match=r"^CUDA_ERROR_INVALID_DEVICE: invalid device ordinal"):
        d.mem_alloc(1, 512)
    with pytest.raises(CudaError, match=r"^CUDA_ERROR_INVALID_HANDLE: .*cuStreamSynchronize"):
        d.stream_synchronize(0, 0xBAD)


def test_emulated_memory_is_host_memory_with_bounds():
    import ctypes

    d = EmulatedDriver(total_memory=1 << 20)
    p = d.mem_alloc(0, 1000)
    assert p % 256 == 0
    d.memset_d8(0, p, 0xAB, 1000, 0)
    assert ctypes.string_at(p + 990, 10) == b"\xab" * 10
    assert d.mem_get_info(0) == ((1 << 20) - 1000, 1 << 20)
    with pytest.raises(CudaError, match="not inside a device allocation"):
        d.memcpy_dtod(0, p + 8, p, 1000, 0)  # runs past the end
    assert d.mem_alloc(0, 1 << 20) is None  # out of memory is an answer, not an error
    d.mem_free(0, p)
    assert d.mem_get_info(0)[0] == 1 << 20


def test_emulated_events_and_streams():
    d = EmulatedDriver()
    s = d.stream_create(0, -1)
    a, b = d.event_create(0, timing=True), d.event_create(0, timing=True)
    plain = d.event_create(0)
    d.event_record(0, a, s)
    d.event_record(0, b, s)
    d.event_record(0, plain, 0)
    assert d.event_query(0, b) and d.stream_query(0, s)
    assert d.event_elapsed_time(0, a, b) >= 0
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_HANDLE"):
        d.event_elapsed_time(0, a, plain)
    d.stream_wait_event(0, s, plain)
    for e in (a, b, plain):
        d.event_destroy(0, e)
    with pytest.raises(CudaError):
        d.event_query(0, a)
    d.stream_destroy(0, s)
    with pytest.raises(CudaError):
        d.stream_query(0, s)


# -- the emulated driver's environment ----------------------------------------------------
@pytest.mark.parametrize("value, nbytes", [
    ("1048576", 1 << 20), ("4096B", 4096), (" 512MiB ", 512 << 20), ("1GiB", 1 << 30),
    ("1.5GiB", 3 << 29), ("2 gb", 2 * 10**9), ("64kib", 64 << 10), ("3MB", 3 * 10**6),
    ("1TiB", 1 << 40), ("0.3KiB", 307), ("", 16 << 30), ("  ", 16 << 30),
])
def test_emulated_memory_from_the_environment(monkeypatch, value, nbytes):
    monkeypatch.setenv("TRITONGRAD_EMULATE_CUDA_MEMORY", value)
    d = EmulatedDriver()
    assert d.total_memory(0) == nbytes and d.mem_get_info(0) == (nbytes, nbytes)


@pytest.mark.parametrize("value, why", [
    ("-5", "is not a positive size"), ("0", "is not a positive size"),
    ("0GiB", "is not a positive size"), ("0.1B", "is not a size"), ("1.5", "is not a size"),
    ("1G", "is not a size"), ("1e9", "is not a size"), ("lots", "is not a size"),
    ("1 GiB 2", "is not a size"), ("nan", "is not a size"), ("-1GiB", "is not a positive size"),
])
def test_emulated_memory_refuses_what_is_not_a_size(monkeypatch, value, why):
    monkeypatch.setenv("TRITONGRAD_EMULATE_CUDA_MEMORY", value)
    with pytest.raises(ValueError) as info:
        EmulatedDriver()
    msg = str(info.value)
    assert msg.startswith(f"TRITONGRAD_EMULATE_CUDA_MEMORY={value!r} {why}"), msg
    assert "'512MiB'" in msg and "KiB, MiB, GiB, TiB" in msg and "KB, MB, GB, TB" in msg


@pytest.mark.parametrize("bad", [0, -1, 1.5, "1GiB", True])
def test_emulated_memory_argument_is_checked(bad):
    with pytest.raises(ValueError, match="total_memory must be a positive number of bytes"):
        EmulatedDriver(total_memory=bad)


@pytest.mark.skipif(driver.is_available() and not driver.is_emulated(),
                    reason="a real GPU is present: the emulated device is not selected")
def test_a_bad_emulated_memory_size_fails_the_first_cuda_call():
    r = _run("""
        import tritongrad as tg
        try:
            tg.zeros(3, device="cuda")
        except ValueError as e:
            print(e)
    """, TRITONGRAD_EMULATE_CUDA="1", TRITONGRAD_EMULATE_CUDA_MEMORY="1 gigabyte")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("TRITONGRAD_EMULATE_CUDA_MEMORY='1 gigabyte' is not a size"), \
        r.stdout


def test_the_emulation_switch(monkeypatch, recwarn):
    for value, on in (("1", True), ("0", False), ("", False)):
        monkeypatch.setenv("TRITONGRAD_EMULATE_CUDA", value)
        assert driver._emulation_requested() is on
    monkeypatch.delenv("TRITONGRAD_EMULATE_CUDA")
    assert driver._emulation_requested() is False
    assert not recwarn.list  # the documented values are quiet
    for value in ("true", "yes", " 1", "2"):  # exactly "1" enables: others are ignored, loudly
        monkeypatch.setenv("TRITONGRAD_EMULATE_CUDA", value)
        with pytest.warns(RuntimeWarning, match=rf"TRITONGRAD_EMULATE_CUDA={value!r} is ignored: "
                                                r"only '1' enables"):
            assert driver._emulation_requested() is False


# -- the real driver, without a GPU ------------------------------------------------------
def _libcuda_missing() -> bool:
    try:
        from cuda.bindings import driver as cu

        cu.cuInit(0)
        return False
    except Exception as e:  # noqa: BLE001 - whatever cuda-python raises
        return type(e).__name__ == "DynamicLibNotFoundError"


def _offline_real_driver():
    """A CudaDriver whose contexts look made, so each method reaches its main driver call."""
    from cuda.bindings import driver as cu

    d = object.__new__(CudaDriver)
    d.cu = cu
    d._SUCCESS = cu.CUresult.CUDA_SUCCESS
    d._NOT_READY = cu.CUresult.CUDA_ERROR_NOT_READY
    d._OOM = cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    d._lock = threading.Lock()
    d._tls = threading.local()
    d._tls.dev = 0
    d._devices = {0: cu.CUdevice(0), 1: cu.CUdevice(1)}
    d._contexts = {0: cu.CUcontext(0), 1: cu.CUcontext(0)}
    d._count = None
    d.capturing = 0
    return d


_REAL_CALLS = [
    ("device_count", ()), ("name", (0,)), ("capability", (0,)), ("total_memory", (0,)),
    ("mem_get_info", (0,)), ("ctx_synchronize", (0,)), ("mem_alloc", (0, 512)),
    ("mem_free", (0, 0x7000000)), ("memcpy_htod", (0, 0x7000000, 0x1000, 16, 0)),
    ("memcpy_dtoh", (0, 0x1000, 0x7000000, 16, 0x55)), ("memcpy_dtod", (0, 1 << 40, 2, 16, 0)),
    ("memcpy_peer", (1, 0x7000000, 0, 0x8000000, 16, 0)), ("memset_d8", (0, 0x7000000, 255, 16, 0)),
    ("stream_create", (0, -1)), ("stream_destroy", (0, 0x55)), ("stream_query", (0, 0)),
    ("stream_synchronize", (0, 0x55)), ("stream_wait_event", (0, 0x55, 0x66)),
    ("stream_priority_range", (0,)), ("event_create", (0, True, True, False)),
    ("event_create", (0, False, False, True)), ("event_record", (0, 0x66, 0)),
    ("event_query", (0, 0x66)), ("event_synchronize", (0, 0x66)),
    ("event_elapsed_time", (0, 0x66, 0x67)), ("event_destroy", (0, 0x66)),
    ("profiler_start", (0,)), ("profiler_stop", (0,)),
    # CUDA graphs (runtime/graphs.py)
    ("stream_begin_capture", (0, 0x55, "global")), ("stream_end_capture", (0, 0x55)),
    ("stream_is_capturing", (0, 0x55)), ("graph_instantiate", (0, 0x77)),
    ("graph_launch", (0, 0x78, 0x55)), ("graph_exec_destroy", (0, 0x78)),
    ("graph_destroy", (0, 0x77)), ("graph_node_count", (0, 0x77)),
]


@pytest.mark.skipif(not _libcuda_missing(), reason="libcuda is present: the GPU tests cover it")
@pytest.mark.parametrize("method, args", _REAL_CALLS, ids=[c[0] for c in _REAL_CALLS])
def test_real_driver_arguments_are_accepted_by_cuda_python(method, args):
    """cuda-python converts every argument before it loads libcuda: here, with no libcuda,
    a call that gets as far as loading it raised DynamicLibNotFoundError, not TypeError."""
    d = _offline_real_driver()
    with pytest.raises(Exception) as info:
        getattr(d, method)(*args)
    assert type(info.value).__name__ == "DynamicLibNotFoundError", repr(info.value)


@pytest.mark.skipif(not _libcuda_missing(), reason="libcuda is present")
def test_real_driver_checks_results():
    from cuda.bindings import driver as cu

    d = _offline_real_driver()
    assert d._check((cu.CUresult.CUDA_SUCCESS, 7), "cuX") == 7
    assert d._check((cu.CUresult.CUDA_SUCCESS,), "cuX") is None
    assert d._check((cu.CUresult.CUDA_SUCCESS, 1, 2), "cuX") == (1, 2)
    with pytest.raises(CudaError) as info:
        d._check((cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "cuMemAlloc")
    assert str(info.value) == "CUDA_ERROR_OUT_OF_MEMORY: out of memory (in cuMemAlloc)"
    assert info.value.code == "CUDA_ERROR_OUT_OF_MEMORY"
    assert d._ready((cu.CUresult.CUDA_ERROR_NOT_READY,), "cuStreamQuery") is False
    assert d._ready((cu.CUresult.CUDA_SUCCESS,), "cuStreamQuery") is True
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_HANDLE"):
        d._ready((cu.CUresult.CUDA_ERROR_INVALID_HANDLE,), "cuEventQuery")


# -- selection, laziness, unavailability ---------------------------------------------------
def test_importing_touches_no_driver():
    r = _run("""
        import sys
        import tritongrad.runtime, tritongrad.cuda
        assert "cuda.bindings" not in sys.modules, "driver imported at import time"
        assert "triton" not in sys.modules, "triton imported at import time"
        print("ok")
    """)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


@pytest.mark.skipif(driver.is_available() and not driver.is_emulated(),
                    reason="a real GPU is present")
def test_unavailable_cuda_says_so():
    r = _run("""
        import tritongrad.cuda as c
        from tritongrad.runtime import memory, dtype, device
        assert c.is_available() is False and c.device_count() == 0 and not c.is_emulated()
        for f in (c.current_device, c.Stream, c.memory_allocated, c.synchronize,
                  lambda: memory.empty((3,), dtype.float32, device.device("cuda"))):
            try:
                f()
            except RuntimeError as e:
                msg = str(e)
                assert "no CUDA GPU/driver was found" in msg, msg
                assert "tg.cuda.is_available() is False" in msg, msg
            else:
                raise AssertionError(f"{f} did not raise")
        print("ok")
    """, TRITONGRAD_EMULATE_CUDA=None)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_emulation_selected_only_without_a_gpu(cuda):
    assert driver.is_emulated() == (driver.get_driver().name(0) == "tritongrad emulated device")
    if os.environ.get("TRITONGRAD_EMULATE_CUDA") != "1":
        assert not driver.is_emulated()


def test_no_torch_anywhere(cuda):
    r = _run("""
        import sys, traceback

        class Tracer:  # records tritongrad's attempts to import torch
            stacks = []
            def find_spec(self, name, path=None, target=None):
                # Triton 3.6's native argument specializer tries `import torch` itself at a
                # launch through Triton's dispatch (and succeeds where torch is installed, as
                # on the GPU machines): only a tritongrad frame on the stack counts
                f = sys._getframe(1)
                ours = False
                while f is not None:
                    ours = ours or f.f_globals.get("__name__", "").startswith("tritongrad")
                    f = f.f_back
                if name == "torch" and ours:
                    Tracer.stacks.append("".join(traceback.format_stack(limit=12)))
                return None
        sys.meta_path.insert(0, Tracer())
        import numpy as np
        import triton, triton.language as tl
        import tritongrad.cuda as c
        from tritongrad.runtime import memory, ensure_triton_driver
        from tritongrad.runtime.device import device

        @triton.jit
        def twice(x, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

        a = memory.to_device(np.arange(100, dtype=np.float32), device("cuda", 0))
        ensure_triton_driver()
        with c.stream(c.Stream()):
            twice[(4,)](a, 100, BLOCK=32)
            out = memory.to_host(a)
        assert (out == 2 * np.arange(100)).all(), out
        assert not Tracer.stacks, "torch was imported: " + " ".join(Tracer.stacks)
        print("ok")
    """)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
