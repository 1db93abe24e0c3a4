"""``torch._tensor_str``'s public helpers under PyTorch's module path: the print options
(defined in autograd/printing.py)."""

from .autograd.printing import PRINT_OPTS, get_printoptions, printoptions, set_printoptions

__all__ = ["PRINT_OPTS", "get_printoptions", "printoptions", "set_printoptions"]
