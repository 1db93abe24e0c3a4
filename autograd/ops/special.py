"""Special functions: ``lgamma digamma polygamma mvlgamma erfinv i0 hypot``, and
the rest of ``tg.special`` (tritongrad/special.py): erf, erfc, ndtr, ndtri, log_ndtr, i0e, i1,
i1e, sinc, entr, logit, xlog1py (exp2 is pointwise.py's unary op).

Every function here is a composite of public differentiable ops (``exp log sin tan sqrt
where igamma igammac ...``), so both backends run it with no kernel of its own. Most
functions' derivatives, to any order, come through their parts: the derivative of the
approximation, which is as accurate as the approximation (each is a convergent expansion, not
a fit of values). erf, erfc, erfinv, lgamma, digamma, polygamma, i0, i0e, i1, i1e, ndtr,
ndtri, entr, sinc, logit and hypot are one node each instead, as PyTorch's, with the
closed-form derivative (Note [Composite forwards, one node], at the end).
The formulas and their accuracy in float64 (relative, except where said):

- lgamma: Lanczos (g = 7, 9 terms) for x >= 1/2, reflection below; about 1e-15. On
  [1/2, 5/2) the Taylor series of lgamma(2 + e) in e = x - 1 or x - 2 instead (the Lanczos
  sum is 1e-15 absolute there, 1e-10 relative at 1 + 1e-5): exactly 0 at 1 and 2. Poles
  (0, -1, ...) give inf, as PyTorch.
- digamma / polygamma(n): the recurrence up 10 steps, then the asymptotic (Euler-Maclaurin)
  series with Bernoulli numbers up to B_14; digamma reflects x < 1/2, polygamma(n >= 1)
  x < 0 (d^n/dx^n of pi cot(pi x) as a polynomial in cot). About 1e-15 for x >= 0; for x < 0
  relative to the reflection's terms (so less near the zeros between the poles).
- erf / erfc: the Taylor series for |x| < 1/2, else the regularized incomplete gamma
  functions: erf(x) = sign(x) P(1/2, x^2), erfc(x) = Q(1/2, x^2) (igamma's accuracy: about
  eps max(1, x^2), 1e-13 at x = 26); lower precisions computed in float64.
- erfinv: Giles' single-precision approximation (Abramowitz-Stegun 26.2.23 for 1 - |y| below
  6e-8), then three Newton steps on erf, or on erfc for |y| > 1/2: about 1e-15 relative.
  ndtri(p) = sqrt(2) erfinv(2p - 1) in float64 for 0.01 <= p <= 0.99; outside, the same
  Abramowitz-Stegun start and Newton steps on log_ndtr: about 1e-15 relative down to the
  smallest p.
- i0, i0e, i1, i1e: the power series for |x| <= 25, the asymptotic series above; about 1e-15.
"""

from __future__ import annotations

import math

from ...runtime import dtype as dtypes
from ...runtime.dtype import result_type
from ..checks import kernel_not_implemented, tensor_arg
from ..dispatch import apply
from ..registry import OpInfo, with_inplace, with_jvp
from ..tensor import Tensor, int_arg
from .composite import _float_operands, float_arg
from .creation import full_like
from .elementwise import eq, exp, isnan, log, sqrt, where
from .pointwise import (abs, exp2, floor, igamma, igammac, isinf, log1p, logical_and, sign,
                        signbit, sin, tan)
from .pointwise import round as round_

_INF = float("inf")
_NAN = float("nan")


# PyTorch's CPU kernels' names in its dtype errors, where they are not the op's own
# (``"erf_vml_cpu" not implemented for 'ComplexFloat'``); on other devices <op>_<device>
_CPU_KERNELS = {"erfc": "erfc_vml", "erfinv": "erfinv_vml", "i0": "i0_vml", "ndtr": "erf_vml"}
# the kernels PyTorch has without float16 and bfloat16
_NO_HALF = ("ndtri", "log_ndtr")


# the kernels named without the device (polygamma(1, x) is PyTorch's "trigamma"); erf and
# lgamma are PyTorch's "erf_vml_cpu" and "lgamma_vml_cpu", but tests/test_gaps_24.py holds
# them to the bare names for now
_BARE = ("digamma", "trigamma", "polygamma", "erf", "lgamma")


def _kernel_error(op: str, x: Tensor) -> NotImplementedError:
    device = x.device.type
    kernel = _CPU_KERNELS.get(op, op) if device == "cpu" else op
    return kernel_not_implemented(op if op in _BARE else f"{kernel}_{device}", x.dtype)


def _float(input, op: str, complex_ok: bool = False) -> Tensor:
    """``input`` as a floating tensor (integers and bools promote to the default dtype); a
    complex one is refused, as PyTorch's real special functions refuse it, unless
    ``complex_ok`` (and float16/bfloat16 for the functions of ``_NO_HALF``, as PyTorch)."""
    x = tensor_arg(input, op)
    if (x.dtype.is_complex and not complex_ok) or (
            op in _NO_HALF and x.dtype in (dtypes.float16, dtypes.bfloat16)):
        raise _kernel_error(op, x)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(dtypes.get_default_dtype())
    return x


def _in_float64(fn):
    """``fn`` computed in float64 for lower-precision floating inputs, the result cast back:
    the expansions sum terms of mixed signs, which float32 would leave a few ulps off (lgamma(2)
    would not be 0)."""
    def wrapped(x: Tensor, *args) -> Tensor:
        if x.dtype in (dtypes.float32, dtypes.float16, dtypes.bfloat16):
            return fn(x.to(dtypes.float64), *args).to(x.dtype)
        return fn(x, *args)
    return wrapped


def _series(terms) -> Tensor:
    total = None
    for t in terms:
        total = t if total is None else total + t
    return total


def _nonpositive_integer(x: Tensor) -> Tensor:
    return logical_and(x <= 0, eq(x, floor(x)))


# -- gamma and its logarithmic derivatives ------------------------------------------------------

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _lgamma_right(z: Tensor) -> Tensor:
    """lgamma(z) for z >= 1/2 (Lanczos, g = 7)."""
    z = z - 1
    a = _series([_LANCZOS[0]] + [c / (z + k) for k, c in enumerate(_LANCZOS[1:], 1)])
    t = z + 7.5
    return (z + 0.5) * log(t) - t + log(a) + _HALF_LOG_2PI


# lgamma(2 + e) = (1 - gamma) e + sum_{k >= 2} (-1)^k (zeta(k) - 1) / k e^k, lowest first:
# for |e| <= 1/2 the 25th term is below 1e-17 of the sum. Near the zeros x = 1 and 2 it keeps
# the relative accuracy that the Lanczos sum (accurate to 1e-15 absolute) loses there
_LGAMMA_AT_2 = (
    0.42278433509846713, 0.3224670334241132, -0.0673523010531981, 0.020580808427784546,
    -0.007385551028673986, 0.0028905103307415234, -0.001192753911703261,
    0.0005096695247430425, -0.00022315475845357939, 9.945751278180853e-05,
    -4.492623673813314e-05, 2.050721277567069e-05, -9.439488275268397e-06,
    4.374866789907488e-06, -2.039215753801366e-06, 9.55141213040742e-07,
    -4.492469198764566e-07, 2.1207184805554665e-07, -1.0043224823968099e-07,
    4.7698101693639804e-08, -2.2711094608943164e-08, 1.0838659214896955e-08,
    -5.183475041970047e-09, 2.4836745438024785e-09, -1.1921401405860912e-09)


def _lgamma_near_zeros(x: Tensor) -> Tensor:
    """lgamma(x) for 1/2 <= x < 5/2 from e = x - 1 or x - 2 (exact): lgamma(1 + e) =
    lgamma(2 + e) - log1p(e). Exactly 0 at 1 and 2."""
    low = x < 1.5
    e = where(low, x - 1, x - 2)
    return e * _horner(_LGAMMA_AT_2[::-1], e) - where(low, log1p(e), 0.0)


def lgamma(input: Tensor, *, out=None) -> Tensor:
    """``log |Gamma(x)|``: inf at the poles 0, -1, -2, ... and at +-inf.

    Example:
        >>> tg.lgamma(tg.tensor([0.5, 3., 10.]))
        tensor([0.5724, 0.6931, 12.8018])
    """
    return _out(_node(_nodes.LgammaBackward0, _float(input, "lgamma")), out, "lgamma")


@_in_float64
def _lgamma(x: Tensor) -> Tensor:
    # poles and infinities are set at the end; the formula sees a harmless stand-in, so that no
    # branch makes an inf - inf (where() masks a branch's gradient, but 0 * NaN is still NaN)
    bad = _nonpositive_integer(x) | isinf(x)
    x = where(bad, 1.5, x)
    left = x < 0.5
    xr = where(left, 1 - x, x)
    right = _lgamma_right(xr)
    s = abs(sin(where(left, x, 0.5) * math.pi))
    r = where(left, math.log(math.pi) - log(s) - right, right)
    near = (x >= 0.5) & (x < 2.5)
    r = where(near, _lgamma_near_zeros(where(near, x, 2.0)), r)
    return where(bad, _INF, r)


def _out(r: Tensor, out, op: str) -> Tensor:
    from .elementwise import _result
    return _result(r, out, op)


# Bernoulli numbers B_2, B_4, ..., B_14 over (2k)!: the asymptotic series' coefficients
_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
_SHIFT = 10


def digamma(input: Tensor, *, out=None) -> Tensor:
    """``psi(x) = d/dx lgamma(x)``: -inf at +0 (+inf at -0), NaN at the negative integers
    (PyTorch's).

    Example:
        >>> tg.digamma(tg.tensor([1., 2.]))
        tensor([-0.5772,  0.4228])
    """
    return _out(_node(_nodes.DigammaBackward0, _float(input, "digamma")), out, "digamma")


@_in_float64
def _digamma(x0: Tensor) -> Tensor:
    bad = _nonpositive_integer(x0) | isinf(x0)
    x = where(bad, 1.5, x0)  # (as in lgamma: the special points are set at the end)
    left = x < 0.5
    z = where(left, 1 - x, x)
    # psi(z) = psi(z + N) - sum_{k < N} 1 / (z + k); psi(w) ~ log w - 1/(2w) - sum B_2k/(2k w^2k)
    w = z + _SHIFT
    w2 = 1 / (w * w)
    tail, p = None, w2
    for k, b in enumerate(_B2K, 1):
        t = p * (b / (2 * k))
        tail = t if tail is None else tail + t
        p = p * w2
    r = log(w) - 0.5 / w - tail - _series([1 / (z + k) for k in range(_SHIFT)])
    r = where(left, r - math.pi * _cot_pi(where(left, x, 0.25)), r)
    # +inf: inf; +0: -inf and -0: +inf (the limits from each side); the negative integers
    # and -inf: NaN (PyTorch's)
    special = where(eq(x0, 0), where(signbit(x0), _INF, -_INF), where(x0 > 0, _INF, _NAN))
    return where(bad, special, r)


@_in_float64
def _polygamma_positive(x: Tensor, n: int) -> Tensor:
    """psi^(n)(x) for n >= 1: (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta function by the
    recurrence and Euler-Maclaurin: zeta(s, w) ~ w^(1-s)/(s-1) + w^-s/2 +
    sum_k B_2k/(2k)! s (s+1) ... (s+2k-2) w^(-s-2k+1)."""
    s = n + 1
    w = x + _SHIFT
    inv = 1 / w
    ws = inv ** s
    tail = ws * w / (s - 1) + ws / 2
    rising, p = s, ws * inv  # s (s+1)...(s+2k-2), w^(-s-2k+1)
    for k, b in enumerate(_B2K, 1):
        tail = tail + p * (b / math.factorial(2 * k) * rising)
        rising *= (s + 2 * k - 1) * (s + 2 * k)
        p = p * inv * inv
    head = _series([(x + k) ** -s for k in range(_SHIFT)])
    return (head + tail) * ((-1) ** (n + 1) * math.factorial(n))


def polygamma(n: int, input: Tensor, *, out=None) -> Tensor:
    """The ``n``-th derivative of :func:`digamma` (``n = 0``: digamma itself).

    Example:
        >>> tg.polygamma(1, tg.tensor([1.]))  # pi^2 / 6
        tensor([1.6449])
    """
    n = int_arg(n, "polygamma", "n")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _float(input, "trigamma" if n == 1 else "polygamma")
    if n == 0:
        return digamma(x, out=out)
    return _out(_node(_nodes.PolygammaBackward0, x, n), out, "polygamma")


def _cot_derivative(n: int) -> list:
    """The coefficients (in c = cot(pi x), lowest first) of d^n/dx^n cot(pi x): with
    dc/dx = -pi (1 + c^2), P_0 = c and P_(k+1)(c) = -pi (1 + c^2) P_k'(c)."""
    p = [0.0, 1.0]
    for _ in range(n):
        d = [i * p[i] for i in range(1, len(p))] + [0.0, 0.0]  # P_k', padded to degree + 1
        p = [-math.pi * (d[i] + (d[i - 2] if i >= 2 else 0.0)) for i in range(len(d))]
    return p


def _cot_pi(x: Tensor) -> Tensor:
    """cot(pi x), accurate relative to itself: at t = x - round(x) (cot has period 1: no loss of
    pi x's digits for large |x|), and as tan(pi (1/2 - |t|)) for |t| > 1/4 (1/2 - |t| exact):
    1 / tan(pi t) keeps only eps absolute at the zeros t = +-1/2, which polygamma's P_n'
    (1e10 for n = 10) multiplies there."""
    t = x - round_(x)
    at = abs(t)
    far = at > 0.25
    return where(far, tan((0.5 - where(far, at, 0.25)) * math.pi) * sign(t),
                 1 / tan(where(far, 0.25, t) * math.pi))


@_in_float64
def _polygamma_reflected(x: Tensor, n: int) -> Tensor:
    """psi^(n)(x) for x < 0 by the reflection psi(1 - x) - psi(x) = pi cot(pi x), differentiated
    n times: psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi d^n/dx^n cot(pi x). cot has period 1, so
    it is evaluated at x - round(x) (:func:`_cot_pi`)."""
    c = _cot_pi(x)
    poly = None
    for coef in reversed(_cot_derivative(n)):
        poly = full_like(x, coef) if poly is None else poly * c + coef
    return _polygamma_positive(1 - x, n) * ((-1) ** n) - poly * math.pi


def _polygamma(x: Tensor, n: int) -> Tensor:
    # (-1)^(n+1) n! zeta(n + 1, x): at the poles +-inf by the sign, 0 at +inf, NaN at -inf.
    # The series needs x + 10 well above 0: x < 0 reflects to 1 - x > 1
    bad = _nonpositive_integer(x) | isinf(x)
    special = where(eq(x, _INF), 0.0, where(eq(x, -_INF), _NAN, _INF if n % 2 else -_INF))
    left = x < 0
    right = _polygamma_positive(where(bad | left, 1.5, x), n)
    reflected = _polygamma_reflected(where(bad | ~left, -0.5, x), n)
    r = where(bad, special, where(left, reflected, right))
    return r if r.dtype is x.dtype else r.to(x.dtype)  # (special's constants are float32)


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    return polygamma(n, self)


def mvlgamma(input: Tensor, p: int, *, out=None) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{i < p} lgamma(x - i / 2)``; every element must be greater
    than ``(p - 1) / 2``.

    Example:
        >>> tg.mvlgamma(tg.tensor([2.5]), 2)
        tensor([0.8570])
    """
    x = _float(input, "mvlgamma")
    p = int_arg(p, "mvlgamma", "p")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    # (a value check, as PyTorch had (2.13 checks nothing): it reads the tensor on the host)
    if x.numel() and not bool((x > (p - 1) / 2).all()):
        raise RuntimeError("All elements must be greater than (p-1)/2")
    r = _series([lgamma(x - i / 2) for i in range(p)]) + p * (p - 1) / 4 * math.log(math.pi)
    return _out(r, out, "mvlgamma")


# -- the error function and the normal distribution -----------------------------------------------

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_SMALL = 0.5


# erf(x) = x sum_n c_n x^2n, c_n = 2/sqrt(pi) (-1)^n / (n! (2n+1)), highest first; 13 terms:
# below 1e-17 at |x| < 1/2
_ERF_TAYLOR = tuple(_TWO_OVER_SQRT_PI * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                    for n in range(12, -1, -1))


def _erf_taylor(x: Tensor) -> Tensor:
    return x * _horner(_ERF_TAYLOR, x * x)  # (x times the sum: erf(-0.0) is -0.0)


def erf(input: Tensor, *, out=None) -> Tensor:
    """The error function ``2/sqrt(pi) int_0^x exp(-t^2) dt``."""
    return _out(_node(_nodes.ErfBackward0, _float(input, "erf")), out, "erf")


@_in_float64
def _erf(x: Tensor) -> Tensor:
    small = abs(x) < _SMALL
    xs = where(small, 1.0, x)
    half = full_like(x, 0.5)
    big = sign(xs) * igamma(half, xs * xs)
    return where(small, _erf_taylor(where(small, x, 0.0)), big)


def erfc(input: Tensor, *, out=None) -> Tensor:
    """``1 - erf(x)``, without the cancellation for large x."""
    return _out(_node(_nodes.ErfcBackward0, _float(input, "erfc")), out, "erfc")


@_in_float64
def _erfc(x: Tensor) -> Tensor:
    low = x < _SMALL
    xs = where(low, 1.0, x)
    return where(low, 1 - erf(where(low, x, 0.0)), igammac(full_like(x, 0.5), xs * xs))


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision:
# w = -log(1 - y^2); central region w < 5 in w - 2.5, tails in sqrt(w) - 3
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coefs, t: Tensor) -> Tensor:
    p = None
    for c in coefs:
        p = full_like(t, c) if p is None else p * t + c
    return p


def erfinv(input: Tensor, *, out=None) -> Tensor:
    """The inverse of :func:`erf` on ``[-1, 1]``: +-inf at +-1, NaN outside.

    Example:
        >>> tg.erfinv(tg.tensor([0., 0.5]))
        tensor([0.0000, 0.4769])
    """
    return _out(_node(_nodes.ErfinvBackward0, _float(input, "erfinv")), out, "erfinv")


# Giles' start is 1e-3 off far in the tails (x > 4): Newton's third step brings that to eps
_ERFINV_STEPS = 3


def _erfinv(y: Tensor) -> Tensor:
    edge = abs(y) >= 1
    ys = where(edge, 0.0, y)
    # w = -log(1 - y^2) as -log((1 - |y|)(1 + |y|)): 1 - y * y would lose 1 - |y|'s digits
    # near 1 (5% of it at 1 - 1e-15)
    w = -(log1p(-abs(ys)) + log1p(abs(ys)))
    central = w < 5
    x = ys * where(central, _horner(_GILES_CENTRAL, where(central, w, 2.5) - 2.5),
                   _horner(_GILES_TAIL, sqrt(where(central, 9.0, w)) - 3))
    # beyond w = 16 (1 - |y| < 6e-8, past single precision) Giles' tail drifts (7% off at
    # 1 - 1e-15): start there from Abramowitz-Stegun 26.2.23 for the normal quantile of
    # (1 - |y|) / 2, 3e-4 off in x, from which three Newton steps reach eps
    ay = abs(ys)
    far = w > 16
    ax = where(far, _as_normal_tail(log1p(-where(far, ay, 0.5)) - math.log(2)) * -_SQRT_HALF,
               abs(x))
    # Newton on erf(|x|) = |y|, each step doubling the correct digits; above 1/2 on
    # erfc(|x|) = 1 - |y| (exact there), as erf(|x|) - |y| would keep only the absolute accuracy
    # of erf near 1 (erfinv(1 - 1e-10) 1e-8 off)
    tail = ay > 0.5
    for _ in range(_ERFINV_STEPS):
        f = where(tail, (1 - ay) - erfc(ax), erf(ax) - ay)
        ax = ax - f / (exp(-ax * ax) * _TWO_OVER_SQRT_PI)
    x = where(ys < 0, -ax, where(eq(ys, 0), ys, ax))  # (erfinv(-0.0) is -0.0)
    # (constants only in the edge values: y * inf would send 0 * inf = NaN back to y)
    x = where(edge, where(eq(y, 1), _INF, where(eq(y, -1), -_INF, _NAN)), x)
    # (the float32 constants promote float16/bfloat16 inputs: the result keeps their dtype)
    return x if x.dtype is y.dtype else x.to(y.dtype)


_SQRT_HALF = math.sqrt(0.5)


def ndtr(input: Tensor, *, out=None) -> Tensor:
    """The standard normal CDF, ``(1 + erf(x / sqrt(2))) / 2`` (as ``erfc(-x / sqrt 2) / 2``:
    accurate in the lower tail)."""
    return _out(_node(_nodes.NdtrBackward0, _float(input, "ndtr")), out, "ndtr")


def _ndtr(x: Tensor) -> Tensor:
    return erfc(-x * _SQRT_HALF) * 0.5


def log_ndtr(input: Tensor, *, out=None) -> Tensor:
    """``log(ndtr(x))``, accurate in both tails: ``log1p(-ndtr(-x))`` above 0 and, below -35
    (where ndtr underflows), the asymptotic series ``-x^2/2 - log(-x) - log(2 pi)/2 +
    log(1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8)``."""
    return _out(_log_ndtr(_float(input, "log_ndtr")), out, "log_ndtr")


def _log_ndtr(x: Tensor) -> Tensor:
    # (through its parts: the closed form exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi) cancels
    # catastrophically in the far tail, where the asymptotic series' derivative does not)
    from .special_functions import erfcx
    upper, far = x > 0, x < -35
    # below -20, log(erfc(t) / 2) as log(erfcx(t) / 2) - t^2 (t = -x / sqrt 2): the same value,
    # but a recorded derivative through erfc would divide by erfc(t)^2, which underflows
    # from x = -26.5 (double backward: inf, or 10% off just above)
    low = (x < -20) & ~far
    t = where(low, x, -25.0) * -_SQRT_HALF
    lower = log(erfcx(t) * 0.5) - t * t
    mid = where(upper, log1p(erfc(where(upper, x, 1.0) * _SQRT_HALF) * -0.5),
                log(erfc(-where(upper | far | low, -1.0, x) * _SQRT_HALF) * 0.5))
    xf = where(far, x, -40.0)
    u = 1 / (xf * xf)
    asym = -0.5 / u - log(-xf) - _HALF_LOG_2PI + log1p(u * (-1 + u * (3 + u * (-15 + u * 105))))
    return where(far, asym, where(low, lower, mid))


def ndtri(input: Tensor, *, out=None) -> Tensor:
    """The inverse of :func:`ndtr`: ``sqrt(2) erfinv(2p - 1)``; -inf at 0, inf at 1, NaN
    outside [0, 1]."""
    return _out(_node(_nodes.NdtriBackward0, _float(input, "ndtri")), out, "ndtri")


_NDTRI_TAIL = 0.01


def _as_normal_tail(logp: Tensor) -> Tensor:
    """Abramowitz and Stegun 26.2.23: the normal quantile of p < 1/2 from log(p), within
    4.5e-4."""
    t = sqrt(logp * -2)
    return -(t - (2.515517 + t * (0.802853 + t * 0.010328))
             / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))))


@_in_float64
def _ndtri(p: Tensor) -> Tensor:
    central = _erfinv(p * 2 - 1) * math.sqrt(2)
    # below 0.01, 2p - 1 would keep only the absolute accuracy of p: start from Abramowitz and
    # Stegun 26.2.23 (error < 4.5e-4) and take Newton steps on log_ndtr(x) = log(p)
    # (the upper tail by symmetry: 1 - p is exact there)
    upper = p > 0.5
    q = where(upper, 1 - p, p)
    tail = logical_and(q < _NDTRI_TAIL, q > 0)
    pt = where(tail, q, _NDTRI_TAIL)
    logp = log(pt)
    x = _as_normal_tail(logp)
    for _ in range(4):
        lx = _log_ndtr(x)
        # f = log_ndtr(x) - log p, f' = phi(x) / ndtr(x) = exp(-x^2/2 - log_ndtr(x)) / sqrt(2pi)
        x = x - (lx - logp) / exp(x * x * -0.5 - lx - _HALF_LOG_2PI)
    return where(tail, where(upper, -x, x), central)


# -- modified Bessel functions of the first kind, orders 0 and 1 ---------------------------------

_BESSEL_SPLIT = 25.0


def _bessel_series(order: int, x: Tensor) -> Tensor:
    """I_order(x) = (x/2)^order sum_k (x^2/4)^k / (k! (k + order)!), for |x| <= 25: 60 terms
    put the remainder below 1e-30 of the sum (the terms are all positive: no cancellation)."""
    q = x * x * 0.25
    term = (x * 0.5) if order else full_like(x, 1.0)
    terms = [term]
    for k in range(1, 60):
        term = term * q * (1.0 / (k * (k + order)))
        terms.append(term)
    return _series(terms)


def _bessel_asymptotic_scaled(order: int, ax: Tensor) -> Tensor:
    """e^-x I_order(x) for x > 25: 1/sqrt(2 pi x) sum_k (-1)^k a_k(order) / x^k with
    a_k = prod_{j <= k} (4 order^2 - (2j - 1)^2) / (k! 8^k); 20 terms (the 20th is below
    3e-16 of the sum at x = 25, and the error is below it)."""
    mu = 4 * order * order
    inv = 1 / ax
    coef, total, p = 1.0, None, None
    for k in range(20):
        if k:
            coef *= -(mu - (2 * k - 1) ** 2) / (k * 8)
            p = inv if p is None else p * inv
        t = full_like(ax, coef) if k == 0 else p * coef
        total = t if total is None else total + t
    return total / sqrt(ax * (2 * math.pi))


def _bessel(order: int, input: Tensor, scaled: bool, op: str) -> Tensor:
    return _bessel_of(_float(input, op), order, scaled)


@_in_float64
def _bessel_of(x: Tensor, order: int, scaled: bool) -> Tensor:
    ax = abs(x)
    near = ax <= _BESSEL_SPLIT
    small = _bessel_series(order, where(near, x, 0.0))
    if scaled:
        small = small * exp(-ax)
    far_x = where(near, _BESSEL_SPLIT + 1, ax)
    far = _bessel_asymptotic_scaled(order, far_x)
    if not scaled:
        far = far * exp(far_x)
    if order:  # I_1 is odd
        far = far * sign(x)
    r = where(near, small, far)
    if order:  # (I_1(-0.0) is PyTorch's 0.0)
        r = where(eq(x, 0), 0.0, r)
    return where(isnan(x), x, r)


def i0(input: Tensor, *, out=None) -> Tensor:
    """The modified Bessel function of the first kind of order 0.

    Example:
        >>> tg.i0(tg.tensor([0., 1.]))
        tensor([1.0000, 1.2661])
    """
    return _out(_node(_nodes.I0Backward0, _float(input, "i0")), out, "i0")


def i0e(input: Tensor, *, out=None) -> Tensor:
    """``exp(-|x|) i0(x)``, without the overflow."""
    return _out(_node(_nodes.I0eBackward0, _float(input, "i0e")), out, "i0e")


def i1(input: Tensor, *, out=None) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    return _out(_node(_nodes.I1Backward0, _float(input, "i1")), out, "i1")


def i1e(input: Tensor, *, out=None) -> Tensor:
    """``exp(-|x|) i1(x)``, without the overflow."""
    return _out(_node(_nodes.I1eBackward0, _float(input, "i1e")), out, "i1e")


# -- small compositions ----------------------------------------------------------------------------

def hypot(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``sqrt(input^2 + other^2)`` (broadcasting), scaled by the larger magnitude so that it
    neither overflows nor underflows; 0 (with a zero gradient) where both are 0.

    Example:
        >>> tg.hypot(tg.tensor([3., 1e200], dtype=tg.float64), tg.tensor([4., 1e200],
        ...          dtype=tg.float64))
        tensor([5.0000e+00, 1.4142e+200], dtype=tritongrad.float64)
    """
    a, b = tensor_arg(input, "hypot"), tensor_arg(other, "hypot", "other")
    common = result_type(a, b)  # (an integer operand joins a floating one, as in PyTorch)
    if not common.is_floating_point:
        raise kernel_not_implemented(f"hypot_{a.device.type}", common)
    a, b = _float_operands(a, b, "hypot")
    return _out(apply(_nodes.HypotBackward0, (a, b)), out, "hypot")


def sinc(input: Tensor, *, out=None) -> Tensor:
    """The normalized sinc, ``sin(pi x) / (pi x)``, 1 at 0 (where its gradient is 0): one
    ``SincBackward0`` node saving x for real inputs."""
    x = _float(input, "sinc", complex_ok=True)
    if not x.dtype.is_complex:
        return _out(apply(_nodes.SincBackward0, (x,)), out, "sinc")
    zero = eq(x, 0)
    px = where(zero, 1.0, x) * math.pi
    return _out(where(zero, 1.0, sin(px) / px), out, "sinc")


def entr(input: Tensor, *, out=None) -> Tensor:
    """The elementwise entropy ``-x log x``: 0 at 0, -inf below 0. Its gradient is
    ``-(1 + log x)``, as PyTorch's: inf at 0, NaN below 0."""
    return _out(_node(_nodes.EntrBackward0, _float(input, "entr")), out, "entr")


def _entr(x: Tensor) -> Tensor:
    pos = x > 0
    r = where(pos, -x * log(where(pos, x, 1.0)), full_like(x, -_INF))
    return where(eq(x, 0), 0.0, where(isnan(x), x, r))


def logit(input: Tensor, eps: float | None = None, *, out=None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given
    (a negative ``eps``, as None, clamps nothing)."""
    x = _float(input, "logit")
    if eps is not None:
        eps = float_arg(eps, "logit", "eps")
    eps = None if eps is None or eps < 0 else float(eps)
    return _out(apply(_nodes.LogitBackward0, (x,), eps), out, "logit")


def xlog1py(input, other, *, out=None) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN). Gradients
    ``log1p(other)`` and ``input / (1 + other)``, 0 where the value is the 0 by definition
    (``input`` 0 and ``log1p(other)`` infinite or NaN)."""
    from .special_functions import _either_tensor
    _either_tensor("xlog1py", input, other, ("Tensor input, Tensor other", "Number self, "
                   "Tensor other", "Tensor input, Number other"))
    a, b = _float_operands(input, other, "xlog1py")
    if a.dtype.is_complex:
        raise _kernel_error("xlog1py", a)
    # only where log1p(other) is not finite does input = 0 need the definition: elsewhere
    # input * log1p(other) is already 0, with the gradient log1p(other) for input
    zero = eq(a, 0)
    defined = logical_and(zero, (b <= -1) | eq(b, _INF))
    # PyTorch's 0 where input is 0 is +0.0 (-0.0 * log1p(2), 0 * log1p(-0.0) would be -0.0):
    # + 0.0 turns -0.0 to 0.0, - 0.0 keeps every value (its -0.0 too)
    r = a * log1p(where(defined, 0.0, b))
    return _out(r + where(zero, 0.0, full_like(r, -0.0)), out, "xlog1py")



# -- the table ---------------------------------------------------------------------------------

_PARTS = "through its parts (the derivative of the expansion)"

OPS = (
    OpInfo("lgamma", lgamma, dtypes="floats; integers promote", grad="g digamma(x) " + _PARTS),
    OpInfo("digamma", digamma, dtypes="floats; integers promote",
           grad="g polygamma(1, x) " + _PARTS),
    OpInfo("polygamma", polygamma, method=_polygamma_method, dtypes="floats; integers promote",
           grad="g polygamma(n + 1, x) " + _PARTS),
    OpInfo("mvlgamma", mvlgamma, dtypes="floats; integers promote", grad=_PARTS),
    OpInfo("erfinv", erfinv, dtypes="floats; integers promote",
           grad="g sqrt(pi)/2 exp(y^2) " + _PARTS),
    OpInfo("i0", i0, dtypes="floats; integers promote", grad="g i1(x) " + _PARTS),
    OpInfo("hypot", hypot, dtypes="floats", grad="g a / y, g b / y; 0 at 0"),
    # torch.special functions that PyTorch also has as torch.<name> and Tensor.<name>
    OpInfo("erf", erf, dtypes="floats; integers promote", grad="g 2/sqrt(pi) exp(-x^2) " + _PARTS),
    OpInfo("erfc", erfc, dtypes="floats; integers promote",
           grad="-g 2/sqrt(pi) exp(-x^2) " + _PARTS),
    OpInfo("sinc", sinc, dtypes="floats; integers promote", grad=_PARTS),
    OpInfo("logit", logit, dtypes="floats; integers promote", grad="g / (p (1 - p))"),
)
# forward AD goes through the parts (igamma's jvp for erf, erfc and erfinv's Newton steps)
OPS = with_jvp(OPS)
OPS = with_inplace(OPS, ("lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "i0", "hypot",
                         "erf", "erfc", "sinc", "logit"))


def _node(op: type, x: Tensor, *params) -> Tensor:
    """``op`` (a node class of special_nodes.py) applied to ``x``."""
    return apply(op, (x,), *params)


# The nodes run the composites above (and the functions of their derivatives), so their module
# loads after them; the functions above reach them through it at call time.
from . import special_nodes as _nodes  # noqa: E402
