"""``tritongrad.futures``: ``Future``, the result of an asynchronous computation, with
``collect_all`` and ``wait_all`` (PyTorch's ``torch.futures``).

A Future is completed once, with a value (``set_result``) or an error (``set_exception``);
``wait()`` blocks until then (another thread may complete it) and returns the value or raises
the error. ``then`` chains a callback returning a new Future; ``add_done_callback`` runs one
for its side effects. Callbacks run in the thread that completes the Future, or at once if it
is already complete. ``torch.jit.fork`` (tritongrad/jit.py) gives back completed Futures.

Unlike PyTorch's, these Futures hold no CUDA streams or events: the ``devices`` argument is
accepted for compatibility, and values are handed over as they are (tritongrad's ops already
order their work on the current stream).
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")


class Future(Generic[T]):
    """Encapsulates an asynchronous execution of a callable (``torch.jit.fork``'s result),
    with APIs to add callback functions and set results.

    Args:
        devices (list of int, str or device, optional): the devices on which tensors in the
            Future's value may reside (accepted for compatibility; see the module's note).

    Example:
        >>> fut = tg.futures.Future()
        >>> chained = fut.then(lambda f: f.wait() + 1)
        >>> fut.set_result(41)
        >>> chained.wait()
        42
    """

    def __init__(self, *, devices: list | None = None):
        self._devices = list(devices) if devices is not None else []
        self._cond = threading.Condition()
        self._done = False
        self._result = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable] = []

    def done(self) -> bool:
        """Return ``True`` if this Future is done: it has a result or an exception."""
        return self._done

    def wait(self) -> T:
        """Block until the value of this Future is ready, and return it; if the Future
        completed with an error, raise that error."""
        with self._cond:
            while not self._done:
                self._cond.wait()
        if self._error is not None:
            raise self._error
        return self._result

    def value(self) -> T:
        """Obtain the value of an already-completed Future without blocking (raising its error
        if it completed with one). Call it only after ``done()`` is True, or in a callback."""
        if not self._done:
            raise RuntimeError("Future.value(): the Future is not completed yet; call wait() "
                               "to block until it is")
        if self._error is not None:
            raise self._error
        return self._result

    def _complete(self, result, error: BaseException | None) -> None:
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._result, self._error, self._done = result, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:  # (outside the lock: a callback may wait on other Futures)
            cb(self)

    def set_result(self, result: T) -> None:
        """Set the result for this Future, which marks it completed and triggers its
        callbacks. A Future can only be marked completed once."""
        self._complete(result, None)

    def set_exception(self, result: T) -> None:
        """Set an exception for this Future, which marks it completed with an error and
        triggers its callbacks; ``wait()`` and ``value()`` then raise it."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """Append ``callback``, run with this Future once it completes; returns a new Future
        holding the callback's return value. If the callback raises, the new Future completes
        with a RuntimeError naming the error."""
        out: Future[S] = Future(devices=self._devices)

        def run(fut: Future[T]) -> None:
            try:
                value = callback(fut)
            except Exception as e:  # (PyTorch wraps it, with the callback's traceback)
                tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
                err = RuntimeError(f"Got the following error when running the callback: "
                                   f"{type(e).__name__}: {e}\n\n{tb}")
                err.__cause__ = e
                out.set_exception(err)
            else:
                out.set_result(value)
        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Append ``callback``, run with this Future once it completes (at once if it already
        has); its return value is ignored. Errors it raises propagate to whoever completes
        the Future."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def __repr__(self) -> str:
        state = "done" if self._done else "pending"
        return f"<tritongrad.futures.Future object ({state})>"


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """Collects the provided Futures into a single combined Future that completes when all of
    them complete, with the list of the Futures as its value (completed with the first error
    if one of them failed).

    Example:
        >>> f0, f1 = tg.futures.Future(), tg.futures.Future()
        >>> fut = tg.futures.collect_all([f0, f1])
        >>> f0.set_result(0); f1.set_result(1)
        >>> [f.wait() for f in fut.wait()]
        [0, 1]
    """
    futures = list(futures)
    for i, f in enumerate(futures):
        if not isinstance(f, Future):
            raise TypeError(f"collect_all(): expected a list of Futures, got "
                            f"{type(f).__name__} at index {i}")
    out: Future[list[Future]] = Future()
    lock = threading.Lock()
    left = [len(futures)]

    def one_done(_f: Future) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            err = next((f._error for f in futures if f._error is not None), None)
            if err is not None:
                out.set_exception(err)
            else:
                out.set_result(futures)
    if not futures:
        out.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures: list[Future]) -> list:
    """Waits for all provided Futures to be complete, and returns the list of their values;
    if any of them completed with an error, raises it.

    Example:
        >>> f = tg.futures.Future(); f.set_result(3)
        >>> tg.futures.wait_all([f])
        [3]
    """
    return [f.wait() for f in collect_all(futures).wait()]
