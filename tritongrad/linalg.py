"""``tritongrad.linalg``: PyTorch's ``torch.linalg`` functions that tritongrad has.

Norms (``vector_norm``, ``matrix_norm``, ``norm``), ``vecdot`` and ``matmul``; all are
differentiable compositions of the tensor ops (autograd/ops/linalg_ext.py). Decompositions
(SVD, QR, eigenvalues, solves) are not implemented, and with them the nuclear and spectral
matrix norms.

Example:
    >>> tg.linalg.vector_norm(tg.tensor([3., 4.]))
    tensor(5.)
"""

from .autograd.ops import matmul  # (the table's function: tg.matmul itself)
from .autograd.ops.linalg_ext import linalg_norm as norm
from .autograd.ops.linalg_ext import matrix_norm, vecdot, vector_norm

__all__ = ["matmul", "matrix_norm", "norm", "vecdot", "vector_norm"]
