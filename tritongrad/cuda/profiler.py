"""``tg.cuda.profiler``: start/stop profiler data collection (cuProfilerStart/cuProfilerStop).

Example:
    >>> with tg.cuda.profiler.profile():  # doctest: +SKIP
    ...     train_step()  # captured by `nsys --capture-range=cudaProfilerApi`
"""

from ..runtime.cuda_api import profiler_profile as profile
from ..runtime.cuda_api import profiler_start as start
from ..runtime.cuda_api import profiler_stop as stop

__all__ = ["profile", "start", "stop"]
