"""Datasets: map-style (``__getitem__`` + ``__len__``) and iterable (``__iter__``), and the
ways to combine and split them, as ``torch.utils.data``."""

from __future__ import annotations

import bisect
import math
import numbers
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from ._random import permutation

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    r"""An abstract class representing a dataset.

    All datasets that represent a map from keys to data samples should subclass it. All
    subclasses should overwrite ``__getitem__``, supporting fetching a data sample for a given
    key. Subclasses could also optionally overwrite ``__len__``, which is expected to return
    the size of the dataset by many samplers and the default options of ``DataLoader``.
    Subclasses could also optionally implement ``__getitems__``, for speedup batched samples
    loading: it accepts a list of indices of samples of a batch and returns a list of samples.

    ``dataset1 + dataset2`` is their ``ConcatDataset``.

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self): return 4
        ...     def __getitem__(self, i): return i * i
        >>> (Squares() + Squares())[5]
        1
    """

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])

    # No default __len__ (PyTorch's reasons: a default would have to guess or raise, and
    # ``len()`` raising TypeError is the signal DataLoader and samplers check for).


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    r"""An iterable Dataset: every dataset that represents an iterable of data samples should
    subclass it. Such a form of datasets is particularly useful when data come from a stream.

    All subclasses should overwrite ``__iter__``, which would return an iterator of samples in
    this dataset. A ``DataLoader`` over it batches the samples in the order they come
    (``shuffle``, ``sampler`` and ``batch_sampler`` are refused). ``a + b`` chains two of them.

    Example:
        >>> class Range(IterableDataset):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(self.n))
        >>> list(Range(2) + Range(3))
        [0, 1, 0, 1, 2]
    """

    # ``__iter__`` stays abstract (from ``Iterable``), as PyTorch's: a subclass without one
    # cannot be instantiated ("Can't instantiate abstract class ...").

    def __add__(self, other):  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    r"""Dataset wrapping tensors. Each sample will be retrieved by indexing tensors along the
    first dimension.

    Args:
        *tensors: tensors that have the same size of the first dimension.

    Example:
        >>> x, y = tg.arange(6.0).reshape(3, 2), tg.tensor([0, 1, 0])
        >>> TensorDataset(x, y)[1]
        (tensor([2., 3.]), tensor(1))
    """

    def __init__(self, *tensors) -> None:
        # (with no tensors it is made, and len() raises IndexError, as PyTorch's)
        n = _first_dim(tensors[0]) if tensors else 0
        for i, t in enumerate(tensors):
            if _first_dim(t) != n:  # PyTorch's type (an assert), kept so except clauses match
                raise AssertionError("Size mismatch between tensors")
        self.tensors = tuple(tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _first_dim(self.tensors[0])


def _first_dim(t) -> int:
    shape = getattr(t, "shape", None)
    if shape is not None and len(shape) == 0:  # PyTorch's error for size(0) of a 0-d tensor
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if shape is None:
        raise ValueError(f"TensorDataset: every tensor needs a first dimension, got "
                         f"{type(t).__name__}, which has no shape")
    return int(shape[0])


class StackDataset(Dataset):
    r"""Dataset as a stacking of multiple datasets of one length: sample ``i`` gathers sample
    ``i`` of each, as a tuple (datasets given positionally) or a dict (given by keyword).

    Example:
        >>> images, labels = TensorDataset(tg.zeros(3, 2)), [7, 8, 9]
        >>> StackDataset(images, labels)[2]
        ((tensor([0., 0.]),), 9)
        >>> StackDataset(x=images, y=labels)[0]["y"]
        7
    """

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            # (PyTorch's words, with its missing space, so that messages compare equal)
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets = args or kwargs
        lengths = [len(d) for d in (args or kwargs.values())]
        if any(n != lengths[0] for n in lengths):
            raise ValueError("Size mismatch between datasets")
        self._length = lengths[0]

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        # each dataset's own batched fetch where it has one (DataLoader calls this)
        def column(d):
            if callable(getattr(d, "__getitems__", None)):
                got = d.__getitems__(indices)
                if len(got) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected "
                                     f"{len(indices)}, got {len(got)}")
                return got
            return [d[i] for i in indices]
        if isinstance(self.datasets, dict):
            cols = {k: column(d) for k, d in self.datasets.items()}
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        cols = [column(d) for d in self.datasets]
        return [tuple(c[j] for c in cols) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    r"""Dataset as a concatenation of multiple datasets. This class is useful to assemble
    different existing datasets.

    Args:
        datasets: list of (map-style) datasets to be concatenated.

    Attributes:
        cumulative_sizes: the running totals of the datasets' lengths.
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence: Sequence) -> list[int]:
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    @property
    def cummulative_sizes(self) -> list[int]:
        """The old, misspelt name of ``cumulative_sizes`` (deprecated, as in PyTorch)."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`",
                      FutureWarning, stacklevel=2)
        return self.cumulative_sizes

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    r"""Dataset for chaining multiple ``IterableDataset``\ s: the chaining happens on the fly.

    Args:
        datasets: datasets to be chained together.
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type]


class Subset(Dataset[T_co]):
    r"""Subset of a dataset at specified indices.

    Args:
        dataset: the whole dataset.
        indices: indices in the whole set selected for subset.
    """

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]  # type: ignore[index]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        # Forwarded so a dataset's batched fetch survives being split (DataLoader calls it).
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T_co], lengths: Sequence[int | float],
                 generator=None) -> list[Subset[T_co]]:
    r"""Randomly split a dataset into non-overlapping new datasets of given lengths.

    If a list of fractions that sum up to 1 is given, the lengths will be computed
    automatically as floor(frac * len(dataset)) for each fraction provided. After computing
    the lengths, if there are any remainders, 1 count will be distributed in round-robin
    fashion to the lengths until there are no remainders left.

    Args:
        dataset: dataset to be split.
        lengths: lengths or fractions of splits to be produced.
        generator: where the random permutation comes from (``None``: tritongrad's global
            generator, so ``tg.manual_seed`` fixes the split; or a ``numpy.random.Generator``,
            or an object with ``initial_seed()``).

    Example:
        >>> a, b = random_split(range(10), [3, 7])
        >>> len(a), len(b)
        (3, 7)
        >>> [len(s) for s in random_split(range(30), [0.3, 0.3, 0.4])]
        [9, 9, 12]
    """
    n = len(dataset)  # type: ignore[arg-type]
    lengths = list(lengths)
    # Fractions are recognised by their sum alone, as PyTorch does: [1] or [1, 0] split the
    # whole dataset too (into one part, or a full and an empty one).
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        sizes = [math.floor(n * frac) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              f"empty dataset.", stacklevel=2)
        lengths = sizes
    if sum(lengths) != n:  # (first, as PyTorch, which has no other check)
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    # PyTorch splits [-1, 11] of 10 items into 9 and 1 (the negative length slices from the
    # end): refused here
    if any(isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 0
           for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative integers or fractions "
                         f"summing to 1, got {lengths}")
    order = permutation(n, generator, "random_split")
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[offset:offset + length]))
        offset += length
    return out
