"""``tritongrad.linalg``: PyTorch's ``torch.linalg`` functions that tritongrad has.

Norms (``vector_norm``, ``matrix_norm``, ``norm``), ``vecdot`` and ``matmul`` are
differentiable compositions of the tensor ops (autograd/ops/linalg_ext.py). The
factorizations and solvers (``inv``, ``det``, ``slogdet``, ``solve``, ``cholesky``, ``qr``,
``eigh``, ``svd``, ``pinv``, ``solve_triangular``, ``matrix_exp``, ``lu_factor``, ...) run
NumPy's LAPACK on the host, with PyTorch's derivative rules (autograd/ops/decompositions.py):
a CUDA tensor takes a host round trip that synchronizes with the current stream.
``eig``/``eigvals`` (complex results) run LAPACK's geev the same way; ``cond``,
``matrix_rank``, ``lu``, ``lu_solve``, ``solve_ex``, ``tensorinv`` and ``tensorsolve`` are
compositions of those (autograd/ops/linalg_gaps.py). ``householder_product`` is a composite
of matrix products (autograd/ops/householder.py). ``matrix_norm``'s nuclear and spectral
norms reduce ``svdvals``. Multi-output functions take ``out=`` as a tuple of tensors, as
PyTorch's do.

Example:
    >>> tg.linalg.vector_norm(tg.tensor([3., 4.]))
    tensor(5.)
"""

from .autograd.ops import matmul  # (the table's function: tg.matmul itself)
from .autograd.ops.decompositions import (LinAlgError, cholesky, cholesky_ex, cross, det, eigh,
                                          eigvalsh, inv, inv_ex, lstsq, lu_factor,
                                          lu_factor_ex, matrix_exp, multi_dot, pinv, qr,
                                          slogdet, solve, solve_triangular, svd, svdvals,
                                          vander)
from .autograd.ops.householder import householder_product
from .autograd.ops.linalg_ext import linalg_norm as norm
from .autograd.ops.linalg_ext import matrix_norm, matrix_power, vecdot, vector_norm
from .autograd.ops.linalg_gaps import (cond, diagonal, eig, eigvals, lu, lu_solve, matrix_rank,
                                       solve_ex, tensorinv, tensorsolve)

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "lstsq", "lu",
           "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm",
           "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
           "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve",
           "vander", "vecdot", "vector_norm"]

from .autograd.ops.ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: E402 (SciPy's LAPACK)

__all__ += ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

# PyTorch's errors name these functions linalg_<name> ("linalg_inv(): argument 'A' (position
# 1) must be Tensor, not list"): each is guarded under that name (registry.guarded), except
# the ops the package has at the top too, which stay those functions (tg.linalg.matmul is
# tg.matmul)
from .autograd.registry import guarded as _guarded  # noqa: E402

globals().update({_n: _guarded(globals()[_n], "linalg_" + _n, module=__name__,
                           attr=_n) for _n in __all__})
