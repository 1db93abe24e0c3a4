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
        return k.softmax(x, dim, log)

    @staticmethod
    def vjp(ctx, k, saved, g):
        y, = saved
        if ctx.log:
            return k.sub(g, k.mul(k.exp(y), k.sum(g, (ctx.dim,), True)))
        return k.mul(y, k.sub(g, k.sum(k.mul(g, y), (ctx.dim,), True)))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        t = tangents[0]
        if ctx.log:
            return k.sub(t, k.sum(k.mul(t, k.exp(out)), (ctx.dim,), True))
        return SoftmaxBackward0.vjp(ctx, k, (out,), t)


LogSoftmaxBackward0 = SoftmaxBackward0.variant("LogSoftmaxBackward0", "log_softmax", log=True)


def _legacy_dim(ndim: int, name: str) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _prepare(input, dim, dtype, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dtype is not None:
        input = input.to(as_dtype(dtype))
    if not input.dtype.is_floating_point:
        # (NotImplementedError: PyTorch's kernels are defined on floating dtypes only)
        raise NotImplementedError(f"{name}: expected a floating point input (or pass dtype=), "
                                  f"got {input.dtype}")
    if dim is None:
        dim = _legacy_dim(input.ndim, name)
    return input, wrap_dim(dim, input.ndim, name)


def softmax(input: Tensor, dim=None, dtype=None, *, _stacklevel: int = 3) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed stably; ``dtype`` casts the input first (e.g.
    float32 softmax of half logits).

    Example:
        >>> tg.tensor([1., 2., 3.]).softmax(0)
        tensor([0.0900, 0.2447, 0.6652])
    """
    return _apply(SoftmaxBackward0, *_prepare(input, dim, dtype, "softmax"))


def log_softmax(input: Tensor, dim=None, dtype=None, *, _stacklevel: int = 3) -> Tensor:
    """``x - logsumexp(x, dim)``, computed stably; ``dtype`` casts the input first."""
    return _apply(LogSoftmaxBackward0, *_prepare(input, dim, dtype, "log_softmax"))


def softmin(input: Tensor, dim=None, dtype=None) -> Tensor:
    """``softmax(-x, dim)``; ``dtype`` casts the input first."""
    x, dim = _prepare(input, dim, dtype, "softmin")
    return _apply(SoftmaxBackward0, -x, dim)


def _apply(node: type, x: Tensor, dim: int) -> Tensor:
    if x.ndim == 0:  # as a 1-element row
        return apply(node, (x.reshape(1),), 0, node.log).reshape(())
    return apply(node, (x,), dim, node.log)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("softmax", softmax, grad="y (g - sum(g y))", autocast="float32 on cuda",
           out="exact"),
    OpInfo("log_softmax", log_softmax, grad="g - exp(y) sum(g)", autocast="float32 on cuda",
           out="exact"),
)
OPS = with_jvp(OPS)  # every primitive here has a jvp rule
