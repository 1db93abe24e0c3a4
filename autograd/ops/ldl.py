"""``linalg.ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve``: the Bunch-Kaufman factorization
of a symmetric (or Hermitian) matrix, A = P L D L^T P^T, as LAPACK's ``sytrf``/``hetrf`` and
``sytrs``/``hetrs`` (through SciPy's LAPACK wrappers, on the host, one matrix of a batch at a
time).

The outputs are LAPACK's, as PyTorch's: ``LD`` holds L's multipliers below the diagonal and
the 1x1 and 2x2 blocks of D on and beside it (the lower triangle; the strict upper triangle
is zero), and ``pivots`` LAPACK's 1-based int32 interchanges (a negative pair marks a 2x2
block). Only ``ldl_solve`` is differentiable, in ``B``: X = A^-1 B with A symmetric gives
grad_B = A^-1 grad_X (A^-H for Hermitian), another solve with the same factors.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from ..checks import scalar_type_name, tensor_arg
from ..tensor import Tensor


def _lapack(name: str):
    try:
        from scipy.linalg import lapack
    except ImportError as e:
        raise ImportError(f"linalg.{name} runs LAPACK through SciPy, which is not installed: "
                          f"pip install scipy") from e
    return lapack


# PyTorch's named results (``torch.return_types.linalg_ldl_factor_ex``: .LD, .pivots, .info)
LDLFactorExResult = collections.namedtuple("linalg_ldl_factor_ex", "LD pivots info")
LDLFactorResult = collections.namedtuple("linalg_ldl_factor", "LD pivots")


def _outs(res: tuple, out, op: str) -> tuple:
    """``res`` (a named result) written into the tuple ``out`` (PyTorch's out= for the
    factorizations; these outputs have no derivative, so only dtype, shape and resizing
    apply)."""
    if out is None:
        return res
    from .decompositions import _exact
    if not isinstance(out, (tuple, list)) or len(out) != len(res):
        raise TypeError(f"{op}(): argument 'out' must be tuple of {len(res)} Tensors")
    return type(res)(*(_exact(r, o, op, op) for r, o in zip(res, out)))


def _square_batches(a: Tensor, op: str) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"torch.linalg.{op}: The input tensor A must have at least 2 "
                           f"dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"torch.linalg.{op}: A must be batches of square matrices, but they "
                           f"are {a.shape[-2]} by {a.shape[-1]} matrices")
    if not (a.dtype.is_floating_point or a.dtype.is_complex) or a.dtype.itemsize < 4 \
            or a.dtype.name == "bfloat16":
        raise RuntimeError(f"torch.linalg.{op}: Expected a floating point or complex tensor as "
                           f"input. Got {scalar_type_name(a.dtype)}")


def ldl_factor_ex(input: Tensor, *, hermitian: bool = False, check_errors: bool = False,
                  out=None) -> tuple:
    """``(LD, pivots, info)`` of the Bunch-Kaufman factorization of the symmetric (Hermitian
    with ``hermitian=True``) matrices ``A`` (..., n, n), read from their lower triangles;
    ``info`` (int32, per matrix) is LAPACK's: > 0 when D is exactly singular.

    Example:
        >>> LD, piv, info = tg.linalg.ldl_factor_ex(tg.tensor([[4., 2.], [2., 3.]]))
        >>> piv
        tensor([1, 2], dtype=tritongrad.int32)
    """
    A = input
    from .creation import tensor
    from ...runtime import dtype as dtypes
    a = tensor_arg(A, "linalg.ldl_factor_ex")
    _square_batches(a, "ldl_factor_ex")
    lapack = _lapack("ldl_factor")
    host = np.asarray(a.detach().cpu().numpy())
    n = host.shape[-1]
    # (the batch counted, not -1: NumPy cannot infer it when the matrices are empty)
    flat = host.reshape(math.prod(host.shape[:-2]), n, n)
    ld = np.zeros_like(flat)
    piv = np.zeros(flat.shape[:1] + (n,), np.int32)
    info = np.zeros(flat.shape[:1], np.int32)
    routine = "hetrf" if hermitian and a.dtype.is_complex else "sytrf"
    fn = lapack.get_lapack_funcs(routine, (flat[:1],))
    for i, m in enumerate(flat):
        if n:
            lu, ipiv, inf = fn(m, lower=1)
            ld[i], piv[i], info[i] = np.tril(lu), ipiv, inf
    if check_errors and (info > 0).any():
        raise RuntimeError(f"torch.linalg.ldl_factor_ex: The factorization could not be completed "
                           f"because the input is not invertible (info = {int(info.max())})")
    shape = host.shape
    return _outs(LDLFactorExResult(
        tensor(ld.reshape(shape), dtype=a.dtype, device=a.device),
        tensor(piv.reshape(shape[:-1]), dtype=dtypes.int32, device=a.device),
        tensor(info.reshape(shape[:-2]), dtype=dtypes.int32, device=a.device)),
        out, "linalg.ldl_factor_ex")


def ldl_factor(input: Tensor, *, hermitian: bool = False, out=None) -> tuple:
    """``(LD, pivots)`` of ``ldl_factor_ex``, raising when a matrix is singular."""
    A = input
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    if (info.cpu().numpy() > 0).any():
        raise RuntimeError("torch.linalg.ldl_factor: The factorization could not be completed "
                           "because the input is not invertible.")
    return _outs(LDLFactorResult(LD, pivots), out, "linalg.ldl_factor")


def _solve(ld: np.ndarray, piv: np.ndarray, b: np.ndarray, hermitian: bool) -> np.ndarray:
    lapack = _lapack("ldl_solve")
    routine = "hetrs" if hermitian and np.iscomplexobj(ld) else "sytrs"
    n = ld.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    count = math.prod(batch)  # (not -1: NumPy cannot infer it when the matrices are empty)
    ld = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape(count, n, n)
    piv = np.broadcast_to(piv, batch + piv.shape[-1:]).reshape(count, n)
    bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((count,) + b.shape[-2:])
    out = np.empty(bb.shape, np.result_type(ld, bb))
    fn = lapack.get_lapack_funcs(routine, (ld[:1],))
    for i in range(bb.shape[0] if out.size else 0):  # (LAPACK refuses empty matrices)
        x, info = fn(ld[i], piv[i], bb[i], lower=1)
        out[i] = x
    return out.reshape(batch + b.shape[-2:])


def _host_solve(ld, piv, rhs: Tensor, hermitian: bool) -> Tensor:
    from .creation import tensor
    x = _solve(ld, piv, rhs.detach().cpu().numpy(), hermitian)
    return tensor(x, dtype=rhs.dtype, device=rhs.device)


def _ldl_solve_function():
    from ..function import Function

    class LdlSolveBackward(Function):
        """X = A^-1 B on the host; grad_B = A^-H grad_X, which for a symmetric or Hermitian A
        is A^-1 grad_X, and for a complex symmetric one conj(A^-1 conj(grad_X))."""

        @staticmethod
        def forward(ctx, rhs, ld, piv, hermitian):
            ctx.factors = (ld, piv, hermitian)
            return _host_solve(ld, piv, rhs, hermitian)

        @staticmethod
        def backward(ctx, g):
            # (through this Function again, so that create_graph records the solve: the
            # gradient is linear in g, and its own derivative is the same solve)
            ld, piv, hermitian = ctx.factors
            if np.iscomplexobj(ld) and not hermitian:
                return LdlSolveBackward.apply(g.conj(), ld, piv, hermitian).conj(), None, None, \
                    None
            return LdlSolveBackward.apply(g, ld, piv, hermitian), None, None, None
    return LdlSolveBackward


_FUNCTION = []


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False,
              out=None) -> Tensor:
    """X with A X = B, A given by ``ldl_factor``'s ``LD`` and ``pivots``; batches broadcast.
    Differentiable in ``B`` (not in ``LD``, as the factors' derivative is not defined).

    Raises:
        RuntimeError: PyTorch's messages for mismatched dtypes or sizes.

    Example:
        >>> A = tg.tensor([[4., 2.], [2., 3.]])
        >>> tg.linalg.ldl_solve(*tg.linalg.ldl_factor(A), tg.tensor([[2.], [3.]]))
        tensor([[0.],
                [1.]])
    """
    ld, b = tensor_arg(LD, "linalg.ldl_solve"), tensor_arg(B, "linalg.ldl_solve")
    if b.dtype is not ld.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{scalar_type_name(b.dtype)} and A of type "
                           f"{scalar_type_name(ld.dtype)} instead.")
    if b.ndim < 2 or b.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the "
                           f"equation AX = B ({ld.shape[-2]}x{ld.shape[-1]} and "
                           f"{b.shape[-2] if b.ndim >= 2 else 1}x{b.shape[-1]})")
    if not _FUNCTION:  # (Function needs the ops loaded: built on first use)
        _FUNCTION.append(_ldl_solve_function())
    X = _FUNCTION[0].apply(b, ld.detach().cpu().numpy(),
                           pivots.cpu().numpy().astype(np.int32), hermitian)
    from .decompositions import _exact
    return _exact(X, out, "linalg.ldl_solve", "linalg_ldl_solve")
