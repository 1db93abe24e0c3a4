"""Parallelism over modules: ``DataParallel`` and ``DistributedDataParallel``
(``tritongrad.nn.parallel``)."""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
