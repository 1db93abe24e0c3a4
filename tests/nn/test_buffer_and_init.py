"""nn.Buffer (assigning one registers a buffer, persistent or not) and nn.init's
orthogonal_, dirac_, sparse_ and the deprecated non-underscore names."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn


class _WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.steps = nn.Buffer(tg.zeros((), dtype=tg.int64), persistent=False)
        self.mean = nn.Buffer(tg.ones(2))
        self.plain = tg.ones(1)  # a plain tensor attribute stays one


def test_buffer_assignment_registers(device):
    m = _WithBuffers().to(device)
    assert [n for n, _ in m.named_buffers()] == ["steps", "mean"]
    assert list(m.state_dict()) == ["mean", "lin.weight", "lin.bias"]  # (own state first)
    assert m.mean.device.type == device and m.steps.device.type == device
    assert "plain" not in dict(m.named_buffers())
    # re-assigning a plain tensor to a buffer name keeps it a buffer (and its persistence)
    m.steps = tg.full((), 5, dtype=tg.int64)
    assert int(m._buffers["steps"]) == 5 and "steps" not in m.state_dict()
    m.steps = nn.Buffer(m.steps, persistent=True)
    assert "steps" in m.state_dict()


def test_buffer_is_a_marked_tensor():
    t = tg.ones(3, requires_grad=True)
    b = nn.Buffer(t, persistent=False)
    assert type(b) is tg.Tensor and isinstance(b, nn.Buffer) and isinstance(b, tg.Tensor)
    assert not isinstance(t, nn.Buffer) and not isinstance(3, nn.Buffer)
    assert b.persistent is False and b.requires_grad and b.is_leaf
    b.data.mul_(2)  # shares t's storage
    assert host(t).tolist() == [2.0, 2.0, 2.0]
    assert nn.Buffer().shape == (0,)
    with pytest.raises(TypeError, match="must be a Tensor"):
        nn.Buffer([1.0])


def test_buffer_errors():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.x = 1

    m = M()
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.x = nn.Buffer(tg.ones(1))

    class Early(nn.Module):
        def __init__(self):
            self.b = nn.Buffer(tg.ones(1))

    with pytest.raises(AttributeError, match="cannot assign buffer before Module.__init__"):
        Early()


# -- nn.init ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3), (6, 6)])
def test_orthogonal_(shape, device):
    w = tg.empty(shape, dtype=tg.float64, device=device)
    assert nn.init.orthogonal_(w, gain=2.0) is w
    q = host(w).reshape(shape[0], -1)
    small = min(q.shape)
    gram = q @ q.T if q.shape[0] == small else q.T @ q
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-12)
    tg.manual_seed(0)
    a = host(nn.init.orthogonal_(tg.empty(shape, dtype=tg.float64)))
    tg.manual_seed(0)
    np.testing.assert_array_equal(a, host(nn.init.orthogonal_(tg.empty(shape,
                                                                        dtype=tg.float64))))
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        nn.init.orthogonal_(tg.empty(3))


def test_orthogonal_is_uniformly_signed():
    # the sign fix makes Q Haar-distributed: its diagonal is not biased positive
    tg.manual_seed(0)
    diag = np.array([np.diag(host(nn.init.orthogonal_(tg.empty(3, 3, dtype=tg.float64))))
                     for _ in range(300)])
    assert abs((diag > 0).mean() - 0.5) < 0.1


def test_dirac_(device):
    w = tg.empty(4, 2, 3, 3, device=device)
    nn.init.dirac_(w, groups=2)
    expected = np.zeros((4, 2, 3, 3))
    for out, inp in [(0, 0), (1, 1), (2, 0), (3, 1)]:
        expected[out, inp, 1, 1] = 1
    np.testing.assert_array_equal(host(w), expected)
    # a dirac convolution is the identity on as many channels as it can keep
    x = tg.randn(1, 2, 5, 5, dtype=tg.float64)
    k = nn.init.dirac_(tg.empty(3, 2, 3, dtype=tg.float64)[:, :, None, :].expand(3, 2, 3, 3)
                       .contiguous())
    y = nn.functional.conv2d(x, k, padding=1)
    np.testing.assert_allclose(host(y)[0, :2], host(x)[0], atol=1e-12)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        nn.init.dirac_(tg.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        nn.init.dirac_(tg.empty(3, 2, 3), groups=2)


def test_sparse_():
    w = nn.init.sparse_(tg.empty(10, 4, dtype=tg.float64), sparsity=0.25, std=0.5)
    zeros = (host(w) == 0).sum(axis=0)
    assert zeros.tolist() == [3, 3, 3, 3]  # ceil(0.25 * 10) per column


@pytest.mark.parametrize("old, args", [
    ("uniform", ()), ("normal", ()), ("constant", (0.5,)), ("xavier_uniform", ()),
    ("xavier_normal", ()), ("kaiming_uniform", ()), ("kaiming_normal", ()),
    ("orthogonal", ()), ("sparse", (0.5,))])
def test_deprecated_names_warn_and_call_the_inplace_form(old, args):
    new = getattr(nn.init, old + "_")
    tg.manual_seed(7)
    expected = host(new(tg.empty(4, 3, dtype=tg.float64), *args))
    tg.manual_seed(7)
    w = tg.empty(4, 3, dtype=tg.float64)
    with pytest.warns(FutureWarning, match=f"`nn.init.{old}` is now deprecated in favor of "
                                           f"`nn.init.{old}_`."):
        assert getattr(nn.init, old)(w, *args) is w
    np.testing.assert_array_equal(host(w), expected)
