"""The autograd nodes of autograd/ops/special.py's functions: erf, erfc, erfinv, lgamma,
digamma, polygamma, i0, i0e, i1, i1e, ndtr, ndtri, entr, sinc, logit and hypot are one node
each, as PyTorch's, with the closed-form derivative (Note [Composite forwards, one node]).
Their forwards run special.py's composites (``_erf``, ``_lgamma``, ...), and their rules the
public functions of the derivatives (``digamma`` for lgamma, ``i1`` for i0, ...), so this
module loads after special.py has defined them (special.py imports it at its end).
"""

from __future__ import annotations

import math

from ..dispatch import Primitive, elementwise_jvp, opmath
from ..tensor import Tensor
from .activations import _Activation
from .special import (_INF, _TWO_OVER_SQRT_PI, _bessel_of, _digamma, _entr, _erf, _erfc,
                      _erfinv, _lgamma, _ndtr, _ndtri, _polygamma, digamma, i0, i0e, i1, i1e,
                      polygamma)

# Note [Composite forwards, one node]: each function above is a composite of Tensor ops, which
# recorded as it runs would be tens of nodes (erf 47, i0 250) keeping their intermediates for
# backward: 20 to 170 times the bytes of PyTorch's one node, which saves x (erfinv: x too,
# recomputing erfinv(x); here the output, the same bytes). So each public function is one
# primitive named as PyTorch's node, saving x (or its output): its forward runs the composite
# unrecorded on the input's array, and its rule is the derivative's closed form, whose
# special functions (digamma for lgamma, i1 for i0, ...) run the same way, through
# ``_composite``: unrecorded on a backend's arrays, recorded (so differentiable again, for
# double backward) when the rule itself is being recorded. The composites' dtype handling
# (float64 inside for the expansions) is theirs.

def _composite(k, fn, x, *params):
    """``fn`` (Tensor ops) of ``x``: on a recorded rule's Tensor (``k`` is ops.traced) as it is,
    differentiably; on a backend array without recording, the array of its result."""
    if isinstance(x, Tensor):
        return fn(x, *params)
    from ..grad_mode import no_grad
    from ..tensor import make
    with no_grad():
        return fn(make(x), *params)._data


class _ComposedUnary(Primitive):
    """A unary special function as one node: ``value(x, *params)`` (Tensor ops) is its
    forward, ``derivative(k, x, *params)`` (or of the output, with ``save_output``) the factor
    of the incoming gradient."""

    __slots__ = ()
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)

    @classmethod
    def forward(cls, ctx, k, x, *params):
        ctx.params = params
        return _composite(k, cls.value, x, *params)

    @classmethod
    def vjp(cls, ctx, k, saved, g):
        return k.mul(g, cls.derivative(k, saved[0], *ctx.params))


class ErfBackward0(_ComposedUnary):
    """erf(x):  dx = g 2/sqrt(pi) exp(-x^2)."""

    __slots__ = ()
    op_name = "erf"
    value = staticmethod(_erf)

    @staticmethod
    def derivative(k, x):
        return k.mul(k.exp(k.neg(k.mul(x, x))), _TWO_OVER_SQRT_PI)


class ErfcBackward0(_ComposedUnary):
    """erfc(x):  dx = -g 2/sqrt(pi) exp(-x^2)."""

    __slots__ = ()
    op_name = "erfc"
    value = staticmethod(_erfc)

    @staticmethod
    def derivative(k, x):
        return k.mul(k.exp(k.neg(k.mul(x, x))), -_TWO_OVER_SQRT_PI)


class ErfinvBackward0(_ComposedUnary):
    """y = erfinv(x):  dx = g sqrt(pi)/2 exp(y^2), from the saved output (PyTorch saves x and
    recomputes y: the same bytes)."""

    __slots__ = ()
    op_name = "erfinv"
    save_inputs = ()
    save_output = True
    value = staticmethod(_erfinv)

    @staticmethod
    def derivative(k, y):
        return k.mul(k.exp(k.mul(y, y)), math.sqrt(math.pi) / 2)


class LgammaBackward0(_ComposedUnary):
    """lgamma(x):  dx = g digamma(x)."""

    __slots__ = ()
    op_name = "lgamma"
    value = staticmethod(_lgamma)

    @staticmethod
    def derivative(k, x):
        return _composite(k, digamma, x)


class DigammaBackward0(_ComposedUnary):
    """digamma(x):  dx = g polygamma(1, x)."""

    __slots__ = ()
    op_name = "digamma"
    value = staticmethod(_digamma)

    @staticmethod
    def derivative(k, x):
        return _composite(k, lambda t: polygamma(1, t), x)


class PolygammaBackward0(_ComposedUnary):
    """polygamma(n, x), n >= 1:  dx = g polygamma(n + 1, x)."""

    __slots__ = ()
    op_name = "polygamma"
    value = staticmethod(_polygamma)

    @staticmethod
    def derivative(k, x, n):
        return _composite(k, lambda t: polygamma(n + 1, t), x)


class I0Backward0(_ComposedUnary):
    """i0(x):  dx = g i1(x)."""

    __slots__ = ()
    op_name = "i0"
    value = staticmethod(lambda x: _bessel_of(x, 0, False))

    @staticmethod
    def derivative(k, x):
        return _composite(k, i1, x)


# sinc'(x) = sum_{k >= 1} (-1)^k 2k pi^2k x^(2k-1) / (2k+1)!, as x times a polynomial in x^2
# (highest first): for |pi x| < 1/2 nine terms are exact to eps
_SINC_PRIME = tuple((-1) ** k * 2 * k * math.pi ** (2 * k) / math.factorial(2 * k + 1)
                    for k in range(9, 0, -1))
_SINC_SERIES_BELOW = 0.5 / math.pi


class SincBackward0(_Activation):
    """sinc(x) = sin(pi x) / (pi x), 1 at 0:  dx = g (pi x cos(pi x) - sin(pi x)) / (pi x^2)
    (PyTorch's formula, saving x), 0 at 0. For |pi x| < 1/2 the factor is its Taylor series
    instead: the formula cancels there (its numerator is -(pi x)^3 / 3 from terms of size
    pi x: all digits lost at x = 1e-9, where PyTorch's second derivative is 0, not
    -pi^2 / 3), and a recorded rule differentiates the series to sinc's higher derivatives,
    at 0 too (PyTorch's double backward at 0: NaN)."""

    __slots__ = ()
    op_name = "sinc"

    @staticmethod
    def value(k, x):
        zero = k.eq(x, 0.0)
        px = k.mul(k.where(zero, 1.0, x), math.pi)
        return k.where(zero, 1.0, k.div(k.unary("sin", px), px))

    @staticmethod
    def derivative(k, x, g):
        small = k.lt(k.unary("abs", x), _SINC_SERIES_BELOW)
        xs = k.where(small, 1.0, x)  # (no 0 / 0 in the branch selected away)
        px = k.mul(xs, math.pi)
        d = k.div(k.sub(k.mul(px, k.unary("cos", px)), k.unary("sin", px)),
                  k.mul(px, xs))
        x2 = k.mul(x, x)
        poly = _SINC_PRIME[0]
        for c in _SINC_PRIME[1:]:
            poly = k.add(k.mul(x2, poly), c)
        # (+ 0.0: a -0.0 from x = -0.0 reads as PyTorch's 0)
        series = k.add(k.mul(x, poly), 0.0)
        return k.mul(g, k.where(small, series, d))


class LogitBackward0(_Activation):
    """logit(x) = log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given:
    dx = g / (x (1 - x)); outside [0, 1] NaN without eps, outside [eps, 1 - eps] 0 with it
    (PyTorch's logit_backward, saving x)."""

    __slots__ = ()
    op_name = "logit"

    @staticmethod
    def value(k, x, eps):
        if eps is not None:  # (where, not min/max: a NaN stays NaN, as PyTorch's clamp)
            x = k.where(k.lt(x, eps), eps, k.where(k.gt(x, 1.0 - eps), 1.0 - eps, x))
        return k.log(k.div(x, k.add(k.neg(x), 1.0)))

    @staticmethod
    def derivative(k, x, g, eps):
        d = k.div(g, k.mul(x, k.add(k.neg(x), 1.0)))
        lo, hi, outside = (0.0, 1.0, math.nan) if eps is None else (eps, 1.0 - eps, 0.0)
        return k.where(k.lt(x, lo), outside, k.where(k.gt(x, hi), outside, d))


class NdtrBackward0(_ComposedUnary):
    """ndtr(x):  dx = g exp(-x^2 / 2) / sqrt(2 pi)."""

    __slots__ = ()
    op_name = "ndtr"
    value = staticmethod(_ndtr)

    @staticmethod
    def derivative(k, x):
        return k.mul(k.exp(k.mul(k.mul(x, x), -0.5)), 1 / math.sqrt(2 * math.pi))


class NdtriBackward0(_ComposedUnary):
    """y = ndtri(p):  dp = g sqrt(2 pi) exp(y^2 / 2), from the saved output."""

    __slots__ = ()
    op_name = "ndtri"
    save_inputs = ()
    save_output = True
    value = staticmethod(_ndtri)

    @staticmethod
    def derivative(k, y):
        return k.mul(k.exp(k.mul(k.mul(y, y), 0.5)), math.sqrt(2 * math.pi))


class EntrBackward0(_ComposedUnary):
    """entr(x) = -x log x:  dx = -g (1 + log x) (PyTorch's: inf at 0, NaN below)."""

    __slots__ = ()
    op_name = "entr"
    value = staticmethod(_entr)

    @staticmethod
    def derivative(k, x):
        return k.neg(k.add(k.log(x), 1.0))


class I1Backward0(_ComposedUnary):
    """i1(x):  dx = g (i0(x) - i1(x) / x), 1/2 at 0."""

    __slots__ = ()
    op_name = "i1"
    value = staticmethod(lambda x: _bessel_of(x, 1, False))

    @staticmethod
    def derivative(k, x):
        zero = k.eq(x, 0.0)
        xs = k.where(zero, 1.0, x)
        d = k.sub(_composite(k, i0, x), k.div(_composite(k, i1, xs), xs))
        return k.where(zero, 0.5, d)


class I0eBackward0(_ComposedUnary):
    """i0e(x):  dx = g (i1e(x) - sign(x) i0e(x))."""

    __slots__ = ()
    op_name = "i0e"
    value = staticmethod(lambda x: _bessel_of(x, 0, True))

    @staticmethod
    def derivative(k, x):
        return k.sub(_composite(k, i1e, x), k.mul(k.unary("sign", x), _composite(k, i0e, x)))


class I1eBackward0(_ComposedUnary):
    """i1e(x):  dx = g (i0e(x) - i1e(x) (sign(x) + 1 / x)), 1/2 at 0."""

    __slots__ = ()
    op_name = "i1e"
    value = staticmethod(lambda x: _bessel_of(x, 1, True))

    @staticmethod
    def derivative(k, x):
        zero = k.eq(x, 0.0)
        xs = k.where(zero, 1.0, x)
        e1 = _composite(k, i1e, xs)
        d = k.sub(k.sub(_composite(k, i0e, x), k.mul(e1, k.unary("sign", xs))), k.div(e1, xs))
        return k.where(zero, 0.5, d)


class HypotBackward0(Primitive):
    """r = sqrt(a^2 + b^2), scaled by the larger magnitude (no overflow, no underflow), inf
    where either is infinite, as one node saving a, b and r (PyTorch's):  da = g a / r,
    db = g b / r, 0 where r is 0 (PyTorch's: NaN). float16/bfloat16 compute in float32 and
    round once; the operands broadcast."""

    __slots__ = ()
    op_name = "hypot"
    save_inputs = (0, 1)
    save_output = True
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, a, b):
        (a, b), back = opmath(k, a, b)
        aa, ab = k.unary("abs", a), k.unary("abs", b)
        big, small = k.maximum(aa, ab), k.minimum(aa, ab)
        zero = k.eq(big, 0.0)
        big_s = k.where(zero, 1.0, big)
        ratio = k.div(small, big_s)
        r = k.where(zero, 0.0, k.mul(big_s, k.sqrt(k.add(k.mul(ratio, ratio), 1.0))))
        return back(k.where(k.eq(aa, _INF), _INF, k.where(k.eq(ab, _INF), _INF, r)))

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, b, r = saved
        zero = k.eq(r, 0.0)
        scale = k.div(g, k.where(zero, 1.0, r))  # (no 0 / 0 in the branch selected away)
        need_a, need_b = ctx.needs_input_grad
        ga = k.where(zero, 0.0, k.mul(scale, a)) if need_a else None
        gb = k.where(zero, 0.0, k.mul(scale, b)) if need_b else None
        return ga, gb
