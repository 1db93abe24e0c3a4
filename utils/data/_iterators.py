"""What ``iter(DataLoader)`` returns: loading in the main process, or in worker processes.

Note [DataLoader workers]
    The main process owns the sampler. It puts each batch's indices, tagged with a task
    index, on one worker's index queue (round robin over the workers still running), keeping
    at most ``prefetch_factor * num_workers`` tasks outstanding; every worker fetches and
    collates its batches and puts ``(task index, batch)`` on the one result queue they share
    (``multiprocessing`` queues: pickled, tensors crossing as their values). ``in_order=True``
    holds early arrivals back until their turn, so batches come in sampler order;
    ``in_order=False`` yields them as they come. An ``IterableDataset`` is copied into every
    worker and each copy batches its own stream; a worker whose copy ends says so and gets no
    more tasks.

    A queue's ``put`` hands the message to a feeder thread, so the main process never waits
    for a busy worker to take its next task, however long its index lists. Those threads
    live as long as the iterator: a loader that forks its workers while another one's are
    running does so from a multi-threaded process (Python 3.12 warns, with a
    ``DeprecationWarning``, as it does under PyTorch's loader, which is built the same way).

    Shutdown (end of the data unless the workers are persistent, ``del``, garbage
    collection): set the shared done event (workers skip the tasks still queued), put
    ``None`` on every index queue, join each worker for ``MP_STATUS_CHECK_INTERVAL`` seconds
    and terminate any that is still alive. The workers are daemonic, so multiprocessing
    terminates them when the main process exits, and a worker whose main process was killed
    notices (its parent changes) and exits.
"""

from __future__ import annotations

import itertools
import multiprocessing
import queue
import time
import warnings
import weakref
from typing import Any

from ._fetch import create_fetcher
from ._pin_memory import pin_memory
from ._random import draw_seed
from ._worker import (MP_STATUS_CHECK_INTERVAL, ExceptionWrapper, ResultQueue,
                      _IterableDatasetStopIteration, _ResumeIteration, _worker_loop)

__all__ = []

# How often the main process, while it waits for a batch, checks that the workers it waits
# on are still alive: a dead worker is reported within this delay.
_LIVENESS_CHECK_INTERVAL = 0.2


class _BaseDataLoaderIter:
    """What both iterators share: the index stream, the workers' base seed (drawn once per
    iterator from the loader's generator, with or without workers, as PyTorch draws it), and
    pinning each batch before it is returned."""

    def __init__(self, loader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._pin_memory = loader.pin_memory and _pinning_available()
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = draw_seed(loader.generator, "DataLoader")
        self._num_yielded = 0
        # len(dataset) of an IterableDataset if len(loader) was asked, else None: a stream
        # yielding more than that warns, as PyTorch's (which compares it with the number of
        # batches, whatever the batch size)
        self._len_called = loader._IterableDataset_len_called

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def __next__(self) -> Any:
        data = self._next_data()
        if self._len_called is not None:
            self._num_yielded += 1
            if self._num_yielded > self._len_called:
                self._warn_length()
        return pin_memory(data) if self._pin_memory else data

    def _warn_length(self) -> None:
        msg = (f"Length of IterableDataset {self._dataset} was reported to be "
               f"{self._len_called}(when accessing len(dataloader)), but {self._num_yielded} "
               f"samples have been fetched. ")
        if self._num_workers > 0:
            msg += ("For multiprocessing data-loading, this could be caused by not properly "
                    "configuring the IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset"
                    " for examples.")
        warnings.warn(msg, stacklevel=3)

    def _next_data(self) -> Any:
        raise NotImplementedError

    def _reset(self, loader) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._len_called = loader._IterableDataset_len_called

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


def _pinning_available() -> bool:
    from ...runtime import driver
    if driver.is_available():
        return True
    warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                  "device pinned memory won't be used.", stacklevel=6)
    return False


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Loading in the main process (``num_workers=0``)."""

    def __init__(self, loader) -> None:
        super().__init__(loader)
        self._fetcher = create_fetcher(self._iterable, self._dataset, self._auto_collation,
                                       self._collate_fn, self._drop_last)

    def _next_data(self) -> Any:
        index = next(self._sampler_iter)  # StopIteration: the sampler is done
        return self._fetcher.fetch(index)  # StopIteration: an iterable dataset is done


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Loading in ``num_workers`` worker processes; see Note [DataLoader workers]."""

    def __init__(self, loader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        if self._prefetch_factor <= 0:
            raise ValueError(f"prefetch_factor must be greater than 0 for multi-process "
                             f"loading, but got prefetch_factor={self._prefetch_factor}")
        self._in_order = loader.in_order
        self._persistent_workers = loader.persistent_workers
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._result_queue = ResultQueue(ctx=ctx)
        self._done_event = ctx.Event()
        self._index_queues: list = []
        self._workers: list = []
        self._workers_status = [True] * self._num_workers
        # Stops the workers when this iterator is exhausted, deleted or garbage collected.
        # A finalizer rather than __del__: it holds the queues, which keeps them out of the
        # garbage when the iterator is collected in a cycle (say, with the traceback of an
        # exception it raised); queues in that garbage could have their own finalizers stop
        # their feeder threads first, and the None sent below would never leave. Not run at
        # interpreter exit, where multiprocessing terminates the daemonic workers itself.
        self._shutdown = weakref.finalize(self, _shutdown_workers, self._workers,
                                          self._index_queues, self._result_queue,
                                          self._done_event)
        self._shutdown.atexit = False
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            # Indices still queued at shutdown must not keep this process from exiting.
            index_queue.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, daemon=True, args=(
                self._iterable, self._dataset, index_queue, self._result_queue,
                self._done_event, self._auto_collation, self._collate_fn, self._drop_last,
                self._base_seed, loader.worker_init_fn, i, self._num_workers))
            # Added only once started, so that shutdown never joins a process that never ran.
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader)
        self._send_idx = 0  # the task index of the next batch sent to a worker
        self._rcvd_idx = 0  # the task index of the next batch to return (in order)
        self._task_info: dict = {}  # task -> (worker,) while out, (worker, data) once back
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # Persistent workers: drop whatever the previous epoch left in flight, then
            # restart every worker's pass over its dataset.
            for q in self._index_queues:
                q.put(_ResumeIteration())
            waiting = self._num_workers
            while waiting:
                idx, _ = self._get_data()
                waiting -= isinstance(idx, _ResumeIteration)
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float) -> tuple[bool, Any]:
        """``(True, message)`` from the result queue within ``timeout`` seconds, else
        ``(False, None)``; raises if a worker still expected to answer has died."""
        deadline = time.monotonic() + timeout
        while True:
            wait = min(_LIVENESS_CHECK_INTERVAL, max(deadline - time.monotonic(), 0.0))
            try:
                return True, self._result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            failed = [w for i, w in enumerate(self._workers)
                      if self._workers_status[i] and not w.is_alive()]
            if failed:
                for i, w in enumerate(self._workers):
                    if w in failed:
                        self._mark_worker_as_unavailable(i)
                pids = ", ".join(str(w.pid) for w in failed)
                codes = ", ".join(str(w.exitcode) for w in failed)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly "
                                   f"(exit code(s) {codes})")
            if time.monotonic() >= deadline:
                return False, None

    def _get_data(self) -> Any:
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            ok, data = self._try_get_data(MP_STATUS_CHECK_INTERVAL)
            if ok:
                return data

    def _next_data(self) -> Any:
        while True:
            # Skip the tasks of workers whose iterable dataset ran out before answering them.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier, held back
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            idx, data = self._get_data()
            if isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx or not self._in_order:
                worker_id = self._task_info.pop(idx)[0]
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            self._task_info[idx] += (data,)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next worker still running, if any
            worker_id = next(self._worker_queue_idx_cycle)
            # Out of order, a worker's share of the outstanding tasks is capped so that a slow
            # worker does not collect a queue of batches others could have loaded.
            if self._workers_status[worker_id] and (
                    self._in_order or self._workers_num_tasks[worker_id]
                    < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id: int) -> Any:
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        # None ends the worker once it has read the tasks before it.
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stops the workers now (once; later calls do nothing)."""
        self._shutdown()


def _shutdown_workers(workers: list, index_queues: list, result_queue, done_event) -> None:
    """See Note [DataLoader workers]. A worker that already ended gets a None it never reads:
    harmless, and simpler than tracking which ones did."""
    try:
        done_event.set()
        for q in index_queues:
            q.put(None)
        for w in workers:
            w.join(timeout=MP_STATUS_CHECK_INTERVAL)
        for q in index_queues:
            q.close()
        result_queue.close()
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
                w.join(timeout=MP_STATUS_CHECK_INTERVAL)
