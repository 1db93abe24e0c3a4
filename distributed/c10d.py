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

import datetime
import enum
import os
import warnings

from ._store import (
    DistBackendError,
    DistError,
    DistNetworkError,
    DistStoreError,
    FileStore,
    HashStore,
    PrefixStore,
    Store,
    TCPStore,
)
from ._work import Work, completed

__all__ = [
    "Backend",
    "DebugLevel",
    "DistBackendError",
    "DistError",
    "DistNetworkError",
    "DistStoreError",
    "FileStore",
    "GroupMember",
    "HashStore",
    "P2POp",
    "PrefixStore",
    "ProcessGroup",
    "ReduceOp",
    "Store",
    "TCPStore",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "default_pg_timeout",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_debug_level",
    "get_global_rank",
    "get_group_rank",
    "get_node_local_rank",
    "get_pg_count",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_backend_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "isend",
    "monitored_barrier",
    "new_group",
    "new_subgroups",
    "new_subgroups_by_enumeration",
    "recv",
    "recv_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
    "set_debug_level",
    "set_debug_level_from_env",
    "supports_complex",
]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class _NotInitialized(ValueError, RuntimeError):
    """Raised by every call that needs the default group before ``init_process_group``:
    PyTorch 2 raises ValueError here and PyTorch 1 RuntimeError; both ``except`` clauses
    catch this one."""


class _CheckError(ValueError, RuntimeError):
    """A bad argument caught before any communication. PyTorch raises RuntimeError for many
    of these (from its backend: wrong sizes, dtypes, roots, reduction ops) and ValueError
    for others; both ``except`` clauses catch this one."""


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


group = GroupMember  # PyTorch's other name for it: ``dist.group.WORLD``


# PyTorch's default timeout of a process group's operations (``init_process_group``'s default)
default_pg_timeout = datetime.timedelta(minutes=30)


def supports_complex(reduceOp) -> bool:
    """Return true if reduce ops is supported. False otherwise (MAX, MIN, PRODUCT and the
    bitwise ops have no meaning on complex tensors)."""
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND,
                            ReduceOp.BOR, ReduceOp.BXOR)


class DebugLevel(enum.IntEnum):
    """The level of the distributed debug checks: ``OFF``, ``INFO`` or ``DETAIL`` (at
    ``DETAIL`` every collective first checks that all ranks called the same one, with the same
    dtypes and shapes)."""

    OFF = 0
    INFO = 1
    DETAIL = 2

    def __repr__(self) -> str:  # as PyTorch's pybind11 enum prints
        return f"DebugLevel.{self.name}"

    __str__ = __repr__


def _debug_level_from(value: str) -> DebugLevel:
    try:
        return DebugLevel[value.upper()]
    except KeyError:
        raise ValueError("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or "
                         "DETAIL.") from None


def get_debug_level() -> DebugLevel:
    """Gets the debug level of the torch.distributed package: the one set by
    ``set_debug_level``/``set_debug_level_from_env``, else ``TORCH_DISTRIBUTED_DEBUG``'s
    (OFF when unset or invalid)."""
    if _state.debug_level is not None:
        return _state.debug_level
    try:
        return _debug_level_from(os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF"))
    except ValueError:
        return DebugLevel.OFF


def set_debug_level(level: DebugLevel) -> None:
    """Sets the debug level of the torch.distributed package."""
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level(): incompatible function arguments: level must be "
                        f"a DebugLevel, got {type(level).__name__}")
    _state.debug_level = level


def set_debug_level_from_env() -> None:
    """Sets the debug level of the torch.distributed package from the
    ``TORCH_DISTRIBUTED_DEBUG`` environment variable."""
    _state.debug_level = _debug_level_from(os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF"))


class ProcessGroup:
    """A group of ranks that communicate together, over one backend.

    ``ranks`` are the members' global ranks, in group-rank order (sorted, as PyTorch)."""

    def __init__(self, backend_name: str, impl, ranks: list[int], rank: int):
        self._backend_name = backend_name
        self._impl = impl
        self._ranks = ranks
        self._rank = rank
        self._timeout = None  # new_group's timeout: this group's monitored_barrier default

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
        self.timeout = None  # init_process_group's timeout: monitored_barrier's default
        self.pg_count = 0  # groups made since init_process_group (get_pg_count)
        self.store = None  # the store given to init_process_group, if any
        self.debug_level: DebugLevel | None = None  # None: follow TORCH_DISTRIBUTED_DEBUG


_state = _State()


def is_available() -> bool:
    """True: the distributed package is part of tritongrad (its backends need mpi4py, and
    nccl4py for ``nccl``; see ``is_mpi_available`` / ``is_nccl_available``)."""
    return True


def is_mpi_available() -> bool:
    """True if the MPI backend can be used (mpi4py imports)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available() -> bool:
    """False: tritongrad has no gloo backend; ``mpi`` is its CPU backend."""
    return False


def is_nccl_available() -> bool:
    """True if the NCCL backend's package, nccl4py, is installed."""
    import importlib.util
    try:
        return importlib.util.find_spec("nccl") is not None \
            and importlib.util.find_spec("nccl.core") is not None
    except ModuleNotFoundError:
        return False


def is_backend_available(backend: str) -> bool:
    """Check backend availability: True if ``backend`` ("mpi" or "nccl", any case) can be
    used here (its package imports). tritongrad has no other backends."""
    name = str(backend).lower()
    if name == Backend.MPI:
        return is_mpi_available()
    if name == Backend.NCCL:
        return is_nccl_available()
    return False


def is_torchelastic_launched() -> bool:
    """Check whether this process was launched with ``torch.distributed.elastic`` (aka
    torchelastic): the existence of the ``TORCHELASTIC_RUN_ID`` environment variable is used
    as a proxy (it maps to the rendezvous id, always non-null under torchelastic)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """Return the local rank of the current process relative to the node: the
    ``LOCAL_RANK`` environment variable (set by the launcher), else ``fallback_rank``,
    else a RuntimeError."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device "
        "context and want the code to run locally instead.")


def get_pg_count() -> int:
    """Return the number of process groups (the default group and every ``new_group``
    made since ``init_process_group``; 0 before it)."""
    return _state.pg_count


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
        timeout: a ``datetime.timedelta`` (or seconds): the default of ``monitored_barrier``.
            The other collectives wait as long as they take (MPI and NCCL collectives cannot
            be abandoned); ``barrier`` and ``monitored_barrier`` take their own timeouts.
        world_size: the number of processes, if given: must equal MPI's.
        rank: this process's rank, if given: must equal MPI's.
        store: a ``Store`` (``TCPStore``, ``FileStore``, ...) may be given, with ``rank`` and
            ``world_size``, as in PyTorch; the ranks still meet through MPI (the launcher is
            the rendezvous), so ``rank``/``world_size`` must equal MPI's. The store is kept
            for the program's own use; it carries no process-group traffic.
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
    _check_store(store, init_method, world_size, rank)
    if init_method not in (None, "env://"):
        raise ValueError(f"init_process_group: init_method={init_method!r} is not supported: "
                         f"processes are started and connected by an MPI launcher "
                         f"(mpirun -n N python script.py); pass None or 'env://'")
    if timeout is not None:
        timeout = _as_timedelta(timeout, "init_process_group")
    for arg, value, fix in (("pg_options", pg_options, None), ("group_name", group_name, "")):
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
    _state.timeout = timeout
    _state.store = store
    _state.pg_count = 1
    GroupMember.WORLD = _state.world


def _check_store(store, init_method, world_size: int, rank: int) -> None:
    """PyTorch's rules for ``init_process_group(store=...)``."""
    if store is None:
        return
    if not isinstance(store, Store):
        raise TypeError(f"init_process_group: store must be a torch.distributed Store "
                        f"(TCPStore, FileStore, HashStore, PrefixStore), got "
                        f"{type(store).__name__}")
    if init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    if world_size <= 0:
        raise AssertionError("world_size must be positive if using store")
    if rank < 0:
        raise AssertionError("rank must be non-negative if using store")


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
        _state.timeout = _state.store = None
        _state.pg_count = 0
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group not in _state.groups:
        raise ValueError("destroy_process_group: this group is unknown or already destroyed")
    _state.groups.remove(group)
    group._impl.free()


def new_group(ranks: list[int] | None = None, timeout=None, backend: str | None = None,
              pg_options=None, use_local_synchronization: bool = False, group_desc=None,
              device_id=None, sort_ranks: bool = True) -> ProcessGroup:
    """Creates a group of a subset of the world's ranks (default: all of them).

    Every process of the world must call it, members or not, with the same ``ranks``. The
    members get the group (ranks numbered by their order in ``sorted(ranks)``, or in
    ``ranks`` with ``sort_ranks=False``); the others get ``GroupMember.NON_GROUP_MEMBER``,
    and collectives they call with it do nothing.

    Args:
        ranks: global ranks of the members.
        backend: must be None or the default group's backend.
        group_desc, device_id: accepted for compatibility (a label; NCCL's device is the
            default group's).
        sort_ranks: number the members in sorted order (default) or in ``ranks``' order.
        timeout: a ``datetime.timedelta``: this group's ``monitored_barrier`` default (as
            ``init_process_group``'s for the world).
        pg_options, use_local_synchronization: not supported; leave them at their defaults.
    """
    world = _world()
    if timeout is not None:
        timeout = _as_timedelta(timeout, "new_group")
    if pg_options is not None or use_local_synchronization:
        raise NotImplementedError("new_group: pg_options and use_local_synchronization are not "
                                  "supported; leave them at their defaults")
    if backend is not None and Backend(backend) != world._backend_name:
        raise ValueError(f"new_group: backend {backend!r} differs from the default group's "
                         f"{world._backend_name!r}; tritongrad groups share the default backend")
    n = world.size()
    members = list(range(n)) if ranks is None else list(dict.fromkeys(int(r) for r in ranks))
    if sort_ranks:
        members.sort()
    bad = [r for r in members if not 0 <= r < n]
    if bad:
        raise ValueError(f"new_group: ranks {bad} are out of range for a world of {n} "
                         f"processes")
    member = world.rank() in members
    _state.pg_count += 1  # on every rank, members or not (as PyTorch's group names)
    impl = world._impl.split(member, members.index(world.rank()) if member else 0)
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    group = ProcessGroup(world._backend_name, impl, members, members.index(world.rank()))
    group._timeout = timeout
    _state.groups.append(group)
    return group


def new_subgroups(group_size: int | None = None, group: ProcessGroup | None = None,
                  timeout=None, backend: str | None = None, pg_options=None,
                  group_desc: str | None = None) -> tuple:
    """Create subgroups of equal size: ranks ``[0, group_size)`` of ``group`` (default: the
    world) form the first, the next ``group_size`` ranks the second, and so on. Every rank of
    the world must call it.

    Args:
        group_size: the size of each subgroup. PyTorch's default (the number of CUDA
            devices of the machine) needs CUDA; pass it explicitly otherwise.
        group: the group to split (default: the world).
        timeout, backend, pg_options, group_desc: passed to ``new_group``.

    Returns:
        The subgroup containing the current rank, and all the subgroups used for cleanup.

    Example (``mpirun -n 4``)::

        >>> cur_subgroup, subgroups = dist.new_subgroups(2)   # {0, 1} and {2, 3}
        >>> t = tg.ones(1) * dist.get_rank()
        >>> dist.all_reduce(t, group=cur_subgroup)
        >>> t                                               # 1 on ranks 0, 1; 5 on 2, 3
    """
    if group_size is None:
        group_size = _cuda_device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by "
                         f"'{group_size=}'")
    ranks = get_process_group_ranks(group if group is not None else _world())
    return new_subgroups_by_enumeration(
        [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)],
        timeout=timeout, backend=backend, pg_options=pg_options, group_desc=group_desc)


def _cuda_device_count() -> int:
    """``new_subgroups``' default group size: the CUDA devices of this machine."""
    from .. import cuda
    if not cuda.is_available():
        raise ValueError("Default group size only takes effect when CUDA is available."
                         "If your subgroup using a backend that does not depend on CUDA,"
                         "please pass in 'group_size' correctly.")
    return cuda.device_count()


def new_subgroups_by_enumeration(ranks_per_subgroup_list: list, timeout=None,
                                 backend: str | None = None, pg_options=None,
                                 group_desc: str | None = None) -> tuple:
    """Create subgroups by dividing the global world: ``ranks_per_subgroup_list[i]`` lists
    the global ranks of subgroup ``i``. The subgroups cannot overlap, and some ranks may not
    have to be in any subgroup (their current subgroup is None). Every rank of the world must
    call it.

    Returns:
        The subgroup containing the current rank, and all the subgroups used for cleanup
        (``GroupMember.NON_GROUP_MEMBER`` stands for a subgroup this rank is not in, as
        ``new_group`` returns).

    Example (``mpirun -n 4``)::

        >>> cur_subgroup, subgroups = dist.new_subgroups_by_enumeration([[0, 2], [1, 3]])
    """
    if ranks_per_subgroup_list is None or len(ranks_per_subgroup_list) == 0:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    owner: dict = {}  # rank -> the ranks of its subgroup: overlaps are errors
    for ranks in ranks_per_subgroup_list:
        for rank in ranks:
            if rank in owner:
                # checked before any group is made (PyTorch: while making them), so a bad
                # list raises on every rank without leaving half-made communicators
                raise ValueError(f"Rank {rank} has appeared in both subgroup {owner[rank]} "
                                 f"and {ranks}")
            owner[rank] = ranks
    subgroups, cur_subgroup, my_rank = [], None, get_rank()
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend,
                             pg_options=pg_options, group_desc=group_desc)
        subgroups.append(subgroup)
        if my_rank in ranks:
            cur_subgroup = subgroup
    return cur_subgroup, subgroups


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


def get_group_rank(group: ProcessGroup | None, global_rank: int) -> int:
    """The rank in ``group`` of the process with global rank ``global_rank`` (the identity
    for the world group)."""
    g = _group(group, "get_group_rank")
    if g is None:
        raise ValueError("Invalid process group specified")
    if int(global_rank) not in g._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {g}")
    return g._ranks.index(int(global_rank))


def get_global_rank(group: ProcessGroup | None, group_rank: int) -> int:
    """The global rank of the process with rank ``group_rank`` in ``group`` (the identity
    for the world group)."""
    g = _group(group, "get_global_rank")
    if g is None:
        raise ValueError("Invalid process group specified")
    if not 0 <= int(group_rank) < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g._ranks[int(group_rank)]


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
        raise _CheckError(f"{op}: {an} and {bn} must have the same dtype, got {a._dtype} "
                          f"and {b._dtype}")
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
        raise _CheckError(f"{op}: {rule}: {big_name} has {big.numel()} elements "
                          f"{list(big.shape)}, {small_name} {small.numel()} "
                          f"{list(small.shape)}, world_size {g.size()}")


def _op_name(op: str, red, t) -> str:
    if not isinstance(red, ReduceOp.RedOpType):
        raise TypeError(f"{op}: op must be a ReduceOp (e.g. ReduceOp.SUM), got {red!r}")
    d = t._dtype
    if d.is_complex and red not in (ReduceOp.SUM, ReduceOp.AVG):
        # PyTorch's words (a ValueError on every backend, PRODUCT included)
        raise ValueError(f"{op} does not support {red} on complex tensors")
    if red is ReduceOp.AVG and not (d.is_floating_point or d.is_complex):
        raise _CheckError(f"{op}: ReduceOp.AVG needs a floating-point or complex tensor, got "
                          f"{d}; reduce with SUM and divide, or convert first")
    if red in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and d.is_floating_point:
        raise _CheckError(f"Cannot use ReduceOp.{red.name} with non-integral dtype in {op}: "
                          f"ReduceOp.{red.name} needs an integer or bool tensor, got {d}")
    return red.name


def _group_rank(op: str, g: ProcessGroup, global_rank: int, name: str) -> int:
    try:
        return g._ranks.index(int(global_rank))
    except ValueError:
        raise _CheckError(f"{op}: {name}={global_rank}: the global rank {global_rank} is not "
                          f"part of the group (ranks {g._ranks})") from None


def _root(op: str, g: ProcessGroup, global_rank, group_rank, name: str,
          default: int | None = None) -> int:
    """The group rank a root or peer was given as: a global rank (``src=``/``dst=``) or a
    rank in ``g`` (``group_src=``/``group_dst=``); ``default`` (a group rank) for neither."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError(f"Can't specify both {name} and group_{name} ({op})")
        if not 0 <= int(group_rank) < g.size():
            raise _CheckError(f"{op}: group_{name}={group_rank} is not a rank of the group "
                              f"(size {g.size()})")
        return int(group_rank)
    if global_rank is None:
        if default is None:
            raise ValueError(f"Must specify {name} or group_{name} ({op})")
        return default
    return _group_rank(op, g, global_rank, name)


def _debug_check(op: str, g: ProcessGroup, *facts) -> None:
    """Under TORCH_DISTRIBUTED_DEBUG=DETAIL: compare this call's op, dtypes and shapes with
    every rank's (one small pickled allgather), so a mismatch raises on every rank."""
    if get_debug_level() is not DebugLevel.DETAIL:
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


def broadcast(tensor, src: int | None = None, group: ProcessGroup | None = None,
              async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Broadcasts the tensor to the whole group: ``tensor`` must have the same number of
    elements in all processes; on the ranks other than ``src`` it is overwritten in place.

    Args:
        tensor: data to be sent if ``src`` is the rank of the current process, and tensor to
            be used to save received data otherwise.
        src: source rank (global, as in PyTorch).
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
        group_src: source rank in ``group`` (instead of ``src``).
    """
    g = _group(group, "broadcast")
    if g is None:
        return _not_member("broadcast", async_op)
    _check_tensor("broadcast", tensor, "tensor", g)
    root = _root("broadcast", g, src, group_src, "src")
    _debug_check("broadcast", g, src, *_facts(tensor))
    return _finish(g._impl.broadcast(tensor, root), async_op, (tensor,))


def reduce(tensor, dst: int | None = None, op=ReduceOp.SUM, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduces the tensor data across all machines; only the process with rank ``dst`` is
    going to receive the final result (in ``tensor``, in place). The other ranks' tensors
    keep their values here (PyTorch leaves them unspecified).

    Args:
        tensor: input and output of the collective.
        dst: destination rank (global).
        op: one of the ``ReduceOp`` values.
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
        group_dst: destination rank in ``group`` (instead of ``dst``).
    """
    g = _group(group, "reduce")
    if g is None:
        return _not_member("reduce", async_op)
    _check_tensor("reduce", tensor, "tensor", g)
    red = _op_name("reduce", op, tensor)
    root = _root("reduce", g, dst, group_dst, "dst")
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
    _check_list(op, g, tensor_list, "tensor_list", tensor, "tensor")
    _debug_check(op, g, *_facts(tensor))
    flat = _stacked_like(tensor, g.size())
    work = _then(g._impl.allgather(flat, tensor), _unstack_into(flat, tensor_list))
    return _finish(work, async_op, tuple(tensor_list))


def _check_list(op: str, g: ProcessGroup, tensors, name: str, like, like_name: str) -> None:
    """``tensors`` is a list of ``world_size`` tensors with ``like``'s shape, dtype, device."""
    if not isinstance(tensors, (list, tuple)) or len(tensors) != g.size():
        n = len(tensors) if isinstance(tensors, (list, tuple)) else tensors
        raise _CheckError(f"{op}: {name} must be a list of world_size={g.size()} tensors, "
                          f"got {n!r}")
    for i, t in enumerate(tensors):
        _check_tensor(op, t, f"{name}[{i}]", g)
        _check_same(op, t, f"{name}[{i}]", like, like_name)
        if tuple(t.shape) != tuple(like.shape):
            raise _CheckError(f"{op}: {name}[{i}] has shape {list(t.shape)}, but {like_name} "
                              f"has {list(like.shape)}; every rank's tensor must have the "
                              f"same shape")


def _stacked_like(t, n: int):
    """A contiguous ``(n, *t.shape)`` staging tensor: a list collective moves one buffer."""
    from ..autograd.ops.creation import empty
    return empty((n,) + tuple(t.shape), dtype=t.dtype, device=t.device)


def _stack(tensors: list):
    """The tensors' values in one contiguous ``(len, *shape)`` tensor (no autograd)."""
    from ..autograd.grad_mode import no_grad
    from ..autograd.ops.shape import stack
    with no_grad():
        return stack([t.detach() for t in tensors])


def _unstack_into(flat, tensors: list):
    """The completion step that copies block ``i`` of ``flat`` into ``tensors[i]``."""
    def copy_out():
        from ..autograd.grad_mode import no_grad
        with no_grad():
            for i, t in enumerate(tensors):
                t.detach().copy_(flat[i].view(t.shape))
    return copy_out


def _root_list(op: str, g: ProcessGroup, root: int, tensors, name: str) -> None:
    """PyTorch's rule for gather/scatter lists: given on the root, and only there."""
    if g.rank() == root:
        if not tensors:
            raise ValueError(f"Argument ``{name}`` must be specified on "
                             f"{'destination' if op == 'gather' else 'source'} rank.")
    elif tensors:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on "
                         f"non-{'destination' if op == 'gather' else 'source'} ranks.")


def gather(tensor, gather_list: list | None = None, dst: int | None = None,
           group: ProcessGroup | None = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Gathers a list of tensors in a single process: on rank ``dst``, ``gather_list[i]``
    receives rank ``i``'s ``tensor``.

    Args:
        tensor: input tensor.
        gather_list: on ``dst`` only (None elsewhere): ``world_size`` tensors of
            ``tensor``'s shape and dtype.
        dst: destination rank (global; default 0).
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
        group_dst: destination rank in ``group`` (instead of ``dst``).
    """
    op = "gather"
    g = _group(group, op)
    if g is None:
        return _not_member(op, async_op)
    _check_tensor(op, tensor, "tensor", g)
    root = _root(op, g, dst, group_dst, "dst", default=0)
    _root_list(op, g, root, gather_list, "gather_list")
    _debug_check(op, g, root, *_facts(tensor))
    if g.rank() != root:
        return _finish(g._impl.gather(None, tensor, root), async_op, ())
    _check_list(op, g, gather_list, "gather_list", tensor, "tensor")
    flat = _stacked_like(tensor, g.size())
    work = _then(g._impl.gather(flat, tensor, root), _unstack_into(flat, gather_list))
    return _finish(work, async_op, tuple(gather_list))


def scatter(tensor, scatter_list: list | None = None, src: int | None = None,
            group: ProcessGroup | None = None, async_op: bool = False,
            group_src: int | None = None) -> Work | None:
    """Scatters a list of tensors to all processes: rank ``i``'s ``tensor`` receives
    ``scatter_list[i]`` of rank ``src``.

    Args:
        tensor: output tensor.
        scatter_list: on ``src`` only (None elsewhere): ``world_size`` tensors of
            ``tensor``'s shape and dtype.
        src: source rank (global; default 0).
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
        group_src: source rank in ``group`` (instead of ``src``).
    """
    op = "scatter"
    g = _group(group, op)
    if g is None:
        return _not_member(op, async_op)
    _check_tensor(op, tensor, "tensor", g)
    root = _root(op, g, src, group_src, "src", default=0)
    _root_list(op, g, root, scatter_list, "scatter_list")
    _debug_check(op, g, root, *_facts(tensor))
    flat = None
    if g.rank() == root:
        _check_list(op, g, scatter_list, "scatter_list", tensor, "tensor")
        flat = _stack(scatter_list)
    return _finish(g._impl.scatter(tensor, flat, root), async_op, (tensor,))


def reduce_scatter(output, input_list: list, op=ReduceOp.SUM,
                   group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduces, then scatters a list of tensors to all processes in a group: ``output``
    receives the elementwise reduction of every rank's ``input_list[rank]``.

    Args:
        output: output tensor.
        input_list: ``world_size`` tensors of ``output``'s shape and dtype.
        op: one of the ``ReduceOp`` values.
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
    """
    name = "reduce_scatter"
    g = _group(group, name)
    if g is None:
        return _not_member(name, async_op)
    _check_tensor(name, output, "output", g)
    _check_list(name, g, input_list, "input_list", output, "output")
    red = _op_name(name, op, output)
    _debug_check(name, g, red, *_facts(output))
    work = g._impl.reduce_scatter(output, _stack(input_list), red)
    return _finish(work, async_op, (output,))


def all_to_all_single(output, input, output_split_sizes: list | None = None,
                      input_split_sizes: list | None = None,
                      group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Splits ``input`` along its first dimension and scatters the pieces to every rank,
    then concatenates the pieces received from every rank into ``output``: rank ``j``
    receives rank ``i``'s ``i``-to-``j`` piece in its ``i``-th slot.

    Args:
        output: gathered concatenated output tensor.
        input: input tensor to scatter.
        output_split_sizes: the number of first-dimension rows received from each rank
            (None: ``output.shape[0]`` split evenly).
        input_split_sizes: the number of rows sent to each rank (None: an even split).
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.

    Example (``mpirun -n 2``)::

        >>> inp = tg.arange(4) + 4 * dist.get_rank()   # rank 0: [0 1 2 3], 1: [4 5 6 7]
        >>> out = tg.empty(4, dtype=tg.int64)
        >>> dist.all_to_all_single(out, inp)
        >>> out                                        # rank 0: [0 1 4 5], 1: [2 3 6 7]
    """
    op = "all_to_all_single"
    g = _group(group, op)
    if g is None:
        return _not_member(op, async_op)
    _check_pair(op, g, output, "output", input, "input")
    counts = [_split_counts(op, g, t, sizes, name) for t, sizes, name in
              ((output, output_split_sizes, "output"), (input, input_split_sizes, "input"))]
    _debug_check(op, g, *_facts(input))
    return _finish(g._impl.alltoallv(output, input, *counts), async_op, (output,))


def _split_counts(op: str, g: ProcessGroup, t, sizes, name: str) -> list[int]:
    """Elements per rank of ``t`` split along its first dimension by ``sizes`` (rows)."""
    rows = t.shape[0] if t.dim() else 1
    row = t.numel() // rows if rows else 0
    if sizes is None or len(sizes) == 0:
        if rows % g.size():
            raise _CheckError(f"{op}: {name} tensor's first dimension ({rows}) must divide "
                              f"evenly by world_size {g.size()}; pass {name}_split_sizes")
        return [rows // g.size() * row] * g.size()
    sizes = [int(s) for s in sizes]
    if len(sizes) != g.size() or sum(sizes) != rows or min(sizes) < 0:
        raise _CheckError(f"{op}: {name}_split_sizes {sizes} must hold world_size="
                          f"{g.size()} non-negative row counts summing to {name}'s first "
                          f"dimension {rows}")
    return [s * row for s in sizes]


def all_to_all(output_tensor_list: list, input_tensor_list: list,
               group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Scatters a list of input tensors to all processes and gathers a list of tensors
    from them: rank ``j``'s ``output_tensor_list[i]`` receives rank ``i``'s
    ``input_tensor_list[j]`` (shapes may differ between slots; sizes must agree pairwise).

    Args:
        output_tensor_list: ``world_size`` tensors to receive into.
        input_tensor_list: ``world_size`` tensors to send.
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
    """
    op = "all_to_all"
    g = _group(group, op)
    if g is None:
        return _not_member(op, async_op)
    # the inputs first: every tensor is compared with input_tensor_list[0]
    lists = ((input_tensor_list, "input_tensor_list"), (output_tensor_list, "output_tensor_list"))
    for tensors, name in lists:
        if not isinstance(tensors, (list, tuple)) or len(tensors) != g.size():
            raise _CheckError(f"{op}: {name} must be a list of world_size={g.size()} "
                              f"tensors")
        for i, t in enumerate(tensors):
            _check_tensor(op, t, f"{name}[{i}]", g)
            _check_same(op, t, f"{name}[{i}]", input_tensor_list[0], "input_tensor_list[0]")
    from ..autograd.grad_mode import no_grad
    from ..autograd.ops.creation import empty
    from ..autograd.ops.shape import cat
    like = input_tensor_list[0]
    with no_grad():
        flat_in = cat([t.detach().reshape(-1) for t in input_tensor_list])
    out_counts = [t.numel() for t in output_tensor_list]
    flat_out = empty((sum(out_counts),), dtype=like.dtype, device=like.device)
    _debug_check(op, g, str(like._dtype))

    def copy_out():
        with no_grad():
            offset = 0
            for t, n in zip(output_tensor_list, out_counts):
                t.detach().copy_(flat_out[offset:offset + n].view(t.shape))
                offset += n
    work = g._impl.alltoallv(flat_out, flat_in, out_counts,
                             [t.numel() for t in input_tensor_list])
    return _finish(_then(work, copy_out), async_op, tuple(output_tensor_list))


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
            device_ids=None, timeout=None) -> Work | None:
    """Synchronizes all processes: each blocks until the whole group entered this call.

    Args:
        group: the process group to work on (default: the world).
        async_op: whether this op should be an async op.
        device_ids: accepted for compatibility with the NCCL signature; must be None or list
            this process's one device.
        timeout: a blocking barrier raises RuntimeError if the other ranks have not all
            arrived within it (a ``datetime.timedelta``).
    """
    g = _group(group, "barrier")
    if g is None:
        return _not_member("barrier", async_op)
    if device_ids is not None and len(device_ids) != 1:
        raise ValueError(f"barrier: device_ids must name this process's one device, got "
                         f"{device_ids!r}")
    _debug_check("barrier", g)
    if timeout is None or async_op:
        return _finish(g._impl.barrier(), async_op, ())
    _wait_until(g, g._impl.barrier(), _as_timedelta(timeout, "barrier"), "barrier")
    return None


def _as_timedelta(timeout, op: str):
    import datetime
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        warnings.warn("Please specify timeout arg as a timedelta. Converting current value of "
                      f"{timeout} assuming it represents seconds", stacklevel=3)
        return datetime.timedelta(seconds=timeout)
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"{op}: timeout must be a datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    return timeout


def _wait_until(g: ProcessGroup, work: Work, timeout, op: str) -> None:
    """Polls ``work`` until it completes, or raises once ``timeout`` has passed (the MPI
    operation itself cannot be cancelled: it completes when the late ranks arrive)."""
    import time
    deadline = time.monotonic() + timeout.total_seconds()
    while not work.is_completed():
        if time.monotonic() > deadline:
            ms = int(timeout.total_seconds() * 1000)
            raise RuntimeError(f"[Rank {g.rank()}]: {op}: not every rank of the group passed "
                               f"monitoredBarrier in {ms} ms")
        time.sleep(0.0005)


def isend(tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Sends ``tensor`` to rank ``dst`` (global; or ``group_dst`` in ``group``)
    asynchronously; returns a Work whose ``wait()`` returns once the tensor may be modified
    again."""
    g = _group(group, "isend")
    if g is None:
        return _not_member("isend", True)
    _check_tensor("isend", tensor, "tensor", g)
    peer = _root("isend", g, dst, group_dst, "dst")
    if peer == g.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same "
                         "as the rank of the current process.")
    return _finish(g._impl.send(tensor, peer, int(tag)), True, (tensor,))


def irecv(tensor, src: int | None = None, group: ProcessGroup | None = None,
          tag: int = 0, group_src: int | None = None) -> Work | None:
    """Receives into ``tensor`` asynchronously from rank ``src`` (global; or ``group_src``
    in ``group``; None for both: any rank). The Work's ``source_rank()`` gives the sender's
    rank in ``group`` once ``wait()`` returned."""
    g = _group(group, "irecv")
    if g is None:
        return _not_member("irecv", True)
    _check_tensor("irecv", tensor, "tensor", g)
    any_source = src is None and group_src is None
    peer = None if any_source else _root("irecv", g, src, group_src, "src")
    if peer == g.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the "
                         "rank of the current process.")
    return _finish(g._impl.recv(tensor, peer, int(tag)), True, (tensor,))


def send(tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Sends ``tensor`` synchronously to rank ``dst`` (global; or ``group_dst``)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src: int | None = None, group: ProcessGroup | None = None,
         tag: int = 0, group_src: int | None = None) -> int:
    """Receives ``tensor`` synchronously from rank ``src`` (global; or ``group_src``;
    None for both: any rank).

    Returns:
        The sender's global rank (-1 if not part of the group).
    """
    g = _group(group, "recv")
    work = irecv(tensor, src, group, tag, group_src)
    if work is None or g is None:
        return -1
    work.wait()
    return g._ranks[work.source_rank()]


def _object_device(g: ProcessGroup, device):
    """Where object payloads travel: ``device`` if given, else the NCCL group's CUDA device,
    else the CPU (PyTorch's ``_get_object_coll_device``)."""
    if device is not None:
        return device
    return getattr(g._impl, "device", None) if g._backend_name == Backend.NCCL else None


def _bytes_tensor(data: bytes, device):
    import numpy as np

    from ..autograd.ops.creation import tensor
    from ..runtime import dtype as dtypes
    return tensor(np.frombuffer(data, dtype=np.uint8).copy(), dtype=dtypes.uint8,
                  device=device)


def send_object_list(object_list: list, dst: int | None = None,
                     group: ProcessGroup | None = None, device=None,
                     group_dst: int | None = None, use_batch: bool = False) -> None:
    """Sends picklable objects in ``object_list`` synchronously.

    Similar to :func:`send`, but Python objects can be passed in. Note that all objects in
    ``object_list`` must be picklable in order to be sent; the receiver must provide a list
    of the same length to :func:`recv_object_list`.

    Args:
        object_list: List of input objects to sent.
        dst: Destination rank to send ``object_list`` to (global).
        group: The process group to work on (default: the world).
        device: If not None, the objects are serialized and converted to tensors which are
            moved to the ``device`` before sending.
        group_dst: Destination rank on ``group`` (instead of ``dst``).
        use_batch: accepted for compatibility (the sends are the same point-to-point ones).

    Example (``mpirun -n 2``)::

        >>> if dist.get_rank() == 0:
        ...     dist.send_object_list(["foo", 12, {1: 2}], dst=1)
        ... else:
        ...     objects = [None, None, None]
        ...     dist.recv_object_list(objects, src=0)   # objects: ['foo', 12, {1: 2}]
    """
    import pickle

    import numpy as np
    op = "send_object_list"
    g = _group(group, op)
    if g is None:
        _not_member(op, False)
        return
    peer = _root(op, g, dst, group_dst, "dst")
    dev = _object_device(g, device)
    payloads = [pickle.dumps(obj) for obj in object_list]
    # one header message ([count, size_0, ...]: the receiver checks the count), then the bytes
    header = np.array([len(payloads)] + [len(b) for b in payloads], dtype=np.int64)
    send(_bytes_tensor(header.tobytes(), dev), group=group, group_dst=peer)
    if payloads:
        send(_bytes_tensor(b"".join(payloads), dev), group=group, group_dst=peer)


def recv_object_list(object_list: list, src: int | None = None,
                     group: ProcessGroup | None = None, device=None,
                     group_src: int | None = None, use_batch: bool = False) -> int:
    """Receives picklable objects in ``object_list`` synchronously.

    Similar to :func:`recv`, but can receive Python objects: ``object_list`` (as long as the
    sender's list) is overwritten in place.

    Args:
        object_list: List of objects to receive into.
        src: Source rank from which to recv ``object_list`` (global). None (with
            ``group_src`` None): from any rank, as PyTorch documents (PyTorch 2.13 itself
            raises "Must specify global_rank or group_rank" there).
        group: The process group to work on (default: the world).
        device: If not None, receives on this device.
        group_src: Source rank on ``group`` (instead of ``src``).
        use_batch: accepted for compatibility.

    Returns:
        Sender rank. -1 if rank is not part of the group. If rank is part of the group,
        ``object_list`` will contain the sent objects from ``src`` rank.

    .. warning:: :func:`recv_object_list` uses ``pickle`` module implicitly, which is known
        to be insecure. Only call this function with data you trust.
    """
    import pickle

    import numpy as np

    from ..autograd.ops.creation import empty
    from ..runtime import dtype as dtypes
    op = "recv_object_list"
    g = _group(group, op)
    if g is None:
        _not_member(op, False)
        return -1
    dev = _object_device(g, device)
    n = len(object_list)
    header = empty(((n + 1) * 8,), dtype=dtypes.uint8, device=dev)
    sender = recv(header, src, group, group_src=group_src)  # any rank when both are None
    counts = np.frombuffer(header.cpu().numpy().tobytes(), dtype=np.int64)
    sent = int(counts[0])
    sizes = [int(c) for c in counts[1:sent + 1]]
    data = b""
    if sent:
        buf = empty((sum(sizes),), dtype=dtypes.uint8, device=dev)
        recv(buf, group=group, group_src=g._ranks.index(sender))
        data = buf.cpu().numpy().tobytes()
    if sent != n:
        raise ValueError(f"{op}: rank {sender} sent {sent} objects, but object_list has {n} "
                         f"entries; pass a list of the sender's length")
    offset = 0
    for i, size in enumerate(sizes):
        object_list[i] = pickle.loads(data[offset:offset + size])
        offset += size
    return sender


class P2POp:
    """A point-to-point operation for ``batch_isend_irecv``: ``op`` (``isend`` or
    ``irecv``), the tensor to send or receive into, and the peer (a global rank, or
    ``group_peer`` in ``group``)."""

    def __init__(self, op, tensor, peer: int | None = None,
                 group: ProcessGroup | None = None, tag: int = 0,
                 group_peer: int | None = None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer = op, tensor, peer
        self.group, self.tag, self.group_peer = group, tag, group_peer

    def __repr__(self) -> str:
        return (f"P2POp(op={self.op.__name__}, peer={self.peer}, tag={self.tag}, "
                f"shape={list(self.tensor.shape)})")


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Starts every ``P2POp`` of the list (all non-blocking, so their order cannot
    deadlock) and returns their Works, in order.

    Example (``mpirun -n 2``)::

        >>> send, recv = tg.ones(2) * rank, tg.zeros(2)
        >>> ops = [dist.P2POp(dist.isend, send, (rank + 1) % world),
        ...        dist.P2POp(dist.irecv, recv, (rank - 1) % world)]
        >>> for work in dist.batch_isend_irecv(ops):
        ...     work.wait()
    """
    if not isinstance(p2p_op_list, list) or not p2p_op_list \
            or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    if any(p.group is not p2p_op_list[0].group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            w = isend(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        else:
            w = irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        if w is not None:
            works.append(w)
    return works


def monitored_barrier(group: ProcessGroup | None = None, timeout=None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that raises instead of hanging when some rank does not enter it within
    ``timeout`` (a ``datetime.timedelta``, or seconds; default 30 minutes, PyTorch's).

    MPI cannot tell which ranks are missing without extra traffic, so the error says that
    not every rank arrived, on each rank that timed out; ``wait_all_ranks`` is accepted for
    compatibility.
    """
    g = _group(group, "monitored_barrier")
    if g is None:
        _not_member("monitored_barrier", False)
        return
    if timeout is None:  # (the process group's, PyTorch's default: 30 minutes unless set)
        timeout = g._timeout or _state.timeout or default_pg_timeout
    else:
        timeout = _as_timedelta(timeout, "monitored_barrier")
    _wait_until(g, g._impl.barrier(), timeout, "monitored_barrier")


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


def broadcast_object_list(object_list: list, src: int | None = None,
                          group: ProcessGroup | None = None, device=None,
                          group_src: int | None = None) -> None:
    """Broadcasts the picklable objects in ``object_list`` from rank ``src`` (global; or
    ``group_src``; default 0): the other ranks' lists (of the same length) are overwritten
    in place. ``device`` is accepted for compatibility (objects travel pickled)."""
    g = _group(group, "broadcast_object_list")
    if g is None:
        return _not_member("broadcast_object_list", False)
    root = _root("broadcast_object_list", g, src, group_src, "src", default=0)
    values = g._impl.broadcast_object(list(object_list), root)
    if len(values) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {g._ranks[root]} sent {len(values)} "
                         f"objects but this rank's list has {len(object_list)} entries")
    object_list[:] = values


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None,
                  group: ProcessGroup | None = None, group_dst: int | None = None) -> None:
    """Gathers picklable objects in a single process: on rank ``dst`` (global; or
    ``group_dst``; default 0), ``object_gather_list[i]`` becomes rank ``i``'s ``obj``; the
    other ranks pass None."""
    op = "gather_object"
    g = _group(group, op)
    if g is None:
        return _not_member(op, False)
    root = _root(op, g, dst, group_dst, "dst", default=0)
    if g.rank() == root and (object_gather_list is None
                             or len(object_gather_list) != g.size()):
        # PyTorch asserts only after gathering; checked first here, so a rank that raises
        # leaves no rank behind in the collective (the others then wait, as in PyTorch)
        raise ValueError(f"{op}: object_gather_list must be a list of world_size={g.size()} "
                         f"entries on the destination rank")
    values = g._impl.gather_object(obj, root)
    if g.rank() == root:
        object_gather_list[:] = values


def scatter_object_list(scatter_object_output_list: list,
                        scatter_object_input_list: list | None = None,
                        src: int | None = None, group: ProcessGroup | None = None,
                        group_src: int | None = None) -> None:
    """Scatters picklable objects: ``scatter_object_output_list[0]`` becomes
    ``scatter_object_input_list[rank]`` of rank ``src`` (global; or ``group_src``;
    default 0)."""
    op = "scatter_object_list"
    g = _group(group, op)
    if g is None:
        return _not_member(op, False)
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    root = _root(op, g, src, group_src, "src", default=0)
    objs = None
    if g.rank() == root:
        if scatter_object_input_list is None:
            raise ValueError("source rank must provide non-None scatter_object_input_list")
        objs = list(scatter_object_input_list)
        if len(objs) != g.size():
            raise ValueError(f"{op}: scatter_object_input_list must have world_size="
                             f"{g.size()} entries, got {len(objs)}")
    scatter_object_output_list[0] = g._impl.scatter_object(objs, root)
