"""``torch.distributions.relaxed_categorical``'s import path (the class lives in relaxed.py)."""

from .relaxed import ExpRelaxedCategorical, RelaxedOneHotCategorical

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]

# PyTorch's module path, as the class's repr and messages show it ("<class '...'> does not
# implement mode"); pickle finds the class here too
ExpRelaxedCategorical.__module__ = __name__
RelaxedOneHotCategorical.__module__ = __name__
