"""Fetchers: how one index from the loader's index stream becomes a batch (or a sample).

The same fetchers run in the main process (``num_workers=0``) and in every worker process, so
both paths batch a dataset identically.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["create_fetcher"]


class _MapDatasetFetcher:
    """A batch of a map-style dataset: ``dataset[i]`` for each index of a batch (or the
    dataset's ``__getitems__(indices)`` when it has one), merged by ``collate_fn``."""

    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, possibly_batched_index) -> Any:
        ds = self.dataset
        if not self.auto_collation:
            return self.collate_fn(ds[possibly_batched_index])
        batched_fetch = getattr(ds, "__getitems__", None)
        if callable(batched_fetch):
            return self.collate_fn(batched_fetch(possibly_batched_index))
        return self.collate_fn([ds[i] for i in possibly_batched_index])


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
