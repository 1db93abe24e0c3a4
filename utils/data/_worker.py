"""The worker side of multi-process loading: the loop each worker process runs, what it knows
about itself (``get_worker_info``), and the messages it sends back to the main process.

A worker takes ``(task index, batch indices)`` pairs from its own index queue, fetches and
collates that batch with the loader's fetcher, and puts ``(task index, batch)`` on the result
queue it shares with the other workers. ``None`` on the index queue ends it. See the main
process's side in ``_iterators.py``.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import queues
from multiprocessing.reduction import ForkingPickler

from ._fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

# How often a waiting worker checks that the main process still lives, and how long the main
# process waits for a worker to exit before terminating it (PyTorch's interval).
MP_STATUS_CHECK_INTERVAL = 5.0


@dataclass(frozen=True)
class WorkerInfo:
    """Information about the current ``DataLoader`` worker process.

    Attributes:
        id: the current worker id (``0`` to ``num_workers - 1``).
        num_workers: the total number of workers.
        seed: the random seed set for the current worker (``base_seed + id``).
        dataset: the copy of the dataset object in this process.
    """

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    r"""Returns the information about the current ``DataLoader`` iterator worker process.

    When called in a worker, this returns an object guaranteed to have the following
    attributes:

    * ``id``: the current worker id.
    * ``num_workers``: the total number of workers.
    * ``seed``: the random seed set for the current worker. This value is determined by main
      process RNG and the worker id. See ``DataLoader``'s documentation for more details.
    * ``dataset``: the copy of the dataset object in **this** process. Note that this will be
      a different object in a different process than the one in the main process.

    When called in the main process, this returns ``None``.

    Note:
        When used in a ``worker_init_fn`` passed over to ``DataLoader``, this method can be
        useful to set up each worker process differently, for instance, using ``worker_id``
        to configure the ``dataset`` object to only read a specific fraction of a sharded
        dataset, or use ``seed`` to seed other libraries used in dataset code.

    Example:
        >>> class Range(IterableDataset):
        ...     def __iter__(self):
        ...         info = get_worker_info()  # None in the main process
        ...         start, step = (0, 1) if info is None else (info.id, info.num_workers)
        ...         return iter(range(start, 8, step))
        >>> sorted(int(x) for x in DataLoader(Range(), num_workers=2))
        [0, 1, 2, 3, 4, 5, 6, 7]
    """
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback as
    text (tracebacks do not pickle) and raised there again by ``reraise``."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        exc_type = exc_info[0]
        self.exc_type_name = exc_type.__name__
        # The type travels by reference: one the main process cannot import (a class defined
        # in a function) would make the whole message unpicklable, so it becomes RuntimeError.
        try:
            pickle.dumps(exc_type)
            self.exc_type = exc_type
        except Exception:
            self.exc_type = None
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raises the wrapped exception's type with PyTorch's message ("Caught ValueError in
        DataLoader worker process 0.\\nOriginal Traceback (most recent call last): ..."), or
        ``RuntimeError`` with that message when the type cannot be rebuilt from it."""
        msg = f"Caught {self.exc_type_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            # KeyError shows repr() of its argument, which would print the traceback as one
            # escaped line.
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)  # type: ignore[misc]
        except Exception:
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            # (this frame would hold the exception, which holds this frame through its
            # traceback: a cycle that would keep the raising iterator and its workers alive
            # until the next garbage collection after the caller dropped the exception)
            del exception


class _KeyErrorMessage(str):
    """A str whose repr is itself (what ``KeyError`` prints)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return self


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose copy of an ``IterableDataset`` is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; echoed back once they are
    ready (every result of the previous epoch comes before the echo)."""


class ResultQueue(queues.Queue):
    """The queue the workers share for their results.

    A result that cannot be pickled (a collate function returning a lambda) fails in the
    queue's background thread, where ``multiprocessing`` would only print it and the main
    process would wait for that batch forever; here the failure is sent in the batch's place
    and raised in the main process like any worker exception.
    """

    def _on_queue_feeder_error(self, e: BaseException, obj) -> None:  # multiprocessing's hook
        if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], int):
            where = "in DataLoader worker process " + (
                str(_worker_info.id) if _worker_info is not None else "(unknown)")
            self.put((obj[0], ExceptionWrapper((type(e), e, e.__traceback__), where)))
        else:
            super()._on_queue_feeder_error(e, obj)


def _reduce_tensor(t):
    """How a worker pickles a tensor for the main process: ``Tensor.__reduce_ex__`` copies a
    CPU tensor's values first (it also serves ``deepcopy``, whose copy must not share
    memory), but a batch on its way out is being serialized anyway, so its array goes to the
    pickler as it is: one copy of every batch fewer."""
    from ...autograd.tensor import _rebuild_tensor
    if t.device.type != "cpu":
        return t.__reduce_ex__(pickle.DEFAULT_PROTOCOL)
    return _rebuild_tensor, (t.detach().numpy(), t.dtype, "cpu", t.requires_grad)


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seeds what PyTorch's workers seed; returns the worker's seed, ``base_seed +
    worker_id``, given to Python's ``random`` and the framework's global generator. NumPy's
    legacy global state gets four words of ``SeedSequence([worker_id, base_seed])`` (the
    words PyTorch's worker derives with its copy of that algorithm), so forked workers do not
    all draw the numbers the main process would have drawn next."""
    import numpy as np

    import tritongrad
    seed = base_seed + worker_id
    random.seed(seed)
    tritongrad.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def _worker_loop(iterable: bool, dataset, index_queue, data_queue, done_event,
                 auto_collation: bool, collate_fn: Callable, drop_last: bool, base_seed: int,
                 init_fn: Callable[[int], None] | None, worker_id: int,
                 num_workers: int) -> None:
    """The body of worker process ``worker_id``: seed, run ``init_fn(worker_id)``, then serve
    tasks from ``index_queue`` until ``None`` arrives or the main process dies."""
    global _worker_info
    where = f"in DataLoader worker process {worker_id}"
    from ...autograd.tensor import Tensor
    # (this process's pickler only: Tensor subclasses such as Parameter keep their own)
    ForkingPickler.register(Tensor, _reduce_tensor)
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=where)  # answers every task of this worker

        # After its dataset copy runs out (or at shutdown) a worker only waits for None.
        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:  # reparented: the main process died
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                if init_error is None:
                    fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn,
                                             drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_error is not None:
                data = init_error
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where=where)
                    else:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    data = ExceptionWrapper(where=where)
            data_queue.put((idx, data))
            del data, idx, index, r  # the batch is the queue's now; do not keep it alive
    except KeyboardInterrupt:
        pass  # the main process gets it too and shuts the workers down
    if done_event.is_set():
        # Results the main process will never read must not keep this process from exiting.
        data_queue.cancel_join_thread()
        data_queue.close()
