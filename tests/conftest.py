"""Test-session setup: decide, before anything imports Triton, where device="cuda" runs.

With a real GPU, "cuda" tests run on it. Without one (CI), they run on tritongrad's emulated
CUDA device: host memory, synchronous streams, and the real Triton kernels executed by Triton's
interpreter (TRITON_INTERPRET=1). Tests that only make sense on hardware are marked ``gpu`` and
skip there.
"""

import os
import sys

# One BLAS thread: CI has 2 cores, and oversubscribed BLAS threads made NumPy's matmul 10-20x
# slower there. Set before anything imports NumPy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


def _real_gpu() -> bool:
    try:
        from cuda.bindings import driver
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return False
        err, n = driver.cuDeviceGetCount()
        return int(err) == 0 and n > 0
    except Exception:  # no driver library, no device: both mean "no GPU" here
        return False


# CUDA index checks raise where the op runs (``sync``; the library's default, ``deferred``,
# raises at the next host sync point as a device-side assert would): the suite's many error
# tests check the op that raised. tests/autograd/test_deferred_index_checks.py runs the
# default mode, and a training step in it.
os.environ.setdefault("TRITONGRAD_CHECK_INDICES", "sync")
# Matmul and attention autotuning (a GPU only) would time candidates inside whichever test first
# meets a large product: the suite keeps the fixed configs, and tests/kernels/test_autotune.py
# switches tuning on where it tests it.
os.environ.setdefault("TRITONGRAD_AUTOTUNE", "0")

REAL_GPU = _real_gpu()
if not REAL_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("TRITONGRAD_EMULATE_CUDA", "1")


def pytest_report_header(config):
    return f"tritongrad cuda: {'real GPU' if REAL_GPU else 'emulated (Triton interpreter)'}"


def pytest_collection_modifyitems(config, items):
    if REAL_GPU:
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU (the emulated device runs the rest)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """Runs a test on the CPU backend and on CUDA (real, or emulated through the interpreter)."""
    return request.param


def _without_overrides() -> None:
    """Takes the __torch_function__ check away (autograd/overrides.py, Note [Overrides
    installed on first use]) where a Tensor subclass installed it: a test module defining one
    installs it when collected, and a test that makes an instance installs it again."""
    from tritongrad.autograd import overrides
    if overrides.active and not overrides._tls.modes:
        overrides.deactivate()


@pytest.fixture(autouse=True)
def _fresh_autograd_state():
    """Each test starts with grad mode on, anomaly mode off, no observers and no
    __torch_function__ check."""
    import tritongrad as tg
    from tritongrad.autograd import anomaly_mode
    from tritongrad.autograd.state import set_mode, state
    _without_overrides()
    yield
    state.grad_enabled = True
    set_mode("inference", False)
    set_mode("observers", ())
    anomaly_mode.enabled, anomaly_mode.check_nan = False, True
    tg.set_default_dtype(tg.float32)
    _without_overrides()


@pytest.fixture
def torch_untouched():
    """Fails the test if it imported torch. Checked against the state at its start: on the GPU
    machines torch is installed and other tests in the process (DLPack interop) may import it."""
    before = "torch" in sys.modules
    yield
    assert before or "torch" not in sys.modules, "the test imported torch"
