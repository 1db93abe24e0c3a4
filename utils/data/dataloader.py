"""``DataLoader``: batches of samples from a dataset, in the order a sampler gives.

Loading runs in the main process (``num_workers=0``): tritongrad keeps CUDA state per process
and has no worker-process protocol, so ``num_workers > 0`` raises ``NotImplementedError``
rather than silently loading in the main process.
"""

from __future__ import annotations

import itertools
import numbers
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from ._collate import default_collate, default_convert
from ._pin_memory import pin_memory
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert"]

T_co = TypeVar("T_co", covariant=True)


class DataLoader(Generic[T_co]):
    r"""Data loader combines a dataset and a sampler, and provides an iterable over the given
    dataset.

    The ``DataLoader`` supports both map-style and iterable-style datasets with single-process
    loading, customizing loading order and optional automatic batching (collation).

    Args:
        dataset: dataset from which to load the data.
        batch_size: how many samples per batch to load (default: ``1``); ``None`` disables
            automatic batching (each sample goes through ``default_convert``).
        shuffle: set to ``True`` to have the data reshuffled at every epoch (default:
            ``False``).
        sampler: defines the strategy to draw samples from the dataset. Can be any
            ``Iterable`` with ``__len__`` implemented. If specified, ``shuffle`` must not be
            specified.
        batch_sampler: like ``sampler``, but returns a batch of indices at a time. Mutually
            exclusive with ``batch_size``, ``shuffle``, ``sampler``, and ``drop_last``.
        num_workers: must be ``0`` (loading in the main process); a positive number raises
            ``NotImplementedError``.
        collate_fn: merges a list of samples to form a mini-batch of Tensor(s)
            (default: ``default_collate``, or ``default_convert`` without batching).
        pin_memory: if ``True``, each batch's tensors are copied into pinned (page-locked)
            host memory before they are returned, so that ``.to("cuda", non_blocking=True)``
            copies them asynchronously. Where no CUDA device is available it warns, as
            PyTorch, and batches stay in ordinary memory.
        drop_last: set to ``True`` to drop the last incomplete batch, if the dataset size is
            not divisible by the batch size (default: ``False``).
        timeout: must be non-negative; with no workers there is nothing to time out.
        worker_init_fn, multiprocessing_context, prefetch_factor, persistent_workers,
            in_order: worker options; as in PyTorch, ``prefetch_factor`` and
            ``persistent_workers`` need ``num_workers > 0`` and so raise here.
        generator: the random numbers of the default ``RandomSampler`` (``shuffle=True``):
            ``None`` (tritongrad's global generator, so ``tg.manual_seed`` fixes the order), a
            ``numpy.random.Generator``, or an object with ``initial_seed()``.

    Example:
        >>> ds = TensorDataset(tg.arange(10.0).reshape(5, 2), tg.arange(5))
        >>> for x, y in DataLoader(ds, batch_size=2):
        ...     print(tuple(x.shape), y.tolist())
        (2, 2) [0, 1]
        (2, 2) [2, 3]
        (1, 2) [4]
    """

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler[list] | Iterable[list] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if not isinstance(num_workers, numbers.Integral) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if num_workers > 0:
            raise NotImplementedError(
                f"DataLoader: num_workers={num_workers} is not supported: tritongrad loads in "
                f"the main process only; use num_workers=0")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = 0
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)

        # The checks and their wording are PyTorch's, in its order.
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle  # type: ignore
                       else SequentialSampler(dataset))  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator[Any]:
        batches = self._iter_iterable() if self._iterable else self._iter_map()
        if not self.pin_memory:
            return batches
        from ...runtime import driver
        if not driver.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
            return batches
        return map(pin_memory, batches)

    def _iter_map(self) -> Iterator[Any]:
        ds = self.dataset
        batched_fetch = getattr(ds, "__getitems__", None)
        for index in self._index_sampler:
            if not self._auto_collation:
                yield self.collate_fn(ds[index])
            elif callable(batched_fetch):
                yield self.collate_fn(batched_fetch(index))
            else:
                yield self.collate_fn([ds[i] for i in index])

    def _iter_iterable(self) -> Iterator[Any]:
        it = iter(self.dataset)
        if not self._auto_collation:
            for sample in it:
                yield self.collate_fn(sample)
            return
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        """The number of batches (of samples without batching): from the sampler, or for an
        ``IterableDataset`` from the dataset's own ``len()`` (which must then exist)."""
        if self._iterable:
            n = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)  # type: ignore[arg-type]
