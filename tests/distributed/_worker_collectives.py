"""Every collective of tritongrad.distributed against NumPy, on however many ranks mpirun
started (the tests use 2 and 3). Rank k's data is drawn from ``default_rng(100 + k)``, so
every rank can compute every rank's data and hence the expected result."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from _launch import raises, run_checks  # noqa: E402

import tritongrad as tg  # noqa: E402
import tritongrad.distributed as dist  # noqa: E402

R = dist.ReduceOp


def data(k: int, shape=(3, 5), dtype=np.float64) -> np.ndarray:
    a = np.random.default_rng(100 + k).standard_normal(shape)
    if np.issubdtype(dtype, np.integer):
        a = np.round(a * 10)
    return a.astype(dtype)


def everyone(shape=(3, 5), dtype=np.float64) -> list:
    return [data(k, shape, dtype) for k in range(N)]


def close(t, expected, tol=1e-12) -> None:
    got = t.detach().cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(got, np.asarray(expected, dtype=np.float64), rtol=tol, atol=tol)


# -- the checks ----------------------------------------------------------------------------------

def check_world() -> None:
    assert dist.is_initialized() and dist.is_available()
    assert dist.get_world_size() == N and dist.get_rank() == RANK
    assert dist.get_backend() == "mpi"


def check_all_reduce_ops() -> None:
    for dtype, tg_dtype in ((np.float64, tg.float64), (np.float32, tg.float32),
                            (np.int64, tg.int64), (np.int32, tg.int32)):
        xs = everyone(dtype=dtype)
        tol = 1e-12 if dtype == np.float64 else 1e-5
        for op, ref in ((R.SUM, sum(xs)), (R.MAX, np.maximum.reduce(xs)),
                        (R.MIN, np.minimum.reduce(xs)), (R.PRODUCT, np.prod(xs, axis=0))):
            t = tg.tensor(xs[RANK], dtype=tg_dtype)
            v = t._version
            assert dist.all_reduce(t, op=op) is None
            close(t, ref, tol)
            assert t._version == v + 1, "all_reduce must bump the version counter once"
        if np.issubdtype(dtype, np.floating):
            t = tg.tensor(xs[RANK], dtype=tg_dtype)
            dist.all_reduce(t, op=R.AVG)
            close(t, sum(xs) / N, tol)
        else:
            for op, ref in ((R.BAND, np.bitwise_and.reduce(xs)),
                            (R.BOR, np.bitwise_or.reduce(xs)),
                            (R.BXOR, np.bitwise_xor.reduce(xs))):
                t = tg.tensor(xs[RANK], dtype=tg_dtype)
                dist.all_reduce(t, op=op)
                close(t, ref)


def check_all_reduce_half_bool_and_views() -> None:
    xs = everyone(dtype=np.float32)
    t = tg.tensor(xs[RANK], dtype=tg.float16)
    dist.all_reduce(t)
    close(t, sum(x.astype(np.float16).astype(np.float32) for x in xs), 1e-2)
    t = tg.tensor(xs[RANK], dtype=tg.bfloat16)
    dist.all_reduce(t, op=R.AVG)
    expected = tg.tensor(sum(tg.tensor(x, dtype=tg.bfloat16).float().numpy() for x in xs) / N)
    close(t, expected.to(tg.bfloat16).float().numpy(), 0)  # rounded onto the bfloat16 grid
    b = tg.tensor(np.arange(4) % N == RANK)  # each rank holds one True among its slots
    dist.all_reduce(b)  # bool SUM is OR
    assert b.tolist() == [True] * 4 if N <= 4 else True
    # non-contiguous: a transposed view is reduced in place, its base sees the result
    base = tg.tensor(xs[RANK])
    view = base.t()
    assert not view.is_contiguous()
    dist.all_reduce(view)
    close(base, sum(xs))
    # a contiguous slice: written straight into the shared storage, version shared
    base = tg.tensor(xs[RANK])
    v = base._version
    dist.all_reduce(base[1])
    expect = xs[RANK].copy()
    expect[1] = sum(x[1] for x in xs)
    close(base, expect)
    assert base._version == v + 1


def check_broadcast() -> None:
    for src in range(N):
        t = tg.tensor(data(RANK, (2, 7)))
        dist.broadcast(t, src)
        close(t, data(src, (2, 7)))
    t = tg.tensor(data(RANK, (4, 3), np.int64), dtype=tg.int16).t()  # non-contiguous, int16
    dist.broadcast(t, N - 1)
    close(t, data(N - 1, (4, 3), np.int64).astype(np.int16).T)


def check_reduce() -> None:
    xs = everyone()
    for dst in range(N):
        t = tg.tensor(xs[RANK])
        dist.reduce(t, dst, op=R.SUM)
        close(t, sum(xs) if RANK == dst else xs[RANK])
    t = tg.tensor(xs[RANK])
    dist.reduce(t, 0, op=R.AVG)
    close(t, sum(xs) / N if RANK == 0 else xs[RANK])


def check_all_gather() -> None:
    xs = everyone((2, 3))
    out = tg.zeros(N * 2, 3, dtype=tg.float64)
    dist.all_gather_into_tensor(out, tg.tensor(xs[RANK]))
    close(out, np.concatenate(xs))
    out = tg.zeros(N, 2, 3, dtype=tg.float64)  # the stacked form
    dist.all_gather_into_tensor(out, tg.tensor(xs[RANK]))
    close(out, np.stack(xs))
    outs = [tg.zeros(2, 3, dtype=tg.float64) for _ in range(N)]
    dist.all_gather(outs, tg.tensor(xs[RANK]))
    for o, x in zip(outs, xs):
        close(o, x)
    outs = [tg.zeros(3, 2, dtype=tg.float64).t() for _ in range(N)]  # non-contiguous entries
    dist.all_gather(outs, tg.tensor(xs[RANK]))
    for o, x in zip(outs, xs):
        close(o, x)


def check_reduce_scatter() -> None:
    xs = everyone((N * 2, 3))
    total = sum(xs)
    for op, ref in ((R.SUM, total), (R.MAX, np.maximum.reduce(xs)), (R.AVG, total / N)):
        out = tg.zeros(2, 3, dtype=tg.float64)
        dist.reduce_scatter_tensor(out, tg.tensor(xs[RANK]), op=op)
        close(out, ref[2 * RANK:2 * RANK + 2])


def check_async() -> None:
    xs = everyone((64,))
    works, ts = [], []
    for i in range(4):  # several in flight at once, completed in order
        t = tg.tensor(xs[RANK] * (i + 1))
        works.append(dist.all_reduce(t, async_op=True))
        ts.append(t)
    out = tg.zeros(N, 64, dtype=tg.float64)
    works.append(dist.all_gather_into_tensor(out, tg.tensor(xs[RANK]), async_op=True))
    works.append(dist.barrier(async_op=True))
    for w in works:
        assert isinstance(w, dist.Work)
    for i, (w, t) in enumerate(zip(works, ts)):
        assert w.wait() is True and w.is_completed()
        assert w.result()[0] is t
        close(t, sum(xs) * (i + 1))
    while not works[4].is_completed():  # polling alone completes it
        pass
    close(out, np.stack(xs))
    works[5].wait()
    raises(NotImplementedError, "timeout", lambda: works[5].wait(timeout=1.0))


def check_send_recv() -> None:
    # a ring: each rank sends to the next and receives from the previous
    nxt, prv = (RANK + 1) % N, (RANK - 1) % N
    out = tg.zeros(3, 5, dtype=tg.float64)
    sw = dist.isend(tg.tensor(data(RANK)), nxt, tag=7)
    rw = dist.irecv(out, prv, tag=7)
    rw.wait()
    sw.wait()
    close(out, data(prv))
    assert rw.source_rank() == prv
    if RANK == 0:
        for _ in range(1, N):
            t = tg.zeros(3, 5, dtype=tg.float64)
            src = dist.recv(t)  # from any rank
            close(t, data(src))
    else:
        dist.send(tg.tensor(data(RANK)), 0)


def check_groups() -> None:
    members = [0, N - 1]
    g = dist.new_group(members)
    if RANK in members:
        assert dist.get_world_size(g) == 2 and dist.get_rank(g) == members.index(RANK)
        assert dist.get_process_group_ranks(g) == members
        t = tg.tensor(data(RANK))
        dist.all_reduce(t, group=g)
        close(t, data(0) + data(N - 1))
        t = tg.tensor(data(RANK))
        dist.broadcast(t, N - 1, group=g)  # src is a global rank
        close(t, data(N - 1))
        raises(ValueError, "not part of the group", lambda: dist.broadcast(t, 5, group=g))
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = tg.tensor(data(RANK))
            assert dist.all_reduce(t, group=g) is None
            close(t, data(RANK))  # untouched
        assert "does not belong" in str(w[0].message)
    dist.destroy_process_group(g) if RANK in members else None


def check_objects() -> None:
    objs = [None] * N
    dist.all_gather_object(objs, {"rank": RANK})
    assert objs == [{"rank": k} for k in range(N)]
    lst = [RANK, "x"]
    dist.broadcast_object_list(lst, src=N - 1)
    assert lst == [N - 1, "x"]


def check_local_errors() -> None:
    t = tg.zeros(3)
    raises(ValueError, r"world_size times input.*output has 5 elements",
           lambda: dist.all_gather_into_tensor(tg.zeros(5), t))
    raises(ValueError, r"same size as output size times world size",
           lambda: dist.reduce_scatter_tensor(tg.zeros(2), tg.zeros(2 * N + 1)))
    raises(ValueError, r"same dtype.*float64.*float32",
           lambda: dist.all_gather_into_tensor(tg.zeros(3 * N, dtype=tg.float64), t))
    raises(ValueError, r"tensor_list must be a list of world_size",
           lambda: dist.all_gather([tg.zeros(3)], t))
    raises(ValueError, r"tensor_list\[0\] has shape \[4\]",
           lambda: dist.all_gather([tg.zeros(4)] * N, t))
    raises(ValueError, r"AVG needs a floating-point",
           lambda: dist.all_reduce(tg.zeros(3, dtype=tg.int64), op=R.AVG))
    raises(ValueError, r"BXOR needs an integer",
           lambda: dist.all_reduce(t, op=R.BXOR))
    raises(TypeError, r"op must be a ReduceOp", lambda: dist.all_reduce(t, op="sum"))
    raises(TypeError, r"must be a tritongrad Tensor",
           lambda: dist.all_reduce(np.zeros(3)))
    raises(ValueError, r"twice", lambda: dist.init_process_group("mpi"))


def check_debug_mismatch() -> None:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL turns a shape mismatch across ranks into an error on
    every rank (without it, MPI would mix the buffers or hang)."""
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    try:
        t = tg.zeros(3 + (RANK == 0))
        raises(RuntimeError, r"mismatched collectives.*rank 0: .*\(4,\).*rank 1: .*\(3,\)",
               lambda: dist.all_reduce(t))
        t = tg.ones(3)
        dist.all_reduce(t)  # matching calls still work
        close(t, [N] * 3)
    finally:
        del os.environ["TORCH_DISTRIBUTED_DEBUG"]


def check_cuda_staged() -> None:
    """backend 'mpi' with CUDA tensors: staged through host memory (here on the emulated
    device), results written back in place."""
    xs = everyone()
    t = tg.tensor(xs[RANK], device="cuda")
    v = t._version
    dist.all_reduce(t, op=R.AVG)
    assert t.device.type == "cuda" and t._version == v + 1
    close(t, sum(xs) / N)
    out = tg.zeros(N * 3, 5, dtype=tg.float64, device="cuda")
    dist.all_gather_into_tensor(out, tg.tensor(xs[RANK], device="cuda"))
    close(out, np.concatenate(xs))


def check_destroy_and_reinit() -> None:
    dist.destroy_process_group()
    assert not dist.is_initialized()
    raises(RuntimeError, "Default process group has not been initialized",
           lambda: dist.all_reduce(tg.zeros(1)))
    dist.init_process_group("mpi", init_method="env://", rank=RANK, world_size=N)
    t = tg.ones(2)
    dist.all_reduce(t)
    close(t, [N, N])


if __name__ == "__main__":
    dist.init_process_group(backend="mpi")
    N, RANK = dist.get_world_size(), dist.get_rank()
    checks = [check_world, check_all_reduce_ops, check_all_reduce_half_bool_and_views,
              check_broadcast, check_reduce, check_all_gather, check_reduce_scatter,
              check_async, check_send_recv, check_groups, check_objects, check_local_errors,
              check_debug_mismatch, check_destroy_and_reinit]
    if "--cuda" in sys.argv:
        checks.append(check_cuda_staged)
    run_checks(checks)
    dist.destroy_process_group()
