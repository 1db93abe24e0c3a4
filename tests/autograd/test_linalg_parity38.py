"""torch.linalg parity, second sweep (session 38): ``pinv(hermitian=True)`` through eigh,
``cond`` of empty and singular matrices in every norm, ``lstsq``'s dimension rule and its
empty residuals in the graph, ``linalg.norm``'s dispatch of string orders, NaN/inf inputs to
the iterative factorizations (PyTorch's LinAlgError, never NumPy's) and to ``matrix_exp``,
and the error texts of the dtype and shape checks. Values are checked against float64 NumPy
or central differences, and against PyTorch where it is installed."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import numeric_grads

from tests.autograd.test_linalg_parity31 import host, t

LA = tg.linalg
rng = np.random.default_rng(3838)


def _weights(shape):
    return np.cos(np.arange(math.prod(shape))).reshape(shape)


# -- pinv(hermitian=True) --------------------------------------------------------------------------

def _pinv_eigh_reference(a):
    """PyTorch's hermitian pinv: eigh of the lower triangle, 1/w over |w| > eps * n * max|w|."""
    w, v = np.linalg.eigh(a)  # (NumPy's eigh reads the lower triangle too)
    keep = np.abs(w) > np.abs(w).max() * a.shape[-1] * np.finfo(np.float64).eps
    inv = np.where(keep, 1 / np.where(keep, w, 1), 0)
    return (v * inv) @ v.conj().T


@pytest.mark.parametrize("complex_", [False, True])
def test_pinv_hermitian_reads_the_lower_triangle(complex_):
    # a non-Hermitian input is read as eigh reads it (the SVD of the whole matrix was used)
    a = rng.standard_normal((3, 3)) + (1j * rng.standard_normal((3, 3)) if complex_ else 0)
    np.testing.assert_allclose(host(LA.pinv(t(a), hermitian=True)), _pinv_eigh_reference(a),
                               atol=1e-10)


def test_pinv_hermitian_gradient_and_shape_check():
    a = rng.standard_normal((3, 3))
    s = a @ a.T + np.eye(3)
    w = _weights((3, 3))

    def f(m):  # (symmetric inputs, as the function reads one triangle)
        m = m + m.mT
        return (LA.pinv(m, hermitian=True) * t(w)).sum()
    x = t(s, requires_grad=True)
    f(x).backward()
    np.testing.assert_allclose(host(x.grad), numeric_grads(f, [t(s)])[0], atol=1e-6)
    with pytest.raises(RuntimeError, match="^linalg.eigh: A must be batches of square"):
        LA.pinv(t(rng.standard_normal((3, 2))), hermitian=True)


# -- cond ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"])
def test_cond_of_empty_matrices_is_zero(p):
    r = LA.cond(tg.zeros(2, 0, 0), p)
    assert tuple(r.shape) == (2,) and r.dtype is tg.float32
    np.testing.assert_array_equal(host(r), 0)
    assert LA.cond(tg.zeros(0, 0, dtype=tg.complex64), p).dtype is tg.float32


@pytest.mark.parametrize("p", [1, -1, math.inf, -math.inf, "fro", "nuc"])
def test_cond_of_a_singular_matrix_is_inf(p):
    # (the NaN inverse of the singular matrix made the nuclear norm's SVD fail)
    a = np.stack([np.array([[1., 2.], [2., 4.]]), np.array([[2., 1.], [1., 3.]])])
    r = host(LA.cond(t(a), p))
    assert r[0] == math.inf
    ref = np.linalg.cond(a[1], p)
    np.testing.assert_allclose(r[1], ref, rtol=1e-12)


def test_cond_gradient_in_the_one_norm():
    # PyTorch 2.13's backward raises here (an in-place write to a saved inverse); the
    # derivative exists away from ties of the column sums
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)

    def f(m):
        return LA.cond(m, 1)
    x = t(a, requires_grad=True)
    f(x).backward()
    np.testing.assert_allclose(host(x.grad), numeric_grads(f, [t(a)])[0], atol=1e-6)


# -- lstsq -----------------------------------------------------------------------------------------

def test_lstsq_dimension_rule():
    A = t(rng.standard_normal((5, 3)))
    with pytest.raises(RuntimeError, match=r"^torch.linalg.lstsq: input.dim\(\) must be greater"):
        LA.lstsq(A, t(rng.standard_normal((2, 5, 2))))
    with pytest.raises(RuntimeError, match="^torch.linalg.lstsq: Expected input and other to "
                                           "have the same dtype, but got input's dtype Double "
                                           "and other's dtype Float"):
        LA.lstsq(A, tg.ones(5, 2))
    with pytest.raises(RuntimeError, match="^This function doesn't handle types other than "
                                           "float and double"):
        LA.lstsq(tg.ones(5, 3, dtype=tg.float16), tg.ones(5, 2, dtype=tg.float16))


@pytest.mark.parametrize("driver", [None, "gelsd"])
def test_lstsq_empty_residuals_are_in_the_graph(driver):
    A = t(rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5)), requires_grad=True)
    res = LA.lstsq(A, t(rng.standard_normal((3, 2)) + 0j), driver=driver).residuals
    assert tuple(res.shape) == (0,) and res.dtype is tg.float64 and res.requires_grad
    assert not LA.lstsq(A.detach(), t(rng.standard_normal((3, 2)) + 0j)).residuals.requires_grad


# -- norms -----------------------------------------------------------------------------------------

def test_linalg_norm_string_orders_are_matrix_norms():
    v = t(rng.standard_normal(4))
    for ord_ in ("fro", "nuc"):
        with pytest.raises(RuntimeError, match="^linalg.matrix_norm: The input tensor A must "
                                               "have at least 2 dimensions."):
            LA.norm(v, ord_)
    a = rng.standard_normal((3, 4))
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: dim must be a 2-tuple"):
        LA.norm(t(a), "fro", dim=1)
    np.testing.assert_allclose(host(LA.norm(t(a), "nuc")), np.linalg.norm(a, "nuc"))
    # ord None over two dims: the 2-norm of the elements
    np.testing.assert_allclose(host(LA.norm(t(a), dim=(0, 1))), np.linalg.norm(a))


def test_norm_dtype_must_keep_complexness():
    with pytest.raises(RuntimeError, match="^linalg.vector_norm: dtype should be complex for "
                                           "complex inputs, but got Float"):
        LA.vector_norm(tg.ones(3, dtype=tg.complex64), dtype=tg.float32)
    with pytest.raises(RuntimeError, match="^linalg.vector_norm: dtype should be real for real "
                                           "inputs, but got ComplexFloat"):
        LA.vector_norm(tg.ones(3), dtype=tg.complex64)
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: dtype should be complex"):
        LA.matrix_norm(tg.ones(2, 2, dtype=tg.complex128), dtype=tg.float64)
    r = LA.vector_norm(tg.ones(3, dtype=tg.complex64), dtype=tg.complex128)
    assert r.dtype is tg.float64


@pytest.mark.parametrize("ord_", ["nuc", 2, -2])
def test_half_precision_singular_value_norms_are_refused_by_matrix_norm(ord_):
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: Low precision dtypes not "
                                           "supported. Got Half"):
        LA.matrix_norm(tg.ones(2, 2, dtype=tg.float16), ord_, dtype=tg.float32)
    assert LA.matrix_norm(tg.ones(2, 2, dtype=tg.float16), 1).dtype is tg.float16


def test_vecdot_refuses_integers():
    with pytest.raises(RuntimeError, match="^linalg.vecdot: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        LA.vecdot(tg.ones(3, dtype=tg.int64), tg.ones(3, dtype=tg.int64))


# -- non-finite inputs -----------------------------------------------------------------------------

@pytest.mark.parametrize("fn, words", [
    (LA.svd, "linalg.svd: The algorithm failed to converge because the input matrix "
             "contained non-finite values."),
    (LA.svdvals, "linalg.svd: The algorithm failed to converge because the input matrix "
                 "contained non-finite values."),
    (LA.pinv, "linalg.svd: The algorithm failed to converge"),
    (LA.matrix_rank, "linalg.svd: The algorithm failed to converge"),
    (LA.eigh, "linalg.eigh: The algorithm failed to converge because the input matrix is "
              "ill-conditioned or has too many repeated eigenvalues"),
])
def test_nan_input_to_the_iterative_factorizations_raises_linalg_error(fn, words):
    a = np.ones((3, 3)) + np.eye(3)  # (dense: a NaN on a diagonal matrix's diagonal converges)
    a[1, 1] = np.nan
    with pytest.raises(LA.LinAlgError, match="^" + words.replace("(", r"\(")):
        fn(t(a))
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\): "):
        fn(t(np.stack([np.eye(3), a])))


def test_matrix_exp_of_non_finite_matrices_is_nan_per_matrix():
    a = np.stack([np.eye(2), np.array([[1., 0.5], [0., 2.]])])
    a[0, 1, 1] = np.inf
    r = host(LA.matrix_exp(t(a)))
    assert np.isnan(r[0]).all()
    # the finite matrix is exact (an upper triangle: e^1, e^2 and (e^2 - e) / 2)
    e1, e2 = math.e, math.e ** 2
    np.testing.assert_allclose(r[1], [[e1, 0.5 * (e2 - e1)], [0, e2]], rtol=1e-13)


# -- error texts -----------------------------------------------------------------------------------

def test_kernel_dtype_refusals():
    half = tg.ones(2, 2, dtype=tg.float16)
    with pytest.raises(NotImplementedError, match="^\"lu_cpu\" not implemented for 'Half'"):
        LA.solve(half, half)
    for dt, name in ((tg.float16, "Half"), (tg.int64, "Long")):
        x = tg.ones(2, 2, dtype=dt)
        with pytest.raises(NotImplementedError,
                           match=f"^\"triangular_solve_cpu\" not implemented for '{name}'"):
            LA.solve_triangular(x, x, upper=True)
        with pytest.raises(NotImplementedError,
                           match=f"^\"cholesky_solve_cpu\" not implemented for '{name}'"):
            tg.cholesky_solve(x, x)


def test_matrix_rank_checks():
    with pytest.raises(RuntimeError, match="^torch.linalg.matrix_rank: The input tensor input "
                                           "must have at least 2 dimensions."):
        LA.matrix_rank(tg.ones(3))
    with pytest.raises(RuntimeError, match="^This function doesn't handle types other than "
                                           "float and double"):
        LA.matrix_rank(tg.ones(3, 3, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="^linalg.eigh: A must be batches of square"):
        LA.matrix_rank(tg.ones(3, 2), hermitian=True)
    with pytest.raises(TypeError, match=r"^linalg_matrix_rank\(\) received an invalid "
                                        r"combination of arguments - got \(Tensor, atol=float, "
                                        r"tol=float\)"):
        LA.matrix_rank(tg.ones(3, 3), tol=1.0, atol=1.0)
    assert int(LA.matrix_rank(tg.eye(3), tol=0.5)) == 3


def test_other_error_texts():
    bad = np.array([[1., 2.], [2., 1.]])
    with pytest.raises(LA.LinAlgError, match="^linalg.cholesky_ex: The factorization could not "
                                             "be completed"):
        LA.cholesky_ex(t(bad), check_errors=True)
    with pytest.raises(RuntimeError, match="^b should have at least 2 dimensions, but has 1 "
                                           "dimensions instead"):
        tg.cholesky_solve(t(np.ones(2)), t(np.eye(2)))
    with pytest.raises(RuntimeError, match=r"^multi_dot\(\): tensors 0 and 1 with shapes "
                                           r"\[2, 3\] and \[4, 4\] cannot be multiplied"):
        LA.multi_dot([tg.ones(2, 3), tg.ones(4, 4)])
    with pytest.raises(LA.LinAlgError, match="^inv: The diagonal element 1 is zero"):
        LA.tensorinv(tg.zeros(4, 2, 2), ind=1)
    z = t(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="^svd_backward: The singular vectors in the complex "
                                           "case are specified up to multiplication by "
                                           r"e\^\{i phi\}. The specified loss function depends "
                                           "on this phase term, making it ill-defined."):
        LA.svd(z)[0].sum().abs().backward()


def test_right_hand_solves_are_contiguous():
    # PyTorch's results are (its LAPACK solves the transposed system column-major): a .view()
    # of them works there, and did not here
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 4, 3))
    A, B = t(a), t(b)
    ref = np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)).swapaxes(-1, -2)
    LU, piv = LA.lu_factor(A)
    for x in (LA.solve(A, B, left=False), LA.solve_ex(A, B, left=False).result,
              LA.lu_solve(LU, piv, B, left=False)):
        assert x.is_contiguous()
        np.testing.assert_allclose(host(x.view(-1)), ref.reshape(-1), atol=1e-12)


# -- out= ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, fn", [
    ("linalg.cond", lambda A, o: LA.cond(A, out=o)),
    ("linalg.pinv", lambda A, o: LA.pinv(A, out=o)),
    ("matrix_power", lambda A, o: LA.matrix_power(A, 2, out=o)),
    ("torch.linalg.householder_product", lambda A, o: LA.householder_product(A, A[0, :2],
                                                                            out=o)),
    ("tensorinv", lambda A, o: LA.tensorinv(A, ind=1, out=o)),
    ("tensorsolve", lambda A, o: LA.tensorsolve(A, A[0], out=o)),
    ("cholesky_inverse", lambda A, o: tg.cholesky_inverse(A, out=o)),
    ("cholesky_solve", lambda A, o: tg.cholesky_solve(A, A, out=o)),
])
def test_out_of_an_unsafe_dtype_is_refused_in_pytorchs_words(name, fn):
    A = t(np.eye(3) * 2)
    with pytest.raises(RuntimeError, match=f"^{name}: Expected result to be safely castable "
                                           f"from Double dtype, but got result with dtype Long"):
        fn(A, tg.empty(0, dtype=tg.int64))


def test_ormqr_out_must_have_the_input_dtype():
    a, tau = tg.geqrf(t(rng.standard_normal((3, 3))))
    with pytest.raises(RuntimeError, match="^torch.ormqr: Expected input and result to have "
                                           "the same dtype, but input has dtypeDouble and "
                                           "result has dtype Float"):
        tg.ormqr(a, tau, a, out=tg.empty(0))


@pytest.mark.parametrize("fn", [
    lambda A, o: LA.matrix_norm(A, out=o),
    lambda A, o: LA.norm(A, "nuc", out=o),
    lambda A, o: LA.cond(A, out=o),
    lambda A, o: LA.tensorinv(A, ind=1, out=o),
    lambda A, o: LA.tensorsolve(A, A[0], out=o),
])
def test_composite_out_is_written_in_the_graph(fn):
    # PyTorch's composite functions copy into out (CopyBackwards) where the others refuse
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    x = t(a, requires_grad=True)
    o = tg.empty(0, dtype=tg.float64)
    r = fn(x, o)
    assert r is o and o.requires_grad and tuple(o.shape) == tuple(fn(x, None).shape)
    w = t(_weights(tuple(o.shape)))
    (g,) = tg.autograd.grad((o * w).sum(), x)
    (ref,) = tg.autograd.grad((fn(x, None) * w).sum(), x)
    np.testing.assert_allclose(host(g), host(ref), atol=1e-12)


# -- against PyTorch -------------------------------------------------------------------------------

def _as(lib, a):
    return lib.tensor(a)


@pytest.mark.parametrize("case", ["pinv_herm", "cond_nuc_empty", "lstsq_res", "norm_str",
                                  "pinv_herm_grad"])
def test_against_torch(case):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    w = _weights((3, 3))
    for lib in (torch, tg):
        x = _as(lib, a)
        if case == "pinv_herm":
            r = lib.linalg.pinv(x, hermitian=True)
        elif case == "cond_nuc_empty":
            r = lib.linalg.cond(lib.zeros(2, 0, 0), "nuc")
        elif case == "lstsq_res":
            r = lib.linalg.lstsq(x[:2], x[:2, :2].contiguous(), driver="gelsd").residuals
        elif case == "norm_str":
            r = lib.linalg.norm(x.real, "nuc", dim=(1, 0))
        else:
            x = x.clone().requires_grad_(True)
            h = x + x.mH
            (lib.linalg.pinv(h, hermitian=True) * _as(lib, w)).sum().real.backward()
            r = x.grad
        if lib is torch:
            ref = r.detach().resolve_conj().numpy()
        else:
            np.testing.assert_allclose(host(r), ref, atol=1e-10)
            assert tuple(r.shape) == ref.shape
