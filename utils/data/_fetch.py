"""Fetchers: how one index from the loader's index stream becomes a batch (or a sample).

The same fetchers run in the main process (``num_workers=0``) and in every worker process, so
both paths batch a dataset identically.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._collate import default_collate
from .dataset import Subset, TensorDataset

__all__ = ["create_fetcher"]


class _MapDatasetFetcher:
    """A batch of a map-style dataset: ``dataset[i]`` for each index of a batch (or the
    dataset's ``__getitems__(indices)`` when it has one), merged by ``collate_fn``."""

    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.rows = _rows_fetch(dataset) if auto_collation and collate_fn is default_collate \
            else None

    def fetch(self, possibly_batched_index) -> Any:
        ds = self.dataset
        if not self.auto_collation:
            return self.collate_fn(ds[possibly_batched_index])
        if self.rows is not None:
            batch = self.rows(possibly_batched_index)
            if batch is not None:
                return batch
        batched_fetch = getattr(ds, "__getitems__", None)
        if callable(batched_fetch):
            return self.collate_fn(batched_fetch(possibly_batched_index))
        return self.collate_fn([ds[i] for i in possibly_batched_index])


def _rows_fetch(dataset) -> Callable | None:
    """For a ``TensorDataset`` (or a ``Subset`` of one) under ``default_collate``: a function
    giving a batch as ``[t[indices] for t in tensors]``, one indexing per tensor instead of
    one per sample and a ``stack`` (the same values, dtypes and contiguous layout, in a
    fourth to a tenth of the time for a batch of 64 rows), or None when it does not apply.
    The function returns None for a batch it cannot take that way (indices that are not all
    ints, an empty batch, a tensor requiring grad, whose graph would record an index rather
    than PyTorch's stack), to be fetched sample by sample."""
    subset = dataset if type(dataset) is Subset else None
    if type(dataset.dataset if subset else dataset) is not TensorDataset:
        return None
    from ...autograd.tensor import Tensor

    def rows(batch):
        ds = dataset
        if subset is not None:  # (read at each batch: a Subset's fields may be reassigned)
            ds = subset.dataset
            if type(ds) is not TensorDataset:
                return None
        tensors = ds.tensors
        if not batch or set(map(type, batch)) != _INT or not all(
                type(t) is Tensor and not t.requires_grad for t in tensors):
            return None
        if subset is not None:
            try:
                batch = [subset.indices[i] for i in batch]
            except IndexError:
                return None  # (the per-sample path raises it, with its message)
            if set(map(type, batch)) != _INT:
                return None
        index = np.array(batch, dtype=np.int64)  # (a little faster to index with than lists)
        return [t[index] for t in tensors]
    return rows


_INT = {int}


class _IterableDatasetFetcher:
    """The next batch of an iterable dataset: as many samples as the index asks for (a list
    of ``batch_size`` placeholders), or one sample without batching. Raises ``StopIteration``
    when the dataset's iterator is exhausted (or only an incomplete batch is left under
    ``drop_last``)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, possibly_batched_index) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(iterable: bool, dataset, auto_collation: bool, collate_fn: Callable,
                   drop_last: bool) -> _MapDatasetFetcher | _IterableDatasetFetcher:
    """The fetcher for ``dataset`` (an iterable one starts a fresh pass over the dataset)."""
    cls = _IterableDatasetFetcher if iterable else _MapDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
