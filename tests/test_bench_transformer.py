"""perf/bench_transformer.py's whole-step CUDA graph, on a tiny model on the "cuda" device
(emulated without a GPU): the benchmark times it only on a lent GPU, where a broken case would
cost device time to find (its torch rows run the same ``build``, torch being a peer that the
tests never import)."""

from __future__ import annotations

import gc
import pathlib

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import load_module

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "perf" / "bench_transformer.py"


@pytest.fixture
def bench(monkeypatch):
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, real or emulated")
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # (it imports perf/_common.py)
    mod = load_module(SCRIPT, "perf_bench_transformer")
    for name, value in {"LAYERS": 1, "DIM": 16, "HEADS": 2, "CONTEXT": 6, "BATCH": 2}.items():
        monkeypatch.setattr(mod, name, value)
    return mod


def test_whole_step_graph_replays_the_eager_steps(bench):
    _, _, eager = bench.build(tg, "cuda")
    losses = [float(eager()) for _ in range(5)]
    replay = bench.build(tg, "cuda", whole=True)[2]  # three warm-up steps, then captured
    gc.collect()  # the model is held by the replay alone (session 20: it was freed under it)
    got = [float(replay()) for _ in range(2)]
    # (the eager AdamW is not capturable: its bias corrections in double on the host, the
    # graph's in float32 on the device, as PyTorch's; a last-bit difference by step 5)
    np.testing.assert_allclose(got, losses[3:], rtol=1e-6)
    assert losses[3] != losses[4]
