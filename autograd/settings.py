"""Global settings of ``torch`` and their queries: the default device and tensor type,
threads, deterministic algorithms, warnings, anomaly mode, denormals (print options:
autograd/printing.py).

What each setting does here:

- ``set_default_device``: factories given no ``device=`` use it (``creation.resolve_device``),
  as under PyTorch's device context; ops on existing tensors are unaffected.
- ``set_num_threads``: limits the BLAS/OpenMP thread pools NumPy's kernels use (through
  threadpoolctl when it is installed; without it the number is only recorded). The inter-op
  pool is PyTorch's alone: ``set_num_interop_threads`` records its number (once, as PyTorch
  allows).
- ``use_deterministic_algorithms``: recorded and reported. tritongrad raises for no op when
  it is on: the CPU kernels are deterministic, and on CUDA the kernels accumulating with
  atomics (``index_add``, ``scatter_add``/``scatter_reduce``, ``index_put`` with
  ``accumulate=True``, the backward of gathers, and of embeddings past 16384 indices) may sum
  in varying order in float, as PyTorch's index_add does; they are not yet checked against the
  flag. The embedding backward up to that size sorts instead, and is deterministic (Note
  [deterministic embedding backward], kernels/triton/nn.py), as PyTorch's is.
- ``set_warn_always``: recorded (tritongrad's warnings use Python's ``warnings`` filters).
- ``set_flush_denormal``: not supported (returns False, as PyTorch on CPUs without it).
"""

from __future__ import annotations

import builtins
import functools
import os
import warnings

from ..runtime import dtype as dtypes
from ..runtime.device import device as Device
from . import anomaly_mode
from .ops import creation

__all__ = ["are_deterministic_algorithms_enabled", "get_default_device",
           "get_deterministic_debug_mode", "get_num_interop_threads", "get_num_threads",
           "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "is_warn_always_enabled",
           "set_anomaly_enabled", "set_default_device", "set_default_tensor_type",
           "set_deterministic_debug_mode", "set_flush_denormal", "set_num_interop_threads",
           "set_num_threads", "set_warn_always", "use_deterministic_algorithms"]


# -- default device and tensor type ------------------------------------------------------------

def set_default_device(device) -> None:
    """Sets the device factories use when no ``device=`` is given (``None``: the CPU
    again). ``"cuda"`` means the CUDA device current at each call.

    Example:
        >>> tg.set_default_device("cuda")
        >>> tg.zeros(2).device
        device(type='cuda', index=0)
        >>> tg.set_default_device(None)
    """
    if device is not None:
        d = device if isinstance(device, Device) else Device(device)
        if d.type == "cuda":
            creation.resolve_device(d)  # (checks now that the device exists)
        device = None if d.type == "cpu" and d.index is None else d
    creation.default_device = device


def get_default_device() -> Device:
    """The device factories use when given none (with its index: ``cuda:0``)."""
    return creation.resolve_device(None)


def set_default_tensor_type(t) -> None:
    """Deprecated (PyTorch 2.1): sets the default floating dtype from a tensor type (a
    legacy class such as ``tg.DoubleTensor`` or its name, ``"torch.DoubleTensor"``); a CUDA
    type (``tg.cuda.FloatTensor``) also makes CUDA the default device."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    from .ops.conversion import _LEGACY_DTYPES
    if isinstance(t, str):
        parts = t.split(".")
        if parts[0] not in ("torch", "tritongrad") or parts[-1] not in _LEGACY_DTYPES:
            raise TypeError(f"invalid type: '{t}'")
        dt, cuda = _LEGACY_DTYPES[parts[-1]], "cuda" in parts[1:-1]
    elif hasattr(t, "dtype") and hasattr(t, "device_type"):
        dt, cuda = t.dtype, t.device_type == "cuda"
    else:
        raise TypeError(f"invalid type: '{t}'")
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dtypes.set_default_dtype(dt)
    set_default_device("cuda" if cuda else None)


# -- threads -----------------------------------------------------------------------------------

_threads = {"intra": None, "inter": None, "limiter": None}


@functools.cache  # (threadpoolctl's query takes ~9 ms; set_num_threads records its own count)
def _blas_threads() -> int | None:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    return max(counts) if counts else None


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism on the CPU: the BLAS thread
    pool's (what ``set_num_threads`` set, else its current size, else the CPU count)."""
    if _threads["intra"] is not None:
        return _threads["intra"]
    return _blas_threads() or os.cpu_count() or 1


def set_num_threads(int: int) -> None:
    """Sets the number of threads used for intra-op parallelism on the CPU: the BLAS (and
    OpenMP) thread pools behind NumPy's kernels, through threadpoolctl when it is installed
    (without it the number is recorded and ``get_num_threads`` reports it)."""
    n = int
    if isinstance(n, bool) or not isinstance(n, builtins.int) or n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _threads["intra"] = n
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    _threads["limiter"] = threadpool_limits(limits=n)  # (applied now, until changed again)


def get_num_interop_threads() -> int:
    """The number of threads used for inter-op parallelism on the CPU (recorded: NumPy has
    no inter-op pool; by default the CPU count)."""
    return _threads["inter"] or os.cpu_count() or 1


def set_num_interop_threads(int: int) -> None:
    """Sets the number of inter-op threads (recorded only); like PyTorch, only once."""
    n = int
    if isinstance(n, bool) or not isinstance(n, builtins.int) or n <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _threads["inter"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _threads["inter"] = n


# -- deterministic algorithms ------------------------------------------------------------------

_deterministic = {"mode": False, "warn_only": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Sets whether ops must use deterministic algorithms. Recorded and reported by
    ``are_deterministic_algorithms_enabled``; tritongrad's CPU kernels are deterministic,
    and its CUDA kernels that accumulate with atomics are not checked against it (see
    this module's docstring)."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    _deterministic["mode"], _deterministic["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """True if the global deterministic flag is on (``use_deterministic_algorithms``)."""
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """True if the global deterministic flag is set to warn only."""
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """Sets the debug mode for deterministic operations: ``"default"`` (0) off, ``"warn"``
    (1) on with warnings, ``"error"`` (2) on with errors."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The debug mode for deterministic operations: 0 off, 1 warn, 2 error."""
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


# -- warnings, anomaly mode, denormals ---------------------------------------------------------

_warn_always = [False]


def set_warn_always(b: bool) -> None:
    """When True, warnings that PyTorch gives once per process would be given every time
    (recorded: tritongrad's warnings go through Python's ``warnings`` filters)."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """True if the global warn_always flag is on (``set_warn_always``)."""
    return _warn_always[0]


def is_anomaly_enabled() -> bool:
    """True if anomaly detection is on (``autograd.detect_anomaly``)."""
    return anomaly_mode.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """True if anomaly detection checks backward results for NaN."""
    return anomaly_mode.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns anomaly detection on or off for the process (as ``autograd.set_detect_anomaly``
    without a scope)."""
    anomaly_mode._set(enabled, check_nan)


def set_flush_denormal(mode: bool) -> bool:
    """Would flush denormal floats to zero on the CPU; tritongrad's NumPy kernels cannot, so
    this returns False (PyTorch's answer on CPUs without the feature) and changes nothing."""
    return False
