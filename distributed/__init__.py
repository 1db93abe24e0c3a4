"""``tritongrad.distributed``: data-parallel communication, as ``torch.distributed``.

Processes are launched by MPI (``mpirun -n 2 python train.py``); ``init_process_group("mpi")``
(CPU tensors, through mpi4py) or ``init_process_group("nccl")`` (CUDA tensors, through
nccl4py) connects them, and the collectives (``all_reduce``, ``broadcast``, ``reduce``,
``all_gather``, ``all_gather_into_tensor``, ``gather``, ``scatter``, ``reduce_scatter``,
``reduce_scatter_tensor``, ``all_to_all``, ``all_to_all_single``, ``barrier``,
``monitored_barrier``, ``send``, ``recv``, ``batch_isend_irecv`` and the ``*_object``
ones, ``send_object_list``/``recv_object_list`` too) take PyTorch's arguments, ``group=``,
``group_src=``/``group_dst=`` and ``async_op=`` included; ``new_subgroups`` splits the world.
The key-value stores (``HashStore``, ``FileStore``, ``TCPStore``, ``PrefixStore``) work
without a process group. Importing this
package imports neither mpi4py nor nccl4py: they load when a process group is made. See
docs/distributed.md.

Example (``mpirun -n 2 python -c ...``)::

    >>> import tritongrad as tg
    >>> import tritongrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = tg.ones(3) * (dist.get_rank() + 1)
    >>> dist.all_reduce(t)            # in place, on every rank
    >>> t
    tensor([3., 3., 3.])
    >>> dist.destroy_process_group()
"""

from . import c10d
from .c10d import *  # noqa: F403

__all__ = list(c10d.__all__)

