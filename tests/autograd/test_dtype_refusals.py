"""Result dtypes and refusals across dtypes, as torch 2.13 has them (found by a sweep of every
op over the 12 dtypes against torch): ops that computed an answer PyTorch refuses, or gave
another dtype."""

import numpy as np
import pytest

import tritongrad as tg

_B = [[True, False], [True, True]]


def test_all_any_of_uint8_give_uint8():
    # PyTorch's legacy rule: a uint8 input keeps uint8 (0 or 1), with or without dims
    u = tg.tensor([[1, 0], [2, 3]], dtype=tg.uint8)
    for r, want in ((u.all(), 0), (u.any(), 1), (tg.all(u, 1), [0, 1]), (u.any(0), [1, 1]),
                    (tg.all(u, dim=()), [[1, 0], [1, 1]])):
        assert r.dtype is tg.uint8 and r.tolist() == want
    assert tg.tensor([1, 0], dtype=tg.int8).all().dtype is tg.bool


@pytest.mark.parametrize("call, kernel", [
    (lambda b: b @ b, "addmm_impl_cpu_"), (lambda b: tg.mm(b, b), "addmm_impl_cpu_"),
    (lambda b: tg.matmul(b[0], b[0]), "addmm_impl_cpu_"), (lambda b: tg.mv(b, b[0]),
                                                           "addmm_impl_cpu_"),
    (lambda b: tg.dot(b[0], b[0]), "addmm_impl_cpu_"), (lambda b: tg.inner(b, b),
                                                        "addmm_impl_cpu_"),
    (lambda b: tg.addmm(b, b, b), "addmm_impl_cpu_"), (lambda b: tg.bmm(b[None], b[None]), "bmm"),
    (lambda b: tg.einsum("ij,jk", b, b), "bmm"), (lambda b: tg.trace(b), "trace"),
    (lambda b: tg.cross(b[:, :1].expand(2, 3), b[:, :1].expand(2, 3), dim=1), "cross"),
    (lambda b: tg.linalg.cross(b[:, :1].expand(2, 3), b[:, :1].expand(2, 3)), "cross"),
])
def test_bool_products_are_refused(call, kernel):
    # they gave a bool "product" (NumPy's logical one); PyTorch has no bool kernel
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Bool\''):
        call(tg.tensor(_B))


def test_bool_inputs_refused_with_pytorch_messages():
    b = tg.tensor(_B)
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor"):
        tg.positive(b)
    with pytest.raises(RuntimeError, match="cov\\(\\): bool dtype is not supported"):
        tg.cov(b)
    for fn in (tg.trapezoid, tg.cumulative_trapezoid):
        with pytest.raises(RuntimeError, match=f"{fn.__name__}: received a bool input for `y`"):
            fn(b)
    assert tg.outer(b[0], b[0]).dtype is tg.bool and tg.kron(b, b).dtype is tg.bool


def test_erfinv_keeps_half_dtypes_and_quantile_refuses_them():
    for dt in (tg.float16, tg.bfloat16):
        y = tg.erfinv(tg.tensor([0.5, -0.25], dtype=dt))
        assert y.dtype is dt
        # erf(erfinv(y)) = y, to the format's precision
        np.testing.assert_allclose(tg.erf(y.double()).numpy(), [0.5, -0.25], rtol=1e-2)
        with pytest.raises(RuntimeError, match="quantile\\(\\) input tensor must be either "
                                               "float or double dtype"):
            tg.quantile(tg.tensor([1.0, 2.0], dtype=dt), 0.5)


def test_the_table_against_torch():
    torch = pytest.importorskip("torch")
    cases = [
        ("all", lambda m: m.all(m.tensor([[1, 0], [2, 3]], dtype=m.uint8), 1)),
        ("mm", lambda m: m.mm(m.tensor(_B), m.tensor(_B))),
        ("trace", lambda m: m.trace(m.tensor(_B))),
        ("positive", lambda m: m.positive(m.tensor(_B))),
        ("erfinv", lambda m: m.erfinv(m.tensor([0.5], dtype=m.float16))),
        ("quantile", lambda m: m.quantile(m.tensor([1.0], dtype=m.float16), 0.5)),
        ("polar", lambda m: m.polar(m.ones(1), m.ones(1, dtype=m.float64))),
        ("ldexp", lambda m: m.ldexp(m.ones(1, dtype=m.float16), m.tensor([2]))),
        ("floor_divide", lambda m: m.floor_divide(m.tensor([1j]), 2)),
        ("max", lambda m: m.max(m.tensor([1j]))),
        ("abs_", lambda m: m.tensor([1j]).abs_()),
    ]
    for name, call in cases:
        outcome = []
        for m in (torch, tg):
            try:
                r = call(m)
                outcome.append(str(r.dtype).rsplit(".", 1)[-1])
            except Exception as e:  # noqa: BLE001 - the type is what is compared
                outcome.append(type(e).__name__)
        assert outcome[0] == outcome[1], (name, outcome)
