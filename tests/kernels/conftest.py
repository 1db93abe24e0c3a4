"""Fixtures for the kernel tests: the Triton backend against the NumPy backend.

The root conftest sets ``TRITON_INTERPRET=1`` and ``TRITONGRAD_EMULATE_CUDA=1`` when no GPU is
present, so every Triton kernel here runs its real source through Triton's interpreter in CI,
and compiled on a GPU where one is lent. ``kit`` (session-scoped, so hypothesis tests can use
it) is the ``kernel_kit.Kit`` helper; ``small_blocks`` shrinks the block heuristics so that
small inputs take the multi-program paths that large GPU inputs take.
"""

from __future__ import annotations

import importlib
import os
import sys
import zlib

import numpy as np
import pytest

# the shared helpers sit next to this file (also under pytest's importlib mode)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_kit import Kit
from tritongrad.kernels.triton import _launch


@pytest.fixture(scope="session")
def kit():
    return Kit()


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


# Every block size and tiling threshold of the Triton backend, shrunk: module -> {name: value}.
# The launchers read these module attributes when they plan, so patching them is enough
# (test_small_blocks_shrinks_every_block_size checks that none is missing here).
SMALL_BLOCKS = {
    "_launch": {"TILE": 16, "ROW_TILE": 16, "MAX_BLOCK_N": 8, "SINGLE_MAX": 8},
    "elementwise": {"FLAT_BLOCK": 16, "FLAT_BLOCK_LARGE": 32, "FLAT_LARGE_AT": 64,
                    "TRANSPOSE_TILE": 4},
    "reduction": {"MAX_BLOCK_M": 8, "TARGET_PROGRAMS": 8, "MIN_ITERS": 1, "SPLIT_MIN": 0},
    "indexing": {"BLOCK": 16},
    "concat": {"BLOCK": 16},
    "optim": {"BLOCK": 16},
    "random": {"BLOCK": 16},
    "foreach": {"CHUNK": 16, "WIDTH": 4},
    "normalization": {"BLOCK": 4, "TARGET_PROGRAMS": 16, "MAX_CHUNKS": 8},
}


@pytest.fixture
def small_blocks(monkeypatch):
    """Shrinks every block heuristic so small inputs run multi-program grids, split
    reductions and several K iterations: the paths large GPU inputs take."""
    for mod, values in SMALL_BLOCKS.items():
        m = importlib.import_module(f"tritongrad.kernels.triton.{mod}")
        for name, value in values.items():
            monkeypatch.setattr(m, name, value)
    mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed
    small = {fam: {size: (16, 16, 16, w, s) for size, (_, _, _, w, s) in cfg.items()}
             for fam, cfg in mm.CONFIGS.items()}
    small["f64_fallback"] = {size: (16, 16, 4, 4, 1) for size in ("large", "medium", "small")}
    monkeypatch.setattr(mm, "CONFIGS", small)
    monkeypatch.setattr(mm, "TARGET_PROGRAMS", 32)  # few-tile products split K (Note [split-K])
    monkeypatch.setattr(mm, "MIN_SPLIT_STEPS", 1)
    _launch.clear_plans()
    yield
    _launch.clear_plans()


@pytest.fixture(params=["loops", "numpy"])
def cpu_forms(request):
    """Runs a test twice: with the compiled CPU loops (kernels/numpy/jit.py; skipped where
    Numba cannot be imported) and with the NumPy forms they replace."""
    jit = importlib.import_module("tritongrad.kernels.numpy.jit")
    if request.param == "numpy":
        with jit.disabled():
            yield request.param
        return
    if not jit.enabled():
        pytest.skip("the compiled CPU loops are off (no Numba, or TRITONGRAD_CPU_JIT=0)")
    yield request.param


@pytest.fixture
def softmax_block_calls(monkeypatch):
    """The ``rowwise`` flag of each call of the CPU attention's blocked path
    (kernels/numpy/attention.py's ``_softmax_block``), in order."""
    na = importlib.import_module("tritongrad.kernels.numpy.attention")
    calls, block = [], na._softmax_block

    def spy(*args, rowwise):
        calls.append(rowwise)
        return block(*args, rowwise=rowwise)

    monkeypatch.setattr(na, "_softmax_block", spy)
    return calls
