"""Session 37's smaller fixes: the in-place fast path (Note [Scalar operand fast path]) gives
what the general path gives; requires_grad's argument checks; pickled tensors keep their
attributes; float() of a tensor requiring grad warns only while recording;
``tg.__future__``'s conversion switches."""

import pickle
import warnings

import numpy as np
import pytest

import tritongrad as tg

OPS = ["add_", "sub_", "mul_", "div_"]


def _pair(dtype, shape=(3, 4)):
    rs = np.random.RandomState(0)
    return (tg.tensor(rs.uniform(0.5, 2, shape), dtype=dtype),
            tg.tensor(rs.uniform(0.5, 2, shape), dtype=dtype))


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.float16, tg.bfloat16])
@pytest.mark.parametrize("operand", ["tensor", "float", "int", "broadcast", "float64"])
def test_inplace_fast_path_matches_numpy(name, dtype, operand):
    a, b = _pair(dtype)
    other = {"tensor": b, "float": 1.25, "int": 3, "broadcast": b[0],
             "float64": b.double()}[operand]
    ref = getattr(np, {"add_": "add", "sub_": "subtract", "mul_": "multiply",
                       "div_": "divide"}[name])(
        a.double().numpy(), other.double().numpy() if isinstance(other, tg.Tensor) else other)
    v = a._version
    r = getattr(a, name)(other)
    assert r is a and a.dtype is dtype and a._version == v + 1
    tol = {tg.float16: 1e-3, tg.bfloat16: 1e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(a.double().numpy(), ref, rtol=tol)


def test_inplace_fast_path_records_and_refuses_as_before():
    w = tg.ones(3, requires_grad=True)
    h = w * 2.0
    h.add_(tg.full((3,), 0.5))
    h.mul_(3.0)
    assert type(h.grad_fn).__name__ == "MulBackward0"
    h.sum().backward()
    assert w.grad.tolist() == [6.0, 6.0, 6.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.add_(tg.ones(3))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.mul_(2.0)
    with pytest.raises(RuntimeError, match="more than one element of the written-to"):
        tg.zeros(1).expand(3).add_(tg.ones(3))
    v = tg.ones(4)[::2]  # (a view: written through to its base)
    v.add_(tg.ones(2))
    assert v._base.tolist() == [2.0, 1.0, 2.0, 1.0]
    with pytest.raises(TypeError, match="unexpected keyword argument 'alpha'"):
        tg.ones(2).mul_(tg.ones(2), alpha=2)


def test_requires_grad_arguments_are_bools():
    t = tg.ones(2)
    with pytest.raises(TypeError, match="argument 'requires_grad' \\(position 1\\) must be bool, "
                                        "not int"):
        t.requires_grad_(1)
    with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
        t.requires_grad = None
    assert t.requires_grad_(True).requires_grad and not t.requires_grad_(False).requires_grad
    with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
        tg.testing.make_tensor(2, dtype=tg.float32, device="cpu", requires_grad=1)


def test_pickled_tensor_keeps_its_attributes():
    t = tg.arange(3.0)
    t.tag = "x"
    r = pickle.loads(pickle.dumps(t))
    assert type(r) is tg.Tensor and r.tag == "x" and r.tolist() == [0.0, 1.0, 2.0]
    plain = pickle.loads(pickle.dumps(tg.arange(2.0)))
    assert type(plain) is tg.Tensor and not hasattr(plain, "tag")


def test_float_of_a_tensor_requiring_grad_warns_only_while_recording(monkeypatch):
    from tritongrad.autograd import tensor as tensor_module
    monkeypatch.setattr(tensor_module, "_scalar_warned", [])
    t = tg.ones(1, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tg.no_grad():
            assert float(t) == 1.0 and complex(t) == 1.0
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True"):
        float(t)


@pytest.mark.parametrize("switch", ["overwrite", "swap"])
def test_future_conversion_switches(switch):
    setter = getattr(tg.__future__, f"set_{switch}_module_params_on_conversion")
    getter = getattr(tg.__future__, f"get_{switch}_module_params_on_conversion")
    m = tg.nn.Linear(2, 2)
    w = m.weight
    m.weight.grad = tg.ones(2, 2)
    setter(True)
    try:
        assert getter() is True
        m.double()
    finally:
        setter(False)
    assert m.weight.dtype is tg.float64 and m.weight.grad.dtype is tg.float64
    # overwrite: a new Parameter object; swap: the old object, its contents swapped
    assert (m.weight is w) == (switch == "swap")
    assert isinstance(m.weight, tg.nn.Parameter)


@pytest.mark.parametrize("call", [
    lambda: tg.tensor([1]) + 2 ** 64, lambda: 2 ** 70 + tg.tensor([1]),
    lambda: tg.tensor([3]) * 2 ** 70, lambda: tg.tensor([1.0]) * 2 ** 64,
    lambda: tg.tensor([1]) == 2 ** 64, lambda: tg.tensor([1.0]).add_(2 ** 64),
    lambda: tg.tensor([3]) > 2 ** 70])
def test_python_int_operands_past_uint64_raise(call):
    # (PyTorch unpacks an int operand as an int64 or a uint64; these wrapped silently)
    with pytest.raises(OverflowError, match="int too big to convert"):
        call()


def test_python_int_operands_within_range_wrap_as_pytorch():
    with pytest.raises(OverflowError, match="can't convert negative int to unsigned"):
        tg.tensor([1.0]) * (-2 ** 63 - 1)
    assert (tg.tensor([1.0]) * -2 ** 63).item() == -2.0 ** 63
    assert (tg.tensor([1.0]) + (2 ** 64 - 1)).item() == 2.0 ** 64
    assert (tg.tensor([1], dtype=tg.uint8) + 300).tolist() == [45]  # (wraps: PyTorch's)


def test_tensor_of_python_ints_past_int64():
    for data in ([2 ** 63, 1], [2 ** 63], [-2 ** 63 - 1], 2 ** 64):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            tg.tensor(data)
    # a float beside them, or a floating dtype: every number read as a double
    assert tg.tensor([2 ** 70, 1.5]).tolist() == [float(2 ** 70), 1.5]
    assert tg.tensor([[1.5, 2], [2 ** 70, 1]]).dtype is tg.float32
    assert tg.tensor([2 ** 63], dtype=tg.float64).tolist() == [2.0 ** 63]
    assert tg.tensor([2 ** 63, 1], dtype=tg.float32).tolist() == [2.0 ** 63, 1.0]
    assert tg.tensor([2 ** 64 - 1], dtype=tg.uint64).tolist() == [2 ** 64 - 1]
    # (an empty list is float64 to NumPy too: still the default dtype's empty tensor)
    assert tg.tensor([]).dtype is tg.float32 and tg.tensor([[], []]).shape == (2, 0)
