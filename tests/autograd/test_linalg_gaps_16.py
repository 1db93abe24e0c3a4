"""torch.linalg's eig, eigvals, cond, matrix_rank, lu, lu_solve, solve_ex, tensorinv,
tensorsolve and diagonal (autograd/ops/linalg_gaps.py): values against float64 NumPy
(np.linalg), gradients by gradcheck in float64, PyTorch's errors."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host

rng = np.random.default_rng(1617)
LA = tg.linalg


def t64(a, device="cpu", requires_grad=False):
    return tg.tensor(np.asarray(a), device=device, requires_grad=requires_grad,
                     dtype=tg.complex128 if np.iscomplexobj(a) else tg.float64)


def well_conditioned(*shape):
    n = shape[-1]
    return rng.standard_normal(shape) + 3 * np.eye(n)


# -- eig, eigvals ------------------------------------------------------------------------------------

@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_values(device, complex_input):
    a = rng.standard_normal((2, 4, 4))
    if complex_input:
        a = a + 1j * rng.standard_normal((2, 4, 4))
    w, v = LA.eig(t64(a, device))
    assert w.dtype is tg.complex128 and v.dtype is tg.complex128 and w.shape == (2, 4)
    W, V = host(w), host(v)
    np.testing.assert_allclose(a @ V, V * W[:, None, :], atol=1e-12)  # A V = V diag(w)
    np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1.0, rtol=1e-12)
    ref = np.linalg.eigvals(a)
    np.testing.assert_allclose(np.sort_complex(W.reshape(-1)), np.sort_complex(ref.reshape(-1)),
                               atol=1e-12)
    np.testing.assert_allclose(host(LA.eigvals(t64(a, device))), W, atol=1e-12)
    if not complex_input:
        assert LA.eig(tg.tensor(a, dtype=tg.float32)).eigenvalues.dtype is tg.complex64


def test_eig_gradients():
    a = t64(rng.standard_normal((4, 4)), requires_grad=True)
    weights = t64(rng.uniform(0.5, 1.5, (4, 4)))
    # gauge-invariant functions of the spectrum and the eigenvectors (|V| does not depend on
    # the phase of each column)
    assert tg.autograd.gradcheck(lambda t: tg.view_as_real(LA.eigvals(t)), (a,))
    assert tg.autograd.gradcheck(lambda t: (LA.eig(t).eigenvectors.abs() ** 2 * weights), (a,))
    c = t64(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)), requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: tg.view_as_real(LA.eigvals(t)), (c,))
    assert tg.autograd.gradcheck(lambda t: LA.eig(t).eigenvectors.abs(), (c,))


def test_eig_errors():
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        LA.eig(tg.randn(3, 4))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        LA.eig(tg.ones(3, 3, dtype=tg.int64))
    a = t64(rng.standard_normal((3, 3)), requires_grad=True)
    v = LA.eig(a).eigenvectors
    with pytest.raises(RuntimeError, match="The eigenvectors in the complex case are specified "
                                           "up to multiplication by e"):
        tg.view_as_real(v).sum().backward()  # depends on the phases


# -- cond, matrix_rank ------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"],
                         ids=str)
def test_cond(device, p):
    a = rng.standard_normal((3, 4, 4))
    got = LA.cond(t64(a, device), p)
    np.testing.assert_allclose(host(got), np.linalg.cond(a, p), rtol=1e-10)
    assert got.dtype is tg.float64
    x = t64(well_conditioned(4, 4), requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: LA.cond(t, p), (x,))


def test_cond_rectangular_singular_complex_and_errors():
    r = rng.standard_normal((5, 3))
    np.testing.assert_allclose(host(LA.cond(t64(r))), np.linalg.cond(r), rtol=1e-10)
    singular = t64([[1.0, 2.0], [2.0, 4.0]])
    assert host(LA.cond(singular, 1)).item() == math.inf
    c = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    got = LA.cond(t64(c), "fro")
    assert got.dtype is tg.float64
    np.testing.assert_allclose(host(got), np.linalg.cond(c, "fro"), rtol=1e-10)
    # (through vector_norm's 2-norm of a complex input: sum |x|^2, real)
    np.testing.assert_allclose(host(LA.vector_norm(t64(c))), np.linalg.norm(c), rtol=1e-12)
    assert tg.autograd.gradcheck(LA.vector_norm, (t64(c, requires_grad=True),))
    with pytest.raises(RuntimeError, match="linalg.cond got an invalid norm type: 3"):
        LA.cond(t64(r[:3]), 3)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        LA.cond(t64(r), 1)


def test_matrix_rank(device):
    low = rng.standard_normal((3, 5, 2)) @ rng.standard_normal((3, 2, 4))  # rank 2 each
    a = t64(low, device)
    got = LA.matrix_rank(a)
    assert got.dtype is tg.int64 and host(got).tolist() == [2, 2, 2]
    np.testing.assert_array_equal(host(got), np.linalg.matrix_rank(low))
    s = np.array([3.0, 1.0, 1e-3])
    m = rng.standard_normal((3, 3))
    q, _ = np.linalg.qr(m)
    d = q @ np.diag(s) @ q.T  # symmetric, singular values s
    assert LA.matrix_rank(t64(d, device), atol=0.5).item() == 2
    assert LA.matrix_rank(t64(d, device), rtol=0.01).item() == 2
    assert LA.matrix_rank(t64(d, device), atol=0.5, rtol=0.5).item() == 1  # max(0.5, 1.5)
    assert LA.matrix_rank(t64(d, device), 1e-4).item() == 3  # the older tol: atol
    assert LA.matrix_rank(t64(d, device), hermitian=True, atol=2.0).item() == 1
    tol = t64([0.5, 2.0])
    batch = t64(np.stack([d, d]), device)
    assert host(LA.matrix_rank(batch, atol=tol.to(device))).tolist() == [2, 1]
    assert LA.matrix_rank(t64(np.zeros((0, 3)))).item() == 0
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        LA.matrix_rank(t64(low), hermitian=True)


# -- lu, lu_solve --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)], ids=str)
def test_lu(device, shape):
    a = rng.standard_normal(shape)
    P, L, U = LA.lu(t64(a, device))
    k = min(shape[-2:])
    assert L.shape[-2:] == (shape[-2], k) and U.shape[-2:] == (k, shape[-1])
    p, lo, up = host(P), host(L), host(U)
    np.testing.assert_allclose(p @ lo @ up, a, atol=1e-12)
    np.testing.assert_array_equal(np.tril(lo, -1) + np.eye(shape[-2], k), lo)
    np.testing.assert_array_equal(np.triu(up), up)
    np.testing.assert_array_equal(np.sort(p, -1)[..., -1], 1.0)  # a permutation
    assert np.abs(lo).max() <= 1 + 1e-12  # partial pivoting
    x = t64(a, requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: LA.lu(t).L, (x,))
    assert tg.autograd.gradcheck(lambda t: LA.lu(t).U, (x,))


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_lu_solve(device, left, adjoint):
    a = well_conditioned(2, 4, 4)
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
    LU, piv = LA.lu_factor(t64(a, device))
    x = LA.lu_solve(LU, piv, t64(b, device), left=left, adjoint=adjoint)
    op = np.conj(np.swapaxes(a, -1, -2)) if adjoint else a
    ref = np.linalg.solve(op, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(host(x), ref, rtol=1e-10, atol=1e-12)
    lu_cpu, piv_cpu = LA.lu_factor(t64(a))
    assert tg.autograd.gradcheck(
        lambda f, rhs: LA.lu_solve(f, piv_cpu, rhs, left=left, adjoint=adjoint),
        (lu_cpu.detach().requires_grad_(True), t64(b, requires_grad=True)))


def test_lu_solve_errors():
    LU, piv = LA.lu_factor(t64(well_conditioned(3, 3)))
    with pytest.raises(RuntimeError, match="The input tensor B must have at least 2 dimensions"):
        LA.lu_solve(LU, piv, t64(np.ones(3)))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation "
                                           r"AX = B \(3x3 and 4x1\)"):
        LA.lu_solve(LU, piv, t64(np.ones((4, 1))))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        LA.lu_solve(LU, piv, tg.ones(3, 1))


# -- solve_ex, tensorinv, tensorsolve, diagonal ----------------------------------------------------

def test_solve_ex(device):
    a = well_conditioned(3, 4, 4)
    a[1, :, 2] = 0.0  # singular: U's third pivot is zero
    b = rng.standard_normal((3, 4))
    result, info = LA.solve_ex(t64(a, device), t64(b, device))
    assert info.dtype is tg.int32 and host(info).tolist() == [0, 3, 0]
    for i in (0, 2):
        np.testing.assert_allclose(host(result)[i], np.linalg.solve(a[i], b[i]), rtol=1e-10)
    assert np.isnan(host(result)[1]).all()
    with pytest.raises(tg.linalg.LinAlgError, match=r"\(Batch element 1\): The solver failed "
                                                    r"because the input matrix is singular"):
        LA.solve_ex(t64(a, device), t64(b, device), check_errors=True)
    good = t64(a[0], requires_grad=True)
    rows = b[:2]  # X A = B: two rows
    r, i = LA.solve_ex(good, t64(rows), left=False)
    np.testing.assert_allclose(host(r), np.linalg.solve(a[0].T, rows.T).T, rtol=1e-10)
    assert i.item() == 0
    assert tg.autograd.gradcheck(lambda t, rhs: LA.solve_ex(t, rhs).result,
                                 (good, t64(b[0], requires_grad=True)))


def test_tensorinv_and_tensorsolve(device):
    a = rng.standard_normal((4, 6, 8, 3))
    inv = LA.tensorinv(t64(a, device), ind=2)
    np.testing.assert_allclose(host(inv), np.linalg.tensorinv(a, ind=2), rtol=1e-9, atol=1e-12)
    assert inv.shape == (8, 3, 4, 6)
    x = t64(well_conditioned(6, 6).reshape(6, 2, 3), requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: LA.tensorinv(t, ind=1), (x,))
    with pytest.raises(RuntimeError, match="Expected a strictly positive integer for 'ind', but "
                                           "got 0"):
        LA.tensorinv(t64(a), ind=0)
    with pytest.raises(RuntimeError, match=r"prod\(self.shape\[ind:\]\) == "
                                           r"prod\(self.shape\[:ind\]\), but got 144 != 4"):
        LA.tensorinv(t64(a), ind=1)

    A = rng.standard_normal((2, 3, 6))
    B = rng.standard_normal((2, 3))
    got = LA.tensorsolve(t64(A, device), t64(B, device))
    np.testing.assert_allclose(host(got), np.linalg.tensorsolve(A, B), rtol=1e-10)
    A2 = rng.standard_normal((6, 2, 3))
    np.testing.assert_allclose(host(LA.tensorsolve(t64(A2, device), t64(B, device), dims=(0,))),
                               np.linalg.tensorsolve(A2, B, axes=(0,)), rtol=1e-10)
    assert tg.autograd.gradcheck(lambda m, rhs: LA.tensorsolve(m, rhs),
                                 (t64(well_conditioned(6, 6).reshape(2, 3, 6),
                                      requires_grad=True), t64(B, requires_grad=True)))
    with pytest.raises(RuntimeError, match=r"prod\(self.shape\[other.ndim:\]\) == "
                                           r"prod\(self.shape\[:other.ndim\]\), but got 5 != 6"):
        LA.tensorsolve(t64(np.ones((2, 3, 5))), t64(B))


def test_diagonal(device):
    a = rng.standard_normal((2, 3, 4, 5))
    x = t64(a, device)
    np.testing.assert_array_equal(host(LA.diagonal(x)), np.diagonal(a, 0, -2, -1))
    np.testing.assert_array_equal(host(LA.diagonal(x, offset=1, dim1=0, dim2=2)),
                                  np.diagonal(a, 1, 0, 2))
    with pytest.raises(TypeError):
        LA.diagonal(x, 1)  # (keyword-only, as PyTorch's)
