"""A 0-d integer tensor indexes as its number does (PyTorch's select), not as an index tensor:
``x[t]`` is a view with SelectBackward0, ``x[t] = v`` copies and casts ``v``."""

import numpy as np
import pytest

import tritongrad as tg

X = np.arange(24.0).reshape(2, 3, 4)


@pytest.mark.parametrize("dtype", [tg.int64, tg.int32, tg.int16, tg.int8])
def test_zero_dim_integer_tensor_selects(dtype):
    x = tg.tensor(X, requires_grad=True)
    y = x[tg.tensor(1, dtype=dtype)]
    assert type(y.grad_fn).__name__ == "SelectBackward0"
    assert y._base is x  # a view, as x[1]
    np.testing.assert_array_equal(y.detach().numpy(), X[1])
    z = x[:, tg.tensor(-1, dtype=dtype), tg.tensor(2, dtype=dtype)]
    np.testing.assert_array_equal(z.detach().numpy(), X[:, -1, 2])
    z.sum().backward()
    want = np.zeros_like(X)
    want[:, -1, 2] = 1
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_zero_dim_select_among_index_tensors_and_masks():
    x = tg.tensor(X)
    # with another index tensor: the select first, then the tensor indexes what is left
    np.testing.assert_array_equal(x[tg.tensor(1), [0, 2]].numpy(), X[1][[0, 2]])
    np.testing.assert_array_equal(x[tg.tensor(1), tg.tensor([0, 2])].numpy(), X[1][[0, 2]])
    # uint8 and bool 0-d tensors stay masks: a new dim of size 1
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        assert tuple(x[tg.tensor(1, dtype=tg.uint8)].shape) == (1, 2, 3, 4)
    assert tuple(x[tg.tensor(True)].shape) == (1, 2, 3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x[tg.tensor(5)]


def test_setitem_by_zero_dim_tensor_casts_the_value():
    z = tg.zeros(2, 3, dtype=tg.float64)
    z[tg.tensor(1)] = tg.tensor(5.0)  # float32 into float64: a copy, cast
    z[tg.tensor(0), tg.tensor(2)] = tg.tensor([7.0])
    want = np.zeros((2, 3))
    want[1] = 5
    want[0, 2] = 7
    np.testing.assert_array_equal(z.numpy(), want)
    # an index tensor among them still goes through index_put, which refuses the dtype
    with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
        z[tg.tensor(1), [0, 1]] = tg.tensor(5.0)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        x = lib.arange(24.0).reshape(2, 3, 4).requires_grad_()
        y = x[lib.tensor(1), lib.tensor(-1)]
        lib.autograd.backward(y.sum() * 2)
        if lib is tg:
            ours = (type(y.grad_fn).__name__, y.detach().numpy(), x.grad.numpy())
        else:
            theirs = (type(y.grad_fn).__name__, y.detach().numpy(), x.grad.numpy())
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])
    np.testing.assert_array_equal(ours[2], theirs[2])
