"""Interop (autograd/ops/interop.py): DLPack for CPU tensors through NumPy (shared memory, both
directions), __dlpack_device__, __cuda_array_interface__ on CUDA tensors, and the documented
errors."""

import numpy as np
import pytest

import tritongrad as tg


def test_numpy_consumes_cpu_tensor_without_copy():
    t = tg.arange(6, dtype=tg.float32).reshape(2, 3)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, [[0, 1, 2], [3, 4, 5]])
    t[0, 0] = 42.0
    assert a[0, 0] == 42.0  # the same memory
    nc = t.t()
    np.testing.assert_array_equal(np.from_dlpack(nc), t.numpy().T)


def test_from_dlpack_shares_memory_with_numpy():
    a = np.arange(5, dtype=np.int64)
    t = tg.from_dlpack(a)
    assert t.dtype is tg.int64 and t.tolist() == [0, 1, 2, 3, 4]
    t[1] = 10
    assert a[1] == 10
    b = np.ones((2, 3), dtype=np.float16)[:, ::2]
    u = tg.from_dlpack(b)
    assert u.dtype is tg.float16 and tuple(u.shape) == (2, 2) and u.stride() == (3, 2)
    assert tg.from_dlpack(t) is t


def test_round_trip_through_capsule():
    t = tg.tensor([[1.5, 2.5]], dtype=tg.float64)
    cap = t.__dlpack__()
    u = tg.from_dlpack(cap)
    assert u.tolist() == [[1.5, 2.5]]
    u.mul_(2)
    assert t.tolist() == [[3.0, 5.0]]
    assert tg.from_dlpack(tg.tensor([True, False])).tolist() == [True, False]


def test_dlpack_errors():
    with pytest.raises(RuntimeError, match="require gradient"):
        tg.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="bfloat16"):
        tg.ones(2, dtype=tg.bfloat16).__dlpack__()
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        tg.from_dlpack([1, 2, 3])
    assert not hasattr(tg.ones(2), "__cuda_array_interface__")


class _FakeCudaProducer:
    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("must not be consumed")


def test_device_memory_producer_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="DLPack device type 2"):
        tg.from_dlpack(_FakeCudaProducer())


def test_cuda_array_interface(device):
    if device == "cpu":
        pytest.skip("CUDA tensors only")
    t = tg.arange(12, dtype=tg.float32, device=device).reshape(3, 4)
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (3, 4)
    assert cai["strides"] is None and cai["data"] == (t.data_ptr(), False)
    assert cai["stream"] is not None and cai["stream"] != 0
    tt = t.t()
    assert tt.__cuda_array_interface__["strides"] == (4, 16)
    assert t.__dlpack_device__() == (2, t.device.index)
    with pytest.raises(NotImplementedError, match="__dlpack__ of CUDA tensors"):
        t.__dlpack__()
    with pytest.raises(TypeError, match="no bfloat16"):
        _ = t.to(tg.bfloat16).__cuda_array_interface__
    with pytest.raises(RuntimeError, match="requires grad"):
        _ = t.detach().requires_grad_(True).__cuda_array_interface__
