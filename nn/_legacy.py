"""``Container``, a legacy class of ``torch.nn`` (deprecated: a Module built from keyword
modules). (``RNNCellBase`` is in rnn.py, the cells' base.)"""

from __future__ import annotations

import warnings

from .module import Module

__all__ = ["Container"]


class Container(Module):
    """Deprecated: a Module whose children are the keyword arguments. Subclass ``Module``
    instead."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        for name, module in kwargs.items():
            self.add_module(name, module)
