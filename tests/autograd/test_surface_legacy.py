"""PyTorch API that older and test code reaches for: the typed-tensor classes, Tensor.type and
Tensor.new, in-place comparisons, split_with_sizes, and small autograd entry points
(SavedTensor, set_multithreading_enabled, kineto_available, _set_sequence_nr, attribute
deletion)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritongrad as tg


def test_typed_tensor_classes_construct_and_check_dtype_and_device():
    x = tg.randn(2, 3)
    assert isinstance(x, tg.FloatTensor) and not isinstance(x, tg.DoubleTensor)
    assert isinstance(x.long(), tg.LongTensor) and isinstance(x.bool(), tg.BoolTensor)
    assert not isinstance(x.cuda(), tg.FloatTensor) and isinstance(x.cuda(), tg.cuda.FloatTensor)
    t = tg.LongTensor([1, 2, 3])
    assert t.dtype is tg.int64 and t.tolist() == [1, 2, 3]
    assert tg.DoubleTensor(2, 3).shape == (2, 3) and tg.IntTensor().shape == (0,)
    assert tg.BoolTensor([True, False]).dtype is tg.bool
    assert tg.FloatTensor().dtype is tg.float32 and repr(tg.FloatTensor) == (
        "<class 'tritongrad.FloatTensor'>")
    with pytest.raises(TypeError, match="LongTensor"):
        tg.LongTensor(2, "x")


def test_tensor_type_names_and_converts():
    x = tg.randn(2)
    assert x.type() == "tritongrad.FloatTensor"
    assert x.long().cuda().type() == "tritongrad.cuda.LongTensor"
    assert x.type(tg.DoubleTensor).dtype is tg.float64
    assert x.type("torch.IntTensor").dtype is tg.int32
    assert x.type(tg.int16).dtype is tg.int16
    assert x.type("torch.cuda.FloatTensor").device.type == "cuda"
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.NoSuchTensor")


def test_new_is_the_legacy_constructor_with_the_tensors_dtype():
    x = tg.ones(2, dtype=tg.float64)
    assert x.new(3, 2).shape == (3, 2) and x.new(3).dtype is tg.float64
    assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new().shape == (0,)


@pytest.mark.parametrize("name", ["eq", "ne", "gt", "ge", "lt", "le"])
def test_in_place_comparisons_write_in_the_tensors_dtype(name):
    a = np.array([1.0, 2.0, 3.0])
    x = tg.tensor(a)
    out = getattr(x, f"{name}_")(2.0)
    assert out is x and x.dtype is tg.float64
    expected = getattr(np, {"eq": "equal", "ne": "not_equal", "gt": "greater",
                            "ge": "greater_equal", "lt": "less", "le": "less_equal"}[name])(a, 2)
    np.testing.assert_array_equal(x.numpy(), expected.astype(np.float64))


def test_split_with_sizes_unsafe_split_trace_and_constants():
    x = tg.arange(6.0)
    assert [t.tolist() for t in x.split_with_sizes([2, 4])] == [[0, 1], [2, 3, 4, 5]]
    assert [t.tolist() for t in x.unsafe_split(4)] == [[0, 1, 2, 3], [4, 5]]
    m = tg.arange(6.0, dtype=tg.float64).view(2, 3).requires_grad_()
    tg.trace(m).backward()
    np.testing.assert_array_equal(m.grad.numpy(), [[1, 0, 0], [0, 1, 0]])
    with pytest.raises(RuntimeError, match="trace: expected a matrix"):
        tg.trace(tg.ones(3))
    assert tg.inf == math.inf and math.isnan(tg.nan) and tg.pi == math.pi and tg.e == math.e


def test_small_autograd_entry_points():
    with pytest.raises(RuntimeError, match="Trying to create a SavedTensor object from Python "
                                           "is forbidden"):
        tg.autograd.SavedTensor()
    assert tg.autograd.kineto_available() is False
    assert tg.autograd.is_multithreading_enabled()
    with tg.autograd.set_multithreading_enabled(False):
        assert not tg.autograd.is_multithreading_enabled()
    assert tg.autograd.is_multithreading_enabled()
    tg.autograd.set_multithreading_enabled(False)
    assert not tg.autograd.is_multithreading_enabled()
    tg.autograd.set_multithreading_enabled(True)
    y = tg.ones(2, requires_grad=True) * 2
    y.grad_fn._set_sequence_nr(100)
    assert y.grad_fn._sequence_nr() == 100
    assert not y._is_view() and y[0]._is_view()


def test_only_grad_can_be_deleted():
    x = tg.randn(3, requires_grad=True)
    x.sum().backward()
    del x.grad
    assert x.grad is None
    for name in ("data", "requires_grad", "_grad_fn", "_backward_hooks"):
        with pytest.raises(RuntimeError, match="cannot delete"):
            delattr(x, name)
    with pytest.raises(TypeError):
        x.data = None
    assert x.requires_grad and x.shape == (3,)


def test_integer_and_bool_results_have_no_history():
    # PyTorch: only floating point and complex tensors can require gradients, so a cast to
    # an integer dtype (or an argmax) ends the graph, and what is built on it is disconnected
    a = tg.ones(2, dtype=tg.float64, requires_grad=True)
    b = a.long()
    assert not b.requires_grad and b.grad_fn is None
    c = b.double().requires_grad_().clone().sum()
    assert tg.autograd.grad(c, a, allow_unused=True) == (None,)
    values, indices = a.sort()
    assert values.requires_grad and not indices.requires_grad
    assert not (a > 0).requires_grad


def test_new_with_a_size_makes_that_shape_even_0_d():
    x = tg.ones(5, 5)
    assert x.new(x[3].size()).shape == (5,) and x.new(x[3, 3].size()).shape == ()


def test_numpy_of_a_tensor_that_requires_grad_is_allowed_under_no_grad():
    x = tg.randn(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        x.numpy()
    with tg.no_grad():
        np.testing.assert_array_equal(x.numpy(), x.detach().numpy())


@pytest.mark.parametrize("protocol", range(6))
def test_tensors_pickle_by_value_with_every_protocol(protocol):
    import pickle
    x = tg.randn(3, dtype=tg.float64, requires_grad=True)
    (x * 2).sum().backward()  # a leaf with a grad accumulator and .grad
    for t in (x, x.bfloat16().detach(), tg.arange(4), x.detach().cuda()):
        back = pickle.loads(pickle.dumps(t, protocol=protocol))
        assert back.dtype is t.dtype and back.device == t.device
        assert back.requires_grad == t.requires_grad and back.is_leaf
        np.testing.assert_array_equal(back.cpu().detach().float().numpy(),
                                      t.cpu().detach().float().numpy())


def test_deepcopy_copies_leaves_with_their_grad_and_refuses_non_leaves():
    import copy
    x = tg.randn(3, requires_grad=True)
    (x * 2).sum().backward()
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.grad.tolist() == [2.0, 2.0, 2.0]
    assert y.grad is not x.grad
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


def test_out_grad_and_data_assignment_checks():
    a, b = tg.randn(2, 2, requires_grad=True), tg.randn(2, 2)
    x = tg.zeros(2, 2)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        tg.mul(a, b, out=x)
    with tg.no_grad():
        tg.mul(a, b, out=x)
    np.testing.assert_allclose(x.numpy(), (a * b).detach().numpy())
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        tg.mul(b, b, out=tg.zeros(2, 2, requires_grad=True))
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        a.grad = a
    with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
        a.data = tg.tensor([[1, 2], [3, 4]])
    a.data = tg.ones(2, 2)  # a float is fine
    assert a.requires_grad and a.sum().item() == 4.0


def test_materialized_gradients_are_zeros_that_can_be_differentiated_again():
    x = tg.tensor(0.5, requires_grad=True)
    y = x * tg.tensor(1.0, requires_grad=True)
    (dydx,) = tg.autograd.grad(y, x, create_graph=True)
    assert tg.autograd.grad(dydx, x, create_graph=True, allow_unused=True) == (None,)
    (d2,) = tg.autograd.grad(dydx, x, create_graph=True, materialize_grads=True)
    (d3,) = tg.autograd.grad(d2, x, materialize_grads=True)
    assert d2.item() == 0 and d3.item() == 0 and d2.requires_grad
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed"):
        tg.autograd.grad(y, x, allow_unused=False, materialize_grads=True)
