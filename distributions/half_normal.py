"""``torch.distributions.half_normal``'s import path (the class lives in half.py)."""

from .half import HalfNormal

__all__ = ["HalfNormal"]
