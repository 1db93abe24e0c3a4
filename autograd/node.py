"""Graph nodes: what ``grad_fn`` points at, and the tensors they keep for backward.

A ``Node`` is created by an op that records a graph. It holds its edges to the nodes that made
its inputs (``next_functions``), the sequence number it was created with, the CUDA stream that
was current when its forward ran (Note [Backward streams] in engine.py), the tensors it saved,
and hooks. Built-in ops subclass it in autograd/ops (one class per derivative rule, named as
PyTorch names them: ``MulBackward0``); ``Function.apply`` makes one per custom Function call;
leaves get an ``AccumulateGrad``.

A node is also the ``ctx`` of its op's forward and backward: ``save_for_backward``,
``saved_tensors``, ``needs_input_grad`` and user attributes live on it, as in PyTorch. The
saved tensors themselves are in saved.py.
"""

from __future__ import annotations

import itertools
import weakref

from . import anomaly_mode
from .state import state

__all__ = ["Node", "AccumulateGrad", "RemovableHandle", "FREED", "FREED_MSG"]

# tensor.make, installed by autograd/tensor.py when it loads (it imports this module, so this
# one cannot import it back at load time; saved outputs become tensors on the hot path).
make = None

# Nodes that must run as soon as they are ready (leaf accumulation) get this priority, as
# AccumulateGrad does in PyTorch; everything else runs newest-first by sequence number.
MAX_SEQ = (1 << 63) - 1


class RemovableHandle:
    """Returned by every ``register_*hook`` (tensors, nodes, modules; ``torch.utils.hooks``):
    ``handle.remove()`` unregisters the hook, also from the ``extra`` dicts or sets that hold
    its options by id (a module hook's ``with_kwargs``, ``always_call``)."""

    __slots__ = ("_extra", "_hooks_ref", "id")
    _ids = itertools.count()
    next_id = 0  # (PyTorch's: the id the next handle gets)

    def __init__(self, hooks: dict, *extra, extra_dict=None):
        self._hooks_ref = weakref.ref(hooks) if _weakrefable(hooks) else lambda: hooks
        if extra_dict is not None:  # (PyTorch's keyword: a dict or a list of dicts)
            extra += tuple(extra_dict) if isinstance(extra_dict, list) else (extra_dict,)
        self._extra = extra
        self.id = next(RemovableHandle._ids)
        RemovableHandle.next_id = self.id + 1

    def remove(self) -> None:
        hooks = self._hooks_ref()
        if hooks is not None:
            hooks.pop(self.id, None)
        for d in self._extra:
            d.discard(self.id) if isinstance(d, set) else d.pop(self.id, None)

    def __getstate__(self):
        # (as PyTorch's: the hooks dict itself, as a weakref does not pickle; a pickled
        # module's hook handles, such as a lazy module's, keep working after a load)
        return (self._hooks_ref(), self.id, self._extra)

    def __setstate__(self, state) -> None:
        hooks, self.id, self._extra = state
        self._hooks_ref = weakref.ref(hooks) if _weakrefable(hooks) else lambda: hooks
        if self.id >= RemovableHandle.next_id:  # (new handles' ids stay unique, as PyTorch's)
            RemovableHandle._ids = itertools.count(self.id + 1)
            RemovableHandle.next_id = self.id + 1

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

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


# Note [Saved non-tensor values]
#   PyTorch's nodes also expose the non-tensor arguments their formula keeps, by the
#   formula's names (``x.sum(dim=1).grad_fn._saved_dim == (1,)``, ``_saved_keepdim``,
#   ``x.pow(2).grad_fn._saved_exponent``, ``_saved_self_sym_sizes``); they stay readable
#   after backward freed the saved tensors. tritongrad's nodes keep what their rules need
#   under their own field names (autograd/ops), so this table maps PyTorch's names, per node
#   class, to getters of those fields; like the tensor names, each becomes a property when
#   the class is defined. (Nodes whose fields do not determine PyTorch's value, or whose
#   class is not PyTorch's for the op, are left out.) _SAVED_ALIASES gives PyTorch's name of
#   a saved tensor where the formula calls it something else than "self"/"other".

_SAVED_ALIASES = {
    "PowBackward1": {"other": "exponent"},
    "MmBackward0": {"other": "mat2"},
    "ClampMinBackward1": {"other": "min"},
    "ClampMaxBackward1": {"other": "max"},
}


def _field(name: str, default=None, convert=None):
    """A getter of the node's field ``name`` (``default`` when it was not set)."""
    def get(node):
        v = getattr(node, name, default)
        return v if convert is None else convert(v)
    return get


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _transposed(node, which: int) -> int:
    """transpose's dim0 / dim1, from the permutation the node keeps (the dims it swaps)."""
    moved = [i for i, d in enumerate(node.dims) if i != d] or [0, 0]
    return moved[which]


def _slice_part(part: str):
    """A slice's dim / start / end / step, from the one slice in the node's index."""
    def get(node):
        index = node.index
        dims = [i for i, ix in enumerate(index) if isinstance(ix, slice)
                and ix != slice(None)]
        if len(dims) != 1 or len(index) != sum(isinstance(ix, slice) for ix in index):
            raise AttributeError(f"'{type(node).__name__}' object has no attribute "
                                 f"'_saved_{part}'")
        d = dims[0]
        start, end, step = index[d].indices(node.in_shape[d])
        return {"dim": d, "start": start, "end": end, "step": step}[part]
    return get


_SIZES = {"self_sym_sizes": _field("in_shape")}
_DIM_KEEPDIM = {"dim": _field("dims"), "keepdim": _field("keepdim")}
_DIM = {"dim": _field("dim")}
_SAVED_VALUES = {
    "SumBackward0": _SIZES,
    "SumBackward1": {**_DIM_KEEPDIM, **_SIZES},
    "MeanBackward0": {**_SIZES, "self_sym_numel": _field("n")},
    "MeanBackward1": {**_DIM_KEEPDIM, **_SIZES,
                      "self_sym_numel": _field("in_shape", convert=_numel)},
    "AmaxBackward0": _DIM_KEEPDIM,
    "AminBackward0": _DIM_KEEPDIM,
    "LogsumexpBackward0": _DIM_KEEPDIM,
    "ProdBackward1": {"dim": _field("dims", convert=lambda d: d[0]),
                      "keepdim": _field("keepdim")},
    "MaxBackward0": {**_DIM, "keepdim": _field("keepdim"), **_SIZES},
    "MinBackward0": {**_DIM, "keepdim": _field("keepdim"), **_SIZES},
    "PowBackward0": {"exponent": _field("e")},
    "AddBackward0": {"alpha": _field("alpha", 1)},
    "SubBackward0": {"alpha": _field("alpha", 1)},
    # (x + 2 and x - 2: scalar primitives renamed AddBackward0 / SubBackward0, alpha 1)
    "AddBackward1": {"alpha": lambda node: 1},
    "SubBackward1": {"alpha": lambda node: 1},
    "AddmmBackward0": {"alpha": _field("alpha", 1), "beta": _field("beta", 1)},
    "ViewBackward0": _SIZES,
    "ExpandBackward0": _SIZES,
    "SqueezeBackward1": _SIZES,
    "PermuteBackward0": {"dims": _field("dims")},
    "TransposeBackward0": {"dim0": lambda n: _transposed(n, 0),
                           "dim1": lambda n: _transposed(n, 1)},
    "SliceBackward0": {**_SIZES, **{p: _slice_part(p) for p in ("dim", "start", "end", "step")}},
    "SelectBackward0": {**_SIZES,
                        "dim": lambda n: next(i for i, ix in enumerate(n.index)
                                              if type(ix) is int),
                        "index": lambda n: next(ix for ix in n.index if type(ix) is int)},
    "SoftmaxBackward0": _DIM,
    "LogSoftmaxBackward0": _DIM,
    "CatBackward0": _DIM,
    "StackBackward0": _DIM,
    "CumsumBackward0": _DIM,
    "UnbindBackward0": _DIM,
    "GatherBackward0": {**_DIM, "sparse_grad": lambda n: False},
    "SplitBackward0": {**_DIM, **_SIZES, "split_size": _field("sizes", convert=lambda s: s[0])},
    "TopkBackward0": {**_DIM, **_SIZES},
    "SortBackward0": {**_DIM, **_SIZES},
    "CummaxBackward0": _DIM,
    "CumminBackward0": _DIM,
    "NansumBackward0": _DIM_KEEPDIM,
    "ClampBackward1": {"min": _field("lo"), "max": _field("hi")},
    "ClampMinBackward0": {"min": _field("lo")},
    "ClampMaxBackward0": {"max": _field("hi")},
    "TrilBackward0": {"diagonal": _field("diagonal")},
    "TriuBackward0": {"diagonal": _field("diagonal")},
    "GeluBackward0": {"approximate": _field("approximate")},
    "RepeatBackward0": {"repeats": _field("reps"), **_SIZES},
}


class Node:
    """A backward function in the graph (``tensor.grad_fn``)."""

    __slots__ = ("_next", "_nrs", "_seq", "_saved", "_pairs", "__weakref__", "__dict__")

    # Note [Edges as two tuples]
    #   PyTorch's ``next_functions`` is a tuple of (node, output_nr) pairs. Kept as such, every
    #   recorded op would leave three objects the cyclic garbage collector tracks besides the
    #   node (one tuple per edge and the tuple of them), and a graph's nodes live until its
    #   backward: the collector's full passes over them made the cost per node grow with the
    #   graph (perf/bench_graph.py). So a node keeps the nodes its edges lead to in ``_next``
    #   and their output numbers in ``_nrs`` (a tuple of ints, which the collector stops
    #   tracking once it has seen it; the usual all-zero ones are shared constants), one
    #   tracked tuple besides the node; ``next_functions`` builds PyTorch's pairs when first asked
    #   (kept in ``_pairs`` with the two tuples they were built from, as code that indexes
    #   ``next_functions[i]`` per input would otherwise build them once per input), and
    #   assigning it splits them. The engine walks ``_next``/``_nrs`` directly.

    # Note [Node state in slots]
    #   A node keeps what its forward tells ``ctx`` in its ``__dict__``, made on the first
    #   such write: one dict per node, made and freed with every recorded op. The built-in
    #   primitives that always store the same fields on every node (a scalar op's ``s``, add's
    #   ``alpha``, addmm's ``alpha``, ``beta`` and ``layouts``) declare them as ``__slots__``
    #   instead, so those nodes have no dict (``x * 1.01`` and every ``linear`` with a bias
    #   record one such node per call). Other fields, and users' annotations
    #   (``metadata``), still go to the dict.

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
    _shapes = None    # input shapes, for ops that broadcast
    on_arrays = False  # its rule runs on one backend's arrays (vjp_on_arrays): the engine may
                       # chain it (dispatch.Primitive, except those that change device)
    _none_edges = 0   # Note [Edges of wrapped scalars]

    def __init__(self):
        self._next = self._nrs = ()
        self._seq = 0
        self._saved = None

    # Note [Edges of wrapped scalars]
    #   PyTorch wraps a Python scalar operand as a tensor, so ``x * 2``'s MulBackward0 has two
    #   inputs: its ``next_functions`` ends with ``(None, 0)``, its post-hooks get two
    #   ``grad_inputs`` (the second None) and must return two, and calling it returns two
    #   gradients. tritongrad's scalar ops keep no edge for the scalar (the engine walks one
    #   edge fewer); a node class that stands for such an op sets ``_none_edges`` to the
    #   number of trailing None edges PyTorch's node has, and those three places add them.

    @property
    def next_functions(self) -> tuple:
        """The (node, output_nr) edges to the nodes that made this node's inputs, one per
        input (node None for an input that needs no gradient)."""
        nodes, nrs = self._next, self._nrs
        cached = getattr(self, "_pairs", None)  # (a slot, unset on most nodes)
        if cached is not None and cached[0] is nodes and cached[1] is nrs:
            return cached[2]
        pairs = tuple(zip(nodes, nrs)) + ((None, 0),) * self._none_edges
        self._pairs = (nodes, nrs, pairs)
        return pairs

    @next_functions.setter
    def next_functions(self, edges) -> None:
        edges = tuple(edges)
        self._next = tuple([e[0] for e in edges])
        self._nrs = _output_nrs(tuple([e[1] for e in edges]))

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

    # -- anomaly mode ------------------------------------------------------------------------
    @property
    def _trace(self):
        """The stack of the forward call that recorded this node (anomaly mode), or None."""
        return self.__dict__.get("_forward_trace")

    @_trace.setter
    def _trace(self, stack) -> None:
        # Anomaly mode's recording sets it; the node whose backward is running in this thread,
        # if any, induced this one (Note [Anomaly parents], anomaly_mode.py).
        d = self.__dict__
        d["_forward_trace"] = stack
        parent = anomaly_mode.running_node()
        if parent is not None:
            d["_anomaly_parent"] = parent

    # -- the outputs' metadata ---------------------------------------------------------------
    # A node keeps no shape, dtype or device of its outputs (recording it would cost every op);
    # graph.get_gradient_edge notes them for the output it names, so that backward(edge) can
    # build the implicit gradient of a one-element output once the tensor is gone.
    def _note_output(self, output_nr: int, tensor) -> None:
        """Records ``tensor``'s shape, dtype and device as those of output ``output_nr``."""
        meta = self.__dict__.setdefault("_out_meta", {})
        meta[output_nr] = (tuple(tensor.shape), tensor.dtype, tensor.device)

    def _output_metadata(self, output_nr: int):
        """(shape, dtype, device) of output ``output_nr`` when known, else None."""
        meta = self.__dict__.get("_out_meta")
        return None if meta is None else meta.get(output_nr)

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
            out = (None,) * len(self.next_functions)
        else:
            out = self.apply(*grads)
            if self._none_edges and type(out) is tuple:  # Note [Edges of wrapped scalars]
                out = out + (None,) * self._none_edges
        # (PyTorch's binding returns a node with one input's gradient alone, not in a tuple)
        return out[0] if type(out) is tuple and len(out) == 1 else out

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
        saved = self._saved
        if saved is None or saved is FREED:
            return
        # Entries never saved (``saved.UNSAVED``) free nothing: a node that saved none of its
        # inputs runs again, as PyTorch's with only undefined SavedVariables. The loop stops
        # at the first saved entry, the first one for nearly every node (the backward loop
        # releases each node it ran). An empty record is a saved scalar's
        # (Primitive.saves_scalar): freed.
        for s in saved:
            if not getattr(s, "never_saved", False):  # (SavedTensor: a class attribute)
                break
        else:
            if saved:
                return
        self._saved = FREED

    # -- saved-value introspection: grad_fn._saved_self, grad_fn._raw_saved_other, ... -------
    # Note [Saved-value names]
    #   PyTorch's nodes expose each saved tensor under the name of the derivative formula's
    #   argument: ``_saved_self`` / ``_saved_other`` for inputs, ``_saved_result`` for the
    #   output, and ``_raw_saved_<name>`` for the SavedTensor object itself
    #   (``register_hooks``). Here a node class may declare ``saved_names``, one name per
    #   entry of ``_saved`` in order; without it the names come from the Primitive protocol
    #   (dispatch.py): ``save_inputs`` index 0 is "self", 1 is "other", n >= 2 "input<n>",
    #   ``save_output`` adds "result", ``keep_outputs`` "indices", ``keep_params`` "index".
    #   Each subclass gets one property per name when it is defined (__init_subclass__), not a
    #   ``__getattr__``: a class with ``__getattr__`` makes every attribute read on its
    #   instances slower, and the engine reads node attributes on every step.
    saved_names = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        aliases = _SAVED_ALIASES.get(cls.__name__, {})
        for i, name in enumerate(cls._saved_slot_names()):
            for n in (name, aliases.get(name)) if name in aliases else (name,):
                if f"_saved_{n}" not in cls.__dict__:
                    setattr(cls, f"_saved_{n}", property(_saved_getter(i, raw=False)))
                    setattr(cls, f"_raw_saved_{n}", property(_saved_getter(i, raw=True)))
        for name, get in _SAVED_VALUES.get(cls.__name__, {}).items():
            if f"_saved_{name}" not in cls.__dict__:
                setattr(cls, f"_saved_{name}", property(get))

    @classmethod
    def _saved_slot_names(cls) -> tuple:
        if cls.saved_names is not None:
            return tuple(cls.saved_names)
        names = tuple(_INPUT_NAMES[i] if i < len(_INPUT_NAMES) else f"input{i}"
                      for i in getattr(cls, "save_inputs", ()))
        names += ("result",) if getattr(cls, "save_output", False) else ()
        # (Note [Saved indices] in dispatch.py: an output's indices, an input's index)
        return (names + ("indices",) * len(getattr(cls, "keep_outputs", ()))
                + ("index",) * len(getattr(cls, "keep_params", ())))

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
        # (Node.__init__ written out: a leaf's node is made again each step it is used in;
        # dispatch._leaf_node writes this out again: keep the two alike)
        self._next = self._nrs = ()
        self._saved = None
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

    def _output_metadata(self, output_nr: int):
        v = self.variable
        return tuple(v.shape), v.dtype, v.device


_INPUT_NAMES = ("self", "other")

# The output numbers of edges that all lead to output 0, shared (Note [Edges as two tuples]):
# a tuple made at run time is tracked by the collector until its first pass over it.
_ZERO_NRS = tuple((0,) * n for n in range(9))


def _output_nrs(nrs: tuple) -> tuple:
    """``nrs``, or the shared tuple equal to it when every entry is 0."""
    if len(nrs) < len(_ZERO_NRS) and not any(nrs):
        return _ZERO_NRS[len(nrs)]
    return nrs


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


def _is_tensor(x) -> bool:
    from .tensor import Tensor
    return isinstance(x, Tensor)


# saved.py needs this module's names; Node.__init_subclass__ needs its getter once ops define
# node classes, which is after both modules loaded
from .saved import _saved_getter  # noqa: E402


RemovableHandle.__module__ = "tritongrad.utils.hooks"  # (its public home, as PyTorch's)
