"""``tritongrad.nn.functional``: the stateless forms of the layers and losses.

GELU, layer norm, cross-entropy and embedding run as fused primitives (autograd/ops/nn.py:
one kernel each way); the rest are compositions of Tensor ops, differentiable to any order.
"""

from __future__ import annotations

import math
import warnings

from ..autograd import checks
from ..autograd.ops import nn as _nn
from ..autograd.ops.pointwise import sigmoid as _sigmoid
from ..autograd.ops.pointwise import tanh as _tanh
from ..autograd.ops.softmax import log_softmax as _log_softmax
from ..autograd.ops.softmax import softmax as _softmax
from ..autograd.tensor import Tensor

__all__ = ["cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "linear",
           "log_softmax", "mse_loss", "nll_loss", "one_hot", "relu", "sigmoid", "silu",
           "softmax", "tanh"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:  # PyTorch's legacy arguments
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


# -- activations ---------------------------------------------------------------------------------

def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0), elementwise."""
    return input.relu_() if inplace else input.relu()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """GELU(x) = x * Phi(x), Phi the standard normal CDF; ``approximate='tanh'`` uses
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). One fused kernel each way."""
    return _nn.gelu(input, approximate)


def tanh(input: Tensor) -> Tensor:
    return _tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    return _sigmoid(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (also called swish); ``inplace=True`` writes it into ``input`` and
    returns ``input``."""
    if inplace:
        # computed from a copy when recorded: the product saves its operand, which the write
        # below would otherwise modify before backward reads it; the write is recorded
        # (copy_), so the gradient flows through silu as in PyTorch
        return input.copy_(silu(input.clone() if input.requires_grad else input))
    # silu(-inf) is -inf * 0 = NaN (PyTorch), value and gradient; the CPU sigmoid clips its
    # argument (exp would overflow) and gives a tiny positive number at -inf instead of 0, so
    # -inf * that would be -inf: NaN there, which makes the product NaN both ways
    s = _sigmoid(input).where(input != -math.inf, math.nan)
    return input * s


def log_softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably."""
    return _log_softmax(input, dim, dtype)


def softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably."""
    return _softmax(input, dim, dtype)


# -- layers --------------------------------------------------------------------------------------

def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight^T + bias, for x of shape (*, in_features)."""
    if weight.ndim == 2 and input.ndim and input.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied "
                           f"({math.prod(input.shape[:-1])}x{input.shape[-1]} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    out = input.matmul(weight.t())
    return out + bias if bias is not None else out


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalises over the trailing ``normalized_shape`` dims, then scales and shifts. One
    fused kernel each way."""
    return _nn.layer_norm(input, normalized_shape, weight, bias, eps)


def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer tensor ``input``. With ``max_norm``, each
    picked row whose ``norm_type``-norm is above it is renormalised to ``max_norm`` in place
    first (``weight`` is modified); ``scale_grad_by_freq`` scales each row's gradient by the
    inverse of its frequency in ``input``."""
    if sparse:
        raise NotImplementedError(_SPARSE_MSG.format("embedding"))
    return _nn.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


_SPARSE_MSG = ("{}: sparse=True asks for a sparse gradient of the weight, and tritongrad has no "
               "sparse tensors; use sparse=False (the gradient is then a dense tensor)")


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by 1 / (1 - p) (in
    training; the identity otherwise)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if inplace:  # recorded like silu's in-place form
        return input.copy_(dropout(input.clone() if input.requires_grad else input, p))
    if p == 1.0:
        out = input * 0.0
    else:
        from ..autograd.ops.creation import rand
        keep = rand(tuple(input.shape), device=input.device) >= p
        out = input * keep.to(input.dtype) * (1.0 / (1.0 - p))
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: shape tensor.shape + (num_classes,). ``tensor`` holds int64
    class indices in [0, num_classes) (``num_classes=-1``: one more than the largest).

    The class values are checked on both devices, with PyTorch's CPU errors (its CUDA kernel
    leaves them to a device assert): a value out of range would give an all-zero row."""
    from ..autograd.ops.creation import arange, empty
    if not isinstance(tensor, Tensor) or tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    num_classes = int(num_classes)
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return empty(tuple(tensor.shape) + (num_classes,), dtype=tensor.dtype,
                     device=tensor.device)
    lo, hi = checks.index_extremes(tensor)  # one read back from the device
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif num_classes <= hi:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


# -- losses --------------------------------------------------------------------------------------

def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight=None) -> Tensor:
    """(input - target)^2, averaged (``'mean'``), summed (``'sum'``) or per element.
    ``weight=`` (per-sample weights) raises: not implemented."""
    if weight is not None:
        raise checks.unsupported("mse_loss", "weight", "<tensor>", "unweighted losses only: "
                                 "multiply reduction='none' losses by the weights")
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the "
                      f"input size ({list(input.shape)}). This will likely lead to incorrect "
                      f"results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=2)
    d = input - target
    return _reduce(d * d, reduction)


def _class_last(input: Tensor, target: Tensor, op: str):
    """(N, C, d1, ...) inputs and (N, d1, ...) targets as (N*d1*..., C) and (N*d1*...,)."""
    if input.ndim == 1:  # unbatched (C,) with a 0-d target
        return input.unsqueeze(0), target.reshape(1), ()
    if input.ndim == 2:
        return input, target, None
    c = input.shape[1]
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(*perm).reshape(-1, c), target.reshape(-1), tuple(target.shape)


def _check_loss_devices(input: Tensor, target: Tensor, weight, op: str) -> None:
    checks.check_same_device(input, target, "target", op)
    if weight is not None:
        checks.check_same_device(input, weight, "weight", op)


def _check_targets(input: Tensor, target: Tensor, op: str) -> None:
    n = input.shape[0] if input.ndim > 1 else None
    expect = (tuple(input.shape[:1]) + tuple(input.shape[2:])) if input.ndim > 1 else ()
    if tuple(target.shape) != expect:
        raise ValueError(f"{op}: expected target of shape {list(expect)} for input of shape "
                         f"{list(input.shape)}, got {list(target.shape)}"
                         + (f" (batch size {n})" if n is not None else ""))


def _weighted_cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing):
    # PyTorch's composition: (1 - eps) * nll_loss + eps / C * the weighted sum of -log p over
    # the classes, the latter zero on ignored rows and, for 'mean', divided by the summed
    # weights of the rows' targets (as nll_loss's mean is)
    cdim = 1 if input.ndim > 1 else 0
    logp = log_softmax(input, cdim)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    c = input.shape[cdim]
    shape = [1] * input.ndim
    shape[cdim] = c
    ignored = target == ignore_index
    smooth = -(logp * weight.reshape(shape)).sum(cdim).masked_fill(ignored, 0.0)
    if reduction == "mean":
        target_weights = weight[target.masked_fill(ignored, 0)].masked_fill(ignored, 0.0)
        smooth = smooth.sum() / target_weights.sum().detach()  # a constant, as in nll_loss
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / c)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of class indices ``target`` under log-probabilities
    ``input`` (N, C[, d1, ...]): -w[t] * input[t]; ``'mean'`` divides by sum of w[t] over the
    rows not ignored."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_loss_devices(input, target, weight, "nll_loss")
    _check_targets(input, target, "nll_loss")
    target = _nn.check_class_indices(target)
    x, t, spatial = _class_last(input, target, "nll_loss")
    from ..autograd.ops.creation import arange
    c = x.shape[1]
    checks.check_index_range(t, c, checks.target_out_of_bounds,
                             ignore_index=int(ignore_index))
    valid = t != ignore_index
    picked = arange(c, device=x.device).unsqueeze(0) == t.unsqueeze(1)  # (N, C) one-hot
    # where, not a product with the one-hot: only x[t] is read, so -inf log-probabilities of
    # other classes (and anything on ignored rows) give no NaN, in the value or the gradient
    loss = -x.where(picked, 0.0).sum(1)
    w_rows = valid.to(x.dtype)
    if weight is not None:
        w_rows = w_rows * weight.to(x.dtype).where(picked, 0.0).sum(1)
        loss = loss * w_rows
    # ignored rows selected away last, so their gradient is exactly 0 even when the 'mean'
    # below divides by a total weight of 0 (g / 0 = inf would otherwise make inf * 0 = NaN)
    loss = loss.where(valid, 0.0)
    if reduction == "none":
        return loss.reshape(spatial) if spatial is not None else loss
    if reduction == "sum":
        return loss.sum()
    # the total weight is a constant of the graph (as PyTorch's total_weight): all rows ignored
    # give 0 / 0 = NaN, with a zero gradient
    return loss.sum() / w_rows.sum().detach()


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy between logits ``input`` (N, C[, d1, ...]) and class indices ``target``
    (N[, d1, ...]) or class probabilities (same shape as ``input``).

    With class indices and no ``weight``, one fused kernel each way computes, per row,
    (1 - eps) (lse - x[t]) + eps (lse - mean(x)) (eps = ``label_smoothing``; 0 on rows whose
    target is ``ignore_index``); ``'mean'`` divides the sum by the number of rows not ignored.
    With class weights ``w``: (1 - eps) nll_loss + eps / C * sum_c w[c] (lse - x[c]), whose
    ``'mean'`` divides by the summed weights of the rows' targets, as PyTorch's does.
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    _check_loss_devices(input, target, weight, "cross_entropy")
    # PyTorch tells class probabilities from class indices by the target's shape, not its
    # dtype: a float target of the indices' shape is refused (nll_loss reads it as Long)
    if tuple(target.shape) == tuple(input.shape):  # class probabilities
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {checks.scalar_type_name(target.dtype)}")
        cdim = 1 if input.ndim > 1 else 0
        c = input.shape[cdim]
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        logp = log_softmax(input, cdim)
        if weight is not None:
            shape = [1] * input.ndim
            shape[cdim] = c
            logp = logp * weight.reshape(shape)
        loss = -(logp * target).sum(cdim)
        if reduction == "mean":
            n = input.numel() // c if input.ndim > 1 else 1
            return loss.sum() / n
        return _reduce(loss, reduction)
    _check_targets(input, target, "cross_entropy")
    target = _nn.check_class_indices(target)
    if weight is not None:
        return _weighted_cross_entropy(input, target, weight, ignore_index, reduction,
                                       label_smoothing)
    x, t, spatial = _class_last(input, target, "cross_entropy")
    loss = _nn.cross_entropy_rows(x, t, ignore_index, label_smoothing)
    if reduction == "none":
        return loss.reshape(spatial) if spatial is not None else loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (t != ignore_index).sum().to(loss.dtype)
