"""``torch.distributions.relaxed_bernoulli``'s import path (the class lives in relaxed.py)."""

from .relaxed import LogitRelaxedBernoulli, RelaxedBernoulli

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]
