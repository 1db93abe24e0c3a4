"""``tritongrad.autograd.graph``: hooks on how tensors saved for backward are stored.

Ops save some tensors for their backward (saved tensors, node.SavedTensor). Inside
``saved_tensors_hooks(pack_hook, unpack_hook)``, each saved tensor is passed to ``pack_hook``
when it is saved and whatever that returns is stored instead; ``unpack_hook`` turns it back into
a tensor when backward needs it. ``save_on_cpu`` uses this to keep saved CUDA tensors in host
memory until backward. The hook stack is thread-local; only the innermost pair applies.
"""

from __future__ import annotations

from .node import Node
from .state import set_mode, state

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node"]


class saved_tensors_hooks:
    """Context manager that sets a pair of pack / unpack hooks for saved tensors.

    ``pack_hook(tensor) -> Any`` is called each time an operation saves a tensor for backward;
    its result is stored instead of the tensor. ``unpack_hook(Any) -> Tensor`` is called when
    backward accesses the saved tensor and must return a tensor with the same content as the
    one given to ``pack_hook``. Hooks must not modify their inputs in place. When nested, only
    the innermost pair applies.

    Example:
        >>> def pack_hook(x):
        ...     print("Packing", x)
        ...     return x
        >>> def unpack_hook(x):
        ...     print("Unpacking", x)
        ...     return x
        >>> a = tg.ones(5, requires_grad=True)
        >>> b = tg.ones(5, requires_grad=True) * 2
        >>> with tg.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        ...     y = a * b
        Packing tensor([1., 1., 1., 1., 1.], requires_grad=True)
        Packing tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)
        >>> y.sum().backward()
        Unpacking tensor([1., 1., 1., 1., 1.], requires_grad=True)
        Unpacking tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)
    """

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks: pack_hook and unpack_hook must be callable")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if state.saved_hooks_disabled is not None:
            raise RuntimeError(state.saved_hooks_disabled)
        self._prev = state.saved_hooks
        set_mode("saved_hooks", self._prev + ((self.pack_hook, self.unpack_hook),))
        return self

    def __exit__(self, *exc):
        set_mode("saved_hooks", self._prev)
        return False


class save_on_cpu(saved_tensors_hooks):
    """Context manager under which tensors saved by the forward pass are stored on the CPU
    and copied back to their device for backward.

    Saved CUDA tensors move to host memory as they are saved, which trades a copy each way for
    GPU memory held until backward. ``pin_memory=True`` is accepted as the performance hint it
    is in PyTorch: tritongrad's host memory is pageable and its copies are synchronous, so the
    saved values and the gradients are the same either way. ``device_type`` must be
    ``"cuda"``, the only accelerator tritongrad has.

    Example:
        >>> a = tg.randn(5, requires_grad=True, device="cuda")
        >>> with tg.autograd.graph.save_on_cpu(pin_memory=True):
        ...     y = (a * a).sum()   # a is saved in host memory
        >>> y.backward()            # and copied back to the GPU here
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        if device_type != "cuda":
            from .checks import unsupported
            raise unsupported("save_on_cpu", "device_type", device_type, "only 'cuda'")
        self.pin_memory = pin_memory

        def pack(t):
            if t.device.type == "cpu":
                return (t.device, t)
            return (t.device, t.detach().cpu())

        def unpack(packed):
            device, t = packed
            return t if device.type == "cpu" else t.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager under which entering ``saved_tensors_hooks`` raises ``error_message``
    (for code whose saved tensors must not be intercepted). Ops still save tensors normally."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self._prev = state.saved_hooks_disabled
        state.saved_hooks_disabled = self.error_message
        return self

    def __exit__(self, *exc):
        state.saved_hooks_disabled = self._prev
        return False
