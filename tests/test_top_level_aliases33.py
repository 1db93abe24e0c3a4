"""torch.sym_* on Python numbers and ATen's native names at the top of the module
(tritongrad/_symbolic.py, tritongrad/_aten_aliases.py), against their definitions and, where
installed, torch 2.13."""

import numpy as np
import pytest

import tritongrad as tg


def test_sym_functions_follow_pytorchs_type_rules():
    assert tg.sym_max(1, 2.0) == 2.0 and type(tg.sym_max(3, 2.0)) is float
    assert tg.sym_max(3, 2) == 3 and type(tg.sym_max(3, 2)) is int
    assert tg.sym_min(np.int64(4), 2.5) == 2.5 and type(tg.sym_min(1, 2)) is int
    assert tg.sym_int(-2.7) == -2 and tg.sym_int(2.7) == 2 and tg.sym_float(3) == 3.0
    assert tg.sym_sum([1, 2, 3]) == 6 and tg.sym_sum(1.5, 2) == 3.5
    assert tg.sym_not(0) is True and tg.sym_sqrt(9) == 3.0
    assert tg.sym_ite(True, 1, 2) == 1 and tg.sym_ite(False, 1, 2) == 2
    with pytest.raises(AssertionError, match="got <class 'str'>"):
        tg.sym_max("a", 1)
    with pytest.raises(AssertionError, match="type mismatch"):
        tg.sym_ite(True, 1, 2.0)
    with pytest.raises(AssertionError, match="expected SymBool or bool"):
        tg.sym_ite(1, 1, 2)


def _grid_inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((2, 3, 5, 6)).astype(np.float32),
            rng.uniform(-1.2, 1.2, (2, 4, 3, 2)).astype(np.float32))


@pytest.mark.parametrize("interp, pad", [(0, 0), (1, 1), (2, 2), (0, 2)])
def test_grid_sampler_is_grid_sample_with_integer_modes(interp, pad):
    x, g = _grid_inputs()
    modes = ("bilinear", "nearest", "bicubic")[interp], ("zeros", "border", "reflection")[pad]
    got = tg.grid_sampler(tg.tensor(x), tg.tensor(g), interp, pad, True)
    want = tg.nn.functional.grid_sample(tg.tensor(x), tg.tensor(g), *modes, align_corners=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(
        tg.grid_sampler_2d(tg.tensor(x), tg.tensor(g), interp, pad, True).numpy(), got.numpy())
    with pytest.raises(RuntimeError, match="grid_sampler_3d"):
        tg.grid_sampler_3d(tg.tensor(x), tg.tensor(g), interp, pad, True)
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        tg.grid_sampler(tg.tensor(x), tg.tensor(g), 3, pad, True)
    torch = pytest.importorskip("torch")
    ref = torch.grid_sampler(torch.tensor(x), torch.tensor(g), interp, pad, True)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_conv_tbc_against_a_float64_reference_and_its_gradients():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((7, 2, 3)), rng.standard_normal((3, 3, 4)), \
        rng.standard_normal(4)
    pad = 1
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    want = np.stack([np.einsum("kbi,kio->bo", xp[t:t + 3], w) for t in range(7 + 2 - 3 + 1)])
    want += b
    args = [tg.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = tg.conv_tbc(*args, pad)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12)
    assert tg.autograd.gradcheck(lambda *a: tg.conv_tbc(*a, pad), args)
    with pytest.raises(RuntimeError, match=r"^Input dim 2 \(input channels\) is not == dim 1 "):
        tg.conv_tbc(args[0], args[1][:, :2], args[2])
    torch = pytest.importorskip("torch")
    ref = torch.conv_tbc(*[torch.tensor(a) for a in (x, w, b)], pad)
    np.testing.assert_allclose(out.detach().numpy(), ref.numpy(), rtol=1e-12)


def test_native_channel_shuffle_norm_except_dim_and_is_distributed():
    x = tg.arange(12.0).reshape(1, 6, 2)
    np.testing.assert_array_equal(tg.native_channel_shuffle(x, 3).numpy(),
                                  tg.nn.functional.channel_shuffle(x, 3).numpy())
    v = np.arange(1.0, 13.0).reshape(3, 4)
    np.testing.assert_allclose(tg.norm_except_dim(tg.tensor(v), 2, 1).numpy(),
                               np.sqrt((v ** 2).sum(0, keepdims=True)))
    assert tg.is_distributed(x) is False
