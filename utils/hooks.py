"""``torch.utils.hooks``: the handle every ``register_*hook`` returns, and the marks for
hooks that are not saved with a tensor.

One class serves tensors, nodes and modules (``autograd/node.py``): ``handle.remove()``
unregisters the hook, and the handle is a context manager that removes it on exit.
"""

import warnings

from ..autograd.node import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Marks hook ``f`` as one that is not expected to survive pickling (no warning from
    :func:`warn_if_has_hooks` for it)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """Warns for each backward hook of ``tensor`` not marked :func:`unserializable_hook`:
    hooks are not pickled with a tensor."""
    for hook in (tensor._backward_hooks or {}).values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this "
                          f"is expected, you can decorate the function with "
                          f"@torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)
