"""``tg.cuda``: CUDA devices, streams, events, memory statistics, CUDA graphs, profiler and
NVTX control.

A thin re-export of ``tritongrad.runtime.cuda_api`` (see that module and docs/runtime.md), with
``memory`` (its allocator functions and PyTorch's deprecated names) and ``capabilities``
(bfloat16, TF32, architectures), plus what needs autograd: ``make_graphed_callables``
(graphs.py) and the CUDA generators' seeding and states (``random``: random numbers of CUDA tensors are drawn on the device from
per-device generators, autograd/ops/random.py).
"""

from ..runtime.cuda_api import *
from ..runtime.cuda_api import __all__ as _api_all
from ..autograd.ops.random import cuda_manual_seed as manual_seed
from ..autograd.ops.random import cuda_manual_seed_all as manual_seed_all
from ..autograd.ops.random import get_cuda_rng_state as get_rng_state
from ..autograd.ops.random import set_cuda_rng_state as set_rng_state
from . import memory, profiler, random
from .capabilities import get_arch_list, get_gencode_flags, is_bf16_supported, is_tf32_supported
from .memory import (max_memory_cached, memory_cached, memory_stats_as_nested_dict,
                     reset_max_memory_allocated, reset_max_memory_cached)
from .random import get_rng_state_all, initial_seed, seed, seed_all, set_rng_state_all
from ..runtime.sync_debug import get_sync_debug_mode, set_sync_debug_mode
from ..autograd.ops.conversion import legacy_tensor_types
from .graphs import make_graphed_callables

try:  # tritongrad/cuda/nvtx.py (range_push, range_pop, range, mark) is the NVTX layer's
    from . import nvtx
except ModuleNotFoundError as e:
    if e.name != __name__ + ".nvtx":
        raise
    nvtx = None

__all__ = [n for n in _api_all if not n.startswith("profiler_")] + [
    "make_graphed_callables", "nvtx", "profiler", "manual_seed", "manual_seed_all",
    "get_rng_state", "set_rng_state", "memory", "random", "get_arch_list", "is_bf16_supported",
    "is_tf32_supported", "max_memory_cached", "memory_cached", "memory_stats_as_nested_dict",
    "reset_max_memory_allocated", "reset_max_memory_cached", "get_rng_state_all",
    "initial_seed", "seed", "seed_all", "set_rng_state_all", "device_of", "StreamContext",
    "get_sync_debug_mode", "set_sync_debug_mode", "get_gencode_flags", "default_generators"]

StreamContext = stream  # (torch.cuda.stream(s) returns a StreamContext; ours is the class)


class device_of(device):
    """Context-manager that changes the current device to that of given object.

    You can use both tensors and storages as arguments. If a given object is not allocated on
    a GPU, this is a no-op.

    Args:
        obj (Tensor or Storage): object allocated on the selected device.
    """

    __slots__ = ()

    def __init__(self, obj):
        dev = getattr(obj, "device", None)
        super().__init__(dev.index if dev is not None and dev.type == "cuda" else -1)

# the legacy typed-tensor classes of CUDA tensors (``tg.cuda.FloatTensor``)
_legacy_types = legacy_tensor_types("cuda")
globals().update(_legacy_types)
__all__ += list(_legacy_types)


def __getattr__(name: str):
    # tg.cuda.amp (autocast, GradScaler) needs optim, which loads after this module
    if name == "amp":
        from ..amp import cuda_amp
        return cuda_amp
    if name == "default_generators":  # (made on first use, as each device's generator is)
        return random.default_generators()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"amp", "default_generators"})
