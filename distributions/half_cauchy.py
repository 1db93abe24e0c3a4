"""``torch.distributions.half_cauchy``'s import path (the class lives in half.py)."""

from .half import HalfCauchy

__all__ = ["HalfCauchy"]

# PyTorch's module path, as the class's repr and messages show it ("<class '...'> does not
# implement mode"); pickle finds the class here too
HalfCauchy.__module__ = __name__
