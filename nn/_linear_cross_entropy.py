"""A linear layer fused with cross-entropy, as PyTorch's ``F.linear_cross_entropy``,
``nn.LinearCrossEntropyLoss`` and ``nn.LinearCrossEntropyOptions``.

The reference path (``options=None``) is ``cross_entropy(linear(input, W, b), target)``. The
chunked path never holds the whole (N, C) logits: the batch is cut into chunks of rows, and
each chunk's per-row losses come from an activation checkpoint over linear + cross-entropy, so
the forward keeps only the chunk's inputs and the backward recomputes one chunk's logits at a
time (one extra (chunk, D) x (D, C) product per chunk, PyTorch's ``reduction='none'``
strategy, for every reduction). Gradients are therefore exact autograd gradients of the same
composition, ``retain_graph`` and ``create_graph`` included.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

from ..autograd import checks
from ..autograd.tensor import Tensor
from . import functional as F
from .layers import Linear
from .loss import _Loss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions", "linear_cross_entropy"]

_POLICIES = ("auto", "accurate", "balanced", "compact")
# "auto"'s floor on the rows per chunk (PyTorch's aspect_ratio:2 alone gives 8-row chunks for a
# (2048, 64) input and 8192 classes: 6x slower than unchunked here, where 256 rows run as fast
# as the reference with a seventh of its peak memory; measured by hand, see docs/nn.md)
_AUTO_MIN_ROWS = 256


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """How ``linear_cross_entropy`` chunks the batch (PyTorch's fields and checks).

    Attributes:
        allow_retain_graph: PyTorch's switch for a second backward through its in-place
            gradient buffers; tritongrad recomputes instead, so a second backward always works
            and the field only records the request.
        batch_chunk_size: rows per chunk (None: one chunk unless ``chunking_method`` says).
        chunking_method: ``"aspect_ratio"`` (chunks whose (chunk, C) logits match the (N, D)
            input in size: next_pow2(ceil(N / ceil(C / D))) rows), ``"aspect_ratio:k"`` (that
            divided by k), None (``batch_chunk_size`` decides) or ``"auto"``: PyTorch's
            fallback ``"aspect_ratio:2"`` but never fewer than 256 rows (or the whole batch),
            or None when ``batch_chunk_size`` is given.
        acc_policy: PyTorch's precision/memory policy; validated, and every policy computes
            as ``"accurate"`` here (the chunk's logits in ``acc_dtype``).
        acc_dtype: the dtype each chunk's logits and loss are computed in (None: float32 for
            float16/bfloat16 inputs, else the input's dtype).

    Raises:
        ValueError: PyTorch's messages for an unknown policy or method, a chunk size that is not
            a positive int, or an ``acc_dtype`` that is not floating point.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        from ..runtime import dtype as dtypes
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (
                dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64):
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, "
                             f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                             "acc_dtype=None to let the op pick automatically.")

    def chunk_rows(self, num_batches: int, in_features: int, num_classes: int) -> int:
        """The rows per chunk for an (N, D) input and C classes (PyTorch's ``_adjust``)."""
        method = self.chunking_method
        auto = method == "auto" and self.batch_chunk_size is None
        if method == "auto":
            method = None if self.batch_chunk_size is not None else "aspect_ratio:2"
        rows = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size,
                                                                     num_batches)
        if method is not None:
            factor = int(method.split(":", 1)[1]) if ":" in method else 1
            target = -(-num_batches // -(-num_classes // in_features))
            sized = min((1 << (target - 1).bit_length()) // factor, num_batches)
            if self.batch_chunk_size is not None and self.batch_chunk_size != sized:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and "
                                 f"chunking_method ('{method}') give different chunk sizes "
                                 f"({self.batch_chunk_size} vs {sized}); pass only one.")
            rows = sized
        if auto:  # each chunk costs tritongrad ~a millisecond of Python: not fewer rows than
            rows = max(rows, min(_AUTO_MIN_ROWS, num_batches))  # that amortises
        return max(1, rows)

    def compute_dtype(self, input_dtype):
        from ..runtime import dtype as dtypes
        if self.acc_dtype is not None:
            return self.acc_dtype
        low = input_dtype in (dtypes.float16, dtypes.bfloat16)
        return dtypes.float32 if low and self.acc_policy == "auto" else input_dtype


def _chunk_losses(x, weight_matrix, bias, t, class_weight, ignore_index, acc):
    logits = F.linear(x, weight_matrix, bias).to(acc)
    return F.cross_entropy(logits, t, class_weight, ignore_index=ignore_index, reduction="none")


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
             options):
    from ..autograd.ops import cat
    from ..utils.checkpoint import checkpoint
    x, t = (input, target) if input.ndim == 2 else (input.unsqueeze(0), target.unsqueeze(0))
    n, d = x.shape
    rows = options.chunk_rows(n, d, linear_weight.shape[0])
    acc = options.compute_dtype(input.dtype)
    cw = None if weight is None else weight.to(acc)
    pieces = [checkpoint(_chunk_losses, x[i:i + rows], linear_weight, linear_bias, t[i:i + rows],
                         cw, ignore_index, acc, use_reentrant=False, preserve_rng_state=False)
              for i in range(0, n, rows)]
    losses = pieces[0] if len(pieces) == 1 else cat(pieces)
    if reduction == "none":
        out = losses
    elif reduction == "sum":
        out = losses.sum()
    else:  # cross_entropy's mean: over the summed class weights of the rows not ignored
        valid = t != ignore_index
        w_rows = valid.to(acc) if cw is None else cw[t.masked_fill(~valid, 0)].where(valid, 0.0)
        out = losses.sum() / w_rows.sum().detach()
    out = out.to(input.dtype)
    return out if input.ndim == 2 or reduction != "none" else out.squeeze(0)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``, optionally
    chunked over the batch so the (N, C) logits are never held whole.

    Args:
        input: (D,) or (N, D).
        linear_weight: (C, D), or (C, d1, ..., dK, D) for a K-dimensional loss (batched input
            only; the logits are then (N, C, d1, ..., dK)).
        target: class indices ((), (N) or (N, d1, ..., dK), int64) or class probabilities of
            the logits' shape.
        linear_bias: (C, d1, ..., dK) or None.
        weight: (C,) class weights.
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.
        ignore_index: a class index whose rows count for nothing (None: -100); not allowed
            with class probabilities.
        label_smoothing: in [0, 1].
        options: None for the reference path; a ``LinearCrossEntropyOptions`` for the chunked
            one, which needs int64 class indices, no label smoothing and a 2-D
            ``linear_weight`` (otherwise it warns, as PyTorch, and runs the reference path).

    Raises:
        RuntimeError: PyTorch's messages for inputs of the wrong rank or mismatched shapes.

    Example:
        >>> x, w = tg.randn(8, 4), tg.randn(10, 4, requires_grad=True)
        >>> loss = tg.nn.functional.linear_cross_entropy(
        ...     x, w, tg.randint(0, 10, (8,)), options=tg.nn.LinearCrossEntropyOptions(
        ...         batch_chunk_size=4))
        >>> loss.backward()
    """
    checks.tensor_arg(input, "linear_cross_entropy")
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches, d = tuple(input.shape[:-1]), input.shape[-1]
    if d != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {d} and {linear_weight.shape[-1]}, respectively")
    c = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (c, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(c, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, {d}), got "
                           f"unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, c, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        chunkable = (not out_features and reduction in ("mean", "sum", "none")
                     and label_smoothing == 0.0 and target.dtype.name == "int64")
        if chunkable:
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction,
                            ignore_index, options)
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, "
            f"out_features == (). Got reduction={reduction!r}, "
            f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
            f"out_features={out_features}.", stacklevel=2)
    if out_features:
        rows = math.prod(out_features, start=c)
        linear_weight = linear_weight.reshape(rows, d)
        linear_bias = None if linear_bias is None else linear_bias.reshape(rows)
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)


class LinearCrossEntropyLoss(_Loss):
    """A ``Linear(in_features, num_classes * prod(out_features))`` layer and cross-entropy in
    one criterion, as ``torch.nn.LinearCrossEntropyLoss``; see ``linear_cross_entropy``.

    The layer's parameters are ``self.linear.weight`` ((C * prod(out_features), D), reshaped
    to (C, *out_features, D) in forward) and ``self.linear.bias``.

    Example:
        >>> crit = tg.nn.LinearCrossEntropyLoss(16, 100, options=tg.nn.LinearCrossEntropyOptions())
        >>> crit(tg.randn(32, 16), tg.randint(0, 100, (32,))).backward()
    """

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, device=None, dtype=None, reduction: str = "mean",
                 weight: Tensor | None = None, ignore_index: int | None = None,
                 label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(reduction=reduction)
        self.register_buffer("weight", weight)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # Linear holds 2-D weights only: the (C, *out_features, D) weight is stored flat
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        w = self.linear.weight.reshape(self.num_classes, *self.out_features,
                                       self.linear.in_features)
        b = self.linear.bias
        b = None if b is None else b.reshape(self.num_classes, *self.out_features)
        return linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                    reduction=self.reduction, ignore_index=self.ignore_index,
                                    label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
