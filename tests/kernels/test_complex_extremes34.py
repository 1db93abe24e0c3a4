"""Complex sqrt, rsqrt, reciprocal and the powers PyTorch computes through them (z ** 0.5,
** -0.5, ** -1, small integer powers) at infinities and near the largest finite values, on
the Triton backend (the emulated device in CI: Triton's interpreter) against the NumPy
backend's values, which follow C99's csqrt and Smith's division. Before: inf ** -1 and
1 / inf were NaN there, and sqrt(1e308 + 1e308j) overflowed to inf."""

import warnings

import numpy as np
import pytest

import tritongrad as tg

INF = float("inf")
Z = np.array([complex(INF, 0), complex(-INF, 0), complex(0, INF), complex(INF, INF),
              complex(1e308, 1e308), complex(-INF, 2), complex(4, 3), complex(0, 0),
              complex(-3, -0.0), complex(2, -1)])
OPS = {
    "sqrt": lambda t: t.sqrt(), "rsqrt": lambda t: t.rsqrt(),
    "reciprocal": lambda t: t.reciprocal(), "pow -1": lambda t: t ** -1,
    "pow 0.5": lambda t: t ** 0.5, "pow -0.5": lambda t: t ** -0.5,
    "pow 2": lambda t: t ** 2, "pow -2": lambda t: t ** -2,
}


@pytest.fixture(autouse=True)
def cuda():
    if not tg.cuda.is_available():
        pytest.skip("needs the (emulated) CUDA device")


@pytest.mark.parametrize("dtype", [tg.complex128, tg.complex64])
@pytest.mark.parametrize("name", list(OPS))
def test_extremes_match_the_numpy_backend(name, dtype):
    op = OPS[name]
    z = tg.tensor(Z).to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = op(z).numpy(), op(z.to("cuda")).cpu().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype is tg.complex64 else 1e-13)


def test_sqrt_of_the_largest_values_is_finite():
    z = tg.tensor([complex(1e308, 1e308)], dtype=tg.complex128, device="cuda").sqrt()
    z = z.cpu().numpy()
    np.testing.assert_allclose(z, np.sqrt(np.array([complex(1e308, 1e308)])), rtol=1e-14)
    assert np.isfinite(z).all()
