"""``tritongrad.jit``: TorchScript's entry points, run eagerly.

tritongrad has no TorchScript compiler, as it has no graph compiler (tritongrad/compiler.py):
``tg.jit.script(fn)`` and ``tg.jit.trace(fn, example_inputs)`` give back ``fn`` itself (a
module stays the same module), which then runs op by op with the same results and gradients.
Programs that decorate helpers with ``@torch.jit.script`` (fused activations, loss pieces) or
trace a model before training run unchanged; they warn once per process that the code runs
eagerly, so no request for a compiler is silently dropped. ``is_scripting()`` and
``is_tracing()`` are False, as they are in eager PyTorch; the decorators that only steer the
compiler (``ignore``, ``unused``, ``export``, ``interface``) return what they decorate.
Serialized TorchScript (``save``, ``load``) refuses with a message that says what to use
instead. ``fork(fn, *args)`` runs ``fn`` at once and returns a completed
:class:`tritongrad.futures.Future`, which ``wait`` reads: eager PyTorch's own behaviour outside
scripted code, where no asynchronous interpreter runs the task.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Final  # noqa: F401  (torch.jit.Final is typing.Final)

__all__ = ["Final", "annotate", "export", "fork", "freeze", "ignore", "interface",
           "is_scripting", "is_tracing", "load", "optimize_for_inference", "save", "script",
           "trace", "trace_module", "unused", "wait"]

_warned = False


def _eager(what: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"torch.jit.{what}: tritongrad has no TorchScript compiler; the code runs "
                      f"eagerly, op by op (same results and gradients)", UserWarning,
                      stacklevel=3)


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Script the function or module: here, ``obj`` itself, run eagerly (warns once)."""
    _eager("script")
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs: bool = True):
    """Trace a function and return an executable: here ``func`` itself, run eagerly (warns
    once). ``example_inputs`` are not run."""
    _eager("trace")
    return func


def trace_module(mod, inputs, *args, **kwargs):
    """Trace a module's methods: here the module itself, run eagerly (warns once)."""
    _eager("trace_module")
    return mod


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """Freeze a scripted module: here the module itself (it already runs as written)."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """Optimize a scripted module for inference: here the module itself."""
    return mod


def is_scripting() -> bool:
    """Whether the code runs under TorchScript compilation: never, in tritongrad."""
    return False


def is_tracing() -> bool:
    """Whether the code runs under the tracer: never, in tritongrad."""
    return False


def annotate(the_type, the_value):
    """Give ``the_value`` a type for the TorchScript compiler: the value itself, eagerly."""
    return the_value


def ignore(drop=False, **kwargs):
    """Leave a function to Python (as ``@torch.jit.ignore`` or ``@torch.jit.ignore(drop=...)``):
    everything runs in Python here, so it returns the function."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: Callable) -> Callable:
    """Mark a function the compiler may skip: returned as it is."""
    return fn


def export(fn: Callable) -> Callable:
    """Mark a module method for compilation: returned as it is."""
    return fn


def interface(obj):
    """Declare a TorchScript interface: returned as it is."""
    return obj


def save(m, f, _extra_files=None) -> None:
    """Refused: there is no TorchScript archive to write."""
    raise NotImplementedError("torch.jit.save: tritongrad has no TorchScript; save the state "
                              "dict with tritongrad.save(model.state_dict(), f) (or "
                              "tritongrad.utils.safetensors) instead")


def load(f, map_location=None, _extra_files=None) -> Any:
    """Refused: TorchScript archives cannot be read."""
    raise NotImplementedError("torch.jit.load: tritongrad cannot read TorchScript archives; "
                              "load a state dict saved with tritongrad.save instead")


def fork(func: Callable, *args, **kwargs):
    """Create an asynchronous task executing ``func`` and a reference to the value of its
    result: a :class:`tritongrad.futures.Future` (deprecated, as PyTorch's: warns; the
    top-level ``tritongrad.fork`` does not). Without a TorchScript interpreter ``func`` runs at
    once, in the caller's thread, as eager PyTorch's ``torch.jit.fork`` does outside scripted
    code; the Future returned is already complete (an error ``func`` raises propagates from
    ``fork`` itself, as in eager PyTorch).

    Args:
        func (callable or torch.nn.Module): a Python function or module to invoke.
        *args, **kwargs: arguments to invoke ``func`` with.

    Returns:
        Future: a reference to the result of ``func``, read with :func:`wait`.

    Example:
        >>> fut = tg.jit.fork(lambda a, b: a + b, tg.ones(2), b=tg.ones(2))
        >>> tg.jit.wait(fut).tolist()
        [2.0, 2.0]
    """
    warnings.warn("`torch.jit.fork` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning, stacklevel=2)
    return _fork(func, *args, **kwargs)


def wait(future):
    """Force completion of a :class:`tritongrad.futures.Future` (from :func:`fork`) and
    return its result (or raise its error). Deprecated, as PyTorch's: warns."""
    warnings.warn("`torch.jit.wait` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning, stacklevel=2)
    return _wait(future)


def _fork(func: Callable, *args, **kwargs):
    """``torch.fork``: :func:`fork` without the deprecation warning."""
    from .futures import Future
    if not callable(func):
        raise TypeError(f"fork(): expected a callable, got {type(func).__name__}")
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def _wait(future):
    """``torch.wait``: :func:`wait` without the deprecation warning."""
    from .futures import Future
    if not isinstance(future, Future):
        raise TypeError(f"wait(): expected a Future, got {type(future).__name__}")
    return future.wait()
