"""``torch.distributions.studentT``'s import path (the class lives in student_t.py)."""

from .student_t import StudentT

__all__ = ["StudentT"]
