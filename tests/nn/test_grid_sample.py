"""F.affine_grid and F.grid_sample (nn/_sampling.py): the identity map, whole-pixel shifts,
bilinear weights, the three padding modes, nearest's rounding, and gradients with respect to
both the input and the grid (a spatial transformer's theta) by central differences; bicubic
(4-D) and volumetric (5-D) sampling against a float64 loop written from ATen's definitions
(each bicubic tap padded on its own), gradcheck for both, nearest's zero grid gradient, 3-D
affine grids, and PyTorch's errors."""

import itertools

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(29)


def pixel_grid(xs, ys, w, h):
    """Normalised (align_corners=True) grid of pixel coordinates xs, ys, shape (1, len(ys),
    len(xs), 2)."""
    gx, gy = np.meshgrid(2 * np.asarray(xs, float) / (w - 1) - 1,
                         2 * np.asarray(ys, float) / (h - 1) - 1)
    return np.stack([gx, gy], -1)[None]


@pytest.mark.parametrize("align_corners", [False, True])
def test_identity_theta_reproduces_the_input(device, align_corners):
    x = tg.tensor(rng.standard_normal((2, 3, 4, 5)), device=device)
    theta = tg.tensor(np.tile([[1.0, 0, 0], [0, 1.0, 0]], (2, 1, 1)), device=device)
    grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=align_corners)
    assert grid.shape == (2, 4, 5, 2)
    for mode in ("bilinear", "nearest", "bicubic"):  # bicubic's taps weigh 0, 1, 0, 0 there
        y = F.grid_sample(x, grid, mode, align_corners=align_corners)
        np.testing.assert_allclose(host(y), host(x), rtol=1e-12, atol=1e-12)


def test_shifts_bilinear_weights_and_padding_modes(device):
    img = np.arange(20.0).reshape(1, 1, 4, 5)
    x = tg.tensor(img, device=device)

    def sample(xs, ys, **kw):
        g = tg.tensor(pixel_grid(xs, ys, 5, 4), device=device)
        return host(F.grid_sample(x, g, align_corners=True, **kw))[0, 0]

    # whole pixels: the values; half pixels: the means of the neighbours
    np.testing.assert_allclose(sample([1, 2], [3]), [[16.0, 17.0]])
    np.testing.assert_allclose(sample([1.5], [0.5]), [[(1 + 2 + 6 + 7) / 4]])
    np.testing.assert_allclose(sample([0.25], [2]), [[10.25]])
    # outside: zeros (the taps beyond the edge weigh 0), border (the edge), reflection
    np.testing.assert_allclose(sample([-1, 5], [0]), [[0.0, 0.0]])
    np.testing.assert_allclose(sample([-0.5], [0]), [[0.5 * 0.0]])
    np.testing.assert_allclose(sample([-3, 7], [1], padding_mode="border"), [[5.0, 9.0]])
    np.testing.assert_allclose(sample([-1, 5.5], [1], padding_mode="reflection"),
                               [[6.0, 7.5]])  # -1 -> 1; 5.5 -> 2.5 (about 4)
    # nearest rounds half to even
    np.testing.assert_array_equal(sample([0.5, 1.5, 2.4], [0], mode="nearest"),
                                  [[0.0, 2.0, 2.0]])


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_gradients_reach_the_input_and_theta(padding_mode, align_corners):
    x = tg.tensor(rng.standard_normal((1, 2, 4, 5)))
    theta = tg.tensor([[[0.9, 0.2, 0.13], [-0.15, 1.1, -0.07]]])

    def transformer(x, theta):
        grid = F.affine_grid(theta, (1, 2, 3, 4), align_corners=align_corners)
        return F.grid_sample(x, grid, padding_mode=padding_mode, align_corners=align_corners)

    assert_grads_match(transformer, [x, theta], atol=1e-6)


def test_errors():
    x = tg.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or "
                                         "'reflection'"):
        F.grid_sample(x, tg.zeros(1, 2, 2, 2), padding_mode="wrap")
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(x, tg.zeros(2, 2, 2, 2))
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape "
                                         "Nx2x3"):
        F.affine_grid(tg.zeros(1, 3, 3), (1, 1, 4, 4))


# -- a float64 reference written from ATen's definitions, one output point at a time ----------

def unnormalize(c, n, align_corners):
    return (c + 1) / 2 * (n - 1) if align_corners else ((c + 1) * n - 1) / 2


def fold(x, n, padding_mode, align_corners):
    """compute_coordinates: clip (border) or reflect then clip (reflection)."""
    if padding_mode == "reflection":
        lo, hi = (0.0, n - 1.0) if align_corners else (-0.5, n - 0.5)
        if hi == lo:
            x = 0.0
        else:
            span, d = hi - lo, abs(x - lo)
            extra = np.fmod(d, span)
            x = lo + (extra if int(np.floor(d / span)) % 2 == 0 else span - extra)
    if padding_mode in ("border", "reflection"):
        x = min(max(x, 0.0), n - 1.0)
    return x


def keys(t, a=-0.75):
    """The cubic convolution weights of the taps at -1, 0, 1, 2 for fraction t."""
    def near(v):
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v):
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def axis_taps(c, n, mode, padding_mode, align_corners):
    """[(integer index, weight)] along one axis for the normalised coordinate c."""
    x = unnormalize(c, n, align_corners)
    if mode == "bicubic":  # each tap folded on its own, the fraction from the raw position
        x0 = np.floor(x)
        return [(int(fold(x0 - 1 + k, n, padding_mode, align_corners)), w)
                for k, w in enumerate(keys(x - x0))]
    x = fold(x, n, padding_mode, align_corners)
    if mode == "nearest":
        return [(int(np.rint(x)), 1.0)]  # rint: half to even
    x0 = int(np.floor(x))
    return [(x0, 1 - (x - x0)), (x0 + 1, x - x0)]


def ref_grid_sample(x, grid, mode, padding_mode, align_corners):
    n, c, *sizes = x.shape
    nd = len(sizes)
    out = np.zeros((n, c) + grid.shape[1:-1])
    for b in range(n):
        for pos in np.ndindex(*grid.shape[1:-1]):
            coord = grid[(b,) + pos]
            axes = [axis_taps(coord[nd - 1 - d], sizes[d], mode, padding_mode, align_corners)
                    for d in range(nd)]
            for combo in itertools.product(*axes):
                idx = tuple(i for i, _ in combo)
                if all(0 <= i < s for i, s in zip(idx, sizes)):
                    out[(b, slice(None)) + pos] += np.prod([w for _, w in combo]) * \
                        x[(b, slice(None)) + idx]
    return out


PADDINGS = ("zeros", "border", "reflection")


@pytest.mark.parametrize("mode, nd", [("bilinear", 2), ("nearest", 2), ("bicubic", 2),
                                      ("bilinear", 3), ("nearest", 3)])
def test_against_the_reference_every_padding_mode(device, mode, nd):
    x = rng.standard_normal((2, 2) + (3, 4, 5)[3 - nd:])
    # well outside [-1, 1] too: the reflection folds more than once
    grid = rng.uniform(-2.6, 2.6, (2,) + (2, 3, 2)[3 - nd:] + (nd,))
    # every padding mode and align_corners on the CPU; the emulated device (slow) one
    combos = itertools.product(PADDINGS, (False, True)) if device == "cpu" else \
        [("reflection", False)]
    for padding_mode, align_corners in combos:
        y = F.grid_sample(tg.tensor(x, device=device), tg.tensor(grid, device=device), mode,
                          padding_mode, align_corners)
        np.testing.assert_allclose(host(y), ref_grid_sample(x, grid, mode, padding_mode,
                                                            align_corners),
                                   rtol=1e-12, atol=1e-12,
                                   err_msg=f"{padding_mode}, {align_corners}")


def test_bicubic_weights_sum_to_one_and_each_tap_is_padded():
    # border padding of a constant image: every tap reads the constant, the weights sum to 1
    g = rng.uniform(-3, 3, (1, 4, 5, 2))
    y = F.grid_sample(tg.full((1, 1, 3, 4), 2.5, dtype=tg.float64), tg.tensor(g), "bicubic",
                      "border", align_corners=False)
    np.testing.assert_allclose(host(y), 2.5, rtol=1e-13)
    # a position just left of pixel 0 with border padding: the taps -2 .. 1 read pixels
    # 0, 0, 0, 1 (each tap clamped), not the clamped position's neighbourhood
    row = np.array([[[[1.0, 5.0, 2.0, 7.0]]]])
    t = 0.6
    g = np.array([[[[2 * (-1 + t) / 3 - 1, 0.0]]]])
    y = F.grid_sample(tg.tensor(row), tg.tensor(g), "bicubic", "border", align_corners=True)
    w = keys(t)
    np.testing.assert_allclose(host(y).ravel(), [(w[0] + w[1] + w[2]) * 1.0 + w[3] * 5.0],
                               rtol=1e-12)


@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode, nd", [("bicubic", 2), ("bilinear", 3)])
def test_gradcheck_input_and_grid(mode, nd, padding_mode, align_corners):
    x = tg.tensor(rng.standard_normal((1, 2) + (2, 3, 4)[3 - nd:]), requires_grad=True)
    grid = tg.tensor(rng.uniform(-1.8, 1.8, (1,) + (2, 2, 3)[3 - nd:] + (nd,)),
                     requires_grad=True)
    assert tg.autograd.gradcheck(
        lambda x, g: F.grid_sample(x, g, mode, padding_mode, align_corners), (x, grid))


def test_bicubic_and_volumetric_gradients_on_cuda():
    x = tg.tensor(rng.standard_normal((1, 1, 3, 4)), device="cuda")
    g = tg.tensor(rng.uniform(-1.3, 1.3, (1, 2, 2, 2)), device="cuda")
    assert_grads_match(lambda x, g: F.grid_sample(x, g, "bicubic", "reflection",
                                                  align_corners=False), [x, g])
    x = tg.tensor(rng.standard_normal((1, 1, 2, 3, 2)), device="cuda")
    g = tg.tensor(rng.uniform(-1.3, 1.3, (1, 1, 2, 2, 3)), device="cuda")
    assert_grads_match(lambda x, g: F.grid_sample(x, g, padding_mode="border",
                                                  align_corners=True), [x, g])


@pytest.mark.parametrize("nd", [2, 3])
def test_nearest_gives_the_grid_a_zero_gradient(device, nd):
    x = tg.tensor(rng.standard_normal((1, 2) + (3, 4, 5)[3 - nd:]), device=device,
                  requires_grad=True)
    grid = tg.tensor(rng.uniform(-1.2, 1.2, (1,) + (2, 3, 2)[3 - nd:] + (nd,)), device=device,
                     requires_grad=True)
    F.grid_sample(x, grid, "nearest", "reflection", align_corners=False).sum().backward()
    assert grid.grad is not None and grid.grad.shape == grid.shape
    assert not host(grid.grad).any()
    assert host(x.grad).sum() == 2 * np.prod(grid.shape[1:-1])  # one tap per output value


def test_volumetric_transformer_affine_grid_and_gradients():
    theta = np.array([[[0.9, 0.1, -0.2, 0.05], [0.2, 1.1, 0.0, -0.1], [-0.1, 0.15, 0.8, 0.2]]])
    for align_corners in (False, True):
        grid = F.affine_grid(tg.tensor(theta), (1, 1, 2, 3, 4), align_corners=align_corners)
        assert grid.shape == (1, 2, 3, 4, 3)

        lin = [np.linspace(-1, 1, k) * (1 if align_corners else (k - 1) / k) for k in (2, 3, 4)]
        zs, ys, xs = np.meshgrid(*lin, indexing="ij")
        base = np.stack([xs, ys, zs, np.ones_like(xs)], -1)
        np.testing.assert_allclose(host(grid)[0], base @ theta[0].T, rtol=1e-12, atol=1e-15)
    # identity theta: the sample is the input itself
    x = tg.tensor(rng.standard_normal((2, 2, 2, 3, 4)))
    eye = tg.tensor(np.tile(np.eye(3, 4), (2, 1, 1)))
    for mode in ("bilinear", "nearest"):
        grid = F.affine_grid(eye, (2, 2, 2, 3, 4), align_corners=False)
        np.testing.assert_allclose(host(F.grid_sample(x, grid, mode, align_corners=False)),
                                   host(x), rtol=1e-12, atol=1e-12)
    # a single pixel's coordinate is 0 (ATen's linspace_from_neg_one)
    grid = F.affine_grid(tg.tensor(np.eye(2, 3)[None]), (1, 1, 1, 3), align_corners=True)
    np.testing.assert_allclose(host(grid)[0, 0, :, 1], 0.0)

    x = tg.tensor(rng.standard_normal((1, 1, 2, 3, 3)))

    def transformer(x, theta):
        grid = F.affine_grid(theta, (1, 1, 2, 2, 3), align_corners=False)
        return F.grid_sample(x, grid, padding_mode="reflection", align_corners=False)

    # off the round numbers: no sample exactly on a pixel, where the gradient has a kink
    theta = theta + rng.uniform(-0.05, 0.05, theta.shape)
    assert_grads_match(transformer, [x, tg.tensor(theta)], atol=1e-6)


def test_more_errors():
    x5 = tg.zeros(1, 1, 2, 2, 2)
    with pytest.raises(RuntimeError, match=r"grid_sampler\(\): bicubic interpolation only "
                                           r"supports 4D input"):
        F.grid_sample(x5, tg.zeros(1, 1, 1, 1, 3), "bicubic")
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or "
                                         "'bicubic', but got: 'area'"):
        F.grid_sample(tg.zeros(1, 1, 2, 2), tg.zeros(1, 1, 1, 2), "area")
    with pytest.raises(RuntimeError, match="expected grid to have size 3 in last dimension"):
        F.grid_sample(x5, tg.zeros(1, 1, 1, 1, 2))
    with pytest.raises(RuntimeError, match="expected 5D input and grid with same number of "
                                           "dimensions"):
        F.grid_sample(x5, tg.zeros(1, 1, 3))
    with pytest.raises(ValueError, match="Expected a batch of 3D affine matrices of shape "
                                         "Nx3x4"):
        F.affine_grid(tg.zeros(1, 2, 3), (1, 1, 2, 2, 2))
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(tg.zeros(1, 2, 3), (1, 1, 4))
    with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
        F.affine_grid(tg.zeros(1, 2, 3), (1, 1, 0, 4))
