"""Pytrees: nested containers of leaves, as ``torch.utils._pytree`` sees them (the transforms
of ``tritongrad.func`` take and return them; ``tritongrad.utils._pytree`` re-exports this).

A *pytree* is a tuple, list, dict, ``OrderedDict``, ``defaultdict``, ``deque`` or namedtuple
(or a type registered with :func:`register_pytree_node`) whose children are pytrees; anything
else (a Tensor, a number, None, a string) is a leaf. ``tree_flatten(tree)`` gives the leaves in
order and a :class:`TreeSpec` of the containers around them; ``tree_unflatten(leaves, spec)``
builds the same containers around new leaves.

Example:
    >>> leaves, spec = tree_flatten({"a": 1, "b": (2, [3])})
    >>> leaves
    [1, 2, 3]
    >>> tree_unflatten([x * 10 for x in leaves], spec)
    {'a': 10, 'b': (20, [30])}
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

__all__ = ["PyTree", "Context", "FlattenFn", "UnflattenFn", "TreeSpec", "LeafSpec", "keystr",
           "key_get", "register_pytree_node", "tree_is_leaf", "tree_flatten",
           "tree_flatten_with_path", "tree_unflatten", "tree_iter", "tree_leaves",
           "tree_leaves_with_path", "tree_structure", "tree_map", "tree_map_with_path",
           "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "treespec_pprint", "is_namedtuple",
           "is_namedtuple_class", "is_namedtuple_instance", "is_structseq",
           "is_structseq_class", "is_structseq_instance", "treespec_dumps", "treespec_loads",
           # tritongrad's own (vmap's in_dims/out_dims)
           "LEAF", "broadcast_prefix"]

Context = Any
PyTree = Any
FlattenFn = Callable[[PyTree], "tuple[list[Any], Context]"]
UnflattenFn = Callable[[Iterable[Any], Context], PyTree]
KeyPath = tuple


# -- the node registry -----------------------------------------------------------------------

class NodeDef(NamedTuple):
    type: type
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Callable | None


class _SerializeNodeDef(NamedTuple):
    typ: type
    serialized_type_name: str
    to_dumpable_context: Callable | None
    from_dumpable_context: Callable | None


NO_SERIALIZED_TYPE_NAME_FOUND = "NO_SERIALIZED_TYPE_NAME_FOUND"
_NODE_REGISTRY_LOCK = threading.RLock()
SUPPORTED_NODES: dict = {}
SUPPORTED_SERIALIZED_TYPES: dict = {}


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *,
                         serialized_type_name: str | None = None,
                         to_dumpable_context: Callable | None = None,
                         from_dumpable_context: Callable | None = None,
                         flatten_with_keys_fn: Callable | None = None) -> None:
    """Register a container-like type as pytree node.

    Args:
        cls: the type to register.
        flatten_fn: ``flatten_fn(node) -> (children, context)``.
        unflatten_fn: ``unflatten_fn(children, context) -> node``.
        serialized_type_name: the fully qualified name used when serializing the tree spec.
        to_dumpable_context, from_dumpable_context: how to convert the context to and from a
            json-dumpable form (both or neither).
        flatten_with_keys_fn: like ``flatten_fn``, but returns ``[(key, child), ...]`` in place
            of the children (needed by :func:`tree_flatten_with_path`).

    Example:
        >>> class Point:
        ...     def __init__(self, x, y): self.x, self.y = x, y
        >>> register_pytree_node(Point, lambda p: ([p.x, p.y], None),
        ...                      lambda xs, _: Point(*xs))
        >>> tree_leaves([Point(1, 2), 3])
        [1, 2, 3]
    """
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            raise ValueError(f"{cls} is already registered as pytree node.")
    _private_register_pytree_node(
        cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
        to_dumpable_context=to_dumpable_context, from_dumpable_context=from_dumpable_context,
        flatten_with_keys_fn=flatten_with_keys_fn)


def _register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *,
                          serialized_type_name: str | None = None,
                          to_dumpable_context: Callable | None = None,
                          from_dumpable_context: Callable | None = None,
                          flatten_with_keys_fn: Callable | None = None) -> None:
    """``register_pytree_node`` that replaces an earlier registration (with a warning), as
    PyTorch's private function that libraries call."""
    _private_register_pytree_node(
        cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
        to_dumpable_context=to_dumpable_context, from_dumpable_context=from_dumpable_context,
        flatten_with_keys_fn=flatten_with_keys_fn)


def _private_register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                                  to_dumpable_context=None, from_dumpable_context=None,
                                  flatten_with_keys_fn=None) -> None:
    if (to_dumpable_context is None) ^ (from_dumpable_context is None):
        raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must "
                         "be None or registered.")
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            warnings.warn(f"{cls} is already registered as pytree node. Overwriting the "
                          "previous registration.", stacklevel=3)
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(
            cls, serialized_type_name or NO_SERIALIZED_TYPE_NAME_FOUND, to_dumpable_context,
            from_dumpable_context)


def _deregister_pytree_node(cls: type) -> None:
    """Removes ``cls`` from the registry (PyTorch's private helper, for tests)."""
    with _NODE_REGISTRY_LOCK:
        del SUPPORTED_NODES[cls]
        SUPPORTED_SERIALIZED_TYPES.pop(cls, None)


# -- key paths ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The key of a sequence's child: ``[idx]``."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """The key of a mapping's child: ``[key]``."""
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The key of an attribute (a namedtuple's field): ``.name``."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp: KeyPath) -> str:
    """Given a key path, return a pretty-printed representation (``"[0]['a'].x"``)."""
    return "".join([str(k) for k in kp])


def key_get(obj: Any, kp: KeyPath) -> Any:
    """Given an object and a key path, return the value at the key path."""
    for k in kp:
        obj = k.get(obj)
    return obj


# -- namedtuples and structseqs ----------------------------------------------------------------

def is_namedtuple_class(cls: type) -> bool:
    """Return whether the class is a subclass of namedtuple."""
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and all(type(f) is str for f in cls._fields)
            and callable(getattr(cls, "_make", None)) and callable(getattr(cls, "_asdict", None)))


def is_namedtuple(obj: object) -> bool:
    """Return whether the object is an instance of namedtuple or a subclass of namedtuple."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj: object) -> bool:
    """Return whether the object is an instance of namedtuple."""
    return is_namedtuple_class(type(obj))


_Py_TPFLAGS_BASETYPE = 1 << 10


def is_structseq_class(cls: type) -> bool:
    """Return whether the class is a class of PyStructSequence (``os.stat_result``)."""
    return (isinstance(cls, type) and cls.__bases__ == (tuple,)
            and all(isinstance(getattr(cls, n, None), int)
                    for n in ("n_fields", "n_sequence_fields", "n_unnamed_fields"))
            and not bool(cls.__flags__ & _Py_TPFLAGS_BASETYPE))


def is_structseq(obj: object) -> bool:
    """Return whether the object is an instance or a class of PyStructSequence."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_instance(obj: object) -> bool:
    """Return whether the object is an instance of PyStructSequence."""
    return is_structseq_class(type(obj))


# -- the built-in nodes ------------------------------------------------------------------------

def _seq_keys(values: list) -> list:
    return [(SequenceKey(i), v) for i, v in enumerate(values)]


def _dict_keys(keys: list, values: list) -> list:
    return [(MappingKey(k), v) for k, v in zip(keys, values)]


def _register_builtins() -> None:
    reg = _private_register_pytree_node
    reg(tuple, lambda d: (list(d), None), lambda v, c: tuple(v),
        serialized_type_name="builtins.tuple",
        flatten_with_keys_fn=lambda d: (_seq_keys(list(d)), None))
    reg(list, lambda d: (d, None), lambda v, c: list(v), serialized_type_name="builtins.list",
        flatten_with_keys_fn=lambda d: (_seq_keys(d), None))
    reg(dict, lambda d: (list(d.values()), list(d.keys())), lambda v, c: dict(zip(c, v)),
        serialized_type_name="builtins.dict",
        flatten_with_keys_fn=lambda d: (_dict_keys(list(d), list(d.values())), list(d)))
    # every namedtuple class is a node of type ``namedtuple`` with the class as its context
    reg(namedtuple, lambda d: (list(d), type(d)), lambda v, c: c(*v),
        serialized_type_name="collections.namedtuple",
        flatten_with_keys_fn=lambda d: ([(GetAttrKey(f), v) for f, v in zip(d._fields, d)],
                                        type(d)))
    reg(OrderedDict, lambda d: (list(d.values()), list(d.keys())),
        lambda v, c: OrderedDict(zip(c, v)), serialized_type_name="collections.OrderedDict",
        flatten_with_keys_fn=lambda d: (_dict_keys(list(d), list(d.values())), list(d)))
    reg(defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
        lambda v, c: defaultdict(c[0], zip(c[1], v)),
        serialized_type_name="collections.defaultdict",
        flatten_with_keys_fn=lambda d: (_dict_keys(list(d), list(d.values())),
                                        [d.default_factory, list(d)]))
    reg(deque, lambda d: (list(d), d.maxlen), lambda v, c: deque(v, maxlen=c),
        serialized_type_name="collections.deque",
        flatten_with_keys_fn=lambda d: (_seq_keys(list(d)), d.maxlen))


_register_builtins()
STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})


def _get_node_type(tree: Any) -> Any:
    node_type = type(tree)
    return namedtuple if is_namedtuple_class(node_type) else node_type


def tree_is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Check if a pytree is a leaf: not a registered container, or ``is_leaf(tree)``.

    Example:
        >>> tree_is_leaf(1), tree_is_leaf([1, 2]), tree_is_leaf((1,), is_leaf=lambda x: True)
        (True, False, True)
    """
    if is_leaf is not None and is_leaf(tree):
        return True
    return _get_node_type(tree) not in SUPPORTED_NODES


# -- TreeSpec ----------------------------------------------------------------------------------

class TreeSpec:
    """The structure of a pytree: ``type`` (None for a leaf; ``namedtuple`` for any
    namedtuple), ``context`` (a dict's keys, a namedtuple's class) and the children's specs
    (``children()``, ``child(i)``); ``num_nodes``, ``num_leaves``, ``num_children``."""

    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type: Any, context: Context, children_specs: list) -> None:  # noqa: A002
        self.type, self._context, self._children = type, context, list(children_specs)
        if type is None:
            if context is not None:
                raise AssertionError("leaf node should not have a context")
            if self._children:
                raise AssertionError("leaf node should not have children")
            self.num_nodes = self.num_leaves = 1
            self.num_children = 0
        else:
            self.num_nodes = 1 + sum(c.num_nodes for c in self._children)
            self.num_leaves = sum(c.num_leaves for c in self._children)
            self.num_children = len(self._children)

    @property
    def context(self) -> Context:
        return self._context

    @property
    def children_specs(self) -> list:
        return self._children

    def is_leaf(self) -> bool:
        """Test whether the treespec represents a leaf."""
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self) -> list:
        """Get all the child treespecs."""
        return self._children.copy()

    def child(self, index: int) -> TreeSpec:
        """Get the child treespec at the given index."""
        return self._children[index]

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.type is other.type and self._context == other._context
                and self._children == other._children)

    def __hash__(self) -> int:
        t, c = self.type, self._context
        if t is defaultdict:
            c = (c[0], tuple(c[1]))
        elif t in (dict, OrderedDict):
            c = tuple(c)
        elif t is not None and t not in BUILTIN_TYPES:
            c = None  # (a custom node's context may not be hashable)
        return hash((t, c, tuple(self._children)))

    def __repr__(self, indent: int = 0) -> str:  # (PyTorch's form, children one a line)
        if self.type is None:
            return "*"
        parts = ""
        if self._children:
            indent += 2
            parts = self._children[0].__repr__(indent)
            parts += "," if len(self._children) > 1 else ""
            parts += ",".join("\n" + " " * indent + c.__repr__(indent)
                              for c in self._children[1:])
        return f"TreeSpec({self.type.__name__}, {self._context}, [{parts}])"

    def pprint(self) -> str:
        """The structure as its literal, leaves as ``*`` (``treespec_pprint``)."""
        return treespec_pprint(self)

    def flatten_up_to(self, tree: PyTree) -> list:
        """Flatten the subtrees in ``tree`` up to the structure of this treespec and return a
        list of subtrees (``tree`` must have this spec as a prefix)."""
        out: list = []
        _flatten_up_to(self, tree, out)
        return out

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """Reconstruct a pytree from the leaves."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return _build(self, iter(leaves))


def _build(spec: TreeSpec, it):
    if spec.type is None:
        return next(it)
    children = [_build(c, it) for c in spec._children]
    return SUPPORTED_NODES[spec.type].unflatten_fn(children, spec._context)


def _flatten_up_to(spec: TreeSpec, node, out: list) -> None:
    if spec.is_leaf():
        out.append(node)
        return
    node_type = _get_node_type(node)
    both_dicts = spec.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
    if not both_dicts and node_type is not spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type!r}, but got {node_type!r}.")
    if both_dicts:  # (dict types are compatible with each other; keys must match)
        keys = spec._context[1] if spec.type is defaultdict else spec._context
        got, want = set(node), set(keys)
        if got != want:
            msg = ""
            if want - got:
                msg += f"; missing key(s): {want - got}"
            if got - want:
                msg += f"; extra key(s): {got - want}"
            raise ValueError(f"Node keys mismatch{msg}.")
        children = [node[k] for k in keys]
    else:
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        if len(children) != spec.num_children:
            raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                             f"{len(children)}.")
        if node_type is not deque and context != spec._context:
            raise ValueError(f"Node context mismatch for node type {spec.type!r}; expected "
                             f"{spec._context!r}, but got {context!r}.")
    for child, child_spec in zip(children, spec._children):
        _flatten_up_to(child_spec, child, out)


class LeafSpec(TreeSpec):
    """The spec of a leaf (``*``)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None, None, [])


LEAF = LeafSpec()


def treespec_leaf() -> LeafSpec:
    """Make a treespec representing a leaf node."""
    return LEAF


def treespec_tuple(iterable: Iterable[TreeSpec] = (), /) -> TreeSpec:
    """Make a tuple treespec from an iterable of child treespecs."""
    children = list(iterable)
    if any(not isinstance(c, TreeSpec) for c in children):
        raise ValueError(f"Expected a tuple of TreeSpec values, got: {children!r}.")
    return TreeSpec(tuple, None, children)


def treespec_dict(mapping=(), /, **kwargs: TreeSpec) -> TreeSpec:
    """Make a dict treespec from a dict of child treespecs."""
    d = dict(mapping, **kwargs)
    if any(not isinstance(c, TreeSpec) for c in d.values()):
        raise ValueError(f"Expected a dictionary of TreeSpec values, got: {d!r}.")
    return TreeSpec(dict, list(d.keys()), list(d.values()))


class _Asterisk(str):
    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure as its literal with ``*`` for each leaf: ``(*, [*, {'a': *}])``."""
    return repr(tree_unflatten([_Asterisk("*")] * treespec.num_leaves, treespec))


# -- flatten, unflatten, map -------------------------------------------------------------------

def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                 ) -> tuple[list, TreeSpec]:
    """Flattens a pytree into a list of values (depth first, in container order) and a
    TreeSpec that can be used to reconstruct the pytree."""
    leaves: list = []

    def spec_of(node) -> TreeSpec:
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return LEAF
        node_type = _get_node_type(node)
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        return TreeSpec(node_type, context, [spec_of(c) for c in children])

    spec = spec_of(tree)
    return leaves, spec


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """Given a list of values and a TreeSpec, builds a pytree (the inverse of
    ``tree_flatten``)."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be an "
                            f"instance of TreeSpec but got item of type {type(treespec)}.")
        leaves, treespec = treespec, leaves  # (PyTorch accepts them swapped)
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> Iterable[Any]:
    """Get an iterator over the leaves of a pytree."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
    else:
        children, _ = SUPPORTED_NODES[_get_node_type(tree)].flatten_fn(tree)
        for child in children:
            yield from tree_iter(child, is_leaf)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list:
    """Get a list of leaves of a pytree."""
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    """Get the TreeSpec for a pytree."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Map a multi-input function over pytree args to produce a new pytree.

    If multiple inputs are given, the structure of the tree is taken from the first input;
    subsequent inputs need only have ``tree`` as a prefix.

    Example:
        >>> tree_map(lambda x: x + 1, {"x": 7, "y": (42, 64)})
        {'x': 8, 'y': (43, 65)}
        >>> tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]])
        [[5, 7, 9], [6, 1, 2]]
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *flat))


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Like :func:`tree_map`, but calls ``func`` for its side effect on each leaf and returns
    the original tree."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    deque(map(func, *flat), maxlen=0)
    return tree


def map_only(type_or_types_or_pred, /) -> Callable:
    """Decorator: ``func`` applied to the leaves that are instances of the type(s) (or that
    the predicate accepts); the others returned unchanged."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x) -> bool:
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func):
        @functools.wraps(func)
        def wrapped(x):
            return func(x) if pred(x) else x
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred, /, func: Callable, tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """``tree_map`` over the leaves of the given type(s) only (or that a predicate accepts).

    Example:
        >>> tree_map_only(int, lambda x: -x, [1, "a", (2.5, 3)])
        [-1, 'a', (2.5, -3)]
    """
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func: Callable, tree: PyTree,
                   is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """``tree_map_`` over the leaves of the given type(s) only."""
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, /, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for every leaf of the given type(s)."""
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, /, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for some leaf of the given type(s)."""
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def arg_tree_leaves(*args: PyTree, **kwargs: PyTree) -> list:
    """The leaves of ``(args, kwargs)``, as ``tree_leaves((args, kwargs))``."""
    leaves: list = []
    for a in args:
        leaves.extend(tree_iter(a))
    for a in kwargs.values():
        leaves.extend(tree_iter(a))
    return leaves


# -- key paths ---------------------------------------------------------------------------------

def _key_paths(path: tuple, tree, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        yield path, tree
        return
    node_type = _get_node_type(tree)
    handler = SUPPORTED_NODES.get(node_type)
    if handler is None:
        yield path, tree
        return
    if handler.flatten_with_keys_fn is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node_type}. Please "
                         "pass a flatten_with_keys_fn argument to register_pytree_node.")
    for key, child in handler.flatten_with_keys_fn(tree)[0]:
        yield from _key_paths((*path, key), child, is_leaf)


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                           ) -> tuple[list, TreeSpec]:
    """Flattens a pytree like :func:`tree_flatten`, but also returns each leaf's key path:
    ``([(key_path, leaf), ...], treespec)``.

    Example:
        >>> pairs, _ = tree_flatten_with_path({"a": [1, 2]})
        >>> [(keystr(k), v) for k, v in pairs]
        [("['a'][0]", 1), ("['a'][1]", 2)]
    """
    _, spec = tree_flatten(tree, is_leaf)
    return list(_key_paths((), tree, is_leaf)), spec


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                          ) -> list:
    """The ``(key_path, leaf)`` pairs of a pytree."""
    return list(_key_paths((), tree, is_leaf))


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
                       is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Like :func:`tree_map`, but ``func`` takes the leaf's key path as its first argument."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    columns = [list(c) for c in zip(*pairs)] if pairs else [[], []]
    columns += [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(*columns))


# -- prefixes (vmap's in_dims and out_dims) ----------------------------------------------------

def broadcast_prefix(prefix, spec: TreeSpec,
                     is_leaf: Callable[[PyTree], bool] | None = None) -> list | None:
    """``prefix``, a pytree whose leaves each stand for a whole subtree of ``spec`` (vmap's
    ``in_dims`` and ``out_dims``), flattened to one value per leaf of ``spec``; None when it
    does not match (PyTorch's ``_broadcast_to_and_flatten``)."""
    out: list = []

    def walk(p, s: TreeSpec) -> bool:
        if tree_is_leaf(p, is_leaf):  # a leaf (None too) of the prefix covers the whole subtree
            out.extend([p] * s.num_leaves)
            return True
        node_type = _get_node_type(p)
        if s.is_leaf():
            return False
        children, context = SUPPORTED_NODES[node_type].flatten_fn(p)
        if node_type is not s.type or len(children) != s.num_children:
            return False
        if node_type in STANDARD_DICT_TYPES:  # (matched by key, in the spec's order)
            keys = s._context[1] if s.type is defaultdict else s._context
            if set(p) != set(keys):
                return False
            children = [p[k] for k in keys]
        elif node_type is not deque and context != s._context:
            return False
        return all(walk(c, cs) for c, cs in zip(children, s._children))

    return out if walk(prefix, spec) else None


def _broadcast_to_and_flatten(tree: PyTree, treespec: TreeSpec,
                              is_leaf: Callable[[PyTree], bool] | None = None) -> list | None:
    """PyTorch's name of :func:`broadcast_prefix`."""
    return broadcast_prefix(tree, treespec, is_leaf)


# -- serialized TreeSpecs (PyTorch's JSON, protocol 1) -------------------------------------------

# Note [Serialized tree specs]
#   ``treespec_dumps`` writes PyTorch's JSON: ``[1, node]`` with each node ``{"type": its
#   registered serialized_type_name (null for a leaf), "context": ..., "children_spec": [...]}``.
#   A context goes through the type's ``to_dumpable_context`` when it has one (a defaultdict's
#   factory by module and name, a namedtuple class by its registered name), else as a JSON
#   string of itself; ``treespec_loads`` reverses both, so a spec written by PyTorch loads here
#   and the other way round.
_PROTOCOLS = (1,)
_NAMEDTUPLES: dict = {}  # namedtuple class -> its serialized name, and back
_NAMEDTUPLE_CLASSES: dict = {}


def _register_namedtuple(cls: type, *, serialized_type_name: str) -> None:
    """Gives namedtuple class ``cls`` the name its tree specs are serialized under."""
    _NAMEDTUPLES[cls] = serialized_type_name
    _NAMEDTUPLE_CLASSES[serialized_type_name] = cls


def _namedtuple_to_dumpable(cls: type) -> str:
    if cls not in _NAMEDTUPLES:
        raise NotImplementedError(
            f"Can't serialize TreeSpec of namedtuple class {cls} because we didn't register a "
            f"serializated_type_name. Please register using `_register_namedtuple`.")
    return _NAMEDTUPLES[cls]


def _namedtuple_from_dumpable(name: str) -> type:
    if name not in _NAMEDTUPLE_CLASSES:
        raise NotImplementedError(f"Couldn't find a namedtuple registered under the name "
                                  f"{name!r}. Please register using `_register_namedtuple`.")
    return _NAMEDTUPLE_CLASSES[name]


def _defaultdict_to_dumpable(context) -> dict:
    factory, keys = context
    return {"default_factory_module": factory.__module__,
            "default_factory_name": factory.__qualname__, "dict_context": keys}


def _defaultdict_from_dumpable(dumpable: dict) -> list:
    import importlib
    module = importlib.import_module(dumpable["default_factory_module"])
    return [getattr(module, dumpable["default_factory_name"]), dumpable["dict_context"]]


def _set_dumpable(cls: type, to_fn: Callable, from_fn: Callable) -> None:
    node = SUPPORTED_SERIALIZED_TYPES[cls]
    SUPPORTED_SERIALIZED_TYPES[cls] = node._replace(to_dumpable_context=to_fn,
                                                    from_dumpable_context=from_fn)


_set_dumpable(namedtuple, _namedtuple_to_dumpable, _namedtuple_from_dumpable)
_set_dumpable(defaultdict, _defaultdict_to_dumpable, _defaultdict_from_dumpable)


def _check_protocol(protocol) -> None:
    if protocol not in _PROTOCOLS:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: {list(_PROTOCOLS)}")


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """``treespec`` as PyTorch's JSON (Note [Serialized tree specs]); ``protocol`` None is 1."""
    import json
    protocol = 1 if protocol is None else protocol
    _check_protocol(protocol)
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"treespec_dumps(treespec, protocol): Expected `treespec` to be an "
                        f"instance of TreeSpec but got item of type {type(treespec)}.")

    def node(spec: TreeSpec) -> dict:
        if spec.is_leaf():
            return {"type": None, "context": None, "children_spec": []}
        entry = SUPPORTED_SERIALIZED_TYPES.get(spec.type)
        if entry is None or entry.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
            raise NotImplementedError(
                f"No registered serialization name for {spec.type} found. Please update your "
                f"_register_pytree_node call with a `serialized_type_name` kwarg.")
        if entry.to_dumpable_context is not None:
            context = entry.to_dumpable_context(spec._context)
        else:
            try:
                context = json.dumps(spec._context)
            except TypeError:
                raise TypeError("Unable to serialize context. Please make the context json "
                                "dump-able, or register a custom serializer using "
                                "_register_pytree_node.") from None
        return {"type": entry.serialized_type_name, "context": context,
                "children_spec": [node(c) for c in spec._children]}

    return json.dumps([protocol, node(treespec)])


def treespec_loads(serialized: str) -> TreeSpec:
    """The TreeSpec that ``treespec_dumps`` (here or PyTorch's) wrote as ``serialized``."""
    import json
    protocol, root = json.loads(serialized)
    _check_protocol(protocol)
    by_name = {e.serialized_type_name: e for e in SUPPORTED_SERIALIZED_TYPES.values()}

    def spec(entry: dict) -> TreeSpec:
        if entry["type"] is None:
            return LeafSpec()
        found = by_name.get(entry["type"])
        if found is None:
            raise NotImplementedError(f"Deserializing {entry['type']} in pytree is not "
                                      f"registered.")
        context = (found.from_dumpable_context(entry["context"])
                   if found.from_dumpable_context is not None else json.loads(entry["context"]))
        return TreeSpec(found.typ, context, [spec(c) for c in entry["children_spec"]])

    return spec(root)
