"""``tg.cuda.nvtx``: NVTX ranges and marks, as ``torch.cuda.nvtx`` (tritongrad.runtime.nvtx).

Example:
    >>> import tritongrad as tg
    >>> with tg.cuda.nvtx.range("step {}", 0):
    ...     tg.cuda.nvtx.mark("checkpoint")
"""

from ..runtime.nvtx import mark, range, range_end, range_pop, range_push, range_start

__all__ = ["mark", "range", "range_end", "range_pop", "range_push", "range_start"]
