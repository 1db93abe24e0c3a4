"""``torch.library``: custom operators (``custom_op``, ``triton_op``) and ``tg.ops``.

``@tg.library.custom_op("mylib::my_op", mutates_args=())`` turns a function of tensors (with
type hints) into an operator autograd treats as one opaque op, as PyTorch's: its body runs
with grad mode off and records nothing; ``register_autograd(backward, setup_context=...)``
gives it a derivative (``backward(ctx, *grads)``, the semantics of ``Function.backward``),
without which a backward through it raises; ``register_kernel(device_types)`` gives a device
type its own implementation; ``register_vmap`` its ``torch.func.vmap`` rule;
``register_autocast`` the dtype its floating inputs take inside autocast. The op is also
``tg.ops.<namespace>.<name>`` (and ``.default``), and the profiler and emit_nvtx show it as
``<namespace>::<name>``.

Note [Custom ops as Functions]
  A call that records (grad mode on, a Tensor argument requiring grad) runs through a
  ``Function`` generated per op, ``GeneratedBackwardFor_<ns>_<name>_default`` as PyTorch
  names it: its forward is the kernel, its ``setup_context`` the registered one, its backward
  the registered formula (or PyTorch's error). Tensors inside list arguments are passed to the
  Function one by one (a ``Function`` routes gradients to its Tensor arguments only) and
  regrouped for the kernel, ``setup_context`` and ``vmap``; the backward's gradient for a
  list argument is a list. A call that does not record runs the kernel directly. Either way
  the outputs must be new tensors (PyTorch's aliasing error otherwise) and the arguments named
  in ``mutates_args`` have their version counters bumped, so autograd's in-place checks see
  the mutation.

Note [Fake kernels on the meta device]
  An op called with meta tensors (``device="meta"``, kernels/meta.py) runs its fake
  implementation (``register_fake``; for a ``Library`` op also a ``"Meta"`` kernel), as
  PyTorch's does: it returns meta tensors of the outputs' shapes and dtypes without touching
  data, so a model with custom ops can be sized and traced for shapes on ``"meta"``. Without
  one the call raises PyTorch's error. A recording call goes through the op's Function as on
  any device, so ``register_autograd``'s formula sees meta tensors too. PyTorch's meta tensors
  (unlike its FakeTensors) have no data-dependent output sizes, so ``get_ctx()`` inside a fake
  implementation running on meta tensors raises PyTorch's error saying so.

The older registration API (``Library``, ``define``, ``impl``, the module-level
``register_*`` taking an op's name) is in _op_library.py. Not there: PyTorch's fake-tensor and
AOT tests of ``opcheck`` (no tracer) and ``__torch_dispatch__`` (``register_torch_dispatch``
raises).
"""

from __future__ import annotations

import contextlib
import inspect
import typing
import warnings
from collections.abc import Callable, Iterable, Sequence

from .autograd import overrides
from .autograd.function import Function
from .autograd.observe import op_range
from .autograd.state import anywhere, state
from .autograd.tensor import Tensor
from .autograd.vmap import _local as _transforms
from .runtime.device import device as Device
from .runtime.dtype import dtype as DType
from .types import Number

__all__ = ["CustomOpDef", "Library", "custom_op", "define", "fallthrough_kernel", "get_ctx",
           "impl", "impl_abstract", "infer_schema", "opcheck", "ops", "register_autocast",
           "register_autograd", "register_fake", "register_kernel", "register_torch_dispatch",
           "register_vmap", "triton_op", "wrap_triton"]


# -- schemas ------------------------------------------------------------------------------------

_ARG_TYPES = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
              Number: "Scalar", DType: "ScalarType", Device: "Device"}
_LISTABLE = (Tensor, int, float, bool, Number)
_RETURN_TYPES = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool",
                 Number: "Scalar"}


def _arg_schema(tp) -> str | None:
    """The schema type of annotation ``tp`` (``Tensor?``, ``SymInt[]``, ...), or None."""
    if tp in _ARG_TYPES:
        return _ARG_TYPES[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union and type(None) in args:  # Optional[X]
        rest = tuple(a for a in args if a is not type(None))
        inner = _arg_schema(rest[0] if len(rest) == 1 else typing.Union[rest])
        return None if inner is None or inner.endswith("?") else inner + "?"
    if origin in (list, Sequence, typing.List, typing.Sequence) and len(args) == 1:
        elem = args[0]
        if elem in _LISTABLE:
            return _ARG_TYPES[elem] + "[]"
        if typing.get_origin(elem) is typing.Union and set(typing.get_args(elem)) == {
                Tensor, type(None)}:
            return "Tensor?[]"
    return None


def _return_schema(tp) -> str | None:
    if tp is None or tp is type(None):
        return "()"
    if tp in _RETURN_TYPES:
        return _RETURN_TYPES[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (list, typing.List) and args == (Tensor,):
        return "Tensor[]"
    if origin is tuple and args and Ellipsis not in args:
        parts = [_return_schema(a) for a in args]
        if all(p is not None and p != "()" for p in parts):
            return "(" + ", ".join(parts) + ")"
    return None


def _mutated(fn: Callable, sig: inspect.Signature, mutates_args) -> tuple[str, ...]:
    if mutates_args == "unknown":
        return tuple(n for n, p in sig.parameters.items() if _is_tensorish(p.annotation))
    if isinstance(mutates_args, str):
        raise ValueError(f"mutates_args must be an iterable of argument names or 'unknown', got "
                         f"{mutates_args!r}")
    names = tuple(mutates_args)
    missing = set(names) - set(sig.parameters)
    if missing:
        raise ValueError(f"infer_schema(func): {missing} in mutates_args were not found in the "
                         f"custom op's signature. mutates_args should contain the names of all "
                         f"args that the custom op mutates, or just the string 'unknown' if "
                         f"you don't know. Got func with signature {sig})")
    return names


def _is_tensorish(tp) -> bool:
    return (_arg_schema(tp) or "").startswith("Tensor")


def _hints(fn: Callable) -> inspect.Signature:
    """``fn``'s signature with its annotations resolved (``from __future__ import
    annotations`` makes them strings)."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # (names the hints cannot resolve: the annotations as written)
        return sig
    params = [p.replace(annotation=hints.get(n, p.annotation))
              for n, p in sig.parameters.items()]
    return sig.replace(parameters=params,
                       return_annotation=hints.get("return", sig.return_annotation))


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name: str | None = None
                 ) -> str:
    """The schema PyTorch infers from a function's type hints: ``"(Tensor x, float v) ->
    Tensor"``, with ``Tensor(a0!)`` for each mutated argument. Raises ValueError naming the
    parameter whose type is not supported."""
    sig = _hints(prototype_function)
    what = f"infer_schema(func): {{}} Got func with signature {sig})"
    mutated = _mutated(prototype_function, sig, mutates_args)
    parts, kw_only_seen = [], False
    for i, (name, p) in enumerate(sig.parameters.items()):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise ValueError(what.format("We do not support positional-only args, varargs, or "
                                         "varkwargs."))
        if p.annotation is p.empty:
            raise ValueError(what.format(f"Parameter {name} must have a type annotation."))
        kind = _arg_schema(p.annotation)
        if kind is None:
            raise ValueError(what.format(f"Parameter {name} has unsupported type "
                                         f"{p.annotation}."))
        if name in mutated:
            if not kind.startswith("Tensor"):
                raise ValueError(what.format(f"Parameter {name} is in mutable_args but only "
                                             f"Tensors or collections of Tensors can be "
                                             f"mutated"))
            kind = kind.replace("Tensor", f"Tensor(a{mutated.index(name)}!)", 1)
        if p.kind is p.KEYWORD_ONLY and not kw_only_seen:
            parts.append("*")
            kw_only_seen = True
        text = f"{kind} {name}"
        if p.default is not p.empty:
            text += "=" + (f'"{p.default}"' if isinstance(p.default, str) else str(p.default))
        parts.append(text)
    ret = _return_schema(sig.return_annotation)
    if ret is None:
        raise ValueError(what.format(f"Return has unsupported type {sig.return_annotation}."))
    return f"({', '.join(parts)}) -> {ret}"


# -- the op -------------------------------------------------------------------------------------

_OPS: dict[str, CustomOpDef] = {}  # "ns::name": the op (a defined op's default overload)
_OVERLOADS: dict[str, dict] = {}  # "ns::name": {overload name: op} (Library.define's)
_fake_calls: list = []  # the ops whose fake implementations are running (get_ctx)


class _Call:
    """One call's non-Tensor structure, carried through the Function as its last argument:
    the op, the kernel, where each positional argument's Tensors are among the Function's
    arguments (Note [Custom ops as Functions]) and the keyword-only arguments."""

    __slots__ = ("op", "kernel", "layout", "kwonly")

    def __init__(self, op, kernel, layout, kwonly):
        self.op, self.kernel, self.layout, self.kwonly = op, kernel, layout, kwonly

    def regroup(self, flat: Sequence) -> tuple:
        """The positional arguments from the Function's flat ones."""
        out = []
        for kind, value in self.layout:
            if kind == "one":
                out.append(flat[value])
            elif kind == "list":
                out.append([flat[j] for j in value])
            else:
                out.append(value)
        return tuple(out)


def _flatten(positional: tuple) -> tuple[list, list]:
    """The Function's arguments (each Tensor, list elements one by one) and the layout."""
    flat, layout = [], []
    for a in positional:
        if isinstance(a, Tensor):
            layout.append(("one", len(flat)))
            flat.append(a)
        elif isinstance(a, (list, tuple)) and any(isinstance(t, Tensor) for t in a):
            layout.append(("list", tuple(range(len(flat), len(flat) + len(a)))))
            flat.extend(a)
        else:
            layout.append(("value", a))
    return flat, layout


def _tensors(values: Iterable) -> list:
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(t for t in v if isinstance(t, Tensor))
    return out


class CustomOpDef:
    """A custom operator made by :func:`custom_op`: call it as the function it wraps."""

    _overload = "default"  # (Library.define's ops may have others: ``ns::name.out``)

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable, mutated: tuple,
                 device_types, tags=None):
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema, self._init_fn, self._tags = schema, fn, tags
        self._signature = inspect.signature(fn)
        self._mutated = mutated
        self._kernels: dict = {}
        self._disabled: set = set()
        self._backward_fn = self._setup_context_fn = self._fake_fn = self._vmap_fn = None
        self._autocast: dict = {}
        self.__doc__, self.__name__, self.__module__ = fn.__doc__, fn.__name__, fn.__module__
        self.__wrapped__ = fn
        for dt in _device_types(device_types):
            self._kernels[dt] = fn
        self._function = self._make_function()

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    # -- registration ---------------------------------------------------------------------------
    def register_kernel(self, device_types, fn: Callable | None = None, /):
        """Gives ``device_types`` (``"cpu"``, ``"cuda"``, a sequence) their own implementation
        (usable as a decorator)."""
        def register(fn):
            for dt in _device_types(device_types):
                if dt is None:
                    raise ValueError("register_kernel: device_types must name device types")
                self._kernels[dt] = fn
            return fn
        return register if fn is None else register(fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        """Registers the op's fake implementation: given meta tensors (``device="meta"``:
        shapes, dtypes and strides, no data) it returns the outputs' meta tensors (Note [Fake
        kernels on the meta device])."""
        self._fake_fn = fn
        return fn

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None
                          ) -> None:
        """Registers the op's backward formula: ``backward(ctx, *grads)`` returns one gradient
        per argument (None for non-Tensors, a list for a list of Tensors);
        ``setup_context(ctx, inputs, output)`` (with ``keyword_only_inputs`` before ``output``
        when the op has keyword-only arguments) saves what it needs on ``ctx`` during the
        forward."""
        if not callable(backward):
            raise TypeError("register_autograd: backward must be callable")
        if self._mutated:
            raise RuntimeError(f"Cannot register autograd formula for non-functional operator "
                               f"{self!r} with schema {self._qualname}{self._schema}. Please "
                               f"create a functional operator and register an autograd "
                               f"formula for that.")
        self._backward_fn, self._setup_context_fn = backward, setup_context

    def register_vmap(self, func: Callable | None = None, /):
        """Registers the op's ``torch.func.vmap`` rule: ``func(info, in_dims, *args,
        **kwargs)`` returns ``(output, out_dims)`` (usable as a decorator)."""
        def register(fn):
            self._vmap_fn = fn
            return fn
        return register if func is None else register(func)

    def register_autocast(self, device_type: str, cast_inputs) -> None:
        """Inside an autocast region of ``device_type``, the op's floating Tensor arguments
        are cast to ``cast_inputs`` and the op runs with autocast off."""
        self._autocast[device_type] = cast_inputs

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True):
        """Inside ``with``: whether ``device_type``'s own kernel is used (else the default)."""
        was = device_type not in self._disabled
        if enabled:
            self._disabled.discard(device_type)
        else:
            self._disabled.add(device_type)
        try:
            yield
        finally:
            if was:
                self._disabled.discard(device_type)
            else:
                self._disabled.add(device_type)

    # -- calling --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if overrides.active:  # (subclasses' and modes' __torch_function__ see custom ops too)
            relevant = args + tuple(kwargs.values())
            if overrides.has_torch_function(relevant):
                return overrides.handle_torch_function(self, relevant, *args, **kwargs)
        positional, kwonly = self._bind(args, kwargs)
        tensors = _tensors((*positional, *kwonly.values()))
        device_type = self._device_type(tensors, (*positional, *kwonly.values()))
        positional, kwonly = self._autocast_args(device_type, positional, kwonly)
        if not (anywhere.observers and state.observers):
            return self._dispatch(device_type, positional, kwonly, tensors)
        records = state.grad_enabled and any(t.requires_grad for t in tensors)
        others = tuple(v for v in positional if not isinstance(v, Tensor))
        with op_range(self._qualname, tuple(tensors), others, seq=state.seq if records else -1):
            return self._dispatch(device_type, positional, kwonly, tensors)

    def _bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The call's positional arguments (defaults filled in) and keyword-only ones."""
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        params = self._signature.parameters
        positional = tuple(v for n, v in bound.arguments.items()
                           if params[n].kind is not params[n].KEYWORD_ONLY)
        kwonly = {n: v for n, v in bound.arguments.items()
                  if params[n].kind is params[n].KEYWORD_ONLY}
        return positional, kwonly

    def _dispatch(self, device_type: str, positional: tuple, kwonly: dict, tensors: list):
        kernel = self._kernel(device_type)
        if (state.grad_enabled and any(t.requires_grad for t in tensors)) \
                or (self._vmap_fn is not None and _transforms.levels):  # (its vmap rule)
            flat, layout = _flatten(positional)
            return self._function.apply(*flat, _Call(self, kernel, layout, kwonly))
        return self._kernel_call(kernel, positional, kwonly)

    def _kernel_call(self, kernel, positional, kwonly):
        """The kernel on the arguments with grad mode off; checks the outputs are new tensors
        and bumps the mutated arguments' versions."""
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            out = kernel(*positional, **kwonly)
        finally:
            state.grad_enabled = prev
        args = dict(zip(self._signature.parameters, positional), **kwonly)
        self._check_aliasing(out, _tensors(args.values()))
        for name in self._mutated:
            for t in _tensors([args.get(name)]):
                t._vc[0] += 1
        return out

    def _device_type(self, tensors: list, values: tuple) -> str:
        if tensors:
            return tensors[0].device.type
        for v in values:
            if isinstance(v, (Device, str)) and str(v).split(":")[0] in ("cpu", "cuda", "meta"):
                return str(v).split(":")[0]
        return "cpu"

    def _kernel(self, device_type: str) -> Callable:
        if device_type == "meta" and "meta" not in self._kernels:
            return self._fake_kernel()
        if device_type not in self._disabled and device_type in self._kernels:
            return self._kernels[device_type]
        if None in self._kernels:
            return self._kernels[None]
        raise NotImplementedError(f"Could not run '{self._qualname}' with arguments from the "
                                  f"'{device_type}' device type: it has kernels for "
                                  f"{sorted(k for k in self._kernels if k)} only")

    def _fake_kernel(self) -> Callable:
        """The fake implementation as the meta device's kernel (Note [Fake kernels on the meta
        device]), or PyTorch's error without one."""
        fake = self._fake_fn
        if fake is None:
            raise self._no_fake()
        def on_meta(*args, **kwargs):
            _fake_calls.append(self)
            try:
                return fake(*args, **kwargs)
            finally:
                _fake_calls.pop()
        return on_meta

    def _no_fake(self) -> Exception:
        return RuntimeError(f"There was no fake impl registered for {self!r}. This is necessary "
                            f"for torch.compile/export/fx tracing to work. Please use "
                            f"`{self._name}.register_fake` to add an fake impl.")

    def _autocast_args(self, device_type: str, positional: tuple, kwonly: dict):
        to = self._autocast.get(device_type)
        if to is None:
            return positional, kwonly
        from .autograd import autocast
        if not autocast.is_autocast_enabled(device_type):
            return positional, kwonly

        def cast(v):
            if isinstance(v, Tensor) and v.dtype.is_floating_point:
                return v.to(to)
            if isinstance(v, (list, tuple)):
                return type(v)(cast(t) for t in v)
            return v
        return tuple(cast(v) for v in positional), {k: cast(v) for k, v in kwonly.items()}

    def _check_aliasing(self, out, inputs: list) -> None:
        outs = _tensors([out] if not isinstance(out, (tuple, list)) else out)
        seen = {id(t): "input" for t in inputs}
        storages = {_storage(t): "input" for t in inputs if t.numel()}
        for t in outs:
            key = _storage(t) if t.numel() else None
            if id(t) in seen or (key is not None and key in storages):
                raise RuntimeError(
                    f"{self._name} (with implementation in {self._init_fn.__module__}): The "
                    f"output of this custom operator (1) must not also be an input to this "
                    f"custom operator and (2) may not alias any inputs to this custom "
                    f"operator or other returns. The most common way to trigger this error is "
                    f"if we have y = custom_op(x) and y and x are the same Tensor. Please "
                    f"instead return a clone of the offending output tensor(s) (e.g. return "
                    f"x.clone()) or refactor the custom operator to not return y.")
            seen[id(t)] = "output"
            if key is not None:
                storages[key] = "output"

    def _make_function(self) -> type:
        """The Function a recording call runs through (Note [Custom ops as Functions])."""
        op = self
        n_args = sum(1 for p in self._signature.parameters.values()
                     if p.kind is not p.KEYWORD_ONLY)

        def forward(*args):
            call = args[-1]
            return op._kernel_call(call.kernel, call.regroup(args[:-1]), call.kwonly)

        def setup_context(ctx, inputs, output):
            call = inputs[-1]
            ctx._custom_call = call
            if op._setup_context_fn is None:
                return
            positional = call.regroup(inputs[:-1])
            if len(inspect.signature(op._setup_context_fn).parameters) == 4:
                op._setup_context_fn(ctx, positional, call.kwonly, output)
            else:
                op._setup_context_fn(ctx, positional, output)

        def backward(ctx, *grads):
            if op._backward_fn is None:
                raise RuntimeError(f"Trying to backward through {op._namespace}.{op._name}."
                                   f"{op._overload} but no autograd formula was registered. Please "
                                   f"use register_autograd to add one.")
            result = op._backward_fn(ctx, *grads)
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != n_args:
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect "
                                   f"number of gradients (expected {n_args}, got "
                                   f"{len(result)})")
            flat = []
            for (kind, value), g in zip(ctx._custom_call.layout, result):
                if kind == "one":
                    flat.append(g)
                elif kind == "list":
                    flat.extend([None] * len(value) if g is None else g)
            return (*flat, None)

        def vmap(info, in_dims, *args):
            if op._vmap_fn is None:
                raise NotImplementedError(f"{op._qualname}: no vmap rule: register one with "
                                          f"register_vmap")
            call = args[-1]
            return op._vmap_fn(info, call.regroup(in_dims[:-1]), *call.regroup(args[:-1]),
                               **call.kwonly)

        name = f"GeneratedBackwardFor_{self._namespace}_{self._name}_{self._overload}"
        cls = type(name, (Function,), {
            "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
            "backward": staticmethod(backward), "vmap": staticmethod(vmap),
            "__module__": __name__, "__qualname__": name})
        return cls


def _storage(t: Tensor):
    """What identifies ``t``'s memory (its storage's first byte; a meta tensor has none)."""
    if t.is_meta:
        return id(t)
    return (t.device, t.untyped_storage().data_ptr())


def _device_types(device_types) -> list:
    if device_types is None:
        return [None]
    if isinstance(device_types, str):
        return [device_types]
    return list(device_types)


def _split_name(qualname: str) -> tuple[str, str]:
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"custom_op: the name must look like '{{namespace}}::{{name}}', got "
                         f"{qualname!r}")
    ns, name = qualname.split("::")
    if not (ns.isidentifier() and name.isidentifier()):
        raise ValueError(f"custom_op: namespace and name must be identifiers, got {qualname!r}")
    return ns, name


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args, device_types=None,
              schema: str | None = None, tags=None):
    """Wraps a function (with type hints) into a custom operator named
    ``"{namespace}::{name}"`` (usable as a decorator). ``mutates_args``: the names of the
    arguments it mutates (or ``"unknown"``: every Tensor argument); ``device_types``: the
    device types ``fn`` is the implementation for (None: all); ``schema``: PyTorch's schema
    string, inferred from the type hints when None (``infer_schema``)."""
    ns, opname = _split_name(name)

    def inner(fn: Callable) -> CustomOpDef:
        text = schema or infer_schema(fn, mutates_args=mutates_args, op_name=opname)
        op = CustomOpDef(ns, opname, text, fn, _mutated(fn, _hints(fn), mutates_args),
                         device_types, tags)
        if name in _OPS:
            warnings.warn(f"custom_op: {name} was defined already; the new definition "
                          f"replaces it", stacklevel=2)
        _OPS[name] = op
        _OVERLOADS[name] = {"default": op}
        return op

    return inner if fn is None else inner(fn)


def triton_op(name: str, fn: Callable | None = None, /, *, mutates_args, schema: str | None = None):
    """A custom operator whose implementation launches Triton kernels (through
    :func:`wrap_triton`): in tritongrad, where every op runs eagerly, ``custom_op``."""
    return custom_op(name, fn, mutates_args=mutates_args, schema=schema)


class _WrappedTriton:
    """``wrap_triton(kernel)[grid](*args)``: launches ``kernel`` with tritongrad Tensors as
    their device memory (arrays)."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        launch = self.kernel[grid]

        def run(*args, **kwargs):
            args = tuple(a._data if isinstance(a, Tensor) else a for a in args)
            kwargs = {k: v._data if isinstance(v, Tensor) else v for k, v in kwargs.items()}
            return launch(*args, **kwargs)
        return run

    def run(self, *args, grid, **kwargs):
        return self[grid](*args, **kwargs)


def wrap_triton(triton_kernel, /):
    """Makes a ``@triton.jit`` kernel callable on tritongrad Tensors: ``wrap_triton(k)[grid](x,
    y, out, n, BLOCK=1024)``."""
    if not hasattr(triton_kernel, "__getitem__"):
        raise RuntimeError("wrap_triton only works on functions annotated with triton.jit or "
                           "triton.autotune")
    return _WrappedTriton(triton_kernel)


def opcheck(op, args: tuple, kwargs: dict | None = None, *, test_utils=None,
            raise_exception: bool = True, atol=None, rtol=None) -> dict:
    """Checks a custom op as far as eager mode allows. ``test_schema``: it runs on ``args``,
    its outputs are new tensors, and it changes no Tensor argument that ``mutates_args`` does
    not name; ``test_autograd_registration``: where it has a backward formula, ``gradcheck``
    of it on the floating Tensor arguments in float64. Returns ``{test: "SUCCESS" or the
    exception}`` (PyTorch's shape); PyTorch's fake-tensor and AOT tests need a tracer that
    tritongrad does not have."""
    from .autograd.gradcheck import gradcheck
    kwargs = kwargs or {}
    op = getattr(op, "_custom_op", None) or op
    if not isinstance(op, CustomOpDef):
        raise ValueError(f"opcheck: expected a custom op, got {op!r}")
    results = {}
    names = list(op._signature.parameters)
    before = {i: a.detach().clone() for i, a in enumerate(args) if isinstance(a, Tensor)}
    try:
        op(*args, **kwargs)
        for i, old in before.items():
            if names[i] not in op._mutated and not bool((old == args[i]).all()):
                raise RuntimeError(f"opcheck: {op._qualname} mutated its argument "
                                   f"{names[i]!r}, which mutates_args does not name")
        results["test_schema"] = "SUCCESS"
    except Exception as e:
        results["test_schema"] = e
    floats = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.dtype.is_floating_point]
    if op._backward_fn is not None and floats:
        def fn(*tensors):
            full = list(args)
            for i, t in zip(floats, tensors):
                full[i] = t
            return op(*full, **kwargs)
        try:
            gradcheck(fn, tuple(args[i].detach().double().requires_grad_() for i in floats),
                      atol=atol or 1e-5, rtol=rtol or 1e-3)
            results["test_autograd_registration"] = "SUCCESS"
        except Exception as e:
            results["test_autograd_registration"] = e
    if raise_exception:
        for name, r in results.items():
            if isinstance(r, Exception):
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {r}") from r
    return results


class OpCheckError(Exception):
    """What :func:`opcheck` raises when a test fails."""


# -- tg.ops -------------------------------------------------------------------------------------

class OpOverload:
    """``tg.ops.<ns>.<name>.<overload>`` of a custom or defined op (``.default``, ``.out``):
    callable, with PyTorch's ``_schema``, ``name()``, ``overloadpacket`` and ``namespace``."""

    def __init__(self, op: CustomOpDef, packet: OpOverloadPacket, overload: str):
        self._op, self.overloadpacket, self._overloadname = op, packet, overload
        self.namespace, self._opname = op._namespace, op._name
        self._qualname = op._qualname + ("" if overload == "default" else "." + overload)
        self.__name__ = f"{op._name}.{overload}"

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    @property
    def _schema(self):
        """The op's schema (``str()`` prints ``ns::name.overload(...) -> ...``)."""
        from ._op_schema import parse
        schema = getattr(self._op, "_parsed", None)
        return schema or parse(self._op._schema, self._op._qualname)

    def name(self) -> str:
        return self._qualname

    @property
    def _custom_op(self) -> CustomOpDef:
        return self._op

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self.namespace}.{self._opname}', overload=" \
               f"'{self._overloadname}')>"

    def __str__(self) -> str:
        return f"{self.namespace}.{self._opname}.{self._overloadname}"

    def __eq__(self, other) -> bool:
        return isinstance(other, OpOverload) and other._op is self._op

    def __hash__(self) -> int:
        return hash(self._qualname)


class OpOverloadPacket:
    """``tg.ops.<ns>.<name>``: callable, with ``.default`` and the op's other overloads."""

    def __init__(self, qualname: str, fn: Callable, overloads: dict | None = None):
        self._qualname, self._fn, self._overloads = qualname, fn, overloads
        self.__name__ = qualname.split("::")[-1]

    def __call__(self, *args, **kwargs):
        if self._overloads is None or len(self._overloads) == 1:
            return self._fn(*args, **kwargs)
        return _call_some_overload(self._overloads, args, kwargs)

    def __getattr__(self, overload: str):
        if overload.startswith("__"):
            raise AttributeError(overload)
        if self._overloads is None:
            return self._fn  # aten: PyTorch's overload names (.default, .Tensor, ...)
        op = self._overloads.get(overload)
        if op is None:
            raise AttributeError(f"The underlying op of '{self}' has no overload name "
                                 f"'{overload}'")
        return OpOverload(op, self, overload)

    def overloads(self) -> list[str]:
        return list(self._overloads or ("default",))

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._qualname.replace('::', '.')}')>"

    # (equal and hashed by name: ``tg.ops.aten.mm`` made twice is one key of a dict, as the
    # flop counter's tables use them)
    def __eq__(self, other) -> bool:
        name = getattr(other, "_qualname", None)
        return NotImplemented if name is None else name == self._qualname

    def __hash__(self) -> int:
        return hash(self._qualname)

    def __str__(self) -> str:
        return self._qualname.replace("::", ".")

    @property
    def _custom_op(self):
        return self._fn if isinstance(self._fn, CustomOpDef) else None


def _call_some_overload(overloads: dict, args: tuple, kwargs: dict):
    """A packet's call: the default overload, else the first whose schema the arguments fit
    (PyTorch's overload resolution, in definition order)."""
    if "default" in overloads:
        return overloads["default"](*args, **kwargs)
    failure = None
    for op in overloads.values():
        try:
            op._bind(args, kwargs)
        except RuntimeError as e:
            failure = failure or e
            continue
        return op(*args, **kwargs)
    raise failure


class _OpNamespace:
    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, op: str) -> OpOverloadPacket:
        if op.startswith("__"):
            raise AttributeError(op)
        qualname = f"{self._name}::{op}"
        if qualname in _OVERLOADS:
            return OpOverloadPacket(qualname, _OPS[qualname], _OVERLOADS[qualname])
        if self._name == "aten":
            import tritongrad
            fn = getattr(tritongrad, op, None) or getattr(tritongrad.nn.functional, op, None)
            if callable(fn):
                return OpOverloadPacket(qualname, fn)
        raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute '{op}'")


class _Ops:
    """``tg.ops``: the custom operators by namespace (``tg.ops.mylib.my_op``), and
    ``tg.ops.aten.<name>`` for tritongrad's own functions."""

    def __getattr__(self, namespace: str) -> _OpNamespace:
        if namespace.startswith("__"):
            raise AttributeError(namespace)
        return _OpNamespace(namespace)


ops = _Ops()


# (the registration by name needs CustomOpDef and the tables above: imported last)
from ._op_library import (Library, _AutoDispatchBelowAutograd,  # noqa: F401,I001
                          define, fallthrough_kernel, get_ctx, impl, impl_abstract,
                          register_autocast, register_autograd, register_fake, register_kernel,
                          register_torch_dispatch, register_vmap)
