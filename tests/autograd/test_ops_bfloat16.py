"""bfloat16 on the CPU (kernels/numpy/bf16.py): float32 storage whose values are always on the
bfloat16 grid. Every op rounds its float32 result once (ties to even), transfers to CUDA carry
real bfloat16 bits, and gradients of bfloat16 leaves are bfloat16."""

import numpy as np
import pytest
from tritongrad.kernels.numpy.bf16 import BF16Array, from_float32, round_

import tritongrad as tg

rng = np.random.default_rng(6)


def round_bf16(x):
    """Reference rounding: float32 -> nearest bfloat16 (ties to even), as float32 values."""
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint32) << 16
    out = r.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out)


def on_grid(a) -> bool:
    a = np.asarray(a, dtype=np.float32)
    return bool(np.all((a.view(np.uint32) & 0xFFFF) == 0) or np.all(np.isnan(a)))


def bf(values, device="cpu", **kw):
    return tg.tensor(values, dtype=tg.bfloat16, device=device, **kw)


def test_creation_rounds_to_nearest_even():
    vals = [1.0, 1.00390625, 1.01171875, 3.14159, -2.71828, 1e-40, 3e38, float("inf")]
    t = bf(vals)
    assert t.dtype is tg.bfloat16 and t.element_size() == 2
    assert type(t._data) is BF16Array
    np.testing.assert_array_equal(t.numpy(), round_bf16(np.array(vals, dtype=np.float32)))
    assert t.tolist()[1] == 1.0 and t.tolist()[2] == 1.015625  # ties to even, both ways
    assert bf([float("nan")]).isnan().item()
    for make in (lambda: tg.zeros(3, dtype=tg.bfloat16), lambda: tg.ones(2, 2, dtype=tg.bfloat16),
                 lambda: tg.full((2,), 0.3, dtype=tg.bfloat16),
                 lambda: tg.randn(5, dtype=tg.bfloat16), lambda: tg.arange(0, 1, 0.1,
                                                                          dtype=tg.bfloat16)):
        t = make()
        assert t.dtype is tg.bfloat16 and on_grid(t.numpy())
    assert "dtype=tritongrad.bfloat16" in repr(bf([1.5]))


def test_casts():
    x = tg.tensor([1.2345678, -3.3, 1000.7], dtype=tg.float64)
    b = x.bfloat16()
    assert b.dtype is tg.bfloat16 and on_grid(b.numpy())
    np.testing.assert_array_equal(b.numpy(), round_bf16(x.numpy().astype(np.float32)))
    f = b.float()
    assert f.dtype is tg.float32 and type(f._data) is np.ndarray
    np.testing.assert_array_equal(f.numpy(), b.numpy())
    assert b.to(tg.int64).tolist() == [1, -3, 1000]
    assert b.half().dtype is tg.float16 and b.double().dtype is tg.float64
    assert tg.tensor([1, 2], dtype=tg.int32).to(tg.bfloat16).tolist() == [1.0, 2.0]
    assert tg.tensor(b).dtype is tg.bfloat16  # a tensor's dtype is kept, as in PyTorch


@pytest.mark.parametrize("name", ["add", "mul", "div", "sub", "maximum"])
def test_binary_ops_round_once(name):
    a = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32) + 3
    x, y = bf(a), bf(b)
    out = getattr(tg, name)(x, y)
    assert out.dtype is tg.bfloat16
    fa, fb = x.numpy(), y.numpy()
    ref = {"add": fa + fb, "mul": fa * fb, "div": fa / fb, "sub": fa - fb,
           "maximum": np.maximum(fa, fb)}[name]
    np.testing.assert_array_equal(out.numpy(), round_bf16(ref))


def test_unary_reductions_matmul_round_once():
    a = rng.standard_normal((8, 16)).astype(np.float32)
    x = bf(a)
    f = x.numpy()
    np.testing.assert_array_equal(x.exp().numpy(), round_bf16(np.exp(f)))
    np.testing.assert_array_equal(x.tanh().numpy(), round_bf16(np.tanh(f)))
    np.testing.assert_array_equal(x.sigmoid().numpy(), round_bf16(1 / (1 + np.exp(-f))))
    s = x.sum(1)
    assert s.dtype is tg.bfloat16
    np.testing.assert_allclose(s.numpy(), round_bf16(f.sum(1)), rtol=1e-2)
    assert on_grid(s.numpy()) and on_grid(x.mean().numpy()) and on_grid(x.var().numpy())
    m = x @ x.t()
    assert m.dtype is tg.bfloat16 and on_grid(m.numpy())
    np.testing.assert_allclose(m.numpy(), round_bf16(f @ f.T), rtol=1e-6)
    sm = x.softmax(-1)
    assert on_grid(sm.numpy())
    np.testing.assert_allclose(sm.numpy().sum(-1), 1, rtol=2e-2)
    assert on_grid(x.cumsum(1).numpy()) and on_grid(x.logsumexp(1).numpy())
    assert on_grid((x // 0.3).numpy()) and on_grid((x % 0.7).numpy())
    v, i = x.max(1)
    assert v.dtype is tg.bfloat16 and i.dtype is tg.int64
    np.testing.assert_array_equal(i.numpy(), f.argmax(1))


def test_views_and_indexing_keep_bfloat16():
    x = bf(rng.standard_normal((4, 6)))
    for v in (x.t(), x[1:, ::2], x.view(24), x.reshape(3, 8), x.unsqueeze(0).expand(2, 4, 6),
              x[[0, 2]], x[x > 0], x.gather(1, tg.tensor([[0], [1], [2], [3]])),
              x.contiguous(), x.t().contiguous(), tg.cat([x, x]), tg.stack([x, x]),
              x.split(2)[1], x.repeat(2, 1), x.tril(), x.masked_fill(x > 0, 0.1),
              tg.where(x > 0, x, 0.3), x.clamp(-0.1, 0.1), x.as_strided((2, 2), (1, 2))):
        assert v.dtype is tg.bfloat16, v
        assert type(v._data) is BF16Array
        assert on_grid(v.numpy())
    x[0, 0] = 0.1
    x[[1, 2], 0] = 0.7
    x.index_put_((tg.tensor([3, 3]),), tg.tensor(0.3, dtype=tg.bfloat16), accumulate=True)
    x.copy_(x * 1.1)
    assert on_grid(x.numpy())


def test_autograd_in_bfloat16():
    x = bf(rng.standard_normal((3, 4)), requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert x.grad.dtype is tg.bfloat16 and on_grid(x.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-2)
    w = bf(rng.standard_normal((4, 2)), requires_grad=True)
    (x.detach() @ w).softmax(-1)[:, 0].sum().backward()
    assert w.grad.dtype is tg.bfloat16


def test_mixed_promotion():
    b = bf([1.5, 2.5])
    h = tg.tensor([1.0, 1.0], dtype=tg.float16)
    assert (b + h).dtype is tg.float32  # as PyTorch: bfloat16 + float16 -> float32
    assert (b + tg.tensor([1.0, 1.0])).dtype is tg.float32
    assert (b * 2).dtype is tg.bfloat16 and (b * 2.5).dtype is tg.bfloat16
    assert (b + tg.tensor([1, 2])).dtype is tg.bfloat16


def test_bits_helpers():
    a = np.array([1.0, 1.00390625, np.nan], dtype=np.float32)
    bits = from_float32(a)
    assert bits.dtype == np.uint16 and bits[0] == 0x3F80 and bits[1] == 0x3F80
    c = a.copy()
    round_(c)
    assert c[1] == 1.0 and np.isnan(c[2])


def test_cuda_transfer_roundtrip(device):
    if device == "cpu":
        pytest.skip("the transfer test runs with device=cuda")
    x = bf(rng.standard_normal(37))
    y = x.to(device)
    assert y.dtype is tg.bfloat16 and y.is_cuda
    back = y.cpu()
    assert type(back._data) is BF16Array
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    z = tg.tensor(rng.standard_normal(5), dtype=tg.bfloat16, device=device)
    assert on_grid(z.cpu().numpy())
