"""``torch.distributions.pareto``'s import path (the class lives in weibull.py)."""

from .weibull import Pareto

__all__ = ["Pareto"]

# PyTorch's module path, as the class's repr and messages show it ("<class '...'> does not
# implement mode"); pickle finds the class here too
Pareto.__module__ = __name__
