"""``tg.cuda``: CUDA devices, streams, events, memory statistics, CUDA graphs, profiler and
NVTX control.

A thin re-export of ``tritongrad.runtime.cuda_api`` (see that module and docs/runtime.md), plus
what needs autograd: ``make_graphed_callables`` (graphs.py) and the CUDA generators'
``manual_seed``, ``manual_seed_all``, ``get_rng_state`` and ``set_rng_state`` (random numbers
of CUDA tensors are drawn on the device from per-device generators: autograd/ops/random.py).
"""

from ..runtime.cuda_api import *
from ..runtime.cuda_api import __all__ as _api_all
from ..autograd.ops.random import cuda_manual_seed as manual_seed
from ..autograd.ops.random import cuda_manual_seed_all as manual_seed_all
from ..autograd.ops.random import get_cuda_rng_state as get_rng_state
from ..autograd.ops.random import set_cuda_rng_state as set_rng_state
from . import profiler
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
    "get_rng_state", "set_rng_state"]

# the legacy typed-tensor classes of CUDA tensors (``tg.cuda.FloatTensor``)
_legacy_types = legacy_tensor_types("cuda")
globals().update(_legacy_types)
__all__ += list(_legacy_types)


def __getattr__(name: str):
    # tg.cuda.amp (autocast, GradScaler) needs optim, which loads after this module
    if name == "amp":
        from ..amp import cuda_amp
        return cuda_amp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
