"""``torch.library``'s registration by name: ``Library`` with ``define``/``impl``, and the
module-level ``define``, ``impl``, ``register_kernel``, ``register_fake``, ``register_autograd``,
``register_vmap``, ``register_autocast``, ``impl_abstract``, ``get_ctx``, ``fallthrough_kernel``.

Note [Defined operators]
  ``Library("mylib", "DEF").define("foo(Tensor x, float a=2.) -> Tensor")`` makes an operator
  from its schema (_op_schema.py), ``tg.ops.mylib.foo`` (its overload ``.default``; a schema
  named ``foo.out`` makes ``.out``). Its kernels are registered per dispatch key, and a call
  picks one as PyTorch's dispatcher does for these keys:

  1. the ``Autograd`` kernel, when there is one: it handles autograd itself (typically with a
     ``Function``), and a call of the same op inside it, or inside
     ``tg._C._AutoDispatchBelowAutograd()``, skips this step;
  2. a formula from ``register_autograd``: the op runs as one ``Function`` (as ``custom_op``'s
     do, Note [Custom ops as Functions] in library.py);
  3. the device's kernel (``CPU``, ``CUDA``; ``Meta`` or the fake implementation for meta
     tensors), else ``CompositeExplicitAutograd``'s, else ``CompositeImplicitAutograd``'s.
     An implicit kernel runs with autograd on, so its own ops make the graph. Any other kernel
     reached while recording gets PyTorch's "autograd not implemented" fallback: it runs with
     autograd on and backward through its outputs warns ("an autograd kernel was not
     registered to the Autograd key(s)"); an output it made without history gets a node whose
     backward gives the inputs no gradient, as PyTorch's ``WarnNotImplemented``. A
     ``fallthrough_kernel`` registered to ``Autograd`` keeps the behaviour without the warning.

  Calls are checked against the schema with PyTorch's messages, and kernels get the arguments
  as PyTorch hands them to Python (Note [Schema calls] in _op_schema.py). Kernels for keys
  tritongrad has no layer for (``Python``, ``AutocastCUDA``, ``XLA``...) are accepted and kept,
  and never run.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import traceback
import warnings
import weakref
from collections.abc import Callable

from . import _op_schema
from .autograd.function import Function
from .autograd.state import state
from .autograd.tensor import Tensor
from .autograd.vmap import _local as _transforms
from .library import _OPS, _OVERLOADS, CustomOpDef, OpOverload, OpOverloadPacket, _fake_calls

__all__ = ["Library", "define", "fallthrough_kernel", "get_ctx", "impl", "impl_abstract",
           "register_autocast", "register_autograd", "register_fake", "register_kernel",
           "register_torch_dispatch", "register_vmap"]

# dispatch key -> where its kernel goes in an op's table (None: every device's default)
_KEYS = {"CPU": "cpu", "CUDA": "cuda", "Meta": "meta", "CompositeExplicitAutograd": None,
         "CompositeExplicitAutogradNonFunctional": None,
         "CompositeImplicitAutograd": "implicit", "Autograd": "autograd",
         "AutogradCPU": "autograd", "AutogradCUDA": "autograd"}
# keys PyTorch has and tritongrad has no layer for: their kernels are kept, never run
_INERT_KEYS = {"Python", "PythonDispatcher", "PythonTLSSnapshot", "FuncTorchBatched",
               "Functionalize", "BackendSelect", "ADInplaceOrView", "AutocastCPU",
               "AutocastCUDA", "XLA", "MPS", "HIP", "XPU", "IPU", "Lazy", "MTIA", "HPU", "VE",
               "PrivateUse1", "AutogradPrivateUse1", "AutogradXLA", "AutogradMPS", "SparseCPU",
               "SparseCUDA", "QuantizedCPU", "QuantizedCUDA", "NestedTensorCPU",
               "NestedTensorCUDA", "AutogradNestedTensor", "FuncTorchDynamicLayerBackMode",
               "FuncTorchDynamicLayerFrontMode", "Conjugate", "Negative", "ZeroTensor",
               "Undefined"}
_DEVICE_TYPES = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}

_below = threading.local()  # .ops: the ops below their Autograd kernel; .all: every op


def fallthrough_kernel():
    """A dummy kernel: registered to a dispatch key, the op skips that key (``Autograd``: it
    runs its device kernel with autograd on, and gives no warning)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


@contextlib.contextmanager
def _AutoDispatchBelowAutograd():
    """``torch._C._AutoDispatchBelowAutograd()``: inside, defined operators skip their
    ``Autograd`` kernels and formulas (step 1 and 2 of Note [Defined operators])."""
    was = getattr(_below, "all", False)
    _below.all = True
    try:
        yield
    finally:
        _below.all = was


def _is_below(op) -> bool:
    return getattr(_below, "all", False) or op in getattr(_below, "ops", ())


@contextlib.contextmanager
def _below_autograd(op):
    held = _below.__dict__.setdefault("ops", [])
    held.append(op)
    try:
        yield
    finally:
        held.pop()


class DefinedOp(CustomOpDef):
    """An operator made by ``Library.define``: its schema checks the arguments; its kernels
    are registered per dispatch key (Note [Defined operators])."""

    def __init__(self, schema: _op_schema.FunctionSchema, where: str):
        ns, name = schema.name.split("::")
        self._parsed, self._overload, self._where = schema, schema.overload_name or "default", where
        text = str(schema)
        super().__init__(ns, name, text[text.index("("):], _stand_in(schema),
                         tuple(a.name for a in schema.arguments if a.is_write), ())

    def __repr__(self) -> str:
        return f"<DefinedOp({self._qualname}.{self._overload})>"

    def _bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        values = _op_schema.bind(self._parsed, args, kwargs)
        arguments = self._parsed.arguments
        positional = tuple(v for a, v in zip(arguments, values) if not a.kwarg_only)
        return positional, {a.name: v for a, v in zip(arguments, values) if a.kwarg_only}

    def _given(self, positional: tuple, kwonly: dict) -> tuple[tuple, dict]:
        return _op_schema.as_given(self._parsed, (*positional, *kwonly.values()))

    def _kernel_call(self, kernel, positional, kwonly):
        """The kernel below autograd: grad mode off, the arguments as PyTorch passes them."""
        args, kwargs = self._given(positional, kwonly)
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            return kernel(*args, **kwargs)
        finally:
            state.grad_enabled = prev

    def _kernel(self, device_type: str) -> Callable:
        key = device_type if device_type in self._kernels else None
        if device_type == "meta" and key is None and self._fake_fn is not None:
            return self._fake_kernel()
        if key in self._kernels:
            return self._kernels[key]
        if "implicit" in self._kernels:
            return self._kernels["implicit"]
        if device_type == "meta":
            return self._fake_kernel()  # (PyTorch's message)
        have = sorted(_DEVICE_TYPES.get(k, k) for k in self._kernels if k in _DEVICE_TYPES)
        raise NotImplementedError(
            f"Could not run '{self._qualname}' with arguments from the "
            f"'{_DEVICE_TYPES.get(device_type, device_type)}' backend. This could be because the "
            f"operator doesn't exist for this backend, or was omitted during the selective/custom "
            f"build process (if using custom build). '{self._qualname}' is only available for "
            f"these backends: {have}.")

    def _dispatch(self, device_type: str, positional: tuple, kwonly: dict, tensors: list):
        autograd = self._kernels.get("autograd")
        below = _is_below(self)
        if autograd is not None and autograd is not fallthrough_kernel and not below:
            args, kwargs = self._given(positional, kwonly)
            with _below_autograd(self):
                return autograd(*args, **kwargs)
        records = not below and state.grad_enabled and any(t.requires_grad for t in tensors)
        if (records and self._backward_fn is not None) \
                or (self._vmap_fn is not None and _transforms.levels):
            return super()._dispatch(device_type, positional, kwonly, tensors)
        kernel = self._kernel(device_type)
        if kernel is self._kernels.get("implicit") or (records and autograd is fallthrough_kernel):
            args, kwargs = self._given(positional, kwonly)
            return kernel(*args, **kwargs)  # (autograd on: its ops make the graph)
        if records:
            return self._not_implemented_fallback(kernel, positional, kwonly, tensors)
        return self._kernel_call(kernel, positional, kwonly)

    def _not_implemented_fallback(self, kernel, positional, kwonly, tensors):
        """PyTorch's behaviour for an op recorded without an autograd kernel (Note [Defined
        operators]): the kernel's own graph, with a warning when backward goes through it."""
        args, kwargs = self._given(positional, kwonly)
        out = kernel(*args, **kwargs)
        inputs = [t for t in tensors if t.requires_grad]
        results = list(out) if isinstance(out, (tuple, list)) else [out]
        for i, t in enumerate(results):
            if not isinstance(t, Tensor) or not (t.dtype.is_floating_point or t.dtype.is_complex):
                continue
            if t.grad_fn is not None:
                t.register_hook(lambda g: self._warn_not_implemented())
            elif not t.requires_grad:
                results[i] = WarnNotImplemented.apply(self, [t], *inputs)
        if isinstance(out, (tuple, list)):
            return type(out)(results)
        return results[0]

    def _warn_not_implemented(self) -> None:
        warnings.warn(
            f"{self._qualname}: an autograd kernel was not registered to the Autograd key(s) but "
            f"we are trying to backprop through it. This may lead to silently incorrect "
            f"behavior. This behavior is deprecated and will be removed in a future version of "
            f"PyTorch. If your operator is differentiable, please ensure you have registered an "
            f"autograd kernel to the correct Autograd key (e.g. DispatchKey::Autograd, "
            f"DispatchKey::CompositeImplicitAutograd). If your operator is not differentiable, "
            f"or to squash this warning and use the previous behavior, please register "
            f"torch::CppFunction::makeFallthrough() to DispatchKey::Autograd.", UserWarning)

    def _no_fake(self) -> Exception:
        return NotImplementedError(
            f"{self._qualname}: attempted to run this operator with Meta tensors, but there was "
            f"no fake impl or Meta kernel registered. You may have run into this message while "
            f"using an operator with PT2 compilation APIs (torch.compile/torch.export); in order "
            f"to use this operator with those APIs you'll need to add a fake impl. Please see the "
            f"following for next steps:  https://pytorch.org/tutorials/advanced/"
            f"custom_ops_landing_page.html")

    def _check_aliasing(self, out, inputs: list) -> None:
        """(A defined op's outputs may alias its inputs: ``Tensor(a!)`` returns do.)"""


class WarnNotImplemented(Function):
    """The node of an output that a recorded op without an autograd kernel made without
    history: backward warns and gives its inputs no gradient (PyTorch's
    ``torch::autograd::WarnNotImplemented``)."""

    @staticmethod
    def forward(ctx, op, out, *inputs):  # (out in a list: not an input of the node)
        ctx.op = op
        return out[0].detach()

    @staticmethod
    def backward(ctx, grad):
        ctx.op._warn_not_implemented()
        return (None,) * len(ctx.needs_input_grad)


def _stand_in(schema: _op_schema.FunctionSchema) -> Callable:
    """A function with the schema's signature, naming the op (what CustomOpDef's bookkeeping
    reads from the function ``custom_op`` wraps); never called."""
    def op(*args, **kwargs):
        raise AssertionError("a defined operator's stand-in was called")
    params = [inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY if a.kwarg_only else
                                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=a.default_value if a.has_default else
                                inspect.Parameter.empty)
              for a in schema.arguments]
    op.__signature__ = inspect.Signature(params)
    op.__name__ = op.__qualname__ = schema.name.split("::")[-1]
    op.__module__ = "tritongrad.ops"
    return op


# -- Library --------------------------------------------------------------------------------------

# namespace -> its "DEF" library (weakly: a library's registrations end when it is collected)
_DEF_LIBRARIES: dict[str, weakref.ref] = {}


def _dead():
    return None


def _caller() -> str:
    """``file:line`` of the user's call (PyTorch's "registered at")."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not frame.filename.endswith(("_op_library.py", "library.py", "contextlib.py")):
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


class Library:
    """A set of operator registrations in one namespace, as PyTorch's ``torch.library.Library``:
    ``kind`` is ``"DEF"`` (the namespace's one library that defines operators),
    ``"FRAGMENT"`` (more definitions for it) or ``"IMPL"`` (implementations only, by default
    for ``dispatch_key``). Its registrations last until ``_destroy()`` or its collection."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f"Library: the namespace must be an identifier, got {ns!r}")
        if dispatch_key:
            _check_key(dispatch_key)
        if kind == "DEF" and _DEF_LIBRARIES.get(ns, _dead)() is not None:
            raise RuntimeError(
                f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please "
                f"put all of your definitions in a single TORCH_LIBRARY block.  If you were "
                f"trying to specify implementations, consider using TORCH_LIBRARY_IMPL (which "
                f"can be duplicated).  If you really intended to define operators for a single "
                f"namespace in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to "
                f"explicitly indicate this.")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._where = _caller()
        self._defined: list[DefinedOp] = []
        self._registered: list[tuple] = []  # (op, table key, the kernel it replaced)
        if kind == "DEF":
            _DEF_LIBRARIES[ns] = weakref.ref(self)

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Defines an operator from its schema, ``"foo(Tensor x, *, float a=2.) -> Tensor"``
        (the name may carry an overload, ``foo.out``); returns its name (without the
        overload)."""
        if self.kind == "IMPL":
            raise RuntimeError(
                f'def("{schema.split("(")[0]}"): Cannot define an operator inside of a '
                f"TORCH_LIBRARY_IMPL block.  All def()s should be placed in the (unique) "
                f"TORCH_LIBRARY block for their namespace.  (Error occurred while processing "
                f"TORCH_LIBRARY_IMPL block at {self._where})")
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        head = schema[:schema.find("(")] if "(" in schema else schema
        if "::" in head:
            ns = head.split("::")[0].strip()
            if ns != self.ns:
                raise RuntimeError(
                    f"Explicitly provided namespace ({ns}) in schema string does not match "
                    f"namespace of enclosing TORCH_LIBRARY block ({self.ns}).  Move this "
                    f"definition to the (unique) TORCH_LIBRARY block corresponding to this "
                    f"namespace (and consider deleting the namespace from your schema string.)  "
                    f"(Error occurred while processing TORCH_LIBRARY block at {self._where})")
            schema = schema[schema.index("::") + 2:]
        parsed = _op_schema.parse(schema)
        parsed = _op_schema.FunctionSchema(f"{self.ns}::{parsed.name}", parsed.overload_name,
                                           parsed.arguments, parsed.returns)
        overloads = _OVERLOADS.setdefault(parsed.name, {})
        overload = parsed.overload_name or "default"
        if overload in overloads:
            raise RuntimeError(
                f"Tried to register an operator ({parsed}) with the same name and overload "
                f"name multiple times. Each overload's schema should only be registered with a "
                f"single call to def(). Duplicate registration: registered at {_caller()}. "
                f"Original registration: registered at {overloads[overload]._where}")
        op = DefinedOp(parsed, _caller())
        op._tags = tuple(tags) if isinstance(tags, (list, tuple)) else (tags,)
        overloads[overload] = op
        if overload == "default" or parsed.name not in _OPS:
            _OPS[parsed.name] = op
        for lib, key, fn in _PENDING.pop(f"{parsed.name}.{overload}", ()):
            _register(lib, op, key, fn)
        self._defined.append(op)
        return parsed.name.split("::")[1]

    def impl(self, op_name, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False,
             allow_override: bool = False) -> None:
        """Registers ``fn`` as the kernel of operator ``op_name`` (``"foo"``, ``"foo.out"``,
        or the op) for ``dispatch_key`` (``"CPU"``, ``"CUDA"``, ``"Meta"``, ``"Autograd"``,
        ``"CompositeExplicitAutograd"``, ``"CompositeImplicitAutograd"``, ...; by default the
        library's key, else ``"CompositeImplicitAutograd"``)."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type "
                            f"{type(fn)}")
        if with_keyset:
            raise NotImplementedError("Library.impl(with_keyset=True): tritongrad has no "
                                      "dispatch key sets to pass a kernel")
        key = _check_key(dispatch_key or self.dispatch_key or "CompositeImplicitAutograd")
        name = _name_of(op_name, self.ns)
        _impl(self, name, key, fn)

    def fallback(self, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False):
        """Not available: tritongrad has no boxed fallbacks over every operator."""
        raise NotImplementedError("Library.fallback: tritongrad has no dispatcher to register "
                                  "a fallback kernel for every operator of a key")

    def _destroy(self) -> None:
        """Removes the library's definitions and the kernels it registered."""
        for op, key, previous in reversed(self._registered):
            if previous is None:
                op._kernels.pop(key, None)
            else:
                op._kernels[key] = previous
        for op in self._defined:
            overloads = _OVERLOADS.get(op._qualname, {})
            overloads.pop(op._overload, None)
            if not overloads:
                _OVERLOADS.pop(op._qualname, None)
                _OPS.pop(op._qualname, None)
            elif _OPS.get(op._qualname) is op:
                _OPS[op._qualname] = next(iter(overloads.values()))
        self._defined, self._registered = [], []
        if _DEF_LIBRARIES.get(self.ns, _dead)() in (self, None):
            _DEF_LIBRARIES.pop(self.ns, None)

    def __del__(self):
        with contextlib.suppress(Exception):  # (interpreter shutdown)
            self._destroy()


_PENDING: dict[str, list] = {}  # "ns::name.overload": registrations made before the define
_KEEP: list[Library] = []  # the libraries the module-level functions make (PyTorch's too live
#                            as long as the process)
_warned_override = False


def _check_key(key: str) -> str:
    if key not in _KEYS and key not in _INERT_KEYS:
        raise RuntimeError(f"could not parse dispatch key: {key}")
    return key


def _name_of(op, ns: str) -> str:
    """``"ns::name.overload"`` of ``op`` (a name in namespace ``ns``, an op or overload)."""
    if isinstance(op, OpOverload):
        return f"{op._op._qualname}.{op._overloadname}"
    if isinstance(op, CustomOpDef):
        return f"{op._qualname}.{op._overload}"
    if not isinstance(op, str):
        raise TypeError(f"impl: expected an operator name or an OpOverload, got {type(op)}")
    name = op if "::" in op else f"{ns}::{op}"
    return name if "." in name.split("::")[1] else name + ".default"


def _impl(lib: Library | None, name: str, key: str, fn: Callable) -> None:
    qualname, overload = name.rsplit(".", 1)
    op = _OVERLOADS.get(qualname, {}).get(overload)
    if op is None:  # (PyTorch allows kernels before the definition: kept until it comes)
        _PENDING.setdefault(name, []).append((lib, key, fn))
        return
    _register(lib, op, key, fn)


def _register(lib, op, key, fn) -> None:
    slot = _KEYS.get(key, key)
    previous = op._kernels.get(slot)
    if previous is not None:  # (PyTorch's warning, given once per process)
        global _warned_override
        if not _warned_override:
            _warned_override = True
            warnings.warn(f"Warning only once for all operators,  other operators may also be "
                          f"overridden.\n  Overriding a previously registered kernel for the "
                          f"same operator and the same dispatch key\n  operator: "
                          f"{op._parsed}\n    registered at {op._where}\n  dispatch key: {key}\n"
                          f"  previous kernel: no debug info\n       new kernel: registered at "
                          f"{_caller()}", UserWarning, stacklevel=4)
    op._kernels[slot] = fn
    if lib is not None:
        lib._registered.append((op, slot, previous))


def _op(op, what: str, missing=AttributeError) -> CustomOpDef:
    """The operator named or given by ``op`` (a ``"ns::name"`` string, an op, overload or
    packet), for the module-level ``register_*``."""
    if isinstance(op, OpOverload):
        return op._op
    if isinstance(op, OpOverloadPacket):
        found = op._custom_op
        if found is None:
            raise ValueError(f"{what}: {op} is not an operator tritongrad.library can register "
                             f"for")
        return found
    if isinstance(op, CustomOpDef):
        return op
    if not isinstance(op, str) or op.count("::") != 1:
        raise ValueError(f'Expected `qualname` to be of the form "namespace::name", but got '
                         f'{op}. The qualname passed to the torch.library APIs must consist of a '
                         f'namespace and a name, e.g. aten::sin')
    qualname, _, overload = op.partition(".")
    found = _OVERLOADS.get(qualname, {}).get(overload or "default")
    if found is None:
        ns, name = qualname.split("::")
        if missing is RuntimeError:
            raise RuntimeError(f"operator {qualname} does not exist")
        raise AttributeError(f"'_OpNamespace' '{ns}' object has no attribute '{name}'")
    return found


def define(qualname: str, schema: str, *, lib: Library | None = None, tags=()) -> None:
    """Defines operator ``qualname`` (``"mylib::foo"``) with ``schema``
    (``"(Tensor x) -> Tensor"``); its kernels come from :func:`impl` or ``register_kernel``."""
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        _op(qualname, "define")  # (PyTorch's ValueError)
    ns, name = qualname.split("::")
    if lib is None:
        lib = Library(ns, "FRAGMENT")
        _KEEP.append(lib)
    lib.define(name + schema, tags=tags)


def impl(qualname, types, func: Callable | None = None, *, lib: Library | None = None):
    """Registers ``func`` as operator ``qualname``'s kernel for ``types`` (device types,
    ``"cpu"``/``"cuda"``/``"meta"``, or dispatch keys, ``"CompositeImplicitAutograd"``; a
    sequence of them). Usable as a decorator. ``impl(lib, name, dispatch_key)`` is the older
    form, ``lib.impl(name, ...)``."""
    if isinstance(qualname, Library):  # impl(lib, "foo", "CPU")
        library, name, key = qualname, types, func

        def register_old(fn):
            library.impl(name, fn, key)
            return fn
        return register_old
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        _op(qualname, "impl")
    keys = [types] if isinstance(types, str) else list(types)

    def register(fn):
        for t in keys:
            key = _DEVICE_TYPES.get(t, t)
            if key == "default":
                key = "CompositeExplicitAutograd"
            _check_key(key)
            name = qualname if "." in qualname.split("::")[1] else qualname + ".default"
            if lib is not None:
                lib.impl(name.split("::")[1], fn, key)
            else:
                _impl(None, name, key, fn)
        return fn
    return register if func is None else register(func)


def register_kernel(op, device_types, func: Callable | None = None, /, *,
                    lib: Library | None = None):
    """``op.register_kernel(device_types, func)`` for the operator named ``op``."""
    return _op(op, "register_kernel").register_kernel(device_types, func)


def register_fake(op, func: Callable | None = None, /, *, lib: Library | None = None,
                  _stacklevel: int = 1, allow_override: bool = False):
    """Registers operator ``op``'s fake implementation (Note [Fake kernels on the meta device]
    in library.py); usable as a decorator."""
    target = _op(op, "register_fake", RuntimeError)

    def register(fn):
        return target.register_fake(fn)
    return register if func is None else register(func)


def impl_abstract(qualname, func: Callable | None = None, *, lib: Library | None = None,
                  _stacklevel: int = 1):
    """The older name of :func:`register_fake`."""
    warnings.warn("`torch.library.impl_abstract` was renamed to `torch.library.register_fake`. "
                  "Please use that instead; we will remove `torch.library.impl_abstract` in a "
                  "future version of PyTorch.", FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib)


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Library | None = None) -> None:
    """``op.register_autograd(backward, setup_context=...)`` for the operator named ``op``."""
    _op(op, "register_autograd").register_autograd(backward, setup_context=setup_context)


def register_vmap(op, func: Callable | None = None, /, *, lib: Library | None = None):
    """``op.register_vmap(func)`` for the operator named ``op``; usable as a decorator."""
    return _op(op, "register_vmap").register_vmap(func)


def register_autocast(op, device_type: str, cast_inputs, /, *,
                      lib: Library | None = None) -> None:
    """``op.register_autocast(device_type, cast_inputs)`` for the operator named ``op``."""
    _op(op, "register_autocast").register_autocast(device_type, cast_inputs)


def register_torch_dispatch(op, torch_dispatch_class, func: Callable | None = None, /, *,
                            lib: Library | None = None):
    """Not available: tritongrad has no ``__torch_dispatch__``."""
    raise NotImplementedError("register_torch_dispatch: tritongrad has no __torch_dispatch__ "
                              "layer (use __torch_function__, or register_kernel per device)")


def get_ctx():
    """Inside a fake implementation, its context; None elsewhere. A fake implementation
    running on meta tensors cannot make data-dependent sizes, and ``get_ctx()`` says so with
    PyTorch's error (Note [Fake kernels on the meta device] in library.py)."""
    if not _fake_calls:
        return None
    op = _fake_calls[-1]
    fn = op._fake_fn
    code = getattr(fn, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    raise RuntimeError(
        f"{op._qualname}{where}: You're trying to run this operator with meta Tensors (as "
        f"opposed to FakeTensors), but this operator may return an output Tensor with "
        f"data-dependent shape. Meta Tensors don't support operators with outputs that have "
        f"data-dependent shapes but FakeTensors do. If your operator does not return an output "
        f"with data-dependent shape, make sure the FakeTensor and/or meta kernel does not call "
        f"torch.library.get_ctx(). Otherwise, please use FakeTensors.")
