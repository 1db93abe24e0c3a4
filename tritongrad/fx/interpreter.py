"""``Interpreter`` and ``Transformer`` (PyTorch's ``torch.fx.Interpreter``): run a
GraphModule node by node, with each kind of node a method a subclass can override."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs ``module``'s graph one node at a time: ``run(*args)`` calls ``run_node`` on each
    node, which calls the method named after its op (``placeholder``, ``get_attr``,
    ``call_function``, ``call_module``, ``call_method``, ``output``) with the node's target
    and its arguments' values. Override those to change or observe execution::

        >>> import tritongrad as tg
        >>> class NegSigmoid(tg.fx.Interpreter):
        ...     def call_function(self, target, args, kwargs):
        ...         if target is tg.sigmoid:
        ...             return -super().call_function(target, args, kwargs)
        ...         return super().call_function(target, args, kwargs)
        >>> gm = tg.fx.symbolic_trace(lambda x: tg.sigmoid(x).neg())
        >>> x = tg.randn(3)
        >>> tg.allclose(NegSigmoid(gm).run(x), tg.sigmoid(x))
        True

    Args:
        module: the GraphModule to run.
        garbage_collect_values: drop each value after its last use.
        graph: run this graph instead of ``module.graph`` (its targets still taken from
            ``module``).
    """

    def __init__(self, module: Any, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        if graph is not None:
            self.graph = graph
        elif isinstance(module, GraphModule) or hasattr(module, "graph"):
            self.graph = module.graph
        else:
            raise TypeError(f"Interpreter: module {type(module).__name__} has no graph; pass "
                            f"a GraphModule or graph=")
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.args_iter: Iterator[Any] = iter(())
        if garbage_collect_values:
            # the values each node is the last user of, dropped once it has run
            node_to_last_use: dict[Node, Node] = {}
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in node_to_last_use:
                        node_to_last_use[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict[Node, Any] | None = None,
            enable_io_processing: bool = True) -> Any:
        """Runs the graph on ``args`` (positional, one per placeholder) and returns its
        result. ``initial_env`` gives values for some nodes in advance (they are not run).
        ``enable_io_processing`` is PyTorch's switch for a custom code generator's input and
        output conversion; the graphs here have none, so it changes nothing."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else msg
                    if node.stack_trace:
                        msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    e.args = (msg, *e.args[1:])
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list) -> Any:
        """``run`` with the arguments in a list that is emptied first (so the caller's
        references do not keep the inputs alive)."""
        args_iter = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(args_iter)
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node) -> Any:
        """Runs one node: fetches its arguments' values and calls the method of its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise TypeError(f"run_node({n}): malformed arguments")
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- the ops -----------------------------------------------------------------------------

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The next positional argument of ``run`` (the default in ``args`` when they ran
        out; all that are left for a ``*args`` placeholder)."""
        if str(target).startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               f"was not passed in!") from si

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The module's attribute at ``target``."""
        return self.fetch_attr(str(target))

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``args[0].target(*args[1:], **kwargs)``."""
        self_obj, *args_tail = args
        return getattr(self_obj, str(target))(*args_tail, **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The submodule ``target`` called with ``args``/``kwargs``."""
        return self.fetch_attr(str(target))(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The returned value, ``args[0]``."""
        return args[0]

    # -- helpers -----------------------------------------------------------------------------

    def fetch_attr(self, target: str) -> Any:
        """The attribute at dotted path ``target`` of the module."""
        atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """``n``'s args and kwargs with each Node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """``args`` with each Node replaced by its value in ``self.env``."""
        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class Transformer(Interpreter):
    """An Interpreter that builds a new graph instead of computing values: each method
    returns Proxies, so an override can emit different nodes; :meth:`transform` returns the
    new GraphModule::

        >>> import tritongrad as tg
        >>> class ReluToGelu(tg.fx.Transformer):
        ...     def call_function(self, target, args, kwargs):
        ...         if target is tg.relu:
        ...             target = tg.nn.functional.gelu
        ...         return super().call_function(target, args, kwargs)
        >>> gm = ReluToGelu(tg.fx.symbolic_trace(lambda x: tg.relu(x))).transform()
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        from ._symbolic_trace import Tracer
        self.new_graph = Graph()

        class TransformerTracer(Tracer):
            def __init__(self, graph: Graph) -> None:
                super().__init__()
                self.graph = graph
                self.tensor_attrs = {}

            def is_leaf_module(self, _, __) -> bool:
                return True

        self.tracer = TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(str(target), default_value=default),
                     self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        submod = self.fetch_attr(str(target))
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Runs the transformation and returns the new GraphModule."""
        result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a: Any) -> Any:
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip_proxy))
        return GraphModule(self.module, self.new_graph)
