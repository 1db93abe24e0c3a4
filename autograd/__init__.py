"""tritongrad.autograd: automatic differentiation of tensor programs (the seeds' surface)."""

import functools
import warnings

from . import ops  # noqa: F401  (binds the ops onto Tensor; first: import order)
from . import engine as _engine
from . import graph
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .function import Function
from .grad_mode import (enable_grad, enforce_grad_layout_policy, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, is_multithreading_enabled, no_grad,
                        set_grad_enabled, set_multithreading_enabled)
from .tensor import Tensor


# Note [Dict inputs]: PyTorch 2.13's ``grad`` and ``backward`` also take ``inputs`` as a dict of
# name -> Tensor (a module's ``named_parameters()``, say); ``grad`` then answers with a dict of
# the same keys. The engine works on sequences: these wrappers translate.
@functools.wraps(_engine.grad)
def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False):
    if not only_inputs:  # (here, so that it points at the caller)
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
        only_inputs = True
    if isinstance(inputs, dict):
        grads = _engine.grad(outputs, tuple(inputs.values()), grad_outputs, retain_graph,
                             create_graph, only_inputs, allow_unused, is_grads_batched,
                             materialize_grads)
        return dict(zip(inputs.keys(), grads))
    return _engine.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs,
                        allow_unused, is_grads_batched, materialize_grads)


@functools.wraps(_engine.backward)
def backward(tensors, grad_tensors=None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables=None, inputs=None) -> None:
    if isinstance(inputs, dict):  # (Note [Dict inputs])
        inputs = tuple(inputs.values())
    return _engine.backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables,
                            inputs)


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)  # (every Tensor is a Variable, as in PyTorch)


class Variable(metaclass=_VariableMeta):
    """Deprecated: ``Variable(data)`` returns ``data`` as a Tensor (detached), with
    ``requires_grad`` set (an empty float tensor without ``data``), and ``isinstance(t,
    Variable)`` holds for every Tensor, as in PyTorch. ``volatile`` has no effect, as in
    PyTorch, which warns the same way."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        if data is None:
            from .ops.creation import empty
            data = empty((0,))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t


class _ExecutionEngine:
    """``Variable._execution_engine``: the engine entry points PyTorch code reaches through
    it (DistributedDataParallel queues its end-of-backward work here)."""

    @staticmethod
    def queue_callback(callback) -> None:
        """Runs ``callback()`` when the current backward call has run every node."""
        from .engine import queue_callback
        queue_callback(callback)


Variable._execution_engine = _ExecutionEngine()


class SavedTensor:
    """The type of a node's saved tensors (``grad_fn._raw_saved_self``); made by the engine
    only."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")


def kineto_available() -> bool:
    """Whether PyTorch's Kineto profiler backend is there: never in tritongrad, whose
    profiler is its own (``autograd.profiler``)."""
    return False


def _is_checkpoint_valid() -> bool:
    """Whether the backward call running in this thread (if any) runs its whole graph, as
    ``backward()`` without ``inputs`` does: the reentrant checkpoint's recomputation needs
    that (it refuses ``grad()`` and ``backward(inputs=...)``, which run only part of it)."""
    from .engine import _local
    task = _local.task
    return task is None or task.execute is None


__all__ = ["graph", "Function", "Tensor", "Variable", "backward", "grad", "no_grad", "enable_grad",
           "enforce_grad_layout_policy",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "profiler"]
from . import profiler  # noqa: E402
from . import forward_ad, functional
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ += ["forward_ad", "functional", "GradcheckError", "gradcheck", "gradgradcheck",
            "SavedTensor", "kineto_available", "set_multithreading_enabled",
            "is_multithreading_enabled"]

# names PyTorch's torch.autograd also holds (imported there from elsewhere)
from .grad_mode import _is_view_replay_enabled as is_view_replay_enabled  # noqa: E402
from .overrides import has_torch_function, handle_torch_function, is_tensor_like  # noqa: E402
from .profiler import ProfilerActivity  # noqa: E402
