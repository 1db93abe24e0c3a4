"""tritongrad.multiprocessing and CPU tensors in shared memory (tritongrad/multiprocessing/).

Checked against NumPy values and against what other processes see: ``share_memory_`` in place
(views, dtypes, lifetimes, descriptors), tensors through Queue/Pipe/Process arguments with the
fork and spawn start methods (the same memory on both sides, views kept), both sharing
strategies, Hogwild training of one shared model by several processes, and ``spawn``'s error
reporting. Every test checks /dev/shm for segments left behind.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import warnings

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.multiprocessing as mp
from tritongrad.multiprocessing.reductions import reduce_tensor

pytestmark = pytest.mark.filterwarnings(
    # (Python 3.12 warns when forking a process with threads, here the queues' feeders)
    "ignore:This process .* is multi-threaded:DeprecationWarning")

TIMEOUT = 60  # seconds a parent waits for a child's answer before failing


def _shm_names() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith("tritongrad_")}


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def _no_leaks():
    """No shared memory object outlives its tensors; the strategy is restored."""
    gc.collect()
    before = _shm_names()
    strategy = mp.get_sharing_strategy()
    yield
    mp.set_sharing_strategy(strategy)
    gc.collect()
    assert _shm_names() == before


@pytest.fixture(autouse=True, scope="module")
def _no_threads_left():
    """Stops the thread that hands descriptors to other processes (started by the first
    message carrying one), so that later tests do not fork a multi-threaded process."""
    yield
    from multiprocessing import resource_sharer
    resource_sharer.stop(timeout=TIMEOUT)


# -- share_memory_ in one process ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.int64, tg.uint8, tg.bool,
                                   tg.bfloat16, tg.complex64])
def test_share_memory_keeps_values_and_views(dtype):
    values = np.arange(24).reshape(4, 6) % 5
    t = tg.tensor(values).to(dtype)
    ref = t.clone()
    col = t[:, 1]          # a strided view
    tt = t.t()             # a transposed view
    tail = t[2:]           # an offset view
    alias = t.detach()     # another tensor over the very same array
    assert not t.is_shared()
    assert t.share_memory_() is t
    for v in (t, col, tt, tail, alias):
        assert v.is_shared()
    assert tg.equal(t, ref) and tg.equal(tt, ref.t()) and tg.equal(tail, ref[2:])
    # one storage: offsets kept, and writes through one view are seen by the others
    assert tail.data_ptr() - t.data_ptr() == ref[2:].data_ptr() - ref.data_ptr()
    assert col.stride() == (6,) and tail.storage_offset() == 12
    one = tg.ones((), dtype=dtype)
    col[3] = one
    assert tg.equal(t[3, 1], one) and tg.equal(tt[1, 3], one) and tg.equal(alias[3, 1], one)


@pytest.mark.parametrize("make", [tg.zeros, tg.randn])  # (an owner; a view of a bigger array)
@pytest.mark.parametrize("other", ["view", "slice", "detach", "expand", "none"])
def test_share_memory_finds_every_view(make, other):
    t = make(6)
    v = {"view": lambda: t.view(2, 3), "slice": lambda: t[2:], "detach": t.detach,
         "expand": lambda: t[:1].expand(3), "none": lambda: None}[other]()
    t.share_memory_()
    assert t.is_shared()
    if v is not None:
        assert v.is_shared()
        t.fill_(3.0)
        assert v.min().item() == 3.0


def test_share_memory_second_call_and_views_made_after():
    t = tg.randn(5)
    ptr = t.share_memory_().data_ptr()
    assert t.share_memory_().data_ptr() == ptr  # a no-op the second time
    v = t.view(5, 1)
    assert v.is_shared() and v.data_ptr() == ptr
    assert t[1:].share_memory_().data_ptr() == ptr + 4  # (a view of shared memory: no-op)


def test_share_memory_of_a_view_moves_the_whole_storage():
    t = tg.arange(10.0)
    v = t[3:7]
    v.share_memory_()
    assert t.is_shared() and v.is_shared()
    assert t.untyped_storage().nbytes() == 40
    t[4] = -1.0
    assert v[1].item() == -1.0
    np.testing.assert_array_equal(v.numpy(), [3.0, -1.0, 5.0, 6.0])


def test_share_memory_of_a_strided_numpy_root():
    base = np.arange(20.0).reshape(4, 5)
    t = tg.from_numpy(base[:, ::2])  # memory NumPy owns, viewed with strides
    t.share_memory_()
    assert t.is_shared()
    np.testing.assert_array_equal(t.numpy(), base[:, ::2])
    t.zero_()
    assert base[0, 0] == 0.0 + base[0, 0] and base[1, 0] == 5.0  # the NumPy array is not shared


def test_shared_tensor_autograd_and_empty():
    w = tg.randn(3, requires_grad=True)
    w.share_memory_()
    assert w.requires_grad and w.is_leaf and w.is_shared()
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy())
    e = tg.empty(0).share_memory_()
    assert e.is_shared() and e.numel() == 0


def test_share_memory_lifetime_closes_descriptors():
    gc.collect()
    fds = _open_fds()
    ts = [tg.randn(100).share_memory_() for _ in range(5)]
    assert _open_fds() == fds + 10  # per segment: ours (to send it) and mmap's own
    del ts
    gc.collect()
    assert _open_fds() == fds


def test_module_share_memory():
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4))
    model(tg.randn(5, 3)).sum().backward()
    params = list(model.parameters())
    before = [p.detach().clone() for p in params]
    assert model.share_memory() is model
    assert [p for p in model.parameters()] == params  # the Parameter objects stay
    assert all(p.is_shared() and p.grad.is_shared() for p in params)
    assert all(b.is_shared() for b in model.buffers())
    assert all(tg.equal(p, b) for p, b in zip(params, before))
    tg.optim.SGD(model.parameters(), lr=0.1).step()  # updates in place, still shared
    assert all(p.is_shared() for p in model.parameters())
    assert not all(tg.equal(p, b) for p, b in zip(params, before))


def test_cuda_tensors():
    t = tg.ones(2, device="cuda")
    assert t.is_shared() and t.share_memory_() is t
    with pytest.raises(RuntimeError, match="CUDA IPC"):
        reduce_tensor(t)


def test_non_leaf_requiring_grad_is_refused():
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
        mp.reducer.ForkingPickler.dumps(x * 2)


def test_plain_pickle_still_copies():
    t = tg.arange(4.0).share_memory_()
    u = pickle.loads(pickle.dumps(t))
    assert not u.is_shared() and tg.equal(u, t)


def test_sharing_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(ValueError, match="invalid sharing strategy 'files'"):
        mp.set_sharing_strategy("files")
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"


def test_exports():
    import multiprocessing
    for name in multiprocessing.__all__:
        assert hasattr(mp, name) and name in mp.__all__
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
                 "ProcessExitedException", "set_sharing_strategy"):
        assert name in mp.__all__


# -- across processes ---------------------------------------------------------------------------

def _child_write(q_in, q_out):
    t, v, p = q_in.get()
    same = v.data_ptr() - t.data_ptr()
    t.add_(1)  # written through t, read through v
    q_out.put((v.tolist(), same, tuple(v.shape), v.stride(), v.storage_offset(), v.dtype,
               v.is_shared(), type(p).__name__, p.requires_grad, p.is_shared()))
    p.data.mul_(10)
    q_out.put("done")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_queue_shares_memory(method):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    t = tg.arange(12.0, dtype=tg.float64).reshape(3, 4)  # not shared yet: moved when sent
    v = t[1:, ::2]
    p = tg.nn.Parameter(tg.ones(2))
    child = ctx.Process(target=_child_write, args=(q_in, q_out))
    child.start()
    q_in.put((t, v, p))
    got = q_out.get(timeout=TIMEOUT)
    assert q_out.get(timeout=TIMEOUT) == "done"
    child.join(TIMEOUT)
    assert child.exitcode == 0
    ref = np.arange(12.0).reshape(3, 4) + 1
    assert got == (ref[1:, ::2].tolist(), 4 * 8, (2, 2), (4, 2), 4, tg.float64, True,
                   "Parameter", True, True)
    np.testing.assert_array_equal(t.numpy(), ref)  # the child's write is seen here
    np.testing.assert_array_equal(p.detach().numpy(), [10.0, 10.0])
    assert t.is_shared() and v.is_shared() and p.is_shared()


def _child_echo(conn):
    t = conn.recv()
    t.mul_(2)
    conn.send(t)
    conn.recv()  # (stays alive until the parent has its descriptor)


def test_pipe_round_trip_is_one_storage():
    a, b = mp.Pipe()
    t = tg.tensor([1.0, 2.0, 3.0]).share_memory_()
    child = mp.get_context("fork").Process(target=_child_echo, args=(b,))
    child.start()
    a.send(t)
    back = a.recv()
    a.send("ok")
    child.join(TIMEOUT)
    assert back.data_ptr() == t.data_ptr()  # mapped once per process
    np.testing.assert_array_equal(t.numpy(), [2.0, 4.0, 6.0])


def _child_read_late(q_in, q_out):
    t = q_in.get()
    q_out.put("got")
    assert q_in.get() == "dropped"
    q_out.put(t.sum().item())


def test_memory_outlives_the_sender_reference():
    ctx = mp.get_context("fork")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_child_read_late, args=(q_in, q_out))
    child.start()
    t = tg.full((1000,), 2.0)
    q_in.put(t)
    assert q_out.get(timeout=TIMEOUT) == "got"
    del t
    gc.collect()  # the parent's mapping is gone; the child's keeps the memory
    q_in.put("dropped")
    assert q_out.get(timeout=TIMEOUT) == 2000.0
    child.join(TIMEOUT)
    assert child.exitcode == 0


def _child_fill(q_in, q_out):
    t = q_in.get()
    t.fill_(7)
    q_out.put("filled")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_file_system_strategy(method):
    mp.set_sharing_strategy("file_system")
    before = _shm_names()
    t = tg.zeros(6, dtype=tg.int32).share_memory_()
    assert len(_shm_names() - before) == 1  # kept by name while in use
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_child_fill, args=(q_in, q_out))
    child.start()
    q_in.put(t[2:])
    assert q_out.get(timeout=TIMEOUT) == "filled"
    child.join(TIMEOUT)
    assert child.exitcode == 0
    np.testing.assert_array_equal(t.numpy(), [0, 0, 7, 7, 7, 7])
    assert len(_shm_names() - before) == 1
    del t
    gc.collect()
    assert _shm_names() == before  # the last holder gone: unlinked


# -- Hogwild ------------------------------------------------------------------------------------

def _hogwild_data(n: int = 1024, d: int = 6):
    g = tg.Generator().manual_seed(0)
    x = tg.randn(n, d, generator=g)
    w = tg.randn(d, 1, generator=g)
    return x, x @ w - 1.0


def _hogwild_train(rank, model, x, y, done):
    tg.manual_seed(rank)
    opt = tg.optim.SGD(model.parameters(), lr=0.02)
    for idx in tg.randperm(x.shape[0]).split(16):
        opt.zero_grad()
        tg.nn.functional.mse_loss(model(x[idx]), y[idx]).backward()
        opt.step()
    if done is not None:
        done[rank] = 1


def _mse(model, x, y) -> float:
    with tg.no_grad():
        return tg.nn.functional.mse_loss(model(x), y).item()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild(method):
    nprocs = 3 if method == "fork" else 2
    x, y = _hogwild_data()
    model = tg.nn.Linear(6, 1)
    model.share_memory()
    w0 = model.weight.detach().clone()
    loss0 = _mse(model, x, y)
    shards = list(zip(x.chunk(nprocs), y.chunk(nprocs)))  # disjoint data per process
    done = tg.zeros(nprocs, dtype=tg.int64).share_memory_()
    if method == "spawn":
        # (spawn pickles each process's arguments: the shared tensors go by descriptor)
        ctx = mp.spawn(_hogwild_train_rank, args=(model, shards, done), nprocs=nprocs,
                       join=False)
        while not ctx.join(TIMEOUT):
            pass
    else:
        procs = [mp.get_context("fork").Process(target=_hogwild_train,
                                                args=(r, model, xs, ys, done))
                 for r, (xs, ys) in enumerate(shards)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(TIMEOUT)
            assert p.exitcode == 0
    assert done.tolist() == [1] * nprocs
    assert not tg.equal(model.weight, w0)  # the parent sees the children's updates
    loss1 = _mse(model, x, y)
    assert loss1 < 0.01 * loss0, (loss0, loss1)
    if method == "spawn":
        return
    # a single process trained on one shard gets less far: the others' updates count
    solo = tg.nn.Linear(6, 1)
    with tg.no_grad():
        solo.weight.copy_(w0)
        solo.bias.zero_()
    _hogwild_train(0, solo, *shards[0], None)
    assert loss1 < _mse(solo, x, y) or loss1 < 1e-4


def _hogwild_train_rank(rank, model, shards, done):
    _hogwild_train(rank, model, *shards[rank], done)


# -- spawn / start_processes ----------------------------------------------------------------------

def _rank_writer(rank, out):
    out[rank] = rank + 10


def _fail_on_one(rank, kind):
    if rank != 1:
        return
    if kind == "raise":
        raise ValueError(f"boom in rank {rank}")
    if kind == "exit":
        os._exit(3)
    os.kill(os.getpid(), signal.SIGKILL)


def _fail(rank, message):
    raise ValueError(message)


def test_spawn_reraises_the_child_traceback():
    # (mp.spawn's success path runs in test_hogwild[spawn])
    with pytest.raises(mp.ProcessRaisedException) as e:
        mp.spawn(_fail, args=("boom in a spawned child",), nprocs=1)
    msg = str(e.value)
    assert "-- Process 0 terminated with the following error:" in msg
    assert "Traceback (most recent call last):" in msg
    assert "ValueError: boom in a spawned child" in msg and "in _fail" in msg
    assert e.value.error_index == 0 and e.value.pid > 0


def test_start_processes_reraises_and_stops_the_others():
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: boom in rank 1") as e:
        mp.start_processes(_fail_on_one, args=("raise",), nprocs=3, start_method="fork")
    assert e.value.error_index == 1


def test_start_processes_exit_code_and_signal():
    with pytest.raises(mp.ProcessExitedException, match="process 1 terminated with exit "
                                                        "code 3") as e:
        mp.start_processes(_fail_on_one, args=("exit",), nprocs=2, start_method="fork")
    assert e.value.exit_code == 3 and e.value.error_index == 1
    with pytest.raises(mp.ProcessExitedException, match="terminated with signal SIGKILL") as e:
        mp.start_processes(_fail_on_one, args=("kill",), nprocs=2, start_method="fork")
    assert e.value.signal_name == "SIGKILL" and e.value.exit_code == -signal.SIGKILL
    err = pickle.loads(pickle.dumps(e.value))  # (exceptions cross processes too)
    assert type(err) is mp.ProcessExitedException and err.signal_name == "SIGKILL"


def test_start_processes_context_and_spawn_warning():
    out = tg.zeros(3, dtype=tg.int64).share_memory_()
    ctx = mp.start_processes(_rank_writer, args=(out,), nprocs=3, join=False,
                             start_method="fork")
    assert isinstance(ctx, mp.ProcessContext) and len(set(ctx.pids())) == 3
    while not ctx.join(TIMEOUT):
        pass
    assert out.tolist() == [10, 11, 12]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(TypeError):  # (the warning comes before the start)
            mp.spawn(_rank_writer, args=(out,), nprocs="x", start_method="fork")
    assert any(issubclass(x.category, FutureWarning) and "only supports start_method=spawn"
               in str(x.message) for x in w)


def test_fork_inherits_shared_memory_and_copies_private_memory():
    # fork: a shared tensor created before the fork is the same memory in the child; a
    # private one is a copy-on-write copy (as in PyTorch).
    shared, private = tg.zeros(2).share_memory_(), tg.zeros(2)
    pid = os.fork()
    if pid == 0:
        shared.fill_(1.0)
        private.fill_(1.0)
        os._exit(0)
    os.waitpid(pid, 0)
    assert shared.tolist() == [1.0, 1.0] and private.tolist() == [0.0, 0.0]
