"""``ModuleTracker``: which ``nn.Module`` is running, in forward and in backward (PyTorch's
``torch.utils.module_tracker``; ``FlopCounterMode`` files its counts under these names)."""

from __future__ import annotations

import logging
import weakref

from ..autograd import engine
from ..autograd._pytree import tree_flatten
from ..autograd.graph import register_multi_grad_hook
from ..autograd.tensor import Tensor
from ..nn._global_hooks import register_module_forward_hook, register_module_forward_pre_hook

__all__ = ["ModuleTracker"]

logger = logging.getLogger(__name__)


class ModuleTracker:
    """A context manager that tracks the nn.Module hierarchy during execution, so that other
    systems can query which Module is currently being executed (or its backward is being
    executed).

    ``parents`` is the set of the fully qualified names (fqn, as in the ``state_dict``: the
    outermost module by its class name, ``"Sequential.0"`` below it) of every Module whose
    forward is running; it is never empty and always contains ``"Global"``. ``is_bw`` tells
    whether a backward pass is running; a module's name is in ``parents`` during its backward
    from when the gradient of its outputs is computed until that of its inputs is.

    Built on the global module forward hooks (``register_module_forward_pre_hook``,
    ``register_module_forward_hook``) and multi-grad hooks on each module's inputs and outputs
    that require grad; the set is reset to ``{"Global"}`` when a backward pass ends.

    Example:
        >>> mod = tg.nn.Sequential(tg.nn.Linear(2, 2))
        >>> seen = []
        >>> with ModuleTracker() as tracker:
        ...     h = mod[0].register_forward_hook(lambda m, i, o: seen.append(
        ...         sorted(tracker.parents)))
        ...     _ = mod(tg.rand(1, 2))
        >>> h.remove(); seen
        [['Global', 'Sequential', 'Sequential.0']]
    """

    parents: set[str]

    def __init__(self) -> None:
        self.parents = {"Global"}
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._has_callback = False
        self._hooks: list = []

    def _maybe_set_engine_callback(self) -> None:
        # (this assumes no concurrent backward calls, as PyTorch's does)
        if self._has_callback:
            return

        def callback() -> None:
            self.parents = {"Global"}
            self._has_callback = False

        engine.queue_callback(callback)
        self._has_callback = True

    @property
    def is_bw(self) -> bool:
        """A boolean marking if this is currently running during the backward pass or not."""
        return engine.current_graph_task_id() != -1

    def _get_mod_name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        mod_name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for name, submod in mod.named_children():
                self._known_modules[submod] = f"{mod_name}.{name}"
                self._get_mod_name(submod)
            self._seen_modules.add(mod)
        return mod_name

    def _get_append_fn(self, name: str, is_bw: bool):
        def fn(*args) -> None:
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module "
                            "was already entered. %s during %s", name,
                            "backward" if is_bw else "forward")
            self.parents.add(name)
        return fn

    def _get_pop_fn(self, name: str, is_bw: bool):
        def fn(*args) -> None:
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a "
                            "Module that was never entered. %s during %s", name,
                            "backward" if is_bw else "forward")
        return fn

    def _grad_hook(self, tree, fn) -> None:
        """Runs ``fn`` in backward once the gradients of the Tensors in ``tree`` that require
        grad are computed."""
        leaves, _ = tree_flatten(tree)
        tensors = [a for a in leaves if isinstance(a, Tensor) and a.requires_grad]
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, fn))

    def _fw_pre_hook(self, mod, input) -> None:
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        self._grad_hook(input, self._get_pop_fn(name, True))

    def _fw_post_hook(self, mod, input, output) -> None:
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        self._grad_hook(output, self._get_append_fn(name, True))

    def __enter__(self) -> ModuleTracker:
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *args) -> None:
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
