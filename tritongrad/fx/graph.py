"""``Graph``: the list of :class:`~tritongrad.fx.Node` s a traced program is made of, and the
Python code generated from it (PyTorch's ``torch.fx.Graph``)."""

from __future__ import annotations

import builtins
import copy
import inspect
import keyword
import math
import operator
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .node import Argument, Node, Target, _public_name, map_arg

__all__ = ["Graph", "PythonCode"]

# Names a generated variable may not take: keywords and builtins (``getattr`` becomes
# ``getattr_1``), so the code can still call them.
_illegal_names = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")

# operator functions written as Python operators in the generated code
magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
    "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}",
}
reflectable_magic_methods = {k: v for k, v in magic_methods.items()
                             if k not in ("getitem", "eq", "ne", "lt", "gt", "le", "ge",
                                          "pos", "neg", "invert")}
inplace_methods = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}",
    "imod": "{} %= {}", "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}",
    "ipow": "{} **= {}", "irshift": "{} >>= {}", "isub": "{} -= {}", "itruediv": "{} /= {}",
    "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}


def _snake_case(s: str) -> str:
    """``CamelCase`` -> ``camel_case`` (names of nodes made from class-like targets)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()


def _is_magic(x: str) -> bool:
    return x.startswith("__") and x.endswith("__")


class _Namespace:
    """Unique Python identifiers for nodes and globals (``add``, ``add_1``, ...)."""

    def __init__(self) -> None:
        self._obj_to_name: dict[int, str] = {}
        self._objs: list = []  # keeps the objects of ``_obj_to_name`` alive
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any | None) -> str:
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = candidate
            self._objs.append(obj)
        return candidate

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        self._obj_to_name[id(obj)] = name
        self._objs.append(obj)


@dataclass
class PythonCode:
    """The generated ``forward``: its source ``src`` and the ``globals`` it runs with."""

    src: str
    globals: dict[str, Any]


class _NodeList:
    """``graph.nodes``: a live view of the node list (iteration tolerates erasing the node
    being visited, as in PyTorch)."""

    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        self._graph, self._dir = graph, direction

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        cur = getattr(root, self._dir)
        while cur is not root:
            nxt = getattr(cur, self._dir)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, "_prev" if self._dir == "_next" else "_next"))

    def __repr__(self) -> str:
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        self.graph._insert = self.orig_insert


class Graph:
    """The intermediate representation of a traced program: a doubly linked list of
    :class:`Node` s (``graph.nodes``) ending in one ``output`` node.

    Example::

        >>> import operator
        >>> import tritongrad as tg
        >>> g = tg.fx.Graph()
        >>> x = g.placeholder("x")
        >>> y = g.call_function(operator.add, (x, 1))
        >>> _ = g.output(y)
        >>> print(g)
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})
            return add
    """

    def __init__(self, owning_module: Any | None = None, tracer_cls: type | None = None,
                 tracer_extras: dict | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._used_names: dict[str, int] = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def owning_module(self) -> Any:
        """The GraphModule this graph belongs to (None for a free graph)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod: Any) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes, in order (a live view: ``len``, iteration, ``reversed``)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target | None = None) -> list[Node]:
        """The nodes with ``op`` (and ``target``, when given)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- building ----------------------------------------------------------------------------

    def create_node(self, op: str, target: Target, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        """Creates a Node with ``op``, ``target``, ``args`` and ``kwargs`` at the current
        insert point (the end, or as ``inserting_before/after`` says), named after ``name``
        (or the target) made unique."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise TypeError(f"create_node: args must be a tuple, got {type(args).__name__}")
        if not isinstance(kwargs, dict):
            raise TypeError(f"create_node: kwargs must be a dict, got {type(kwargs).__name__}")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any | None = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the function, ``name`` (with a default value when given)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Fetches the parameter, buffer or submodule ``qualified_name`` of the owning
        module (warns when the owning module has no such attribute)."""
        mod = self.owning_module
        if mod is not None and not _has_path(mod, qualified_name):
            warnings.warn("Attempted to insert a get_attr Node with no underlying reference "
                          f"in the owning GraphModule! Call GraphModule.add_submodule to add "
                          f"the necessary submodule, GraphModule.add_parameter to add the "
                          f"necessary Parameter, or nn.Module.register_buffer to add the "
                          f"necessary buffer (target: {qualified_name})", stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any | None = None) -> Node:
        """Calls the submodule ``module_name`` (warns when the owning module lacks it)."""
        mod = self.owning_module
        if mod is not None and not _has_path(mod, module_name):
            warnings.warn("Attempted to insert a call_module Node with no underlying "
                          "reference in the owning GraphModule! Call "
                          f"GraphModule.add_submodule to add the necessary submodule "
                          f"(target: {module_name})", stacklevel=2)
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any | None = None) -> Node:
        """Calls method ``method_name`` of ``args[0]`` with the rest."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any | None = None,
                      name: str | None = None) -> Node:
        """Calls ``the_function(*args, **kwargs)`` (the node named after ``name`` when
        given, else after the function)."""
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        """The ``output`` node: the function returns ``result``."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x
                  ) -> Node:
        """Copies ``node`` (of another graph) into this one, its Node arguments mapped by
        ``arg_transform`` (usually a dict lookup of the nodes copied before)."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict[Node, Node],
                   return_output_node: bool = False) -> Argument:
        """Copies every node of ``g`` but its output into this graph, filling ``val_map``
        (``g``'s nodes to the copies; entries already there are used as they are) and returns
        the copy of the output's value."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict | None = None) -> Graph:
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        if output_vals is not None:
            val, old_out = output_vals
            g.output(val, type_expr=getattr(old_out, "type", None))
        return g

    def __reduce__(self):
        # the nodes as a flat list (arguments refer to earlier nodes by index): pickling the
        # linked list itself would recurse once per node and drag the owning module along
        index = {n: i for i, n in enumerate(self.nodes)}
        spec = [(n.op, n.target, map_arg(n.args, lambda a: _NodeRef(index[a])),
                 map_arg(n.kwargs, lambda a: _NodeRef(index[a])), n.name, n.type, n.meta)
                for n in self.nodes]
        tracer_cls = self._tracer_cls
        if tracer_cls is not None and "<locals>" in tracer_cls.__qualname__:
            tracer_cls = None  # (a class defined in a function cannot be pickled)
        return (_graph_from_spec, (spec, tracer_cls))

    # -- editing -----------------------------------------------------------------------------

    def erase_node(self, to_erase: Node) -> None:
        """Removes ``to_erase``, which nothing may use any more."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_before(n):`` nodes created inside go just before ``n``
        (``None``: at the start of the graph)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise ValueError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_after(n):`` nodes created inside go just after ``n`` (each
        right after ``n``, so several end up in reverse order, as in PyTorch; ``None``: at
        the end of the graph)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise ValueError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None
                            ) -> bool:
        """Removes the nodes nothing uses and that have no effects (``Node.is_impure``, or
        ``is_impure_node`` when given); returns whether the graph changed."""
        self.lint()
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Checks the graph: nodes belong to it, each argument is defined before its use and
        still in the graph, names are unique, the use lists agree with the arguments and, with
        an owning module, ``get_attr``/``call_module`` targets exist. Raises RuntimeError
        naming the first problem."""
        seen_names: set[str] = set()
        seen_values: set[Node] = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.op not in ("placeholder", "call_method", "call_module", "call_function",
                               "get_attr", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong "
                                       f"to this Graph, but was used as an argument! If you "
                                       f"are copying nodes from another graph, make sure to "
                                       f"use ``arg_transform`` on node_copy() to remap values"
                                       f"\n{self}")
                if arg not in seen_values:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       f"has been defined! Please check that Nodes in the "
                                       f"graph are topologically ordered\n{self}")
                if node not in arg.users:
                    raise RuntimeError(f"Node {node} uses {arg} but is not among its users")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen_values.add(node)
        mod = self.owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op in ("get_attr", "call_module") and not _has_path(mod, node.target):
                raise RuntimeError(f"Node {node} target {node.target} references nonexistent "
                                   f"attribute {node.target} of the owning module")

    # -- printing ----------------------------------------------------------------------------

    def __str__(self) -> str:
        placeholder_names: list[str] = []
        maybe_return_typename = [""]
        # (as PyTorch's: the output's type is not asked for, so the header never has one)
        node_strs = [n.format_node(placeholder_names) for n in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){maybe_return_typename[0]}:"
        for ns in node_strs:
            if ns:
                s += "\n    " + ns
        return s

    def print_tabular(self) -> None:
        """Prints the nodes as a table (opcode, name, target, args, kwargs); needs the
        ``tabulate`` package."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found "
                  "on this machine. Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def _target_to_str(self, target: Target) -> str:
        op = target if isinstance(target, str) else getattr(target, "__name__", None) \
            or type(target).__name__
        if _is_magic(op):
            op = op[2:-2]
        return _snake_case(op)

    # -- code generation ---------------------------------------------------------------------

    def python_code(self, root_module: str, verbose: bool = False) -> PythonCode:
        """The source of a ``forward(self, ...)`` computing this graph, with ``root_module``
        the name its module-accessing nodes read from, and the globals it needs.
        ``verbose`` (``print_readable``'s form) adds where each run of nodes was traced
        from, and the dtype and shape (``"f32[3, 4]"``) of nodes that ``ShapeProp`` ran."""
        return _CodeGen(self, root_module, verbose).generate()


class _NodeRef:
    """A node of a pickled graph, by its position."""

    def __init__(self, i: int) -> None:
        self.i = i


def _graph_from_spec(spec: list, tracer_cls: type | None) -> Graph:
    from .node import map_aggregate
    g = Graph(tracer_cls=tracer_cls)
    made: list[Node] = []

    def load(a: Any) -> Any:
        return made[a.i] if isinstance(a, _NodeRef) else a
    for op, target, args, kwargs, name, type_expr, meta in spec:
        n = g.create_node(op, target, map_aggregate(args, load), map_aggregate(kwargs, load),
                          name, type_expr)
        n.meta = meta
        made.append(n)
    return g


def _has_path(mod: Any, target: str) -> bool:
    obj = mod
    for atom in str(target).split("."):
        if not hasattr(obj, atom):
            return False
        obj = getattr(obj, atom)
    return True


def _format_target(base: str, target: str) -> str:
    """``self.a.b`` for the dotted ``target``; atoms that are not identifiers through
    ``getattr`` (``getattr(self.layers, "0")``)."""
    r = base
    for atom in target.split("."):
        r = f"{r}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) \
            else f'getattr({r}, "{atom}")'
    return r


def _resolve_dotted(path: str) -> Any:
    import importlib
    atoms = path.split(".")
    # the longest importable prefix, then attributes (``tritongrad.nn.functional.gelu``)
    for i in range(len(atoms), 0, -1):
        try:
            cur = importlib.import_module(".".join(atoms[:i]))
        except ImportError:
            continue
        try:
            for atom in atoms[i:]:
                cur = getattr(cur, atom)
        except AttributeError:
            return None
        return cur
    return None


def _is_tritongrad_path(obj: Any) -> str | None:
    """``obj``'s dotted path under ``tritongrad`` when that path leads back to it."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__name__", None)
    if not module or not name or not module.startswith("tritongrad"):
        return None
    path = f"{module}.{getattr(obj, '__qualname__', name)}"
    return path if _resolve_dotted(path) is obj else None


def _global_hint(obj: Any) -> str:
    """The name a global of the generated code is made from, PyTorch's: the builtin's name,
    else ``module.name`` made an identifier (``math_sqrt``, ``_operator_abs``,
    ``__main___helper``)."""
    name = getattr(obj, "__name__", None) or _snake_case(type(obj).__name__)
    if getattr(builtins, name, None) is obj:
        return name
    module = getattr(obj, "__module__", None)
    return f"{module}.{name}" if module and name != "<lambda>" else name


def _stack_summary(stack_trace: str | None) -> str:
    """The comment over a run of nodes in verbose code: the innermost traced line of
    ``stack_trace`` (PyTorch's ``# File: path:line in fn, code: ...``)."""
    lines = (stack_trace or "").strip().split("\n")
    for i in range(len(lines) - 2, -1, -1):
        m = _frame_regex.match(lines[i].strip())
        if m is not None:
            return f"# File: {m[1]}:{m[2]} in {m[3]}, code: {lines[i + 1].strip()}"
    return "# No stacktrace found for following nodes"


_frame_regex = re.compile(r'^File "(.+)", line (\d+), in (.+)$')
_dtype_abbrs = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
                "complex64": "c64", "complex128": "c128", "int8": "i8", "int16": "i16",
                "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
                "uint32": "u32", "uint64": "u64", "bool": "b8"}


def _meta_hint(n: Node) -> str | None:
    """``f32[3, 4]`` for a node whose ``meta`` holds a Tensor (``val``) or ShapeProp's
    ``tensor_meta``; None otherwise."""
    v = n.meta.get("val", n.meta.get("tensor_meta", n.meta.get("example_value")))
    dtype, shape = getattr(v, "dtype", None), getattr(v, "shape", None)
    abbr = _dtype_abbrs.get(str(dtype).rsplit(".", 1)[-1])
    if abbr is None or shape is None or isinstance(v, tuple) and not hasattr(v, "stride"):
        return None
    return f"{abbr}[{', '.join(str(d) for d in shape)}]"


class _CodeGen:
    def __init__(self, graph: Graph, root_module: str, verbose: bool = False) -> None:
        self.graph = graph
        self.verbose = verbose
        self.root_module = root_module
        self.ns = _Namespace()
        self.globals: dict[str, Any] = {"inf": math.inf, "nan": math.nan,
                                        "NoneType": type(None)}
        for g in (*self.globals, "tritongrad", root_module):
            self.ns.create_name(g, None)
        self.wrapped_fns: dict[str, None] = {}

    def add_global(self, hint: str, obj: Any) -> str:
        path = _public_name(obj) or _is_tritongrad_path(obj)
        if path is not None:
            self.globals["tritongrad"] = __import__("tritongrad")
            return path
        if obj.__class__.__module__ == "builtins" and getattr(builtins, hint, None) is obj:
            return hint
        name = self.ns.create_name(hint, obj)
        self.globals[name] = obj
        return name

    def repr_arg(self, a: Any) -> str:
        if isinstance(a, Node):
            return self.names[a]
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):  # a named tuple: rebuilt by its class
                cls = self.add_global(_global_hint(type(a)), type(a))
                return f"{cls}({', '.join(self.repr_arg(e) for e in a)})"
            inner = ", ".join(self.repr_arg(e) for e in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.repr_arg(e) for e in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.repr_arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return (f"slice({self.repr_arg(a.start)}, {self.repr_arg(a.stop)}, "
                    f"{self.repr_arg(a.step)})")
        if isinstance(a, float) and not math.isfinite(a):
            return "nan" if math.isnan(a) else ("inf" if a > 0 else "-inf")
        if a is None or a is Ellipsis or isinstance(a, (bool, int, float, complex, str,
                                                         bytes)):
            return repr(a)
        if isinstance(a, type) or callable(a):
            return self.add_global(_global_hint(a), a)
        # tritongrad's named constants as written (``tritongrad.float64``), anything else
        # (a device) passed in through a global
        r = repr(a)
        if r.startswith("tritongrad.") and _resolve_dotted(r) is a:
            self.globals["tritongrad"] = __import__("tritongrad")
            return r
        return self.add_global(_snake_case(type(a).__name__), a)

    def operand(self, a: Any) -> str:
        """``a`` as an operand of a Python operator: negative and complex numbers in
        parentheses (``(-2) ** x``, not ``-2 ** x``)."""
        r = self.repr_arg(a)
        if isinstance(a, (int, float, complex)) and not isinstance(a, bool) \
                and (r.startswith("-") or isinstance(a, complex)):
            return f"({r})"
        return r

    def args_str(self, args: tuple, kwargs: dict) -> str:
        parts = [self.repr_arg(a) for a in args]
        parts += [f"{k} = {self.repr_arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def generate(self) -> PythonCode:
        nodes = list(self.graph.nodes)
        self.names = {n: self.ns.create_name(n.name, n) for n in nodes}
        # the last user of each node: after it the variable is set to None, freeing the value
        last_use: dict[Node, Node] = {}
        for n in reversed(nodes):
            for inp in n._input_nodes:
                last_use.setdefault(inp, n)
        to_free: dict[Node, list[Node]] = {}
        for v, user in last_use.items():
            to_free.setdefault(user, []).append(v)
        for n in nodes:
            if not n.users and n.op not in ("placeholder", "output"):
                to_free.setdefault(n, []).append(n)
        params: list[str] = []
        body: list[str] = []
        ret_type = ""
        prev_summary: str | None = None
        for n in nodes:
            name = self.names[n]
            if self.verbose and n.op not in ("placeholder", "output"):
                summary = _stack_summary(n.stack_trace)
                if summary != prev_summary:
                    if body:
                        body.append("")
                    body.append(summary)
                    prev_summary = summary
            line = self.emit(n, name, params)
            meta = _meta_hint(n) if self.verbose else None
            if line is not None and line.startswith(f"{name} = ") and n.op != "placeholder":
                if meta is not None:
                    line = f'{name}: "{meta}" = {line[len(name) + 3:]}'
                elif n.type is not None:
                    # ``name : type = ...``, PyTorch's spelling of an annotated node
                    line = f"{name} : {self.type_hint(n.type)} = {line[len(name) + 3:]}"
            if n.op == "output" and n.type is not None:
                ret_type = f" -> {self.type_hint(n.type)}"
            if line is None:
                continue
            freed = [self.names[v] for v in to_free.get(n, []) if v.op != "output"]
            if freed and n.op != "output":
                line += f";  {' = '.join(freed)} = None"
            body.append(line)
        code = "\n".join("    " + ln for ln in body) if body else "    pass"
        sig = ", ".join([self.root_module, *params])
        # calls of ``wrap``ped functions stay calls when the GraphModule is traced again
        wrap_stmts = ""
        if self.wrapped_fns:
            from ._symbolic_trace import wrap
            wrap_name = self.add_global("wrap", wrap)
            wrap_stmts = "\n".join(f'{wrap_name}("{w}")' for w in self.wrapped_fns)
        src = f"\n{wrap_stmts}\n\ndef forward({sig}){ret_type}:\n{code}\n    "
        return PythonCode(src, self.globals)

    def type_hint(self, t: Any) -> str:
        if isinstance(t, type):
            return t.__name__ if t.__module__ == "builtins" else \
                self.add_global(t.__name__, t)
        # (a string annotation, ``from __future__ import annotations``, stays a string: its
        # names may mean nothing in the generated code's globals)
        return self.add_global("typ", t) if not isinstance(t, str) else repr(t)

    def emit(self, n: Node, name: str, params: list) -> str | None:
        op, target = n.op, n.target
        if op == "placeholder":
            t = str(target)
            meta = _meta_hint(n) if self.verbose else None
            ann = f': "{meta}"' if meta is not None else \
                f" : {self.type_hint(n.type)}" if n.type is not None else ""
            default = f" = {self.repr_arg(n.args[0])}" if n.args else ""
            params.append(f"{t}{ann}{default}")
            if t.startswith("*"):
                t = t.lstrip("*")
            return None if t == name else f"{name} = {t}"
        if op == "get_attr":
            return f"{name} = {_format_target(self.root_module, target)}"
        if op == "call_module":
            return (f"{name} = {_format_target(self.root_module, target)}"
                    f"({self.args_str(n.args, n.kwargs)})")
        if op == "call_method":
            obj = self.repr_arg(n.args[0])
            rest = self.args_str(n.args[1:], n.kwargs)
            return f"{name} = {_format_target(obj, target)}({rest})"
        if op == "output":
            return f"return {self.repr_arg(n.args[0])}"
        # call_function
        fname = getattr(target, "__name__", "")
        mod = getattr(target, "__module__", None)
        if mod in ("_operator", "operator") and getattr(operator, fname, None) is target \
                and not n.kwargs:
            operands = [self.repr_arg(a) if fname in ("getitem", "setitem")
                        else self.operand(a) for a in n.args]
            if fname in magic_methods and len(n.args) == magic_methods[fname].count("{}"):
                return f"{name} = " + magic_methods[fname].format(*operands)
            if fname in inplace_methods and len(n.args) == inplace_methods[fname].count("{}"):
                # (the statement has no value: the node names its first argument)
                stmt = inplace_methods[fname].format(*operands)
                return f"{stmt};  {name} = {self.repr_arg(n.args[0])}"
        if target is builtins.getattr and len(n.args) == 2 and not n.kwargs \
                and isinstance(n.args[1], str) and n.args[1].isidentifier() \
                and not keyword.iskeyword(n.args[1]):
            return f"{name} = {_format_target(self.repr_arg(n.args[0]), n.args[1])}"
        fn = self.add_global(_global_hint(target), target)
        if n.meta.get("is_wrapped", False):
            self.wrapped_fns.setdefault(fn)
        return f"{name} = {fn}({self.args_str(n.args, n.kwargs)})"

