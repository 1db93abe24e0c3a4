"""Session 38's smaller fixes: xlogy's zeros, round(decimals=) in half precision and past
float range, linalg result type names, lgamma of a 0-d tensor in gammainc's gradient."""
import math

import numpy as np
import pytest

import tritongrad as tg

INF, NAN = float("inf"), float("nan")


def test_xlogy_is_plus_zero_where_x_is_zero_and_y_no_nan():
    x = tg.tensor([0.0, -0.0, 0.0, 0.0, 2.0], requires_grad=True)
    y = tg.tensor([INF, 2.0, NAN, -1.0, 3.0])
    r = tg.xlogy(x, y)
    got = r.detach().numpy()
    np.testing.assert_array_equal(got[[0, 1, 3]], [0.0, 0.0, 0.0])
    assert not np.signbit(got[1])  # (+0.0 for x = -0.0, as PyTorch's)
    assert math.isnan(got[2])
    assert got[4] == pytest.approx(2 * math.log(3.0))
    r.sum().backward()  # the derivative in x stays log(y) at x = 0
    assert x.grad[1].item() == pytest.approx(math.log(2.0))
    assert tg.special.xlogy(tg.tensor(0.0), tg.tensor(INF)).item() == 0.0


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
def test_round_decimals_scales_half_precision_in_float32(dtype):
    x = tg.tensor([125.0, 2.5], dtype=dtype)
    r = tg.round(x, decimals=3)  # 125 * 1000 overflows float16
    assert r.dtype is dtype
    np.testing.assert_array_equal(r.float().numpy(), [125.0, 2.5])


@pytest.mark.parametrize("decimals", [400, -400])
def test_round_decimals_past_float_range_is_nan(decimals):
    assert math.isnan(tg.round(tg.tensor([1.2345]), decimals=decimals).item())


def test_linalg_results_are_named_as_torch_return_types():
    a = tg.eye(3, dtype=tg.float64) * 2
    assert type(tg.linalg.slogdet(a)).__name__ == "linalg_slogdet"
    assert type(tg.slogdet(a)).__name__ == "slogdet"
    assert type(tg.linalg.qr(a)).__name__ == "linalg_qr"
    assert type(tg.qr(a)).__name__ == "qr"
    for fn, name in [(tg.linalg.eigh, "linalg_eigh"), (tg.linalg.svd, "linalg_svd"),
                     (tg.linalg.inv_ex, "linalg_inv_ex"), (tg.linalg.eig, "linalg_eig"),
                     (tg.linalg.cholesky_ex, "linalg_cholesky_ex"), (tg.linalg.lu, "linalg_lu"),
                     (tg.linalg.lu_factor, "linalg_lu_factor")]:
        assert type(fn(a)).__name__ == name
    sign, logabsdet = tg.slogdet(a)
    assert sign.item() == 1.0 and logabsdet.item() == pytest.approx(3 * math.log(2.0))


def test_gammainc_gradient_of_a_zero_dim_tensor():
    x = tg.tensor(1.0, dtype=tg.float64, requires_grad=True)
    tg.special.gammainc(tg.tensor(2.0, dtype=tg.float64), x).backward()
    # d/dx P(a, x) = x^(a - 1) e^-x / Gamma(a): e^-1 at a = 2, x = 1
    assert x.grad.item() == pytest.approx(math.exp(-1.0), rel=1e-12)


def test_cross_names_the_dim_as_given():
    with pytest.raises(RuntimeError, match="inputs dimension -1 must have length 3"):
        tg.cross(tg.ones(2, 4), tg.ones(2, 4), dim=-1)


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_loss_names_the_first_bad_target_in_order(fn):
    f = getattr(tg.nn.functional, fn)
    with pytest.raises(IndexError, match=r"^Target 7 is out of bounds\.$"):
        f(tg.zeros(2, 4, 2), tg.tensor([[1, 7], [5, 9]]))  # (9 is the largest)
    with pytest.raises(IndexError, match=r"^Target 9 is out of bounds\.$"):
        f(tg.zeros(3, 4), tg.tensor([9, -1, 5]))
    with pytest.raises(IndexError, match=r"^Target 5 is out of bounds\.$"):
        f(tg.zeros(3, 4), tg.tensor([1, 5, -100]))  # (ignore_index is no bad target)
