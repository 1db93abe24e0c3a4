"""F.affine_grid and F.grid_sample (nn/_sampling.py): the identity map, whole-pixel shifts,
bilinear weights, the three padding modes, nearest's rounding, and gradients with respect to
both the input and the grid (a spatial transformer's theta) by central differences."""

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
    for mode in ("bilinear", "nearest"):
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
