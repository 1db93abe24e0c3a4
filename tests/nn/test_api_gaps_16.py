"""The nn API gaps filled together: the lazy convolutions and norms (nn/lazy.py), max
unpooling, LP pooling and the pools' ``*_with_indices`` names (nn/_unpool.py), fractional max
pooling (nn/_fractional_pool.py), feature alpha dropout, AdaptiveLogSoftmaxWithLoss,
SyncBatchNorm, the deprecated upsample functions, Container, RNNCellBase, skip_init and
nn.utils.convert_parameters. Forwards against float64 NumPy references, gradients by gradcheck
in float64, PyTorch's error messages."""

import math
import warnings

import numpy as np
import pytest
from tritongrad.nn import functional as F
from tritongrad.nn.parameter import UninitializedBuffer, UninitializedParameter

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn

rng = np.random.default_rng(1616)


def t64(a, device="cpu", requires_grad=False):
    return tg.tensor(a, dtype=tg.float64, device=device, requires_grad=requires_grad)


def check_grad(fn, a, device):
    """gradcheck of ``fn`` at the float64 array ``a`` on the CPU (the composites are the same
    ops on both backends); on CUDA, whose emulation makes gradcheck's many evaluations slow,
    one backward compared with the CPU's."""
    if device == "cpu":
        assert tg.autograd.gradcheck(fn, (t64(a, requires_grad=True),))
        return
    grads = []
    for dev in ("cpu", device):
        x = t64(a, dev, requires_grad=True)
        y = fn(x)
        w = t64(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)), dev)
        (y * w).sum().backward()
        grads.append(host(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-14)


# -- lazy convolutions -------------------------------------------------------------------------------

LAZY_CONVS = [(nn.LazyConv1d, nn.Conv1d, F.conv1d, (2, 4, 9), False),
              (nn.LazyConv2d, nn.Conv2d, F.conv2d, (2, 4, 6, 7), False),
              (nn.LazyConv3d, nn.Conv3d, F.conv3d, (1, 4, 4, 5, 3), False),
              (nn.LazyConvTranspose1d, nn.ConvTranspose1d, F.conv_transpose1d, (2, 4, 5), True),
              (nn.LazyConvTranspose2d, nn.ConvTranspose2d, F.conv_transpose2d, (2, 4, 3, 4),
               True),
              (nn.LazyConvTranspose3d, nn.ConvTranspose3d, F.conv_transpose3d, (1, 4, 2, 3, 2),
               True)]


@pytest.mark.parametrize("lazy_cls,cls,fn,shape,transposed", LAZY_CONVS,
                         ids=lambda v: getattr(v, "__name__", None))
def test_lazy_convolutions(device, lazy_cls, cls, fn, shape, transposed):
    m = lazy_cls(6, 3, stride=1, groups=2, device=device, dtype=tg.float64)
    nd = len(shape) - 2
    assert repr(m).startswith(f"{lazy_cls.__name__}(0, 6, kernel_size={(3,) * nd}")
    assert isinstance(m.weight, UninitializedParameter) and m.has_uninitialized_params()
    x = t64(rng.standard_normal(shape), device)
    y = m(x)
    assert type(m) is cls and m.in_channels == 4 and not m._forward_pre_hooks
    want_w = (4, 3) if transposed else (6, 2)
    assert tuple(m.weight.shape) == want_w + (3,) * nd and m.weight.device.type == device
    # initialized as the eager layer: kaiming_uniform(a=sqrt(5)) -> |w| <= 1 / sqrt(fan_in)
    fan_in = m.weight.shape[1] * 3 ** nd
    assert np.abs(host(m.weight)).max() <= 1 / math.sqrt(fan_in) + 1e-12
    assert np.abs(host(m.bias)).max() <= 1 / math.sqrt(fan_in) + 1e-12
    np.testing.assert_allclose(host(y), host(fn(x, m.weight, m.bias, groups=2)), rtol=1e-12)
    y.sum().backward()
    assert m.weight.grad.shape == m.weight.shape
    # unbatched input: the channels are dim 0
    u = lazy_cls(2, 1, bias=False)
    u(tg.randn(*shape[1:]))
    assert u.in_channels == 4 and u.bias is None


def test_lazy_conv_errors_and_state_dict():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(6, 3, groups=2)(tg.randn(1, 3, 5, 5))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           r"to LazyConv2d, but got input of size: \[5, 5\]"):
        nn.LazyConv2d(6, 3)(tg.randn(5, 5))
    src = nn.Conv1d(4, 6, 3)
    lazy = nn.LazyConv1d(6, 3)
    assert all(nn.parameter.is_lazy(v) for v in lazy.state_dict().values())
    lazy.load_state_dict(src.state_dict())  # before the first forward
    assert type(lazy) is nn.LazyConv1d and lazy.weight.shape == (6, 4, 3)
    x = tg.randn(2, 4, 8)
    np.testing.assert_array_equal(host(lazy(x)), host(src(x)))
    assert type(lazy) is nn.Conv1d and lazy.in_channels == 4
    assert repr(lazy) == repr(src)


# -- lazy norms --------------------------------------------------------------------------------------

@pytest.mark.parametrize("lazy_cls,cls,shape", [
    (nn.LazyBatchNorm1d, nn.BatchNorm1d, (5, 3)), (nn.LazyBatchNorm1d, nn.BatchNorm1d, (5, 3, 4)),
    (nn.LazyBatchNorm2d, nn.BatchNorm2d, (4, 3, 2, 3)),
    (nn.LazyBatchNorm3d, nn.BatchNorm3d, (2, 3, 2, 2, 3)),
    (nn.LazyInstanceNorm1d, nn.InstanceNorm1d, (2, 3, 7)),
    (nn.LazyInstanceNorm2d, nn.InstanceNorm2d, (2, 3, 4, 5)),
    (nn.LazyInstanceNorm3d, nn.InstanceNorm3d, (2, 3, 2, 3, 4))],
    ids=lambda v: getattr(v, "__name__", str(v)))
def test_lazy_norms(device, lazy_cls, cls, shape):
    m = lazy_cls(momentum=0.25, device=device, dtype=tg.float64)
    assert repr(m) == (f"{lazy_cls.__name__}(0, eps=1e-05, momentum=0.25, affine=True, "
                       f"bias=True, track_running_stats=True)")
    assert isinstance(m.running_mean, UninitializedBuffer)
    a = rng.standard_normal(shape) * 2 + 1
    y = m(t64(a, device))
    instance = issubclass(cls, nn.InstanceNorm1d.__mro__[1])
    # (instance norms, as PyTorch's, do not count batches)
    assert type(m) is cls and m.num_features == 3
    assert m.num_batches_tracked.item() == (0 if instance else 1)
    axes = tuple(range(2, a.ndim)) if instance else (0,) + tuple(range(2, a.ndim))
    mean, var = a.mean(axis=axes, keepdims=True), a.var(axis=axes, keepdims=True)
    np.testing.assert_allclose(host(y), (a - mean) / np.sqrt(var + 1e-5), rtol=1e-10,
                               atol=1e-12)
    n = np.prod([a.shape[i] for i in axes])
    unbiased = a.var(axis=axes, ddof=1) * 1.0
    batch_mean = mean.reshape(-1, 3).mean(0) if instance else mean.reshape(3)
    batch_var = unbiased.reshape(-1, 3).mean(0) if instance else unbiased.reshape(3)
    np.testing.assert_allclose(host(m.running_mean), 0.25 * batch_mean, rtol=1e-10)
    np.testing.assert_allclose(host(m.running_var), 0.75 + 0.25 * batch_var, rtol=1e-10)
    assert n > 1 and host(m.weight).tolist() == [1.0] * 3


def test_lazy_norm_unbatched_instance_and_state_dict():
    m = nn.LazyInstanceNorm1d()
    m(tg.randn(3, 5))  # unbatched (C, L): the channels are dim 0
    assert m.num_features == 3 and m.weight.shape == (3,)
    off = nn.LazyBatchNorm2d(affine=False, track_running_stats=False)
    off(tg.randn(2, 4, 3, 3))
    assert off.num_features == 4 and off.weight is None and off.running_mean is None
    src = nn.BatchNorm2d(4)
    src.running_mean.fill_(0.5)
    lazy = nn.LazyBatchNorm2d()
    lazy.load_state_dict(src.state_dict())
    assert type(lazy) is nn.LazyBatchNorm2d
    lazy.eval()
    x = tg.randn(2, 4, 3, 3)
    np.testing.assert_allclose(host(lazy(x)), host(src.eval()(x)), rtol=1e-6)
    assert type(lazy) is nn.BatchNorm2d and repr(lazy) == repr(src)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.LazyBatchNorm1d()(tg.randn(2, 3, 4, 5))


# -- max unpooling -----------------------------------------------------------------------------------

def ref_unpool(values, indices, out_spatial):
    lead = values.shape[:values.ndim - len(out_spatial)]
    out = np.zeros(lead + (int(np.prod(out_spatial)),))
    v, i = values.reshape(lead + (-1,)), indices.reshape(lead + (-1,))
    np.put_along_axis(out, i, v, axis=-1)
    return out.reshape(lead + tuple(out_spatial))


@pytest.mark.parametrize("nd,shape,k,s,p,output_size", [
    (1, (2, 3, 9), 3, 2, 1, None), (1, (3, 8), 2, None, 0, None),
    (2, (2, 2, 5, 7), 2, None, 0, (5, 7)), (2, (2, 6, 6), 3, 2, 1, (6, 6)),
    (3, (1, 2, 4, 5, 6), 2, None, 0, [1, 2, 4, 5, 6])], ids=str)
def test_max_unpool(device, nd, shape, k, s, p, output_size):
    pool = getattr(F, f"max_pool{nd}d_with_indices")
    unpool = getattr(F, f"max_unpool{nd}d")
    x = t64(rng.standard_normal(shape), device)
    values, indices = pool(x, k, s, p)
    ref_v, ref_i = getattr(F, f"max_pool{nd}d")(x, k, s, p, return_indices=True)
    np.testing.assert_array_equal(host(values), host(ref_v))
    np.testing.assert_array_equal(host(indices), host(ref_i))
    y = unpool(values, indices, k, s, p, output_size)
    stride = s or k
    default = tuple((n - 1) * stride - 2 * p + k for n in values.shape[-nd:])
    spatial = default if output_size is None else tuple(output_size)[-nd:]
    np.testing.assert_array_equal(host(y), ref_unpool(host(values), host(indices), spatial))
    module = getattr(nn, f"MaxUnpool{nd}d")(k, s, p)
    np.testing.assert_array_equal(host(module(values, indices, output_size)), host(y))
    if stride >= k:  # (overlapping windows repeat an index: one of its writes wins, while
        # the gradient, a gather, reaches each of them, in PyTorch's too)
        check_grad(lambda t: unpool(t, indices.to(t.device), k, s, p, output_size),
                   host(values), device)


def test_max_unpool_errors_and_repr():
    assert repr(nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    x = tg.randn(1, 1, 2, 2)
    idx = tg.tensor([[[[0, 3], [8, 15]]]])
    with pytest.raises(RuntimeError, match="elements in indices should be type int64"):
        F.max_unpool2d(x, idx.to(tg.int32), 2)
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same as that of the "
                                           "input tensor"):
        F.max_unpool2d(x, idx.reshape(1, 1, 4), 2)
    with pytest.raises(ValueError, match=r"invalid output_size \"\[7, 4\]\" \(dim 0 must be "
                                         r"between 2 and 6\)"):
        F.max_unpool2d(x, idx, 2, output_size=(7, 4))
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 "
                                         "elements, but it has a length of '3'"):
        F.max_unpool2d(x, idx, 2, output_size=(1, 4, 4))
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 16 \(output volumes "
                                           r"are of size 4x4"):
        F.max_unpool2d(x, idx + 1, 2)


def test_adaptive_max_pool_with_indices(device):
    x = t64(rng.standard_normal((2, 3, 7, 5)), device)
    v, i = F.adaptive_max_pool2d_with_indices(x, (3, 2))
    rv, ri = F.adaptive_max_pool2d(x, (3, 2), return_indices=True)
    np.testing.assert_array_equal(host(v), host(rv))
    np.testing.assert_array_equal(host(i), host(ri))
    assert F.adaptive_max_pool1d_with_indices(x[0], 2)[1].dtype is tg.int64
    assert F.adaptive_max_pool3d_with_indices(x, 2)[0].shape == (2, 2, 2, 2)
    assert F.max_pool2d_with_indices.__name__ == "max_pool2d_with_indices"


# -- LP pooling --------------------------------------------------------------------------------------

def ref_lp_pool(a, p, kernel, stride, ceil_mode):
    """(sum over each window of x^p)^(1/p); a negative sum's fractional root is NaN. A window
    clipped at the input's end (ceil_mode) counts as its mean times the full kernel size, as
    PyTorch's (an average pool times the kernel size)."""
    nd = len(kernel)
    spatial = a.shape[-nd:]
    outs = []
    for n, k, s in zip(spatial, kernel, stride):
        o = (n - k + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n:
            o -= 1
        outs.append(o)
    out = np.zeros(a.shape[:-nd] + tuple(outs))
    for pos in np.ndindex(*outs):
        sl = tuple(slice(i * s, i * s + k) for i, s, k in zip(pos, stride, kernel))
        window = a[(Ellipsis,) + sl] ** p
        flat = window.reshape(window.shape[:-nd] + (-1,))
        total = flat.mean(-1) * np.prod(kernel)
        with np.errstate(invalid="ignore"):
            out[(Ellipsis,) + pos] = np.power(total, 1 / p)
    return out


@pytest.mark.parametrize("nd,shape,p,k,s,ceil", [
    (1, (2, 3, 9), 2.0, 3, 2, False), (1, (3, 7), 1.0, 2, None, True),
    (2, (2, 2, 6, 7), 3.0, (2, 3), 2, True), (2, (2, 5, 5), 1.5, 2, 1, False),
    (3, (1, 2, 4, 5, 4), 2.0, 2, None, False)], ids=str)
def test_lp_pool(device, nd, shape, p, k, s, ceil):
    a = np.abs(rng.standard_normal(shape)) + 0.2
    fn = getattr(F, f"lp_pool{nd}d")
    y = fn(t64(a, device), p, k, s, ceil)
    kernel = (k,) * nd if isinstance(k, int) else k
    stride = kernel if s is None else (s,) * nd
    np.testing.assert_allclose(host(y), ref_lp_pool(a, p, kernel, stride, ceil), rtol=1e-11)
    m = getattr(nn, f"LPPool{nd}d")(p, k, s, ceil)
    np.testing.assert_allclose(host(m(t64(a, device))), host(y), rtol=1e-14)
    check_grad(lambda t: fn(t, p, k, s, ceil), a, device)


def test_lp_pool_repr_and_negative_windows():
    assert repr(nn.LPPool2d(2, 3)) == "LPPool2d(norm_type=2, kernel_size=3, stride=None, " \
                                      "ceil_mode=False)"
    # p = 3: the window [1, -2] sums to -7: its cube root is NaN (PyTorch's too); [3, 4] ->
    # 91^(1/3); p = 1 sums, negative ones included, the last window clipped (ceil_mode)
    y = F.lp_pool1d(tg.tensor([[[1.0, -2.0, 3.0, 4.0]]], dtype=tg.float64), 3, 2)
    np.testing.assert_allclose(host(y), [[[math.nan, 91 ** (1 / 3)]]], rtol=1e-14)
    y = F.lp_pool1d(tg.tensor([[1.0, -2.0, 3.0, 4.0, 5.0]], dtype=tg.float64), 1, 2,
                    ceil_mode=True)
    np.testing.assert_allclose(host(y), [[-1.0, 7.0, 10.0]], rtol=1e-14)


# -- fractional max pooling ------------------------------------------------------------------------

def ref_fractional(a, kernel, out, samples):
    """Loops over the windows. Along each dim (size n, output o, pool k, sample u):
    alpha = (n - k) / (o - 1), start_i = floor((i + u) alpha) - floor(u alpha) for i < o - 1,
    start_{o-1} = n - k; samples (N, C, nd) are read (W, H) in 2-D and (T, H, W) in 3-D."""
    nd = len(kernel)
    N, C = a.shape[:2]
    sizes = a.shape[2:]
    values = np.zeros((N, C) + tuple(out))
    indices = np.zeros((N, C) + tuple(out), dtype=np.int64)
    for b in range(N):
        for c in range(C):
            u = samples[b, c][::-1] if nd == 2 else samples[b, c]
            starts = []
            for d in range(nd):
                n, o, k = sizes[d], out[d], kernel[d]
                if o == 1:
                    starts.append([n - k])
                    continue
                alpha = (n - k) / (o - 1)
                st = [int(math.floor((i + u[d]) * alpha) - math.floor(u[d] * alpha))
                      for i in range(o - 1)]
                starts.append(st + [n - k])
            for pos in np.ndindex(*out):
                sl = tuple(slice(starts[d][pos[d]], starts[d][pos[d]] + kernel[d])
                           for d in range(nd))
                window = a[b, c][sl]
                j = int(np.argmax(window))
                local = np.unravel_index(j, window.shape)
                values[(b, c) + pos] = window[local]
                indices[(b, c) + pos] = np.ravel_multi_index(
                    tuple(starts[d][pos[d]] + local[d] for d in range(nd)), sizes)
    return values, indices


@pytest.mark.parametrize("nd,shape,k,out", [(2, (2, 3, 9, 8), 3, (4, 3)),
                                            (2, (1, 2, 5, 5), (2, 1), (4, 1)),
                                            (3, (1, 2, 6, 5, 7), 2, (3, 4, 2))], ids=str)
def test_fractional_max_pool(device, nd, shape, k, out):
    a = rng.standard_normal(shape)
    samples = rng.uniform(size=shape[:2] + (nd,))
    fn = getattr(F, f"fractional_max_pool{nd}d")
    v, i = fn(t64(a, device), k, output_size=out, return_indices=True,
              _random_samples=t64(samples, device))
    kernel = (k,) * nd if isinstance(k, int) else k
    rv, ri = ref_fractional(a, kernel, out, samples)
    np.testing.assert_array_equal(host(v), rv)
    np.testing.assert_array_equal(host(i), ri)
    _, j = getattr(F, f"fractional_max_pool{nd}d_with_indices")(
        t64(a, device), k, out, _random_samples=t64(samples, device))
    np.testing.assert_array_equal(host(j), ri)
    m = getattr(nn, f"FractionalMaxPool{nd}d")(k, output_size=out,
                                                 _random_samples=t64(samples, device))
    np.testing.assert_array_equal(host(m(t64(a, device))), rv)
    check_grad(lambda t: fn(t, k, output_size=out, _random_samples=t64(samples, t.device.type)),
               a, device)


def test_fractional_max_pool_ratio_random_and_errors():
    tg.manual_seed(0)
    x = tg.randn(2, 3, 10, 9)
    y = F.fractional_max_pool2d(x, 3, output_ratio=0.5)
    assert y.shape == (2, 3, 5, 4)
    assert F.fractional_max_pool3d(tg.randn(3, 8, 8, 8), 2, output_ratio=(0.5, 0.25, 0.75)
                                   ).shape == (3, 4, 2, 6)  # unbatched
    assert nn.FractionalMaxPool2d(2, output_ratio=0.5, return_indices=True)(x)[1].dtype \
        is tg.int64
    with pytest.raises(ValueError, match="fractional_max_pool2d requires specifying either an "
                                         "output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 3)
    with pytest.raises(ValueError, match="FractionalMaxPool2d requires specifying either an "
                                         "output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(3)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio may be "
                                         "specified"):
        nn.FractionalMaxPool2d(3, output_size=2, output_ratio=0.5)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
        nn.FractionalMaxPool3d(3, output_ratio=1.5)
    with pytest.raises(RuntimeError, match="too large relative to input"):
        F.fractional_max_pool2d(x, 5, output_size=(8, 2))


# -- feature alpha dropout --------------------------------------------------------------------------

def test_feature_alpha_dropout(device):
    p = 0.4
    alpha = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    a_ = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b_ = -a_ * alpha * p
    x = rng.standard_normal((8, 6, 3, 2))
    tg.manual_seed(3)
    y = host(F.feature_alpha_dropout(t64(x, device), p, training=True))
    kept = np.isclose(y, a_ * x + b_, rtol=1e-12)
    dropped = np.isclose(y, a_ * alpha + b_, rtol=1e-12)
    assert (kept | dropped).all()
    per_channel = kept.reshape(8, 6, -1)
    assert (per_channel.all(-1) | (~per_channel).all(-1)).all()  # whole channels
    assert 0 < per_channel.all(-1).mean() < 1
    np.testing.assert_array_equal(host(F.feature_alpha_dropout(t64(x, device), p)), x)  # eval
    m = nn.FeatureAlphaDropout(0.2)
    assert repr(m) == "FeatureAlphaDropout(p=0.2, inplace=False)"
    m.eval()
    assert m(t64(x)) is not None
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in "
                                           "the input"):
        F.feature_alpha_dropout(tg.randn(3), 0.5, True)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        F.feature_alpha_dropout(tg.randn(3, 2), 1.5, True)
    # statistics: zero mean, unit variance kept for standard normal input (many channels)
    tg.manual_seed(4)
    z = F.feature_alpha_dropout(tg.randn(4000, 50, 1, dtype=tg.float64), 0.3, True)
    assert abs(float(z.mean())) < 0.02 and abs(float(z.var()) - 1) < 0.03


# -- AdaptiveLogSoftmaxWithLoss -----------------------------------------------------------------------

def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def ref_asm_log_prob(m, x):
    head = x @ host(m.head.weight).T + (host(m.head.bias) if m.head.bias is not None else 0)
    hl = _log_softmax(head)
    parts = [hl[:, :m.shortlist_size]]
    for i, (i2h, h2o) in enumerate(m.tail):
        tail = _log_softmax(x @ host(i2h.weight).T @ host(h2o.weight).T)
        parts.append(tail + hl[:, m.shortlist_size + i:m.shortlist_size + i + 1])
    return np.concatenate(parts, 1)


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax(device, head_bias):
    tg.manual_seed(5)
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=head_bias,
                                      device=device, dtype=tg.float64)
    assert [tuple(s[0].weight.shape) + tuple(s[1].weight.shape) for s in m.tail] == \
        [(4, 8, 3, 4), (2, 8, 4, 2)]
    x = rng.standard_normal((6, 8))
    target = np.array([0, 3, 9, 5, 2, 7])
    full = ref_asm_log_prob(m, x)
    np.testing.assert_allclose(np.exp(full).sum(1), 1.0, rtol=1e-12)
    out = m(t64(x, device), tg.tensor(target, device=device))
    np.testing.assert_allclose(host(out.output), full[np.arange(6), target], rtol=1e-12)
    np.testing.assert_allclose(float(out.loss), -full[np.arange(6), target].mean(), rtol=1e-12)
    np.testing.assert_allclose(host(m.log_prob(t64(x, device))), full, rtol=1e-12)
    np.testing.assert_array_equal(host(m.predict(t64(x, device))), full.argmax(1))
    single = m(t64(x[1], device), tg.tensor(target[1], device=device))
    assert single.output.shape == () and abs(float(single.output) - full[1, 3]) < 1e-12
    if device == "cpu":
        tt = tg.tensor(target)
        assert tg.autograd.gradcheck(lambda t: m(t, tt).output, (t64(x, requires_grad=True),))
    out.loss.backward()
    assert all(p.grad is not None for p in m.parameters())


def test_adaptive_log_softmax_errors():
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
    for cutoffs in ([3, 3], [0, 3], [3, 10], [5, 3], []):
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive "
                                             "integers sorted in an increasing order"):
            nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\], but values "
                                           r"in range \[0, 10\] were found."):
        m(tg.randn(2, 8), tg.tensor([0, 10]))
    with pytest.raises(RuntimeError, match="Input and target should have the same size in the "
                                           "batch dimension."):
        m(tg.randn(4, 8), tg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not "
                                           "supported"):
        m(tg.randn(4, 8), tg.tensor([[0]]))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        m(tg.randn(4, 8), tg.tensor(2))


# -- SyncBatchNorm ---------------------------------------------------------------------------------

def test_sync_batch_norm_is_batch_norm_in_one_process(device):
    x = t64(rng.standard_normal((4, 3, 5)), device)
    sbn = nn.SyncBatchNorm(3, momentum=0.3, device=device, dtype=tg.float64)
    bn = nn.BatchNorm1d(3, momentum=0.3, device=device, dtype=tg.float64)
    np.testing.assert_allclose(host(sbn(x)), host(bn(x)), rtol=1e-14)
    np.testing.assert_allclose(host(sbn.running_var), host(bn.running_var), rtol=1e-14)
    sbn.eval(), bn.eval()
    np.testing.assert_allclose(host(sbn(x)), host(bn(x)), rtol=1e-14)
    assert sbn(t64(rng.standard_normal((2, 3, 2, 2, 2)), device)).shape == (2, 3, 2, 2, 2)
    assert repr(sbn) == ("SyncBatchNorm(3, eps=1e-05, momentum=0.3, affine=True, bias=True, "
                         "track_running_stats=True)")
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        sbn(tg.randn(3))


def test_convert_sync_batchnorm():
    net = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4),
                        nn.Sequential(nn.BatchNorm1d(2), nn.InstanceNorm1d(2)))
    net[1].running_mean.fill_(0.5)
    net.eval()
    weight = net[1].weight
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert out is net and type(out[1]) is nn.SyncBatchNorm and type(out[2][0]) is nn.SyncBatchNorm
    assert type(out[2][1]) is nn.InstanceNorm1d and type(out[0]) is nn.Conv2d
    assert out[1].weight is weight and not out[1].training
    assert host(out[1].running_mean).tolist() == [0.5] * 4
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(5))
    assert type(single) is nn.SyncBatchNorm and single.num_features == 5


# -- deprecated functions, small classes, nn.utils --------------------------------------------------

@pytest.mark.parametrize("name,kw", [("upsample", {"mode": "bilinear", "align_corners": False}),
                                     ("upsample_nearest", {"mode": "nearest"}),
                                     ("upsample_bilinear", {"mode": "bilinear",
                                                            "align_corners": True})], ids=str)
def test_upsample_aliases(name, kw):
    x = tg.randn(1, 2, 3, 4)
    extra = {k: v for k, v in kw.items() if name == "upsample"}
    with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated. Use "
                                         f"`nn.functional.interpolate` instead."):
        y = getattr(F, name)(x, scale_factor=2, **extra)
    np.testing.assert_array_equal(host(y), host(F.interpolate(x, scale_factor=2, **kw)))


def test_container_rnn_cell_base_skip_init_convert_parameters():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(a=nn.ReLU(), b=nn.Linear(2, 3))
    assert list(dict(c.named_children())) == ["a", "b"] and len(list(c.parameters())) == 2

    class Cell(nn.RNNCellBase):
        def forward(self, x, h):
            return (x @ self.weight_ih.T + h @ self.weight_hh.T + self.bias_ih).tanh()

    cell = Cell(3, 4, True, 2)
    assert cell.weight_ih.shape == (8, 3) and cell.weight_hh.shape == (8, 4)
    assert np.abs(host(cell.weight_ih)).max() <= 0.5 and repr(cell) == "Cell(3, 4)"
    assert Cell(3, 4, False, 1).bias_ih is None
    lin = nn.utils.skip_init(nn.Linear, 5, 2, dtype=tg.float64)
    assert type(lin) is nn.Linear and lin.weight.shape == (2, 5) and lin.weight.dtype is tg.float64
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip "
                                           "initialization"):
        nn.utils.skip_init(nn.ReLU)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)
    cp = nn.utils.convert_parameters
    assert cp.parameters_to_vector is nn.utils.parameters_to_vector
    assert cp.parameters_to_vector(lin.parameters()).shape == (12,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LazyConv1d(2, 1)  # (no warning from building a lazy module)


def test_cells_derive_from_rnn_cell_base_and_hardtanh_old_keywords():
    for cell in (nn.RNNCell(2, 3), nn.LSTMCell(2, 3), nn.GRUCell(2, 3, bias=False)):
        assert isinstance(cell, nn.RNNCellBase)
    assert nn.LSTMCell(2, 3).weight_ih.shape == (12, 2) and nn.GRUCell(2, 3).bias_hh.shape == (9,)
    assert "bias_ih" not in nn.GRUCell(2, 3, bias=False).state_dict()
    with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
        h = nn.Hardtanh(min_value=-2.0, max_value=3.0)
    assert (h.min_val, h.max_val) == (-2.0, 3.0)
    np.testing.assert_array_equal(host(h(tg.tensor([-5.0, 0.5, 5.0]))), [-2.0, 0.5, 3.0])
