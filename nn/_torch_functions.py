"""The ``nn.functional`` operations PyTorch also exposes at the top of ``torch``, with the
top-level (ATen) signatures: ``torch.dropout(input, p, train)``, ``torch.batch_norm(input,
weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)``, losses
taking ``reduction`` as an int (0 none, 1 mean, 2 sum), pools whose default ``stride=[]``
means the kernel size, ``adaptive_max_pool1d`` returning (values, indices), ...

Where the signatures agree the function *is* ``nn.functional``'s (``tg.conv2d is
F.conv2d``); elsewhere it is a thin call into it. ``embedding_bag`` (four outputs) is
nn/_embedding_bag.py's, the RNN cells (``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``,
``rnn_relu_cell``) nn/rnn.py's, ``embedding_renorm_`` autograd/ops/nn.py's.
``feature_dropout`` and ``feature_alpha_dropout`` have no ``nn.functional`` form of their
own and are composed below. They live in nn/ (not in autograd/ops' tables, which sit below
nn) and are exported by the package (tritongrad/__init__.py).
"""

from __future__ import annotations

import math

from ..autograd.ops.nn import embedding_renorm_
from ..autograd.tensor import Tensor
from . import functional as F
from ._embedding_bag import embedding_bag as _embedding_bag
from ._inplace_activations import random_slopes
from .rnn import gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell

__all__ = ["adaptive_avg_pool1d", "adaptive_max_pool1d", "affine_grid_generator",
           "alpha_dropout", "alpha_dropout_", "avg_pool1d", "batch_norm", "bilinear",
           "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle",
           "constant_pad_nd", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
           "conv_transpose2d", "conv_transpose3d", "convolution", "cosine_embedding_loss",
           "cosine_similarity", "ctc_loss", "dropout", "dropout_", "embedding",
           "embedding_bag", "embedding_renorm_", "feature_alpha_dropout",
           "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "group_norm",
           "gru_cell", "hinge_embedding_loss", "instance_norm", "kl_div", "layer_norm",
           "lstm_cell", "margin_ranking_loss", "max_pool1d", "max_pool1d_with_indices",
           "max_pool2d", "max_pool3d", "pairwise_distance", "pdist", "pixel_shuffle",
           "pixel_unshuffle", "poisson_nll_loss", "rms_norm", "rnn_relu_cell", "rnn_tanh_cell",
           "rrelu", "rrelu_", "selu", "selu_", "threshold", "threshold_", "triplet_margin_loss"]

# -- the same functions ------------------------------------------------------------------------

conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = (F.conv_transpose1d, F.conv_transpose2d,
                                                        F.conv_transpose3d)
rms_norm, bilinear = F.rms_norm, F.bilinear  # (prelu, hardshrink: autograd/ops/composite.py)
pixel_shuffle, pixel_unshuffle = F.pixel_shuffle, F.pixel_unshuffle
threshold_, cosine_similarity, pairwise_distance = F.threshold_, F.cosine_similarity, \
    F.pairwise_distance
channel_shuffle, pdist, celu_, selu_ = F.channel_shuffle, F.pdist, F.celu_, F.selu_
adaptive_avg_pool1d = F.adaptive_avg_pool1d

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction) -> str:
    """ATen's reduction enum (0 none, 1 mean, 2 sum) as nn.functional's string."""
    if isinstance(reduction, str):
        return reduction
    if reduction not in _REDUCTION:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTION[reduction]


def _stride(stride):
    """ATen's pools take ``stride=[]`` (empty) for "the kernel size"."""
    return None if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else stride


# -- convolution and normalization -------------------------------------------------------------

def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
                transposed: bool, output_padding, groups: int) -> Tensor:
    """The generic N-d convolution: ``conv{N}d`` or, ``transposed``, ``conv_transpose{N}d``,
    N = ``weight.dim() - 2``."""
    nd = weight.ndim - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, got "
                           f"{weight.ndim}-D")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return (F.conv1d, F.conv2d, F.conv3d)[nd - 1](input, weight, bias, stride, padding,
                                                   dilation, groups)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool = True) -> Tensor:
    """Batch normalization with ATen's argument order (``F.batch_norm`` takes the running
    statistics first); ``cudnn_enabled`` is accepted and unused."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                        eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = True) -> Tensor:
    """Instance normalization with ATen's argument order (``F.instance_norm``)."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    """Layer normalization (``F.layer_norm``); ``cudnn_enable`` is accepted and unused."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """Group normalization (``F.group_norm``); ``cudnn_enabled`` is accepted and unused."""
    return F.group_norm(input, num_groups, weight, bias, eps)


# -- dropout -----------------------------------------------------------------------------------

def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``F.dropout(input, p, training=train)``."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``dropout``."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``F.alpha_dropout(input, p, training=train)``."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``alpha_dropout``."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole features: one keep draw per (input.size(0), input.size(1)) entry,
    broadcast over the remaining dims (ATen's feature noise)."""
    return F._feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_dropout``."""
    return F._feature_dropout(input, p, train, True)


_ALPHA = 1.7580993408473766  # SELU's scale * alpha: the magnitude of its negative saturation


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout (``alpha_dropout``'s affine correction) of whole features: one draw per
    (input.size(0), input.size(1)) entry."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0.0:
        return input
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        return input * 0.0
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    keep = F.dropout(input.new_ones(tuple(input.shape[:2]) + (1,) * (input.ndim - 2)), p)
    keep = keep * (1 - p)
    return input * (keep * a) + ((keep - 1) * (_ALPHA * a) + _ALPHA * a * p)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_alpha_dropout``."""
    out = feature_alpha_dropout(input.clone() if input.requires_grad else input, p, train)
    return input if out is input else input.copy_(out)


# -- activations -------------------------------------------------------------------------------

def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``F.celu``: max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""
    return F.celu(input, alpha)


def selu(input: Tensor) -> Tensor:
    """``F.selu``."""
    return F.selu(input)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``F.threshold``: ``input`` where it is above ``threshold``, else ``value``."""
    return F.threshold(input, threshold, value)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, generator=None) -> Tensor:
    """``F.rrelu`` with ATen's ``generator`` (where ``F.rrelu`` has ``inplace``)."""
    return random_slopes(input, lower, upper, training, generator)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False, generator=None) -> Tensor:
    """In-place ``rrelu``."""
    return F._inplace(input, random_slopes, lower, upper, training, generator)


# -- embeddings --------------------------------------------------------------------------------

def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``F.embedding(indices, weight, ...)`` with ATen's order (weight first) and
    ``padding_idx=-1`` for none."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple:
    """ATen's embedding bag (weight first, ``mode`` 0 sum, 1 mean, 2 max; ``padding_idx``
    None for none, negative from the end): ``(output, offset2bag, bag_size, max_indices)``
    (nn/_embedding_bag.py says what each holds)."""
    if sparse:  # (the other three outputs are the dense path's)
        from ..autograd.grad_mode import no_grad as _no_grad
        out = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                              mode=("sum", "mean", "max")[mode], sparse=True,
                              per_sample_weights=per_sample_weights,
                              include_last_offset=include_last_offset, padding_idx=padding_idx)
        with _no_grad():
            aux = _embedding_bag(weight.detach(), indices, offsets, scale_grad_by_freq, mode,
                                 per_sample_weights, include_last_offset, padding_idx)
        return (out,) + tuple(aux[1:])
    return _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode,
                          per_sample_weights, include_last_offset, padding_idx)


# -- losses ------------------------------------------------------------------------------------

def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,
           log_target: bool = False) -> Tensor:
    """``F.kl_div`` with ATen's int ``reduction`` ("mean": over all elements)."""
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:
    """``F.margin_ranking_loss`` with ATen's int ``reduction``."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 1) -> Tensor:
    """``F.hinge_embedding_loss`` with ATen's int ``reduction``."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 1) -> Tensor:
    """``F.cosine_embedding_loss`` with ATen's int ``reduction``."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 1) -> Tensor:
    """``F.triplet_margin_loss`` with ATen's int ``reduction``."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """``F.poisson_nll_loss`` with ATen's signature (every argument given; int
    ``reduction``)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 1) -> Tensor:
    """``F.binary_cross_entropy_with_logits`` with ATen's order (``pos_weight`` before the
    int ``reduction``)."""
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: int = 1, zero_infinity: bool = False) -> Tensor:
    """``F.ctc_loss`` with ATen's int ``reduction``."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)


# -- pooling and padding -----------------------------------------------------------------------

def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """``F.max_pool1d`` (values only; ``stride=[]``: the kernel size)."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """``F.max_pool2d`` (values only; ``stride=[]``: the kernel size)."""
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """``F.max_pool3d`` (values only; ``stride=[]``: the kernel size)."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple:
    """``F.max_pool1d(..., return_indices=True)``: (values, indices)."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                        return_indices=True)


def avg_pool1d(input: Tensor, kernel_size, stride=(), padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """``F.avg_pool1d`` (``stride=[]``: the kernel size)."""
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                        count_include_pad)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple:
    """``F.adaptive_max_pool1d(..., return_indices=True)``: (values, indices)."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """``F.pad(input, pad, "constant", value)``: ``pad`` lists (before, after) amounts from
    the last dim backwards; negative amounts trim."""
    return F.pad(input, pad, "constant", value)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """``F.affine_grid(theta, size, align_corners)``."""
    return F.affine_grid(theta, size, align_corners)
