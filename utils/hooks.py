"""``torch.utils.hooks``: the handle every ``register_*hook`` returns.

One class serves tensors, nodes and modules (``autograd/node.py``): ``handle.remove()``
unregisters the hook, and the handle is a context manager that removes it on exit.
"""

from ..autograd.node import RemovableHandle

__all__ = ["RemovableHandle"]
