"""Autotuned matmul plans (Note [autotuning] in kernels/triton/autotune.py, Note [matmul
candidates] in matmul.py).

On the emulated device the interpreter runs every launch, so the tests make tuning happen
there (``_on_hardware``) and, where they need a known winner, give it made-up times; the
launches of every candidate still run and the products are checked against float64. On a GPU
the same tests time with CUDA events for real (``kit.real_gpu``).
"""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest
from tritongrad.kernels import triton as tk
from tritongrad.kernels.triton import _launch, autotune
from tritongrad.runtime import driver as _drv
from tritongrad.runtime import dtype as D

mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed


@pytest.fixture
def tuning(monkeypatch, tmp_path, kit):
    """Tuning on for every size, results in a fresh file; a record of the configs timed."""
    monkeypatch.setenv("TRITONGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotune, "MODE", "all")
    if not kit.real_gpu:
        monkeypatch.setattr(autotune, "_on_hardware", lambda: True)
    autotune.clear()
    _launch.clear_plans()
    timed = []
    yield timed
    autotune.clear()
    _launch.clear_plans()


def _fake_times(monkeypatch, timed, winner, fail=()):
    """Every candidate launches once (interpreted: its product is computed); ``winner`` is
    given the least time, the configs in ``fail`` raise as a launch this GPU refuses."""
    def fake(config, run):
        timed.append(config)
        if config in fail:
            raise RuntimeError(f"out of resources: {config}")
        run()
        return 1.0 if config == winner else 2.0 + len(timed) * 1e-3
    monkeypatch.setattr(autotune, "_time", fake)


def _ptr(config: tuple) -> tuple:
    """A pointer-kernel config as tuning names it (Note [TMA matmul]: the kernel last)."""
    return (*config, mm.POINTER)


def _planned(M, N, K, dtype):
    """The config of the kept plan of this product: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages,
    kernel)."""
    launch, _ = next(p for key, p in mm._PLANS.items() if key[1:4] == (M, N, K)
                     and key[6] is dtype)
    return mm.config_of(launch)


def _product(kit, rng, dtype, m=100, k=50, n=70):
    a, ra = kit.pair((m, k), dtype, rng, layout="T")
    b, rb = kit.pair((k, n), dtype, rng)
    ref = ra.astype(np.float64) @ rb.astype(np.float64)
    return a, b, ref


def _close(kit, got, ref, dtype, k):
    tol = {D.float64: 1e-12, D.float32: 1e-5, D.float16: 2e-2, D.bfloat16: 8e-2}[dtype]
    np.testing.assert_allclose(kit.down(got).astype(np.float64), ref, rtol=tol,
                               atol=tol * np.sqrt(k) * 3)


@pytest.mark.parametrize("family,dtype", [("half", D.float16), ("half", D.bfloat16),
                                          ("f32", D.float32), ("f64", D.float64)], ids=str)
def test_every_candidate_computes_the_product(kit, rng, family, dtype):
    """Each candidate config, launched as a plan would, against float64 (ragged edges in M, N
    and K for every tile size)."""
    a, b, ref = _product(kit, rng, dtype, m=70, k=90, n=45)
    bias, rbias = kit.pair((45,), dtype, rng)
    if dtype is D.float64 and mm._f64_dot == [False]:
        pytest.skip("this Triton has no float64 tl.dot: the fallback path is not tuned")
    for config in mm.CANDIDATES[family] + [mm.CONFIGS[family]["large"]]:
        for row, s_bias, want in ((None, None, ref), (bias, 1, ref + rbias)):  # (addmm's)
            key = (1, 70, 45, 90, (0, *a.strides), (0, *b.strides), dtype, True,
                   mm._precision(dtype), s_bias)
            c = tk.empty((70, 45), dtype)
            mm._launcher(key, config, 1, 90)(a, b, c, row, key[-2])
            _close(kit, c, want, dtype, 90)


def test_tuning_picks_the_fastest_keeps_it_and_writes_it(kit, rng, tuning, monkeypatch,
                                                          tmp_path):
    winner = _ptr((128, 64, 64, 4, 4))
    _fake_times(monkeypatch, tuning, winner)
    made = []
    real = mm._launcher
    monkeypatch.setattr(mm, "_launcher", lambda *a: made.append(a[1]) or real(*a))
    a, b, ref = _product(kit, rng, D.float16)
    _close(kit, tk.matmul(a, b), ref, D.float16, 50)
    # one launcher per timed config (its launches then cached ones), and the plan's
    assert sorted(made) == sorted(tuning + [winner])
    default = _ptr(mm.CONFIGS["half"]["medium"])
    assert tuning[0] == default  # timed first: its errors are the launcher's
    assert len(tuning) == len(set(tuning)) > 1
    # a class of 100 x 70 (128 x 128 rounded) times no tile wider than 128
    assert all(c[0] <= 128 and c[1] <= 128 for c in tuning)
    assert _planned(100, 70, 50, D.float16) == winner
    n = len(tuning)
    _close(kit, tk.matmul(a, b), ref, D.float16, 50)  # the plan: no timing
    a2, b2, ref2 = _product(kit, rng, D.float16, m=90, k=60, n=120)  # the same class
    _close(kit, tk.matmul(a2, b2), ref2, D.float16, 60)
    assert len(tuning) == n and _planned(90, 120, 60, D.float16) == winner
    stored = json.loads((tmp_path / "autotune.json").read_text())
    (section,) = stored
    assert "triton" in section
    (cls, config), = stored[section].items()
    assert cls.startswith("float16 tf32 batched=False 128x128x64 a=col b=row")
    assert tuple(config) == winner


def test_the_file_answers_the_next_process(kit, rng, tuning, monkeypatch):
    winner = _ptr((64, 128, 64, 4, 4))
    _fake_times(monkeypatch, tuning, winner)
    a, b, ref = _product(kit, rng, D.bfloat16)
    tk.matmul(a, b)
    n = len(tuning)
    autotune.clear()  # a new process: nothing in memory
    _launch.clear_plans()
    _close(kit, tk.matmul(a, b), ref, D.bfloat16, 50)
    assert len(tuning) == n  # read back, not timed again
    assert _planned(100, 70, 50, D.bfloat16) == winner


def test_a_failing_candidate_is_skipped_and_the_defaults_error_raised(kit, rng, tuning,
                                                                      monkeypatch, tmp_path):
    default = _ptr(mm.CONFIGS["f32"]["medium"])
    broken = _ptr((128, 64, 32, 4, 3))
    _fake_times(monkeypatch, tuning, broken, fail=(broken,))
    a, b, ref = _product(kit, rng, D.float32)
    _close(kit, tk.matmul(a, b), ref, D.float32, 50)
    assert broken in tuning and _planned(100, 70, 50, D.float32) != broken
    monkeypatch.setenv("TRITONGRAD_CACHE_DIR", str(tmp_path / "another"))  # nothing known
    autotune.clear()
    _launch.clear_plans()
    tuning.clear()
    _fake_times(monkeypatch, tuning, broken, fail=(default,))
    with pytest.raises(RuntimeError, match="out of resources"):
        tk.matmul(a, b)
    assert tuning == [default]


def test_float32_precision_is_part_of_the_class(kit, rng, tuning, monkeypatch):
    _fake_times(monkeypatch, tuning, None)
    a, b, _ = _product(kit, rng, D.float32)
    tk.matmul(a, b)
    ieee = set(tuning)
    monkeypatch.setattr(D, "get_float32_matmul_precision", lambda: "high")
    tuning.clear()
    tk.matmul(a, b)  # another plan and class: TF32 tiles
    assert set(tuning) - ieee and all(c[2] == 32 for c in tuning[1:])
    classes = sorted(cls for _, cls in autotune.results())
    assert [c.split()[1] for c in classes] == ["ieee", "tf32"]


def test_no_tuning_while_a_graph_is_captured(kit, rng, tuning, monkeypatch):
    _fake_times(monkeypatch, tuning, _ptr((128, 64, 64, 4, 4)))
    a, b, ref = _product(kit, rng, D.float16)
    drv = _drv.get_driver()
    monkeypatch.setattr(drv, "capturing", 1)
    _close(kit, tk.matmul(a, b), ref, D.float16, 50)
    assert tuning == [] and not mm._PLANS  # the default config, and no plan kept
    monkeypatch.setattr(drv, "capturing", 0)
    tk.matmul(a, b)
    assert tuning and _planned(100, 70, 50, D.float16) == _ptr((128, 64, 64, 4, 4))


def test_off_and_small_products_keep_the_default(kit, rng, tuning, monkeypatch):
    _fake_times(monkeypatch, tuning, _ptr((64, 64, 64, 4, 4)))
    a, b, _ = _product(kit, rng, D.float16)
    monkeypatch.setattr(autotune, "MODE", "0")
    tk.matmul(a, b)
    monkeypatch.setattr(autotune, "MODE", "1")  # the default: products of MIN_WORK and more
    _launch.clear_plans()
    tk.matmul(a, b)
    assert tuning == [] and _planned(100, 70, 50, D.float16) == _ptr(mm.CONFIGS["half"]["medium"])
    monkeypatch.setattr(autotune, "MIN_WORK", 100 * 70 * 50)
    _launch.clear_plans()
    tk.matmul(a, b)
    assert tuning


def test_an_unwritable_cache_warns_once_and_tunes(kit, rng, tuning, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TRITONGRAD_CACHE_DIR", str(blocker / "sub"))
    monkeypatch.setattr(autotune, "_warned", [])
    _fake_times(monkeypatch, tuning, _ptr((128, 64, 64, 4, 4)))
    a, b, ref = _product(kit, rng, D.float16)
    with pytest.warns(RuntimeWarning, match="could not write"):
        _close(kit, tk.matmul(a, b), ref, D.float16, 50)
    assert _planned(100, 70, 50, D.float16) == _ptr((128, 64, 64, 4, 4))


def test_real_timing(kit, rng, tuning):
    """The event timer itself, on the current stream: positive, finite milliseconds (on the
    emulated device its events time the interpreted launches on the host)."""
    a, b, ref = _product(kit, rng, D.float32, m=20, k=10, n=12)
    c = tk.empty((20, 12), D.float32)
    key = (1, 20, 12, 10, (0, *a.strides), (0, *b.strides), D.float32, True, "ieee", None)
    launch = mm._launcher(key, mm.CONFIGS["f32"]["medium"], 1, 10)
    ms = autotune.time_ms(lambda: launch(a, b, c, None, "ieee"))
    assert 0 < ms < 1e4
    _close(kit, c, ref, D.float32, 10)
    tk.matmul(a, b)  # the real timer through a plan: the class is answered and kept
    assert len(autotune.results()) == 1


# -- attention (Note [attention candidates]) ---------------------------------------------------
ta = importlib.import_module("tritongrad.kernels.triton.attention")  # the name is shadowed
ATT_TOL = {D.float16: (2e-2, 4e-3), D.bfloat16: (8e-2, 3e-2), D.float32: (1e-4, 1e-5),
           D.float64: (1e-10, 1e-12)}


def _attention_case(kit, rng, dtype, causal, shape=(1, 2, 70, 45, 24)):
    """(run, check): run() computes attention and its backward; check(results) compares them
    with the float64 reference."""
    b, h, length, source, d = shape
    q, k, v, g = (kit.values(s, dtype, rng) for s in ((b, h, length, d), (b, h, source, d),
                                                     (b, h, source, d), (b, h, length, d)))
    scale = d ** -0.5
    up = [kit.up(a, dtype) for a in (q, k, v, g)]
    want = ta.attention_reference(q, k, v, scale, causal, g)

    def run():
        out, lse = tk.attention(*up[:3], scale, causal)
        return (out, lse, *tk.attention_backward(up[3], *up[:3], out, lse, scale, causal))

    def check(results):
        rtol, atol = ATT_TOL[dtype]
        for name, got, w in zip(("out", "lse", "dq", "dk", "dv"), results, want):
            np.testing.assert_allclose(kit.down(got).astype(np.float64), w, rtol=rtol,
                                       atol=atol, err_msg=name)
    return run, check


@pytest.mark.parametrize("family,dtype", [("half", D.float16), ("f32", D.float32),
                                          ("f64", D.float64)], ids=str)
def test_every_attention_candidate_computes_attention(kit, rng, monkeypatch, family, dtype):
    """Each candidate as every kernel's config, causal and not, against float64 (sequences
    that end in partial tiles of every candidate's size)."""
    if dtype is D.float64 and mm._f64_dot == [False]:
        pytest.skip("this Triton has no float64 tl.dot: the fallback path is not tuned")
    monkeypatch.setattr(autotune, "MODE", "0")
    for causal in (False, True):
        run, check = _attention_case(kit, rng, dtype, causal)
        for config in ta.CANDIDATES[family]:
            monkeypatch.setattr(ta, "CONFIGS", {**ta.CONFIGS, family: config})
            _launch.clear_plans()
            check(run())
    _launch.clear_plans()


def test_attention_tunes_each_kernel(kit, rng, tuning, monkeypatch):
    """The forward, dK/dV and dQ kernels are tuned as three classes, each plan keeps its pick,
    and the results stay right; the float32 precision is part of the classes."""
    winners = {"forward": (64, 32, 4, 2), "dkdv": (32, 64, 4, 2), "dq": (64, 64, 8, 2)}
    current = []
    real_pick = autotune.pick

    def pick(kernel, cls, default, candidates, make, *args):
        current[:] = [cls.split()[0]]
        return real_pick(kernel, cls, default, candidates, make, *args)
    monkeypatch.setattr(autotune, "pick", pick)

    def fake(config, run):
        tuning.append((current[0], config))
        run()
        return 1.0 if winners[current[0]] == config else 2.0
    monkeypatch.setattr(autotune, "_time", fake)
    monkeypatch.setattr(ta, "MIN_WORK", 0)
    run, check = _attention_case(kit, rng, D.float32, True)
    check(run())
    assert {kind for kind, _ in tuning} == set(winners)
    assert all(c[0] <= 128 and c[1] <= 64 for _, c in tuning)  # a 128 x 64 class (70 x 45)
    (fwd,) = [p for key, p in ta._PLANS.items() if key[0] == "forward"]
    (_, dkdv, dq) = next(p for key, p in ta._PLANS.items() if key[0] == "backward")
    for launch, kind in ((fwd, "forward"), (dkdv, "dkdv"), (dq, "dq")):
        bm, bn = launch.tail[-4:-2]
        assert (bm, bn, launch.options["num_warps"], launch.options["num_stages"]) \
            == winners[kind], kind
    n = len(tuning)
    check(run())
    assert len(tuning) == n  # the plans answer
    classes = sorted(cls for _, cls in autotune.results())
    assert [c.split()[:3] for c in classes] == [["dkdv", "float32", "ieee"],
                                                ["dq", "float32", "ieee"],
                                                ["forward", "float32", "ieee"]]
    assert all("causal=True d=32 128x64" in c for c in classes)


@pytest.mark.parametrize("content", ['{"x": 1', '[1, 2]', '{"SECTION": {"CLASS": [1, "a"]}}',
                                     '{"SECTION": {"CLASS": 7}}', '{"SECTION": [1]}'])
def test_a_damaged_file_means_tuning_again(kit, rng, tuning, monkeypatch, tmp_path, content):
    winner = _ptr((128, 64, 64, 4, 4))
    _fake_times(monkeypatch, tuning, winner)
    a, b, ref = _product(kit, rng, D.float16)
    tk.matmul(a, b)  # learns the section and class names
    ((section, cls),) = autotune.results()
    path = tmp_path / "autotune.json"
    path.write_text(content.replace("SECTION", section).replace("CLASS", cls))
    autotune.clear()
    _launch.clear_plans()
    tuning.clear()
    _close(kit, tk.matmul(a, b), ref, D.float16, 50)
    assert tuning and _planned(100, 70, 50, D.float16) == winner
