"""PyTorch's top-level functions built from tritongrad's ops: stacking (autograd/ops/stacking.py),
factories (factories.py), sampling (sampling.py), queries (queries.py) and the legacy linear
algebra (linalg_legacy.py), against NumPy float64 references, with gradients by finite
differences and PyTorch's errors."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64


def same(t, ref, tol=1e-12):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_allclose(host(t), ref, rtol=tol, atol=tol)


# -- stacking ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["hstack", "vstack", "row_stack", "dstack", "column_stack"])
@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (2, 3)], [(), ()], [(2, 1, 3)] * 2])
def test_stacks_match_numpy(name, shapes, device):
    if name == "column_stack" and shapes[0] == (2, 1, 3):
        shapes = [(2, 3), (2, 1)]
    xs = [t64(s, device) for s in shapes]
    ref = getattr(np, {"row_stack": "vstack"}.get(name, name))([host(x) for x in xs])
    same(getattr(tg, name)(xs), ref)
    assert_grads_match(lambda *ts: getattr(tg, name)(list(ts)), xs)


def test_stacks_refuse_an_empty_list():
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        with pytest.raises(RuntimeError, match=f"{name} expects a non-empty TensorList"):
            getattr(tg, name)([])


def test_atleast_nd_views_as_numpy(device):
    for nd in (1, 2, 3):
        fn, ref = getattr(tg, f"atleast_{nd}d"), getattr(np, f"atleast_{nd}d")
        for shape in ((), (3,), (2, 3), (2, 3, 4)):
            x = t64(shape, device)
            assert tuple(fn(x).shape) == ref(host(x)).shape
        a, b = fn(t64((), device), t64((4,), device))
        assert (tuple(a.shape), tuple(b.shape)) == (ref(1.0).shape, ref(np.ones(4)).shape)
        assert isinstance(fn([t64((), device)]), tuple) and fn() == ()


def test_broadcast_shapes():
    assert tg.broadcast_shapes((2, 1), (3, 1, 4), 1) == np.broadcast_shapes((2, 1), (3, 1, 4), 1)
    assert isinstance(tg.broadcast_shapes((2,)), tg.Size) and tg.broadcast_shapes() == ()
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 4"):
        tg.broadcast_shapes((2, 3), (4,))
    with pytest.raises(ValueError, match="negative length"):
        tg.broadcast_shapes((-1,))


def test_unravel_index(device):
    idx = np.array([[0, 5, 11], [7, 3, 2]])
    out = tg.unravel_index(tg.tensor(idx, device=device), (2, 3, 2))
    for t, r in zip(out, np.unravel_index(idx, (2, 3, 2))):
        assert t.dtype is tg.int64
        same(t, r)
    # indices past the size wrap (PyTorch's floor division and remainder)
    same(tg.stack(tg.unravel_index(tg.tensor([-1, 7]), (2, 3))), np.array([[1, 0], [2, 1]]))
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        tg.unravel_index(tg.tensor([1.0]), (2,))
    with pytest.raises(ValueError, match="'shape' cannot have negative values"):
        tg.unravel_index(tg.tensor([1]), (-2,))


def test_vander(device):
    x = t64((4,), device)
    same(tg.vander(x), np.vander(host(x)))
    same(tg.vander(x, 3, increasing=True), np.vander(host(x), 3, increasing=True))
    v = tg.vander(tg.tensor([1, 2, 3], device=device))
    assert v.dtype is tg.int64 and host(v).tolist() == np.vander([1, 2, 3]).tolist()
    assert tuple(tg.vander(x, 0).shape) == (4, 0)
    assert_grads_match(lambda t: tg.vander(t, 3), [x])
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor"):
        tg.vander(tg.ones(2, 2))
    with pytest.raises(RuntimeError, match="N must be non-negative"):
        tg.vander(x, -1)


# -- factories -----------------------------------------------------------------------------------

def test_asarray_shares_or_copies_as_pytorch():
    t = tg.ones(3)
    assert tg.asarray(t) is t
    c = tg.asarray(t, copy=True)
    c.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0]
    assert tg.asarray(t, dtype=tg.float64).dtype is tg.float64
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype "
                                         "'Double'"):
        tg.asarray(t, dtype=tg.float64, copy=False)
    a = np.arange(3.0)
    s = tg.asarray(a)
    a[0] = 9.0
    assert s.dtype is tg.float64 and s.tolist() == [9.0, 1.0, 2.0]
    assert tg.asarray(np.float64(2.0)).dtype is tg.float64
    with pytest.raises(ValueError, match="can't alias arbitrary sequence"):
        tg.asarray([1.0, 2.0], copy=False)
    assert tg.asarray([1, 2]).dtype is tg.int64 and tg.asarray(3.5).dtype is tg.float32
    buf = bytearray(np.array([1.0, 2.0], dtype=np.float32).tobytes())
    assert tg.asarray(buf).tolist() == [1.0, 2.0]


def test_asarray_requires_grad():
    u = tg.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="unspecified requires_grad"):
        assert tg.asarray(u) is u
    with pytest.warns(UserWarning, match="unspecified requires_grad"):
        c = tg.asarray(u * 2, copy=True)
    assert c.requires_grad and c.grad_fn is not None
    assert not tg.asarray(u * 2, copy=True, requires_grad=False).requires_grad
    r = tg.asarray([1.0, 2.0], requires_grad=True)
    assert r.requires_grad and r.is_leaf


def test_scalar_tensor_range_empty_permuted(device):
    s = tg.scalar_tensor(3, device=device)
    assert s.dtype is tg.float32 and s.ndim == 0 and s.item() == 3.0
    assert tg.scalar_tensor(2, dtype=tg.int32).dtype is tg.int32
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = tg.range(0, 1, 0.25, dtype=tg.float64, device=device)
    same(r, np.arange(0, 1.25, 0.25))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tg.range(3, 1, -1, dtype=tg.int64).tolist() == [3, 2, 1]
        assert tg.range(1, 4).tolist() == [1.0, 2.0, 3.0, 4.0]
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            tg.range(0, 1, 0)
        with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
            tg.range(3, 1)
    e = tg.empty_permuted((2, 3, 4), (0, 2, 1), device=device)
    assert tuple(e.shape) == (2, 3, 4) and e.stride() == (12, 1, 3)
    with pytest.raises(RuntimeError, match="Duplicate dim not allowed"):
        tg.empty_permuted((2, 3), (0, 0))
    with pytest.raises(RuntimeError, match="len\\(size\\) = 3 is not equal to"):
        tg.empty_permuted((2, 3, 4), (0, 1))


def test_frombuffer_shares_memory():
    buf = bytearray(np.array([1.0, 2.0, 3.0], dtype=np.float32).tobytes())
    t = tg.frombuffer(buf, dtype=tg.float32)
    assert t.tolist() == [1.0, 2.0, 3.0]
    t[0] = 7.0
    assert np.frombuffer(buf, dtype=np.float32)[0] == 7.0
    assert tg.frombuffer(buf, dtype=tg.float32, count=1, offset=4).tolist() == [2.0]
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        tg.frombuffer(buf, dtype=tg.float32, offset=2)
    with pytest.raises(ValueError, match="must not be greater than actual buffer length"):
        tg.frombuffer(buf, dtype=tg.float32, count=4)
    with pytest.raises(ValueError, match="both buffer length \\(0\\) and count"):
        tg.frombuffer(bytearray(), dtype=tg.float32)
    with pytest.raises(ValueError, match="buffer protocol"):
        tg.frombuffer([1, 2], dtype=tg.uint8)


def test_fill_and_in_place_functions(device):
    x = t64((2, 3), device)
    same(tg.fill(x, 2.5), np.full((2, 3), 2.5))
    same(x, host(x))  # (unchanged)
    v = tg.tensor(1.5, dtype=tg.float64, device=device, requires_grad=True)
    (tg.fill(x, v) * 2).sum().backward()
    assert v.grad.item() == 12.0
    with pytest.raises(RuntimeError, match="only supports 0-dimension value tensor"):
        tg.fill(x, tg.ones(1, device=device))
    assert tg.zero_(x.clone()).abs().sum().item() == 0.0


# -- sampling ----------------------------------------------------------------------------------

def test_normal_overloads(device):
    tg.manual_seed(0)
    mean = tg.zeros(2, 1, dtype=tg.float64, device=device)
    std = tg.full((1, 3000), 2.0, dtype=tg.float64, device=device)
    z = tg.normal(mean, std)
    assert tuple(z.shape) == (2, 3000) and z.device == mean.device
    assert abs(host(z).std() - 2.0) < 0.1 and abs(host(z).mean()) < 0.1
    assert tuple(tg.normal(mean, 2.0).shape) == (2, 1)
    assert tuple(tg.normal(1.0, std).shape) == (1, 3000)
    f = tg.normal(3.0, 0.5, (4000,), dtype=tg.float64, device=device)
    assert abs(host(f).mean() - 3.0) < 0.05 and f.dtype is tg.float64
    out = tg.empty(5, device=device)
    assert tg.normal(0.0, 1.0, (5,), out=out) is out
    g = tg.Generator(device).manual_seed(3)
    a = tg.normal(mean, std, generator=g)
    b = tg.normal(mean, std, generator=g.manual_seed(3))
    assert np.array_equal(host(a), host(b))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        tg.normal(mean, -1.0)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        tg.normal(mean, -std)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        tg.normal(0.0, 1.0)


def test_normal_and_poisson_give_zero_gradients():
    m = tg.zeros(3, requires_grad=True)
    s = tg.ones(3, requires_grad=True)
    r = tg.normal(m, s)
    assert type(r.grad_fn).__name__ == "NormalBackward3"
    r.sum().backward()
    assert m.grad.tolist() == [0.0] * 3 and s.grad.tolist() == [0.0] * 3
    rate = tg.tensor([1.0, 2.0], requires_grad=True)
    tg.poisson(rate).sum().backward()
    assert rate.grad.tolist() == [0.0, 0.0]


def test_poisson_and_binomial(device):
    tg.manual_seed(0)
    rates = tg.full((4000,), 3.0, dtype=tg.float64, device=device)
    p = tg.poisson(rates)
    assert p.dtype is tg.float64 and abs(host(p).mean() - 3.0) < 0.15
    assert (host(p) == np.round(host(p))).all()
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        tg.poisson(tg.tensor([-1.0]))
    count = tg.full((4000,), 10.0, device=device)
    b = tg.binomial(count, tg.full((4000,), 0.3, device=device))
    assert abs(host(b).mean() - 3.0) < 0.15 and host(b).max() <= 10
    assert host(tg.binomial(tg.tensor([5.0]), tg.tensor([1.0]))).tolist() == [5.0]
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for "
                                         "count, got: Long"):
        tg.binomial(tg.tensor([10]), tg.tensor([0.5]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        tg.binomial(tg.tensor([10.0]), tg.tensor([0.5], dtype=tg.float64))
    c = tg.tensor([3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
        tg.binomial(c, tg.tensor([0.5])).sum().backward()


def test_randint_like(device):
    x = tg.zeros(50, 4, device=device)
    r = tg.randint_like(x, 3, 7)
    assert r.dtype is tg.float32 and r.device == x.device
    assert set(host(r).ravel().tolist()) <= {3.0, 4.0, 5.0, 6.0}
    assert set(host(tg.randint_like(x, 2)).ravel().tolist()) <= {0.0, 1.0}
    assert tg.randint_like(tg.zeros(2, dtype=tg.int32), 5).dtype is tg.int32
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        tg.randint_like(x, 5, 3)


# -- queries -------------------------------------------------------------------------------------

def test_queries():
    assert tg.is_complex(tg.zeros(1, dtype=tg.complex64)) and not tg.is_complex(tg.zeros(1))
    assert tg.is_floating_point(tg.zeros(1)) and not tg.is_floating_point(tg.zeros(1).long())
    with pytest.raises(TypeError, match="is_complex\\(\\): argument 'input' \\(position 1\\) "
                                        "must be Tensor, not int"):
        tg.is_complex(3)
    u = tg.ones(2, requires_grad=True)
    d = tg.detach(u * 2)
    assert not d.requires_grad and d.tolist() == [2.0, 2.0]
    v = u * 2
    assert tg.detach_(v) is v and not v.requires_grad
    assert tg.typename(tg.ones(2)) == "tritongrad.FloatTensor"
    assert tg.typename(3) == "int" and tg.typename(np.zeros(1)) == "numpy.ndarray"
    assert tg.is_storage(tg.ones(2).untyped_storage()) and not tg.is_storage(tg.ones(2))


# -- legacy linear algebra -----------------------------------------------------------------------

def _lu_reference(a: np.ndarray):
    """P, L, U with a = P L U by Doolittle elimination with partial pivoting (float64)."""
    m, n = a.shape
    u, perm, low = a.copy(), np.arange(m), np.zeros((m, min(m, n)))
    for j in range(min(m, n)):
        p = j + np.argmax(np.abs(u[j:, j]))
        u[[j, p]], perm[[j, p]], low[[j, p]] = u[[p, j]], perm[[p, j]], low[[p, j]]
        low[j + 1:, j] = u[j + 1:, j] / u[j, j]
        u[j + 1:] -= np.outer(low[j + 1:, j], u[j])
    low[:min(m, n)] += np.eye(m, min(m, n))[:min(m, n)]
    return np.eye(m)[:, perm], low, np.triu(u[:min(m, n)])


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_lu_unpack_and_lu_solve(shape):
    a = np.random.default_rng(0).standard_normal(shape)
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        LU, piv = tg.lu(tg.tensor(a))
    P, L, U = tg.lu_unpack(LU, piv)
    for t, r in zip((P, L, U), _lu_reference(a)):
        same(t, r, 1e-10)
    same(P @ L @ U, a, 1e-10)
    if shape[0] == shape[1]:
        b = np.random.default_rng(1).standard_normal((4, 2))
        same(tg.lu_solve(tg.tensor(b), LU, piv), np.linalg.solve(a, b), 1e-10)
    P2, L2, U2 = tg.lu_unpack(LU, piv, unpack_data=False)
    assert L2.numel() == 0 and U2.numel() == 0 and P2.shape == P.shape
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        assert len(tg.lu(tg.tensor(a), get_infos=True)) == 3


def test_norms_chain_matmul_cholesky_inverse():
    a = np.random.default_rng(2).standard_normal((3, 4))
    same(tg.nuclear_norm(tg.tensor(a)), np.linalg.norm(a, "nuc"), 1e-10)
    same(tg.nuclear_norm(tg.tensor(a[None]), (1, 2), keepdim=True),
         np.linalg.norm(a, "nuc").reshape(1, 1, 1), 1e-10)
    same(tg.frobenius_norm(tg.tensor(a), (0, 1)), np.linalg.norm(a), 1e-12)
    with pytest.raises(RuntimeError, match="Expected at most 2 dimensions"):
        tg.frobenius_norm(tg.ones(2, 2, 2), (0, 1, 2))
    b, c = a.T.copy(), np.random.default_rng(3).standard_normal((3, 2))
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        r = tg.chain_matmul(tg.tensor(a), tg.tensor(b), tg.tensor(c))
    same(r, a @ b @ c, 1e-12)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="Expected one or more"):
        tg.chain_matmul()
    low = np.tril(np.random.default_rng(4).standard_normal((3, 3))) + 3 * np.eye(3)
    same(tg.cholesky_inverse(tg.tensor(low)), np.linalg.inv(low @ low.T), 1e-10)
    same(tg.cholesky_inverse(tg.tensor(low.T), upper=True), np.linalg.inv(low @ low.T), 1e-10)


def test_svd_and_pca_lowrank():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((20, 3)) @ rng.standard_normal((3, 8))  # rank 3
    tg.manual_seed(0)
    U, S, V = tg.svd_lowrank(tg.tensor(a), q=4)
    assert tuple(U.shape) == (20, 4) and tuple(V.shape) == (8, 4)
    same(S[:3], np.linalg.svd(a, compute_uv=False)[:3], 1e-8)
    same((U * S) @ V.mT, a, 1e-8)
    same(tg.svd_lowrank(tg.tensor(a.T), q=4)[1][:3], np.linalg.svd(a, compute_uv=False)[:3],
         1e-8)
    _, S, V = tg.pca_lowrank(tg.tensor(a), q=3)
    same(S, np.linalg.svd(a - a.mean(0), compute_uv=False)[:3], 1e-8)
    with pytest.raises(ValueError, match="must be non-negative integer and not greater"):
        tg.pca_lowrank(tg.tensor(a), q=9)


@pytest.mark.parametrize("name", ["matrix_rank", "lstsq", "solve", "symeig", "eig"])
def test_removed_functions_raise_as_pytorch(name):
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        getattr(tg, name)(tg.eye(2), tg.eye(2)) if name in ("lstsq", "solve") else \
            getattr(tg, name)(tg.eye(2))


def test_no_warnings_leak_from_quiet_functions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.hstack([tg.ones(1)])
        tg.unravel_index(tg.tensor([1]), 3)


def test_size_arithmetic_and_slices_stay_sizes():
    s = tg.Size([2, 3])
    for r in (s + (4,), (4,) + s, s + s, s * 2, 2 * s, s[1:], s[::-1]):
        assert type(r) is tg.Size
    assert s + (4,) == (2, 3, 4) and (4,) + s == (4, 2, 3) and s[::-1] == (3, 2)
    assert type(s[0]) is int and s[-1] == 3
    assert repr(s[:1]) == "tritongrad.Size([2])"
    with pytest.raises(TypeError):
        s + [4]
