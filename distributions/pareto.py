"""``torch.distributions.pareto``'s import path (the class lives in weibull.py)."""

from .weibull import Pareto

__all__ = ["Pareto"]
