"""Autotuning: the fastest of a few launch configs per shape class, timed once on the device
and remembered, in the process and in a file for the next one.

Note [autotuning]: a kernel's best tile sizes, warps and pipeline depth depend on the shape,
the dtype and the GPU (on an H200, 2026-11-30, the fixed matmul config reached 0.82 of cuBLAS
at 4096^3 bfloat16). A launcher that plans (Note [lean launches] in _launch.py) asks ``pick``
for a config once per shape class: the class's answer from this process or the cache file if
there is one, else each candidate is launched on the call's own arrays (writing a scratch
output), timed with CUDA events on the current stream, and the fastest kept. Triton's own
``triton.autotune`` does the same per call signature; this one keys by a class the launcher
chooses (matmul: dtype, precision, sizes rounded up to powers of two, operand layouts), so
one timing serves every shape of the class, and it never touches the launch path of a
planned call: the plan holds the chosen config's launch.

When it runs: on a real GPU (never under Triton's interpreter or the emulated device, where
times mean nothing), for work of at least ``MIN_WORK`` (the launcher's measure: a product's
M * N * K; small products are bound by the launch, not the tiles), and never while a CUDA
graph is being captured (timing synchronizes; a plan made then takes the default config and
is not kept, so the next eager call tunes). ``TRITONGRAD_AUTOTUNE=0`` turns it off (every
plan takes its default config, as before it existed), ``=all`` tunes every size.

Candidates that fail to compile or launch (too much shared memory for this GPU, say) are
skipped; the default config is timed first and its error is raised, so a launcher's fallbacks
(matmul's float64 probe) see the same errors as without tuning. The file is
``$TRITONGRAD_CACHE_DIR/autotune.json`` (default ``~/.cache/tritongrad``): one section per
(device name, Triton version, kernel source hash), so a changed kernel or another GPU tunes
again; it is written by an atomic rename after each new class, and an unwritable directory
only costs the next process the timing.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import warnings
from collections.abc import Callable, Sequence

from ...runtime import driver as _drv
from ...runtime import streams as _streams
from .compat import INTERPRET

__all__ = ["MIN_WORK", "MODE", "cache_path", "clear", "pick", "results", "time_ms", "wanted"]

MODE = os.environ.get("TRITONGRAD_AUTOTUNE", "1").strip().lower()  # "0", "1" or "all"
MIN_WORK = 1 << 30  # (a 1024^3 product; "all": 0) read when a launcher plans
BUDGET_MS = 5.0     # device time per timed batch of launches (three batches per candidate)
MAX_REPS = 100

_lock = threading.Lock()
_memory: dict = {}        # (section, class) -> config, this process's answers
_loaded: set = set()      # sections read from the file
_warned = []


def cache_path() -> str:
    """The results file: ``$TRITONGRAD_CACHE_DIR/autotune.json``, default ``~/.cache/tritongrad``."""
    root = os.environ.get("TRITONGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tritongrad")
    return os.path.join(root, "autotune.json")


def _on_hardware() -> bool:
    return not INTERPRET and _drv.is_available() and not _drv.is_emulated()


def wanted(work: int, min_work: int | None = None) -> bool:
    """Whether a plan for ``work`` (the launcher's measure of its size) should be tuned: at
    least ``min_work`` (default ``MIN_WORK``), on a GPU, tuning on."""
    if MODE in ("0", "off", "false", "no"):
        return False
    if work < (0 if MODE == "all" else MIN_WORK if min_work is None else min_work):
        return False
    return _on_hardware()


def _capturing() -> bool:
    drv = _drv._driver
    return drv is not None and bool(drv.capturing)


def _section(kernel) -> str:
    """The results' section of ``kernel`` on the current device: device name, Triton version
    and the kernel's source hash (Triton's ``cache_key``, which covers the functions it calls)."""
    import triton

    from ...runtime import cuda_api

    source = getattr(kernel, "cache_key", None) or getattr(getattr(kernel, "fn", None),
                                                           "__qualname__", "?")
    return f"{cuda_api.get_device_name()}|triton {triton.__version__}|{source}"


def _load(section: str) -> None:
    if section in _loaded:
        return
    _loaded.add(section)
    try:
        with open(cache_path()) as f:
            stored = json.load(f)
    except (OSError, ValueError):
        return
    stored = stored.get(section) if isinstance(stored, dict) else None
    for cls, config in (stored.items() if isinstance(stored, dict) else ()):
        if isinstance(config, list):  # (pick checks the values)
            _memory.setdefault((section, cls), tuple(config))


def _store(section: str, cls: str, config: tuple) -> None:
    path = cache_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        if not isinstance(data.get(section), dict):
            data[section] = {}
        data[section][cls] = list(config)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as e:
        if not _warned:
            _warned.append(e)
            warnings.warn(f"autotune: could not write {path} ({e}); tuned configs are kept "
                          f"for this process only", RuntimeWarning, stacklevel=3)


def time_ms(run: Callable[[], object]) -> float:
    """Milliseconds per ``run()`` on the current stream: one untimed call (a compile), one
    timed to size the batches, then the best of three batches of about ``BUDGET_MS``."""
    start, end = _streams.Event(enable_timing=True), _streams.Event(enable_timing=True)

    def batch(n: int) -> float:
        start.record()
        for _ in range(n):
            run()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / n

    run()
    reps = max(1, min(MAX_REPS, int(BUDGET_MS / max(batch(1), 1e-4))))
    return min(batch(reps) for _ in range(3))


def _time(config: tuple, run: Callable[[], object]) -> float:
    """Milliseconds per launch of ``config`` (``run`` launches it); tests replace this."""
    return time_ms(run)


def pick(kernel, cls: str, default: tuple, candidates: Sequence[tuple],
         make: Callable[[tuple], Callable], *args) -> tuple | None:
    """The config to plan with for shape class ``cls`` of ``kernel``: a remembered answer, or
    the fastest of ``default`` and ``candidates``, each launched as ``make(config)(*args)``
    (one launcher made per config, so the timed launches are cached ones; they must be
    repeatable: a scratch output); None while a CUDA graph is being captured (plan with the
    default, and keep no plan). Errors of the default's launch propagate."""
    section = _section(kernel)
    with _lock:
        _load(section)
        known = _memory.get((section, cls))
        if known is not None and len(known) == len(default) \
                and all(type(v) is int for v in known):  # (a hand-edited file: tune again)
            return known
        if _capturing():
            return None
        best, best_ms = default, _time(default, functools.partial(make(default), *args))
        for config in dict.fromkeys(candidates):
            if config == default:
                continue
            try:
                ms = _time(config, functools.partial(make(config), *args))
            except Exception:  # noqa: BLE001 - a config this GPU cannot run is not a choice
                continue
            if ms < best_ms:
                best, best_ms = config, ms
        _memory[(section, cls)] = best
        _store(section, cls, best)
        return best


def results() -> dict:
    """This process's answers: ``{(section, class): config}``."""
    return dict(_memory)


def clear() -> None:
    """Forgets this process's answers (the file is left as it is)."""
    with _lock:
        _memory.clear()
        _loaded.clear()
