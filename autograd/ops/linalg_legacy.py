"""``torch``'s older linear-algebra functions at the top level: ``lu``, ``lu_unpack``,
``lu_solve``, ``chain_matmul``, ``nuclear_norm``, ``frobenius_norm``, ``cholesky_inverse``,
the randomized ``svd_lowrank`` and ``pca_lowrank``, and the removed ``matrix_rank``,
``lstsq``, ``solve``, ``eig``, ``symeig`` (which raise PyTorch's RuntimeError pointing to
``torch.linalg``).

All are compositions of decompositions.py's factorizations and solvers and of Tensor ops, so
they run where those run (the factorizations on the host) and are differentiable through them
(``lu`` through ``linalg.lu_factor_ex``'s rule, ``LinalgLuFactorExBackward0``).
``svd_lowrank``/``pca_lowrank`` are PyTorch's algorithm (Halko, Martinsson and Tropp 2009,
Algorithm 4.4, as torch/_lowrank.py): a Gaussian sketch from the default generator
(``manual_seed`` makes it repeatable), ``niter`` subspace iterations, then an SVD of the small
projected matrix.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..checks import tensor_arg
from ..registry import OpInfo
from ..tensor import Tensor, wrap_dim
from .decompositions import (
    LinalgLuFactorExBackward0,
    _exact,
    _matrix,
    _mH,
    _named,
    _tuple_out,
    cholesky_solve,
    lu_factor_ex,
    multi_dot,
    qr,
    solve_triangular,
    svd,
    svdvals,
)
from .elementwise import _result
from .linalg_ext import _matrix_dims

__all__ = ["chain_matmul", "cholesky_inverse", "eig", "frobenius_norm", "lstsq", "lu",
           "lu_solve", "lu_unpack", "matrix_rank", "nuclear_norm", "pca_lowrank", "solve",
           "svd_lowrank", "symeig"]

LUUnpackResult = _named("lu_unpack", "P L U")


# -- LU ----------------------------------------------------------------------------------------

@_tuple_out("lu", "linalg_lu_factor_ex")
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None) -> tuple:
    """Deprecated (``linalg.lu_factor``): the LU factorization of ``A`` as ``(LU, pivots)``
    (``get_infos=True``: with ``linalg.lu_factor_ex``'s int32 ``infos``, one per matrix). A
    singular matrix is not an error here, as in PyTorch. Differentiable with respect to
    ``A``."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                  "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.",
                  UserWarning, stacklevel=2)
    LU, pivots, infos = lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


def _permutation(pivots: Tensor, m: int) -> np.ndarray:
    """The permutations (batch, m) whose rows ``perm`` satisfy ``A[perm] = L U``, from LAPACK's
    1-based sequential row swaps."""
    piv = pivots.detach().cpu().numpy().astype(np.int64)
    piv = piv.reshape(int(np.prod(piv.shape[:-1])), piv.shape[-1])  # (not -1: may be empty)
    if piv.size and not (piv.min() >= 1 and piv.max() <= m):  # (a swap with row 0 or past m)
        raise RuntimeError("lu_unpack: pivots passed to lu_unpack must be between 1 and "
                           "LU.size(-2) inclusive. Did you properly pass the result of "
                           "lu_factor?")
    perms = np.tile(np.arange(m), (piv.shape[0], 1))
    for b, row in enumerate(piv):
        for i, p in enumerate(row):
            perms[b, [i, p - 1]] = perms[b, [p - 1, i]]
    return perms


@_tuple_out("lu_unpack", "lu_unpack")
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True, *, out=None) -> LUUnpackResult:
    """Unpacks ``lu_factor``'s result into ``(P, L, U)`` with ``A = P L U``: ``L`` unit lower
    triangular (m, k), ``U`` upper triangular (k, n), ``k = min(m, n)``, ``P`` a permutation
    matrix (empty tensors where ``unpack_data``/``unpack_pivots`` is False). Differentiable
    with respect to ``LU_data``."""
    from .creation import empty, eye, tensor
    tensor_arg(LU_data, "lu_unpack", "LU_data")
    tensor_arg(LU_pivots, "lu_unpack", "LU_pivots")
    if LU_data.ndim < 2:
        raise RuntimeError("lu_unpack: The input tensor LU_data must have at least 2 dimensions.")
    if LU_pivots.dtype.name != "int32":
        raise RuntimeError(f"lu_unpack: LU_pivots is expected to be a tensor of int32 dtype (as "
                           f"lu_factor returns), got {LU_pivots.dtype}")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    none = empty((0,), dtype=LU_data.dtype, device=LU_data.device)
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        U = LU_data[..., :k, :].triu()
    else:
        L = U = none
    if unpack_pivots:
        perms = _permutation(LU_pivots, m)
        eye_m = np.eye(m)
        # (eye[p]^T for each permutation p, fancy-indexed at once: an empty batch stays empty)
        P = np.swapaxes(eye_m[perms], -1, -2).reshape(tuple(LU_data.shape[:-2]) + (m, m))
        P = tensor(P, dtype=LU_data.dtype, device=LU_data.device)
    else:
        P = none
    return LUUnpackResult(P, L, U)


def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out=None) -> Tensor:
    """Deprecated (``linalg.lu_solve``): the solution of ``A X = input`` from ``A``'s LU
    factorization (``lu_factor``): ``U^-1 L^-1 P^T input`` (PyTorch's argument names).
    Differentiable with respect to ``input`` and ``LU_data``."""
    op = "linalg.lu_solve"
    b = tensor_arg(input, "lu_solve")
    if b.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    _matrix(LU_data, op, "LU")
    P, L, U = lu_unpack(LU_data, LU_pivots)
    y = solve_triangular(L, _mH(P) @ b, upper=False, unitriangular=True)
    return _result(solve_triangular(U, y, upper=True), out, "lu_solve")


# -- products and norms ------------------------------------------------------------------------

def chain_matmul(*matrices, out=None) -> Tensor:
    """Deprecated (``linalg.multi_dot``): the product of the 2-D ``matrices``, left to right
    (one matrix: a copy of it)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and not isinstance(matrices[0], Tensor):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        tensor_arg(t, "chain_matmul", "matrices")
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return _result(matrices[0].clone(), out, "chain_matmul")
    return multi_dot(matrices, out=out)  # (its out= checks, as PyTorch's chain_matmul)


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Deprecated (``linalg.matrix_norm(A, 'nuc')``): the sum of the singular values of the
    matrices in ``dim`` (default the last two dims of a 2-D input; PyTorch's overload without
    ``dim`` takes dims (0, 1)). Differentiable through the SVD."""
    tensor_arg(input, "nuclear_norm")
    if dim is None:
        if input.ndim != 2:
            raise RuntimeError(f"Expected a tensor with 2 dimensions, but got a tensor with "
                               f"{input.ndim} dimension{'s' if input.ndim != 1 else ''} "
                               f"instead.")
        dim = (0, 1)
    dims = _matrix_dims(input, dim, "nuclear_norm")
    moved = input.movedim(dims, (-2, -1))
    r = svdvals(moved).sum(-1)
    if keepdim:
        for d in sorted(dims):
            r = r.unsqueeze(d)
    return _result(r, out, "nuclear_norm")


def frobenius_norm(input: Tensor, dim, keepdim: bool = False, *, out=None) -> Tensor:
    """Deprecated (``linalg.vector_norm(A, 2, dim)``): the square root of the sum of the
    squares of the elements over ``dim`` (at most 2 dims; ``()``: all)."""
    from .linalg_ext import vector_norm
    tensor_arg(input, "frobenius_norm")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           f"instead.")
    dims = tuple(wrap_dim(d, input.ndim, "frobenius_norm") for d in dims)
    r = vector_norm(input, 2, dims or None, keepdim)
    return _result(r, out, "frobenius_norm")


def cholesky_inverse(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """The inverse of ``A = L L^H`` from its Cholesky factor ``L`` (``input``; ``upper=True``:
    ``A = U^H U``), as ``cholesky_solve(I, L)``; differentiable with respect to ``L``."""
    from .creation import eye
    L = input
    _matrix(L, "cholesky_inverse", "input", kernel="cholesky_inverse_out_cpu",
            every_dtype=True)
    n = L.shape[-1]
    ident = eye(n, dtype=L.dtype, device=L.device).expand(tuple(L.shape))
    return _exact(cholesky_solve(ident, L, upper), out, "cholesky_inverse", "cholesky_inverse",
                  cast="cholesky_inverse")


# -- randomized SVD and PCA --------------------------------------------------------------------

def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """Q with orthonormal columns such that ``Q Q^H (A - M)`` approximates ``A - M``: a
    Gaussian sketch and ``niter`` subspace iterations (torch/_lowrank.py)."""
    from .creation import randn
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)

    def sketch(X, Y, B):
        return X @ B if Y is None else X @ B - Y @ B

    Q = qr(sketch(A, M, R)).Q
    for _ in range(niter):
        Q = qr(sketch(_mH(A), None if M is None else _mH(M), Q)).Q
        Q = qr(sketch(A, M, Q)).Q
    return Q


def _svd_lowrank(A: Tensor, q: int, niter: int, M: Tensor | None) -> tuple:
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    if m < n:  # (the algorithm assumes a tall matrix)
        A = _mH(A)
        M = None if M is None else _mH(M)
    Q = _approximate_basis(A, q, niter, M)
    B = _mH(Q) @ A
    if M is not None:
        B = B - _mH(Q) @ M
    U, S, Vh = svd(B, full_matrices=False)
    U, V = Q @ U, _mH(Vh)
    return (V, S, U) if m < n else (U, S, V)


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2, M: Tensor | None = None) -> tuple:
    """An approximate truncated SVD ``(U, S, V)`` of ``A`` (or of ``A - M``) of rank ``q``,
    ``A ~ U diag(S) V^H``, by PyTorch's randomized algorithm (a Gaussian sketch of ``q``
    columns and ``niter`` subspace iterations; see torch.svd_lowrank). The sketch comes from
    the default generator: seed it (``manual_seed``) for repeatable results."""
    _matrix(A, "svd_lowrank", square=False)
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """Principal component analysis of ``A`` (rows: observations) by :func:`svd_lowrank` of
    the centered matrix ``A - mean(A, -2)`` (``center=False``: of ``A``): ``(U, S, V)``, the
    principal directions in ``V``'s columns; ``q`` defaults to ``min(6, m, n)``."""
    _matrix(A, "pca_lowrank", square=False)
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(-2, keepdim=True), q, niter, None)


# -- removed functions: PyTorch's errors (torch/_linalg_utils.py) ----------------------------

_REMOVED = "This function was deprecated since version 1.9 and is now removed."


def matrix_rank(input, tol=None, symmetric=False, *, out=None) -> Tensor:
    """Removed from PyTorch: raises its RuntimeError (use ``torch.linalg.matrix_rank``)."""
    raise RuntimeError(f"{_REMOVED}\nPlease use the `torch.linalg.matrix_rank` function "
                       f"instead. The parameter 'symmetric' was renamed in "
                       f"`torch.linalg.matrix_rank()` to 'hermitian'.")


def solve(input, A, *, out=None) -> tuple:
    """Removed from PyTorch: raises its RuntimeError (use ``linalg.solve(A, B)``)."""
    raise RuntimeError(f"{_REMOVED} `torch.solve` is deprecated in favor of `torch.linalg.solve`"
                       f". `torch.linalg.solve` has its arguments reversed and does not return "
                       f"the LU factorization.\n\nTo get the LU factorization see `torch.lu`, "
                       f"which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = "
                       f"torch.solve(B, A).solution should be replaced with:\nX = "
                       f"torch.linalg.solve(A, B)")


def lstsq(input, A, *, out=None) -> tuple:
    """Removed from PyTorch: raises its RuntimeError (use ``linalg.lstsq(A, B)``)."""
    raise RuntimeError(f"{_REMOVED} `torch.lstsq` is deprecated in favor of "
                       f"`torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed arguments and "
                       f"does not return the QR decomposition in the returned tuple (although it "
                       f"returns other information about the problem).\n\nTo get the QR "
                       f"decomposition consider using `torch.linalg.qr`.\n\nThe returned "
                       f"solution in `torch.lstsq` stored the residuals of the solution in the "
                       f"last m - n columns of the returned value whenever m > n. In "
                       f"torch.linalg.lstsq, the residuals are in the field 'residuals' of the "
                       f"returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = "
                       f"torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = "
                       f"torch.linalg.lstsq(A, B).solution")


def symeig(input, eigenvectors=False, upper=True, *, out=None) -> tuple:
    """Removed from PyTorch: raises its RuntimeError (use ``linalg.eigh``)."""
    raise RuntimeError(f"{_REMOVED} The default behavior has changed from using the upper "
                       f"triangular portion of the matrix by default to using the lower "
                       f"triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be "
                       f"replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else "
                       f"'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be "
                       f"replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else "
                       f"'L')")


def eig(self, eigenvectors=False, *, e=None, v=None) -> tuple:
    """Removed from PyTorch: raises its RuntimeError (use ``linalg.eig``)."""
    raise RuntimeError(f"{_REMOVED} `torch.linalg.eig` returns complex tensors of dtype "
                       f"`cfloat` or `cdouble` rather than real tensors mimicking complex "
                       f"tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
                       f"torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
                       f"eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
                       f"torch.linalg.eig(A)")


# -- the table ---------------------------------------------------------------------------------

_FLOAT = "float32/64, complex64/128"
OPS = (
    OpInfo("lu", lu, dtypes=_FLOAT, grad="P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H "
           "(square; by blocks when m != n)", node=LinalgLuFactorExBackward0),
    OpInfo("lu_unpack", lu_unpack, method=False, dtypes=_FLOAT,
           grad="tril/triu of g (LU_data)"),
    OpInfo("lu_solve", lu_solve, dtypes=_FLOAT, grad="through the triangular solves",
           autocast="float32 on cpu"),
    OpInfo("chain_matmul", chain_matmul, method=False, dtypes="one dtype",
           grad="through multi_dot"),
    OpInfo("nuclear_norm", nuclear_norm, method=False, dtypes=_FLOAT, grad="through svdvals"),
    OpInfo("frobenius_norm", frobenius_norm, method=False, dtypes="floats",
           grad="through vector_norm"),
    OpInfo("cholesky_inverse", cholesky_inverse, dtypes=_FLOAT, grad="through cholesky_solve"),
    OpInfo("svd_lowrank", svd_lowrank, method=False, dtypes=_FLOAT,
           grad="through qr and svd"),
    OpInfo("pca_lowrank", pca_lowrank, method=False, dtypes=_FLOAT,
           grad="through qr and svd"),
    # (PyTorch keeps the Tensor methods too, all but matrix_rank's)
    *(OpInfo(fn.__name__, fn, method=fn is not matrix_rank, dtypes="(removed: raises)",
             grad="none") for fn in (matrix_rank, solve, lstsq, symeig, eig)),
)
