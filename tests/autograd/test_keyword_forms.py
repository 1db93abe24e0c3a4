"""PyTorch's keyword spellings of arguments that tritongrad also takes positionally (found by
running ordinary programs: ``torch.flip(x, dims=[3])``, ``x.round_(decimals=1)``)."""

import numpy as np
import pytest

import tritongrad as tg


def test_flip_dims_keyword(device):
    a = np.arange(24.0).reshape(2, 3, 4)
    x = tg.tensor(a, device=device)
    for got in (tg.flip(x, dims=[2]), x.flip(dims=(2,)), tg.flip(x, [2]), x.flip(2)):
        np.testing.assert_array_equal(got.cpu().numpy(), a[:, :, ::-1])
    np.testing.assert_array_equal(x.flip(dims=[0, 2]).cpu().numpy(), a[::-1, :, ::-1])
    with pytest.raises(TypeError, match="multiple values for argument 'dims'"):
        tg.flip(x, 0, dims=[1])
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'dims'"):
        tg.flip(x)


def test_round_in_place_decimals(device):
    a = np.array([1.234, -5.678, 2.25, 1234.5])
    x = tg.tensor(a, device=device)
    y = x.clone()
    assert y.round_(decimals=1) is y
    np.testing.assert_allclose(y.cpu().numpy(), np.round(a, 1))
    z = x.clone()
    z.round_(decimals=-2)
    np.testing.assert_allclose(z.cpu().numpy(), np.round(a, -2))
    w = x.clone()
    w.round_()
    np.testing.assert_array_equal(w.cpu().numpy(), np.round(a))
    v = x.clone()
    v.round_(decimals=0)
    np.testing.assert_array_equal(v.cpu().numpy(), np.round(a))
