"""Threads: forward and backward from several threads at once are exact on every device.

On the emulated device each launch runs in Triton's interpreter, which swaps parts of
``triton.language`` process-wide while it runs: launches are serialised (Note [interpreter
fidelity] in kernels/triton/compat.py). Gradient accumulation into a leaf that several
threads' graphs share takes a lock, as PyTorch's AccumulateGrad does. On a real GPU the same
tests exercise the launch path, the caching allocator and the per-thread stream state, with
every cached launch checked against Triton's dispatch (Note [concurrent first launches] in
kernels/triton/launcher.py: threads launching a key first at once made the check fail there).
"""

from __future__ import annotations


import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import run_threads
from tritongrad.kernels.triton.launcher import CachedLaunchJIT

THREADS = 8


@pytest.fixture(autouse=True)
def _checked_launches(monkeypatch):
    """Cached launches checked as the GPU campaign checks them (compiled kernels only: the
    interpreter's are Triton's own)."""
    monkeypatch.setattr(CachedLaunchJIT, "check", True)


def test_separate_graphs_from_many_threads_are_exact(device):
    results = {}

    def work(i):
        for step in range(4):
            x = tg.full((33,), float(i + 1), device=device, requires_grad=True)
            w = tg.arange(33, dtype=tg.float32, device=device)
            y = ((x * w).tanh() * x).sum()
            y.backward()
            results[i, step] = (y.item(), x.grad.cpu().numpy())

    run_threads(work, THREADS)
    w = np.arange(33, dtype=np.float64)
    for (i, _), (value, grad) in results.items():
        x = float(i + 1)
        t = np.tanh(x * w)
        np.testing.assert_allclose(value, (t * x).sum(), rtol=1e-5)
        np.testing.assert_allclose(grad, t + x * w * (1 - t * t), rtol=1e-5, atol=1e-6)
    assert len(results) == THREADS * 4


def test_accumulation_into_a_shared_leaf_loses_nothing(device):
    leaf = tg.zeros(16, device=device, requires_grad=True)
    rounds = 6

    def work(i):
        for _ in range(rounds):
            (leaf * float(i + 1)).sum().backward()

    run_threads(work, THREADS)
    expected = rounds * sum(range(1, THREADS + 1))
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), np.full(16, expected, np.float32))
