"""The CUDA host path's shortcuts of session 31, each against the long way it replaces:

- ``memory.new_array`` (Note [result arrays]) makes the Storage and DeviceArray that
  ``DeviceArray(Storage(...))`` makes: the same fields, allocator, stream and block accounting;
- add, sub, mul and div send two floating tensors of one dtype and device straight to
  ``apply`` (Note [Scalar operand fast path]): the same values, node, gradients and errors as
  the general path, which every other pair of operands still takes;
- ``no_grad`` and ``enable_grad`` enter and exit without ``__init__`` or ``set_mode`` (Note
  [Grad mode blocks]): the modes they restore, also when inference mode changed inside.
"""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd.ops import elementwise as ew
from tritongrad.autograd.state import anywhere, state
from tritongrad.runtime import memory
from tritongrad.runtime.array import DeviceArray
from tritongrad.runtime.memory import Storage, new_array


# -- memory.new_array ---------------------------------------------------------------------------

def _fields(array: DeviceArray) -> dict:
    st = array.storage
    return {"offset": array.offset, "shape": array.shape, "strides": array.strides,
            "dtype": array.dtype, "device": array.device, "storage.device": st.device,
            "nbytes": st.nbytes, "stream": st.stream, "allocator": st._allocator,
            "block.size": st._block.size, "block.requested": st._block.requested,
            "block.stream": st._block.stream, "ptr is the block's": st.ptr == st._block.ptr}


def _cuda0():
    tg.zeros(1, device="cuda")  # (the device's allocator exists: new_array's fast path)
    return tg.device("cuda", 0)


@pytest.mark.parametrize("shape, strides, dtype", [
    ((16, 16), (16, 1), tg.float32), ((7,), (1,), tg.float16), ((3, 1, 5), (5, 5, 1), tg.int64),
    ((0, 4), (4, 1), tg.float32)])
def test_new_array_makes_what_the_two_constructors_make(shape, strides, dtype):
    dev = _cuda0()
    nbytes = int(np.prod(shape)) * dtype.itemsize
    for stream in (None, tg.cuda.Stream()):
        with tg.cuda.stream(stream) if stream is not None else _nothing():
            old = DeviceArray(Storage(nbytes, dev), 0, shape, strides, dtype)
            new = new_array(nbytes, dev, shape, strides, dtype)
        assert type(new) is DeviceArray and type(new.storage) is Storage
        assert _fields(new) == _fields(old)
        want = 0 if stream is None else stream.cuda_stream
        assert new.storage.stream == want and new.storage._block.stream == want
        assert new.storage.ptr != old.storage.ptr or nbytes == 0


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_new_array_gives_its_block_back_and_record_stream_holds_it():
    dev = _cuda0()
    base = memory.memory_allocated(0)
    a = new_array(4096, dev, (1024,), (1,), tg.float32)
    assert memory.memory_allocated(0) == base + 4096
    side = tg.cuda.Stream()
    a.storage.record_stream(side)  # the storage's own methods work on it
    assert a.storage._block.stream_uses == {side.cuda_stream}
    del a
    tg.cuda.synchronize()
    assert memory.memory_allocated(0) == base


def test_new_array_on_a_device_without_an_index_takes_storages_checks():
    _cuda0()
    a = new_array(64, tg.device("cuda"), (16,), (1,), tg.float32)  # index None: Storage's path
    assert a.device == tg.device("cuda", 0) and a.storage.device == tg.device("cuda", 0)
    with pytest.raises(Exception):  # noqa: B017 - Storage's own error for a bad device
        new_array(64, tg.device("cuda", 99), (16,), (1,), tg.float32)


def test_an_ops_result_is_a_new_array_on_the_current_stream():
    x = tg.ones(4, 4, device="cuda")
    side = tg.cuda.Stream()
    for _ in range(2):  # the first call plans, the second takes the op plan
        with tg.cuda.stream(side):
            y, z = x * x, x.exp()
        assert y._data.storage.stream == side.cuda_stream == z._data.storage.stream
    np.testing.assert_array_equal(y.cpu().numpy(), np.ones((4, 4), np.float32))
    np.testing.assert_allclose(z.cpu().numpy(), np.full((4, 4), np.e, np.float32), rtol=1e-6)


# -- the tensor-pair fast path of add, sub, mul and div -----------------------------------------

_OPS = {"add": (np.add, "AddBackward0"), "sub": (np.subtract, "SubBackward0"),
        "mul": (np.multiply, "MulBackward0"), "div": (np.divide, "DivBackward0")}


def _general(op, a, b):
    """What the op did before the fast path: binary_operands, apply, _result."""
    node = {"add": ew.AddBackward0, "sub": ew.SubBackward0, "mul": ew.MulBackward0,
            "div": ew.DivBackward0}[op]
    x, y = ew.binary_operands(a, b, op)
    r = ew.apply(node, (x, y), 1) if op in ("add", "sub") else ew.apply(node, (x, y))
    return ew._result(r, None, op)


@pytest.mark.parametrize("op", list(_OPS))
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.float16])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((1, 4), (3, 1))])
def test_tensor_pair_fast_path_matches_the_general_path(device, op, dtype, shapes):
    rng = np.random.default_rng(31)
    a0, b0 = (rng.uniform(0.5, 2, s) for s in shapes)
    a = tg.tensor(a0, dtype=dtype, device=device, requires_grad=True)
    b = tg.tensor(b0, dtype=dtype, device=device, requires_grad=True)
    fn, node = _OPS[op]
    y = getattr(tg, op)(a, b)
    z = _general(op, a, b)
    assert y.dtype == z.dtype == dtype and type(y.grad_fn) is type(z.grad_fn)
    assert type(y.grad_fn).__name__ == node
    ref = fn(a.detach().double().cpu().numpy(), b.detach().double().cpu().numpy())
    tol = 2e-3 if dtype is tg.float16 else 1e-6
    np.testing.assert_allclose(y.detach().double().cpu().numpy(), ref, rtol=tol)
    np.testing.assert_array_equal(y.detach().double().cpu().numpy(),
                                  z.detach().double().cpu().numpy())
    gy = tg.autograd.grad(y.sum(), (a, b))
    gz = tg.autograd.grad(z.sum(), (a, b))
    for u, v, s in zip(gy, gz, shapes):
        assert tuple(u.shape) == s  # broadcasting undone, as on the general path
        np.testing.assert_array_equal(u.double().cpu().numpy(), v.double().cpu().numpy())


@pytest.mark.parametrize("op", list(_OPS))
def test_tensor_pair_fast_path_keeps_the_broadcast_error(op):
    a, b = tg.ones(3, 4), tg.ones(5)
    with pytest.raises(RuntimeError) as fast:
        getattr(tg, op)(a, b)
    with pytest.raises(RuntimeError) as general:
        ew.binary_operands(a, b, op)
    assert str(fast.value) == str(general.value)
    assert "The size of tensor a (4) must match the size of tensor b (5)" in str(fast.value)


def test_pairs_the_fast_path_does_not_take_still_promote_and_refuse():
    f32, f64 = tg.ones(2, dtype=tg.float32), tg.ones(2, dtype=tg.float64)
    i64, b8 = tg.tensor([3, 4]), tg.tensor([True, False])
    assert (f32 * f64).dtype == tg.float64 and (f64 - f32).dtype == tg.float64
    assert (i64 / i64).dtype == tg.float32  # true division of integers: the default dtype
    np.testing.assert_allclose((i64 / tg.tensor([2, 8])).numpy(), [1.5, 0.5])
    assert (i64 + i64).dtype == tg.int64 and (b8 + b8).dtype == tg.bool
    assert (b8 * b8).numpy().tolist() == [True, False]
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        b8 - b8
    assert (f32 + tg.tensor(2.0, dtype=tg.float64)).dtype == tg.float32  # a 0-d tensor is weak
    np.testing.assert_allclose(tg.add(f32, f32, alpha=3).numpy(), [4.0, 4.0])
    np.testing.assert_allclose(tg.sub(f32, f32, alpha=0.5).numpy(), [0.5, 0.5])
    out = tg.empty(2)
    tg.div(f32, f32 * 4, out=out)
    np.testing.assert_allclose(out.numpy(), [0.25, 0.25])
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        tg.mul(f32.requires_grad_(), f32, out=tg.empty(2))
    c = tg.tensor([1 + 1j], dtype=tg.complex64)
    assert (c * c).dtype == tg.complex64  # complex: the general path


@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_and_sub_keep_alpha_as_the_general_path_does(op):
    x, w = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    for alpha in (1, 1.0, np.float64(1.0), np.int64(1)):
        saved = getattr(tg, op)(x, w, alpha=alpha).grad_fn._saved_alpha
        want = ew.python_number(alpha)  # a Python number, as the general path keeps it
        assert saved == want and type(saved) is type(want), alpha
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        getattr(tg, op)(x, w, alpha=True)  # (PyTorch's alpha check, float results)


def test_a_parameter_takes_the_fast_path_as_a_tensor():
    p = tg.nn.Parameter(tg.ones(2, 3))
    x = tg.full((2, 3), 2.0)
    for op, (fn, node) in _OPS.items():
        y = getattr(tg, op)(x, p)
        assert type(y) is tg.Tensor and type(y.grad_fn).__name__ == node
        np.testing.assert_allclose(y.detach().numpy(), fn(np.full((2, 3), 2.0), 1.0))


# -- no_grad and enable_grad ----------------------------------------------------------------------

def test_grad_mode_blocks_restore_the_mode_they_found():
    assert tg.is_grad_enabled()
    with tg.no_grad() as v:
        assert v is None and not tg.is_grad_enabled()
        with tg.enable_grad() as u:
            assert u is None and tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
        tg.set_grad_enabled(True)  # the function form, undone by the block's exit
    assert tg.is_grad_enabled()
    with pytest.raises(ValueError), tg.no_grad():
        raise ValueError
    assert tg.is_grad_enabled()


def test_a_grad_mode_block_restores_inference_mode_changed_inside():
    count = anywhere.inference
    with tg.no_grad():
        inner = tg.inference_mode()
        inner.__enter__()  # left open (a generator suspended inside it, say)
        assert tg.is_inference_mode_enabled()
    assert not tg.is_inference_mode_enabled() and tg.is_grad_enabled()
    assert anywhere.inference == count  # set_mode's count of threads, as it was
    with tg.inference_mode():
        with tg.enable_grad():
            assert tg.is_grad_enabled() and tg.is_inference_mode_enabled()
            t = tg.ones(1)
        assert not tg.is_grad_enabled() and state.inference
    assert t.is_inference() and anywhere.inference == count


def test_grad_mode_decorators_bare_and_called():
    @tg.no_grad
    def bare(x):
        return x * 2

    @tg.no_grad()
    def called(x):
        return x * 2

    @tg.enable_grad()
    def enabled(x):
        return x * 2

    x = tg.ones(2, requires_grad=True)
    assert not bare(x).requires_grad and not called(x).requires_grad
    assert bare.__name__ == "bare"
    with tg.no_grad():
        assert enabled(x).requires_grad
    assert isinstance(tg.no_grad(), tg.no_grad) and isinstance(tg.enable_grad(), tg.enable_grad)
