"""How ``multiprocessing`` pickles tensors: by handle to their shared memory, not by value.

``init_reductions()`` registers these reducers on ``multiprocessing.reduction.ForkingPickler``,
the pickler of every ``Queue``, ``Pipe`` and spawned ``Process``'s arguments (not of plain
``pickle``, whose copies of a tensor stay copies). A CPU tensor is moved to shared memory when
sent (``share_memory_``, in place in the sender, as PyTorch's queues do) and arrives as a
tensor over the same memory: writes in either process are seen in the other.

The segment is pickled once per message (the pickler's memo), so views of one storage sent
together arrive as views of one storage; the receiver maps each segment once (a storage sent
back and forth, or in several messages, stays one storage).

- file_descriptor: the segment's descriptor travels (``multiprocessing.reduction.DupFd``: to a
  child being spawned with its other descriptors, otherwise through the sender's
  ``resource_sharer``, so the sender must still be alive when the message is read).
- file_system: its name travels; the message counts as one holder of the segment until it is
  read, so the name is not unlinked while it is in flight.
"""

from __future__ import annotations

import multiprocessing.reduction as _reduction
from multiprocessing.reduction import ForkingPickler

from ..autograd.tensor import Tensor
from . import _shm

__all__ = ["init_reductions", "rebuild_segment_fd", "rebuild_segment_name", "rebuild_tensor",
           "reduce_segment", "reduce_tensor"]


def rebuild_tensor(cls: type, seg, meta: tuple, dtype, requires_grad: bool) -> Tensor:
    """A tensor (``cls``: Tensor or nn.Parameter) over the received segment."""
    t = _shm.rebuild(seg, meta, dtype)
    if cls is not Tensor:
        from ..nn.parameter import Parameter
        if issubclass(cls, Parameter):
            return cls(t, requires_grad=requires_grad)
        t = Tensor._make_subclass(cls, t, requires_grad)
    elif requires_grad:
        t.requires_grad_()
    return t


def reduce_tensor(t: Tensor):
    """``ForkingPickler``'s reducer for tensors: shares the storage, sends a handle."""
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., putting "
            "it on the queue).")
    if t.device.type == "cuda":
        raise RuntimeError(
            f"tritongrad.multiprocessing: cannot send a CUDA tensor ({t.device}) to another "
            "process: sharing device memory (CUDA IPC) is not supported. Send a CPU copy "
            "(tensor.cpu(), then .to(device) in the receiver), or pickle the tensor by value "
            "with pickle.dumps.")
    if t.device.type != "cpu":
        return t.__reduce_ex__(2)  # (no memory to share: meta tensors and the like)
    _shm.share_memory_(t)
    seg = _shm.segment_of(_shm._storage_root(t._data))
    return rebuild_tensor, (type(t), seg, _shm.tensor_meta(t), t.dtype, t.requires_grad)


def rebuild_segment_fd(df, nbytes: int):
    """The receiver's segment of a file_descriptor object (``df``: a ``DupFd``)."""
    return _shm.attach_fd(df.detach(), nbytes)


def rebuild_segment_name(name: str, nbytes: int):
    """The receiver's segment of a file_system object; releases the message's hold."""
    seg = _shm.attach_name(name, nbytes)
    _shm.hold(seg, -1)
    return seg


def reduce_segment(seg):
    """``ForkingPickler``'s reducer for a shared segment (its descriptor or its name)."""
    if seg.name is None and seg.fd is None:
        raise RuntimeError("tritongrad.multiprocessing: this shared memory can no longer be "
                           "sent (its name was unlinked when the other processes let it go)")
    if seg.fd is not None:
        return rebuild_segment_fd, (_reduction.DupFd(seg.fd), seg.nbytes)
    _shm.hold(seg, +1)
    return rebuild_segment_name, (seg.name, seg.nbytes)


def init_reductions() -> None:
    """Registers the reducers on ``ForkingPickler`` (done when the package is imported)."""
    from ..nn.parameter import Parameter
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_tensor)
    ForkingPickler.register(_shm._Segment, reduce_segment)
