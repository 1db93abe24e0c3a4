"""tritongrad.nested: jagged nested tensors, their ops and autograd.

Each op is checked against the same op run on each component separately (a dense tensor),
values and gradients, in float64; a few against finite differences (gradcheck) and, where
PyTorch is installed, against torch.nested.
"""

import re
import types

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nested  # noqa: F401  (tg.nested without the package's import line)
from tritongrad.nested import NestedInt, NestedTensor

F = tg.nn.functional
J = tg.nested.jagged
LENS = (2, 5, 1)
D = 8


def _arrays(lens=LENS, d=D, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, d)) for n in lens]


def _np(t):
    return t.detach().cpu().numpy()


def _leaves(arrays, device="cpu"):
    return [tg.tensor(a, device=device, requires_grad=True) for a in arrays]


def _compare(nested_fn, dense_fn, device="cpu", arrays=None, atol=1e-10):
    """Runs ``nested_fn`` on a nested tensor of the components and ``dense_fn`` on each
    component; compares the outputs and the components' gradients under a random cotangent."""
    arrays = _arrays() if arrays is None else arrays
    rng = np.random.default_rng(1)
    a = _leaves(arrays, device)
    out = nested_fn(tg.nested.as_nested_tensor(a, layout=J))
    b = _leaves(arrays, device)
    ref = [dense_fn(c) for c in b]
    if isinstance(out, NestedTensor):
        outs = out.unbind()
    else:  # a dense (B, ...) result: one row per component
        outs = list(out.unbind(0))
    assert len(outs) == len(ref)
    loss_n, loss_d = 0.0, 0.0
    for o, r in zip(outs, ref):
        assert tuple(o.shape) == tuple(r.shape)
        np.testing.assert_allclose(_np(o), _np(r), atol=atol, rtol=1e-7)
        w = tg.tensor(rng.standard_normal(tuple(r.shape)), device=device)
        loss_n = loss_n + (o * w).sum()
        loss_d = loss_d + (r * w).sum()
    loss_n.backward()
    loss_d.backward()
    for x, y in zip(a, b):
        np.testing.assert_allclose(_np(x.grad), _np(y.grad), atol=atol, rtol=1e-7)
    return out


# -- ops against per-component dense computations -----------------------------------------------

_W = np.random.default_rng(2).standard_normal((6, D))
_BIAS = np.random.default_rng(3).standard_normal(6)
_VEC = np.random.default_rng(4).standard_normal(D)
_PER_BATCH = np.random.default_rng(5).standard_normal((len(LENS), 1, D))

# (name, op on the nested tensor, the same op on one component)
CASES = [
    ("relu*2+1", lambda x: F.relu(x) * 2 + 1, lambda c: F.relu(c) * 2 + 1),
    ("gelu", lambda x: F.gelu(x), lambda c: F.gelu(c)),
    ("gelu tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda c: F.gelu(c, approximate="tanh")),
    ("silu/exp", lambda x: F.silu(x) / (x.exp() + 1), lambda c: F.silu(c) / (c.exp() + 1)),
    ("scalar-tanh", lambda x: 1.5 - tg.tanh(x), lambda c: 1.5 - tg.tanh(c)),
    ("pow,abs", lambda x: x.abs() ** 1.5 + x.pow(2), lambda c: c.abs() ** 1.5 + c.pow(2)),
    ("nested*nested", lambda x: x * x + x.sin() / (2 + x.cos()),
     lambda c: c * c + c.sin() / (2 + c.cos())),
    ("maximum,where", lambda x: tg.where(x > 0, x, 0.1 * x) + tg.maximum(x, x * 0.5),
     lambda c: tg.where(c > 0, c, 0.1 * c) + tg.maximum(c, c * 0.5)),
    ("dense vector", lambda x: x * tg.tensor(_VEC), lambda c: c * tg.tensor(_VEC)),
    ("dense (1, D)", lambda x: x - tg.tensor(_VEC[None]), lambda c: c - tg.tensor(_VEC)),
    ("clamp", lambda x: x.clamp(-0.5, 0.7), lambda c: c.clamp(-0.5, 0.7)),
    ("linear", lambda x: F.linear(x, tg.tensor(_W), tg.tensor(_BIAS)),
     lambda c: F.linear(c, tg.tensor(_W), tg.tensor(_BIAS))),
    ("matmul", lambda x: x @ tg.tensor(_W.T), lambda c: c @ tg.tensor(_W.T)),
    ("softmax -1", lambda x: tg.softmax(x, -1), lambda c: tg.softmax(c, -1)),
    ("log_softmax 2", lambda x: F.log_softmax(x, 2), lambda c: F.log_softmax(c, 1)),
    ("softmax ragged", lambda x: x.softmax(1), lambda c: c.softmax(0)),
    ("log_softmax ragged", lambda x: x.log_softmax(dim=1), lambda c: c.log_softmax(dim=0)),
    ("layer_norm", lambda x: F.layer_norm(x, (D,), tg.tensor(_VEC), tg.tensor(_VEC * 0.5)),
     lambda c: F.layer_norm(c, (D,), tg.tensor(_VEC), tg.tensor(_VEC * 0.5))),
    ("sum ragged", lambda x: x.sum(dim=1), lambda c: c.sum(dim=0)),
    ("mean ragged", lambda x: tg.mean(x, 1), lambda c: tg.mean(c, 0)),
    ("amax ragged", lambda x: x.amax(dim=1), lambda c: c.amax(dim=0)),
    ("sum ragged keepdim", lambda x: x.sum(dim=(1, 2), keepdim=True),
     lambda c: c.sum(dim=(0, 1), keepdim=True)),
    ("sum last", lambda x: x.sum(dim=-1), lambda c: c.sum(dim=-1)),
    ("mean last keepdim", lambda x: x.mean(-1, keepdim=True), lambda c: c.mean(-1, keepdim=True)),
    ("unflatten", lambda x: x.unflatten(-1, (2, 4)).amax(-1),
     lambda c: c.unflatten(-1, (2, 4)).amax(-1)),
    ("view heads", lambda x: x.view(3, -1, 2, 4).transpose(1, 2).softmax(-1).transpose(1, 2)
     .reshape(3, -1, D), lambda c: c.view(-1, 2, 4).softmax(-1).reshape(-1, D)),
    ("chunk", lambda x: x.chunk(2, -1)[1] * 3, lambda c: c.chunk(2, -1)[1] * 3),
    ("split/flatten", lambda x: tg.split(x.unflatten(2, (4, 2)), 1, 2)[1].flatten(2, 3),
     lambda c: tg.split(c.unflatten(1, (4, 2)), 1, 1)[1].flatten(1, 2)),
    ("padded", lambda x: tg.nested.to_padded_tensor(x * 2, -1.0),
     lambda c: tg.cat([c * 2, tg.full((5 - c.shape[0], D), -1.0, dtype=tg.float64)])),
    ("dropout eval", lambda x: F.dropout(x, 0.5, training=False),
     lambda c: F.dropout(c, 0.5, training=False)),
]


@pytest.mark.parametrize("name,nested_fn,dense_fn", CASES, ids=[c[0] for c in CASES])
def test_op_matches_per_component(name, nested_fn, dense_fn):
    _compare(nested_fn, dense_fn)


def test_dense_operand_per_batch():
    # a (B, 1, D) dense operand adds row b to every row of component b
    rows = [tg.tensor(_PER_BATCH[i]) for i in range(len(LENS))]
    arrays = _arrays()
    a = _leaves(arrays)
    dense = tg.tensor(_PER_BATCH, requires_grad=True)
    out = tg.nested.as_nested_tensor(a, layout=J) * dense
    for o, x, r in zip(out.unbind(), arrays, rows):
        np.testing.assert_allclose(_np(o), x * _np(r))
    out.sum().backward()
    sums = np.stack([x.sum(0, keepdims=True) for x in arrays])
    np.testing.assert_allclose(_np(dense.grad), sums)
    for x, r in zip(a, rows):
        np.testing.assert_allclose(_np(x.grad), np.broadcast_to(_np(r), x.shape))


def test_full_reductions():
    arrays = _arrays()
    nt = tg.nested.as_nested_tensor(_leaves(arrays), layout=J)
    everything = np.concatenate(arrays)
    np.testing.assert_allclose(_np(nt.sum()), everything.sum())
    np.testing.assert_allclose(_np(nt.mean()), everything.mean())
    np.testing.assert_allclose(_np(nt.sum(dim=(0, 1))), everything.sum(0))
    np.testing.assert_allclose(_np(nt.amin(dim=(0, 1))), everything.min(0))
    n_all = everything.size
    leaves = _leaves(arrays)
    tg.nested.as_nested_tensor(leaves, layout=J).mean().backward()
    for x in leaves:
        np.testing.assert_allclose(_np(x.grad), np.full(x.shape, 1.0 / n_all))
    # with holes (narrow): the mean over batch and ragged dims counts the elements shown
    x = tg.tensor(np.arange(30.0).reshape(2, 5, 3), requires_grad=True)
    n = tg.nested.narrow(x, 1, tg.tensor([0, 1]), tg.tensor([3, 2]), layout=J)
    shown = np.concatenate([_np(x)[0, :3], _np(x)[1, 1:3]])
    np.testing.assert_allclose(_np(n.mean(dim=(0, 1))), shown.mean(0))
    np.testing.assert_allclose(_np(n.sum()), shown.sum())
    n.sum().backward()
    want = np.zeros((2, 5, 3))
    want[0, :3] = want[1, 1:3] = 1
    np.testing.assert_allclose(_np(x.grad), want)


def test_scaled_dot_product_attention():
    rng = np.random.default_rng(6)
    heads, dh = 2, 4

    def attention(q, k, v, **kw):
        return F.scaled_dot_product_attention(q, k, v, **kw)

    for kw in ({}, {"is_causal": True}, {"scale": 0.3}):
        qa, ka = _arrays(seed=7), _arrays(lens=(3, 2, 4), seed=8)
        q, k, v = _leaves(qa), _leaves(ka), _leaves([a * 0.5 for a in ka])

        def split(t):  # (B, j, H*Dh) -> (B, H, j, Dh)
            return t.unflatten(-1, (heads, dh)).transpose(1, 2)
        nq, nk, nv = (tg.nested.as_nested_tensor(t, layout=J) for t in (q, k, v))
        out = attention(split(nq), split(nk), split(nv), **kw)
        assert out.shape[:2] == (3, heads) and out.shape[2] == nq.shape[1]
        out = out.transpose(1, 2).flatten(-2, -1)
        q2, k2, v2 = _leaves(qa), _leaves(ka), _leaves([a * 0.5 for a in ka])
        loss_n, loss_d = 0.0, 0.0
        for i, o in enumerate(out.unbind()):
            r = attention(*(t[i].unflatten(-1, (heads, dh)).transpose(0, 1)
                            for t in (q2, k2, v2)), **kw).transpose(0, 1).flatten(-2, -1)
            np.testing.assert_allclose(_np(o), _np(r), atol=1e-12)
            w = tg.tensor(rng.standard_normal(tuple(r.shape)))
            loss_n, loss_d = loss_n + (o * w).sum(), loss_d + (r * w).sum()
        loss_n.backward()
        loss_d.backward()
        for x, y in zip((*q, *k, *v), (*q2, *k2, *v2)):
            np.testing.assert_allclose(_np(x.grad), _np(y.grad), atol=1e-12)


def test_dropout_keeps_structure_and_scales():
    nt = tg.nested.nested_tensor([tg.ones(40, 4), tg.ones(30, 4)], layout=J,
                                 requires_grad=True)
    out = F.dropout(nt, 0.5)
    assert out.offsets() is nt.offsets()
    vals = _np(out.values())
    assert set(np.unique(vals)) <= {0.0, 2.0} and 0 < (vals == 0).sum() < vals.size
    out.sum().backward()
    np.testing.assert_allclose(_np(nt.grad.values()), vals)  # the mask times 1 / (1 - p)


def test_gradcheck_from_jagged():
    rng = np.random.default_rng(9)
    offsets = tg.tensor([0, 2, 3, 7])
    values = tg.tensor(rng.standard_normal((7, 4)), requires_grad=True)
    weight = tg.tensor(rng.standard_normal((3, 4)))

    def f(v):
        nt = tg.nested.nested_tensor_from_jagged(v, offsets)
        h = F.layer_norm(F.linear(nt, weight).tanh(), (3,))
        return h.softmax(1).sum(dim=1) + nt.mean(dim=1).sum(-1, keepdim=True)
    assert tg.autograd.gradcheck(f, (values,))


# -- construction -------------------------------------------------------------------------------

def test_nested_tensor_copies_and_is_a_leaf():
    a, b = tg.arange(6.0).reshape(2, 3), tg.ones(4, 3)
    nt = tg.nested.nested_tensor([a, b], layout=J, dtype=tg.float64, requires_grad=True)
    assert nt.is_leaf and nt.grad_fn is None and nt.requires_grad
    assert nt.is_nested and nt.layout is J and nt.dtype is tg.float64
    assert nt.dim() == nt.ndim == 3 and len(nt) == 2 and nt.numel() == 18
    a.mul_(0)
    np.testing.assert_allclose(_np(nt.unbind()[0]), np.arange(6.0).reshape(2, 3))
    assert nt.offsets().tolist() == [0, 2, 6] and nt.lengths() is None
    assert nt.is_contiguous()
    # plain values, python lists
    nt2 = tg.nested.nested_tensor([[1.0, 2.0], [3.0]], layout=J)
    assert [c.tolist() for c in nt2.unbind()] == [[1.0, 2.0], [3.0]]
    assert not nt2.requires_grad and nt2.is_leaf


def test_shape_size_and_repr():
    nt = tg.nested.nested_tensor([tg.ones(2, 4), tg.ones(3, 4)], layout=J)
    j = nt.shape[1]
    assert isinstance(j, NestedInt) and nt.size(1) == j and j != 2
    assert nt.size(0) == 2 and nt.size(-1) == 4 and nt.size(2) == 4
    assert re.fullmatch(r"tritongrad\.Size\(\[2, j\d+, 4\]\)", repr(nt.shape))
    assert tuple(nt.shape) == (2, j, 4)
    with pytest.raises(IndexError):
        nt.size(3)
    # the same structure keeps the symbol through ops; another structure gets another
    assert (nt * 2).shape == nt.shape and F.relu(nt).shape[1] == j
    other = tg.nested.nested_tensor([tg.ones(2, 4), tg.ones(3, 4)], layout=J)
    assert other.shape[1] != j
    text = repr(nt)
    assert re.fullmatch(r"NestedTensor\(size=\(2, j\d+, 4\), offsets=tensor\(\[0, 2, 5\]\), "
                        r"contiguous=True\)", text), text
    leaf = tg.nested.nested_tensor([tg.ones(3)], layout=J, requires_grad=True)
    assert "requires_grad=True" in repr(leaf)
    assert "grad_fn=" in repr(leaf * 2)


def test_components_in_another_dim():
    nt = tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(2, 5)], layout=J)
    assert nt.shape[:2] == (2, 2) and isinstance(nt.shape[2], NestedInt)
    assert [tuple(c.shape) for c in nt.unbind()] == [(2, 3), (2, 5)]
    np.testing.assert_allclose(_np(nt.sum(dim=2)), np.array([[3.0, 3.0], [5.0, 5.0]]))


def test_as_nested_tensor():
    a, b = _leaves(_arrays(lens=(3, 1)))
    nt = tg.nested.as_nested_tensor([a, b], layout=J)
    assert not nt.is_leaf and nt.requires_grad
    grad = tg.nested.nested_tensor([tg.ones(3, D, dtype=tg.float64),
                                    tg.zeros(1, D, dtype=tg.float64)], layout=J)
    nt.backward(grad)
    np.testing.assert_allclose(_np(a.grad), np.ones((3, D)))
    np.testing.assert_allclose(_np(b.grad), np.zeros((1, D)))
    # a dense (B, N, ...) tensor: B components of N rows, differentiable
    x = tg.randn(2, 3, 4, requires_grad=True)
    nt = tg.nested.as_nested_tensor(x, layout=J)
    assert nt.offsets().tolist() == [0, 3, 6] and nt.shape[0] == 2
    (nt * 3).sum().backward()
    np.testing.assert_allclose(_np(x.grad), np.full((2, 3, 4), 3.0))
    # a nested tensor is returned, or converted
    assert tg.nested.as_nested_tensor(nt, layout=J) is nt
    assert tg.nested.as_nested_tensor(nt, dtype=tg.float64).dtype is tg.float64


def test_nested_tensor_from_jagged():
    values = tg.randn(6, 3, requires_grad=True)
    offsets = tg.tensor([0, 2, 6])
    nt = tg.nested.nested_tensor_from_jagged(values, offsets)
    assert nt.offsets() is offsets and nt._max_seqlen == 4 and nt._min_seqlen == 2
    np.testing.assert_array_equal(_np(nt.values()), _np(values))
    # the same offsets tensor: the same ragged symbol, so nested tensors combine
    nt2 = tg.nested.nested_tensor_from_jagged(values * 2, offsets)
    assert (nt + nt2).shape == nt.shape
    (nt * nt2).sum().backward()
    np.testing.assert_allclose(_np(values.grad), 4 * _np(values))
    # lengths only; lengths with offsets (holes); cached seqlens; jagged_dim
    by_len = tg.nested.nested_tensor_from_jagged(values, lengths=tg.tensor([1, 5]),
                                                 max_seqlen=7)
    assert by_len.offsets().tolist() == [0, 1, 6] and by_len._max_seqlen == 7
    holes = tg.nested.nested_tensor_from_jagged(values, tg.tensor([0, 3, 6]),
                                                tg.tensor([2, 1]))
    assert not holes.is_contiguous() and holes.lengths().tolist() == [2, 1]
    comps = holes.unbind()
    np.testing.assert_array_equal(_np(comps[1]), _np(values)[3:4])
    contig = holes.contiguous()
    assert contig.is_contiguous() and contig.offsets().tolist() == [0, 2, 3]
    t = tg.randn(3, 7, 2)
    dim2 = tg.nested.nested_tensor_from_jagged(t, tg.tensor([0, 4, 7]), jagged_dim=2)
    assert dim2.shape[:2] == (2, 3) and dim2.shape[3] == 2
    np.testing.assert_array_equal(_np(dim2.unbind()[1]), _np(t)[:, 4:7])


def test_narrow_and_to_padded_tensor():
    x = tg.tensor(np.arange(30.0).reshape(2, 5, 3), requires_grad=True)
    nt = tg.nested.narrow(x, 1, tg.tensor([0, 2]), tg.tensor([3, 2]), layout=J)
    assert not nt.is_contiguous() and nt.lengths().tolist() == [3, 2]
    np.testing.assert_array_equal(_np(nt.unbind()[1]), _np(x)[1, 2:4])
    padded = nt.to_padded_tensor(-1.0, output_size=(3, 4, 4))
    want = np.full((3, 4, 4), -1.0)
    want[0, :3, :3] = _np(x)[0, :3]
    want[1, :2, :3] = _np(x)[1, 2:4]
    np.testing.assert_array_equal(_np(padded), want)
    (padded * 2).sum().backward()
    g = np.zeros((2, 5, 3))
    g[0, :3] = g[1, 2:4] = 2
    np.testing.assert_array_equal(_np(x.grad), g)
    same = tg.nested.narrow(x.detach(), 1, 1, 2, layout=J)
    assert [tuple(c.shape) for c in same.unbind()] == [(2, 3), (2, 3)]
    with pytest.raises(RuntimeError, match="Truncation is not supported"):
        tg.nested.to_padded_tensor(nt, 0.0, (2, 2, 3))


def test_masked_select():
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    mask = tg.tensor([[True, False, True], [False, False, True]])
    nt = tg.nested.masked_select(x, mask)
    assert nt.offsets().tolist() == [0, 2, 3]
    assert [c.tolist() for c in nt.unbind()] == [[0.0, 2.0], [5.0]]
    (nt * 2).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), 2 * _np(mask).astype(float))


# -- the tensor itself --------------------------------------------------------------------------

def test_leaf_grad_is_nested_and_accumulates():
    nt = tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(1, 3)], layout=J)
    assert not nt.requires_grad
    assert nt.requires_grad_() is nt and nt.requires_grad and nt.is_leaf
    (nt * 3).sum().backward()
    (nt * 3).sum().backward()
    g = nt.grad
    assert isinstance(g, NestedTensor) and g.offsets() is nt.offsets() and nt.grad is g
    np.testing.assert_array_equal(_np(g.values()), np.full((3, 3), 6.0))
    nt.grad = None
    assert nt.grad is None
    nt.requires_grad_(False)
    assert not nt.requires_grad
    with pytest.raises(RuntimeError, match="leaf"):
        (nt.requires_grad_() * 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="floating point"):
        tg.nested.nested_tensor([tg.ones(2, dtype=tg.int64)], layout=J).requires_grad_()


def test_conversions_detach_clone():
    nt = tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(1, 3)], layout=J, requires_grad=True)
    for out in (nt.to(tg.float64), nt.double(), nt.detach(), nt.clone()):
        assert isinstance(out, NestedTensor) and out.shape == nt.shape
    assert nt.to(tg.float64).dtype is tg.float64 and not nt.detach().requires_grad
    c = nt.clone()
    assert c.requires_grad and not c.is_leaf and c.values().data_ptr() != nt.values().data_ptr()
    c.sum().backward()
    np.testing.assert_array_equal(_np(nt.grad.values()), np.ones((3, 3)))
    with tg.no_grad():
        d = nt.detach()
        d.mul_(2)  # in place without autograd: on the shared values
    np.testing.assert_array_equal(_np(nt.values()), np.full((3, 3), 2.0))


def test_iteration_and_indexing():
    arrays = _arrays()
    nt = tg.nested.nested_tensor([tg.tensor(a) for a in arrays], layout=J)
    for i, c in enumerate(nt.unbind()):
        np.testing.assert_array_equal(_np(c), arrays[i])
    np.testing.assert_array_equal(_np(nt[1]), arrays[1])
    np.testing.assert_array_equal(_np(nt[-1]), arrays[-1])
    np.testing.assert_array_equal(_np(nt.select(0, 0)), arrays[0])
    with pytest.raises(IndexError):
        nt[3]


def test_transposed_and_embedding():
    arrays = _arrays()
    _compare(lambda x: x.transpose(1, 2).softmax(-1).sum(dim=2),
             lambda c: c.transpose(0, 1).softmax(-1).sum(dim=1), arrays=arrays)
    _compare(lambda x: x.transpose(1, 2).mean(dim=1).exp().sum(-1),
             lambda c: c.transpose(0, 1).mean(dim=0).exp().sum(-1), arrays=arrays)
    idx = tg.nested.nested_tensor([tg.tensor([1, 2, 3]), tg.tensor([0])], layout=J)
    weight = tg.randn(5, 4, requires_grad=True)
    out = F.embedding(idx, weight)
    assert out.offsets() is idx.offsets() and tuple(out.shape)[2] == 4
    np.testing.assert_array_equal(_np(out.unbind()[0]), _np(weight)[[1, 2, 3]])
    out.sum().backward()
    np.testing.assert_array_equal(_np(weight.grad)[:, 0], [1, 1, 1, 1, 0])


def test_modules_and_copies():
    import copy
    import pickle
    nn = tg.nn
    model = nn.Sequential(nn.Linear(D, 6), nn.GELU(), nn.LayerNorm(6), nn.Dropout(0.0))
    model.double()
    arrays = _arrays()
    out = _compare(lambda x: model(x), lambda c: model(c), arrays=arrays)
    assert isinstance(out, NestedTensor)
    nt = tg.nested.nested_tensor([tg.tensor(a) for a in arrays], layout=J, requires_grad=True)
    for twin in (copy.deepcopy(nt), pickle.loads(pickle.dumps(nt))):
        assert isinstance(twin, NestedTensor) and twin.is_leaf and twin.requires_grad
        assert twin.offsets().tolist() == nt.offsets().tolist()
        np.testing.assert_array_equal(_np(twin.values()), _np(nt.values()))
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(nt * 2)


# -- errors -------------------------------------------------------------------------------------

def test_refusals():
    a, b = tg.ones(2, 4), tg.ones(3, 4)
    nt = tg.nested.nested_tensor([a, b], layout=J)
    # (no layout means strided, PyTorch's default: tests/test_nested_strided.py)
    assert tg.nested.nested_tensor([a, b]).layout is tg.strided
    with pytest.raises(RuntimeError, match="Specified layout is unsupported for nested "
                                           "tensors: tritongrad.sparse_coo"):
        tg.nested.nested_tensor([a, b], layout=tg.sparse_coo)
    with pytest.raises(RuntimeError, match="empty tensor list"):
        tg.nested.nested_tensor([], layout=J)
    with pytest.raises(RuntimeError, match="zero-dim"):
        tg.nested.nested_tensor([tg.tensor(1.0)], layout=J)
    with pytest.raises(RuntimeError, match="same dim"):
        tg.nested.nested_tensor([a, tg.ones(3)], layout=J)
    with pytest.raises(RuntimeError, match="one dimension only"):
        tg.nested.nested_tensor([a, tg.ones(3, 5)], layout=J)
    with pytest.raises(RuntimeError, match="At least one of offsets or lengths"):
        tg.nested.nested_tensor_from_jagged(tg.ones(3, 2))
    with pytest.raises(ValueError, match="jagged_dim >=1"):
        tg.nested.nested_tensor_from_jagged(tg.ones(3, 2), tg.tensor([0, 3]), jagged_dim=0)
    with pytest.raises(RuntimeError, match="only supports dim=1"):
        tg.nested.narrow(tg.ones(2, 3), 0, 0, 1, layout=J)
    other = tg.nested.nested_tensor([a, b], layout=J)
    with pytest.raises(RuntimeError, match=r"cannot call binary pointwise function add with "
                                           r"inputs of shapes \(2, j\d+, 4\) and"):
        nt + other
    with pytest.raises(RuntimeError, match="cannot broadcast a dense tensor of shape"):
        nt + tg.ones(2, 4)
    with pytest.raises(ValueError, match="Transpose is not supported on the batch dimension"):
        nt.transpose(0, 1)
    with pytest.raises(RuntimeError, match="reducing along the batch dimension but not the "
                                           "ragged"):
        nt.sum(0)
    with pytest.raises(RuntimeError, match="batch dimension"):
        nt.softmax(0)
    with pytest.raises(RuntimeError, match="over the ragged or batch dimension"):
        F.layer_norm(nt, (3, 4))
    with pytest.raises(RuntimeError, match="only supported for NestedTensor on dim=0"):
        nt.unbind(1)
    with pytest.raises(RuntimeError, match="dense 2-D matrix"):
        tg.matmul(tg.ones(2, 2), nt)
    with pytest.raises(NotImplementedError, match="cumsum does not support nested tensors"):
        tg.cumsum(nt, 2)
    with pytest.raises(NotImplementedError, match="Tensor.sort does not support nested"):
        nt.sort()
    with pytest.raises(NotImplementedError, match="does not support nested tensors"):
        bool(nt)
    with pytest.raises(RuntimeError, match="scalar outputs"):
        nt.backward()
    leaf = tg.nested.nested_tensor([a, b], layout=J, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place ops on nested tensors that require grad"):
        leaf.mul_(2)
    with pytest.raises(RuntimeError, match="attn_mask"):
        q = leaf.unflatten(-1, (2, 2)).transpose(1, 2)
        F.scaled_dot_product_attention(q, q, q, attn_mask=tg.ones(1))
    with pytest.raises(RuntimeError, match=r"\(B, H, j, D\)"):
        q = leaf.unflatten(-1, (2, 2))
        F.scaled_dot_product_attention(q, q, q)


# -- devices ------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the interpreter's masked lanes)
def test_on_device(device):
    arrays = _arrays(lens=(2, 3), d=4)
    w = np.random.default_rng(10).standard_normal((3, 4))

    def nested(x):
        return F.linear(x, tg.tensor(w, device=device)).softmax(-1).sum(dim=1)

    def dense(c):
        return F.linear(c, tg.tensor(w, device=device)).softmax(-1).sum(dim=0)
    _compare(nested, dense, device=device, arrays=arrays, atol=1e-6)
    nt = tg.nested.nested_tensor([tg.tensor(a) for a in arrays], layout=J, device=device,
                                 requires_grad=True)
    assert nt.device.type == device and nt.offsets().device.type == device
    moved = nt.cpu()
    assert moved.offsets().device.type == "cpu" and moved.shape == nt.shape


# -- PyTorch ------------------------------------------------------------------------------------

TORCH_CASES = ["relu*2+1", "gelu", "silu/exp", "scalar-tanh", "nested*nested", "dense vector",
               "linear", "matmul", "softmax -1", "layer_norm", "amax ragged", "chunk",
               "mean last keepdim", "dropout eval"]


@pytest.mark.parametrize("name", TORCH_CASES)
def test_against_torch(name):
    """Values and gradients as torch.nested's (where its backward is implemented and right:
    its softmax over the ragged dim has a wrong gradient, and its sums over dims have no
    backward, so those are checked per component above)."""
    torch = pytest.importorskip("torch")
    fn = dict((c[0], c[1]) for c in CASES)[name]
    arrays = _arrays()
    results = []
    for lib, layout in ((torch, torch.jagged), (tg, J)):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        nt = lib.nested.as_nested_tensor(leaves, layout=layout)
        out = _torchify(fn, torch)(nt) if lib is torch else fn(nt)
        padded = out.to_padded_tensor(0.0) if out.is_nested else out
        weights = lib.tensor(np.cos(np.arange(padded.numel())).reshape(tuple(padded.shape)))
        (padded * weights).sum().backward()
        results.append((padded.detach().numpy(), [x.grad.numpy() for x in leaves]))
    (o1, g1), (o2, g2) = results
    np.testing.assert_allclose(o2, o1, atol=1e-10)
    for x, y in zip(g2, g1):
        np.testing.assert_allclose(x, y, atol=1e-10)


def _torchify(fn, torch):
    """``fn`` (a case written against tritongrad) with ``tg`` meaning ``torch`` and ``F``
    ``torch.nn.functional``."""
    if fn.__name__ != "<lambda>":
        return getattr(torch.nn.functional, fn.__name__)
    glob = dict(fn.__globals__, tg=torch, F=torch.nn.functional)
    return types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, fn.__closure__)


def test_docstring_examples_run():
    """The examples in the docstrings print what they say."""
    import doctest
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    ran = 0
    for name in tg.nested.__all__:
        if name == "jagged":
            continue
        for test in finder.find(getattr(tg.nested, name), name, globs={"tritongrad": tg}):
            ran += len(test.examples)
            runner.run(test)
    assert ran > 20
    assert runner.failures == 0, runner.summarize(verbose=False)
