"""perf/bench_kernels.py's cases, run once each on tiny inputs on the "cuda" device (emulated
without a GPU): the benchmark only ever times them on a lent GPU, where a broken case would cost
device time to find. (Its torch peers were checked against these by hand, torch being a peer
that the tests never import.)"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import load_module

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "perf" / "bench_kernels.py"


@pytest.fixture(scope="module")
def bench():
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, real or emulated")
    return load_module(SCRIPT, "perf_bench_kernels")


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


def test_split_k_products_agree_on_and_off(bench):
    # the few-tile products the benchmark times with split-K on and off (small shapes here):
    # both settings give G^T @ X, and the setting is restored after
    import importlib

    from tritongrad.kernels import triton as tk
    from tritongrad.runtime import dtype as D
    from tritongrad.runtime import memory

    mm = importlib.import_module("tritongrad.kernels.triton.matmul")
    default = mm.TARGET_PROGRAMS
    shapes = (("few tiles", 16, 24, 256), ("one row", 3, 40, 128))
    for _, M, N, K, prod, ref in bench._split_k_products(tk, D, shapes, D.float32):
        for target in (0, 132):
            got = bench._with_split_k(target, lambda prod=prod: memory.to_host(prod()))
            assert got.shape == (M, N)
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
        assert mm.TARGET_PROGRAMS == default


def test_matmul_table_fixed_and_tuned(bench, monkeypatch, tmp_path, capsys):
    # the matmul table's fixed and autotuned rows on tiny sizes (the tuning itself made to run
    # on the emulated device, with the interpreter's times): the plan of each row is found,
    # its config printed, and autotuning's mode restored afterwards
    from tritongrad.kernels import triton as tk
    from tritongrad.kernels.triton import autotune
    from tritongrad.runtime import dtype as D

    monkeypatch.setenv("TRITONGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotune, "_on_hardware", lambda: True)
    monkeypatch.setattr(bench, "_import_torch", lambda: None)
    monkeypatch.setattr(bench, "_bench", lambda fn: (fn(), 1.0)[1])
    monkeypatch.setattr(bench, "_device", lambda: tg.device("cuda"))
    autotune.clear()
    mode = autotune.MODE
    bench._matmul(tk, D, (32,))
    rows = [line.split() for line in capsys.readouterr().out.splitlines()
            if line.split()[:2] in (["float16", "32"], ["float64", "32"])]
    # (the config: block sizes, warps, stages and the kernel, 0 the pointer one)
    assert len(rows) == 2 and all(r[-6].startswith("(") and r[-1] == "0)" for r in rows)
    assert autotune.MODE == mode and autotune.results()  # the tuned rows did tune
    autotune.clear()
