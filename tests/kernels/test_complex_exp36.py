"""Complex exp and the general complex power (exp(y log x)) at infinities, NaN and overflow,
on the Triton backend (the emulated device in CI: Triton's interpreter) against the NumPy
backend, whose exp is C99 Annex G's cexp. Before: exp(inf + 0j) and exp(800 + 0j) were
inf + NaN j (inf * sin 0), exp(+-inf + NaN j) NaN + NaN j, so z ** 1.5 of an infinite z was
NaN + NaN j where the CPU gives inf + NaN j; 0 ** (2 + 1j) was NaN where the CPU gives 0."""

import itertools
import warnings

import numpy as np
import pytest

import tritongrad as tg

INF, NAN = float("inf"), float("nan")
PARTS = [0.0, -0.0, 1.0, -2.5, 800.0, INF, -INF, NAN]
GRID = [complex(a, b) for a, b in itertools.product(PARTS, PARTS)]
# a NaN part beside an infinite one: C's complex product recovers an infinity there (Annex
# G's __muldc3) where the kernel's plain product stays NaN; exp itself is exact on them
POW_GRID = [z for z in GRID if not ((np.isnan(z.real) and np.isinf(z.imag))
                                    or (np.isinf(z.real) and np.isnan(z.imag)))]
OPS = {
    "exp": (lambda t: t.exp(), GRID),
    "sigmoid": (lambda t: t.sigmoid(), GRID),
    "pow 1.5": (lambda t: t ** 1.5, POW_GRID),
    "pow -1.5": (lambda t: t ** -1.5, POW_GRID),
    "pow 2+1j": (lambda t: t ** (2 + 1j), POW_GRID),
    "pow z": (lambda t: t ** t, POW_GRID),
}


@pytest.fixture(autouse=True)
def cuda():
    if not tg.cuda.is_available():
        pytest.skip("needs the (emulated) CUDA device")


@pytest.mark.parametrize("dtype", [tg.complex128, tg.complex64])
@pytest.mark.parametrize("name", list(OPS))
def test_matches_the_numpy_backend(name, dtype):
    op, grid = OPS[name]
    z = tg.tensor(grid, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = op(z).numpy(), op(z.to("cuda")).cpu().numpy()
    np.testing.assert_array_equal(np.isnan(got.real), np.isnan(want.real))
    np.testing.assert_array_equal(np.isnan(got.imag), np.isnan(want.imag))
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype is tg.complex64 else 1e-13)


def test_exp_of_a_real_argument_stays_real():
    z = tg.tensor([complex(INF, 0), complex(800, 0), complex(NAN, 0), complex(-INF, INF)],
                  dtype=tg.complex128, device="cuda").exp().cpu().numpy()
    np.testing.assert_array_equal(z.real[:2], [INF, INF])
    assert np.isnan(z.real[2])
    np.testing.assert_array_equal(z.imag[:3], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(z[3], 0)
