"""Values and calls refused as PyTorch refuses them, with its exception types and messages, the
same on the CPU and CUDA backends (before, NumPy's OverflowError met Triton's silent wrap, an
out-of-range class gave an all-zero one-hot row, writes into an expanded tensor kept the last
write, and a CPU index joined a CUDA gather).

Each message is matched whole. The PyTorch behaviour each case mirrors is named beside it;
where PyTorch does not refuse (a Python int operand of a binary op wraps), the test pins the
value it gives instead, on both backends.
"""

import re
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn

F = nn.functional


def raises(exc, msg):
    return pytest.raises(exc, match="^" + re.escape(msg) + "$")


def overflow(cpp_type):
    return raises(RuntimeError, f"value cannot be converted to type {cpp_type} without overflow")


OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation.")


# -- Python numbers that do not fit the dtype -------------------------------------------------------

@pytest.mark.parametrize("data, dtype, name", [
    ([300], tg.uint8, "uint8"), ([-256], tg.uint8, "uint8"), ([-0.5], tg.uint8, "uint8"),
    ([200], tg.int8, "int8"), ([-129], tg.int8, "int8"), ([40000], tg.int16, "int16"),
    ([1e20], tg.int32, "int32"), (2 ** 31, tg.int32, "int32"),
    ([float("nan")], tg.int64, "int64"), ([[1, 2], [3, float("inf")]], tg.int64, "int64"),
])
def test_tensor_refuses_python_data_that_does_not_fit(data, dtype, name, device):
    # torch.tensor's store_scalar: checked_convert with the names "uint8", "int8", ...
    with overflow(name):
        tg.tensor(data, dtype=dtype, device=device)


def test_tensor_keeps_what_fits_and_casts_arrays(device):
    # a negative int whose magnitude fits an unsigned type wraps (c10's rule); floats
    # truncate; float dtypes are not checked (1e40 is inf); arrays and tensors are cast
    assert tg.tensor([-1, -255], dtype=tg.uint8, device=device).tolist() == [255, 1]
    assert tg.tensor([2.9, -2.9], dtype=tg.int32, device=device).tolist() == [2, -2]
    assert tg.tensor([1e40], dtype=tg.float32, device=device).tolist() == [float("inf")]
    assert tg.tensor([True, False], dtype=tg.int8, device=device).tolist() == [1, 0]
    assert tg.tensor(np.array([300]), dtype=tg.uint8, device=device).tolist() == [44]


@pytest.mark.parametrize("fill, dtype, name", [
    (300, tg.int8, "int8_t"), (256, tg.uint8, "uint8_t"), (-256, tg.uint8, "uint8_t"),
    (2 ** 31, tg.int32, "int"), (2 ** 63, tg.int64, "int64_t"), (1e20, tg.int32, "int"),
    (float("nan"), tg.int16, "int16_t"), (float("inf"), tg.int64, "int64_t"),
    (70000, tg.float16, "c10::Half"), (1e39, tg.bfloat16, "c10::BFloat16"),
    (1e39, tg.float32, "float"), (1 + 2j, tg.float32, "float"),
])
def test_full_and_fill_refuse_what_does_not_fit(fill, dtype, name, device):
    # Scalar::to<T>() names its C++ type: uint8_t, int8_t, int16_t, int, int64_t, c10::Half...
    with overflow(name):
        tg.full((2,), fill, dtype=dtype, device=device)
    with overflow(name):
        tg.zeros(2, dtype=dtype, device=device).fill_(fill)
    with overflow(name):
        tg.zeros(2, dtype=dtype, device=device).new_full((3,), fill)


def test_full_and_fill_keep_what_fits(device):
    assert tg.full((2,), -1, dtype=tg.uint8, device=device).tolist() == [255, 255]
    assert tg.full((1,), float("inf"), dtype=tg.float16, device=device).tolist() == [
        float("inf")]
    assert tg.zeros(2, dtype=tg.int32, device=device).fill_(2.7).tolist() == [2, 2]
    assert tg.zeros(1, dtype=tg.bool, device=device).fill_(300).tolist() == [True]


def test_value_arguments_are_checked(device):
    u8 = tg.zeros(3, dtype=tg.uint8, device=device)
    mask = tg.tensor([True, False, True], device=device)
    with overflow("uint8_t"):
        u8.masked_fill(mask, 300)
    with overflow("c10::Half"):  # the -1e9 attention mask in float16, as in PyTorch
        tg.zeros(3, dtype=tg.float16, device=device).masked_fill(mask, -1e9)
    with overflow("uint8_t"):
        u8[0] = 300
    with overflow("uint8_t"):
        u8[tg.tensor([0, 2], device=device)] = 300
    with overflow("uint8_t"):
        u8.scatter(0, tg.tensor([1], device=device), 300)
    with overflow("int8_t"):
        tg.zeros(2, dtype=tg.int8, device=device).clamp(max=300)
    with overflow("int8_t"):
        tg.ones(2, dtype=tg.int8, device=device) ** 300
    assert u8.tolist() == [0, 0, 0]
    # what fits is converted as Scalar::to converts it (clamp's -129 wraps into uint8)
    assert tg.tensor([3], dtype=tg.uint8, device=device).clamp(min=-129).tolist() == [127]
    assert u8.masked_fill(mask, -1).tolist() == [255, 0, 255]


def test_number_operands_wrap_as_in_pytorch(device):
    # PyTorch casts a Python number operand to the op's dtype without a check (a "wrapped
    # number"): an int wraps modulo 2**bits. NumPy refused these; Triton wrapped.
    def u8(*v):
        return tg.tensor(list(v), dtype=tg.uint8, device=device)
    assert (u8(1) + 300).tolist() == [45]
    assert (u8(1) + 256).tolist() == [1]
    assert (u8(1) < 256).tolist() == [False]
    assert (tg.tensor([1], dtype=tg.int8, device=device) * 1000).tolist() == [-24]
    assert (tg.tensor([1], dtype=tg.int16, device=device) // 32768).tolist() == [-1]
    assert (u8(255) & 300).tolist() == [44]
    assert u8(1).add_(300).tolist() == [45]
    assert tg.sub(u8(1), 200, alpha=2).tolist() == [113]
    assert tg.where(tg.tensor([True, False], device=device), u8(0, 0), 300).tolist() == [0, 44]
    assert u8(0, 0).copy_(300).tolist() == [44, 44]
    with overflow("int"):  # a float past an integer type: undefined in C++, so refused
        tg.zeros(2, dtype=tg.int32, device=device).copy_(1e20)


# -- writes into overlapping memory ---------------------------------------------------------------

def _expanded(device, dtype=tg.float32):
    base = tg.zeros(1, dtype=dtype, device=device)
    return base, base.expand(3)


@pytest.mark.parametrize("write", [
    lambda e, d: e.add_(tg.tensor([1.0, 2.0, 3.0], device=d)),
    lambda e, d: e.add_(1.0),
    lambda e, d: e.mul_(2.0),
    lambda e, d: e.neg_(),
    lambda e, d: e.clamp_(min=1.0),
    lambda e, d: e.copy_(tg.tensor([1.0, 2.0, 3.0], device=d)),
    lambda e, d: e.copy_(tg.tensor(1.0, device=d)),
    lambda e, d: e.__setitem__(slice(None), tg.tensor([1.0, 2.0, 3.0], device=d)),
    lambda e, d: e.scatter_(0, tg.tensor([0], device=d), 1.0),
    lambda e, d: tg.add(tg.ones(3, device=d), 1, out=e),
], ids=["add_", "add_scalar", "mul_", "neg_", "clamp_", "copy_", "copy_0d", "setitem",
        "scatter_", "out="])
def test_writes_into_an_expanded_tensor_are_refused(write, device):
    base, e = _expanded(device)
    with raises(RuntimeError, OVERLAP):
        write(e, device)
    assert base.tolist() == [0.0] and base._version == 0


def test_fill_into_an_expanded_tensor_is_allowed_and_index_put_warns(device):
    # PyTorch: fill_/zero_ (and x[:] = number, a fill) store one value: allowed;
    # index_put_ and masked_fill_ on expanded tensors are deprecated: a warning
    base, e = _expanded(device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e.fill_(2.0)
        assert base.tolist() == [2.0]
        e.zero_()
        e[:] = 3.0
        assert base.tolist() == [3.0]
        e.fill_(tg.tensor(4.0, device=device))
    assert base.tolist() == [4.0]
    with pytest.warns(UserWarning, match=r"^Use of index_put_ on expanded tensors is "
                                         r"deprecated\. Please clone\(\) the tensor"):
        e.index_put_((tg.tensor([1], device=device),), tg.tensor(5.0, device=device))
    with pytest.warns(UserWarning, match=r"^Use of masked_fill_ on expanded tensors is "
                                         r"deprecated\. Please clone\(\) the tensor"):
        e.masked_fill_(tg.tensor([True, False, False], device=device), 6.0)
    assert base.tolist() == [6.0]


def test_size_one_and_ordinary_views_are_not_overlap(device):
    base = tg.zeros(2, 3, device=device)
    base.expand(1, 2, 3).add_(1.0)  # a stride-0 dim of size 1 is not overlap
    base[:, 1].mul_(5.0)
    base.t().add_(1.0)
    assert base.tolist() == [[2.0, 6.0, 2.0], [2.0, 6.0, 2.0]]


# -- one_hot --------------------------------------------------------------------------------------

def test_one_hot_refuses_classes_out_of_range(device):
    with raises(RuntimeError, "Class values must be smaller than num_classes."):
        F.one_hot(tg.tensor([5, 1], device=device), 3)
    with raises(RuntimeError, "Class values must be non-negative."):
        F.one_hot(tg.tensor([-1, 1], device=device), 3)
    with raises(RuntimeError, "Class values must be non-negative."):
        F.one_hot(tg.tensor([-1, 1], device=device))
    with raises(RuntimeError, "one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(tg.tensor([1.0, 0.0], device=device), 3)
    with raises(RuntimeError, "one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(tg.tensor([1, 0], dtype=tg.int32, device=device), 3)
    with raises(RuntimeError, "Can not infer total number of classes from empty tensor."):
        F.one_hot(tg.tensor([], dtype=tg.int64, device=device))
    assert F.one_hot(tg.tensor([], dtype=tg.int64, device=device), 4).shape == (0, 4)
    assert F.one_hot(tg.tensor([0, 2], device=device)).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.one_hot(tg.tensor([2], device=device), 3).tolist() == [[0, 0, 1]]


# -- tensors on two devices -----------------------------------------------------------------------

def _mixed(op, arg, on, other):
    return raises(RuntimeError, f"Expected all tensors to be on the same device, but got {arg} "
                                f"is on {other}, different from other tensors on {on} (when "
                                f"checking argument in method {op})")


@pytest.mark.parametrize("x_dev, i_dev", [("cuda", "cpu"), ("cpu", "cuda")])
def test_index_tensors_on_another_device_are_refused(x_dev, i_dev):
    x = tg.zeros(2, 3, device=x_dev)
    xd, idev = x.device, tg.zeros(1, device=i_dev).device
    index = tg.tensor([[0], [1]], device=i_dev)
    with _mixed("gather", "index", xd, idev):
        tg.gather(x, 1, index)
    with _mixed("index_select", "index", xd, idev):
        x.index_select(1, tg.tensor([0], device=i_dev))
    with _mixed("scatter", "index", xd, idev):
        x.scatter(1, index, 1.0)
    with _mixed("scatter_", "index", xd, idev):
        x.scatter_(1, index, tg.ones(2, 1, device=x_dev))
    with _mixed("scatter_add", "index", xd, idev):
        x.scatter_add(1, index, tg.ones(2, 1, device=x_dev))
    with _mixed("scatter", "src", xd, idev):
        x.scatter(1, index.to(x_dev), tg.ones(2, 1, device=i_dev))
    with _mixed("embedding", "index", xd, idev):
        F.embedding(tg.tensor([0, 1], device=i_dev), x)
    with _mixed("cross_entropy", "target", xd, idev):
        F.cross_entropy(x, tg.tensor([0, 1], device=i_dev))
    with _mixed("nll_loss", "target", xd, idev):
        F.nll_loss(x, tg.tensor([0, 1], device=i_dev))
    with _mixed("cross_entropy", "weight", xd, idev):
        F.cross_entropy(x, tg.tensor([0, 1], device=x_dev), weight=tg.ones(3, device=i_dev))
    assert x.tolist() == [[0.0] * 3] * 2


def test_advanced_indexing_takes_cpu_indices_only_besides_its_own_device():
    # PyTorch moves a CPU index to the indexed tensor's device; any other device is refused
    x = tg.arange(3, device="cuda")
    assert x[tg.tensor([2, 0])].tolist() == [2, 0]
    x[tg.tensor([1])] = 7
    assert x.tolist() == [0, 7, 2]
    with raises(IndexError, "indices should be either on cpu or on the same device as the "
                            "indexed tensor (cpu)"):
        tg.arange(3)[tg.tensor([2, 0], device="cuda")]


# -- exception types ------------------------------------------------------------------------------

def test_out_of_range_indices_raise_pytorchs_exception_types(device):
    x = tg.zeros(2, 3, device=device)
    # the scatter/gather kernels: RuntimeError
    with raises(RuntimeError, "index 5 is out of bounds for dimension 1 with size 3"):
        x.gather(1, tg.tensor([[5], [0]], device=device))
    with raises(RuntimeError, "index -1 is out of bounds for dimension 1 with size 3"):
        x.scatter(1, tg.tensor([[-1], [0]], device=device), 1.0)
    with raises(RuntimeError, "index 3 is out of bounds for dimension 1 with size 3"):
        x.scatter_add_(1, tg.tensor([[3], [0]], device=device), tg.ones(2, 1, device=device))
    # index_select along dim 0 (and embedding, built on it): IndexError; along another dim
    # torch 2.13's CPU kernel's RuntimeError
    with raises(IndexError, "index out of range in self"):
        x.index_select(0, tg.tensor([3], device=device))
    with raises(RuntimeError, "INDICES element is out of DATA bounds, id=3 axis_dim=3"):
        x.index_select(1, tg.tensor([3], device=device))
    with raises(IndexError, "index out of range in self"):
        F.embedding(tg.tensor([1, 2], device=device), x)
    with raises(IndexError, "Target 3 is out of bounds."):
        F.cross_entropy(x, tg.tensor([0, 3], device=device))
    assert x.tolist() == [[0.0] * 3] * 2


def test_cat_of_nothing_is_a_value_error(device):
    with raises(ValueError, "torch.cat(): expected a non-empty list of Tensors"):
        tg.cat([])
    with raises(ValueError, "torch.cat(): expected a non-empty list of Tensors"):
        tg.cat(())


@pytest.mark.parametrize("data, exc, msg", [
    ([[1, 2], [3]], ValueError, "expected sequence of length 2 at dim 1 (got 1)"),
    ([[1, 2], [3, 4], [5, 6, 7]], ValueError, "expected sequence of length 2 at dim 1 (got 3)"),
    ([[[1], [2]], [[3]]], ValueError, "expected sequence of length 2 at dim 1 (got 1)"),
    ([[], [1]], ValueError, "expected sequence of length 0 at dim 1 (got 1)"),
    ("abc", TypeError, "new(): invalid data type 'str'"),
    ([1.0, "a"], TypeError, "new(): invalid data type 'str'"),
    ([[1, 2], ["a", 3]], TypeError, "new(): invalid data type 'str'"),
    (None, RuntimeError, "Could not infer dtype of NoneType"),
    ([1, None], RuntimeError, "Could not infer dtype of NoneType"),
    ([{}], RuntimeError, "Could not infer dtype of dict"),
    ([2 ** 63], ValueError, "Overflow when unpacking long long"),
])
def test_tensor_refuses_ragged_and_non_numeric_data(data, exc, msg, device):
    with raises(exc, msg):
        tg.tensor(data, device=device)


def test_cross_entropy_reads_the_target_kind_from_its_shape(device):
    # PyTorch: the target's shape decides (the input's shape: class probabilities); float
    # class indices are then refused by nll_loss, which takes Long or Byte ones
    x = tg.zeros(2, 3, device=device)
    with raises(RuntimeError, "expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, tg.tensor([1.0, 2.0], device=device))
    with raises(RuntimeError, "expected target dtype to be Long or Byte, but got Double"):
        F.cross_entropy(x, tg.tensor([1.0, 2.0], dtype=tg.float64, device=device))
    with raises(RuntimeError, "expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, tg.tensor([1.0, 2.0], device=device), label_smoothing=0.1)
    with raises(RuntimeError, "expected target dtype to be Long or Byte, but got Bool"):
        F.nll_loss(x, tg.tensor([True, False], device=device))
    with raises(RuntimeError, "Expected floating point type for target with class "
                              "probabilities, got Long"):
        F.cross_entropy(x, tg.zeros(2, 3, dtype=tg.int64, device=device))
    probs = tg.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], device=device)
    assert F.cross_entropy(x, probs).item() == pytest.approx(1.0986123, rel=1e-6)
