"""bfloat16 on the CPU: tritongrad's float32-backed arrays against ml_dtypes' bfloat16.

The CPU backend keeps a bfloat16 array as float32 values rounded to bfloat16
(kernels/numpy/bf16.py): every op runs NumPy's float32 loops (and BLAS) and rounds once.
ml_dtypes gives NumPy a real 2-byte bfloat16 dtype whose ufuncs convert element by element.
Each row is one op on 2^20 elements (matmul: 512 x 512), both sides giving bfloat16 results;
ml_dtypes rows are skipped when it is not installed (it is not a dependency).

    python perf/bench_bf16.py
"""

from __future__ import annotations

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit


def main() -> None:
    import tritongrad.kernels.numpy as K
    from tritongrad.runtime import dtype as D

    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(1 << 20).astype(np.float32) for _ in range(2))
    m = rng.standard_normal((512, 512)).astype(np.float32)
    ta, tb, tm = (K.astype(x, D.bfloat16) for x in (a, b, m))
    ops = {
        "add": (lambda: K.add(ta, tb), lambda x, y, _: x + y),
        "mul": (lambda: K.mul(ta, tb), lambda x, y, _: x * y),
        "exp": (lambda: K.exp(ta), lambda x, y, _: np.exp(x)),
        "sum": (lambda: K.sum(ta, (0,), False), lambda x, y, _: x.sum()),
        "matmul 512": (lambda: K.matmul(tm, tm), lambda x, y, mm: mm @ mm),
        "cast from float32": (lambda: K.astype(a, D.bfloat16),
                              lambda x, y, _: a.astype(ml_dtypes.bfloat16)),
    }
    for name, (ours, theirs) in ops.items():
        cases = [("tritongrad (float32-backed)", ours, None)]
        if ml_dtypes is not None:
            x, y, mm = (v.astype(ml_dtypes.bfloat16) for v in (a, b, m))
            cases.append(("ml_dtypes bfloat16", lambda x=x, y=y, mm=mm: theirs(x, y, mm), None))
        report(f"bfloat16 {name}, cpu", timeit(cases, warmup=2, repeat=10, interleave=True))


if __name__ == "__main__":
    main()
