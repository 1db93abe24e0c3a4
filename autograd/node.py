"""Graph nodes: what ``grad_fn`` points at, and the tensors they keep for backward.

A ``Node`` is created by an op that records a graph. It holds its edges to the nodes that made
its inputs (``next_functions``), the sequence number it was created with, the CUDA stream that
was current when its forward ran (Note [Backward streams] in engine.py), the tensors it saved,
and hooks. Built-in ops subclass it in autograd/ops (one class per derivative rule, named as
PyTorch names them: ``MulBackward0``); ``Function.apply`` makes one per custom Function call;
leaves get an ``AccumulateGrad``.

A node is also the ``ctx`` of its op's forward and backward: ``save_for_backward``,
``saved_tensors``, ``needs_input_grad`` and user attributes live on it, as in PyTorch.
"""

from __future__ import annotations

import itertools
import weakref

from .state import anywhere, state

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "RawSavedTensor", "RemovableHandle", "FREED",
           "FREED_MSG", "CLONE_ON_SAVE"]

# tensor.make, installed by autograd/tensor.py when it loads (it imports this module, so this
# one cannot import it back at load time; saved outputs become tensors on the hot path).
make = None

# Nodes that must run as soon as they are ready (leaf accumulation) get this priority, as
# AccumulateGrad does in PyTorch; everything else runs newest-first by sequence number.
MAX_SEQ = (1 << 63) - 1


class RemovableHandle:
    """Returned by ``register_hook``: ``handle.remove()`` unregisters the hook."""

    __slots__ = ("_hooks_ref", "id")
    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks_ref = weakref.ref(hooks) if _weakrefable(hooks) else lambda: hooks
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        hooks = self._hooks_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(dict):
    """A dict that weakrefs can point to (plain dicts cannot)."""

    __slots__ = ("__weakref__",)


def _weakrefable(obj) -> bool:
    return isinstance(obj, _HookDict)


class _Freed:
    def __repr__(self) -> str:
        return "<freed saved tensors>"


FREED = _Freed()

# The pack hook that graph.allow_mutation_on_saved_tensors pushes onto the saved-tensor hook
# stack: SavedTensor copies the tensor instead of calling it.
CLONE_ON_SAVE = object()

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


class Node:
    """A backward function in the graph (``tensor.grad_fn``)."""

    __slots__ = ("next_functions", "_seq", "_saved", "__weakref__", "__dict__")

    # Every node has the three slots; the fields below are set on few nodes, so they are
    # class-level defaults that an instance shadows when it sets one (creating a node is on
    # every recorded op's path).
    num_outputs = 1   # outputs of the forward, i.e. gradient slots
    _stream = None    # the CUDA stream current at forward (Note [Backward streams])
    _pre_hooks = None
    _post_hooks = None
    _tensor_hooks = None
    _retained = None  # output_nr -> weakref of a tensor that retains its grad
    _hooked = False   # any of the four above was ever set: the engine's fast paths skip it
    _trace = None     # forward stack, under anomaly mode
    _shapes = None    # input shapes, for ops that broadcast
    on_arrays = False  # its rule runs on one backend's arrays (vjp_on_arrays): the engine may
                       # chain it (dispatch.Primitive, except those that change device)

    def __init__(self):
        self.next_functions = ()
        self._seq = 0
        self._saved = None

    # -- identity ----------------------------------------------------------------------------
    def name(self) -> str:
        """The node's name, as profiles and error messages show it (e.g. ``MulBackward0``)."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    def _sequence_nr(self) -> int:
        return self._seq

    def _set_sequence_nr(self, sequence_nr: int) -> None:
        """Sets the number the engine orders ready nodes by (highest first)."""
        self._seq = int(sequence_nr)

    @property
    def metadata(self) -> dict:
        """A dict for the user's own annotations on this node."""
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    # -- the backward computation ------------------------------------------------------------
    def apply(self, *grads):
        """Maps gradients w.r.t. this node's outputs to gradients w.r.t. its inputs."""
        raise NotImplementedError(f"{self.name()} has no backward")

    def __call__(self, *grads):
        """Runs the node on gradients w.r.t. its outputs, one per output (None for an output
        that got none), as the engine would; returns the gradients w.r.t. its inputs."""
        n = self.num_outputs
        if len(grads) != n:
            raise TypeError(f"expected {n} arguments, got {len(grads)} instead")
        for i, g in enumerate(grads):
            if g is not None and not _is_tensor(g):
                raise TypeError(f"argument {i} is not a Variable")
        if all(g is None for g in grads) and not getattr(self, "_materialize", False):
            return (None,) * len(self.next_functions)
        return self.apply(*grads)

    # -- ctx: saving tensors -----------------------------------------------------------------
    def save_for_backward(self, *tensors) -> None:
        """Saves tensors (or None) for ``backward``; read them back with ``saved_tensors``."""
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The saved tensors, checked against in-place modification since they were saved."""
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(FREED_MSG)
        if saved is None:
            to_save = self.__dict__.get("_to_save")  # still inside forward
            return tuple(to_save) if to_save else ()
        return tuple([None if s is None else s.unpack(self) for s in saved])

    @property
    def saved_variables(self) -> tuple:
        """Deprecated alias of ``saved_tensors``."""
        import warnings
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning,
                      stacklevel=2)
        return self.saved_tensors

    def _release(self) -> None:
        if self._saved is not None:
            self._saved = FREED

    # -- saved-value introspection: grad_fn._saved_self, grad_fn._raw_saved_other, ... -------
    # Note [Saved-value names]
    #   PyTorch's nodes expose each saved tensor under the name of the derivative formula's
    #   argument: ``_saved_self`` / ``_saved_other`` for inputs, ``_saved_result`` for the
    #   output, and ``_raw_saved_<name>`` for the SavedTensor object itself
    #   (``register_hooks``). Here a node class may declare ``saved_names``, one name per
    #   entry of ``_saved`` in order; without it the names come from the Primitive protocol
    #   (dispatch.py): ``save_inputs`` index 0 is "self", 1 is "other", n >= 2 "input<n>", and
    #   ``save_output`` adds "result". Each subclass gets one property per name when it is
    #   defined (__init_subclass__), not a ``__getattr__``: a class with ``__getattr__`` makes
    #   every attribute read on its instances slower, and the engine reads node attributes
    #   on every step.
    saved_names = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for i, name in enumerate(cls._saved_slot_names()):
            if f"_saved_{name}" not in cls.__dict__:
                setattr(cls, f"_saved_{name}", property(_saved_getter(i, raw=False)))
                setattr(cls, f"_raw_saved_{name}", property(_saved_getter(i, raw=True)))

    @classmethod
    def _saved_slot_names(cls) -> tuple:
        if cls.saved_names is not None:
            return tuple(cls.saved_names)
        names = tuple(_INPUT_NAMES[i] if i < len(_INPUT_NAMES) else f"input{i}"
                      for i in getattr(cls, "save_inputs", ()))
        return names + (("result",) if getattr(cls, "save_output", False) else ())

    # -- hooks -------------------------------------------------------------------------------
    def register_hook(self, fn) -> RemovableHandle:
        """Registers ``fn(grad_inputs, grad_outputs)`` to run after this node; it may return
        replacement ``grad_inputs``."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
            self._hooked = True
        h = RemovableHandle(self._post_hooks)
        self._post_hooks[h.id] = fn
        return h

    def register_prehook(self, fn) -> RemovableHandle:
        """Registers ``fn(grad_outputs)`` to run before this node; it may return replacement
        ``grad_outputs``."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
            self._hooked = True
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def _add_tensor_hook(self, output_nr: int, fn) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
            self._hooked = True
        hooks = self._tensor_hooks.get(output_nr)
        if hooks is None:
            hooks = self._tensor_hooks[output_nr] = _HookDict()
        h = RemovableHandle(hooks)
        hooks[h.id] = fn
        return h

    def _tensor_hooks_for(self, output_nr: int):
        th = self._tensor_hooks
        return th.get(output_nr) if th else None


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients into ``variable.grad``
    following the default gradient layout rules (engine.accumulate_grad)."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__()
        self.variable = variable
        self._seq = MAX_SEQ

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def apply(self, grad):
        """Adds ``grad`` into ``variable.grad`` (called directly: the engine accumulates
        through engine.accumulate_grad itself, with its hooks)."""
        from .engine import accumulate_grad
        accumulate_grad(self.variable, grad, state.grad_enabled, steal=False)
        return ()

    def _tensor_hooks_for(self, output_nr: int):
        return self.variable._hooks  # a leaf keeps its hooks itself (they outlive this node)


_INPUT_NAMES = ("self", "other")


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


def _type_name(dtype, t) -> str:
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
             "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
             "bool": "BoolTensor"}
    cuda = getattr(t, "device", None)
    prefix = "tritongrad.cuda." if getattr(cuda, "type", "cpu") == "cuda" else "tritongrad."
    return prefix + names.get(dtype.name, dtype.name)


def _tensor_type_name(t) -> str:
    """PyTorch's legacy type string for tensor ``t`` (``tritongrad.FloatTensor``)."""
    return _type_name(t.dtype, t)


def _tensor_with_history(data, dtype, vc, node, output_nr):
    t = make(data, dtype)
    t._vc = vc
    t._grad_fn = node
    if output_nr:
        t._output_nr = output_nr
    t._requires_grad = True
    return t


def _is_tensor(x) -> bool:
    from .tensor import Tensor
    return isinstance(x, Tensor)
