"""Random numbers drawn on the device: ``rand``, ``randn``, ``randint`` and ``dropout_mask`` of
the kernel contract, one counter-based kernel (Philox4x32-10, Triton's ``tl.philox``).

Note [philox positions]: a number is a pure function of (seed, counter), so no state lives on
the device between launches and the host never waits for one. Element ``i`` of a draw at
generator offset ``offset`` uses the 128-bit counter

    c0 = i & 0xffffffff      c1 = i >> 32      c2 = offset & 0xffffffff
    c3 = (offset >> 32) + epoch

and the 64-bit seed as the key. Each draw consumes exactly one offset (the caller's generator
adds 1 per call), so two draws never share a counter, whatever their sizes. ``epoch`` is 0 for
a draw launched eagerly; a draw captured into a CUDA graph reads it from a one-element int64
device array (``gen[2]``), and a second, one-program kernel adds 1 to that array after the
draw. A replay therefore reruns both kernels and draws fresh numbers each time, without the
host (Note [graph-safe draws] in autograd/ops/random.py says who owns the array). Epochs start
at 1, so captured draws never repeat an eager draw of fewer than 2**32 offsets.

Bits to values: a float of ``B`` significand bits (float16 11, bfloat16 8, float32 24,
float64 53) is ``k * 2**-B`` for the top ``B`` bits ``k`` of the draw: exactly representable,
in [0, 1), never rounded up to 1 (float64 takes its 53 bits from two 32-bit words). Normals are
Box-Muller's cosine branch, in float32 (float64 for float64 results); integers are ``low +
r % (high - low)`` for a 64-bit draw ``r``. ``dropout_mask`` is ``uniform >= p``, the uniform
drawn at the result's dtype as ``rand`` draws it.

These are not the numbers the CPU backend draws (its NumPy PCG64 stream): a seed gives
reproducible numbers per device type, as in PyTorch.
"""

from __future__ import annotations

import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from .launcher import jit
from .memory import _device

__all__ = ["dropout_mask", "rand", "randint", "randn"]

BLOCK = 1024
_UNIFORM, _NORMAL, _INTEGER, _KEEP = 0, 1, 2, 3
# significand bits of a uniform drawn at each float dtype (integers and bool draw float32's)
_BITS = {D.float16: 11, D.bfloat16: 8, D.float32: 24, D.float64: 53}


@jit
def _uniform(r0, r1, BITS: tl.constexpr):
    """k * 2**-BITS from the top BITS bits of the draw (r1 supplies the low 21 of 53)."""
    if BITS > 32:
        k = (r0.to(tl.uint64) << 21) | (r1 >> 11).to(tl.uint64)
        return k.to(tl.float64) * (1.0 / 9007199254740992.0)   # 2**-53
    else:
        k = r0 >> (32 - BITS)
        return k.to(tl.float32) * (1.0 / (1 << BITS))


@jit(do_not_specialize=["seed", "off_lo", "off_hi", "low", "span"])
def _random_kernel(out_ptr,      # the contiguous result, n elements
                   epoch_ptr,    # int64[1] read for captured draws (EPOCH), else unused
                   n, seed, off_lo, off_hi,
                   p,            # _KEEP: the drop probability
                   low, span,    # _INTEGER: low and high - low
                   KIND: tl.constexpr, BITS: tl.constexpr, EPOCH: tl.constexpr,
                   OUT_BOOL: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    i, mask = L.block_range(n, BLOCK, INT64)
    i = i.to(tl.int64)
    c0 = (i & 0xFFFFFFFF).to(tl.uint32)
    c1 = (i >> 32).to(tl.uint32)
    zero = c0 * 0
    hi = off_hi.to(tl.int64)
    if EPOCH:
        hi = hi + tl.load(epoch_ptr)
    c2 = zero + off_lo.to(tl.uint32)
    c3 = zero + hi.to(tl.uint32)
    r0, r1, r2, r3 = tl.philox(seed, c0, c1, c2, c3)
    if KIND == 0:
        v = _uniform(r0, r1, BITS)
    elif KIND == 1:
        # Box-Muller: u1 in (0, 1] so the log is finite
        if BITS > 32:
            u1 = 1.0 - _uniform(r0, r1, 53)
            u2 = _uniform(r2, r3, 53)
        else:
            u1 = 1.0 - _uniform(r0, r1, 24)
            u2 = _uniform(r2, r3, 24)
        v = tl.sqrt(-2.0 * tl.log(u1)) * tl.cos(6.283185307179586 * u2)
    elif KIND == 2:
        r = (r0.to(tl.uint64) << 32) | r1.to(tl.uint64)
        v = low + (r % span.to(tl.uint64)).to(tl.int64)
    else:
        v = _uniform(r0, r1, BITS) >= p
    if OUT_BOOL:
        v = v != 0  # Note [bool stores]
    tl.store(out_ptr + i, v.to(out_ptr.dtype.element_ty), mask=mask)


@jit
def _advance_epoch_kernel(epoch_ptr):
    tl.store(epoch_ptr, tl.load(epoch_ptr) + 1)


def _draw(kind: int, shape, dtype, device, gen, bits: int, p: float = 0.0, low: int = 0,
          span: int = 1):
    """Launches one draw into a new contiguous array; ``gen`` is (seed, offset, epoch|None)."""
    L.check_supported("random", dtype)
    out = _memory.empty(tuple(shape), dtype, _device(device))
    n = out.numel
    seed, offset, epoch = gen
    if n:
        L.ensure_driver()
        grid = (L.cdiv(n, BLOCK),)
        _random_kernel[grid](out, epoch if epoch is not None else out, n, int(seed),
                             offset & 0xFFFFFFFF, offset >> 32, float(p), int(low), int(span),
                             kind, bits, epoch is not None, dtype is D.bool, BLOCK,
                             n >= L._INT32_SAFE)
        if epoch is not None:
            _advance_epoch_kernel[(1,)](epoch)
    return out


def rand(shape, dtype, device, gen):
    """Uniform numbers in [0, 1) of float ``dtype`` (Note [philox positions])."""
    return _draw(_UNIFORM, shape, dtype, device, gen, _BITS.get(dtype, 24))


def randn(shape, dtype, device, gen):
    """Standard normal numbers of float ``dtype``."""
    return _draw(_NORMAL, shape, dtype, device, gen, _BITS.get(dtype, 24))


def randint(low, high, shape, dtype, device, gen):
    """Integers uniform in [low, high), stored as ``dtype``."""
    return _draw(_INTEGER, shape, dtype, device, gen, 24, low=low, span=high - low)


def dropout_mask(shape, p, dtype, device, gen):
    """The bool keep mask of dropout: ``uniform >= p``, the uniform drawn as ``rand`` draws it
    at ``dtype``."""
    return _draw(_KEEP, shape, D.bool, device, gen, _BITS.get(dtype, 24), p=p)
