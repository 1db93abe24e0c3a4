"""``torch.distributions.half_cauchy``'s import path (the class lives in half.py)."""

from .half import HalfCauchy

__all__ = ["HalfCauchy"]
