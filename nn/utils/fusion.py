"""``nn.utils.fuse_conv_bn_eval`` / ``fuse_linear_bn_eval`` and their ``*_weights`` forms:
a convolution (or linear layer) followed by a batch norm in evaluation mode is one affine
map, so both fold into one layer for inference.

With ``s = bn.weight / sqrt(running_var + eps)``:
``W' = W * s`` (per output channel) and ``b' = (b - running_mean) * s + bn.bias``.
"""

from __future__ import annotations

import copy

from ...autograd.ops import creation
from ...autograd.tensor import Tensor
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A new convolution module equal to ``conv`` followed by ``bn`` (both in eval mode).

    Args:
        conv: a convolution module.
        bn: a BatchNorm module with running statistics.
        transpose: whether ``conv`` is transposed (its output channels are dim 1 of its
            weight).

    Example::

        >>> conv, bn = tg.nn.Conv2d(3, 4, 3).eval(), tg.nn.BatchNorm2d(4).eval()
        >>> fused = tg.nn.utils.fuse_conv_bn_eval(conv, bn)
    """
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused = copy.deepcopy(conv)
    assert bn.running_mean is not None and bn.running_var is not None
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                         bn_eps: float, bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple:
    """The weight and bias (Parameters) of the convolution that equals the convolution
    ``(conv_w, conv_b)`` followed by the batch norm ``(bn_rm, bn_rv, bn_eps, bn_w, bn_b)``;
    each keeps its dtype and ``requires_grad``."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = creation.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = creation.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = creation.zeros_like(bn_rm) if bn_b is None else bn_b
    var_rsqrt = (bn_rv + bn_eps).rsqrt()
    rest = [1] * (conv_w.ndim - 2)
    shape = [1, -1, *rest] if transpose else [-1, 1, *rest]
    fused_w = (conv_w * (bn_w * var_rsqrt).reshape(shape)).to(dtype=w_dtype)
    fused_b = ((conv_b - bn_rm) * var_rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A new Linear module equal to ``linear`` followed by ``bn`` (both in eval mode;
    ``bn.num_features`` is ``linear.out_features`` or 1)."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    fused = copy.deepcopy(linear)
    assert linear.out_features == bn.num_features or bn.num_features == 1, (
        "To fuse, linear.out_features == bn.num_features or bn.num_features == 1")
    assert bn.running_mean is not None and bn.running_var is not None
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor, bn_b: Tensor) -> tuple:
    """The weight and bias (Parameters) of the Linear layer that equals the linear map
    ``(linear_w, linear_b)`` followed by the batch norm."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = creation.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
