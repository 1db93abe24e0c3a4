"""Multi-process loading, ``DataLoader(num_workers > 0)``, against PyTorch's documented
behaviour: the same batches as the main process, worker info and per-worker seeds, iterable
datasets replicated in each worker, ordering, timeouts, worker errors, persistent workers,
and shutdown (no worker process outlives its iterator: every test checks it).

Workers start with "fork" (milliseconds) except in the one "spawn" test (each spawned worker
imports tritongrad again: seconds).
"""

import gc
import multiprocessing
import os
import random
import threading
import time

import numpy as np
import pytest
from tritongrad.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)
from tritongrad.utils.data._worker import _seed_worker

import tritongrad as tg

FORK = "fork"


def _feeder_threads_gone(timeout=2.0):
    """Whether the index queues' feeder threads of the stopped loaders have exited (they do
    so just after shutdown, asynchronously), waiting up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(t.name == "QueueFeederThread" for t in threading.enumerate()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


@pytest.fixture(autouse=True)
def _no_worker_left_behind():
    before = set(multiprocessing.active_children())
    yield
    gc.collect()  # an iterator kept alive by a caught exception's traceback goes here
    left = set(multiprocessing.active_children()) - before
    assert not left, f"worker processes still running after the test: {left}"
    assert _feeder_threads_gone(), "the main process kept a loader's queue threads"


class WhoAmI(Dataset):
    """Each sample says which process loaded it and what that worker was told."""

    def __init__(self, n=6, slow=(), fail=None, die=None):
        self.n, self.slow, self.fail, self.die = n, dict(slow), fail, die
        self.inits = []  # worker_init_fn calls, in this worker's copy

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.slow.get(i, 0))
        if i == self.fail:
            raise ValueError(f"bad sample {i}")
        if i == self.die:
            os._exit(3)
        info = get_worker_info()
        return {"i": i, "pid": os.getpid(), "id": info.id, "num_workers": info.num_workers,
                "seed": info.seed, "tg_seed": tg.initial_seed(), "inits": list(self.inits),
                "copy": info.dataset is self}


def record_init(worker_id):
    info = get_worker_info()
    info.dataset.inits.append((worker_id, random.random(), float(np.random.random())))


class Shards(IterableDataset):
    """range(n), split between the workers by worker id (or replicated when not)."""

    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def _values(batches):
    return [[t.tolist() for t in b] for b in batches]


@pytest.mark.parametrize("seeding", ["generator", "manual_seed"])
def test_same_batches_as_the_main_process_with_a_seeded_shuffle(seeding):
    x, y = tg.randn(23, 3), tg.arange(23)
    ds = TensorDataset(x, y)

    def epochs(num_workers):
        if seeding == "manual_seed":
            tg.manual_seed(11)
            gen = None
        else:
            gen = tg.Generator().manual_seed(11)
        # (the default start method: no multiprocessing_context)
        loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=num_workers,
                            generator=gen)
        return [_values(loader) for _ in range(2)]

    main, workers = epochs(0), epochs(2)
    assert workers == main
    assert main[0] != main[1]  # reshuffled each epoch
    order = [i for b in main[0] for i in b[1]]
    assert sorted(order) == list(range(23)) and order != list(range(23))


def test_get_worker_info_in_workers_and_none_in_the_main_process():
    assert get_worker_info() is None
    got = list(DataLoader(WhoAmI(6), batch_size=None, num_workers=2,
                          multiprocessing_context=FORK))
    assert get_worker_info() is None
    assert [s["i"] for s in got] == list(range(6))
    assert [s["id"] for s in got] == [0, 1, 0, 1, 0, 1]  # tasks go round robin
    assert {s["num_workers"] for s in got} == {2} and all(s["copy"] for s in got)
    assert os.getpid() not in {s["pid"] for s in got} and len({s["pid"] for s in got}) == 2


def test_worker_init_fn_runs_once_per_worker_with_its_id():
    loader = DataLoader(WhoAmI(6), batch_size=None, num_workers=2, worker_init_fn=record_init,
                        persistent_workers=True, multiprocessing_context=FORK)
    for _ in range(2):  # persistent workers: still once per worker in the second epoch
        for s in loader:
            assert [w for w, *_ in s["inits"]] == [s["id"]]
    del loader


def test_worker_seeds_are_base_seed_plus_id_and_reproducible():
    def run(seed):
        loader = DataLoader(WhoAmI(4), batch_size=None, num_workers=2,
                            worker_init_fn=record_init, multiprocessing_context=FORK,
                            generator=tg.Generator().manual_seed(seed))
        it = iter(loader)
        samples = list(it)
        return it._base_seed, {s["id"]: (s["seed"], s["tg_seed"], s["inits"][0]) for s in samples}

    base, per_worker = run(7)
    for worker_id, (seed, tg_seed, (_, py_draw, _)) in per_worker.items():
        assert seed == tg_seed == base + worker_id  # tg.manual_seed(base_seed + id)
        assert py_draw == random.Random(seed).random()  # random.seed(base_seed + id)
    assert per_worker[0][2][2] != per_worker[1][2][2]  # NumPy draws differ between workers
    assert run(7) == (base, per_worker)
    assert run(8)[0] != base


def test_worker_seeding_matches_pytorch():
    # Worker 0 and 1 of a PyTorch 2.13 iterator whose base_seed was 900450186894289455 drew
    # these first numbers from random.random() and np.random.random() (measured by hand).
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        expected = {0: (0.21315340548154382, 0.8371640508861415),
                    1: (0.7733861492043289, 0.6702704958690073)}
        for worker_id, (py_draw, np_draw) in expected.items():
            assert _seed_worker(900450186894289455, worker_id) == 900450186894289455 + worker_id
            assert tg.initial_seed() == 900450186894289455 + worker_id
            assert (random.random(), float(np.random.random())) == (py_draw, np_draw)
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def test_an_iterable_dataset_is_replicated_and_sharded_by_worker_id():
    loader = DataLoader(Shards(23), batch_size=4, num_workers=2, multiprocessing_context=FORK)
    batches = [b.tolist() for b in loader]
    assert sorted(v for b in batches for v in b) == list(range(23))  # every element once
    assert batches[:2] == [[0, 2, 4, 6], [1, 3, 5, 7]]  # the workers take turns
    # drop_last: each worker drops its own last incomplete batch (worker 1 has 11 elements)
    dropped = [b.tolist() for b in DataLoader(Shards(23), batch_size=4, drop_last=True,
                                              num_workers=2, multiprocessing_context=FORK)]
    assert [len(b) for b in dropped] == [4] * 5
    assert sorted(v for b in dropped for v in b) == sorted(set(range(23)) - {17, 19, 21})
    # without sharding every worker yields the whole dataset, as PyTorch documents
    replicated = [v for b in DataLoader(Shards(5, shard=False), batch_size=2, num_workers=2,
                                        multiprocessing_context=FORK) for v in b.tolist()]
    assert sorted(replicated) == sorted(list(range(5)) * 2)


def test_in_order_false_delivers_batches_as_they_are_ready():
    def first_and_all(in_order):
        ds = WhoAmI(8, slow={0: 0.5})  # worker 0's first sample is slow
        got = [s["i"] for s in DataLoader(ds, batch_size=None, num_workers=2,
                                          in_order=in_order, multiprocessing_context=FORK)]
        return got[0], sorted(got)

    assert first_and_all(True) == (0, list(range(8)))
    first, everything = first_and_all(False)
    assert everything == list(range(8)) and first != 0


def test_timeout_raises_when_no_batch_arrives():
    loader = DataLoader(WhoAmI(4, slow={0: 0.5}), batch_size=None, num_workers=1, timeout=0.05,
                        multiprocessing_context=FORK)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0\.05 seconds"):
        next(iter(loader))
    assert time.monotonic() - t0 < 5  # (including the shutdown of the sleeping worker)


class TwoArgError(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a} and {b}")


class RaisesTwoArgError(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        raise TwoArgError(i, "b")


def _error_of(loader):
    """The type and message of what iterating ``loader`` raises. Nothing keeps the exception
    (whose traceback holds the iterator, hence its workers) alive after the call."""
    try:
        list(loader)
    except Exception as e:
        return type(e), str(e)
    raise AssertionError("the loader raised nothing")


def test_a_worker_exception_is_raised_again_in_the_main_process():
    kind, msg = _error_of(DataLoader(WhoAmI(6, fail=3), batch_size=None, num_workers=2,
                                     multiprocessing_context=FORK))
    assert kind is ValueError
    assert msg.startswith("Caught ValueError in DataLoader worker process 1.\n"
                          "Original Traceback (most recent call last):\n")
    assert "in __getitem__" in msg and msg.rstrip().endswith("ValueError: bad sample 3")
    # a type that cannot be built from the message becomes RuntimeError with that message
    kind, msg = _error_of(DataLoader(RaisesTwoArgError(), num_workers=1,
                                     multiprocessing_context=FORK))
    assert kind is RuntimeError
    assert msg.startswith("Caught TwoArgError in DataLoader worker process 0.\n")
    # a KeyError keeps the traceback readable (not one repr'd line)
    kind, msg = _error_of(DataLoader({}, batch_size=None, sampler=["k"], num_workers=1,
                                     multiprocessing_context=FORK))
    assert kind is KeyError
    assert msg.startswith("Caught KeyError in DataLoader worker process 0.\n")


def test_a_batch_that_cannot_be_pickled_is_an_error_not_a_hang():
    loader = DataLoader(WhoAmI(2), batch_size=2, num_workers=1, timeout=10,
                        collate_fn=lambda b: (lambda: b), multiprocessing_context=FORK)
    with pytest.raises(Exception, match=r"Caught \w+ in DataLoader worker process 0\.(.|\n)*"
                                        r"pickle") as info:
        next(iter(loader))
    assert "timed out" not in str(info.value)


def test_a_worker_that_dies_is_reported():
    # (the timeout only turns a missed death into a failure instead of a hang)
    loader = DataLoader(WhoAmI(6, die=2), batch_size=None, num_workers=2, timeout=20,
                        multiprocessing_context=FORK)
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly"):
        list(loader)


def test_persistent_workers_serve_every_epoch():
    loader = DataLoader(WhoAmI(6), batch_size=None, num_workers=2, persistent_workers=True,
                        multiprocessing_context=FORK)
    first = list(loader)
    for _ in loader:  # an epoch left early: its batches in flight must not leak into the next
        break
    second = list(loader)
    assert [s["i"] for s in second] == [s["i"] for s in first] == list(range(6))
    assert {s["pid"] for s in first} == {s["pid"] for s in second}
    assert len(multiprocessing.active_children()) >= 2  # still there between epochs
    del loader

    fresh = DataLoader(WhoAmI(2), batch_size=None, num_workers=1, multiprocessing_context=FORK)
    assert {s["pid"] for s in fresh} != {s["pid"] for s in fresh}  # new workers each epoch


def test_no_worker_is_left_after_exhaustion_break_or_del():
    loader = DataLoader(WhoAmI(6), batch_size=2, num_workers=2, multiprocessing_context=FORK)
    it = iter(loader)
    assert len(list(it)) == 3
    assert multiprocessing.active_children() == []  # joined as soon as the data ran out
    del it
    for _ in loader:
        assert len(multiprocessing.active_children()) == 2
        break
    assert multiprocessing.active_children() == []  # the abandoned iterator stopped them
    it = iter(loader)
    next(it)
    workers = multiprocessing.active_children()
    del it
    assert multiprocessing.active_children() == []
    assert [w.exitcode for w in workers] == [0, 0]  # they stopped when asked, not terminated


def test_pin_memory_is_applied_in_the_main_process():
    import tritongrad.cuda as tgcuda
    if not tgcuda.is_available():
        pytest.skip("no CUDA device (set TRITONGRAD_EMULATE_CUDA=1 to use the emulated one)")
    ds = TensorDataset(tg.arange(12.0).reshape(6, 2), tg.arange(6))
    batches = list(DataLoader(ds, batch_size=4, pin_memory=True, num_workers=2,
                              multiprocessing_context=FORK))
    assert all(t.is_pinned() for b in batches for t in b)
    assert _values(batches) == _values(DataLoader(ds, batch_size=4))


def test_worker_argument_checks():
    ds = WhoAmI(4)
    with pytest.raises(ValueError, match=r"prefetch_factor option could only be specified in "
                                         r"multiprocessing\.let num_workers > 0 to enable "
                                         r"multiprocessing, otherwise set prefetch_factor to "
                                         r"None\."):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="prefetch_factor option should be non-negative"):
        DataLoader(ds, num_workers=2, prefetch_factor=-1)
    with pytest.raises(ValueError, match="prefetch_factor must be greater than 0"):
        iter(DataLoader(ds, num_workers=2, prefetch_factor=0))
    assert DataLoader(ds, num_workers=2).prefetch_factor == 2
    assert DataLoader(ds).prefetch_factor is None
    with pytest.raises(ValueError, match=r"multiprocessing_context can only be used with "
                                         r"multi-process loading \(num_workers > 0\)"):
        DataLoader(ds, multiprocessing_context=FORK)
    with pytest.raises(ValueError, match="should specify a valid start method in"):
        DataLoader(ds, num_workers=1, multiprocessing_context="teleport")
    with pytest.raises(TypeError, match="should be a valid context object"):
        DataLoader(ds, num_workers=1, multiprocessing_context=42)
    ctx = DataLoader(ds, num_workers=1, multiprocessing_context=FORK).multiprocessing_context
    assert ctx is multiprocessing.get_context(FORK)
    too_many = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else os.cpu_count()) + 1
    with pytest.warns(UserWarning, match=f"This DataLoader will create {too_many} worker"):
        DataLoader(ds, num_workers=too_many)


def test_spawned_workers():
    # spawn pickles the dataset and worker_init_fn and imports them again in each worker
    loader = DataLoader(WhoAmI(4), batch_size=None, num_workers=2, worker_init_fn=record_init,
                        multiprocessing_context="spawn", generator=tg.Generator().manual_seed(3))
    it = iter(loader)
    got = list(it)
    assert [s["i"] for s in got] == [0, 1, 2, 3] and [s["id"] for s in got] == [0, 1, 0, 1]
    assert all(s["seed"] == s["tg_seed"] == it._base_seed + s["id"] for s in got)
    assert all([w for w, *_ in s["inits"]] == [s["id"]] for s in got)
