"""Random numbers on the CPU: the kernel contract's ``rand``, ``randn``, ``randint``,
``dropout_mask``, and ``uniform``, ``normal``, ``integers``, ``bernoulli``, ``randperm``,
``exponential``, ``multinomial``, drawn as PyTorch's CPU generator draws them, so that a seed
gives PyTorch's numbers bit for bit.

Note [PyTorch's CPU streams]
  PyTorch's CPU generator is a 32-bit Mersenne Twister (mt19937) seeded by the reference
  ``init_genrand(seed mod 2^32)``; ``CPUStream`` is NumPy's MT19937 put in that state, and a
  NumPy ``Generator`` over it (the draws without an exact twin here, such as ``poisson``,
  ``binomial`` and the gamma family, use NumPy's methods on the same stream). A 32-bit draw is
  one twister output; a 64-bit draw is two, the first the high word. From those, as ATen's
  CPU kernels (DistributionsHelper.h, TransformationHelper.h, cpu/DistributionTemplates.h):

  - uniform on [from, to): float64 from ``(draw64 mod 2^53) 2^-53``; float32, float16 and
    bfloat16 from ``(draw32 mod 2^24) 2^-24``, then ``u (to - from) + from`` as a fused
    multiply-add (in float32 for all but float64), a
    half-precision value that rounds up to ``to`` becoming ``from``;
  - integers in [low, high): ``low + draw mod (high - low)``, the draw 64-bit when the range
    is 2^28 or more, else 32-bit (``random_()`` without bounds: 64-bit for 8-byte dtypes);
    ``randperm`` a Fisher-Yates pass swapping ``i`` with
    ``i + draw32 mod (n - i)``;
  - Bernoulli(p): ``uniform < p``, in float64 for a number p (and dropout, ``bernoulli_(1 -
    p)``), in the probabilities' dtype for a tensor of them; exponential ``-1/lambda
    log1p(-u)`` in float64; ``multinomial`` as ``multinomial`` below says;
  - normal: under 16 elements, Box-Muller in float64 per pair of 53-bit uniforms, returning
    ``r cos`` and keeping ``r sin`` for the stream's next scalar normal (PyTorch's
    ``next_double_normal_sample``); 16 or more, uniforms for all, then every block of 16 maps
    its first 8 to radii and last 8 to angles (``r cos`` then ``r sin``), a partial last block
    redrawn as 16 new uniforms over the last 16 outputs. float32 blocks use the AVX2
    polynomials PyTorch's vectorized kernel uses (Cephes ``log``/``sincos``, reproduced with
    its fused multiply-adds below); float64 blocks the C library's log, NumPy's cos and sin,
    and ATen's fused ``r cos std + mean`` as an error-free product and sum (``_fma64``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .bf16 import BF16Array, rounded

__all__ = ["CPUStream", "bernoulli", "dropout_mask", "exponential", "integers", "multinomial",
           "normal", "rand", "randint", "randn", "randperm", "uniform"]

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
    multiply-adds (``r cos std + mean``, ``u (to - from) + from``)."""
    if (b, c) == (1.0, 0.0):
        return a
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
    return s + (t + e)


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
        out[i] = z * std + mean
    return out


def randn(shape, dtype, device, gen: CPUStream):
    """Standard normal numbers in ``dtype`` (the contract's ``randn``)."""
    return normal(shape, dtype, gen)


def normal(shape, dtype, gen: CPUStream, mean: float = 0.0, std: float = 1.0):
    """Normal numbers N(mean, std^2) in ``dtype`` (``randn``, ``normal_``)."""
    shape = tuple(shape)
    n = math.prod(shape)
    if n < _BLOCK:
        return host_array(_scalar_normals(gen, n, mean, std).reshape(shape), dtype)
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
    size, where bounded draws go by the range."""
    shape = tuple(shape)
    n = math.prod(shape)
    return host_array(_ints(gen, int(low), int(high), n, wide).reshape(shape), dtype)


def randperm(n: int, gen: CPUStream) -> np.ndarray:
    """A permutation of 0 .. n-1 (int64): PyTorch's Fisher-Yates pass."""
    perm = list(range(n))
    if n > 1:
        wide = n >= (1 << 32) // 20  # (ATen's switch to 64-bit draws)
        draws = gen.raw64(n - 1) if wide else gen.raw32(n - 1)
        steps = (draws % np.arange(n, 1, -1, dtype=_U64)).tolist()
        for i, z in enumerate(steps):
            j = i + z
            perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, dtype=np.int64)


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


# -- exponential, multinomial --------------------------------------------------------------

def _exponential64(gen: CPUStream, n: int, lambd: float) -> np.ndarray:
    # ATen's ``-1/lambd log1p(-u)`` in float64, the C library's log1p, 53-bit uniforms
    scale = -1.0 / lambd
    return np.fromiter((scale * math.log1p(-v) for v in _uniform01(gen, n, True).tolist()),
                       _F64, n)


def exponential(shape, dtype, gen: CPUStream, lambd: float = 1.0):
    """Exponential numbers of rate ``lambd`` in ``dtype`` (``exponential_``)."""
    shape = tuple(shape)
    return host_array(_exponential64(gen, math.prod(shape), lambd).reshape(shape), dtype)


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

