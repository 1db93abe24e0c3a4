"""Where the data utilities get their random numbers.

The samplers and ``random_split`` shuffle with a NumPy ``Generator``, and each
``DataLoader`` iterator draws its workers' ``base_seed`` (``draw_seed``), obtained here from
whatever the caller passed as ``generator=``:

* ``None``: a fresh NumPy generator seeded by one draw from tritongrad's global generator, so
  ``tg.manual_seed(s)`` makes every shuffle reproducible (PyTorch seeds its samplers from the
  global generator the same way).
* a CPU ``tg.Generator``: its own stream (the one ``randperm(generator=...)`` draws from), so
  it advances across epochs and ``manual_seed`` restarts it, as in PyTorch.
* a ``numpy.random.Generator``: used as it is, advancing with every draw.
* any other object with ``initial_seed()`` (PyTorch's ``Generator`` interface): a NumPy
  generator seeded with that seed and kept for the object, so successive epochs draw new
  permutations and a change of the object's seed restarts the sequence (seeding it again with
  the seed it already has cannot be seen through ``initial_seed()``).
"""

from __future__ import annotations

import weakref

import numpy as np

__all__ = ["numpy_generator", "global_seed", "draw_seed"]

# generator object -> (its initial seed when the NumPy twin was made, the NumPy twin)
_twins: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_twins_by_id: dict = {}  # for generator objects that cannot be weakly referenced


def global_seed() -> int:
    """A 63-bit seed drawn from tritongrad's global generator (reseeded by ``manual_seed``)."""
    from ...autograd.ops import creation
    return int(creation._rng.integers(0, 1 << 63))


def draw_seed(generator, owner: str) -> int:
    """A 63-bit seed drawn from what ``generator=`` names (``None``: the global generator), as
    each ``DataLoader`` iterator draws its workers' ``base_seed``. A generator shared with the
    loader's sampler advances for both, as in PyTorch."""
    if generator is None:
        return global_seed()
    return int(numpy_generator(generator, owner).integers(0, 1 << 63))


def numpy_generator(generator, owner: str) -> np.random.Generator:
    """The NumPy generator that ``owner`` (a class or function name, for errors) draws from
    for this ``generator=`` argument; see the module docstring."""
    if generator is None:
        return np.random.default_rng(global_seed())
    if isinstance(generator, np.random.Generator):
        return generator
    from ...autograd.ops.random import Generator
    if isinstance(generator, Generator):
        if generator.device.type != "cpu":
            raise RuntimeError(f"{owner}: expected a 'cpu' device type for generator but found "
                               f"'{generator.device.type}'")
        return generator._numpy()
    initial_seed = getattr(generator, "initial_seed", None)
    if not callable(initial_seed):
        raise TypeError(f"{owner}: generator must be None, a tg.Generator, a "
                        f"numpy.random.Generator or an object with initial_seed(), got "
                        f"{type(generator).__name__}")
    seed = int(initial_seed())
    try:
        cached = _twins.get(generator)
        store = _twins
        key = generator
    except TypeError:
        cached = _twins_by_id.get(id(generator))
        store, key = _twins_by_id, id(generator)
    if cached is None or cached[0] != seed:
        cached = (seed, np.random.default_rng(seed))
        store[key] = cached
    return cached[1]
