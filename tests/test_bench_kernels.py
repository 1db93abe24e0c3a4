"""perf/bench_kernels.py's cases, run once each on tiny inputs on the "cuda" device (emulated
without a GPU): the benchmark only ever times them on a lent GPU, where a broken case would cost
device time to find. (Its torch peers were checked against these by hand, torch being a peer
that the tests never import.)"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import tritongrad as tg

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "perf" / "bench_kernels.py"


@pytest.fixture(scope="module")
def bench():
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, real or emulated")
    spec = importlib.util.spec_from_file_location("bench_kernels", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_case_runs_and_add_adds(bench):
    from tritongrad.kernels import triton as tk
    from tritongrad.runtime import dtype as D
    from tritongrad.runtime import memory

    host = bench._inputs(8, 16)
    assert np.unique(host["a"]).size == host["a"].size  # random, not a constant fill
    cases = bench._cases(tk, D, host, bench._device())
    names = [c[0] for c in cases]
    assert len(set(names)) == len(names) and names[0].startswith("copy")
    fns = {c[0]: c[1] for c in cases}
    np.testing.assert_allclose(memory.to_host(fns["add (new output)"]()), host["a"] + host["b"],
                               rtol=1e-6)
    np.testing.assert_allclose(memory.to_host(fns["sum dim 0"]()), host["a"].sum(0), rtol=1e-5,
                               atol=1e-5)
    for name, fn, _, nbytes in cases:  # (the last, Adam's step, updates its inputs in place)
        assert nbytes > 0, name
        fn()
