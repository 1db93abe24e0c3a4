"""NumPy scalars (``np.sqrt(d)`` is an ``np.float64``) and subclasses of Python numbers as
operands: PyTorch takes them as the Python numbers they hold, weakly typed, so they never
promote a tensor's dtype, and NumPy's operators defer to the tensor's reflected ones."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host


class _Float(float):
    pass


class _Int(int):
    pass


SCALARS = [np.float64(2.5), np.float32(2.5), np.float16(2.5), _Float(2.5)]
INT_SCALARS = [np.int64(3), np.int32(3), np.uint8(3), _Int(3)]
OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("s", SCALARS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_a_numpy_float_scalar_keeps_the_tensors_dtype(op, s, dtype, device):
    x = tg.tensor([0.5, 1.5, 3.0], device=device).to(getattr(tg, dtype))
    ref = x.double()
    for y, want in ((op(x, s), op(host(ref), float(s))), (op(s, x), op(float(s), host(ref)))):
        assert isinstance(y, tg.Tensor) and y.dtype is x.dtype
        tol = 1e-6 if dtype == "float32" else 2e-2
        np.testing.assert_allclose(host(y.double()), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("s", INT_SCALARS, ids=lambda s: type(s).__name__)
def test_a_numpy_int_scalar_keeps_an_integer_tensor_integer(s, device):
    x = tg.tensor([1, 2, 3], dtype=tg.int16, device=device)
    for y in (x * s, s * x, x + s, x - s):
        assert y.dtype is tg.int16
    np.testing.assert_array_equal(host(x * s), [3, 6, 9])
    assert (x * np.float64(0.5)).dtype is tg.float32  # a float scalar: the default dtype
    assert (x * np.complex128(1j)).dtype is tg.complex64


def test_in_place_comparisons_and_gradients_with_numpy_scalars(device):
    x = tg.tensor([1.0, 2.0, 4.0], device=device)
    y = x.clone()
    y *= np.float64(3)
    y += _Float(1)
    assert y.dtype is tg.float32
    np.testing.assert_array_equal(host(y), [4.0, 7.0, 13.0])
    np.testing.assert_array_equal(host(np.float64(2) < x), [False, False, True])
    np.testing.assert_array_equal(host(x == np.int64(2)), [False, True, False])
    w = tg.tensor([1.0, 2.0, 4.0], device=device, requires_grad=True)
    (w * np.float64(0.5) + np.float32(2) / w).sum().backward()
    assert w.grad.dtype is tg.float32
    np.testing.assert_allclose(host(w.grad), 0.5 - 2 / np.array([1.0, 4.0, 16.0]), rtol=1e-6)


def test_a_numpy_array_first_defers_to_the_tensor():
    # torch.Tensor's priority makes NumPy defer to the tensor's reflected operator, which takes
    # the array as a tensor (Note [NumPy array operands]); ufuncs give a tensor back
    r = np.full(3, 2.0) * tg.ones(3)
    assert isinstance(r, tg.Tensor) and r.dtype is tg.float64
    e = np.exp(tg.ones(2))
    assert isinstance(e, tg.Tensor) and e.dtype is tg.float32


def test_alpha_as_a_numpy_scalar_keeps_the_dtype(device):
    x, y = tg.ones(3, device=device), tg.full((3,), 2.0, device=device)
    for out in (tg.add(x, y, alpha=np.float64(0.5)), tg.sub(x, y, alpha=np.float64(0.5)),
                x.clone().add_(y, alpha=np.float64(0.5))):
        assert out.dtype is tg.float32
    np.testing.assert_array_equal(host(tg.sub(x, y, alpha=np.float64(0.5))), [0.0] * 3)


@pytest.mark.parametrize("data, want", [
    (np.float64(0.5), "float64"), (np.float32(0.5), "float32"), (np.int32(3), "int32"),
    (np.float16(1), "float16"), (np.bool_(True), "bool"), (np.complex64(1j), "complex64"),
    ([np.float64(1), np.float64(2)], "float64"), ([np.float32(1), 1.5], "float32"),
    ([np.float64(1), 1.5], "float64"), ([np.int32(1), 2], "int64"),
    ([[np.int16(1)], [np.int16(2)]], "int16"), ([np.float32(1), np.int64(2)], "float32"),
    ([np.int8(1), True], "int8"), ([1.5, 2], "float32"),
])
def test_tensor_of_numpy_scalars_takes_their_dtypes(data, want):
    # PyTorch's inference: each NumPy scalar brings its dtype, Python numbers theirs
    # (float: the default dtype, int: int64), promoted together
    for make in (tg.tensor, tg.as_tensor):
        t = make(data)
        assert t.dtype is getattr(tg, want)
        np.testing.assert_array_equal(host(t), np.asarray(data).astype(t.dtype.np))
    assert tg.tensor(np.float64(0.5), dtype=tg.float32).dtype is tg.float32
