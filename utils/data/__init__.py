"""``tritongrad.utils.data``: datasets, samplers and ``DataLoader`` (PyTorch's
``torch.utils.data`` surface, loading in the main process or in worker processes).

Example:
    >>> import tritongrad as tg
    >>> from tritongrad.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(tg.randn(10, 3), tg.arange(10))
    >>> for x, y in DataLoader(ds, batch_size=4, shuffle=True):
    ...     pass
"""

from importlib.util import find_spec as _find_spec

from . import _utils  # torch.utils.data._utils.collate import path
from ._collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert", "Dataset",
           "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

# DistributedSampler lives in its own module, written with tritongrad.distributed; exported
# when that module is present (its own import errors are not hidden).
if _find_spec(__name__ + ".distributed") is not None:
    from .distributed import DistributedSampler as DistributedSampler
    __all__.append("DistributedSampler")
