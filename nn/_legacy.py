"""Small legacy and base classes of ``torch.nn``: ``Container`` (deprecated: a Module built
from keyword modules) and ``RNNCellBase`` (the cells' base with PyTorch's constructor)."""

from __future__ import annotations

import warnings

from ..autograd.ops.creation import zeros
from .module import Module
from .parameter import Parameter
from .rnn import _CellBase

__all__ = ["Container", "RNNCellBase"]


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


class RNNCellBase(_CellBase):
    """The base of the RNN cells, with PyTorch's constructor: ``weight_ih`` (num_chunks *
    hidden_size, input_size), ``weight_hh`` (num_chunks * hidden_size, hidden_size) and, with
    ``bias``, ``bias_ih`` and ``bias_hh`` (num_chunks * hidden_size), all U(-1/sqrt(hidden),
    1/sqrt(hidden)). Subclasses define ``forward``. (tritongrad's own RNNCell, LSTMCell and
    GRUCell derive from its base, ``_CellBase``, not from this class.)"""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        Module.__init__(self)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(zeros((gates, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(zeros((gates, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(zeros((gates,), device=device, dtype=dtype))
            self.bias_hh = Parameter(zeros((gates,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
