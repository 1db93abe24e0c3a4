"""``torch.distributions.relaxed_categorical``'s import path (the class lives in relaxed.py)."""

from .relaxed import ExpRelaxedCategorical, RelaxedOneHotCategorical

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]
