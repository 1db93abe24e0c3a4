"""The walking skeleton's ops on both backends: values against NumPy in float64, gradients
against central finite differences (tests/helpers.py), broadcasting by hypothesis."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match, t64

rng = np.random.default_rng(0)


UNARY = {
    "exp": (lambda x: x.exp(), np.exp, (-2, 2)),
    "relu": (lambda x: x.relu(), lambda a: np.maximum(a, 0), (-2, 2)),
    "neg": (lambda x: -x, np.negative, (-2, 2)),
    "log": (lambda x: x.log(), np.log, (0.5, 3)),
    "sqrt": (lambda x: x.sqrt(), np.sqrt, (0.5, 3)),
    "pow3": (lambda x: x ** 3, lambda a: a ** 3, (-2, 2)),
    "pow_half": (lambda x: x ** 0.5, np.sqrt, (0.5, 3)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5)])
def test_unary(name, shape, device):
    fn, ref, (lo, hi) = UNARY[name]
    x = t64(shape, device, lo, hi)
    if name == "relu":  # keep finite differences away from the kink
        x = tg.where(x.abs() < 1e-3, 0.5, x) if hasattr(x, "abs") else x
    np.testing.assert_allclose(fn(x).cpu().numpy(), ref(x.cpu().numpy()), rtol=1e-12)
    assert_grads_match(fn, [x])


BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "maximum": (tg.maximum, np.maximum),
}

BROADCASTS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
              ((), (2, 3)), ((5,), ())]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("sa,sb", BROADCASTS)
def test_binary_broadcast(name, sa, sb, device):
    fn, ref = BINARY[name]
    a = t64(sa, device, 0.5, 2)
    b = t64(sb, device, 0.5, 2)
    out = fn(a, b)
    np.testing.assert_allclose(out.cpu().numpy(), ref(a.cpu().numpy(), b.cpu().numpy()),
                               rtol=1e-12)
    assert_grads_match(fn, [a, b])


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_binary_with_python_scalar(name, device):
    fn, ref = BINARY[name]
    a = t64((3, 2), device, 0.5, 2)
    np.testing.assert_allclose(fn(a, 2.5).cpu().numpy(), ref(a.cpu().numpy(), 2.5), rtol=1e-12)
    assert_grads_match(lambda x: fn(x, 2.5), [a])
    assert_grads_match(lambda x: fn(2.5, x), [a])


@pytest.mark.parametrize("n,m,p", [(1, 1, 1), (3, 4, 5), (7, 1, 3), (2, 9, 1)])
def test_matmul_2d(n, m, p, device):
    a, b = t64((n, m), device), t64((m, p), device)
    np.testing.assert_allclose((a @ b).cpu().numpy(), a.cpu().numpy() @ b.cpu().numpy(),
                               rtol=1e-12)
    assert_grads_match(lambda x, y: x @ y, [a, b])


def test_matmul_transposed_operands(device):
    a, b = t64((4, 3), device), t64((5, 4), device)
    assert_grads_match(lambda x, y: x.t() @ y.t(), [a, b])


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), ((0, 2), False),
                                         (-1, False)])
def test_sum(dim, keepdim, device):
    x = t64((2, 3, 4), device)
    out = x.sum() if dim is None else x.sum(dim, keepdim=keepdim)
    ref = x.cpu().numpy().sum(axis=dim, keepdims=keepdim)
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-12)
    assert_grads_match(lambda v: v.sum() if dim is None else v.sum(dim, keepdim=keepdim), [x])


def test_mean(device):
    x = t64((3, 4), device)
    np.testing.assert_allclose(x.mean(1).cpu().numpy(), x.cpu().numpy().mean(1), rtol=1e-12)
    assert_grads_match(lambda v: v.mean(), [x])
    assert_grads_match(lambda v: v.mean(0, keepdim=True), [x])


@pytest.mark.parametrize("src,dst", [(tg.float32, tg.float64), (tg.float64, tg.float32),
                                     (tg.float32, tg.float16)])
def test_cast_forward_and_backward(src, dst, device):
    x = tg.tensor([[1.5, -2.25], [3.0, 0.125]], dtype=src, device=device, requires_grad=True)
    y = x.to(dst)
    assert y.dtype is dst and y.grad_fn.name() == "ToCopyBackward0"
    np.testing.assert_allclose(y.detach().cpu().numpy().astype(np.float64),
                               x.detach().cpu().numpy().astype(np.float64))
    (y * 2).sum().backward()
    assert x.grad.dtype is src
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2.0)


def test_clone_and_copy(device):
    x = t64((2, 3), device)
    assert_grads_match(lambda v: v.clone() * 3, [x])
    assert_grads_match(lambda v: v.t().contiguous(), [x])
    y = tg.zeros(3, 2, dtype=tg.float64, device=device)
    y.copy_(x.t())
    np.testing.assert_allclose(y.cpu().numpy(), x.cpu().numpy().T)


def test_views_share_storage_and_version(device):
    x = tg.zeros(2, 3, device=device)
    v = x.view(6)
    w = x.t()
    assert v._vc is x._vc and w._vc is x._vc and v._base is x and w._base is x
    v.add_(1)
    assert x._version == 1 and w._version == 1
    np.testing.assert_allclose(x.cpu().numpy(), np.ones((2, 3)))


@pytest.mark.parametrize("fn", [
    lambda v: v.view(3, 4), lambda v: v.reshape(2, 6), lambda v: v.t(),
    lambda v: v.permute(1, 0), lambda v: v[1], lambda v: v[:, 1:3], lambda v: v[None, ..., 2],
    lambda v: v.unsqueeze(1).expand(4, 5, 3), lambda v: v.flatten(), lambda v: v[::2, 1:],
])
def test_view_ops_gradients(fn, device):
    x = t64((4, 3), device)
    assert_grads_match(fn, [x])


def test_cpu_cuda_roundtrip_is_differentiable():
    x = tg.rand(10, requires_grad=True)
    y = x.cuda()
    assert not y.is_leaf and y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_broadcast_property(data):
    """Random broadcastable shape pairs: mul-add chains match NumPy, and their gradients
    match finite differences (CPU, float64)."""
    nd = data.draw(st.integers(0, 3))
    base = data.draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd))
    def sub_shape():
        k = data.draw(st.integers(0, nd))
        return tuple(1 if data.draw(st.booleans()) else n for n in base[nd - k:])
    sa, sb = sub_shape(), sub_shape()
    a, b = t64(sa, "cpu"), t64(sb, "cpu")

    def fn(x, y):
        return (x * y + x).exp() - y

    np.testing.assert_allclose(fn(a, b).numpy(),
                               np.exp(a.numpy() * b.numpy() + a.numpy()) - b.numpy(),
                               rtol=1e-12)
    assert_grads_match(fn, [a, b], atol=1e-5)


def test_mismatched_shapes_error_names_sizes(device):
    a, b = tg.ones(3, 4, device=device), tg.ones(5, device=device)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(4\) must match the size of "
                                           r"tensor b \(5\)"):
        a + b
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(3x4 and 5x1\)"):
        a @ tg.ones(5, 1, device=device)


def test_mixed_devices_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        tg.ones(3) + tg.ones(3, device="cuda")


def test_tensor_from_python_floats_converts_straight_to_the_requested_dtype(device):
    # float64 data must not pass through the default float32 on its way in
    t = tg.tensor([0.3, -1.2], dtype=tg.float64, device=device)
    assert t.cpu().numpy().tolist() == [0.3, -1.2]
    assert tg.tensor(0.1, dtype=tg.float64).item() == 0.1
    assert tg.tensor([0.1]).dtype is tg.float32  # no dtype: the default


def test_half_tensor_repr_does_not_warn():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "float16" in repr(tg.tensor([0.3, 6.0e4], dtype=tg.float16))
