"""torch.linalg parity fixes (the differential sweep against PyTorch): complex Cholesky's
gradient, empty complex spectra, ``lstsq``'s drivers, ``out=`` for the multi-output
factorizations and the norms, singular triangular solves, empty LU batches, the legacy
``svd``/``triangular_solve`` shapes, keyword names and error texts. Each behaviour is checked
against float64 NumPy or central differences, and against PyTorch where it is installed."""

import math
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import numeric_grads

LA = tg.linalg
rng = np.random.default_rng(3131)


def t(a, requires_grad=False):
    a = np.asarray(a)
    dt = tg.complex128 if np.iscomplexobj(a) else tg.float64
    return tg.tensor(a, dtype=dt, requires_grad=requires_grad)


def host(x):
    return x.detach().cpu().numpy()


def spd(n, complex_=False, batch=()):
    a = rng.standard_normal(batch + (n, n))
    if complex_:
        a = a + 1j * rng.standard_normal(batch + (n, n))
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)


def empty(dtype=tg.float64):
    return tg.empty(0, dtype=dtype)


# -- gradients ---------------------------------------------------------------------------------

def _cholesky_grad_reference(A, G):
    """PyTorch's cholesky_backward in NumPy: P = tril(L^H G), (P + tril(P, -1)^H) / 2 between
    L^-H and L^-1."""
    L = np.linalg.cholesky(A)
    P = np.tril(L.conj().T @ G)
    P = 0.5 * (P + np.tril(P, -1).conj().T)
    Linv = np.linalg.inv(L)
    return Linv.conj().T @ P @ Linv


@pytest.mark.parametrize("complex_", [False, True])
def test_cholesky_gradient_is_pytorchs_formula(complex_):
    A = spd(4, complex_)
    G = rng.standard_normal((4, 4)) + (1j * rng.standard_normal((4, 4)) if complex_ else 0)
    x = t(A, requires_grad=True)
    LA.cholesky(x).backward(t(G))
    np.testing.assert_allclose(host(x.grad), _cholesky_grad_reference(A, G), atol=1e-10)
    # upper=True is the conjugate transpose of the same factor
    x2 = t(A, requires_grad=True)
    LA.cholesky(x2, upper=True).backward(t(G.conj().T))
    np.testing.assert_allclose(host(x2.grad), _cholesky_grad_reference(A, G), atol=1e-10)


def test_cholesky_gradient_matches_central_differences():
    a = rng.standard_normal((3, 3))
    w = rng.standard_normal((3, 3))

    def f(m):  # a symmetric input, as the factorization reads one
        return LA.cholesky(m @ m.mT + 3 * tg.eye(3, dtype=tg.float64)) * t(w)

    x = t(a, requires_grad=True)
    f(x).sum().backward()
    np.testing.assert_allclose(host(x.grad), numeric_grads(f, [t(a)])[0], atol=1e-6)
    c = t(a + 1j * rng.standard_normal((3, 3)), requires_grad=True)
    assert tg.autograd.gradcheck(
        lambda m: tg.view_as_real(LA.cholesky(m @ m.mH + 3 * tg.eye(3, dtype=m.dtype))), (c,))


def test_det_gradient_at_a_singular_matrix_is_the_adjugate():
    # d det / dA = adj(A)^T, also where det(A) = 0 (PyTorch 2.13 returns 0 here: a
    # documented difference, the adjugate is the derivative central differences give)
    a = np.array([[1., 2.], [2., 4.]])
    x = t(a, requires_grad=True)
    LA.det(x).backward()
    adj_t = np.array([[a[1, 1], -a[1, 0]], [-a[0, 1], a[0, 0]]])
    np.testing.assert_allclose(host(x.grad), adj_t, atol=1e-9)
    np.testing.assert_allclose(host(x.grad), numeric_grads(LA.det, [t(a)])[0], atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda a: LA.eigh(a).eigenvalues,
    lambda a: LA.eigh(a).eigenvectors.abs(),
    lambda a: LA.svd(a, full_matrices=False).S,
    lambda a: LA.pinv(a).abs(),
    lambda a: LA.pinv(a, hermitian=True).abs(),
])
@pytest.mark.parametrize("shape", [(0, 0), (0, 3, 3)])
def test_empty_complex_spectral_backward(fn, shape):
    x = tg.zeros(shape, dtype=tg.complex128, requires_grad=True)
    fn(x).sum().backward()
    assert tuple(x.grad.shape) == shape


def test_matrix_power_zero_is_in_the_graph_with_zero_gradient():
    x = t(rng.standard_normal((2, 3, 3)), requires_grad=True)
    y = LA.matrix_power(x, 0)
    np.testing.assert_array_equal(host(y), np.broadcast_to(np.eye(3), (2, 3, 3)))
    (g,) = tg.autograd.grad(y.sum(), x)
    np.testing.assert_array_equal(host(g), 0)
    inf = t(np.full((2, 2), np.inf))
    np.testing.assert_array_equal(host(LA.matrix_power(inf, 0)), np.eye(2))  # no inf * 0
    with pytest.raises(TypeError, match="argument 'n' .* must be int, not float"):
        LA.matrix_power(x, 1.5)


# -- lstsq ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 5, 3)])
def test_lstsq_outputs_per_driver(driver, shape):
    a = rng.standard_normal(shape)
    b = rng.standard_normal(shape[:-1] + (2,))
    X, res, rank, sv = LA.lstsq(t(a), t(b), driver=driver)
    ref = np.linalg.pinv(a) @ b
    np.testing.assert_allclose(host(X), ref, atol=1e-10)
    m, n = shape[-2:]
    if m > n and driver not in (None, "gelsy"):
        np.testing.assert_allclose(host(res), (np.abs(a @ ref - b) ** 2).sum(-2), atol=1e-10)
    else:
        assert tuple(res.shape) == (0,)
    if driver == "gels":
        assert tuple(rank.shape) == (0,) and rank.dtype is tg.int64
    else:
        np.testing.assert_array_equal(host(rank), np.linalg.matrix_rank(a))
        assert rank.dtype is tg.int64
    if driver in ("gelsd", "gelss"):
        np.testing.assert_allclose(host(sv), np.linalg.svd(a, compute_uv=False), atol=1e-10)
        assert not sv.requires_grad
    else:
        assert tuple(sv.shape) == (0,)


def test_lstsq_residuals_rank_deficient_and_vector_rhs():
    a = rng.standard_normal((5, 3))
    a[:, 2] = a[:, 1]
    assert tuple(LA.lstsq(t(a), t(rng.standard_normal((5, 2))), driver="gelsd")
                 .residuals.shape) == (0,)
    full = rng.standard_normal((5, 3))
    res = LA.lstsq(t(full), t(rng.standard_normal(5)), driver="gelsd").residuals
    assert tuple(res.shape) == (1,)


def test_lstsq_residuals_gradient():
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))

    def f(x, y):
        return LA.lstsq(x, y, driver="gelsd").residuals

    xa, xb = t(a, requires_grad=True), t(b, requires_grad=True)
    f(xa, xb).sum().backward()
    na, nb = numeric_grads(f, [t(a), t(b)])
    np.testing.assert_allclose(host(xa.grad), na, atol=1e-6)
    np.testing.assert_allclose(host(xb.grad), nb, atol=1e-6)


def test_lstsq_errors():
    a = t(rng.standard_normal((3, 2)))
    with pytest.raises(RuntimeError, match=r"parameter `driver` should be one of \(gels, gelsy"):
        LA.lstsq(a, t(rng.standard_normal((3, 1))), driver="foo")
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        LA.lstsq(a, t(rng.standard_normal((4, 1))))
    with pytest.raises(RuntimeError, match="input must have at least 2 dimensions"):
        LA.lstsq(t(rng.standard_normal(3)), t(rng.standard_normal(3)))


# -- singular and empty inputs ---------------------------------------------------------------------

def test_solve_triangular_singular_gives_inf_not_an_error():
    a = np.array([[1., 2.], [0., 0.]])
    # back substitution: x1 = 1 / 0 = inf, x0 = (1 - 2 x1) / 1 = -inf (trsm's IEEE result)
    got = host(LA.solve_triangular(t(a), t(np.ones((2, 1))), upper=True))
    np.testing.assert_array_equal(got, [[-np.inf], [np.inf]])
    lower = np.array([[0., 0.], [2., 1.]])
    got = host(LA.solve_triangular(t(lower), t(np.ones((1, 2))), upper=False, left=False))
    # x L = 1: x1 = 1 / 1, x0 = (1 - 2 x1) / 0 = -inf
    np.testing.assert_array_equal(got, [[-np.inf, 1.]])
    # a regular triangular matrix still goes to LAPACK's solve, batched
    u = np.triu(rng.standard_normal((3, 4, 4))) + 4 * np.eye(4)
    b = rng.standard_normal((3, 4, 2))
    np.testing.assert_allclose(host(LA.solve_triangular(t(u), t(b), upper=True)),
                               np.linalg.solve(u, b), atol=1e-12)


def test_lu_with_an_empty_batch():
    x = tg.zeros((0, 2, 2), dtype=tg.float64, requires_grad=True)
    P, L, U = LA.lu(x)
    assert [tuple(m.shape) for m in (P, L, U)] == [(0, 2, 2)] * 3
    LU, piv = LA.lu_factor(x)
    assert tuple(piv.shape) == (0, 2)
    (LU.sum() + L.sum()).backward()
    assert tuple(x.grad.shape) == (0, 2, 2)
    assert [tuple(m.shape) for m in tg.lu_unpack(LU, piv)] == [(0, 2, 2)] * 3


@pytest.mark.parametrize("ord_", [1, 2, math.inf, "nuc", "fro"])
@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (2, 0, 0)])
def test_matrix_norm_of_empty_matrices_is_zero(ord_, shape):
    r = LA.matrix_norm(tg.zeros(shape, dtype=tg.float64), ord_)
    np.testing.assert_array_equal(host(r), np.zeros(shape[:-2]))


def test_matrix_norm_min_orders_of_empty_matrices_raise():
    with pytest.raises((RuntimeError, IndexError), match="non-zero size"):
        LA.matrix_norm(tg.zeros((0, 0), dtype=tg.float64), -2)


# -- legacy shapes -------------------------------------------------------------------------------

def test_svd_without_uv_gives_square_zero_factors():
    a = rng.standard_normal((2, 4, 3))
    for some in (True, False):
        U, S, V = tg.svd(t(a), some=some, compute_uv=False)
        assert tuple(U.shape) == (2, 4, 4) and tuple(V.shape) == (2, 3, 3)
        assert not host(U).any() and not host(V).any()
        np.testing.assert_allclose(host(S), np.linalg.svd(a, compute_uv=False), atol=1e-12)


def test_triangular_solve_broadcasts_the_cloned_coefficient_and_writes_out():
    A = np.triu(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2))
    X, C = tg.triangular_solve(t(b), t(A), transpose=True)
    np.testing.assert_allclose(host(X), np.linalg.solve(A.T, b), atol=1e-12)
    assert tuple(C.shape) == (2, 3, 3)
    np.testing.assert_array_equal(host(C), np.broadcast_to(A, (2, 3, 3)))
    o1, o2 = empty(), empty()
    r = tg.triangular_solve(t(b), t(A), out=(o1, o2))
    assert r[0] is o1 and r[1] is o2
    np.testing.assert_allclose(host(o1), np.linalg.solve(A, b), atol=1e-12)


# -- out= ----------------------------------------------------------------------------------------

def _well(n=3, batch=()):
    return rng.standard_normal(batch + (n, n)) + 3 * np.eye(n)


def _tuple_cases():
    a = _well()
    s = a + a.T
    p = spd(3)
    f, i, c = tg.float64, tg.int32, tg.complex128
    return [
        ("slogdet", lambda o: LA.slogdet(t(a), out=o), (f, f),
         [np.linalg.slogdet(a)[0], np.linalg.slogdet(a)[1]]),
        ("eigh", lambda o: LA.eigh(t(s), out=o), (f, f), [np.linalg.eigh(s)[0], None]),
        ("qr", lambda o: LA.qr(t(a), out=o), (f, f), [None, None]),
        ("svd", lambda o: LA.svd(t(a), out=o), (f, f, f),
         [None, np.linalg.svd(a, compute_uv=False), None]),
        ("lu_factor", lambda o: LA.lu_factor(t(a), out=o), (f, i), [None, None]),
        ("lu_factor_ex", lambda o: LA.lu_factor_ex(t(a), out=o), (f, i, i), [None, None, 0]),
        ("lu", lambda o: LA.lu(t(a), out=o), (f, f, f), [None, None, None]),
        ("eig", lambda o: LA.eig(t(a), out=o), (c, c), [None, None]),
        ("inv_ex", lambda o: LA.inv_ex(t(a), out=o), (f, i), [np.linalg.inv(a), 0]),
        ("cholesky_ex", lambda o: LA.cholesky_ex(t(p), out=o), (f, i), [None, 0]),
        ("solve_ex", lambda o: LA.solve_ex(t(a), t(a), out=o), (f, i), [np.eye(3), 0]),
        ("lu_unpack", lambda o: tg.lu_unpack(*LA.lu_factor(t(a)), out=o), (f, f, f),
         [None, None, None]),
        ("torch.svd", lambda o: tg.svd(t(a), out=o), (f, f, f),
         [None, np.linalg.svd(a, compute_uv=False), None]),
        ("torch.qr", lambda o: tg.qr(t(a), out=o), (f, f), [None, None]),
    ]


@pytest.mark.parametrize("case", _tuple_cases(), ids=lambda c: c[0])
def test_tuple_out_is_written(case):
    _, fn, dts, refs = case
    outs = tuple(tg.empty(0, dtype=d) for d in dts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fn(outs)
        plain = fn(None)
    assert all(x is o for x, o in zip(r, outs))
    for o, p, ref in zip(outs, plain, refs):
        assert o.dtype is p.dtype and tuple(o.shape) == tuple(p.shape)
        np.testing.assert_array_equal(host(o), host(p))
        if ref is not None:
            np.testing.assert_allclose(host(o), np.broadcast_to(ref, o.shape), atol=1e-10)


def test_tuple_out_refuses_wrong_dtypes_and_autograd():
    a = _well()
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype int, but got "
                                           "long int instead"):
        LA.lu_factor(t(a), out=(empty(), tg.empty(0, dtype=tg.int64)))
    with pytest.raises(RuntimeError, match="functions with out=... arguments don't support"):
        LA.slogdet(t(a, requires_grad=True), out=(empty(), empty()))
    with pytest.raises(TypeError, match="must be tuple of 2 Tensors"):
        LA.slogdet(t(a), out=empty())


def test_ldl_out():
    pytest.importorskip("scipy")
    a = _well()
    s = a + a.T
    LD, piv = empty(), tg.empty(0, dtype=tg.int32)
    r = LA.ldl_factor(t(s), out=(LD, piv))
    assert r[0] is LD and r[1] is piv
    X = empty()
    b = rng.standard_normal((3, 2))
    assert LA.ldl_solve(LD, piv, t(b), out=X) is X
    np.testing.assert_allclose(host(X), np.linalg.solve(s, b), atol=1e-10)
    info = tg.empty(0, dtype=tg.int32)
    LA.ldl_factor_ex(t(s), out=(empty(), tg.empty(0, dtype=tg.int32), info))
    assert host(info) == 0


@pytest.mark.parametrize("name,fn,ref", [
    ("vector_norm", lambda a, o: LA.vector_norm(a, 3, out=o),
     lambda a: (np.abs(a) ** 3).sum() ** (1 / 3)),
    ("matrix_norm", lambda a, o: LA.matrix_norm(a, 1, out=o), lambda a: np.linalg.norm(a, 1)),
    ("norm", lambda a, o: LA.norm(a, "nuc", out=o), lambda a: np.linalg.norm(a, "nuc")),
    ("vecdot", lambda a, o: LA.vecdot(a, a, out=o), lambda a: (a * a).sum(-1)),
    ("matrix_power", lambda a, o: LA.matrix_power(a, 3, out=o), lambda a: a @ a @ a),
    ("addr", lambda a, o: tg.addr(a, a[0], a[1], beta=2, out=o),
     lambda a: 2 * a + np.outer(a[0], a[1])),
    ("addbmm", lambda a, o: tg.addbmm(a, a[None], a[None], alpha=3, out=o),
     lambda a: a + 3 * a @ a),
    ("multi_dot", lambda a, o: LA.multi_dot([a, a], out=o), lambda a: a @ a),
])
def test_out_for_norms_and_products(name, fn, ref):
    a = rng.standard_normal((3, 3))
    o = empty()
    assert fn(t(a), o) is o
    np.testing.assert_allclose(host(o), ref(a), atol=1e-10)


def test_out_dtype_rules():
    a = t(_well())
    f32 = tg.empty(0, dtype=tg.float32)
    for fn in (lambda o: LA.inv(a, out=o), lambda o: LA.det(a, out=o),
               lambda o: LA.solve(a, a, out=o), lambda o: LA.vector_norm(a, out=o),
               lambda o: LA.matrix_power(a, 2, out=o), lambda o: LA.cross(a, a, out=o)):
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but "
                                               "got float instead"):
            fn(tg.empty(0, dtype=tg.float32))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm expected out tensor dtype "
                                           "Double but got: Float"):
        LA.matrix_norm(a, out=f32)
    with pytest.raises(RuntimeError, match="linalg.vecdot: Expected out of dtypeDouble"):
        LA.vecdot(a, a, out=f32)
    with pytest.raises(RuntimeError, match="multi_dot\\(\\): expected out tensor to have dtype "
                                           "double but got float"):
        LA.multi_dot([a, a], out=f32)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        LA.solve_triangular(a, a, upper=True, out=f32)
    # these cast into out, as PyTorch's do
    np.testing.assert_allclose(host(LA.pinv(a, out=f32)), np.linalg.pinv(host(a)), rtol=1e-5)
    o = tg.empty(0, dtype=tg.float32)
    tg.cholesky_solve(a, a.tril(), out=o)
    assert o.dtype is tg.float32 and tuple(o.shape) == (3, 3)
    with pytest.raises(RuntimeError, match=r"^linalg_inv_ex\(\): functions with out="):
        LA.inv(t(_well(), requires_grad=True), out=empty())


# -- keyword names and errors --------------------------------------------------------------------

def test_pytorch_keyword_names():
    a = _well()
    L = np.linalg.cholesky(a @ a.T)
    b = rng.standard_normal((3, 2))
    np.testing.assert_allclose(host(tg.cholesky_solve(input=t(b), input2=t(L))),
                               np.linalg.solve(a @ a.T, b), atol=1e-10)
    np.testing.assert_allclose(host(tg.cholesky_inverse(input=t(L))), np.linalg.inv(a @ a.T),
                               atol=1e-10)
    h, tau = tg.geqrf(t(a))
    Q = np.linalg.qr(a)[0]
    np.testing.assert_allclose(np.abs(host(tg.ormqr(input=h, input2=tau, input3=t(b)))),
                               np.abs(Q @ b), atol=1e-10)


def test_error_texts():
    a = t(np.array([[1., 2.], [2., 4.]]))
    with pytest.raises(RuntimeError, match=r"^linalg.inv_ex: The diagonal element 2 is zero"):
        LA.inv_ex(a, check_errors=True)
    with pytest.raises(RuntimeError, match=r"^linalg.lu_factor: LU without pivoting"):
        LA.lu(a, pivot=False)
    with pytest.raises(RuntimeError, match=r"^linalg.cond\(ord=fro\): A must be batches of "
                                           r"square matrices"):
        LA.cond(t(rng.standard_normal((3, 4))), "fro")
    with pytest.raises(RuntimeError, match=r"^linalg.cond\(ord=1\): A must be batches"):
        LA.cond(t(rng.standard_normal((3, 4))), 1)
    with pytest.raises(RuntimeError, match="`driver=` is only supported on CUDA inputs"):
        LA.svd(a, driver="gesvd")
    with pytest.raises(RuntimeError, match="`driver=` is only supported on CUDA inputs"):
        LA.svdvals(a, driver="gesvd")
    with pytest.raises(RuntimeError, match=r"^N must be greater than 1\.$"):
        LA.vander(t([1., 2.]), N=0)
    ints = tg.ones(2, dtype=tg.int64)
    with pytest.raises(RuntimeError, match="For integral input tensors, argument beta must "
                                           "not be a floating point number"):
        tg.addr(tg.ones((2, 2), dtype=tg.int64), ints, ints, beta=0.5)


# -- against PyTorch -----------------------------------------------------------------------------

def _both(torch, fn, arrays, grad=True):
    """fn(L, *tensors) in both libraries on the same float64/complex128 arrays: the outputs
    and the gradients of sum(w * real view) against each other."""
    res = []
    for L in (torch, tg):
        xs = [L.tensor(a.copy(), requires_grad=grad) for a in arrays]
        out = fn(L, *xs)
        outs = list(out) if isinstance(out, tuple) else [out]
        vals = [o.detach().cpu().resolve_conj().numpy() if L is torch else host(o)
                for o in outs]
        grads = []
        if grad:
            wr = np.random.default_rng(7)
            loss = 0
            for o in outs:
                if o.requires_grad:
                    r = L.view_as_real(o.resolve_conj()) if o.is_complex() else o
                    loss = loss + (r * L.tensor(wr.standard_normal(tuple(r.shape)))).sum()
            grads = [g.detach().cpu().resolve_conj().numpy() if L is torch else host(g)
                     for g in L.autograd.grad(loss, xs)]
        res.append((vals, grads))
    (tv, tgr), (gv, ggr) = res
    assert len(tv) == len(gv)
    for a, b in zip(tv + tgr, gv + ggr):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(b, a, atol=1e-8, rtol=1e-8)


TORCH_CASES = {
    "cholesky_complex": (lambda L, a: L.linalg.cholesky(a), [spd(3, True)]),
    "cholesky_upper_complex": (lambda L, a: L.linalg.cholesky(a, upper=True),
                               [spd(3, True, (2,))]),
    "cholesky_ex_complex": (lambda L, a: L.linalg.cholesky_ex(a)[0], [spd(3, True)]),
    "cholesky_inverse_complex": (lambda L, a: L.cholesky_inverse(L.linalg.cholesky(a)),
                                 [spd(3, True)]),
    "eigh_empty_complex": (lambda L, a: L.linalg.eigh(a)[0],
                           [np.zeros((0, 3, 3), complex)]),
    "svd_empty_complex": (lambda L, a: L.linalg.svd(a)[1], [np.zeros((0, 0), complex)]),
    "lstsq_gelsd": (lambda L, a, b: L.linalg.lstsq(a, b, driver="gelsd"),
                    [rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))]),
    "lstsq_gels": (lambda L, a, b: L.linalg.lstsq(a, b, driver="gels")[:2],
                   [rng.standard_normal((5, 3)), rng.standard_normal((5, 2))]),
    "lstsq_gelss_complex": (lambda L, a, b: L.linalg.lstsq(a, b, driver="gelss"),
                            [rng.standard_normal((5, 3)) + 1j, rng.standard_normal((5, 2)) + 0j]),
    "lstsq_default": (lambda L, a, b: L.linalg.lstsq(a, b),
                      [rng.standard_normal((5, 3)), rng.standard_normal((5, 2))]),
    "matrix_power_0": (lambda L, a: L.linalg.matrix_power(a, 0), [rng.standard_normal((3, 3))]),
    "matrix_norm_empty": (lambda L, a: (L.linalg.matrix_norm(a, 1), L.linalg.matrix_norm(a, 2),
                                        L.linalg.matrix_norm(a, float("inf"))),
                          [np.zeros((2, 0, 0))]),
    "lu_empty_batch": (lambda L, a: L.linalg.lu(a), [np.zeros((0, 2, 2))]),
    "triangular_solve": (lambda L, b, a: L.triangular_solve(b, a, transpose=True),
                         [rng.standard_normal((2, 3, 2)), _well()]),
    "svd_no_uv": (lambda L, a: L.svd(a, compute_uv=False), [rng.standard_normal((4, 3))]),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    fn, arrays = TORCH_CASES[name]
    grad = name not in ("lu_empty_batch", "svd_no_uv", "matrix_norm_empty")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _both(torch, fn, arrays, grad)


def test_singular_triangular_solve_against_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[1., 2.], [0., 0.]])
    for L in (torch, tg):
        r = L.linalg.solve_triangular(L.tensor(a), L.ones(2, 3, dtype=L.float64), upper=True)
        if L is torch:
            want = r.numpy()
        else:
            np.testing.assert_array_equal(host(r), want)


def test_out_tuples_against_torch():
    torch = pytest.importorskip("torch")
    a = _well()
    for name in ("slogdet", "eigh", "svd", "lu_factor_ex", "inv_ex"):
        got = []
        for L in (torch, tg):
            x = L.tensor(a + a.T if name == "eigh" else a)
            plain = getattr(L.linalg, name)(x)
            outs = tuple(L.empty(0, dtype=p.dtype) for p in plain)
            getattr(L.linalg, name)(x, out=outs)
            got.append([o.numpy() if L is torch else host(o) for o in outs])
        for tv, gv in zip(*got):
            assert tv.shape == gv.shape and tv.dtype == gv.dtype
            if name not in ("eigh", "svd"):  # (vectors: up to sign)
                np.testing.assert_allclose(gv, tv, atol=1e-10)


# -- on the (emulated) CUDA device: the host round trip ------------------------------------------

def test_fixes_on_device(device):
    a = _well()
    x = tg.tensor(a, dtype=tg.float64, device=device)
    outs = (tg.empty(0, dtype=tg.float64, device=device),
            tg.empty(0, dtype=tg.float64, device=device))
    LA.slogdet(x, out=outs)
    assert outs[1].device.type == device
    np.testing.assert_allclose(host(outs[1]), np.linalg.slogdet(a)[1], atol=1e-12)
    sing = tg.tensor([[1., 2.], [0., 0.]], dtype=tg.float64, device=device)
    r = LA.solve_triangular(sing, tg.ones((2, 1), dtype=tg.float64, device=device), upper=True)
    np.testing.assert_array_equal(host(r), [[-np.inf], [np.inf]])
    b = rng.standard_normal((3, 2))
    res = LA.lstsq(tg.tensor(np.vstack([a, a[:1]]), dtype=tg.float64, device=device),
                   tg.tensor(np.vstack([b, b[:1] + 1]), dtype=tg.float64, device=device),
                   driver="gelsd")
    assert res.residuals.device.type == device and tuple(res.residuals.shape) == (2,)
    z = tg.zeros((0, 2, 2), dtype=tg.float64, device=device)
    assert tuple(LA.lu(z).P.shape) == (0, 2, 2)


# -- ldl_solve's second derivative ---------------------------------------------------------------

def test_ldl_solve_second_derivative():
    pytest.importorskip("scipy")
    A = np.array([[4., 1., 2.], [1., -3., 0.5], [2., 0.5, 5.]])
    LD, piv = LA.ldl_factor(t(A))
    b = t(rng.standard_normal((3, 2)), requires_grad=True)
    assert tg.autograd.gradcheck(lambda x: LA.ldl_solve(LD, piv, x), (b,))
    assert tg.autograd.gradgradcheck(lambda x: LA.ldl_solve(LD, piv, x), (b,))
    Ac = A + 1j * np.array([[0., 1., 2.], [-1., 0., 3.], [-2., -3., 0.]])  # Hermitian
    LDc, pivc = LA.ldl_factor(t(Ac), hermitian=True)
    bc = t(rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2)), requires_grad=True)
    assert tg.autograd.gradgradcheck(
        lambda x: tg.view_as_real(LA.ldl_solve(LDc, pivc, x, hermitian=True)), (bc,))


def test_linalg_cross_needs_the_same_number_of_dims():
    a, b = rng.standard_normal((2, 1, 3)), rng.standard_normal((4, 3))
    with pytest.raises(RuntimeError, match="linalg.cross: inputs must have the same number of "
                                           "dimensions"):
        LA.cross(t(a), t(b))
    np.testing.assert_allclose(host(LA.cross(t(a), t(b[None]))), np.cross(a, b[None]),
                               atol=1e-12)


@pytest.mark.parametrize("fn,dtype,message", [
    (LA.det, tg.float16, '"lu_cpu" not implemented for \'Half\''),
    (LA.cholesky, tg.float16, '"cholesky_cpu" not implemented for \'Half\''),
    (LA.qr, tg.float16, '"geqrf_cpu" not implemented for \'Half\''),
    (LA.eigh, tg.int64, '"linalg_eigh_cpu" not implemented for \'Long\''),
    (LA.eigvalsh, tg.bool, '"linalg_eigh_cpu" not implemented for \'Bool\''),
    (LA.eig, tg.float16, '"linalg_eig_out_cpu" not implemented for \'Half\''),
    (LA.svdvals, tg.float16, '"linalg_svd_cpu" not implemented for \'Half\''),
    (LA.lu_factor, tg.int32, '"lu_cpu" not implemented for \'Int\''),
    (LA.lu, tg.float16, '"lu_cpu" not implemented for \'Half\''),
    (tg.cholesky_inverse, tg.int64, '"cholesky_inverse_out_cpu" not implemented for \'Long\''),
])
def test_dtypes_refused_by_the_kernel_raise_not_implemented(fn, dtype, message):
    # (NotImplementedError is a RuntimeError, as in PyTorch)
    with pytest.raises(NotImplementedError, match=message):
        fn(tg.eye(3).to(dtype))


def test_check_texts_of_functions_that_call_others():
    with pytest.raises(RuntimeError, match=r"^linalg.inv: Expected a floating point"):
        LA.inv_ex(tg.eye(2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match=r"^linalg.cholesky: A must be batches of square"):
        LA.cholesky_ex(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"^linalg.svd: The input tensor A must have"):
        LA.svdvals(tg.ones(3))
    with pytest.raises(RuntimeError, match=r"^torch.lu_factor: Expected tensor with 2 or more "
                                           r"dimensions. Got size: \[3\] instead"):
        LA.lu_factor(tg.ones(3))
    with pytest.raises(RuntimeError, match=r"^linalg.cond: The input tensor must have at least"):
        LA.cond(tg.ones(3))
    with pytest.raises(RuntimeError, match=r"^linalg.pinv\(Long\{\[3, 3\]\}\): expected a "
                                           r"tensor with 2 or more dimensions of float"):
        LA.pinv(tg.eye(3, dtype=tg.int64))
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_power: The input tensor A must"):
        LA.matrix_power(tg.ones(3), 2)


def test_half_matrix_exp_is_computed_in_float32():
    a = rng.standard_normal((2, 3, 3)) * 0.5
    for dt in (tg.float16, tg.bfloat16):
        x = tg.tensor(a, dtype=dt, requires_grad=True)
        y = LA.matrix_exp(x)
        assert y.dtype is dt
        ref = host(LA.matrix_exp(t(host(x.float()).astype(np.float64))))
        np.testing.assert_allclose(host(y.float()), ref, rtol=2e-2, atol=2e-2)
        y.float().sum().backward()
        assert x.grad.dtype is dt and np.isfinite(host(x.grad.float())).all()


def test_input_keyword_as_pytorchs_bindings_name_it():
    # (PyTorch's docs write A, its bindings take input=: code that runs there runs here)
    a = _well()
    s = spd(3)
    x, p = t(a), t(s)
    np.testing.assert_allclose(host(LA.cholesky(input=p)), np.linalg.cholesky(s), atol=1e-12)
    np.testing.assert_allclose(host(LA.eigvalsh(input=p)), np.linalg.eigvalsh(s), atol=1e-12)
    np.testing.assert_allclose(host(LA.matrix_norm(input=x, ord=1)), np.linalg.norm(a, 1),
                               atol=1e-12)
    np.testing.assert_allclose(host(LA.lstsq(input=x, b=x).solution), np.eye(3), atol=1e-10)
    np.testing.assert_allclose(host(LA.tensorsolve(input=x, other=x[0])),
                               np.linalg.solve(a, a[0]), atol=1e-12)
    np.testing.assert_allclose(host(LA.solve_triangular(input=x.triu(), B=x, upper=True)),
                               np.linalg.solve(np.triu(a), a), atol=1e-12)
    assert int(LA.matrix_rank(input=x)) == 3
    with pytest.raises(TypeError, match=r"linalg_cholesky\(\): argument 'input' \(position 1\) "
                                        r"must be Tensor, not list"):
        LA.cholesky([[1.]])
