"""``torch.distributions.relaxed_bernoulli``'s import path (the class lives in relaxed.py)."""

from .relaxed import LogitRelaxedBernoulli, RelaxedBernoulli

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]

# PyTorch's module path, as the class's repr and messages show it ("<class '...'> does not
# implement mode"); pickle finds the class here too
LogitRelaxedBernoulli.__module__ = __name__
RelaxedBernoulli.__module__ = __name__
