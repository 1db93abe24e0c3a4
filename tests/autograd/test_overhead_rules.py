"""The per-op fast paths keep their semantics: attribute deletion refused through properties
(Tensor defines no ``__delattr__``, Note [No __delattr__] in autograd/tensor.py),
``is_contiguous`` from NumPy's flag, the CPU ``full`` by item assignment, ``detach`` keeping
the inference flag without a per-tensor dict."""

import numpy as np
import pytest
from tritongrad.autograd.tensor import Tensor
from tritongrad.kernels.numpy import memory
from tritongrad.runtime import dtype as dtypes

import tritongrad as tg


def test_tensor_keeps_the_generic_attribute_store():
    # a __delattr__ or __setattr__ on the class makes every attribute store ~4x slower
    assert "__delattr__" not in Tensor.__dict__ and "__setattr__" not in Tensor.__dict__
    assert Tensor.__setattr__ is object.__setattr__


@pytest.mark.parametrize("name", ["data", "requires_grad", "_grad_fn", "_backward_hooks"])
def test_pytorch_refused_deletions_still_refused(name):
    x = tg.randn(3, requires_grad=True)
    y = x * 2
    for t in (x, y):
        with pytest.raises(RuntimeError, match=f"cannot delete the Tensor attribute '{name}'"):
            delattr(t, name)
    assert x.requires_grad and x.grad_fn is None and y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))


def test_grad_deletes_and_user_attributes_delete():
    x = tg.randn(3, requires_grad=True)
    x.sum().backward()
    del x.grad
    assert x.grad is None
    x.note = "mine"  # as in PyTorch, a user's own attribute may be deleted
    del x.note
    assert not hasattr(x, "note")


def test_private_grad_fn_reads_and_writes_the_recorded_node():
    x = tg.randn(3, requires_grad=True)
    y = x * 2
    assert y._grad_fn is y.grad_fn and x._grad_fn is None
    z = x * 3
    z._grad_fn = y.grad_fn  # (views.py and function.py rewrite histories through it)
    assert z.grad_fn is y.grad_fn


def test_backward_hooks_lists_the_tensor_hooks():
    x = tg.randn(3, requires_grad=True)
    y = x * 2
    assert x._backward_hooks is None and y._backward_hooks is None
    hx = x.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: g)
    assert list(x._backward_hooks.values()) and len(y._backward_hooks) == 1
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 20.0))
    hx.remove()
    assert not x._backward_hooks


def _contiguous_by_strides(t) -> bool:
    """PyTorch's rule, written out: row-major strides, size-1 dims ignored, empty counts."""
    if 0 in t.shape:
        return True
    expected = 1
    for n, s in zip(reversed(t.shape), reversed(t.stride())):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def test_is_contiguous_matches_pytorchs_rule():
    base = tg.arange(24.0).reshape(2, 3, 4)
    cases = [base, base.transpose(0, 2), base[:, 1:2, :], base[:, :, ::2], base[1],
             base[:, 0:1, 0:1], base.reshape(24)[0:1], tg.tensor(3.0), tg.zeros(0, 3),
             tg.zeros(3, 0).t(), tg.randn(1, 4).expand(3, 4), tg.randn(4, 1).expand(4, 1),
             base.unsqueeze(1), base.permute(1, 0, 2), base[:, 1:], base[1:2]]
    for t in cases:
        assert t.is_contiguous() == _contiguous_by_strides(t), (t.shape, t.stride())
    assert not base.transpose(0, 2).is_contiguous() and not base[:, 0:1, 0:1].is_contiguous()
    assert base[1:2].is_contiguous() and tg.randn(4, 1).expand(4, 1).is_contiguous()


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.float32, dtypes.float64,
                                   dtypes.complex64, dtypes.int64, dtypes.uint8, dtypes.bool])
def test_cpu_full_matches_numpy(dtype):
    values = [0, 1, -1, 2.5, -0.0, 1e300, 2 ** 70, float("inf"), float("nan"), True]
    for value in values:
        for shape in ((), (3,), (2, 0)):
            try:
                want = np.full(shape, value, dtype=dtype.np)
            except (OverflowError, ValueError, TypeError) as e:
                with pytest.raises(type(e)):
                    memory.full(shape, value, dtype)
                continue
            got = memory.full(shape, value, dtype)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            assert np.array_equal(np.signbit(got.real), np.signbit(want.real))


def test_detach_and_data_keep_the_inference_flag():
    x = tg.randn(2)
    with tg.inference_mode():
        inner = tg.randn(2)
        assert not x.detach().is_inference() and not x.data.is_inference()
    assert inner.detach().is_inference() and inner.data.is_inference()
    d = x.detach()
    assert d.__dict__ == {}  # (nothing set beyond the slots: no dict per detached tensor)
