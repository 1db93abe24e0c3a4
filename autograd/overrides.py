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
  TypeError, worded as PyTorch's builtins word it ("Multiple dispatch failed for ...") or, for
  what is a Python function in PyTorch (most of ``nn.functional``, ``einsum``, one's own
  through ``handle_torch_function``), as its Python ``handle_torch_function`` does ("no
  implementation found for ..."); a binary operator returns ``NotImplemented`` instead, so
  Python raises its own "unsupported operand type(s)". Handlers are given what PyTorch's are:
  an operator as the method it computes (``x + y`` as ``Tensor.add``, ``x[i]`` as
  ``Tensor.__getitem__``), ``kwargs=None`` for a builtin called without keywords, and an
  ``nn.functional`` function's trailing arguments by keyword with their defaults. Arguments
  are looked for in the positional and keyword arguments and one level into lists and tuples
  (``tg.cat([a, b])``). Exact Tensors and disabled subclasses never override, so ``types``
  holds only overriding types (PyTorch's Python functions also list ``Tensor`` there).
  Dispatch state is per thread: ``DisableTorchFunctionSubclass`` turns off subclass dispatch
  (modes still run), ``DisableTorchFunction`` both.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import types as _types
import warnings
from collections.abc import Callable, Iterable

# (PyTorch's torch.overrides.__all__: the modes and the other helpers are importable, not starred)
__all__ = ["enable_reentrant_dispatch", "get_ignored_functions", "get_overridable_functions",
           "get_testing_overrides", "handle_torch_function", "has_torch_function",
           "is_tensor_like", "is_tensor_method_or_property", "redispatch_function",
           "resolve_name", "wrap_torch_function"]


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The ``__torch_function__`` of a class that does not override (``nn.Parameter``):
    calls ``func`` as it is, never consulted by dispatch."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _Dispatch(threading.local):
    modes: tuple = ()  # the TorchFunctionMode stack, innermost last
    off = 0  # DisableTorchFunction depth: no modes, no subclasses
    sub_off = 0  # DisableTorchFunctionSubclass depth
    skip_one = False  # redispatch_function: the next has_torch_function answers False


_tls = _Dispatch()


class DisableTorchFunctionSubclass:
    """Inside ``with``: no call is handed to a subclass's ``__torch_function__`` in this
    thread (modes still see them)."""

    def __enter__(self) -> None:
        _tls.sub_off += 1

    def __exit__(self, *exc) -> None:
        _tls.sub_off -= 1


class DisableTorchFunction:
    """Inside ``with``: no ``__torch_function__`` dispatch at all in this thread, neither to
    modes nor to subclasses."""

    def __enter__(self) -> None:
        _tls.off += 1

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
    """Check for __torch_function__ implementations in the elements of an iterable or if a
    __torch_function__ mode is enabled. Considers exact ``Tensor`` s and ``Parameter`` s
    non-dispatchable. Use this to guard a call to :func:`handle_torch_function`; don't use it
    to test if something is Tensor-like, use :func:`is_tensor_like` instead.

    Unlike PyTorch's, it also looks one level into the lists and tuples among them (the
    custom operators' check, tritongrad/library.py, relies on it for ``Tensor[]`` arguments)."""
    if _tls.skip_one:  # (redispatch_function: this call runs its own body)
        _tls.skip_one = False
        return False
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


def _dispatch(public: Callable, overloaded: list | None, args: tuple, kwargs: dict,
              python_api: bool = False):
    """Hands ``public(*args, **kwargs)`` to the active mode and the overriding arguments in
    Note [Dispatch order]. ``python_api``: ``public`` is one of PyTorch's Python functions
    (``nn.functional``'s, one's own through :func:`handle_torch_function`), whose refusal
    PyTorch words differently from its builtins'."""
    overloaded = overloaded or []
    types = tuple(type(a) for a in overloaded)
    if not (kwargs or python_api):
        kwargs = None  # (a builtin called without keywords hands over None, as PyTorch's)
    mode = _tls.modes[-1] if _tls.modes and not _tls.off else None
    if mode is not None:
        with _pop_mode_temporarily():
            result = mode.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        result = arg.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result
    raise TypeError(_refusal(public, types, mode, python_api))


def _refusal(public: Callable, types: tuple, mode, python_api: bool) -> str:
    """PyTorch's message when every handler returned ``NotImplemented``: its Python
    ``handle_torch_function``'s for a Python function, its dispatcher's for a builtin."""
    if python_api:
        name = f"{getattr(public, '__module__', None)}.{getattr(public, '__name__', public)}"
        nor = f" nor in mode {mode!r}" if mode is not None else ""
        return (f"no implementation found for '{name}' on types that implement "
                f"__torch_function__: {list(types)}{nor}")
    name = resolve_name(public) or repr(public)
    handlers = f"\n  - mode object {mode!r}" if mode is not None else ""
    handlers += "".join(f"\n  - tensor subclass {t}" for t in types)
    return (f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers "
            f"returned NotImplemented:\n{handlers}\n")


def handle_torch_function(public_api: Callable, relevant_args: Iterable, *args, **kwargs):
    """Hands ``public_api(*args, **kwargs)`` to the ``__torch_function__`` of the active mode
    and of the overriding objects among ``relevant_args`` (a function's own dispatch, after
    :func:`has_torch_function` said yes)."""
    overloaded = None if _tls.sub_off else _overloaded(relevant_args)
    return _dispatch(public_api, overloaded, args, kwargs, python_api=True)


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
        raise RuntimeError("trying to pop from empty mode stack")
    mode = _tls.modes[-1]
    _tls.modes = _tls.modes[:-1]
    return mode


def _get_current_function_mode() -> TorchFunctionMode | None:
    return _tls.modes[-1] if _tls.modes else None


def _get_current_function_mode_stack() -> list:
    return list(_tls.modes)


def _len_torch_function_stack() -> int:
    return len(_tls.modes)


# (torch._C's names for the mode stack)
_push_on_torch_function_stack = _push_mode
_pop_torch_function_stack = _pop_mode


def _get_function_stack_at(i: int) -> TorchFunctionMode:
    return _tls.modes[i]


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """PyTorch's context manager for code inside ``__torch_dispatch__``, which tritongrad does
    not have: it raises PyTorch's error outside it, which is everywhere here."""
    raise RuntimeError("Accessing torch dispatch state outside of '__torch_dispatch__' is not "
                       "allowed.")
    yield  # (a generator, for contextmanager)


def redispatch_function(func: Callable, types: tuple, args: tuple = (),
                        kwargs: dict | None = None):
    """Skip one level of ``__torch_function__`` dispatch and call the function.

    This is primarily useful for **Tensor subclasses** that want to call into a function's
    implementation while still intercepting PyTorch operations inside that function: the
    calls ``func`` makes dispatch as usual (tritongrad's own functions make none)."""
    kwargs = kwargs or {}
    if isinstance(func, _types.MethodWrapperType) and isinstance(func.__self__, property):
        func = func.__self__.fget  # (a property's __get__: its getter, with the check)
    inner = getattr(func, "__torch_function_wrapped__", None)
    if inner is not None:
        return inner(*args, **kwargs)
    _tls.skip_one = True  # (one's own function: its has_torch_function check says no)
    try:
        return func(*args, **kwargs)
    finally:
        _tls.skip_one = False


# -- which functions are overridable ----------------------------------------------------------

# Tensor's attributes that never dispatch: object protocol, pickling, array interfaces, and
# ``__iter__`` (PyTorch's: its ``unbind`` dispatches instead, so a subclass's rows keep the type)
_NOT_METHODS = frozenset(("__new__", "__init_subclass__", "__hash__", "__reduce_ex__",
                          "__deepcopy__", "__array__", "__dlpack__", "__dlpack_device__",
                          "as_subclass", "__iter__"))
_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag")
# tritongrad's top-level op-table names that are not functions of tensors (``from_numpy``:
# PyTorch's modes do not see it), and functions of other things that modes do see
_NOT_TOP = frozenset(("manual_seed", "seed", "initial_seed", "from_numpy", "broadcast_shapes"))
_TOP_EXTRA = ("numel", "result_type", "can_cast", "promote_types")
# Functions whose tensor arguments never dispatch, but which modes see: ``tensor(data)``
# copies ``data`` as a plain tensor in PyTorch, whatever its class.
_MODE_ONLY = frozenset(("tensor",))
# nn.functional's functions that are builtins in PyTorch (the rest are Python functions, whose
# refusal is worded as handle_torch_function's: Note [Dispatch order])
_F_BUILTINS = frozenset((
    "adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear", "conv1d",
    "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_similarity", "gelu", "hardshrink", "linear", "logsigmoid", "one_hot",
    "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "prelu",
    "scaled_dot_product_attention", "softplus", "softshrink", "threshold_", "celu_", "elu_",
    "hardtanh_", "leaky_relu_", "relu_", "rrelu_", "selu_", "channel_shuffle",
    "native_channel_shuffle", "pdist"))
# Top-level functions that are Python functions in PyTorch (torch.functional and torch's own)
_TOP_PYTHON = frozenset((
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_tensors",
    "cartesian_prod", "cdist", "chain_matmul", "einsum", "lu", "meshgrid", "norm", "split",
    "stft", "istft", "tensordot", "unique", "unique_consecutive", "unravel_index", "lobpcg",
    "pca_lowrank", "svd_lowrank"))
# What PyTorch's get_ignored_functions lists among the functions wrapped here: they still
# dispatch (as PyTorch's do), but are listed as ignored, not overridable
_LISTED_IGNORED = {
    "tritongrad": frozenset((
        "as_strided", "triu_indices", "tril_indices", "tensor", "as_tensor", "zeros", "ones",
        "empty", "full", "empty_strided", "rand", "randn", "randint", "rand_like", "randn_like",
        "arange", "linspace", "eye", "randperm", "logspace", "vander", "asarray",
        "scalar_tensor", "range", "empty_permuted", "frombuffer", "from_file", "fill", "normal",
        "randint_like", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
        "kaiser_window", "get_rng_state", "set_rng_state", "broadcast_shapes", "typename",
        "is_storage", "from_numpy")),
    "tritongrad.nn.functional": frozenset((
        "sigmoid", "tanh", "hardsigmoid", "hardswish", "upsample", "upsample_bilinear",
        "upsample_nearest", "grouped_mm")),
    "tritongrad.fft": frozenset(("fftfreq", "rfftfreq")),
    "Tensor": frozenset((
        "stride", "__iter__", "unflatten", "new_zeros", "new_ones", "new_empty",
        "new_empty_strided", "new_full", "new_tensor", "new", "solve", "lstsq", "symeig", "eig",
        "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc")),
}
# Tensor's operators that PyTorch hands to handlers as the method they compute (``x + y`` as
# ``Tensor.add``): a handler that overrides the method overrides the operator too
_OPERATOR_API = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_",
    "__truediv__": "div", "__itruediv__": "div_", "__ifloordiv__": "floor_divide_",
    "__mod__": "remainder", "__imod__": "remainder_", "__matmul__": "matmul",
    "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor",
    "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
    "__neg__": "neg", "__pos__": "positive", "__abs__": "abs"}
# Binary operators: when dispatch fails with a TypeError they return NotImplemented, so that
# Python tries the other operand and then raises its own "unsupported operand type(s)", as
# PyTorch's. (Not ``==`` and ``!=``, for which Python would answer by identity instead.)
_BINARY = frozenset(
    f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "div", "floordiv", "mod", "pow",
                              "matmul", "and", "or", "xor", "lshift", "rshift")
    for p in ("", "r", "i")) | {"__lt__", "__le__", "__gt__", "__ge__"}


def _namespaces() -> list:
    """``(module, names)`` of the overridable public functions, in the order wrappers are
    named after (a function in several gets the first's module and name)."""
    import tritongrad
    from tritongrad import fft, linalg, special
    from tritongrad.nn import _torch_functions
    from tritongrad.nn import functional as F

    from .ops import __all__ as ops_all
    top = [n for n in (*ops_all, *_torch_functions.__all__, *_TOP_EXTRA) if n not in _NOT_TOP]
    return [(tritongrad, top), (F, F.__all__), (linalg, linalg.__all__),
            (special, special.__all__), (fft, fft.__all__)]


def _tensor_methods() -> list:
    from .tensor import Tensor
    return [n for n, v in vars(Tensor).items() if isinstance(v, _types.FunctionType)
            and n not in _NOT_METHODS and (not n.startswith("_") or n.endswith("__"))]


def _listed(module, names) -> tuple[list, list]:
    """``module``'s functions among ``names``: (overridable, listed as ignored)."""
    skip = _LISTED_IGNORED.get(module.__name__, frozenset())  # (Tensor's: "Tensor")
    fns = [(n, getattr(module, n, None)) for n in names]
    fns = [(n, f) for n, f in fns if isinstance(f, _types.FunctionType)]
    return [f for n, f in fns if n not in skip], [f for n, f in fns if n in skip]


def get_overridable_functions() -> dict:
    """List functions that are overridable via __torch_function__

    Returns:
        Dict[Any, List[Callable]]: A dictionary that maps namespaces that contain overridable
        functions to functions in that namespace that can be overridden.
    """
    from .tensor import Tensor
    out = {module: _listed(module, names)[0] for module, names in _namespaces()}
    out[Tensor] = _listed(Tensor, _tensor_methods())[0]
    out[Tensor] += [getattr(Tensor, n).__get__ for n in _PROPERTIES]
    return out


def get_ignored_functions() -> set:
    """Return public functions that cannot be overridden by ``__torch_function__``.

    Returns:
        Set[Callable]: A tuple of functions that are publicly available in the torch API but
        cannot be overridden with ``__torch_function__``. Mostly this is because none of the
        arguments of these functions are tensors or tensor-likes.
    """
    import tritongrad
    from .tensor import Tensor
    overridable = {id(f) for fs in get_overridable_functions().values() for f in fs}
    out = {f for n in tritongrad.__all__ if callable(f := getattr(tritongrad, n, None))
           and isinstance(f, _types.FunctionType) and id(f) not in overridable}
    for module, names in _namespaces():
        out.update(_listed(module, names)[1])
    out.update(_listed(Tensor, _tensor_methods())[1])
    return out | {v for n, v in vars(Tensor).items() if n in _NOT_METHODS
                  and isinstance(v, _types.FunctionType)} | {Tensor.__new__}


def get_testing_overrides() -> dict:
    """Return a dict containing dummy overrides for all overridable functions

    Returns:
        Dict[Callable, Callable]: A dictionary that maps overridable functions in the PyTorch
        API to lambda functions that have the same signature as the real function and
        unconditionally return -1. These lambda functions are useful for testing API coverage
        for a type that defines ``__torch_function__``.
    """
    import inspect
    out = {}
    for fns in get_overridable_functions().values():
        for f in fns:
            out[f] = dummy = lambda *args, **kwargs: -1
            try:
                dummy.__signature__ = inspect.signature(f)
            except (TypeError, ValueError):  # (a property's __get__)
                pass
    return out


def get_default_nowrap_functions() -> set:
    """Functions whose results Tensor's ``__torch_function__`` returns as they are."""
    return set(_nowrap())


@functools.cache
def _nowrap() -> frozenset:
    from .tensor import Tensor
    return frozenset((Tensor.grad.__get__, Tensor._base.__get__))


def is_tensor_method_or_property(func: Callable) -> bool:
    """Returns True if the function passed in is a handler for a method or property belonging
    to ``torch.Tensor``, as passed into ``__torch_function__``.

    .. note::
       For properties, their ``__get__`` method must be passed in.
    """
    from .tensor import Tensor
    name = getattr(func, "__name__", None)
    return name == "__get__" or name is not None and getattr(Tensor, name, None) is func


def resolve_name(f) -> str | None:
    """Get a human readable string name for a function passed to __torch_function__

    Arguments:
        f (Callable): Function to resolve the name of.

    Returns:
        str: Name of the function; if eval'ed it should give back the input function, or
        None for a function that is not overridable (``tritongrad.Tensor.add``,
        ``tritongrad.Tensor.T.__get__``, ``tritongrad.nn.functional.relu``).
    """
    from .tensor import Tensor
    if isinstance(f, _types.MethodWrapperType):  # a property's __get__
        if f.__name__ != "__get__":
            return None
        name = next((n for n, v in vars(Tensor).items() if v is f.__self__), None)
        return f"tritongrad.Tensor.{name}.__get__" if name else None
    name = getattr(f, "__name__", None)
    if not isinstance(name, str):
        return None
    if getattr(Tensor, name, None) is f:
        return f"tritongrad.Tensor.{name}"
    if getattr(f, "__torch_function_wrapped__", None) is not None:
        return f"{f.__module__}.{f.__qualname__}"
    # (before the check is installed: the functions themselves, whatever their own names)
    methods = [f"tritongrad.Tensor.{n}" for n in _tensor_methods() if vars(Tensor)[n] is f]
    return next(iter(methods), None) or next(
        (f"{module.__name__}.{n}" for module, names in _namespaces() for n in names
         if getattr(module, n, None) is f), None)


# -- installing the wrappers (Note [Overrides installed on first use]) ------------------------

active = False
_installed: list = []  # (owner, name, original), to put back
_lock = threading.RLock()


def _dispatch_python(public: Callable, overloaded: list | None, args: tuple, kwargs: dict):
    """:func:`_dispatch` for a function that is a Python function in PyTorch: an
    ``nn.functional`` one hands over its arguments as PyTorch's does (the leading ones
    positionally, the rest by keyword with their defaults: ``softmax(x, 0)`` as ``(x,)``,
    ``{"dim": 0, "_stacklevel": 3, "dtype": None}``), from the table fx records them by."""
    from tritongrad.fx.proxy import FUNCTIONAL_ARGS, _functional_record
    if getattr(public, "__name__", None) in FUNCTIONAL_ARGS:
        args, kwargs = _functional_record(public, args, kwargs)
    return _dispatch(public, overloaded, args, kwargs, python_api=True)


def _dispatch_operator(public: Callable, overloaded: list | None, args: tuple, kwargs: dict):
    """:func:`_dispatch` for a binary operator: ``NotImplemented`` where it raises TypeError
    (every handler refused), so that Python tries the other operand's reflected operator and
    then raises its own "unsupported operand type(s)", as PyTorch's operators do."""
    try:
        return _dispatch(public, overloaded, args, kwargs)
    except TypeError:
        return NotImplemented


_DISPATCH = {"builtin": _dispatch, "python": _dispatch_python, "operator": _dispatch_operator}


def _wrap(fn: Callable, module: str, qualname: str, kind: str = "builtin") -> Callable:
    """``fn`` behind the dispatch check, named ``module.qualname`` (where pickle finds it).
    A handler is given the wrapper as ``func`` (``api``: a property's ``__get__``, or the
    method an operator computes, instead). ``kind``: how a refusal is reported (a key of
    ``_DISPATCH``), or ``"mode"`` for a function that only modes see (``_MODE_ONLY``)."""
    tls = _tls
    dispatch = _DISPATCH.get(kind, _dispatch)

    @functools.wraps(fn)
    def public(*args, **kwargs):
        if tls.off:
            return fn(*args, **kwargs)
        if tls.modes:
            return dispatch(api[0], None if tls.sub_off else _overloaded_call(args, kwargs),
                            args, kwargs)
        if tls.sub_off:
            return fn(*args, **kwargs)
        found = _overloaded_call(args, kwargs)
        if found is None:
            return fn(*args, **kwargs)
        return dispatch(api[0], found, args, kwargs)

    @functools.wraps(fn)
    def mode_only(*args, **kwargs):
        if tls.modes and not tls.off:
            return _dispatch(api[0], None, args, kwargs)
        return fn(*args, **kwargs)

    if kind == "mode":
        public = mode_only
    api = [public]
    public.__module__, public.__qualname__ = module, qualname
    public.__torch_function_wrapped__, public.api = fn, api
    return public


def _kind(module_name: str, name: str) -> str:
    """The ``kind`` of :func:`_wrap` for public function ``module_name.name``."""
    if module_name == "tritongrad":
        return "mode" if name in _MODE_ONLY else "python" if name in _TOP_PYTHON else "builtin"
    if module_name == "tritongrad.nn.functional":
        return "builtin" if name in _F_BUILTINS else "python"
    return "builtin"


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
                    w = made[id(fn)] = _wrap(fn, module.__name__, name,
                                             _kind(module.__name__, name))
                    w.__name__ = name  # (``result_type``, not its helper's name)
                _installed.append((module, name, fn))
                setattr(module, name, w)
        for name in _tensor_methods():
            fn = vars(Tensor)[name]
            _installed.append((Tensor, name, fn))
            w = _wrap(fn, fn.__module__, f"Tensor.{name}",
                      "operator" if name in _BINARY else "builtin")
            w.__name__ = name  # (``getitem`` is ``__getitem__`` here, as resolve_name finds it)
            setattr(Tensor, name, w)
        for name, method in _OPERATOR_API.items():
            op, target = vars(Tensor).get(name), vars(Tensor).get(method)
            if hasattr(op, "api") and hasattr(target, "api"):
                op.api[0] = target
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
