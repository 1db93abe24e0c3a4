"""LAPACK's compact QR and products of its Householder reflectors: ``geqrf``,
``linalg.householder_product`` (``orgqr``) and ``ormqr``.

``geqrf(A)`` is ``(a, tau)``: ``R`` on and above the diagonal of ``a``, the Householder vectors
``v_i`` below it (their leading 1 implicit), and their scalar factors ``tau``, so that
``A = Q R`` with ``Q = H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``, ``k = min(m, n)``. It runs
LAPACK on the host (decompositions.py's host round trip for a CUDA tensor) and, as PyTorch's,
has no derivative: its outputs record ``GeqrfBackward0``, whose backward raises PyTorch's
NotImplementedError.

``householder_product`` (the first columns of ``Q``) and ``ormqr`` (``Q`` or ``Q^H`` times a
matrix, from either side) are composites: each reflector is one rank-one update, ``C - tau_i
v_i (v_i^H C)``, ``k`` in all, so they run on either backend without a kernel of their own and
are differentiable (to any order, complex too) through matmul, mul and sub. That is the exact
derivative PyTorch's ``householder_product_backward`` and ``ormqr_backward`` compute, with a
Python loop of ``k`` small products in place of LAPACK's blocked one.
"""

from __future__ import annotations

from ...kernels.numpy import decompositions as _np_dec
from ..checks import check_same_device, scalar_type_name, tensor_arg
from ..autocast import autocast_op
from ..dispatch import Primitive, apply
from ..registry import OpInfo
from ..tensor import Tensor
from .decompositions import _host, _mH, _named
from .elementwise import _result
from .numeric import _not_implemented

__all__ = ["geqrf", "householder_product", "orgqr", "ormqr"]

GeqrfResult = _named("geqrf", "a tau")


def _lapack_dtype(x: Tensor, kernel: str) -> None:
    """PyTorch's refusal of a dtype its LAPACK kernel ``kernel`` does not take (integers,
    bool, half precision)."""
    dt = x.dtype
    if not (dt.is_floating_point or dt.is_complex) or dt.itemsize < 4 or (
            dt.is_complex and dt.itemsize < 8):
        raise _not_implemented(kernel, x)


def _at_least_2d(x: Tensor, op: str, name: str) -> None:
    if x.ndim < 2:
        raise RuntimeError(f"{op}: {name} must have at least 2 dimensions.")


def _last(tau: Tensor) -> int:
    """``tau.shape[-1]``, with PyTorch's IndexError for a 0-d ``tau``."""
    if tau.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    return tau.shape[-1]


def _tau_batch(input: Tensor, tau: Tensor, op: str) -> None:
    """``tau`` has one dimension less than ``input`` and its batch dimensions."""
    if input.ndim - tau.ndim != 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{input.ndim}")
    if input.ndim > 2 and tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")


# -- geqrf -----------------------------------------------------------------------------------------

def _no_derivative(ctx, k, saved, *grads):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


class GeqrfBackward0(Primitive):
    """LAPACK's geqrf: recorded, as PyTorch's, but not differentiable (its rule raises)."""

    __slots__ = ()
    op_name = "geqrf"

    @staticmethod
    def forward(ctx, k, a):
        return _host(_np_dec.geqrf, (a,))

    vjp = complex_vjp = staticmethod(_no_derivative)


def geqrf(input: Tensor, *, out=None) -> GeqrfResult:
    """A QR decomposition of ``input`` (..., m, n) in LAPACK's compact form ``(a, tau)``:
    ``R`` is the upper triangle of ``a``; ``Q = H_1 ... H_k`` (``k = min(m, n)``) is given by
    the Householder vectors below ``a``'s diagonal and the factors ``tau`` (..., k), for
    :func:`householder_product` and :func:`ormqr`. Not differentiable (as PyTorch's: its
    backward raises NotImplementedError).

    Example:
        >>> a, tau = tg.geqrf(tg.tensor([[3., 1.], [4., 2.]]))
        >>> a.triu()
        tensor([[-5.0000, -2.2000],
                [ 0.0000,  0.4000]])
    """
    tensor_arg(input, "geqrf")
    _at_least_2d(input, "torch.geqrf", "input")
    _lapack_dtype(input, "geqrf")
    a, tau = apply(GeqrfBackward0, (input,))
    if out is None:
        return GeqrfResult(a, tau)
    return GeqrfResult(_result(a, out[0], "geqrf"), _result(tau, out[1], "geqrf"))


# -- products of Householder reflectors ------------------------------------------------------------

def _reflect(input: Tensor, tau: Tensor, C: Tensor, left: bool, adjoint: bool) -> Tensor:
    """``op(Q) C`` (``left``) or ``C op(Q)``, ``Q = H_1 ... H_k`` from the vectors below the
    diagonal of ``input``'s first ``k = tau.shape[-1]`` columns, ``op(Q) = Q^H`` where
    ``adjoint``: one rank-one update per reflector, in the order the product takes them."""
    from .creation import eye
    m, k = input.shape[-2], tau.shape[-1]
    # the vectors as the columns of a unit lower trapezoidal (..., m, k) matrix
    V = input[..., :, :k].tril(-1) + eye(m, k, dtype=input.dtype, device=input.device)
    t = tau.conj() if adjoint and tau.dtype.is_complex else tau
    # Q C applies H_k first, Q^H C applies H_1^H first; C Q applies H_1 first
    order = range(k) if left == adjoint else range(k - 1, -1, -1)
    for i in order:
        v = V[..., :, i:i + 1]
        ti = t[..., i:i + 1].unsqueeze(-1)
        if left:
            C = C - v @ (ti * (_mH(v) @ C))
        else:
            C = C - ((C @ v) * ti) @ _mH(v)
    return C


@autocast_op("float32 on cpu")
def householder_product(input: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """The first ``n`` columns of the product of Householder matrices ``H_1 ... H_k``, ``H_i
    = I - tau_i v_i v_i^H``, where ``v_i`` is column ``i`` of ``A`` (..., m, n) below the
    diagonal with a 1 on it and ``k = tau.shape[-1] <= n <= m``: the ``Q`` of :func:`geqrf`'s
    result. Differentiable with respect to ``A`` and ``tau``.

    Example:
        >>> A = tg.tensor([[1., 2.], [3., 4.], [5., 6.]])
        >>> Q = tg.linalg.householder_product(*tg.geqrf(A))
        >>> tg.allclose(Q.mT @ Q, tg.eye(2), atol=1e-6)
        True
    """
    A = input
    op = "torch.linalg.householder_product"
    tensor_arg(A, "linalg.householder_product", "input")
    tensor_arg(tau, "linalg.householder_product", "tau")
    _at_least_2d(A, op, "input")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if A.shape[-1] < _last(tau):
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    _tau_batch(A, tau, op)
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{op}: tau dtype {scalar_type_name(tau.dtype)} does not match input "
                           f"dtype {scalar_type_name(A.dtype)}")
    check_same_device(A, tau, "tau", "linalg.householder_product")
    _lapack_dtype(A, "orgqr")
    from .creation import eye
    m, n = A.shape[-2], A.shape[-1]
    ident = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))
    Q = _reflect(A, tau, ident, left=True, adjoint=False) if _last(tau) else ident.clone()
    from .decompositions import _exact
    return _exact(Q, out, "linalg.householder_product", "linalg_householder_product",
                  cast="torch.linalg.householder_product")


def orgqr(input: Tensor, input2: Tensor) -> Tensor:
    """Alias for :func:`tritongrad.linalg.householder_product`, ``tau`` being ``input2``
    (PyTorch's argument names, as :func:`ormqr`'s)."""
    return householder_product(input, input2)


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,
          transpose: bool = False, *, out=None) -> Tensor:
    """``op(Q) @ other`` (``left``) or ``other @ op(Q)``, where ``other`` is ``input3`` and
    ``Q = H_1 ... H_k`` is the product of the Householder matrices in ``(input, tau)``,
    ``tau`` being ``input2`` (PyTorch's parameter names), as :func:`geqrf` returns them;
    ``input`` (..., mn, k) with ``mn`` the size of ``other`` on ``Q``'s side) and ``op(Q)`` is
    ``Q^H`` when ``transpose``, else ``Q``. ``Q`` is never formed. Differentiable with respect
    to all three.

    Example:
        >>> A = tg.tensor([[1., 2.], [3., 4.], [5., 6.]])
        >>> a, tau = tg.geqrf(A)
        >>> tg.ormqr(a, tau, A, transpose=True).round(decimals=4)  # Q^T A = R, padded
        tensor([[-5.9161, -7.4374],
                [ 0.0000,  0.8281],
                [ 0.0000,  0.0000]])
    """
    op = "torch.ormqr"
    tau, other = input2, input3
    for t, name in ((input, "input"), (tau, "tau"), (other, "other")):
        tensor_arg(t, "ormqr", name)
    _at_least_2d(input, op, "input")
    _at_least_2d(other, op, "other")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{op}: other.shape[{side}] must be equal to input.shape[-2]")
    if _last(tau) != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"{op}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           f"input.shape[-1])")
    _tau_batch(input, tau, op)
    if other.ndim != input.ndim:
        raise RuntimeError(f"{op}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {other.ndim} and input.ndim is "
                           f"equal to {input.ndim}")
    if input.ndim > 2 and tuple(other.shape[:-2]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of other to be equal to "
                           f"input.shape[:-2], but got {list(other.shape[:-2])}")
    for t, name in ((tau, "tau"), (other, "other")):
        # (PyTorch's message has no space after "dtype")
        if t.dtype is not input.dtype:
            raise RuntimeError(f"{op}: Expected input and {name} to have the same dtype, but "
                               f"input has dtype{scalar_type_name(input.dtype)} and {name} has "
                               f"dtype {scalar_type_name(t.dtype)}")
        check_same_device(input, t, name, "ormqr")
    _lapack_dtype(input, "ormqr")
    r = _reflect(input, tau, other, bool(left), bool(transpose)) if _last(tau) else other.clone()
    if isinstance(out, Tensor) and out.dtype is not r.dtype:  # (PyTorch's words, no space)
        raise RuntimeError(f"torch.ormqr: Expected input and result to have the same dtype, but "
                           f"input has dtype{scalar_type_name(input.dtype)} and result has "
                           f"dtype {scalar_type_name(out.dtype)}")
    return _result(r, out, "ormqr")


# -- the table ---------------------------------------------------------------------------------

_FLOAT = "float32/64, complex64/128"
OPS = (
    OpInfo("geqrf", geqrf, dtypes=_FLOAT, grad="none", node=GeqrfBackward0,
           autocast="float32 on cpu"),
    OpInfo("orgqr", orgqr, dtypes=_FLOAT + "; tau's = input's",
           grad="through k rank-one reflector updates", jvp=True, autocast="float32 on cpu"),
    OpInfo("ormqr", ormqr, dtypes=_FLOAT + "; one dtype",
           grad="through k rank-one reflector updates", jvp=True, autocast="float32 on cpu"),
)
