"""Parity with torch.distributed (gloo) found by session 37's sweep: gather / scatter,
reduce_scatter (list), all_to_all(_single), batch_isend_irecv, monitored_barrier, the object
collectives, ``group_src``/``group_dst``, ``Work.get_future``, PyTorch's error types and
messages, and DistributedDataParallel's extra keywords.

The test functions launch this file itself under ``mpirun`` (2 and 3 ranks); run as a script
it is the worker: every rank checks its results against NumPy (rank k's data comes from
``default_rng(100 + k)``, so every rank knows every rank's data) and DDP against one process
training on the whole batch.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from _launch import mpi_missing, mpirun, passed, raises, run_checks  # noqa: E402

import tritongrad as tg  # noqa: E402
import tritongrad.distributed as dist  # noqa: E402

HERE = os.path.abspath(__file__)
R = dist.ReduceOp
N = RANK = -1  # set by the worker


def data(k: int, shape=(3,), dtype=np.float64) -> np.ndarray:
    a = np.random.default_rng(100 + k).standard_normal(shape)
    return (np.round(a * 10) if np.issubdtype(dtype, np.integer) else a).astype(dtype)


def close(t, expected, tol=1e-12) -> None:
    np.testing.assert_allclose(t.detach().numpy(), np.asarray(expected), rtol=tol, atol=tol)


# -- the checks (worker side) -------------------------------------------------------------------

def check_gather_and_scatter_on_every_root() -> None:
    for root in range(N):
        gl = [tg.zeros(2, 3, dtype=tg.float64) for _ in range(N)] if RANK == root else None
        assert dist.gather(tg.tensor(data(RANK, (2, 3))), gl, dst=root) is None
        if RANK == root:
            for k in range(N):
                close(gl[k], data(k, (2, 3)))
        sl = [tg.tensor(data(50 + k, (3, 2))).t() for k in range(N)] if RANK == root else None
        out = tg.zeros(2, 3, dtype=tg.float64)
        dist.scatter(out, sl, src=root)
        close(out, data(50 + RANK, (3, 2)).T)
    # the default root is 0; group_dst / group_src name group ranks; int and 0-d tensors
    gl = [tg.zeros((), dtype=tg.int64) for _ in range(N)] if RANK == 0 else None
    work = dist.gather(tg.tensor(data(RANK, (), np.int64)), gl, async_op=True)
    work.wait()
    if RANK == 0:
        assert [int(t.item()) for t in gl] == [int(data(k, (), np.int64)) for k in range(N)]
    out = tg.zeros(3, dtype=tg.float64)
    dist.scatter(out, [tg.tensor(data(60 + k)) for k in range(N)] if RANK == N - 1 else None,
                 group_src=N - 1)
    close(out, data(60 + RANK))


def check_gather_scatter_errors() -> None:
    # every rank raises before communicating: the root lacks the list, the others pass one
    some = [tg.zeros(3) for _ in range(N)]
    raises(ValueError, "must (NOT )?be specified on (non-)?destination rank",
           lambda: dist.gather(tg.zeros(3), None if RANK == 0 else some, dst=0))
    raises(ValueError, "must (NOT )?be specified on (non-)?source rank",
           lambda: dist.scatter(tg.zeros(3), None if RANK == 0 else some, src=0))
    if RANK == 0:  # a local check: PyTorch's backend raises RuntimeError here
        for exc in (ValueError, RuntimeError):
            raises(exc, r"scatter_list\[0\] has shape \[4\]",
                   lambda: dist.scatter(tg.zeros(3), [tg.zeros(4)] * N, src=0))
    raises(ValueError, "Can't specify both src and group_src",
           lambda: dist.broadcast(tg.zeros(1), src=0, group_src=0))
    raises(ValueError, "Must specify dst or group_dst", lambda: dist.reduce(tg.zeros(1)))


def check_broadcast_reduce_by_group_rank() -> None:
    t = tg.tensor(data(RANK))
    dist.broadcast(t, group_src=N - 1)
    close(t, data(N - 1))
    t = tg.tensor(data(RANK))
    dist.reduce(t, group_dst=1, op=R.MAX)
    if RANK == 1:
        close(t, np.maximum.reduce([data(k) for k in range(N)]))


def check_reduce_scatter_list() -> None:
    for op, fold in ((R.SUM, np.add.reduce), (R.PRODUCT, np.multiply.reduce),
                     (R.MIN, np.minimum.reduce), (R.AVG, lambda a: np.add.reduce(a) / N)):
        out = tg.zeros(3, dtype=tg.float64)
        dist.reduce_scatter(out, [tg.tensor(data(10 * RANK + j)) for j in range(N)], op=op)
        close(out, fold([data(10 * k + RANK) for k in range(N)]))
    raises(RuntimeError, r"input_list must be a list of world_size",
           lambda: dist.reduce_scatter(tg.zeros(3), [tg.zeros(3)]))


def check_all_to_all_single() -> None:
    # even split, a 2-d tensor, async
    inp = tg.tensor(data(RANK, (2 * N, 3)))
    out = tg.zeros(2 * N, 3, dtype=tg.float64)
    dist.all_to_all_single(out, inp, async_op=True).wait()
    close(out, np.concatenate([data(k, (2 * N, 3))[2 * RANK:2 * RANK + 2] for k in range(N)]))
    # uneven split sizes: rank i sends (i + 2j) % N + 1 rows to rank j
    def rows(i, j):
        return (i + 2 * j) % N + 1  # not symmetric: what i sends j differs from j to i

    def block(i, j):
        start = sum(rows(i, q) for q in range(j))
        return data(i, (sum(rows(i, q) for q in range(N)), 2))[start:start + rows(i, j)]
    send = [rows(RANK, j) for j in range(N)]
    recv = [rows(i, RANK) for i in range(N)]
    out = tg.zeros(sum(recv), 2, dtype=tg.float64)
    dist.all_to_all_single(out, tg.tensor(data(RANK, (sum(send), 2))), recv, send)
    close(out, np.concatenate([block(i, RANK) for i in range(N)]))
    # non-contiguous input and output (PyTorch's gloo refuses these; the values are exact)
    out = tg.zeros(3, N, dtype=tg.float64).t()
    dist.all_to_all_single(out, tg.tensor(data(RANK, (3, N))).t())
    close(out, np.stack([data(k, (3, N)).T[RANK] for k in range(N)]))
    raises(RuntimeError, "must divide evenly by world_size",
           lambda: dist.all_to_all_single(tg.zeros(2 * N), tg.zeros(2 * N + 1)))
    raises(ValueError, "split_sizes",
           lambda: dist.all_to_all_single(tg.zeros(N), tg.zeros(N), [1] * N, [N] * N))


def check_all_to_all_list() -> None:
    # slot j of rank i holds j + 1 elements going to rank j (NCCL's rule: sizes per pair)
    ins = [tg.tensor(data(10 * RANK + j, (RANK + 1,))) for j in range(N)]
    outs = [tg.zeros(k + 1, dtype=tg.float64) for k in range(N)]
    dist.all_to_all(outs, ins)
    for k in range(N):
        close(outs[k], data(10 * k + RANK, (k + 1,)))


def check_p2p_batch() -> None:
    x = tg.tensor(data(RANK))
    got = tg.zeros(3, dtype=tg.float64)
    ops = [dist.P2POp(dist.isend, x, (RANK + 1) % N),
           dist.P2POp(dist.irecv, got, (RANK - 1) % N)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 2
    for w in works:
        w.wait()
    close(got, data((RANK - 1) % N))
    raises(ValueError, "Invalid ``op``", lambda: dist.P2POp(dist.all_reduce, x, 0))
    raises(ValueError, "Invalid ``p2p_op_list``", lambda: dist.batch_isend_irecv([1]))
    raises(ValueError, "Invalid destination rank: destination rank should not be the same",
           lambda: dist.send(x, RANK))
    if RANK == 0:  # group_dst / group_src on the world group
        dist.send(x, group_dst=1)
    elif RANK == 1:
        assert dist.recv(got, group_src=0) == 0
        close(got, data(0))


def check_objects() -> None:
    out = [None] * N if RANK == 1 else None
    dist.gather_object({"rank": RANK}, out, dst=1)
    if RANK == 1:
        assert out == [{"rank": k} for k in range(N)]
    got = [None]
    dist.scatter_object_list(got, [("to", k) for k in range(N)] if RANK == N - 1 else None,
                             src=N - 1)
    assert got == [("to", RANK)]
    objs = [RANK, "x" * RANK]
    dist.broadcast_object_list(objs)  # src defaults to 0
    assert objs == [0, ""]
    raises(ValueError, "scatter_object_output_list to be a list of size at least 1",
           lambda: dist.scatter_object_list([], None))


def check_future_and_barriers() -> None:
    t = tg.tensor(data(RANK))
    fut = dist.all_reduce(t, async_op=True).get_future()
    value = fut.wait()
    assert fut.done() and isinstance(value, list) and value[0] is t
    close(t, sum(data(k) for k in range(N)))
    doubled = dist.all_reduce(tg.ones(2), async_op=True).get_future().then(
        lambda f: f.value()[0] * 2)
    close(doubled.wait(), [2.0 * N] * 2)
    import datetime
    assert dist.monitored_barrier(timeout=datetime.timedelta(seconds=30)) is None
    assert dist.barrier(timeout=datetime.timedelta(seconds=30)) is None
    # rank 0 arrives early and gives up after 0.2 s; the others arrive later and complete
    # the barrier rank 0 started (so nothing is left unmatched)
    if RANK == 0:
        raises(RuntimeError, "monitoredBarrier in 200 ms",
               lambda: dist.monitored_barrier(timeout=datetime.timedelta(seconds=0.2)))
        dist.barrier()
    else:
        import time
        time.sleep(0.5)
        dist.monitored_barrier()
        dist.barrier()


def check_pytorch_error_types_and_words() -> None:
    x = tg.tensor(data(RANK))
    for exc in (ValueError, RuntimeError):  # PyTorch's backend raises RuntimeError
        raises(exc, "Cannot use ReduceOp.BAND with non-integral dtype",
               lambda: dist.all_reduce(x, op=R.BAND))
        raises(exc, "AVG needs a floating-point",
               lambda: dist.all_reduce(tg.zeros(2, dtype=tg.int64), op=R.AVG))
        raises(exc, "not part of the group", lambda: dist.broadcast(x, N + 3))
        raises(exc, "world_size times input",
               lambda: dist.all_gather_into_tensor(tg.zeros(5), tg.zeros(3)))
    z = tg.tensor(data(RANK) + 1j * data(RANK + 20), dtype=tg.complex128)
    for op in (R.PRODUCT, R.MIN, R.MAX, R.BOR):
        raises(ValueError, rf"all_reduce does not support RedOpType.{op.name} on complex",
               lambda: dist.all_reduce(z, op=op))
    dist.all_reduce(z, op=R.AVG)
    close(z, sum(data(k) + 1j * data(k + 20) for k in range(N)) / N)


def check_all_reduce_strided_view() -> None:
    # a column of a row-major matrix: the result lands in the column only (PyTorch 2.13's
    # gloo writes the reduced values contiguously from the column's first element instead)
    base = tg.tensor(data(RANK, (3, 4)))
    dist.all_reduce(base[:, 1])
    expected = data(RANK, (3, 4))
    expected[:, 1] = sum(data(k, (3, 4))[:, 1] for k in range(N))
    close(base, expected)


def check_float16_reductions_rounded_once() -> None:
    # the exact sum rounded once to float16 (partial sums in float16 lose a unit in the last
    # place, and PyTorch's gloo returns such values); no overflow of a partial sum either
    xs = [(data(k, (60,)) * 3).astype(np.float16) for k in range(N)]
    exact = sum(x.astype(np.float64) for x in xs)
    for op, expected in ((R.SUM, exact), (R.AVG, exact / N)):
        t = tg.tensor(xs[RANK], dtype=tg.float16)
        dist.all_reduce(t, op=op)
        assert np.array_equal(t.numpy(), expected.astype(np.float16))
    n = 60 // N
    out = tg.zeros(n, dtype=tg.float16)
    dist.reduce_scatter_tensor(out, tg.tensor(xs[RANK], dtype=tg.float16))
    assert np.array_equal(out.numpy(), exact.astype(np.float16)[RANK * n:(RANK + 1) * n])
    big = tg.tensor([40000.0 if RANK < 2 else -40000.0], dtype=tg.float16)
    dist.all_reduce(big)  # 40000 + 40000 overflows float16; the total 40000 (3 ranks) does not
    if N == 3:
        assert big.item() == 40000.0


def check_rank_translation() -> None:
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None
    assert dist.get_group_rank(dist.group.WORLD, N - 1) == N - 1
    assert dist.get_global_rank(None, 1) == 1
    g = dist.new_group([N - 1, 0])
    if RANK in (0, N - 1):
        assert dist.get_group_rank(g, N - 1) == 1 and dist.get_global_rank(g, 1) == N - 1
        if N > 2:
            raises(ValueError, "Global rank 1 is not part of group",
                   lambda: dist.get_group_rank(g, 1))
        raises(ValueError, "Group rank 2 is not part of group",
               lambda: dist.get_global_rank(g, 2))
        gl = [tg.zeros(1) for _ in range(2)] if RANK == N - 1 else None
        dist.gather(tg.ones(1) * RANK, gl, group_dst=1, group=g)
        if RANK == N - 1:
            assert [t.item() for t in gl] == [0.0, N - 1.0]
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
        raises(ValueError, "Invalid process group", lambda: dist.get_group_rank(g, 0))
    dist.destroy_process_group(g)
    g = dist.new_group([N - 1, 0], sort_ranks=False)  # numbered in the order given
    if RANK in (0, N - 1):
        assert dist.get_rank(g) == (0 if RANK == N - 1 else 1)
        assert dist.get_process_group_ranks(g) == [N - 1, 0]
        got = [tg.zeros(1) for _ in range(2)]
        dist.all_gather(got, tg.ones(1) * RANK, group=g)
        assert [t.item() for t in got] == [N - 1.0, 0.0]


def _net(seed: int):
    rng = np.random.default_rng(seed)
    m = tg.nn.Sequential(tg.nn.Linear(4, 5), tg.nn.Linear(5, 2)).double()
    with tg.no_grad():
        for p in m.parameters():
            p.copy_(tg.tensor(rng.standard_normal(tuple(p.shape))))
    return m


def check_ddp_keywords() -> None:
    from tritongrad.nn.parallel import DistributedDataParallel as DDP
    x = np.random.default_rng(7).standard_normal((4 * N, 4))
    ref = _net(0)
    ref(tg.tensor(x)).square().mean().backward()
    mine = x[4 * RANK:4 * RANK + 4]
    for kw in ({"gradient_as_bucket_view": True}, {"static_graph": True},
               {"dim": 0, "check_reduction": False}):
        ddp = DDP(_net(RANK), **kw)  # rank 0's weights everywhere
        for _ in range(2):  # the second iteration accumulates the same average again
            ddp(tg.tensor(mine)).square().mean().backward()
        for p, r in zip(ddp.parameters(), ref.parameters()):
            close(p.grad, 2 * r.grad.numpy())
    ddp = DDP(_net(RANK), init_sync=False)  # no broadcast: each rank keeps its weights
    close(next(iter(ddp.parameters())), next(iter(_net(RANK).parameters())).detach().numpy())
    assert sorted(ddp.state_dict()) == ["module.0.bias", "module.0.weight",
                                        "module.1.bias", "module.1.weight"]


CHECKS = [check_gather_and_scatter_on_every_root, check_gather_scatter_errors,
          check_broadcast_reduce_by_group_rank, check_reduce_scatter_list,
          check_all_to_all_single, check_all_to_all_list, check_p2p_batch, check_objects,
          check_future_and_barriers, check_pytorch_error_types_and_words,
          check_all_reduce_strided_view, check_float16_reductions_rounded_once,
          check_rank_translation, check_ddp_keywords]


# -- the tests (pytest side) --------------------------------------------------------------------

needs_mpi = pytest.mark.skipif(mpi_missing() is not None, reason=str(mpi_missing()))


@needs_mpi
@pytest.mark.parametrize("ranks", [3])  # 3 ranks: uneven splits, a root neither first nor last
def test_parity_checks(ranks):
    p = mpirun(ranks, HERE)
    assert passed(p) == {c.__name__ for c in CHECKS}


def test_new_names_exported_and_p2pop_checked_without_a_group():
    for name in ("gather", "scatter", "reduce_scatter", "all_to_all", "all_to_all_single",
                 "P2POp", "batch_isend_irecv", "monitored_barrier", "gather_object",
                 "scatter_object_list"):
        assert name in dist.__all__ and callable(getattr(dist, name))
    with pytest.raises(ValueError, match="Invalid ``op``"):
        dist.P2POp(dist.send, tg.zeros(1), 0)
    op = dist.P2POp(dist.irecv, tg.zeros(2), 1, tag=3)
    assert (op.peer, op.tag, op.group) == (1, 3, None)
    assert dist.is_gloo_available() is False and dist.group is dist.GroupMember
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_group_rank(None, 0)


def test_p2pop_and_errors_match_torch():
    torch_dist = pytest.importorskip("torch.distributed")
    import torch
    with pytest.raises(ValueError) as theirs:
        torch_dist.P2POp(torch_dist.all_reduce, torch.zeros(1), 0)
    with pytest.raises(ValueError) as ours:
        dist.P2POp(dist.all_reduce, tg.zeros(1), 0)
    assert str(ours.value) == str(theirs.value)


if __name__ == "__main__":
    dist.init_process_group("mpi")
    N, RANK = dist.get_world_size(), dist.get_rank()
    run_checks(CHECKS)
    dist.destroy_process_group()
