"""Parity of tritongrad.nested (jagged and strided layouts) with torch.nested: chunk along the
batch dim, unsqueeze / squeeze / narrow of jagged nested tensors, chunk / split_with_sizes of
strided ones along the last dim, and PyTorch's error wording. Expected values are computed
with NumPy from the components; a torch comparison runs where torch is installed."""

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.masked  # noqa: F401  (tg.masked is not imported by tritongrad itself)

RNG = np.random.default_rng(35)
A = RNG.standard_normal((2, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
C = RNG.standard_normal((1, 4)).astype(np.float32)


def _jagged(*comps, requires_grad=False):
    return tg.nested.nested_tensor([tg.tensor(c) for c in comps], layout=tg.jagged,
                                   requires_grad=requires_grad)


def _strided(*comps):
    return tg.nested.nested_tensor([tg.tensor(c) for c in comps])


def _parts(nt) -> list:
    return [c.detach().numpy() for c in nt.unbind()]


def _check(nt, expected: list) -> None:
    got = _parts(nt)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-6)


# -- jagged: chunk along the batch dim ---------------------------------------------------------

@pytest.mark.parametrize("chunks, groups", [(2, [[0, 1], [2]]), (3, [[0], [1], [2]]),
                                            (5, [[0], [1], [2]]), (1, [[0, 1, 2]])])
def test_jagged_chunk_batch(chunks, groups):
    comps = (A, B, C)
    parts = _jagged(*comps).chunk(chunks, 0)
    assert len(parts) == len(groups)
    for p, g in zip(parts, groups):
        assert p.is_nested and len(p) == len(g) and p.is_contiguous()
        _check(p, [comps[i] for i in g])
        lens = [comps[i].shape[0] for i in g]
        assert p.offsets().tolist() == np.concatenate([[0], np.cumsum(lens)]).tolist()


def test_jagged_chunk_batch_grad():
    a, b, c = (tg.tensor(x, requires_grad=True) for x in (A, B, C))
    nt = tg.nested.as_nested_tensor([a, b, c], layout=tg.jagged)
    first, second = nt.chunk(2, 0)
    ((first * 2).sum() + (second ** 2).sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full_like(A, 2))
    np.testing.assert_allclose(b.grad.numpy(), np.full_like(B, 2))
    np.testing.assert_allclose(c.grad.numpy(), 2 * C, rtol=1e-6)


def test_jagged_chunk_split_errors():
    nt = _jagged(A, B)
    with pytest.raises(RuntimeError, match=r"^split\(\): not supported for NestedTensor on "
                                           r"dim=0"):
        nt.split(1, 0)
    with pytest.raises(RuntimeError, match=r"^chunk\(\): not supported for NestedTensor on "
                                           r"ragged dim"):
        nt.chunk(2, 1)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        nt.chunk(0, 0)


# -- jagged: unsqueeze / squeeze / narrow -------------------------------------------------------

@pytest.mark.parametrize("dim, ragged_idx, axis", [(1, 2, 0), (2, 1, 1), (-1, 1, 2),
                                                   (-3, 2, 0)])
def test_jagged_unsqueeze(dim, ragged_idx, axis):
    out = _jagged(A, B).unsqueeze(dim)
    assert out.dim() == 4 and out._ragged_idx == ragged_idx
    _check(out, [np.expand_dims(A, axis), np.expand_dims(B, axis)])
    back = out.squeeze(dim)
    assert back._ragged_idx == 1
    _check(back, [A, B])


def test_jagged_squeeze_rules():
    nt = _jagged(A, B)
    assert nt.squeeze(-1) is nt  # a dim of size 4: unchanged, as PyTorch's
    with pytest.raises(RuntimeError, match=r"^unsqueeze\(\): not supported for NestedTensor "
                                           r"on dim=0"):
        nt.unsqueeze(0)
    with pytest.raises(RuntimeError, match=r"^squeeze\(\): not supported for NestedTensor on "
                                           r"ragged dim"):
        nt.squeeze(1)
    with pytest.raises(NotImplementedError):
        nt.squeeze()


def test_jagged_narrow_inner_dim():
    out = _jagged(A, B).narrow(-1, 1, 2)
    assert not out.is_contiguous()  # a view of the values' columns, as PyTorch's
    _check(out, [A[:, 1:3], B[:, 1:3]])
    _check(tg.narrow(_jagged(A, B), 2, 0, 3), [A[:, :3], B[:, :3]])
    with pytest.raises(RuntimeError, match=r"^narrow\(\): not supported for NestedTensor on "
                                           r"dim=0"):
        _jagged(A, B).narrow(0, 0, 1)
    with pytest.raises(RuntimeError, match=r"^narrow\(\): not supported for NestedTensor on "
                                           r"ragged dim"):
        _jagged(A, B).narrow(1, 0, 1)


def test_jagged_narrow_unsqueeze_grad():
    nt = _jagged(A, B, requires_grad=True)
    (nt.narrow(2, 1, 2).unsqueeze(-1) * 3).to_padded_tensor(0.0).sum().backward()
    expected = np.zeros((5, 4), np.float32)
    expected[:, 1:3] = 3
    np.testing.assert_allclose(nt.grad.values().numpy(), expected)


def test_jagged_matmul_error_wording():
    nt = _jagged(A, B)
    with pytest.raises(RuntimeError, match=r"^matmul\(\): not supported between inputs of "
                                           r"shapes"):
        nt @ nt.transpose(-1, -2)


# -- strided: chunk / split_with_sizes along the last dim --------------------------------------

def test_strided_chunk_last_dim():
    a, b = tg.tensor(A, requires_grad=True), tg.tensor(B)
    left, right = tg.nested.as_nested_tensor([a, b]).chunk(2, -1)
    _check(left, [A[:, :2], B[:, :2]])
    _check(right, [A[:, 2:], B[:, 2:]])
    (left.to_padded_tensor(0.0).sum() + 2 * right.to_padded_tensor(0.0).sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.array([[1, 1, 2, 2]] * 2, np.float32))


def test_strided_split_with_sizes():
    nt = _strided(A, B)
    for parts in (nt.split([1, 3], -1), tg.split(nt, [1, 3], 2), nt.split_with_sizes([1, 3], -1)):
        _check(parts[0], [A[:, :1], B[:, :1]])
        _check(parts[1], [A[:, 1:], B[:, 1:]])


def test_strided_chunk_split_errors():
    nt = _strided(A, B)
    with pytest.raises(RuntimeError, match="^Chunk for nested tensors is currently only "
                                           "supported for the last dimension"):
        nt.chunk(2, 1)
    with pytest.raises(RuntimeError, match="^Chunk for nested tensors is only supported for "
                                           "nested tensors with trailing dimension divisible"):
        nt.chunk(3, -1)
    with pytest.raises(RuntimeError, match="^split_with_sizes expects split_sizes to sum "
                                           "exactly to 4"):
        nt.split([1, 2], -1)
    with pytest.raises(RuntimeError, match="^split_with_sizes for nested tensors is currently "
                                           "only supported for the last dimension"):
        nt.split([1, 1], 1)
    with pytest.raises(RuntimeError, match="^Expected all tensors in nested tensor to have the "
                                           "same trailing dimension"):
        _strided(A, B[:, :3]).chunk(2, -1)
    with pytest.raises(NotImplementedError):
        nt.split(2, -1)


# -- construction, narrow, bmm, reductions: PyTorch's rules and wording ------------------------

def test_jagged_mixed_dtypes_refused():
    for make in (tg.nested.nested_tensor, tg.nested.as_nested_tensor):
        with pytest.raises(RuntimeError, match="^When constructing a nested tensor, all tensors "
                                               "in list must have the same dtype"):
            make([tg.tensor(A), tg.tensor(B.astype(np.float64))], layout=tg.jagged)
    # the strided layout converts to the first one's dtype (or dtype=), as PyTorch's
    st = tg.nested.nested_tensor([tg.tensor(A), tg.tensor(B.astype(np.float64))])
    assert st.dtype == tg.float32


def test_jagged_nested_tensor_of_a_tensor():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    nt = tg.nested.nested_tensor(tg.tensor(x), layout=tg.jagged)
    _check(nt, [x[0], x[1]])
    with pytest.raises(TypeError, match=r"^Only lists \(List\[Tensor\] and "):
        tg.nested.nested_tensor(tg.tensor(x))


def test_strided_narrow_batch_dim():
    nt = _strided(A, B, C)
    _check(nt.narrow(0, 1, 2), [B, C])
    _check(tg.narrow(nt, 0, -1, 1), [C])
    with pytest.raises(RuntimeError, match=r"^narrow\(\): only dim=0 supported for nested "
                                           r"tensors, but got: -1"):
        nt.narrow(-1, 0, 1)
    with pytest.raises(RuntimeError, match=r"^start \(2\) \+ length \(2\) exceeds"):
        nt.narrow(0, 2, 2)


def test_jagged_bmm_refused():
    nt = _jagged(A, B)
    for other in (nt, tg.ones(4, 5), tg.ones(2, 4, 5)):
        with pytest.raises(RuntimeError, match=r"^bmm\(\): not supported between inputs of "
                                               r"shapes"):
            tg.bmm(nt, other)


def test_strided_error_wording():
    nt = _strided(A, B)
    with pytest.raises(RuntimeError, match="^Expected both self and other to be nested, but "
                                           "got a nested self and non-nested other"):
        nt * tg.ones(4)
    with pytest.raises(RuntimeError, match="^Expected both to be nested, but got a nested self "
                                           "and non-nested other"):
        nt @ tg.ones(4, 2)
    with pytest.raises(RuntimeError, match="^NestedTensor only allows reduction of a single "
                                           "dimension for now"):
        nt.sum(dim=(1, 2), keepdim=True)


# -- masked -------------------------------------------------------------------------------------

MX = RNG.standard_normal((3, 4))
MK = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], bool)


def test_masked_tensor_to_dense_is_masked():
    mt = tg.masked.masked_tensor(tg.tensor(MX), tg.tensor(MK))
    out = mt.to_dense()
    assert tg.masked.is_masked_tensor(out)
    np.testing.assert_array_equal(out.get_mask().numpy(), MK)


def test_masked_mean_of_masked_tensor_counts_specified_elements():
    # PyTorch 2.13's torch.masked.mean(mt, 1) divides by the full row length (4), a bug: the
    # mean of the specified elements divides by their count
    mt = tg.masked.masked_tensor(tg.tensor(MX), tg.tensor(MK))
    got = tg.masked.mean(mt, 1).numpy()
    with np.errstate(invalid="ignore"):
        expected = np.where(MK, MX, 0).sum(1) / MK.sum(1)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_masked_var_grad_of_empty_row_is_zero():
    # PyTorch gives nan gradients to a fully masked-out row whose (nan) output is not used;
    # no element of it reaches the loss, so its gradient is 0
    x = tg.tensor(MX, requires_grad=True)
    v = tg.masked.var(x, 1, mask=tg.tensor(MK))
    v[tg.tensor([0, 2])].sum().backward()
    g = x.grad.numpy()
    assert np.all(g[1] == 0) and np.all(g[~MK] == 0)
    for r in (0, 2):  # d var / dx = 2 (x - mean) / (n - 1) over the row's specified elements
        sel = MX[r][MK[r]]
        np.testing.assert_allclose(g[r][MK[r]], 2 * (sel - sel.mean()) / (len(sel) - 1),
                                   rtol=1e-10)


# -- the same against torch ---------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")

    def both(fn):
        t = fn(torch, torch.nested.nested_tensor([torch.tensor(A), torch.tensor(B),
                                                  torch.tensor(C)], layout=torch.jagged))
        g = fn(tg, _jagged(A, B, C))
        t = t if isinstance(t, tuple) else (t,)
        g = g if isinstance(g, tuple) else (g,)
        assert len(t) == len(g)
        for x, y in zip(t, g):
            tx = [c.numpy() for c in x.unbind()]
            _check(y, tx)
            assert x.dim() == y.dim() and x._ragged_idx == y._ragged_idx

    both(lambda lib, n: n.chunk(2, 0))
    both(lambda lib, n: n.unsqueeze(-1))
    both(lambda lib, n: n.unsqueeze(1))
    both(lambda lib, n: n.narrow(2, 1, 3))
    tparts = torch.nested.nested_tensor([torch.tensor(A), torch.tensor(B)]).split([1, 3], -1)
    gparts = _strided(A, B).split([1, 3], -1)
    for x, y in zip(tparts, gparts):
        _check(y, [c.numpy() for c in x.unbind()])
