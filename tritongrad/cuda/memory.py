"""``torch.cuda.memory``: the caching allocator's statistics and controls (the functions of
``runtime/cuda_api.py``: pools, raw allocations, snapshots, the pinned allocator's statistics;
see docs/runtime.md), with PyTorch's deprecated ``*_cached`` names and the nested form of
``memory_stats``."""

from __future__ import annotations

import warnings

from ..runtime.cuda_api import (CUDAPluggableAllocator, MemPool, caching_allocator_alloc,
                                caching_allocator_delete, caching_allocator_disabled,
                                caching_allocator_enable, change_current_allocator,
                                empty_cache, get_allocator_backend,
                                get_per_process_memory_fraction, host_memory_stats,
                                host_memory_stats_as_nested_dict, list_gpu_processes,
                                max_memory_allocated, max_memory_reserved, mem_get_info,
                                memory_allocated, memory_reserved, memory_snapshot,
                                memory_stats, memory_summary,
                                reset_accumulated_host_memory_stats,
                                reset_accumulated_memory_stats, reset_peak_host_memory_stats,
                                reset_peak_memory_stats, set_per_process_memory_fraction,
                                use_mem_pool)

__all__ = ["CUDAPluggableAllocator", "MemPool", "caching_allocator_alloc",
           "caching_allocator_delete", "caching_allocator_disabled", "caching_allocator_enable",
           "change_current_allocator", "empty_cache", "get_allocator_backend",
           "get_per_process_memory_fraction", "host_memory_stats",
           "host_memory_stats_as_nested_dict", "list_gpu_processes", "max_memory_allocated",
           "max_memory_cached", "max_memory_reserved", "mem_get_info", "memory_allocated",
           "memory_cached", "memory_reserved", "memory_snapshot", "memory_stats",
           "memory_stats_as_nested_dict", "memory_summary",
           "reset_accumulated_host_memory_stats", "reset_accumulated_memory_stats",
           "reset_max_memory_allocated", "reset_max_memory_cached",
           "reset_peak_host_memory_stats", "reset_peak_memory_stats",
           "set_per_process_memory_fraction", "use_mem_pool"]


def memory_stats_as_nested_dict(device=None) -> dict:
    """Returns the result of :func:`memory_stats` as a nested dictionary: each dotted key
    (``"allocated_bytes.all.current"``) becomes a path of keys."""
    out: dict = {}
    for key, value in memory_stats(device).items():
        node = out
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def memory_cached(device=None) -> int:
    """Deprecated; see :func:`memory_reserved`."""
    warnings.warn("torch.cuda.memory_cached has been renamed to torch.cuda.memory_reserved",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated; see :func:`max_memory_reserved`."""
    warnings.warn("torch.cuda.max_memory_cached has been renamed to "
                  "torch.cuda.max_memory_reserved", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def reset_max_memory_allocated(device=None) -> None:
    """Resets the starting point in tracking maximum GPU memory occupied by tensors for a given
    device (deprecated: it calls :func:`reset_peak_memory_stats`, which resets all peak
    memory stats)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """Resets the starting point in tracking maximum GPU memory managed by the caching
    allocator for a given device (deprecated: it calls :func:`reset_peak_memory_stats`)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)
