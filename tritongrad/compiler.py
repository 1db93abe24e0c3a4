"""``tritongrad.compile`` and ``tritongrad.compiler``: PyTorch's compile entry points, run
eagerly.

tritongrad has no graph compiler: ``tg.compile(model)`` returns a module (or function) that
runs the original eagerly, op by op, with the same results and gradients: what PyTorch's
``torch.compile(model, backend="eager")`` does. Programs written for ``torch.compile`` run
unchanged; they get tritongrad's eager speed (on CUDA, ``tg.cuda.graphs`` and
``make_graphed_callables`` are the way to cut launch overhead). Any backend other than
``"eager"`` warns once per process that it runs eagerly, so no request for a compiler is
silently dropped.

As in PyTorch, a compiled module is an ``OptimizedModule`` holding the original as
``_orig_mod``: attributes are read through to it, its parameters are the original's, and its
``state_dict`` keys carry the ``_orig_mod.`` prefix.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable

from .nn.module import Module

__all__ = ["OptimizedModule", "allow_in_graph", "assume_constant_result", "compile",
           "cudagraph_mark_step_begin", "disable", "get_default_backend", "is_compiling",
           "is_dynamo_compiling", "is_exporting", "keep_portable_guards_unsafe",
           "keep_tensor_guards_unsafe", "list_backends", "load_cache_artifacts",
           "load_compiled_function", "nested_compile_region", "reset", "save_cache_artifacts",
           "set_default_backend", "set_enable_guard_collectives", "set_stance",
           "skip_all_guards_unsafe", "skip_guard_on_all_nn_modules_unsafe",
           "skip_guard_on_globals_unsafe", "skip_guard_on_inbuilt_nn_modules_unsafe",
           "substitute_in_graph", "wrap_numpy"]

_BACKENDS = ("eager",)
_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
          "max-autotune")
_warned = False
_default_backend: list = ["inductor"]  # set_default_backend's (compile's backend=None)


class OptimizedModule(Module):
    """A module returned by ``compile``: calls the original module (``_orig_mod``) eagerly."""

    def __init__(self, mod: Module):
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._orig_mod, name)


def _eager_notice(backend) -> None:
    global _warned
    if backend != "eager" and not _warned:
        _warned = True
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", backend)
        warnings.warn(f"tritongrad.compile: backend {name!r} is not available (tritongrad has "
                      f"no graph compiler); running eagerly, as backend='eager'", stacklevel=3)


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic=None,
            backend=None, mode: str | None = None, options: dict | None = None,
            name: str | None = None, disable: bool = False, recompile_limit: int | None = None,
            isolate_recompiles: bool = False, shapes_spec=None):
    """Optimizes the given model or function for execution: in tritongrad, runs it eagerly
    (see the module docstring). With no ``model``, returns a decorator. An ``nn.Module``
    comes back as an ``OptimizedModule`` wrapping it; a function as a wrapper calling it.

    Args:
        model: the module or function (None: return a decorator).
        fullgraph, dynamic, options, name, recompile_limit, isolate_recompiles, shapes_spec:
            accepted; eager execution has no graph to break or recompile.
        backend: ``"eager"``, or any other name or callable, which warns once and runs
            eagerly; None: ``get_default_backend()`` (``"inductor"`` unless set).
        mode: one of PyTorch's modes (``"default"``, ``"lite"``, ``"reduce-overhead"``,
            ``"max-autotune-no-cudagraphs"``, ``"max-autotune"``) or None.
        disable: return ``model`` itself.
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic,
                                 backend=backend, mode=mode, options=options, name=name,
                                 disable=disable)
    if not callable(model):
        msg = f"A callable function is expected, but {type(model)} is provided."
        raise AssertionError(msg)  # noqa: TRY004 - PyTorch's type
    if disable:
        return model
    _eager_notice(get_default_backend() if backend is None else backend)
    if isinstance(model, Module):
        return OptimizedModule(model)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return model(*args, **kwargs)

    compiled._torchdynamo_orig_callable = model
    return compiled


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The compile backends available: ``["eager"]``."""
    return list(_BACKENDS)


def is_compiling() -> bool:
    """Whether code is being traced by a compiler: never, in tritongrad."""
    return False


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Marks ``fn`` to be run without compilation (everything is, in tritongrad): returns
    ``fn``, or a decorator when ``fn`` is None."""
    if fn is None:
        return lambda f: f
    return fn


def reset() -> None:
    """Clears compilation caches: there are none."""


# -- the rest of torch.compiler: what each means with no compiler ---------------------------

def is_exporting() -> bool:
    """Whether ``torch.export`` is tracing: never, in tritongrad."""
    return False


def set_default_backend(backend) -> None:
    """The backend ``compile`` uses when given none (None: back to ``"inductor"``)."""
    _default_backend[0] = "inductor" if backend is None else backend


def get_default_backend():
    """The backend ``compile`` uses when given none."""
    return _default_backend[0]


class set_stance(contextlib.ContextDecorator):
    """Sets the compiler's stance (``"default"``, ``"force_eager"``, ``"eager_on_recompile"``,
    ``"fail_on_recompile"``, ...): as a call, a context manager or a decorator. Everything
    runs eagerly in tritongrad whatever the stance; the stance is kept for code that reads
    it back."""

    current = "default"

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend=None):
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        self.stance, self.prev = stance, set_stance.current
        set_stance.current = stance

    def __enter__(self):
        set_stance.current = self.stance
        return self

    def __exit__(self, *exc) -> None:
        set_stance.current = self.prev


def _returns_fn(fn):
    """(The decorators below mark a function for the compiler's tracer; without one the
    function itself is what runs.)"""
    return fn


allow_in_graph = assume_constant_result = _returns_fn
allow_in_graph.__doc__ = "Marks ``fn`` as one node of a compiled graph: returns ``fn``."


def substitute_in_graph(original_fn: Callable, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False):
    """A decorator registering a traceable replacement of ``original_fn`` for the compiler;
    what it returns calls ``original_fn``, as PyTorch's does outside compilation."""
    def register(polyfill: Callable) -> Callable:
        @functools.wraps(polyfill)
        def wrapped(*args, **kwargs):
            return original_fn(*args, **kwargs)
        return wrapped
    return register


def nested_compile_region(fn=None, *, options=None, max_reuse_entries: int = 8,
                          reuse_hash_fn=None):
    """Marks a region the compiler compiles once and reuses: returns ``fn`` (or a decorator)."""
    return _returns_fn if fn is None else fn


def cudagraph_mark_step_begin() -> None:
    """Marks the start of an iteration for compiled CUDA graph trees: there are none here
    (``tg.cuda.graphs`` are captured and replayed explicitly)."""


def wrap_numpy(fn: Callable) -> Callable:
    """Turns a function of NumPy arrays into one of Tensors: Tensor arguments reach ``fn`` as
    arrays (``Tensor.numpy()``: CPU tensors that do not require grad, as PyTorch's eager
    wrapper), and the arrays it returns come back as Tensors."""
    import numpy as np

    from . import as_tensor
    from .autograd import _pytree as pytree
    from .autograd.tensor import Tensor

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        args, kwargs = pytree.tree_map_only(Tensor, lambda t: t.numpy(), (args, kwargs))
        out = fn(*args, **kwargs)
        return pytree.tree_map_only(np.ndarray, as_tensor, out)
    return wrapped


def save_cache_artifacts() -> None:
    """The compiler's cache artifacts to carry to another process: None, there are none."""


def load_cache_artifacts(serialized_artifacts: bytes) -> None:
    """Loads compiler cache artifacts: nothing to load into, returns None."""


def set_enable_guard_collectives(enabled: bool) -> bool:
    """Guard collectives sync recompilation across ranks: there are no guards; returns False
    (no hook was set before)."""
    return False


def load_compiled_function(file, *, f_globals=None, external_data=None):
    """Not available: tritongrad compiles nothing, so there is no compiled artifact to load."""
    raise NotImplementedError("torch.compiler.load_compiled_function: tritongrad has no "
                              "compiler, so it cannot load an AOT-compiled function")


# Guard filters (``compile(options={"guard_filter_fn": ...})``): one keep/skip flag per guard
# entry, PyTorch's rules on its entries' fields; tritongrad makes no guards to filter.
def keep_portable_guards_unsafe(guard_entries) -> list[bool]:
    return [g.guard_type in ("GLOBAL_STATE", "SHAPE_ENV")
            or (g.guard_type == "TENSOR_MATCH" and not g.is_global) for g in guard_entries]


def skip_guard_on_inbuilt_nn_modules_unsafe(guard_entries) -> list[bool]:
    return [not g.orig_guard.source.is_unspecialized_builtin_nn_module() for g in guard_entries]


def skip_guard_on_all_nn_modules_unsafe(guard_entries) -> list[bool]:
    return [not g.orig_guard.source.is_unspecialized_nn_module() for g in guard_entries]


def keep_tensor_guards_unsafe(guard_entries, keep_parameters: bool = False) -> list[bool]:
    from .nn.parameter import Parameter
    return [g.guard_type == "TENSOR_MATCH"
            and (keep_parameters or not isinstance(g.value, Parameter)) for g in guard_entries]


def skip_guard_on_globals_unsafe(guard_entries) -> list[bool]:
    return [not g.is_global for g in guard_entries]


def skip_all_guards_unsafe(guard_entries) -> list[bool]:
    return [False for _ in guard_entries]
