"""CUDA graphs: ``CUDAGraph``, the ``graph`` context manager and ``graph_pool_handle``.

As ``torch.cuda``'s. A graph is captured from a stream (Note [stream capture] in driver.py):
the kernels, device copies and memsets queued on the capturing stream are recorded, with their
arguments, instead of run, and ``replay()`` runs them all again in one ``cuGraphLaunch``.
Arguments are recorded by value, device pointers included, so a replay reads and writes the
very memory the capture did: fill the capture's input tensors (``static_input.copy_(data)``)
and read its output tensors after each replay.

Memory allocated during a capture comes from the graph's private pool (Note [graph pools] in
allocator.py): it stays reserved for the replays, whether the tensors that held it are alive
or not, and no allocation outside the pool is handed those addresses. Graphs captured one
after the other may share a pool (``pool=other.pool()`` or ``graph_pool_handle()``), which is
safe when they are replayed in the order they were captured and never concurrently.

On the emulated device (``TRITONGRAD_EMULATE_CUDA=1``) the same API records each interpreted
kernel launch, copy and memset and replays them in order, so the semantics and the pool are
tested in CI; the real driver's capture is tested by the ``gpu`` tests.
"""

from __future__ import annotations

import gc
import itertools
import threading
import warnings
from typing import ClassVar

from . import driver as _drv
from . import memory as _memory
from . import streams as _streams

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing"]

_pool_ids = itertools.count(1)
_pool_ids_lock = threading.Lock()


def _next_pool_id() -> int:
    with _pool_ids_lock:  # itertools.count is not documented as thread-safe
        return next(_pool_ids)


def graph_pool_handle() -> tuple[int, int]:
    """Returns an opaque token naming a graph memory pool, to share it between captures.

    Pass it as ``pool=`` to ``graph`` or ``CUDAGraph.capture_begin``: graphs captured into one
    pool may reuse each other's freed memory, which is safe when they are replayed in the order
    they were captured. As ``torch.cuda.graph_pool_handle``.

    Example:
        >>> pool = tg.cuda.graph_pool_handle()  # doctest: +SKIP
        >>> with tg.cuda.graph(g1, pool=pool): ...
        >>> with tg.cuda.graph(g2, pool=pool): ...
    """
    return (0, _next_pool_id())


def _check_pool(pool) -> tuple[int, int]:
    if not (isinstance(pool, tuple) and len(pool) == 2
            and all(isinstance(i, int) and not isinstance(i, bool) for i in pool)):
        raise TypeError(f"pool must be a handle from tg.cuda.graph_pool_handle() or "
                        f"CUDAGraph.pool(), got {pool!r}")
    return pool


# (device, stream handle) -> the CUDAGraph capturing there
_CAPTURING: dict = {}
# what keep_alive was given during captures not made by a CUDAGraph (raw driver captures)
_KEPT_FOREVER: list = []


def keep_alive(*objs) -> None:
    """Keeps ``objs`` alive as long as the graph capturing on the current stream: memory its
    nodes read or copy at every replay that no tensor holds (the multi-tensor kernels'
    address tables and their page-locked sources, kernels/triton/foreach.py). Released by the
    graph's ``reset`` or its end; kept for good under a capture begun without a CUDAGraph."""
    index = _streams.current_device()
    graph = _CAPTURING.get((index, _streams.current_stream_handle(index)))
    (_KEPT_FOREVER if graph is None else graph._kept).extend(objs)


def is_current_stream_capturing() -> bool:
    """True if CUDA graph capture is underway on the current stream of the current device.

    Wraps ``cuStreamIsCapturing``; costs nothing when no capture is underway anywhere, and
    never probes for a driver (none yet: no capture either), so CPU-only code may ask.
    """
    drv = _drv._driver
    if drv is None or not drv.capturing:
        return False
    index = _streams.current_device()
    return drv.stream_is_capturing(index, _streams.current_stream_handle(index))


class CUDAGraph:
    """A CUDA graph: kernels recorded once from a stream, replayed with one launch.

    Prefer the ``graph`` context manager, which captures on a side stream after synchronizing
    and freeing cached memory. As ``torch.cuda.CUDAGraph``.

    Args:
        keep_graph: if False (the default), ``capture_end`` instantiates the executable graph
            and destroys the captured CUgraph; if True, the CUgraph is kept
            (``raw_cuda_graph``) and instantiated by ``instantiate``, or by the first
            ``replay``.

    Example:
        >>> g = tg.cuda.CUDAGraph()  # doctest: +SKIP
        >>> static_x = tg.zeros(8, device="cuda")
        >>> with tg.cuda.graph(g):
        ...     static_y = static_x * 2 + 1
        >>> static_x.copy_(tg.arange(8.0, device="cuda"))
        >>> g.replay()  # static_y now holds arange(8) * 2 + 1
    """

    def __init__(self, keep_graph: bool = False):
        if not isinstance(keep_graph, bool):
            raise TypeError(f"CUDAGraph(): argument 'keep_graph' must be bool, not "
                            f"{type(keep_graph).__name__}")
        self._keep_graph = keep_graph
        self._debug = False  # enable_debug_mode: keep the CUgraph for debug_dump
        self._device = -1
        self._stream: int | None = None  # the capturing stream, during a capture
        self._pool: tuple[int, int] | None = None
        self._graph: int | None = None   # CUgraph
        self._exec: int | None = None    # CUgraphExec
        self._kept: list = []  # what its nodes read that no tensor holds (keep_alive)

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        """Begins capturing the work queued on the current stream (``cuStreamBeginCapture``).

        Args:
            pool: a ``graph_pool_handle()`` or another graph's ``pool()`` to share its memory
                pool; None gives this graph a private pool of its own.
            capture_error_mode: ``"global"`` (the default), ``"thread_local"`` or
                ``"relaxed"``: which calls that are unsafe during a capture (a
                ``cuCtxSynchronize``, say) are refused, on any thread, this thread only, or
                none (``CUstreamCaptureMode``).

        Raises:
            RuntimeError: the current stream is the default stream, or this graph already
                holds a capture.
        """
        if self._stream is not None or self._exec is not None or self._graph is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance.")
        if capture_error_mode not in _drv.CAPTURE_MODES:
            raise ValueError(f"capture_error_mode must be one of "
                             f"{', '.join(map(repr, _drv.CAPTURE_MODES))}, got "
                             f"{capture_error_mode!r}")
        pool = (_next_pool_id(), 0) if pool is None else _check_pool(pool)
        index = _streams.current_device()
        stream = _streams.current_stream_handle(index)
        if stream == 0:  # the legacy stream synchronises with every other: it cannot capture
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, "
                               "after capture, it's ok to replay them on the default stream.)")
        alloc = _memory.allocator(index)
        alloc.begin_allocate_to_pool(pool, stream)
        try:
            _drv.get_driver().stream_begin_capture(index, stream, capture_error_mode)
        except BaseException:
            alloc.end_allocate_to_pool(stream)
            alloc.release_pool(pool)
            raise
        self._device, self._stream, self._pool = index, stream, pool
        _CAPTURING[index, stream] = self

    def capture_end(self) -> None:
        """Ends the capture (``cuStreamEndCapture``) and, unless the graph was made with
        ``keep_graph=True``, instantiates it (``cuGraphInstantiate``), ready to ``replay``.

        Must be called on the stream the capture began on. The graph keeps its memory pool
        until ``reset``.

        Raises:
            RuntimeError: no capture is underway, or the current stream is another one.
            CudaError: the capture was invalidated by an operation it does not permit
                (``CUDA_ERROR_STREAM_CAPTURE_INVALIDATED``); the graph is then empty again.
        """
        if self._stream is None:
            raise RuntimeError("CUDAGraph.capture_end: no capture is underway (call "
                               "capture_begin first)")
        index, stream = self._device, self._stream
        if _streams.current_stream_handle(index) != stream:
            raise RuntimeError("Capture must end on the same stream it began on.")
        drv = _drv.get_driver()
        alloc = _memory.allocator(index)
        self._stream = None
        _CAPTURING.pop((index, stream), None)
        try:
            self._graph = drv.stream_end_capture(index, stream)
        except BaseException:
            alloc.end_allocate_to_pool(stream)
            self._release_pool()
            raise
        alloc.end_allocate_to_pool(stream)
        if drv.graph_node_count(index, self._graph) == 0:
            warnings.warn("The CUDA Graph is empty. This usually means that the graph was "
                          "attempted to be captured on wrong device or stream.", UserWarning,
                          stacklevel=2)
        if not self._keep_graph:
            self.instantiate()
            if not self._debug:  # (debug_dump reads it)
                graph, self._graph = self._graph, None
                drv.graph_destroy(index, graph)

    def instantiate(self) -> None:
        """Instantiates the captured graph (``cuGraphInstantiate``): called by ``capture_end``
        unless ``keep_graph=True``, else by the first ``replay`` if not called before. Again,
        it replaces the executable graph (``raw_cuda_graph_exec``'s handle is then destroyed);
        the CUgraph stays.

        Raises:
            RuntimeError: there is no captured graph.
        """
        if self._graph is None:
            raise RuntimeError("CUDAGraph.instantiate: there is no captured graph to "
                               "instantiate (capture one first; with keep_graph=False, "
                               "capture_end has instantiated it already)")
        drv = _drv.get_driver()
        old, self._exec = self._exec, drv.graph_instantiate(self._device, self._graph)
        if old is not None:
            drv.graph_exec_destroy(self._device, old)

    def _abort(self) -> None:
        """Ends a capture that failed (the exception propagates): nothing is kept."""
        index, stream = self._device, self._stream
        if stream is None:
            return
        self._stream = None
        _CAPTURING.pop((index, stream), None)
        self._kept = []
        try:
            graph = _drv.get_driver().stream_end_capture(index, stream)
            _drv.get_driver().graph_destroy(index, graph)
        except _drv.CudaError:
            pass  # invalidated by the failure being reported
        finally:
            _memory.allocator(index).end_allocate_to_pool(stream)
            self._release_pool()

    def replay(self) -> None:
        """Runs the captured work again on the current stream (``cuGraphLaunch``).

        Raises:
            RuntimeError: nothing was captured successfully.
        """
        graph_exec = self._exec
        if graph_exec is None:
            if self._graph is None:
                raise RuntimeError("Called CUDAGraph.replay without a preceding successful "
                                   "capture.")
            self.instantiate()  # (keep_graph=True, not instantiated yet)
            graph_exec = self._exec
        index = self._device
        _drv.get_driver().graph_launch(index, graph_exec, _streams.current_stream_handle(index))

    def reset(self) -> None:
        """Deletes the graph (``cuGraphExecDestroy``, ``cuGraphDestroy``) and drops its hold
        on the memory pool; the instance may capture again."""
        if self._stream is not None:
            raise RuntimeError("CUDAGraph.reset: a capture is underway; end it first")
        drv = _drv.get_driver()
        graph_exec, graph, self._exec, self._graph = self._exec, self._graph, None, None
        if graph_exec is not None:
            drv.graph_exec_destroy(self._device, graph_exec)
        if graph is not None:
            drv.graph_destroy(self._device, graph)
        self._kept = []
        self._release_pool()

    def _release_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            _memory.allocator(self._device).release_pool(pool)

    def pool(self) -> tuple[int, int]:
        """The token of this graph's memory pool, to capture another graph into it.

        Raises:
            RuntimeError: nothing was captured successfully.
        """
        if self._pool is None or (self._exec is None and self._graph is None):
            raise RuntimeError("Called CUDAGraph.pool without a preceding successful capture.")
        return self._pool

    def raw_cuda_graph(self) -> int:
        """The captured CUgraph as an int (``keep_graph=True`` only), for cuda-python's graph
        management calls.

        Raises:
            RuntimeError: the graph was made with ``keep_graph=False``, or nothing was captured.
        """
        if not self._keep_graph:
            raise RuntimeError("You cannot access the raw cudaGraph_t instance unless "
                               "CUDAGraph was initialized with keep_graph=true")
        if self._graph is None:
            raise RuntimeError("CUDAGraph.raw_cuda_graph: nothing was captured")
        return self._graph

    def raw_cuda_graph_exec(self) -> int:
        """The executable graph (CUgraphExec) as an int: after ``capture_end`` with
        ``keep_graph=False``, else after ``instantiate``. A later ``instantiate`` destroys it.

        Raises:
            RuntimeError: the graph is not instantiated.
        """
        if self._exec is None:
            raise RuntimeError("You cannot access the raw cudaGraphExec_t instance until "
                               "instantiate() has been called")
        return self._exec

    def enable_debug_mode(self) -> None:
        """Keeps the captured CUgraph after ``capture_end`` for ``debug_dump``."""
        self._debug = True

    def debug_dump(self, debug_path: str) -> None:
        """Writes the captured graph to ``debug_path`` as Graphviz DOT
        (``cuGraphDebugDotPrint``), if ``enable_debug_mode`` was called before the capture
        ended (a warning otherwise, as PyTorch's).

        Args:
            debug_path: the file to write.
        """
        if not (self._debug or self._keep_graph) or self._graph is None:
            warnings.warn("CUDA Graphs debug not enabled, set with "
                          "[graph].enable_debug_mode()", UserWarning, stacklevel=2)
            return
        _drv.get_driver().graph_debug_dot_print(self._device, self._graph, str(debug_path))

    def __del__(self):
        try:  # destructors never raise
            if self._stream is None:
                self.reset()
        except Exception:  # noqa: BLE001, S110 - destructors never raise
            pass

    def __repr__(self) -> str:
        state = ("capturing" if self._stream is not None
                 else "captured" if self._exec is not None or self._graph is not None
                 else "empty")
        return f"<tritongrad.cuda.CUDAGraph {state}>"


class graph:
    """Context manager that captures the work in its body into ``cuda_graph``.

    On entry it synchronizes the device, collects garbage and empties the allocator's cache
    (so the graph's pool starts from free memory), makes a side stream current and begins the
    capture; on exit it ends the capture and restores the stream. Work in the body is recorded,
    not run: read its results after ``cuda_graph.replay()``. If the body raises, the capture
    is abandoned and the exception propagates. As ``torch.cuda.graph``.

    Args:
        cuda_graph: the ``CUDAGraph`` to capture into.
        pool: a ``graph_pool_handle()`` or another graph's ``pool()``, to share its memory.
        stream: the stream to capture on; default: a side stream of this class, the same
            one for every capture on a device.
        capture_error_mode: see ``CUDAGraph.capture_begin``.

    Example:
        >>> g = tg.cuda.CUDAGraph()  # doctest: +SKIP
        >>> with tg.cuda.graph(g):
        ...     static_out = model(static_in)
        >>> static_in.copy_(batch); g.replay(); use(static_out)
    """

    _default_capture_streams: ClassVar[dict[int, _streams.Stream]] = {}

    def __init__(self, cuda_graph: CUDAGraph, pool=None, stream: _streams.Stream | None = None,
                 capture_error_mode: str = "global"):
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"graph: expected a tg.cuda.CUDAGraph, got "
                            f"{type(cuda_graph).__name__}")
        if stream is None:
            index = _streams.current_device()
            stream = self._default_capture_streams.get(index)
            if stream is None:
                stream = self._default_capture_streams.setdefault(index, _streams.Stream(index))
        self.cuda_graph = cuda_graph
        self.pool = None if pool is None else _check_pool(pool)
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self._stream_ctx = _streams.stream(stream)

    def __enter__(self) -> None:
        # Free as much memory as possible for the graph, and let work queued before the
        # capture on any stream finish first (the capture stream cannot wait for it).
        _streams.synchronize(self.capture_stream.device_index)
        gc.collect()
        _memory.empty_cache(self.capture_stream.device_index)
        self._stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, self.capture_error_mode)
        except BaseException:
            self._stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is None:
                self.cuda_graph.capture_end()
            else:
                self.cuda_graph._abort()
        finally:
            self._stream_ctx.__exit__(exc_type, exc, tb)
        return False
