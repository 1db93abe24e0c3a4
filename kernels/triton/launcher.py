"""Cached launches: ``@jit`` kernels whose repeated launches skip Triton's per-call binding.

Note [cached launches]: Triton's ``JITFunction.run`` spends some 8 us of host time on every
launch before its compiled launcher runs: reading knobs, binding the arguments to the
signature, specializing each one (pointer alignment, integers equal to 1 or divisible by 16,
integer widths), turning the specialization and the options into a string key, checking the
kernel's globals, and building launch metadata for two (empty) hook chains. For the small ops
of a training step that is more than the kernel takes on the GPU.

``@jit`` makes a kernel a ``CachedLaunchJIT``. Its first launch for a given call pattern goes
through Triton as before (compiling if needed); the compiled kernel's launcher, function
handle and packed metadata are then kept under a key made from what Triton specializes on,
computed directly from the arguments:

- constexpr parameters: the value itself;
- arrays: the dtype, and whether the address is 16-byte aligned;
- integers: the width Triton gives them (int32, int64, uint64), and for parameters Triton
  specializes, whether the value is 1 and whether it is divisible by 16;
- tuples: their elements' keys; other values: their type;
- keyword arguments (launch options such as ``num_warps``): their values.

That key is at least as fine as Triton's specialization, so equal keys mean the same compiled
kernel; later launches with an equal key call the launcher directly with the arguments in
signature order. A value of any other kind, a callable grid, a warmup, pre-run hooks or a
non-empty launch hook chain (a profiler such as proton) take Triton's own path. With
``TRITONGRAD_CHECK_LAUNCHES=1`` (``CachedLaunchJIT.check``) every cached launch also asks
Triton which kernel it would pick and raises ``LaunchMismatch`` if that is another one: the
sm_90 compile check and the GPU campaign's test steps run that way. Options Triton reads from
its knobs at compile time (``TRITON_DEBUG``) are fixed at a layout's first launch;
``clear_plans()`` (in _launch.py) drops the cached launches with the plans.

Under the interpreter (``TRITON_INTERPRET=1``, CI and the emulated device) ``jit`` is
``triton.jit``: interpreted kernels have no compiled launcher to cache.
"""

from __future__ import annotations

import operator
import os

import triton
from triton import knobs
from triton.runtime import driver
from triton.runtime.jit import JITFunction

from ...runtime.array import DeviceArray
from . import _launch as L
from .compat import INTERPRET

__all__ = ["CachedLaunchJIT", "LaunchMismatch", "jit"]

_I32, _I64 = 1 << 31, 1 << 63
_SPECIALIZED, _CONSTEXPR, _UNSPECIALIZED = 0, 1, 2  # parameter kinds, for the key


class _Uncached(Exception):
    """An argument the key cannot describe: the launch takes Triton's own path."""


class LaunchMismatch(RuntimeError):
    """A cached launch would run another kernel than Triton's own dispatch picks."""


def _width(v: int) -> int:
    return 0 if -_I32 <= v < _I32 else 1 if -_I64 <= v < _I64 else 2


def _token(a, kind: int):
    """The key of one argument (see Note [cached launches])."""
    if kind == _CONSTEXPR:
        return a
    t = type(a)
    if t is DeviceArray:
        return a.dtype, not (a.storage.ptr + a.offset * a.dtype.itemsize) & 15
    if t is int:
        if kind == _UNSPECIALIZED:
            return _width(a)
        return a == 1, not a & 15, _width(a)
    if t is tuple:
        return tuple(_token(v, kind) for v in a)
    if t is float or t is bool or a is None:
        return t
    raise _Uncached


def _hooked() -> bool:
    """Whether a launch hook is installed (Triton's hook chains; a plain callable in older
    releases): hooks see every launch through Triton's own path."""
    rt = knobs.runtime
    enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
    return bool(getattr(enter, "calls", enter) or getattr(leave, "calls", leave))


def _compiled(kernel):
    """The CompiledKernel of what ``JITFunction.run`` returned (Triton 3.6 may return a future
    of one when it compiles asynchronously)."""
    return kernel.result() if hasattr(kernel, "result") else kernel


class CachedLaunchJIT(JITFunction):
    """A ``JITFunction`` whose launches reuse the compiled launcher (Note [cached launches])."""

    # also ask Triton which kernel it would launch, and compare (the GPU campaign's tests)
    check = os.environ.get("TRITONGRAD_CHECK_LAUNCHES", "0") not in ("", "0")

    # Keys hash the formulas passed as constexprs: JITCallable hashes its source digest under
    # a lock, and compares by identity anyway, so identity hashing is equivalent and cheaper.
    __hash__ = object.__hash__

    def __init__(self, fn, **kwargs):
        super().__init__(fn, **kwargs)
        kinds = [_CONSTEXPR if p.is_constexpr else
                 _UNSPECIALIZED if p.do_not_specialize else _SPECIALIZED for p in self.params]
        # the trailing constexprs enter the key as they are, without a call per argument
        self._split = split = len(kinds) - next(
            (i for i, k in enumerate(reversed(kinds)) if k != _CONSTEXPR), len(kinds))
        self._kinds = tuple(kinds[:split])
        self._launches = L.plan_cache()  # clear_plans() drops these with the plans

    def launch_key(self, device: int, args: tuple, kwargs: dict) -> tuple:
        """The cache key of a launch (Note [cached launches]); raises ``_Uncached`` for an
        argument it cannot describe (an unhashable one fails when the key is looked up)."""
        split = self._split
        return (device, *map(_token, args[:split], self._kinds), *args[split:], *kwargs.items())

    def _tail(self, given: int, kwargs: dict):
        """``kwargs -> tuple``: the parameters after the ``given`` positional ones, in signature
        order, from ``kwargs`` or their defaults (None when there are none). The key fixes
        which keywords a launch passes, so this is decided once per cached launch."""
        params = list(self.signature.parameters.items())[given:]
        if not params:
            return None
        names = tuple(name for name, _ in params)
        if all(name in kwargs for name in names):  # the usual case: one C call per launch
            pick = operator.itemgetter(*names)
            return pick if len(names) > 1 else lambda kw: (pick(kw),)
        return lambda kw: tuple(kw.get(name, p.default) for name, p in params)

    def run(self, *args, grid, warmup, **kwargs):
        if warmup or self.pre_run_hooks or callable(grid) or _hooked():
            return super().run(*args, grid=grid, warmup=warmup, **kwargs)
        device = driver.active.get_current_device()
        try:
            launch = self._launches.get(key := self.launch_key(device, args, kwargs))
        except (_Uncached, TypeError):  # TypeError: an unhashable constexpr or option
            return super().run(*args, grid=grid, warmup=warmup, **kwargs)
        if launch is None:
            kernel = _compiled(super().run(*args, grid=grid, warmup=warmup, **kwargs))
            try:  # (a kernel whose handles cannot load launches through Triton, uncached)
                self._launches[key] = (kernel.run, kernel.function, kernel.packed_metadata,
                                       self._tail(len(args), kwargs), kernel)
            except Exception:  # noqa: BLE001, S110 - Triton's own path reports the error
                pass
            return kernel
        run, function, metadata, tail, kernel = launch
        if self.check and _compiled(super().run(*args, grid=grid, warmup=True,
                                                **kwargs)) is not kernel:
            raise LaunchMismatch(f"{self.__name__}: the cached launch would run another kernel "
                                 f"than Triton's dispatch picks for these arguments")
        if tail is not None:
            args += tail(kwargs)
        n = len(grid)
        run(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1,
            driver.active.get_current_stream(device), function, metadata, None, None, None,
            *args)
        return kernel


def jit(fn=None, **kwargs):
    """``triton.jit`` with cached launches (Note [cached launches]); ``triton.jit`` itself
    under the interpreter. Takes ``triton.jit``'s keyword arguments."""
    def decorate(f):
        if INTERPRET:
            return triton.jit(f, **kwargs)
        return CachedLaunchJIT(f, **kwargs)

    return decorate if fn is None else decorate(fn)
