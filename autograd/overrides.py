"""``__torch_function__``: Tensor subclasses and function modes (PyTorch's ``torch.overrides``).

A class overrides tritongrad's functions by defining ``__torch_function__(cls, func, types,
args=(), kwargs=None)``: a call of a public function (``tg.add``, ``tg.nn.functional.linear``,
``tg.linalg.norm``, ...), of a Tensor method or operator (``Tensor.add``, ``x + y``,
``x[0]``) or of a property among ``T mT H mH real imag`` whose arguments include an instance
of such a class is handed to that method instead, with ``func`` the public function itself.
Tensor's own ``__torch_function__`` runs ``func`` with subclass dispatch off and converts
the Tensors it returns to the subclass, so a plain ``class MyTensor(tg.Tensor)`` keeps its
type through ops, as in PyTorch; ``nn.Parameter`` and ``nn.Buffer`` disable it
(``_disabled_torch_function_impl``), so ops on parameters return plain Tensors. A
``TorchFunctionMode`` entered with ``with`` sees every such call, plain tensors included.

Note [Overrides installed on first use]
  A check on every call would put a few hundred nanoseconds on every op of every program,
  almost none of which define a subclass. So the public functions and Tensor's methods run
  no check until the first Tensor subclass that keeps ``__torch_function__`` is defined or
  made, a tensor-like object reaches a ``tg.*`` function, or a mode is entered: then
  ``activate`` replaces each of them (in ``tritongrad``, ``nn.functional``, ``linalg``,
  ``special``, ``fft`` and on Tensor) by a wrapper that looks for overriding arguments and
  modes first (Note [Dispatch order]). A name imported before that (``from tritongrad import
  add``) keeps the function without the check; ``tg.add(...)`` and methods always see it.
  Functions not on that list (``tg.manual_seed``, the grad-mode functions, ``tg.autograd.*``)
  are not overridable (``get_ignored_functions``).

Note [Dispatch order]
  As PyTorch's ``handle_torch_function``: the innermost mode first (popped while its handler
  runs, so the handler's own calls reach the modes below it and then the subclasses), then
  each overriding argument, subclasses before their superclasses, then in the order given,
  one per type, until one returns something other than ``NotImplemented``; if none does, a
  TypeError. Arguments are looked for in the positional and keyword arguments and one level
  into lists and tuples (``tg.cat([a, b])``). Exact Tensors and disabled subclasses never
  override, so ``types`` holds only overriding types. Dispatch state is per thread:
  ``DisableTorchFunctionSubclass`` turns off subclass dispatch (modes still run),
  ``DisableTorchFunction`` both.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import types as _types
import warnings
from collections.abc import Callable, Iterable

__all__ = ["BaseTorchFunctionMode", "TorchFunctionMode", "get_default_nowrap_functions",
           "get_ignored_functions", "get_overridable_functions", "handle_torch_function",
           "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "is_tensor_like", "is_tensor_method_or_property", "resolve_name",
           "wrap_torch_function"]


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The ``__torch_function__`` of a class that does not override (``nn.Parameter``):
    calls ``func`` as it is, never consulted by dispatch."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _Dispatch(threading.local):
    modes: tuple = ()  # the TorchFunctionMode stack, innermost last
    off = 0  # DisableTorchFunction depth: no modes, no subclasses
    sub_off = 0  # DisableTorchFunctionSubclass depth


_tls = _Dispatch()


class DisableTorchFunctionSubclass:
    """Inside ``with``: no call is handed to a subclass's ``__torch_function__`` in this
    thread (modes still see them)."""

    def __enter__(self):
        _tls.sub_off += 1
        return self

    def __exit__(self, *exc) -> None:
        _tls.sub_off -= 1


class DisableTorchFunction:
    """Inside ``with``: no ``__torch_function__`` dispatch at all in this thread, neither to
    modes nor to subclasses."""

    def __enter__(self):
        _tls.off += 1
        return self

    def __exit__(self, *exc) -> None:
        _tls.off -= 1


def _is_torch_function_enabled() -> bool:
    return not (_tls.off or _tls.sub_off)


def _is_torch_function_mode_enabled() -> bool:
    return bool(_tls.modes) and not _tls.off


# -- finding the overriding arguments ---------------------------------------------------------

# Types that never override: what most arguments are (Tensor, Parameter and every disabled
# subclass are added when defined, tensor.py's Tensor.__init_subclass__), skipped in one test.
_PLAIN: set = {int, float, bool, complex, str, bytes, type(None), slice, type(Ellipsis)}


def _overrides(tp: type) -> bool:
    f = getattr(tp, "__torch_function__", None)
    return f is not None and f is not _disabled_torch_function_impl


def _package_loading() -> bool:
    """Whether ``tritongrad`` itself is still being imported (its ``__init__`` running)."""
    pkg = sys.modules.get("tritongrad")
    return pkg is None or getattr(getattr(pkg, "__spec__", None), "_initializing", False)


def note_class(cls: type) -> None:
    """A Tensor subclass was defined (``Tensor.__init_subclass__``): one that overrides
    installs the dispatch check, one that does not joins the types never looked at.

    A class that overrides and is defined while the package itself loads (the library's own:
    ``nn.parameter.UninitializedParameter``) installs nothing then: ``activate`` imports the
    namespaces it wraps, some not loaded yet (a circular import), and a check installed at
    import would cost every op of every program. It installs the check with its first
    instance instead, as :func:`override_from_first_instance`."""
    if not _overrides(cls):
        _PLAIN.add(cls)
    elif _package_loading():
        override_from_first_instance(cls)
    else:
        activate()


def override_from_first_instance(cls: type) -> None:
    """Makes ``cls``, a subclass defined without an override and given one afterwards (a
    library's own subclass, made at import: ``masked.MaskedTensor``), an overriding class whose
    dispatch check is installed when its first instance is made (``note_instance``), so that
    importing the library costs the calls of programs that never make one nothing."""
    _PLAIN.discard(cls)


def note_instance(cls: type) -> None:
    """An instance of Tensor subclass ``cls`` is being made: the check is installed if
    ``cls`` overrides (again, after ``deactivate``)."""
    if _overrides(cls):
        activate(getattr(cls, "_transient_override", False))


# Note [Transient overrides]
#   A class whose instances override only for a while (``_transient_override``: the lazy
#   modules' uninitialized parameters, which raise PyTorch's error when used in an op until
#   ``materialize`` turns them into plain Parameters) installs the check with its first
#   instance like any other, but the check then costs every op of the program (~1.6 us on
#   ``x + x``) long after the last of them is materialized. So the check remembers whether
#   anything else asked for it (``_lasting``: another class's instance, a class defined after
#   import, a mode, fx); when nothing did, ``release_transient`` (called when no such instance
#   is left) takes it off again.
_lasting = False


def release_transient() -> None:
    """The last instance of a transient overriding class is gone: removes the dispatch check
    unless something else installed or uses it (Note [Transient overrides])."""
    if active and not _lasting and not _tls.modes:
        deactivate()


def _add(found: list | None, arg) -> list:
    """``found`` with ``arg`` placed by Note [Dispatch order] (one per type, subclasses before
    their superclasses)."""
    tp = type(arg)
    if found is None:
        return [arg]
    index = len(found)
    for i, other in enumerate(found):
        if type(other) is tp:
            return found
        if index == len(found) and issubclass(tp, type(other)):
            index = i
    found.insert(index, arg)
    return found


def _overloaded(values: Iterable, found: list | None = None) -> list | None:
    """The overriding objects among ``values`` and one level into their lists and tuples."""
    plain = _PLAIN
    for a in values:
        tp = type(a)
        if tp in plain:
            continue
        if tp is list or tp is tuple:
            for b in a:
                tb = type(b)
                if tb not in plain and _overrides(tb):
                    found = _add(found, b)
        elif _overrides(tp):
            found = _add(found, a)
    return found


def _overloaded_call(args: tuple, kwargs: dict) -> list | None:
    found = _overloaded(args)
    return _overloaded(kwargs.values(), found) if kwargs else found


def has_torch_function(relevant_args: Iterable) -> bool:
    """Whether a call with ``relevant_args`` goes to a ``__torch_function__``: a mode is
    active, or one of them (or of their lists' elements) overrides."""
    if _tls.off:
        return False
    if _tls.modes:
        return True
    return not _tls.sub_off and _overloaded(relevant_args) is not None


def has_torch_function_unary(obj) -> bool:
    """:func:`has_torch_function` for one argument."""
    return has_torch_function((obj,))


def has_torch_function_variadic(*args) -> bool:
    """:func:`has_torch_function` for the arguments given."""
    return has_torch_function(args)


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a Tensor or behaves as one (its type defines
    ``__torch_function__``)."""
    from .tensor import Tensor
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


# -- handing a call over ----------------------------------------------------------------------

@contextlib.contextmanager
def _pop_mode_temporarily():
    """The innermost mode, off the stack while its handler runs."""
    modes = _tls.modes
    _tls.modes = modes[:-1]
    try:
        yield modes[-1]
    finally:
        _tls.modes = modes


def _dispatch(public: Callable, overloaded: list | None, args: tuple, kwargs: dict):
    """Hands ``public(*args, **kwargs)`` to the active mode and the overriding arguments in
    Note [Dispatch order]."""
    overloaded = overloaded or []
    types = tuple(type(a) for a in overloaded)
    if _tls.modes and not _tls.off:
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        result = arg.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = resolve_name(public) or repr(public)
    handlers = "".join(f"\n  - tensor subclass {t}" for t in types)
    if _tls.modes:
        handlers += f"\n  - mode object {_tls.modes[-1]!r}"
    raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers "
                    f"returned NotImplemented:\n{handlers}\n")


def handle_torch_function(public_api: Callable, relevant_args: Iterable, *args, **kwargs):
    """Hands ``public_api(*args, **kwargs)`` to the ``__torch_function__`` of the active mode
    and of the overriding objects among ``relevant_args`` (a function's own dispatch, after
    :func:`has_torch_function` said yes)."""
    overloaded = None if _tls.sub_off else _overloaded(relevant_args)
    return _dispatch(public_api, overloaded, args, kwargs)


def wrap_torch_function(dispatcher: Callable):
    """Makes the decorated function overridable: ``dispatcher`` (same signature) returns the
    arguments to look at."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


def _convert(ret, cls: type):
    """``ret`` with its Tensors (and those of its tuples and lists) made ``cls`` instances
    (views with ``as_subclass``'s history), as Tensor's ``__torch_function__`` returns
    them."""
    from .ops.views import as_subclass
    from .tensor import Tensor
    if isinstance(ret, Tensor):
        return ret if isinstance(ret, cls) else as_subclass(ret, cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        if all(a is b for a, b in zip(items, ret)):
            return ret
        make = getattr(type(ret), "_make", None)  # (a named tuple: max's values, indices)
        return make(items) if make is not None else type(ret)(items)
    return ret


def tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """Tensor's ``__torch_function__``: ``func`` run without subclass dispatch, its Tensors
    returned as ``cls`` (``NotImplemented`` when some type in ``types`` is not a base of
    ``cls``, leaving the call to that type)."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in _nowrap():
            return ret
        return _convert(ret, cls)


# -- modes ------------------------------------------------------------------------------------

class TorchFunctionMode:
    """A context manager that sees every overridable call in its thread while it is entered
    (``with MyMode():``): its ``__torch_function__(func, types, args=(), kwargs=None)`` is
    called in place of ``func``, and usually calls ``func(*args, **kwargs)`` itself, which
    then goes to the modes entered before it and to the subclasses."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs each call as it is (a base for modes that override a few)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _push_mode(mode: TorchFunctionMode) -> None:
    activate()
    _tls.modes = _tls.modes + (mode,)


def _pop_mode() -> TorchFunctionMode:
    if not _tls.modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = _tls.modes[-1]
    _tls.modes = _tls.modes[:-1]
    return mode


def _get_current_function_mode() -> TorchFunctionMode | None:
    return _tls.modes[-1] if _tls.modes else None


def _get_current_function_mode_stack() -> list:
    return list(_tls.modes)


def _len_torch_function_stack() -> int:
    return len(_tls.modes)


# -- which functions are overridable ----------------------------------------------------------

# Tensor's attributes that never dispatch: object protocol, pickling, array interfaces.
_NOT_METHODS = frozenset(("__new__", "__init_subclass__", "__hash__", "__reduce_ex__",
                          "__deepcopy__", "__array__", "__dlpack__", "__dlpack_device__",
                          "as_subclass"))
_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag")
# tritongrad's top-level op-table names that are not functions of tensors
_NOT_TOP = frozenset(("manual_seed", "seed", "initial_seed"))


def _namespaces() -> list:
    """``(module, names)`` of the overridable public functions, in the order wrappers are
    named after (a function in several gets the first's module and name)."""
    import tritongrad
    from tritongrad import fft, linalg, special
    from tritongrad.nn import _torch_functions
    from tritongrad.nn import functional as F

    from .ops import __all__ as ops_all
    top = [n for n in (*ops_all, *_torch_functions.__all__, "numel") if n not in _NOT_TOP]
    return [(tritongrad, top), (F, F.__all__), (linalg, linalg.__all__),
            (special, special.__all__), (fft, fft.__all__)]


def _tensor_methods() -> list:
    from .tensor import Tensor
    return [n for n, v in vars(Tensor).items() if isinstance(v, _types.FunctionType)
            and n not in _NOT_METHODS and (not n.startswith("_") or n.endswith("__"))]


def get_overridable_functions() -> dict:
    """The overridable functions by namespace (``tritongrad``, ``tritongrad.nn.functional``,
    ... and ``Tensor``), as they are now."""
    from .tensor import Tensor
    out = {module: [getattr(module, n) for n in names
                    if isinstance(getattr(module, n, None), _types.FunctionType)]
           for module, names in _namespaces()}
    out[Tensor] = [getattr(Tensor, n) for n in _tensor_methods()]
    out[Tensor] += [getattr(Tensor, n).__get__ for n in _PROPERTIES]
    return out


def get_ignored_functions() -> set:
    """Public functions and Tensor methods that cannot be overridden."""
    import tritongrad
    from .tensor import Tensor
    overridable = {id(f) for fs in get_overridable_functions().values() for f in fs}
    out = {f for n in tritongrad.__all__ if callable(f := getattr(tritongrad, n, None))
           and isinstance(f, _types.FunctionType) and id(f) not in overridable}
    return out | {v for n, v in vars(Tensor).items() if n in _NOT_METHODS
                  and isinstance(v, _types.FunctionType)}


def get_default_nowrap_functions() -> set:
    """Functions whose results Tensor's ``__torch_function__`` returns as they are."""
    return set(_nowrap())


@functools.cache
def _nowrap() -> frozenset:
    from .tensor import Tensor
    return frozenset((Tensor.grad.__get__, Tensor._base.__get__))


def is_tensor_method_or_property(func: Callable) -> bool:
    """Whether ``func`` is a Tensor method or a property getter (``Tensor.T.__get__``)."""
    from .tensor import Tensor
    if getattr(func, "__name__", None) == "__get__":
        return True
    name = getattr(func, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is func


def resolve_name(f) -> str | None:
    """The dotted name of an overridable function (``tritongrad.add``, ``Tensor.add``)."""
    if isinstance(f, _types.MethodWrapperType):  # a property's __get__
        return f"{f.__self__.__objclass__.__name__}.{f.__self__.__name__}.__get__" \
            if hasattr(f.__self__, "__objclass__") else None
    module, qual = getattr(f, "__module__", None), getattr(f, "__qualname__", None)
    return f"{module}.{qual}" if module and qual else None


# -- installing the wrappers (Note [Overrides installed on first use]) ------------------------

active = False
_installed: list = []  # (owner, name, original), to put back
_lock = threading.RLock()


def _wrap(fn: Callable, module: str, qualname: str) -> Callable:
    """``fn`` behind the dispatch check, named ``module.qualname`` (where pickle finds it).
    A handler is given the wrapper as ``func`` (``api``: a property's ``__get__`` instead)."""
    tls = _tls

    @functools.wraps(fn)
    def public(*args, **kwargs):
        if tls.off:
            return fn(*args, **kwargs)
        if tls.modes:
            return _dispatch(api[0], None if tls.sub_off else _overloaded_call(args, kwargs),
                             args, kwargs)
        if tls.sub_off:
            return fn(*args, **kwargs)
        found = _overloaded_call(args, kwargs)
        if found is None:
            return fn(*args, **kwargs)
        return _dispatch(api[0], found, args, kwargs)

    api = [public]
    public.__module__, public.__qualname__ = module, qualname
    public.__torch_function_wrapped__, public.api = fn, api
    return public


def activate(transient: bool = False) -> None:
    """Installs the dispatch check on every overridable function (Note [Overrides installed
    on first use]); does nothing when it is installed. ``transient``: asked for by an instance
    of a class that overrides only for a while (Note [Transient overrides])."""
    global active, _lasting
    if not transient:
        _lasting = True
    if active:
        return
    with _lock:
        if active:
            return
        from .tensor import Tensor
        made: dict = {}  # id(original) -> wrapper: one per function, whatever its names
        for module, names in _namespaces():
            for name in names:
                fn = getattr(module, name, None)
                if not isinstance(fn, _types.FunctionType):
                    continue
                w = made.get(id(fn))
                if w is None:
                    w = made[id(fn)] = _wrap(fn, module.__name__, name)
                _installed.append((module, name, fn))
                setattr(module, name, w)
        for name in _tensor_methods():
            fn = vars(Tensor)[name]
            _installed.append((Tensor, name, fn))
            setattr(Tensor, name, _wrap(fn, fn.__module__, f"Tensor.{name}"))
        for name in _PROPERTIES:
            prop = vars(Tensor)[name]
            getter = _wrap(prop.fget, prop.fget.__module__, f"Tensor.{name}")
            _installed.append((Tensor, name, prop))
            new = property(getter, prop.fset, prop.fdel, prop.__doc__)
            # (a handler is given the property's __get__, as PyTorch's ``Tensor.T.__get__``)
            getter.api[0] = new.__get__
            setattr(Tensor, name, new)
        active = True


def deactivate() -> None:
    """Puts the functions without the check back (for tests: each starts without it). Refused
    while a mode is entered."""
    global active, _lasting
    with _lock:
        if _tls.modes:
            raise RuntimeError("overrides: cannot deactivate while a TorchFunctionMode is active")
        while _installed:
            owner, name, original = _installed.pop()
            setattr(owner, name, original)
        active = False
        _lasting = False


def redispatch(public: Callable, args: tuple, kwargs: dict):
    """For a ``tg.*`` function that failed on its arguments (registry.guarded): when a
    tensor-like object among them overrides and nothing is installed yet, installs the
    check and calls the function again through it; else ``NotImplemented``."""
    if active or _tls.off or _tls.sub_off or _overloaded_call(args, kwargs) is None:
        return NotImplemented
    activate()
    import tritongrad
    name = getattr(public, "__name__", "")
    w = getattr(tritongrad, name, None)
    if getattr(w, "__torch_function_wrapped__", None) is not public:
        return NotImplemented
    return w(*args, **kwargs)
