"""Scans, products and sets (autograd/ops/scans.py, products.py, sets.py): cumprod, cummax,
cummin, logcumsumexp, diff, trapezoid, kron, tensordot, cross, meshgrid, cartesian_prod,
combinations, block_diag, cdist, searchsorted, bucketize, unique, unique_consecutive,
bincount, histc; against NumPy float64 references, with gradients by finite differences and
PyTorch's errors."""

import itertools
import math
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order, t64


def same(t, ref, rtol=1e-12):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_allclose(host(t), ref, rtol=rtol, atol=1e-12)


# -- scans ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_matches_numpy_and_is_exact_at_zeros(dim, device):
    x = t64((3, 5), device)
    same(tg.cumprod(x, dim), np.cumprod(host(x), dim))
    same(x.cumprod(dim), np.cumprod(host(x), dim))
    z = tg.tensor([[2., 0., 3., -1., 0.5]], dtype=tg.float64, device=device)
    same(tg.cumprod(z, 1), np.cumprod(host(z), 1))
    # the gradient through a zero is not a division by it
    assert_grads_match(lambda t: tg.cumprod(t, 1), [z.requires_grad_()])
    assert_grads_match(lambda t: tg.cumprod(t, dim), [x.requires_grad_()])


def test_cumprod_dtypes_and_scalars():
    assert tg.cumprod(tg.tensor([True, True]), 0).dtype is tg.int64
    assert tg.cumprod(tg.tensor([2, 3], dtype=tg.int32), 0).tolist() == [2, 6]
    assert tg.cumprod(tg.tensor(3.), 0).item() == 3.
    assert tg.cumprod(tg.tensor([1, 2]), 0, dtype=tg.float64).dtype is tg.float64


def _running(values, better):
    """PyTorch's cummax/cummin loop: NaN wins, ties take the later index."""
    out, idx, best, at = [], [], None, 0
    for i, v in enumerate(values):
        if best is None or math.isnan(v) or (not math.isnan(best) and better(v, best)):
            best, at = v, i
        out.append(best)
        idx.append(at)
    return out, idx


@pytest.mark.parametrize("name,better", [("cummax", lambda a, b: a >= b),
                                         ("cummin", lambda a, b: a <= b)])
def test_cummax_cummin(name, better, device):
    vals = [1., 3., 3., float("nan"), 2., float("nan"), 0., 5.]
    x = tg.tensor(vals, dtype=tg.float64, device=device)
    r = getattr(tg, name)(x, 0)
    ref_v, ref_i = _running(vals, better)
    np.testing.assert_array_equal(host(r.values), ref_v)
    assert host(r.indices).tolist() == ref_i
    assert r.indices.dtype is tg.int64
    ints = tg.tensor([[2, 2, 1, 4], [0, 0, 0, 0]], device=device)
    r = getattr(ints, name)(1)
    for row, v, i in zip(host(ints).tolist(), host(r.values).tolist(),
                         host(r.indices).tolist()):
        assert (v, i) == tuple(map(list, _running(row, better)))
    x = t64((4, 6), device).requires_grad_()
    assert_grads_match(lambda t: getattr(tg, name)(t, 1).values, [x])
    assert repr(getattr(tg, name)(tg.ones(2), 0)).startswith(f"tritongrad.return_types.{name}(")


def test_logcumsumexp(device):
    x = t64((3, 7), device, -5, 5)
    ref = np.log(np.cumsum(np.exp(host(x)), 1))
    same(tg.logcumsumexp(x, 1), ref)
    far = tg.tensor([-1000., 0., 1000., 999.], dtype=tg.float64, device=device)
    same(far.logcumsumexp(0), [-1000., np.log1p(np.exp(-1000.)), 1000.,
                               1000. + np.log1p(np.exp(-1.))])
    assert_grads_match(lambda t: tg.logcumsumexp(t, 0), [x.requires_grad_()])
    second_order(lambda t: tg.logcumsumexp(t, 1), [x])
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.logcumsumexp(tg.tensor([1, 2]), 0)


@pytest.mark.parametrize("n,dim", [(1, -1), (2, 0), (3, 1), (0, 1), (9, 1)])
def test_diff(n, dim, device):
    x = t64((4, 5), device)
    same(tg.diff(x, n, dim), np.diff(host(x), n, dim))
    pre, app = t64((4, 2), device), t64((4, 1), device)
    same(x.diff(n, 1, pre, app), np.diff(host(x), n, 1, prepend=host(pre), append=host(app)))
    assert_grads_match(lambda t: tg.diff(t, n, dim), [x.requires_grad_()])


def test_diff_bool_and_errors():
    assert tg.diff(tg.tensor([True, False, False])).tolist() == [True, False]
    with pytest.raises(RuntimeError, match="diff expects input to be at least one-dimensional"):
        tg.diff(tg.tensor(1.))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        tg.diff(tg.ones(3), n=-1)


def test_trapezoid(device):
    y = t64((3, 6), device)
    x = tg.tensor(np.sort(np.random.default_rng(0).uniform(0, 3, 6)), dtype=tg.float64,
                  device=device)
    same(tg.trapezoid(y), np.trapezoid(host(y)) if hasattr(np, "trapezoid")
         else np.trapz(host(y)))
    ref = np.sum((host(y)[:, 1:] + host(y)[:, :-1]) / 2 * np.diff(host(x)), -1)
    same(tg.trapezoid(y, x), ref)
    same(tg.trapz(y, x), ref)
    same(tg.trapezoid(y, dx=0.5, dim=0), np.sum((host(y)[1:] + host(y)[:-1]) / 4, 0))
    same(tg.cumulative_trapezoid(y, x),
         np.cumsum((host(y)[:, 1:] + host(y)[:, :-1]) / 2 * np.diff(host(x)), -1))
    assert_grads_match(lambda t, s: tg.trapezoid(t, s), [y.requires_grad_(),
                                                          x.requires_grad_()])
    with pytest.raises(RuntimeError, match="There must be one `x` value for each sample"):
        tg.trapezoid(tg.ones(3), tg.ones(2))


# -- products and grids -----------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 2)), ((3,), (2, 2)), ((2, 1, 2), (3,))])
def test_kron(sa, sb, device):
    a, b = t64(sa, device), t64(sb, device)
    same(tg.kron(a, b), np.kron(host(a), host(b)))
    same(a.kron(b), np.kron(host(a), host(b)))
    assert_grads_match(tg.kron, [a.requires_grad_(), b.requires_grad_()])


@pytest.mark.parametrize("dims", [2, 0, 1, ([2, 1], [1, 0]), ([2], [1])])
def test_tensordot(dims, device):
    a, b = t64((3, 4, 5), device), t64((4, 5, 2), device)
    if dims == 1:
        b = t64((5, 2), device)
    if dims == ([2], [1]):
        b = t64((3, 5, 2), device)
    ref = np.tensordot(host(a), host(b), axes=dims)
    same(tg.tensordot(a, b, dims=dims), ref)
    assert_grads_match(lambda p, q: tg.tensordot(p, q, dims), [a.requires_grad_(),
                                                               b.requires_grad_()])
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        tg.tensordot(tg.ones(2, 3), tg.ones(2, 3), dims=1)


def test_cross(device):
    a, b = t64((4, 3), device), t64((1, 3), device)
    same(tg.cross(a, b, dim=1), np.cross(host(a), host(b)))
    same(a.cross(b, -1), np.cross(host(a), host(b)))
    c, d = t64((3, 2), device), t64((3, 2), device)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        same(tg.cross(c, d), np.cross(host(c), host(d), axis=0))  # the first dim of size 3
    assert any("torch.linalg.cross" in str(x.message) for x in w)
    assert_grads_match(lambda p, q: tg.cross(p, q, dim=1), [a.requires_grad_(),
                                                            b.requires_grad_()])
    with pytest.raises(RuntimeError, match="no dimension of size 3 in input"):
        tg.cross(tg.ones(4), tg.ones(4))
    with pytest.raises(RuntimeError, match="inputs dimension 0 must have length 3"):
        tg.cross(tg.ones(4), tg.ones(4), dim=0)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size of "
                                           "tensor b \\(4\\) at non-singleton dimension 0"):
        tg.cross(tg.ones(2, 3), tg.ones(4, 3), dim=1)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_and_cartesian_prod(indexing, device):
    a = tg.tensor([1., 2.], dtype=tg.float64, device=device)
    b = tg.tensor([3., 4., 5.], dtype=tg.float64, device=device)
    c = tg.tensor(7., dtype=tg.float64, device=device)
    got = tg.meshgrid(a, b, c, indexing=indexing)
    ref = np.meshgrid(host(a), host(b), host(c).reshape(1), indexing=indexing)
    for g, r in zip(got, ref):
        same(g, r)
    got = tg.meshgrid([a, b], indexing=indexing)
    assert tuple(got[0].shape) == ((2, 3) if indexing == "ij" else (3, 2))
    with pytest.warns(UserWarning, match="required to pass the indexing argument"):
        tg.meshgrid(a, b)
    prod = tg.cartesian_prod(a, b)
    same(prod, np.array(list(itertools.product(host(a), host(b)))))
    assert_grads_match(lambda p, q: tg.cartesian_prod(p, q) * 1.5,
                       [a.requires_grad_(), b.requires_grad_()])
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij"'):
        tg.meshgrid(a, indexing="ab")


@pytest.mark.parametrize("r,rep", [(2, False), (3, False), (2, True), (0, False), (5, False)])
def test_combinations(r, rep, device):
    x = tg.tensor([1., 2., 3., 4.], dtype=tg.float64, device=device)
    pick = itertools.combinations_with_replacement if rep else itertools.combinations
    rows = list(pick(host(x).tolist(), r))
    got = tg.combinations(x, r, rep)
    if r == 0:
        assert tuple(got.shape) == (0,)
    else:
        same(got, np.array(rows).reshape(len(rows), r))
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        tg.combinations(tg.ones(2, 2))


def test_block_diag(device):
    a, b = t64((2, 2), device), t64((3,), device)
    c = tg.tensor(5, device=device)
    ref = np.zeros((4, 6))
    ref[:2, :2], ref[2, 2:5], ref[3, 5] = host(a), host(b), 5
    same(tg.block_diag(a, b, c), ref)
    assert tg.block_diag(a, b, c).dtype is tg.float64
    assert_grads_match(lambda p, q: tg.block_diag(p, q), [a.requires_grad_(),
                                                          b.requires_grad_()])


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist(p, device):
    a, b = t64((2, 3, 4), device), t64((2, 5, 4), device)
    ref = np.linalg.norm(host(a)[:, :, None] - host(b)[:, None], ord=p, axis=-1)
    same(tg.cdist(a, b, p), ref, rtol=1e-10)
    if p:
        assert_grads_match(lambda x, y: tg.cdist(x, y, p), [a.requires_grad_(),
                                                            b.requires_grad_()])
    # the distance of a point to itself: 0, with a zero (not NaN) gradient
    x = t64((2, 3), device).requires_grad_()
    tg.cdist(x, x.detach()).sum().backward()
    assert np.isfinite(host(x.grad)).all()
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. "
                                           "X1: 3 X2: 4"):
        tg.cdist(tg.ones(2, 3), tg.ones(2, 4))


# -- sets and counts ---------------------------------------------------------------------------

@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right, device):
    seq = tg.tensor([1., 2., 2., 3.], dtype=tg.float64, device=device)
    v = tg.tensor([[0., 2.], [2.5, 9.]], dtype=tg.float64, device=device)
    side = "right" if right else "left"
    ref = np.searchsorted(host(seq), host(v), side=side)
    got = tg.searchsorted(seq, v, right=right)
    assert host(got).tolist() == ref.tolist() and got.dtype is tg.int64
    assert host(tg.searchsorted(seq, v, side=side, out_int32=True)).tolist() == ref.tolist()
    assert host(tg.bucketize(v, seq, right=right)).tolist() == ref.tolist()
    rows = tg.tensor([[1., 3., 5.], [0., 1., 2.]], device=device)
    got = tg.searchsorted(rows, tg.tensor([[3.], [3.]], device=device), right=right)
    assert host(got).tolist() == [[2 if right else 1], [3]]
    unsorted = tg.tensor([3., 1., 2.], device=device)
    sorter = tg.argsort(unsorted)
    assert host(tg.searchsorted(unsorted, tg.tensor([2.5], device=device),
                                sorter=sorter)).tolist() == [2]
    assert tg.searchsorted(seq, 2.5).item() == 3


def test_searchsorted_errors():
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got bad"):
        tg.searchsorted(tg.ones(3), tg.ones(1), side="bad")
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension or the "
                                           "first N-1 dimensions"):
        tg.searchsorted(tg.ones(1, 3), tg.ones(2, 1))
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got "
                                           r"dim\(2\)"):
        tg.bucketize(tg.ones(1), tg.ones(1, 3))


def test_unique(device):
    x = tg.tensor([[3, 1], [3, 1], [0, 5]], device=device)
    vals, inv, cnt = np.unique(host(x), return_inverse=True, return_counts=True)
    u, i, c = tg.unique(x, return_inverse=True, return_counts=True)
    assert host(u).tolist() == vals.tolist() and host(c).tolist() == cnt.tolist()
    assert host(i).tolist() == inv.reshape(3, 2).tolist()
    assert host(x.unique()).tolist() == vals.tolist()
    u, i, c = tg.unique(x, dim=0, return_inverse=True, return_counts=True)
    assert host(u).tolist() == [[0, 5], [3, 1]]
    assert host(i).tolist() == [1, 1, 0] and host(c).tolist() == [1, 2]
    u, c = tg.unique(x, return_counts=True)
    assert host(c).tolist() == cnt.tolist()
    nan = tg.unique(tg.tensor([1., float("nan"), float("nan")], device=device))
    assert np.isnan(host(nan)[1:]).all() and host(nan).shape == (3,)  # NaNs are all distinct


def test_unique_values_require_grad_without_a_derivative():
    x = tg.rand(4, requires_grad=True)
    for fn, op, node in ((lambda: tg.unique(x, return_counts=True), "_unique2",
                          "Unique2Backward0"),
                         (lambda: tg.unique(x, dim=0), "unique_dim", "UniqueDimBackward0"),
                         (lambda: tg.unique_consecutive(x, return_inverse=True),
                          "unique_consecutive", "UniqueConsecutiveBackward0")):
        res = fn()
        res = res if isinstance(res, tuple) else (res,)
        assert res[0].requires_grad and not any(r.requires_grad for r in res[1:])
        assert res[0].grad_fn.name() == node
        with pytest.raises(NotImplementedError,
                           match=f"the derivative for '{op}' is not implemented"):
            res[0].sum().backward()
    with tg.no_grad():
        assert not tg.unique(x).requires_grad
    for out in (tg.searchsorted(x, tg.rand(()).requires_grad_()),
                tg.bucketize(x, tg.linspace(0, 1, 5, requires_grad=True))):
        assert not out.requires_grad and not out.dtype.is_floating_point


def test_unique_consecutive(device):
    x = tg.tensor([1, 1, 2, 2, 3, 1, 1, 2], device=device)
    u, i, c = tg.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert host(u).tolist() == [1, 2, 3, 1, 2]
    assert host(i).tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert host(c).tolist() == [2, 2, 1, 2, 1]
    u, i, c = tg.unique_consecutive(tg.ones(0, device=device), return_inverse=True,
                                    return_counts=True)
    assert (u.shape, i.shape, c.shape) == ((0,), (0,), (0,))
    m = tg.tensor([[1, 1, 2], [1, 1, 2]], device=device)
    assert host(m.unique_consecutive(dim=1)).tolist() == [[1, 2], [1, 2]]


def test_bincount_histc(device):
    x = tg.tensor([1, 1, 3, 0], device=device)
    assert host(tg.bincount(x)).tolist() == [1, 2, 0, 1]
    assert host(x.bincount(minlength=6)).tolist() == [1, 2, 0, 1, 0, 0]
    w = tg.tensor([0.5, 1., 2., 3.], device=device)
    got = tg.bincount(x, w)
    assert got.dtype is tg.float32 and host(got).tolist() == [3., 1.5, 0., 2.]
    assert tg.bincount(x, tg.tensor([1, 2, 3, 4], device=device)).dtype is tg.float64
    y = t64((50,), device, -3, 3)
    ref, _ = np.histogram(host(y), bins=7, range=(-2, 2))
    same(tg.histc(y, bins=7, min=-2, max=2), ref.astype(np.float64))
    same(y.histc(5), np.histogram(host(y), bins=5)[0].astype(np.float64))
    same(tg.histc(tg.tensor([1., 1., 1.], device=device), bins=3), [0., 3., 0.])


def test_bincount_histc_errors():
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral"):
        tg.bincount(tg.tensor([-1]))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral"):
        tg.bincount(tg.ones(2, 2, dtype=tg.int64))
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        tg.bincount(tg.tensor([1.]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.histc(tg.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="torch.histc: max must be larger than min"):
        tg.histc(tg.tensor([1., 2.]), bins=4, min=3, max=0)
    with pytest.raises(RuntimeError, match="bins must be > 0, but got -1"):
        tg.histc(tg.tensor([1., 2.]), bins=-1)
