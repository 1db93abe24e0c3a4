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
import warnings

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
from .elementwise import _result, resize_output

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
        """Seeds the generator (an int in [-2**63, 2**64); negative ones wrap modulo 2**64, as
        PyTorch's); returns it."""
        seed = _seed_arg(seed)
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

    def clone_state(self) -> Generator:
        """A new generator of this one's device in this one's state (seed, stream position
        and cached normal; a CUDA generator's offset), independent of it from then on."""
        twin = Generator(self._device)
        twin.set_state(self.get_state())
        return twin

    def get_offset(self) -> int:
        """A CUDA generator's Philox offset (here: the draws it has made since its seed); a
        CPU generator has none (RuntimeError, as PyTorch's)."""
        if self._device.type != "cuda":
            raise RuntimeError("CPU Generator does not use offset")
        return self._offset

    def set_offset(self, offset: int) -> Generator:
        """Sets a CUDA generator's Philox offset (see ``get_offset``); returns self."""
        if self._device.type != "cuda":
            raise RuntimeError("CPU Generator does not use offset")
        self._offset = operator.index(offset)
        return self

    def graphsafe_get_state(self) -> Generator:
        """PyTorch's CUDA-graph generator states are not supported (NotImplementedError, as
        PyTorch's CPU generator): captures here keep their draws fresh by the generator's
        epoch (Note [graph-safe draws]); ``clone_state`` copies a state."""
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state: Generator) -> Generator:
        """Not supported (see ``graphsafe_get_state``)."""
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

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
        # (PyTorch's messages, which name its tensor type)
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dtypes.uint8:
            raise _StateDtypeError(f"RNG state must be a torch.ByteTensor (uint8), got "
                                   f"{scalar_type_name(new_state.dtype)}")
        size = _STATE_SIZE + (_PHILOX_SIZE if self._device.type == "cuda" else 0)
        if new_state.numel() != size:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {size} but found the "
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


class _StateDtypeError(TypeError, RuntimeError):
    """A state tensor of another dtype than uint8: PyTorch's TypeError, and the RuntimeError
    this library raised before (callers may catch either)."""


def _seed_arg(seed) -> int:
    """A seed as PyTorch's ``Generator.manual_seed`` takes it: an integer (not a bool) that
    fits 64 bits, signed or not, wrapped into [0, 2**64)."""
    if isinstance(seed, bool) or not hasattr(type(seed), "__index__"):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = operator.index(seed)
    if not -(1 << 63) <= seed <= _SEED_MASK:
        raise ValueError("Overflow when unpacking long long")
    return seed & _SEED_MASK


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
def randperm(n: int, *, generator=None, out: Tensor | None = None, dtype=None, device=None,
             requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """A random permutation of the integers ``0 .. n-1`` (int64 by default).

    Example::

        >>> tg.manual_seed(0); sorted(tg.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if out is not None:  # (written into out, in its dtype, as PyTorch's randperm_out)
        if not isinstance(out, Tensor):
            raise TypeError(f"randperm(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        values = randperm(n, generator=generator, dtype=out.dtype, device=out.device)
        resize_output(out, (n,))
        return out.copy_(values)
    dev = resolve_device(device)
    dt = as_dtype(dtype) or dtypes.int64
    if dt is dtypes.bool or dt.is_complex:
        raise kernel_not_implemented("randperm", dt)
    _check_randperm_size(n, dt)
    perm = cpu_random.randperm(n, numpy_rng(generator, dev, "randperm"))
    result = host_to(perm, dt, dev)
    if pin_memory:
        result = creation._pinned(result, True)
    return _finish(result, requires_grad)


# (PyTorch's check_supported_max_int_with_precision: n - 1 must fit the dtype, and a float
# dtype must hold every integer up to n exactly)
_PERM_FLOAT_MAX = {"float16": ((1 << 11) + 1, "2049"), "float32": ((1 << 24) + 1, "2^24+1"),
                   "float64": ((1 << 53) + 1, "2^53+1")}


def _check_randperm_size(n: int, dt) -> None:
    if not (dt.is_floating_point or dt.is_complex) and n > 1 and n - 1 > np.iinfo(dt.np).max:
        raise RuntimeError(f"value cannot be converted to type {dt.name}_t without overflow")
    limit = _PERM_FLOAT_MAX.get(dt.name)
    if limit is not None and n > limit[0]:
        raise RuntimeError(f"n cannot be greater than {limit[1]} for "
                           f"{dtypes.CPP_NAMES[dt.name]} type.")


# -- multinomial -----------------------------------------------------------------------------

def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator=None, out: Tensor | None = None) -> Tensor:
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
    if out is not None and out.dtype is not dtypes.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: "
                           f"{scalar_type_name(out.dtype)}")
    drawn = cpu_random.multinomial(w, num_samples, replacement, rng)
    drawn = drawn.reshape(num_samples) if input.ndim == 1 else drawn
    return _result(host_to(np.ascontiguousarray(drawn, dtype=np.int64), dtypes.int64,
                           input.device), out, "multinomial")


# -- bernoulli -------------------------------------------------------------------------------

def _fill_order(x: Tensor) -> list | None:
    """The order in which ATen's CPU kernels fill ``x`` (TensorIterator's: memory order, the
    dims by decreasing stride), as a permutation of x's dims; None when x is contiguous, or
    when its memory order is its row-major one."""
    if x.is_contiguous():
        return None
    strides = x.stride()
    perm = sorted((d for d in range(x.ndim) if x.shape[d] != 1), key=lambda d: -strides[d])
    perm += [d for d in range(x.ndim) if x.shape[d] == 1]  # (size-1 dims: no order of theirs)
    return None if perm == sorted(perm) else perm


def _drawn(x: Tensor, draw) -> Tensor:
    """``draw(shape)`` (a host array of draws in row-major order) for the elements of CPU
    tensor ``x`` in the order ATen's kernel fills them (``_fill_order``), as a tensor of x's
    shape."""
    perm = _fill_order(x)
    if perm is None:
        return make(draw(tuple(x.shape)))
    values = make(draw(tuple(x.shape[d] for d in perm)))
    return values.permute(*np.argsort(perm).tolist())


def _uniform_like(x: Tensor, generator, op: str, dtype=dtypes.float64) -> Tensor:
    """Uniform [0, 1) numbers of x's shape on x's device (drawn there), in ``dtype`` (on the
    CPU in the order ATen's kernels draw them)."""
    gen = stream(generator, x.device, op)
    if x.device.type == "cpu":
        return _drawn(x, lambda shape: cpu_random.rand(shape, dtype, x.device, gen))
    return make(x._k.rand(tuple(x.shape), dtype, x.device, gen))


def _bernoulli_draws(x: Tensor, prob, generator, op: str) -> Tensor:
    """``uniform < prob`` of x's shape (drawn in the order ATen fills ``x``): PyTorch's draws,
    float64 for a number ``prob``, in the probabilities' dtype for a tensor of them (float32
    for the half types)."""
    dt = dtypes.float64
    if isinstance(prob, Tensor) and prob.dtype is not dtypes.float64:
        dt = dtypes.float32
        prob = prob.to(dt)
    return _uniform_like(x, generator, op, dt) < prob


def _check_p_tensor(p: Tensor) -> None:
    # one read-back: the price of PyTorch's error instead of silently clamped probabilities
    if p.is_meta:  # (no values to check: Note [The meta device])
        return
    if not bool(((p >= 0) & (p <= 1)).all().item()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def _check_p_number(p, op: str) -> float:
    if not isinstance(p, numbers.Real):
        raise TypeError(f"{op}(): argument 'p' must be float or Tensor, not {type(p).__name__}")
    if not 0 <= p <= 1:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={p}")
    return float(p)


def bernoulli(input: Tensor, p=None, *, generator=None, out: Tensor | None = None) -> Tensor:
    """Draws binary random numbers (0 or 1): ``out[i] = 1`` with probability ``input[i]``
    (or with probability ``p``, a number, for every element when it is given). The result
    has input's shape and dtype (``out=``: written into that tensor, in its dtype, as
    ``out.bernoulli_(input)``); probabilities that require grad get a zero gradient
    (``BernoulliBackward0``, PyTorch's: the draws are not reparameterized)."""
    if out is not None:
        if p is not None:
            raise TypeError("bernoulli() received an invalid combination of arguments - got "
                            "(Tensor, float, out=Tensor), but expected one of:\n"
                            " * (Tensor input, *, torch.Generator generator = None, Tensor out "
                            "= None)\n * (Tensor input, float p, *, torch.Generator generator "
                            "= None)")
        if not isinstance(out, Tensor):
            raise TypeError(f"bernoulli(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        resize_output(out, tuple(input.shape))
        return bernoulli_(out, input, generator=generator)
    if p is None:
        if input.dtype.is_complex:
            raise kernel_not_implemented("bernoulli_tensor_cpu_self_", input.dtype)
        if not input.dtype.is_floating_point:
            raise kernel_not_implemented("bernoulli_tensor_cpu_p_", input.dtype)
        _check_p_tensor(input)
        prob = input.detach()
    else:
        prob = _check_p_number(p, "bernoulli_")
    # (ATen's result is contiguous, filled in row-major order whatever input's layout)
    target = input if input.device.type != "cpu" or input.is_contiguous() else creation.empty(
        tuple(input.shape), dtype=input.dtype, device=input.device)
    values = _bernoulli_draws(target, prob, generator, "bernoulli").to(input.dtype)
    if p is None and input.requires_grad:  # (PyTorch's node: a zero gradient for p)
        from .sampling import BernoulliBackward0, _sampled
        return _sampled(BernoulliBackward0, (input,), values)
    return values


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fills ``self`` with 0/1 draws, 1 with probability ``p`` (a number, or a tensor of
    probabilities broadcasting to self's shape); returns self."""
    if isinstance(p, Tensor):
        if not p.dtype.is_floating_point:
            raise kernel_not_implemented("bernoulli_tensor_cpu_p_", p.dtype)
        if self.dtype.is_complex:
            raise kernel_not_implemented("bernoulli_tensor_cpu_self_", self.dtype)
        _check_p_tensor(p)
        prob = p.detach().to(self.device)
    else:
        prob = _check_p_number(p, "bernoulli_")
        if self.dtype.is_complex:
            raise kernel_not_implemented("bernoulli_scalar_cpu_", self.dtype)
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


def _floating_fill(x: Tensor, kernel: str, complex_ok: bool = True) -> None:
    """PyTorch's refusal of a continuous fill of an integer or bool tensor (and of a complex
    one unless ``complex_ok``)."""
    if not (x.dtype.is_floating_point or (complex_ok and x.dtype.is_complex)):
        raise kernel_not_implemented(f"{kernel}", x.dtype)


# (the C++ type names PyTorch's cauchy_ message uses)
_C_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
                 "int16": "short int", "int32": "int", "int64": "long int",
                 "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _continuous(x: Tensor, law: str, names: dict) -> None:
    """PyTorch's refusal of an exponential or Cauchy fill of a non-real-floating tensor."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{law} distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{names.get(x.dtype.name, x.dtype.name)}")


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None,
             **kw) -> Tensor:
    """Fills self with numbers drawn uniformly from [a, b) (PyTorch's ``from``/``to`` are
    accepted as keywords)."""
    if kw:  # (only from and to: any other keyword is PyTorch's TypeError, not ignored)
        bad = [k for k in kw if k not in ("from", "to")]
        if bad:
            raise TypeError(f"uniform_() got an unexpected keyword argument '{bad[0]}'")
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
        return _fill(self, _drawn(self, lambda shape: cpu_random.uniform(
            shape, self.dtype, gen, float(a), float(b))))
    return _fill(self, _uniform_like(self, generator, "uniform_") * (b - a) + a)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fills self with numbers drawn from N(mean, std^2) (complex: each part from
    N(mean, std^2 / 2), so that the complex variance is std^2, as PyTorch's)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if self.numel() == 0:  # (PyTorch checks the dtype only when there is something to fill)
        return self
    _floating_fill(self, f"normal_kernel_{self.device.type}")
    if self.dtype.is_complex:
        view_as_real(self).normal_(mean, std / math.sqrt(2), generator=generator)
        return self
    if _exact_cpu(self):
        gen = stream(generator, self.device, "normal_")
        # (ATen's blocks of 16 only for a contiguous tensor: others one at a time)
        serial = not self.is_contiguous()
        return _fill(self, _drawn(self, lambda shape: cpu_random.normal(
            shape, self.dtype, gen, float(mean), float(std), serial)))
    return _fill(self, _normal_like(self, generator, "normal_") * std + mean)


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator=None) -> Tensor:
    """Fills self with exp(N(mean, std^2)) draws."""
    _floating_fill(self, f"log_normal_{self.device.type}", complex_ok=False)
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if _exact_cpu(self):
        gen = stream(generator, self.device, "log_normal_")
        return _fill(self, _drawn(self, lambda shape: cpu_random.log_normal(
            shape, self.dtype, gen, float(mean), float(std))))
    return _fill(self, (_normal_like(self, generator, "log_normal_") * std + mean).exp())


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fills self with draws from the exponential distribution of rate ``lambd``:
    -log(1 - U) / lambd."""
    _continuous(self, "Exponential", dtypes.CPP_NAMES)
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    if _exact_cpu(self):
        gen = stream(generator, self.device, "exponential_")
        return _fill(self, _drawn(self, lambda shape: cpu_random.exponential(
            shape, self.dtype, gen, float(lambd))))
    u = _uniform_like(self, generator, "exponential_")
    return _fill(self, (1 - u).log().neg() / lambd)


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fills self with Cauchy draws: median + sigma tan(pi (U - 1/2))."""
    _continuous(self, "Cauchy", _C_TYPE_NAMES)
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    if _exact_cpu(self):
        gen = stream(generator, self.device, "cauchy_")
        return _fill(self, _drawn(self, lambda shape: cpu_random.cauchy(
            shape, self.dtype, gen, float(median), float(sigma))))
    u = _uniform_like(self, generator, "cauchy_")
    return _fill(self, ((u - 0.5) * math.pi).tan() * sigma + median)


def geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    """Fills self with the number of Bernoulli(p) trials up to the first success (>= 1):
    ceil(log(1 - U) / log(1 - p))."""
    if self.dtype is dtypes.bool or self.dtype.is_complex:
        raise kernel_not_implemented(f"geometric_{self.device.type}", self.dtype)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.device.type == "cpu" and not self.dtype.is_complex:  # (ATen's: every real dtype)
        gen = stream(generator, self.device, "geometric_")
        return _fill(self, _drawn(self, lambda shape: cpu_random.geometric(
            shape, self.dtype, gen, float(p))))
    u = _uniform_like(self, generator, "geometric_")
    return _fill(self, ((1 - u).log() / math.log1p(-p)).ceil().clamp(min=1.0))


# (the C++ names of the floating types in random_'s bounds messages)
_C_FLOAT_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                  "float64": "double"}


def check_random_bounds(low: int, high: int, dtype) -> None:
    """PyTorch's checks of integer draws from [low, high) into ``dtype`` (``random_``,
    ``randint``): both ends must fit the dtype (RuntimeError); a floating dtype narrows them
    first (``float_bounds``) and warns where they pass 2^mantissa bits, beyond which it
    cannot hold every integer."""
    if dtype.is_floating_point:
        low, high = cpu_random.float_bounds(low, high, dtype)
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than 'to' "
                               f"casted to dtype, but got from={low} >= to={high}")
        info, name = dtypes.finfo(dtype), _C_FLOAT_NAMES[dtype.name]
        lo, hi = float(info.min), float(info.max)
    else:
        name = _C_TYPE_NAMES.get(dtype.name, dtype.name)
        lo, hi = (0, 1) if dtype is dtypes.bool else (int(np.iinfo(dtype.np).min),
                                                     int(np.iinfo(dtype.np).max))
    for what, v in (("from", low), ("to - 1", high - 1)):
        if not lo <= v <= hi:
            raise RuntimeError(f"{what} is out of bounds for {name}")
    if dtype.is_floating_point:
        digits = {"float16": 11, "bfloat16": 8, "float32": 24}.get(dtype.name, 53)
        for what, v in (("from", low), ("to - 1", high - 1)):
            if abs(v) > 1 << digits:
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                              f"precision limitations {name} can support discrete uniform "
                              f"distribution only within this range. This warning will become "
                              f"an error in version 1.7 release, please fix the code in "
                              f"advance", stacklevel=3)


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
        # (PyTorch's kernel is "random_kernel_cpu"; tests/test_gaps_24.py pins this name)
        raise kernel_not_implemented("random_", self.dtype)
    a, b = _random_bounds(args, kwargs)
    # (no bounds at all: ATen's random_kernel, whose draw's width goes by the dtype's size;
    # any bound: by the range's)
    full = not args and not kwargs
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
    if not full:
        check_random_bounds(a, b, self.dtype)
    if self.device.type == "cpu":  # PyTorch's integers: low + draw mod range
        gen = stream(generator, self.device, "random_")
        wide = self.dtype.itemsize == 8 if full else None
        return _fill(self, _drawn(self, lambda shape: cpu_random.integers(
            a, b, shape, self.dtype, gen, wide)))
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
