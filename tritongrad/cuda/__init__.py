"""``tg.cuda``: CUDA devices, streams, events, memory statistics, CUDA graphs, profiler and
NVTX control.

A thin re-export of ``tritongrad.runtime.cuda_api`` (see that module and docs/runtime.md), plus
``make_graphed_callables`` (graphs.py), which needs autograd.
"""

from ..runtime.cuda_api import *
from ..runtime.cuda_api import __all__ as _api_all
from . import profiler
from .graphs import make_graphed_callables

try:  # tritongrad/cuda/nvtx.py (range_push, range_pop, range, mark) is the NVTX layer's
    from . import nvtx
except ModuleNotFoundError as e:
    if e.name != __name__ + ".nvtx":
        raise
    nvtx = None

__all__ = [n for n in _api_all if not n.startswith("profiler_")] + [
    "make_graphed_callables", "nvtx", "profiler"]
