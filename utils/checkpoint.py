"""Activation checkpointing: trade compute for memory by recomputing a region's intermediate
values during backward instead of keeping them from the forward.

``checkpoint(fn, *args)`` runs ``fn`` under saved-tensor hooks (autograd/graph.py) whose pack
hook stores only a small handle for each tensor an op saves for backward. When backward first
unpacks one of those handles, ``fn`` runs again on the same inputs (with the random number
generator as it was at the first run, so dropout masks repeat) under hooks that collect the
tensors it saves, in order; the handle's position picks the recomputed tensor. This is
PyTorch's non-reentrant variant (``use_reentrant=False``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..autograd.graph import saved_tensors_hooks
from ..autograd.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "set_checkpoint_early_stop"]


class set_checkpoint_early_stop:  # noqa: N801 - PyTorch's name
    """Context manager: whether a recomputation stops as soon as it has recomputed every tensor
    the original forward saved (the default, ``True``), or runs the checkpointed function to
    its end. Either way backward gets the same tensors; stopping early skips the rest of the
    function's work.

    Example:
        >>> with tg.utils.checkpoint.set_checkpoint_early_stop(False):
        ...     y = checkpoint(fn, x)
    """

    def __init__(self, enable: bool) -> None:
        self.enable = bool(enable)

    def __enter__(self) -> None:
        self.prev = _early_stop[0]
        _early_stop[0] = self.enable

    def __exit__(self, *exc) -> None:
        _early_stop[0] = self.prev


_early_stop = [None]  # set inside set_checkpoint_early_stop: it wins over checkpoint's argument


def _warn_use_reentrant() -> None:
    import warnings
    warnings.warn("tritongrad.utils.checkpoint: the use_reentrant parameter should be passed "
                  "explicitly (as in PyTorch, which will require it); tritongrad supports "
                  "use_reentrant=False, the default when it is not passed.", UserWarning,
                  stacklevel=3)


class _StopRecomputation(Exception):
    """Raised inside a recomputation once it has every tensor it needs (early stop)."""


class CheckpointError(RuntimeError):
    """The recomputation did not save the tensors the original forward saved (a function that
    is not deterministic in what it computes, e.g. branching on random values)."""


# -- the global random number generator ----------------------------------------------------------
# tritongrad draws every random number (CPU and CUDA alike) from one NumPy generator in
# autograd/ops/creation.py and has no get_rng_state/set_rng_state yet: its state is copied and
# swapped here, in one place.

def _get_rng(devices=()):
    """The CPU generator's stream and, as PyTorch's ``preserve_rng_state``, the default
    generator state of each CUDA device among the inputs' (their random numbers are drawn
    on the device, from a generator of their own)."""
    from ..autograd.ops import creation, random
    return (copy.deepcopy(creation._rng),
            {dev: random.get_cuda_rng_state(dev) for dev in devices})


def _set_rng(state) -> None:
    from ..autograd.ops import creation, random
    cpu, cuda = state
    creation._rng = copy.deepcopy(cpu)
    for dev, st in cuda.items():
        random.set_cuda_rng_state(st, dev)


def _cuda_devices(args) -> tuple:
    return tuple(dict.fromkeys(a.device for a in args
                               if isinstance(a, Tensor) and a.device.type == "cuda"))


class _Frame:
    """One checkpointed call: its inputs, the RNG state it started with, the metadata of each
    tensor its forward saved, and the recomputed tensors not yet handed to backward."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng, check_meta: bool,
                 early_stop: bool) -> None:
        self.fn, self.args, self.kwargs, self.rng = fn, args, kwargs, rng
        self.check_meta, self.early_stop = check_meta, early_stop
        self.meta: list[tuple] = []          # (shape, dtype, device) per saved tensor
        self.recomputed: dict[int, Any] = {}

    def pack(self, t) -> _Handle:
        self.meta.append((tuple(t.shape), t.dtype, t.device))
        return _Handle(self, len(self.meta) - 1)

    def unpack(self, handle: _Handle):
        if handle.index not in self.recomputed:
            self._recompute()
        # Handed over once: a tensor is freed as soon as its node has used it. (A second
        # backward with retain_graph=True recomputes again.)
        return self.recomputed.pop(handle.index)

    def _recompute(self) -> None:
        saved: list = []

        def collect(t):
            saved.append(t)
            if self.early_stop and len(saved) == len(self.meta):
                raise _StopRecomputation
            return t

        current = _get_rng(tuple(self.rng[1])) if self.rng is not None else None
        try:
            if self.rng is not None:
                _set_rng(self.rng)
            # Under grad mode, so ops save what they saved the first time; the recomputed
            # graph then also carries create_graph=True backward through to the inputs.
            with enable_grad(), saved_tensors_hooks(collect, lambda t: t):
                self.fn(*self.args, **self.kwargs)
        except _StopRecomputation:
            pass
        finally:
            if current is not None:
                _set_rng(current)
        got = [(tuple(t.shape), t.dtype, t.device) for t in saved]
        if len(got) != len(self.meta):
            raise CheckpointError(
                f"tritongrad.utils.checkpoint: A different number of tensors was saved during "
                f"the original forward and recomputation ({len(self.meta)} and {len(got)}): "
                f"the checkpointed function must compute the same thing each time it runs")
        for i, (a, b) in enumerate(zip(self.meta, got)):
            if self.check_meta and a != b:
                raise CheckpointError(
                    f"checkpoint: recomputed tensor {i} has (shape, dtype, device) {b}, but "
                    f"the original forward saved {a}")
        self.recomputed = dict(enumerate(saved))


class _Handle:
    """What the graph holds in place of a saved tensor: its frame and position."""

    __slots__ = ("frame", "index")

    def __init__(self, frame: _Frame, index: int) -> None:
        self.frame, self.index = frame, index


def _unpack(handle: _Handle):
    return handle.frame.unpack(handle)


def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable | None = None, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, early_stop: bool = True,
               **kwargs) -> Any:
    r"""Checkpoint a model or part of the model.

    Activation checkpointing is a technique that trades compute for memory. Instead of keeping
    tensors needed for backward alive until they are used in gradient computation during
    backward, forward computation in checkpointed regions omits saving tensors for backward
    and recomputes them during the backward pass.

    ``function`` must compute the same tensors when run again on the same inputs (the random
    numbers it draws are replayed when ``preserve_rng_state`` is True). The number, shapes,
    dtypes and devices of the tensors saved by the recomputation are checked against the
    original forward (``CheckpointError`` otherwise). Gradients, including higher-order ones
    (``create_graph=True``), are those of the un-checkpointed function.

    Args:
        function: describes what to run in the forward pass of the model or part of the
            model.
        *args, **kwargs: the inputs of ``function``; kept (not copied) until backward.
        use_reentrant: ``False``: the implementation through saved-tensor hooks (what
            PyTorch recommends). ``True`` (the autograd.Function variant) is not supported
            and raises ``NotImplementedError``. Not passing it warns, as PyTorch does, and
            means ``False``.
        context_fn, debug: PyTorch's options of the non-reentrant variant; only their
            defaults (``None``, ``False``) are supported.
        determinism_check: ``"default"`` compares the shapes, dtypes and devices of the
            recomputed tensors with the original ones; ``"none"`` skips that comparison (the
            number of tensors must still match: the handles are positions).
        preserve_rng_state: replay the random number generator's state of the first run
            during the recomputation (default ``True``).
        early_stop: stop a recomputation once it has recomputed every tensor backward needs
            (default ``True``); ``set_checkpoint_early_stop`` around the call overrides it.

    Returns:
        Output of running ``function`` on ``*args`` and ``**kwargs``.

    Example:
        >>> lin = tg.nn.Linear(4, 4)
        >>> x = tg.randn(2, 4, requires_grad=True)
        >>> y = checkpoint(lambda t: lin(t).relu().sum(), x)
        >>> y.backward()   # lin(x).relu() is recomputed here
    """
    if use_reentrant is None:
        _warn_use_reentrant()
        use_reentrant = False
    if use_reentrant:
        raise NotImplementedError("checkpoint: use_reentrant=True is not supported; pass "
                                  "use_reentrant=False (the saved-tensor-hooks variant)")
    if context_fn is not None or debug:
        raise NotImplementedError("checkpoint: context_fn and debug are not supported")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"checkpoint: determinism_check should be 'default' or 'none', got "
                         f"{determinism_check!r}")
    if not is_grad_enabled():
        return function(*args, **kwargs)  # nothing is saved: nothing to recompute
    frame = _Frame(function, args, kwargs,
                   _get_rng(_cuda_devices(args)) if preserve_rng_state else None,
                   check_meta=determinism_check == "default",
                   early_stop=early_stop if _early_stop[0] is None else _early_stop[0])
    with saved_tensors_hooks(frame.pack, _unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs) -> Any:
    r"""Checkpoint a sequential model to save memory.

    Sequential models execute a list of modules/functions in order (sequentially). Therefore,
    we can divide such a model in various segments and checkpoint each segment. All segments
    except the last will not store the intermediate activations. The inputs of each
    checkpointed segment will be saved for re-running the segment in the backward pass.

    Args:
        functions: an ``nn.Sequential`` or the list of modules or functions to run in order.
        segments: number of chunks to create in the model.
        input: a tensor, the input of ``functions[0]``.
        use_reentrant, **kwargs: passed to ``checkpoint``.

    Returns:
        Output of running ``functions`` sequentially on ``input``.
    """
    if use_reentrant is None:
        _warn_use_reentrant()
        use_reentrant = False
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)
    if not isinstance(segments, int) or segments <= 0:
        raise ValueError(f"checkpoint_sequential: segments must be a positive integer, got "
                         f"{segments!r}")
    size = len(functions) // segments if segments <= len(functions) else 1

    def run(chunk: Sequence[Callable]):
        def forward(x):
            for f in chunk:
                x = f(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(functions[start:end + 1]), input, use_reentrant=use_reentrant,
                           **kwargs)
    return run(functions[end + 1:])(input)
