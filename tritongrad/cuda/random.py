"""``torch.cuda.random``: the CUDA devices' default generators, seeded and saved per device or
for all at once.

Random numbers of CUDA tensors are drawn on the device (counter-based Philox) from one default
generator per device (``autograd/ops/random.py``), made on first use and seeded like the CPU's.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..autograd.ops.random import Generator, cuda_default_generator
from ..autograd.ops.random import cuda_manual_seed as manual_seed
from ..autograd.ops.random import cuda_manual_seed_all as manual_seed_all
from ..autograd.ops.random import get_cuda_rng_state as get_rng_state
from ..autograd.ops.random import set_cuda_rng_state as set_rng_state
from ..autograd.tensor import Tensor
from ..runtime import cuda_api
from ..runtime.device import device as Device

__all__ = ["get_rng_state", "get_rng_state_all", "initial_seed", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "set_rng_state", "set_rng_state_all"]


def _generator(index: int | None = None) -> Generator:
    """The default generator of CUDA device ``index`` (None: the current device)."""
    if index is None:
        index = cuda_api.current_device()
    return cuda_default_generator(Device("cuda", index))


def default_generators() -> tuple:
    """Each CUDA device's default generator (``torch.cuda.default_generators``)."""
    return tuple(_generator(i) for i in range(cuda_api.device_count()))


def get_rng_state_all() -> list[Tensor]:
    """Returns a list of ByteTensor representing the random number states of all devices."""
    return [get_rng_state(Device("cuda", i)) for i in range(cuda_api.device_count())]


def set_rng_state_all(new_states: Iterable[Tensor]) -> None:
    """Sets the random number generator state of all devices.

    Args:
        new_states (Iterable of torch.ByteTensor): The desired state for each device.
    """
    for i, state in enumerate(new_states):
        set_rng_state(state, Device("cuda", i))


def seed() -> None:
    """Sets the seed for generating random numbers to a random number for the current GPU.

    .. warning::
        If you are working with a multi-GPU model, this function will only initialize
        the seed on one GPU. To initialize all GPUs, use :func:`seed_all`.
    """
    _generator().seed()


def seed_all() -> None:
    """Sets the seed for generating random numbers to a random number on all GPUs (one
    random seed, the same on every device)."""
    gens = default_generators()
    if gens:
        s = gens[0].seed()
        for g in gens[1:]:
            g.manual_seed(s)


def initial_seed() -> int:
    """Returns the current random seed of the current GPU."""
    return _generator().initial_seed()
