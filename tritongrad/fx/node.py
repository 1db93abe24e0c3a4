"""``Node``: one operation of a :class:`~tritongrad.fx.Graph` (PyTorch's ``torch.fx.Node``),
and ``map_arg`` / ``map_aggregate`` over the nested arguments nodes take."""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union

from .immutable_collections import immutable_dict, immutable_list

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target", "has_side_effect"]

Target = Union[Callable[..., Any], str]
Argument = Any  # None, numbers, str, slices, Nodes, and tuples/lists/dicts of them

_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output",
        "root")

# functions whose nodes dead-code elimination keeps although nothing uses their result
_side_effectful_functions: set = set()


def has_side_effect(fn: Callable) -> Callable:
    """Marks ``fn`` as having side effects: ``eliminate_dead_code`` keeps its calls."""
    _side_effectful_functions.add(fn)
    return fn


# the namespaces whose names tritongrad's functions print under (the first that has one)
_PUBLIC_NAMESPACES = ("tritongrad", "tritongrad.nn.functional", "tritongrad.linalg",
                      "tritongrad.special", "tritongrad.fft")


def _public_name(func: Any) -> str | None:
    """``tritongrad.relu`` for tritongrad's ``relu``, with or without the
    ``__torch_function__`` wrapper (installed on first use), else None."""
    name = getattr(func, "__name__", None)
    if not name or not str(getattr(func, "__module__", "")).startswith("tritongrad"):
        return None
    for ns in _PUBLIC_NAMESPACES:
        cand = getattr(sys.modules.get(ns), name, None)
        if cand is func or getattr(cand, "__torch_function_wrapped__", None) is func:
            return f"{ns}.{name}"
    return None


def _get_qualified_name(func: Callable) -> str:
    """``module.qualname`` of a function as the printed graph shows it (``operator.add``,
    ``builtins.getattr``, ``tritongrad.relu``)."""
    public = _public_name(func)
    if public is not None:
        return public
    if getattr(builtins, getattr(func, "__name__", ""), None) is func:
        return f"builtins.{func.__name__}"
    if isinstance(func, (types.MethodDescriptorType, types.WrapperDescriptorType)) \
            and func is getattr(getattr(func, "__objclass__", None), func.__name__, None):
        return f"{func.__objclass__.__module__}.{func.__objclass__.__qualname__}.{func.__name__}"
    name = getattr(func, "__name__", None) or type(func).__name__
    if name == "<lambda>":
        raise RuntimeError("Unable to represent lambda")
    module = getattr(func, "__module__", None) or "builtins"
    if module == "_operator":
        module = "operator"
    qual = getattr(func, "__qualname__", name)
    return f"{module}.{qual}" if "<locals>" not in qual else f"{module}.{name}"


def _format_arg(arg: Any, max_list_len: float = float("inf")) -> str:
    if isinstance(arg, (list, tuple)):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        if isinstance(arg, tuple):
            return f"({items}{',' if len(arg) == 1 else ''}{more})"
        return f"[{items}{more}]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


def _type_repr(obj: Any) -> str:
    public = _public_name(obj)
    if public is not None:
        return public
    if isinstance(obj, type):
        return obj.__name__ if obj.__module__ == "builtins" else \
            f"{obj.__module__}.{obj.__qualname__}"
    return repr(obj)


class Node:
    """One operation of a :class:`Graph`. ``op`` is one of:

    - ``placeholder``: a function input; ``target`` is its name, ``args`` holds its default.
    - ``get_attr``: fetches a parameter, buffer or submodule of the root; ``target`` is its
      dotted name.
    - ``call_function``: ``target(*args, **kwargs)`` with ``target`` a Python callable.
    - ``call_module``: the root's submodule ``target`` (a dotted name) called with
      ``args``/``kwargs``.
    - ``call_method``: method ``target`` (a string) of ``args[0]`` called with the rest.
    - ``output``: the value returned, ``args[0]``.

    ``users`` maps each node that takes this one as input to ``None``; ``meta`` is free for
    passes (``ShapeProp`` puts ``tensor_meta`` there).

    Example::

        >>> import tritongrad as tg
        >>> gm = tg.fx.symbolic_trace(lambda x: tg.relu(x) + 1)
        >>> [n.op for n in gm.graph.nodes]
        ['placeholder', 'call_function', 'call_function', 'output']
    """

    def __init__(self, graph: Graph, name: str, op: str, target: Target, args: tuple,
                 kwargs: dict, return_type: Any | None = None) -> None:
        if op not in _OPS:
            raise ValueError(f"Node: op must be one of {_OPS[:-1]}, got {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node '{name}': call_function target {target!r} has type "
                             f"{type(target).__name__} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr") \
                and not isinstance(target, str):
            raise ValueError(f"Node '{name}': {op} target {target!r} has type "
                             f"{type(target).__name__} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # -- the linked list ---------------------------------------------------------------------

    @property
    def next(self) -> Node:
        """The node after this one in the graph (the graph's root sentinel at the end)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one in the graph."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Moves ``x`` (of the same graph) to just before this node."""
        if x.graph is not self.graph:
            raise ValueError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Moves ``x`` (of the same graph) to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # -- arguments ---------------------------------------------------------------------------

    @property
    def args(self) -> tuple:
        """The positional arguments (Nodes among them are this node's inputs). Assigning a new
        tuple updates the use lists."""
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments (assignable, as ``args``)."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The distinct Nodes in ``args`` and ``kwargs``, in the order they appear."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Sets ``args[idx]`` to ``arg``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        """Inserts ``arg`` at position ``idx`` of ``args``."""
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Sets ``kwargs[key]`` to ``arg``."""
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args: tuple, new_kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_aggregate(tuple(new_args), self._collect)
        self._kwargs = map_aggregate(dict(new_kwargs), self._collect)
        for n in self._input_nodes:
            n.users.setdefault(self)

    def _collect(self, a: Any) -> Any:
        if isinstance(a, Node):
            if a._erased:
                raise RuntimeError(f"Node {self.name}: argument {a.name} has been erased "
                                   f"from its graph")
            self._input_nodes.setdefault(a)
        return a

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Replaces every use of this node by ``replace_with`` (in the users for which
        ``delete_user_cb`` says True) and returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError("Called node.replace_all_uses_with(replace_with, "
                                   "propagate_meta=True), but replace_with already has .meta "
                                   "keys")
            replace_with.meta.update(self.meta)
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Replaces every occurrence of ``old_input`` in this node's arguments."""
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # -- properties of the operation ---------------------------------------------------------

    def is_impure(self) -> bool:
        """Whether the node has effects besides its result (placeholders, output, calls of
        in-place methods and functions marked with :func:`has_side_effect`): dead-code
        elimination keeps these."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions
        if self.op == "call_method":
            t = str(self.target)
            return t.endswith("_") and not t.endswith("__")
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is not None:
                try:
                    sub = mod.get_submodule(self.target)
                except AttributeError:
                    return False
                return bool(getattr(sub, "_is_impure", False))
        return False

    @property
    def stack_trace(self) -> str | None:
        """Where the operation was recorded, when the tracer kept it (``meta['stack_trace']``)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def _pretty_print_target(self, target: Any) -> str:
        if isinstance(target, str):
            return target
        if hasattr(target, "__module__"):
            name = getattr(target, "__name__", None)
            if name is None:
                return _get_qualified_name(target)
            if target.__module__ == "builtins":
                return f"builtins.{name}"
            if target.__module__ in ("_operator", "operator"):
                return f"operator.{name}"
        return _get_qualified_name(target)

    def format_node(self, placeholder_names: list[str] | None = None,
                    maybe_return_typename: list[str] | None = None) -> str | None:
        """A readable line for this node in ``str(graph)``'s format::

            %relu : [num_users=1] = call_function[target=tritongrad.relu](args = (%x,), ...)

        Internal use: ``placeholder_names`` collects placeholders (then None is returned for
        them) and ``maybe_return_typename`` the output's type annotation."""
        if self.op == "placeholder":
            arg_str = str(self.target)
            if self.type:
                arg_str += f": {_type_repr(self.type)}"
            # (PyTorch tests the list's truth: ``str(graph)`` passes an empty one, so its
            # placeholders print as lines and the header stays ``graph():``)
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            typename = f"{_type_repr(self.type)} " if self.type else ""
            default = f"(default={self.args[0]})" if self.args else ""
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self.target}]{default}")
        if self.op == "get_attr":
            typename = f"{_type_repr(self.type)} " if self.type is not None else ""
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self._pretty_print_target(self.target)}]")
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Applies ``fn`` to each Node in the nested ``a`` (tuples, lists, dicts, slices), keeping
    the structure."""
    if not callable(fn):
        raise TypeError("map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Applies ``fn`` to each leaf of the nested ``a``; lists and dicts come back immutable,
    tuples (named tuples too) as tuples."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)

