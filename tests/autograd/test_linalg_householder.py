"""LAPACK's compact QR and its Householder products (autograd/ops/householder.py: geqrf,
linalg.householder_product / orgqr, ormqr), the LU factorization's derivative
(decompositions.py: linalg.lu_factor, lu_factor_ex, tg.lu) and the removed Tensor methods:
values against NumPy float64 references built here from the formulas, gradients and second
derivatives against finite differences, PyTorch's errors, on the CPU and the (emulated) CUDA
device."""

import warnings

import numpy as np
import pytest
from tritongrad.autograd.gradcheck import gradcheck, gradgradcheck

import tritongrad as tg

rng = np.random.default_rng(7)


def t(a, device="cpu", requires_grad=False):
    a = np.asarray(a)
    dt = tg.complex128 if np.iscomplexobj(a) else tg.float64
    return tg.tensor(a, dtype=dt, device=device, requires_grad=requires_grad)


def host(x):
    return x.detach().cpu().numpy()


def rand(*shape, complex_=False):
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


def reflectors(a, tau):
    """H_1 ... H_k (m x m), H_i = I - tau_i v_i v_i^H, v_i = e_i + a[i+1:, i] (one matrix)."""
    m = a.shape[0]
    Q = np.eye(m, dtype=np.result_type(a, tau))
    for i in range(tau.shape[0]):
        v = np.zeros(m, dtype=Q.dtype)
        v[i] = 1
        v[i + 1:] = a[i + 1:, i]
        Q = Q @ (np.eye(m) - tau[i] * np.outer(v, v.conj()))
    return Q


def batched(fn, *arrays):
    """``fn`` applied to each matrix of a batch (the leading dims of the arrays)."""
    lead = arrays[0].shape[:-2]
    flat = [x.reshape((int(np.prod(lead)),) + x.shape[len(lead):]) for x in arrays]
    out = np.stack([fn(*xs) for xs in zip(*flat)])
    return out.reshape(lead + out.shape[1:])


def householder_qr(A):
    """LAPACK dgeqrf's result (real A), column by column (dlarfg: beta = -sign(alpha) norm)."""
    a = np.array(A, dtype=np.float64)
    m, n = a.shape
    tau = np.zeros(min(m, n))
    for j in range(min(m, n)):
        alpha, x = a[j, j], a[j + 1:, j]
        xnorm = np.linalg.norm(x)
        if xnorm == 0:
            continue
        beta = -np.copysign(np.hypot(alpha, xnorm), alpha)
        tau[j] = (beta - alpha) / beta
        a[j + 1:, j] = x / (alpha - beta)
        a[j, j] = beta
        v = np.concatenate([[1.0], a[j + 1:, j]])
        a[j:, j + 1:] -= tau[j] * np.outer(v, v @ a[j:, j + 1:])
    return a, tau


def check_grads(fn, inputs):
    # (the emulated CUDA device runs every op through Triton's interpreter: there one random
    # direction per input and first derivatives; whole Jacobians and second ones on the CPU)
    fast = inputs[0].device.type == "cuda"
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4, fast_mode=fast)
    if not fast:
        assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


# -- geqrf ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_geqrf_is_lapacks_compact_qr(shape, device):
    A = rand(*shape)
    a, tau = tg.geqrf(t(A, device))
    assert a.dtype is tg.float64 and tuple(tau.shape) == shape[:-2] + (min(shape[-2:]),)
    ref_a, ref_tau = (np.stack(x) for x in zip(*[householder_qr(m) for m in
                                                 A.reshape((-1,) + shape[-2:])]))
    np.testing.assert_allclose(host(a), ref_a.reshape(shape), atol=1e-12)
    np.testing.assert_allclose(host(tau), ref_tau.reshape(tau.shape), atol=1e-12)
    a2, tau2 = t(A, device).geqrf()
    np.testing.assert_array_equal(host(a2), host(a))
    np.testing.assert_array_equal(host(tau2), host(tau))


def test_geqrf_complex_and_float32_reconstruct_the_input():
    A = rand(4, 3, complex_=True)
    a, tau = tg.geqrf(t(A))
    assert a.dtype is tg.complex128 and tau.dtype is tg.complex128
    Q = reflectors(host(a), host(tau))
    np.testing.assert_allclose(Q.conj().T @ Q, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(Q[:, :3] @ np.triu(host(a))[:3], A, atol=1e-12)
    a32, tau32 = tg.geqrf(tg.tensor(rand(3, 3), dtype=tg.float32))
    assert a32.dtype is tg.float32 and tau32.dtype is tg.float32
    a0, tau0 = tg.geqrf(t(np.zeros((0, 3))))
    assert tuple(a0.shape) == (0, 3) and tuple(tau0.shape) == (0,)


def test_geqrf_has_no_derivative():
    for A in (rand(3, 2), rand(3, 2, complex_=True)):
        x = t(A, requires_grad=True)
        a, tau = tg.geqrf(x)
        assert type(a.grad_fn).__name__ == "GeqrfBackward0" and tau.grad_fn is a.grad_fn
        for out in (a, tau):
            with pytest.raises(NotImplementedError,
                               match="the derivative for 'geqrf' is not implemented."):
                out.abs().sum().backward(retain_graph=True)


# -- householder_product / orgqr -----------------------------------------------------------------

@pytest.mark.parametrize("complex_", [False, True])
def test_householder_product_values(complex_):
    A = rand(2, 5, 3, complex_=complex_)
    for k in range(4):
        tau = rand(2, k, complex_=complex_)
        Q = tg.linalg.householder_product(t(A), t(tau))
        ref = batched(lambda a, ta: reflectors(a, ta[0])[:, :3], A, tau[..., None, :])
        np.testing.assert_allclose(host(Q), ref, atol=1e-12)
    a, tau = tg.geqrf(t(A))
    Q = tg.orgqr(a, tau)  # geqrf's Q: A = Q R
    np.testing.assert_allclose(host(Q @ a.triu()[..., :3, :]), A, atol=1e-12)
    np.testing.assert_array_equal(host(a.orgqr(tau)), host(Q))


def test_householder_product_on_the_device(device):
    A, tau = rand(3, 2), rand(2)
    Q = tg.linalg.householder_product(t(A, device), t(tau, device))
    assert Q.device.type == device
    np.testing.assert_allclose(host(Q), reflectors(A, tau)[:, :2], atol=1e-12)
    check_grads(tg.linalg.householder_product, [t(A, device, True), t(tau, device, True)])


@pytest.mark.parametrize("k", [3, 1])
def test_householder_product_gradients(k):
    check_grads(tg.linalg.householder_product, [t(rand(5, 3), requires_grad=True),
                                               t(rand(k), requires_grad=True)])
    check_grads(tg.orgqr, [t(rand(2, 4, 3, complex_=True), requires_grad=True),
                           t(rand(2, k, complex_=True), requires_grad=True)])
    assert gradcheck(tg.linalg.householder_product, [t(rand(4, 3), requires_grad=True),
                                                    t(rand(k), requires_grad=True)],
                     check_forward_ad=True)


# -- ormqr ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_values(complex_, left, transpose):
    A, tau = rand(2, 4, 3, complex_=complex_), rand(2, 3, complex_=complex_)
    C = rand(2, 4, 2, complex_=complex_) if left else rand(2, 2, 4, complex_=complex_)

    def ref(a, ta, c):
        Q = reflectors(a, ta[0])
        Q = Q.conj().T if transpose else Q
        return Q @ c if left else c @ Q
    out = tg.ormqr(t(A), t(tau), t(C), left, transpose)
    np.testing.assert_allclose(host(out), batched(ref, A, tau[..., None, :], C), atol=1e-12)
    np.testing.assert_array_equal(host(t(A).ormqr(t(tau), t(C), left=left,
                                                  transpose=transpose)), host(out))


def test_ormqr_with_geqrf_gives_r(device):
    A = rand(4, 3)
    a, tau = tg.geqrf(t(A, device))
    R = tg.ormqr(a, tau, t(A, device), transpose=True)  # Q^T A = [R; 0]
    np.testing.assert_allclose(host(R), np.vstack([np.triu(host(a))[:3], np.zeros((1, 3))]),
                               atol=1e-12)
    check_grads(lambda a_, ta, c: tg.ormqr(a_, ta, c, left=False),
                [t(rand(3, 2), device, True), t(rand(2), device, True),
                 t(rand(2, 3), device, True)])


def test_ormqr_gradients():
    for complex_ in (False, True):
        inputs = [t(rand(4, 3, complex_=complex_), requires_grad=True),
                  t(rand(3, complex_=complex_), requires_grad=True),
                  t(rand(4, 2, complex_=complex_), requires_grad=True)]
        for left, transpose in ((True, False), (True, True)):
            check_grads(lambda a, ta, c, lt=left, tr=transpose: tg.ormqr(a, ta, c, lt, tr),
                        inputs)
        inputs[2] = t(rand(2, 4, complex_=complex_), requires_grad=True)
        check_grads(lambda a, ta, c: tg.ormqr(a, ta, c, False, True), inputs)


# -- errors (PyTorch 2.13's messages) ------------------------------------------------------------

def _raises(fn, exc, message):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == message, str(info.value)


def test_errors_match_pytorch():
    A, tau, C = t(rand(4, 3)), t(rand(3)), t(rand(4, 2))
    hp = "torch.linalg.householder_product: "
    _raises(lambda: tg.geqrf(t(rand(3))), RuntimeError,
            "torch.geqrf: input must have at least 2 dimensions.")
    _raises(lambda: tg.geqrf(tg.ones(2, 2, dtype=tg.int64)), NotImplementedError,
            "\"geqrf_cpu\" not implemented for 'Long'")
    _raises(lambda: tg.geqrf(tg.ones(2, 2, dtype=tg.float16)), NotImplementedError,
            "\"geqrf_cpu\" not implemented for 'Half'")
    _raises(lambda: tg.linalg.householder_product(A[0], tau), RuntimeError,
            hp + "input must have at least 2 dimensions.")
    _raises(lambda: tg.linalg.householder_product(A.mT, tau), RuntimeError,
            hp + "input.shape[-2] must be greater than or equal to input.shape[-1]")
    _raises(lambda: tg.linalg.householder_product(A, t(rand(4))), RuntimeError,
            hp + "input.shape[-1] must be greater than or equal to tau.shape[-1]")
    _raises(lambda: tg.linalg.householder_product(A, tau.reshape(1, 3)), RuntimeError,
            hp + "Expected tau to have one dimension less than input, but got tau.ndim equal "
                 "to 2 and input.ndim is equal to 2")
    _raises(lambda: tg.linalg.householder_product(A.expand(2, 4, 3), tau.expand(3, 3)),
            RuntimeError, hp + "Expected batch dimensions of tau to be equal to "
                               "input.shape[:-2], but got [3]")
    _raises(lambda: tg.linalg.householder_product(A, tau.float()), RuntimeError,
            hp + "tau dtype Float does not match input dtype Double")
    _raises(lambda: tg.orgqr(A.long(), tau.long()), NotImplementedError,
            "\"orgqr_cpu\" not implemented for 'Long'")
    _raises(lambda: tg.linalg.householder_product(A, tau[0]), IndexError,
            "Dimension specified as -1 but tensor has no dimensions")
    om = "torch.ormqr: "
    _raises(lambda: tg.ormqr(A[0], tau, C), RuntimeError,
            om + "input must have at least 2 dimensions.")
    _raises(lambda: tg.ormqr(A, tau, C[0]), RuntimeError,
            om + "other must have at least 2 dimensions.")
    _raises(lambda: tg.ormqr(A, tau, C[:3]), RuntimeError,
            om + "other.shape[-2] must be equal to input.shape[-2]")
    _raises(lambda: tg.ormqr(A, tau, C, left=False), RuntimeError,
            om + "other.shape[-1] must be equal to input.shape[-2]")
    _raises(lambda: tg.ormqr(A, tau[:2], C), RuntimeError,
            om + "tau.shape[-1] must be equal to min(other.shape[-2], input.shape[-1])")
    _raises(lambda: tg.ormqr(A, tau.reshape(1, 3), C), RuntimeError,
            om + "Expected tau to have one dimension less than input, but got tau.ndim equal "
                 "to 2 and input.ndim is equal to 2")
    _raises(lambda: tg.ormqr(A.expand(2, 4, 3), tau.expand(2, 3), C), RuntimeError,
            om + "Expected other to have the same number of dimensions as input, but got "
                 "other.ndim equal to 2 and input.ndim is equal to 3")
    _raises(lambda: tg.ormqr(A.expand(2, 4, 3), tau.expand(2, 3), C.expand(1, 4, 2)),
            RuntimeError, om + "Expected batch dimensions of other to be equal to "
                               "input.shape[:-2], but got [1]")
    _raises(lambda: tg.ormqr(A, tau.float(), C), RuntimeError,
            om + "Expected input and tau to have the same dtype, but input has dtypeDouble and "
                 "tau has dtype Float")
    _raises(lambda: tg.ormqr(A, tau, C.float()), RuntimeError,
            om + "Expected input and other to have the same dtype, but input has dtypeDouble "
                 "and other has dtype Float")
    _raises(lambda: tg.ormqr(A.long(), tau.long(), C.long()), NotImplementedError,
            "\"ormqr_cpu\" not implemented for 'Long'")


# -- LU: lu_factor, lu_factor_ex and tg.lu are differentiable --------------------------------------

@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 3), (2, 3, 3), (2, 2, 4)])
def test_lu_factor_gradients(shape):
    check_grads(lambda A: tg.linalg.lu_factor(A).LU, [t(rand(*shape), requires_grad=True)])
    A = t(rand(*shape), requires_grad=True)
    assert gradcheck(lambda A: tg.linalg.lu_factor_ex(A).LU, [A], check_forward_ad=True)


def test_lu_factor_complex_gradients_and_lapack_pivots():
    check_grads(lambda A: tg.linalg.lu_factor(A).LU,
                [t(rand(4, 3, complex_=True), requires_grad=True)])
    # LAPACK's pivot for complex columns is the largest |Re| + |Im|, not the largest modulus
    A = np.array([[3.0, 1.0], [2.0 + 2.0j, 1.0]])
    LU, piv = tg.linalg.lu_factor(t(A))
    assert host(piv).tolist() == [2, 2]
    L, U = np.tril(host(LU), -1) + np.eye(2), np.triu(host(LU))
    np.testing.assert_allclose(L @ U, A[[1, 0]], atol=1e-12)


def test_lu_factor_on_the_device_and_graph(device):
    A = t(rand(3, 3) + 3 * np.eye(3), device, True)
    LU, piv = tg.linalg.lu_factor(A)
    assert type(LU.grad_fn).__name__ == "LinalgLuFactorExBackward0"
    assert not piv.requires_grad and piv.dtype is tg.int32
    np.testing.assert_array_equal(host(LU.grad_fn._saved_pivots), host(piv))
    check_grads(lambda A: tg.linalg.lu_factor(A).LU, [A])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LU2, _ = tg.lu(A)
    assert type(LU2.grad_fn).__name__ == "LinalgLuFactorExBackward0"
    # the gradient through lu_unpack is the reconstruction's: P L U = A
    P, L, U = tg.lu_unpack(LU2, piv)
    g, = tg.autograd.grad((P @ L @ U * A.detach()).sum(), A)
    np.testing.assert_allclose(host(g), host(A), atol=1e-10)


def test_singular_matrices_are_reported_as_pytorch():
    singular = (" is zero and using it on lu_solve would result in a division by zero. If you "
                "still want to perform the factorization, consider calling linalg.lu(A, pivot) "
                "or linalg.lu_factor_ex(A, pivot)")
    _raises(lambda: tg.linalg.lu_factor(tg.zeros(3, 3)), RuntimeError,
            "torch.linalg.lu_factor: U[1,1]" + singular)
    batch = tg.stack([tg.eye(2), tg.tensor([[1., 2.], [2., 4.]])])
    _raises(lambda: tg.linalg.lu_factor(batch), RuntimeError,
            "torch.linalg.lu_factor: (Batch element 1): U[2,2]" + singular)
    _raises(lambda: tg.linalg.lu_factor_ex(batch, check_errors=True), RuntimeError,
            "torch.linalg.lu_factor_ex: (Batch element 1): U[2,2]" + singular)
    info = tg.linalg.lu_factor_ex(batch).info
    assert info.dtype is tg.int32 and host(info).tolist() == [0, 2]
    rect = tg.tensor([[1., 2., 3.], [2., 4., 6.], [1., 1., 1.], [0., 0., 1.]])
    assert int(tg.linalg.lu_factor_ex(rect).info) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, _, infos = tg.lu(tg.zeros(2, 3, 3), get_infos=True)  # (no error: as PyTorch)
        assert host(infos).tolist() == [1, 1]
        assert len(tg.lu(tg.zeros(3, 3))) == 2


# -- removed functions keep PyTorch's Tensor methods, which raise ----------------------------------

@pytest.mark.parametrize("name, args", [("lstsq", 1), ("solve", 1), ("eig", 0), ("symeig", 0)])
def test_removed_tensor_methods_raise_as_pytorch(name, args):
    x = tg.eye(2)
    with pytest.raises(RuntimeError) as method:
        getattr(x, name)(*[x] * args)
    with pytest.raises(RuntimeError) as function:
        getattr(tg, name)(x, *[x] * args)
    assert str(method.value) == str(function.value)
    assert str(method.value).startswith("This function was deprecated since version 1.9 and is "
                                        "now removed.")
    assert f"torch.{name}" in str(method.value) or name == "symeig"
    assert not hasattr(tg.Tensor, "matrix_rank")  # (PyTorch has no such method either)
