"""Random numbers on the CPU: the kernel contract's ``rand``, ``randn``, ``randint``,
``dropout_mask``, and ``uniform``, ``normal``, ``integers``, ``bernoulli``, ``randperm``,
``exponential``, ``multinomial``, drawn as PyTorch's CPU generator draws them, so that a seed
gives PyTorch's numbers bit for bit.

Note [PyTorch's CPU streams]
  PyTorch's CPU generator is a 32-bit Mersenne Twister (mt19937) seeded by the reference
  ``init_genrand(seed mod 2^32)``; ``CPUStream`` is NumPy's MT19937 put in that state, and a
  NumPy ``Generator`` over it (whose ``poisson``, ``binomial`` and ``standard_gamma`` are
  ATen's samplers, below; its other NumPy methods are not PyTorch's). A 32-bit draw is
  one twister output; a 64-bit draw is two, the first the high word. From those, as ATen's
  CPU kernels (DistributionsHelper.h, TransformationHelper.h, cpu/DistributionTemplates.h):

  - a kernel fills a tensor in memory order (TensorIterator's), which the callers arrange
    for a non-contiguous one (autograd/ops/random.py's ``_drawn``);
  - uniform on [from, to): float64 from ``(draw64 mod 2^53) 2^-53``; float32, float16 and
    bfloat16 from ``(draw32 mod 2^24) 2^-24``, then ``u (to - from) + from`` as a fused
    multiply-add (in float32 for all but float64), a
    half-precision value that rounds up to ``to`` becoming ``from``;
  - integers in [low, high): ``low + draw mod (high - low)``, the draw 64-bit when the range
    is 2^28 or more, else 32-bit (``random_()`` without bounds: 64-bit for 8-byte dtypes),
    a floating dtype's bounds first narrowed where they round outside (``float_bounds``);
    ``randperm`` a Fisher-Yates pass swapping ``i`` with ``i + draw32 mod (n - i)`` (from
    n = 2^32 / 20: the inside-out pass of 64-bit draws, ``_randperm_wide``);
  - Bernoulli(p): ``uniform < p``, in float64 for a number p (and dropout, ``bernoulli_(1 -
    p)``), in the probabilities' dtype for a tensor of them; exponential ``-1/lambda
    log1p(-u)`` in float64; ``multinomial`` as ``multinomial`` below says;
  - normal: under 16 elements (or into a non-contiguous tensor), Box-Muller in float64 per
    pair of 53-bit uniforms, returning ``r cos`` and keeping ``r sin`` for the stream's next
    scalar normal (PyTorch's ``next_double_normal_sample``), ``z std + mean`` fused; 16 or
    more, uniforms for all, then every block of 16 maps
    its first 8 to radii and last 8 to angles (``r cos`` then ``r sin``), a partial last block
    redrawn as 16 new uniforms over the last 16 outputs. float32 blocks use the AVX2
    polynomials PyTorch's vectorized kernel uses (Cephes ``log``/``sincos``, reproduced with
    its fused multiply-adds below); float64 blocks the C library's log, NumPy's cos and sin,
    and ATen's fused ``r cos std + mean`` as an error-free product and sum (``_fma64``);
  - cauchy, log-normal, geometric: one float64 draw an element (log-normal: the scalar
    Box-Muller whatever the size), ATen's fused multiply-adds where its kernel has them;
    poisson, binomial, gamma, Dirichlet: ATen's rejection samplers, element by element.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .bf16 import BF16Array, rounded

__all__ = ["CPUStream", "bernoulli", "binomial", "cauchy", "dirichlet", "dropout_mask",
           "exponential", "geometric", "integers", "log_normal", "multinomial", "normal",
           "poisson", "rand", "randint", "randn", "randperm", "standard_gamma", "uniform"]

_F32, _F64 = np.float32, np.float64
_U64 = np.uint64
_MASK24, _MASK53 = _U64((1 << 24) - 1), _U64((1 << 53) - 1)
_WIDE_RANGE = 1 << 28  # integer ranges this wide or wider take 64-bit draws (ATen's rule)
_BLOCK = 16  # the vectorized normal's block: 8 radii, 8 angles


@functools.lru_cache(maxsize=16)
def _seeded_key(seed: int) -> np.ndarray:
    """The twister's 624 words after the reference ``init_genrand(seed)`` (NumPy seeds
    MT19937 otherwise): a sequential recurrence, so kept for the seeds used again (every
    ``Generator()`` starts from PyTorch's default seed; tests and epochs reseed alike). Read
    only: MT19937's state setter copies it."""
    key = np.empty(624, np.uint32)
    x = key[0] = seed
    for i in range(1, 624):
        x = key[i] = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
    key.flags.writeable = False
    return key


class CPUStream(np.random.Generator):
    """PyTorch's CPU random stream (Note [PyTorch's CPU streams]): a NumPy ``Generator`` over
    MT19937 in the state ``init_genrand(seed)`` leaves, plus the cached second normal of the
    scalar Box-Muller (``next_normal``, None when there is none)."""

    def __init__(self, seed: int):
        self._start(_seeded_key(seed & 0xFFFFFFFF), 624, None)

    @classmethod
    def from_state(cls, key: np.ndarray, pos: int, next_normal) -> CPUStream:
        """A stream at twister state (``key``, ``pos``) with ``next_normal`` cached."""
        s = cls.__new__(cls)
        s._start(np.asarray(key, np.uint32), int(pos), next_normal)
        return s

    def _start(self, key: np.ndarray, pos: int, next_normal) -> None:
        bits = np.random.MT19937(0)
        bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        np.random.Generator.__init__(self, bits)
        self.next_normal = next_normal

    def __reduce__(self):  # (copies keep the class and the cached normal)
        st = self.bit_generator.state["state"]
        return CPUStream.from_state, (st["key"].copy(), st["pos"], self.next_normal)

    # NumPy's names for the samplers, drawing ATen's numbers (module functions below), so
    # that callers of the NumPy interface get PyTorch's samples from the stream
    def poisson(self, lam=1.0, size=None) -> np.ndarray:
        """ATen's Poisson counts (int64) for the rates ``lam`` (``poisson`` below)."""
        lam = np.asarray(lam, _F64)
        return poisson(lam if size is None else np.broadcast_to(lam, size), self)

    def binomial(self, n, p, size=None) -> np.ndarray:
        """ATen's binomial draws (int64) for ``n`` trials of probability ``p``, computed as
        for float64 tensors unless ``p`` is a float32 array (``binomial`` below)."""
        p = np.asarray(p)
        p = p if p.dtype == _F32 else p.astype(_F64)
        n = np.asarray(n, p.dtype)
        if size is not None:
            n, p = np.broadcast_to(n, size), np.broadcast_to(p, size)
        return binomial(n, p, self).astype(np.int64)

    def standard_gamma(self, shape=1.0, size=None, dtype=np.float64, out=None) -> np.ndarray:
        """ATen's Gamma(shape, 1) draws as for tensors of ``dtype`` (float64 or float32)
        (``standard_gamma`` below; NumPy's signature, ``out`` unsupported)."""
        if out is not None:
            raise NotImplementedError("CPUStream.standard_gamma: out= is not supported")
        a = np.asarray(shape, np.dtype(dtype))
        return standard_gamma(a if size is None else np.broadcast_to(a, size), self)

    def raw32(self, n: int) -> np.ndarray:
        """``n`` 32-bit draws (as uint64)."""
        return self.bit_generator.random_raw(n)

    def raw64(self, n: int) -> np.ndarray:
        """``n`` 64-bit draws: two twister outputs each, the first the high word."""
        r = self.bit_generator.random_raw(2 * n)
        return (r[0::2] << _U64(32)) | r[1::2]


def host_array(values, dtype):
    # kernels.host_array, which this package cannot import while kernels/__init__ loads it
    return rounded(values) if dtype.name == "bfloat16" else np.require(values, dtype=dtype.np,
                                                                        requirements="C")


def _uniform01(gen: CPUStream, n: int, double: bool) -> np.ndarray:
    if double:
        return (gen.raw64(n) & _MASK53).astype(_F64) * 2.0 ** -53
    return (gen.raw32(n) & _MASK24).astype(_F32) * _F32(2.0 ** -24)


def rand(shape, dtype, device, gen: CPUStream):
    """Uniform numbers in [0, 1) in ``dtype`` (the contract's ``rand``)."""
    return uniform(shape, dtype, gen)


def uniform(shape, dtype, gen: CPUStream, low: float = 0.0, high: float = 1.0):
    """Uniform numbers in [low, high) in ``dtype`` (``rand``, ``uniform_``)."""
    shape = tuple(shape)
    double = dtype.name == "float64"
    u = _uniform01(gen, math.prod(shape), double)
    if (low, high) != (0.0, 1.0):
        if double:  # (fused multiply-adds, as ATen's compiled kernels)
            u = _fma64(u, high - low, low)
        else:
            u = _fma(u, _F32(high) - _F32(low), _F32(low))
    out = host_array(u.reshape(shape), dtype)
    if dtype.name in ("float16", "bfloat16"):  # (rounded up to ``high``: ``low``, as ATen)
        values = _as_f32(out)
        hit = values >= _as_f32(host_array(np.array([high], _F32), dtype))[0]
        if hit.any():
            out = host_array(np.where(hit, _F32(low), values), dtype)
    return out


def _as_f32(a) -> np.ndarray:
    return (a.view(np.ndarray) if type(a) is BF16Array else a).astype(_F32)


# -- normal --------------------------------------------------------------------------------

def _fma(a, b, c):
    # float32 a * b + c rounded once, as the AVX2 kernel's fused multiply-adds (the float64
    # product of two float32 values is exact)
    return (np.asarray(a, _F64) * np.asarray(b, _F64) + np.asarray(c, _F64)).astype(_F32)


_LOG_P = (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
          1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
          3.3333331174E-1)


def _log_ps(x: np.ndarray) -> np.ndarray:
    """Cephes' float32 log as PyTorch's ``log256_ps`` computes it (x > 0)."""
    bits = np.maximum(x, np.array(0x00800000, np.int32).view(_F32)).view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    x = ((bits & ~0x7F800000) | np.array(0.5, _F32).view(np.int32)).view(_F32)
    small = x < _F32(0.707106781186547524)
    tmp = np.where(small, x, _F32(0))
    x = x - _F32(1)
    e = e - np.where(small, _F32(1), _F32(0))
    x = x + tmp
    z = x * x
    y = np.full_like(x, _F32(_LOG_P[0]))
    for c in _LOG_P[1:]:
        y = _fma(y, x, _F32(c))
    y = _fma(y * x, z, e * _F32(-2.12194440e-4))
    y = _fma(-z, _F32(0.5), y)
    return _fma(e, _F32(0.693359375), x + y)


def _sincos_ps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cephes' float32 sin and cos as PyTorch's ``sincos256_ps`` computes them (x >= 0)."""
    j = ((x * _F32(1.27323954473516)).astype(np.int32) + 1) & ~1
    y = j.astype(_F32)
    sin_neg, poly, cos_neg = (j & 4) != 0, (j & 2) == 0, (~(j - 2) & 4) != 0
    for dp in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = _fma(y, _F32(dp), x)
    z = x * x
    yc = _fma(_fma(_F32(2.443315711809948E-005), z, _F32(-1.388731625493765E-003)), z,
              _F32(4.166664568298827E-002))
    yc = _fma(yc * z, z, -(z * _F32(0.5))) + _F32(1)
    ys = _fma(_fma(_F32(-1.9515295891E-4), z, _F32(8.3321608736E-3)), z,
              _F32(-1.6666654611E-1))
    ys = _fma(ys * z, x, x)
    s, c = np.where(poly, ys, yc), np.where(poly, yc, ys)
    return np.where(sin_neg, -s, s), np.where(cos_neg, -c, c)


def _fma64(a: np.ndarray, b: float, c: float) -> np.ndarray:
    """a b + c in float64 with one rounding (nearly always: the exact product a b = p + e by
    Dekker's splitting, then p + c + e summed with the error of p + c kept), as ATen's fused
    multiply-adds (``r cos std + mean``, ``u (to - from) + from``). ``a`` and ``c`` may be
    arrays that broadcast together; an exact zero has IEEE's sign (-0.0 only from a zero
    product and a -0.0 ``c``, as ``linspace`` to -0.0 ends)."""
    if b == 1.0 and np.ndim(c) == 0 and c == 0.0:
        return a
    if not math.isfinite(b * 134217729.0) and math.isfinite(b):
        # (|b| > ~1e300: the splitting below overflows; scaled down and back, exactly)
        return _fma64(a, b * 2.0 ** -64, np.multiply(c, 2.0 ** -64)) * 2.0 ** 64
    p = a * b
    split = 134217729.0  # 2^27 + 1: halves of 26 bits, whose products are exact
    ah = a * split
    ah = ah - (ah - a)
    bh = b * split
    bh = bh - (bh - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    z = s - p
    t = (p - (s - z)) + (c - z)  # p + c = s + t exactly
    r = s + (t + e)
    if r.ndim and not r.all():  # (t + e is +0.0 at an exact zero: set its sign, there only)
        at = np.nonzero(r == 0)
        pz, cz = (np.broadcast_to(v, r.shape)[at] for v in (p, c))
        r[at] = np.where(pz == 0, pz + cz, 0.0)
    return r


def _normal_blocks(u: np.ndarray, mean: float, std: float, double: bool) -> np.ndarray:
    """Box-Muller over blocks of 16 uniforms (8 radii, then 8 angles)."""
    c = u.reshape(-1, _BLOCK)
    if double:
        # (the C library's log, as ATen's: NumPy's vectorized one differs in the last bit for
        # about 0.3% of arguments; its cos and sin agree with it)
        lg = np.fromiter(map(math.log, (1.0 - c[:, :8]).ravel().tolist()), _F64, c.shape[0] * 8)
        r = np.sqrt(-2.0 * lg.reshape(-1, 8))
        t = (2.0 * math.pi) * c[:, 8:]
        return np.concatenate([_fma64(r * np.cos(t), std, mean),
                               _fma64(r * np.sin(t), std, mean)], 1)
    r = np.sqrt(_F32(-2) * _log_ps(_F32(1) - c[:, :8]))
    s, co = _sincos_ps(_F32(2 * math.pi) * c[:, 8:])
    m, sd = _F32(mean), _F32(std)
    return np.concatenate([_fma(r * co, sd, m), _fma(r * s, sd, m)], 1)


def _scalar_normals(gen: CPUStream, n: int, mean: float, std: float) -> np.ndarray:
    out = np.empty(n)
    for i in range(n):
        z = gen.next_normal
        if z is None:
            u1, u2 = _uniform01(gen, 2, True).tolist()
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            gen.next_normal, z = r * math.sin(theta), r * math.cos(theta)
        else:
            gen.next_normal = None
        out[i] = z
    # (``z std + mean`` fused, as ATen's compiled ``normal_distribution``)
    return _fma64(out, float(std), float(mean))


def randn(shape, dtype, device, gen: CPUStream):
    """Standard normal numbers in ``dtype`` (the contract's ``randn``)."""
    return normal(shape, dtype, gen)


def normal(shape, dtype, gen: CPUStream, mean: float = 0.0, std: float = 1.0,
           serial: bool = False):
    """Normal numbers N(mean, std^2) in ``dtype`` (``randn``, ``normal_``); ``serial``: by
    the scalar Box-Muller whatever the size, as ATen fills a non-contiguous tensor."""
    shape = tuple(shape)
    n = math.prod(shape)
    if n < _BLOCK or serial:
        return _cast64(_scalar_normals(gen, n, mean, std).reshape(shape), dtype)
    double = dtype.name == "float64"
    whole = n - n % _BLOCK
    # half types draw uniforms for the whole blocks only; float32/64 for every element
    u = _uniform01(gen, whole if dtype.name in ("float16", "bfloat16") else n, double)
    out = _normal_blocks(u[:whole], mean, std, double).reshape(-1)
    if n % _BLOCK:  # the partial block: 16 new uniforms for the last 16 outputs
        out = np.concatenate([out[:n - _BLOCK],
                              _normal_blocks(_uniform01(gen, _BLOCK, double), mean, std,
                                             double).reshape(-1)])
    return host_array(out.reshape(shape), dtype)


# -- integers ------------------------------------------------------------------------------

def _ints(gen: CPUStream, low: int, high: int, n: int, wide: bool | None) -> np.ndarray:
    span = high - low
    if wide is None:
        wide = span >= _WIDE_RANGE
    draws = gen.raw64(n) if wide else gen.raw32(n)
    return (draws % _U64(span)).astype(np.int64) + np.int64(low)  # (wraps as ATen's does)


def randint(low, high, shape, dtype, device, gen: CPUStream):
    """Integers uniform in [low, high), stored as ``dtype`` (the contract's ``randint``)."""
    return integers(low, high, shape, dtype, gen)


def integers(low, high, shape, dtype, gen: CPUStream, wide: bool | None = None):
    """Integers uniform in [low, high), stored as ``dtype``; ``wide`` forces 64-bit (True) or
    32-bit (False) draws, as ATen's ``random_()`` without bounds picks them by the dtype's
    size, where bounded draws go by the range. A floating ``dtype`` first narrows the bounds
    as ``float_bounds`` says."""
    shape = tuple(shape)
    n = math.prod(shape)
    low, high = int(low), int(high)
    if dtype.is_floating_point:
        low, high = float_bounds(low, high, dtype)
    return host_array(_ints(gen, low, high, n, wide).reshape(shape), dtype)


def float_bounds(low: int, high: int, dtype) -> tuple[int, int]:
    """ATen's ``update_from``/``update_to`` for integer draws into a floating ``dtype``: a
    bound whose neighbour inside [low, high) rounds outside the range in ``dtype`` (``high -
    1`` rounding up to ``high``) moves inwards by the dtype's spacing there, so that no drawn
    integer rounds to a value outside the range (``random_(0, 2**25)`` of float32 draws
    modulo 2^25 - 2)."""
    digits = {"float16": 11, "bfloat16": 8, "float32": 24}.get(dtype.name, 53)

    def cast(v: int) -> float:  # v as ATen's static_cast<scalar_t>(int64_t): through float
        if digits == 53:
            return float(v)
        with np.errstate(over="ignore"):
            return float(_as_f32(host_array(np.array([v], np.int64).astype(_F32), dtype))[0])

    # (an infinite bound is out of the dtype's range: the caller's error)
    below = cast(low + 1)
    if math.isfinite(below) and below < low:
        low = int(below) + (1 << ((abs(low + 1).bit_length() - 1) - digits + 1))
    above = cast(high - 1)
    if math.isfinite(above) and above >= high:
        high = int(above) - (1 << ((abs(high - 1).bit_length() - 1) - digits + 1))
    return low, high


def randperm(n: int, gen: CPUStream) -> np.ndarray:
    """A permutation of 0 .. n-1 (int64): PyTorch's Fisher-Yates pass."""
    if n >= _PERM_WIDE:
        return _randperm_wide(n, gen)
    perm = list(range(n))
    if n > 1:
        steps = (gen.raw32(n - 1) % np.arange(n, 1, -1, dtype=_U64)).tolist()
        for i, z in enumerate(steps):
            j = i + z
            perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, dtype=np.int64)


_PERM_WIDE = 0xFFFFFFFF // 20  # ATen's switch to 64-bit draws (UINT32_MAX / 20)


def _randperm_wide(n: int, gen: CPUStream) -> np.ndarray:
    """ATen's permutation for ``n`` of 2^32 / 20 or more: the inside-out Fisher-Yates (element
    ``i`` placed at ``z = draw64 mod (i + 1)``, the one there moved to ``i``)."""
    perm = np.empty(n, np.int64)
    for start in range(0, n, 1 << 20):  # (draws in chunks: 16 bytes of raw words a draw)
        stop = min(n, start + (1 << 20))
        bounds = np.arange(start + 1, stop + 1, dtype=_U64)
        for i, z in enumerate((gen.raw64(stop - start) % bounds).tolist(), start):
            perm[i] = perm[z]
            perm[z] = i
    return perm


# -- Bernoulli -----------------------------------------------------------------------------

def bernoulli(prob, shape, dtype, device, gen: CPUStream):
    """0/1 in ``dtype``: 1 where a uniform draw is below ``prob`` (a number: float64 draws;
    an array of probabilities: draws in its dtype, float32 for the half types)."""
    shape = tuple(shape)
    n = math.prod(shape)
    if isinstance(prob, np.ndarray):
        double = prob.dtype == _F64
        u = _uniform01(gen, n, double).reshape(shape)
        keep = u < np.broadcast_to(prob.astype(_F64 if double else _F32), shape)
    else:
        keep = _uniform01(gen, n, True).reshape(shape) < prob
    return host_array(keep, dtype)


def dropout_mask(shape, p, dtype, device, gen: CPUStream):
    """The bool keep mask of dropout: PyTorch's ``bernoulli_(1 - p)``, float64 draws."""
    shape = tuple(shape)
    return np.asarray(_uniform01(gen, math.prod(shape), True).reshape(shape) < 1.0 - p)


def rrelu_slopes(nonpositive: np.ndarray, lower: float, upper: float, dtype,
                 gen: CPUStream) -> np.ndarray:
    """RReLU's training slopes as ATen's CPU kernel draws them: a float64 U(lower, upper) for
    each non-positive input in row-major order, cast to ``dtype``; 1 elsewhere. The bounds
    are first rounded to the computation type (float below float64: 1/3 becomes
    0.3333333433)."""
    if dtype.name != "float64":
        lower, upper = float(_F32(lower)), float(_F32(upper))
    out = np.ones(nonpositive.shape, _F64)
    out[nonpositive] = _uniform01(gen, int(np.count_nonzero(nonpositive)), True) * \
        (upper - lower) + lower
    return _cast64(out, dtype)


# -- exponential, multinomial --------------------------------------------------------------

def _exponential64(gen: CPUStream, n: int, lambd: float) -> np.ndarray:
    # ATen's ``-1/lambd log1p(-u)`` in float64, the C library's log1p, 53-bit uniforms
    scale = -1.0 / lambd
    return np.fromiter((scale * math.log1p(-v) for v in _uniform01(gen, n, True).tolist()),
                       _F64, n)


def exponential(shape, dtype, gen: CPUStream, lambd: float = 1.0):
    """Exponential numbers of rate ``lambd`` in ``dtype`` (``exponential_``)."""
    shape = tuple(shape)
    return _cast64(_exponential64(gen, math.prod(shape), lambd).reshape(shape), dtype)


def multinomial(weights: np.ndarray, num_samples: int, replacement: bool,
                gen: CPUStream) -> np.ndarray:
    """``num_samples`` category indices per row of the (rows, categories) ``weights`` (their
    own float dtype), int64, drawn as ATen's CPU kernel draws them: without replacement or
    for one sample, the exponential race ``argmax``/``topk`` of ``w / q`` (q ~ Exp(1) in w's
    dtype, one per weight, row-major); with replacement, per row a float cumulative sum
    normalized by the row's total (the last bucket set to 1), and for each sample a 53-bit
    uniform located by binary search (the first bucket at or above it)."""
    rows, n_cat = weights.shape
    dt = weights.dtype.type
    if not replacement or num_samples == 1:
        q = _exponential64(gen, weights.size, 1.0).reshape(weights.shape).astype(dt)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = weights / q
        if num_samples == 1:
            return np.argmax(keys, axis=1).astype(np.int64)[:, None]
        return np.argsort(-keys, axis=1, kind="stable")[:, :num_samples].astype(np.int64)
    out = np.empty((rows, num_samples), np.int64)
    for i in range(rows):
        cum = np.cumsum(weights[i], dtype=dt)
        total = cum[-1]
        if total > 0:
            cum = cum / total
        cum[-1] = 1
        out[i] = np.searchsorted(cum, _uniform01(gen, num_samples, True), side="left")
    return out


# -- cauchy, log-normal, geometric ---------------------------------------------------------
# ATen's serial kernels: one float64 draw per element through the C library's functions (the
# math module's are the same ones), then cast to the tensor's dtype.

def _cast64(values: np.ndarray, dtype):
    """float64 ``values`` as ATen's ``static_cast<scalar_t>(double)``: the half types through
    float (their conversions take a float), so rounded twice."""
    if dtype.name in ("float16", "bfloat16"):
        values = values.astype(_F32)
    return host_array(values, dtype)


def _log0(v: float) -> float:
    return math.log(v) if v > 0.0 else -math.inf  # (a zero draw: C's log(0), not an error)


def cauchy(shape, dtype, gen: CPUStream, median: float = 0.0, sigma: float = 1.0):
    """Cauchy numbers ``median + sigma tan(pi (u - 1/2))`` in ``dtype`` (``cauchy_``)."""
    shape = tuple(shape)
    n = math.prod(shape)
    tan, pi = math.tan, math.pi
    t = np.fromiter((tan(pi * (u - 0.5)) for u in _uniform01(gen, n, True).tolist()), _F64, n)
    # (``median + sigma t`` fused, as that kernel is compiled)
    return _cast64(_fma64(t, float(sigma), float(median)).reshape(shape), dtype)


def log_normal(shape, dtype, gen: CPUStream, mean: float = 1.0, std: float = 2.0):
    """``exp`` of N(mean, std^2) numbers in ``dtype`` (``log_normal_``): ATen draws them one
    at a time by the scalar Box-Muller whatever the size (a pair per two elements, the second
    cached), not by the blocks of ``normal``."""
    shape = tuple(shape)
    n = math.prod(shape)
    z = _scalar_normals(gen, n, mean, std).tolist()
    return _cast64(np.fromiter(map(math.exp, z), _F64, n).reshape(shape), dtype)


def geometric(shape, dtype, gen: CPUStream, p: float):
    """Geometric numbers ``ceil(log(u) / log1p(-p))`` (trials to the first success) in
    ``dtype`` (``geometric_``)."""
    shape = tuple(shape)
    n = math.prod(shape)
    lp = math.log1p(-p)
    v = np.fromiter((_log0(u) / lp for u in _uniform01(gen, n, True).tolist()), _F64, n)
    return _cast64(np.ceil(v).reshape(shape), dtype)


# -- poisson, binomial, gamma, Dirichlet ---------------------------------------------------
# ATen's rejection samplers (native/Distributions.cpp and Distributions.h), element by element
# in row-major order: each consumes as many draws as its loop takes, so element i's draws
# start where element i-1's ended, and that chain cannot be vectorized. Each is a Python loop
# over precomputed per-element constants (about 1-3 us an element).

def _libm():
    # lgamma and log1pf from the C library ATen calls (Python's math.lgamma is its own)
    import ctypes
    import ctypes.util
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        lg, l1f = lib.lgamma, lib.log1pf
    except (OSError, AttributeError):
        return math.lgamma, lambda x: float(_F32(math.log1p(x)))
    lg.restype, lg.argtypes = ctypes.c_double, [ctypes.c_double]
    l1f.restype, l1f.argtypes = ctypes.c_float, [ctypes.c_float]
    return lg, l1f


_lgamma, _log1pf = _libm()


class _Feed:
    """53-bit uniforms taken one at a time, drawn in chunks; ``close`` rewinds the stream to
    just after the last one taken, so the stream ends where ATen's would."""

    __slots__ = ("gen", "buf", "pos", "mark")

    def __init__(self, gen: CPUStream, guess: int):
        self.gen = gen
        self._fill(max(int(guess), 64))

    def _fill(self, n: int) -> None:
        self.mark = self.gen.bit_generator.state
        self.buf, self.pos = _uniform01(self.gen, n, True).tolist(), 0

    def take(self) -> float:
        if self.pos == len(self.buf):
            self._fill(2 * len(self.buf))
        v = self.buf[self.pos]
        self.pos += 1
        return v

    def normal(self) -> float:
        """ATen's scalar ``normal_distribution<double>`` (the stream's cached second sample
        first)."""
        gen = self.gen
        z = gen.next_normal
        if z is not None:
            gen.next_normal = None
            return z
        u1 = self.take()
        u2 = self.take()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        gen.next_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self) -> None:
        self.gen.bit_generator.state = self.mark
        self.gen.bit_generator.random_raw(2 * self.pos)  # (two words per 53-bit uniform)


def poisson(rates: np.ndarray, gen: CPUStream) -> np.ndarray:
    """Poisson counts (int64) for non-negative float ``rates``: ATen's ``sample_poisson`` (in
    float64 whatever the rates' dtype): Hoermann's transformed rejection for rates of 10 or
    more, the product of uniforms below."""
    lam = np.asarray(rates, _F64)
    flat = lam.ravel().tolist()
    out = [0] * len(flat)
    feed = _Feed(gen, 2.5 * len(flat) + float(np.minimum(lam, 10).sum()))
    take, log, floor, lgamma = feed.take, math.log, math.floor, _lgamma
    for i, lm in enumerate(flat):
        if lm >= 10:
            slam, loglam = math.sqrt(lm), log(lm)
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            invalpha = 1.1239 + 1.1328 / (b - 3.4)
            vr = 0.9277 - 3.6224 / (b - 2)
            while True:
                u = take() - 0.5
                v = take()
                us = 0.5 - abs(u)
                k = floor((2 * a / us + b) * u + lm + 0.43)
                if us >= 0.07 and v <= vr:
                    break
                if k < 0 or (us < 0.013 and v > us):
                    continue
                if (_log0(v) + log(invalpha) - log(a / (us * us) + b)
                        <= -lm + k * loglam - lgamma(k + 1.0)):
                    break
            out[i] = k
        elif lm > 0:
            enlam, x, prod = math.exp(-lm), 0, 1.0
            while True:
                prod *= take()
                if prod > enlam:
                    x += 1
                else:
                    break
            out[i] = x
    feed.close()
    return np.array(out, np.int64).reshape(lam.shape)


_STIRLING = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
             0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
             0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    if k < 10:
        return _STIRLING[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(count: float, prob: float, take, f) -> float:
    """TensorFlow's BTRS as ATen adapts it; ``f`` rounds what ATen computes in the tensor's
    dtype (float for float32 tensors, identity for float64)."""
    log = math.log
    stddev = math.sqrt(f(f(count * prob) * f(1 - prob)))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = f(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = f(prob / f(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(f(f(count + 1) * prob))
    while True:
        u = take() - 0.5
        v = take()
        us = 0.5 - abs(u)
        k = f(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = _log0(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * log((m + 1) / (r * (count - m + 1)))
                 + f(count + 1) * log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m)
                 - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= bound:
            return k


def _binomial_inversion(count: float, prob: float, take, single: bool) -> float:
    logprob = float(_log1pf(-prob)) if single else math.log1p(-prob)
    geom_sum, num = 0.0, 0.0
    while True:
        geom_sum += math.ceil(_log0(take()) / logprob)
        if geom_sum > count:
            return num
        num += 1


def binomial(count: np.ndarray, prob: np.ndarray, gen: CPUStream) -> np.ndarray:
    """Binomial draws for float ``count`` and ``prob`` (broadcast; float32 or float64, the
    dtype ATen's ``sample_binomial`` computes some of its steps in), in that dtype: BTRS where
    the expected count of the rarer outcome is 10 or more, else inversion by geometric
    waiting times."""
    dt = _F32 if np.result_type(count, prob) == _F32 else _F64
    count, prob = np.broadcast_arrays(np.asarray(count, dt), np.asarray(prob, dt))
    single = dt is _F32
    f = (lambda x: float(_F32(x))) if single else (lambda x: x)
    cs, ps = count.ravel().tolist(), prob.ravel().tolist()
    out = [0.0] * len(cs)
    feed = _Feed(gen, 2.5 * len(cs))
    take = feed.take
    for i, (n, p) in enumerate(zip(cs, ps)):
        if n <= 0.0 or p <= 0.0:
            continue
        if p >= 1.0:
            out[i] = n
        elif p <= 0.5:
            out[i] = (_btrs(n, p, take, f) if f(n * p) >= 10.0
                      else _binomial_inversion(n, p, take, single))
        elif p > 0.5:
            q = f(1.0 - p)
            out[i] = n - (_btrs(n, q, take, f) if f(n * q) >= 10.0
                          else _binomial_inversion(n, q, take, single))
        else:
            out[i] = math.nan
    feed.close()
    return np.array(out, dt).reshape(count.shape)


_THIRD32 = float(_F32(1) / _F32(3))  # ATen's ``1.0f / 3.0f``, a float even for doubles
_C0331 = float(_F32(0.0331))


def _gamma_one(alpha: float, feed: _Feed, f) -> float:
    """ATen's ``sample_gamma`` (Marsaglia and Tsang, boosted below 1) of one concentration, in
    float64, ``f`` rounding what ATen computes in the tensor's dtype."""
    take, log = feed.take, math.log
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= (1 - take()) ** f(1.0 / alpha)
        alpha = f(alpha + 1.0)
    d = f(alpha - _THIRD32)
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = feed.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1 - take()
        xx = x * x
        if u < 1.0 - _C0331 * xx * xx:
            return scale * d * v
        if _log0(u) < 0.5 * xx + d * (1.0 - v + log(v)):
            return scale * d * v


def standard_gamma(alpha: np.ndarray, gen: CPUStream) -> np.ndarray:
    """Gamma(alpha, 1) draws in alpha's float dtype (float32 or float64), clamped below by
    its smallest normal number: ATen's ``_standard_gamma`` (uniforms and its scalar normals
    from the stream, in ATen's order). NaN concentrations give NaN."""
    a = np.asarray(alpha)
    dt = _F32 if a.dtype == _F32 else _F64
    single = dt is _F32
    f = (lambda x: float(_F32(x))) if single else (lambda x: x)
    flat = a.astype(dt).ravel().tolist()
    feed = _Feed(gen, 3 * len(flat))
    out = np.fromiter((_gamma_one(x, feed, f) if x == x else math.nan for x in flat), _F64,
                      len(flat))
    feed.close()
    out = out.astype(dt)
    return np.maximum(out, np.finfo(dt).tiny, where=~np.isnan(out), out=out).reshape(a.shape)


def dirichlet(alpha: np.ndarray, gen: CPUStream) -> np.ndarray:
    """Dirichlet draws over alpha's last axis in its dtype: ATen's ``_sample_dirichlet``,
    Gamma draws in float64 (clamped to float64's smallest normal), normalized by their sum,
    cast, and clamped into [tiny, 1)."""
    a = np.asarray(alpha)
    dt = _F32 if a.dtype == _F32 else _F64
    g = standard_gamma(a.astype(_F64), gen)
    v = (g / g.sum(-1, keepdims=True)).astype(dt)
    return np.minimum(np.maximum(v, np.finfo(dt).tiny), np.nextafter(dt(1), dt(0)))
