"""F.interpolate and the Upsample modules (nn/_sampling.py): each mode against what it must
reproduce exactly (nearest repeats pixels; linear, bilinear, trilinear and bicubic reproduce a
linear ramp at the source positions; area averages whole blocks), PyTorch's edge rules,
gradients against central differences, both backends; antialias=True against a float64 loop
of ATen's separable filter, gradcheck, and its errors."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(4)


def ramp(shape, device="cpu"):
    """x[..., i, j, k] = 1 + 2 i - 3 j + 5 k over the spatial dims (a linear function)."""
    coef = [2.0, -3.0, 5.0][:len(shape) - 2]
    grids = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape[2:]], indexing="ij")
    val = 1.0 + sum(c * g for c, g in zip(coef, grids))
    return tg.tensor(np.broadcast_to(val, shape).copy(), device=device), coef


def test_nearest_repeats_and_picks(device):
    x = tg.tensor(rng.standard_normal((2, 3, 4, 5)), device=device)
    up = F.interpolate(x, scale_factor=2)
    np.testing.assert_array_equal(host(up), host(x).repeat(2, 2).repeat(2, 3))
    down = F.interpolate(x, size=(2, 5))
    np.testing.assert_array_equal(host(down), host(x)[:, :, ::2])
    # nearest-exact samples at the pixel centres: 5 -> 3 picks floor((i + .5) * 5 / 3) = 0, 2, 4
    y = F.interpolate(tg.arange(5.0, device=device).view(1, 1, 5), size=3, mode="nearest-exact")
    assert host(y).ravel().tolist() == [0.0, 2.0, 4.0]
    y = F.interpolate(tg.arange(5.0, device=device).view(1, 1, 5), size=3, mode="nearest")
    assert host(y).ravel().tolist() == [0.0, 1.0, 3.0]


def keys(t, a=-0.75):
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for fraction t."""
    def c1(v):
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def c2(v):
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def bicubic_1d(v, n_out, align_corners):
    """One dimension of bicubic resampling, loops: PyTorch's source position (no clamp at
    0), integer part at most the last index, fraction clamped to [0, 1], taps clamped."""
    n = len(v)
    out = []
    for i in range(n_out):
        if align_corners:
            src = i * (n - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = (i + 0.5) * n / n_out - 0.5
        i0 = min(int(np.floor(src)), n - 1)
        ws = keys(min(max(src - i0, 0.0), 1.0))
        out.append(sum(w * v[min(max(i0 - 1 + k, 0), n - 1)] for k, w in enumerate(ws)))
    return np.array(out)


@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_against_loops(device, align_corners):
    x = rng.standard_normal((1, 2, 4, 5))
    y = host(F.interpolate(tg.tensor(x, device=device), size=(7, 3), mode="bicubic",
                           align_corners=align_corners))
    rows = np.apply_along_axis(bicubic_1d, 2, x, 7, align_corners)
    ref = np.apply_along_axis(bicubic_1d, 3, rows, 3, align_corners)
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    const = F.interpolate(tg.full((1, 1, 3, 3), 2.5, dtype=tg.float64), size=(5, 8),
                          mode="bicubic", align_corners=align_corners)
    np.testing.assert_allclose(host(const), 2.5, rtol=1e-14)  # the weights sum to one


@pytest.mark.parametrize("mode, nd", [("linear", 1), ("bilinear", 2), ("trilinear", 3)])
def test_interpolating_modes_reproduce_a_linear_ramp(device, mode, nd):
    shape = (1, 2) + (4, 5, 3)[:nd]
    x, coef = ramp(shape, device)
    out = [7, 9, 5][:nd]
    def inside(s, n):  # where no edge rule applies
        return (s >= 0) & (s <= n - 1)

    for align_corners in (True, False):
        y = host(F.interpolate(x, size=out, mode=mode, align_corners=align_corners))
        if align_corners:
            src = [np.arange(o) * (n - 1) / (o - 1) for n, o in zip(shape[2:], out)]
        else:
            src = [(np.arange(o) + 0.5) * n / o - 0.5 for n, o in zip(shape[2:], out)]
        keep = [np.flatnonzero(inside(s, n)) for s, n in zip(src, shape[2:])]
        assert all(len(k) for k in keep)
        grids = np.meshgrid(*[s[k] for s, k in zip(src, keep)], indexing="ij")
        np.testing.assert_allclose(y[0, 1][np.ix_(*keep)],
                                   1.0 + sum(c * g for c, g in zip(coef, grids)),
                                   rtol=1e-12, atol=1e-12)


def test_edges_follow_pytorch():
    # bilinear, align_corners=False, 2 -> 4: sources -.25 (clamped to 0), .25, .75, 1.25
    # (the upper neighbour of the last row is itself)
    y = F.interpolate(tg.tensor([[[1.0, 3.0]]]), size=4, mode="linear")
    assert y.tolist() == [[[1.0, 1.5, 2.5, 3.0]]]
    # bicubic keeps the position's fraction (-.25 -> index -1, t = .75), taps clamped
    y = F.interpolate(tg.tensor([[[[1.0, 3.0]]]]), size=(1, 4), mode="bicubic")
    np.testing.assert_allclose(host(y).ravel(), bicubic_1d([1.0, 3.0], 4, False), rtol=1e-6)


def test_area_averages_blocks_and_scale_factor_rules():
    x = tg.tensor(rng.standard_normal((2, 3, 6, 8)))
    y = F.interpolate(x, size=(3, 2), mode="area")
    np.testing.assert_allclose(host(y), host(x).reshape(2, 3, 3, 2, 2, 4).mean((3, 5)),
                               rtol=1e-12)
    x1 = tg.tensor(rng.standard_normal((2, 3, 6)))
    np.testing.assert_allclose(host(F.interpolate(x1, size=3, mode="area")),
                               host(x1).reshape(2, 3, 3, 2).mean(3), rtol=1e-12)
    # output size floor(in * scale); the sampling uses 1 / scale unless recomputed
    x = tg.arange(5.0, dtype=tg.float64).view(1, 1, 5)
    a = F.interpolate(x, scale_factor=1.7, mode="linear")
    b = F.interpolate(x, scale_factor=1.7, mode="linear", recompute_scale_factor=True)
    assert a.shape == b.shape == (1, 1, 8)
    src = np.maximum((np.arange(8) + 0.5) / 1.7 - 0.5, 0)
    np.testing.assert_allclose(host(a).ravel(), np.minimum(src, 4), rtol=1e-12)
    src = np.maximum((np.arange(8) + 0.5) * 5 / 8 - 0.5, 0)
    np.testing.assert_allclose(host(b).ravel(), np.minimum(src, 4), rtol=1e-12)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic", "area"])
def test_gradients(device, mode):
    x = tg.tensor(rng.standard_normal((1, 2, 3, 4)), device=device)
    kw = {} if mode in ("nearest", "area") else {"align_corners": mode == "bicubic"}
    assert_grads_match(lambda t: F.interpolate(t, size=(5, 3), mode=mode, **kw), [x])


def test_modules_and_errors():
    m = nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(m) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert m(tg.zeros(1, 1, 2, 3)).shape == (1, 1, 4, 6)
    assert repr(nn.UpsamplingNearest2d(size=4)) == "UpsamplingNearest2d(size=4, mode='nearest')"
    ub = nn.UpsamplingBilinear2d(scale_factor=2)(tg.tensor([[[[1.0, 2.0]]]]))
    np.testing.assert_allclose(host(ub)[0, 0, 0], [1.0, 4 / 3, 5 / 3, 2.0])  # align_corners
    x = tg.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match="align_corners option can only be set with the "
                                         "interpolating modes"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial "
                                         "dimensions"):
        F.interpolate(x, size=(2, 2, 2))


# -- antialias: ATen's separable filter, one output row at a time -----------------------------

def aa_weights(n_in, n_out, mode, align_corners=False, scale_factor=None):
    """(n_out, n_in) weights of `_upsample_{bilinear,bicubic}2d_aa` along one dimension: output
    i centred at scale (i + .5), reading [int(centre - support + .5), int(centre + support +
    .5)) within the input, the filter (triangle; cubic with A = -0.5) stretched by the scale
    when downsampling, normalised; a dimension that keeps its size is left alone."""
    if n_in == n_out:
        return np.eye(n_in)
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1 / scale_factor if scale_factor else n_in / n_out
    stretch = max(scale, 1.0)
    support = (1.0 if mode == "bilinear" else 2.0) * stretch

    def filt(v):
        v = abs(v)
        if mode == "bilinear":
            return max(0.0, 1.0 - v)
        return keys(v, -0.5)[1] if v < 1 else keys(v - 1, -0.5)[0] if v < 2 else 0.0

    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        centre = scale * (i + 0.5)
        for j in range(max(int(centre - support + 0.5), 0),
                       min(int(centre + support + 0.5), n_in)):
            w[i, j] = filt((j - centre + 0.5) / stretch)
        if w[i].sum() != 0:
            w[i] /= w[i].sum()
    return w


AA_CASES = [((9, 11), {"size": (4, 3)}), ((9, 11), {"size": (2, 11)}),
            ((9, 11), {"scale_factor": 0.3}), ((9, 11), {"scale_factor": (0.45, 0.7)}),
            ((4, 5), {"size": (7, 3)}), ((4, 5), {"scale_factor": 2.3}),
            ((20, 7), {"size": (1, 1)})]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_against_the_separable_filter(device, mode):
    # every case and align_corners on the CPU; the emulated device (slow) one
    cases = AA_CASES if device == "cpu" else AA_CASES[:1]
    for shape, kw in cases:
        for align_corners in (False, True):
            x = rng.standard_normal((2, 2) + shape)
            y = host(F.interpolate(tg.tensor(x, device=device), mode=mode, antialias=True,
                                   align_corners=align_corners, **kw))
            sf = kw.get("scale_factor")
            sf = sf if isinstance(sf, tuple) else (sf, sf)
            out = kw.get("size") or [int(np.floor(n * f)) for n, f in zip(shape, sf)]
            wh, ww = (aa_weights(n, o, mode, align_corners, s)
                      for n, o, s in zip(shape, out, sf))
            np.testing.assert_allclose(y, wh @ x @ ww.T, rtol=1e-12, atol=1e-12,
                                       err_msg=f"{shape} {kw} {align_corners}")


def test_antialias_upsampling_and_the_plain_modes():
    x = tg.tensor(rng.standard_normal((1, 2, 3, 4)))
    # upsampling: the triangle's support stays 1, so bilinear is the plain mode (the pixel
    # centres' rule); bicubic's filter has A = -0.5, not the plain mode's -0.75
    np.testing.assert_allclose(
        host(F.interpolate(x, size=(7, 9), mode="bilinear", antialias=True)),
        host(F.interpolate(x, size=(7, 9), mode="bilinear")), rtol=1e-12, atol=1e-12)
    a = F.interpolate(x, size=(7, 9), mode="bicubic", antialias=True)
    assert np.abs(host(a) - host(F.interpolate(x, size=(7, 9), mode="bicubic"))).max() > 1e-3
    # downsampling by 2 with the triangle: weights 1/8, 3/8, 3/8, 1/8 (edges renormalised)
    row = tg.tensor([[[[1.0, 2.0, 4.0, 8.0, 16.0, 32.0]]]])
    y = F.interpolate(row, size=(1, 3), mode="bilinear", antialias=True)
    want = [(3 * 1 + 3 * 2 + 4) / 7, (2 + 3 * 4 + 3 * 8 + 16) / 8, (8 + 3 * 16 + 3 * 32) / 7]
    np.testing.assert_allclose(host(y).ravel(), want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_antialias_gradcheck(mode, align_corners):
    x = tg.tensor(rng.standard_normal((1, 2, 7, 5)), requires_grad=True)
    assert tg.autograd.gradcheck(
        lambda t: F.interpolate(t, size=(3, 4), mode=mode, align_corners=align_corners,
                                antialias=True), (x,))


def test_antialias_gradients_on_cuda():
    x = tg.tensor(rng.standard_normal((1, 1, 6, 5)), device="cuda")
    assert_grads_match(lambda t: F.interpolate(t, scale_factor=0.5, mode="bicubic",
                                               antialias=True), [x])


def test_antialias_errors():
    msg = ("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
           "tensor as input")
    with pytest.raises(ValueError, match=msg):
        F.interpolate(tg.zeros(1, 1, 4, 4), scale_factor=0.5, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match=msg):
        F.interpolate(tg.zeros(1, 1, 4, 4, 4), scale_factor=0.5, mode="trilinear",
                      antialias=True)
    with pytest.raises(ValueError, match=msg):
        F.interpolate(tg.zeros(1, 1, 4), scale_factor=0.5, mode="bilinear", antialias=True)


def test_a_dimension_whose_size_a_scale_factor_keeps():
    """3 * 1.2 -> 3: PyTorch's CPU kernels copy that dimension for the linear modes and 2-D
    nearest (their separable resampling skips it); 1-D and 3-D nearest, nearest-exact and
    bicubic resample it with the given scale."""
    F = tg.nn.functional
    row = tg.arange(3.0).reshape(1, 1, 3)
    assert F.interpolate(row, scale_factor=1.2, mode="linear").flatten().tolist() == [0, 1, 2]
    # 1-D nearest: floor(dst / 1.2)
    assert F.interpolate(row, scale_factor=1.2, mode="nearest").flatten().tolist() == [0, 0, 1]
    plane = tg.arange(9.0).reshape(1, 1, 3, 3)
    y = F.interpolate(plane, scale_factor=(2, 1.2), mode="bilinear")
    assert tuple(y.shape) == (1, 1, 6, 3)
    np.testing.assert_allclose(y[0, 0, :, 0].numpy(), [0, 0.75, 2.25, 3.75, 5.25, 6])  # resized
    np.testing.assert_array_equal(y[0, 0, 0].numpy(), [0, 1, 2])  # copied
    y = F.interpolate(plane, scale_factor=(2, 1.2), mode="nearest")
    np.testing.assert_array_equal(y[0, 0, 0].numpy(), [0, 1, 2])
    np.testing.assert_array_equal(F.interpolate(plane, scale_factor=1.2, mode="nearest").numpy(),
                                  plane.numpy())
    y = F.interpolate(plane, scale_factor=(1, 1.2), mode="bicubic")
    assert not np.allclose(y.numpy(), plane.numpy())
    cube = tg.arange(27.0).reshape(1, 1, 3, 3, 3)
    y = F.interpolate(cube, scale_factor=(2, 1.2, 1.2), mode="trilinear")
    np.testing.assert_array_equal(y[0, 0, 0].numpy(), cube[0, 0, 0].numpy())
    y = F.interpolate(cube, scale_factor=1.2, mode="nearest")
    np.testing.assert_array_equal(y[0, 0, 0, 0].numpy(), [0, 0, 1])
    # the gradient is the copy's too
    x = plane.clone().requires_grad_()
    F.interpolate(x, scale_factor=(1.2, 1.2), mode="bilinear").sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((1, 1, 3, 3)))
