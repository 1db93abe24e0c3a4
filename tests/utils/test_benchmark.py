"""``tg.utils.benchmark`` (utils/benchmark.py): Timer, Measurement's statistics against NumPy,
and Compare's table."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.utils import benchmark
from tritongrad.utils.benchmark import Compare, Measurement, TaskSpec, Timer


def test_measurement_statistics_match_numpy():
    raw = [0.012, 0.010, 0.011, 0.019, 0.0105, 0.0101]
    m = Measurement(10, raw, TaskSpec("x + 1", "pass", label="add", sub_label="small"))
    times = np.array(raw) / 10
    assert m.times == pytest.approx(times.tolist())
    assert m.mean == pytest.approx(times.mean())
    assert m.median == pytest.approx(np.median(times))
    assert m.iqr == pytest.approx(np.percentile(times, 75) - np.percentile(times, 25))
    assert m.label == "add" and m.as_row_name() == "small"
    assert m.has_warnings and not m.meets_confidence(0.1)  # iqr is 14% of the median
    lines = repr(m).splitlines()
    ms = 1e3  # (about a millisecond per run: printed in ms)
    assert lines[1:4] == ["add: small", f"  Median: {np.median(times) * ms:.2f} ms",
                          f"  IQR:    {m.iqr * ms:.2f} ms ({np.percentile(times, 25) * ms:.2f}"
                          f" to {np.percentile(times, 75) * ms:.2f})"]
    assert lines[4] == "  6 measurements, 10 runs per measurement, 1 thread"
    steady = Measurement(1, [1.0] * 5, TaskSpec("pass", "pass"))
    assert steady.significant_figures == 4 and steady.meets_confidence()
    merged = Measurement.merge([m, Measurement(10, raw, m.task_spec)])
    assert len(merged) == 1 and len(merged[0].times) == 12
    assert benchmark.select_unit(2.5e-6) == ("us", 1e-6)
    assert benchmark.trim_sigfig(1234.5678, 3) == 1230.0


def test_timer_measures_a_statement():
    t = Timer("time.sleep(0.002)", setup="import time", label="sleep")
    m = t.blocked_autorange(min_run_time=0.05)
    assert 0.002 <= m.median < 0.02 and len(m.times) >= 2
    assert 0.002 <= t.timeit(5).median < 0.02
    hits = []
    Timer("y = x * 2", globals={"x": tg.ones(3)}).adaptive_autorange(
        max_run_time=0.05, callback=lambda n, s: hits.append(n))
    assert hits and all(n == hits[0] for n in hits)
    # torch is tritongrad in the statement's namespace; threads are restored after
    before = tg.get_num_threads()
    out = Timer("torch.randn(4).sum()", num_threads=1).timeit(3)
    assert out.number_per_run == 3 and tg.get_num_threads() == before
    with pytest.raises(ValueError, match="only Python statements"):
        Timer("x", language="c++")
    with pytest.raises(NotImplementedError, match="Valgrind"):
        Timer().collect_callgrind()


def test_compare_table():
    spec = dict(stmt="s", setup="pass", label="ops")
    a = Measurement(1, [3e-6, 3.1e-6, 2.9e-6], TaskSpec(sub_label="16", description="mul", **spec))
    b = Measurement(1, [8e-6, 8e-6, 8.2e-6], TaskSpec(sub_label="64", description="mul", **spec))
    c = Measurement(1, [5e-6, 5e-6, 5e-6], TaskSpec(sub_label="16", description="add", **spec))
    text = str(Compare([a, b, c]))
    lines = text.splitlines()
    assert lines[0].startswith("[") and " ops " in lines[0]
    assert "mul" in lines[1] and "add" in lines[1] and lines[2].startswith("1 threads:")
    row16 = next(line for line in lines if line.strip().startswith("16"))
    assert row16.split("|")[1].strip() == "3.0" and row16.split("|")[2].strip() == "5.0"
    row64 = next(line for line in lines if line.strip().startswith("64"))
    assert row64.split("|")[1].strip() == "8.0" and row64.split("|")[2].strip() == ""
    assert lines[-1] == "Times are in microseconds (us)."
