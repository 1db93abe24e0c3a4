"""Symbolic tracing (PyTorch's ``torch.fx.symbolic_trace`` and ``Tracer``): runs a module's
``forward`` on Proxies and records what it does as a :class:`Graph`."""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .graph import Graph
from .node import Argument, has_side_effect
from .proxy import ParameterProxy, Proxy, TracerBase

if TYPE_CHECKING:
    from .graph_module import GraphModule

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "GraphAppendingTracer"]

HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS

# (globals dict, name) of the functions registered with ``wrap``: patched while tracing
_wrapped_fns_to_patch: dict[tuple[int, str], dict] = {}


class PHBase:
    """The value of a ``concrete_args`` entry that stays an input (a placeholder)."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


@has_side_effect
def _assert(condition: Any, message: str = "") -> None:
    """``assert condition, message``: the check recorded for a specialized concrete arg."""
    if not condition:
        raise AssertionError(message)


@has_side_effect
def _assert_is_none(value: Any, msg: str) -> None:
    if value is not None:
        raise AssertionError(msg)


class _Patcher:
    """Sets attributes for the length of a trace and puts the originals back after it, also
    when tracing raises."""

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any, bool]] = []
        self._seen: set[tuple[int, str]] = set()

    def patch(self, owner: Any, name: str, new: Any) -> None:
        key = (id(owner), name)
        if key in self._seen:
            return
        self._seen.add(key)
        if isinstance(owner, dict):
            self._undo.append((owner, name, owner.get(name), name in owner))
            owner[name] = new
        else:
            had = name in vars(owner)
            self._undo.append((owner, name, vars(owner).get(name), had))
            setattr(owner, name, new)

    def __enter__(self) -> _Patcher:
        return self

    def __exit__(self, *exc) -> None:
        while self._undo:
            owner, name, old, had = self._undo.pop()
            if isinstance(owner, dict):
                if had:
                    owner[name] = old
                else:
                    owner.pop(name, None)
            elif had:
                setattr(owner, name, old)
            else:
                delattr(owner, name)
        self._seen.clear()


def _find_proxy(args: tuple, kwargs: dict) -> Proxy | None:
    from .node import map_aggregate
    found: list[Proxy] = []

    def visit(a: Any) -> None:
        if isinstance(a, Proxy) and not found:
            found.append(a)
    map_aggregate(args, visit)
    map_aggregate(kwargs, visit)
    return found[0] if found else None


def _create_wrapped_func(orig_fn: Callable) -> Callable:
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        # a call with a Proxy among its arguments is recorded as one call_function node
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            rp = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            rp.node.meta["is_wrapped"] = True
            return rp
        return orig_fn(*args, **kwargs)
    return wrapped


def wrap(fn_or_name: str | Callable) -> Callable | str:
    """This function can be called at module-level scope to register ``fn_or_name`` as a
    "leaf function". A "leaf function" will be preserved as a ``call_function`` node in the
    FX trace instead of being traced through (``wrap("len")`` works for builtins)::

        def my_check(x):
            return x.shape[0] > 1 and x[0].item() > 0   # not traceable

        tritongrad.fx.wrap("my_check")   # or wrap(my_check)

    Returns its argument, so it also serves as a decorator."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable "
                           "or string name")
    if callable(fn_or_name):
        fn_name = getattr(fn_or_name, "__name__", None)
        if fn_name is None or fn_name == "<lambda>":
            raise RuntimeError("wrap: expected a named function, got "
                               f"{fn_or_name!r}")
    else:
        fn_name = fn_or_name
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), fn_name)] = caller.f_globals
    return fn_or_name


def _patch_function(fn: types.FunctionType, nargs: int) -> types.FunctionType:
    """``fn`` with its ``*args``/``**kwargs``/keyword-only parameters made ``nargs`` plain
    positional ones (each then receives one Proxy)."""
    co = fn.__code__
    co = co.replace(co_flags=co.co_flags & ~HAS_VARSTUFF, co_argcount=nargs,
                    co_kwonlyargcount=0, co_posonlyargcount=0)
    return types.FunctionType(co, fn.__globals__, fn.__name__, None, fn.__closure__)


class Tracer(TracerBase):
    """``Tracer`` is the class that implements the symbolic tracing functionality of
    ``tritongrad.fx.symbolic_trace``: a call to ``symbolic_trace(m)`` is equivalent to
    ``Tracer().trace(m)``, wrapped in a ``GraphModule``. ``Tracer`` can be subclassed to
    override various behaviors of the tracing process:

    - ``is_leaf_module(m, qualname)``: which submodules stay ``call_module`` nodes (default:
      the layers of ``tritongrad.nn`` and ``tritongrad.ao.nn``, except ``Sequential``)
      rather than being traced into;
    - ``call_module``, ``getattr``, ``create_proxy``, ``create_node``, ``create_arg``.

    Args:
        autowrap_modules: modules whose functions, read as globals of the traced code
            (``from math import sqrt``), are recorded as calls (default ``(math,)``).
        autowrap_functions: functions recorded as calls the same way.
        param_shapes_constant: parameters' shapes (``weight.shape``, ``.size()``) are real
            values instead of recorded attribute reads.
    """

    def __init__(self, autowrap_modules: tuple[types.ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for m in autowrap_modules for name, value in vars(m).items()
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.autowrap_functions = tuple(autowrap_functions)
        self.autowrap_modules = tuple(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[int, str] | None = None
        self.root: Any = None
        self.tensor_attrs: dict[int, str] = {}
        self.module_stack: dict[str, tuple[str, type]] = {}

    # -- what becomes a node -----------------------------------------------------------------

    def create_arg(self, a: Any) -> Argument:
        """As ``TracerBase.create_arg``, and Tensors that are parameters or buffers of the
        root (or other tensor attributes) become ``get_attr`` nodes; other Tensors are stored
        on the root as ``_tensor_constant{N}`` and fetched from there."""
        from ..autograd.tensor import Tensor
        from ..nn.parameter import Parameter
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor) and not isinstance(a, Proxy):
            for n, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", n, (), {})
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                i = 0
                while True:
                    qualname = f"_tensor_constant{i}"
                    if not hasattr(self.root, qualname):
                        break
                    i += 1
                self.tensor_attrs[id(a)] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """A method to specify whether a given ``nn.Module`` is a "leaf" module: one kept as
        a single ``call_module`` node rather than traced through. By default, the modules of
        ``tritongrad.nn`` and ``tritongrad.ao.nn`` (``Linear``, ``Conv2d``, quantized and QAT
        modules, ...) are leaves, except ``Sequential``; user modules are traced into.

        Args:
            m: The module being queried about.
            module_qualified_name: The path to root of this module (``foo.bar.baz``).
        """
        from ..nn.container import Sequential
        mod = type(m).__module__
        return (mod.startswith(("tritongrad.nn", "tritongrad.ao.nn"))
                and not isinstance(m, Sequential))

    def path_of_module(self, mod: Any) -> str:
        """The qualified name of submodule ``mod`` in the root (``layer1.0.conv1``)."""
        if self.submodule_paths is None:
            self.submodule_paths = {}
            for name, m in self.root.named_modules(remove_duplicate=False):
                self.submodule_paths.setdefault(id(m), name)
        path = self.submodule_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Any, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A submodule called while tracing: a leaf becomes a ``call_module`` node, any
        other is traced into (``forward(*args, **kwargs)``)."""
        module_qualified_name = self.path_of_module(m)
        saved = dict(self.module_stack)
        self.module_stack[module_qualified_name] = (module_qualified_name, type(m))
        try:
            if not self.is_leaf_module(m, module_qualified_name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", module_qualified_name, args, kwargs)
        finally:
            self.module_stack = saved

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """A module attribute read while tracing (``self.weight``): a parameter of the root
        becomes a ``get_attr`` Proxy (one per parameter, kept in ``parameter_proxy_cache``);
        a buffer too when ``proxy_buffer_attributes``; anything else is returned as is."""
        from ..autograd.tensor import Tensor
        from ..nn.parameter import Parameter

        def maybe_proxy(collection, value):
            for n, p in collection:
                if value is p:
                    if n not in parameter_proxy_cache:
                        kwargs = {}
                        if self.param_shapes_constant and isinstance(value, Parameter):
                            kwargs["proxy_factory_fn"] = \
                                lambda node: ParameterProxy(self, node, n, value)
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {},
                                                                     **kwargs)
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, Parameter):
            got = maybe_proxy(self.root.named_parameters(), attr_val)
            if got is not None:
                return got
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            got = maybe_proxy(self.root.named_buffers(), attr_val)
            if got is not None:
                return got
        return attr_val

    # -- tracing -----------------------------------------------------------------------------

    def create_args_for_root(self, root_fn: Callable, is_module: bool,
                             concrete_args: dict[str, Any] | tuple | None = None
                             ) -> tuple[Callable, list]:
        """The placeholders for ``root_fn``'s parameters (values for those in
        ``concrete_args``) and the function to call with them."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args: list[Any] = []
        skip = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        arg_names = [next(names_iter) for _ in range(skip, total_args)]
        if isinstance(concrete_args, tuple):
            if len(concrete_args) != len(arg_names):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))
        if concrete_args is not None:
            for name in concrete_args:
                if name not in sig.parameters:
                    raise TypeError(f"concrete_args: {fn_for_analysis.__qualname__}() has no "
                                    f"parameter {name!r} (parameters: {list(sig.parameters)})")
        annotations = getattr(fn_for_analysis, "__annotations__", {})

        def proxy_placeholder(name: str) -> Any:
            if concrete_args is not None and name in concrete_args:
                return self._concrete_placeholder(name, concrete_args[name], sig)
            if name[0] == "*":
                default: tuple = ()
            else:
                param = sig.parameters[name]
                default = () if param.default is inspect.Parameter.empty else (param.default,)
            return self.create_proxy("placeholder", name, default, {},
                                     type_expr=annotations.get(name.lstrip("*")))

        args.extend(proxy_placeholder(n) for n in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(proxy_placeholder("*" + next(names_iter)))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(proxy_placeholder("**" + next(names_iter)))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _concrete_placeholder(self, name: str, value: Any, sig: inspect.Signature) -> Any:
        from ..autograd._pytree import tree_map
        cnt = 0

        def replace_ph(x: Any) -> Any:
            nonlocal cnt
            cnt += 1
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
            out = self.create_proxy("placeholder", f"{name}_{cnt}", default, {})
            if isinstance(x, PHBase):
                return out
            if type(x) in (bool, int, float, str):
                # the graph checks it is called with the value it was specialized to
                msg = f"{name} has been specialized to have value {x} but got another value"
                self.create_proxy("call_function", _assert, (out == x, msg), {})
            elif x is None:
                msg = f"{name} has been specialized to have value None but got another value"
                self.create_proxy("call_function", _assert_is_none, (out, msg), {})
            else:
                import warnings
                warnings.warn(f"Was not able to add assertion to guarantee correct input "
                              f"{name} to specialized function. It is up to the user to make "
                              f"sure that your inputs match the inputs you specialized the "
                              f"function with.", stacklevel=4)
            return x
        return tree_map(replace_ph, value)

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> Graph:
        """Traces ``root`` (an ``nn.Module``, its ``forward`` traced, or a function) and
        returns the Graph. ``concrete_args`` fixes some inputs to values (control flow on
        them is then decided during tracing; ``PH`` keeps one an input).

        Sets ``self.root`` (the module, or an empty ``nn.Module`` for a function) which the
        graph's ``get_attr``/``call_module`` targets refer to."""
        from ..autograd import overrides
        from ..nn.module import Module
        # the __torch_function__ check on tritongrad's functions and Tensor's methods is
        # installed on first use (autograd/overrides.py): a trace needs it to see Proxies
        overrides.activate()
        if isinstance(root, Module):
            self.root = root
            fn = getattr(type(root), self.traced_func_name)
        elif callable(root):
            self.root = Module()
            fn = root
        else:
            raise TypeError(f"symbolic_trace: expected an nn.Module or a function, got "
                            f"{type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_attrs = {}
        self.module_stack = {}
        self._collect_tensor_attrs(self.root, [])
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
        parameter_proxy_cache: dict[str, Any] = {}
        orig_getattr = Module.__getattr__
        orig_call = Module.__call__
        tracer = self

        @functools.wraps(orig_getattr)
        def module_getattr_wrapper(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

        @functools.wraps(orig_call)
        def module_call_wrapper(mod, *args, **kwargs):
            def forward(*args, **kwargs):
                return orig_call(mod, *args, **kwargs)
            mod_globals = getattr(getattr(mod, "forward", mod), "__globals__", {})
            _autowrap_check(patcher, mod_globals, tracer._autowrap_function_ids)
            _rewrap_check(patcher, mod_globals, rewrap)
            for cls in type(mod).__mro__[:-2]:  # (not Module, not object)
                _rewrap_check(patcher, vars(cls), rewrap, owner=cls)
            return tracer.call_module(mod, forward, args, kwargs)

        self.submodule_paths = None
        rewrap = {id(original): getattr(owner, name)
                  for owner, name, original in overrides._installed
                  if isinstance(owner, types.ModuleType)}
        try:
            with _Patcher() as patcher:
                patcher.patch(Module, "__getattr__", module_getattr_wrapper)
                patcher.patch(Module, "__call__", module_call_wrapper)
                patcher.patch(overrides, "redispatch", _redispatch_to_proxy(overrides))
                _patch_wrapped_functions(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                _rewrap_check(patcher, fn_globals, rewrap)
                for cls in type(self.root).__mro__[:-2]:
                    _rewrap_check(patcher, vars(cls), rewrap, owner=cls)
                for m in self._autowrap_search:
                    _autowrap_check(patcher, vars(m), self._autowrap_function_ids)
                result = fn(*args)
                self.create_node("output", "output", (self.create_arg(result),), {},
                                 type_expr=fn.__annotations__.get("return"))
        finally:
            self.submodule_paths = None
        return self.graph

    def _collect_tensor_attrs(self, m: Any, prefix: list[str]) -> None:
        """Plain Tensor attributes of the root's modules (not parameters or buffers), so a
        traced read of one becomes ``get_attr`` of its name."""
        from ..autograd.tensor import Tensor
        from ..nn.module import Module
        for k, v in vars(m).items():
            if isinstance(v, Tensor):
                self.tensor_attrs[id(v)] = ".".join([*prefix, k])
        for k, v in m.named_children():
            if isinstance(v, Module):
                self._collect_tensor_attrs(v, [*prefix, k])


def _redispatch_to_proxy(overrides: Any) -> Callable:
    """``overrides.redispatch`` while tracing. A public op taken before the
    ``__torch_function__`` check was installed and held where ``_rewrap_check`` does not look
    (a closure, an instance attribute) runs without the check; given a Proxy it fails on it
    and its guard (autograd/registry.py) asks ``redispatch`` what to do: here the call is
    recorded as if it had been dispatched, under the installed wrapper's identity."""
    orig = overrides.redispatch
    wrappers = {id(original): (owner, name) for owner, name, original in overrides._installed}

    def redispatch(public: Callable, args: tuple, kwargs: dict) -> Any:
        if _find_proxy(args, kwargs) is None:
            return orig(public, args, kwargs)
        where = wrappers.get(id(public))
        api = getattr(*where) if where is not None else public
        return Proxy.__torch_function__(api, (Proxy,), args, kwargs)
    return redispatch


def _patch_wrapped_functions(patcher: _Patcher) -> None:
    """Puts the recording wrapper in place of each function registered with ``wrap``."""
    for (_, name), frame_dict in _wrapped_fns_to_patch.items():
        if name not in frame_dict and hasattr(builtins, name):
            orig_fn = getattr(builtins, name)
        elif name in frame_dict:
            orig_fn = frame_dict[name]
        else:
            raise NameError(f"wrap: no global function named {name!r} in module "
                            f"{frame_dict.get('__name__')!r}")
        patcher.patch(frame_dict, name, _create_wrapped_func(orig_fn))


def _rewrap_check(patcher: _Patcher, frame_dict: Any, rewrap: dict[int, Callable],
                  owner: type | None = None) -> None:
    """Puts the ``__torch_function__`` wrapper in place of the globals of ``frame_dict``
    (or the static methods of class ``owner``, ``frame_dict`` its ``vars``) that hold a
    tritongrad function taken before the wrapper was installed (``from
    tritongrad.nn.functional import gelu``; a layer's ``functional = staticmethod(F.relu)``:
    Note [Overrides installed on first use] in autograd/overrides.py), so that calls of it
    with Proxies are recorded."""
    for name, value in list(frame_dict.items()):
        if owner is not None:
            if not isinstance(value, staticmethod):
                continue
            w = rewrap.get(id(value.__func__))
            if w is not None and w is not value.__func__:
                patcher.patch(owner, name, staticmethod(w))
            continue
        w = rewrap.get(id(value))
        if w is not None and w is not value and isinstance(value, types.FunctionType):
            patcher.patch(frame_dict, name, w)


def _autowrap_check(patcher: _Patcher, frame_dict: dict, function_ids: set[int]) -> None:
    """Wraps the globals of ``frame_dict`` that are autowrapped functions (``sqrt`` after
    ``from math import sqrt``)."""
    if not function_ids:
        return
    for name, value in list(frame_dict.items()):
        if not name.startswith("_") and callable(value) and id(value) in function_ids:
            patcher.patch(frame_dict, name, _create_wrapped_func(value))


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (what ``Proxy(node)`` gets without one):
    operations on Proxies of ``graph``'s nodes add nodes to it."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph


def symbolic_trace(root: Any, concrete_args: dict[str, Any] | None = None) -> GraphModule:
    """Symbolic tracing API: given an ``nn.Module`` or function instance ``root``, this
    function will return a :class:`GraphModule` constructed by recording operations seen
    while tracing through ``root``.

    ``concrete_args`` allows you to partially specialize your function, whether it's to
    remove control flow or data structures: the specialized inputs are checked when the
    graph is called; ``PH`` keeps an entry an input.

    Args:
        root: Module or function to be traced and converted into a Graph representation.
        concrete_args: Inputs to be partially specialized.

    Returns:
        GraphModule: a Module created from the recorded operations from ``root``.

    Example (a module: see the package's docstring; here a function with a specialized
    argument)::

        >>> import tritongrad as tg
        >>> def f(x, flag):
        ...     return x * 2 if flag else x - 1
        >>> gm = tg.fx.symbolic_trace(f, concrete_args={"flag": True})
        >>> [n.name for n in gm.graph.nodes]
        ['x', 'flag_1', 'eq', '_assert', 'mul', 'output']
        >>> gm(tg.tensor([1.0, 2.0]), True).tolist()
        [2.0, 4.0]
    """
    from ..nn.module import Module
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else \
        getattr(root, "__name__", type(root).__name__)
    return GraphModule(tracer.root, graph, name)

