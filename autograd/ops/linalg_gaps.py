"""``torch.linalg``'s eig, eigvals, cond, matrix_rank, lu, lu_solve, solve_ex, tensorinv,
tensorsolve and diagonal.

``eig`` is one primitive (NumPy's LAPACK geev on the host, as decompositions.py's
factorizations: a CUDA tensor takes a host round trip) with PyTorch's derivative rule; the rest
are compositions of decompositions.py's factorizations and solvers (``svdvals``, ``inv_ex``,
``lu_factor_ex``, ``solve``, ``solve_triangular``) and of Tensor ops, differentiable through
them.
"""

from __future__ import annotations

import math

import numpy as np

from ...runtime import dtype as dtypes
from ..checks import tensor_arg
from ..autocast import autocast_op, suspended
from ..dispatch import Primitive, apply
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor, array_meta, make
from .complex_parts import real
from .decompositions import (
    LinAlgError,
    _composite_out,
    _exact,
    _eye_like,
    _host,
    _np_dec,
    _lapack_float,
    _matrix,
    _mH,
    _named,
    _phase_check,
    _safe_cast,
    _same_dtype,
    _tensor_rule,
    _tuple_out,
    _vector_rhs,
    eigvalsh,
    inv_ex,
    lu_factor_ex,
    solve,
    solve_triangular,
    svdvals,
)
from .elementwise import _result
from .linalg_ext import matrix_norm
from .linalg_legacy import lu_unpack

__all__ = ["cond", "diagonal", "eig", "eigvals", "lu", "lu_solve", "matrix_rank", "solve_ex",
           "tensorinv", "tensorsolve"]

EigResult = _named("linalg_eig", "eigenvalues eigenvectors")
LUResult = _named("linalg_lu", "P L U")
SolveExResult = _named("linalg_solve_ex", "result info")


# -- eig -------------------------------------------------------------------------------------------

def _complex_of(a: np.ndarray):
    return np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128


def _geev(a: np.ndarray) -> tuple:
    """Eigenvalues and unit-norm right eigenvectors of each matrix, complex (numpy's geev)."""
    if not np.isfinite(a).all():  # (NumPy's own error otherwise; these are PyTorch's words)
        raise _np_dec.LinAlgFailure(None, 0, "linalg.eig: input tensor should not contain "
                                             "infs or NaNs.")
    w, v = np.linalg.eig(a)
    return w.astype(_complex_of(a)), v.astype(_complex_of(a))


def _geev_values(a: np.ndarray) -> np.ndarray:
    """Eigenvalues where some matrix holds a NaN or inf (PyTorch's eigvals without a graph
    gives LAPACK such input unchecked): NaN for those matrices, the others' as ``_geev``'s."""
    bad = ~np.isfinite(a).all((-2, -1))
    w = np.linalg.eigvals(np.where(bad[..., None, None], 0, a) if bad.any() else a)
    w = w.astype(_complex_of(a))
    w[bad] = np.nan
    return w


class LinalgEigBackward0(Primitive):
    """A V = V diag(L), V's columns of unit norm (PyTorch's linalg_eig_backward, general case):
    with E_ij = conj(L_j - L_i) (1 on the diagonal) and VhgV = V^H gV,
    gA = V^-H [(VhgV - V^H V diag(Re diag(VhgV))) / E, diagonal gL] V^H; the real part for a
    real A. Needs distinct eigenvalues and a loss that does not depend on the eigenvectors'
    phases (checked, as PyTorch does)."""

    __slots__ = ()
    op_name = "linalg_eig"
    saved_names = ("eigenvalues", "eigenvectors")
    keep_outputs = (0, 1)

    @staticmethod
    def forward(ctx, k, a):
        ctx.real_input = not array_meta(a)[1].is_complex
        return _host(_geev, (a,))

    @staticmethod
    def _rule(ctx, saved, gL, gV):
        L, V = saved
        Vh = _mH(V)
        if gV is None:
            gA = solve(Vh, gL.unsqueeze(-1) * Vh)
        else:
            VhgV = Vh @ gV
            _phase_check(VhgV, "linalg_eig_backward")
            Lc = L.conj()
            E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
            E = E + _eye_like(E).to(E.dtype)  # 1 on the diagonal
            inner = (VhgV - Vh @ (V * real(VhgV.diagonal(0, -2, -1)).to(V.dtype).unsqueeze(-2)))
            inner = inner / E
            if gL is not None:
                inner = inner - inner.diagonal(0, -2, -1).diag_embed() + gL.diag_embed()
            gA = solve(Vh, inner @ Vh)
        return real(gA) if ctx.real_input else gA

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def complex_jvp(ctx, k, primals, tangents, out):
        # PyTorch's linalg_eig_jvp: with dP = V^-1 dA V, dL = diag(dP) and
        # dV = V (dP / E) with E_ij = L_j - L_i off the diagonal (0 on it), less
        # V diag(Re diag(V^H dV)): the norm of each column stays 1
        L, V = out
        dP = solve(V, tangents[0].to(V.dtype) @ V)
        E = L.unsqueeze(-2) - L.unsqueeze(-1)
        eye = _eye_like(E)
        dV = V @ (dP * ((1 - eye) / (E + eye)).to(V.dtype))
        keep = real((_mH(V) @ dV).diagonal(0, -2, -1)).to(V.dtype)
        return dP.diagonal(0, -2, -1), dV - V * keep.unsqueeze(-2)

    jvp = complex_jvp  # (a real A's values are complex: the same rule)


@autocast_op("float32 on cpu")
@_tuple_out("linalg.eig", "linalg_eig")
def eig(input: Tensor, *, out=None) -> EigResult:
    """(eigenvalues, eigenvectors) of each square matrix: complex, ``A V = V diag(L)``, the
    eigenvectors normalized to norm 1 (LAPACK's; each is defined up to a phase). Gradients
    need distinct eigenvalues and, through the eigenvectors, a loss that does not depend on
    their phases (else PyTorch's error).

    Example:
        >>> tg.linalg.eig(tg.tensor([[2., 0.], [0., 3.]])).eigenvalues
        tensor([2.+0.j, 3.+0.j])
    """
    A = input
    _matrix(A, "linalg.eig", kernel="linalg_eig_out_cpu")
    return EigResult(*apply(LinalgEigBackward0, (A,)))


@autocast_op("float32 on cpu")
def eigvals(input: Tensor, *, out=None) -> Tensor:
    """The (complex) eigenvalues of each square matrix, in LAPACK's order (``eig``'s)."""
    A = input
    _matrix(A, "linalg.eigvals", kernel="linalg_eig_out_cpu")
    try:
        return _result(eig(A).eigenvalues, out, "linalg.eigvals")
    except LinAlgError:  # (a NaN or inf: eig refuses it, as PyTorch's, which needs a graph)
        if A.requires_grad and is_grad_enabled():
            raise
    return _result(make(_host(_geev_values, (A._data,))), out, "linalg.eigvals")


# -- cond, matrix_rank -----------------------------------------------------------------------------

_COND_NORMS = (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc")


@autocast_op("float32 on cpu")
def cond(input: Tensor, p=None, *, out=None) -> Tensor:
    """The condition number of each matrix in the norm ``p``: ``sigma_max / sigma_min`` for
    p = None or 2 (any shape), ``sigma_min / sigma_max`` for -2, else
    ``norm(A, p) * norm(A^-1, p)`` (square matrices; ``inf`` for a singular one, as PyTorch
    gives). Real even for complex input.

    Example:
        >>> tg.linalg.cond(tg.tensor([[1., 0.], [0., 4.]]))
        tensor(4.)
    """
    A = input
    op = "linalg.cond"
    if p not in _COND_NORMS:
        raise RuntimeError(f"{op} got an invalid norm type: {p}")
    # (the norm in the op's name, as PyTorch's errors give it: "linalg.cond(ord=fro)")
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor must have at least 2 dimensions.")
    if p in (None, 2, -2):  # (checked by the svd it calls, as PyTorch's)
        _matrix(A, "linalg.svd", square=False, kernel="linalg_svd_cpu")
    else:
        _matrix(A, f"{op}(ord={p:g})" if not isinstance(p, str) else f"{op}(ord={p})")
    if out is not None:  # (PyTorch's composite: out.copy_(result), in the graph)
        r = cond(A, p)
        _safe_cast(r, out, op)
        return _composite_out(r, out, op)
    if p in (None, 2, -2):
        s = svdvals(A)
        if s.shape[-1] == 0:  # empty matrices: 0, as PyTorch gives
            return _result(s.new_zeros(s.shape[:-1]), out, op)
        hi, lo = s[..., 0], s[..., -1]
        return _result(hi / lo if p != -2 else lo / hi, out, op)
    if A.shape[-1] == 0:  # empty matrices: 0, as PyTorch gives
        return _result(matrix_norm(A, "fro"), out, op)
    Ainv, info = inv_ex(A)
    ok = info == 0
    if not bool(ok.all()):  # (NaN inverses of singular matrices kept out of the norms' SVD)
        Ainv = Ainv.where(ok.unsqueeze(-1).unsqueeze(-1), 0.0)
    r = matrix_norm(A, p) * matrix_norm(Ainv, p)
    return _result(r.where(ok, math.inf), out, op)


@autocast_op("float32 on cpu")
def matrix_rank(input: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None,
                out=None) -> Tensor:
    """The numerical rank of each matrix: the number of singular values (absolute
    eigenvalues, ``hermitian``) above ``max(atol, rtol * sigma_max)``. Without ``atol`` and
    ``rtol``, ``rtol`` is eps(dtype) * max(m, n); with only ``atol`` > 0 (or the older
    ``tol``), ``rtol`` is 0. int64.

    Example:
        >>> tg.linalg.matrix_rank(tg.tensor([[1., 2.], [2., 4.]]))
        tensor(1)
    """
    A = input
    op = "linalg.matrix_rank"
    if tol is not None:
        if atol is not None or rtol is not None:  # (no such overload in PyTorch's bindings)
            given = ", ".join(f"{k}={type(v).__name__}" for k, v in
                              (("atol", atol), ("rtol", rtol), ("tol", tol)) if v is not None)
            raise TypeError(f"linalg_matrix_rank() received an invalid combination of "
                            f"arguments - got (Tensor, {given}), but expected one of: (input, "
                            f"*, atol, rtol, hermitian, out) or (input, tol, hermitian, *, out)")
        atol = tol
    tensor_arg(A, op, "input")
    if A.ndim < 2:
        raise RuntimeError(f"torch.{op}: The input tensor input must have at least 2 "
                           f"dimensions.")
    _lapack_float(A)
    _matrix(A, "linalg.eigh" if hermitian else op, square=hermitian)
    s = (eigvalsh(A).abs() if hermitian else svdvals(A)).detach()
    if s.shape[-1] == 0:  # an empty matrix has rank 0
        return _result(s.sum(-1).to(dtypes.int64), out, op)
    if rtol is None:
        given = atol is not None and (isinstance(atol, Tensor) or atol > 0)
        rtol = 0.0 if given else dtypes.finfo(s.dtype).eps * max(A.shape[-2], A.shape[-1])

    def per_matrix(v):  # a float, or a tensor of the batch shape against (.., 1)
        return v.unsqueeze(-1).to(s.dtype) if isinstance(v, Tensor) else float(v)
    thr = s.amax(-1, keepdim=True) * per_matrix(rtol)
    if atol is not None:
        a = per_matrix(atol)
        thr = thr.maximum(a) if isinstance(a, Tensor) else thr.clamp(min=a)
    return _result((s > thr).sum(-1), out, op)


# -- LU --------------------------------------------------------------------------------------------

@_tuple_out("linalg.lu", "linalg_lu")
def lu(A: Tensor, *, pivot: bool = True, out=None) -> LUResult:
    """The LU decomposition with partial pivoting ``A = P L U`` of each (m, n) matrix: ``P``
    a permutation, ``L`` (m, k) unit lower triangular, ``U`` (k, n) upper triangular, k =
    min(m, n) (``lu_factor_ex`` then ``lu_unpack``; differentiable through both).

    Example:
        >>> P, L, U = tg.linalg.lu(tg.tensor([[1., 2.], [3., 4.]]))
        >>> (P @ L @ U).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError(f"linalg.lu: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    _matrix(A, "linalg.lu", square=False, kernel="lu_cpu", every_dtype=True)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the "
                           "CPU")  # (PyTorch's message names lu_factor, which lu calls)
    LU, pivots, _ = lu_factor_ex(A)
    return LUResult(*lu_unpack(LU, pivots))


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False, out=None) -> Tensor:
    """The solution X of ``A X = B`` (``left``) or ``X A = B``, with ``A^H`` in place of ``A``
    when ``adjoint``, from ``A``'s ``lu_factor`` (``A = P L U``): triangular solves with L and
    U and the row permutation. Differentiable with respect to ``LU`` and ``B``.

    Example:
        >>> A = tg.tensor([[2., 1.], [1., 3.]])
        >>> LU, piv = tg.linalg.lu_factor(A)
        >>> tg.linalg.lu_solve(LU, piv, tg.tensor([[3.], [4.]])).flatten().tolist()
        [1.0, 1.0]
    """
    # (PyTorch's is one kernel, not autocast: the permutation's products here are not cast)
    with suspended():
        return _lu_solve(LU, pivots, B, left, adjoint, out)


def _lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool, adjoint: bool, out):
    op = "linalg.lu_solve"
    _matrix(LU, op, "LU")
    tensor_arg(B, op, "B")
    if B.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    _same_dtype(LU, B, op)
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if not left:  # X A = B  <=>  A^H X^H = B^H
        # (contiguous, as PyTorch's result is here)
        return _exact(_mH(lu_solve(LU, pivots, _mH(B), adjoint=not adjoint)).contiguous(), out,
                      op, "linalg_lu_solve")
    P, L, U = lu_unpack(LU, pivots)
    if adjoint:  # A^H = U^H L^H P^T: X = P L^-H U^-H B
        y = solve_triangular(_mH(U), B, upper=False)
        X = P @ solve_triangular(_mH(L), y, upper=True, unitriangular=True)
    else:  # X = U^-1 L^-1 P^T B
        y = solve_triangular(L, _mH(P) @ B, upper=False, unitriangular=True)
        X = solve_triangular(U, y, upper=True)
    return _exact(X, out, op, "linalg_lu_solve")


# -- solve_ex, tensorinv, tensorsolve, diagonal ----------------------------------------------------

@_tuple_out("linalg.solve_ex", "_linalg_solve_ex")
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False,
             out=None) -> SolveExResult:
    """``solve`` that reports singular matrices in ``info`` (int32, one per matrix: 0, or the
    1-based index of U's first zero pivot) instead of raising, unless ``check_errors``; the
    result of a singular matrix is NaN (PyTorch leaves it unspecified).

    Example:
        >>> tg.linalg.solve_ex(tg.tensor([[1., 0.], [0., 0.]]), tg.tensor([1., 1.])).info
        tensor(2, dtype=tritongrad.int32)
    """
    op = "linalg.solve_ex"
    _matrix(A, op)
    tensor_arg(B, op, "B")
    info = lu_factor_ex(A.detach()).info
    bad = info != 0
    if not bool(bad.any().item()):
        return SolveExResult(solve(A, B, left=left), info)
    if check_errors:
        first = int(np.flatnonzero(bad.cpu().numpy().reshape(-1))[0])
        where = "" if A.ndim == 2 else f"(Batch element {first}): "
        raise LinAlgError(f"torch.linalg.solve_ex: {where}The solver failed because the input "
                          f"matrix is singular.")
    # the singular matrices replaced by the identity for the solve, their results by NaN
    mask = bad.reshape(tuple(bad.shape) + (1, 1))
    X = solve(A.where(mask.logical_not(), _eye_like(A)), B, left=left)
    vector = left and _vector_rhs(A, B)
    rows = mask.squeeze(-1) if vector else mask
    return SolveExResult(X.where(rows.logical_not(), math.nan), info)


@autocast_op("float32 on cpu")
def tensorinv(input: Tensor, ind: int = 2, *, out=None) -> Tensor:
    """The inverse of ``A`` seen as a linear map from its first ``ind`` dims to the rest:
    ``tensordot(tensorinv(A, ind), A, ind)`` is the identity; the result's shape is
    ``A.shape[ind:] + A.shape[:ind]``.

    Example:
        >>> tg.linalg.tensorinv(tg.eye(4).reshape(4, 2, 2), ind=1).shape
        tritongrad.Size([2, 2, 4])
    """
    A = input
    op = "linalg.tensorinv"
    tensor_arg(A, op)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    lead, rest = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(lead) != math.prod(rest):
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                           f"{math.prod(rest)} != {math.prod(lead)}")
    m = math.prod(lead)
    inverse, info = inv_ex(A.reshape(m, m))
    if bool((info != 0).item()):
        raise LinAlgError("inv: The diagonal element "
                          f"{int(info.item())} is zero, the inversion could not be completed "
                          f"because the input matrix is singular.")
    r = inverse.reshape(rest + lead)
    _safe_cast(r, out, "tensorinv")
    return _composite_out(r, out, op)


@autocast_op("float32 on cpu")
def tensorsolve(input: Tensor, other: Tensor, dims=None, *, out=None) -> Tensor:
    """The X with ``tensordot(A, X, X.ndim) = B``: X has shape ``A.shape[B.ndim:]``, and
    ``A`` (with ``dims`` moved to its end first) is solved as a square matrix.

    Example:
        >>> A = tg.eye(6).reshape(2, 3, 6)
        >>> tg.linalg.tensorsolve(A, tg.ones(2, 3)).shape
        tritongrad.Size([6])
    """
    A, B = input, other
    op = "linalg.tensorsolve"
    tensor_arg(A, op)
    tensor_arg(B, op, "B")
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        keep = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(keep + dims)
    result_shape = tuple(A.shape[B.ndim:])
    n, m = math.prod(result_shape), math.prod(tuple(A.shape[:B.ndim]))
    if n != m:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {n} != {m}")
    X = solve(A.reshape(m, n), B.reshape(m))
    r = X.reshape(result_shape)
    _safe_cast(r, out, "tensorsolve")
    return _composite_out(r, out, op)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``A.diagonal(offset, dim1, dim2)``, with the matrix dims last by default."""
    tensor_arg(A, "linalg.diagonal")
    return A.diagonal(offset, dim1, dim2)
