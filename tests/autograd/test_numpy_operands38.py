"""NumPy arrays as operands of tensor operators, and NumPy ufuncs over tensors (Note [NumPy
array operands], autograd/ops/elementwise.py), against float64 NumPy and torch."""
import operator

import numpy as np
import pytest

import tritongrad as tg

# (torch's own __array_wrap__ predates NumPy 2's signature and warns on every wrap)
pytestmark = pytest.mark.filterwarnings("ignore:__array_wrap__ must accept:DeprecationWarning")

ARITHMETIC = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow"]


def _host(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("name", ARITHMETIC + ["eq", "lt", "ge"])
@pytest.mark.parametrize("adt", [np.float64, np.float32, np.int64])
def test_tensor_op_array_is_the_op_with_the_array_as_a_tensor(name, adt):
    f = getattr(operator, name)
    x = np.array([[1.5, 2.0, 3.0], [4.0, 0.5, 2.5]], np.float32)
    a = np.array([2, 3, 1], adt)
    r = f(tg.tensor(x), a)
    expected = f(x.astype(np.float64), a.astype(np.float64))
    assert isinstance(r, tg.Tensor) and tuple(r.shape) == expected.shape
    # NumPy's promotion decides, as in PyTorch where NumPy computes the op: float32 x int64
    # is float64
    want = {"eq": np.bool_, "lt": np.bool_, "ge": np.bool_}.get(
        name, np.promote_types(np.float32, adt))
    assert _host(r).dtype == want
    np.testing.assert_allclose(_host(r).astype(np.float64), expected, rtol=1e-6)


def test_integer_tensor_and_integer_array_stay_integer():
    r = tg.tensor([7, 8, 9]) // np.array([2, 3, 4])
    assert r.dtype is tg.int64
    np.testing.assert_array_equal(_host(r), [3, 2, 2])
    assert (tg.tensor([1, 2]) / np.array([2, 4])).dtype is tg.float64  # NumPy's true division


def test_gradient_flows_to_the_tensor_operand():
    w = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    a = np.array([0.5, -1.0, 4.0])
    ((w * a) / np.array([1.0, 2.0, 8.0]) - a).sum().backward()
    np.testing.assert_allclose(_host(w.grad), a / np.array([1.0, 2.0, 8.0]))


def test_matmul_and_broadcasting_with_an_array():
    x = np.arange(6.0).reshape(2, 3)
    m = tg.tensor(x.astype(np.int64)) @ np.ones((3, 2), np.float32)  # NumPy's int64 x float32
    assert m.dtype is tg.float64
    np.testing.assert_array_equal(_host(m), x @ np.ones((3, 2)))
    np.testing.assert_allclose(_host(tg.tensor(x) + np.ones((4, 1, 3))), x + np.ones((4, 1, 3)))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        tg.ones(2, 3) + np.ones(4)


def test_in_place_with_an_array_stays_in_place():
    t = tg.ones(3)
    u = t
    t += np.array([1.0, 2.0, 3.0])
    assert t is u and t.dtype is tg.float32
    np.testing.assert_array_equal(_host(t), [2.0, 3.0, 4.0])


def test_an_object_array_is_refused_naming_the_op():
    with pytest.raises(TypeError, match=r"^mul\(\): can't convert np.ndarray of type object"):
        tg.ones(2) * np.array([1, "a"], dtype=object)


def test_ufuncs_give_tensors():
    t = tg.tensor([0.0, 1.0])
    r = np.sin(t)
    assert isinstance(r, tg.Tensor) and r.dtype is tg.float32
    np.testing.assert_allclose(_host(r), np.sin([0.0, 1.0]), rtol=1e-6)
    b = np.isnan(t)  # (PyTorch's __array_wrap__ turns bool into uint8: we keep bool)
    assert isinstance(b, tg.Tensor) and b.dtype is tg.bool
    assert np.add(t, 1).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("name", ARITHMETIC + ["eq", "and_"])
@pytest.mark.parametrize("xdt", ["float32", "int64", "float16", "int32", "uint8"])
def test_matches_torch(name, xdt):
    torch = pytest.importorskip("torch")
    f = getattr(operator, name)
    x = np.array([1, 2, 3]).astype(xdt)
    for a in (np.array([2.0, 3.0, 1.0]), np.array([2, 3, 1]), np.array([2, 3, 1], np.int32),
              np.array([2.0, 3.0, 1.0], np.float32), np.array(2.0)):
        try:
            theirs = f(torch.tensor(x), a)
        except TypeError:  # (bitwise ops over floats: NumPy refuses, and so do we)
            with pytest.raises((TypeError, RuntimeError, NotImplementedError)):
                f(tg.tensor(x), a)
            continue
        mine = f(tg.tensor(x), a)
        assert str(mine.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(_host(mine), theirs.numpy(), rtol=1e-6)
