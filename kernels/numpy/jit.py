"""Compiled CPU loops through Numba, for the fused kernels NumPy cannot run in one pass.

A NumPy kernel of many elementwise steps (GELU with its derivative: ~25 passes; layer norm's
backward: ~10) streams its operand through memory once per step; a compiled loop reads each
element once, keeps the intermediates in registers and vectorizes (perf/bench_transformer.py
and docs/performance.md, "session 12"). Numba is a dependency of tritongrad, but an optional
one at run time: where it cannot be imported (an unsupported NumPy or platform) or
``TRITONGRAD_CPU_JIT=0`` is set, every kernel keeps its NumPy form, which stays the reference
the loops are tested against.

The loops live in their own modules (``nn_loops``, ``conv_loops``, ``optim_loops``,
``attention_loops``, ``elementwise_loops``, ``recurrent_loops``), which import Numba and are imported only through
``loops(name)``, so importing tritongrad does not import Numba. Each is
compiled on its first call (``cache=True``: once per machine, in Numba's cache beside the
module, or per process where no cache directory is writable) with
``error_model="numpy"`` (a float division by zero gives inf/NaN instead of raising, which
would keep the loop from vectorizing) and without ``fastmath`` except where a loop asks for
reassociated sums: NaN and inf pass through as in the NumPy forms.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable

__all__ = ["compile", "disabled", "enabled", "loops", "ufunc"]

_lock = threading.Lock()
_numba = None  # the module once imported; False when it cannot be
_modules: dict = {}
_switch = os.environ.get("TRITONGRAD_CPU_JIT", "1").strip().lower() not in ("0", "false", "off")


def _load():
    global _numba
    if _numba is None:
        with _lock:
            if _numba is None:
                try:
                    import numba
                except (ImportError, OSError):  # absent, refusing this NumPy, or no llvmlite
                    numba = False
                _numba = numba
    return _numba


def enabled() -> bool:
    """Whether the compiled loops run: Numba importable and ``TRITONGRAD_CPU_JIT`` not 0."""
    return _switch and _load() is not False


class disabled:
    """Context manager (and the tests' switch): the NumPy forms run inside it."""

    def __enter__(self) -> None:
        global _switch
        self._saved, _switch = _switch, False

    def __exit__(self, *exc) -> None:
        global _switch
        _switch = self._saved


def loops(name: str):
    """The compiled-loop module ``kernels.numpy.<name>``, or None when the loops are off."""
    if not _switch:
        return None
    module = _modules.get(name)
    if module is None:
        if _load() is False:
            return None
        module = _modules[name] = importlib.import_module(f"{__package__}.{name}")
    return module


def compile(fn: Callable | None = None, *, reassociate: bool = False, inline: bool = False):
    """Numba's ``njit`` with this module's options, for the loop modules (which alone import
    Numba): ``reassociate`` lets sums be reordered so that reductions vectorize; ``inline``
    marks a helper that loops call."""
    options = {"error_model": "numpy", "nogil": True}
    if reassociate:
        options["fastmath"] = {"reassoc"}
    if inline:
        options["inline"] = "always"
    njit = _load().njit

    def decorate(f: Callable) -> Callable:
        return _cached(lambda **cache: njit(**options, **cache), f)

    return decorate if fn is None else decorate(fn)


def _cached(make: Callable, f: Callable):
    """``make(cache=True)(f)``: compiled once per machine into Numba's cache, or, where no
    cache directory is writable, ``make()(f)``, compiled once per process."""
    try:
        return make(cache=True)(f)
    except RuntimeError:
        return make()(f)


def ufunc(signatures: list[str]):
    """Numba's ``vectorize`` for the loop modules: the decorated scalar function becomes a
    NumPy ufunc compiled for ``signatures`` (``"float32(float32, float32)"``), so a call
    costs what a built-in ufunc's does (broadcasting, strides, ``out=`` and casting are
    NumPy's), where an ``njit`` function boxes its arrays on every call (~0.5 us more)."""
    vectorize = _load().vectorize

    def decorate(f: Callable):
        return _cached(lambda **cache: vectorize(signatures, nopython=True, **cache), f).ufunc

    return decorate
