"""``tritongrad.autograd.graph``: hooks on how tensors saved for backward are stored, and on
the graph itself.

Ops save some tensors for their backward (saved tensors, saved.SavedTensor). Inside
``saved_tensors_hooks(pack_hook, unpack_hook)``, each saved tensor is passed to ``pack_hook``
when it is saved and whatever that returns is stored instead; ``unpack_hook`` turns it back into
a tensor when backward needs it. ``save_on_cpu`` uses this to keep saved CUDA tensors in host
memory until backward, ``allow_mutation_on_saved_tensors`` to swap in copies of saved tensors
that an in-place op is about to modify (Note [Clone on mutate]). The hook stack is
thread-local; only the innermost pair applies.

On the graph: ``GradientEdge`` / ``get_gradient_edge`` name where a tensor's gradient flows
(usable as ``inputs=`` of ``grad`` and ``backward``), ``register_multi_grad_hook`` runs one
hook for the gradients of several tensors, ``increment_version`` bumps version counters.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from . import node as _node
from .node import RemovableHandle
from .state import set_mode, state

__all__ = ["GradientEdge", "Node", "allow_mutation_on_saved_tensors", "disable_saved_tensors_hooks",
           "get_gradient_edge", "increment_version", "register_multi_grad_hook", "save_on_cpu",
           "saved_tensors_hooks"]


class Node(abc.ABC):
    """The abstract type of the graph's nodes (``tensor.grad_fn``), as PyTorch's: every node,
    built-in or a custom Function's, is an instance of it (``isinstance(y.grad_fn, Node)``),
    and it cannot be instantiated itself. (The nodes' own base class is autograd/node.py's
    ``Node``; this one only answers isinstance checks and documents the interface.)"""

    @abc.abstractmethod
    def name(self) -> str:
        """Returns the name (e.g. ``MulBackward0``)."""

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple:
        """The (node, output_nr) edges to the nodes of this node's inputs."""

    @abc.abstractmethod
    def metadata(self) -> dict:
        """Returns the metadata dict of the node."""

    @property
    @abc.abstractmethod
    def _input_metadata(self) -> list:
        """The inputs' metadata."""

    @abc.abstractmethod
    def _register_hook_dict(self, tensor) -> None:
        """Registers a tensor's backward hooks on this node."""

    @abc.abstractmethod
    def register_hook(self, fn: Callable) -> RemovableHandle:
        """Registers ``fn(grad_inputs, grad_outputs)`` to run after this node."""

    @abc.abstractmethod
    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Registers ``fn(grad_outputs)`` to run before this node."""

    @abc.abstractmethod
    def _sequence_nr(self) -> int:
        """The number the engine orders ready nodes by."""

    @classmethod
    def __subclasshook__(cls, subclass):
        if cls is Node and issubclass(subclass, _node.Node):
            return True
        return NotImplemented


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

    # Entering pushes this pair onto the thread's hook stack and exiting pops the innermost
    # pair, as PyTorch's push / pop do: an object entered twice is on the stack twice.
    def __enter__(self):
        if state.saved_hooks_disabled is not None:
            raise RuntimeError(state.saved_hooks_disabled)
        set_mode("saved_hooks", state.saved_hooks + ((self.pack_hook, self.unpack_hook),))
        return self

    def __exit__(self, *exc):
        hooks = state.saved_hooks
        if not hooks:
            raise RuntimeError("saved_tensors_hooks: exiting a context with no saved tensor "
                               "hooks set (more exits than enters)")
        set_mode("saved_hooks", hooks[:-1])
        return False


class save_on_cpu(saved_tensors_hooks):
    """Context manager under which tensors saved by the forward pass are stored on the CPU
    and copied back to their device for backward.

    Saved CUDA tensors move to host memory as they are saved, which trades a copy each way for
    GPU memory held until backward. With ``pin_memory=True`` they are kept in pinned memory
    (where CUDA is available), from which the copies back for backward are asynchronous
    (``non_blocking=True``), as in PyTorch. ``device_type`` is ``"cuda"``, the only
    accelerator tritongrad has, or ``"cpu"`` (CPU tensors are kept as they are).

    Example:
        >>> a = tg.randn(5, requires_grad=True, device="cuda")
        >>> with tg.autograd.graph.save_on_cpu(pin_memory=True):
        ...     y = (a * a).sum()   # a is saved in host memory
        >>> y.backward()            # and copied back to the GPU here
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        if device_type not in ("cuda", "cpu"):
            from .checks import unsupported
            raise unsupported("save_on_cpu", "device_type", device_type, "'cuda' or 'cpu'")
        self.pin_memory = pin_memory

        def pack(t):
            if t.device.type == "cpu":
                return (t.device, t)
            if not pin_memory:
                return (t.device, t.detach().cpu())
            from ..runtime import driver
            from .ops.creation import empty
            packed = empty(t.shape, dtype=t.dtype, pin_memory=driver.is_available())
            return (t.device, packed.copy_(t.detach()))

        def unpack(packed):
            device, t = packed
            return t if device.type == "cpu" else t.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager under which entering ``saved_tensors_hooks`` raises ``error_message``
    (for code whose saved tensors must not be intercepted). Ops still save tensors normally.
    Entering it while saved-tensor hooks are active raises ``error_message`` too, as
    PyTorch's."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        if state.saved_hooks:
            raise RuntimeError(self.error_message)
        self._prev = state.saved_hooks_disabled
        state.saved_hooks_disabled = self.error_message
        return self

    def __exit__(self, *exc):
        state.saved_hooks_disabled = self._prev
        return False

    def __call__(self, fn: Callable) -> Callable:
        """As a decorator (PyTorch's is a ``contextlib.contextmanager``): ``fn`` runs with
        saved-tensor hooks disabled."""
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)
        return wrapper


# Note [Clone on mutate]
#   allow_mutation_on_saved_tensors is PyTorch's design: a pair of saved-tensor hooks and a
#   check before each in-place write, sharing an _AllowMutationOnSavedContext.
#   - The pack hook stores a _Handle instead of the tensor. Tensors are told apart by "tid"
#     (identity, storage, version): a tensor saved several times before it changes is stored
#     once (``original[handle]``), under one handle that every node saving it keeps alive.
#     Aliasing goes by "sid" (storage, version): ``sid_to_tid`` lists the tensors saved from
#     each storage at each version.
#   - Before an op writes into a tensor in place (dispatch calls ``_before_inplace_write``),
#     each tensor still saved from that storage at its current version is cloned, once:
#     ``cloned[handle]`` takes over from ``original[handle]``, and the unpack hook returns the
#     clone, the value as it was when saved.
#   - The maps are weak on the handle: when the nodes that saved a tensor are gone (freed by
#     backward, or their graph deleted), its entries go too, and a later write clones
#     nothing. The tables are cleared when the context exits; unpacking after that, or under
#     another such context, is an error.
#   The storage is named by its base address (the first element's address, less the storage
#   offset), where PyTorch uses data_ptr(): a view at an offset into a saved tensor's storage
#   is then a write into that storage too.

class _Handle:
    """The packed form of a saved tensor under allow_mutation_on_saved_tensors: a weakref-able
    key into the context's tables (Note [Clone on mutate]), with the version it was saved at."""

    __slots__ = ("__weakref__", "version")

    def __init__(self, version: int):
        self.version = version


def _storage_ptr(t) -> int:
    # (in the backend array's own units: a host bfloat16 array holds 4-byte elements)
    from ..kernels import data_ptr  # (the address of an empty tensor too: not Tensor.data_ptr's 0)
    return data_ptr(t._data) - t.storage_offset() * t._data.itemsize


def _get_tid(t) -> tuple:
    """A saved tensor's identity: which tensor, on which storage, at which version."""
    return (id(t), _storage_ptr(t), t._vc[0])


def _get_sid(t) -> tuple:
    """A storage at a version: what every alias of a tensor written in place shares."""
    return (_storage_ptr(t), t._vc[0])


_BACKWARD_OUTSIDE_MSG = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                         "context in which the graph was originally recorded.")


class _AllowMutationOnSavedContext:
    """What allow_mutation_on_saved_tensors keeps (Note [Clone on mutate]): ``original`` and
    ``cloned`` map handles to the saved tensors and to their copies, ``tid_to_weakhandle``
    tensor ids to handles, ``sid_to_tid`` storage ids to the tensor ids saved from them."""

    def __init__(self) -> None:
        self.cloned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.original: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self.sid_to_tid: defaultdict = defaultdict(set)

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.sid_to_tid.clear()

    def pack(self, tensor) -> _Handle:
        """The pack hook: the handle the tensor is stored under."""
        tid = _get_tid(tensor)
        self.sid_to_tid[_get_sid(tensor)].add(tid)
        handle = self.tid_to_weakhandle.get(tid)
        if handle is None:  # (the same tensor at the same version may be saved many times)
            handle = self.tid_to_weakhandle[tid] = _Handle(tensor._vc[0])
            self.original[handle] = tensor
        return handle

    def unpack(self, handle: _Handle):
        """The unpack hook: the tensor as it was saved, its clone if it was written since."""
        if _mutation_ctx is None:
            raise AssertionError(_BACKWARD_OUTSIDE_MSG)
        t = self.cloned.get(handle)
        if t is not None:
            return t
        t = self.original.get(handle)
        if t is None:
            raise AssertionError(_BACKWARD_OUTSIDE_MSG)
        if t._vc[0] != handle.version:  # written without an op (numpy(), a raw kernel)
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation that allow_mutation_on_saved_tensors did not see (so it "
                f"could not clone it first): is at version {t._vc[0]}; expected version "
                f"{handle.version} instead.")
        return t

    def clone_before_write(self, t) -> None:
        """Clones the tensors still saved from ``t``'s storage at its current version."""
        tids = self.sid_to_tid.get(_get_sid(t))
        if not tids:
            return
        for tid in tids:
            handle = self.tid_to_weakhandle.get(tid)
            # None: saved once, but the nodes that saved it are gone (freed by a backward)
            if handle is None or handle in self.cloned:
                continue
            original = self.original.pop(handle)
            prev = state.grad_enabled
            state.grad_enabled = False  # a stored value, not history
            try:
                self.cloned[handle] = original.clone()
            finally:
                state.grad_enabled = prev


# The active allow_mutation_on_saved_tensors context (one per process, as in PyTorch).
_mutation_ctx: _AllowMutationOnSavedContext | None = None


def _before_inplace_write(t) -> None:
    """Called by dispatch before an op writes into ``t`` in place, when this thread has
    saved-tensor hooks: under allow_mutation_on_saved_tensors, the tensors saved from ``t``'s
    storage are cloned first (Note [Clone on mutate])."""
    ctx = _mutation_ctx
    if ctx is not None:
        ctx.clone_before_write(t)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[_AllowMutationOnSavedContext]:
    """Context manager under which mutating tensors saved for backward is allowed.

    Under this context manager, tensors saved for backward are cloned on mutation, so the
    original version can still be used during backward. Normally, mutating a tensor saved for
    backward will result in an error raised when it's used during backward.

    To ensure the correct behavior, both the forward and backward should be run under the
    same context manager. It yields the ``_AllowMutationOnSavedContext`` holding its state
    (useful for debugging), which is cleared when the context exits (Note [Clone on
    mutate]).

    Example:
        >>> with tg.autograd.graph.allow_mutation_on_saved_tensors():
        ...     a = tg.tensor([1., 2.], requires_grad=True)
        ...     b = a.clone()
        ...     out = (b ** 2).sum()
        ...     b.sin_()
        ...     out.backward()
        >>> a.grad
        tensor([2., 4.])
    """
    global _mutation_ctx
    ctx = _AllowMutationOnSavedContext()
    with saved_tensors_hooks(ctx.pack, ctx.unpack):
        try:
            if _mutation_ctx is not None:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _mutation_ctx = ctx
            yield ctx
        finally:
            ctx.clear()
            if _mutation_ctx is ctx:
                _mutation_ctx = None


class GradientEdge(NamedTuple):
    """Object representing a given gradient edge within the autograd graph.

    To get the gradient edge where a given Tensor gradient will be computed, you can do
    ``edge = autograd.graph.get_gradient_edge(tensor)``.
    """

    node: Node
    output_nr: int
    # PyTorch's third field, a node keeping its C++ graph alive when ``node`` alone does not;
    # a tritongrad node holds its graph itself, so this stays None (kept for the shape)
    ownership_token: Node | None = None


def get_gradient_edge(tensor) -> GradientEdge:
    """Get the gradient edge for computing the gradient of the given Tensor.

    In particular, it is equivalent to call ``g = autograd.grad(loss, input)`` and
    ``g = autograd.grad(loss, get_gradient_edge(input))``. The edge stays valid when the
    tensor's history changes afterwards (an in-place op): it names the node the tensor had.
    """
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, output_nr = tensor._edge()
    # (the edge may outlive the tensor: backward(edge) then still knows the output's shape)
    node._note_output(output_nr, tensor)
    return GradientEdge(node, output_nr)


def increment_version(tensor) -> None:
    """Update autograd metadata tracking whether the given Tensor was modified in place.

    This is to enable more accurate error checking within the autograd engine. It is already
    done automatically by tritongrad's in-place ops, so you only need to call it when you
    modify a tensor's memory without them (through ``numpy()``, DLPack, a custom kernel).
    Several tensors may be given at once, as an iterable.
    """
    from .tensor import Tensor
    tensors = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"increment_version(): expected a Tensor or an iterable of Tensors, "
                            f"got {type(t).__name__}")
        if not t._inference:  # inference tensors have no version counter in PyTorch
            t._vc[0] += 1


class _MultiHandle(RemovableHandle):
    """Removes every hook of one register_multi_grad_hook call."""

    __slots__ = ("handles",)

    def __init__(self, handles: tuple):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors: Sequence, fn: Callable, *, mode: str = "all"
                             ) -> RemovableHandle:
    """Register a multi-grad backward hook.

    There are two supported modes: ``"all"`` and ``"any"``.

    Under the ``"all"`` mode, the hook will be called after gradients with respect to every
    tensor in ``tensors`` have been computed. If a tensor is in ``tensors`` but is not part of
    the graph, or if a tensor is not needed to compute the gradients for any ``inputs``
    specified for the current ``.backward()`` or ``.grad()`` call, this tensor will be ignored
    and the hook will not wait for its gradient to be computed. After every non-ignored
    tensor's gradient has been computed, ``fn`` will be called with those gradients. ``None``
    will be passed for tensors that did not have their gradients computed.

    Under the ``"any"`` mode, the hook will be called after the first gradient with respect to
    a tensor in ``tensors`` has been computed. The hook will be called with that gradient as
    its argument.

    The hook should not modify its arguments. This function returns a handle with a method
    ``handle.remove()`` that removes the hook.

    Example:
        >>> a = tg.rand(2, 3, requires_grad=True)
        >>> b = tg.rand(2, 3, requires_grad=True)
        >>> c = a * b
        >>> d = a * b
        >>> def fn(grads):
        ...     print([g is not None for g in grads])
        >>> tg.autograd.graph.register_multi_grad_hook((a, b, c, d), fn)
        >>> c.sum().backward(retain_graph=True)
        [True, True, True, False]
        >>> c.sum().backward(inputs=(a,), retain_graph=True)
        [True, False, True, False]
    """
    from . import engine
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "any":
        fired: set = set()  # the backward calls (ids) in which the hook ran

        def first_only(grad):
            task = engine.current_graph_task_id()
            with lock:
                done = task in fired
                fired.add(task)
            if not done:
                engine.queue_callback(lambda: fired.discard(task))  # dropped when it ends
                fn(grad)

        return _MultiHandle(tuple(t.register_hook(first_only) for t in tensors
                                  if t.requires_grad))

    # "all": per backward call, the gradients seen so far, and how many to wait for (the
    # tensors whose gradient-hook slot that backward will reach, counted at its first call)
    if not all(t.requires_grad for t in tensors):  # (PyTorch's assertion, in "all" mode only)
        raise AssertionError("Expected gradient function to be set")
    nodes = [t._edge()[0] for t in tensors]
    pending: dict = {}  # task id -> [calls still to come, gradients]

    def slot_hook(i):
        def hook(grad):
            task = engine.current_graph_task_id()
            with lock:
                entry = pending.get(task)
                if entry is None:
                    expected = sum(1 for n in nodes if engine.will_engine_execute_node(n))
                    entry = pending[task] = [expected, [None] * len(tensors)]
                    # dropped when that backward ends, had its count not reached zero
                    engine.queue_callback(lambda: pending.pop(task, None))
                entry[1][i] = grad
                entry[0] -= 1
                ready = entry[0] == 0
                if ready:
                    del pending[task]
            if ready:
                fn(entry[1])  # (a list, as PyTorch passes)
        return hook

    return _MultiHandle(tuple(t.register_hook(slot_hook(i)) for i, t in enumerate(tensors)))
