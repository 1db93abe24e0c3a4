"""Global module hooks (``torch.nn.modules.module.register_module_*_hook``): hooks run for
every module call, before the module's own hooks of the same kind, as PyTorch's; and the
registration hooks, run whenever any module registers a parameter, buffer or child module.

Each registry maps a handle id to its hook. ``ANY`` holds the id of every global hook of any
kind (a handle's ``remove()`` drops the id from it too), so ``Module.__call__`` tells whether
there is a global hook to run with one truth test: the hot path without hooks stays cheap.
"""

from __future__ import annotations

from collections import OrderedDict

from ..autograd.node import RemovableHandle

__all__ = ["register_module_buffer_registration_hook", "register_module_forward_hook",
           "register_module_forward_pre_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

ANY: dict = {}
FORWARD_PRE: OrderedDict = OrderedDict()
FORWARD: OrderedDict = OrderedDict()
FORWARD_WITH_KWARGS: set = set()
FORWARD_ALWAYS_CALLED: set = set()
BACKWARD: OrderedDict = OrderedDict()
BACKWARD_PRE: OrderedDict = OrderedDict()
# registration hooks: not in ANY (they run when a module files something, not per call)
BUFFER_REGISTRATION: OrderedDict = OrderedDict()
PARAMETER_REGISTRATION: OrderedDict = OrderedDict()
MODULE_REGISTRATION: OrderedDict = OrderedDict()


def _register(registry: OrderedDict, hook, *extra) -> RemovableHandle:
    h = RemovableHandle(registry, ANY, *extra)
    registry[h.id] = hook
    ANY[h.id] = None
    return h


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """Registers ``hook(module, args) -> None or modified args`` to run before every module's
    ``forward`` (before the module's own pre-hooks). Meant for debugging and profiling.

    Example:
        >>> seen = []
        >>> h = tg.nn.modules.module.register_module_forward_pre_hook(
        ...     lambda m, args: seen.append(type(m).__name__))
        >>> _ = tg.nn.Sequential(tg.nn.ReLU())(tg.ones(1))
        >>> h.remove(); seen
        ['Sequential', 'ReLU']
    """
    return _register(FORWARD_PRE, hook)


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Registers ``hook(module, args, output) -> None or modified output`` (with
    ``with_kwargs``: ``hook(module, args, kwargs, output)``) to run after every module's
    ``forward``, before the module's own forward hooks; ``always_call`` runs it even when
    ``forward`` raises."""
    h = _register(FORWARD, hook, FORWARD_WITH_KWARGS, FORWARD_ALWAYS_CALLED)
    if with_kwargs:
        FORWARD_WITH_KWARGS.add(h.id)
    if always_call:
        FORWARD_ALWAYS_CALLED.add(h.id)
    return h


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """Registers ``hook(module, grad_output) -> None or new grad_output`` for every module,
    run before the module's own backward pre-hooks (see
    ``Module.register_full_backward_pre_hook``)."""
    return _register(BACKWARD_PRE, hook)


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """Registers ``hook(module, grad_input, grad_output) -> None or new grad_input`` for
    every module, run before the module's own full backward hooks (see
    ``Module.register_full_backward_hook``)."""
    return _register(BACKWARD, hook)


def _register_registration(registry: OrderedDict, hook) -> RemovableHandle:
    h = RemovableHandle(registry)
    registry[h.id] = hook
    return h


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    """Registers ``hook(module, name, buffer) -> None or new buffer``, run every time any
    module registers a buffer (``register_buffer``, assigning an ``nn.Buffer`` or to a
    buffer's name)."""
    return _register_registration(BUFFER_REGISTRATION, hook)


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    """Registers ``hook(module, name, param) -> None or new parameter``, run every time any
    module registers a parameter (``register_parameter``, assigning a ``Parameter``)."""
    return _register_registration(PARAMETER_REGISTRATION, hook)


def register_module_module_registration_hook(hook) -> RemovableHandle:
    """Registers ``hook(module, name, submodule) -> None or new submodule``, run every time
    any module registers a child (``register_module``/``add_module``, assigning a Module)."""
    return _register_registration(MODULE_REGISTRATION, hook)


def registered(registry: OrderedDict, module, name: str, value):
    """``value`` as the registration hooks of ``registry`` leave it (each may replace it)."""
    for hook in tuple(registry.values()):
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value
