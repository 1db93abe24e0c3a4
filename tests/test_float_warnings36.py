"""inf - inf, 0 * inf, overflow and NaN through LAPACK and FFT stay silent, as in PyTorch
(Note [Silent float errors] in kernels/numpy/elementwise.py), while the user's own NumPy
calls keep NumPy's warnings.

The check runs in a fresh interpreter: the package's warnings filter is installed at import
and pytest restores the filters it had after collecting the tests (see the Note), so a
subprocess is what a user's script sees.
"""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np
    import tritongrad as tg

    inf, nan = float("inf"), float("nan")
    x = tg.tensor([inf, -inf, 0., nan, 1e38, -1e38, 3., -2.], requires_grad=True)
    m = x.reshape(2, 2, 2)
    results = [x - x, x + x.flip(0), x * 0, x * x, x.sum() - x.sum(), x.cumsum(0),
               x.prod(), x.mean(), x.var(), tg.linalg.det(m), tg.logdet(m), tg.fft.rfft(x),
               tg.tensor([1e38], dtype=tg.float16), tg.tensor([7e4]).half() * 2,
               tg.nn.functional.layer_norm(x.reshape(2, 4), (4,))]
    (x - x).sum().backward()
    (x * 0).sum().backward()
    # the user's own NumPy call still warns: the filter is scoped to the package
    np.subtract(np.array([np.inf]), np.array([np.inf]))
    print("values", float(results[0][0]), float(results[12][0]))
""")


def test_no_floating_point_warnings_from_the_package():
    run = subprocess.run([sys.executable, "-W", "default", "-c", SCRIPT], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "values nan inf" in run.stdout
    warned = [line for line in run.stderr.splitlines() if "RuntimeWarning" in line]
    # exactly the user's own np.subtract, from the script itself (<string>)
    assert len(warned) == 1, run.stderr
    assert warned[0].startswith("<string>") and "invalid value encountered in subtract" \
        in warned[0], run.stderr


ERRORS_SCRIPT = textwrap.dedent("""
    import warnings
    import tritongrad as tg

    warnings.simplefilter("error")  # in front of the package's filter (pytest's "error")
    inf = float("inf")
    x = tg.tensor([inf, -inf, 0., 1e38, 3.], requires_grad=True)
    out = [x * 0, x - x, x + x, x * x, x.square(), x.sin(), x.exp(), (x * 0).sum()]
    (x * 0).sum().backward()
    # in place, NumPy warns after writing: each element computed once (1e38 * 10 overflows,
    # 5 * 10 is 50, not 500)
    y = tg.tensor([1e38, 5.0])
    y.mul_(10)
    z = tg.tensor([inf, 0.5])
    z.sin_()
    print("values", out[0].tolist()[3], y.tolist(), round(z.tolist()[1], 6))
""")


def test_no_error_when_the_users_filter_makes_warnings_errors():
    run = subprocess.run([sys.executable, "-c", ERRORS_SCRIPT], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert "values 0.0 [inf, 50.0] 0.479426" in run.stdout, run.stdout
