"""``torch.distributions.half_normal``'s import path (the class lives in half.py)."""

from .half import HalfNormal

__all__ = ["HalfNormal"]

# PyTorch's module path, as the class's repr and messages show it ("<class '...'> does not
# implement mode"); pickle finds the class here too
HalfNormal.__module__ = __name__
