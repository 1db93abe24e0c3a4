"""``tritongrad.random``: PyTorch's ``torch.random``, the global random number generator
(``default_generator``), its seed and state, and ``fork_rng``, which restores the CPU's and the
CUDA devices' generators when it exits.

The generators themselves are ``autograd/ops/random.py``'s: this module only names them as
PyTorch does.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Iterator

from .autograd.ops.creation import initial_seed, manual_seed, seed
from .autograd.ops.random import default_generator, get_rng_state, set_rng_state

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed",
           "seed", "set_rng_state"]

_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(devices: Iterable | None = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str | None = None) -> Iterator[None]:
    """Forks the RNG, so that when you return, the RNG is reset to the state that it was
    previously in.

    Args:
        devices: the CUDA device indices for which to fork the RNG. The CPU RNG state is
            always forked. By default it forks every device, with a warning when there are
            more than one (pass ``devices`` to silence it).
        enabled: if False, the RNG is not forked (a convenience to disable the context
            manager without removing it).
        device_type: the device type whose generators are forked besides the CPU's: only
            ``"cuda"`` (the default) or ``"meta"`` (nothing forked).

    Example::

        >>> with tg.random.fork_rng():
        ...     a = tg.rand(2)
        >>> bool((tg.rand(2) == a).all())  # drawn again from the same state
        True
    """
    global _fork_rng_warned_already
    if device_type == "meta" or not enabled:
        yield
        return
    device_type = device_type or "cuda"
    if device_type != "cuda":
        raise RuntimeError(f"tritongrad has no module of `{device_type}` (its accelerator is "
                           f"cuda)")
    from . import cuda
    if devices is None:
        count = cuda.device_count()
        if count > 1 and not _fork_rng_warned_already:
            kind = device_type.upper()
            warnings.warn(
                f"{kind} reports that you have {count} available devices, and you have used "
                f"{_caller} without explicitly specifying which devices are being used. For "
                f"safety, we initialize *every* {kind} device by default, which can be quite "
                f"slow if you have a lot of {kind}s. If you know that you are only making use "
                f"of a few {kind} devices, set the environment variable {kind}_VISIBLE_DEVICES "
                f"or the '{_devices_kw}' keyword argument of {_caller} with the set of devices "
                f"you are actually using. To initialize all devices and suppress this warning, "
                f"set the '{_devices_kw}' keyword argument to "
                f"`range(torch.{device_type}.device_count())`.", stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(count))
    else:
        devices = list(devices)  # (a generator would be exhausted by the first pass)
    cpu_state = get_rng_state()
    device_states = [cuda.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            cuda.set_rng_state(state, d)

