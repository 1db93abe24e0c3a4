"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a thread-local context manager that restores the previous mode on exit (also on an
exception) and doubles as a decorator, on plain functions and on generator functions (where the
mode applies while the generator runs, not while the caller holds a yielded value).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import warnings

from .state import set_mode, state

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "is_inference", "set_multithreading_enabled",
           "is_multithreading_enabled", "enforce_grad_layout_policy",
           "_unsafe_preserve_version_counter"]


# Note [Grad mode in inference mode]
#   ``state.grad_enabled`` is what ops read: whether they record a graph. In inference mode
#   nothing is recorded whatever the grad mode, as in PyTorch (whose inference mode takes
#   autograd out of dispatch): ``enable_grad()`` inside ``inference_mode()`` turns grad mode
#   on (``is_grad_enabled()`` says True) but ops still record nothing. So in inference mode the
#   grad mode the user sets lives here, and ``state.grad_enabled`` stays False; a block that
#   began in inference mode restores it on exit. Outside inference mode this is unused.
class _InferenceGradMode(threading.local):
    value = False


_inference_grad = _InferenceGradMode()


def _set_grad_mode(mode: bool) -> None:
    """Sets this thread's grad mode (in inference mode: the reported one only)."""
    if state.inference:
        _inference_grad.value = mode
    else:
        state.grad_enabled = mode


def is_grad_enabled() -> bool:
    """Returns True if grad mode is currently enabled (in this thread)."""
    st = state
    if st.inference:
        return _inference_grad.value
    return st.grad_enabled


def is_inference(input) -> bool:
    """Returns True if ``input`` is an inference tensor (created in inference mode)."""
    from .tensor import Tensor
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_inference()


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` in this thread."""
    return state.inference


def _current() -> tuple:
    """What a grad-mode block restores on exit: (grad_enabled, inference[, the grad mode
    reported in inference mode]) (Note [Grad mode in inference mode])."""
    st = state
    if st.inference:
        return st.grad_enabled, True, _inference_grad.value
    return st.grad_enabled, False


def _restore(prev: tuple) -> None:
    st = state
    st.grad_enabled = prev[0]
    if st.inference != prev[1]:  # (set_mode's count and lock only when it changed)
        set_mode("inference", prev[1])
    if len(prev) > 2:
        _inference_grad.value = prev[2]


# Note [Grad mode blocks]: an optimizer's step enters ``no_grad`` once per parameter, and a
# with-block of it cost ~0.95 us: the Python ``__init__`` beside ``__new__``, ``super()``, the
# ``_set`` call, and ``set_mode`` (a getattr, a setattr and a compare) on every exit to restore
# an inference mode that almost never changed inside. ``no_grad`` and ``enable_grad`` now make
# their instance in ``__new__`` alone and set the mode in their own ``__enter__``, and the exit
# calls ``set_mode`` only when the inference mode differs from the entry's: ~0.65 us.
class _Mode:
    """Base for the grad-mode context managers: subclasses say what ``_set`` does."""

    def _set(self) -> tuple:
        raise NotImplementedError

    def clone(self) -> "_Mode":
        return self.__class__()

    def __enter__(self) -> None:  # (``with no_grad() as v`` binds None, as PyTorch)
        self._prev = _current()
        self._set()

    def __exit__(self, exc_type, exc, tb) -> bool:
        st, prev = state, self._prev  # (_restore inline: Note [Grad mode blocks])
        st.grad_enabled = prev[0]
        if st.inference != prev[1]:
            set_mode("inference", prev[1])
        if len(prev) > 2:
            _inference_grad.value = prev[2]
        return False

    def __call__(self, fn):
        if inspect.isclass(fn):
            # PyTorch still allows this, deprecated: the class becomes a function that
            # constructs it under the mode (only __init__ runs in it, not the methods)
            warnings.warn("Decorating classes is deprecated and will be disabled in future "
                          "versions. You should only decorate functions or methods. To "
                          "preserve the current behavior of class decoration, you can "
                          "directly decorate the `__init__` method and nothing else.",
                          FutureWarning, stacklevel=2)
            cls = fn

            def fn(*args, **kwargs):
                return cls(*args, **kwargs)
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    request = gen.send(None)
                while True:
                    try:
                        response = yield request
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:  # forwarded into the generator, in our mode
                        with self.clone():
                            request = gen.throw(e)
                    else:
                        with self.clone():
                            request = gen.send(response)
            except StopIteration as e:
                return e.value
        return wrapper


# PyTorch's name of the decorator-and-context-manager base (torch.utils._contextlib), which
# code defining its own grad-mode-like blocks subclasses: ``__enter__``/``__exit__`` to
# override, ``clone`` making a fresh instance for each decorated call.
_DecoratorContextManager = _Mode


class _FixedMode(_Mode):
    """Base of ``no_grad`` and ``enable_grad``: grad mode set to ``_value`` inside."""

    _value: bool

    # (no __init__: ``__new__`` takes the argument; Note [Grad mode blocks])
    def __new__(cls, orig_func=None):
        self = object.__new__(cls)
        return self if orig_func is None else self(orig_func)  # bare @no_grad, as newer PyTorch

    def __enter__(self) -> None:  # (_Mode's, with _set inline)
        st = state
        if st.inference:  # (Note [Grad mode in inference mode])
            self._prev = (st.grad_enabled, True, _inference_grad.value)
            _inference_grad.value = self._value
        else:
            self._prev = (st.grad_enabled, False)
            st.grad_enabled = self._value

    def _set(self):
        _set_grad_mode(self._value)


class no_grad(_FixedMode):
    """Context manager that disables gradient calculation.

    Results of every computation inside have ``requires_grad=False``, even when the inputs
    require grad. Thread local. Also a decorator (instantiate it: ``@no_grad()``).

    Example:
        >>> x = tg.tensor([1.], requires_grad=True)
        >>> with tg.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    _value = False


class enable_grad(_FixedMode):
    """Context manager that enables gradient calculation inside ``no_grad``/``set_grad_enabled``.

    Thread local; also a decorator (``@enable_grad()``). It does not leave inference mode.
    """

    _value = True


class set_grad_enabled(_Mode):
    """Sets gradient calculation on or off, as a function or as a context manager.

    Called as a function, the mode changes at once and stays; used with ``with``, the previous
    mode is restored on exit. Thread local.

    Example:
        >>> tg.set_grad_enabled(False)
        >>> (x * 2).requires_grad
        False
        >>> _ = tg.set_grad_enabled(True)
    """

    def __init__(self, mode: bool):
        _check_bool("set_grad_enabled", mode)
        self.mode = self._mode = mode
        self.prev = is_grad_enabled()  # (PyTorch's attributes; ``_prev`` is what exit restores)
        self._prev = _current()
        _set_grad_mode(mode)

    def __enter__(self) -> None:
        # Set again, as PyTorch does: the mode may have changed since __init__ (``m =
        # set_grad_enabled(False)`` then ``set_grad_enabled(True)``, or a second ``with m``),
        # and the block still runs with ``mode``; exit restores the mode before __init__.
        _set_grad_mode(self._mode)

    def __repr__(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self._mode})"

    __str__ = __repr__

    def clone(self) -> "set_grad_enabled":
        return set_grad_enabled(self._mode)

    def __call__(self, fn):
        _restore(self._prev)  # decorating must not change the mode now
        return super().__call__(fn)

    def _set(self):
        _set_grad_mode(self._mode)


class inference_mode(_Mode):
    """Context manager for inference: no graph is recorded and tensors made inside are
    inference tensors, which cannot later be saved for backward or modified in place outside
    inference mode. ``inference_mode(False)`` leaves inference mode inside an enabled one (and,
    as PyTorch's C++ guard does, turns grad mode on). Thread local; a decorator.
    """

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode) and not isinstance(mode, bool):  # bare @inference_mode
            self.mode = self._mode = True
            return self(mode)
        return self

    def __init__(self, mode: bool = True):
        if not callable(mode) or isinstance(mode, bool):
            if not isinstance(mode, bool):  # (PyTorch fails on it too, less clearly)
                raise TypeError(f"inference_mode(): argument 'mode' must be bool, not "
                                f"{type(mode).__name__}")
            self.mode = self._mode = mode  # (``mode``: PyTorch's attribute)

    def clone(self) -> "inference_mode":
        return inference_mode(self._mode)

    def __enter__(self) -> None:
        super().__enter__()
        # No forward gradients either, as in PyTorch (whose inference mode leaves out the
        # autograd dispatch that computes them): the active forward AD level is hidden inside.
        from .dispatch import dual_levels
        self._duals = None
        if self._mode and dual_levels:
            self._duals = dual_levels[:]
            dual_levels.clear()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._duals is not None:
            from .dispatch import dual_levels
            dual_levels[:] = self._duals
        return super().__exit__(exc_type, exc, tb)

    def _set(self):
        state.grad_enabled = not self._mode
        set_mode("inference", self._mode)
        if self._mode:  # (entering it turns grad mode off: Note [Grad mode in inference mode])
            _inference_grad.value = False


class enforce_grad_layout_policy(contextlib.ContextDecorator):
    """Controls the gradient layout contract's enforcement, as a function or as a context
    manager (thread local). With ``enable=False`` a stealable gradient whose layout does not
    match its parameter's becomes ``.grad`` as it is (no copy into the parameter's strides),
    and the "grad and param do not obey the gradient layout contract" warning is not given; a
    gradient that must be copied still gets the contract's layout (engine.accumulate_grad).
    """

    def __init__(self, enable: bool = True):
        _check_bool("set_grad_layout_enforcement_enabled", enable)
        self.enable, self.prev = enable, state.grad_layout_enforced
        state.grad_layout_enforced = enable

    def __enter__(self) -> None:
        state.grad_layout_enforced = self.enable

    def __exit__(self, *exc) -> None:
        state.grad_layout_enforced = self.prev


def _check_bool(fn: str, mode) -> None:
    """The TypeError of PyTorch's binding ``fn`` for a ``mode`` that is not a bool."""
    if type(mode) is not bool:  # (PyTorch's bindings take a bool only, not 0 or "x")
        raise TypeError(f"{fn}(): argument 'enabled' (position 1) must be bool, not "
                        f"{type(mode).__name__}")


def _set_grad_enabled(mode: bool) -> None:
    """``torch._C._set_grad_enabled``: sets this thread's grad mode, with no block to end."""
    _check_bool("set_grad_enabled", mode)
    _set_grad_mode(mode)


class _GlobalFlag(_Mode):
    """Base of the process-wide switches that are both a function and a context manager, as
    PyTorch's: the flag changes when called, a ``with`` block restores the previous value on
    exit, and a decorated function runs with ``mode``. Subclasses name ``_flags``' key."""

    _key: str
    _binding: str  # (the name PyTorch's binding gives in its error)

    def __init__(self, mode: bool) -> None:
        _check_bool(self._binding, mode)
        self.prev = _flags[self._key]
        self.mode = mode
        _flags[self._key] = mode

    def clone(self) -> "_GlobalFlag":
        return self.__class__(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> bool:
        _flags[self._key] = self.prev
        return False


_flags = {"multithreading": True, "view_replay": False}


class set_multithreading_enabled(_GlobalFlag):  # noqa: N801 - PyTorch's name
    """Context manager and function: whether backward may run on the engine's device threads.
    tritongrad's engine runs every backward on the calling thread (on CUDA it orders the
    work with streams, Note [Backward streams]), so the flag changes nothing but what
    ``is_multithreading_enabled()`` reports, which is what code written for PyTorch checks."""

    _key, _binding = "multithreading", "set_multithreading_enabled"


class _force_original_view_tracking(_GlobalFlag):  # noqa: N801 - PyTorch's name
    """Context manager and function: whether views made by ops that are not view ops are
    rebuilt with the original view function rather than ``as_strided`` (PyTorch's view
    replay). tritongrad does not read the flag: it is recorded and reported
    (``_is_view_replay_enabled``) for code that sets it."""

    _key, _binding = "view_replay", "set_view_replay_enabled"


def is_multithreading_enabled() -> bool:
    """Whether multithreaded backward is enabled (``set_multithreading_enabled``)."""
    return _flags["multithreading"]


def _set_multithreading_enabled(mode: bool) -> None:
    """``torch._C._set_multithreading_enabled``."""
    _check_bool("set_multithreading_enabled", mode)
    _flags["multithreading"] = mode


def _is_view_replay_enabled() -> bool:
    """``torch._C._is_view_replay_enabled`` (``_force_original_view_tracking``)."""
    return _flags["view_replay"]


def _set_view_replay_enabled(mode: bool) -> None:
    """``torch._C._set_view_replay_enabled``."""
    _check_bool("set_view_replay_enabled", mode)
    _flags["view_replay"] = mode


class _unsafe_preserve_version_counter(_Mode):
    """Hides in-place modifications of ``tensors`` made inside the block from autograd: their
    version counters are set back on exit to what they were on entry (PyTorch's "DO NOT USE
    THIS UNLESS YOU KNOW EXACTLY WHAT YOU'RE DOING": a saved tensor refilled this way is not
    checked any more). Views share their base's counter. Also a decorator.

    Args:
        tensors: a Tensor or a tuple of Tensors.
    """

    def __init__(self, tensors):
        from .tensor import Tensor
        self.tensors = (tensors,) if isinstance(tensors, Tensor) else tensors
        if not isinstance(self.tensors, tuple):
            raise AssertionError("Expected tensors to be a tuple")
        self.prev_versions = tuple(t._version for t in self.tensors)

    def clone(self) -> "_unsafe_preserve_version_counter":
        return _unsafe_preserve_version_counter(self.tensors)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> bool:
        for t, version in zip(self.tensors, self.prev_versions):
            t._vc[0] = version
        return False
