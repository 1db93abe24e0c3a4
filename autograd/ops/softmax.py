"""softmax and log_softmax along one dim: one backend call forward (``k.softmax``, numerically
stable), the derivative rules as ``vjp``s over the kernel contract.

    y = softmax(x):      dx = y * (g - sum(g * y, dim))
    y = log_softmax(x):  dx = g - exp(y) * sum(g, dim)
and their forward-mode ``jvp``s (tangent t of x):
    softmax:      dy = y * (t - sum(t * y, dim))   (the Jacobian is symmetric: the vjp's form)
    log_softmax:  dy = t - sum(t * exp(y), dim)

``logsumexp`` lives with the reductions (reduction.py).
"""

from __future__ import annotations

import warnings

from ..registry import OpInfo, with_jvp
from ..dispatch import Primitive, apply
from ..checks import scalar_type_name
from ..tensor import Tensor, wrap_dim
from .creation import as_dtype



class SoftmaxBackward0(Primitive):
    """y = softmax(x) along ``dim`` (``log``: y = log_softmax(x)); rules in terms of y."""

    __slots__ = ()
    op_name = "softmax"
    save_output = True
    log = False

    @staticmethod
    def forward(ctx, k, x, dim, log):
        ctx.dim = dim
        if not x.shape:  # a 0-d input is its own row: x - x is 0 (NaN for inf or NaN)
            z = k.sub(x, x)
            return z if log else k.exp(z)
        # (contiguous whatever the input's layout, as PyTorch's: a no-op for the usual
        # contiguous input; a transposed one's result can be viewed as PyTorch's can)
        return k.contiguous(k.softmax(x, dim, log))

    @staticmethod
    def vjp(ctx, k, saved, g):
        y, = saved
        if ctx.log:
            return k.sub(g, k.mul(k.exp(y), _row_sum(k, g, ctx.dim)))
        return k.mul(y, k.sub(g, _row_sum(k, k.mul(g, y), ctx.dim)))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        t = tangents[0]
        if ctx.log:
            return k.sub(t, _row_sum(k, k.mul(t, k.exp(out)), ctx.dim))
        return SoftmaxBackward0.vjp(ctx, k, (out,), t)


def _row_sum(k, a, dim: int):
    """The sum of ``a`` along ``dim`` kept as a dim of 1; a 0-d ``a`` is its own sum."""
    return k.sum(a, (dim,), True) if a.shape else a


LogSoftmaxBackward0 = SoftmaxBackward0.variant("LogSoftmaxBackward0", "log_softmax", log=True)


def implicit_dim(input, dim, name: str):
    """``nn.functional``'s softmax family without a ``dim``: PyTorch's deprecated choice,
    with its warning."""
    if dim is not None or not isinstance(input, Tensor):
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if input.ndim in (0, 1, 3) else 1


def _prepare(input, dim, dtype, name, kernel):
    """PyTorch's order: the dim (required: only ``nn.functional``'s forms choose one,
    ``implicit_dim``), its range, the cast to ``dtype``,
    then its ``kernel``'s dtype error (``softmax_lastdim_kernel_impl``
    along the last dim, ``softmax_kernel_impl`` along another)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be int, not NoneType")
    dim = wrap_dim(dim, input.ndim, name)
    if dtype is not None:
        input = input.to(as_dtype(dtype))
    if not input.dtype.is_floating_point:
        last = "lastdim_" if dim == input.ndim - 1 or input.ndim == 0 else ""
        raise NotImplementedError(f"\"{kernel}_{last}kernel_impl\" not implemented for "
                                  f"'{scalar_type_name(input.dtype)}'")
    return input, dim


def softmax(input: Tensor, dim: int, dtype=None, *, _stacklevel: int = 3) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed stably; ``dtype`` casts the input first (e.g.
    float32 softmax of half logits).

    Example:
        >>> tg.tensor([1., 2., 3.]).softmax(0)
        tensor([0.0900, 0.2447, 0.6652])
    """
    return _apply(SoftmaxBackward0, *_prepare(input, dim, dtype, "softmax", "softmax"))


def log_softmax(input: Tensor, dim: int, dtype=None, *, _stacklevel: int = 3) -> Tensor:
    """``x - logsumexp(x, dim)``, computed stably; ``dtype`` casts the input first."""
    return _apply(LogSoftmaxBackward0,
                  *_prepare(input, dim, dtype, "log_softmax", "log_softmax"))


def softmin(input: Tensor, dim=None, dtype=None) -> Tensor:
    """``softmax(-x, dim)``; ``dtype`` casts the negated input (PyTorch's order: a bool
    input's negation error comes first)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"softmin(): argument 'input' must be Tensor, not {type(input).__name__}")
    dim = implicit_dim(input, dim, "softmin")  # (before the negation's error, as PyTorch's)
    return _apply(SoftmaxBackward0, *_prepare(-input, dim, dtype, "softmin", "softmax"))


def _apply(node: type, x: Tensor, dim: int) -> Tensor:
    return apply(node, (x,), dim, node.log)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("softmax", softmax, grad="y (g - sum(g y))", autocast="float32 on cuda",
           out="exact"),
    OpInfo("log_softmax", log_softmax, grad="g - exp(y) sum(g)", autocast="float32 on cuda",
           out="exact"),
)
OPS = with_jvp(OPS)  # every primitive here has a jvp rule
