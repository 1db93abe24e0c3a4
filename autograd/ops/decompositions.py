"""Matrix factorizations and solvers (``torch.linalg``'s inv, det, slogdet, solve, cholesky, qr,
eigh, svd, solve_triangular, matrix_exp, lu_factor and what is built from them), with
derivatives.

Forwards run NumPy's LAPACK (kernels/numpy/decompositions.py) on the CPU's arrays. There are no
Triton solver kernels, so a CUDA tensor takes a host round trip: ``runtime.memory.to_host``
queues the copy on the current stream and waits for that stream (the synchronization: the
input's pending kernels finish first), NumPy factorizes, and the results are copied back up on
the current stream. Every op here therefore synchronizes the host with the current stream
on CUDA.

Derivative rules are PyTorch's (FunctionsManual.cpp), written in Tensor ops over the ops of
this module and the rest of the library (``_tensor_rule``): on a backward that records nothing
they run on the arrays wrapped as Tensors under no_grad, and under ``create_graph=True`` they
record, so second derivatives (gradgradcheck) come from the same line. Multi-output
factorizations save all their outputs (``keep_outputs``), as PyTorch's do. The eigenvector and
singular-vector rules assume distinct eigen/singular values (at a degenerate spectrum the
gradient is inf/NaN, as PyTorch's) and are correct for gauge-invariant losses; for complex
inputs ``eigh`` and ``svd`` raise PyTorch's error when the loss depends on the phase of the
vectors. ``det``'s rule is ``g adj(A)^H``: ``det(A) A^-H`` for an invertible ``A``, from an SVD
where ``|det A| < 100 eps``, as PyTorch's, so it is finite at singular matrices too.
"""

from __future__ import annotations

import collections
import functools

import numpy as np

from ...kernels.numpy import decompositions as _np_dec
from ...runtime import dtype as dtypes
from .. import dispatch
from ..autocast import autocast_op
from ..checks import kernel_not_implemented, scalar_type_name, tensor_arg
from ..dispatch import Primitive, apply
from ..grad_mode import no_grad
from ..registry import OpInfo
from ..tensor import Tensor, array_meta, make
from .elementwise import _result

__all__ = ["LinAlgError", "inv", "inv_ex", "det", "slogdet", "logdet", "solve", "cholesky",
           "cholesky_ex", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv",
           "solve_triangular", "matrix_exp", "lstsq", "lu_factor", "lu_factor_ex", "multi_dot",
           "cross", "vander", "inverse", "cholesky_solve", "svd_legacy", "pinverse",
           "triangular_solve"]


class LinAlgError(RuntimeError):
    """A factorization failed (a singular or not positive-definite input): PyTorch's
    ``torch.linalg.LinAlgError``, a RuntimeError."""


def _named(name: str, fields: str):
    return collections.namedtuple(name, fields)


SlogdetResult = _named("linalg_slogdet", "sign logabsdet")
QRResult = _named("linalg_qr", "Q R")
EighResult = _named("linalg_eigh", "eigenvalues eigenvectors")
SVDResult = _named("linalg_svd", "U S Vh")
SVDLegacyResult = _named("svd", "U S V")
InvExResult = _named("linalg_inv_ex", "inverse info")
CholeskyExResult = _named("linalg_cholesky_ex", "L info")
LstsqResult = _named("linalg_lstsq", "solution residuals rank singular_values")
LUFactorResult = _named("linalg_lu_factor", "LU pivots")
LUFactorExResult = _named("linalg_lu_factor_ex", "LU pivots info")
# (torch.linalg's results are named linalg_*, the legacy torch.* functions' plain: PyTorch's
# torch.return_types)
LegacySlogdetResult = _named("slogdet", "sign logabsdet")
LegacyQRResult = _named("qr", "Q R")
TriangularSolveResult = _named("triangular_solve", "solution cloned_coefficient")

# -- plumbing: host kernels, checks, rules in Tensor ops -------------------------------------------


def _host(fn, arrays, *params, fail=None):
    """``fn(*arrays, *params)`` on host arrays: directly for CPU arrays, else on host copies
    (``to_host`` waits for the current stream) with the results copied back to the device.
    ``fail(batch, info)`` makes the error for a failed factorization."""
    dev = array_meta(arrays[0])[0]
    try:
        if dev.type == "cpu":
            out = fn(*arrays, *params)
            # (arrays, not NumPy's 0-d scalars; a plain tuple: NumPy's named results are not
            # multiple outputs to the dispatcher)
            return tuple(map(np.asarray, out)) if isinstance(out, tuple) else np.asarray(out)
        from ...runtime import memory
        out = fn(*[memory.to_host(a) for a in arrays], *params)
    except _np_dec.LinAlgFailure as e:
        raise (LinAlgError(e.message) if e.message else fail(e.batch, e.info)) from None

    def up(o):
        o = np.ascontiguousarray(o)
        return memory.to_device(o, dev, dtypes.from_numpy_dtype(o.dtype))
    return tuple(up(o) for o in out) if isinstance(out, tuple) else up(out)


def _batch(op: str, batch) -> str:
    return f"{op}: " if batch is None else f"{op}: (Batch element {batch}): "


def _singular(op: str):
    return lambda batch, info: LinAlgError(
        f"{_batch(op, batch)}The diagonal element {info} is zero, the inversion could not be "
        f"completed because the input matrix is singular.")


def _not_pd(op: str):
    return lambda batch, info: LinAlgError(
        f"{_batch(op, batch)}The factorization could not be completed because the input is not "
        f"positive-definite (the leading minor of order {info} is not positive-definite).")


def _matrix(A, op: str, name: str = "A", square: bool = True, kernel: str | None = None,
            every_dtype: bool = False) -> Tensor:
    """``A`` checked as PyTorch's linalg functions check it: a floating or complex tensor of
    at least 2 dims (square ones where ``square``), not half precision. Where PyTorch has no
    such check and its CPU ``kernel`` refuses the dtype instead (half precision, or with
    ``every_dtype`` any dtype that is not float or complex), the refusal is that kernel's:
    NotImplementedError (a RuntimeError) '"lu_cpu" not implemented for 'Half''."""
    tensor_arg(A, op, name)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    dt = A.dtype
    low = dt.itemsize < 4 and (dt.is_floating_point or dt.is_complex)
    by_kernel = kernel is not None and (low or (every_dtype and not (
        dt.is_floating_point or dt.is_complex)))
    if not by_kernel:
        if not (dt.is_floating_point or dt.is_complex):
            raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                               f"Got {scalar_type_name(dt)}")
        if low:
            raise RuntimeError(f"{op}: Low precision dtypes not supported. Got "
                               f"{scalar_type_name(dt)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if by_kernel:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dt)}\'')
    return A


def _lapack_float(A: Tensor) -> None:
    """PyTorch's check (no op named) in the functions built on its LAPACK dispatch helper
    (lstsq, matrix_rank): float, double and their complex types only."""
    dt = A.dtype
    if not (dt.is_floating_point or dt.is_complex) or dt.itemsize < 4:
        raise RuntimeError("This function doesn't handle types other than float and double")


def _same_dtype(A: Tensor, B: Tensor, op: str) -> None:
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{scalar_type_name(A.dtype)} and B of type "
                           f"{scalar_type_name(B.dtype)} instead")


def _wrap(a):
    return a if a is None or isinstance(a, Tensor) else make(a)


def _tensor_rule(rule):
    """A ``vjp`` written in Tensor ops: recorded as is under create_graph (``k`` is
    ``ops.traced``), else run on the backend arrays wrapped as Tensors under no_grad. The rules
    here compose factorizations (solves, matrix_exp) that the kernel contract does not have."""
    def vjp(ctx, k, saved, *grads):
        if k is dispatch.traced:
            return rule(ctx, saved, *grads)
        with no_grad():
            out = rule(ctx, [_wrap(s) for s in saved], *[_wrap(g) for g in grads])
        if isinstance(out, tuple):
            return tuple(None if o is None else o._data for o in out)
        return out._data
    return staticmethod(vjp)


def _cj(x: Tensor) -> Tensor:
    """``x.conj()`` for complex ``x``; real ``x`` itself (no conj node in the graph)."""
    return x.conj() if x.dtype.is_complex else x


def _mH(x: Tensor) -> Tensor:
    return _cj(x.transpose(-2, -1))


def _trace(X: Tensor) -> Tensor:
    return X.diagonal(0, -2, -1).sum(-1)


def _zero_if_none(g, like: Tensor) -> Tensor:
    return like.new_zeros(like.shape) if g is None else g


_C10_NAMES = {"float32": "float", "float64": "double", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>", "int32": "int", "int64": "long int",
              "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _c10(dt) -> str:
    return _C10_NAMES.get(dt.name, dt.name)


def _safe_cast(t: Tensor, out, op: str) -> None:
    """PyTorch's refusal of an ``out`` the result does not cast to safely (a float result
    into an integer ``out``), in the words of its linalg functions whose ``out`` may cast."""
    from .elementwise import _can_cast
    if isinstance(out, Tensor) and not _can_cast(t.dtype, out.dtype):
        raise RuntimeError(f"{op}: Expected result to be safely castable from "
                           f"{scalar_type_name(t.dtype)} dtype, but got result with dtype "
                           f"{scalar_type_name(out.dtype)}")


def _exact(t: Tensor, out, op: str, kernel: str, cast: bool | str = False) -> Tensor:
    """``_result`` for the linalg functions whose ``out`` must have the result's dtype (they
    refuse, rather than cast, as PyTorch's do, unless ``cast``; a string ``cast`` names the
    function in PyTorch's refusal of an unsafe cast, :func:`_safe_cast`); ``kernel`` is the
    node PyTorch names when an input requires grad."""
    if out is None:
        return t
    if isinstance(cast, str):
        _safe_cast(t, out, cast)
    if not cast and isinstance(out, Tensor) and out.dtype is not t.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_c10(t.dtype)}, but got "
                           f"{_c10(out.dtype)} instead")
    try:
        return _result(t, out, op)
    except RuntimeError as e:
        said = f"{op}(): functions with out="  # (_result names the op: PyTorch the kernel)
        if str(e).startswith(said):
            raise RuntimeError(f"{kernel}(): {str(e)[len(op) + 4:]}") from None
        raise


def _castable(t: Tensor, out, op: str, what: str, kernel: str) -> Tensor:
    """``_exact`` with a cast for the linalg functions whose ``out`` may be of any dtype the
    result casts to safely (PyTorch's checks name the op and the result, ``what``)."""
    from .elementwise import _can_cast
    if isinstance(out, Tensor) and not _can_cast(t.dtype, out.dtype):
        raise RuntimeError(f"{op}: Expected {what} to be safely castable from "
                           f"{scalar_type_name(t.dtype)} dtype to "
                           f"{scalar_type_name(out.dtype)} dtype.")
    return _exact(t, out, op.removeprefix("torch."), kernel, cast=True)


def _composite_out(t: Tensor, out, op: str) -> Tensor:
    """``out=`` as PyTorch's composite linalg functions write it (cond, matrix_norm, norm,
    tensorinv, tensorsolve): ``out.copy_(result)``, recorded (``CopyBackwards``) when the
    result requires grad, where the other functions refuse (:func:`_result`)."""
    if out is None or not (isinstance(out, Tensor) and t.requires_grad):
        return _result(t, out, op)
    from .elementwise import _can_cast, resize_output
    if not _can_cast(t.dtype, out.dtype):
        raise RuntimeError(f"result type {scalar_type_name(t.dtype)} can't be cast to the "
                           f"desired output type {scalar_type_name(out.dtype)}")
    resize_output(out, tuple(t.shape))
    return out.copy_(t)


def _tuple_out(op: str, kernel: str):
    """Gives a multi-output function PyTorch's ``out=``: a tuple (or list) of tensors, one
    per result, each written as :func:`_exact` writes (same dtype, resized, refused when
    autograd would need it); the results returned are those tensors, in the function's named
    tuple."""
    def deco(fn):
        @functools.wraps(fn)
        def with_out(*args, out=None, **kwargs):
            res = fn(*args, **kwargs)
            if out is None:
                return res
            if not isinstance(out, (tuple, list)) or len(out) != len(res):
                raise TypeError(f"{op}(): argument 'out' must be tuple of {len(res)} Tensors, "
                                f"not {type(out).__name__}")
            written = tuple(_exact(r, o, op, kernel) for r, o in zip(res, out))
            return type(res)(*written) if hasattr(res, "_fields") else written
        return with_out
    return deco


# -- inverse, determinant, solve -------------------------------------------------------------------


class LinalgInvExBackward0(Primitive):
    """X = A^-1: dA = -X^H g X^H."""

    __slots__ = ()
    op_name = "linalg_inv_ex"
    saved_names = ("inverse",)
    save_output = True

    @staticmethod
    def forward(ctx, k, a, op):
        return _host(_np_dec.inv, (a,), fail=_singular(op))

    vjp = complex_vjp = _tensor_rule(
        lambda ctx, saved, g: -(_mH(saved[0]) @ g @ _mH(saved[0])))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, op):
        return -(out @ tangents[0] @ out)  # dX = -X dA X

    complex_jvp = jvp  # (A^-1 is holomorphic in A: the same formula for complex A)


@autocast_op("float32 on cpu")
def inv(A: Tensor, *, out=None) -> Tensor:
    """The inverse of each square matrix of ``A`` (..., n, n). Raises LinAlgError for a
    singular matrix. On CUDA: a host round trip (module docstring).

    Example:
        >>> tg.linalg.inv(tg.tensor([[2., 0.], [0., 4.]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    _matrix(A, "linalg.inv")
    return _exact(apply(LinalgInvExBackward0, (A,), "linalg.inv"), out, "linalg.inv",
                  "linalg_inv_ex")


def inverse(input: Tensor, *, out=None) -> Tensor:
    """``tritongrad.inverse``: :func:`inv`."""
    return inv(input, out=out)


@autocast_op("float32 on cpu")
@_tuple_out("linalg.inv_ex", "linalg_inv_ex")
def inv_ex(A: Tensor, *, check_errors: bool = False, out=None) -> InvExResult:
    """(inverse, info): ``info`` (int32, one per matrix) is 0 when the matrix was inverted.
    A singular matrix raises LinAlgError when ``check_errors``, else its ``info`` is the
    1-based index of the zero pivot and its inverse is NaN."""
    _matrix(A, "linalg.inv")  # (PyTorch's checks name linalg.inv)
    if check_errors:  # (the error names linalg.inv_ex, as PyTorch's)
        return InvExResult(apply(LinalgInvExBackward0, (A,), "linalg.inv_ex"), _info(A, None))
    try:
        return InvExResult(inv(A), _info(A, None))
    except LinAlgError:
        a = A.detach().cpu().numpy()
        mats = a.reshape((-1,) + a.shape[-2:])
        infos = np.array([_np_dec._zero_pivot(m) for m in mats], np.int32)
        x = np.array([np.full_like(m, np.nan) if i else np.linalg.inv(m)
                      for m, i in zip(mats, infos)]).reshape(a.shape)
        from .creation import tensor
        return InvExResult(tensor(x, device=A.device), _info(A, infos))


def _info(A: Tensor, values) -> Tensor:
    from .creation import tensor, zeros
    from ...runtime.dtype import int32
    if values is None:
        return zeros(A.shape[:-2], dtype=int32, device=A.device)
    return tensor(values.reshape(tuple(A.shape[:-2])), dtype=int32, device=A.device)


class LinalgSlogdetBackward0(Primitive):
    """(sign, log|det A|): dA = g_logabs A^-H (and, for complex A, the sign's phase)."""

    __slots__ = ()
    op_name = "linalg_slogdet"
    saved_names = ("A", "sign", "logabsdet")
    save_inputs = (0,)
    keep_outputs = (0, 1)

    @staticmethod
    def forward(ctx, k, a):
        return _host(_np_dec.slogdet, (a,))

    @staticmethod
    def _rule(ctx, saved, g_sign, g_logabs):
        A, sign = saved[0], saved[1]
        g = _zero_if_none(g_logabs, saved[2])
        if A.dtype.is_complex:
            g = g.to(A.dtype)
            if g_sign is not None:
                # the sign's phase: d sign = i Im(tr(A^-1 dA)) sign
                from .complex_parts import imag
                g = g + 1j * imag(sign.conj() * g_sign).to(A.dtype)
        # a singular A (logabsdet -inf) has no gradient: non-finite values, not an error, as
        # PyTorch's (whose LU solve on the singular factors gives infs and NaNs)
        return g.unsqueeze(-1).unsqueeze(-1) * _mH(inv_ex(A).inverse)

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out):
        # d log det A = tr(A^-1 dA): its real part moves logabsdet, its imaginary one the sign
        (A,), (dA,), (sign, _) = primals, tangents, out
        tr = _trace(solve(A, dA))
        if not A.dtype.is_complex:
            return sign.new_zeros(sign.shape), tr
        from .complex_parts import imag, real
        return sign * (1j * imag(tr)).to(sign.dtype), real(tr)

    complex_jvp = jvp  # (written for both: sign and logabsdet are not holomorphic)


@_tuple_out("linalg.slogdet", "_linalg_slogdet")
def slogdet(A: Tensor, *, out=None) -> SlogdetResult:
    """(sign, logabsdet) of each square matrix: ``det A = sign * exp(logabsdet)``; a singular
    matrix gives sign 0 and logabsdet -inf."""
    _matrix(A, "linalg.slogdet")
    return SlogdetResult(*apply(LinalgSlogdetBackward0, (A,)))


class LinalgDetBackward0(Primitive):
    """d = det A: dA = g conj(d) A^-H."""

    __slots__ = ()
    op_name = "linalg_det"
    saved_names = ("A", "result")
    save_inputs = (0,)
    save_output = True

    @staticmethod
    def forward(ctx, k, a):
        return _host(_np_dec.det, (a,))

    vjp = complex_vjp = _tensor_rule(lambda ctx, saved, g: _det_grad(saved[0], saved[1], g))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out):
        # d det = tr(adj(A) dA): adj(A)^T is the conjugate of the gradient at g = 1, which is
        # det A^-1 where A is invertible and comes from an SVD near a singular A (_det_grad),
        # so a singular A has a tangent too (det A^-1 dA would need A^-1)
        adj_t = _cj(_det_grad(primals[0], out, out.new_ones(out.shape)))
        return (adj_t * tangents[0]).sum((-2, -1))

    complex_jvp = jvp  # (det is holomorphic in A: the same formula for complex A)


def _det_grad(A: Tensor, d: Tensor, g: Tensor) -> Tensor:
    """g adj(A)^H, the gradient of det. Where |det A| < 100 eps (PyTorch's threshold) adj(A)
    comes from an SVD, A = U S V^H: adj(A) = conj(det U det V^H) V diag(prod_{j != i} s_j)
    U^H, finite at a singular A; elsewhere adj(A) = det(A) A^-1."""
    from .creation import eye
    from .elementwise import where
    from .scans import cumprod
    from .shape import cat
    small = d.abs() < 100 * dtypes.finfo(A.dtype).eps
    gd = (g * _cj(d)).unsqueeze(-1).unsqueeze(-1)
    if not bool(small.any()):
        return gd * _mH(inv(A))
    mask = small.unsqueeze(-1).unsqueeze(-1)
    n = A.shape[-1]
    safe = where(mask, eye(n, dtype=A.dtype, device=A.device), A)  # (inv of the others only)
    regular = gd * _mH(inv(safe))
    U, S, Vh = svd(A)
    alpha = _cj(det(U) * det(Vh))
    one = S[..., :1] * 0 + 1
    before = cat([one, cumprod(S[..., :-1], -1)], -1)  # prod_{j < i} s_j
    after = cat([cumprod(S.flip(-1)[..., :-1], -1).flip(-1), one], -1)  # prod_{j > i} s_j
    D = (g * alpha).unsqueeze(-1) * (before * after)
    singular = (U * D.unsqueeze(-2).to(U.dtype)) @ Vh
    return where(mask, singular, regular)


def det(A: Tensor, *, out=None) -> Tensor:
    """The determinant of each square matrix of ``A``."""
    _matrix(A, "linalg.det", kernel="lu_cpu")
    return _exact(apply(LinalgDetBackward0, (A,)), out, "linalg.det", "_linalg_det")


def _det(input: Tensor) -> Tensor:
    """``tritongrad.det(input)`` and ``Tensor.det()``: :func:`det` under PyTorch's top-level
    name for the matrix, ``input`` (``linalg.det`` names it ``A`` and takes ``out=``;
    ``torch.det`` has no ``out=``)."""
    return det(input)


def _slogdet(input: Tensor, *, out=None) -> LegacySlogdetResult:
    """``tritongrad.slogdet(input)`` and ``Tensor.slogdet()``: :func:`slogdet` under PyTorch's
    top-level name for the matrix, ``input`` (``linalg.slogdet`` names it ``A``)."""
    return LegacySlogdetResult(*slogdet(input, out=out))


_det.__name__ = _det.__qualname__ = "det"
_slogdet.__name__ = _slogdet.__qualname__ = "slogdet"


def logdet(input: Tensor) -> Tensor:
    """``log(det A)``: NaN where the determinant is negative, -inf where it is 0 (real A);
    ``log|det A| + log(sign)`` for complex A."""
    sign, logabs = slogdet(_matrix(input, "logdet", "input"))
    from .elementwise import where
    if input.dtype.is_complex:
        return logabs.to(input.dtype) + sign.log()
    return where(sign < 0, float("nan"), logabs)


class LinalgSolveExBackward0(Primitive):
    """X = A^-1 B (B a batch of matrices): dB = A^-H g, dA = -dB X^H."""

    __slots__ = ()
    op_name = "linalg_solve_ex"
    save_inputs = (0,)
    save_output = True

    @staticmethod
    def forward(ctx, k, a, b):
        return _host(_np_dec.solve, (a, b), fail=lambda batch, info: LinAlgError(
            f"torch.linalg.solve: {'' if batch is None else f'(Batch element {batch}): '}"
            f"The solver failed because the input matrix is singular."))

    @staticmethod
    def _rule(ctx, saved, g):
        A, X = saved
        gB = solve(_mH(A), g)
        return -(gB @ _mH(X)), gB

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out):
        (A, _), (dA, dB) = primals, tangents
        rhs = _zero_if_none(dB, out)
        if dA is not None:
            rhs = rhs - dA @ out
        return solve(A, rhs)  # dX = A^-1 (dB - dA X)

    complex_jvp = jvp  # (A^-1 B is holomorphic in A and B)


def _vector_rhs(A: Tensor, B: Tensor) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-D or has A's batch shape."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _broadcast_batches(A: Tensor, B: Tensor) -> tuple[Tensor, Tensor]:
    """``A`` and ``B`` expanded to one batch shape (their matrix dims kept)."""
    from .elementwise import broadcast_shapes
    batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    return A.expand(batch + tuple(A.shape[-2:])), B.expand(batch + tuple(B.shape[-2:]))


@autocast_op("float32 on cpu")
def solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    """The solution X of ``A X = B`` (``left``) or ``X A = B``, batch dims broadcast; ``B`` may
    be a (batch of) vector(s). Raises LinAlgError for a singular ``A``.

    Example:
        >>> tg.linalg.solve(tg.tensor([[2., 0.], [0., 4.]]), tg.tensor([2., 2.]))
        tensor([1.0000, 0.5000])
    """
    op = "linalg.solve"
    _matrix(A, op, kernel="lu_cpu")
    tensor_arg(B, op, "B")
    _same_dtype(A, B, op)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        if B.ndim == 1 and A.shape[-1] != 1:  # a vector B is a column: n x 1, never 1 x n
            raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation XA = B "
                               f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[0]}x1)")
        # (contiguous, as PyTorch's result is here: its LAPACK writes the transposed solve
        # column-major)
        return _exact(solve(A.mT, B.mT).mT.contiguous(), out, op, "_linalg_solve_ex")
    vector = _vector_rhs(A, B)
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {Bm.shape[-2]}x{Bm.shape[-1]})")
    Ab, Bb = _broadcast_batches(A, Bm)
    X = apply(LinalgSolveExBackward0, (Ab, Bb))
    return _exact(X.squeeze(-1) if vector else X, out, op, "_linalg_solve_ex")


# -- cholesky ------------------------------------------------------------------------------------


def _phi(X: Tensor) -> Tensor:
    """The lower triangle of ``X`` with its diagonal halved."""
    L = X.tril()
    return L - 0.5 * L.diagonal(0, -2, -1).diag_embed()


class LinalgCholeskyExBackward0(Primitive):
    """A = L L^H (Murray 2016), PyTorch's cholesky_backward: with P = tril(L^H g),
    dA = L^-H (P + tril(P, -1)^H) / 2 L^-1. Real: the symmetric gradient; complex: P's diagonal
    keeps its imaginary part (PyTorch's convention; a Hermitian projection of it is the
    Hermitian-symmetric gradient)."""

    __slots__ = ()
    op_name = "linalg_cholesky_ex"
    saved_names = ("L",)
    save_output = True

    @staticmethod
    def forward(ctx, k, a, op):
        return _host(_np_dec.cholesky, (a,), fail=_not_pd(op))

    @staticmethod
    def _rule(ctx, saved, g):
        L = saved[0]
        P = (_mH(L) @ g).tril()
        P = 0.5 * (P + _mH(P.tril(-1)))
        P = solve_triangular(_mH(L), P, upper=True)
        return solve_triangular(L, P, upper=False, left=False)

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, op):
        # dL = L Phi(L^-1 dA L^-H), dA as the forward reads A (its lower triangle, Hermitian)
        L, dA = out, _copyltu(tangents[0])
        Y = solve_triangular(L, _mH(solve_triangular(L, dA, upper=False)), upper=False)
        return L @ _phi(Y)

    complex_jvp = jvp  # (written with conjugate transposes: it holds for complex A)


def _eye_like(A: Tensor) -> Tensor:
    from .creation import eye
    return eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)


@autocast_op("float32 on cpu")
def cholesky(input: Tensor, *, upper: bool = False, out=None) -> Tensor:
    """The Cholesky factor of each Hermitian positive-definite matrix (read from its lower
    triangle): lower ``L`` with ``A = L L^H``, or ``U = L^H`` when ``upper``. Raises
    LinAlgError when a matrix is not positive-definite.

    Example:
        >>> tg.linalg.cholesky(tg.tensor([[4., 2.], [2., 5.]]))
        tensor([[2., 0.],
                [1., 2.]])
    """
    A = input
    op = "linalg.cholesky"
    _matrix(A, op, kernel="cholesky_cpu")
    L = apply(LinalgCholeskyExBackward0, (A,), op)
    return _exact(_mH(L) if upper else L, out, op, "linalg_cholesky_ex")


def cholesky_legacy(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """``tritongrad.cholesky`` (PyTorch's older interface): :func:`cholesky`, whose ``out``
    (unlike linalg.cholesky's) may be of a dtype the result casts to."""
    L = cholesky(input, upper=upper)
    return L if out is None else _castable(L, out, "cholesky", "result", "linalg_cholesky_ex")


@autocast_op("float32 on cpu")
@_tuple_out("linalg.cholesky_ex", "linalg_cholesky_ex")
def cholesky_ex(input: Tensor, *, upper: bool = False, check_errors: bool = False,
                out=None) -> CholeskyExResult:
    """(L, info): ``info`` (int32 per matrix) is 0 on success, else the order of the leading
    minor that is not positive-definite (and L is NaN), unless ``check_errors`` raises."""
    A = input
    op = "linalg.cholesky_ex"
    _matrix(A, "linalg.cholesky", kernel="cholesky_cpu")
    if check_errors:  # (the error names linalg.cholesky_ex, as PyTorch's)
        L = apply(LinalgCholeskyExBackward0, (A,), op)
        return CholeskyExResult(_mH(L) if upper else L, _info(A, None))
    try:
        return CholeskyExResult(cholesky(A, upper=upper), _info(A, None))
    except LinAlgError:
        a = A.detach().cpu().numpy()
        mats = a.reshape((-1,) + a.shape[-2:])
        infos = np.array([_np_dec._not_positive_definite(m) for m in mats], np.int32)
        L = np.array([np.full_like(m, np.nan) if i else _np_dec.cholesky(m)
                      for m, i in zip(mats, infos)]).reshape(a.shape)
        if upper:
            L = np.conj(np.swapaxes(L, -1, -2))
        from .creation import tensor
        return CholeskyExResult(tensor(L, device=A.device), _info(A, infos))


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *,
                   out=None) -> Tensor:
    """The solution X of ``A X = B`` (``B`` is ``input``) given A's Cholesky factor ``L``
    (``input2``: ``A = L L^H``, or ``U^H U`` when ``upper``): two triangular solves,
    differentiable through them."""
    op = "cholesky_solve"
    B, L = input, input2
    if isinstance(B, Tensor) and B.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                           f"instead")
    _matrix(B, op, "B", square=False, kernel="cholesky_solve_cpu", every_dtype=True)
    _matrix(L, op, "A")
    _same_dtype(L, B, op)
    Lb, Bb = _broadcast_batches(L, B)
    if upper:
        Y = solve_triangular(_mH(Lb), Bb, upper=False)
        X = solve_triangular(Lb, Y, upper=True)
    else:
        Y = solve_triangular(Lb, Bb, upper=False)
        X = solve_triangular(_mH(Lb), Y, upper=True)
    return _exact(X, out, op, "cholesky_solve", cast=op)


# -- triangular solve ------------------------------------------------------------------------------


class LinalgSolveTriangularBackward0(Primitive):
    """X = A^-1 B (``left``) or B A^-1 with A triangular: dB = A^-H g (g A^-H), dA = -dB X^H
    (-X^H dB) restricted to A's triangle (strictly, when unitriangular)."""

    __slots__ = ()
    op_name = "linalg_solve_triangular"
    save_inputs = (0,)
    save_output = True

    @staticmethod
    def forward(ctx, k, a, b, upper, left, unitriangular):
        ctx.upper, ctx.left, ctx.unit = upper, left, unitriangular
        return _host(_np_dec.solve_triangular, (a, b), upper, left, unitriangular)

    @staticmethod
    def _rule(ctx, saved, g):
        A, X = saved
        upper, left, unit = ctx.upper, ctx.left, ctx.unit
        gB = solve_triangular(_mH(A), g, upper=not upper, left=left, unitriangular=unit)
        gA = -(gB @ _mH(X)) if left else -(_mH(X) @ gB)
        gA = gA.triu(int(unit)) if upper else gA.tril(-int(unit))
        return gA, gB

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, upper, left, unitriangular):
        # X = T^-1 B: dX = T^-1 (dB - dT X) (left), (dB - X dT) T^-1 (right)
        (A, _), (dA, dB) = primals, tangents
        rhs = _zero_if_none(dB, out)
        if dA is not None:
            dT = dA.triu(int(unitriangular)) if upper else dA.tril(-int(unitriangular))
            rhs = rhs - (dT @ out if left else out @ dT)
        return solve_triangular(A, rhs, upper=upper, left=left, unitriangular=unitriangular)

    complex_jvp = jvp  # (T^-1 B is holomorphic in T and B)


def solve_triangular(input: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out=None) -> Tensor:
    """The solution X of ``A X = B`` (``left``) or ``X A = B`` for triangular ``A`` (only its
    ``upper`` or lower triangle is read; its diagonal is taken as ones when
    ``unitriangular``); batch dims broadcast."""
    A = input
    op = "linalg.solve_triangular"
    _matrix(A, op, kernel="triangular_solve_cpu", every_dtype=True)
    _matrix(B, op, "B", square=False)
    _same_dtype(A, B, op)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    Ab, Bb = _broadcast_batches(A, B)
    X = apply(LinalgSolveTriangularBackward0, (Ab, Bb), bool(upper), bool(left),
              bool(unitriangular))
    if isinstance(out, Tensor) and out.dtype is not X.dtype:  # (PyTorch's words here)
        raise RuntimeError(f"expected scalar type {scalar_type_name(X.dtype)} but found "
                           f"{scalar_type_name(out.dtype)}")
    return _exact(X, out, op, "linalg_solve_triangular")


def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out=None) -> TriangularSolveResult:
    """``tritongrad.triangular_solve`` (PyTorch's older interface): (X, a copy of A broadcast
    to the batch shape) with X the solution of ``A X = input`` (``A^T X = input`` when
    ``transpose``). ``out``: a pair of tensors for (solution, cloned_coefficient)."""
    op = "triangular_solve"
    tensor_arg(input, op, "input")
    tensor_arg(A, op, "A")
    for t, name in ((input, "self"), (A, "A")):
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: The input tensor {name} must have at "
                               f"least 2 dimensions.")
    M = A.mT if transpose else A
    X = solve_triangular(M, input, upper=upper != bool(transpose),
                         unitriangular=unitriangular)
    C = A.expand(tuple(X.shape[:-2]) + tuple(A.shape[-2:])).clone()
    if out is None:
        return TriangularSolveResult(X, C)
    return TriangularSolveResult(_exact(X, out[0], op, op), _exact(C, out[1], op, op))


# -- QR, eigh, SVD ---------------------------------------------------------------------------------


def _copyltu(M: Tensor) -> Tensor:
    """The Hermitian matrix with ``M``'s lower triangle: tril(M, -1) + tril(M, -1)^H with the
    real part of M's diagonal (a Hermitian matrix's diagonal is real; a complex M's imaginary
    diagonal would otherwise stay, which made complex QR's gradient wrong)."""
    if not M.dtype.is_complex:
        return M.tril() + _mH(M.tril(-1))
    low = M.tril(-1)
    return low + _mH(low) + M.diagonal(0, -2, -1).real.diag_embed().to(M.dtype)


class LinalgQrBackward0(Primitive):
    """A = Q R (reduced or complete with m >= n, or square): with M = R gR^H - gQ^H Q,
    dA = (gQ + Q copyltu(M)) R^-H (Walter & Lehmann; PyTorch's linalg_qr_backward).

    Wide A (m < n, Q square in either mode) splits as A = [X | Y], R = [U | V] with X = Q U
    square and Y = Q V: X's rule with gQ + Y gV^H for gQ and gU for gR, and dY = Q gV."""

    __slots__ = ()
    op_name = "linalg_qr"
    saved_names = ("Q", "R")
    keep_outputs = (0, 1)
    _saved_mode = property(lambda self: self.mode)  # (PyTorch's non-tensor saved value)

    @staticmethod
    def forward(ctx, k, a, mode):
        ctx.mode = mode
        return _host(_np_dec.qr, (a,), mode)

    @staticmethod
    def _rule(ctx, saved, gQ, gR):
        Q, R = saved
        _qr_differentiable(ctx.mode, Q, R)
        m, n = Q.shape[-2], R.shape[-1]
        gQ, gR = _zero_if_none(gQ, Q), _zero_if_none(gR, R)
        if m < n:  # wide: the square X = Q U, then Y = Q V
            U, V, gU, gV = R[..., :m], R[..., m:], gR[..., :m], gR[..., m:]
            gX = LinalgQrBackward0._rule(ctx, (Q, U), gQ + (Q @ V) @ _mH(gV), gU)
            from .shape import cat
            return cat([gX, Q @ gV], -1)
        M = R @ _mH(gR) - _mH(gQ) @ Q
        b = gQ + Q @ _copyltu(M)
        # b R^-H: solve X R^H = b, R^H lower triangular
        return solve_triangular(_mH(R), b, upper=False, left=False)

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, mode):
        # dA R^-1 = dQ + Q dR R^-1 and X = Q^H dA R^-1 = Q^H dQ + dR R^-1: a skew-Hermitian
        # part (Q^H dQ) plus an upper triangle with a real diagonal (dR R^-1) -- X less its
        # skew part is dR R^-1. A wide A = [X | Y] is the square case for X, then dV from Y.
        Q, R = out
        dA = tangents[0]
        _qr_differentiable(mode, Q, R)
        m, n = Q.shape[-2], R.shape[-1]
        if m < n:
            from .shape import cat
            U, V = R[..., :m], R[..., m:]
            dQ, dU = _qr_jvp(Q, U, dA[..., :m])
            return dQ, cat([dU, _mH(Q) @ (dA[..., m:] - dQ @ V)], -1)
        return _qr_jvp(Q, R, dA)

    complex_jvp = jvp


def _qr_differentiable(mode: str, Q: Tensor, R: Tensor) -> None:
    """PyTorch's refusals of QR derivatives (both modes of AD; mode "r"'s Q is empty)."""
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                           "are going to differentiate through linalg.qr.")
    if mode == "complete" and Q.shape[-2] > R.shape[-1]:
        raise NotImplementedError("The QR decomposition is not differentiable when "
                                  "mode='complete' and nrows > ncols.")


def _qr_jvp(Q: Tensor, R: Tensor, dA: Tensor) -> tuple:
    """(dQ, dR) of A = Q R, m >= n."""
    dAR = solve_triangular(R, dA, upper=True, left=False)  # dA R^-1
    X = _mH(Q) @ dAR
    low = X.tril(-1)
    T = X - (low - _mH(low))
    if X.dtype.is_complex:  # (the skew part's diagonal: i Im diag(X))
        from .complex_parts import imag
        T = T - (1j * imag(X.diagonal(0, -2, -1))).to(X.dtype).diag_embed()
    return dAR - Q @ T, T @ R


@autocast_op("float32 on cpu")
@_tuple_out("linalg.qr", "linalg_qr")
def qr(A: Tensor, mode: str = "reduced", *, out=None) -> QRResult:
    """(Q, R) with ``A = Q R``: ``mode`` "reduced" (Q m x k, k = min(m, n)), "complete" (Q
    m x m) or "r" (R only; Q empty). Differentiable except for complete mode with m > n (the
    extra columns of Q are not determined by A) and mode "r"."""
    op = "linalg.qr"
    _matrix(A, op, square=False, kernel="geqrf_cpu")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    return QRResult(*apply(LinalgQrBackward0, (A,), mode))


_PHASE_WORDS = {  # (PyTorch's svd_backward says it in other words)
    "svd_backward": ("singular vectors", "phase term, making it ill-defined")}


def _phase_check(VhgV: Tensor, op: str) -> None:
    """PyTorch's refusal of a complex loss that depends on the vectors' phases."""
    if VhgV.dtype.is_complex and VhgV.numel():
        from .complex_parts import imag
        VhgV = VhgV.detach()  # (a check, not part of a create_graph graph)
        if float(imag(VhgV.diagonal(0, -2, -1)).abs().amax()) > 1e-6 * max(
                1.0, float(VhgV.abs().amax())):
            what, rest = _PHASE_WORDS.get(op, ("eigenvectors", "quantity, so it is ill-defined"))
            raise RuntimeError(
                f"{op}: The {what} in the complex case are specified up to multiplication by "
                f"e^{{i phi}}. The specified loss function depends on this {rest}.")


class LinalgEighBackward0(Primitive):
    """A = V diag(w) V^H: dA = V (diag(gw) + skew(V^H gV) / E) V^H, E_ij = w_j - w_i off the
    diagonal, skew(X) = (X - X^H) / 2 (PyTorch's linalg_eig_backward, hermitian case)."""

    __slots__ = ()
    op_name = "linalg_eigh"
    saved_names = ("eigenvalues", "eigenvectors")
    keep_outputs = (0, 1)

    @staticmethod
    def forward(ctx, k, a, uplo):
        return _host(_np_dec.eigh, (a,), uplo)

    @staticmethod
    def _rule(ctx, saved, gw, gV):
        w, V = saved
        if gV is None:
            return (V * gw.unsqueeze(-2).to(V.dtype)) @ _mH(V)
        VhgV = _mH(V) @ gV
        _phase_check(VhgV, "linalg_eigh_backward")
        # projected onto the skew-Hermitian matrices (the tangent space of U(n) at I), as
        # PyTorch's: then / E is Hermitian and so is dA, the convention for a function of a
        # Hermitian matrix (without it dA held an anti-Hermitian part, and second derivatives
        # differed from PyTorch's)
        VhgV = 0.5 * (VhgV - _mH(VhgV))
        E = w.unsqueeze(-2) - w.unsqueeze(-1)
        off = E + _eye_like(E)  # 1 on the diagonal
        inner = VhgV / off.to(V.dtype)
        inner = inner - inner.diagonal(0, -2, -1).diag_embed()
        if gw is not None:
            inner = inner + gw.to(V.dtype).diag_embed()
        return V @ inner @ _mH(V)

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, uplo):
        # dP = V^H dA V (dA Hermitian, as the forward reads A's triangle): dw = Re diag(dP),
        # dV = V (dP / E) with E_ij = w_j - w_i off the diagonal and 0 on it
        w, V = out
        t = tangents[0]
        dP = _mH(V) @ _copyltu(t if uplo == "L" else _mH(t)) @ V
        diag = dP.diagonal(0, -2, -1)
        dw = diag.real if diag.dtype.is_complex else diag
        E = w.unsqueeze(-2) - w.unsqueeze(-1)
        eye = _eye_like(E)
        inner = dP * ((1 - eye) / (E + eye)).to(V.dtype)
        return dw, V @ inner

    complex_jvp = jvp


@_tuple_out("qr", "linalg_qr")
def qr_legacy(input: Tensor, some: bool = True, *, out=None) -> LegacyQRResult:
    """``tritongrad.qr`` (PyTorch's older interface): ``some=False`` is mode "complete"."""
    return LegacyQRResult(*qr(input, "reduced" if some else "complete"))


@autocast_op("float32 on cpu")
@_tuple_out("linalg.eigh", "_linalg_eigh")
def eigh(input: Tensor, UPLO: str = "L", *, out=None) -> EighResult:
    """(eigenvalues, eigenvectors) of each Hermitian matrix (read from its ``UPLO`` triangle),
    eigenvalues ascending and real. Eigenvectors are defined up to sign (phase); gradients
    need distinct eigenvalues and a loss that does not depend on that sign."""
    A = input
    op = "linalg.eigh"
    _matrix(A, op, kernel="linalg_eigh_cpu", every_dtype=True)
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return EighResult(*apply(LinalgEighBackward0, (A,), UPLO.upper()))


@autocast_op("float32 on cpu")
def eigvalsh(input: Tensor, UPLO: str = "L", *, out=None) -> Tensor:
    """The eigenvalues of each Hermitian matrix, ascending."""
    A = input
    _matrix(A, "linalg.eigh", kernel="linalg_eigh_cpu", every_dtype=True)
    return _exact(eigh(A, UPLO).eigenvalues, out, "linalg.eigvalsh", "_linalg_eigh")


class LinalgSvdBackward0(Primitive):
    """A = U diag(S) Vh (reduced): PyTorch's svd_backward. With E_ij = S_j^2 - S_i^2,
    skew(X) = X - X^H: dA = U [(skew(U^H gU) S + S skew(V^H gV)) / E + diag(gS)] Vh
    + (I - U U^H) gU S^-1 Vh + U S^-1 gV^H (I - V V^H)."""

    __slots__ = ()
    op_name = "linalg_svd"
    saved_names = ("U", "S", "Vh")
    keep_outputs = (0, 1, 2)

    @staticmethod
    def forward(ctx, k, a, full_matrices):
        ctx.full = full_matrices
        return _host(_np_dec.svd, (a,), full_matrices)

    @staticmethod
    def _rule(ctx, saved, gU, gS, gVh):
        U, S, Vh = saved
        m, n = U.shape[-2], Vh.shape[-1]
        k = S.shape[-1]
        # full_matrices with m != n: the extra singular vectors are not determined by A (any
        # orthonormal completion), so their gradients are dropped, as PyTorch's svd_backward
        # narrows to the k leading ones
        U, Vh = U[..., :, :k], Vh[..., :k, :]
        gU = None if gU is None else gU[..., :, :k]
        gVh = None if gVh is None else gVh[..., :k, :]
        dt = U.dtype
        Sc = S.to(dt)
        if gU is None and gVh is None:
            return (U * gS.to(dt).unsqueeze(-2)) @ Vh
        V = _mH(Vh)
        gV = None if gVh is None else _mH(gVh)
        UhgU = None if gU is None else _mH(U) @ gU
        VhgV = None if gV is None else _mH(V) @ gV
        if dt.is_complex:
            # the loss must not depend on the phases: Im diag(U^H gU + V^H gV) = 0
            total = UhgU if VhgV is None else (VhgV if UhgU is None else UhgU + VhgV)
            _phase_check(total, "svd_backward")
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
        E = (E + _eye_like(E)).to(dt)
        inner = None
        if UhgU is not None:
            inner = (UhgU - _mH(UhgU)) * Sc.unsqueeze(-2)
        if VhgV is not None:
            t = Sc.unsqueeze(-1) * (VhgV - _mH(VhgV))
            inner = t if inner is None else inner + t
        inner = inner / E
        inner = inner - inner.diagonal(0, -2, -1).diag_embed()
        if gS is not None:
            inner = inner + gS.to(dt).diag_embed()
        if dt.is_complex and UhgU is not None:
            # the phase of each (u_i, v_i) pair: the loss sees it through Im diag(U^H gU)
            from .complex_parts import imag
            inner = inner + (1j * (imag(UhgU.diagonal(0, -2, -1)) / S)).to(dt).diag_embed()
        gA = U @ inner @ Vh
        if gU is not None and m > k:
            gA = gA + ((gU - U @ UhgU) / Sc.unsqueeze(-2)) @ Vh
        if gV is not None and n > k:
            gA = gA + U @ _mH((gV - V @ VhgV) / Sc.unsqueeze(-2))
        return gA

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, full_matrices):
        # PyTorch's linalg_svd_jvp: dP = U^H dA V, dS = Re diag(dP), dX = dP - dS,
        # dU = U (sym(dX S) / E + i Im diag(dX) / 2S) + (I - U U^H) dA V S^-1,
        # dV = V (sym(S dX) / E - i Im diag(dX) / 2S) + (I - V V^H) dA^H U S^-1,
        # E_jk = S_k^2 - S_j^2 (1 on the diagonal, where sym(.) is 0), sym(X) = X + X^H
        U, S, Vh = out
        m, n, kk = U.shape[-2], Vh.shape[-1], S.shape[-1]
        if full_matrices and m != n:
            raise NotImplementedError("linalg_svd_jvp: forward AD of svd with "
                                      "full_matrices=True is not supported for non-square "
                                      "matrices; use full_matrices=False")
        dA, V, dt = tangents[0], _mH(Vh), U.dtype
        Sc = S.to(dt)
        dP = _mH(U) @ dA @ V
        diag = dP.diagonal(0, -2, -1)
        dS = diag.real if dt.is_complex else diag
        dX = dP - dS.to(dt).diag_embed()
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
        E = (E + _eye_like(E)).to(dt)
        dXS = dX * Sc.unsqueeze(-2)
        SdX = Sc.unsqueeze(-1) * dX
        inner_u, inner_v = (dXS + _mH(dXS)) / E, (SdX + _mH(SdX)) / E
        if dt.is_complex:
            from .complex_parts import imag
            phase = (1j * imag(dX.diagonal(0, -2, -1)) / (2 * S)).to(dt).diag_embed()
            inner_u, inner_v = inner_u + phase, inner_v - phase
        dU, dV = U @ inner_u, V @ inner_v
        if m > kk:
            dU = dU + (dA @ V - U @ dP) / Sc.unsqueeze(-2)
        if n > kk:
            dV = dV + (_mH(dA) @ U - V @ _mH(dP)) / Sc.unsqueeze(-2)
        return dU, dS, _mH(dV)

    complex_jvp = jvp


def _svd_driver(A: Tensor, driver, op: str) -> None:
    """PyTorch's checks of ``driver=``: CUDA inputs only (cuSOLVER's gesvd, gesvdj, gesvda).
    On CUDA the host's LAPACK computes the same decomposition whichever is named."""
    if driver is None:
        return
    if A.device.type != "cuda":
        raise RuntimeError(f"{op}: keyword argument `driver=` is only supported on CUDA inputs "
                           f"with cuSOLVER backend.")
    if driver not in ("gesvd", "gesvdj", "gesvda"):
        raise RuntimeError(f"{op}: driver must be one of gesvd, gesvdj, gesvda, or None (the "
                           f"default); got {driver!r}")


@autocast_op("float32 on cpu")
@_tuple_out("linalg.svd", "_linalg_svd")
def svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None) -> SVDResult:
    """(U, S, Vh) with ``A = U diag(S) Vh``, S descending. Singular vectors are defined up to
    sign (phase): gradients need distinct singular values and a loss that does not depend on
    that sign (and ``full_matrices=False`` for U/Vh of a non-square matrix)."""
    _matrix(A, "linalg.svd", square=False, kernel="linalg_svd_cpu")
    _svd_driver(A, driver, "torch.linalg.svd")
    return SVDResult(*apply(LinalgSvdBackward0, (A,), bool(full_matrices)))


@autocast_op("float32 on cpu")
def svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    """The singular values of each matrix, descending."""
    _matrix(A, "linalg.svd", square=False, kernel="linalg_svd_cpu")
    _svd_driver(A, driver, "torch.linalg.svdvals")
    return _exact(svd(A, False).S, out, "linalg.svdvals", "_linalg_svd")


@_tuple_out("svd", "_linalg_svd")
def svd_legacy(input: Tensor, some: bool = True, compute_uv: bool = True, *,
               out=None) -> SVDLegacyResult:
    """``tritongrad.svd`` (PyTorch's older interface): (U, S, V) with ``A = U diag(S) V^H``
    (V, not Vh); ``some=False`` gives square U and V; ``compute_uv=False`` gives zero U and
    V."""
    if not compute_uv:  # (zero (m, m) and (n, n) U and V, whatever ``some`` says, as PyTorch)
        S = svdvals(input)
        m, n = input.shape[-2:]
        z = input.detach()
        return SVDLegacyResult(z.new_zeros(z.shape[:-2] + (m, m)), S,
                               z.new_zeros(z.shape[:-2] + (n, n)))
    U, S, Vh = svd(input, full_matrices=not some)
    return SVDLegacyResult(U, S, _mH(Vh))


def pinv(input: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None,
         out=None) -> Tensor:
    """The Moore-Penrose pseudoinverse ``V diag(1/S) U^H`` over the singular values above
    ``max(atol, rtol * S_max)`` (default rtol: ``max(m, n) * eps`` when neither is given);
    differentiable through :func:`svd` (full-rank inputs with distinct singular values).
    Tensor tolerances hold one value per matrix (A's batch shape). ``rcond`` (positional, as
    PyTorch's older overload) is ``rtol``."""
    A = input
    op = "linalg.pinv"
    tensor_arg(A, op, "input")
    if A.ndim < 2 or not (A.dtype.is_floating_point or A.dtype.is_complex) \
            or A.dtype.itemsize < 4:
        raise RuntimeError(f"{op}({scalar_type_name(A.dtype)}{{{list(A.shape)}}}): expected a "
                           f"tensor with 2 or more dimensions of float, double, cfloat or "
                           f"cdouble types")
    from .elementwise import where
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError(f"{op}: rcond cannot be given together with atol or rtol")
        rtol = rcond
    m, n = A.shape[-2], A.shape[-1]
    if rtol is None:
        rtol = max(m, n) * np.finfo(A.real.dtype.np if A.dtype.is_complex
                                    else A.dtype.np).eps if atol is None else 0.0
    if hermitian:
        # PyTorch's: A = U diag(w) U^H from eigh (A's lower triangle only), singular values
        # |w| (a non-symmetric A is read as eigh reads it; the gradient is eigh's)
        w, U = eigh(A)
        S, Vh = w.abs(), _mH(U)
    else:
        U, S, Vh = svd(A, full_matrices=False)
        w = S
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S
    cut = smax * (rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol)
    if atol is not None:
        cut = cut.clamp(min=atol) if not isinstance(atol, Tensor) else \
            cut.maximum(atol.unsqueeze(-1))
    keep = S > cut
    Sinv = where(keep, 1 / where(keep, w, 1.0), 0.0).to(A.dtype)
    return _exact((_mH(Vh) * Sinv.unsqueeze(-2)) @ _mH(U), out, op, "linalg_pinv",
                  cast=op)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``tritongrad.pinverse``: :func:`pinv` with ``rtol=rcond``."""
    return pinv(input, rtol=rcond)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@autocast_op("float32 on cpu")
def lstsq(input: Tensor, b: Tensor, rcond=None, *, driver=None, out=None) -> LstsqResult:
    """The least-squares solution of ``A X = B`` (minimum norm), as ``pinv(A) @ B``:
    (solution, residuals, rank, singular_values) with what PyTorch's CPU ``driver`` returns
    (default "gelsy"): ``rank`` (int64) for every driver but "gels", ``singular_values`` (A's,
    not differentiable) for "gelsd" and "gelss", ``residuals`` (the squared residual norm of
    each column, differentiable) when ``m > n`` and, except for "gels", every matrix has full
    rank; and empty tensors otherwise."""
    A, B = input, b
    op = "torch.linalg.lstsq"
    tensor_arg(A, op, "input")
    tensor_arg(B, op, "b")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {scalar_type_name(A.dtype)} and other's dtype "
                           f"{scalar_type_name(B.dtype)}")
    _lapack_float(A)
    _matrix(A, "linalg.lstsq", square=False)
    if driver is None:
        driver = "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of "
                           f"({', '.join(_LSTSQ_DRIVERS)})")
    if not 0 <= A.ndim - B.ndim <= 1:
        raise RuntimeError(f"{op}: input.dim() must be greater or equal to other.dim() and "
                           f"(input.dim() - other.dim()) <= 1")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2:
        raise RuntimeError(f"{op}: other must have at least 1 dimension.")
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    X = pinv(A, rtol=rcond) @ Bm
    from .creation import empty
    S = svdvals(A.detach())
    real = S.dtype
    m, n = A.shape[-2], A.shape[-1]
    eps = np.finfo(real.np).eps
    tol = max(m, n) * eps if rcond is None else rcond
    if S.shape[-1]:
        rank = (S > S.amax(-1, keepdim=True) * tol).sum(-1)
    else:
        rank = S.sum(-1).to(dtypes.int64)
    none = empty((0,), dtype=real, device=A.device)
    full = bool((rank == min(m, n)).all()) if rank.numel() else True
    if m > n and driver != "gelsy" and (driver == "gels" or full):
        R = A @ X - Bm
        residuals = (R.abs() ** 2 if R.dtype.is_complex else R * R).sum(-2)
    else:  # (empty, but in the graph as PyTorch's: it requires grad when the solution does)
        residuals = X.reshape(-1)[:0]
        residuals = residuals.abs() if residuals.dtype.is_complex else residuals
    res = LstsqResult(X.squeeze(-1) if vector else X, residuals,
                      none.to(dtypes.int64) if driver == "gels" else rank,
                      S if driver in ("gelsd", "gelss") else none)
    if out is None:
        return res
    if not isinstance(out, (tuple, list)) or len(out) != len(res):
        raise TypeError(f"linalg_lstsq(): argument 'out' must be tuple of {len(res)} Tensors, "
                        f"not {type(out).__name__}")
    return LstsqResult(*(_castable(r, o, op, what, "linalg_lstsq")
                         for r, o, what in zip(res, out, LstsqResult._fields)))


class LinalgLuFactorExBackward0(Primitive):
    """A = P L U with partial pivoting, packed as LU = L + U - I: PyTorch's
    lu_factor_ex_backward. With k = min(m, n), gL = g[..., :k] and gU = g[..., :k, :], a
    square A gets dA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H; a wide (tall) one solves
    with U's (L's) leading square block and passes the rest of gU (gL) through L^-H (U^-H)."""

    __slots__ = ()
    op_name = "linalg_lu_factor_ex"
    saved_names = ("LU", "pivots")
    nondiff_outputs = (1,)
    keep_outputs = (0, 1)  # LU and the pivots (Note [Saved indices])

    @staticmethod
    def forward(ctx, k, a):
        return _host(_np_dec.lu_factor, (a,))

    @staticmethod
    def _rule(ctx, saved, g, _pivots_grad=None):
        from .linalg_legacy import lu_unpack
        from .shape import cat
        LU, pivots = saved
        P, L, U = lu_unpack(LU, pivots)
        m, n = LU.shape[-2], LU.shape[-1]
        k = min(m, n)
        gL, gU = g[..., :, :k], g[..., :k, :]
        if m == n:
            gA = (_mH(L) @ gL).tril(-1) + (gU @ _mH(U)).triu()
            gA = solve_triangular(_mH(U), gA, upper=False, left=False)
            gA = solve_triangular(_mH(L), gA, upper=True, unitriangular=True)
        elif m < n:
            gA = (_mH(L) @ gL - gU.triu() @ _mH(U)).tril(-1)
            gA = solve_triangular(_mH(U[..., :, :k]), gA, upper=False, left=False)
            gA = cat([gA + gU[..., :, :k].triu(), gU[..., :, k:]], -1)
            gA = solve_triangular(_mH(L), gA, upper=True, unitriangular=True)
        else:
            gA = (gU @ _mH(U) - _mH(L) @ gL.tril(-1)).triu()
            gA = solve_triangular(_mH(L[..., :k, :]), gA, upper=True, unitriangular=True)
            gA = cat([gA + gL[..., :k, :].tril(-1), gL[..., k:, :]], -2)
            gA = solve_triangular(_mH(U), gA, upper=False, left=False)
        return P @ gA

    vjp = complex_vjp = _tensor_rule(_rule.__func__)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out):
        # P^T dA = dL U + L dU. Its leading k x k block, with dK = L1^-1 (P^T dA)_11 U1^-1,
        # gives dL1 = L1 tril(dK, -1) and dU1 = triu(dK) U1; the rest of a wide A gives
        # dU2 = L1^-1 ((P^T dA)_12 - dL1 U2), of a tall one dL2 = ((P^T dA)_21 - L2 dU1) U1^-1
        from .linalg_legacy import lu_unpack
        from .shape import cat
        LU, pivots = out
        P, L, U = lu_unpack(LU, pivots)
        m, n = LU.shape[-2], LU.shape[-1]
        kk = min(m, n)
        PdA = P.mT @ tangents[0]
        L1, U1 = L[..., :kk, :], U[..., :, :kk]
        dK = solve_triangular(L1, PdA[..., :kk, :kk], upper=False, unitriangular=True)
        dK = solve_triangular(U1, dK, upper=True, left=False)
        dL1, dU1 = L1 @ dK.tril(-1), dK.triu() @ U1
        if m < n:
            dU2 = solve_triangular(L1, PdA[..., :, kk:] - dL1 @ U[..., :, kk:], upper=False,
                                   unitriangular=True)
            return cat([dL1 + dU1, dU2], -1), None
        if m > n:
            dL2 = solve_triangular(U1, PdA[..., kk:, :] - L[..., kk:, :] @ dU1, upper=True,
                                   left=False)
            return cat([dL1 + dU1, dL2], -2), None
        return dL1 + dU1, None

    complex_jvp = jvp  # (L and U are holomorphic in A for fixed pivots; P^T = P^H is real)


def _lu_infos(LU: Tensor) -> np.ndarray:
    """LAPACK getrf's info per matrix: the 1-based index of the first exact zero on U's
    diagonal, 0 if none."""
    zero = LU.detach().diagonal(0, -2, -1).cpu().numpy() == 0
    first = np.argmax(zero, -1) + 1 if zero.shape[-1] else np.zeros(zero.shape[:-1], np.int64)
    return np.where(zero.any(-1), first, 0).astype(np.int32)


def _lu_factor(A: Tensor, pivot: bool, check_errors: bool, op: str) -> LUFactorExResult:
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError(f"{op.replace('.linalg', '')}: Expected tensor with 2 or more "
                           f"dimensions. Got size: {list(A.shape)} instead")
    _matrix(A, op.removeprefix("torch."), square=False, kernel="lu_cpu", every_dtype=True)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    LU, pivots = apply(LinalgLuFactorExBackward0, (A,))
    infos = _lu_infos(LU)
    if check_errors and infos.any():
        flat = infos.reshape(-1)
        batch = int(np.argmax(flat != 0))
        raise RuntimeError(
            f"{_batch(op, batch if A.ndim > 2 else None)}U[{flat[batch]},{flat[batch]}] is zero "
            f"and using it on lu_solve would result in a division by zero. If you still want to "
            f"perform the factorization, consider calling linalg.lu(A, pivot) or "
            f"linalg.lu_factor_ex(A, pivot)")
    return LUFactorExResult(LU, pivots, _info(A, infos))


@_tuple_out("linalg.lu_factor", "linalg_lu_factor_ex")
def lu_factor(A: Tensor, *, pivot: bool = True, out=None) -> LUFactorResult:
    """(LU, pivots): LAPACK getrf's packed factors of ``A = P L U`` (``L`` unit lower, ``U``
    upper) and its int32 1-based row swaps. A matrix with a zero on ``U``'s diagonal raises
    PyTorch's RuntimeError (:func:`lu_factor_ex` reports it instead). Differentiable with
    respect to ``A`` (PyTorch's rule, square and rectangular)."""
    LU, pivots, _ = _lu_factor(A, pivot, True, "torch.linalg.lu_factor")
    return LUFactorResult(LU, pivots)


@_tuple_out("linalg.lu_factor_ex", "linalg_lu_factor_ex")
def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False,
                 out=None) -> LUFactorExResult:
    """(LU, pivots, info): :func:`lu_factor` with ``info`` (int32, one per matrix) the
    1-based index of the first zero on ``U``'s diagonal, 0 for none; raises for such a
    matrix only when ``check_errors``."""
    return _lu_factor(A, pivot, check_errors, "torch.linalg.lu_factor_ex")


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None,
           n: int | None = None, iK=None, niter: int | None = None, tol=None,
           largest: bool | None = None, method=None, tracker=None, ortho_iparams=None,
           ortho_fparams=None, ortho_bparams=None) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) eigenpairs (E, X) of the symmetric positive-definite
    generalized problem ``A X = B X diag(E)`` (``B`` = identity by default), largest first
    (smallest first when ``largest=False``).

    PyTorch iterates LOBPCG from the start vectors ``X``; tritongrad solves the problem exactly
    (a full :func:`eigh` of ``L^-1 A L^-H``, ``B = L L^H``) and keeps ``k`` pairs, so ``X``
    only gives ``k``, and ``niter``, ``tol``, ``iK``, ``method`` and the ortho parameters are
    accepted and unused. The result is what LOBPCG converges to, and it is differentiable
    through eigh, cholesky and the triangular solves (A's gradient is symmetric: ``A`` enters
    as ``(A + A^H) / 2``), including second derivatives."""
    op = "lobpcg"
    _matrix(A, op)
    if X is not None:
        k = X.shape[-1] if k is None else k
    k = 1 if k is None else k
    m = A.shape[-1]
    if m < 3 * k:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={k})")
    largest = True if largest is None else largest
    S = 0.5 * (A + _mH(A))
    if B is not None:
        L = cholesky(0.5 * (B + _mH(B)))
        # C = L^-1 S L^-H, symmetric: its eigenvectors V give A's as L^-H V
        C = solve_triangular(L, _mH(solve_triangular(L, S, upper=False)), upper=False)
        w, V = eigh(0.5 * (C + _mH(C)))
        V = solve_triangular(_mH(L), V, upper=True)
    else:
        w, V = eigh(S)
    if largest:
        return w[..., m - k:].flip(-1), V[..., :, m - k:].flip(-1)
    return w[..., :k], V[..., :, :k]


# -- matrix exponential ----------------------------------------------------------------------------


def _block_exp(M: Tensor, E: Tensor) -> Tensor:
    """The top-right block of exp([[M, E], [0, M]]): the derivative of exp at M along E."""
    from .shape import cat
    n = M.shape[-1]
    top = cat([M, E], -1)
    bottom = cat([M.new_zeros(M.shape), M], -1)
    return matrix_exp(cat([top, bottom], -2))[..., :n, n:]


class LinalgMatrixExpBackward0(Primitive):
    """exp(A): dA is the top-right block of exp([[A^H, g], [0, A^H]]) (Mathias 1996)."""

    __slots__ = ()
    op_name = "linalg_matrix_exp"
    save_inputs = (0,)

    @staticmethod
    def forward(ctx, k, a):
        return _host(_np_dec.matrix_exp, (a,))

    vjp = complex_vjp = _tensor_rule(lambda ctx, saved, g: _block_exp(_mH(saved[0]), g))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out):
        return _block_exp(primals[0], tangents[0])  # exp([[A, dA], [0, A]])[:n, n:]

    complex_jvp = jvp  # (exp is holomorphic in A: the same block formula for complex A)


def matrix_exp(input: Tensor) -> Tensor:
    """The matrix exponential ``sum A^k / k!`` of each square matrix. Half and bfloat16
    inputs (which PyTorch accepts here) are computed in float32 and rounded once."""
    A = input
    if isinstance(A, Tensor) and A.dtype.is_floating_point and A.dtype.itemsize < 4:
        return matrix_exp(A.float()).to(A.dtype)
    _matrix(A, "linalg.matrix_exp")
    return apply(LinalgMatrixExpBackward0, (A,))


# -- products --------------------------------------------------------------------------------------


def multi_dot(tensors, *, out=None) -> Tensor:
    """The product of a chain of matrices (the first may be 1-D: a row vector; the last: a
    column vector), left to right."""
    op = "linalg.multi_dot"
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        tensor_arg(t, op, "tensors")
        if not (t.ndim == 2 or (t.ndim == 1 and i in (0, len(tensors) - 1))):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D" if
                               0 < i < len(tensors) - 1 else
                               f"multi_dot(): the {'first' if i == 0 else 'last'} tensor must "
                               f"be 1D or 2D but got {t.ndim}D")
        # (before any product: under autocast the products would cast both to one dtype)
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but "
                               f"tensor 0 is {_c10(tensors[0].dtype)} and tensor {i} "
                               f"{_c10(t.dtype)}")
    for i in range(1, len(tensors)):
        if tensors[i - 1].shape[-1] != tensors[i].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes "
                               f"{list(tensors[i - 1].shape)} and {list(tensors[i].shape)} "
                               f"cannot be multiplied")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    if first_vec:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_vec:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    r = tensors[0]
    for t in tensors[1:]:
        r = r @ t
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    if isinstance(out, Tensor) and out.dtype is not r.dtype:
        raise RuntimeError(f"multi_dot(): expected out tensor to have dtype {_c10(r.dtype)} but "
                           f"got {_c10(out.dtype)}")
    return _exact(r, out, op, "mm")


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out=None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (other dims broadcast)."""
    op = "linalg.cross"
    tensor_arg(input, op)
    tensor_arg(other, op, "other")
    from .products import cross as _cross  # (torch.cross with a dim: the same checks and rule)
    return _exact(_cross(input, other, dim), out, op, "linalg_cross")


def vander(x: Tensor, *, N=None) -> Tensor:
    """The Vandermonde matrix of ``x`` (..., n): columns ``x^0, x^1, ..., x^(N-1)``."""
    op = "linalg.vander"
    tensor_arg(x, op, "x")
    if x.ndim < 1:
        raise RuntimeError(f"{op}: x must have at least one dimension.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")  # (PyTorch's words, no op name)
    from .shape import stack
    from .creation import ones_like
    cols = [ones_like(x)]
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    return stack(cols, -1)


# -- the table -----------------------------------------------------------------------------------

_FLOAT = "float32/64, complex64/128"
OPS = (
    OpInfo("inverse", inverse, dtypes=_FLOAT, grad="-A^-H g A^-H", node=LinalgInvExBackward0,
           jvp=True, autocast="float32 on cpu"),
    OpInfo("det", _det, dtypes=_FLOAT, grad="g conj(det) A^-H", node=LinalgDetBackward0,
           jvp=True),
    OpInfo("logdet", logdet, dtypes=_FLOAT, grad="g A^-H (through slogdet)", jvp=True),
    OpInfo("slogdet", _slogdet, dtypes=_FLOAT, grad="g_logabsdet A^-H",
           node=LinalgSlogdetBackward0, jvp=True),
    OpInfo("cholesky", cholesky_legacy,
           dtypes=_FLOAT, grad="sym(L^-H Phi(L^H g) L^-1)", node=LinalgCholeskyExBackward0,
           jvp=True, autocast="float32 on cpu"),
    OpInfo("cholesky_solve", cholesky_solve, dtypes=_FLOAT, grad="through two triangular "
           "solves", jvp=True, autocast="float32 on cpu"),
    OpInfo("qr", qr_legacy, dtypes=_FLOAT, grad="(gQ + Q copyltu(M)) R^-H", node=LinalgQrBackward0,
           jvp=True, autocast="float32 on cpu"),
    OpInfo("svd", svd_legacy, dtypes=_FLOAT, grad="svd_backward (gauge-invariant losses)",
           node=LinalgSvdBackward0, jvp=True, autocast="float32 on cpu"),
    OpInfo("pinverse", pinverse, dtypes=_FLOAT, grad="through svd", jvp=True,
           autocast="float32 on cpu"),
    OpInfo("triangular_solve", triangular_solve, dtypes=_FLOAT, grad="-A^-H g X^H (triangle), "
           "A^-H g", node=LinalgSolveTriangularBackward0, jvp=True, autocast="float32 on cpu"),
    OpInfo("lobpcg", lobpcg, method=False, dtypes=_FLOAT, grad="through eigh (and cholesky "
           "for B)", jvp=False),
    OpInfo("matrix_exp", matrix_exp, dtypes=_FLOAT, grad="exp([[A^H, g], [0, A^H]])[:n, n:]",
           node=LinalgMatrixExpBackward0, jvp=True),
)
