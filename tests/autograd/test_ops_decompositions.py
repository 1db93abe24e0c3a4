"""Factorizations and solvers (autograd/ops/decompositions.py, tritongrad.linalg): values
against NumPy float64 and reconstruction identities, gradients and second derivatives by
finite differences (gauge-invariant losses for qr/eigh/svd), PyTorch's errors, on the CPU and
the (emulated) CUDA device (a host round trip)."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd.gradcheck import gradcheck, gradgradcheck

rng = np.random.default_rng(11)


def t(a, device, requires_grad=True):
    return tg.tensor(np.asarray(a), dtype=tg.float64, device=device, requires_grad=requires_grad)


def host(x):
    return x.detach().cpu().numpy()


def close(x, ref, tol=1e-9):
    assert tuple(x.shape) == np.shape(ref), (tuple(x.shape), np.shape(ref))
    np.testing.assert_allclose(host(x), ref, rtol=tol, atol=tol)


def well_conditioned(*shape):
    n = shape[-1]
    return rng.standard_normal(shape) + 3 * np.eye(n)


def spd(*shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def check_grads(fn, inputs):
    # (on the emulated CUDA device every op runs Triton's interpreter: there the checks take
    # one random direction per input (fast mode), the CPU run checks whole Jacobians)
    fast = inputs[0].device.type == "cuda"
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4, fast_mode=fast)
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4, rtol=1e-3, fast_mode=fast)


def sym(a):
    return a + a.mT


# -- values --------------------------------------------------------------------------------------

def test_inverse_determinant_solve_values(device):
    a = well_conditioned(2, 3, 3)
    b = rng.standard_normal((2, 3, 2))
    A, B = t(a, device), t(b, device)
    close(tg.linalg.inv(A), np.linalg.inv(a))
    close(tg.inverse(A), np.linalg.inv(a))
    close(tg.linalg.det(A), np.linalg.det(a))
    close(A.det(), np.linalg.det(a))
    sign, logabs = tg.linalg.slogdet(A)
    ref_sign, ref_log = np.linalg.slogdet(a)
    close(sign, ref_sign)
    close(logabs, ref_log)
    close(tg.linalg.solve(A, B), np.linalg.solve(a, b))
    close(tg.linalg.solve(A, B[..., 0]), np.linalg.solve(a, b[..., :1])[..., 0])  # vectors
    close(tg.linalg.solve(A[0], B), np.linalg.solve(a[0], b))  # broadcast batch
    close(tg.linalg.solve(A, B.mT, left=False), np.swapaxes(np.linalg.solve(
        np.swapaxes(a, -1, -2), b), -1, -2))
    expected = np.where(ref_sign < 0, np.nan, ref_log)
    np.testing.assert_allclose(host(tg.logdet(A)), expected, rtol=1e-9)
    inverse, info = tg.linalg.inv_ex(A)
    close(inverse, np.linalg.inv(a))
    assert info.dtype is tg.int32 and host(info).tolist() == [0, 0]


def test_factorization_reconstructions(device):
    a = rng.standard_normal((2, 4, 3))
    A = t(a, device)
    Q, R = tg.linalg.qr(A)
    close(Q @ R, a)
    close(Q.mT @ Q, np.broadcast_to(np.eye(3), (2, 3, 3)))
    assert np.allclose(np.tril(host(R), -1), 0)
    Qc, Rc = tg.qr(A, some=False)
    assert tuple(Qc.shape) == (2, 4, 4)
    close(Qc @ Rc, a)
    U, S, Vh = tg.linalg.svd(A, full_matrices=False)
    close((U * S.unsqueeze(-2)) @ Vh, a)
    close(S, np.linalg.svd(a, compute_uv=False))
    close(tg.linalg.svdvals(A), np.linalg.svd(a, compute_uv=False))
    U2, S2, V2 = tg.svd(A)  # V, not Vh; some=True: reduced
    assert tuple(U2.shape) == (2, 4, 3)
    close((U2 * S2.unsqueeze(-2)) @ V2.mT, a)
    assert tuple(tg.svd(A, some=False).U.shape) == (2, 4, 4)
    s = spd(2, 3, 3)
    L = tg.linalg.cholesky(t(s, device))
    close(L, np.linalg.cholesky(s))
    close(tg.linalg.cholesky(t(s, device), upper=True), np.swapaxes(np.linalg.cholesky(s), -1, -2))
    w, V = tg.linalg.eigh(t(s, device))
    close(w, np.linalg.eigvalsh(s))
    close((V * w.unsqueeze(-2)) @ V.mT, s)
    close(tg.linalg.eigvalsh(t(s, device)), np.linalg.eigvalsh(s))
    close(tg.linalg.pinv(A), np.linalg.pinv(a))
    close(tg.pinverse(A), np.linalg.pinv(a))


def test_triangular_solves_and_matrix_exp(device):
    a = well_conditioned(3, 3)
    b = rng.standard_normal((3, 2))
    A, B = t(a, device), t(b, device)
    close(tg.linalg.solve_triangular(A, B, upper=True), np.linalg.solve(np.triu(a), b))
    close(tg.linalg.solve_triangular(A, B.mT, upper=False, left=False),
          b.T @ np.linalg.inv(np.tril(a)))
    unit = np.tril(a, -1) + np.eye(3)
    close(tg.linalg.solve_triangular(A, B, upper=False, unitriangular=True),
          np.linalg.solve(unit, b))
    X, copy = tg.triangular_solve(B, A, upper=True, transpose=True)
    close(X, np.linalg.solve(np.triu(a).T, b))
    close(copy, a)
    s = spd(3, 3)
    Lc = np.linalg.cholesky(s)
    close(tg.cholesky_solve(B, t(Lc, device)), np.linalg.solve(s, b))
    close(tg.cholesky_solve(B, t(Lc.T, device), upper=True), np.linalg.solve(s, b))
    # exp of a diagonalizable matrix: V exp(D) V^-1
    sm = sym(t(rng.standard_normal((3, 3)), device, False))
    w, V = np.linalg.eigh(host(sm))
    close(tg.linalg.matrix_exp(sm), (V * np.exp(w)) @ V.T, 1e-8)
    close(tg.matrix_exp(t(np.zeros((2, 2)), device)), np.eye(2))
    big = rng.standard_normal((2, 2)) * 5  # scaling and squaring
    e = host(tg.linalg.matrix_exp(t(big, device)))
    np.testing.assert_allclose(e @ host(tg.linalg.matrix_exp(t(-big, device))), np.eye(2),
                               atol=1e-8)


def test_small_composites(device):
    x = t(rng.standard_normal((2, 3)), device)
    y = t(rng.standard_normal((2, 3)), device)
    close(tg.linalg.cross(x, y), np.cross(host(x), host(y)))
    close(tg.linalg.vander(x[0]), np.vander(host(x[0]), increasing=True))
    mats = [rng.standard_normal(s) for s in ((3,), (3, 4), (4, 2))]
    close(tg.linalg.multi_dot([t(m, device) for m in mats]), mats[0] @ mats[1] @ mats[2])
    a = rng.standard_normal((5, 3))
    b = rng.standard_normal((5, 2))
    res = tg.linalg.lstsq(t(a, device), t(b, device))
    close(res.solution, np.linalg.lstsq(a, b, rcond=None)[0])
    assert int(res.rank) == 3


def test_lu_factor_matches_lapack_layout():
    a = np.array([[1., 2., 3.], [4., 5., 6.], [7., 8., 10.]])
    lu, piv = tg.linalg.lu_factor(tg.tensor(a))
    lu, piv = host(lu), host(piv)
    assert piv.tolist() == [3, 3, 3]
    L, U = np.tril(lu, -1) + np.eye(3), np.triu(lu)
    p = np.arange(3)
    for i, j in enumerate(piv - 1):
        p[[i, j]] = p[[j, i]]
    np.testing.assert_allclose(L @ U, a[p], atol=1e-12)


def test_complex_values(device):
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) + 3 * np.eye(3)
    A = tg.tensor(a, dtype=tg.complex128, device=device)
    np.testing.assert_allclose(host(tg.linalg.inv(A)), np.linalg.inv(a), atol=1e-12)
    np.testing.assert_allclose(host(tg.linalg.det(A)), np.linalg.det(a), atol=1e-12)
    h = a @ a.conj().T
    np.testing.assert_allclose(host(tg.linalg.cholesky(tg.tensor(h, device=device))),
                               np.linalg.cholesky(h), atol=1e-12)


def test_float32_runs_in_float32(device):
    A = tg.tensor(well_conditioned(3, 3), dtype=tg.float32, device=device)
    assert tg.linalg.inv(A).dtype is tg.float32
    assert tg.linalg.svd(A).S.dtype is tg.float32
    assert tg.linalg.slogdet(A).logabsdet.dtype is tg.float32


# -- gradients -------------------------------------------------------------------------------------

def test_inverse_determinant_solve_gradients(device):
    A = t(well_conditioned(2, 3, 3), device)
    B = t(rng.standard_normal((2, 3, 2)), device)
    check_grads(tg.linalg.inv, [A])
    check_grads(tg.linalg.det, [A])
    check_grads(lambda a: tg.linalg.slogdet(a).logabsdet, [A])
    check_grads(tg.linalg.solve, [A, B])
    check_grads(lambda a, b: tg.linalg.solve(a, b[..., 0]), [A, B])
    assert tg.linalg.inv(A).grad_fn.name() == "LinalgInvExBackward0"
    assert tg.linalg.solve(A, B).grad_fn.name() == "LinalgSolveExBackward0"


def test_factorization_gradients(device):
    A = t(rng.standard_normal((4, 3)), device)
    S = t(spd(3, 3), device)
    check_grads(lambda s: tg.linalg.cholesky(sym(s)), [S])
    check_grads(lambda s: tg.linalg.cholesky(sym(s), upper=True), [S])
    check_grads(lambda a: tg.linalg.qr(a), [A])  # Q and R: sign-fixed by R's positive diagonal?
    # wide (m < n): A = [X | Y] with X = Q U square (was NotImplementedError); Q square in
    # either mode
    check_grads(lambda a: tg.linalg.qr(a.mT), [A])
    check_grads(lambda a: tg.linalg.qr(a.mT, mode="complete"), [A])
    # eigh: eigenvalues, and eigenvectors through a sign-invariant function (V diag(w) V^T, V V^T
    # weighted)
    M = t(rng.standard_normal((3, 3)), device)
    check_grads(lambda m: tg.linalg.eigvalsh(sym(m)), [M])
    check_grads(lambda m: (lambda w, V: (V * V) @ w)(*tg.linalg.eigh(sym(m))), [M])
    check_grads(lambda a: tg.linalg.svdvals(a), [A])
    check_grads(lambda a: (lambda U, S, Vh: U @ Vh)(*tg.linalg.svd(a, full_matrices=False)), [A])
    wu = t(rng.standard_normal((3, 3)), device, False)
    wv = t(rng.standard_normal((3, 4)), device, False)
    check_grads(lambda a: (lambda U, S, Vh: (U * U * wu).sum() + (Vh * Vh * wv).sum())(
        *tg.linalg.svd(a.mT, full_matrices=False)), [A])
    check_grads(tg.linalg.pinv, [A])
    # full_matrices=True on a non-square matrix: the leading k vectors' gradients (the
    # completion's are dropped, as PyTorch's; this raised NotImplementedError)
    w3 = t(np.array([1.0, -2.0, 0.5]), device, False)
    for a in (A, A.mT):
        check_grads(lambda x: (lambda U, S, Vh: ((U * U)[..., :3].sum(-2) * w3).sum() + S.sum()
                               + ((Vh * Vh)[..., :3, :].sum(-1) * w3).sum())(*tg.linalg.svd(x)),
                    [a])


def test_triangular_and_exponential_gradients(device):
    A = t(well_conditioned(3, 3), device)
    B = t(rng.standard_normal((3, 2)), device)
    check_grads(lambda a, b: tg.linalg.solve_triangular(a, b, upper=True), [A, B])
    check_grads(lambda a, b: tg.linalg.solve_triangular(a, b.mT, upper=False, left=False),
                [A, B])
    check_grads(lambda a, b: tg.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
                [A, B])
    L = t(np.linalg.cholesky(spd(3, 3)), device)
    check_grads(lambda l, b: tg.cholesky_solve(b, l.tril()), [L, B])
    check_grads(tg.linalg.matrix_exp, [t(rng.standard_normal((2, 3, 3)) * 0.5, device)])


def test_complex_gradients():
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) + 3 * np.eye(3)
    A = tg.tensor(a, dtype=tg.complex128, requires_grad=True)
    assert gradcheck(lambda x: tg.linalg.inv(x), [A])
    assert gradcheck(lambda x: tg.linalg.det(x), [A])
    assert gradcheck(lambda x: tg.linalg.svdvals(x), [A])
    assert gradcheck(lambda x: tg.linalg.eigvalsh(x + x.mH), [A])
    assert gradcheck(lambda x: tuple(tg.linalg.slogdet(x)), [A])
    assert gradcheck(lambda x: tg.linalg.cholesky(x @ x.mH), [A])
    assert gradcheck(lambda x: tg.linalg.solve(x, x[:, :2] * 1j), [A])
    assert gradcheck(lambda x: tg.linalg.matrix_exp(x * 0.3), [A])
    assert gradcheck(lambda x: (lambda Q, R: (Q @ Q.mH, R.abs()))(*tg.linalg.qr(x[:, :2])), [A])
    # Q and R themselves (LAPACK's gauge: R's diagonal real): the Hermitian part of R gR^H -
    # gQ^H Q kept its imaginary diagonal, so these failed; square, tall and wide
    for part in (lambda x: x, lambda x: x[:, :2], lambda x: x[:2]):
        assert gradcheck(lambda x: tg.linalg.qr(part(x)), [A])
    W = tg.tensor(a[:, :2], dtype=tg.complex128, requires_grad=True)  # 3 x 2, then 2 x 3
    for M in (W, W.mT):
        assert gradcheck(lambda x: (lambda U, S, Vh: (U @ Vh, S))(
            *tg.linalg.svd(x, full_matrices=False)), [M])
        assert gradcheck(tg.linalg.pinv, [M])


def test_forward_mode_of_solves(device):
    A = t(well_conditioned(2, 3, 3), device)
    B = t(rng.standard_normal((2, 3, 2)), device)
    for fn in (tg.linalg.solve, lambda a, b: tg.linalg.solve_triangular(a, b.mT, upper=False,
                                                                       left=False),
               lambda a, b: tg.linalg.slogdet(a).logabsdet * b.sum()):
        assert gradcheck(fn, [A, B], check_forward_ad=True, fast_mode=device == "cuda")


def test_complex_phase_dependent_loss_is_refused():
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    A = tg.tensor(a + a.conj().T, dtype=tg.complex128, requires_grad=True)
    w, V = tg.linalg.eigh(A)
    with pytest.raises(RuntimeError, match="specified up to multiplication by e"):
        weights = tg.tensor(rng.standard_normal((3, 3)) + 1j, dtype=tg.complex128)
        (V * weights).real.sum().backward()


# -- errors ----------------------------------------------------------------------------------------

def test_errors_match_pytorch(device):
    def raises(fn, match, exc=RuntimeError):
        with pytest.raises(exc) as info:
            fn()
        assert str(info.value) == match, str(info.value)

    rect = tg.ones(2, 3, device=device)
    raises(lambda: tg.linalg.inv(rect),
           "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices")
    raises(lambda: tg.linalg.inv(tg.tensor([[1., 2.], [2., 4.]], device=device)),
           "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed "
           "because the input matrix is singular.", tg.linalg.LinAlgError)
    raises(lambda: tg.linalg.inv(tg.zeros(2, 2, 2, device=device)),
           "linalg.inv: (Batch element 0): The diagonal element 1 is zero, the inversion could "
           "not be completed because the input matrix is singular.")
    raises(lambda: tg.linalg.inv(tg.ones(2, 2, dtype=tg.int64, device=device)),
           "linalg.inv: Expected a floating point or complex tensor as input. Got Long")
    raises(lambda: tg.linalg.inv(tg.ones(2, 2, dtype=tg.float16, device=device)),
           "linalg.inv: Low precision dtypes not supported. Got Half")
    raises(lambda: tg.linalg.cholesky(tg.tensor([[1., 2.], [2., 1.]], device=device)),
           "linalg.cholesky: The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order 2 is not positive-definite).")
    raises(lambda: tg.linalg.cholesky(tg.tensor([[[1., 0.], [0., 1.]], [[1., 2.], [2., 1.]]],
                                                device=device)),
           "linalg.cholesky: (Batch element 1): The factorization could not be completed "
           "because the input is not positive-definite (the leading minor of order 2 is not "
           "positive-definite).")
    raises(lambda: tg.linalg.solve(tg.tensor([[1., 2.], [2., 4.]], device=device),
                                   tg.ones(2, device=device)),
           "torch.linalg.solve: The solver failed because the input matrix is singular.")
    raises(lambda: tg.linalg.solve(tg.eye(2, device=device), tg.ones(3, device=device)),
           "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)")
    raises(lambda: tg.linalg.qr(tg.ones(3, device=device)),
           "linalg.qr: The input tensor A must have at least 2 dimensions.")
    raises(lambda: tg.linalg.det(rect),
           "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices")
    _, info = tg.linalg.cholesky_ex(tg.tensor([[1., 2.], [2., 1.]], device=device))
    assert int(info) == 2
    inverse, info = tg.linalg.inv_ex(tg.tensor([[1., 2.], [2., 4.]], device=device))
    assert int(info) == 2 and np.isnan(host(inverse)).all()


def test_singular_slogdet_and_grad_fn_names():
    sign, logabs = tg.linalg.slogdet(tg.zeros(2, 2))
    assert float(sign) == 0 and float(logabs) == -np.inf
    A = t(well_conditioned(3, 3), "cpu")
    names = {
        "LinalgDetBackward0": tg.linalg.det(A),
        "LinalgSlogdetBackward0": tg.linalg.slogdet(A)[1],
        "LinalgCholeskyExBackward0": tg.linalg.cholesky(sym(A)),
        "LinalgQrBackward0": tg.linalg.qr(A)[0],
        "LinalgEighBackward0": tg.linalg.eigh(A)[0],
        "LinalgSvdBackward0": tg.linalg.svd(A)[1],
        "LinalgSolveTriangularBackward0": tg.linalg.solve_triangular(A, A, upper=True),
        "LinalgMatrixExpBackward0": tg.linalg.matrix_exp(A),
    }
    for name, out in names.items():
        assert out.grad_fn.name() == name
    Q, R = tg.linalg.qr(A)
    assert Q.grad_fn._saved_mode == "reduced"
    np.testing.assert_array_equal(host(Q.grad_fn._saved_R), host(R))
    U, S, Vh = tg.linalg.svd(A)
    np.testing.assert_array_equal(host(S.grad_fn._saved_S), host(S))


def test_lobpcg_is_the_exact_extreme_eigenpairs():
    a = rng.standard_normal((6, 6))
    s = a @ a.T
    A = t(s, "cpu")
    w, V = np.linalg.eigh(s)
    E, X = tg.lobpcg(A, k=2)
    close(E, w[::-1][:2])
    close(X * X, (V[:, ::-1][:, :2]) ** 2)
    E, X = tg.lobpcg(A, k=2, largest=False)
    close(E, w[:2])
    b = spd(6, 6)
    E, X = tg.lobpcg(A, k=1, B=t(b, "cpu"))
    close(A @ X, host((t(b, "cpu") @ X) * E), 1e-8)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested"):
        tg.lobpcg(A, k=3)
    check_grads(lambda m: (lambda E, X: (E, X * X))(*tg.lobpcg(m @ m.mT, k=2)), [A])
    check_grads(lambda m: tg.lobpcg(m @ m.mT, k=1, B=t(b, "cpu", False))[0], [A])
    E, X = tg.lobpcg(A, k=1)
    (E.sum() + (X * X).sum()).backward()
    np.testing.assert_allclose(host(A.grad), host(A.grad).T, atol=1e-12)


def _adjugate(a: np.ndarray) -> np.ndarray:
    """The classical adjugate by cofactors (float64 reference)."""
    n = a.shape[0]
    cof = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            cof[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return cof.T


@pytest.mark.parametrize("m", [[[1.0, 2.0], [2.0, 4.0]],
                               [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
                               [[2.0, 1.0], [1.0, 3.0]]])
def test_det_gradient_is_the_adjugate_even_at_singular_matrices(m):
    # d det / dA = adj(A)^T everywhere (det is a polynomial); PyTorch's first-order backward
    # gives 0 at an exactly singular A, its create_graph path (an SVD) this adjugate
    a = np.array(m)
    A = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    tg.linalg.det(A).backward()
    np.testing.assert_allclose(A.grad.numpy(), _adjugate(a).T, atol=1e-12)
    assert tg.autograd.gradcheck(tg.linalg.det, (A.detach().requires_grad_(),))


def test_det_gradient_batched_mix_and_second_order():
    a = np.array([[[1.0, 2.0, 0.0], [2.0, 4.0, 1.0], [0.0, 1.0, 3.0]],  # rank 3, det -1
                  [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 3.0]]])  # rank 2, det 0
    A = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    g = tg.tensor([0.5, -2.0], dtype=tg.float64)
    (tg.linalg.det(A) * g).sum().backward()
    for i in range(2):
        np.testing.assert_allclose(A.grad.numpy()[i], g[i].item() * _adjugate(a[i]).T,
                                   atol=1e-12)
    assert tg.autograd.gradgradcheck(tg.linalg.det, (tg.tensor(a[1:], dtype=tg.float64,
                                                               requires_grad=True),))


def test_solve_right_with_a_vector_is_pytorchs_shape_error():
    A = tg.eye(4, dtype=tg.float64) * 2
    with pytest.raises(RuntimeError, match=r"linalg.solve: Incompatible shapes of A and B for "
                                           r"the equation XA = B \(4x4 and 4x1\)"):
        tg.linalg.solve(A, tg.ones(4, dtype=tg.float64), left=False)
    X = tg.linalg.solve(A, tg.ones(3, 4, dtype=tg.float64), left=False)
    np.testing.assert_allclose(X.numpy(), np.full((3, 4), 0.5))


def _forward_ad_cases():
    H = lambda a: a + a.mH  # noqa: E731
    recon_eigh = lambda w, V: (V * w.to(V.dtype).unsqueeze(-2)) @ V.mH  # noqa: E731
    recon_svd = lambda U, S, Vh: (U * S.to(U.dtype).unsqueeze(-2)) @ Vh  # noqa: E731
    return {
        "eigvalsh": (lambda a: tg.linalg.eigvalsh(H(a)), (3, 3)),
        "eigh_reconstructed": (lambda a: recon_eigh(*tg.linalg.eigh(H(a))), (3, 3)),
        "eigh_vectors_abs": (lambda a: tg.linalg.eigh(H(a))[1].abs(), (3, 3)),
        "eigh_upper": (lambda a: tg.linalg.eigh(H(a), UPLO="U")[0], (3, 3)),
        "svdvals_tall": (tg.linalg.svdvals, (4, 3)),
        "svdvals_wide": (tg.linalg.svdvals, (3, 5)),
        "svd_reconstructed": (lambda a: recon_svd(*tg.linalg.svd(a, full_matrices=False)),
                              (4, 3)),
        "svd_U_abs": (lambda a: tg.linalg.svd(a, full_matrices=False)[0].abs(), (4, 3)),
        "svd_Vh_abs_wide": (lambda a: tg.linalg.svd(a, full_matrices=False)[2].abs(), (3, 5)),
        "pinv": (tg.linalg.pinv, (4, 3)),
        "qr_tall": (lambda a: tg.linalg.qr(a), (4, 3)),
        "qr_wide": (lambda a: tg.linalg.qr(a), (3, 5)),
    }


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("name", sorted(_forward_ad_cases()))
def test_forward_ad_of_eigh_svd_qr(name, complex_):
    # forward-mode rules (PyTorch's linalg_eig/svd/qr jvps) against finite differences, on
    # gauge-invariant functions of the vectors (their signs/phases are arbitrary)
    fn, shape = _forward_ad_cases()[name]
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)

    def real_view(x):
        outs = fn(x)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return tuple(tg.view_as_real(o) if o.is_complex() else o for o in outs)

    assert tg.autograd.gradcheck(real_view, (tg.tensor(a, requires_grad=True),),
                                 check_forward_ad=True, check_backward_ad=False, atol=1e-5)


def test_forward_ad_of_svd_refuses_full_non_square_and_qr_r_mode():
    import tritongrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        a = fwAD.make_dual(tg.ones(3, 2, dtype=tg.float64), tg.ones(3, 2, dtype=tg.float64))
        with pytest.raises(NotImplementedError, match="full_matrices=True is not supported"):
            tg.linalg.svd(a + tg.eye(3, 2, dtype=tg.float64))
        with pytest.raises(RuntimeError, match="not computed when mode='r'"):
            tg.linalg.qr(a + tg.eye(3, 2, dtype=tg.float64), mode="r")
