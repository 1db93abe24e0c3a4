"""Parity fixes of convolution, pooling and resampling (sweep 35): channels_last layouts
kept, contiguous col2im and conv_tbc results, the transposed convolutions' empty outputs and
argument errors, PyTorch's words for pooling's argument errors, interpolate's same-size
result a new tensor, area mode to an empty size, recompute_scale_factor with a size, and the
align_corners warnings of grid_sample and affine_grid. Values against float64 NumPy
references written here; a torch comparison where torch is installed."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nn.functional as F

rng = np.random.default_rng(35)


def _t(a, requires_grad=False):
    return tg.tensor(np.asarray(a), requires_grad=requires_grad)


def _conv2d_ref(x, w, b, pad):
    """float64 direct loop of a stride-1 convolution with symmetric zero padding."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("nckl,ockl->no", x[:, :, i:i + kh, j:j + kw], w)
    return out + b[None, :, None, None]


# -- dtypes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,xs,ws", [(F.conv1d, (1, 2, 5), (3, 2, 2)),
                                      (F.conv2d, (1, 2, 5, 5), (3, 2, 2, 2)),
                                      (F.conv3d, (1, 2, 4, 4, 4), (3, 2, 2, 2, 2)),
                                      (F.conv_transpose2d, (1, 2, 4, 4), (2, 3, 2, 2)),
                                      (F.conv_transpose3d, (1, 2, 3, 3, 3), (2, 3, 2, 2, 2))])
def test_conv_refuses_mixed_input_and_weight_dtypes(fn, xs, ws):
    # PyTorch's words for a float32 input and a float64 weight, then the op's name
    with pytest.raises(RuntimeError, match=f"expected scalar type Float but found Double "
                                           f"\\({fn.__name__}: weight\\)"):
        fn(tg.zeros(xs), tg.zeros(ws, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="Input type \\(c10::Half\\) and weight type "
                                           "\\(float\\) should be the same"):
        fn(tg.zeros(xs, dtype=tg.float16), tg.zeros(ws))


def test_conv_refuses_a_bias_of_another_dtype():
    with pytest.raises(RuntimeError, match="Input type \\(float\\) and bias type \\(double\\) "
                                           "should be the same \\(conv2d\\)"):
        F.conv2d(tg.zeros(1, 2, 4, 4), tg.zeros(3, 2, 2, 2), tg.zeros(3, dtype=tg.float64))


def test_conv_float64_still_runs():
    x, w, b = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((4, 3, 3, 3)), \
        rng.standard_normal(4)
    y = F.conv2d(_t(x), _t(w), _t(b), padding=1)
    assert y.dtype is tg.float64
    np.testing.assert_allclose(y.numpy(), _conv2d_ref(x, w, b, 1), rtol=1e-10, atol=1e-10)


# -- layouts -----------------------------------------------------------------------------------

def _cl(t):
    return t.contiguous(memory_format=tg.channels_last)


def _is_cl(t):
    return not t.is_contiguous() and t.is_contiguous(memory_format=tg.channels_last)


def test_channels_last_kept_by_2d_ops():
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    xc = _cl(_t(x, requires_grad=True))
    y = F.conv2d(xc, _t(w), _t(b), padding=1)
    assert _is_cl(y)
    np.testing.assert_allclose(y.detach().numpy(), _conv2d_ref(x, w, b, 1), rtol=1e-4, atol=1e-4)
    # the layout is the op's own result's: its node is the convolution's, as PyTorch's (no
    # CloneBackward0 on top)
    assert type(y.grad_fn).__name__ == "ConvolutionBackward0"
    assert type(F.max_pool2d(xc, 2).grad_fn).__name__ == "MaxPool2DWithIndicesBackward0"
    y.sum().backward()  # gradients flow through the layout change
    assert _is_cl(F.conv2d(_t(x), _cl(_t(w))))  # a channels_last weight, as PyTorch's
    assert tuple(F.conv2d(_t(x[0]), _cl(_t(w))).shape) == (4, 4, 3)  # unbatched
    wt = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    assert _is_cl(F.conv_transpose2d(_cl(_t(x)), _t(wt), stride=2))
    for out in (F.max_pool2d(xc, 2), F.avg_pool2d(xc, 2), F.adaptive_avg_pool2d(xc, 3),
                F.adaptive_max_pool2d(xc, 3), F.interpolate(xc, scale_factor=2),
                F.interpolate(xc, scale_factor=2, mode="bilinear")):
        assert _is_cl(out)
    v, i = F.max_pool2d(xc, 2, return_indices=True)
    assert _is_cl(v) and _is_cl(i)
    np.testing.assert_array_equal(v.detach().numpy(),
                                  x[..., :4].reshape(2, 3, 3, 2, 2, 2).max((3, 5)))
    # a contiguous input stays contiguous
    assert F.conv2d(_t(x), _t(w)).is_contiguous() and F.max_pool2d(_t(x), 2).is_contiguous()


def test_col2im_results_are_contiguous():
    x = _t(rng.standard_normal((2, 3, 6, 7)).astype(np.float32))
    cols = F.unfold(x, (2, 3), stride=2, padding=1)
    y = F.fold(cols, (6, 7), (2, 3), stride=2, padding=1)
    assert y.is_contiguous()
    # fold(unfold(x)) multiplies each pixel by the number of windows holding it
    ones = F.fold(F.unfold(tg.ones(1, 1, 6, 7), (2, 3), stride=2, padding=1), (6, 7), (2, 3),
                  stride=2, padding=1)
    np.testing.assert_allclose(y.numpy(), x.numpy() * ones.numpy(), rtol=1e-6)
    z = F.conv_transpose3d(tg.ones(1, 4, 2, 3, 2), tg.ones(4, 2, 2, 2, 2), None, 1, 1, 0, 2)
    assert z.is_contiguous() and tuple(z.shape) == (1, 4, 1, 2, 1)
    np.testing.assert_allclose(z.numpy(), np.full((1, 4, 1, 2, 1), 16.0))


# -- argument errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("fn,nd", [(F.conv_transpose1d, 1), (F.conv_transpose2d, 2),
                                   (F.conv_transpose3d, 3)])
def test_conv_transpose_padding_string(fn, nd):
    x, w = tg.zeros((1, 2) + (3,) * nd), tg.zeros((2, 2) + (2,) * nd)
    with pytest.raises(TypeError, match="argument 'padding' must be tuple of ints, not str"):
        fn(x, w, padding="same")


def test_conv_transpose_empty_output_and_output_padding_errors():
    x = tg.ones(2, 3, 6, 5, requires_grad=True)
    w = tg.ones(3, 2, 2, 2, requires_grad=True)
    y = F.conv_transpose2d(x, w, padding=3)  # width (5 - 1) - 6 + 2 = 0: empty, not an error
    assert tuple(y.shape) == (2, 2, 1, 0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3, 6, 5)))
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose1d(tg.zeros(1, 3, 2), tg.zeros(3, 2, 2), padding=2)
    with pytest.raises(RuntimeError, match="negative output_padding is not supported"):
        F.conv_transpose1d(tg.zeros(1, 3, 2), tg.zeros(3, 2, 2), output_padding=-1)


def test_conv_tbc_is_contiguous():
    x, w, b = (rng.standard_normal(s) for s in ((5, 2, 3), (3, 3, 4), (4,)))
    y = F.conv_tbc(_t(x), _t(w), _t(b), 1)
    assert y.is_contiguous() and tuple(y.shape) == (5, 2, 4)
    xp = np.pad(x, ((1, 1), (0, 0), (0, 0)))
    ref = b + sum(np.einsum("tbc,co->tbo", xp[k:k + 5], w[k]) for k in range(3))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kwargs,words", [
    (dict(kernel_size=0), "kernel_size must be greater than zero, but got 0"),
    (dict(kernel_size=2, stride=0), "stride must be greater than zero, but got 0"),
    (dict(kernel_size=2, dilation=0), "dilation must be greater than zero, but got 0"),
    (dict(kernel_size=2, padding=-1), "padding must be non-negative, but got -1")])
def test_max_pool1d_argument_errors(kwargs, words):
    with pytest.raises(RuntimeError, match=f"max_pool1d\\(\\) {words}"):
        F.max_pool1d(tg.zeros(1, 2, 6), **kwargs)


@pytest.mark.parametrize("fn,x,kw,words", [
    (F.max_pool2d, (1, 1, 4, 4), dict(kernel_size=2, stride=0), "stride should not be zero"),
    (F.max_pool2d, (1, 1, 4, 4), dict(kernel_size=0), "kernel size should be greater than"),
    (F.max_pool2d, (1, 1, 4, 4), dict(kernel_size=0, stride=1),
     "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    (F.max_pool3d, (1, 1, 4, 4, 4), dict(kernel_size=2, dilation=0),
     "dilation should be greater than zero, but got dilationT: 0 dilationH: 0 dilationW: 0"),
    (F.avg_pool2d, (1, 1, 4, 4), dict(kernel_size=2, stride=0), "stride should not be zero")])
def test_pool_argument_errors(fn, x, kw, words):
    with pytest.raises(RuntimeError, match=words):
        fn(tg.zeros(x), **kw)


# -- resampling --------------------------------------------------------------------------------

def test_interpolate_same_size_is_a_new_tensor():
    x = tg.zeros(1, 2, 3, 4, requires_grad=True)
    for mode in ("nearest", "bilinear", "bicubic"):
        y = F.interpolate(x, size=(3, 4), mode=mode)
        assert y.grad_fn is not None
        with tg.no_grad():
            y.add_(1)
        assert float(x.detach().abs().sum()) == 0.0
    y = F.interpolate(x, scale_factor=1.0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((1, 2, 3, 4)))


def test_interpolate_area_to_empty_size():
    x = _t(rng.standard_normal((1, 2, 4, 3, 5)).astype(np.float32))
    assert tuple(F.interpolate(x, scale_factor=0.3, mode="area").shape) == (1, 2, 1, 0, 1)
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        F.interpolate(x, scale_factor=0.3)


def test_interpolate_recompute_scale_factor_with_a_size():
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an "
                                         "explicit size"):
        F.interpolate(tg.zeros(1, 1, 3, 3), size=4, recompute_scale_factor=True)


def test_grid_sample_and_affine_grid_warnings():
    theta = tg.zeros(1, 2, 3)
    grid = tg.zeros(1, 2, 2, 2)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.affine_grid(theta, (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(tg.ones(1, 1, 3, 3), grid)
    with pytest.warns(UserWarning, match="unit-size grids when align_corners=True"):
        F.affine_grid(theta, (1, 1, 1, 3), align_corners=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = F.affine_grid(theta, (1, 1, 2, 2), align_corners=False)
        y = F.grid_sample(tg.ones(1, 1, 3, 3), g, align_corners=False)
    np.testing.assert_allclose(y.numpy(), np.ones((1, 1, 2, 2)))


# -- against torch -----------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    for f in (lambda m, F, x, w: F.conv_transpose2d(x, w, None, 2, 1, 1, 2),
              lambda m, F, x, w: F.conv2d(x.contiguous(memory_format=m.channels_last),
                                          w.transpose(0, 1).contiguous(), padding=1, groups=1),
              lambda m, F, x, w: F.fold(F.unfold(x, 3, padding=1, stride=2), (7, 6), 3,
                                        padding=1, stride=2)):
        a = f(torch, tF, torch.tensor(x), torch.tensor(w))
        b = f(tg, F, _t(x), _t(w))
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-4)
        assert a.is_contiguous() == b.is_contiguous()


def test_same_padding_of_an_even_kernel_warns_once():
    from tritongrad.nn import _convolution

    _convolution._WARNED["same"] = False
    x = _t(rng.standard_normal((1, 1, 5)).astype(np.float32))
    with pytest.warns(UserWarning, match="padding='same' with even kernel lengths"):
        y = F.conv1d(x, tg.ones(1, 1, 2), padding="same")
    np.testing.assert_allclose(y.numpy()[0, 0], x.numpy()[0, 0] + np.append(x.numpy()[0, 0, 1:], 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.conv1d(x, tg.ones(1, 1, 2), padding="same")  # once a process, as PyTorch's
        F.conv1d(x, tg.ones(1, 1, 3), padding="same")  # an odd kernel: symmetric, no warning
