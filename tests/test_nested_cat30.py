"""``tritongrad.cat`` / ``stack`` of jagged nested tensors (PyTorch's rules: along a dim that is
neither the batch nor the ragged one, of nested tensors of one ragged structure).

Each result is checked component by component against NumPy (float64), gradients against the
same op on each component alone and against finite differences; with PyTorch installed,
against torch.nested.
"""

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nested  # noqa: F401
from tritongrad.nested import NestedTensor

J = tg.nested.jagged
LENS = (2, 5, 1)


def _arrays(lens=LENS, tail=(3,), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, *tail)) for n in lens]


def _np(t):
    return t.detach().cpu().numpy()


def _nested(arrays, requires_grad=True):
    leaves = [tg.tensor(a, requires_grad=requires_grad) for a in arrays]
    return leaves, tg.nested.as_nested_tensor(leaves, layout=J)


def _check_components(out, expected):
    assert isinstance(out, NestedTensor)
    parts = out.unbind()
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        assert tuple(p.shape) == e.shape
        np.testing.assert_allclose(_np(p), e, rtol=0, atol=0)


@pytest.mark.parametrize("dim", [2, -1])
def test_cat_values_and_gradients(dim):
    xs = _arrays(seed=0)
    a, na = _nested(xs)
    nb = na * 2 + 1  # (same ragged structure as na: made from it)
    out = tg.cat([na, nb, na], dim)
    assert out.shape[0] == 3 and out.shape[1] == na.shape[1] and out.shape[2] == 9
    _check_components(out, [np.concatenate([x, 2 * x + 1, x], 1) for x in xs])
    w = [np.random.default_rng(7 + i).standard_normal((n, 9)) for i, n in enumerate(LENS)]
    loss = sum((c * tg.tensor(wi)).sum() for c, wi in zip(out.unbind(), w))
    loss.backward()
    for leaf, wi in zip(a, w):  # d/dx of x, 2x + 1, x along the last dim
        np.testing.assert_allclose(_np(leaf.grad), wi[:, :3] + 2 * wi[:, 3:6] + wi[:, 6:],
                                   rtol=1e-12, atol=1e-12)


def test_cat_inner_dims_may_differ_in_the_cat_dim():
    xs = _arrays(tail=(4, 2))
    _, na = _nested(xs, requires_grad=False)
    narrow = tg.nested.nested_tensor_from_jagged(na.values()[:, :1], na.offsets())
    out = tg.cat([na, narrow], 2)
    _check_components(out, [np.concatenate([x, x[:, :1]], 1) for x in xs])


@pytest.mark.parametrize("dim,axis", [(2, 1), (3, 2), (-1, 2), (-2, 1)])
def test_stack_values_and_gradients(dim, axis):
    xs = _arrays()
    a, na = _nested(xs)
    out = tg.stack([na, na * 3], dim)
    assert out.dim() == 4 and out._ragged_idx == 1
    _check_components(out, [np.stack([x, 3 * x], axis) for x in xs])
    loss = sum(c.sum() * (i + 1) for i, c in enumerate(out.unbind()))
    loss.backward()
    for i, leaf in enumerate(a):  # each element appears as x and 3x
        np.testing.assert_allclose(_np(leaf.grad), np.full(xs[i].shape, 4.0 * (i + 1)))


def test_cat_matches_each_component_alone():
    """Gradients of a loss through cat equal those of cat on each component alone."""
    xs = _arrays(tail=(2, 3))
    a, na = _nested(xs)
    out = tg.cat([na.sin(), na * na], -1)
    b = [tg.tensor(x, requires_grad=True) for x in xs]
    ref = [tg.cat([c.sin(), c * c], -1) for c in b]
    rng = np.random.default_rng(3)
    loss_n = loss_d = 0
    for o, r in zip(out.unbind(), ref):
        np.testing.assert_allclose(_np(o), _np(r), rtol=1e-14, atol=1e-14)
        w = tg.tensor(rng.standard_normal(tuple(r.shape)))
        loss_n, loss_d = loss_n + (o * w).sum(), loss_d + (r * w).sum()
    loss_n.backward()
    loss_d.backward()
    for x, y in zip(a, b):
        np.testing.assert_allclose(_np(x.grad), _np(y.grad), rtol=1e-12, atol=1e-12)


def test_cat_and_stack_finite_differences():
    xs = _arrays(lens=(2, 1), tail=(2,))
    offsets = tg.tensor([0, 2, 3])
    values = tg.tensor(np.concatenate(xs), requires_grad=True)

    def f(v):
        nt = tg.nested.nested_tensor_from_jagged(v, offsets)
        c = tg.cat([nt.tanh(), nt * nt], -1)
        s = tg.stack([c, c.exp()], -1)
        return s.values()

    assert tg.autograd.gradcheck(f, (values,), eps=1e-6, atol=1e-7)
    assert tg.autograd.gradgradcheck(f, (values,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(3,), (1, 3), (1, 1, 3), (3, 1, 3)])
def test_cat_with_a_dense_operand(shape):
    """A dense operand is broadcast to the nested tensor's shape (PyTorch's expand_as); a
    (B, 1, D) one gives row b to component b."""
    xs = _arrays()
    _, na = _nested(xs, requires_grad=False)
    d = np.random.default_rng(5).standard_normal(shape)
    rows = [d.reshape(-1, 3)[i if d.ndim == 3 and d.shape[0] == 3 else 0] for i in range(3)]
    out = tg.cat([na, tg.tensor(d)], -1)
    _check_components(out, [np.concatenate([x, np.broadcast_to(r, x.shape)], 1)
                            for x, r in zip(xs, rows)])
    out = tg.cat([tg.tensor(d), na], -1)
    _check_components(out, [np.concatenate([np.broadcast_to(r, x.shape), x], 1)
                            for x, r in zip(xs, rows)])


def test_dtypes_promote():
    xs = _arrays()
    _, na = _nested(xs, requires_grad=False)
    out = tg.cat([na.float(), na], -1)
    assert out.dtype is tg.float64
    out = tg.stack([na.float(), na.float()], -1)
    assert out.dtype is tg.float32


def test_transposed_ragged_dim():
    xs = _arrays(tail=(3,))
    _, na = _nested(xs, requires_grad=False)
    t = na.transpose(1, 2)  # (B, 3, j)
    out = tg.cat([t, t * 2], 1)
    assert out._ragged_idx == 2 and out.shape[1] == 6
    _check_components(out, [np.concatenate([x.T, 2 * x.T], 0) for x in xs])
    # a new dim before the ragged one moves it on
    out = tg.stack([t, t], 1)
    assert out._ragged_idx == 3
    _check_components(out, [np.stack([x.T, x.T], 0) for x in xs])
    with pytest.raises(RuntimeError, match=r"cat\(\): not supported for NestedTensor on "
                                           r"ragged dim"):
        tg.cat([t, t], 2)


def test_holes_keep_their_lengths():
    values = tg.tensor(np.arange(24.0).reshape(8, 3))
    nt = tg.nested.nested_tensor_from_jagged(values, tg.tensor([0, 3, 8]),
                                             lengths=tg.tensor([2, 4]))
    out = tg.cat([nt, nt], -1)
    assert out.lengths() is not None
    v = np.arange(24.0).reshape(8, 3)
    _check_components(out, [np.concatenate([v[0:2]] * 2, 1), np.concatenate([v[3:7]] * 2, 1)])


def test_errors():
    xs = _arrays()
    _, na = _nested(xs, requires_grad=False)
    with pytest.raises(RuntimeError, match=r"cat\(\): not supported for NestedTensor on dim=0"):
        tg.cat([na, na], 0)
    with pytest.raises(RuntimeError, match="on ragged dim"):
        tg.cat([na, na], 1)
    with pytest.raises(RuntimeError, match=r"stack\(\): not supported for NestedTensor on "
                                           r"dim=0"):
        tg.stack([na, na], 0)
    with pytest.raises(RuntimeError, match="on ragged dim"):
        tg.stack([na, na], 1)
    with pytest.raises(IndexError):
        tg.cat([na, na], 3)
    _, other = _nested(_arrays(lens=(1, 2, 3)), requires_grad=False)
    with pytest.raises(RuntimeError, match="same nested structure"):
        tg.cat([na, other], -1)
    with pytest.raises(RuntimeError, match="same nested structure"):
        tg.stack([na, other], -1)
    _, deep = _nested(_arrays(tail=(3, 2)), requires_grad=False)
    with pytest.raises(RuntimeError, match="same dim"):
        tg.stack([na, deep], -1)
    with pytest.raises(RuntimeError, match="expected all nested tensors inputs"):
        tg.stack([na, tg.zeros(3, 3, dtype=tg.float64)], -1)
    strided = tg.nested.as_nested_tensor([tg.tensor(x) for x in xs])
    for fn in (tg.cat, tg.stack):
        with pytest.raises(NotImplementedError, match="strided layout"):
            fn([strided, strided], -1)


def test_aliases():
    xs = _arrays()
    _, na = _nested(xs, requires_grad=False)
    for fn in (tg.concat, tg.concatenate):
        _check_components(fn([na, na], -1), [np.concatenate([x, x], 1) for x in xs])


# -- against PyTorch ----------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    xs = _arrays(tail=(2, 3))
    for op, dim in (("cat", -1), ("cat", 2), ("stack", 2), ("stack", -1)):
        ta = [torch.tensor(x, requires_grad=True) for x in xs]
        tn = torch.nested.as_nested_tensor(ta, layout=torch.jagged)
        tout = getattr(torch, op)([tn, tn * 2], dim)
        a, na = _nested(xs)
        out = getattr(tg, op)([na, na * 2], dim)
        assert out.dim() == tout.dim() and out._ragged_idx == tout._ragged_idx
        np.testing.assert_allclose(_np(out.values()), tout.values().detach().numpy(), rtol=0,
                                   atol=0)
        w = np.random.default_rng(2).standard_normal(tuple(tout.values().shape))
        (tout.values() * torch.tensor(w)).sum().backward()
        (out.values() * tg.tensor(w)).sum().backward()
        for x, y in zip(a, ta):
            np.testing.assert_allclose(_np(x.grad), y.grad.numpy(), rtol=1e-12, atol=1e-12)
    tn = torch.nested.as_nested_tensor([torch.tensor(x) for x in xs], layout=torch.jagged)
    _, na = _nested(xs, requires_grad=False)
    for op, dim in (("cat", 0), ("cat", 1), ("stack", 0), ("stack", 1)):
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch, op)([tn, tn], dim)
        with pytest.raises(RuntimeError) as ours:
            getattr(tg, op)([na, na], dim)
        assert str(ours.value) == str(theirs.value)


def test_on_device(device):
    """cat and stack on CUDA (real or emulated) agree with the CPU, gradients included."""
    def run(dev):
        leaves = [tg.tensor(x, device=dev, requires_grad=True) for x in _arrays()]
        nt = tg.nested.as_nested_tensor(leaves, layout=J)
        out = tg.stack([tg.cat([nt, nt.exp()], -1), tg.cat([nt, nt], -1)], -1)
        assert out.device.type == dev
        (out.values() ** 2).sum().backward()
        return [_np(out.values())] + [_np(x.grad) for x in leaves]

    for x, y in zip(run(device), run("cpu")):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
