"""NVTX ranges and marks (``tg.cuda.nvtx``, ``emit_nvtx``), sent through the ``nvtx`` package.

NVTX v3 is header-only: the ``nvtx`` package's extension carries the entry points, and at its
first NVTX call it loads the tool named by ``NVTX_INJECTION64_PATH`` (Nsight Systems, Nsight
Compute, or the recorder in tests/nvtx). With no tool attached every call here reduces to a
little bookkeeping. All events go to the default NVTX domain, as PyTorch's do.

Note [NVTX messages]
    The ``nvtx`` package sends every message as a *registered string* (no ASCII form), and its
    ``Domain.get_registered_string`` caches every string forever. We keep our own handles:
    messages that repeat (user ranges, marks) are registered once and kept in a bounded cache;
    messages that never repeat (emit_nvtx's ``"mul, seq = 1234"``) are registered and used
    once, through a per-thread attributes object, so a long run does not grow a Python cache.
    This reaches into ``nvtx._lib.lib`` (as in nvtx 0.2.17; checked once, at initialisation);
    where that layer differs (older releases took ASCII messages there), the module falls back
    to the package's public ``push_range``/``pop_range``/``mark``, which caches messages.

Note [NVTX initialisation]
    Nothing here touches NVTX at import: the first range or mark initialises it, so setting
    ``NVTX_INJECTION64_PATH`` any time before then works. Whether a tool is attached is fixed
    from then on for the process (NVTX reads the variable once).

Cost (measured on a 2-core AMD EPYC VM, CPython 3.11, with a tool attached that records
nothing): a ``range_push`` + ``range_pop`` pair with a repeated message about 0.37 us, with a
new message each time (``push_once``, as emit_nvtx does) about 0.62 us, a ``mark`` about
0.15 us; with no tool attached about 0.27 us per pair. For comparison, the ``nvtx`` package's
own ``push_range`` + ``pop_range`` took 0.83 us there.
"""

from __future__ import annotations

import builtins
import functools
import os
import threading
import warnings


def is_nvtx_package(module) -> bool:
    """Whether an imported ``nvtx`` is the NVTX package: a folder named nvtx on sys.path
    imports as an empty namespace package (pytest puts tests/ there, and tests/nvtx/ exists:
    the GPU run of 2026-11-30 without the wheel raised AttributeError inside emit_nvtx)."""
    return hasattr(module, "get_domain")


try:
    import nvtx as _nvtx
except ImportError:  # a machine without the package (a dependency, yet not always installed)
    _nvtx = None
if _nvtx is not None and not is_nvtx_package(_nvtx):
    _nvtx = None

__all__ = ["is_enabled", "mark", "range", "range_end", "range_pop", "range_push", "range_start"]

# -- state ------------------------------------------------------------------------------------

_UNINIT, _FAST, _PUBLIC, _OFF = 0, 1, 2, 3
_mode = _UNINIT          # how events are sent (set once, by _init)
_dom = None              # the nvtx Domain of the default NVTX domain (_FAST, _PUBLIC)
_dh = None               # its DomainHandle (_FAST)
_EA = _SH = None         # nvtx._lib.lib.EventAttributes / StringHandle (_FAST)
_lib_push = _lib_pop = _lib_mark = None
_init_lock = threading.Lock()

_CACHE_LIMIT = 4096      # repeated messages kept registered; cleared when full
_cache: dict = {}        # message -> EventAttributes (read-only once built; shared by threads)
_range_ids: dict = {}    # _PUBLIC mode: our int id -> the package's opaque range handle
_next_id = iter(builtins.range(1, 1 << 62)).__next__

_tls = threading.local()


class _Msg:
    """Stands in for ``nvtx.RegisteredString``: EventAttributes only reads ``.handle``."""

    __slots__ = ("handle",)


class _Slot:
    """Per-thread: the depth of open ranges pushed here, and reusable event attributes."""

    __slots__ = ("attrs", "depth", "msg")

    def __init__(self):
        self.depth = 0
        self.attrs = None
        self.msg = None


def _slot() -> _Slot:
    s = _tls.__dict__.get("slot")
    if s is None:
        s = _tls.slot = _Slot()
        if _mode == _UNINIT:
            _init()
        if _mode == _FAST:
            s.msg = _Msg()
            s.attrs = _EA(_dom, None, None, None, None)
    return s


def _init() -> None:
    global _mode, _dom, _dh, _EA, _SH, _lib_push, _lib_pop, _lib_mark
    with _init_lock:
        if _mode != _UNINIT:
            return
        if _nvtx is None:
            # Without the package no range can be sent. That matters only when a tool listens
            # (one is named in NVTX_INJECTION64_PATH): say so there, once; elsewhere NVTX calls
            # are no-ops anyway, as they are with the package and no tool.
            if os.environ.get("NVTX_INJECTION64_PATH"):
                warnings.warn("NVTX ranges (tg.cuda.nvtx, emit_nvtx) are not emitted: the "
                              "`nvtx` package is not installed (pip install nvtx)",
                              RuntimeWarning, stacklevel=3)
            _mode = _OFF
            return
        if not _nvtx.enabled():  # NVTX_DISABLE is set
            _mode = _OFF
            return
        dom = _nvtx.get_domain(None)  # the first NVTX call: NVTX loads its tool here
        if getattr(dom, "handle", None) is None:  # a DummyDomain: no tool attached
            _mode = _OFF
            return
        _dom = dom
        try:
            from nvtx._lib import lib
            m = _Msg()
            m.handle = lib.StringHandle(dom.handle, "tritongrad")
            lib.EventAttributes(dom, m, None, None, None)
            _EA, _SH, _dh = lib.EventAttributes, lib.StringHandle, dom.handle
            _lib_push, _lib_pop, _lib_mark = lib.push_range, lib.pop_range, lib.mark
            if not (hasattr(dom, "start_range") and hasattr(dom, "end_range")):
                raise AttributeError("nvtx.Domain has no start_range/end_range")
            _mode = _FAST
        except (ImportError, AttributeError, TypeError, ValueError):  # another nvtx release
            _mode = _PUBLIC


def _attrs(msg: str):
    """The cached event attributes for a repeated message (Note [NVTX messages])."""
    a = _cache.get(msg)
    if a is None:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        m = _Msg()
        m.handle = _SH(_dh, msg)
        a = _cache[msg] = _EA(_dom, m, None, None, None)
    return a


def is_enabled() -> bool:
    """Whether an NVTX tool is attached, so ranges are recorded (initialises NVTX)."""
    if _mode == _UNINIT:
        _init()
    return _mode in (_FAST, _PUBLIC)


# -- the torch.cuda.nvtx surface --------------------------------------------------------------

def range_push(msg: str) -> int:
    """Pushes a range onto this thread's stack of nested ranges.

    Args:
        msg: the message shown for the range.

    Returns:
        The zero-based depth of the range that is started, counted per thread over the
        ranges pushed through tritongrad (PyTorch returns the tool's count, which is the same
        unless other libraries push ranges on the thread too).

    Example:
        >>> import tritongrad as tg
        >>> tg.cuda.nvtx.range_push("step")
        0
        >>> tg.cuda.nvtx.range_pop()
        0
    """
    s = _tls.__dict__.get("slot") or _slot()
    d = s.depth
    s.depth = d + 1
    if _mode == _FAST:
        _lib_push(_cache.get(msg) or _attrs(msg), _dh)
    elif _mode == _PUBLIC:
        _nvtx.push_range(msg, color=None)
    return d


def range_pop() -> int:
    """Pops the innermost range pushed on this thread.

    Returns:
        The zero-based depth of the range that is ended, or -1 if none was open (the pop is
        still sent, as NVTX tools expect to see it).
    """
    s = _tls.__dict__.get("slot") or _slot()
    d = s.depth - 1
    if d >= 0:
        s.depth = d
    if _mode == _FAST:
        _lib_pop(_dh)
    elif _mode == _PUBLIC:
        _nvtx.pop_range()
    return d


def range_start(msg: str) -> int:
    """Starts a process range, which may end on any thread; returns its id for ``range_end``."""
    if _mode == _UNINIT:
        _init()
    if _mode == _FAST:
        return _dom.start_range(_attrs(msg))
    if _mode == _PUBLIC:
        rid = _next_id()
        _range_ids[rid] = _nvtx.start_range(msg, color=None)
        return rid
    return 0


def range_end(range_id: int) -> None:
    """Ends the process range ``range_id`` returned by ``range_start``."""
    if _mode == _FAST:
        _dom.end_range(range_id)
    elif _mode == _PUBLIC:
        handle = _range_ids.pop(range_id, None)
        if handle is not None:
            _nvtx.end_range(handle)


def mark(msg: str) -> None:
    """Marks an instantaneous event with message ``msg``."""
    if _mode == _UNINIT:
        _init()
    if _mode == _FAST:
        _lib_mark(_cache.get(msg) or _attrs(msg), _dh)
    elif _mode == _PUBLIC:
        _nvtx.mark(msg, color=None)


class range:  # shadows the builtin on purpose, as torch.cuda.nvtx.range does
    """Context manager / decorator that pushes a range on entry and pops it on exit.

    Extra arguments are passed to ``msg.format()``, as in ``torch.cuda.nvtx.range``; the
    message is formatted once, when the object is made.

    Example:
        >>> import tritongrad as tg
        >>> with tg.cuda.nvtx.range("epoch {}", 3):
        ...     pass
        >>> @tg.cuda.nvtx.range("loss")
        ... def loss(x):
        ...     return x
    """

    __slots__ = ("msg",)

    def __init__(self, msg: str, *args, **kwargs):
        self.msg = msg.format(*args, **kwargs)

    def __enter__(self):
        range_push(self.msg)
        return self

    def __exit__(self, *exc):
        range_pop()
        return False

    def __call__(self, fn):
        msg = self.msg

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            range_push(msg)
            try:
                return fn(*args, **kwargs)
            finally:
                range_pop()

        return wrapper


# -- for emit_nvtx: messages that never repeat (Note [NVTX messages]) ----------------------------

def push_once(msg: str) -> None:
    """``range_push`` for a message that will not be seen again: nothing is cached."""
    s = _tls.__dict__.get("slot") or _slot()
    s.depth += 1
    if _mode == _FAST:
        m = s.msg
        m.handle = _SH(_dh, msg)
        a = s.attrs
        a.message = m
        _lib_push(a, _dh)
    elif _mode == _PUBLIC:
        _nvtx.push_range(msg, color=None)


def pop() -> None:
    """``range_pop`` without the return value."""
    s = _tls.__dict__.get("slot") or _slot()
    if s.depth > 0:
        s.depth -= 1
    if _mode == _FAST:
        _lib_pop(_dh)
    elif _mode == _PUBLIC:
        _nvtx.pop_range()
