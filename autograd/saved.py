"""Tensors saved for backward: what a node keeps in ``_saved``.

A ``SavedTensor`` holds a tensor with the version it had when saved, so that backward can
refuse one modified in place since; saved-tensor hooks (graph.saved_tensors_hooks) pack it at
save time and unpack it at use (Note [Packed saved tensors]). ``RawSavedTensor`` is the handle
``grad_fn._raw_saved_<name>`` gives out (Note [Saved-value names] in node.py).
"""

from __future__ import annotations

import weakref

from . import node as _node
from .node import FREED, FREED_MSG, AccumulateGrad, Node, _is_tensor, _type_name
from .state import anywhere, set_mode, state

__all__ = ["UNSAVED", "RawSavedTensor", "SavedTensor", "saved_input", "saved_output"]

_new = object.__new__


def _saved_getter(i: int, raw: bool):
    """The getter of ``_saved_<name>`` (``raw``: ``_raw_saved_<name>``) for entry ``i`` of a
    node's ``_saved`` (Note [Saved-value names])."""
    def get(node):
        saved = node._saved
        if saved is FREED:
            if raw:
                return RawSavedTensor(node, None, i)
            raise RuntimeError(FREED_MSG)
        if saved is None or i >= len(saved):
            raise AttributeError(f"'{type(node).__name__}' object saved nothing for this name "
                                 f"(it was recorded without saving)")
        s = saved[i]
        if raw:
            return RawSavedTensor(node, s, i)
        return None if s is None else s.unpack(node)
    return get


class RawSavedTensor:
    """A saved value as the node stores it (``grad_fn._raw_saved_<name>``): unpack it, look at
    what is stored (``data``, ``unpack_hook``), or give it its own pack / unpack hooks."""

    __slots__ = ("_index", "_node", "_saved")

    def __init__(self, node: Node, saved, index: int):
        # saved is None once the graph was freed; index is its place in node._saved
        self._node, self._saved, self._index = node, saved, index

    def _live(self):
        """The SavedTensor, or None once the graph was freed (also when this handle was
        taken before the backward that freed it)."""
        return None if self._node._saved is FREED else self._saved

    def unpack(self):
        """The saved tensor (as ``grad_fn._saved_<name>`` returns it)."""
        saved = self._live()
        if saved is None:
            raise RuntimeError(FREED_MSG)
        return saved.unpack(self._node)

    @property
    def data(self):
        """What is stored: the pack hook's result as it returned it; without hooks the saved
        input itself, or a saved output's values as a tensor without history (None once
        freed)."""
        saved = self._live()
        return None if saved is None else saved.stored()

    @property
    def unpack_hook(self):
        """The unpack hook of the saved tensor, or None when it was saved without hooks."""
        saved = self._live()
        t = None if saved is None else saved._t
        return t.unpack if type(t) is _Packed else None

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Packs the saved tensor now with ``pack_hook(tensor) -> Any``, and unpacks it with
        ``unpack_hook(Any) -> Tensor`` whenever backward (or ``_saved_<name>``) needs it.
        One pair of hooks per saved tensor."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): pack_hook and unpack_hook must be callable")
        if self._live() is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through "
                "the graph a second time or if you need to access saved variables after "
                "calling backward.")
        saved, slots = self._saved, self._node._saved
        if saved is UNSAVED:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is "
                               "forbidden")
        if sum(1 for x in slots if x is saved) > 1:
            # x * x saves x once for both operands: hooks set through one name must not
            # change what the other name holds
            saved = saved.copy()
        saved.register_hooks(self._node, pack_hook, unpack_hook)
        slots[self._index] = self._saved = saved  # (only once the pack hook succeeded)


# Note [Packed saved tensors]
#   Under saved-tensor hooks a SavedTensor stores what the pack hook returned (``_Packed``),
#   as PyTorch's SavedVariable does:
#   - the pack hook runs with grad mode off (what it computes is a stored value, not history)
#     and must not modify its input in place (checked with the version counter);
#   - the pack hook sees the saved tensor itself at save time; through ``register_hooks``,
#     after the fact, it sees a detached alias (a saved output is stored without history);
#   - the tensor the unpack hook returns takes the saved tensor's place in the graph: it is
#     re-wrapped, sharing its values, with the edge the saved tensor had (its grad_fn and
#     output_nr, a leaf's AccumulateGrad, or the saving node for an output) whatever history
#     it has itself, so gradients reach the original graph (a hook that returns 2 * x saves a
#     value, not an op). A saved tensor that did not require grad comes back detached, or as
#     the hook returned it when that does not require grad either;
#   - there is no version check: what the hooks store is theirs to keep consistent (this is
#     how allow_mutation_on_saved_tensors swaps in copies of tensors modified since);
#   - the unpack hook may not change the hook stack for the code around it: PyTorch's engine
#     runs each node with the thread state captured when backward started, so a hook that
#     enters or exits saved_tensors_hooks has no lasting effect; here the stack is put back
#     after the hook returns.

_PACK_INPLACE_MSG = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to "
    "pack hook cannot be modified by in-place operations as this can lead to unexpected "
    "side-effects. Please open an issue if you need to perform in-place operations on the "
    "input to a pack hook.")

_DETACHED_MSG = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This "
    "is not supported, please use out-of-place `.detach()` instead")


class _Packed:
    """What a pack hook returned, the unpack hook that turns it back into a tensor, and the
    edge (node, output_nr) that tensor gets: None for a saved output, whose edge is the node
    unpacking it (Note [Packed saved tensors])."""

    __slots__ = ("edge", "shape", "unpack", "value")

    def __init__(self, value, unpack, edge, shape: tuple = ()):
        self.value, self.unpack, self.edge, self.shape = value, unpack, edge, shape

    def unpacked(self, node, output_nr: int):
        """The unpack hook's tensor, in the saved tensor's place in the graph."""
        hooks = state.saved_hooks
        try:
            t = self.unpack(self.value)
        finally:
            if state.saved_hooks is not hooks:
                set_mode("saved_hooks", hooks)
        if not _is_tensor(t):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(t).__name__}")
        if tuple(t._data.shape) != self.shape:
            _check_broadcastable(self.shape, tuple(t._data.shape))
        fn, nr = (node, output_nr) if output_nr >= 0 else self.edge
        if fn is None and not t._requires_grad:
            return t  # nothing to re-wrap (what the hook returned, as it returned it)
        r = _node.make(t._data, t._dtype)
        r._vc = t._vc
        if fn is None:
            return r
        r._requires_grad = True
        if type(fn) is AccumulateGrad:
            r._grad_acc = weakref.ref(fn)  # a leaf's: kept alive by self.edge
        else:
            r._fn = fn
            if nr:
                r._output_nr = nr
        return r


def _check_broadcastable(saved: tuple, unpacked: tuple) -> None:
    """An unpack hook's tensor of another shape than the one saved: the rules compute with it
    in the saved one's place (on arrays, where NumPy would raise its own ValueError), so one
    that cannot broadcast against it raises PyTorch's error for such a pair (``a`` the saved
    tensor's shape, ``b`` the unpacked one's, the dimension counted in the broadcast shape).
    One that broadcasts is let through, as in PyTorch."""
    n = max(len(saved), len(unpacked))
    for i in range(1, n + 1):
        a = saved[-i] if i <= len(saved) else 1
        b = unpacked[-i] if i <= len(unpacked) else 1
        if a != b and a != 1 and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                               f"({b}) at non-singleton dimension {n - i}")


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Unpacking checks that version: a tensor modified in place after it was saved makes the
    backward that needs it fail, rather than silently compute a wrong gradient. An op's own
    output is kept as its array, without its ``grad_fn`` (that would be a reference cycle
    through the node), and becomes a tensor with that history again on unpack. Saved-tensor
    hooks (graph.saved_tensors_hooks) pack at save time and unpack at use (Note [Packed saved
    tensors]).
    """

    __slots__ = ("_dtype", "_fn", "_out", "_t", "_vc", "_version")
    never_saved = False  # (Node._release: something to free; _Unsaved's is True)

    def __init__(self, t, is_output: bool = False, output_nr: int = 0):
        if t._inference and not state.inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. To work around you can make a "
                "clone to get a normal tensor and use it in autograd.")
        vc = self._vc = t._vc
        self._version = vc[0]
        self._out = output_nr if is_output else -1
        self._dtype = t._dtype
        # an input's grad_fn, to name it in errors and to notice a detach_() since; an
        # output's is the node that unpacks it (kept here, it would be a reference cycle only
        # the GC could free)
        self._fn = None if is_output else t._fn
        hooks = anywhere.saved_hooks and state.saved_hooks
        if hooks:
            pack, unpack = hooks[-1]
            self._pack(t, pack, unpack, None if is_output else t._edge())
        else:
            self._t = t._data if is_output else t

    def _pack(self, t, pack_hook, unpack_hook, edge) -> None:
        """Stores ``pack_hook(t)``, run without recording (Note [Packed saved tensors])."""
        version = t._vc[0]
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            value = pack_hook(t)
        finally:
            state.grad_enabled = prev
        if t._vc[0] != version:
            raise RuntimeError(_PACK_INPLACE_MSG)
        self._t = _Packed(value, unpack_hook, edge, tuple(t._data.shape))

    def register_hooks(self, node, pack_hook, unpack_hook) -> None:
        """Replaces the stored tensor by what ``pack_hook`` makes of it (RawSavedTensor)."""
        t = self._t
        if type(t) is _Packed:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already "
                               "been set. Hint: only one pair of hooks is allowed at a time.")
        if self._out >= 0:
            self._pack(self.stored(), pack_hook, unpack_hook, None)
        else:
            self._pack(t.detach(), pack_hook, unpack_hook, t._edge())

    def stored(self):
        """What this holds (RawSavedTensor.data): the pack hook's result, the saved input, or
        a saved output's values as a tensor without history."""
        t = self._t
        if type(t) is _Packed:
            return t.value
        if self._out < 0:
            return t
        d = _node.make(t, self._dtype)
        d._vc = self._vc
        return d

    def copy(self) -> SavedTensor:
        """Another SavedTensor holding the same value and version."""
        c = object.__new__(SavedTensor)
        for name in SavedTensor.__slots__:
            setattr(c, name, getattr(self, name))
        return c

    def unpack(self, node):
        """The saved tensor, with its history (an output's: ``node``), for backward."""
        t = self._t
        if type(t) is _Packed:
            return t.unpacked(node, self._out)
        if self._vc[0] != self._version:
            raise RuntimeError(self._modified_message(node))
        out = self._out
        if out >= 0:
            return _tensor_with_history(t, self._dtype, self._vc, node, out)
        if t._fn is None and self._fn is not None:
            raise RuntimeError(_DETACHED_MSG)
        return t

    def unpack_data(self, node):
        """``unpack(node)``'s backend array, without making a Tensor when no hook is set."""
        t = self._t
        if type(t) is _Packed:
            return self.unpack(node)._data
        if self._vc[0] != self._version:
            raise RuntimeError(self._modified_message(node))
        if self._out >= 0:
            return t
        if t._fn is None and self._fn is not None:
            raise RuntimeError(_DETACHED_MSG)
        return t._data

    def _modified_message(self, node) -> str:
        from .tensor import _short_name
        t = self._t  # (never packed: packed tensors have no version check)
        # PyTorch names a saved output's node, and for a saved input the tensor's grad_fn now
        # (the in-place op that modified it, not the node that made it)
        if self._out >= 0:
            fn, nr = node, self._out
        else:
            fn, nr = t.grad_fn, t._output_nr
        origin = ""
        if fn is not None:  # (a custom Function's node is named by its Function there)
            cls = getattr(fn, "_forward_cls", None)
            name = _short_name(fn) if cls is None else cls.__name__  # (torch 2.13: "of Exp")
            origin = f", which is output {nr} of {name},"
        from . import anomaly_mode
        hint = ("the backtrace further above shows the operation that failed to compute its "
                "gradient. The variable in question was changed in there or anywhere later. "
                "Good luck!" if anomaly_mode.is_anomaly_enabled() else
                "enable anomaly detection to find the operation that failed to compute its "
                "gradient, with tritongrad.autograd.set_detect_anomaly(True, check_nan=False).")
        return (f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{_type_name(self._dtype, t)} {list(t.shape)}]{origin} is "
                f"at version {self._vc[0]}; expected version {self._version} instead. Hint: "
                f"{hint}")


def saved_input(t) -> SavedTensor:
    """``SavedTensor(t, False)`` without the class call where neither a hook nor the inference
    check applies: on every recorded op that saves an input (mul saves both)."""
    if anywhere.saved_hooks and state.saved_hooks or t._inference and not state.inference:
        return SavedTensor(t, False)
    s = _new(SavedTensor)
    vc = s._vc = t._vc
    s._version = vc[0]
    s._out = -1
    s._dtype = t._dtype
    s._fn = t._fn
    s._t = t
    return s


def saved_output(t) -> SavedTensor:
    """``SavedTensor(t, True, t._output_nr)`` for an output that dispatch has just made, without
    the type call and the inference check, which a fresh output always passes (it is an
    inference tensor only when made in inference mode): on every recorded op that saves its
    result (tanh, sigmoid, exp, ...)."""
    if anywhere.saved_hooks and state.saved_hooks:
        return SavedTensor(t, True, t._output_nr)
    s = _new(SavedTensor)
    vc = s._vc = t._vc
    s._version = vc[0]
    s._out = t._output_nr
    s._dtype = t._dtype
    s._fn = None
    s._t = t._data
    return s


class _Unsaved:
    """The entry of ``_saved`` for an input that the op saves only for another input's
    gradient, when that gradient is not needed (x * w with w not requiring grad needs w, not
    x): PyTorch's undefined SavedVariable. It unpacks to None."""

    __slots__ = ()

    def unpack(self, node) -> None:
        return None

    def unpack_data(self, node) -> None:
        return None

    def stored(self) -> None:
        return None

    _t = None  # (RawSavedTensor.unpack_hook)
    never_saved = True  # (Node._release: nothing to free)

    def __repr__(self) -> str:
        return "UNSAVED"


UNSAVED = _Unsaved()


def _tensor_with_history(data, dtype, vc, node, output_nr):
    t = _node.make(data, dtype)
    t._vc = vc
    t._fn = node
    if output_nr:
        t._output_nr = output_nr
    t._requires_grad = True
    return t
