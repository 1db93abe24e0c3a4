"""``torch.distributions.studentT``'s import path (the class lives in student_t.py)."""

from .student_t import StudentT

__all__ = ["StudentT"]

# PyTorch's module path, as the class's repr and messages show it ("<class '...'> does not
# implement mode"); pickle finds the class here too
StudentT.__module__ = __name__
