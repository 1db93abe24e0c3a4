"""Fused neural-network ops over NumPy arrays: GELU and the other activations (SiLU, Mish,
Softplus, LogSigmoid, Hardswish, Hardsigmoid, Hardtanh, GLU), layer and batch norm,
cross-entropy, embedding.

The CPU twins of the fused Triton kernels (same names, signatures and results; see the
contract in ``tritongrad.kernels``). Each forward returns what its backward needs (layer norm's
mean and reciprocal standard deviation, cross-entropy's log-sum-exp), so the backward never
recomputes the reductions. Half-precision inputs are computed in float32 and rounded once, as
the GPU kernels accumulate in float32.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import activation_entry
from . import jit
from .bf16 import BF16Array, round_
from ...runtime import dtype as D
from .elementwise import _quiet, div, in_memory_order, ne
from .memory import astype
from .reduction import sum as _sum  # (sums over leading dims: BLAS products with ones)

__all__ = ["ACTIVATIONS", "activation", "activation_backward", "batch_norm",
           "batch_norm_backward", "cross_entropy", "cross_entropy_backward", "embedding",
           "embedding_backward", "gelu", "gelu_backward", "glu", "glu_backward", "layer_norm",
           "layer_norm_backward", "mean_over_targets"]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_A = 0.044715


def _up(a: np.ndarray) -> np.ndarray:
    """``a`` as a plain array in its compute dtype: float16 -> float32, a bfloat16
    ``BF16Array`` -> its float32 storage, float32/float64 unchanged."""
    if type(a) is BF16Array:
        return a.view(np.ndarray)
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _back(r, like: np.ndarray) -> np.ndarray:
    """The compute-dtype result ``r`` as a new array of ``like``'s dtype (rounded once)."""
    if type(like) is BF16Array:
        return round_(np.array(r, dtype=np.float32)).view(BF16Array)
    return np.array(r, dtype=like.dtype)


# -- erf -----------------------------------------------------------------------------------------

def _erf(z: np.ndarray) -> np.ndarray:
    """The error function of float64 ``z`` (NumPy has none; SciPy's is 3x slower here for
    float32 and no faster in GELU's float64 path, which needs erfc's tail anyway): the
    everywhere-convergent series erf(z) = 2/sqrt(pi) e^(-z^2) sum_n 2^n z^(2n+1) /
    (1*3*...*(2n+1)), whose terms are all of one sign (no cancellation), summed until they stop
    mattering (|z| is clipped at 6, where erf is +-1 to double precision): ~1 ulp."""
    zc = np.clip(z, -6.0, 6.0)
    z2 = zc * zc
    term = zc.copy()
    total = zc.copy()
    for n in range(200):
        term *= z2 * (2.0 / (2 * n + 3))
        total += term
        if n % 8 == 7 and not np.any(np.abs(term) > 1e-17 * np.abs(total)):
            break
    return np.clip(total * np.exp(-z2) * (2.0 / math.sqrt(math.pi)), -1.0, 1.0)


# Abramowitz & Stegun 7.1.26: erfc(z) = t (c1 + t (c2 + ...)) e^(-z^2), t = 1 / (1 + p z), z >= 0,
# |error| < 1.5e-7. For Phi's tail 1 - Phi(|x|) = 0.5 erfc(|x| / sqrt 2) it is taken in
# v = 1 / (|x| + 1/P) = P t (P = p / sqrt 2: one add and one divide, no scaling pass), the
# polynomial's coefficients absorbing 0.5 / P^k. (np.exp2 looked 2x cheaper than np.exp on
# random data but has 50x slow paths, at constant and denormal results: not used.)
_AS_P = 0.3275911 / math.sqrt(2.0)
_AS_Q = tuple(np.float32(0.5 * c / _AS_P ** (k + 1)) for k, c in enumerate(
    (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)))
_INV_AS_P = np.float32(1.0 / _AS_P)
_SIGN_BIT = np.int32(-2 ** 31)
_LOOP_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # elementwise_loops' dtypes


# Note [GELU in cache-sized blocks]
#   Float32 GELU is ~25 NumPy passes (A&S's polynomial, an exp, the sign fix-ups). Over a
#   transformer's activations (1024 x 512, 2 MiB a pass) whole-array passes stream through
#   L3 while other layers' data evicts them; they run instead over blocks of GELU_BLOCK
#   elements whose three scratch arrays are reused, with every result written in place
#   (``out=``). Measured in the GPT step (perf/bench_transformer.py): GELU 5.35 -> 4.6 ms a
#   step at 2^16 (2^15 the same; 2^12 is twice as slow: ~0.3 us of call overhead per pass per
#   block then outweighs the cache).
GELU_BLOCK = 1 << 16


def _tail32(x: np.ndarray, a: np.ndarray, e: np.ndarray, p: np.ndarray) -> None:
    """For a block ``x`` (float32) and ``a`` = |x|: ``p`` = v Q(v) and ``e`` = e^(-x^2 / 2),
    whose product is Phi's tail 1 - Phi(|x|) to < 1.5e-7 / 2 + float32 rounding, kept apart
    so that each caller folds the multiply into its own passes."""
    np.add(a, _INV_AS_P, out=e)
    np.divide(np.float32(1), e, out=e)  # v
    np.multiply(e, _AS_Q[4], out=p)
    for c in _AS_Q[3::-1]:
        p += c
        p *= e
    np.multiply(x, np.float32(-0.5), out=e)
    e *= x
    np.exp(e, out=e)


def _derivative32(p: np.ndarray, e: np.ndarray, a: np.ndarray, x: np.ndarray,
                  out: np.ndarray) -> None:
    """GELU'(x) = Phi(x) + x phi(x) into ``out``, from ``_tail32``'s (p, e) (both then
    overwritten) for a float32 block ``x`` and ``a`` = |x|: with k = (1 - Phi(|x|)) -
    |x| phi(x) (<= 0.5), GELU'(x) is k for x < 0 and 1 - k otherwise, i.e. 0.5 +
    copysign(0.5 - k, x), the sign copied by two integer passes (np.copysign is 6x slower than
    a pass). The tail's relative accuracy is lost to 0.5 - k: |error| < 1.5e-7 / 2 + 3e-8 +
    float32 rounding (absolute, as PyTorch's float32 0.5 (1 + erf(x / sqrt 2)))."""
    p -= np.multiply(a, np.float32(_INV_SQRT_2PI), out=out)
    p *= e
    np.subtract(np.float32(0.5), p, out=out)
    oi = out.view(np.int32)
    oi |= np.bitwise_and(x.view(np.int32), _SIGN_BIT, out=e.view(np.int32))
    out += np.float32(0.5)


def _blocks32(*arrays: np.ndarray):
    """Yields (i0, i1, scratch) over GELU_BLOCK-sized spans of the flat float32 ``arrays``,
    with three scratch blocks (reused) sliced to each span."""
    n = arrays[0].size
    size = min(n, GELU_BLOCK)
    scratch = np.empty((3, size), np.float32)
    for i0 in range(0, n, GELU_BLOCK):
        i1 = min(n, i0 + GELU_BLOCK)
        yield i0, i1, scratch[:, : i1 - i0]


def _gelu32(x: np.ndarray, with_grad: bool = False) -> tuple:
    """(x Phi(x), GELU'(x) or None) for float32 ``x``. x Phi(x) = relu(x) - |x| (1 - Phi(|x|)):
    relu(x) = (x + |x|) / 2 is exact, and 0 for x < 0, so the negative tail x Phi(x) =
    -|x| (1 - Phi(|x|)) keeps A&S's relative accuracy, with no select on the sign (np.where
    is 40x slower than a pass). The derivative shares the tail's ~15 passes (it adds 7).
    The compiled loops (nn_loops) run the same formulas in one pass."""
    xf = np.ascontiguousarray(x).reshape(-1)
    y = np.empty_like(xf)
    d = np.empty_like(xf) if with_grad else None
    if (loops := jit.loops("nn_loops")) is not None:
        loops.gelu(xf, y) if d is None else loops.gelu_with_grad(xf, y, d)
        return y.reshape(x.shape), None if d is None else d.reshape(x.shape)
    for i0, i1, (a, e, p) in _blocks32(xf):
        xb, yb = xf[i0:i1], y[i0:i1]
        np.abs(xb, out=a)
        _tail32(xb, a, e, p)
        np.multiply(p, e, out=yb)
        yb *= a  # |x| (1 - Phi(|x|)); NaN at x = +-inf (inf * 0): fixed below
        if d is not None:
            _derivative32(p, e, a, xb, d[i0:i1])
        h = np.multiply(xb, np.float32(0.5), out=e)
        h += np.multiply(a, np.float32(0.5), out=a)  # (halved first: x + |x| overflows)
        np.subtract(h, yb, out=yb)
        if not math.isfinite(np.dot(a, a)):  # one BLAS pass: any |x| above ~1e19, inf, NaN
            big = ~(a < 1e4)  # GELU(x) is relu(x) in float32 there, NaN at -inf
            yb[big] = xb[big] * (xb[big] > 0)
    return y.reshape(x.shape), None if d is None else d.reshape(x.shape)


def _gelu_grad32(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """g (Phi(x) + x phi(x)) for float32 ``x`` (``_derivative32``), g broadcast to x's
    shape."""
    xf = np.ascontiguousarray(x).reshape(-1)
    gf = np.ascontiguousarray(np.broadcast_to(g, x.shape)).reshape(-1)
    d = np.empty_like(xf)
    if (loops := jit.loops("nn_loops")) is not None:
        loops.gelu_grad(gf, xf, d)
        return d.reshape(x.shape)
    for i0, i1, (a, e, p) in _blocks32(xf):
        xb, db = xf[i0:i1], d[i0:i1]
        np.abs(xb, out=a)
        _tail32(xb, a, e, p)
        _derivative32(p, e, a, xb, db)
        db *= gf[i0:i1]
    return d.reshape(x.shape)


_ERFC_TAIL = 1.5   # erfc by continued fraction from here on (1 - erf below: ~1e-14 off)
_ERFC_TERMS = 80   # enough for ~1e-16 from z = 1.5 on (it converges faster as z grows)


def _exp_half_square(x: np.ndarray) -> np.ndarray:
    """exp(-x^2 / 2) for finite float64 x without the rounding of x^2, which exp turns into a
    relative error of x^2 * 1e-16 (1e-13 at x = -37): x = hi + lo with hi = x rounded to
    float32, so hi^2 is exact and exp(-x^2 / 2) = exp(-hi^2 / 2) exp(-lo (x + hi) / 2)."""
    hi = x.astype(np.float32).astype(np.float64)
    return np.exp(-0.5 * hi * hi) * np.exp(-0.5 * (x - hi) * (x + hi))


def _ndtr64(x: np.ndarray) -> np.ndarray:
    """Phi(x) = 0.5 erfc(-x / sqrt 2), the standard normal CDF, for float64 ``x``.

    0.5 (1 + erf(x / sqrt 2)) cancels for negative x (all digits are gone below x = -8.3, where
    erf is -1 to double precision, and GELU would be 0 or off by 4e-15 where it is ~1e-23);
    there erfc(z), z = -x / sqrt 2 > 1.5, is the continued fraction exp(-z^2) / sqrt(pi) /
    (z + (1/2) / (z + 1 / (z + (3/2) / (z + ...)))), summed from the back. -inf gives 0, NaN
    stays NaN.
    """
    z = x * _INV_SQRT_2
    tail = z < -_ERFC_TAIL
    p = np.empty_like(x)
    head = ~tail
    p[head] = 0.5 * (1.0 + _erf(z[head]))
    if tail.any():
        xt = np.maximum(x[tail], -40.0)  # Phi(-40) underflows to 0: keeps -inf out of the sums
        zt = xt * -_INV_SQRT_2
        f = zt.copy()
        for n in range(_ERFC_TERMS, 0, -1):
            f = zt + (0.5 * n) / f
        p[tail] = _exp_half_square(xt) * (0.5 / math.sqrt(math.pi)) / f
    return p


# -- GELU ----------------------------------------------------------------------------------------

@in_memory_order(0)  # (Note [Result layouts])
@_quiet  # inf and NaN pass through as PyTorch's do (Note [Silent float errors])
def gelu(x: np.ndarray, approximate: str, with_grad: bool = False):
    """GELU(x) = x * Phi(x) (``approximate='none'``) or 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
    x^3))) (``'tanh'``). ``with_grad``: (GELU(x), GELU'(x)), the derivative for
    ``gelu_backward(..., derivative=)`` computed from the same Phi(x) (or tanh) passes, kept
    in the compute dtype (float32 for half inputs)."""
    xf = _up(x)
    if approximate == "tanh":
        t = np.tanh(_SQRT_2_OVER_PI * (xf + _GELU_TANH_A * xf * xf * xf))
        y = 0.5 * xf * (1.0 + t)
        d = _tanh_derivative(xf, t) if with_grad else None
    elif xf.dtype == np.float64:
        p = _ndtr64(xf)
        y = xf * p
        d = p + _x_phi64(xf) if with_grad else None
    else:
        y, d = _gelu32(xf, with_grad)
    y = _fresh(y, x)
    return (y, d) if with_grad else y


def _tanh_derivative(xf: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The tanh form's GELU'(x) from t = tanh(u), u = sqrt(2/pi)(x + a x^3): 0.5 (1 + t) +
    0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 a x^2)."""
    return 0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * _SQRT_2_OVER_PI * (
        1.0 + 3.0 * _GELU_TANH_A * xf * xf)


def _x_phi64(xf: np.ndarray) -> np.ndarray:
    # phi from x clipped to +-40 (it is 0 beyond): x phi is then inf * 0 = NaN at +-inf
    return xf * _exp_half_square(np.clip(xf, -40.0, 40.0)) * _INV_SQRT_2PI


@in_memory_order(0, 1, 3)  # (Note [Result layouts])
@_quiet
def gelu_backward(g: np.ndarray, x: np.ndarray, approximate: str,
                  derivative: np.ndarray | None = None) -> np.ndarray:
    """g * GELU'(x): Phi(x) + x phi(x), or for 'tanh' (u = sqrt(2/pi)(x + a x^3), t = tanh u)
    0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 a x^2). ``derivative``: GELU'(x) as
    ``gelu(x, approximate, with_grad=True)`` returned it, so that only the product is left."""
    xf = _up(x)
    if derivative is not None:
        d = derivative
    elif approximate == "tanh":
        t = np.tanh(_SQRT_2_OVER_PI * (xf + _GELU_TANH_A * xf * xf * xf))
        d = _tanh_derivative(xf, t)
    elif xf.dtype == np.float64:
        d = _ndtr64(xf) + _x_phi64(xf)
    else:
        return _fresh(_gelu_grad32(_up(g), xf), x)
    return _fresh(_up(g) * d, x)


# -- the other activations --------------------------------------------------------------------
# Note [activation routines]
#   Each activation and its gradient is one routine of in-place ufuncs (``out=``) over one to
#   three scratch arrays of the compute dtype, with PyTorch's CPU formulas (so its special
#   values: silu(-inf) = -inf / inf = NaN, ...). A composition of contract calls made a new
#   array per step (SiLU's backward: ~10 arrays of 4 MiB at 1M float32 elements). Selects
#   take no branch per element (``_take_where``, ``_zero_where``) and float32 sigmoids take
#   elementwise_loops' one-pass ufunc where the compiled loops run. Operands arrive as the
#   caller has them (any strides; ``g`` broadcast to x's shape); results are new C-contiguous
#   arrays of x's dtype, float16/bfloat16 computed in float32 and rounded once.

def _scratch(xf: np.ndarray, dtype=None) -> np.ndarray:
    return np.empty(xf.shape, xf.dtype if dtype is None else dtype)


def _mask(ufunc, x: np.ndarray, c: float) -> np.ndarray:
    """``ufunc(x, c)`` as a new bool array (one byte per element: ``_zero_where`` reads its
    bytes as int8)."""
    return ufunc(x, c, out=_scratch(x, np.bool_))


_INT_OF = {4: np.int32, 8: np.int64}


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(_INT_OF[a.dtype.itemsize])


def _take_where(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """where(cond, a, b), ``b`` a scratch array the result may reuse and ``a`` broadcast to
    it: elementwise_loops' compiled select where the loops run, else a blend of the bits
    (b ^ ((a ^ b) & -cond)); np.where branches per element, 20x a pass on an unpredictable
    mask."""
    loops = jit.loops("elementwise_loops")
    if loops is not None and b.dtype in _LOOP_FLOATS:
        return loops.select(cond, a, b)  # (into a new array: in place NumPy copies first)
    bb = _bits(b)
    t = np.bitwise_xor(_bits(np.asarray(a)), bb, out=np.empty_like(bb))
    t &= np.negative(cond.view(np.int8))
    bb ^= t
    return b


def _zero_where(cond: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out = +0.0 where cond, whatever out holds there (NaN too), in place: its bits and'ed
    with cond - 1 (a multiply by the mask would keep NaN * 0; np.copyto with where= branches
    per element)."""
    ob = _bits(out)
    np.bitwise_and(ob, np.subtract(cond.view(np.int8), np.int8(1)), out=ob)
    return out


def _sigmoid_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) into ``out`` (0 at -inf, 1 at +inf): elementwise_loops' one-pass
    float32 sigmoid where the loops run."""
    if x.dtype == np.float32 and (loops := jit.loops("elementwise_loops")) is not None:
        return loops.sigmoid(x, out=out)
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def _tanh_softplus_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """tanh(log1p(exp(x))) into ``out`` (Mish's factor; 1 where exp overflows)."""
    np.exp(x, out=out)
    np.log1p(out, out=out)
    return np.tanh(out, out=out)


def _silu(x):
    t = np.negative(x, out=_scratch(x))
    np.exp(t, out=t)
    t += 1
    return np.divide(x, t, out=t)  # x / (1 + exp(-x))


def _silu_grad(g, x):
    s = _sigmoid_into(x, _scratch(x))
    d = np.subtract(1, s, out=_scratch(x))
    d *= x
    d += 1
    d *= s
    return np.multiply(g, d, out=d)  # g s (1 + x (1 - s))


def _mish(x):
    t = _tanh_softplus_into(x, _scratch(x))
    return np.multiply(x, t, out=t)


def _mish_grad(g, x):
    t = _tanh_softplus_into(x, _scratch(x))
    d = _sigmoid_into(x, _scratch(x))
    d *= x
    u = np.multiply(t, t, out=_scratch(x))
    np.subtract(1, u, out=u)
    d *= u
    d += t
    return np.multiply(g, d, out=d)  # g (t + x sigmoid(x) (1 - t^2))


def _softplus(x, beta, threshold):
    t = np.multiply(x, beta, out=_scratch(x))
    linear = _mask(np.greater, t, threshold)
    np.exp(t, out=t)  # (inf where linear: replaced below)
    np.log1p(t, out=t)
    t /= beta
    return _take_where(linear, x, t)


def _softplus_grad(g, x, beta, threshold):
    z = np.multiply(x, beta, out=_scratch(x))
    linear = _mask(np.greater, z, threshold)
    np.exp(z, out=z)
    d = np.add(z, 1, out=_scratch(x))
    np.divide(z, d, out=z)
    z *= g
    return _take_where(linear, g, z)  # g z / (z + 1), z = exp(beta x); g where linear


def _log_sigmoid(x):
    t = np.abs(x, out=_scratch(x))
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    m = np.minimum(x, 0, out=_scratch(x))
    return np.subtract(m, t, out=t)  # min(x, 0) - log1p(exp(-|x|))


def _log_sigmoid_grad(g, x):
    t = np.exp(x, out=_scratch(x))
    t += 1
    return np.divide(g, t, out=t)  # g sigmoid(-x) = g / (1 + exp(x))


def _hardswish(x):
    t = np.add(x, 3, out=_scratch(x))
    np.clip(t, 0, 6, out=t)  # (NaN stays NaN)
    t *= x
    t /= 6
    return t


def _hardswish_grad(g, x):
    d = np.divide(x, 3, out=_scratch(x))
    d += 0.5
    d *= g
    upper = _mask(np.less, x, 3)
    np.logical_not(upper, out=upper)  # x >= 3, or NaN: g
    return _zero_where(_mask(np.less_equal, x, -3), _take_where(upper, g, d))


def _hardsigmoid(x):
    t = np.add(x, 3, out=_scratch(x))
    np.clip(t, 0, 6, out=t)
    t /= 6
    return t


def _hardsigmoid_grad(g, x):
    d = np.divide(g, 6, out=_scratch(x))
    outside = _mask(np.less, x, 3)
    outside &= x > -3
    np.logical_not(outside, out=outside)  # (NaN: 0)
    return _zero_where(outside, d)


def _hardtanh(x, lo, hi):
    return np.clip(x, lo, hi, out=_scratch(x))


def _hardtanh_grad(g, x, lo, hi):
    d = _scratch(x)
    np.copyto(d, g)
    outside = _mask(np.less, x, hi)
    outside &= x > lo
    np.logical_not(outside, out=outside)  # (NaN: 0)
    return _zero_where(outside, d)


# op -> (forward, gradient, number of parameters), the contract's activation table
ACTIVATIONS = {
    "silu": (_silu, _silu_grad, 0),
    "mish": (_mish, _mish_grad, 0),
    "softplus": (_softplus, _softplus_grad, 2),      # (beta, threshold)
    "log_sigmoid": (_log_sigmoid, _log_sigmoid_grad, 0),
    "hardswish": (_hardswish, _hardswish_grad, 0),
    "hardsigmoid": (_hardsigmoid, _hardsigmoid_grad, 0),
    "hardtanh": (_hardtanh, _hardtanh_grad, 2),      # (min_val, max_val)
}


def _float_operands(op: str, *arrays) -> None:
    for a in arrays:
        if type(a) is not BF16Array and a.dtype.kind != "f":
            raise TypeError(f"{op}: floating point arrays only, got {a.dtype}")


@in_memory_order(1)  # (Note [Result layouts])
@_quiet
def activation(op: str, x: np.ndarray, *params: float) -> np.ndarray:
    """Activation ``op`` of ``x`` (the table ``ACTIVATIONS``; Note [activation routines]);
    ``params``: softplus' (beta, threshold), hardtanh's (min_val, max_val)."""
    fn = activation_entry(ACTIVATIONS, op, params)[0]
    _float_operands(op, x)
    if x.ndim == 0:  # (as one element: NumPy's and the loops' selects give 0-d a scalar)
        return activation(op, x.reshape(1), *params).reshape(())
    return _fresh(fn(_up(x), *params), x)


@in_memory_order(1, 2)  # (Note [Result layouts])
@_quiet
def activation_backward(op: str, g: np.ndarray, x: np.ndarray, *params: float) -> np.ndarray:
    """The gradient of ``activation(op, x, *params)`` for the output gradient ``g`` (broadcast
    to x's shape), in x's dtype."""
    fn = activation_entry(ACTIVATIONS, op, params)[1]
    _float_operands(op + "_backward", g, x)
    if x.ndim == 0:  # (as activation's)
        return activation_backward(op, g.reshape(1), x.reshape(1), *params).reshape(())
    return _fresh(fn(_up(g), _up(x), *params), x)


def _halves_of(a: np.ndarray, dim: int) -> tuple:
    h = a.shape[dim] // 2
    lead = (slice(None),) * dim
    return a[lead + (slice(0, h),)], a[lead + (slice(h, 2 * h),)]


@_quiet
def glu(x: np.ndarray, dim: int) -> np.ndarray:
    """a sigmoid(b), (a, b) the halves of ``x`` along ``dim`` (non-negative; its size even):
    a / (1 + exp(-b)), PyTorch's CPU formula."""
    _float_operands("glu", x)
    a, b = _halves_of(_up(x), dim)
    t = np.negative(b, out=_scratch(b))
    np.exp(t, out=t)
    t += 1
    return _fresh(np.divide(a, t, out=t), x)


@_quiet
def glu_backward(g: np.ndarray, x: np.ndarray, dim: int) -> np.ndarray:
    """The gradient of ``glu(x, dim)`` for ``g`` (glu's output shape), x's shape and dtype:
    da = g s, db = g a s (1 - s), s = sigmoid(b), written into the halves of one array."""
    _float_operands("glu_backward", g, x)
    xf, gf = _up(x), _up(g)
    a, b = _halves_of(xf, dim)
    s = _sigmoid_into(b, _scratch(b))
    t = np.subtract(1, s, out=_scratch(b))
    t *= s
    t *= a
    # (the steps run on contiguous scratch, only the last ones write the strided halves:
    # in-place passes over a strided half took 1.5x as long, 1024 x 2048 float32)
    out = _scratch(xf)
    da, db = _halves_of(out, dim)
    np.multiply(t, gf, out=db)
    np.multiply(s, gf, out=da)
    return _fresh(out, x)


# -- layer norm ----------------------------------------------------------------------------------

def _row_mean(a: np.ndarray) -> np.ndarray:
    """Each row's mean of the 2-D ``a``, as one matrix-vector product (BLAS: 5x faster than
    ``mean(axis=1)`` on the rows of a layer)."""
    return a @ np.full(a.shape[1], 1.0 / max(a.shape[1], 1), dtype=a.dtype)


def _fresh(r: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``_back`` for a result the caller made and no one else holds: itself when it already
    has ``like``'s dtype (no copy)."""
    if not isinstance(r, np.ndarray):  # (NumPy's ufuncs give a scalar for 0-d operands)
        r = np.asarray(r)
    return r if r.dtype == like.dtype and type(like) is not BF16Array else _back(r, like)


_NO_AFFINE = np.empty(0, np.float32)


def _affine(a) -> np.ndarray:
    """A layer norm weight or bias for the compiled loops: float32 and contiguous, or empty
    for None."""
    return _NO_AFFINE if a is None else np.ascontiguousarray(_up(a), dtype=np.float32)


def layer_norm(x: np.ndarray, weight, bias, eps: float):
    """Normalises each row of the 2-D ``x`` (M, N): y = (x - mean) * rstd * weight + bias.

    ``weight``/``bias`` are (N,) arrays or None. Returns (y, mean, rstd): y in x's dtype,
    mean and rstd (M,) in the compute dtype (float32 for half and float32 inputs).
    """
    xf = _up(x)
    if xf.dtype == np.float32 and (loops := jit.loops("nn_loops")) is not None:
        xf = np.ascontiguousarray(xf)
        y, mean, rstd = np.empty_like(xf), np.empty(len(xf), xf.dtype), np.empty_like(xf[:, 0])
        loops.layer_norm(xf, _affine(weight), _affine(bias), eps, y, mean, rstd)
        return _fresh(y, x), mean, rstd
    mean = _row_mean(xf)
    y = xf - mean[:, None]
    var = np.einsum("ij,ij->i", y, y)
    var *= 1.0 / max(xf.shape[1], 1)
    rstd = 1.0 / np.sqrt(var + eps)
    y *= rstd[:, None]
    if weight is not None:
        y *= _up(weight)
    if bias is not None:
        y += _up(bias)
    return _fresh(y, x), mean, np.asarray(rstd, dtype=mean.dtype)


def layer_norm_backward(g: np.ndarray, x: np.ndarray, weight, mean: np.ndarray,
                        rstd: np.ndarray):
    """Gradients of layer_norm for 2-D ``g``/``x`` (M, N), given the forward's mean and rstd.

    With xhat = (x - mean) * rstd and gw = g * weight:
        dx = rstd * (gw - mean_N(gw) - xhat * mean_N(gw * xhat))
        dweight = sum_M(g * xhat),  dbias = sum_M(g)
    Returns (dx, dweight, dbias); the last two are None when ``weight`` is None.
    """
    gf, xf = _up(g), _up(x)
    if xf.dtype == np.float32 and (loops := jit.loops("nn_loops")) is not None:
        xf, gf = np.ascontiguousarray(xf), np.ascontiguousarray(gf, dtype=xf.dtype)
        dx = np.empty_like(xf)
        dw, db = (np.zeros(xf.shape[1] if weight is not None else 0) for _ in "wb")
        loops.layer_norm_backward(gf, xf, _affine(weight), mean, rstd, dx, dw, db)
        if weight is None:
            return _fresh(dx, x), None, None
        return _fresh(dx, x), _back(dw.astype(np.float32), weight), _back(
            db.astype(np.float32), weight)
    n = max(xf.shape[1], 1)
    # in terms of xc = x - mean (xhat = xc rstd), with rstd folded into (M,) row factors, so
    # that xhat is never formed (each (M, N) pass here is ~10-18 us at (1024, 128))
    xc = xf - mean[:, None]
    dw = db = None
    if weight is not None:
        # column sums as BLAS vector-matrix products (einsum's "ij,ij->j" is 2x slower)
        dw = _back(rstd @ np.multiply(gf, xc), weight)
        db = _back(_sum(gf, (0,), False), weight)
    dx = gf * _up(weight) if weight is not None else gf.copy()
    c2 = np.einsum("ij,ij->i", dx, xc)  # rowsum(gw xhat) / rstd
    c2 *= rstd * rstd * (1.0 / n)  # -> mean(gw xhat) rstd
    dx -= _row_mean(dx)[:, None]
    xc *= c2[:, None]
    dx -= xc
    dx *= rstd[:, None]
    return _fresh(dx, x), dw, db


# -- batch norm (training statistics) ------------------------------------------------------------

def _channels(a: np.ndarray) -> np.ndarray:
    """(N, C, *) as a C-contiguous (N, C, L) array (a view when it already is one)."""
    return np.ascontiguousarray(a).reshape(a.shape[0], a.shape[1], math.prod(a.shape[2:]))


# planes (H*W) shorter than this take nn_loops' *_short loops: the per-channel loops' inner
# runs of H*W values are too short to vectorize there (a (64, 64, 4, 4) batch: forward 63 ->
# 30 us, backward 47 -> 33 us; BatchNorm1d's (256, 1024): 4.3 ms -> 125 us forward). From
# 8x8 on the per-channel loops are as fast or faster (x (32, 512, 7, 7): forward 424 against
# 581 us).
_SHORT_PLANE = 32


def batch_norm(x: np.ndarray, weight, bias, eps: float):
    """Normalises each channel (dim 1) of ``x`` (N, C, *) over every other dim (n values
    each): y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps), var the biased
    variance; ``weight``/``bias`` (C,) or None. Returns (y, mean, var): y in x's dtype, mean
    and var (C,) in the compute dtype."""
    xf = _up(x)
    x3 = _channels(xf)
    c = x3.shape[1]
    if xf.dtype == np.float32 and (loops := jit.loops("nn_loops")) is not None:
        y, mean, var = np.empty_like(x3), np.empty(c, xf.dtype), np.empty(c, xf.dtype)
        loop = loops.batch_norm_short if 0 < x3.shape[2] < _SHORT_PLANE else loops.batch_norm
        loop(x3, _affine(weight), _affine(bias), eps, y, mean, var)
        return _fresh(y.reshape(x.shape), x), mean, var
    inv_n = 1.0 / max(x3.shape[0] * x3.shape[2], 1)
    mean = _sum(x3, (0, 2), False) * inv_n
    y = x3 - mean[:, None]
    var = _sum(y * y, (0, 2), False) * inv_n
    scale = 1.0 / np.sqrt(var + eps)
    if weight is not None:
        scale = scale * _up(weight)
    y *= scale[:, None]
    if bias is not None:
        y += _up(bias)[:, None]
    return _fresh(y.reshape(x.shape), x), mean, var


def batch_norm_backward(g: np.ndarray, x: np.ndarray, weight, mean: np.ndarray,
                        var: np.ndarray, eps: float):
    """Gradients of batch_norm given its mean and var: with xhat = (x - mean) rstd and per
    channel S = sum(g xhat), B = sum(g),
        dx = rstd weight (g - B / n - xhat S / n),  dweight = S,  dbias = B
    Returns (dx, dweight, dbias); the last two are None when ``weight`` is None."""
    gf, xf = _up(g), _up(x)
    x3, g3 = _channels(xf), _channels(gf.astype(xf.dtype, copy=False))
    c = x3.shape[1]
    if xf.dtype == np.float32 and (loops := jit.loops("nn_loops")) is not None:
        dx, s, b = np.empty_like(x3), np.empty(c), np.empty(c)
        loop = loops.batch_norm_backward_short if 0 < x3.shape[2] < _SHORT_PLANE \
            else loops.batch_norm_backward
        loop(g3, x3, _affine(weight), mean, var, eps, dx, s, b)
        s, b = s.astype(xf.dtype), b.astype(xf.dtype)
    else:
        inv_n = 1.0 / max(x3.shape[0] * x3.shape[2], 1)
        rstd = 1.0 / np.sqrt(var + eps)
        xhat = (x3 - mean[:, None]) * rstd[:, None]
        s, b = _sum(g3 * xhat, (0, 2), False), _sum(g3, (0, 2), False)
        scale = rstd if weight is None else rstd * _up(weight)
        dx = g3 - (b * inv_n)[:, None]
        dx -= xhat * (s * inv_n)[:, None]
        dx *= scale[:, None]
    dx = _fresh(dx.reshape(x.shape), x)
    if weight is None:
        return dx, None, None
    return dx, _back(s, weight), _back(b, weight)


# -- cross-entropy -------------------------------------------------------------------------------

def _targets(target: np.ndarray, n_classes: int, ignore_index: int):
    valid = target != ignore_index
    bad = valid & ((target < 0) | (target >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(target[bad][0])} is out of bounds (the input has "
                         f"{n_classes} classes).")
    return valid, np.where(valid, target, 0)


_LOOP_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _ce_loops(x: np.ndarray, target: np.ndarray):
    """nn_loops where cross-entropy's compiled loops take these arrays (float32/float64 C-
    contiguous logits of at least one class, integer targets), else None."""
    if (x.dtype in _LOOP_FLOATS and type(x) is np.ndarray and x.ndim == 2 and x.shape[1]
            and x.flags.c_contiguous and target.dtype.kind in "iu" and target.ndim == 1
            and target.shape[0] == x.shape[0]):
        return jit.loops("nn_loops")
    return None


def _check_targets(loop, target: np.ndarray, n_classes: int, ignore_index: int) -> None:
    i = loop.cross_entropy_bad_target(target, ignore_index, n_classes)
    if i >= 0:
        raise IndexError(f"Target {int(target[i])} is out of bounds (the input has "
                         f"{n_classes} classes).")


def cross_entropy(logits: np.ndarray, target: np.ndarray, ignore_index: int,
                  label_smoothing: float):
    """Per-row cross-entropy of 2-D ``logits`` (N, C) against class indices ``target`` (N,).

    loss_i = (1 - eps) (lse_i - x_i[t_i]) + eps (lse_i - mean_c x_ic), lse_i = log sum_c
    exp(x_ic); 0 where t_i == ignore_index. Returns (loss (N,) in logits' dtype, lse (N,) in the
    compute dtype).
    """
    x = _up(logits)
    n, c = x.shape
    if (loop := _ce_loops(x, target)) is not None:  # compiled loops over the rows (nn_loops)
        _check_targets(loop, target, c, ignore_index)
        loss, lse = np.empty(n, x.dtype), np.empty(n, x.dtype)
        loop.cross_entropy(x, target, ignore_index, float(label_smoothing), loss, lse)
        return _fresh(loss, logits), lse
    valid, t = _targets(target, c, ignore_index)
    m = x.max(axis=1, keepdims=True) if c else np.zeros((n, 1), x.dtype)
    m = np.where(np.isfinite(m), m, 0)
    lse = (m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)))[:, 0]
    loss = lse - x[np.arange(n), t]
    if label_smoothing:
        loss = (1.0 - label_smoothing) * loss + label_smoothing * (lse - x.mean(axis=1))
    loss = np.where(valid, loss, 0)
    return _back(loss, logits), lse


def cross_entropy_backward(g: np.ndarray, logits: np.ndarray, target: np.ndarray,
                           lse: np.ndarray, ignore_index: int, label_smoothing: float):
    """d(sum_i g_i loss_i)/d logits: g_i (softmax(x_i) - (1 - eps) onehot(t_i) - eps / C), 0 on
    ignored rows."""
    x = _up(logits)
    n, c = x.shape
    gf = _up(g)
    if (loop := _ce_loops(x, target)) is not None and lse.dtype == x.dtype \
            and gf.dtype == x.dtype and gf.ndim <= 1:
        _check_targets(loop, target, c, ignore_index)
        d = np.empty((n, c), x.dtype)
        gn = gf if gf.shape == (n,) else np.broadcast_to(gf, (n,))
        loop.cross_entropy_backward(gn, x, target, lse, ignore_index, float(label_smoothing), d)
        return _fresh(d, logits)
    valid, t = _targets(target, c, ignore_index)
    d = np.exp(x - lse[:, None])
    if label_smoothing:
        d -= label_smoothing / c
    d[np.arange(n), t] -= 1.0 - label_smoothing
    d *= np.where(valid, _up(g), 0)[:, None]
    return _back(d, logits)


def mean_over_targets(loss: np.ndarray, target: np.ndarray, ignore_index: int):
    """The mean of the per-row losses ``loss`` (N,) over the rows whose target is not
    ``ignore_index`` (an ignored row's loss is 0; none left: 0 / 0, NaN, as PyTorch's), and
    their count, both 0-d in loss's dtype: the sum, the count converted, their quotient."""
    dt = D.bfloat16 if type(loss) is BF16Array else D.from_numpy_dtype(loss.dtype)
    count = astype(_sum(ne(target, ignore_index), (0,), False), dt)  # (bools sum to int64)
    return div(_sum(loss, (0,), False), count), count


# -- embedding -----------------------------------------------------------------------------------

def embedding(weight: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Rows of ``weight`` (V, D) picked by the integer array ``indices``: shape indices.shape +
    (D,)."""
    v = weight.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= v):
        bad = indices[(indices < 0) | (indices >= v)][0]
        raise IndexError(f"embedding: index {int(bad)} is out of range for a table of {v} rows "
                         f"(index out of range in self)")
    out = np.ascontiguousarray(weight.view(np.ndarray)[indices])
    return out.view(BF16Array) if type(weight) is BF16Array else out


def embedding_backward(g: np.ndarray, indices: np.ndarray, num_weights: int, padding_idx):
    """The gradient of embedding w.r.t. the table: the rows of ``g`` (indices.shape + (D,))
    summed into a (num_weights, D) array at ``indices``; the ``padding_idx`` row (if not None)
    gets none."""
    d = g.shape[-1]
    gf = _up(g).reshape(-1, d)
    out = np.zeros((num_weights, d), dtype=gf.dtype)
    idx = indices.reshape(-1)
    loops = jit.loops("nn_loops") if gf.dtype in _LOOP_FLOATS else None
    if loops is not None and idx.size:
        # one scatter-add pass: the GPT step's (1024, 128) rows into 96, 13 us against the
        # grouped sums' 166 (their argsort and gather dominate)
        if idx.min() < 0 or idx.max() >= num_weights:
            raise IndexError(f"embedding_backward: an index is out of range for a table of "
                             f"{num_weights} rows")
        loops.embedding_backward(np.ascontiguousarray(gf), idx, out)
    elif idx.size:
        # the rows grouped by index and each group summed (np.add.reduceat): ~7x faster than
        # np.add.at's element-by-element scatter
        order = np.argsort(idx, kind="stable")
        s = idx[order]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        out[s[starts]] = np.add.reduceat(gf[order], starts, axis=0)
    if padding_idx is not None:
        out[padding_idx] = 0
    return _back(out, g)
