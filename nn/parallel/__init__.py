"""Parallelism over modules: ``DistributedDataParallel`` (``tritongrad.nn.parallel``)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
