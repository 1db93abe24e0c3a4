"""``spawn`` and ``start_processes``: one process per rank, errors re-raised in the parent.

Each child runs ``fn(i, *args)``; a child that raises writes its traceback text to a file of
its own and exits with code 1. The parent waits on all children's sentinels; at the first
failure it terminates the others and raises ``ProcessRaisedException`` (the child's traceback
in the message) or ``ProcessExitedException`` (the exit code or signal of a child that died
without a Python exception), as ``torch.multiprocessing`` does.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import warnings
from collections.abc import Callable

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"]


class ProcessException(Exception):
    """A child process of ``spawn`` failed; ``error_index`` is its rank, ``pid`` its id."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """Exception raised when a process failed due to an exception raised by the code."""


class ProcessExitedException(ProcessException):
    """Exception raised when a process failed due to signal or exited with a specific code."""

    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _prctl_pr_set_pdeathsig(sig: int) -> None:
    """Asks Linux to send this process ``sig`` when its parent dies (``prctl``), so that the
    children of a killed parent do not run on; elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(sig))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # (no prctl in this C library: the children outlive a killed parent)


def _wrap(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    """The body of child ``i``: ``fn(i, *args)``, its traceback saved if it raises."""
    _prctl_pr_set_pdeathsig(signal.SIGINT)  # (as PyTorch's: SIGINT, a KeyboardInterrupt)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent got SIGINT too and stops the others
    except Exception:
        import traceback
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started, and the files their errors go to."""

    def __init__(self, processes: list, error_files: list[str]):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        """The process ids of the children, by rank."""
        return [int(process.pid) for process in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Join one or more processes within spawn context.

        Attempt to join one or more processes in this spawn context. If one of them exited
        with a non-zero exit status, this function kills the remaining processes (optionally
        with a grace period) and raises an exception with the cause of the first process
        exiting.

        Returns ``True`` if all processes have been joined successfully, ``False`` if there
        are more processes that need to be joined.

        Args:
            timeout (float): Wait this long (in seconds) before giving up on waiting.
            grace_period (float): When any processes fail, wait this long (in seconds) for
                others to shutdown gracefully before terminating them. If they still don't
                exit, wait another grace period before killing them.
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        self._stop_others(grace_period)
        failed = self.processes[error_index]
        error_file = self.error_files[error_index]
        if not os.access(error_file, os.R_OK):
            exitcode = failed.exitcode
            if exitcode < 0:
                name = signal.Signals(-exitcode).name
                raise ProcessExitedException(
                    f"process {error_index} terminated with signal {name}",
                    error_index=error_index, error_pid=failed.pid, exit_code=exitcode,
                    signal_name=name)
            raise ProcessExitedException(
                f"process {error_index} terminated with exit code {exitcode}",
                error_index=error_index, error_pid=failed.pid, exit_code=exitcode)
        with open(error_file, "rb") as fh:
            original_trace = pickle.load(fh)
        os.unlink(error_file)
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n"
        msg += original_trace
        raise ProcessRaisedException(msg, error_index, failed.pid)

    def _stop_others(self, grace_period: float | None) -> None:
        """SIGTERM the children still running (after ``grace_period`` seconds, if given, of
        waiting for them to end on their own), then SIGKILL those that ignore it."""
        alive = [p for p in self.processes if p.is_alive()]
        if grace_period is not None and alive:
            multiprocessing.connection.wait([p.sentinel for p in alive], timeout=grace_period)
            alive = [p for p in alive if p.is_alive()]
        for process in alive:
            process.terminate()
        for process in alive:
            process.join(grace_period if grace_period is not None else 30)
            if process.is_alive():
                process.kill()
                process.join()


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn"):
    """Starts ``nprocs`` processes running ``fn(i, *args)`` (``i`` the process's rank, 0 to
    ``nprocs - 1``) with the ``start_method`` ("spawn", "fork" or "forkserver").

    Args:
        fn (function): the entry point, a function defined at a module's top level (spawn
            and forkserver pickle it). Called as ``fn(i, *args)``.
        args (tuple): Arguments passed to ``fn``.
        nprocs (int): Number of processes to spawn.
        join (bool): Perform a blocking join on all processes.
        daemon (bool): The spawned processes' daemon flag.
        start_method (str): the ``multiprocessing`` start method.

    Returns:
        None if ``join`` is ``True``, :class:`~ProcessContext` if ``join`` is ``False``.

    Raises:
        ProcessRaisedException: a child raised (its traceback is in the message).
        ProcessExitedException: a child exited with a nonzero code or was killed by a signal.
    """
    mp = multiprocessing.get_context(start_method)
    error_files, processes = [], []
    for i in range(nprocs):
        # A name for the child's error file: created and removed here so that the file
        # exists only if the child writes it (``join`` tells a raise from a crash by that).
        tf = tempfile.NamedTemporaryFile(prefix="tritongrad-errorfile-", suffix=".pickle",
                                         delete=False)
        tf.close()
        os.unlink(tf.name)
        process = mp.Process(target=_wrap, args=(fn, i, args, tf.name), daemon=daemon)
        process.start()
        error_files.append(tf.name)
        processes.append(process)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn"):
    """Spawns ``nprocs`` processes that run ``fn`` with ``args``.

    If one of the processes exits with a non-zero exit status, the remaining processes are
    killed and an exception is raised with the cause of termination. In the case an exception
    was caught in the child process, it is forwarded and its traceback is included in the
    exception raised in the parent process.

    Args:
        fn (function): Function is called as the entrypoint of the spawned process. This
            function must be defined at the top level of a module so it can be pickled and
            spawned. This is a requirement imposed by multiprocessing. The function is called
            as ``fn(i, *args)``, where ``i`` is the process index and ``args`` is the passed
            through tuple of arguments.
        args (tuple): Arguments passed to ``fn``.
        nprocs (int): Number of processes to spawn.
        join (bool): Perform a blocking join on all processes.
        daemon (bool): The spawned processes' daemon flag. If set to True, daemonic processes
            will be created.
        start_method (str): (deprecated) this method will always use ``spawn`` as the start
            method. To use a different start method use ``start_processes()``.

    Returns:
        None if ``join`` is ``True``, :class:`~ProcessContext` if ``join`` is ``False``.

    Example:
        >>> import tritongrad.multiprocessing as mp
        >>> mp.spawn(print, args=("hello",), nprocs=2)  # doctest: +SKIP
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " tritongrad.multiprocessing.start_processes(...)",
                      FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
