"""Matrix factorizations and solvers over NumPy arrays (``numpy.linalg``), batched over leading
dims, for float32/float64/complex64/complex128.

These are host kernels: autograd/ops/decompositions.py runs them on the CPU's arrays directly
and, for a CUDA tensor, on a host copy (there are no Triton solver kernels). They are not part
of the per-backend contract (kernels/__init__.py says so). Each returns new arrays; a failure
(a singular or not positive-definite matrix) raises :class:`LinAlgFailure` with what PyTorch's
message needs (the batch element and the LAPACK ``info``), found again by a slow scalar pass
only on that error path.
"""

from __future__ import annotations

import numpy as np

from .elementwise import _quiet  # (Note [Silent float errors]: np.linalg's warnings)

__all__ = ["LinAlgFailure", "inv", "det", "slogdet", "solve", "cholesky", "qr", "eigh", "svd",
           "solve_triangular", "matrix_exp", "lu_factor", "geqrf"]


class LinAlgFailure(Exception):
    """A factorization failed: ``batch`` is the flat index of the failing matrix (None for an
    unbatched input) and ``info`` LAPACK's 1-based index (the zero pivot, or the order of the
    leading minor that is not positive-definite). ``message``, where given, is the whole
    error's text (an iteration that did not converge: PyTorch's words, not NumPy's)."""

    def __init__(self, batch: int | None, info: int, message: str | None = None):
        super().__init__(batch, info)
        self.batch, self.info, self.message = batch, info, message


def _not_converged(a: np.ndarray, op: str, values: str) -> LinAlgFailure:
    """PyTorch's error for an iteration (an SVD, a Hermitian eigensolver) that failed on
    ``a``, naming the first matrix with a NaN or inf: the SVD's says so, eigh's (as
    PyTorch's, which does not look) calls it ill-conditioned. LAPACK's error code is not
    known here, so it is left out."""
    mats = a.reshape((-1,) + a.shape[-2:])
    bad = np.flatnonzero(~np.isfinite(mats).all((-2, -1)))
    where = "" if a.ndim == 2 else f"(Batch element {int(bad[0]) if bad.size else 0}): "
    why = ("the input matrix contained non-finite values" if bad.size and op == "linalg.svd"
           else f"the input matrix is ill-conditioned or has too many repeated {values}")
    return LinAlgFailure(None, 0, f"{op}: {where}The algorithm failed to converge because "
                                  f"{why}.")


def _failing(a: np.ndarray, find) -> LinAlgFailure:
    """The first matrix of ``a`` for which ``find(matrix)`` gives an ``info`` > 0."""
    mats = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(mats):
        info = find(m)
        if info:
            return LinAlgFailure(i if a.ndim > 2 else None, info)
    return LinAlgFailure(None if a.ndim == 2 else 0, 1)  # (not reached: NumPy failed on one)


def _zero_pivot(m: np.ndarray) -> int:
    """LAPACK getrf's info: the 1-based index of the first exactly zero pivot of the LU
    factorization with partial pivoting, 0 if none."""
    u = np.array(m, dtype=np.complex128 if np.iscomplexobj(m) else np.float64)
    n = u.shape[0]
    for j in range(n):
        p = j + int(np.argmax(np.abs(u[j:, j])))
        if u[p, j] == 0:
            return j + 1
        u[[j, p]] = u[[p, j]]
        u[j + 1:, j:] -= np.outer(u[j + 1:, j] / u[j, j], u[j, j:])
    return 0


def _not_positive_definite(m: np.ndarray) -> int:
    """LAPACK potrf's info: the order of the first leading minor that is not positive-definite."""
    for k in range(1, m.shape[0] + 1):
        try:
            L = np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
        if np.isnan(L[k - 1, k - 1]):  # (LAPACK's potrf fails on a NaN pivot; NumPy's not)
            return k
    return 0


@_quiet
def inv(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise _failing(a, _zero_pivot) from None


@_quiet
def det(a: np.ndarray) -> np.ndarray:
    return np.linalg.det(a)


@_quiet
def slogdet(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sign, logabs = np.linalg.slogdet(a)
    return sign.astype(a.dtype), logabs.astype(np.abs(a[..., :0, :0]).dtype)


@_quiet
def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a^-1 b``: ``a`` (..., n, n), ``b`` (..., n, k), batch dims equal."""
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise _failing(a, _zero_pivot) from None


@_quiet
def cholesky(a: np.ndarray) -> np.ndarray:
    """The lower factor L of ``a = L L^H`` (read from the lower triangle of ``a``)."""
    lower = np.tril(a)
    herm = lower + np.conj(np.swapaxes(np.tril(a, -1), -1, -2))
    try:
        L = np.linalg.cholesky(herm)
    except np.linalg.LinAlgError:
        raise _failing(herm, _not_positive_definite) from None
    if np.isnan(np.diagonal(L, axis1=-2, axis2=-1)).any():  # (a NaN pivot: as LAPACK's)
        raise _failing(herm, _not_positive_definite)
    return L


@_quiet
def qr(a: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """``mode``: "reduced", "complete" or "r" (Q is then an empty array, as PyTorch's)."""
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        return np.empty((0,), a.dtype), r
    return np.linalg.qr(a, mode=mode)


@_quiet
def eigh(a: np.ndarray, uplo: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        w, v = np.linalg.eigh(a, UPLO=uplo)
    except np.linalg.LinAlgError:
        raise _not_converged(a, "linalg.eigh", "eigenvalues") from None
    return w, v


@_quiet
def svd(a: np.ndarray, full_matrices: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if 0 in a.shape[-2:]:  # LAPACK is not called: identity-shaped U and Vh, no values
        m, n = a.shape[-2:]
        b = a.shape[:-2]
        k = min(m, n)
        eye = lambda r, c: np.broadcast_to(np.eye(r, c, dtype=a.dtype), b + (r, c)).copy()
        return (eye(m, m if full_matrices else k), np.zeros(b + (k,), np.abs(a).dtype),
                eye(n if full_matrices else k, n))
    try:
        return np.linalg.svd(a, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        raise _not_converged(a, "linalg.svd", "singular values") from None


@_quiet
def solve_triangular(a: np.ndarray, b: np.ndarray, upper: bool, left: bool,
                     unitriangular: bool) -> np.ndarray:
    """``a^-1 b`` (``left``) or ``b a^-1``, reading only the upper or lower triangle of ``a``
    (its diagonal taken as ones when ``unitriangular``). A general solve of the masked
    triangle: NumPy has no triangular solver, and the result is the same."""
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        n = a.shape[-1]
        t = t.copy()
        t[..., np.arange(n), np.arange(n)] = 1
    with np.errstate(all="ignore"):
        if left:
            return _triangular(t, b, upper)
        # b a^-1 = (a^T^-1 b^T)^T
        return np.swapaxes(_triangular(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2),
                                       not upper), -1, -2)


def _triangular(t: np.ndarray, b: np.ndarray, upper: bool) -> np.ndarray:
    """``t^-1 b`` for triangular ``t``: LAPACK's solve, or, for an exactly singular ``t``
    (where getrs refuses), substitution, which gives the inf/NaN that PyTorch's trsm gives."""
    try:
        return np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        pass
    dt = np.result_type(t, b)
    x = np.array(np.broadcast_to(b, t.shape[:-2] + b.shape[-2:]), dtype=dt)
    n = t.shape[-1]
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        rest = slice(i + 1, n) if upper else slice(0, i)
        acc = x[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, rest], x[..., rest, :])
        x[..., i, :] = acc / t[..., i, i, None]
    return x


@_quiet
def matrix_exp(a: np.ndarray) -> np.ndarray:
    """``exp(a)`` by scaling and squaring a degree-18 Taylor polynomial (computed in the
    double precision of ``a``'s kind, rounded once)."""
    work = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    norm = np.abs(work).sum(-2).max(-1) if work.size else np.zeros(work.shape[:-2])
    bad = ~np.isfinite(norm)  # a matrix with a NaN or inf: NaN (PyTorch's), the others exact
    if bad.any():
        work = np.where(bad[..., None, None], 0, work)
        norm = np.where(bad, 0.0, norm)
    # halve until every matrix's 1-norm is at most 1/2: the Taylor tail is then below 1e-20
    s = int(max(0, np.ceil(np.log2(max(float(np.max(norm, initial=0.0)), 1e-300) / 0.5))))
    x = work / (2.0 ** s)
    n = a.shape[-1]
    eye = np.broadcast_to(np.eye(n, dtype=work.dtype), work.shape)
    out = eye.copy()
    term = eye.copy()
    for i in range(1, 19):
        term = term @ x / i
        out = out + term
    for _ in range(s):
        out = out @ out
    if bad.any():
        out = np.where(bad[..., None, None], np.nan, out)
    return out.astype(a.dtype)


@_quiet
def lu_factor(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK getrf's packed ``LU`` and 1-based int32 ``pivots`` (row ``i`` swapped with
    ``pivots[i] - 1``), by partial pivoting over every matrix at once (a zero pivot leaves its
    column as it is, as LAPACK does). The pivot is LAPACK's: the first largest ``|x|``, or for
    complex ``x`` ``|Re x| + |Im x|`` (i?amax's measure)."""
    lu = np.array(a, copy=True)
    m, n = a.shape[-2:]
    flat = lu.reshape((int(np.prod(a.shape[:-2])), m, n))  # (not -1: ambiguous when empty)
    piv = np.zeros((flat.shape[0], min(m, n)), np.int32)
    rows = np.arange(flat.shape[0])
    size = ((lambda c: np.abs(c.real) + np.abs(c.imag)) if np.iscomplexobj(a) else np.abs)
    for j in range(min(m, n)):
        p = j + np.argmax(size(flat[:, j:, j]), axis=1)
        piv[:, j] = p + 1
        top = flat[rows, j].copy()
        flat[rows, j] = flat[rows, p]
        flat[rows, p] = top
        d = flat[:, j, j]
        safe = np.where(d == 0, 1, d)
        f = np.where((d == 0)[:, None], 0, flat[:, j + 1:, j] / safe[:, None])
        flat[:, j + 1:, j] = f
        flat[:, j + 1:, j + 1:] -= f[:, :, None] * flat[:, j, None, j + 1:]
    return flat.reshape(a.shape), piv.reshape(a.shape[:-2] + (min(m, n),))


@_quiet
def geqrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK geqrf's compact QR: ``R`` on and above the diagonal, the Householder vectors
    below it (their leading 1 implicit), and the scalar factors ``tau`` (..., min(m, n)).
    NumPy's "raw" QR is that call; it returns the factors transposed (Fortran's layout)."""
    h, tau = np.linalg.qr(a, mode="raw")
    return np.swapaxes(h, -1, -2).astype(a.dtype, copy=False), tau.astype(a.dtype, copy=False)
