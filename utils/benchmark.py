"""``torch.utils.benchmark``: ``Timer`` measures a statement, ``Measurement`` holds and
summarizes the times, ``Compare`` prints several as one table.

``Timer(stmt, setup, globals=...)`` runs Python statements, with ``torch`` bound to tritongrad
in their namespace (so ``setup="x = torch.randn(64, 64)"`` works unchanged); when CUDA is
available the clock waits for the device before each reading (``tg.cuda.synchronize``), so a
measurement covers the kernels a statement queued, as PyTorch's does. ``num_threads`` sets the
BLAS threads while measuring (``tg.set_num_threads``), restored after. Not there:
``collect_callgrind`` (Valgrind instruction counts), C++ statements (``language="c++"``) and
the fuzzers.
"""

from __future__ import annotations

import math
import timeit
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["Compare", "Measurement", "TaskSpec", "Timer", "select_unit", "timer",
           "trim_sigfig"]

_UNITS = ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s"))


def timer() -> float:
    """The clock: ``timeit.default_timer``, after the device's queued work when CUDA is
    available."""
    import tritongrad as tg
    if tg.cuda.is_available():
        tg.cuda.synchronize()
    return timeit.default_timer()


def select_unit(t: float) -> tuple[str, float]:
    """The unit ``t`` seconds reads best in, and its scale: ``(unit, seconds per unit)``."""
    scale, unit = _UNITS[0]
    for s, u in _UNITS:
        if t >= s:
            scale, unit = s, u
    return unit, scale


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, n - 1 - int(math.floor(math.log10(abs(x)))))


@dataclass(frozen=True)
class TaskSpec:
    """What was measured: the statements and the labels a table groups by."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label and sub-label, or the statement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt: {self.stmt}" if "\n" not in self.stmt else "stmt:\n" + self.stmt

    def summarize(self) -> str:
        lines = [self.title]
        if self.description:
            lines.append(self.description)
        if self.setup and self.setup != "pass":
            lines.append(f"setup: {self.setup}" if "\n" not in self.setup
                         else "setup:\n" + self.setup)
        return "\n".join(lines)


@dataclass
class Measurement:
    """The times of one statement: ``raw_times`` (seconds per block of ``number_per_run``
    runs), ``times`` (seconds per run), and their ``mean``, ``median`` and ``iqr``."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None
    _warnings: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        if self.iqr / self.median > 0.1 and len(self.times) >= 4:
            self._warnings.append(
                f"  WARNING: Interquartile range is {100 * self.iqr / self.median:.1f}% of the "
                f"median measurement.\n           This suggests significant environmental "
                f"influence.")

    def __getattr__(self, name):  # (the task's fields: label, stmt, num_threads, ...)
        if name.startswith("_") or name == "task_spec":
            raise AttributeError(name)
        return getattr(self.task_spec, name)

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        s = sorted(self.times)
        pos = q * (len(s) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return sum(self.times) / len(self.times)

    @property
    def iqr(self) -> float:
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings)

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread supports (1-4; 4 for one
        measurement)."""
        n = len(self.times)
        if n < 2:
            return 4
        std = math.sqrt(sum((t - self.mean) ** 2 for t in self.times) / (n - 1))
        interval = 1.645 * std / math.sqrt(n)  # (a 90% confidence interval's half width)
        if interval == 0:
            return 4
        return max(1, min(4, int(math.floor(math.log10(self.median / interval)))))

    def meets_confidence(self, threshold: float = 0.1) -> bool:
        """Whether the interquartile range is within ``threshold`` of the median."""
        return self.iqr / self.median < threshold

    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list:
        """Measurements of the same task joined into one (their blocks pooled)."""
        groups: dict = {}
        for m in measurements:
            groups.setdefault(m.task_spec, []).append(m)
        out = []
        for spec, ms in groups.items():
            per_run = [t for m in ms for t in m.times]
            out.append(Measurement(1, per_run, spec, ms[0].metadata))
        return out

    def __repr__(self) -> str:
        n = len(self.times)
        unit, scale = select_unit(self.median)
        lines = [f"<{type(self).__module__}.{type(self).__qualname__} object at "
                 f"{hex(id(self))}>", self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}")
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._quantile(0.25) / scale:.2f} to "
                         f"{self._quantile(0.75) / scale:.2f})")
        threads = self.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        return "\n".join(lines + self._warnings)


class Timer:
    """Measures how long ``stmt`` takes (after ``setup``, run once), in ``globals``."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: str = "python"):
        if str(language).lower() not in ("python", "language.python"):
            raise ValueError("Timer: only Python statements can be timed in tritongrad")
        if not isinstance(stmt, str):
            raise ValueError("Timer: stmt must be a string of Python code")
        import tritongrad as tg
        namespace = {"torch": tg}
        namespace.update(globals or {})
        if global_setup:
            exec(global_setup, namespace)
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description,
                                   env, num_threads)
        self._timer = timeit.Timer(stmt, setup, timer, namespace)

    def _threads(self):
        import contextlib

        import tritongrad as tg

        @contextlib.contextmanager
        def threads():
            before = tg.get_num_threads()
            tg.set_num_threads(self._task_spec.num_threads)
            try:
                yield
            finally:
                tg.set_num_threads(before)
        return threads()

    def _measure(self, number: int) -> float:
        with self._threads():
            return self._timer.timeit(number)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after a warm-up run)."""
        self._measure(max(1, number // 100))
        return Measurement(number, [self._measure(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("Timer.repeat is not implemented in PyTorch either; use "
                                  "timeit or blocked_autorange")

    def _block_size(self, min_block_time: float) -> int:
        """Runs per block: powers of ten until a block takes ``min_block_time``."""
        number = 1
        while True:
            if self._measure(number) >= min_block_time or number >= 10 ** 9:
                return number
            number *= 10

    def autorange(self, callback: Callable[[int, float], None] | None = None) -> Measurement:
        """One block long enough to time (at least 0.2 s, as ``timeit.Timer.autorange``)."""
        number = self._block_size(0.2)
        t = self._measure(number)
        if callback is not None:
            callback(number, t)
        return Measurement(number, [t], self._task_spec)

    def blocked_autorange(self, callback: Callable[[int, float], None] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of a hundredth of ``min_run_time`` or more, until ``min_run_time`` seconds of
        them."""
        number = self._block_size(min_run_time / 100)
        times, total = [], 0.0
        while total < min_run_time or not times:
            t = self._measure(number)
            if callback is not None:
                callback(number, t)
            times.append(t)
            total += t
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], None] | None = None
                           ) -> Measurement:
        """Blocks until the interquartile range is within ``threshold`` of the median (after
        at least ``min_run_time`` seconds) or ``max_run_time`` seconds have passed."""
        number = self._block_size(0.01)
        times, total = [], 0.0
        while True:
            t = self._measure(number)
            if callback is not None:
                callback(number, t)
            times.append(t)
            total += t
            m = Measurement(number, list(times), self._task_spec)
            if total >= max_run_time or (total >= min_run_time and len(times) > 3
                                         and m.meets_confidence(threshold)):
                return m

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("Timer.collect_callgrind: Valgrind instruction counts are "
                                  "not available in tritongrad")


class Compare:
    """A table of measurements: one per ``label``, rows by ``sub_label`` (grouped by thread
    count), columns by ``description``; times in one unit, to the figures the spreads
    support."""

    def __init__(self, results: list):
        self._results = list(results)
        self._trim = False
        self._colorize = None

    def extend_results(self, results: list) -> None:
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = "row" if rowwise else "column"  # (accepted; the table has no color)

    def highlight_warnings(self) -> None:
        pass

    def __str__(self) -> str:
        tables = []
        by_label: dict = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        for label, ms in by_label.items():
            tables.append(self._table(label, ms))
        return "\n".join(tables)

    def _table(self, label, ms: list) -> str:
        columns = list(dict.fromkeys(m.description or "" for m in ms))
        unit, scale = select_unit(min(m.median for m in ms))
        cells: dict = {}
        for m in ms:
            value = m.median / scale
            if self._trim:
                value = trim_sigfig(value, m.significant_figures)
            cells[(m.num_threads, m.as_row_name(), m.description or "")] = value
        rows = list(dict.fromkeys((m.num_threads, m.as_row_name()) for m in ms))
        width = max([len(r) for _, r in rows] + [4])
        col_width = [max(len(c), 7) for c in columns]
        lines = []
        header = " " * (width + 4) + "|" + "|".join(f"  {c:>{w}}  " for c, w in
                                                       zip(columns, col_width))
        lines.append(header)
        for threads in dict.fromkeys(t for t, _ in rows):
            lines.append(f"{threads} threads: " + "-" * max(1, len(header) - 12))
            for t, r in rows:
                if t != threads:
                    continue
                vals = []
                for c, w in zip(columns, col_width):
                    v = cells.get((t, r, c))
                    vals.append(f"  {'' if v is None else f'{v:.1f}':>{w}}  ")
                lines.append(f"  {r:>{width}}  " + "|" + "|".join(vals))
        title = f" {label} " if label else ""
        bar = max(len(header) - len(title) - 2, 4)
        lines.insert(0, "[" + "-" * (bar // 2) + title + "-" * (bar - bar // 2) + "]")
        english = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds",
                   "s": "seconds"}[unit]
        lines.append("")
        lines.append(f"Times are in {english} ({unit}).")
        return "\n".join(lines) + "\n"

    def print(self) -> None:
        print(str(self))
