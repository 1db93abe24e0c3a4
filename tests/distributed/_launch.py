"""Running worker scripts under a real ``mpirun``, for the tests and the workers themselves.

A test launches one script per world size (each launch costs the imports of every rank, so a
script batches many checks); the workers report with ``run_checks``: rank 0 prints
``PASS <name>`` per check, and any failure on any rank prints its traceback and aborts the
whole MPI job, so the test sees a non-zero exit instead of a hang.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import traceback

HERE = pathlib.Path(__file__).resolve().parent
MPIRUN = pathlib.Path(sys.executable).parent / "mpirun"


def mpi_missing() -> str | None:
    """Why the MPI tests cannot run here, or None."""
    try:
        import mpi4py  # noqa: F401  (only its presence: importing mpi4py.MPI would init MPI)
    except ImportError:
        return "mpi4py is not installed (pip install tritongrad[mpi])"
    if not MPIRUN.exists():
        return f"no mpirun next to the interpreter ({MPIRUN}); install mpich (pip install mpich)"
    return None


def mpirun(n: int, script: str | os.PathLike, *args: str, timeout: float = 60,
           env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs ``python script args`` on ``n`` ranks; fails the test (with both output streams)
    on a non-zero exit, and on a hang after ``timeout`` seconds."""
    full_env = dict(os.environ)
    full_env.setdefault("OPENBLAS_NUM_THREADS", "1")
    full_env.setdefault("OMP_NUM_THREADS", "1")
    full_env.update(env or {})
    cmd = [str(MPIRUN), "-n", str(n), sys.executable, str(script), *args]
    try:
        p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                           env=full_env, cwd=HERE.parent.parent)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{' '.join(cmd)} hung for {timeout} s\nstdout:\n{e.stdout}\n"
                             f"stderr:\n{e.stderr}") from None
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited with {p.returncode}\nstdout:\n"
                             f"{p.stdout}\nstderr:\n{p.stderr}")
    return p


def passed(p: subprocess.CompletedProcess) -> set:
    return {line.split(None, 1)[1] for line in p.stdout.splitlines()
            if line.startswith("PASS ")}


def run_checks(checks: list) -> None:
    """Runs each ``check()`` on every rank (the caller initialised the process group); rank 0
    prints ``PASS name`` after each check passed on every rank (a barrier follows each)."""
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    for check in checks:
        try:
            check()
            ok = world.allreduce(1, op=MPI.MIN)
        except BaseException:
            sys.stderr.write(f"rank {world.Get_rank()}: {check.__name__} failed\n"
                             f"{traceback.format_exc()}")
            sys.stderr.flush()
            world.Abort(1)
            os._exit(1)  # MPI_Abort may return before the launcher has killed the job
        if ok and world.Get_rank() == 0:
            print(f"PASS {check.__name__}", flush=True)


def raises(exc, pattern: str, fn) -> None:
    """Asserts that ``fn()`` raises ``exc`` with a message matching ``pattern`` (a worker's
    ``pytest.raises``: the workers run under mpirun, not pytest)."""
    try:
        fn()
    except exc as e:
        assert re.search(pattern, str(e)), f"wrong message: {e}"
        return
    raise AssertionError(f"expected {exc.__name__} matching {pattern!r}")
