"""Pytrees: nested tuples, lists, dicts and namedtuples of leaves, as ``torch.utils._pytree``
sees them (the transforms of ``tritongrad.func`` take and return them).

``tree_flatten(tree)`` gives the leaves in order and a ``TreeSpec`` of the containers around
them; ``tree_unflatten(leaves, spec)`` builds the same containers around new leaves.
Anything that is not one of those containers (a Tensor, a number, None, a string) is a leaf.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["LEAF", "TreeSpec", "broadcast_prefix", "tree_flatten", "tree_map",
           "tree_unflatten"]


class TreeSpec:
    """The containers of a pytree: ``type`` (None for a leaf), ``context`` (a dict's keys, a
    namedtuple's class) and the children's specs."""

    __slots__ = ("children", "context", "num_leaves", "type")

    def __init__(self, type_, context, children: tuple) -> None:
        self.type, self.context, self.children = type_, context, children
        self.num_leaves = 1 if type_ is None else sum(c.num_leaves for c in children)

    def is_leaf(self) -> bool:
        return self.type is None

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.type, len(self.children)))

    def pprint(self) -> str:
        """The structure as its literal, leaves as ``*`` (PyTorch's ``treespec_pprint``)."""
        if self.type is None:
            return "*"
        parts = [c.pprint() for c in self.children]
        if self.type in (dict, OrderedDict):
            return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(self.context, parts)) + "}"
        if self.type is list:
            return "[" + ", ".join(parts) + "]"
        if self.context is not None:  # a namedtuple
            fields = self.type._fields
            return (f"{self.type.__name__}("
                    + ", ".join(f"{f}={p}" for f, p in zip(fields, parts)) + ")")
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def __repr__(self) -> str:  # (PyTorch's form: TreeSpec(tuple, None, [*, *]))
        if self.type is None:
            return "*"
        context = list(self.context) if isinstance(self.context, tuple) else self.context
        return (f"TreeSpec({self.type.__name__}, {context}, "
                f"[{', '.join(map(repr, self.children))}])")


LEAF = TreeSpec(None, None, ())


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def _children(tree):
    """(node type, context, children) of a container, or None for a leaf."""
    if _is_namedtuple(tree):
        return type(tree), type(tree), tuple(tree)
    if type(tree) in (tuple, list):
        return type(tree), None, tuple(tree)
    if isinstance(tree, dict) and type(tree) in (dict, OrderedDict):
        keys = tuple(tree)
        return type(tree), keys, tuple(tree[k] for k in keys)
    return None


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` (depth first, in container order) and its ``TreeSpec``."""
    leaves: list = []

    def spec_of(node) -> TreeSpec:
        parts = _children(node)
        if parts is None:
            leaves.append(node)
            return LEAF
        type_, context, children = parts
        return TreeSpec(type_, context, tuple(spec_of(c) for c in children))

    spec = spec_of(tree)
    return leaves, spec


def tree_unflatten(leaves, spec: TreeSpec):
    """The pytree of ``spec``'s containers around ``leaves`` (as many as it has)."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten(leaves, spec): `leaves` has length {len(leaves)} but "
                         f"the spec refers to a pytree that holds {spec.num_leaves} items "
                         f"({spec}).")
    it = iter(leaves)

    def build(s: TreeSpec):
        if s.type is None:
            return next(it)
        children = [build(c) for c in s.children]
        if s.type in (dict, OrderedDict):
            return s.type(zip(s.context, children))
        if s.context is not None:  # a namedtuple
            return s.type(*children)
        return s.type(children)

    return build(spec)


def tree_map(fn, tree):
    """``tree`` with each leaf replaced by ``fn(leaf)``."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, spec: TreeSpec) -> list | None:
    """``prefix``, a pytree whose leaves each stand for a whole subtree of ``spec`` (vmap's
    ``in_dims`` and ``out_dims``), flattened to one value per leaf of ``spec``; None when it
    does not match (PyTorch's ``_broadcast_to_and_flatten``)."""
    out: list = []

    def walk(p, s: TreeSpec) -> bool:
        if p is None:  # None over a subtree: all its leaves None (vmap: not mapped)
            out.extend([None] * s.num_leaves)
            return True
        parts = _children(p)
        if parts is None:  # a leaf of the prefix covers the whole subtree
            out.extend([p] * s.num_leaves)
            return True
        type_, context, children = parts
        if type_ is not s.type or len(children) != len(s.children):
            return False
        if s.type in (dict, OrderedDict):  # (matched by key, in the spec's order)
            if set(context) != set(s.context):
                return False
            children = tuple(p[k] for k in s.context)
        elif context != s.context:
            return False
        return all(walk(c, cs) for c, cs in zip(children, s.children))

    return out if walk(prefix, spec) else None
