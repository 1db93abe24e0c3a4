"""``Work``: the handle of a collective started with ``async_op=True``."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Future", "Work"]


class Work:
    """A distributed operation in flight, as returned by the collectives with
    ``async_op=True`` (and by ``isend``/``irecv``).

    The output tensors hold the result only after ``wait()`` returned (or ``is_completed()``
    returned True): until then the backend may still be reading the inputs and writing the
    outputs, so neither should be touched.

    Example (two processes under ``mpirun -n 2``)::

        >>> t = tg.ones(4)
        >>> work = dist.all_reduce(t, async_op=True)
        >>> ...            # overlap other work with the communication
        >>> work.wait()
        True
        >>> t
        tensor([2., 2., 2., 2.])
    """

    __slots__ = ("__weakref__", "_done", "_finish", "_outputs", "_source", "_test", "_wait")

    def __init__(self, test: Callable[[], bool], wait: Callable[[], None],
                 finish: Callable[[], object] | None = None, outputs: tuple = ()):
        self._test, self._wait, self._finish = test, wait, finish
        self._outputs = list(outputs)
        self._done = False
        self._source = -1

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            r = self._finish()
            if isinstance(r, int):
                self._source = r
            self._finish = None

    def is_completed(self) -> bool:
        """True once the operation finished and its outputs hold the result (non-blocking;
        also gives the backend a chance to make progress)."""
        if not self._done and self._test():
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        """Blocks until the operation completed and its outputs hold the result; returns True.

        Args:
            timeout: not supported: MPI and NCCL operations cannot be abandoned midway, so
                anything but None raises ``NotImplementedError``.
        """
        if timeout is not None:
            raise NotImplementedError("Work.wait: timeout is not supported by tritongrad's "
                                      "backends (MPI and NCCL operations cannot be abandoned "
                                      "midway); call wait() without one")
        if not self._done:
            self._wait()
            self._complete()
        return True

    def is_success(self) -> bool:
        """True if the operation completed without error (errors raise from ``wait``)."""
        return self.is_completed()

    def result(self) -> list:
        """The output tensors of the operation (call after ``wait``)."""
        return self._outputs

    def get_future(self) -> Future:
        """A ``Future`` completed with the output tensors when the operation completes."""
        return Future(self)

    def source_rank(self) -> int:
        """For a completed ``irecv``: the rank the message came from."""
        if not self._done:
            raise RuntimeError("Work.source_rank: the operation has not completed; call wait() "
                               "first")
        return self._source

    def __repr__(self) -> str:
        return f"<tritongrad.distributed.Work {'completed' if self._done else 'pending'}>"


class Future:
    """The ``torch.futures.Future`` of a Work (``Work.get_future()``): its value is the
    list of the operation's output tensors, or what a ``then`` callback returned."""

    __slots__ = ("_callback", "_parent", "_value", "_work")

    def __init__(self, work: Work | None = None, parent: Future | None = None,
                 callback: Callable | None = None):
        self._work, self._parent, self._callback = work, parent, callback
        self._value = None

    def done(self) -> bool:
        """True once the value is available (non-blocking)."""
        if self._work is not None:
            return self._work.is_completed()
        return self._parent.done()

    def wait(self):
        """Blocks until the operation completed; returns the value."""
        if self._work is not None:
            self._work.wait()
            return self._work.result()
        if self._callback is not None:
            self._parent.wait()
            self._value, self._callback = self._callback(self._parent), None
        return self._value

    def value(self):
        """The value of a completed future (raises if not yet done)."""
        if not self.done():
            raise RuntimeError("Future.value: the future is not completed yet; call wait()")
        return self.wait()

    def then(self, callback: Callable) -> Future:
        """A future whose value is ``callback(self)``, run when it is waited for."""
        return Future(parent=self, callback=callback)


def completed(outputs: tuple = ()) -> Work:
    """A Work that is already done (the non-member's no-op, a size-1 group's shortcut)."""
    w = Work(lambda: True, lambda: None, None, outputs)
    w._done = True
    return w
