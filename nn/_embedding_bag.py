"""``embedding_bag``: sums, means or maxima of bags of embedding rows, with ATen's four outputs
(``torch.embedding_bag``: output, offset2bag, bag_size, max_indices) and its checks
(``_embedding_bag_cpu_impl``, aten/src/ATen/native/EmbeddingBag.cpp). ``F.embedding_bag``
(nn/functional.py, PyTorch's Python checks) and the top-level ``embedding_bag``
(nn/_torch_functions.py) both call ``embedding_bag`` below.

The offsets are read to the host (PyTorch's CPU kernel reads them there too) and cut the
indices into bags there: ``offset2bag[i]`` is the number of bag starts at or before position
``i``, less one (PyTorch's ``make_offset2bag``, so any offsets give its bags). The output is
made of recorded ops, so its gradients (``weight``'s and ``per_sample_weights``') come from
composition:

- sum / mean: the rows ``weight[indices]`` (zero where an index is ``padding_idx``), times
  ``per_sample_weights``, ``index_add``-ed into their bags; mean divides by the bag's count of
  non-padding indices (``bag_size``).
- max: the winning index of every (bag, feature) is found without recording (the first
  maximum in the bag, PyTorch's strict ``>``), and the output is ``weight.gather(0,
  max_indices)``: the gradient goes to the winning row alone, as PyTorch's backward sends it.

Empty bags (and bags of padding only) give zeros, and ``max_indices`` 0 there.

Where this differs from PyTorch's CPU kernel:

- ``offset2bag`` is always returned (PyTorch's float32 ``sum`` fast path returns it empty);
  ``bag_size`` and ``max_indices`` are zeros of ``(num_bags,)`` in ``sum`` mode (PyTorch's
  have ``offsets.size(0)`` entries when nothing requires grad and ``include_last_offset``).
- ``scale_grad_by_freq`` divides each row's gradient by the row's count in ``indices``, as
  documented; PyTorch's CPU ``sum`` / ``mean`` backward divides some rows by another row's
  count. It is ignored in ``max`` mode, as PyTorch's.
- ``include_last_offset`` with a last offset below ``len(indices)`` (outside PyTorch's CSR
  contract): the indices past it are in no bag (PyTorch leaves them out of the sums but
  counts them in ``mean``'s divisor).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import checks
from ..autograd.grad_mode import no_grad
from ..autograd.ops import nn as _nn
from ..autograd.ops.creation import arange, full, host_to, zeros
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes

__all__ = ["MODES", "embedding_bag"]

MODES = ("sum", "mean", "max")  # ATen's mode enum: 0, 1, 2
_WHERE = "(while checking arguments for embedding_bag)"


def _check_index_dtype(t: Tensor, name: str) -> None:
    if t.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the "
                           f"following scalar types: Long, Int; but got {t.type()} instead "
                           f"{_WHERE}")


def _out_of_range(bad) -> RuntimeError:
    return RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found "
                        f"idx to be {bad}")


def _check(weight: Tensor, indices: Tensor, offsets: Tensor, mode: int,
           per_sample_weights: Tensor | None) -> None:
    """ATen's argument checks, in its order."""
    for t, name in ((weight, "weight"), (indices, "indices"), (offsets, "offsets")):
        checks.tensor_arg(t, "embedding_bag", name)
    if weight.ndim != 2:
        raise RuntimeError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                           f"{weight.ndim}")
    _check_index_dtype(indices, "indices")
    _check_index_dtype(offsets, "offsets")
    if indices.ndim != 1:
        raise RuntimeError(f"input has to be a 1D Tensor, but got Tensor of dimension "
                           f"{indices.ndim}")
    if offsets.ndim != 1:
        raise RuntimeError(f"offsets has to be a 1D Tensor, but got Tensor of dimension "
                           f"{offsets.ndim}")
    checks.check_same_device(weight, indices, "indices", "embedding_bag")
    checks.check_same_device(weight, offsets, "offsets", "embedding_bag")
    if mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if per_sample_weights is not None:
        checks.tensor_arg(per_sample_weights, "embedding_bag", "per_sample_weights")
        if mode != 0:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with "
                               "mode='sum'")
        checks.check_same_device(weight, per_sample_weights, "per_sample_weights",
                                 "embedding_bag")
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type "
                               f"as tensor for argument #1 'per_sample_weights'; but type "
                               f"{weight.type()} does not equal {per_sample_weights.type()} "
                               f"{_WHERE}")
        if per_sample_weights.ndim != 1 or per_sample_weights.numel() != indices.numel():
            raise RuntimeError(f"embedding_bag: expected per_sample_weights to be 1-D with one "
                               f"weight per index ({indices.numel()}), got shape "
                               f"{list(per_sample_weights.shape)}")


def _bags(offsets: Tensor, n: int, include_last_offset: bool) -> tuple:
    """(offset2bag as a host int64 array, the number of bags, the end of the last bag), with
    PyTorch's checks of the offsets."""
    offs = np.asarray(offsets.detach().cpu().numpy(), dtype=np.int64)
    if include_last_offset:
        if offs.size < 1:
            raise RuntimeError("include_last_offset: number of offset should be at least 1")
        starts, end = offs[:-1], int(offs[-1])
    else:
        starts, end = offs, n
    if offs.size:
        if offs[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got "
                               f"{offs[0]}")
        if offs[-1] > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but "
                               f"got offsets[-1] of {offs[-1]}")
        down = np.flatnonzero(np.diff(offs) < 0)  # (a bag ending before it starts)
        if down.size:
            i = int(down[0])
            raise RuntimeError(f"embedding_bag: offsets must be non-decreasing, but got "
                               f"offsets[{i}]={offs[i]} > offsets[{i + 1}]={offs[i + 1]}")
    starts_here = np.bincount(np.clip(starts, 0, n), minlength=n + 1)[:n]
    return np.cumsum(starts_here) - 1, starts.size, min(end, n)


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple:
    """The bags of ``indices`` (1-D; bag ``b`` starts at ``offsets[b]``) reduced over their
    rows of ``weight`` by ``mode`` (0 sum, 1 mean, 2 max): ``(output (num_bags, dim),
    offset2bag (each index's bag), bag_size (non-padding indices per bag; zeros for sum),
    max_indices (the winning row per bag and feature for max; else bag_size's copy for mean,
    zeros for sum))``. ``padding_idx`` (negative: from the end) rows are left out."""
    _check(weight, indices, offsets, mode, per_sample_weights)
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num} "
                               f"through {num - 1}, but got {padding_idx}")
        padding_idx %= num
    n, dim, dev = indices.shape[0], weight.shape[1], weight.device
    # the auxiliary outputs are int32 only when both index tensors are (PyTorch promotes)
    aux = dtypes.int32 if indices.dtype is offsets.dtype is dtypes.int32 else dtypes.int64
    bag_of, bags, end = _bags(offsets, n, include_last_offset)
    offset2bag = host_to(bag_of, aux, dev)
    if bags == 0:
        empty = zeros((0,), dtype=aux, device=dev)
        shape = (0, dim) if mode == 2 else (0,)
        return (zeros((0, dim), dtype=weight.dtype, device=dev), offset2bag, empty,
                zeros(shape, dtype=aux, device=dev))
    idx = checks.guard_index(indices.long(), num, _out_of_range)
    o2b = offset2bag.long()
    valid = None  # the positions that count: not padding, not past the last bag's end
    if padding_idx is not None:
        valid = idx != padding_idx
    if end < n:
        inside = host_to(np.arange(n) < end, dtypes.bool, dev)
        valid = inside if valid is None else valid & inside
    counted = (full((n,), 1, dtype=aux, device=dev) if valid is None else valid.to(aux))
    if mode == 2:
        out, max_indices = _bag_max(weight, idx, o2b, valid, bags)
        return out, offset2bag, zeros((bags,), dtype=aux, device=dev).index_add(
            0, o2b, counted), max_indices.to(aux)
    rows = _nn.embedding(idx, weight, scale_grad_by_freq=scale_grad_by_freq)
    if valid is not None:
        rows = rows.where(valid.unsqueeze(1), 0.0)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    out = zeros((bags, dim), dtype=weight.dtype, device=dev).index_add(0, o2b, rows)
    if mode == 0:
        bag_size = zeros((bags,), dtype=aux, device=dev)
        return out, offset2bag, bag_size, bag_size.clone()
    bag_size = zeros((bags,), dtype=aux, device=dev).index_add(0, o2b, counted)
    out = out / bag_size.clamp(min=1).to(out.dtype).unsqueeze(1)
    return out, offset2bag, bag_size, bag_size.clone()


def _bag_max(weight: Tensor, idx: Tensor, o2b: Tensor, valid: Tensor | None,
             bags: int) -> tuple:
    """(output, max_indices) of max mode: per (bag, feature) the row of the first maximum in
    the bag, chosen unrecorded; the output gathers those rows of ``weight`` (zeros for empty
    bags)."""
    n, dim, dev = idx.shape[0], weight.shape[1], weight.device
    if n == 0:
        return (zeros((bags, dim), dtype=weight.dtype, device=dev),
                zeros((bags, dim), dtype=dtypes.int64, device=dev))
    with no_grad():
        vals = weight.detach()[idx]
        if valid is not None:
            vals = vals.where(valid.unsqueeze(1), -math.inf)
        bag = o2b.unsqueeze(1).expand(n, dim)
        best = full((bags, dim), -math.inf, dtype=weight.dtype, device=dev).scatter_reduce(
            0, bag, vals, "amax")
        hit = vals == best.gather(0, bag)  # (a position holding its bag's maximum)
        if valid is not None:
            hit = hit & valid.unsqueeze(1)
        pos = arange(n, device=dev).unsqueeze(1).expand(n, dim).where(hit, n)
        first = full((bags, dim), n, dtype=dtypes.int64, device=dev).scatter_reduce(
            0, bag, pos, "amin")
        found = first < n
        max_indices = idx[first.clamp(max=n - 1)].where(found, 0)
    return weight.gather(0, max_indices).where(found, 0.0), max_indices
