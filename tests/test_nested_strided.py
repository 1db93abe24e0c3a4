"""tritongrad.nested, strided layout (PyTorch's default): construction, ops and autograd.

Components differ in any dims. Each op is checked against the same op run on each component
separately (dense tensors), values and gradients, in float64; one against finite differences;
and, where PyTorch is installed, against torch.nested's strided layout.
"""

import copy
import types

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nested  # noqa: F401  (tg.nested without the package's import line)
from tritongrad.nested import NestedTensor, StridedNestedTensor

F = tg.nn.functional
SHAPES = ((2, 3, 4), (5, 1, 4), (1, 6, 4))  # (irregular, irregular, regular) component dims


def _arrays(shapes=SHAPES, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _np(t):
    return t.detach().cpu().numpy()


def _leaves(arrays, device="cpu"):
    return [tg.tensor(a, device=device, requires_grad=True) for a in arrays]


def _compare(nested_fn, dense_fn, arrays=None, device="cpu", atol=1e-10):
    """Runs ``nested_fn`` on a strided nested tensor of the components (as_nested_tensor) and
    ``dense_fn`` on each component; compares outputs and the components' gradients under a
    random cotangent."""
    arrays = _arrays() if arrays is None else arrays
    rng = np.random.default_rng(1)
    a = _leaves(arrays, device)
    out = nested_fn(tg.nested.as_nested_tensor(a))
    b = _leaves(arrays, device)
    ref = [dense_fn(c) for c in b]
    outs = out.unbind() if isinstance(out, NestedTensor) else list(out)
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


# -- construction and what it is ----------------------------------------------------------------

def test_nested_tensor_is_a_strided_leaf_copy():
    arrays = _arrays(((2, 3), (4, 5)))
    src = [tg.tensor(a, requires_grad=True) for a in arrays]
    nt = tg.nested.nested_tensor(src)  # (no layout: PyTorch's default, strided)
    assert isinstance(nt, StridedNestedTensor) and nt.is_nested
    assert nt.layout is tg.strided and nt.layout == tg.strided
    assert nt.dim() == nt.ndim == 3 and nt.size(0) == len(nt) == 2
    assert nt.numel() == 6 + 20 and nt.is_leaf and not nt.requires_grad
    assert nt.is_contiguous() and nt.contiguous() is nt
    for c, a in zip(nt.unbind(), arrays):
        np.testing.assert_array_equal(_np(c), a)
    with tg.no_grad():
        src[0].mul_(0)  # a copy: the nested tensor keeps its values
    np.testing.assert_array_equal(_np(nt[0]), arrays[0])
    np.testing.assert_array_equal(_np(nt[1, 2]), arrays[1][2])
    np.testing.assert_array_equal(_np(nt[-1]), arrays[1])
    np.testing.assert_array_equal(_np(nt.select(0, 1)), arrays[1])
    leaf = tg.nested.nested_tensor(src, dtype=tg.float32, requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad and leaf.grad_fn is None
    assert leaf.dtype == tg.float32 and leaf.layout is tg.strided


def test_size_is_defined_on_regular_dims_only():
    nt = tg.nested.nested_tensor([tg.ones(2, 5), tg.ones(3, 5)], layout=tg.strided)
    assert nt.size(0) == 2 and nt.size(2) == nt.size(-1) == 5
    with pytest.raises(RuntimeError, match="Given dimension 1 is irregular and does not have "
                                           "a size."):
        nt.size(1)
    with pytest.raises(RuntimeError, match="doesn't support sizes"):
        nt.size()
    with pytest.raises(RuntimeError, match="doesn't support sizes"):
        nt.shape  # noqa: B018
    with pytest.raises(IndexError, match="out of range"):
        nt.size(3)
    with pytest.raises(AttributeError, match="jagged layout only"):
        nt.offsets()


def test_construction_forms_and_errors():
    nt = tg.nested.nested_tensor([[1.0, 2.0], [3.0]])
    assert [tuple(c.shape) for c in nt.unbind()] == [(2,), (1,)]
    assert tg.nested.nested_tensor([]).dim() == 1
    scalars = tg.nested.nested_tensor([tg.tensor(1.0), tg.tensor(2.0)])
    np.testing.assert_array_equal(_np(scalars.to_padded_tensor(0.0)), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="All Tensors given to nested_tensor must have the "
                                           "same dimension. Found dimension 2 for Tensor at "
                                           "index 1"):
        tg.nested.nested_tensor([tg.ones(2), tg.ones(2, 2)])
    with pytest.raises(RuntimeError, match="Specified layout is unsupported"):
        tg.nested.as_nested_tensor([tg.ones(2)], layout=tg.sparse_coo)
    with pytest.raises(TypeError, match="expected a list of tensors"):
        tg.nested.nested_tensor(tg.ones(2, 2))
    with pytest.raises(RuntimeError, match="Converting between nested tensor layouts"):
        tg.nested.as_nested_tensor(nt, layout=tg.nested.jagged)
    assert tg.nested.as_nested_tensor(nt, layout=tg.strided) is nt


def test_as_nested_tensor_keeps_history():
    out = _compare(lambda nt: nt * 3 - 1, lambda c: c * 3 - 1)
    assert isinstance(out, StridedNestedTensor) and not out.is_leaf
    dense = tg.tensor(np.arange(24.0).reshape(3, 4, 2), requires_grad=True)
    nt = tg.nested.as_nested_tensor(dense)
    assert [tuple(c.shape) for c in nt.unbind()] == [(4, 2)] * 3
    (nt * tg.tensor(2.0)).to_padded_tensor(0.0).sum().backward()
    np.testing.assert_array_equal(_np(dense.grad), np.full((3, 4, 2), 2.0))
    with pytest.raises(RuntimeError, match=r"Expected tensor argument to have dim\(\) > 1"):
        tg.nested.as_nested_tensor(tg.ones(3))


def test_narrow_is_along_the_batch():
    x = tg.tensor(np.arange(36.0).reshape(3, 6, 2))
    nt = tg.nested.narrow(x, 0, 1, 2)
    np.testing.assert_array_equal(_np(nt.to_padded_tensor(0.0)), _np(x)[1:3])
    with pytest.raises(RuntimeError, match="only dim=0 supported"):
        tg.nested.narrow(x, 1, 1, 2)
    with pytest.raises(RuntimeError, match="start and length must be integers"):
        tg.nested.narrow(x, 0, tg.tensor([0]), tg.tensor([1]))


# -- to_padded_tensor ---------------------------------------------------------------------------

def _padded_reference(arrays, padding, size):
    out = np.full(size, padding)
    for i, a in enumerate(arrays):
        out[(i, *(slice(0, n) for n in a.shape))] = a
    return out


def test_to_padded_tensor_pads_every_dim():
    arrays = _arrays()
    nt = tg.nested.as_nested_tensor([tg.tensor(a) for a in arrays])
    got = tg.nested.to_padded_tensor(nt, -1.5)
    np.testing.assert_array_equal(_np(got), _padded_reference(arrays, -1.5, (3, 5, 6, 4)))
    got = nt.to_padded_tensor(0.0, output_size=(4, 6, 7, 5))
    np.testing.assert_array_equal(_np(got), _padded_reference(arrays, 0.0, (4, 6, 7, 5)))
    with pytest.raises(RuntimeError, match="Truncation is not supported"):
        nt.to_padded_tensor(0.0, (3, 4, 6, 4))
    with pytest.raises(RuntimeError, match="Length of output_size does not match NestedTensor "
                                           "dims"):
        nt.to_padded_tensor(0.0, (3, 5, 6))
    # differentiable: the padding gets no gradient, the components their part
    _compare(lambda x: [x.to_padded_tensor(2.0)[i] for i in range(3)],
             lambda c: F.pad(c, [0, 4 - c.shape[2], 0, 6 - c.shape[1], 0, 5 - c.shape[0]],
                             value=2.0))


# -- printing -----------------------------------------------------------------------------------

def test_repr_is_pytorchs():
    comps = [tg.tensor([[1.0, 2.0]]), tg.tensor([3.0, 4.0, 5.0]).reshape(3, 1)]
    nt = tg.nested.nested_tensor(comps)
    expected = ("nested_tensor([\n  tensor([[1., 2.]]),\n  tensor([[3.],\n          [4.],\n"
                "          [5.]])\n])")
    assert repr(nt) == str(nt) == expected
    leaf = tg.nested.nested_tensor(comps, requires_grad=True)
    assert repr(leaf) == expected.replace("]]),\n", "]], requires_grad=True),\n").replace(
        "]])\n])", "]], requires_grad=True)\n], requires_grad=True)")
    assert repr(leaf * 2).endswith("], grad_fn=<MulBackward0>)")
    assert repr(tg.nested.nested_tensor([tg.ones(1)], dtype=tg.float64)) == \
        "nested_tensor([\n  tensor([1.], dtype=tritongrad.float64)\n])"


# -- conversions and autograd state -------------------------------------------------------------

def test_to_detach_clone_requires_grad_and_grad():
    arrays = _arrays(((2, 3), (1, 4)))
    nt = tg.nested.nested_tensor([tg.tensor(a) for a in arrays])
    assert nt.to(tg.float32).dtype == tg.float32 and nt.float().layout is tg.strided
    clone = nt.clone()
    with tg.no_grad():
        clone.mul_(0)
    np.testing.assert_array_equal(_np(nt[1]), arrays[1])
    assert nt.requires_grad_() is nt and nt.is_leaf and nt.requires_grad
    assert not nt.detach().requires_grad and nt.detach().layout is tg.strided
    (nt.sin() * 2).to_padded_tensor(0.0).sum().backward()
    g = nt.grad
    assert isinstance(g, StridedNestedTensor) and g is nt.grad
    for gc, a in zip(g.unbind(), arrays):
        np.testing.assert_allclose(_np(gc), 2 * np.cos(a), atol=1e-12)
    nt.grad = None
    assert nt.grad is None
    out = nt * 3
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        out.requires_grad_(False)
    out.backward(tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(1, 4)], dtype=tg.float64))
    np.testing.assert_array_equal(_np(nt.grad.to_padded_tensor(0.0)),
                                  _padded_reference([np.full((2, 3), 3.0),
                                                     np.full((1, 4), 3.0)], 0.0, (2, 2, 4)))
    with pytest.raises(RuntimeError, match="component sizes"):
        out.backward(tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(2, 4)]))
    copied = copy.deepcopy(nt)
    assert copied.requires_grad and copied.is_leaf and copied.layout is tg.strided
    np.testing.assert_array_equal(_np(copied[0]), arrays[0])


# -- ops against per-component dense computations -----------------------------------------------

_ARRAYS_2D = _arrays(((2, 3), (4, 3), (1, 3)), seed=7)
_ARRAYS_3 = _arrays(((2, 4), (5, 4), (1, 4)), seed=6)
_W = np.random.default_rng(2).standard_normal((5, 4))
_B = np.random.default_rng(3).standard_normal(5)
_LN = np.random.default_rng(4).standard_normal((6, 4))

CASES = [
    ("relu*2+1", lambda x: x.relu() * 2 + 1, None),
    ("exp/tanh", lambda x: x.exp() / (tg.tanh(x) + 2), None),
    ("scalar-x", lambda x: 0.5 - x, None),
    ("0-dim tensor", lambda x: x * tg.tensor(3.0, dtype=tg.float64), None),
    ("gelu", lambda x: F.gelu(x), None),
    ("nested*nested", lambda x: x * x.sigmoid(), None),
    ("nested+nested", lambda x: x * 3 + x.relu(), None),
    ("pow", lambda x: x.abs() ** 1.5, None),
    ("where", lambda x: tg.where(x > 0, x, x * 0.1), None),
    ("masked_fill", lambda x: x.masked_fill(x < 0, -2.0) * x, None),
    ("linear", lambda x: F.linear(x, tg.tensor(_W), tg.tensor(_B)), None),
    ("softmax -1", lambda x: x.softmax(-1), None),
    ("log_softmax 1", lambda x: F.log_softmax(x, 1), lambda c: F.log_softmax(c, 0)),
    ("softmax 2 irregular", lambda x: x.softmax(2), lambda c: c.softmax(1)),
    ("layer_norm", lambda x: F.layer_norm(x, (4,), tg.tensor(_LN[0]), tg.tensor(_LN[1])),
     lambda c: F.layer_norm(c, (4,), tg.tensor(_LN[0]), tg.tensor(_LN[1]))),
    ("sum -1 keepdim", lambda x: x.sum(-1, keepdim=True), lambda c: c.sum(-1, keepdim=True)),
    ("mean -1 keepdim", lambda x: x.mean(-1, keepdim=True), lambda c: c.mean(-1, keepdim=True)),
    ("transpose 1 2", lambda x: x.transpose(1, 2).contiguous() * 2,
     lambda c: c.transpose(0, 1) * 2),
    ("transpose -1 -3", lambda x: x.transpose(-1, -3), lambda c: c.transpose(-1, -3)),
    ("reshape -1", lambda x: x.reshape(3, -1, 2, 2), lambda c: c.reshape(c.shape[0], 2, 2)),
    ("view -1", lambda x: x.view(3, -1, 1, 4), lambda c: c.view(c.shape[0], 1, 4)),
    ("unsqueeze squeeze", lambda x: x.unsqueeze(-1).exp().squeeze(-1), lambda c: c.exp()),
    ("matmul nested", lambda x: tg.matmul(x, x.transpose(-1, -2)),
     lambda c: c @ c.transpose(-1, -2)),
    ("dropout eval", lambda x: F.dropout(x, 0.5, training=False), None),
    ("attention", lambda x: F.scaled_dot_product_attention(x, x * 0.5, x.relu()), None),
    ("dropout p=0", lambda x: F.dropout(x, 0.0), None),
]


# (cases that need 2-D components: one -1 names the irregular dim)
CASE_ARRAYS = {"reshape -1": _ARRAYS_3, "view -1": _ARRAYS_3}


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_op_per_component(name):
    _, fn, dense = next(c for c in CASES if c[0] == name)
    _compare(fn, dense or fn, arrays=CASE_ARRAYS.get(name))


def test_bmm_and_attention_per_component():
    arrays = _ARRAYS_2D
    others = _arrays(((3, 2), (3, 5), (3, 1)), seed=8)
    a1, a2 = _leaves(arrays), _leaves(others)
    n1, n2 = tg.nested.as_nested_tensor(a1), tg.nested.as_nested_tensor(a2)
    out = tg.bmm(n1, n2)
    assert [tuple(c.shape) for c in out.unbind()] == [(2, 2), (4, 5), (1, 1)]
    b1, b2 = _leaves(arrays), _leaves(others)
    ref = [x @ y for x, y in zip(b1, b2)]
    for o, r in zip(out.unbind(), ref):
        np.testing.assert_allclose(_np(o), _np(r), atol=1e-12)
    out.to_padded_tensor(0.0).sum().backward()
    sum(r.sum() for r in ref).backward()
    for x, y in zip(a1 + a2, b1 + b2):
        np.testing.assert_allclose(_np(x.grad), _np(y.grad), atol=1e-12)
    with pytest.raises(RuntimeError, match="0-th nested matrices in batch cannot be "
                                           "multiplied"):
        n1.bmm(n1)
    qkv = _arrays(((2, 3, 4), (2, 5, 4)), seed=9)  # (H, L, E) per component
    _compare(lambda q: F.scaled_dot_product_attention(q, q * 2, q.exp()),
             lambda c: F.scaled_dot_product_attention(c, c * 2, c.exp()), arrays=qkv)


def test_dropout_training_masks_consistently():
    tg.manual_seed(0)
    arrays = _arrays()
    leaves = _leaves(arrays)
    nt = tg.nested.as_nested_tensor(leaves)
    out = F.dropout(nt, 0.5)
    out.to_padded_tensor(0.0).sum().backward()
    for o, a, x in zip(out.unbind(), arrays, leaves):
        o, g = _np(o), _np(x.grad)
        kept = o != 0
        np.testing.assert_allclose(o[kept], 2 * a[kept])  # kept elements scaled by 1 / (1 - p)
        np.testing.assert_array_equal(g, np.where(kept, 2.0, 0.0))
    assert 0.2 < np.mean(np.concatenate([(_np(o) != 0).ravel() for o in out.unbind()])) < 0.8


def test_sum_everything_and_regular_last_dim_paths_agree():
    arrays = _arrays(((2, 3), (4, 5)))
    nt = tg.nested.as_nested_tensor([tg.tensor(a) for a in arrays])
    np.testing.assert_allclose(_np(nt.sum()), sum(a.sum() for a in arrays), atol=1e-12)
    got = nt.amax(-1, keepdim=True)  # irregular last dim: per component
    for g, a in zip(got.unbind(), arrays):
        np.testing.assert_array_equal(_np(g), a.max(-1, keepdims=True))


def test_gradcheck_through_a_chain():
    arrays = _arrays(((2, 4), (3, 4)), seed=11)

    def fn(a, b):
        nt = tg.nested.as_nested_tensor([a, b])
        h = F.layer_norm(F.linear(nt, tg.tensor(_W)).tanh(), (5,)).softmax(1)
        return h.to_padded_tensor(0.0)
    assert tg.autograd.gradcheck(fn, tuple(_leaves(arrays)))


# -- refusals -----------------------------------------------------------------------------------

def test_refusals():
    nt = tg.nested.nested_tensor([tg.ones(2, 3), tg.ones(4, 5)])
    other = tg.nested.nested_tensor([tg.ones(2, 5), tg.ones(3, 5)])
    with pytest.raises(RuntimeError, match="add does not support broadcasting when given a "
                                           "NestedTensor"):
        nt + other
    with pytest.raises(RuntimeError, match="expected both operands to be nested"):
        nt + tg.ones(5)
    with pytest.raises(RuntimeError, match="Nested tensor dimension 0 cannot be transposed"):
        nt.transpose(0, 1)
    with pytest.raises(RuntimeError, match="Cannot apply softmax across nested dimension 0"):
        nt.softmax(0)
    with pytest.raises(RuntimeError, match="always requires keepdim=True"):
        nt.sum(-1)
    with pytest.raises(RuntimeError, match="only be reduced across the last dimension for now "
                                           "got dimension 1"):
        nt.sum(1, keepdim=True)
    with pytest.raises(RuntimeError, match="same trailing dimension"):
        F.linear(nt, tg.ones(4, 5))
    with pytest.raises(RuntimeError, match="normalized_shape extends into irregular"):
        F.layer_norm(nt, (5,))
    with pytest.raises(RuntimeError, match="cannot change or infer the implicit batch"):
        other.reshape(-1, -1, 5)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        other.reshape(2, -1, -1, 1)
    with pytest.raises(RuntimeError, match=r"shape '\[2, 10\]' is invalid for input of size 15"):
        other.reshape(2, 10)
    with pytest.raises(RuntimeError, match="nested tensor does not infer shape"):
        other.reshape(2, 5, 1, -1)
    with pytest.raises(RuntimeError, match="expected both operands to be nested"):
        tg.matmul(other, tg.ones(5, 2))
    with pytest.raises(RuntimeError, match="unsqueezing dimension 0"):
        nt.unsqueeze(0)
    with pytest.raises(RuntimeError, match="squeeze without the dim argument"):
        nt.squeeze()
    with pytest.raises(RuntimeError, match="cannot combine a strided nested tensor with a "
                                           "jagged one"):
        other + tg.nested.nested_tensor([tg.ones(2, 5), tg.ones(3, 5)],
                                        layout=tg.nested.jagged)
    with pytest.raises(NotImplementedError, match="cumsum does not support nested tensors "
                                                  r"\(strided layout\)"):
        tg.cumsum(nt, 2)
    with pytest.raises(NotImplementedError, match="Tensor.flatten does not support nested"):
        nt.flatten()
    with pytest.raises(NotImplementedError, match="cat does not support nested"):
        tg.cat([nt, nt])
    with pytest.raises(NotImplementedError, match="only an integer index"):
        nt[0:1]
    with pytest.raises(IndexError, match="out of bounds"):
        nt[2]
    leaf = tg.nested.nested_tensor([tg.ones(2)], requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place ops on nested tensors that require grad"):
        leaf.mul_(2)


# -- devices ------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the interpreter's masked lanes)
def test_on_device(device):
    arrays = _arrays(((2, 4), (3, 4)), seed=12)
    w = tg.tensor(np.random.default_rng(13).standard_normal((3, 4)), device=device)
    _compare(lambda x: F.linear(x, w).softmax(1).sum(-1, keepdim=True),
             lambda c: F.linear(c, w).softmax(0).sum(-1, keepdim=True), arrays=arrays,
             device=device, atol=1e-6)
    nt = tg.nested.nested_tensor([tg.tensor(a) for a in arrays], device=device)
    assert nt.device.type == device and nt.to("cpu").device.type == "cpu"


# -- PyTorch ------------------------------------------------------------------------------------

# (the cases whose ops torch 2.13 implements for strided nested tensors on the CPU)
TORCH_CASES = ["relu*2+1", "0-dim tensor", "gelu", "nested+nested", "linear", "softmax -1",
               "softmax 2 irregular", "layer_norm", "sum -1 keepdim", "transpose 1 2",
               "reshape -1", "view -1", "matmul nested", "dropout eval", "attention"]


@pytest.mark.parametrize("name", TORCH_CASES)
def test_against_torch(name):
    """Values and gradients as torch.nested's strided layout."""
    torch = pytest.importorskip("torch")
    fn = next(c[1] for c in CASES if c[0] == name)
    # (torch's linear takes 3-D nested tensors only)
    arrays = _ARRAYS_3 if name == "linear" else CASE_ARRAYS.get(name, _arrays())
    results = []
    for lib in (torch, tg):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        nt = lib.nested.as_nested_tensor(leaves, layout=lib.strided)
        out = _torchify(fn, torch)(nt) if lib is torch else fn(nt)
        padded = lib.nested.to_padded_tensor(out, 0.0)
        weights = lib.tensor(np.cos(np.arange(padded.numel())).reshape(tuple(padded.shape)))
        (padded * weights).sum().backward()
        results.append((padded.detach().numpy(), [x.grad.numpy() for x in leaves]))
    (o1, g1), (o2, g2) = results
    np.testing.assert_allclose(o2, o1, atol=1e-10)
    for x, y in zip(g2, g1):
        np.testing.assert_allclose(x, y, atol=1e-10)


def test_repr_and_errors_against_torch():
    torch = pytest.importorskip("torch")
    comps = [[[1.0, 2.5]], [[3.0], [4.0], [-5.0]]]
    mine = tg.nested.nested_tensor([tg.tensor(c) for c in comps], requires_grad=True)
    theirs = torch.nested.nested_tensor([torch.tensor(c) for c in comps], requires_grad=True)
    assert repr(mine) == repr(theirs)
    assert repr(mine * 2).replace("tritongrad", "torch") == repr(theirs * 2)
    for f in (lambda x: x.size(1), lambda x: x.size(), lambda x: x.transpose(0, 1),
              lambda x: x.softmax(0), lambda x: x.sum(-1)):
        with pytest.raises(RuntimeError) as theirs_error:
            f(theirs)
        with pytest.raises(RuntimeError) as mine_error:
            f(mine)
        assert str(mine_error.value) == str(theirs_error.value)


def test_masked_fill_against_torch():
    torch = pytest.importorskip("torch")
    arrays = _arrays()
    got = []
    for lib in (torch, tg):
        nt = lib.nested.nested_tensor([lib.tensor(a) for a in arrays])
        mask = lib.nested.nested_tensor([lib.tensor(a > 0.3) for a in arrays])
        got.append(lib.nested.to_padded_tensor(nt.masked_fill(mask, 7.0), 0.0).numpy())
    np.testing.assert_array_equal(got[1], got[0])


def _torchify(fn, torch):
    """``fn`` (a case written against tritongrad) with ``tg`` meaning ``torch`` and ``F``
    ``torch.nn.functional``."""
    glob = dict(fn.__globals__, tg=torch, F=torch.nn.functional)
    return types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, fn.__closure__)
