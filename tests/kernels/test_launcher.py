"""Note [cached launches] (kernels/triton/launcher.py) on a machine without a GPU.

Cached launches exist only for compiled kernels, which the interpreter suite never launches,
so these run scripts in a fresh process with Triton's compiler and stand-in launchers:
check_launcher.py sweeps a probe kernel's arguments across every boundary Triton specializes
on, check_launch_threads.py launches a kernel's first keys from eight threads at once, and
compile_sm90.py (test_compile.py) relaunches every kernel variant through its cache, checked
against Triton's dispatch. On a GPU the same launches run for real in the whole suite.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import triton.language as tl
from tests.helpers import run_threads
from tritongrad.kernels.triton import compat
from tritongrad.kernels.triton.launcher import jit

SCRIPT = pathlib.Path(__file__).with_name("check_launcher.py")
THREADS_SCRIPT = pathlib.Path(__file__).with_name("check_launch_threads.py")


def _run(script: pathlib.Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=600, check=False)
    if r.returncode and "No module named" in r.stderr and "triton.backends" in r.stderr:
        pytest.skip("this Triton has no CUDA backend to compile with")
    return r


@pytest.mark.slow
def test_launch_keys_are_at_least_as_fine_as_tritons_specialization():
    r = _run(SCRIPT)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "FAIL" not in r.stdout
    assert " through the cache" in r.stdout


@pytest.mark.slow
def test_concurrent_first_launches_compile_once_and_pass_the_check():
    """Note [concurrent first launches]: threads launching a key first at once compile it
    once, and every cached launch passes the check (the H200's thread tests raised
    LaunchMismatch); a recompile of the same kernel passes it, another kernel does not."""
    r = _run(THREADS_SCRIPT)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "FAIL" not in r.stdout
    assert r.stdout.count("ok ") == 3, r.stdout


@jit
def _threads_probe(out, x, n, K: tl.constexpr):
    # a kernel of the test below only: its first launches in the process are that test's
    i = tl.arange(0, K)
    mask = i < n
    tl.store(out + i, tl.load(x + i, mask=mask) * 2 + 1, mask=mask)


@pytest.mark.gpu
def test_first_launches_from_threads_on_the_gpu(kit, monkeypatch):
    """Note [concurrent first launches] on the device: eight threads launch a fresh kernel's
    first keys at the same moment (the H200's thread tests raised LaunchMismatch there), every
    cached launch checked against Triton's dispatch; every result is exact and each key is
    compiled once."""
    from triton.runtime.jit import JITFunction
    from tritongrad.kernels.triton import _launch
    from tritongrad.kernels.triton.launcher import CachedLaunchJIT

    monkeypatch.setattr(CachedLaunchJIT, "check", True)
    compiles = []
    compile_ = JITFunction._do_compile

    def counted(self, *args, **kwargs):
        compiles.append(self is _threads_probe)
        return compile_(self, *args, **kwargs)

    monkeypatch.setattr(JITFunction, "_do_compile", counted)
    _launch.ensure_driver()
    widths, threads = (16, 32, 64, 128), 8

    def work(i):
        for k in widths:
            x = np.arange(k, dtype=np.float32) + i
            for _ in range(3):
                out = kit.up(np.zeros(k, np.float32))
                _threads_probe[(1,)](out, kit.up(x), k - 3, K=k)
                got = kit.down(out)
                np.testing.assert_array_equal(got[:k - 3], x[:k - 3] * 2 + 1)
                np.testing.assert_array_equal(got[k - 3:], 0)

    run_threads(work, threads)
    if isinstance(_threads_probe, CachedLaunchJIT):  # (compiled, not interpreted)
        assert sum(compiles) == len(widths)


def test_interpreted_kernels_are_tritons_own():
    """Under the interpreter ``jit`` is ``triton.jit``: nothing is cached there."""
    from tritongrad.kernels.triton import elementwise
    from tritongrad.kernels.triton.launcher import CachedLaunchJIT

    if compat.INTERPRET:
        assert not isinstance(elementwise._ew_flat_kernel, CachedLaunchJIT)
    else:
        assert isinstance(elementwise._ew_flat_kernel, CachedLaunchJIT)


def test_interned_constexprs_keep_dtypes_apart():
    """Note [interned constants] (elementwise.py): equal constexprs intern to one tuple, bound
    into one Launch per layout; constexprs that differ only in a Triton dtype get Launches of
    their own (a launch's key no longer holds them); an equal tuple that is not interned finds
    the interned one's Launch."""
    import triton.language as tl
    from tritongrad.kernels.triton import elementwise as ew

    mul = ew.OPS["mul"]
    f32 = ew.constexprs(mul, ew.PTR, ew.PTR, ew.NONE, tl.float32, tl.float32)
    assert ew.constexprs(mul, ew.PTR, ew.PTR, ew.NONE, tl.float32, tl.float32) is f32
    f64 = ew.constexprs(mul, ew.PTR, ew.PTR, ew.NONE, tl.float64, tl.float64)
    to64 = ew.constexprs(mul, ew.PTR, ew.PTR, ew.NONE, tl.float32, tl.float64)
    plan = ew._plan(((4, 4), (4, 1), (4, 4), (4, 1), (4, 4), (4, 1), None, None))
    launches = [ew._bind(plan, c) for c in (f32, f64, to64)]
    assert len({id(x) for x in launches}) == 3
    assert [x.tail[4:6] for x in launches] == [(tl.float32, tl.float32),
                                               (tl.float64, tl.float64),
                                               (tl.float32, tl.float64)]
    copy = f32[:3] + f32[3:]
    assert copy == f32 and copy is not f32
    assert ew._bind(plan, copy) is launches[0]
    assert len(plan) == 3
