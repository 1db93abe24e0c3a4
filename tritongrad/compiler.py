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

import functools
import warnings
from collections.abc import Callable

from .nn.module import Module

__all__ = ["OptimizedModule", "compile", "disable", "is_compiling", "is_dynamo_compiling",
           "list_backends", "reset"]

_BACKENDS = ("eager",)
_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
          "max-autotune")
_warned = False


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
            backend="inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False):
    """Optimizes the given model or function for execution: in tritongrad, runs it eagerly
    (see the module docstring). With no ``model``, returns a decorator. An ``nn.Module``
    comes back as an ``OptimizedModule`` wrapping it; a function as a wrapper calling it.

    Args:
        model: the module or function (None: return a decorator).
        fullgraph, dynamic, options: accepted; eager execution has no graph to break.
        backend: ``"eager"``, or any other name or callable, which warns once and runs
            eagerly.
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
                                 backend=backend, mode=mode, options=options, disable=disable)
    if not callable(model):
        msg = f"A callable function is expected, but {type(model)} is provided."
        raise AssertionError(msg)  # noqa: TRY004 - PyTorch's type
    if disable:
        return model
    _eager_notice(backend)
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
