"""``tg.cuda``: CUDA devices, streams, events, memory statistics, profiler and NVTX control.

A thin re-export of ``tritongrad.runtime.cuda_api`` (see that module and docs/runtime.md).
"""

from ..runtime.cuda_api import *
from ..runtime.cuda_api import __all__ as _api_all
from . import profiler

try:  # tritongrad/cuda/nvtx.py (range_push, range_pop, range, mark) is the NVTX layer's
    from . import nvtx
except ModuleNotFoundError as e:
    if e.name != __name__ + ".nvtx":
        raise
    nvtx = None

__all__ = [n for n in _api_all if not n.startswith("profiler_")] + ["profiler", "nvtx"]
