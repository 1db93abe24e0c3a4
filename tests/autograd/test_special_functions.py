"""The rest of torch.special (autograd/ops/special_functions.py): Airy, Bessel J Y, modified
Bessel I K, spherical j0, erfcx, zeta and the orthogonal polynomials, against SciPy in float64
(and float64 recurrences written here where SciPy lacks a function), float32 against float64,
both devices, erfcx's and zeta's gradients by central differences, PyTorch's errors for the
functions it does not differentiate; and, where torch is installed (dev only), against torch.
"""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order

SP = tg.special
sc = pytest.importorskip("scipy.special")

UNARY = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
         "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
         "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "erfcx")
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p")
OSCILLATING = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
               "spherical_bessel_j0")


def scipy_ref(name):
    return {"airy_ai": lambda v: sc.airy(v)[0], "bessel_j0": sc.j0, "bessel_j1": sc.j1,
            "bessel_y0": sc.y0, "bessel_y1": sc.y1, "modified_bessel_i0": sc.i0,
            "modified_bessel_i1": sc.i1, "modified_bessel_k0": sc.k0,
            "modified_bessel_k1": sc.k1, "scaled_modified_bessel_k0": sc.k0e,
            "scaled_modified_bessel_k1": sc.k1e, "erfcx": sc.erfcx,
            "spherical_bessel_j0": lambda v: sc.spherical_jn(0, v)}[name]


def scale(name, x):
    """What an error is relative to: |f|, or, near an oscillating function's zeros, a
    thousandth of its envelope (absolute accuracy there is all a float64 formula has)."""
    x = np.asarray(x, np.float64)
    if name not in OSCILLATING:
        return np.full_like(x, 1e-300)
    env = 1 / np.maximum(np.abs(x), 1) ** (1.0 if name == "spherical_bessel_j0" else 0.5)
    return np.where((x > 0) & (name == "airy_ai"), 1e-300, 1e-3 * env)


def rel_err(a, b, s):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    assert (same | (np.isfinite(a) & np.isfinite(b))).all(), (a[~same], b[~same])
    ok = np.isfinite(a) & np.isfinite(b)
    den = np.fmax(np.fmax(np.abs(b[ok]), s[ok]), 1e-300)
    return np.max(np.abs(a - b)[ok] / den, initial=0.0)


def wide_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.uniform(-10, 10, 400), rng.uniform(-60, 100, 100),
                           10 ** rng.uniform(-8, 2.5, 100), -10 ** rng.uniform(-8, 1.6, 100),
                           [0.0, 1.0, -1.0, 2.0, 2.09, -2.09, 4.0, 5.0, -5.0, 8.0, 50.0, 1e-5]])


# float64 vs SciPy, by the functions' own domains (relative error, see ``scale``); Ai loses
# with |x|^(3/2) below -2.09 (the phase's rounding), as every float64 formula; near the zeros
# of J and Y, SciPy's versions differ from one another by 1e-16 absolute (1e-13 here)
TOLERANCE = {"airy_ai": 1e-12, "erfcx": 2e-14, "bessel_j0": 1e-12, "bessel_j1": 1e-12,
             "bessel_y0": 1e-12, "bessel_y1": 1e-12}


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_scipy_in_float64(name):
    x = wide_inputs()
    if name in ("bessel_y0", "bessel_y1") or "_k" in name:
        x = np.abs(x[x != 0])
    ours = host(getattr(SP, name)(tg.tensor(x, dtype=tg.float64)))
    with np.errstate(all="ignore"):
        ref = scipy_ref(name)(x)
    assert rel_err(ours, ref, scale(name, x)) < TOLERANCE.get(name, 1e-14)


# PyTorch's values at the edges (torch 2.13's CPU kernels)
EDGES = [0.0, -1.0, math.inf, -math.inf, math.nan, 1e300, -1e300, 800.0]
NAN = math.nan
EDGE_VALUES = {
    "airy_ai": [0.3550280538878172, 0.5355608832923521, NAN, NAN, NAN, 0.0, NAN, 0.0],
    "bessel_j0": [1.0, 0.7651976865579666, NAN, NAN, NAN, None, None, None],
    "bessel_y0": [-math.inf, NAN, NAN, NAN, NAN, None, NAN, None],
    "bessel_y1": [-math.inf, NAN, NAN, NAN, NAN, None, NAN, None],
    "modified_bessel_i0": [1.0, 1.2660658777520082, NAN, NAN, NAN, math.inf, math.inf,
                           math.inf],
    "modified_bessel_k0": [math.inf, NAN, 0.0, NAN, NAN, 0.0, NAN, 0.0],
    "scaled_modified_bessel_k1": [math.inf, NAN, 0.0, NAN, NAN, None, NAN, None],
    "spherical_bessel_j0": [1.0, math.sin(1.0), 0.0, 0.0, NAN, None, None, None],
    "erfcx": [1.0, 5.00898008076228, 0.0, math.inf, NAN, None, math.inf, None],
}


@pytest.mark.parametrize("name", sorted(EDGE_VALUES))
def test_edges_are_pytorchs(name):
    ours = host(getattr(SP, name)(tg.tensor(EDGES, dtype=tg.float64)))
    for x, got, want in zip(EDGES, ours, EDGE_VALUES[name]):
        if want is not None:
            assert got == pytest.approx(want, rel=1e-14, nan_ok=True), x


@pytest.mark.parametrize("name", UNARY)
def test_float32_and_integers(name):
    x = np.concatenate([np.linspace(0.05, 30, 25), -np.linspace(0.05, 8, 10)]).astype(np.float32)
    ours = getattr(SP, name)(tg.tensor(x))
    assert ours.dtype is tg.float32 and not ours.requires_grad
    wide = host(getattr(SP, name)(tg.tensor(x.astype(np.float64), dtype=tg.float64)))
    assert rel_err(host(ours), wide.astype(np.float32), scale(name, x) * 1e3) < 2e-6
    assert getattr(SP, name)(tg.tensor([1, 2])).dtype is tg.float32


@pytest.mark.parametrize("name", UNARY)
def test_on_both_devices(name, device):
    x = [-7.5, -2.5, -0.3, 0.4, 1.0, 2.5, 6.0, 30.0]
    ours = getattr(SP, name)(tg.tensor(x, dtype=tg.float64, device=device))
    assert ours.device.type == device
    with np.errstate(all="ignore"):
        ref = scipy_ref(name)(np.array(x))
    assert rel_err(host(ours), ref, scale(name, np.array(x))) < TOLERANCE.get(name, 1e-14)
    out = tg.empty(len(x), dtype=tg.float64, device=device)
    assert getattr(SP, name)(tg.tensor(x, dtype=tg.float64, device=device), out=out) is out


# -- the polynomials -------------------------------------------------------------------------

def recurrence(name, x, n):
    """The polynomial in float64 by its three-term recurrence, at each (x, n), n an integer
    >= 0; and the largest |P_k| on the way (what rounding errors are relative to)."""
    shifted = name.startswith("shifted")
    kind = name.split("_")[-1]
    y = 2 * x - 1 if shifted else x
    first = {"t": y, "u": 2 * y, "v": 2 * y - 1, "w": 2 * y + 1, "h": 2 * y, "he": y,
             "l": 1 - y, "p": y}[kind]

    def step(k, q, p):
        if kind in "tuvw":
            return 2 * y * q - p
        return {"h": 2 * y * q - 2 * k * p, "he": y * q - k * p,
                "l": ((2 * k + 1 - y) * q - k * p) / (k + 1),
                "p": ((2 * k + 1) * y * q - k * p) / (k + 1)}[kind]

    p, q = np.ones_like(y), first
    out = np.where(n == 0, 1.0, first)
    big = np.maximum(1.0, np.abs(first))
    for k in range(1, int(n.max())):
        p, q = q, step(k, q, p)
        out = np.where(n == k + 1, q, out)
        big = np.where(n >= k + 1, np.maximum(big, np.abs(q)), big)
    return out, big


SCIPY_POLY = {"chebyshev_polynomial_t": sc.eval_chebyt, "chebyshev_polynomial_u": sc.eval_chebyu,
              "shifted_chebyshev_polynomial_t": sc.eval_sh_chebyt,
              "shifted_chebyshev_polynomial_u": sc.eval_sh_chebyu,
              "hermite_polynomial_h": sc.eval_hermite, "hermite_polynomial_he": sc.eval_hermitenorm,
              "laguerre_polynomial_l": sc.eval_laguerre, "legendre_polynomial_p": sc.eval_legendre}


def poly_grid(name, seed=1):
    rng = np.random.default_rng(seed)
    lo, hi = (0.0, 1.0) if name.startswith("shifted") else (-1.0, 1.0)
    span = hi - lo
    x = np.concatenate([rng.uniform(lo, hi, 60), rng.uniform(lo - span, hi + span, 30),
                        [lo, hi, (lo + hi) / 2, hi + 1e-9, lo - 1e-9]])
    n = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 20, 33, 50], dtype=np.float64)
    return np.meshgrid(x, n)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_float64_references(name):
    x, n = poly_grid(name)
    ours = host(getattr(SP, name)(tg.tensor(x, dtype=tg.float64), tg.tensor(n, dtype=tg.float64)))
    ref, big = recurrence(name, x, n)
    assert np.all(np.abs(ours - ref) <= 1e-13 * (1 + n) * big)
    if name in SCIPY_POLY:  # (and SciPy's own, where it has the function)
        sref = SCIPY_POLY[name](n.astype(int), x)
        assert np.all(np.abs(ours - sref) <= 1e-13 * (1 + n) * big)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_n_as_pytorch_takes_it(name, device):
    fn = getattr(SP, name)
    x = tg.tensor([0.3, 0.7, 1.5], dtype=tg.float64, device=device)
    # n truncated toward 0 (PyTorch's int64 cast), negative, NaN and inf n give 0
    a = host(fn(x, tg.tensor([2.9, 3.0, -0.5], dtype=tg.float64, device=device)))
    b = host(fn(x, tg.tensor([2.0, 3.0, 0.0], dtype=tg.float64, device=device)))
    np.testing.assert_array_equal(a, b)
    zero = fn(x, tg.tensor([-1.0, math.nan, math.inf], dtype=tg.float64, device=device))
    assert host(zero).tolist() == [0.0, 0.0, 0.0]
    # a number on either side; a tensor n broadcasts against x
    np.testing.assert_allclose(host(fn(x, 4)), host(fn(x, tg.full((3,), 4.0, dtype=tg.float64,
                                                                  device=device))), rtol=1e-14)
    col = fn(0.3, tg.tensor([[1.0], [5.0]], dtype=tg.float64, device=device))
    assert tuple(col.shape) == (2, 1) and col.dtype is tg.float64
    assert tuple(fn(x, tg.tensor([[1.0], [12.0]], device=device)).shape) == (2, 3)


def test_polynomial_dtypes_and_arguments():
    f = SP.chebyshev_polynomial_t
    assert f(tg.tensor([1, 2]), 3).dtype is tg.float32
    assert f(tg.tensor([0.5]), tg.tensor([3], dtype=tg.float64)).dtype is tg.float64
    assert f(tg.tensor([0.5]), tg.tensor([3], dtype=tg.int32)).dtype is tg.float32
    assert f(x=tg.tensor([0.5]), n=2).tolist() == [-0.5]
    with pytest.raises(TypeError, match=r"special_chebyshev_polynomial_t\(\) received an "
                                        r"invalid combination of arguments - got \(float, int\)"):
        f(0.5, 3)
    for dt in (tg.float16, tg.bfloat16, tg.complex64):
        with pytest.raises(NotImplementedError, match="chebyshev_polynomial_t_cpu\" not impl"):
            f(tg.tensor([0.5], dtype=dt), 2)
    out = tg.empty(2)
    assert f(tg.tensor([0.5, 0.25]), 2, out=out) is out
    np.testing.assert_allclose(host(out), [-0.5, -0.875], rtol=1e-6)


def test_polynomials_edges():
    # x = +-1 for any n, the Hermite limit (n > 512 in float64: NaN), x = 0 for Laguerre
    n = tg.tensor([0.0, 1, 2, 7, 9, 30, 31], dtype=tg.float64)
    one, minus = tg.ones(7, dtype=tg.float64), -tg.ones(7, dtype=tg.float64)
    nn = host(n)
    sgn = (-1.0) ** nn
    checks = {"chebyshev_polynomial_t": (np.ones(7), sgn),
              "chebyshev_polynomial_u": (nn + 1, sgn * (nn + 1)),
              "chebyshev_polynomial_v": (np.ones(7), sgn * (2 * nn + 1)),
              "chebyshev_polynomial_w": (2 * nn + 1, sgn),
              "legendre_polynomial_p": (np.ones(7), sgn)}
    for name, (at_one, at_minus) in checks.items():
        np.testing.assert_array_equal(host(getattr(SP, name)(one, n)), at_one)
        np.testing.assert_array_equal(host(getattr(SP, name)(minus, n)), at_minus)
    h = host(SP.hermite_polynomial_h(tg.tensor([0.5], dtype=tg.float64),
                                     tg.tensor([100.0, 513.0], dtype=tg.float64)))
    assert h[0] == pytest.approx(sc.eval_hermite(100, 0.5), rel=1e-12) and np.isnan(h[1])
    he = host(SP.hermite_polynomial_he(tg.tensor([0.5]), tg.tensor([20.0, 129.0])))
    assert he[0] == pytest.approx(sc.eval_hermitenorm(20, 0.5), rel=1e-5) and np.isnan(he[1])
    assert host(SP.laguerre_polynomial_l(tg.zeros(2), tg.tensor([5.0, 40.0]))).tolist() == [1, 1]
    # large |x|: T_n overflows; where PyTorch's recurrence meets inf - inf, NaN
    t = host(SP.chebyshev_polynomial_t(tg.tensor([1e200, math.inf, 3.0], dtype=tg.float64), 9))
    assert np.isnan(t[0]) and np.isnan(t[1]) and t[2] == pytest.approx(sc.eval_chebyt(9, 3.0))


def test_polynomials_in_float32():
    for name in POLYNOMIALS:
        x, n = poly_grid(name, seed=4)
        x = x.astype(np.float32).astype(np.float64)
        ours = getattr(SP, name)(tg.tensor(x, dtype=tg.float32), tg.tensor(n, dtype=tg.float32))
        assert ours.dtype is tg.float32
        ref, big = recurrence(name, x, n)
        fits = big < 1e37  # (float32's range)
        assert np.all((np.abs(host(ours) - ref) <= 3e-6 * (1 + n) * big)[fits]), name


def test_a_tensor_n_has_no_host_read_for_chebyshev(monkeypatch):
    """The Chebyshev family's closed forms need no bound from the device: ``.item()`` is never
    called (Hermite, Laguerre and Legendre read max(n) once)."""
    calls = []
    original = tg.Tensor.item
    monkeypatch.setattr(tg.Tensor, "item", lambda self: calls.append(1) or original(self))
    n = tg.tensor([3.0, 40.0, 1e6])
    SP.chebyshev_polynomial_u(tg.tensor([0.2, -0.9, 1.01]), n)
    SP.shifted_chebyshev_polynomial_w(tg.tensor([0.2, -0.9, 1.01]), n)
    assert not calls
    SP.legendre_polynomial_p(tg.tensor([0.2]), tg.tensor([3.0, 7.0]))
    assert len(calls) == 1


# -- erfcx and zeta: values and gradients ------------------------------------------------------

def test_zeta_matches_scipy(device):
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(1.01, 12, 40), [2.0, 3.0, 4.0, 30.0, 1.5]])
    q = np.concatenate([rng.uniform(0.01, 30, 40), [1.0, -1.5, -7.5, 2.0, 1e4]])
    if device == "cuda":
        x, q = x[-8:], q[-8:]
    ours = host(SP.zeta(tg.tensor(x, dtype=tg.float64, device=device),
                        tg.tensor(q, dtype=tg.float64, device=device)))
    np.testing.assert_allclose(ours, sc.zeta(x, q), rtol=1e-14)
    # PyTorch's edges: x = 1: inf; x < 1: NaN; poles q = 0, -1, ...: inf; q < 0 with x not an
    # integer: NaN; q = inf: NaN
    x = tg.tensor([1.0, 0.5, 2.0, 2.0, 2.5, 2.0, math.inf], dtype=tg.float64, device=device)
    q = tg.tensor([1.0, 1.0, 0.0, -3.0, -1.5, math.inf, 2.0], dtype=tg.float64, device=device)
    got = host(SP.zeta(x, q))
    want = [math.inf, NAN, math.inf, math.inf, NAN, NAN, NAN]  # (the last: Cephes' inf 0)
    np.testing.assert_array_equal(got, want)
    assert host(SP.zeta(3.0, tg.tensor([2.0], device=device))) == pytest.approx(0.2020569, 1e-6)
    assert SP.zeta(tg.tensor([2, 3]), 2).dtype is tg.float32


def test_erfcx_gradient(device):
    # (erfcx(-3) = 1e4 would swamp the finite differences of the sum)
    x = tg.tensor([-1.5, -0.5, 0.3, 2.0, 4.5, 60.0], dtype=tg.float64,
                  device=device).requires_grad_()
    assert_grads_match(SP.erfcx, [x], atol=1e-8, rtol=1e-7)
    (g,) = tg.autograd.grad(SP.erfcx(x).sum(), x)
    xv = host(x)
    np.testing.assert_allclose(host(g), 2 * xv * sc.erfcx(xv) - 2 / math.sqrt(math.pi),
                               rtol=1e-11)
    if device == "cpu":
        second_order(SP.erfcx, [x])


def test_zeta_gradient_in_q_only(device):
    q = tg.tensor([0.5, 1.5, 3.0], dtype=tg.float64, device=device).requires_grad_()
    assert_grads_match(lambda v: SP.zeta(tg.tensor([3.0, 2.5, 4.0], dtype=tg.float64,
                                                    device=v.device), v), [q])
    (g,) = tg.autograd.grad(SP.zeta(3.0, q).sum(), q)
    np.testing.assert_allclose(host(g), -3 * sc.zeta(4.0, host(q)), rtol=1e-12)
    x = tg.tensor([3.0, 4.0], device=device).requires_grad_()
    for y in (SP.zeta(x, 2.0), SP.zeta(x, tg.tensor([1.0, 2.0], device=device).requires_grad_())):
        with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not "
                                                      "implemented."):
            y.sum().backward()
    with tg.no_grad():
        assert not SP.zeta(x, 2.0).requires_grad


@pytest.mark.parametrize("name", UNARY[:-1] + POLYNOMIALS)
def test_not_differentiable_as_pytorch(name):
    x = tg.tensor([0.3, 0.6], requires_grad=True)
    y = getattr(SP, name)(x, 3) if name in POLYNOMIALS else getattr(SP, name)(x)
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and "
                                           "does not have a grad_fn"):
        y.sum().backward()


@pytest.mark.parametrize("name", UNARY)
def test_unary_errors(name):
    fn = getattr(SP, name)
    for dt, word in ((tg.float16, "Half"), (tg.bfloat16, "BFloat16"), (tg.complex64,
                                                                       "ComplexFloat")):
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for '
                                                      f"'{word}'"):
            fn(tg.tensor([0.5], dtype=dt))
    with pytest.raises(TypeError, match=f"special_{name}"):
        fn([0.5])


def test_all_names():
    names = set(UNARY + POLYNOMIALS + ("zeta",))
    assert names <= set(SP.__all__)
    for n in names:
        assert getattr(SP, n).__name__ == "special_" + n


# -- dev only: against torch 2.13 --------------------------------------------------------------

def test_unary_against_torch():
    """Equal to torch's CPU kernels wherever those agree with SciPy (torch's J, Y and Ai drop
    Cephes' leading denominator terms: up to 1e-6 off near x = 5), the same at the edges."""
    torch = pytest.importorskip("torch")
    x = np.concatenate([wide_inputs(7), [math.inf, -math.inf, math.nan, 1e300, 700.0, -26.65]])
    for name in UNARY:
        ours = host(getattr(SP, name)(tg.tensor(x, dtype=tg.float64)))
        th = getattr(torch.special, name)(torch.tensor(x)).numpy()
        with np.errstate(all="ignore"):
            ref = scipy_ref(name)(x)
        s = scale(name, x)
        good = ~np.isfinite(th) | (np.abs(th - ref) <= 1e-13 * np.maximum(np.abs(ref), s))
        assert good.mean() > 0.3  # (J, Y: above 5; Ai: below -2.09)
        assert rel_err(ours[good], th[good], s[good]) < max(TOLERANCE.get(name, 0), 2e-13), name
        # float32: torch's kernels run in float32 (ours in float64, rounded once)
        x32 = x.astype(np.float32)
        o32 = host(getattr(SP, name)(tg.tensor(x32))).astype(np.float64)
        t32 = getattr(torch.special, name)(torch.tensor(x32)).numpy().astype(np.float64)
        finite = np.isfinite(o32) & np.isfinite(t32)
        np.testing.assert_array_equal(np.isnan(o32), np.isnan(t32))
        assert rel_err(o32[finite], t32[finite], np.maximum(s[finite], 1e-30) * 1e3) < 1e-3


def test_polynomials_and_zeta_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-1.2, 1.2, 80), rng.uniform(-5, 5, 20), [0, 1, -1, 0.5]])
    n = np.array([-2, 0, 1, 2, 3, 4.7, 6, 7, 8, 9, 12, 25, 50, 513, math.nan])
    # (no NaN x: torch's value at x = NaN, n >= 2 is an uninitialized variable)
    X, N = np.meshgrid(x, n)
    for name in POLYNOMIALS:
        ours = host(getattr(SP, name)(tg.tensor(X, dtype=tg.float64),
                                      tg.tensor(N, dtype=tg.float64)))
        th = getattr(torch.special, name)(torch.tensor(X), torch.tensor(N)).numpy()
        nn = np.where(np.isfinite(N) & (N > 0), np.trunc(N), 0)
        _, big = recurrence(name, X, nn)
        s = np.maximum(np.abs(th), 1)
        err = np.abs(ours - th) / s
        ok = np.isfinite(ours) & np.isfinite(th)
        assert (ok | (ours == th) | (np.isnan(ours) & np.isnan(th))).all(), name
        assert np.all(err[ok] <= 1e-13 * np.maximum(big, 1)[ok] * (1 + nn[ok])), name
    xq = np.array([2.0, 3.0, 1.5, 4.0, 2.0, 1.0, 0.5, 2.5, math.inf, 2.0, 3.0])
    q = np.array([1.0, 0.3, 7.0, -1.5, -2.0, 1.0, 1.0, -1.5, 2.0, 1e-300, -20.25])
    ours = host(SP.zeta(tg.tensor(xq, dtype=tg.float64), tg.tensor(q, dtype=tg.float64)))
    np.testing.assert_allclose(ours, torch.special.zeta(torch.tensor(xq), torch.tensor(q)),
                               rtol=1e-14)
