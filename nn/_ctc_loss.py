"""``nn.functional.ctc_loss``: the Connectionist Temporal Classification loss, with PyTorch's
arguments, checks and reductions (ctc_loss in aten/src/ATen/native/LossCTC.cpp) around the
per-sample primitive (autograd/ops/ctc.py).

The lengths and the targets are read to the host (PyTorch's kernels read the lengths there
too): the recursions run on the host, and the targets' layout, padded (N, S) or concatenated
(sum(target_lengths),), becomes one padded int64 array.
"""

from __future__ import annotations

import operator

import numpy as np

from ..autograd import checks
from ..autograd.ops.creation import host_to
from ..autograd.ops.ctc import ctc_loss_rows
from ..autograd.tensor import Tensor
from . import functional as F  # (imported first by the package: its helpers exist at call time)

__all__ = ["ctc_loss"]

_WHERE = "(while checking arguments for ctc_loss_allocate_outputs)"


def _lengths(value, name: str) -> np.ndarray:
    """Lengths given as a tensor of integers or a tuple/list of ints, as a host int64 array."""
    if isinstance(value, Tensor):
        if not value.dtype.is_floating_point and not value.dtype.is_complex \
                and value.dtype.name != "bool":
            return np.asarray(value.detach().cpu().numpy(), dtype=np.int64).reshape(-1)
        raise RuntimeError(f"{name} must be integral")
    try:
        return np.array([operator.index(v) for v in value], dtype=np.int64)
    except TypeError:
        raise TypeError(f"ctc_loss(): argument '{name}' must be a tuple of ints or a tensor, "
                        f"not {type(value).__name__}") from None


def _labels(targets: Tensor, target_lengths: np.ndarray, n: int, classes: int) -> np.ndarray:
    """The targets as a host int64 (N, max target length) array, checked as PyTorch checks
    them (their values too, which PyTorch's kernels read unchecked)."""
    if targets.dtype.is_complex:
        raise RuntimeError(f"ctc_loss: expected targets of a real dtype, got {targets.dtype}")
    t = targets.detach().long().cpu().numpy()  # (as PyTorch's: float targets are truncated)
    for b in range(n):
        if target_lengths[b] < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got "
                               f"value {target_lengths[b]} {_WHERE}")
    longest = int(target_lengths.max()) if n else 0
    if t.ndim == 1:
        total = int(target_lengths.sum())
        if t.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got "
                               f"size {t.shape[0]} for argument #2 'targets' {_WHERE}")
        labels = np.zeros((n, longest), dtype=np.int64)
        starts = np.cumsum(target_lengths) - target_lengths
        for b in range(n):
            labels[b, :target_lengths[b]] = t[starts[b]:starts[b] + target_lengths[b]]
    elif t.ndim == 2:
        if t.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size "
                               f"{t.shape[0]} for argument #2 'targets' {_WHERE}")
        if longest > t.shape[1]:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension "
                               f"1, but got size {t.shape[1]} for argument #2 'targets' "
                               f"{_WHERE}")
        labels = t[:, :longest].copy()
    else:
        raise RuntimeError(f"ctc_loss: expected targets of 1 (concatenated) or 2 (padded) "
                           f"dims, got {t.ndim}")
    used = np.arange(longest)[None, :] < target_lengths[:, None]
    bad = labels[used & ((labels < 0) | (labels >= classes))]
    if bad.size:
        raise checks.target_out_of_bounds(int(bad[0]))
    return labels


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The Connectionist Temporal Classification loss: the negative log-likelihood of each
    target sequence summed over all its alignments to the input steps (blank between and
    around the labels, repeats merged).

    ``log_probs`` (T, N, C) (or (T, C) unbatched) are log-probabilities (a log_softmax over
    the C classes); ``targets`` either padded (N, S) or the N target sequences concatenated
    (sum(target_lengths),); ``input_lengths`` and ``target_lengths`` (N,) tensors or tuples of
    ints. ``'mean'`` divides each loss by its target length (at least 1) and averages over the
    batch; ``zero_infinity`` zeroes infinite losses (no alignment: a target longer than its
    input) and their gradients.

    The gradient with respect to ``log_probs`` is PyTorch's, which assumes they come from a
    log_softmax: through it the gradient of the logits is exact.
    """
    reduction = F._reduction(None, None, reduction)
    checks.tensor_arg(log_probs, "ctc_loss", "log_probs")
    checks.tensor_arg(targets, "ctc_loss", "targets")
    if isinstance(input_lengths, Tensor) != isinstance(target_lengths, Tensor):
        raise TypeError("ctc_loss(): input_lengths and target_lengths must both be tensors or "
                        "both be tuples of ints")
    dt = log_probs.dtype
    if dt.name not in ("float32", "float64"):  # (PyTorch's kernels: float and double only)
        raise NotImplementedError(f"\"ctc_loss_{log_probs.device.type}\" not implemented for "
                                  f"'{checks.scalar_type_name(dt)}'")
    batched = log_probs.ndim == 3
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.ndim}-dimensional "
                           f"tensor for argument #1 'log_probs' {_WHERE}")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    lp = log_probs if batched else log_probs.unsqueeze(1)
    # unbatched: 1-D targets are the one sequence; 2-D ones already (1, S), as PyTorch takes
    tg = targets if batched or targets.ndim != 1 else targets.unsqueeze(0)
    t_max, n, classes = lp.shape
    blank = operator.index(blank)
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    if il.shape[0] != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.shape[0] != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    labels = _labels(tg, tl, n, classes)
    for length in il:
        if not 0 <= length <= t_max:
            raise RuntimeError(f"Expected input_lengths to have value at "
                               f"{'least 0' if length < 0 else f'most {t_max}'}, but got "
                               f"value {length} {_WHERE}")
    loss = ctc_loss_rows(lp, labels, il, tl, blank, zero_infinity)
    if zero_infinity:
        loss = loss.where(loss != float("inf"), 0.0)
    if reduction == "mean":
        divisor = host_to(np.maximum(tl, 1), loss.dtype, loss.device)
        return (loss / divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)
