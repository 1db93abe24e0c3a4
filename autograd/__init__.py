"""tritongrad.autograd: automatic differentiation of tensor programs (the seeds' surface)."""

from . import ops  # noqa: F401  (binds the ops onto Tensor)
from . import graph
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import backward, grad
from .function import Function
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, is_multithreading_enabled, no_grad,
                        set_grad_enabled, set_multithreading_enabled)
from .tensor import Tensor


def Variable(data, requires_grad: bool = False, volatile: bool = False):  # noqa: N802
    """Deprecated: returns ``data`` as a Tensor (detached), with ``requires_grad`` set.
    ``volatile`` has no effect, as in PyTorch, which warns the same way."""
    if volatile:
        import warnings
        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                      "instead.", UserWarning, stacklevel=2)
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
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "profiler"]
from . import profiler  # noqa: E402
from . import forward_ad, functional
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ += ["forward_ad", "functional", "GradcheckError", "gradcheck", "gradgradcheck",
            "SavedTensor", "kineto_available", "set_multithreading_enabled",
            "is_multithreading_enabled"]
