"""Samplers: the order in which a ``DataLoader`` visits a dataset's indices.

A sampler is an iterable of indices (or, for ``BatchSampler``, of lists of indices) with an
optional ``__len__``, as ``torch.utils.data.Sampler``. Random samplers draw as PyTorch's do
from their ``generator=`` argument (utils/data/_random.py: PyTorch's orders for a seed, or a
NumPy generator's).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

import numpy as np

from ._random import numpy_generator, permutation, torch_generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    r"""Base class for all samplers.

    Every sampler subclass has to provide an ``__iter__`` method, providing a way to iterate
    over indices or lists of indices (batches) of dataset elements, and may provide a
    ``__len__`` method that returns the length of the returned iterators.

    Args:
        data_source: accepted for compatibility with older PyTorch code and not used.

    Example:
        >>> class EveryOther(Sampler[int]):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(0, self.n, 2))
        ...     def __len__(self): return (self.n + 1) // 2
        >>> list(EveryOther(5))
        [0, 2, 4]
    """

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError  # (PyTorch's: no message)

    # No default __len__: as in PyTorch, len() of a sampler without one raises TypeError, and
    # DataLoader.__len__ relies on that to report "no length".


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")
    return int(value)


class SequentialSampler(Sampler[int]):
    r"""Samples elements sequentially, always in the same order.

    Args:
        data_source: dataset to sample from.
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    r"""Samples elements randomly. If without replacement, then sample from a shuffled
    dataset. If with replacement, then user can specify ``num_samples`` to draw.

    Args:
        data_source: dataset to sample from.
        replacement: samples are drawn on-demand with replacement if ``True`` (default
            ``False``).
        num_samples: number of samples to draw (default ``len(dataset)``). Without
            replacement, a number above the dataset's length repeats whole permutations.
        generator: where the random numbers come from (see ``utils.data._random``).
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator=None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_count("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        # Read at each use, as PyTorch: the dataset may change size after construction.
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        g = torch_generator(self.generator, "RandomSampler", fresh=True)
        if g is not None:  # PyTorch's draws: randint in chunks of 32, or whole permutations
            yield from self._torch_order(n, g)
            return
        rng = numpy_generator(self.generator, "RandomSampler")
        if self.replacement:
            yield from rng.integers(0, n, size=self.num_samples).tolist()
            return
        # Whole permutations, then the head of one more (PyTorch's order of draws).
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def _torch_order(self, n: int, g) -> Iterator[int]:
        from ...autograd.ops.creation import randint
        from ...autograd.ops.random import randperm
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(0, n, (32,), generator=g).tolist()
            yield from randint(0, n, (self.num_samples % 32,), generator=g).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=g).tolist()
        yield from randperm(n, generator=g).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    r"""Samples elements randomly from a given list of indices, without replacement.

    Args:
        indices: a sequence of indices.
        generator: where the random numbers come from.
    """

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in permutation(len(self.indices), self.generator, "SubsetRandomSampler"):
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    r"""Samples elements from ``[0, .., len(weights)-1]`` with given probabilities (weights).

    Args:
        weights: a sequence of weights, not necessary summing up to one (a list, a NumPy
            array or a 1-D tensor).
        num_samples: number of samples to draw.
        replacement: if ``True``, samples are drawn with replacement. If not, they are drawn
            without replacement, which means that when a sample index is drawn for a row, it
            cannot be drawn again for that row.
        generator: where the random numbers come from: ``None`` (the global generator) or a
            ``tg.Generator`` draw ``multinomial(weights, num_samples, replacement)``, so a
            seed gives PyTorch's indices.

    Example:
        >>> list(WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0, 0.6], 5, replacement=True))
        [4, 4, 1, 4, 5]   # for instance
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        _check_count("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        from ...autograd.ops.creation import as_tensor
        from ...runtime.dtype import float64
        # a float64 tensor, as PyTorch's (``sampler.weights`` is read by user code); negative
        # or NaN weights raise at iteration, from multinomial, as PyTorch's
        w = as_tensor(_host(weights), dtype=float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        # More samples than non-zero weights without replacement is not refused, as in
        # PyTorch: its multinomial then draws the zero-weight indices last.
        self.weights = w
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        g = torch_generator(self.generator, "WeightedRandomSampler")
        if g is not None:  # (None: the global generator) PyTorch's multinomial draws
            from ...autograd.ops.random import multinomial
            yield from multinomial(self.weights, self.num_samples, self.replacement,
                                   generator=g).tolist()
            return
        rng = numpy_generator(self.generator, "WeightedRandomSampler")
        w = self.weights.numpy()
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: invalid multinomial distribution "
                               "(weights must be finite and non-negative with a positive sum)")
        if self.replacement:
            yield from rng.choice(len(w), size=self.num_samples, p=w / w.sum()).tolist()
            return
        if self.num_samples > len(w):  # (PyTorch's multinomial's words)
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        # Without replacement: the smallest of Exp(1)/w keys, i.e. successive draws in
        # proportion to the weights left; zero weights come last, as in PyTorch's multinomial
        with np.errstate(divide="ignore"):
            keys = rng.exponential(size=len(w)) / w
        yield from np.argsort(keys, kind="stable")[: self.num_samples].tolist()

    def __len__(self) -> int:
        return self.num_samples


def _host(values):
    """A list, array or tritongrad Tensor as something NumPy can read."""
    from ...autograd.tensor import Tensor
    return values.detach().cpu().numpy() if isinstance(values, Tensor) else values


class BatchSampler(Sampler[list[int]]):
    r"""Wraps another sampler to yield a mini-batch of indices.

    Args:
        sampler: base sampler. Can be any iterable object.
        batch_size: size of mini-batch.
        drop_last: if ``True``, the sampler will drop the last batch if its size would be less
            than ``batch_size``.

    Example:
        >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
        >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True))
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) \
                or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
