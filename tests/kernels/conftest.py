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


@pytest.fixture
def small_blocks(monkeypatch):
    """Shrinks every block heuristic so small inputs run multi-program grids, split
    reductions and several K iterations: the paths large GPU inputs take."""
    ew = importlib.import_module("tritongrad.kernels.triton.elementwise")
    red = importlib.import_module("tritongrad.kernels.triton.reduction")
    mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed

    for name, value in [("FLAT_BLOCK", 16), ("FLAT_BLOCK_LARGE", 32), ("FLAT_LARGE_AT", 64),
                        ("TILE", 16), ("MAX_BLOCK_C", 8), ("TRANSPOSE_TILE", 4)]:
        monkeypatch.setattr(ew, name, value)
    for name, value in [("TILE", 16), ("MAX_BLOCK_N", 8), ("MAX_BLOCK_M", 8),
                        ("TARGET_PROGRAMS", 8), ("MIN_ITERS", 1)]:
        monkeypatch.setattr(red, name, value)
    for mod in ("rowwise", "nn"):
        m = importlib.import_module(f"tritongrad.kernels.triton.{mod}")
        for name, value in [("TILE", 16), ("MAX_BLOCK_N", 8), ("SINGLE_MAX", 8)]:
            monkeypatch.setattr(m, name, value)
    for mod in ("indexing", "optim"):
        monkeypatch.setattr(importlib.import_module(f"tritongrad.kernels.triton.{mod}"),
                            "BLOCK", 16)
    small = {fam: {size: (16, 16, 16, w, s) for size, (_, _, _, w, s) in cfg.items()}
             for fam, cfg in mm.CONFIGS.items()}
    small["f64_fallback"] = {size: (16, 16, 4, 4, 1) for size in ("large", "medium", "small")}
    monkeypatch.setattr(mm, "CONFIGS", small)
    _launch.clear_plans()
    yield
    _launch.clear_plans()

