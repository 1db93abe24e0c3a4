"""``with tg.device(...)`` as the factories' default device, and ``Module.to_empty``."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn


def test_device_context_sets_and_restores_the_default(device):
    other = "cpu" if device == "cuda" else "cuda"
    with tg.device(device) as d:
        assert d == tg.device(device)
        assert tg.zeros(2).device.type == device
        assert nn.Linear(2, 2).weight.device.type == device
        assert tg.zeros(1, device=other).device.type == other  # an explicit device wins
        with tg.device(other):
            assert tg.ones(1).device.type == other
        assert tg.ones(1).device.type == device
    assert tg.zeros(1).device.type == "cpu"


def test_device_context_restores_after_an_error():
    with pytest.raises(ValueError):
        with tg.device("cuda"):
            raise ValueError
    assert tg.zeros(1).device.type == "cpu"


def test_to_empty_moves_without_copying(device):
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    w = m[0].weight
    assert m.to_empty(device=device) is m
    assert m[0].weight is w and w.device.type == device and w.shape == (2, 3)
    assert m[1].running_mean.device.type == device
    src = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m.load_state_dict(src.state_dict())
    x = tg.randn(4, 3)
    np.testing.assert_allclose(m.eval()(x.to(device)).cpu().detach().numpy(),
                               src.eval()(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    other = "cpu" if device == "cuda" else "cuda"
    m[0].to_empty(device=other, recurse=False)
    assert m[0].weight.device.type == other and m[1].running_mean.device.type == device
