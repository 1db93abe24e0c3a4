"""Random sampling: ``Generator``, ``multinomial``, ``bernoulli``/``bernoulli_``, ``randperm``,
``get_rng_state``/``set_rng_state``, and the streams the factories draw from.

On the CPU every random number is drawn from a ``CPUStream`` (kernels/numpy/random.py): PyTorch's
CPU generator, mt19937 seeded as PyTorch seeds it, with its transforms, so that ``rand``,
``randn``, ``randint``, ``randperm``, ``uniform_``, ``normal_``, ``log_normal_``, ``cauchy_``,
``geometric_``, ``random_``, ``bernoulli``, ``exponential_``, ``multinomial`` and dropout give
PyTorch's numbers for a seed (Note [PyTorch's CPU streams]; ``poisson``, ``binomial`` and
``_standard_gamma`` too, through the stream's NumPy-named methods, which are ATen's samplers).
The global stream is the one ``manual_seed`` seeds (``creation._rng``). On CUDA, ``rand``,
``randn``, ``randint``, ``bernoulli`` and dropout draw on the device from a Philox
generator that keeps a ``(seed, offset)`` pair on the host: each call consumes one offset and
the kernel derives every number from (seed, offset, element index) (Note [philox positions] in
kernels/triton/random.py), so no number crosses from the host and no call waits for the
device. Each CUDA device has a default generator, seeded by ``manual_seed`` with the same seed
as the CPU's; a seed gives reproducible numbers per device type, but the CUDA numbers are not
the CPU ones (as in PyTorch). ``randperm`` and ``multinomial`` still draw on the host, from the
generator's NumPy stream.

Note [graph-safe draws]: a draw captured into a CUDA graph would replay the same (seed, offset)
forever. So a CUDA generator also owns a one-element int64 device array, its epoch, made (as 1)
by its first eager draw; a captured draw passes it to the kernel, which adds it to the
counter's top word, and a one-program kernel queued after the draw adds 1 to it. Each replay
therefore draws new numbers, and the host offsets the capture consumed stay reserved, so an
eager draw never repeats a replayed one. A capture whose generator has never drawn eagerly
raises (warm up first, which graph capture needs anyway to compile the kernels).

``multinomial`` reads the weights back to the host (a device sync) to sample them there.
"""

from __future__ import annotations

import math

import numbers
import operator
import threading

import numpy as np

from ...kernels import backend
from ...kernels.numpy import random as cpu_random
from ...kernels.numpy.random import CPUStream
from ...runtime import dtype as dtypes
from ...runtime.device import device as Device
from ..checks import kernel_not_implemented, scalar_type_name
from ..observe import observed_op
from ..registry import OpInfo
from ..tensor import Tensor, make
from . import creation
from .complex_parts import view_as_real
from .creation import _finish, as_dtype, host_to, resolve_device

_SEED_MASK = (1 << 64) - 1
# A CPU state tensor is PyTorch's (CPUGeneratorImplState, 5056 bytes, little-endian): the
# initial seed (u64), the twister's ``left`` and ``seeded`` (i32 each), ``next`` (u64), its 624
# words (u64 each), three doubles of which the second is the cached normal, the cache's valid
# flag (i32, then 4 bytes of padding), a float cache (f32), its flag (bool), 3 bytes of padding.
_STATE_SIZE = 5056
_STATE_LAYOUT = np.dtype([("seed", "<u8"), ("left", "<i4"), ("seeded", "<i4"), ("next", "<u8"),
                          ("words", "<u8", 624), ("normal_x", "<f8"), ("normal_y", "<f8"),
                          ("normal_rho", "<f8"), ("normal_valid", "<i4"), ("_pad", "<i4"),
                          ("float_normal", "<f4"), ("float_valid", "u1"), ("_pad2", "u1", 3)])
assert _STATE_LAYOUT.itemsize == _STATE_SIZE
_DEFAULT_SEED = 67280421310721  # PyTorch's initial seed of a new Generator
_PHILOX_SIZE = 16  # a CUDA generator's state starts with its seed and offset, 8 bytes each
_offset_lock = threading.Lock()


class Generator:
    """A pseudo-random number generator: the state of one random stream, passed as
    ``generator=`` to ``rand``, ``randn``, ``randint``, ``randperm``, ``multinomial``,
    ``bernoulli`` and the ``*_like`` factories.

    Args:
        device: the device of the tensors it may fill (``"cpu"`` or ``"cuda"``); a CUDA
            generator is a Philox (seed, offset) pair whose numbers are drawn on the device
            (``randperm`` and ``multinomial`` draw from a NumPy stream seeded alike).

    Example::

        >>> g = tg.Generator().manual_seed(0)
        >>> a = tg.rand(3, generator=g)
        >>> b = tg.rand(3, generator=g.manual_seed(0))  # the same numbers again
    """

    def __init__(self, device="cpu") -> None:
        self._device = resolve_device(device)
        self._seed = _DEFAULT_SEED
        self._np = CPUStream(self._seed)
        self._offset = 0       # CUDA: the next Philox offset (one per draw)
        self._epoch = None     # CUDA: Note [graph-safe draws]

    def _philox(self, op: str) -> tuple:
        """The (seed, offset, epoch) position of the next CUDA draw; consumes one offset."""
        from ...runtime.graphs import is_current_stream_capturing
        epoch = None
        if is_current_stream_capturing():
            epoch = self._epoch
            if epoch is None:
                raise RuntimeError(
                    f"{op}: a CUDA generator must draw once outside a graph capture before a "
                    f"capture can draw from it (warm up before capturing)")
        elif self._epoch is None:
            self._epoch = backend(self._device).full((1,), 1, dtypes.int64, self._device)
        with _offset_lock:  # one offset per draw, also when threads draw at once
            pos = (self._seed, self._offset, epoch)
            self._offset += 1
        return pos

    # The NumPy generator behind the stream (the global generator's lives in creation).
    def _numpy(self) -> CPUStream:
        return self._np

    def _reset(self, rng: CPUStream, seed: int) -> None:
        self._np, self._seed, self._offset = rng, seed, 0

    @property
    def device(self) -> Device:
        """The device this generator's numbers are for."""
        return self._device

    def manual_seed(self, seed: int) -> Generator:
        """Seeds the generator (any int; negative ones wrap modulo 2**64, as PyTorch's);
        returns it."""
        try:
            seed = operator.index(seed) & _SEED_MASK
        except TypeError:
            raise TypeError(f"manual_seed expected an int, got {type(seed).__name__}") from None
        self._reset(CPUStream(seed), seed)
        return self

    def seed(self) -> int:
        """Seeds the generator from the operating system's entropy; returns that seed."""
        s = int(np.random.SeedSequence().entropy % (1 << 63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's state as a CPU uint8 tensor (for ``set_state``): PyTorch's layout of
        a CPU generator's 5056 bytes; for a CUDA generator, its seed and offset (8 bytes each,
        little-endian) first, then its host stream's."""
        stream = self._numpy()
        st = stream.bit_generator.state["state"]
        rec = np.zeros((), _STATE_LAYOUT)
        pos = int(st["pos"])
        rec["seed"], rec["left"], rec["seeded"] = self.initial_seed(), 625 - pos, 1
        rec["next"], rec["words"] = pos % 624, st["key"]
        if stream.next_normal is not None:
            rec["normal_y"], rec["normal_valid"] = stream.next_normal, 1
        raw = rec.tobytes()
        if self._device.type == "cuda":
            raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little") + raw
        return creation.tensor(np.frombuffer(raw, np.uint8).copy(), dtype=dtypes.uint8)

    def set_state(self, new_state: Tensor) -> Generator:
        """Restores a state from ``get_state`` (of this or any generator); returns self."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"set_state(): argument 'new_state' must be Tensor, not "
                            f"{type(new_state).__name__}")
        if new_state.dtype is not dtypes.uint8:
            raise RuntimeError(f"set_state: expected a uint8 (Byte) state tensor, got "
                               f"{scalar_type_name(new_state.dtype)}")
        size = _STATE_SIZE + (_PHILOX_SIZE if self._device.type == "cuda" else 0)
        if new_state.numel() != size:
            raise RuntimeError(f"Expected a Generator state of size {size} but found the "
                               f"input RNG state size to be {new_state.numel()}")
        raw = new_state.detach().cpu().numpy().reshape(-1).tobytes()
        philox = None
        if self._device.type == "cuda":
            philox = (int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:16], "little"))
            raw = raw[_PHILOX_SIZE:]
        rec = np.frombuffer(raw, _STATE_LAYOUT)[0]
        left = int(rec["left"])
        if not 1 <= left <= 625:
            raise RuntimeError(f"set_state: invalid mt19937 state (left = {left})")
        # (PyTorch keeps 32-bit words in 64-bit slots; ``left`` counts the draws to the next
        # twist, NumPy's ``pos`` the words used)
        stream = CPUStream.from_state(rec["words"].astype(np.uint32), 625 - left,
                                      float(rec["normal_y"]) if rec["normal_valid"] else None)
        self._reset(stream, int(rec["seed"]))
        if philox is not None:
            self._seed, self._offset = philox
        return self

    def __repr__(self) -> str:
        return f"<tritongrad.Generator object, device={self._device}>"


class _GlobalGenerator(Generator):
    """The generator ``manual_seed`` seeds: its stream is creation's ``_rng`` (which the
    factories read directly and utils.checkpoint saves and restores)."""

    def __init__(self) -> None:
        self._device = resolve_device("cpu")

    def _numpy(self) -> CPUStream:
        return creation._rng

    def _reset(self, rng: CPUStream, seed: int) -> None:
        creation._rng, creation._initial_seed = rng, seed

    def initial_seed(self) -> int:
        return creation.initial_seed()

    def manual_seed(self, seed: int) -> Generator:
        """Seeds the CPU stream and every CUDA device's default generator (as PyTorch's
        ``manual_seed``); returns self."""
        super().manual_seed(seed)
        for g in _cuda_defaults.values():
            g.manual_seed(creation.initial_seed())
        return self


default_generator = _GlobalGenerator()
_cuda_defaults: dict = {}  # device index -> that device's default CUDA Generator


def cuda_default_generator(device: Device) -> Generator:
    """The default generator of CUDA ``device`` (made on first use, seeded like the CPU's)."""
    g = _cuda_defaults.get(device.index)
    if g is None:
        g = _cuda_defaults[device.index] = Generator(device).manual_seed(creation.initial_seed())
    return g


# Called as ``draw_hook(generator, op)`` before every draw, with the Generator drawn from, while
# set: how torch.func.vmap's randomness modes see random ops (autograd/vmap.py).
draw_hook = None


def stream(generator, device: Device, op: str):
    """What the kernel contract's random functions take as ``gen`` for a draw on ``device``:
    a NumPy generator on the CPU, the next Philox position on CUDA (which consumes it)."""
    if device.type == "cpu":
        return numpy_rng(generator, device, op)
    if generator is None:
        generator = cuda_default_generator(device)
        if draw_hook is not None:
            draw_hook(generator, op)
    else:
        numpy_rng(generator, device, op)  # PyTorch's checks of generator= (and the hook)
    return generator._philox(op)


def numpy_rng(generator, device: Device, op: str) -> CPUStream:
    """The NumPy generator ``op`` draws from for ``generator=`` (None: the global one), after
    PyTorch's checks: a Generator, of the device type of the tensor it fills."""
    if generator is None:
        if draw_hook is not None:  # (first: it may replace creation._rng, set_state)
            draw_hook(default_generator, op)
        return creation._rng
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be Generator, not "
                        f"{type(generator).__name__}")
    if generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    if draw_hook is not None:
        draw_hook(generator, op)
    return generator._numpy()


def cuda_manual_seed(seed: int, device="cuda") -> None:
    """Seeds CUDA ``device``'s default generator (offset 0), as ``torch.cuda.manual_seed``."""
    cuda_default_generator(resolve_device(device)).manual_seed(seed)


def cuda_manual_seed_all(seed: int) -> None:
    """Seeds the default generator of every CUDA device, as ``torch.cuda.manual_seed_all``."""
    from ...runtime import cuda_api
    for index in range(cuda_api.device_count()):
        cuda_manual_seed(seed, Device("cuda", index))


def get_cuda_rng_state(device="cuda") -> Tensor:
    """The state of CUDA ``device``'s default generator (its seed and offset first), a CPU
    uint8 tensor, as ``torch.cuda.get_rng_state``."""
    return cuda_default_generator(resolve_device(device)).get_state()


def set_cuda_rng_state(new_state: Tensor, device="cuda") -> None:
    """Restores CUDA ``device``'s default generator from ``get_cuda_rng_state``."""
    cuda_default_generator(resolve_device(device)).set_state(new_state)


def get_rng_state() -> Tensor:
    """The global generator's state, a CPU uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restores the global generator's state from ``get_rng_state``."""
    default_generator.set_state(new_state)


# -- randperm --------------------------------------------------------------------------------

@observed_op("aten::randperm")
def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of the integers ``0 .. n-1`` (int64 by default).

    Example::

        >>> tg.manual_seed(0); sorted(tg.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dev = resolve_device(device)
    dt = as_dtype(dtype) or dtypes.int64
    if dt is dtypes.bool:
        raise kernel_not_implemented("randperm", dt)
    perm = cpu_random.randperm(n, numpy_rng(generator, dev, "randperm"))
    return _finish(host_to(perm, dt, dev), requires_grad)


# -- multinomial -----------------------------------------------------------------------------

def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator=None) -> Tensor:
    """``num_samples`` indices drawn from the categories of each row of ``input`` (1-D or 2-D
    non-negative weights, not necessarily summing to 1), with or without ``replacement``.

    Without replacement (or for one sample) a row's indices are distinct, drawn by the
    exponential race (the largest ``w_i / E_i``, ``E_i`` standard exponential: Gumbel-top-k),
    which is sequential sampling without replacement; categories of weight 0 come only after
    all the others. With replacement each sample is a uniform located in the row's normalized
    cumulative sum. The draws are PyTorch's CPU kernel's (kernels/numpy/random.py), so a seed
    gives PyTorch's samples. The weights are read back to the host and sampled there. Returns
    int64 of shape ``(num_samples,)`` or ``(rows, num_samples)`` on input's device.
    """
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{scalar_type_name(input.dtype)}")
    num_samples = operator.index(num_samples)
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = input.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rng = numpy_rng(generator, input.device, "multinomial")
    # (the weights in their float width: ATen samples in the input's dtype)
    w_dt = dtypes.float64 if input.dtype is dtypes.float64 else dtypes.float32
    w = input.detach().to(w_dt).cpu().numpy().reshape(-1, n_cat)
    if not np.isfinite(w).all() or (w < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (w.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    out = cpu_random.multinomial(w, num_samples, replacement, rng)
    out = out.reshape(num_samples) if input.ndim == 1 else out
    return host_to(np.ascontiguousarray(out, dtype=np.int64), dtypes.int64, input.device)


# -- bernoulli -------------------------------------------------------------------------------

def _uniform_like(x: Tensor, generator, op: str, dtype=dtypes.float64) -> Tensor:
    """Uniform [0, 1) numbers of x's shape on x's device (drawn there), in ``dtype``."""
    gen = stream(generator, x.device, op)
    return make(x._k.rand(tuple(x.shape), dtype, x.device, gen))


def _bernoulli_draws(x: Tensor, prob, generator, op: str) -> Tensor:
    """``uniform < prob`` of x's shape: PyTorch's draws, float64 for a number ``prob``, in the
    probabilities' dtype for a tensor of them (float32 for the half types)."""
    dt = dtypes.float64
    if isinstance(prob, Tensor) and prob.dtype is not dtypes.float64:
        dt = dtypes.float32
        prob = prob.to(dt)
    return _uniform_like(x, generator, op, dt) < prob


def _check_p_tensor(p: Tensor) -> None:
    # one read-back: the price of PyTorch's error instead of silently clamped probabilities
    if not bool(((p >= 0) & (p <= 1)).all().item()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def _check_p_number(p, op: str) -> float:
    if not isinstance(p, numbers.Real):
        raise TypeError(f"{op}(): argument 'p' must be float or Tensor, not {type(p).__name__}")
    if not 0 <= p <= 1:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={p}")
    return float(p)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """Draws binary random numbers (0 or 1): ``out[i] = 1`` with probability ``input[i]``
    (or with probability ``p``, a number, for every element when it is given). The result
    has input's shape and dtype; it is not differentiable."""
    if p is None:
        if not input.dtype.is_floating_point:
            raise kernel_not_implemented("bernoulli", input.dtype)
        _check_p_tensor(input)
        prob = input.detach()
    else:
        prob = _check_p_number(p, "bernoulli_")
    return _bernoulli_draws(input, prob, generator, "bernoulli").to(input.dtype)


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fills ``self`` with 0/1 draws, 1 with probability ``p`` (a number, or a tensor of
    probabilities broadcasting to self's shape); returns self."""
    if isinstance(p, Tensor):
        _check_p_tensor(p)
        prob = p.detach().to(self.device)
    else:
        prob = _check_p_number(p, "bernoulli_")
    draw = _bernoulli_draws(self, prob, generator, "bernoulli_")
    return self.copy_(draw.to(self.dtype))


# -- in-place fills from distributions (PyTorch's Tensor.uniform_, normal_, ...) ----------------
# Each draws float64 uniforms or normals of self's shape on self's device (from the generator
# or the default one), maps them to the distribution, and writes them into self (copy_, so
# dtype casts and the in-place checks are copy_'s); not differentiable.

def _exact_cpu(x: Tensor) -> bool:
    """Whether a fill of ``x`` draws PyTorch's CPU numbers in x's own dtype (a real floating
    CPU tensor); others draw float64 and cast."""
    return x.device.type == "cpu" and x.dtype.is_floating_point


def _normal_like(x: Tensor, generator, op: str) -> Tensor:
    gen = stream(generator, x.device, op)
    return make(x._k.randn(tuple(x.shape), dtypes.float64, x.device, gen))


def _fill(self: Tensor, values: Tensor) -> Tensor:
    """``values`` (fresh draws, no history) written into ``self`` by ``copy_``, recorded as
    PyTorch records the fills: a leaf that requires grad is refused outside ``no_grad``, and
    a non-leaf's history becomes the write's (no gradient reaches what it held before)."""
    return self.copy_(values)


def _floating_fill(x: Tensor, kernel: str) -> None:
    """PyTorch's refusal of a continuous fill of an integer or bool tensor."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise kernel_not_implemented(f"{kernel}", x.dtype)


# (the C++ type names PyTorch's cauchy_ message uses)
_C_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
                 "int16": "short int", "int32": "int", "int64": "long int"}


def _continuous(x: Tensor, law: str, names: dict) -> None:
    """PyTorch's refusal of an exponential or Cauchy fill of an integer or bool tensor."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"{law} distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{names.get(x.dtype.name, x.dtype.name)}")


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None,
             **kw) -> Tensor:
    """Fills self with numbers drawn uniformly from [a, b) (PyTorch's ``from``/``to`` are
    accepted as keywords)."""
    a, b = kw.get("from", a), kw.get("to", b)
    _floating_fill(self, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} "
                           f"> to={b}")
    if self.dtype.is_complex:  # real and imaginary parts drawn alike, as PyTorch's
        view_as_real(self).uniform_(a, b, generator=generator)
        return self
    if _exact_cpu(self):  # PyTorch's numbers (Note [PyTorch's CPU streams])
        gen = stream(generator, self.device, "uniform_")
        return _fill(self, make(cpu_random.uniform(tuple(self.shape), self.dtype, gen,
                                                   float(a), float(b))))
    return _fill(self, _uniform_like(self, generator, "uniform_") * (b - a) + a)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fills self with numbers drawn from N(mean, std^2) (complex: each part from
    N(mean, std^2 / 2), so that the complex variance is std^2, as PyTorch's)."""
    _floating_fill(self, f"normal_kernel_{self.device.type}")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if self.dtype.is_complex:
        view_as_real(self).normal_(mean, std / math.sqrt(2), generator=generator)
        return self
    if _exact_cpu(self):
        gen = stream(generator, self.device, "normal_")
        return _fill(self, make(cpu_random.normal(tuple(self.shape), self.dtype, gen,
                                                  float(mean), float(std))))
    return _fill(self, _normal_like(self, generator, "normal_") * std + mean)


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator=None) -> Tensor:
    """Fills self with exp(N(mean, std^2)) draws."""
    _floating_fill(self, f"log_normal_{self.device.type}")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if _exact_cpu(self):
        gen = stream(generator, self.device, "log_normal_")
        return _fill(self, make(cpu_random.log_normal(tuple(self.shape), self.dtype, gen,
                                                      float(mean), float(std))))
    return _fill(self, (_normal_like(self, generator, "log_normal_") * std + mean).exp())


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fills self with draws from the exponential distribution of rate ``lambd``:
    -log(1 - U) / lambd."""
    _continuous(self, "Exponential", dtypes.CPP_NAMES)
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    if _exact_cpu(self):
        gen = stream(generator, self.device, "exponential_")
        return _fill(self, make(cpu_random.exponential(tuple(self.shape), self.dtype, gen,
                                                       float(lambd))))
    u = _uniform_like(self, generator, "exponential_")
    return _fill(self, (1 - u).log().neg() / lambd)


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fills self with Cauchy draws: median + sigma tan(pi (U - 1/2))."""
    _continuous(self, "Cauchy", _C_TYPE_NAMES)
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    if _exact_cpu(self):
        gen = stream(generator, self.device, "cauchy_")
        return _fill(self, make(cpu_random.cauchy(tuple(self.shape), self.dtype, gen,
                                                  float(median), float(sigma))))
    u = _uniform_like(self, generator, "cauchy_")
    return _fill(self, ((u - 0.5) * math.pi).tan() * sigma + median)


def geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    """Fills self with the number of Bernoulli(p) trials up to the first success (>= 1):
    ceil(log(1 - U) / log(1 - p))."""
    if self.dtype is dtypes.bool:
        raise kernel_not_implemented(f"geometric_{self.device.type}", self.dtype)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.device.type == "cpu" and not self.dtype.is_complex:  # (ATen's: every real dtype)
        gen = stream(generator, self.device, "geometric_")
        return _fill(self, make(cpu_random.geometric(tuple(self.shape), self.dtype, gen,
                                                     float(p))))
    u = _uniform_like(self, generator, "geometric_")
    return _fill(self, ((1 - u).log() / math.log1p(-p)).ceil().clamp(min=1.0))


_RANDOM_OVERLOADS = ("\n * (*, Generator generator = None)\n * (int from, int to, *, Generator "
                     "generator = None)\n * (int to, *, Generator generator = None)")


def _random_bounds(args: tuple, kwargs: dict) -> tuple:
    """``random_``'s (from, to) from PyTorch's three overloads: ``()``, ``(to)`` and
    ``(from, to)`` (``to`` may be None: up to the dtype's limit). ``from`` is a Python keyword,
    so it arrives in ``kwargs`` (``x.random_(**{"from": 3, "to": 5})``), as in PyTorch."""
    unknown = sorted(set(kwargs) - {"from", "to"})
    if len(args) > 2:
        raise TypeError(f"random_() takes 2 positional arguments but {len(args)} were given")
    if len(args) == 1 and not kwargs:
        return 0, args[0]
    bound = dict(zip(("from", "to"), args))
    repeated = any(k in bound for k in kwargs)
    bound.update(kwargs)
    if unknown or repeated or (bound and "to" not in bound):  # (from without to: no overload)
        got = ", ".join([type(a).__name__ for a in args]
                        + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
        raise TypeError(f"random_() received an invalid combination of arguments - got "
                        f"({got}, ), but expected one of:{_RANDOM_OVERLOADS}")
    return bound.get("from", 0), bound.get("to")


def random_(self: Tensor, *args, generator=None, **kwargs) -> Tensor:
    """random_(from=0, to=None, *, generator=None) -> Tensor

    Fills self with integers drawn uniformly from [from, to - 1] (``random_(to)``: [0, to - 1];
    no ``to``: up to 2^mantissa for floats, the dtype's maximum for integers). ``from`` is a
    Python keyword: pass it by position or as ``**{"from": 3}``.

    Example:
        >>> x = tg.zeros(4).random_(3, 5)
        >>> bool(((x >= 3) & (x <= 4)).all())
        True
    """
    if self.dtype.is_complex:
        raise kernel_not_implemented("random_", self.dtype)
    a, b = _random_bounds(args, kwargs)
    full = b is None  # (the dtype's whole range: the draw's width goes by the dtype's size)
    if b is None:
        dt = self.dtype
        if dt.is_floating_point:
            b = 2 ** {dtypes.float16: 11, dtypes.bfloat16: 8, dtypes.float32: 24}.get(dt, 53) + 1
        elif dt is dtypes.bool:
            b = 2
        else:
            b = int(np.iinfo(dt.np).max) + 1
    if a >= b:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={a} >= "
                           f"to={b}")
    if self.device.type == "cpu":  # PyTorch's integers: low + draw mod range
        gen = stream(generator, self.device, "random_")
        wide = self.dtype.itemsize == 8 if full else None
        return _fill(self, make(cpu_random.integers(a, b, tuple(self.shape), self.dtype, gen,
                                                    wide)))
    u = _uniform_like(self, generator, "random_")
    return _fill(self, (u * (b - a)).floor().clamp(max=b - a - 1) + a)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("Generator", Generator, method=False, grad="none"),
    OpInfo("get_rng_state", get_rng_state, method=False, grad="none"),
    OpInfo("set_rng_state", set_rng_state, method=False, grad="none"),
    OpInfo("randperm", randperm, method=False, dtypes="int64 (dtype= any)", grad="none"),
    OpInfo("multinomial", multinomial, dtypes="floats; int64 result", grad="none"),
    OpInfo("bernoulli", bernoulli, inplace=bernoulli_, dtypes="floats (bernoulli_: all)",
           grad="none"),
    *(OpInfo(fn.__name__, fn, function=False, dtypes="all (drawn in float64, cast)",
             grad="none")
      for fn in (uniform_, normal_, log_normal_, exponential_, cauchy_, geometric_, random_)),
)
