"""``Proxy``: the stand-in for a value while a program is traced (PyTorch's
``torch.fx.Proxy``). Every operation on it (operators, methods, ``tritongrad.*`` and
``nn.functional`` calls through ``__torch_function__``) is recorded as a Node instead of run."""

from __future__ import annotations

import dis
import functools
import inspect
import operator
from collections.abc import Callable, Iterator
from typing import Any

from ._functional_args import FUNCTIONAL_ARGS
from .graph import Graph, magic_methods, reflectable_magic_methods
from .node import Argument, Node, Target, _public_name, has_side_effect, map_aggregate

__all__ = ["TraceError", "TracerBase", "Proxy", "Attribute", "ParameterProxy"]

has_side_effect(operator.setitem)


class TraceError(ValueError):
    """A traced program did something a Proxy cannot stand for (data-dependent control flow,
    iterating over a Proxy)."""


@functools.cache
def _base_types() -> tuple:
    from ..runtime.device import device
    from ..runtime.dtype import dtype
    import tritongrad
    extra = tuple(t for t in (getattr(tritongrad, "memory_format", None),
                              getattr(tritongrad, "layout", None)) if isinstance(t, type))
    return (str, int, float, bool, complex, bytes, dtype, device, tritongrad.Tensor) + extra


class TracerBase:
    """What a Proxy needs of its tracer: making nodes and proxies, turning arguments into
    graph arguments, and the answers for ``bool``/``iter``/``keys`` of a Proxy."""

    graph: Graph
    record_stack_traces: bool = False
    # buffers read in ``forward`` become ``get_attr`` nodes (else their values are used)
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"

    def create_node(self, kind: str, target: Target, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """Inserts a Node into the graph (override to add metadata or checks). The modules
        being traced through are recorded in ``node.meta['nn_module_stack']``
        (``{qualified name: (qualified name, module class)}``, outermost first)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        stack = getattr(self, "module_stack", None)
        if stack:
            node.meta["nn_module_stack"] = dict(stack)
        return node

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any | None = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Records ``kind``/``target`` with ``args``/``kwargs`` (Proxies and values, turned
        into graph arguments by ``create_arg``) and returns the Proxy of the new node."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        if not isinstance(args_, tuple) or not isinstance(kwargs_, dict):
            raise TypeError(f"create_proxy: args must be a tuple and kwargs a dict, got "
                            f"{type(args).__name__} and {type(kwargs).__name__}")
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if self.record_stack_traces and not node.stack_trace:
            node.stack_trace = "".join(_user_stack())
        return proxy_factory_fn(node) if proxy_factory_fn else self.proxy(node)

    def create_arg(self, a: Any) -> Argument:
        """``a`` as a graph argument: Proxies become their Nodes, containers are mapped,
        base values (numbers, strings, dtypes, devices, Tensors) stay as they are."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return type(a)(*(self.create_arg(e) for e in a))
            return tuple(self.create_arg(e) for e in a)
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if a is None or a is ... or isinstance(a, _base_types()):
            return a
        if callable(a):  # functions and classes passed as arguments
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """Called for ``bool(proxy)`` (``if proxy:``); symbolic tracing cannot decide it."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy) -> Iterator:
        """Called for ``iter(proxy)``; symbolic tracing cannot know the length."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function "
                         "argument. See the tritongrad.fx docs (docs/fx.md) for a more "
                         "detailed explanation of what types of control flow can be traced, "
                         "and check out the Proxy docstring for help troubleshooting Proxy "
                         "iteration errors")

    def keys(self, obj: Proxy) -> Any:
        """Called for ``proxy.keys()`` (``**proxy``): recorded as a ``keys`` method call."""
        return Attribute(obj, "keys")()


def _user_stack() -> list[str]:
    """The innermost frame outside tritongrad (the user's line that made the node)."""
    import traceback
    own = _package_dirs()
    frames = [f for f in traceback.extract_stack()[:-2]
              if not any(f.filename.startswith(d) for d in own)]
    return traceback.format_list(frames[-1:])


@functools.cache
def _package_dirs() -> tuple[str, ...]:
    import os
    import sys
    # tritongrad's packages live in several folders (tritongrad/, autograd/, nn/, ...)
    return tuple({os.path.dirname(m.__file__) + os.sep for name, m in list(sys.modules.items())
                  if (name == "tritongrad" or name.startswith("tritongrad."))
                  and name.count(".") <= 1 and getattr(m, "__file__", None)
                  and m.__file__.endswith("__init__.py")})


class Proxy:
    """The value of a Node while tracing. Operations on it are recorded in the tracer's
    graph and return new Proxies:

    - operators (``x + 1``, ``x[0]``, ``-x``) as ``call_function`` nodes of ``operator``
      functions;
    - methods (``x.view(-1)``) as ``call_method``, attribute reads (``x.shape``) as
      ``getattr`` calls;
    - ``tritongrad.*`` and ``nn.functional`` functions as ``call_function`` (they hand Proxy
      arguments to ``Proxy.__torch_function__``, the ``__torch_function__`` protocol).

    What cannot be recorded raises: ``bool(proxy)`` (``if x.sum() > 0:``) and iteration
    raise :class:`TraceError`, ``len(proxy)`` a RuntimeError. Pass such values as
    ``concrete_args`` or move the code into a function given to :func:`wrap`.
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            from ._symbolic_trace import GraphAppendingTracer
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):  # (protocols: copy, pickle, numpy)
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> Proxy:
        # (modules holding Proxies get deep-copied while tracing: the copy stands for the
        # same node of the same tracer)
        import copy
        new_dict = {k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()
                    if k not in ("node", "tracer")}
        res = Proxy.__new__(Proxy)
        res.__dict__.update(new_dict, node=self.node, tracer=self.tracer)
        return res

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        # ``a, b = proxy`` (UNPACK_SEQUENCE with a known count) unpacks into getitem nodes
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:
            for inst in dis.get_instructions(caller.f_code):
                if inst.offset == caller.f_lasti:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                    break
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you "
                           "want this call to be recorded, please call "
                           "tritongrad.fx.wrap('len') at module scope")

    def keys(self) -> Any:
        """``self.keys()``, as the tracer records it (``**proxy`` unpacking calls it)."""
        return self.tracer.keys(self)

    def __abs__(self) -> Proxy:
        # (not among the operators written as operators: generated code calls operator.abs)
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    @classmethod
    def __torch_function__(cls, orig_method: Callable, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Proxy:
        """A ``tritongrad.*`` function or Tensor method reached with a Proxy argument: it is
        recorded (``call_method`` for Tensor methods, ``call_function`` otherwise)."""
        from ..autograd.overrides import is_tensor_method_or_property
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers: dict = {}

        def find_tracer(a: Any) -> None:
            if isinstance(a, Proxy):
                tracers[a.tracer] = None
        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while "
                               f"trying to trace operations {orig_method}")
        tracer = next(iter(tracers))
        if is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        if orig_method.__name__ in FUNCTIONAL_ARGS:
            args, kwargs = _functional_record(orig_method, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs,
                                   name=tracer.graph._target_to_str(orig_method.__name__))


def _functional_record(fn: Callable, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments of a ``tritongrad.nn.functional`` call as PyTorch's functional records
    them (_functional_args.py): the leading ones positionally, the rest as keywords with
    their defaults. Anything else (another ``relu``, arguments that do not bind) as given."""
    spec = FUNCTIONAL_ARGS[fn.__name__]
    if _public_name(fn) != f"tritongrad.nn.functional.{fn.__name__}":
        return args, kwargs
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs
    explicit = dict(bound.arguments)
    bound.apply_defaults()
    n_lead, names = spec
    params = list(sig.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return args, kwargs
    lead = tuple(bound.arguments[p.name] for p in params[:n_lead] if p.name in bound.arguments)
    if len(lead) != n_lead:
        return args, kwargs
    rest = {k: bound.arguments[k] for k in names if k in bound.arguments}
    # (a parameter of tritongrad's that PyTorch's function lacks: kept when given)
    rest.update((p.name, explicit[p.name]) for p in params[n_lead:]
                if p.name not in rest and p.name in explicit)
    return lead, rest


class Attribute(Proxy):
    """``proxy.attr``: becomes a ``call_method`` node when called (``x.view(...)``), a
    ``getattr`` node when used as a value (``x.shape``)."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        # made on first use, so a method call does not leave an unused getattr node
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class ParameterProxy(Proxy):
    """The Proxy of a parameter when the tracer has ``param_shapes_constant``: its shape,
    ``size()``, ``dim()``, ``ndim``, ``numel()`` and ``nelement()`` are the real ones (not
    recorded), so shape arithmetic on parameters is constant-folded."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self) -> Any:
        return self.param.shape

    def size(self, dim: int | None = None) -> Any:
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.numel()


def _scope(method: str) -> None:
    target = getattr(operator, method)

    def impl(*args, **kwargs):
        tracer = args[0].tracer
        return tracer.create_proxy("call_function", target, args, kwargs)
    impl.__name__ = impl.__qualname__ = f"__{method.strip('_')}__"
    setattr(Proxy, impl.__name__, impl)


def _define_reflectable(orig: str) -> None:
    name = f"__r{orig.strip('_')}__"
    target = getattr(operator, orig)

    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    impl.__name__ = impl.__qualname__ = name
    setattr(Proxy, name, impl)


for _m in magic_methods:
    _scope(_m)
for _m in reflectable_magic_methods:
    _define_reflectable(_m)
