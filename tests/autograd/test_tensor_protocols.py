"""Python's protocols on a Tensor as PyTorch has them: iteration (one unbind along dim 0),
``in`` (any element equal), and float()/int()/complex() of one element."""

import numpy as np
import pytest

import tritongrad as tg


def test_iteration_is_the_rows_and_refuses_0d():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    rows = list(x)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]
    assert rows[0].grad_fn.name() == "UnbindBackward0"  # (PyTorch's __iter__ unbinds)
    a, b = x  # unpacking
    (a * 2 + b * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 2.0], [3.0, 3.0]])
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(tg.tensor(2.5))  # (it was [], an empty iteration)
    assert list(tg.zeros(0, 3)) == []


def test_contains_tests_any_equal_element():
    x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert 3.0 in x and 7 not in x  # (it raised "Boolean value ... ambiguous")
    # (a tensor: any elementwise match, as PyTorch: [1, 0, 0] matches x[0, 0])
    assert tg.tensor([1.0, 0.0, 0.0]) in x and tg.tensor([7.0, 8.0, 9.0]) not in x
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "a" in x


def test_python_scalars_need_one_element():
    assert float(tg.tensor([2.5])) == 2.5 and int(tg.tensor([[3]])) == 3
    assert complex(tg.tensor(1 + 2j)) == 1 + 2j
    for convert in (float, int, complex):
        with pytest.raises(ValueError, match="only one element tensors can be converted to "
                                             "Python scalars"):
            convert(tg.ones(2))
