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
- arrays: the dtype when the address is 16-byte aligned, else ``(dtype, False)``;
- integers: the width Triton gives them (int32, int64, uint64: 0, 4, 8), and for parameters
  Triton specializes, plus 1 for the value 1 and 2 for a multiple of 16, as one int;
- tuples: their elements' keys; other values: their type;
- any value of a parameter whose annotation fixes its type (``x: tl.int64`` not specialized,
  or a float or bool annotation: Triton's binder then ignores the value): its type;
- keyword arguments (launch options such as ``num_warps``): their values.

A key is a flat tuple of objects that hash in C (dtypes by identity, ints, types), nested only
for misaligned arrays and tuple arguments: a tuple per argument cost its making and a second
level of hashing on every launch. Tokens of different kinds never compare equal (a dtype, a
tuple, an int, a type), so an argument's position and token decide its specialization.

That key is at least as fine as Triton's specialization, so equal keys mean the same compiled
kernel; later launches with an equal key call the launcher directly with the arguments in
signature order. The key is computed by one expression per parameter, generated once per
kernel and argument count (``_key_function``; ``_token`` is the same rule for one argument),
as Triton generates its own binder. A value of any other kind, a callable grid, a warmup,
pre-run hooks or a non-empty launch hook chain (a profiler such as proton) take Triton's own
path, as does every launch while ``CachedLaunchJIT.enabled`` is off (the launch benchmark's
comparison rows). With ``TRITONGRAD_CHECK_LAUNCHES=1`` (``CachedLaunchJIT.check``) every cached
launch also asks Triton which kernel it would pick and raises ``LaunchMismatch`` if that is
another one: the sm_90 compile check and the GPU campaign's test steps run that way. Options
Triton reads from its knobs at compile time (``TRITON_DEBUG``) are fixed at a layout's first
launch; ``clear_plans()`` (in _launch.py) drops the cached launches with the plans.

Note [concurrent first launches]: Triton's dispatch is not made for threads. Two threads that
miss its kernel cache for one key at once each compile the kernel (each ``CompiledKernel``
loading a module of its own on the GPU), and the cache keeps whichever compile finished last,
while each thread goes on with its own. A cached launch that kept one of them then held another
object than Triton's dispatch picks: the same binary, so the results were right, but the check
compared objects and raised ``LaunchMismatch`` (the GPU campaign's thread tests, eight threads
launching their first kernels at once). So a kernel's first launches of new keys take Triton's
path one at a time (``_first_lock``, per kernel; cached launches never take it): a second
thread with the same key waits, then finds the first one's compile in Triton's cache, and
every cached launch of a key holds the object Triton's cache holds. Launches that skip the
cache (hooks, warmups, uncached arguments) still reach Triton unserialized, so the check also
takes two kernels with the same compilation hash (Triton's digest of source, specialization,
options and target) as the same kernel; another specialization has another hash.

Note [plan launches]: ``kernel[grid](*args, **options)`` still costs a few microseconds in the
cached case: the proxy ``__getitem__`` makes, the keyword arguments packed twice, and a key over
every argument, the layout's included. A launcher whose plan (Note [lean launches] in
_launch.py) fixes the grid, the options and the trailing arguments of a kernel keeps a
``Launch`` in the plan instead, made once with those, and calls it with the leading arguments
that vary per call (arrays, scalars, per-call constexprs such as matmul's precision; the
kernels put those first in their signatures; the elementwise plans bind their formula and
dtypes too, Note [interned constants] in elementwise.py, as a ``tl.dtype`` hashes in Python).
A ``Launch`` keeps its own cached launches, keyed by the device and the leading arguments' keys
only (the rest is the plan's), so a repeat is one key expression, one dict lookup and the
compiled launcher called with the plan's arguments already packed. Its first launch of a key, and every launch under the interpreter, under
launch hooks or pre-run hooks, or with cached launches off, is ``kernel[grid](...)`` (the
kernel's cached launch or Triton's dispatch); with ``CachedLaunchJIT.check`` every cached
``Launch`` is checked against Triton's pick as the kernel's own cached launches are.

Note [direct launches]: a compiled kernel's launcher (Triton's ``CudaLauncher``) is a Python
``__call__`` around the C ``launch`` function: it asks for global and profile scratch memory
(none for almost every kernel), checks for the sanitizer, and reorders the arguments, about
0.9 us per launch on top of the C call. A cached launch (a kernel's own or a ``Launch``'s) of a
kernel that needs no scratch memory and no sanitizer calls ``launch`` itself with the
arguments ``__call__`` would pass it (``_direct``). That order is Triton's and changes between
releases, so it is written out for the releases tested (3.6 and 3.9;
tests/runtime/test_host_path.py compares it with what their ``__call__`` passes); any other
release, launcher class or kernel with scratch memory goes through ``__call__``.
``TRITONGRAD_DIRECT_LAUNCH=0`` sends every launch through ``__call__`` (a switch for the first
GPU runs: the direct call has been checked against a recording stand-in of ``launch`` only).

Note [packed pointers]: Triton's C launch turns each pointer argument that is not an int into
an address by calling its ``data_ptr()`` (a Python call from C), then asks the driver whether
the address is device memory (``cuPointerGetAttribute``), on every launch; an int it takes as
the address, unchecked. A cached launch (a kernel's own or a ``Launch``'s) therefore passes its
arrays as their addresses (``_packer``: one generated expression per array, for the argument
layout its key fixes, so each array's element size is a constant). The check has nothing to
catch here: every array a kernel gets is tritongrad device memory (an array of another device
never reaches a CUDA kernel: the dispatch checks devices first). A first launch and Triton's
own path still pass the arrays (Triton's binder reads their dtypes).
``TRITONGRAD_PACK_POINTERS=0`` passes the arrays on every launch (bench_knobs times both).

Note [launch target]: every cached launch needs the current device (for its key) and that
device's current stream (for the launch). Asked of Triton's active driver, that is two calls
through it, each reading the thread's state again (tritongrad's driver,
runtime/triton_driver.py). When tritongrad's driver is the active one (its
``get_current_device`` is ours), the launch paths call ``launch_target()`` instead: the same
answers, from one read; any other driver is asked as Triton asks it (``_target``). A plan's
``Launch`` (every op's launch) has ``launch_target()`` written out, and both paths read the
active driver from Triton's ``driver._active`` field rather than its ``active`` property (a
call each; the property still serves while the field is None): 0.1-0.15 us per launch.

Under the interpreter (``TRITON_INTERPRET=1``, CI and the emulated device) ``jit`` is
``triton.jit``: interpreted kernels have no compiled launcher to cache.
"""

from __future__ import annotations

import operator
import os
import threading

import triton
from triton import knobs
from triton.runtime import driver
from triton.runtime.jit import JITFunction

from ...runtime import driver as _drv
from ...runtime.array import DeviceArray
from ...runtime.streams import _state as _stream_state
from ...runtime.triton_driver import _current_device, launch_target
from . import _launch as L
from .compat import INTERPRET

__all__ = ["CachedLaunchJIT", "Launch", "LaunchMismatch", "jit"]

_I32, _I64 = 1 << 31, 1 << 63
_DIRECT = os.environ.get("TRITONGRAD_DIRECT_LAUNCH", "1").strip() != "0"  # Note [direct launches]
_PACK = os.environ.get("TRITONGRAD_PACK_POINTERS", "1").strip() != "0"  # Note [packed pointers]
_PACKERS: dict = {}  # (argument count, ((position, element size), ...)) -> its packer
# parameter kinds, for the key; _TYPED: a parameter whose annotation fixes its Triton type
# (do_not_specialize, or a float or bool annotation), so Triton never looks at the value
_SPECIALIZED, _CONSTEXPR, _UNSPECIALIZED, _TYPED = 0, 1, 2, 3
# Triton's DriverConfig keeps the active driver in ``_active`` (3.6 and 3.9), behind an
# ``active`` property that fills it on first use: the launch paths read the field, and fall back
# to the property while it is None or in a release without it (Note [launch target])
_ACTIVE_SLOT = "_active" in vars(driver)


class _Uncached(Exception):
    """An argument the key cannot describe: the launch takes Triton's own path."""


class LaunchMismatch(RuntimeError):
    """A cached launch would run another kernel than Triton's own dispatch picks."""


def _width(v: int) -> int:
    return 0 if -_I32 <= v < _I32 else 4 if -_I64 <= v < _I64 else 8


def _token(a, kind: int):
    """The key of one argument (see Note [cached launches]); ``_key_function`` inlines it."""
    if kind == _CONSTEXPR:
        return a
    t = type(a)
    if kind == _TYPED:
        return t
    if t is DeviceArray:
        dt = a.dtype
        return (dt, False) if (a.storage.ptr + a.offset * dt.itemsize) & 15 else dt
    if t is int:
        if kind == _UNSPECIALIZED:
            return _width(a)
        return _width(a) | (1 if a == 1 else 0 if a & 15 else 2)
    if t is tuple:
        return tuple(_token(v, kind) for v in a)
    if t is float or t is bool or a is None:
        return t
    raise _Uncached


_WIDTH = "(0 if -{I32} <= {a} < {I32} else 4 if -{I64} <= {a} < {I64} else 8)"


def _key_function(kinds: tuple, options: bool):
    """``key(device, args, kwargs) -> tuple``: ``(device, *map(_token, args, kinds),
    *kwargs.items())`` for ``len(kinds)`` arguments (``key(device, args)`` and no options
    without ``options``: a plan's ``Launch`` binds them), written out as one expression per
    argument (arrays, None and integers inline; other kinds through ``_token``), as Triton
    generates its own binder: a call of ``_token`` per argument cost more than the rest of a
    cached launch. ``args`` of another length raise ValueError."""
    names = [f"a{i}" for i in range(len(kinds))]
    exprs = []
    for a, kind in zip(names, kinds):
        if kind == _CONSTEXPR:
            exprs.append(a)
            continue
        if kind == _TYPED:
            exprs.append(f"type({a})")
            continue
        width = _WIDTH.format(a=a, I32=_I32, I64=_I64)
        integer = (width if kind == _UNSPECIALIZED else
                   f"({width} | (1 if {a} == 1 else 0 if {a} & 15 else 2))")
        # an array at offset 0 of a 16-byte aligned storage (every allocator block is 512-byte
        # aligned) is aligned without the address arithmetic
        exprs.append(f"(({a}.dtype if not ({a}.offset or {a}.storage.ptr & 15)"
                     f" else dt if not ({a}.storage.ptr + {a}.offset * (dt := {a}.dtype).itemsize)"
                     f" & 15 else (dt, False)) if type({a}) is DeviceArray"
                     f" else NoneType if {a} is None"
                     f" else {integer} if type({a}) is int else token({a}, {kind}))")
    source = (f"def key(device, args{', kwargs' if options else ''}):\n"
              f"    [{', '.join(names)}] = args\n"
              f"    return (device, {''.join(e + ', ' for e in exprs)}"
              f"{'*kwargs.items()' if options else ''})\n")
    namespace = {"DeviceArray": DeviceArray, "NoneType": type(None), "token": _token}
    exec(source, namespace)  # noqa: S102 - source made above from parameter kinds only
    return namespace["key"]


def _packer(args: tuple):
    """``pack(args) -> tuple``: arguments laid out as ``args`` (a launch key fixes the layout)
    with each ``DeviceArray`` replaced by its device address (Note [packed pointers]); None
    when none is an array or packing is off."""
    arrays = tuple((i, a.dtype.itemsize) for i, a in enumerate(args) if type(a) is DeviceArray)
    if not (_PACK and arrays):
        return None
    spec = (len(args), arrays)
    pack = _PACKERS.get(spec)
    if pack is None:
        names = [f"a{i}" for i in range(len(args))]
        out = list(names)
        for i, size in arrays:
            out[i] = f"{names[i]}.storage.ptr + {names[i]}.offset * {size}"
        source = (f"def pack(args):\n    [{', '.join(names)}] = args\n"
                  f"    return ({''.join(o + ', ' for o in out)})\n")
        namespace: dict = {}
        exec(source, namespace)  # noqa: S102 - source made above from positions and sizes
        pack = _PACKERS[spec] = namespace["pack"]
    return pack


def _kind(p) -> int:
    """The kind of Triton ``KernelParam`` ``p`` for the key (as Triton's binder decides)."""
    if p.is_constexpr:
        return _CONSTEXPR
    typed = p.annotation_type
    if isinstance(typed, str) and typed and (p.do_not_specialize or typed == "u1"
                                             or typed[:2] in ("fp", "bf")):
        return _TYPED
    return _UNSPECIALIZED if p.do_not_specialize else _SPECIALIZED


def _hooked() -> bool:
    """Whether a launch hook is installed (Triton's hook chains; a plain callable in older
    releases): hooks see every launch through Triton's own path."""
    rt = knobs.runtime
    try:  # (Triton's HookChains: two attribute reads, no getattr calls, on every launch)
        return bool(rt.launch_enter_hook.calls or rt.launch_exit_hook.calls)
    except AttributeError:  # a plain callable or None
        enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
        return bool(getattr(enter, "calls", enter) or getattr(leave, "calls", leave))


def _target(active) -> tuple:
    """(device, stream handle) of a launch as the active driver answers them. Tritongrad's
    driver answers both from one read of the thread's state (``launch_target``), so the launch
    paths call that directly when it is the active one (Note [launch target])."""
    if active.get_current_device is _current_device:
        return launch_target()
    device = active.get_current_device()
    return device, active.get_current_stream(device)


def _compiled(kernel):
    """The CompiledKernel of what ``JITFunction.run`` returned (Triton 3.6 may return a future
    of one when it compiles asynchronously)."""
    return kernel.result() if hasattr(kernel, "result") else kernel


def _release() -> str:
    return ".".join(triton.__version__.split(".")[:2])


def _direct(run, function, metadata):
    """``fire(g0, g1, g2, stream, args)``: the C launch of ``run``'s kernel (its ``function``
    and packed ``metadata``) on the grid (g0, g1, g2) with the kernel's arguments ``args`` (a
    tuple), past ``CudaLauncher.__call__`` (Note [direct launches]); None when ``run`` needs
    its ``__call__``."""
    try:
        from triton.backends.nvidia.driver import CudaLauncher
    except ImportError:  # (a Triton without its CUDA backend)
        return None
    if (not _DIRECT or type(run) is not CudaLauncher or run.global_scratch_size
            or run.profile_scratch_size or getattr(run, "gsan_enabled", False)):
        return None
    release = _release()
    launch, coop, pdl = run.launch, run.launch_cooperative_grid, run.launch_pdl
    if release == "3.9":  # the kernel's arguments as one tuple, described by two fields
        annotations, signature = run.arg_annotations, run.kernel_signature

        def fire(g0, g1, g2, stream, args):
            launch(g0, g1, g2, stream, function, coop, pdl, metadata, None, None, None, None,
                   None, annotations, signature, args)
    elif release == "3.6":  # scratch pointers, then metadata, hooks and arguments spread

        def fire(g0, g1, g2, stream, args):
            launch(g0, g1, g2, stream, function, coop, pdl, None, None, metadata, None, None,
                   None, *args)
    else:
        return None
    return fire


class CachedLaunchJIT(JITFunction):
    """A ``JITFunction`` whose launches reuse the compiled launcher (Note [cached launches])."""

    # also ask Triton which kernel it would launch, and compare (the GPU campaign's tests)
    check = os.environ.get("TRITONGRAD_CHECK_LAUNCHES", "0") not in ("", "0")
    # off: every launch takes Triton's own path (what the launch benchmark compares with)
    enabled = True

    # Keys hash the formulas passed as constexprs: JITCallable hashes its source digest under
    # a lock, and compares by identity anyway, so identity hashing is equivalent and cheaper.
    __hash__ = object.__hash__

    def __init__(self, fn, **kwargs):
        super().__init__(fn, **kwargs)
        self._kinds = tuple(_kind(p) for p in self.params)
        self._keys: dict = {}  # (argument count, options) -> its key function
        self._launches = L.plan_cache()  # clear_plans() drops these with the plans
        self._first_lock = threading.RLock()  # Note [concurrent first launches]

    def key_function(self, n: int, options: bool = False):
        """The key function of launches passing the first ``n`` parameters positionally:
        ``key(device, args, kwargs)``, or ``key(device, args)`` without ``options``
        (``_key_function``)."""
        fn = self._keys.get((n, options))
        if fn is None:
            fn = self._keys[n, options] = _key_function(self._kinds[:n], options)
        return fn

    def launch_key(self, device: int, args: tuple, kwargs: dict) -> tuple:
        """The cache key of a launch (Note [cached launches]); raises ``_Uncached`` for an
        argument it cannot describe (an unhashable one fails when the key is looked up)."""
        return self.key_function(len(args), True)(device, args, kwargs)

    def check_pick(self, kernel, args: tuple, grid, kwargs: dict) -> None:
        """Raises ``LaunchMismatch`` unless Triton's dispatch picks ``kernel`` for these
        arguments (``check``: every cached launch, this kernel's own or a ``Launch``'s)."""
        picked = _compiled(JITFunction.run(self, *args, grid=grid, warmup=True, **kwargs))
        # (or another object of the same compilation: Note [concurrent first launches])
        if picked is not kernel and getattr(picked, "hash", 0) != getattr(kernel, "hash", 1):
            raise LaunchMismatch(f"{self.__name__}: the cached launch would run another kernel "
                                 f"than Triton's dispatch picks for these arguments")

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

    def _first(self, key: tuple, args: tuple, grid, kwargs: dict):
        """The first launch of ``key``: through Triton's dispatch, then kept; one at a time per
        kernel, so that concurrent first launches compile once (Note [concurrent first
        launches]). A thread that waited finds the compile in Triton's cache."""
        with self._first_lock:
            kernel = _compiled(super().run(*args, grid=grid, warmup=False, **kwargs))
            if key in self._launches:  # another thread's first launch of the key came first
                return kernel
            try:  # (a kernel whose handles cannot load launches through Triton, uncached)
                run, function, metadata = kernel.run, kernel.function, kernel.packed_metadata
                self._launches[key] = (run, function, metadata, self._tail(len(args), kwargs),
                                       kernel, _direct(run, function, metadata), _packer(args))
            except Exception:  # noqa: BLE001, S110 - Triton's own path reports the error
                pass
            return kernel

    def run(self, *args, grid, warmup, **kwargs):
        if (warmup or not self.enabled or self.pre_run_hooks or callable(grid)
                or _hooked()):
            return super().run(*args, grid=grid, warmup=warmup, **kwargs)
        active = driver._active if _ACTIVE_SLOT else None  # (Launch.__call__'s lookups)
        if active is None:
            active = driver.active
        device, stream = (launch_target() if active.get_current_device is _current_device
                          else _target(active))
        try:
            launch = self._launches.get(key := self.launch_key(device, args, kwargs))
        except (_Uncached, TypeError):  # TypeError: an unhashable constexpr or option
            return super().run(*args, grid=grid, warmup=warmup, **kwargs)
        if launch is None:
            return self._first(key, args, grid, kwargs)
        run, function, metadata, tail, kernel, fire, pack = launch
        if self.check:
            self.check_pick(kernel, args, grid, kwargs)
        if pack is not None:  # Note [packed pointers]
            args = pack(args)
        if tail is not None:
            args += tail(kwargs)
        n = len(grid)
        g0, g1, g2 = grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1
        if fire is not None:  # Note [direct launches]
            fire(g0, g1, g2, stream, args)
        else:
            run(g0, g1, g2, stream, function, metadata, None, None, None, *args)
        return kernel


class Launch:
    """``kernel[grid](*head, *tail, **options)`` with grid, tail and options fixed by a plan,
    called as ``launch(*head)`` (Note [plan launches]); returns what the launch returns (the
    compiled kernel; None under the interpreter).

    Args:
        kernel: a ``@jit`` kernel (a ``CachedLaunchJIT``, or ``triton.jit``'s function under
            the interpreter).
        grid: the grid, a tuple of one to three ints.
        tail: the values of the kernel's last ``len(tail)`` parameters; the call passes the
            others, in signature order.
        options: launch options (``num_warps``, ``enable_fp_fusion`` ...).
    """

    __slots__ = ("_grid3", "_key", "_launches", "grid", "kernel", "options", "tail")

    def __init__(self, kernel, grid: tuple, tail: tuple = (), **options):
        self.kernel, self.grid, self.tail, self.options = kernel, grid, tail, options
        self._grid3 = (*grid, 1, 1)[:3]
        cached = isinstance(kernel, CachedLaunchJIT)
        self._launches: dict | None = {} if cached else None
        self._key = kernel.key_function(len(kernel.params) - len(tail)) if cached else None

    def __call__(self, *head):
        kernel = self.kernel
        launches = self._launches
        rt = knobs.runtime
        try:  # _hooked(), inline (a call is a tenth of a cached launch)
            hooked = rt.launch_enter_hook.calls or rt.launch_exit_hook.calls
        except AttributeError:  # a plain callable or None
            hooked = _hooked()
        if launches is None or hooked or not kernel.enabled or kernel.pre_run_hooks:
            return kernel[self.grid](*head, *self.tail, **self.options)
        # (driver.active without its property call; Note [launch target])
        active = driver._active if _ACTIVE_SLOT else None
        if active is None:
            active = driver.active
        if active.get_current_device is _current_device:  # launch_target(), inline
            st = _stream_state
            device = st.device
            (_drv._driver or _drv.get_driver()).activate(device)
            s = st.streams.get(device)
            stream = 0 if s is None else s.cuda_stream
        else:
            device, stream = _target(active)
        try:
            launch = launches.get(key := self._key(device, head))
        except (_Uncached, TypeError, ValueError):  # unhashable, or not len(head) arguments
            return kernel[self.grid](*head, *self.tail, **self.options)
        if launch is None:
            return self._first(key, head)
        run, function, metadata, compiled, fire, pack = launch
        if kernel.check:
            kernel.check_pick(compiled, head + self.tail, self.grid, self.options)
        if pack is not None:  # Note [packed pointers]
            head = pack(head)
        g0, g1, g2 = self._grid3
        if fire is not None:  # Note [direct launches]
            fire(g0, g1, g2, stream, head + self.tail)
            return compiled
        run(g0, g1, g2, stream, function, metadata, None, None, None, *head, *self.tail)
        return compiled

    def _first(self, key: tuple, head: tuple):
        """The first launch of ``key``: through the kernel's own launch path, then kept."""
        compiled = _compiled(self.kernel[self.grid](*head, *self.tail, **self.options))
        try:  # (a kernel whose handles cannot load launches through Triton, uncached)
            run, function, metadata = compiled.run, compiled.function, compiled.packed_metadata
            self._launches[key] = (run, function, metadata, compiled,
                                   _direct(run, function, metadata), _packer(head))
        except Exception:  # noqa: BLE001, S110 - Triton's own path reports the error
            pass
        return compiled


def jit(fn=None, **kwargs):
    """``triton.jit`` with cached launches (Note [cached launches]); ``triton.jit`` itself
    under the interpreter. Takes ``triton.jit``'s keyword arguments."""
    def decorate(f):
        if INTERPRET:
            return triton.jit(f, **kwargs)
        return CachedLaunchJIT(f, **kwargs)

    return decorate if fn is None else decorate(fn)
