"""Lazy modules: UninitializedParameter / UninitializedBuffer and LazyLinear, which infers
in_features from its first input and then becomes a Linear."""

import math

import numpy as np
import pytest
from tritongrad.nn.parameter import UninitializedBuffer, UninitializedParameter

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn


def test_uninitialized_parameter_and_buffer():
    p = UninitializedParameter(dtype=tg.float64)
    assert isinstance(p, nn.Parameter) and p.requires_grad and repr(p) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized "
                                           "parameter or buffer"):
        _ = p.shape
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype is tg.float64
    assert p.is_leaf and p.requires_grad
    b = UninitializedBuffer()
    assert not b.requires_grad and repr(b) == "<UninitializedBuffer>"
    b.materialize((4,), dtype=tg.int64)
    assert type(b) is tg.Tensor and b.shape == (4,) and b.dtype is tg.int64


def test_lazy_linear(device):
    m = nn.LazyLinear(3, device=device, dtype=tg.float64)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert m.has_uninitialized_params() and isinstance(m.weight, UninitializedParameter)
    tg.manual_seed(0)
    x = tg.randn(2, 5, dtype=tg.float64, device=device)
    y = m(x)
    assert type(m) is nn.Linear and repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    assert type(m.weight) is nn.Parameter and m.weight.shape == (3, 5)
    assert m.weight.device.type == device and m.bias.dtype is tg.float64
    assert not m._forward_pre_hooks  # the initializing hook removed itself
    # initialized as Linear's: U(-1/sqrt(in_features), 1/sqrt(in_features))
    bound = 1 / math.sqrt(5)
    assert np.abs(host(m.weight)).max() <= bound and np.abs(host(m.bias)).max() <= bound
    np.testing.assert_allclose(host(y), host(x) @ host(m.weight).T + host(m.bias), rtol=1e-12)
    y.sum().backward()
    assert m.weight.grad.shape == (3, 5)
    # an optimizer built after the first forward trains it
    opt = tg.optim.SGD(m.parameters(), lr=0.1)
    opt.step()
    no_bias = nn.LazyLinear(2, bias=False)
    no_bias(tg.randn(4, 7))
    assert no_bias.bias is None and no_bias.weight.shape == (2, 7)
