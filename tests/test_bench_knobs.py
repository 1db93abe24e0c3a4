"""perf/bench_knobs.py: each switch it flips is on inside its row and restored after, and its
timing loop runs a (tiny) GPT step under every row on the "cuda" device (emulated without a
GPU). The benchmark itself only times on a lent GPU, where a broken row would cost device time
to find."""

from __future__ import annotations

import argparse
import importlib
import pathlib

import pytest

import tritongrad as tg
from tests.helpers import load_module

PERF = pathlib.Path(__file__).resolve().parents[1] / "perf"


@pytest.fixture
def bench(monkeypatch):
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, real or emulated")
    monkeypatch.syspath_prepend(str(PERF))  # (it imports perf/_common.py and its peers)
    mod = load_module(PERF / "bench_knobs.py", "perf_bench_knobs")
    transformer = importlib.import_module("bench_transformer")
    for name, value in {"LAYERS": 1, "DIM": 16, "HEADS": 2, "CONTEXT": 6, "BATCH": 2}.items():
        monkeypatch.setattr(transformer, name, value)
    return mod


def _state():
    from tritongrad.autograd import checks

    red = importlib.import_module("tritongrad.kernels.triton.reduction")
    mm = importlib.import_module("tritongrad.kernels.triton.matmul")
    launcher = importlib.import_module("tritongrad.kernels.triton.launcher")
    return {"split-reductions": red.SPLIT_MIN, "split-K": mm.TARGET_PROGRAMS,
            "sync-checks": checks.get_index_check_mode(),
            "tf32": tg.backends.cuda.matmul.allow_tf32, "call-launcher": launcher._DIRECT,
            "unpacked": launcher._PACK}


def test_each_row_flips_its_switch_and_restores_it(bench):
    from tritongrad.autograd import checks

    saved = checks.get_index_check_mode()
    checks.set_index_check_mode("deferred")  # the library's default (the suite runs sync)
    try:
        _check_rows(bench)
    finally:
        checks.set_index_check_mode(saved)


def _check_rows(bench):
    before = _state()
    rows = bench.variants()
    assert rows[0][1] == "defaults"
    for _, tag, switch in rows:
        with switch():
            inside = _state()
        changed = {k for k in before if inside[k] != before[k]}
        assert changed == (set() if tag == "defaults" else {tag}), tag
        assert _state() == before, tag


def test_the_timing_loop_runs_every_row(bench, capsys):
    import bench_host_step

    step = bench_host_step.gpt_step(tg)
    args = argparse.Namespace(repeat=1, inner=1)
    key = bench._time_step(tg, "gpt", step, None, args)
    out = capsys.readouterr().out
    for name, tag, _ in bench.variants():
        assert name in out
        assert tag == "defaults" or f"{tag} " in key
    assert key.startswith("gpt ") and " ms, x: " in key
