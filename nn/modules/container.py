"""``torch.nn.modules.container``'s import path: the containers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .._legacy import Container

__all__ = ["Container", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
