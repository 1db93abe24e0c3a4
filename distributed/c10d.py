"""Process groups and collectives, under ``torch.distributed``'s names and semantics.

A process group is a set of ranks (processes) that take part in collectives together. The
default group (``WORLD``) is made by ``init_process_group``; ``new_group`` makes subgroups.
Each group holds a backend object (``_mpi.MPIBackend`` or ``_nccl.NCCLBackend``) that starts
the operations; this module checks the arguments once for every backend, maps global ranks to
group ranks, and turns a backend's Work into PyTorch's ``async_op`` contract: with
``async_op=True`` a ``Work`` is returned, otherwise the call waits and returns None.

Every rank of a group must call the same collectives in the same order (MPI and NCCL both
require it). Set ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` to have every collective first compare its
operation, dtype and shape across the ranks (one small extra exchange per call) and raise a
clear error on a mismatch instead of hanging or returning garbage.
"""

from __future__ import annotations

import enum
import os
import warnings

from ._work import Work, completed

__all__ = [
    "Backend",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "get_backend",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter_tensor",
    "send",
]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class _NotInitialized(ValueError, RuntimeError):
    """Raised by every call that needs the default group before ``init_process_group``:
    PyTorch 2 raises ValueError here and PyTorch 1 RuntimeError; both ``except`` clauses
    catch this one."""


class Backend(str):
    """The name of a backend: ``Backend.MPI`` ("mpi", CPU tensors; CUDA tensors staged
    through host memory) or ``Backend.NCCL`` ("nccl", CUDA tensors)."""

    MPI = "mpi"
    NCCL = "nccl"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name!r}")
        value = name.lower()
        if value not in (cls.MPI, cls.NCCL):
            raise ValueError(f"Invalid backend: '{name}'; tritongrad.distributed supports "
                             f"'mpi' and 'nccl' (gloo and ucc are not implemented)")
        return str.__new__(cls, value)


class ReduceOp:
    """The reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor``:
    ``ReduceOp.SUM``, ``PRODUCT``, ``MIN``, ``MAX``, ``AVG`` (the sum divided by the group's
    size; floating-point and complex tensors only) and the bitwise ``BAND``, ``BOR``, ``BXOR``
    (integer and bool tensors)."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7


for _m in ReduceOp.RedOpType:
    setattr(ReduceOp, _m.name, _m)
del _m


class GroupMember:
    """``GroupMember.WORLD`` is the default group (None before ``init_process_group``);
    ``GroupMember.NON_GROUP_MEMBER`` is what ``new_group`` returns to ranks outside it."""

    WORLD = None
    NON_GROUP_MEMBER = object()


class ProcessGroup:
    """A group of ranks that communicate together, over one backend.

    ``ranks`` are the members' global ranks, in group-rank order (sorted, as PyTorch)."""

    def __init__(self, backend_name: str, impl, ranks: list[int], rank: int):
        self._backend_name = backend_name
        self._impl = impl
        self._ranks = ranks
        self._rank = rank

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """The number of ranks in the group."""
        return len(self._ranks)

    def name(self) -> str:
        return self._backend_name

    def __repr__(self) -> str:
        return (f"ProcessGroup(backend={self._backend_name!r}, rank={self._rank}, "
                f"ranks={self._ranks})")


class _State:
    def __init__(self):
        self.world: ProcessGroup | None = None
        self.groups: list = []  # every group made by new_group, freed by destroy_process_group


_state = _State()


def is_available() -> bool:
    """True: the distributed package is part of tritongrad (its backends need mpi4py, and
    nccl4py for ``nccl``; see ``is_mpi_available`` / ``is_nccl_available``)."""
    return True


def is_mpi_available() -> bool:
    """True if the MPI backend can be used (mpi4py imports)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """True if the NCCL backend's package, nccl4py, is installed."""
    import importlib.util
    try:
        return importlib.util.find_spec("nccl") is not None \
            and importlib.util.find_spec("nccl.core") is not None
    except ModuleNotFoundError:
        return False


def is_initialized() -> bool:
    """True if the default process group has been initialized."""
    return _state.world is not None


# -- setup -----------------------------------------------------------------------------------

def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout=None, world_size: int = -1, rank: int = -1, store=None,
                       group_name: str = "", pg_options=None, device_id=None) -> None:
    """Initializes the default distributed process group.

    The processes are started by an MPI launcher (``mpirun -n 2 python train.py``), which also
    does the rendezvous: each process's rank and the world size come from MPI, for both
    backends (``nccl`` uses MPI to share its unique id). A process started without a launcher
    is a world of one.

    Args:
        backend: ``"mpi"`` (CPU tensors; CUDA tensors are staged through host memory) or
            ``"nccl"`` (CUDA tensors, through the ``nccl4py`` package). None picks ``"mpi"``.
        init_method: None or ``"env://"``; other URLs (``tcp://``, ``file://``) would need a
            rendezvous of tritongrad's own, which MPI's launcher makes unnecessary.
        timeout: not supported (MPI and NCCL collectives cannot be abandoned); must be None.
        world_size: the number of processes, if given: must equal MPI's.
        rank: this process's rank, if given: must equal MPI's.
        store: not supported (the launcher is the rendezvous); must be None.
        group_name, pg_options: accepted for compatibility; must be empty / None.
        device_id: for ``nccl``, the ``tg.device("cuda", i)`` this process uses (default: the
            current CUDA device).

    Example::

        # mpirun -n 2 python script.py
        >>> import tritongrad.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.get_world_size()
        2
    """
    if _state.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend or Backend.MPI)
    if init_method not in (None, "env://"):
        raise ValueError(f"init_process_group: init_method={init_method!r} is not supported: "
                         f"processes are started and connected by an MPI launcher "
                         f"(mpirun -n N python script.py); pass None or 'env://'")
    for arg, value, fix in (("timeout", timeout, None), ("store", store, None),
                            ("pg_options", pg_options, None), ("group_name", group_name, "")):
        if value != fix:
            raise NotImplementedError(f"init_process_group: {arg} is not supported by "
                                      f"tritongrad's MPI-launched process groups; leave it at "
                                      f"{fix!r}")
    if name == Backend.NCCL:
        from ._nccl import load_nccl
        load_nccl()  # before MPI starts: a missing package is reported first
    from ._mpi import MPIBackend, load_mpi
    MPI = load_mpi()
    world = MPI.COMM_WORLD
    mpi_rank, mpi_size = world.Get_rank(), world.Get_size()
    if world_size not in (-1, mpi_size):
        raise ValueError(f"init_process_group: world_size={world_size}, but MPI started "
                         f"{mpi_size} processes (mpirun -n {mpi_size}); omit world_size or "
                         f"make them agree")
    if rank not in (-1, mpi_rank):
        raise ValueError(f"init_process_group: rank={rank}, but MPI gave this process rank "
                         f"{mpi_rank}; omit rank or make them agree")
    impl = MPIBackend(world.Dup())  # our own communicator: user MPI traffic never mixes in
    if name == Backend.NCCL:
        from ._nccl import NCCLBackend
        impl = NCCLBackend(impl, device_id)
    _state.world = ProcessGroup(name, impl, list(range(mpi_size)), mpi_rank)
    GroupMember.WORLD = _state.world


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroys ``group`` (default: the default group, and with it every group made by
    ``new_group``). Afterwards ``init_process_group`` may be called again."""
    if group is None or group is _state.world:
        if _state.world is None:
            raise _NotInitialized(_NOT_INITIALIZED)
        for g in _state.groups + [_state.world]:
            g._impl.free()
        _state.groups = []
        _state.world = GroupMember.WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group not in _state.groups:
        raise ValueError("destroy_process_group: this group is unknown or already destroyed")
    _state.groups.remove(group)
    group._impl.free()


def new_group(ranks: list[int] | None = None, timeout=None, backend: str | None = None,
              pg_options=None, use_local_synchronization: bool = False) -> ProcessGroup:
    """Creates a group of a subset of the world's ranks (default: all of them).

    Every process of the world must call it, members or not, with the same ``ranks``. The
    members get the group (ranks numbered by their order in ``sorted(ranks)``); the others
    get ``GroupMember.NON_GROUP_MEMBER``, and collectives they call with it do nothing.

    Args:
        ranks: global ranks of the members.
        backend: must be None or the default group's backend.
        timeout, pg_options, use_local_synchronization: not supported; leave them at their
            defaults.
    """
    world = _world()
    if timeout is not None or pg_options is not None or use_local_synchronization:
        raise NotImplementedError("new_group: timeout, pg_options and use_local_synchronization "
                                  "are not supported; leave them at their defaults")
    if backend is not None and Backend(backend) != world._backend_name:
        raise ValueError(f"new_group: backend {backend!r} differs from the default group's "
                         f"{world._backend_name!r}; tritongrad groups share the default backend")
    n = world.size()
    members = sorted(range(n) if ranks is None else {int(r) for r in ranks})
    bad = [r for r in members if not 0 <= r < n]
    if bad:
        raise ValueError(f"new_group: ranks {bad} are out of range for a world of {n} "
                         f"processes")
    member = world.rank() in members
    impl = world._impl.split(member, world.rank())
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    group = ProcessGroup(world._backend_name, impl, members, members.index(world.rank()))
    _state.groups.append(group)
    return group


# -- queries ---------------------------------------------------------------------------------

def _world() -> ProcessGroup:
    if _state.world is None:
        raise _NotInitialized(_NOT_INITIALIZED)
    return _state.world


def _group(group, op: str) -> ProcessGroup | None:
    """The group to use (None means the default one), or None when this rank is not in it."""
    world = _world()
    if group is None:
        return world
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{op}: group must be a ProcessGroup from new_group or None, got "
                        f"{type(group).__name__}")
    return group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (default: the world); -1 if it is not a member."""
    g = _group(group, "get_rank")
    return -1 if g is None else g.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of processes in ``group`` (default: the world); -1 for a non-member."""
    g = _group(group, "get_world_size")
    return -1 if g is None else g.size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend of ``group`` (default: the world), e.g. ``"mpi"``."""
    g = _group(group, "get_backend")
    if g is None:
        raise ValueError("Invalid process group specified")
    return g._backend_name


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order."""
    g = _group(group, "get_process_group_ranks")
    if g is None:
        raise ValueError("Invalid process group specified")
    return list(g._ranks)


# -- argument checks (written once for every collective) --------------------------------------

def _check_tensor(op: str, t, name: str, g: ProcessGroup) -> None:
    from ..autograd.tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a tritongrad Tensor, got {type(t).__name__}")
    if g._backend_name == Backend.NCCL and t._device.type != "cuda":
        raise ValueError(f"{op}: the 'nccl' backend works on CUDA tensors, but {name} is on "
                         f"{t._device}; move it with .cuda() or use the 'mpi' backend for CPU "
                         f"tensors")


def _check_same(op: str, a, an: str, b, bn: str) -> None:
    if a._dtype is not b._dtype:
        raise ValueError(f"{op}: {an} and {bn} must have the same dtype, got {a._dtype} and "
                         f"{b._dtype}")
    if a._device != b._device:
        raise ValueError(f"{op}: {an} and {bn} must be on the same device, got {a._device} "
                         f"and {b._device}")


def _check_pair(op: str, g: ProcessGroup, a, an: str, b, bn: str) -> None:
    """Both tensors fit the group's backend, with one dtype and one device."""
    _check_tensor(op, a, an, g)
    _check_tensor(op, b, bn, g)
    _check_same(op, a, an, b, bn)


def _check_world_multiple(op: str, g: ProcessGroup, big, big_name: str, small,
                          small_name: str, rule: str) -> None:
    """``big`` holds ``small`` once per rank (PyTorch's ``rule`` when it does not)."""
    if big.numel() != small.numel() * g.size():
        raise ValueError(f"{op}: {rule}: {big_name} has {big.numel()} elements "
                         f"{list(big.shape)}, {small_name} {small.numel()} {list(small.shape)}, "
                         f"world_size {g.size()}")


def _op_name(op: str, red, t) -> str:
    if not isinstance(red, ReduceOp.RedOpType):
        raise TypeError(f"{op}: op must be a ReduceOp (e.g. ReduceOp.SUM), got {red!r}")
    d = t._dtype
    if red is ReduceOp.AVG and not (d.is_floating_point or d.is_complex):
        raise ValueError(f"{op}: ReduceOp.AVG needs a floating-point or complex tensor, got "
                         f"{d}; reduce with SUM and divide, or convert first")
    if red in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and (d.is_floating_point
                                                                 or d.is_complex):
        raise ValueError(f"{op}: ReduceOp.{red.name} needs an integer or bool tensor, got {d}")
    if red in (ReduceOp.MIN, ReduceOp.MAX) and d.is_complex:
        raise ValueError(f"{op}: ReduceOp.{red.name} is undefined for complex tensors ({d})")
    return red.name


def _group_rank(op: str, g: ProcessGroup, global_rank: int, name: str) -> int:
    try:
        return g._ranks.index(int(global_rank))
    except ValueError:
        raise ValueError(f"{op}: {name}={global_rank}: the global rank {global_rank} is not "
                         f"part of the group (ranks {g._ranks})") from None


def _debug_check(op: str, g: ProcessGroup, *facts) -> None:
    """Under TORCH_DISTRIBUTED_DEBUG=DETAIL: compare this call's op, dtypes and shapes with
    every rank's (one small pickled allgather), so a mismatch raises on every rank."""
    if os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() != "DETAIL":
        return
    mine = (op,) + tuple(facts)
    everyone = g._impl.allgather_object(mine)
    if any(f != mine for f in everyone):
        detail = "; ".join(f"rank {g._ranks[i]}: {f}" for i, f in enumerate(everyone))
        raise RuntimeError(f"{op}: the ranks called mismatched collectives (operation, dtype, "
                           f"shape): {detail}")


def _facts(t) -> tuple:
    return (str(t._dtype), tuple(t.shape))


def _finish(work: Work, async_op: bool, outputs: tuple):
    work._outputs = list(outputs)
    if async_op:
        return work
    work.wait()
    return None


def _not_member(op: str, async_op: bool):
    warnings.warn(f"Running {op} on a rank that does not belong to the given group.",
                  stacklevel=3)
    return completed() if async_op else None


def _then(work: Work, after) -> Work:
    """``work`` with ``after()`` run once its own completion step has run."""
    inner = work._finish

    def finish():
        r = inner() if inner is not None else None
        after()
        return r
    work._finish = finish
    return work


# -- collectives -------------------------------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduces the tensor data across all machines in such a way that all get the final
    result. After the call ``tensor`` is going to be bitwise identical in all processes
    (modified in place; its version counter is bumped as by an in-place op).

    Args:
        tensor: input and output of the collective.
        op: one of the ``ReduceOp`` values.
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.

    Returns:
        An async work handle if ``async_op`` is True; None otherwise.

    Example (``mpirun -n 2``)::

        >>> t = tg.arange(2, dtype=tg.float32) + 1 + 2 * dist.get_rank()
        >>> dist.all_reduce(t)
        >>> t
        tensor([4., 6.])
    """
    g = _group(group, "all_reduce")
    if g is None:
        return _not_member("all_reduce", async_op)
    _check_tensor("all_reduce", tensor, "tensor", g)
    red = _op_name("all_reduce", op, tensor)
    _debug_check("all_reduce", g, red, *_facts(tensor))
    return _finish(g._impl.allreduce(tensor, red), async_op, (tensor,))


def broadcast(tensor, src: int, group: ProcessGroup | None = None,
              async_op: bool = False) -> Work | None:
    """Broadcasts the tensor to the whole group: ``tensor`` must have the same number of
    elements in all processes; on the ranks other than ``src`` it is overwritten in place.

    Args:
        tensor: data to be sent if ``src`` is the rank of the current process, and tensor to
            be used to save received data otherwise.
        src: source rank (global, as in PyTorch).
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
    """
    g = _group(group, "broadcast")
    if g is None:
        return _not_member("broadcast", async_op)
    _check_tensor("broadcast", tensor, "tensor", g)
    root = _group_rank("broadcast", g, src, "src")
    _debug_check("broadcast", g, src, *_facts(tensor))
    return _finish(g._impl.broadcast(tensor, root), async_op, (tensor,))


def reduce(tensor, dst: int, op=ReduceOp.SUM, group: ProcessGroup | None = None,
           async_op: bool = False) -> Work | None:
    """Reduces the tensor data across all machines; only the process with rank ``dst`` is
    going to receive the final result (in ``tensor``, in place). The other ranks' tensors
    keep their values here (PyTorch leaves them unspecified).

    Args:
        tensor: input and output of the collective.
        dst: destination rank (global).
        op: one of the ``ReduceOp`` values.
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
    """
    g = _group(group, "reduce")
    if g is None:
        return _not_member("reduce", async_op)
    _check_tensor("reduce", tensor, "tensor", g)
    red = _op_name("reduce", op, tensor)
    root = _group_rank("reduce", g, dst, "dst")
    _debug_check("reduce", g, dst, red, *_facts(tensor))
    return _finish(g._impl.reduce(tensor, root, red), async_op, (tensor,))


def all_gather_into_tensor(output_tensor, input_tensor, group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Gathers tensors from all ranks and puts them in a single output tensor.

    Args:
        output_tensor: output tensor to accommodate tensor elements from all ranks; its size
            must be ``world_size`` times the input's, either stacked (``(world_size, *shape)``)
            or concatenated along the first dimension (``(world_size * shape[0], ...)``);
            rank ``i``'s input lands in the ``i``-th block.
        input_tensor: tensor to be gathered from the current rank.
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
    """
    op = "all_gather_into_tensor"
    g = _group(group, op)
    if g is None:
        return _not_member(op, async_op)
    _check_pair(op, g, output_tensor, "output_tensor", input_tensor, "input_tensor")
    _check_world_multiple(op, g, output_tensor, "output", input_tensor, "input",
                          "output tensor size must be equal to world_size times input tensor "
                          "size")
    _debug_check(op, g, *_facts(input_tensor))
    return _finish(g._impl.allgather(output_tensor, input_tensor), async_op, (output_tensor,))


def all_gather(tensor_list: list, tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Gathers tensors from the whole group in a list: ``tensor_list[i]`` receives rank
    ``i``'s ``tensor`` (every entry must have ``tensor``'s shape, dtype and device).

    Args:
        tensor_list: output list of ``world_size`` tensors.
        tensor: tensor to be broadcast from the current process.
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
    """
    op = "all_gather"
    g = _group(group, op)
    if g is None:
        return _not_member(op, async_op)
    _check_tensor(op, tensor, "tensor", g)
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != g.size():
        n = len(tensor_list) if isinstance(tensor_list, (list, tuple)) else tensor_list
        raise ValueError(f"{op}: tensor_list must be a list of world_size={g.size()} tensors, "
                         f"got {n!r}")
    for i, t in enumerate(tensor_list):
        _check_tensor(op, t, f"tensor_list[{i}]", g)
        _check_same(op, t, f"tensor_list[{i}]", tensor, "tensor")
        if tuple(t.shape) != tuple(tensor.shape):
            raise ValueError(f"{op}: tensor_list[{i}] has shape {list(t.shape)}, but tensor "
                             f"has {list(tensor.shape)}; every rank's tensor must have the "
                             f"same shape")
    _debug_check(op, g, *_facts(tensor))
    # One gather into a contiguous staging tensor, then a copy into each list entry.
    from ..autograd.ops.creation import empty
    flat = empty((g.size(),) + tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)

    def scatter_into_list():
        from ..autograd.grad_mode import no_grad
        with no_grad():
            for i, t in enumerate(tensor_list):
                t.detach().copy_(flat[i])
    work = _then(g._impl.allgather(flat, tensor), scatter_into_list)
    return _finish(work, async_op, tuple(tensor_list))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group: ProcessGroup | None = None,
                          async_op: bool = False) -> Work | None:
    """Reduces, then scatters a tensor to all ranks in a group: ``output`` receives this
    rank's block (the ``rank``-th of ``world_size`` equal blocks of the flattened input) of
    the elementwise reduction of every rank's ``input``.

    Args:
        output: output tensor, with ``input.numel() / world_size`` elements.
        input: input tensor to be reduced and scattered, stacked (``(world_size, *shape)``)
            or concatenated along its first dimension.
        op: one of the ``ReduceOp`` values.
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
    """
    name = "reduce_scatter_tensor"
    g = _group(group, name)
    if g is None:
        return _not_member(name, async_op)
    _check_pair(name, g, output, "output", input, "input")
    _check_world_multiple(name, g, input, "input", output, "output",
                          "input tensor must be the same size as output size times world size")
    red = _op_name(name, op, input)
    _debug_check(name, g, red, *_facts(input))
    return _finish(g._impl.reduce_scatter(output, input, red), async_op, (output,))


def barrier(group: ProcessGroup | None = None, async_op: bool = False,
            device_ids=None) -> Work | None:
    """Synchronizes all processes: each blocks until the whole group entered this call.

    Args:
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
        device_ids: accepted for compatibility with the NCCL signature; must be None or list
            this process's one device.
    """
    g = _group(group, "barrier")
    if g is None:
        return _not_member("barrier", async_op)
    if device_ids is not None and len(device_ids) != 1:
        raise ValueError(f"barrier: device_ids must name this process's one device, got "
                         f"{device_ids!r}")
    _debug_check("barrier", g)
    return _finish(g._impl.barrier(), async_op, ())


def isend(tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> Work | None:
    """Sends ``tensor`` to rank ``dst`` (global) asynchronously; returns a Work whose
    ``wait()`` returns once the tensor may be modified again."""
    g = _group(group, "isend")
    if g is None:
        return _not_member("isend", True)
    _check_tensor("isend", tensor, "tensor", g)
    peer = _group_rank("isend", g, dst, "dst")
    if peer == g.rank():
        raise ValueError(f"isend: dst={dst} is this process's own rank; sending to oneself "
                         f"is not supported")
    return _finish(g._impl.send(tensor, peer, int(tag)), True, (tensor,))


def irecv(tensor, src: int | None = None, group: ProcessGroup | None = None,
          tag: int = 0) -> Work | None:
    """Receives into ``tensor`` asynchronously from rank ``src`` (global; None: any rank).
    The Work's ``source_rank()`` gives the sender's rank in ``group`` once ``wait()``
    returned."""
    g = _group(group, "irecv")
    if g is None:
        return _not_member("irecv", True)
    _check_tensor("irecv", tensor, "tensor", g)
    peer = None if src is None else _group_rank("irecv", g, src, "src")
    return _finish(g._impl.recv(tensor, peer, int(tag)), True, (tensor,))


def send(tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> None:
    """Sends ``tensor`` synchronously to rank ``dst`` (global)."""
    work = isend(tensor, dst, group, tag)
    if work is not None:
        work.wait()


def recv(tensor, src: int | None = None, group: ProcessGroup | None = None,
         tag: int = 0) -> int:
    """Receives ``tensor`` synchronously from rank ``src`` (global; None: any rank).

    Returns:
        The sender's global rank (-1 if not part of the group).
    """
    g = _group(group, "recv")
    work = irecv(tensor, src, group, tag)
    if work is None or g is None:
        return -1
    work.wait()
    return g._ranks[work.source_rank()]


def all_gather_object(object_list: list, obj, group: ProcessGroup | None = None) -> None:
    """Gathers picklable objects from the whole group: ``object_list[i]`` becomes rank
    ``i``'s ``obj``. Meant for small metadata (it pickles); use the tensor collectives for
    data.

    Args:
        object_list: a list of ``world_size`` entries, overwritten.
        obj: a picklable object to contribute.
        group: the process group to work on (default: the world).
    """
    g = _group(group, "all_gather_object")
    if g is None:
        return _not_member("all_gather_object", False)
    if len(object_list) != g.size():
        raise ValueError(f"all_gather_object: object_list must have world_size={g.size()} "
                         f"entries, got {len(object_list)}")
    object_list[:] = g._impl.allgather_object(obj)


def broadcast_object_list(object_list: list, src: int = 0,
                          group: ProcessGroup | None = None) -> None:
    """Broadcasts the picklable objects in ``object_list`` from rank ``src`` (global): the
    other ranks' lists (of the same length) are overwritten in place."""
    g = _group(group, "broadcast_object_list")
    if g is None:
        return _not_member("broadcast_object_list", False)
    root = _group_rank("broadcast_object_list", g, src, "src")
    values = g._impl.broadcast_object(list(object_list), root)
    if len(values) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {src} sent {len(values)} objects but "
                         f"this rank's list has {len(object_list)} entries")
    object_list[:] = values
