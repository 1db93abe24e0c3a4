"""Checks a tritongrad installation: an environment report, then a smoke test of each layer.

    python -m tritongrad.selfcheck [--json] [--verbose]

In the spirit of ``torch.utils.collect_env``: it prints the versions of Python, NumPy, Triton,
cuda-python and nvtx, the NVIDIA driver and CUDA versions, the GPU's name, capability and
memory, whether NVTX and the C toolchain Triton builds its launcher with are there. Then it runs
its checks and prints a table (name, status, milliseconds, detail):

- the CPU path: each kernel family on the NumPy backend against a float64 NumPy reference, one
  backward pass, a few training steps;
- on a GPU: each kernel family compiled and run once against the NumPy backend; the caching
  allocator (reuse on a stream, ``record_stream`` deferral, ``empty_cache``, an out-of-memory
  error the process survives); a cross-stream hazard made safe by ``wait_stream``; event
  timing; a backward pass on a side stream; a training step; ``emit_nvtx``.

Without a GPU it says so (and why), marks the GPU checks skipped and exits 0. With
``TRITONGRAD_EMULATE_CUDA=1`` and ``TRITON_INTERPRET=1`` on a machine without a GPU, the GPU
checks run on tritongrad's emulated device (host memory, Triton's interpreter), which is how CI
tests this module. The exit status is 1 when any check failed.

Example:
    >>> from tritongrad import selfcheck
    >>> code = selfcheck.main(["--json"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import gc
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import traceback
from collections.abc import Callable, Sequence

import numpy as np

import tritongrad as tg
import tritongrad.nn.functional as F
from tritongrad.runtime import driver as _driver

__all__ = ["CHECKS", "Check", "Context", "Result", "Skip", "collect_env", "device_info", "main",
           "run_checks"]

MiB, GiB = 1 << 20, 1 << 30


# -- the environment ------------------------------------------------------------------------------

def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _guard(fn: Callable[[], str]) -> str:
    """Runs one probe of the report; a probe that fails reports its error instead."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the report must never traceback
        return f"unknown ({type(e).__name__}: {e})"


def _cpu_loops() -> str:
    """Whether the CPU backend's compiled loops run (kernels/numpy/jit.py)."""
    from .kernels.numpy import jit
    if jit.enabled():
        return ", loops on"
    off = os.environ.get("TRITONGRAD_CPU_JIT", "1") in ("0", "false", "off")
    return ", loops off (TRITONGRAD_CPU_JIT=0)" if off else ", loops off (NumPy forms)"


def _cpu_blas() -> str:
    """The CBLAS library the CPU backend's matrix products call (kernels/numpy/blas.py)."""
    from .kernels.numpy import blas
    lib = blas.provider()
    if lib is None:
        if blas._cpu_vendor() != "GenuineIntel":  # auto leaves MKL out there (Note [MKL on AMD])
            return "NumPy's matmul (MKL is used on Intel CPUs only)"
        return "NumPy's matmul (install tritongrad[mkl] for MKL)"
    if lib.name != "mkl":
        return f"{lib.name} through CBLAS"
    when = " while NumPy's OpenBLAS runs one thread" if blas._threads is not None else ""
    return f"mkl {_version('mkl')} through CBLAS{when}"


def _nvidia_driver() -> str:
    try:  # the kernel module's version, as nvidia-smi shows it (Linux only)
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Module\b.*?\s(\d+\.\d+(?:\.\d+)?)", f.readline())
        return m.group(1) if m else "unknown"
    except OSError:
        return "not found"


def _cuda_driver_api() -> str:
    """The CUDA version the driver supports (``cuDriverGetVersion``), e.g. ``12.4``."""
    if not tg.cuda.is_available() or tg.cuda.is_emulated():
        return f"unavailable ({_driver.why_no_gpu()})"
    major, minor = _driver.get_driver().driver_version()
    return f"{major}.{minor}"


def _ptxas() -> str:
    """The CUDA release of the ptxas Triton compiles with (it ships its own, unless
    ``TRITON_PTXAS_PATH`` names another)."""
    path = os.environ.get("TRITON_PTXAS_PATH")
    if not path:  # found without importing Triton: the emulated device sets TRITON_INTERPRET
        spec = importlib.util.find_spec("triton")  # before Triton's first import
        if spec is None or not spec.submodule_search_locations:
            return "not found (triton is not installed)"
        path = os.path.join(spec.submodule_search_locations[0], "backends", "nvidia", "bin",
                            "ptxas")
    if not os.path.exists(path):
        return f"not found ({path})"
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                         check=True).stdout
    m = re.search(r"release (\S+?),", out)
    return m.group(1) if m else "unknown"


def _nvtx_imports() -> bool:
    """Whether the ``nvtx`` package imports (without it, tritongrad's ranges are no-ops)."""
    from tritongrad.runtime.nvtx import is_nvtx_package

    try:
        import nvtx
    except ImportError:
        return False
    return is_nvtx_package(nvtx)


def _nvtx() -> str:
    if not _nvtx_imports():
        return "no (the nvtx package does not import: ranges are no-ops)"
    from tritongrad.runtime import nvtx as rt_nvtx

    tool = os.environ.get("NVTX_INJECTION64_PATH")
    if rt_nvtx.is_enabled():
        return f"yes, a tool is attached ({tool})"
    return "yes (no tool attached: ranges are recorded under nsys/ncu)"


def _c_compiler() -> str | None:
    """The compiler Triton builds its launcher with: $CC, else gcc, else clang."""
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")


def _python_header() -> str:
    return os.path.join(sysconfig.get_paths()["include"], "Python.h")


def collect_env() -> dict[str, str]:
    """Returns the environment report: versions and what Triton needs, as strings.

    A package that is missing reads ``"not installed"``; nothing here raises.
    """
    header = _python_header()
    return {
        "tritongrad": tg.__version__,
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": _guard(platform.platform),
        "numpy": _version("numpy"),
        "triton": _version("triton"),
        "cuda-python": _version("cuda-python"),
        "cuda-bindings": _version("cuda-bindings"),
        "nvtx": _version("nvtx"),
        "numba (CPU loops)": _version("numba") + _cpu_loops(),
        "cpu matmul": _guard(_cpu_blas),
        "nvidia driver": _guard(_nvidia_driver),
        "cuda (driver api)": _guard(_cuda_driver_api),
        "cuda (triton's ptxas)": _guard(_ptxas),
        "nvtx available": _guard(_nvtx),
        "c compiler": _c_compiler() or "not found (set CC, or install gcc)",
        "python headers": header if os.path.exists(header) else f"missing ({header})",
        "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET", "unset"),
        "TRITONGRAD_EMULATE_CUDA": os.environ.get("TRITONGRAD_EMULATE_CUDA", "unset"),
    }


def device_info() -> dict:
    """Returns what ``device="cuda"`` is here: ``kind`` is ``"cuda"``, ``"emulated"`` or
    ``"none"``, with the device's name, capability and total memory where there is one."""
    if not tg.cuda.is_available():
        return {"kind": "none", "available": False, "name": None, "capability": None,
                "total_memory": None, "count": 0, "why_no_gpu": _driver.why_no_gpu()}
    emulated = tg.cuda.is_emulated()
    info = {"kind": "emulated" if emulated else "cuda", "available": True, "name": None,
            "capability": None, "total_memory": None, "count": tg.cuda.device_count(),
            "why_no_gpu": _driver.why_no_gpu() if emulated else None}
    try:
        props = tg.cuda.get_device_properties(0)
        info.update(name=props.name, capability=f"{props.major}.{props.minor}",
                    total_memory=props.total_memory)
    except Exception as e:  # noqa: BLE001 - reported; the GPU checks will show what fails
        info["note"] = f"querying the device failed: {type(e).__name__}: {e}"
    if emulated and os.environ.get("TRITON_INTERPRET") == "0":  # only the interpreter can run
        info["note"] = "TRITON_INTERPRET=0: Triton kernels cannot run on this device"
    return info


# -- checks and their runner ----------------------------------------------------------------------

class Skip(Exception):
    """Raised by a check that does not apply here; its message is the reason."""


@dataclasses.dataclass
class Context:
    """What the checks run against: ``device`` is ``"cuda"`` (real or emulated) or ``"cpu"``."""

    device: str
    real_gpu: bool


@dataclasses.dataclass
class Check:
    """A named check: ``fn(ctx)`` returns a one-line detail (or None), raises ``Skip`` or
    fails by raising anything else. ``gpu`` checks are skipped where CUDA is unavailable."""

    name: str
    fn: Callable[[Context], str | None]
    gpu: bool = False


@dataclasses.dataclass
class Result:
    """The outcome of one check: ``status`` is ``"pass"``, ``"fail"`` or ``"skip"``, ``ms`` its
    wall time, ``detail`` one line; ``traceback`` is kept for ``--verbose`` (not in the JSON)."""

    name: str
    status: str
    ms: float
    detail: str
    traceback: str | None = None


def run_checks(checks: Sequence[Check], ctx: Context,
               on_result: Callable[[Result], None] | None = None) -> list[Result]:
    """Runs each check, timing it and turning what it raises into a fail or skip result."""
    results = []
    for check in checks:
        if check.gpu and ctx.device != "cuda":
            r = Result(check.name, "skip", 0.0, "no GPU")
        else:
            t0 = time.perf_counter()
            tb = None
            try:
                status, detail = "pass", check.fn(ctx) or ""
            except Skip as e:
                status, detail = "skip", str(e)
            except Exception as e:  # noqa: BLE001 - a failing check is a result, not a crash
                status, detail, tb = "fail", f"{type(e).__name__}: {e}", traceback.format_exc()
            finally:
                if check.gpu:  # no queued work or garbage of one check spills into the next
                    with contextlib.suppress(Exception):
                        tg.cuda.synchronize()
                gc.collect()
            detail = " ".join(str(detail).split())  # one line
            r = Result(check.name, status, (time.perf_counter() - t0) * 1e3, detail, tb)
        results.append(r)
        if on_result is not None:
            on_result(r)
    return results


# -- helpers --------------------------------------------------------------------------------------

def _host(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def _close(got: dict, want: dict, rtol: float, atol: float) -> str:
    """Compares result dicts (floats within tolerance, integers exactly); returns the error."""
    worst = 0.0
    for k, w in want.items():
        g = np.asarray(got[k])
        w = np.asarray(w)
        if g.shape != w.shape:
            raise AssertionError(f"{k}: shape {g.shape} != {w.shape}")
        if w.dtype.kind in "iub":
            if not np.array_equal(g, w):
                raise AssertionError(f"{k}: integer results differ")
            continue
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=rtol, atol=atol, err_msg=k)
        worst = max(worst, float(np.max(np.abs(g - w), initial=0.0)))
    return f"{', '.join(want)} agree (max abs err {worst:.1e})"


@functools.lru_cache(maxsize=1)
def _data() -> dict:
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    return {"x": f32(8, 16), "y": f32(16, 8), "row": f32(16), "p": f32(2, 4, 8),
            "q": f32(2, 8, 5), "w": f32(16), "b": f32(16), "emb": f32(10, 16), "g": f32(8, 16),
            "target": rng.integers(0, 16, 8), "idx": np.array([3, 1, 1, 0, 9]) % 8,
            "gidx": rng.integers(0, 16, (8, 3))}


def _busy(stream) -> object | None:
    """On a real GPU, queues ~50 ms of 1 GiB memsets on ``stream`` (the project's slow work,
    tests/runtime/test_gpu_ordering.py) and returns the buffer to keep alive; on the emulated
    device, whose streams are synchronous, nothing."""
    if tg.cuda.is_emulated():
        return None
    size = min(GiB, tg.cuda.get_device_properties().total_memory // 8)
    buf = tg.empty(size, dtype=tg.uint8, device="cuda")
    buf.record_stream(stream)  # used there: not reused until the memsets are done
    drv = _driver.get_driver()
    for i in range(max(20, 120 * GiB // size)):
        drv.memset_d8(stream.device_index, buf.data_ptr(), i & 0xFF, size, stream.cuda_stream)
    return buf


@contextlib.contextmanager
def _spy(obj, method: str):
    """Records the arguments of every call of ``obj.method`` inside the block."""
    calls, real = [], getattr(obj, method)

    def spy(*args):
        calls.append(args)
        return real(*args)

    setattr(obj, method, spy)
    try:
        yield calls
    finally:
        delattr(obj, method)


@contextlib.contextmanager
def _no_gc():
    """Keeps garbage collection from freeing blocks while a check counts memory: Triton's
    interpreter leaves cyclic garbage that holds device arrays."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _pending_bytes() -> int:
    """Freed blocks still waiting on other streams' events (active but not allocated)."""
    s = tg.cuda.memory_stats()
    return s["active_bytes.all.current"] - s["allocated_bytes.all.current"]


# -- kernel families: each runs on a device, and has a float64 NumPy reference -------------------

def _elementwise(dev):
    d = _data()
    x, r = tg.tensor(d["x"], device=dev), tg.tensor(d["row"], device=dev)
    return {"where": tg.where(x > 0, (x * 2 + 1).tanh() * x.exp(), x / (r.abs() + 1)),
            "sigmoid": x.sigmoid() ** 2 - x.maximum(r),
            "transpose": (x.t() - r[:8]).contiguous()}


def _elementwise_ref(d):
    x, r = d["x"], d["row"]
    return {"where": np.where(x > 0, np.tanh(x * 2 + 1) * np.exp(x), x / (np.abs(r) + 1)),
            "sigmoid": (1 / (1 + np.exp(-x))) ** 2 - np.maximum(x, r), "transpose": x.T - r[:8]}


def _reduction(dev):
    x = tg.tensor(_data()["x"], device=dev)
    return {"sum": x.sum(1), "mean": x.mean(0), "amax": x.amax(1), "argmax": x.argmax(1),
            "cumsum": x.cumsum(1)}


def _reduction_ref(d):
    x = d["x"]
    return {"sum": x.sum(1), "mean": x.mean(0), "amax": x.max(1), "argmax": x.argmax(1),
            "cumsum": x.cumsum(1)}


def _matmul(dev):
    d = {k: tg.tensor(v, device=dev) for k, v in _data().items() if k in "xypq"}
    return {"mm": d["x"] @ d["y"], "bmm": tg.bmm(d["p"], d["q"])}


def _matmul_ref(d):
    return {"mm": d["x"] @ d["y"], "bmm": d["p"] @ d["q"]}


def _rowwise(dev):
    x = tg.tensor(_data()["x"], device=dev)
    return {"softmax": x.softmax(1), "log_softmax": x.log_softmax(1)}


def _rowwise_ref(d):
    z = d["x"] - d["x"].max(1, keepdims=True)
    lsm = z - np.log(np.exp(z).sum(1, keepdims=True))
    return {"softmax": np.exp(lsm), "log_softmax": lsm}


def _nn(dev):
    t = {k: tg.tensor(v, device=dev) for k, v in _data().items()}
    x = t["x"]
    return {"gelu": F.gelu(x), "gelu_tanh": F.gelu(x, approximate="tanh"),
            "layer_norm": F.layer_norm(x, (16,), t["w"], t["b"]),
            "cross_entropy": F.cross_entropy(x, t["target"]),
            "embedding": F.embedding(t["idx"], t["emb"])}


def _nn_ref(d):
    x = d["x"]
    erf = np.vectorize(math.erf)
    lse = np.log(np.exp(x).sum(1))
    return {"gelu": 0.5 * x * (1 + erf(x / math.sqrt(2))),
            "gelu_tanh": 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
            "layer_norm": (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
            * d["w"] + d["b"],
            "cross_entropy": np.mean(lse - x[np.arange(8), d["target"]]),
            "embedding": d["emb"][d["idx"]]}


def _indexing(dev):
    t = {k: tg.tensor(v, device=dev) for k, v in _data().items()}
    x, idx, gidx = t["x"], t["idx"], t["gidx"]
    return {"index": x[idx], "gather": x.gather(1, gidx), "nonzero": (x > 0.5).nonzero(),
            "index_put": x.index_put((idx,), t["g"][:5], accumulate=True),
            "scatter_add": tg.zeros(8, 16, device=dev).scatter_add(1, gidx, x[:, :3])}


def _indexing_ref(d):
    x, idx, gidx = d["x"], d["idx"], d["gidx"]
    put, sc = x.copy(), np.zeros((8, 16))
    np.add.at(put, idx, d["g"][:5])
    np.add.at(sc, (np.arange(8)[:, None], gidx), x[:, :3])
    return {"index": x[idx], "gather": np.take_along_axis(x, gidx, 1),
            "nonzero": np.argwhere(x > 0.5), "index_put": put, "scatter_add": sc}


def _optim(dev):
    d, out = _data(), {}
    for name, make in (("sgd", lambda p: tg.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01)),
                       ("adam", lambda p: tg.optim.Adam(p, lr=0.01))):
        p = tg.tensor(d["x"], device=dev, requires_grad=True)
        opt = make([p])
        for _ in range(2):
            p.grad = tg.tensor(d["g"], device=dev)
            opt.step()
        out[name] = p
    return out


def _optim_ref(d):
    g, sgd, buf = d["g"], d["x"].copy(), None
    for _ in range(2):
        gg = g + 0.01 * sgd
        buf = gg if buf is None else 0.9 * buf + gg
        sgd = sgd - 0.1 * buf
    adam, m, v = d["x"].copy(), 0.0, 0.0
    for step in (1, 2):
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        adam = adam - 0.01 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return {"sgd": sgd, "adam": adam}


# name: (run on a device, float64 reference, rtol, atol)
FAMILIES = {
    "elementwise": (_elementwise, _elementwise_ref, 1e-5, 1e-6),
    "reduction": (_reduction, _reduction_ref, 1e-5, 1e-5),
    "matmul": (_matmul, _matmul_ref, 1e-5, 1e-5),
    "softmax/rowwise": (_rowwise, _rowwise_ref, 1e-5, 1e-6),
    "nn": (_nn, _nn_ref, 1e-5, 1e-5),
    "indexing": (_indexing, _indexing_ref, 1e-6, 1e-6),
    "optimizer update": (_optim, _optim_ref, 1e-5, 1e-6),
}


def _run_family(name: str, dev: str) -> dict:
    return {k: _host(v) for k, v in FAMILIES[name][0](dev).items()}


def _family_cpu(name: str, ctx: Context) -> str:
    _, ref, rtol, atol = FAMILIES[name]
    want = ref({k: v.astype(np.float64) if v.dtype.kind == "f" else v
                for k, v in _data().items()})
    return _close(_run_family(name, "cpu"), want, rtol, atol)


def _family_cuda(name: str, ctx: Context) -> str:
    _, _, rtol, atol = FAMILIES[name]
    want = {k: v.astype(np.float64) if v.dtype.kind == "f" else v
            for k, v in _run_family(name, "cpu").items()}
    return _close(_run_family(name, "cuda"), want, 4 * rtol, 4 * atol)


# -- autograd and training ------------------------------------------------------------------------

def _grads_ref() -> dict:
    """d/dx, d/dy of sum(tanh(x @ y)) in float64."""
    x, y = (_data()[k].astype(np.float64) for k in "xy")
    dz = 1 - np.tanh(x @ y) ** 2
    return {"dx": dz @ y.T, "dy": x.T @ dz}


def _check_backward_cpu(ctx: Context) -> str:
    x, y = (tg.tensor(_data()[k], requires_grad=True) for k in "xy")
    (x @ y).tanh().sum().backward()
    return _close({"dx": _host(x.grad), "dy": _host(y.grad)}, _grads_ref(), 1e-5, 1e-5)


def _check_backward_side_stream(ctx: Context) -> str:
    x, y = (tg.tensor(_data()[k], device="cuda", requires_grad=True) for k in "xy")
    side, main = tg.cuda.Stream(), tg.cuda.current_stream()
    side.wait_stream(main)  # x and y were uploaded on the current stream
    with tg.cuda.stream(side):
        z = (x @ y).tanh()  # MmBackward and TanhBackward will run on the side stream
    main.wait_stream(side)
    loss = z.sum()
    keep = _busy(side)  # on a GPU the side stream is still busy when backward queues on it
    busy = keep is not None and not side.query()
    loss.backward()
    # read on the caller's stream with no user synchronisation: the engine's waits order it
    got = {"dx": _host(x.grad), "dy": _host(y.grad)}
    del keep
    return (_close(got, _grads_ref(), 1e-4, 1e-5)
            + ("; side stream busy during backward" if busy else ""))


def _train(dev: str, steps: int) -> tuple[list[float], list[np.ndarray]]:
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(16, 32), tg.nn.GELU(), tg.nn.LayerNorm(32),
                             tg.nn.Linear(32, 16)).to(dev)
    # SGD rather than Adam, whose first steps normalise each gradient entry: an entry near
    # zero could flip sign between backends and move a parameter by a whole learning rate.
    opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, t = tg.tensor(_data()["x"], device=dev), tg.tensor(_data()["target"], device=dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [_host(p) for p in model.parameters()]


def _check_train_cpu(ctx: Context) -> str:
    losses, _ = _train("cpu", 5)
    if not (all(map(math.isfinite, losses)) and losses[-1] < losses[0]):
        raise AssertionError(f"the loss did not fall: {losses}")
    return f"5 steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}"


def _check_train_cuda(ctx: Context) -> str:
    (cpu_losses, cpu_params), (losses, params) = _train("cpu", 2), _train("cuda", 2)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-4, atol=1e-5, err_msg="losses")
    for p, q in zip(params, cpu_params, strict=True):
        np.testing.assert_allclose(p, q, rtol=1e-4, atol=1e-5, err_msg="parameters")
    return f"2 steps match the CPU backend, loss {losses[0]:.4f} -> {losses[-1]:.4f}"


def _check_emit_nvtx(ctx: Context) -> str:
    if not _nvtx_imports():
        raise Skip("the nvtx package is not installed")
    from tritongrad.runtime import nvtx as rt_nvtx

    x = tg.ones(4, 4, device="cuda", requires_grad=True)
    with tg.autograd.profiler.emit_nvtx(record_shapes=True), tg.cuda.nvtx.range("selfcheck"):
        (x * x).sum().backward()
    np.testing.assert_array_equal(_host(x.grad), 2.0)
    return ("ranges sent to the attached NVTX tool" if rt_nvtx.is_enabled()
            else "ran; no NVTX tool attached, so no ranges were recorded")


# -- the runtime: toolchain, allocator, streams, events -------------------------------------------

def _check_toolchain(ctx: Context) -> str:
    cc, header = _c_compiler(), _python_header()
    missing = ([] if cc else ["a C compiler (set CC or install gcc)"]) + (
        [] if os.path.exists(header) else [f"Python's headers ({header}; install python3-dev)"])
    if not missing:
        return f"{cc}; {header}"
    why = "Triton builds its launcher at run time and needs " + " and ".join(missing)
    if ctx.real_gpu:
        raise RuntimeError(why)
    raise Skip(why + " (only on a GPU)")


def _check_copy(ctx: Context) -> str:
    x = _data()["x"]
    back = tg.tensor(x, device="cuda").t().contiguous().cpu().numpy()  # strided copy too
    np.testing.assert_array_equal(back, x.T)
    return "host -> device -> host round trip"


@_no_gc()
def _check_alloc_reuse(ctx: Context) -> str:
    s = tg.cuda.Stream()
    with tg.cuda.stream(s):
        a = tg.empty(3 * MiB // 4, device="cuda")  # 3 MiB: the large pool
        allocated = tg.cuda.memory_allocated()
        del a
        if tg.cuda.memory_allocated() > allocated - 3 * MiB:
            raise AssertionError("memory_allocated did not fall by the freed block")
        device_allocs = tg.cuda.memory_stats()["num_device_alloc"]
        b = tg.empty(3 * MiB // 4, device="cuda")
        ptr = b.data_ptr()
    if tg.cuda.memory_stats()["num_device_alloc"] != device_allocs:
        raise AssertionError("a block freed on a stream was not reused on it (cuMemAlloc ran)")
    del b
    c = tg.empty(3 * MiB // 4, device="cuda")  # another stream: never the side stream's block
    if c.data_ptr() == ptr:
        raise AssertionError("a block freed on one stream was handed to another")
    return "a freed block was reused from the cache on its stream, not on another"


@_no_gc()
def _check_record_stream(ctx: Context) -> str:
    tg.cuda.empty_cache()  # no cached 12 MiB segments to blur the pointer checks
    n = 12 * MiB  # past 10 MiB: a segment of its own, so a freed block is exactly that segment
    s = tg.cuda.Stream()
    x = tg.empty(n // 4, device="cuda")  # on the current stream
    x[:1024].zero_()  # (not all of it: the emulated device would take seconds)
    ptr = x.data_ptr()
    s.wait_stream(tg.cuda.current_stream())
    keep = _busy(s)
    with tg.cuda.stream(s):
        y = x[:1024] + 1  # s reads x (after the slow work, on a GPU)
    x.record_stream(s)
    pending = _pending_bytes()
    del x
    gc.collect()  # the interpreter's cyclic garbage may hold x's storage
    if _pending_bytes() - pending < n:
        raise AssertionError("the freed block was not held for the stream that used it")
    busy = keep is not None and not s.query()
    z = tg.empty(n // 4, device="cuda")
    if busy and z.data_ptr() == ptr:
        raise AssertionError("reused while the stream that recorded it may still read it")
    s.synchronize()
    w = tg.empty(n // 4, device="cuda")  # polls the events: the block is free again
    if ptr not in (z.data_ptr(), w.data_ptr()) or _pending_bytes() > pending:
        raise AssertionError("the block was not reused once the stream was done")
    with tg.cuda.stream(s):
        np.testing.assert_array_equal(_host(y), 1.0)
    del keep, y, z, w
    return ("held until the stream finished (it was busy at the next allocation)" if busy
            else "held until the next allocation (events complete at once on this device)")


@_no_gc()
def _check_empty_cache(ctx: Context) -> str:
    x = tg.empty(12 * MiB, dtype=tg.uint8, device="cuda")
    del x
    gc.collect()
    reserved, frees = tg.cuda.memory_reserved(), tg.cuda.memory_stats()["num_device_free"]
    tg.cuda.empty_cache()
    released = reserved - tg.cuda.memory_reserved()
    if released < 12 * MiB or tg.cuda.memory_stats()["num_device_free"] <= frees:
        raise AssertionError(f"empty_cache released {released} bytes, expected >= 12 MiB")
    return f"released {released / MiB:.0f} MiB to the driver"


def _check_oom(ctx: Context) -> str:
    total = tg.cuda.get_device_properties().total_memory
    ooms = tg.cuda.memory_stats()["num_ooms"]
    try:
        tg.empty(total + GiB, dtype=tg.uint8, device="cuda")
    except tg.cuda.OutOfMemoryError as e:
        message = str(e)
    else:
        raise AssertionError(f"allocating {(total + GiB) / GiB:.1f} GiB did not fail")
    if tg.cuda.memory_stats()["num_ooms"] != ooms + 1:
        raise AssertionError("num_ooms did not count the error")
    after = (tg.ones(1024, device="cuda") * 2).sum().item()  # the process carries on
    if after != 2048:
        raise AssertionError(f"work after the error computed {after}")
    return f"OutOfMemoryError, then work went on ({message.split('. ')[0]})"


def _check_wait_stream(ctx: Context) -> str:
    xh = _data()["x"]
    x = tg.tensor(xh, device="cuda")
    s1, s2 = tg.cuda.Stream(), tg.cuda.Stream()
    s1.wait_stream(tg.cuda.current_stream())  # x's upload
    keep = _busy(s1)
    with tg.cuda.stream(s1):
        y = x * 3  # written only after s1's slow work, on a GPU
    busy = keep is not None and not s1.query()
    with _spy(_driver.get_driver(), "stream_wait_event") as waits:
        s2.wait_stream(s1)  # without it, s2 would read y before s1 wrote it
    if not any(args[1] == s2.cuda_stream for args in waits):
        raise AssertionError("wait_stream queued no cuStreamWaitEvent on the waiting stream")
    with tg.cuda.stream(s2):
        y.record_stream(s2)
        got = _host(y + 1)  # to_host synchronises s2 only
    np.testing.assert_allclose(got, xh * 3 + 1, rtol=1e-6)
    x.record_stream(s1)
    del keep
    return "values right" + ("; s1 was busy when s2 read its result" if busy else
                             " and the wait was queued (emulated streams are synchronous)")


def _check_events(ctx: Context) -> str:
    s = tg.cuda.Stream()
    start, end = tg.cuda.Event(enable_timing=True), tg.cuda.Event(enable_timing=True)
    start.record(s)
    keep = _busy(s)
    with tg.cuda.stream(s):
        tg.ones(1024, device="cuda").exp().sum()
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    if not (end.query() and math.isfinite(ms) and ms >= 0 and (keep is None or ms > 0)):
        raise AssertionError(f"elapsed_time gave {ms} ms")
    del keep
    return f"{ms:.3f} ms between two events on a side stream"


def _families(cuda: bool) -> list[Check]:
    prefix, fn = ("cuda", _family_cuda) if cuda else ("cpu", _family_cpu)
    return [Check(f"{prefix} kernels: {name}", functools.partial(fn, name), gpu=cuda)
            for name in FAMILIES]


CHECKS: list[Check] = [
    *_families(cuda=False),
    Check("cpu autograd: backward", _check_backward_cpu),
    Check("cpu training steps", _check_train_cpu),
    Check("triton launcher: cc and Python.h", _check_toolchain),
    Check("cuda memory: host/device copies", _check_copy, gpu=True),
    *_families(cuda=True),
    Check("allocator: reuse on a stream", _check_alloc_reuse, gpu=True),
    Check("allocator: record_stream deferral", _check_record_stream, gpu=True),
    Check("allocator: empty_cache", _check_empty_cache, gpu=True),
    Check("allocator: out of memory, survived", _check_oom, gpu=True),
    Check("streams: wait_stream orders a hazard", _check_wait_stream, gpu=True),
    Check("events: timing", _check_events, gpu=True),
    Check("cuda backward on a side stream", _check_backward_side_stream, gpu=True),
    Check("cuda training step (vs cpu)", _check_train_cuda, gpu=True),
    Check("emit_nvtx", _check_emit_nvtx, gpu=True),
]


# -- output ---------------------------------------------------------------------------------------

def _device_line(dev: dict) -> str:
    if dev["kind"] == "none":
        return (f"no NVIDIA GPU found ({dev['why_no_gpu']}): checking the CPU path only, "
                f"the GPU checks are skipped")
    mem = dev["total_memory"]
    line = (f"{dev['name']}, capability {dev['capability']}, "
            f"{mem / GiB if mem else float('nan'):.1f} GiB ({dev['count']} device(s))")
    if dev["kind"] == "emulated":
        line += (f". EMULATED: host memory and Triton's interpreter (TRITONGRAD_EMULATE_CUDA=1);"
                 f" no NVIDIA GPU found ({dev['why_no_gpu']})")
    return line + (f". NOTE: {dev['note']}" if dev.get("note") else "")


def _row(r: Result) -> str:
    return f"{r.name:<40} {r.status:<6} {r.ms:9.1f}  {r.detail}"


def main(argv: Sequence[str] | None = None, checks: Sequence[Check] | None = None) -> int:
    """Runs the self-check; returns the exit status (1 if any check failed, else 0).

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``): ``--json`` prints one JSON
            object ``{"environment", "device", "checks", "ok"}`` instead of the report;
            ``--verbose`` prints the traceback of each failed check to stderr.
        checks: the checks to run (default: ``CHECKS``).
    """
    ap = argparse.ArgumentParser(prog="python -m tritongrad.selfcheck",
                                 description="Reports the environment and smoke-tests tritongrad.")
    ap.add_argument("--json", action="store_true", help="print one JSON object, for machines")
    ap.add_argument("-v", "--verbose", action="store_true", help="tracebacks of failed checks")
    args = ap.parse_args(argv)

    env, dev = collect_env(), device_info()
    ctx = Context(device="cpu" if dev["kind"] == "none" else "cuda", real_gpu=dev["kind"] == "cuda")
    on_result = None
    if not args.json:
        print("tritongrad selfcheck\n")
        width = max(map(len, env)) + 2
        for k, v in [*env.items(), ("device", _device_line(dev))]:
            print(f"{k + ':':<{width}}{v}")
        print()
        print(f"{'check':<40} {'status':<6} {'ms':>9}  detail")
        on_result = lambda r: print(_row(r), flush=True)  # rows as they finish

    results = run_checks(CHECKS if checks is None else checks, ctx, on_result)
    failed = [r for r in results if r.status == "fail"]
    if args.verbose:
        for r in failed:
            print(f"\n--- {r.name}\n{r.traceback}", file=sys.stderr)
    if args.json:
        checks = [{"name": r.name, "status": r.status, "ms": round(r.ms, 3), "detail": r.detail}
                  for r in results]
        print(json.dumps({"environment": env, "device": dev, "checks": checks,
                          "ok": not failed}, indent=2))
    else:
        counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "skip")}
        print(f"\n{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped: "
              + ("FAILED" if failed else "OK"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
