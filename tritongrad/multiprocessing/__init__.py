"""tritongrad.multiprocessing is a wrapper around the native :mod:`multiprocessing` module.

It registers custom reducers, that use shared memory to provide shared views on the same
data in different processes. Once the tensor/storage is moved to shared_memory (see
:func:`~tritongrad.Tensor.share_memory_`), it will be possible to send it to other processes
without making any copies.

The API is 100% compatible with the original module - it's enough to change
``import multiprocessing`` to ``import tritongrad.multiprocessing`` to have all the tensors
sent through the queues or shared via other mechanisms, moved to shared memory.

Because of the similarity of APIs we do not document most of this package contents, and we
recommend referring to very good docs of the original module. See docs/multiprocessing.md for
what is shared, how, and for how long, and for the differences from PyTorch (CUDA tensors are
refused: no CUDA IPC).

Example (Hogwild)::

    import tritongrad.multiprocessing as mp

    def train(model):
        ...  # an ordinary training loop; its optimizer updates the shared parameters

    model.share_memory()
    procs = [mp.Process(target=train, args=(model,)) for _ in range(4)]
"""

import multiprocessing
from multiprocessing import *  # noqa: F403 - the whole stdlib API, as torch.multiprocessing

from ._shm import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,
                    ProcessRaisedException, spawn, start_processes)

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "get_all_sharing_strategies", "get_sharing_strategy",
           "init_reductions", "set_sharing_strategy", "spawn", "start_processes"]
__all__ += multiprocessing.__all__  # type: ignore[attr-defined]

init_reductions()
