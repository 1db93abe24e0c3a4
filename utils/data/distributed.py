"""``DistributedSampler``: each process of a data-parallel job reads its own share of a
dataset, as ``torch.utils.data.distributed.DistributedSampler``."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[int]):
    r"""Sampler that restricts data loading to a subset of the dataset.

    It is especially useful in conjunction with
    :class:`tritongrad.nn.parallel.DistributedDataParallel`. In such a case, each process can
    pass a ``DistributedSampler`` instance as a ``DataLoader`` sampler, and load a subset of
    the original dataset that is exclusive to it.

    The indices are assigned exactly as PyTorch assigns them: the (shuffled) index list is
    padded by repeating its first indices up to a multiple of ``num_replicas`` (or cut down to
    one with ``drop_last``), and process ``rank`` takes every ``num_replicas``-th index starting
    at ``rank``. With ``shuffle=True`` the order is ``randperm(n)`` from a generator seeded
    with ``seed + epoch``: the same on every process, and PyTorch's permutation.

    Args:
        dataset: dataset used for sampling (anything with ``len``).
        num_replicas: number of processes participating in distributed training (default:
            the world size of the default process group).
        rank: rank of the current process within ``num_replicas`` (default: this process's
            rank in the default process group).
        shuffle: if True (default), the sampler shuffles the indices.
        seed: random seed used to shuffle the sampler; must be identical across all
            processes.
        drop_last: if True, drop the tail of the data to make it evenly divisible across the
            replicas; if False, add extra indices (repeats) instead.

    .. warning::
        In distributed mode, calling :meth:`set_epoch` at the beginning of each epoch
        **before** creating the ``DataLoader`` iterator is necessary to make shuffling work
        properly across multiple epochs. Otherwise, the same ordering will be always used.

    Example:
        >>> s = DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)
        >>> list(s)
        [1, 4, 7, 0]
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            # (before init_process_group these raise PyTorch's "Default process group has
            # not been initialized" error, a ValueError and a RuntimeError)
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        # (num_replicas <= 0 leaves no valid rank: PyTorch's message says so)
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            # the largest even split: each replica gets the same number, the tail is dropped
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            # the same on every replica: seeded by seed + epoch only
            from ...autograd.ops.random import Generator, randperm
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        mine = indices[self.rank:self.total_size:self.num_replicas]
        assert len(mine) == self.num_samples
        return iter(mine)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        r"""Sets the epoch for this sampler. When ``shuffle=True``, this ensures all replicas
        use a different random ordering for each epoch. Otherwise, the next iteration of this
        sampler will yield the same ordering.

        Args:
            epoch: epoch number.
        """
        self.epoch = epoch
