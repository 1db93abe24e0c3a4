"""``DataLoader``: batches of samples from a dataset, in the order a sampler gives, loaded in
the main process (``num_workers=0``) or in worker processes (``num_workers > 0``; the protocol
is Note [DataLoader workers] in ``_iterators.py``, the workers' loop is ``_worker.py``).
"""

from __future__ import annotations

import itertools
import multiprocessing
import numbers
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from ._collate import default_collate, default_convert
from ._iterators import (_BaseDataLoaderIter, _MultiProcessingDataLoaderIter,
                         _SingleProcessDataLoaderIter)
from ._worker import get_worker_info
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

T_co = TypeVar("T_co", covariant=True)


class DataLoader(Generic[T_co]):
    r"""Data loader combines a dataset and a sampler, and provides an iterable over the given
    dataset.

    The ``DataLoader`` supports both map-style and iterable-style datasets with single- or
    multi-process loading, customizing loading order and optional automatic batching
    (collation) and memory pinning.

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
        num_workers: how many subprocesses to use for data loading. ``0`` means that the data
            will be loaded in the main process (default: ``0``). Workers fetch and collate
            whole batches and send them to the main process pickled, so datasets should
            return CPU tensors (or NumPy arrays): CUDA cannot be used in a forked worker.
        collate_fn: merges a list of samples to form a mini-batch of Tensor(s)
            (default: ``default_collate``, or ``default_convert`` without batching). With
            workers it runs in the workers.
        pin_memory: if ``True``, each batch's tensors are copied into pinned (page-locked)
            host memory before they are returned (in the main process), so that
            ``.to("cuda", non_blocking=True)`` copies them asynchronously. Where no CUDA
            device is available it warns, as PyTorch, and batches stay in ordinary memory.
        drop_last: set to ``True`` to drop the last incomplete batch, if the dataset size is
            not divisible by the batch size (default: ``False``). With workers and an
            ``IterableDataset``, each worker drops its own last incomplete batch.
        timeout: if positive, the timeout value in seconds for collecting a batch from
            workers; ``RuntimeError("DataLoader timed out after {timeout} seconds")`` when
            none arrives in time. Should always be non-negative (default: ``0``, wait).
        worker_init_fn: if not ``None``, this will be called on each worker subprocess with
            the worker id (an int in ``[0, num_workers - 1]``) as input, after seeding and
            before data loading (default: ``None``). With ``"spawn"`` it must be picklable
            (no lambdas).
        multiprocessing_context: a start method name (``"fork"``, ``"spawn"``,
            ``"forkserver"``) or a ``multiprocessing`` context; ``None`` (default) uses the
            platform's default context.
        generator: the random numbers of the default ``RandomSampler`` (``shuffle=True``) and
            of the workers' ``base_seed``: ``None`` (tritongrad's global generator, so
            ``tg.manual_seed`` fixes both), a ``tg.Generator``, a ``numpy.random.Generator``,
            or an object with ``initial_seed()``.
        prefetch_factor: number of batches loaded in advance by each worker. ``2`` means
            there will be a total of 2 * num_workers batches prefetched across all workers
            (default: ``None`` without workers, ``2`` with them).
        persistent_workers: if ``True``, the data loader will not shut down the worker
            processes after a dataset has been consumed once. This allows to maintain the
            workers' ``Dataset`` instances alive (default: ``False``).
        pin_memory_device: accepted for compatibility; pinned memory is for CUDA.
        in_order: if ``False``, the data loader will not enforce that batches are returned in
            a first-in, first-out order. Only applies when ``num_workers > 0`` (default:
            ``True``).

    Each iterator draws a ``base_seed`` from ``generator`` (with or without workers, as
    PyTorch); worker ``i`` then seeds tritongrad's global generator (``tg.manual_seed``) and
    Python's ``random`` with ``base_seed + i`` before ``worker_init_fn`` runs, and
    ``get_worker_info()`` tells it its ``id``, ``num_workers``, ``seed`` and its copy of the
    ``dataset``; NumPy's legacy global state (``np.random.*``) is seeded from ``base_seed``
    and ``i`` too, as PyTorch's workers do. Other libraries' random states are inherited
    unchanged from the main process (identical in every forked worker): seed them in
    ``worker_init_fn`` from ``get_worker_info().seed``. An ``IterableDataset`` is
    replicated in every worker; splitting its stream between workers (by
    ``get_worker_info()``) is the dataset's job. An exception in a worker is raised again in
    the main process, of its type when that can be rebuilt, with the message "Caught
    <Type> in DataLoader worker process <id>." and the worker's traceback.

    Example:
        >>> ds = TensorDataset(tg.arange(10.0).reshape(5, 2), tg.arange(5))
        >>> for x, y in DataLoader(ds, batch_size=2):
        ...     print(tuple(x.shape), y.tolist())
        (2, 2) [0, 1]
        (2, 2) [2, 3]
        (1, 2) [4]
        >>> [y.tolist() for _, y in DataLoader(ds, batch_size=2, num_workers=2)]
        [[0, 1], [2, 3], [4]]
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
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = int(num_workers)
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _checked_context(multiprocessing_context, num_workers)
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator
        self._iterator: _BaseDataLoaderIter | None = None  # the persistent workers' iterator
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

        if sampler is None:  # (an IterableDataset's: PyTorch's placeholder, never drawn from)
            sampler = (_InfiniteConstantSampler() if self._iterable
                       else RandomSampler(dataset, generator=generator) if shuffle  # type: ignore
                       else SequentialSampler(dataset))  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.check_worker_number_rationality()
        self._initialized = True

    _initialized = False
    # len(dataset) of an IterableDataset once len(self) was asked (the iterators warn when
    # the stream yields more), as PyTorch's attribute of this name
    _IterableDataset_len_called: int | None = None
    _FROZEN = frozenset(("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                         "persistent_workers"))

    def __setattr__(self, attr: str, val) -> None:
        # as PyTorch's: these define the iteration already set up (the batch sampler was
        # built from batch_size, sampler and drop_last), so changing them later is refused
        if self._initialized and attr in self._FROZEN:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self):
        # What the fetchers are asked for, one item per batch: the batch sampler's index
        # lists, the sampler's indices, or for an IterableDataset an endless stream of "the
        # next batch_size samples" (which each worker's copy answers until it runs out).
        if self._iterable:
            return itertools.repeat([None] * self.batch_size if self._auto_collation else None)
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator[Any]:
        """An iterator over the batches. With ``persistent_workers`` the same iterator (and
        its worker processes) serves every epoch; otherwise each call starts a new one, whose
        workers stop when it is exhausted or garbage collected."""
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def check_worker_number_rationality(self) -> None:
        """Warns, as PyTorch, when ``num_workers`` exceeds the CPUs this process may use
        (called by ``__init__``)."""
        if self.num_workers == 0:
            return
        try:
            cpus, cpuset = len(os.sched_getaffinity(0)), True
        except AttributeError:  # not Linux
            cpus, cpuset = os.cpu_count(), False
        if cpus is not None and self.num_workers <= cpus:
            return
        suggested = ("DataLoader is not able to compute a suggested max number of worker in "
                     "current system." if cpus is None else
                     f"Our suggested max number of worker in current system is {cpus}"
                     f"{'' if cpuset else ' (`cpuset` is not taken into account)'}, which is "
                     f"smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {suggested} Please be aware that excessive worker creation might "
                      f"get DataLoader running slow or even freeze, lower the worker number to "
                      f"avoid potential slowness/freeze if necessary.", stacklevel=3)

    def __len__(self) -> int:
        """The number of batches (of samples without batching): from the sampler, or for an
        ``IterableDataset`` from the dataset's own ``len()`` (which must then exist)."""
        if self._iterable:
            n = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)  # type: ignore[arg-type]


class _InfiniteConstantSampler(Sampler):
    r"""Analogous to ``itertools.repeat(None, None)``: the sampler of a ``DataLoader`` over
    an ``IterableDataset`` (whose order is the dataset's own)."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


def _checked_context(context, num_workers: int):
    """The ``multiprocessing`` context for ``multiprocessing_context=`` (a start method name
    becomes its context), with PyTorch's checks."""
    if context is None:
        return None
    if num_workers == 0:
        raise ValueError(f"multiprocessing_context can only be used with multi-process "
                         f"loading (num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got "
                             f"multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or "
                        f"a string specifying the start method, but got "
                        f"multiprocessing_context={context}")
    return context
