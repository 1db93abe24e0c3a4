"""Tensors saved for backward: what a node keeps in ``_saved``.

A ``SavedTensor`` holds a tensor with the version it had when saved, so that backward can
refuse one modified in place since; saved-tensor hooks (graph.saved_tensors_hooks) pack it at
save time and unpack it at use. ``RawSavedTensor`` is the handle ``grad_fn._raw_saved_<name>``
gives out (Note [Saved-value names] in node.py).
"""

from __future__ import annotations

from . import node as _node
from .node import CLONE_ON_SAVE, FREED, FREED_MSG, Node, _is_tensor, _type_name
from .state import anywhere, state

__all__ = ["SavedTensor", "RawSavedTensor"]


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
    """A saved value as the node stores it (``grad_fn._raw_saved_<name>``): unpack it, or give
    it its own pack / unpack hooks."""

    __slots__ = ("_index", "_node", "_saved")

    def __init__(self, node: Node, saved, index: int):
        # saved is None once the graph was freed; index is its place in node._saved
        self._node, self._saved, self._index = node, saved, index

    def unpack(self):
        """The saved tensor (as ``grad_fn._saved_<name>`` returns it)."""
        if self._saved is None:
            raise RuntimeError(FREED_MSG)
        return self._saved.unpack(self._node)

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Packs the saved tensor now with ``pack_hook(tensor) -> Any``, and unpacks it with
        ``unpack_hook(Any) -> Tensor`` whenever backward (or ``_saved_<name>``) needs it.
        One pair of hooks per saved tensor."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): pack_hook and unpack_hook must be callable")
        if self._saved is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through "
                "the graph a second time or if you need to access saved variables after "
                "calling backward.")
        saved, slots = self._saved, self._node._saved
        if sum(1 for x in slots if x is saved) > 1:
            # x * x saves x once for both operands: hooks set through one name must not
            # change what the other name holds
            saved = slots[self._index] = saved.copy()
            self._saved = saved
        saved.register_hooks(self._node, pack_hook, unpack_hook)


class _Packed:
    """What a pack hook returned, with the unpack hook that turns it back into a tensor."""

    __slots__ = ("value", "unpack")

    def __init__(self, value, unpack):
        self.value, self.unpack = value, unpack


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Unpacking checks that version: a tensor modified in place after it was saved makes the
    backward that needs it fail, rather than silently compute a wrong gradient. An op's own
    output is kept as its array, without its ``grad_fn`` (that would be a reference cycle
    through the node), and becomes a tensor with that history again on unpack. Saved-tensor
    hooks (graph.saved_tensors_hooks) pack at save time and unpack at use.
    """

    __slots__ = ("_t", "_vc", "_version", "_out", "_dtype", "_fn")

    def __init__(self, t, is_output: bool = False, output_nr: int = 0):
        if t._inference and not state.inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. To work around you can make a "
                "clone to get a normal tensor and use it in autograd.")
        vc = self._vc = t._vc
        self._version = vc[0]
        self._out = output_nr if is_output else -1
        self._dtype = t._dtype
        # the input's grad_fn, named only if an error needs it; an output's is the node that
        # unpacks it (kept here, it would be a reference cycle only the GC could free)
        self._fn = None if is_output else t._grad_fn
        hooks = anywhere.saved_hooks and state.saved_hooks
        if hooks:
            pack, unpack = hooks[-1]
            if pack is CLONE_ON_SAVE:
                self._save_clone(t, is_output, output_nr)
            else:
                self._t = _Packed(pack(t), unpack)
        else:
            self._t = t._data if is_output else t

    def _save_clone(self, t, is_output: bool, output_nr: int) -> None:
        """Saves a copy of ``t`` with a version counter of its own, so that in-place changes
        to ``t`` after this do not reach backward (graph.allow_mutation_on_saved_tensors)."""
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            c = t.detach().clone()
        finally:
            state.grad_enabled = prev
        self._vc = c._vc
        self._version = c._vc[0]
        if is_output:
            self._t = c._data
            return
        if t._requires_grad:  # the copy keeps the original's place in the graph
            c._grad_fn, c._output_nr = t._edge()
            c._requires_grad = True
        self._t = c

    def register_hooks(self, node, pack_hook, unpack_hook) -> None:
        """Replaces the stored tensor by what ``pack_hook`` makes of it (RawSavedTensor)."""
        if type(self._t) is _Packed:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already "
                               "been set. Hint: only one pair of hooks is allowed at a time.")
        t = self.unpack(node)
        prev = state.grad_enabled
        state.grad_enabled = False  # what the hook computes is a stored value, not history
        try:
            self._t = _Packed(pack_hook(t), unpack_hook)
        finally:
            state.grad_enabled = prev

    def copy(self) -> SavedTensor:
        """Another SavedTensor holding the same value and version."""
        c = object.__new__(SavedTensor)
        for name in SavedTensor.__slots__:
            setattr(c, name, getattr(self, name))
        return c

    def unpack(self, node):
        if self._vc[0] != self._version:
            raise RuntimeError(self._modified_message(node))
        t = self._t
        out = self._out
        if type(t) is _Packed:
            t = t.unpack(t.value)
            if not _is_tensor(t):
                raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but "
                                f"got result of type {type(t).__name__}")
            if out >= 0 and t._grad_fn is None and not t._requires_grad:
                t = t._with_history(node, out)
            return t
        if out >= 0:
            return _tensor_with_history(t, self._dtype, self._vc, node, out)
        return t

    def unpack_data(self, node):
        """``unpack(node)``'s backend array, without making a Tensor when no hook is set."""
        t = self._t
        if type(t) is _Packed:
            return self.unpack(node)._data
        if self._vc[0] != self._version:
            raise RuntimeError(self._modified_message(node))
        return t if self._out >= 0 else t._data

    def _modified_message(self, node) -> str:
        t = self._t
        shape = t.shape if not isinstance(t, _Packed) else None
        what = "" if shape is None else f"[{_type_name(self._dtype, t)} {list(shape)}]"
        fn = node if self._out >= 0 else self._fn
        origin = "" if fn is None else \
            f", which is output {max(self._out, 0)} of {fn.name()}"
        return (f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {what}{origin}, is at version {self._vc[0]}; expected "
                f"version {self._version} instead. Hint: enable anomaly detection to find the "
                f"operation that failed to compute its gradient, with "
                f"tritongrad.autograd.set_detect_anomaly(True).")


def _tensor_with_history(data, dtype, vc, node, output_nr):
    t = _node.make(data, dtype)
    t._vc = vc
    t._grad_fn = node
    if output_nr:
        t._output_nr = output_nr
    t._requires_grad = True
    return t
