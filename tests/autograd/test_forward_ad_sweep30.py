"""Forward-mode AD of the rules a sweep of every op against ``torch.func.jvp`` found missing or
wrong, float64 and complex128: complex inv, det, slogdet/logdet, solve, solve_triangular,
cholesky, lu_factor and matrix_exp (their ``complex_jvp``), linalg.eig (a new jvp, real and
complex), vector and matrix norms of complex tensors, complex pow and float_power (the
exponent's limit test), complex lerp, copysign, nextafter, complex embedding; and two wrong
values behind wrong tangents: linalg.vecdot of complex vectors (conj(x) y) and
native_group_norm's statistics (differentiable, as PyTorch's).

Each rule is checked by ``gradcheck(check_forward_ad=True, check_backward_ad=False)`` (the
forward Jacobian against central differences), a negative control shows that check failing
on a conjugated rule, one tangent per op is checked on the (emulated) CUDA device, tangents
are compared with ``torch.func.jvp`` where torch is installed, and forward-over-reverse
(``jacfwd(jacrev(f))``, ``hessian``, jvp of a complex gradient) against differences of the
reverse-mode gradient.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tritongrad.autograd.forward_ad as fwAD
from tritongrad.autograd.gradcheck import gradcheck

import tritongrad as tg

R, C = "float64", "complex128"
INF = math.inf


def _rand(rng, shape, dtype):
    a = rng.uniform(-1, 1, shape)
    if dtype == C:
        a = a + 1j * rng.uniform(-1, 1, shape)
    return a


def well_conditioned(rng, shape, dtype):
    return _rand(rng, shape, dtype) + 3 * np.eye(shape[-1])


def positive(rng, shape, dtype):
    a = rng.uniform(0.3, 0.9, shape)
    return a + 1j * rng.uniform(0.3, 0.9, shape) if dtype == C else a


def plain(rng, shape, dtype):
    return _rand(rng, shape, dtype)


def _hpd(L, a):
    """A Hermitian positive-definite matrix made from ``a`` (so that cholesky's tangent is
    Hermitian, the only direction a Cholesky factorization is defined along)."""
    return a @ a.mH + 3 * L.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _idx(L, values, like):
    return L.tensor(values, device=like.device)


# name: (fn(L, *inputs) with L the library (tritongrad or torch), [(maker, shape)], dtypes)
CASES = {
    "inv": (lambda L, a: L.linalg.inv(a), [(well_conditioned, (3, 3))], (R, C)),
    "inv_ex": (lambda L, a: L.linalg.inv_ex(a).inverse, [(well_conditioned, (2, 3, 3))], (R, C)),
    "det": (lambda L, a: L.linalg.det(a), [(well_conditioned, (2, 3, 3))], (R, C)),
    "slogdet": (lambda L, a: tuple(L.linalg.slogdet(a)), [(well_conditioned, (3, 3))], (R, C)),
    "logdet": (lambda L, a: L.logdet(a @ a.mH), [(well_conditioned, (3, 3))], (R, C)),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), [(well_conditioned, (3, 3)),
                                                     (plain, (3, 2))], (R, C)),
    "solve_vector": (lambda L, a, b: L.linalg.solve(a, b), [(well_conditioned, (2, 3, 3)),
                                                            (plain, (2, 3))], (R, C)),
    "solve_right": (lambda L, a, b: L.linalg.solve(a, b, left=False),
                    [(well_conditioned, (3, 3)), (plain, (2, 3))], (R, C)),
    "solve_triangular_upper": (
        lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True),
        [(well_conditioned, (3, 3)), (plain, (3, 2))], (R, C)),
    "solve_triangular_lower_right_unit": (
        lambda L, a, b: L.linalg.solve_triangular(a, b, upper=False, left=False,
                                                  unitriangular=True),
        [(well_conditioned, (3, 3)), (plain, (2, 3))], (R, C)),
    "cholesky": (lambda L, a: L.linalg.cholesky(_hpd(L, a)), [(plain, (3, 3))], (R, C)),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(_hpd(L, a), upper=True),
                       [(plain, (3, 3))], (R, C)),
    "cholesky_ex": (lambda L, a: L.linalg.cholesky_ex(_hpd(L, a)).L, [(plain, (3, 3))],
                    (R, C)),
    "lu_factor": (lambda L, a: L.linalg.lu_factor(a).LU, [(well_conditioned, (3, 3))], (R, C)),
    "lu_factor_wide": (lambda L, a: L.linalg.lu_factor(a).LU, [(plain, (2, 4))], (R, C)),
    "lu": (lambda L, a: tuple(L.linalg.lu(a))[1:], [(plain, (4, 3))], (R, C)),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a), [(plain, (3, 3))], (R, C)),
    "eigvals": (lambda L, a: L.linalg.eigvals(a), [(plain, (3, 3))], (R, C)),
    # (each eigenvector is defined up to a phase: |V| and V diag(L) V^-1 do not depend on it)
    "eig_vectors": (lambda L, a: (L.linalg.eig(a).eigenvectors.abs(),
                                  _reconstruct(L, *L.linalg.eig(a))),
                    [(plain, (3, 3))], (R, C)),
    "vecdot": (lambda L, x, y: L.linalg.vecdot(x, y), [(plain, (3, 4)), (plain, (4,))], (R, C)),
    "pow": (lambda L, a, b: L.pow(a, b), [(positive, (3, 3)), (positive, (3, 3))], (R, C)),
    "float_power": (lambda L, a, b: L.float_power(a, b), [(positive, (3,)), (positive, (3,))],
                    (R, C)),
    "lerp_scalar": (lambda L, a, b: L.lerp(a, b, 0.3), [(plain, (3, 2)), (plain, (2,))], (R, C)),
    "lerp_tensor": (lambda L, a, b, w: L.lerp(a, b, w),
                    [(plain, (3, 2)), (plain, (3, 2)), (plain, (3, 2))], (R, C)),
    "copysign": (lambda L, a, b: L.copysign(a, b), [(plain, (3, 3)), (plain, (3, 3))], (R,)),
    "nextafter": (lambda L, a, b: L.nextafter(a, b), [(plain, (3, 3)), (plain, (3, 3))], (R,)),
    "native_group_norm": (
        lambda L, x, w, b: L.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5),
        [(plain, (2, 4, 3)), (plain, (4,)), (plain, (4,))], (R,)),
    "embedding": (lambda L, w: L.nn.functional.embedding(_idx(L, [[0, 2], [3, 0]], w), w),
                  [(plain, (4, 3))], (R, C)),
    "dist": (lambda L, a, b: L.dist(a, b, 3), [(plain, (3, 3)), (plain, (3,))], (R, C)),
    "cond": (lambda L, a: L.linalg.cond(a, "fro"), [(well_conditioned, (3, 3))], (R, C)),
}
for _o in (2, 1, 3, 0.5, INF, -INF, 0):
    CASES[f"vector_norm_{_o}"] = (lambda L, x, o=_o: L.linalg.vector_norm(x, o, -1),
                                  [(plain, (3, 4))], (R, C))
CASES["vector_norm_all_keepdim"] = (
    lambda L, x: L.linalg.vector_norm(x, 2, (0, 2), keepdim=True), [(plain, (2, 3, 2))], (R, C))
for _o in ("fro", "nuc", 1, -1, 2, -2, INF, -INF):
    CASES[f"matrix_norm_{_o}"] = (lambda L, x, o=_o: L.linalg.matrix_norm(x, o),
                                  [(plain, (2, 3, 4))], (R, C))
CASES["norm_default"] = (lambda L, x: L.linalg.norm(x), [(plain, (3, 4))], (R, C))
CASES["norm_dim"] = (lambda L, x: L.linalg.norm(x, 1, 0), [(plain, (3, 4))], (R, C))

PARAMS = [(name, dt) for name, (_, _, dts) in CASES.items() for dt in dts]
# complex cases with forward-mode AD only (PyTorch's reverse mode refuses them too)
REVERSE_REFUSED = {("embedding", C)}


def _reconstruct(L, w, V):
    return V @ (w.unsqueeze(-1) * L.linalg.inv(V))


def _arrays(name, dtype, seed=0):
    rng = np.random.default_rng(seed)
    _, makers, _ = CASES[name]
    return [maker(rng, shape, dtype) for maker, shape in makers]


def _inputs(name, dtype, device="cpu", requires_grad=True):
    dt = getattr(tg, dtype)
    return [tg.tensor(a, dtype=dt, device=device, requires_grad=requires_grad)
            for a in _arrays(name, dtype)]


def _fn(name, L=tg):
    fn = CASES[name][0]
    return lambda *xs: fn(L, *xs)


def _host(t) -> np.ndarray:
    return t.detach().resolve_conj().cpu().numpy()


def _floats(out) -> tuple:
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return tuple(o for o in outs if o.dtype.is_floating_point or o.dtype.is_complex)


# (gradcheck's inputs require grad: the forward-only cases are test_forward_only_complex_rules)
@pytest.mark.parametrize("name, dtype", [p for p in PARAMS if p not in REVERSE_REFUSED])
def test_forward_gradcheck(name, dtype):
    fn = _fn(name)
    assert gradcheck(lambda *xs: _floats(fn(*xs)), tuple(_inputs(name, dtype)),
                     check_forward_ad=True, check_backward_ad=False)


def _tangents(arrays, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for a in arrays:
        t = rng.standard_normal(a.shape)
        out.append(t + 1j * rng.standard_normal(a.shape) if np.iscomplexobj(a) else t)
    return out


def _dual_tangents(fn, primals, tangents):
    with fwAD.dual_level():
        outs = _floats(fn(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)]))
        return [fwAD.unpack_dual(o).tangent for o in outs], outs


def _central(fn, arrays, tangents, dtype, eps=1e-6):
    def at(s):
        return _floats(fn(*[tg.tensor(a + s * eps * t, dtype=getattr(tg, dtype))
                            for a, t in zip(arrays, tangents)]))
    with tg.no_grad():
        return [(_host(p) - _host(m)) / (2 * eps) for p, m in zip(at(1), at(-1))]


# one case per rule, run where the rule runs: on the CPU and the (emulated) CUDA device
ON_DEVICE = ["inv", "det", "slogdet", "solve", "solve_triangular_upper", "cholesky",
             "lu_factor", "matrix_exp", "eigvals", "vecdot", "pow", "lerp_tensor", "copysign",
             "nextafter", "native_group_norm", "embedding", "vector_norm_3", "matrix_norm_nuc"]


# (the Triton gather has no complex kernel: complex embedding runs on the CPU only)
REAL_ON_DEVICE = {"embedding"}


@pytest.mark.parametrize("name", ON_DEVICE)
def test_tangent_on_device(name, device):
    complex_ok = C in CASES[name][2] and not (device == "cuda" and name in REAL_ON_DEVICE)
    dtype = C if complex_ok else R
    _check_one_tangent(name, dtype, device)


@pytest.mark.parametrize("name, dtype", sorted(REVERSE_REFUSED))
def test_forward_only_complex_rules(name, dtype):
    _check_one_tangent(name, dtype, "cpu")
    with pytest.raises(RuntimeError, match="does not support automatic differentiation for "
                                           "outputs with complex dtype"):
        _fn(name)(*_inputs(name, dtype))


def _check_one_tangent(name, dtype, device):
    arrays = _arrays(name, dtype)
    tangents = _tangents(arrays)
    dt = getattr(tg, dtype)
    primals = [tg.tensor(a, dtype=dt, device=device) for a in arrays]
    got, outs = _dual_tangents(_fn(name), primals,
                               [tg.tensor(t, dtype=dt, device=device) for t in tangents])
    want = _central(_fn(name), arrays, tangents, dtype)
    assert len(got) == len(want)
    for g, o, w in zip(got, outs, want):
        assert g.device == o.device and g.dtype is o.dtype and g.shape == o.shape
        np.testing.assert_allclose(_host(g), w, rtol=1e-5, atol=1e-6)


def test_gradcheck_catches_a_conjugated_complex_rule(monkeypatch):
    # negative control: a complex rule off by a conjugation (the classic complex slip) fails
    from tritongrad.autograd.ops.decompositions import LinalgDetBackward0 as Det
    rule = Det.complex_jvp
    monkeypatch.setattr(Det, "complex_jvp",
                        staticmethod(lambda ctx, k, p, t, o: rule(ctx, k, p, t, o).conj()))
    assert not gradcheck(tg.linalg.det, tuple(_inputs("det", C)), check_forward_ad=True,
                         check_backward_ad=False, raise_exception=False)


def test_complex_values_that_were_wrong():
    # vecdot conjugates its first argument; native_group_norm's statistics have tangents
    x, y = _arrays("vecdot", C)
    got = tg.linalg.vecdot(tg.tensor(x), tg.tensor(y))
    np.testing.assert_allclose(_host(got), (x.conj() * y).sum(-1), rtol=1e-12)
    arrays = _arrays("native_group_norm", R)
    tangents = _tangents(arrays)
    got, _ = _dual_tangents(_fn("native_group_norm"), [tg.tensor(a) for a in arrays],
                            [tg.tensor(t) for t in tangents])
    x, dx = arrays[0].reshape(2, 2, -1), tangents[0].reshape(2, 2, -1)  # (N, groups, rest)
    dmean = dx.mean(-1)
    dvar = (2 * (x - x.mean(-1, keepdims=True)) * (dx - dmean[..., None])).mean(-1)
    np.testing.assert_allclose(_host(got[1]), dmean, rtol=1e-10)
    np.testing.assert_allclose(_host(got[2]), -0.5 * (x.var(-1) + 1e-5) ** -1.5 * dvar,
                               rtol=1e-8)


def test_pow_exponent_limit_at_zero_base_complex():
    # d/db a^b at a = 0 is 0 for an exponent with real part >= 0 and no imaginary part
    # (PyTorch's pow_backward_exponent), in both modes; the base's tangent is 0 there too
    a, b, t = (tg.tensor(v, dtype=tg.complex128) for v in (
        [0j, 0j, 0.5 + 0.1j], [2 + 0j, 0.5 + 0.5j, 1.5 - 0.2j], [1 + 1j, 1 - 1j, 0.3 + 0.2j]))
    _, jv = tg.func.jvp(lambda e: tg.pow(a, e), (b,), (t,))
    assert _host(jv)[0] == 0
    av, bv, tv = 0.5 + 0.1j, 1.5 - 0.2j, 0.3 + 0.2j
    np.testing.assert_allclose(_host(jv)[2], av ** bv * np.log(av) * tv, rtol=1e-12)
    b_leaf = b.detach().requires_grad_(True)
    tg.pow(a, b_leaf).abs().sum().backward()
    assert _host(b_leaf.grad)[0] == 0


# -- forward over reverse ----------------------------------------------------------------------

SECOND_ORDER = {
    "det": (lambda a: tg.linalg.det(a), (3, 3)),
    "logabsdet": (lambda a: tg.linalg.slogdet(a).logabsdet, (3, 3)),
    "inv_sum": (lambda a: (tg.linalg.inv(a) ** 2).sum(), (3, 3)),
    "solve": (lambda a: tg.linalg.solve(a, a.sum(0)).sum(), (3, 3)),
    "vector_norm_3": (lambda x: tg.linalg.vector_norm(x, 3), (2, 3)),
    "matrix_exp": (lambda a: tg.linalg.matrix_exp(a).sum(), (3, 3)),
}


def _grad_differences(f, a, eps=1e-5):
    """The Hessian of ``f`` at ``a`` (real), by central differences of its reverse gradient."""
    def grad(v):
        x = tg.tensor(v, requires_grad=True)
        return _host(tg.autograd.grad(f(x), x)[0]).reshape(-1)
    n = a.size
    cols = []
    for i in range(n):
        e = np.zeros(n)
        e[i] = eps
        cols.append((grad(a + e.reshape(a.shape)) - grad(a - e.reshape(a.shape))) / (2 * eps))
    return np.stack(cols, -1)


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_forward_over_reverse(name):
    f, shape = SECOND_ORDER[name]
    a = well_conditioned(np.random.default_rng(2), shape, R) if shape[0] == shape[-1] else \
        plain(np.random.default_rng(2), shape, R)
    want = _grad_differences(f, a)
    n = a.size
    H = tg.func.jacfwd(tg.func.jacrev(f))(tg.tensor(a))
    np.testing.assert_allclose(_host(H).reshape(n, n), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_host(tg.func.hessian(f)(tg.tensor(a))).reshape(n, n), want,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["det_abs", "vector_norm_3", "logabsdet"])
def test_forward_over_reverse_complex(name):
    # the jvp of the (complex) gradient of a real function of complex z, against differences
    f = {"det_abs": lambda z: tg.linalg.det(z).abs(),
         "vector_norm_3": lambda z: tg.linalg.vector_norm(z, 3),
         "logabsdet": lambda z: tg.linalg.slogdet(z).logabsdet}[name]
    rng = np.random.default_rng(3)
    z = well_conditioned(rng, (3, 3), C)
    t = _tangents([z])[0]
    _, got = tg.func.jvp(tg.func.grad(f), (tg.tensor(z),), (tg.tensor(t),))

    def grad(v):
        x = tg.tensor(v, requires_grad=True)
        return _host(tg.autograd.grad(f(x), x)[0])
    eps = 1e-6
    np.testing.assert_allclose(_host(got), (grad(z + eps * t) - grad(z - eps * t)) / (2 * eps),
                               rtol=1e-5, atol=1e-6)


# -- against PyTorch ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, dtype", PARAMS)
def test_tangents_match_torch(name, dtype):
    torch = pytest.importorskip("torch", minversion="2.13")
    arrays = _arrays(name, dtype)
    tangents = _tangents(arrays)
    _, want = torch.func.jvp(lambda *xs: _floats(_fn(name, torch)(*xs)),
                             tuple(torch.tensor(a) for a in arrays),
                             tuple(torch.tensor(t) for t in tangents))
    got, _ = _dual_tangents(_fn(name), [tg.tensor(a) for a in arrays],
                            [tg.tensor(t) for t in tangents])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = (torch.zeros(w.shape, dtype=w.dtype) if w._is_zerotensor()
             else w.detach().resolve_conj())
        np.testing.assert_allclose(_host(g), w.numpy(), rtol=1e-6, atol=1e-8)


def test_eig_tangents_match_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    for dtype in (R, C):
        a = plain(np.random.default_rng(4), (3, 3), dtype)
        t = _tangents([a])[0]
        (tw, tV), (dw, dV) = torch.func.jvp(lambda x: tuple(torch.linalg.eig(x)),
                                            (torch.tensor(a),), (torch.tensor(t),))
        w, V = tg.linalg.eig(tg.tensor(a))
        got, _ = _dual_tangents(lambda x: tuple(tg.linalg.eig(x)), [tg.tensor(a)],
                                [tg.tensor(t)])
        # the same eigenvalues (LAPACK's order on both sides); vectors up to a phase each
        np.testing.assert_allclose(_host(w), tw.numpy(), rtol=1e-10)
        ph = (tV.numpy().conj() * _host(V)).sum(-2, keepdims=True)
        ph = ph / np.abs(ph)
        np.testing.assert_allclose(_host(got[0]), dw.numpy(), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(_host(got[1]), dV.numpy() * ph, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dtype", [R, C])
def test_det_tangent_at_a_singular_matrix(dtype):
    # d det = tr(adj(A) dA) is not 0 at a matrix of rank n - 1 (the rule used A^-1 and raised
    # there); det is a polynomial, so central differences are exact up to rounding
    rng = np.random.default_rng(5)
    a = _rand(rng, (3, 2), dtype) @ _rand(rng, (2, 3), dtype)
    t = _tangents([a])[0]
    _, got = tg.func.jvp(tg.linalg.det, (tg.tensor(a),), (tg.tensor(t),))
    eps = 1e-5
    want = (np.linalg.det(a + eps * t) - np.linalg.det(a - eps * t)) / (2 * eps)
    assert abs(want) > 1e-3
    np.testing.assert_allclose(_host(got), want, rtol=1e-7)


JACOBIANS = {  # real inputs through complex intermediates: the complex rules on a batch
    "det": lambda a: tg.linalg.det(a + 1j * a.mT).abs(),
    "inv": lambda a: tg.view_as_real(tg.linalg.inv(a + 0.5j * a.mT)),
    "eigvals": lambda a: tg.linalg.eigvals(a).abs(),
    "solve": lambda a: tg.view_as_real(tg.linalg.solve(a + 1j, a[:, :1] * 1j)),
    "vector_norm": lambda a: tg.linalg.vector_norm(a * (1 + 2j), 3, -1),
    "matrix_norm": lambda a: tg.linalg.matrix_norm(a - 1j * a.mT, "nuc"),
}


@pytest.mark.parametrize("name", sorted(JACOBIANS))
def test_jacfwd_of_complex_rules_matches_jacrev(name):
    a = tg.tensor(well_conditioned(np.random.default_rng(6), (3, 3), R))
    fwd = tg.func.jacfwd(JACOBIANS[name])(a)
    rev = tg.func.jacrev(JACOBIANS[name])(a)
    np.testing.assert_allclose(_host(fwd), _host(rev), rtol=1e-9, atol=1e-12)
