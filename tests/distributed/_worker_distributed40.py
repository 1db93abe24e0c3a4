"""Object point-to-point, subgroups, the debug level, the process-group count and stores
across ranks, in real MPI processes (the test launches it on 3 ranks). The process group is
initialised with a store, as ``init_process_group(store=..., rank=..., world_size=...)``."""

from __future__ import annotations

import datetime
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from _launch import raises, run_checks  # noqa: E402

import tritongrad as tg  # noqa: E402
import tritongrad.distributed as dist  # noqa: E402


def payload(k: int) -> list:
    """Rank ``k``'s objects: every rank can build every rank's, to compare."""
    return [f"rank{k}", {"k": k, "t": (k, k * 0.5)}, np.arange(k + 2), None, b"\x00\xff" * k]


def same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y, (x, y)


def check_store_given_to_init() -> None:
    from tritongrad.distributed import c10d
    assert isinstance(c10d._state.store, dist.HashStore)
    assert dist.get_world_size() == N and dist.get_pg_count() == 1


def check_send_recv_object_list_from_rank_0() -> None:
    if RANK == 0:
        for dst in range(1, N):
            dist.send_object_list(payload(dst), dst=dst)
    else:
        got = [None] * 5
        assert dist.recv_object_list(got, src=0) == 0
        same(got, payload(RANK))


def check_object_ring_from_any_source() -> None:
    """Rank r sends to r + 1 and receives from whichever rank sends (src=None): r - 1."""
    right, left = (RANK + 1) % N, (RANK - 1) % N
    got = [None] * 5
    if RANK == 0:
        dist.send_object_list(payload(RANK), dst=right)
        assert dist.recv_object_list(got) == left
    else:
        assert dist.recv_object_list(got) == left
        dist.send_object_list(payload(RANK), dst=right)
    same(got, payload(left))


def check_object_p2p_in_a_group() -> None:
    g = dist.new_group([1, 2])
    got = ["old"]
    if RANK == 1:
        dist.send_object_list([("to", "group rank 1")], group=g, group_dst=1)
    elif RANK == 2:
        assert dist.recv_object_list(got, group=g, group_src=0) == 1  # the global rank
        assert got == [("to", "group rank 1")]
    else:  # not a member: a warning, and recv returns -1 (PyTorch's)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            dist.send_object_list([1], dst=1, group=g)
            assert dist.recv_object_list(got, src=1, group=g) == -1
        assert len(w) == 2 and "does not belong to the given group" in str(w[0].message)
    dist.destroy_process_group(g)  # (a no-op for a non-member, as PyTorch's)


def check_object_p2p_errors_and_empty_lists() -> None:
    raises(ValueError, "Invalid destination rank: destination rank should not be the same "
                       "as the rank of the current process.",
           lambda: dist.send_object_list([1], dst=RANK))
    raises(ValueError, "Invalid source rank", lambda: dist.recv_object_list([1], src=RANK))
    raises(ValueError, "Can't specify both", lambda: dist.send_object_list([1], 1, group_dst=1))
    if RANK == 0:
        dist.send_object_list([], dst=1)
        dist.send_object_list(["a", "b"], dst=1)
    elif RANK == 1:
        empty = []
        assert dist.recv_object_list(empty, src=0) == 0 and empty == []
        too_long = [None] * 3  # the sender's 2 objects are received, then the error
        raises(ValueError, "rank 0 sent 2 objects, but object_list has 3 entries",
               lambda: dist.recv_object_list(too_long, src=0))


def check_new_subgroups() -> None:
    before = dist.get_pg_count()
    cur, subgroups = dist.new_subgroups(1, timeout=datetime.timedelta(seconds=9))
    assert len(subgroups) == N and cur is subgroups[RANK] and cur.size() == 1
    assert cur._timeout == datetime.timedelta(seconds=9)  # its monitored_barrier default
    dist.monitored_barrier(group=cur)
    assert dist.get_pg_count() == before + N  # counted on every rank, members or not
    t = tg.tensor([float(RANK)])
    dist.all_reduce(t, group=cur)
    assert t.tolist() == [float(RANK)]
    whole, [only] = dist.new_subgroups(N)
    assert whole is only and dist.get_process_group_ranks(whole) == list(range(N))
    for g in subgroups + [whole]:
        dist.destroy_process_group(g)
    # PyTorch's validation (raised on every rank before any group is made)
    raises(TypeError, r"new_group: timeout must be a datetime.timedelta, got str",
           lambda: dist.new_subgroups(1, timeout="9s"))
    raises(ValueError, r"^The arg 'group_size' \(0\) must be positive$",
           lambda: dist.new_subgroups(0))
    raises(ValueError, rf"^The arg 'group_size' \({N + 1}\) must not exceed the world size "
                       rf"\({N}\)$", lambda: dist.new_subgroups(N + 1))
    raises(ValueError, rf"^The world size \({N}\) must be divisible by 'group_size=2'$",
           lambda: dist.new_subgroups(2))


def check_new_subgroups_by_enumeration() -> None:
    cur, subgroups = dist.new_subgroups_by_enumeration([[0, 2], [1]])
    assert len(subgroups) == 2
    expect = {0: [0, 2], 1: [1], 2: [0, 2]}[RANK]
    assert dist.get_process_group_ranks(cur) == expect
    t = tg.tensor([float(RANK + 1)])
    dist.all_reduce(t, group=cur)
    assert t.tolist() == [float(sum(r + 1 for r in expect))]
    # a rank in no subgroup: None, and NON_GROUP_MEMBER in the list (PyTorch's)
    cur2, subs2 = dist.new_subgroups_by_enumeration([[0, 1]])
    if RANK == 2:
        assert cur2 is None and subs2 == [dist.GroupMember.NON_GROUP_MEMBER]
    else:
        assert cur2 is subs2[0] and cur2.size() == 2
    raises(ValueError, r"^The arg 'ranks_per_subgroup_list' cannot be empty$",
           lambda: dist.new_subgroups_by_enumeration([]))
    raises(ValueError, r"^Rank 1 has appeared in both subgroup \[0, 1\] and \[1, 2\]$",
           lambda: dist.new_subgroups_by_enumeration([[0, 1], [1, 2]]))


def check_set_debug_level_drives_the_detail_checks() -> None:
    assert "TORCH_DISTRIBUTED_DEBUG" not in os.environ
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    try:
        t = tg.zeros(3 + (RANK == 0))
        raises(RuntimeError, r"mismatched collectives", lambda: dist.all_reduce(t))
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)
    assert dist.get_debug_level() is dist.DebugLevel.OFF


def check_tcp_store_across_ranks() -> None:
    """A TCPStore served by rank 0, its port shared by broadcast_object_list."""
    timeout = datetime.timedelta(seconds=20)
    box = [None]
    store = None
    if RANK == 0:
        store = dist.TCPStore("127.0.0.1", 0, N, True, timeout=timeout,
                              wait_for_workers=False)
        box = [store.port]
    dist.broadcast_object_list(box, src=0)
    if RANK:
        store = dist.TCPStore("127.0.0.1", box[0], N, False, timeout=timeout)
    assert store.add("arrived", 1) <= N
    store.set(f"rank{RANK}", str(RANK))
    store.wait([f"rank{k}" for k in range(N)])
    assert store.multi_get([f"rank{k}" for k in range(N)]) == [str(k).encode()
                                                               for k in range(N)]
    assert int(store.get("init/")) == N  # every store user counted itself in, as PyTorch's
    dist.barrier()  # the master's server must outlive every client's requests


if __name__ == "__main__":
    dist.init_process_group("mpi", store=dist.HashStore(),
                            rank=int(os.environ.get("PMI_RANK", "0")),
                            world_size=int(os.environ.get("PMI_SIZE", "1")))
    N, RANK = dist.get_world_size(), dist.get_rank()
    run_checks([check_store_given_to_init, check_send_recv_object_list_from_rank_0,
                check_object_ring_from_any_source, check_object_p2p_in_a_group,
                check_object_p2p_errors_and_empty_lists, check_new_subgroups,
                check_new_subgroups_by_enumeration,
                check_set_debug_level_drives_the_detail_checks, check_tcp_store_across_ranks])
    dist.destroy_process_group()
