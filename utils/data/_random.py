"""Where the data utilities get their random numbers.

The samplers and ``random_split`` shuffle, and each ``DataLoader`` iterator draws its workers'
``base_seed`` (``draw_seed``), from whatever the caller passed as ``generator=``:

* ``None`` or a CPU ``tg.Generator``: PyTorch's draws, so that a seed gives PyTorch's orders
  (Note [PyTorch's CPU streams] in kernels/numpy/random.py): ``randperm`` (and ``randint``
  with replacement) from the generator, or, for ``None``, from the global generator
  (``random_split``, ``SubsetRandomSampler``) or from a new one seeded by a 63-bit draw of the
  global generator (``RandomSampler``, as PyTorch's); a seed is ``random_()`` of an int64.
  A ``tg.Generator`` advances across epochs and ``manual_seed`` restarts it, as in PyTorch.
* a ``numpy.random.Generator``: used as it is (NumPy's permutations), advancing with every
  draw.
* any other object with ``initial_seed()`` (PyTorch's ``Generator`` interface): a NumPy
  generator seeded with that seed and kept for the object, so successive epochs draw new
  permutations and a change of the object's seed restarts the sequence (seeding it again with
  the seed it already has cannot be seen through ``initial_seed()``).
"""

from __future__ import annotations

import weakref

import numpy as np

__all__ = ["numpy_generator", "global_seed", "draw_seed", "torch_generator", "permutation"]

# generator object -> (its initial seed when the NumPy twin was made, the NumPy twin)
_twins: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_twins_by_id: dict = {}  # for generator objects that cannot be weakly referenced


def _seed_from(stream) -> int:
    # PyTorch's ``torch.empty((), dtype=torch.int64).random_(generator=g).item()``
    return int(stream.raw64(1)[0] % (1 << 63))


def global_seed() -> int:
    """A 63-bit seed drawn from tritongrad's global generator (reseeded by ``manual_seed``),
    as PyTorch draws one: an int64 ``random_()``."""
    from ...autograd.ops import creation
    return _seed_from(creation._rng)


def torch_generator(generator, owner: str, fresh: bool = False):
    """The ``tg.Generator`` that PyTorch's code would draw from for ``generator=``, or None
    for a NumPy generator or another object (then ``numpy_generator``'s NumPy draws). For
    ``None``: with ``fresh`` (``RandomSampler``'s rule), a new Generator seeded by one draw of
    the global one; else the global one."""
    from ...autograd.ops.random import Generator, default_generator
    if generator is None:
        return Generator().manual_seed(global_seed()) if fresh else default_generator
    if not isinstance(generator, Generator):
        return None
    if generator.device.type != "cpu":
        raise RuntimeError(f"{owner}: expected a 'cpu' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def permutation(n: int, generator, owner: str, fresh: bool = False) -> list:
    """A random permutation of ``range(n)`` as a list: ``randperm(n)`` from
    ``torch_generator``'s generator (PyTorch's order), else from ``numpy_generator``'s."""
    g = torch_generator(generator, owner, fresh)
    if g is None:
        return numpy_generator(generator, owner).permutation(n).tolist()
    from ...autograd.ops.random import randperm
    return randperm(n, generator=g).tolist()


def draw_seed(generator, owner: str) -> int:
    """A 63-bit seed drawn from what ``generator=`` names (``None``: the global generator), as
    each ``DataLoader`` iterator draws its workers' ``base_seed``. A generator shared with the
    loader's sampler advances for both, as in PyTorch."""
    if generator is None:
        return global_seed()
    g = torch_generator(generator, owner)
    if g is not None:
        return _seed_from(g._numpy())
    return int(numpy_generator(generator, owner).integers(0, 1 << 63))


def numpy_generator(generator, owner: str) -> np.random.Generator:
    """The NumPy generator that ``owner`` (a class or function name, for errors) draws from
    for this ``generator=`` argument; see the module docstring."""
    if generator is None:
        return np.random.default_rng(global_seed())
    if isinstance(generator, np.random.Generator):
        return generator
    g = torch_generator(generator, owner)  # (a tg.Generator, checked for its device)
    if g is not None:
        return g._numpy()
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
