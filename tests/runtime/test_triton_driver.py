"""The Triton driver binding: Triton asks tritongrad for the current device and stream."""

from __future__ import annotations

import gc
import os
import sys

import numpy as np
import pytest
from tritongrad.runtime import dtype as dt
from tritongrad.runtime import memory, triton_driver
from tritongrad.runtime.device import device

CUDA = device("cuda", 0)


def test_ensure_is_a_no_op_without_a_real_launch_path(cuda):
    triton_driver.ensure_triton_driver()
    triton_driver.ensure_triton_driver()  # the fast path
    if cuda.is_emulated() or os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        assert triton_driver._installed is False
    else:
        import triton

        assert isinstance(triton.runtime.driver.active, triton_driver.make_driver_class())


def test_driver_answers_from_tritongrad(cuda, torch_untouched):
    cls = triton_driver.make_driver_class()
    drv = cls(utils=object())  # no compiled utils needed for these questions
    assert drv.get_current_device() == cuda.current_device()
    assert drv.get_current_stream(0) == cuda.current_stream().cuda_stream
    s = cuda.Stream()
    with cuda.stream(s):
        assert drv.get_current_stream(0) == s.cuda_stream
    assert drv.get_device_capability(0) == cuda.get_device_capability()
    major, minor = cuda.get_device_capability()
    target = drv.get_current_target()
    assert (target.backend, target.arch, target.warp_size) == ("cuda", major * 10 + minor, 32)
    di = drv.get_device_interface()
    assert di.Event is cuda.Event and di.synchronize is cuda.synchronize
    with pytest.raises(RuntimeError, match="never imports torch"):
        drv.get_active_torch_device()
    assert cls.is_active() == (not cuda.is_emulated())


def test_launch_target_is_the_drivers_two_answers(cuda):
    # Note [launch target] (kernels/triton/launcher.py): the cached launches ask
    # launch_target() instead of the driver's get_current_device/get_current_stream; the
    # answers must be the same, on a side stream and in another thread too
    import threading

    from tritongrad.kernels.triton import launcher

    drv = triton_driver.make_driver_class()(utils=object())

    def both():
        device = drv.get_current_device()
        return device, drv.get_current_stream(device)

    assert triton_driver.launch_target() == both() == (0, 0)
    assert launcher._target(drv) == both()
    s = cuda.Stream()
    with cuda.stream(s):
        assert triton_driver.launch_target() == both() == (0, s.cuda_stream)
        seen = []
        t = threading.Thread(target=lambda: seen.append((triton_driver.launch_target(),
                                                         both())))
        t.start()
        t.join()
        assert seen == [((0, 0), (0, 0))]  # another thread: its own default stream

    class Other:  # any other driver is asked as Triton asks it
        def get_current_device(self):
            return 0

        def get_current_stream(self, device):
            return 1234

    assert launcher._target(Other()) == (0, 1234)


def test_benchmark_cache_and_profile_scratch_are_torch_free(cuda, torch_untouched):
    drv = triton_driver.make_driver_class()(utils=object())
    cache = drv.get_empty_cache_for_benchmark()
    drv.clear_cache(cache)
    assert cache.data_ptr()
    s = cuda.Stream()
    scratch = drv.allocate_default_profile_scratch(1000, 128, s.cuda_stream)
    assert scratch.stream == s.cuda_stream and scratch.nbytes == 1000
    with cuda.stream(s):
        view = memory.empty((0,), dt.uint8, CUDA)
        view.set_(scratch, 0, (1000,), (1,))
        assert (memory.to_host(view) == 0).all()
    del cache, scratch, view
    gc.collect()


@pytest.mark.gpu
def test_kernels_launch_on_the_current_stream(cuda):
    """A Triton copy queued on stream s after a slow memset chain on s sees the chain's last
    write; launched on the default stream (which does not wait for the non-blocking s) it would
    read the old value."""
    import triton
    import triton.language as tl
    from tritongrad.runtime import driver

    @triton.jit
    def copy(src, dst, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + i, tl.load(src + i, mask=i < n), mask=i < n)

    d = driver.get_driver()
    big = memory.empty((1 << 30,), dt.uint8, CUDA)
    flag = memory.empty((4096,), dt.uint8, CUDA)
    out = memory.empty((4096,), dt.uint8, CUDA)
    d.memset_d8(0, flag.data_ptr(), 0, 4096, 0)
    d.memset_d8(0, out.data_ptr(), 0, 4096, 0)
    triton_driver.ensure_triton_driver()
    copy[(4096 // 256,)](out, out, 4096, BLOCK=256)  # compile now, not inside the race
    cuda.synchronize()
    s = cuda.Stream()
    with cuda.stream(s):
        for _ in range(100):
            d.memset_d8(0, big.data_ptr(), 1, 1 << 30, s.cuda_stream)
        d.memset_d8(0, flag.data_ptr(), 7, 4096, s.cuda_stream)
        copy[(4096 // 256,)](flag, out, 4096, BLOCK=256)
        assert not s.query(), "the memset chain finished before the check: make it longer"
    s.synchronize()
    assert (memory.to_host(out) == 7).all()


_DO_BENCH_WITHOUT_TORCH = """
import sys
sys.modules["torch"] = None  # any import of torch now raises ImportError
import numpy as np
import triton
import triton.language as tl
from tritongrad.runtime import memory, triton_driver
from tritongrad.runtime.device import device

@triton.jit
def inc(x, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + i, tl.load(x + i, mask=i < n) + 1, mask=i < n)

triton_driver.ensure_triton_driver()
x = memory.to_device(np.zeros(1 << 20, np.float32), device("cuda", 0))
ms = triton.testing.do_bench(lambda: inc[(1 << 12,)](x, 1 << 20, BLOCK=256), warmup=5, rep=20)
assert 0 < ms < 100, ms
assert (memory.to_host(x) > 0).all()
print("do_bench ms", ms)
"""


@pytest.mark.gpu
def test_do_bench_runs_without_torch(cuda, tmp_path):
    """triton.testing.do_bench through tritongrad's driver, in a fresh process where importing
    torch fails: the GPU machines have torch installed, and in this process other tests (the
    DLPack interop ones) may have imported it already."""
    import subprocess

    script = tmp_path / "do_bench_without_torch.py"  # a file: @triton.jit reads its source
    script.write_text(_DO_BENCH_WITHOUT_TORCH)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "do_bench ms" in run.stdout
