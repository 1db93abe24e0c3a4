"""``tritongrad.utils._pytree``: PyTorch's ``torch.utils._pytree`` (nested containers of
leaves: ``tree_flatten``, ``tree_unflatten``, ``tree_map``, ``register_pytree_node``, ...).

The implementation lives in ``tritongrad.autograd._pytree`` (``tritongrad.func`` uses it);
this module is its public name, with the registration helpers built on it
(``register_dataclass``, ``register_constant``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ..autograd._pytree import *  # (the public names; __all__ below)
from ..autograd._pytree import (  # noqa: F401  (private names PyTorch code reaches for)
    BUILTIN_TYPES,
    STANDARD_DICT_TYPES,
    SUPPORTED_NODES,
    Context,
    FlattenFn,
    GetAttrKey,
    KeyPath,
    MappingKey,
    NodeDef,
    SequenceKey,
    TreeSpec,
    UnflattenFn,
    _broadcast_to_and_flatten,
    _deregister_pytree_node,
    _get_node_type,
    _private_register_pytree_node,
    _register_namedtuple,
    _register_pytree_node,
    arg_tree_leaves,
    map_only,
    treespec_dict,
    treespec_leaf,
    treespec_tuple,
)
from ..autograd._pytree import __all__ as _impl_all

# PyTorch's names of the callable and context types (TreeSpec's old name too)
FlattenFunc = FlattenFn
UnflattenFunc = UnflattenFn
DumpableContext = Any  # a json.dumps-able context
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
PyTreeSpec = TreeSpec

__all__ = [*_impl_all, "register_dataclass", "register_constant",  # noqa: PLE0604
           "FlattenFunc", "UnflattenFunc", "DumpableContext", "ToDumpableContextFn",
           "FromDumpableContextFn", "PyTreeSpec"]

CONSTANT_NODES: set = set()


def register_dataclass(cls: type, *, field_names: list[str] | None = None,
                       drop_field_names: list[str] | None = None,
                       serialized_type_name: str | None = None) -> None:
    """Registers a type that has the semantics of a ``dataclasses.dataclass`` type as a
    pytree node.

    This is a simpler API than :func:`register_pytree_node` for registering a dataclass or a
    custom class with the semantics of a dataclass.

    Args:
        cls: The python type to register. The class must have the semantics of a dataclass;
            in particular, it must be constructed by passing the fields in.
        field_names: A list of field names that correspond to the **non-constant data** in
            this class. This list must contain all the fields that are used to initialize the
            class. This argument is optional if ``cls`` is a dataclass, in which case the
            fields will be taken from ``dataclasses.fields()``.
        drop_field_names: A list of field names that should not be included in the pytree.
        serialized_type_name: the fully qualified name used when serializing the tree spec.

    Fields that are ``None`` are not leaves (they are kept in the spec), as in PyTorch.

    Example:
        >>> @dataclasses.dataclass
        ... class Point:
        ...     x: int
        ...     y: int
        >>> register_dataclass(Point)
        >>> tree_map(lambda v: v + 1, Point(0, 1))
        Point(x=1, y=2)
    """
    names = _dataclass_fields(cls, field_names, drop_field_names or [])

    def flatten_fn(obj: Any) -> tuple[list, Context]:
        present = [n for n in names if getattr(obj, n) is not None]
        nones = [n for n in names if getattr(obj, n) is None]
        return [getattr(obj, n) for n in present], [present, nones]

    def unflatten_fn(values: Iterable[Any], context: Context) -> Any:
        present, nones = context
        return cls(**dict(zip(present, values, strict=True)), **dict.fromkeys(nones))

    def flatten_with_keys_fn(obj: Any) -> tuple[list, Context]:
        values, (present, _nones) = flatten_fn(obj)
        return [(GetAttrKey(k), v) for k, v in zip(present, values, strict=True)], present

    _private_register_pytree_node(cls, flatten_fn, unflatten_fn,
                                  serialized_type_name=serialized_type_name,
                                  flatten_with_keys_fn=flatten_with_keys_fn)


def _dataclass_fields(cls: type, field_names: list[str] | None,
                      drop_field_names: list[str]) -> list[str]:
    """The fields ``register_dataclass`` flattens, checked as PyTorch checks them."""
    if not dataclasses.is_dataclass(cls):
        if field_names is None:
            raise ValueError(f"field_names must be specified with a list of all fields used to "
                             f"initialize {cls}, as it is not a dataclass.")
        return list(field_names)
    init_fields = [f.name for f in dataclasses.fields(cls) if f.init]
    if field_names is None:
        return init_fields
    expected = set(init_fields) - set(drop_field_names)
    if expected != set(field_names):
        msg = "field_names does not include all dataclass fields.\n"
        if missing := expected - set(field_names):
            msg += (f"Missing fields in `field_names`: {missing}. If you want to include these "
                    f"fields in the pytree, please add them to `field_names`, otherwise please "
                    f"add them to `drop_field_names`.\n")
        if unexpected := set(field_names) - expected:
            msg += (f"Unexpected fields in `field_names`: {unexpected}. Please remove these "
                    f"fields, or add them to `drop_field_names`.\n")
        raise ValueError(msg)
    return list(field_names)


class ConstantNode(NamedTuple):
    """The context of a constant node: the value itself."""

    value: Any


def register_constant(cls: type) -> None:
    """Registers a type as a pytree node with no leaves: an instance is kept whole in the
    spec (its context), and ``tree_unflatten`` gives it back.

    Args:
        cls: the type to register as a constant. This type must be hashable (a non-default
            ``__eq__`` and ``__hash__``).

    Example:
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     norm: str
        >>> register_constant(Config)
        >>> tree_flatten(Config("l2"))[0]
        []
    """
    if cls.__eq__ is object.__eq__:
        raise TypeError("register_constant(cls) expects `cls` to have a non-default `__eq__` "
                        "implementation.")
    if cls.__hash__ is None:  # a class with its own __eq__ and no __hash__ is unhashable
        raise TypeError("register_constant(cls) expects `cls` to have a non-default `__hash__` "
                        "implementation.")

    def flatten_fn(x: Any) -> tuple[list, ConstantNode]:
        return [], ConstantNode(x)

    def unflatten_fn(_values: Iterable[Any], context: ConstantNode) -> Any:
        return context.value

    _private_register_pytree_node(cls, flatten_fn, unflatten_fn,
                                  flatten_with_keys_fn=flatten_fn)
    CONSTANT_NODES.add(cls)
