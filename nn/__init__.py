"""``tritongrad.nn``: modules, parameters, initialisation and the functional API (PyTorch's
``torch.nn`` surface, on tritongrad's autograd).

Example:
    >>> import tritongrad as tg
    >>> model = tg.nn.Sequential(tg.nn.Linear(64, 32), tg.nn.GELU(), tg.nn.Linear(32, 10))
    >>> loss = tg.nn.CrossEntropyLoss()(model(tg.randn(8, 64)), tg.randint(0, 10, (8,)))
    >>> loss.backward()
"""

from . import functional, init, utils
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .layers import Dropout, Embedding, Flatten, Identity, LayerNorm, Linear
from .loss import CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .parameter import Parameter

__all__ = [
    "GELU", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "Identity", "LayerNorm",
    "Linear", "LogSoftmax", "MSELoss", "Module", "ModuleDict", "ModuleList", "NLLLoss",
    "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Tanh", "functional",
    "init", "utils",
]
