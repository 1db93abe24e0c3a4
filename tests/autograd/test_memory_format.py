"""Memory formats (channels_last, channels_last_3d, preserve_format) and the default gradient
layouts: strides against hand-computed ones, values kept, PyTorch's errors, both backends."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn

NCHW = (2, 3, 4, 5)
NHWC_STRIDES = (60, 1, 15, 3)          # C innermost, then W, H, N
NCDHW = (2, 3, 4, 5, 6)
NDHWC_STRIDES = (360, 1, 90, 18, 3)    # C innermost, then W, H, D, N


def _ramp(shape, device, dtype=tg.float32):
    n = int(np.prod(shape))
    return tg.arange(float(n), device=device, dtype=dtype).reshape(*shape)


def _values(t):
    return t.detach().cpu().numpy()


# -- laying a tensor out -----------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda x, f: x.to(memory_format=f),
    lambda x, f: x.contiguous(memory_format=f),
    lambda x, f: x.clone(memory_format=f),
    lambda x, f: x.to(tg.float64, memory_format=f),
], ids=["to", "contiguous", "clone", "to_dtype"])
@pytest.mark.parametrize("shape, fmt, strides", [
    (NCHW, tg.channels_last, NHWC_STRIDES), (NCDHW, tg.channels_last_3d, NDHWC_STRIDES)])
def test_channels_last_strides_and_values(device, make, shape, fmt, strides):
    x = _ramp(shape, device)
    y = make(x, fmt)
    assert y.stride() == strides and tuple(y.shape) == shape
    assert y.is_contiguous(memory_format=fmt) and not y.is_contiguous()
    np.testing.assert_array_equal(_values(y), _values(x))
    back = y.contiguous()
    assert back.stride() == x.stride()
    np.testing.assert_array_equal(_values(back), _values(x))


@pytest.mark.parametrize("make", [
    lambda t, f: tg.empty_like(t, memory_format=f),
    lambda t, f: tg.zeros_like(t, memory_format=f),
    lambda t, f: tg.ones_like(t, memory_format=f),
    lambda t, f: tg.full_like(t, 2.5, memory_format=f),
    lambda t, f: tg.rand_like(t, memory_format=f),
    lambda t, f: tg.randn_like(t, memory_format=f),
], ids=["empty", "zeros", "ones", "full", "rand", "randn"])
def test_like_factories_lay_out_and_preserve(device, make):
    x = _ramp(NCHW, device)
    cl = x.to(memory_format=tg.channels_last)
    assert make(x, tg.channels_last).stride() == NHWC_STRIDES
    assert make(cl, None).stride() == NHWC_STRIDES                  # preserve, the default
    assert make(cl, tg.preserve_format).stride() == NHWC_STRIDES
    assert make(cl, tg.contiguous_format).stride() == (60, 20, 5, 1)
    assert make(x, None).stride() == (60, 20, 5, 1)
    t = _ramp((4, 6), device).t()
    assert make(t, None).stride() == (1, 6)                         # a dense transpose is kept
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        make(t, tg.channels_last)


def test_like_factories_fill_the_laid_out_tensor(device):
    cl = _ramp(NCHW, device).to(memory_format=tg.channels_last)
    for t, want in ((tg.zeros_like(cl), 0.0), (tg.ones_like(cl), 1.0),
                    (tg.full_like(cl, 2.5), 2.5)):
        assert t.stride() == NHWC_STRIDES
        np.testing.assert_array_equal(_values(t), np.full(NCHW, want, np.float32))
    r = tg.rand_like(cl, requires_grad=True)
    assert r.requires_grad and r.is_leaf and r.dtype is tg.float32
    assert 0.0 <= float(r.min()) and float(r.max()) < 1.0


def test_empty_memory_format(device):
    assert tg.empty(*NCHW, device=device, memory_format=tg.channels_last).stride() == \
        NHWC_STRIDES
    assert tg.empty(NCDHW, device=device, memory_format=tg.channels_last_3d).stride() == \
        NDHWC_STRIDES
    t = tg.empty(*NCHW, device=device, memory_format=tg.channels_last, requires_grad=True)
    assert t.requires_grad and t.device.type == device
    assert tg.empty(*NCHW, memory_format=tg.contiguous_format).stride() == (60, 20, 5, 1)
    # size-1 dimensions take the stride PyTorch's formula gives them
    assert tg.empty(2, 1, 1, 5, memory_format=tg.channels_last).stride() == (5, 1, 5, 1)


# -- preserve_format ---------------------------------------------------------------------------

def test_clone_preserves_dense_layouts_and_densifies_others(device):
    t = _ramp((4, 6), device).t()                    # (6, 4) strides (1, 6): dense
    c = t.clone()
    assert c.stride() == (1, 6)
    np.testing.assert_array_equal(_values(c), _values(t))
    s = t[::2]                                       # (3, 4) strides (2, 6): not dense
    c = s.clone()
    assert c.stride() == (1, 3)                      # dense, in the same dimension order
    np.testing.assert_array_equal(_values(c), _values(s))
    e = _ramp((3, 1), device).expand(3, 4)           # stride 0: row-major
    assert e.clone().stride() == (4, 1)
    assert t.clone(memory_format=tg.contiguous_format).stride() == (4, 1)
    assert t.contiguous().stride() == (4, 1)
    assert t.to(tg.float64).stride() == (1, 6)       # to() preserves too
    assert s.to(tg.float64).stride() == (1, 3)


def test_clone_keeps_size_one_strides_of_a_dense_tensor(device):
    x = _ramp((2, 1, 3), device).as_strided((2, 1, 3), (3, 1, 1))
    assert x.clone().stride() == (3, 1, 1)


def test_to_returns_self_when_the_format_is_the_suggested_one(device):
    x = _ramp(NCHW, device)
    cl = x.to(memory_format=tg.channels_last)
    assert cl.to(memory_format=tg.channels_last) is cl
    assert cl.to(memory_format=tg.preserve_format) is cl
    assert x.to(memory_format=tg.contiguous_format) is x
    assert x.contiguous(memory_format=tg.contiguous_format) is x
    assert cl.contiguous(memory_format=tg.channels_last) is cl
    # PyTorch compares with the *suggested* format: a transpose suggests contiguous_format,
    # so to(memory_format=contiguous_format) keeps it as it is (contiguous() copies)
    t = _ramp((4, 6), device).t()
    assert t.to(memory_format=tg.contiguous_format) is t
    assert x.to(memory_format=tg.channels_last, copy=True).stride() == NHWC_STRIDES


def test_moving_between_devices_keeps_the_layout(device):
    other = "cpu" if device == "cuda" else "cuda"
    cl = _ramp(NCHW, device).to(memory_format=tg.channels_last)
    moved = cl.to(other)
    assert moved.device.type == other and moved.stride() == NHWC_STRIDES
    np.testing.assert_array_equal(_values(moved), _values(cl))
    x = _ramp(NCHW, device)
    y = x.to(other, tg.float64, memory_format=tg.channels_last)
    assert y.stride() == NHWC_STRIDES and y.dtype is tg.float64
    np.testing.assert_array_equal(_values(y), _values(x))


# -- is_contiguous(memory_format=) ---------------------------------------------------------------

def test_is_contiguous_answers(device):
    x = _ramp(NCHW, device)
    assert x.is_contiguous(memory_format=tg.contiguous_format)
    assert x.is_contiguous(memory_format=tg.preserve_format)     # asks for row-major
    assert not x.is_contiguous(memory_format=tg.channels_last)
    assert not x.is_contiguous(memory_format=tg.channels_last_3d)  # another rank: False
    assert not _ramp((3, 4), device).is_contiguous(memory_format=tg.channels_last)
    # a tensor whose only non-1 dimension is N is contiguous in both formats
    n111 = _ramp((2, 1, 1, 1), device)
    assert n111.is_contiguous(memory_format=tg.channels_last) and n111.is_contiguous()
    nhwc = _ramp((2, 4, 5, 3), device).permute(0, 3, 1, 2)   # NHWC memory seen as NCHW
    assert nhwc.stride() == NHWC_STRIDES
    assert nhwc.is_contiguous(memory_format=tg.channels_last) and not nhwc.is_contiguous()


# -- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: x.contiguous(memory_format=tg.channels_last),
    lambda x: x.to(memory_format=tg.channels_last),
    lambda x: x.clone(memory_format=tg.channels_last),
    lambda x: tg.empty(3, 4, memory_format=tg.channels_last),
    lambda x: tg.empty_like(x, memory_format=tg.channels_last),
])
def test_channels_last_needs_rank_4(device, call):
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        call(_ramp((3, 4), device))


def test_channels_last_3d_needs_rank_5(device):
    with pytest.raises(RuntimeError,
                       match="required rank 5 tensor to use channels_last_3d format"):
        _ramp(NCHW, device).contiguous(memory_format=tg.channels_last_3d)


def test_preserve_format_refusals(device):
    t = _ramp((4, 6), device).t()
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the "
                                           "contiguous operator"):
        t.contiguous(memory_format=tg.preserve_format)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        tg.empty(2, 3, device=device, memory_format=tg.preserve_format)


@pytest.mark.parametrize("call", [
    lambda x: x.contiguous(memory_format="channels_last"),
    lambda x: x.is_contiguous(memory_format=1),
    lambda x: x.to(memory_format="channels_last"),
    lambda x: tg.empty(2, memory_format="channels_last"),
    lambda x: tg.zeros_like(x, memory_format="channels_last"),
])
def test_memory_format_must_be_a_memory_format(call):
    with pytest.raises(TypeError, match="'memory_format' must be memory_format"):
        call(tg.ones(2, 3, 4, 5))


def test_resize_to_channels_last():
    t = tg.ones(2, 3, 4, 5)
    t.resize_(2, 3, 4, 5, memory_format=tg.channels_last)
    assert t.stride() == (60, 1, 15, 3) and t._version == 0  # (same shape: restrided only)
    t.resize_(1, 2, 2, 2, memory_format=tg.channels_last)
    assert t.stride() == (8, 1, 4, 2) and t._version == 1


# -- the default gradient layouts ----------------------------------------------------------------

@pytest.mark.parametrize("fmt_a", [tg.contiguous_format, tg.channels_last])
@pytest.mark.parametrize("fmt_b", [tg.contiguous_format, tg.channels_last])
def test_dense_leaf_gradient_takes_the_leaf_layout(device, fmt_a, fmt_b):
    a = _ramp(NCHW, device).to(memory_format=fmt_a).requires_grad_()
    b = (_ramp(NCHW, device) * 0.5).to(memory_format=fmt_b).requires_grad_()
    a.sum().backward()                               # a broadcast (stride 0) gradient
    assert a.grad.stride() == a.stride()
    np.testing.assert_array_equal(_values(a.grad), np.ones(NCHW, np.float32))
    a.grad = None
    (a * b).sum().backward()                         # the other operand's layout
    assert a.grad.stride() == a.stride() and b.grad.stride() == b.stride()
    np.testing.assert_array_equal(_values(a.grad), _values(b))
    np.testing.assert_array_equal(_values(b.grad), _values(a))
    (a * b).sum().backward()                         # accumulated in place: layout kept
    assert a.grad.stride() == a.stride()
    np.testing.assert_array_equal(_values(a.grad), 2 * _values(b))


def test_non_dense_leaf_gradient_is_row_major(device):
    c = tg.empty_strided((2, 2), (4, 2), device=device).copy_(tg.ones(2, 2, device=device))
    c.requires_grad_()
    c.sum().backward()
    assert c.grad.stride() == (2, 1)
    c.grad = None
    (c * tg.full((2, 2), 3.0, device=device)).sum().backward()
    assert c.grad.stride() == (2, 1)
    np.testing.assert_array_equal(_values(c.grad), np.full((2, 2), 3.0, np.float32))


def test_gradient_flows_through_layout_copies(device):
    x = _ramp(NCHW, device).requires_grad_()         # a row-major leaf
    w = _ramp(NCHW, device) * 0.25
    y = x.to(memory_format=tg.channels_last)
    z = y.clone().contiguous(memory_format=tg.channels_last)
    (z * w).sum().backward()
    assert y.grad_fn.name() == "ToCopyBackward0"
    assert x.grad.stride() == (60, 20, 5, 1)
    np.testing.assert_array_equal(_values(x.grad), _values(w))


def test_advanced_index_with_a_channels_last_index(device):
    shape = (2, 8, 1, 2)
    i = tg.tensor([[[[0, 1]]]], device=device).expand(*shape).contiguous(
        memory_format=tg.channels_last) % 2
    x = _ramp(shape, device).requires_grad_()
    x[i].sum().backward()
    counts = np.bincount(_values(i).ravel(), minlength=shape[0])
    want = np.zeros(shape, np.float32)
    want[0], want[1] = counts[0] * 1.0, counts[1] * 1.0
    np.testing.assert_array_equal(_values(x.grad), want)


# -- nn.Module.to(memory_format=) ----------------------------------------------------------------

def test_module_to_channels_last(device):
    tg.manual_seed(0)
    conv, lin = nn.Conv2d(3, 4, 3), nn.Linear(3, 4)
    model = nn.Sequential(conv, lin).to(device)
    x = tg.randn(2, 3, 5, 5, device=device)
    before = _values(conv(x))
    weight, lin_weight = conv.weight, lin.weight
    assert model.to(memory_format=tg.channels_last) is model
    assert conv.weight is weight and isinstance(conv.weight, nn.Parameter)
    assert conv.weight.stride() == (27, 1, 9, 3)     # (4, 3, 3, 3) laid out NHWC
    assert lin.weight is lin_weight and lin.weight.stride() == (3, 1)  # 2-D: untouched
    np.testing.assert_allclose(_values(conv(x)), before, rtol=1e-5, atol=1e-5)
    conv(x).sum().backward()
    assert conv.weight.grad.stride() == (27, 1, 9, 3)
    nn.Linear(3, 4).to(memory_format=tg.channels_last_3d)  # no 5-D tensor: nothing to do
    with pytest.raises(RuntimeError, match="required rank 5 tensor"):
        nn.Conv2d(3, 4, 3).to(memory_format=tg.channels_last_3d)


def test_layout_contract_ignores_size_one_strides(device):
    from tritongrad.autograd.engine import _obeys_layout
    var = _ramp((2, 1, 3), device).as_strided((2, 1, 3), (3, 1, 1))  # dense, odd size-1 stride
    assert _obeys_layout(_ramp((2, 1, 3), device), var)     # (3, 3, 1): PyTorch adopts it
    zero = _ramp((2, 1, 3), device).as_strided((2, 1, 3), (3, 0, 1))
    assert not _obeys_layout(zero, var)                      # stride 0 marks a view: copied
    assert not _obeys_layout(_ramp((3, 1, 2), device).permute(2, 1, 0), var)
    var.requires_grad_()
    (var * 2).sum().backward()
    g = var.grad
    assert (g.stride(0), g.stride(2)) == (3, 1) and g.stride(1) != 0
    np.testing.assert_array_equal(_values(g), np.full((2, 1, 3), 2.0, np.float32))
