"""Index bound checks of CUDA ops without a device sync (Note [index check modes] in
autograd/checks.py): ``sync`` raises at once as today, ``deferred`` clamps, syncs never and
raises the same error at ``raise_deferred_index_errors``, ``off`` clamps only; the CPU always
raises at once."""

from __future__ import annotations

import numpy as np
import pytest
import tritongrad.nn.functional as F
from tritongrad.autograd import checks
from tritongrad.runtime import memory

import tritongrad as tg
from tests.helpers import host


@pytest.fixture
def mode(monkeypatch):
    """Sets the index check mode for one test (restored after it, pending errors dropped)."""
    def set_mode(m):
        checks.set_index_check_mode(m)
    saved = checks.get_index_check_mode()
    yield set_mode
    checks.set_index_check_mode(saved)
    try:  # (read and reset the slots a failing test left)
        checks.raise_deferred_index_errors()
    except (IndexError, RuntimeError):
        pass


@pytest.fixture
def syncs(monkeypatch):
    """Counts device-to-host copies (each one a sync)."""
    n = [0]
    real = memory.to_host

    def counted(*a, **kw):
        n[0] += 1
        return real(*a, **kw)
    monkeypatch.setattr(memory, "to_host", counted)
    return n


def _x(device):
    return tg.arange(20.0, device=device).reshape(4, 5)


def _idx(values, device):
    return tg.tensor(values, device=device)


# (op name, a call with an out-of-range index, the error type, its message)
BAD = [
    ("getitem", lambda d: _x(d)[_idx([1, 7], d)], IndexError,
     "index 7 is out of bounds for dimension 0 with size 4"),
    ("getitem negative", lambda d: _x(d)[:, _idx([-6, 0], d)], IndexError,
     "index -6 is out of bounds for dimension 1 with size 5"),
    ("index_select", lambda d: _x(d).index_select(0, _idx([0, 4], d)), IndexError,
     "index out of range in self"),
    ("gather", lambda d: _x(d).gather(1, _idx([[0, 5]], d)), RuntimeError,
     "index 5 is out of bounds for dimension 1 with size 5"),
    ("scatter_", lambda d: _x(d).scatter_(0, _idx([[9, 0]], d), 1.0), RuntimeError,
     "index 9 is out of bounds for dimension 0 with size 4"),
    ("index_put_", lambda d: _x(d).index_put_((_idx([2, 4], d),), tg.tensor(1.0, device=d)),
     IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
    ("embedding", lambda d: F.embedding(_idx([0, 3, 4], d), _x(d)), IndexError,
     "index out of range in self"),
    ("cross_entropy", lambda d: F.cross_entropy(_x(d), _idx([1, -100, 5, 0], d)), IndexError,
     "Target 5 is out of bounds."),
]


@pytest.mark.parametrize("name,call,exc,msg", BAD, ids=[b[0] for b in BAD])
def test_sync_mode_raises_at_once(mode, name, call, exc, msg, device):
    mode("sync")
    with pytest.raises(exc, match=msg):
        call(device)


@pytest.mark.parametrize("name,call,exc,msg", BAD, ids=[b[0] for b in BAD])
def test_cpu_raises_at_once_in_every_mode(mode, name, call, exc, msg):
    for m in ("deferred", "off"):
        mode(m)
        with pytest.raises(exc, match=msg):
            call("cpu")


@pytest.mark.parametrize("name,call,exc,msg", BAD, ids=[b[0] for b in BAD])
def test_deferred_mode_raises_the_same_error_later(mode, syncs, name, call, exc, msg):
    mode("deferred")
    call("cuda")  # clamped: runs, reads and writes in bounds
    assert syncs[0] == 0
    with pytest.raises(exc, match=msg):
        checks.raise_deferred_index_errors()
    assert syncs[0] == 1
    checks.raise_deferred_index_errors()  # reported once, then cleared


def test_deferred_mode_in_range_indices_give_the_sync_results(mode, syncs):
    mode("deferred")
    x = _x("cuda")
    got = [x[_idx([3, -1], "cuda")], x.gather(1, _idx([[4, 0]], "cuda")),
           F.embedding(_idx([2, -0], "cuda"), x),
           F.cross_entropy(x, _idx([1, -100, 4, 0], "cuda"))]
    assert syncs[0] == 0
    checks.raise_deferred_index_errors()
    want = _x("cpu")
    np.testing.assert_array_equal(host(got[0]), host(want[_idx([3, -1], "cpu")]))
    np.testing.assert_array_equal(host(got[1]), host(want.gather(1, _idx([[4, 0]], "cpu"))))
    np.testing.assert_array_equal(host(got[2]), host(want[[2, 0]]))
    np.testing.assert_allclose(host(got[3]),
                               host(F.cross_entropy(want, _idx([1, -100, 4, 0], "cpu"))),
                               rtol=1e-6)


def test_deferred_mode_clamps_and_reports_the_first_failure(mode):
    mode("deferred")
    x = _x("cuda")
    y = x[_idx([1, 9, -8], "cuda")]  # 9 -> 3 (clamped), -8 -> -3 -> 0 (wrapped, clamped)
    x.index_select(1, _idx([7], "cuda"))
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        checks.raise_deferred_index_errors()
    np.testing.assert_array_equal(host(y), host(_x("cpu"))[[1, 3, 0]])  # (reported: clear)


@pytest.mark.parametrize("sync_point", ["item", "cpu", "synchronize"])
def test_deferred_errors_surface_at_the_next_sync(mode, sync_point):
    # as a CUDA device-side assert does: the op runs (clamped), the next point where the host
    # waits for the device raises the error, once
    mode("deferred")
    x = _x("cuda")
    y = x[_idx([1, 9], "cuda")]
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        {"item": lambda: y.sum().item(), "cpu": lambda: y.cpu(),
         "synchronize": tg.cuda.synchronize}[sync_point]()
    assert y.sum().item() == pytest.approx(float(host(_x("cpu"))[[1, 3]].sum()))


def test_deferred_buffer_full_raises_while_recording(mode, monkeypatch):
    mode("deferred")
    monkeypatch.setattr(checks, "_DEFERRED_SLOTS", 2)
    checks._deferred.clear()
    x = _x("cuda")
    x[_idx([9], "cuda")]
    x[_idx([0], "cuda")]
    with pytest.raises(IndexError, match="index 9"):
        x[_idx([1], "cuda")]  # the third check needs a slot: the first two are read
    checks._deferred.clear()


def test_off_mode_clamps_and_never_raises(mode, syncs):
    mode("off")
    y = _x("cuda")[_idx([1, 9], "cuda")]
    np.testing.assert_array_equal(host(y), host(_x("cpu"))[[1, 3]])
    assert syncs[0] == 1  # (host(y) only)
    checks.raise_deferred_index_errors()


def test_deferred_backward_of_a_clamped_index(mode):
    mode("deferred")
    w = tg.ones(4, 3, device="cuda", requires_grad=True)
    F.embedding(_idx([0, 6], "cuda"), w).sum().backward()
    with pytest.raises(IndexError, match="index out of range in self"):
        checks.raise_deferred_index_errors()
    np.testing.assert_array_equal(host(w.grad)[:, 0], [1, 0, 0, 1])


def test_mode_validation():
    with pytest.raises(ValueError, match="one of sync, deferred, off, got 'later'"):
        checks.set_index_check_mode("later")


@pytest.mark.parametrize("env,want", [({"TRITONGRAD_CHECK_INDICES": "off"}, "off"),
                                      ({}, "deferred"),  # the library's default
                                      ({"CUDA_LAUNCH_BLOCKING": "1"}, "sync"),
                                      ({"CUDA_LAUNCH_BLOCKING": "1",
                                        "TRITONGRAD_CHECK_INDICES": "deferred"}, "deferred")])
def test_mode_from_the_environment(env, want):
    import os
    import subprocess
    import sys
    code = "from tritongrad.autograd import checks; print(checks.get_index_check_mode())"
    base = {k: v for k, v in os.environ.items()  # (the suite's conftest sets sync)
            if k not in ("TRITONGRAD_CHECK_INDICES", "CUDA_LAUNCH_BLOCKING")}
    r = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True,
                       text=True, timeout=120, check=True)
    assert r.stdout.strip() == want


def test_a_training_step_in_the_default_mode_syncs_never(mode, syncs):
    """The default (deferred) on a step with an embedding and a cross-entropy, as a GPT's:
    no read-back in three steps, and the same losses and gradients as ``sync`` mode's."""
    def run(m):
        mode(m)
        tg.manual_seed(0)
        emb, head = tg.nn.Embedding(11, 8).to("cuda"), tg.nn.Linear(8, 11).to("cuda")
        opt = tg.optim.AdamW(list(emb.parameters()) + list(head.parameters()), lr=0.1)
        ids = tg.tensor([[1, 4, 9, 2], [0, 10, 3, 3]], device="cuda")
        before, losses = syncs[0], []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(head(emb(ids[:, :-1])).reshape(-1, 11),
                                   ids[:, 1:].reshape(-1))
            loss.backward()
            tg.nn.utils.clip_grad_norm_(emb.parameters(), 1.0)
            opt.step()
            losses.append(loss)
        steps = syncs[0] - before
        return steps, [float(x.item()) for x in losses], host(emb.weight)
    deferred = run("deferred")
    synced = run("sync")
    assert deferred[0] == 0 and synced[0] == 3 * 2  # (the embedding's and the targets' checks)
    np.testing.assert_allclose(deferred[1], synced[1], rtol=1e-6)
    np.testing.assert_allclose(deferred[2], synced[2], rtol=1e-6)


def test_sync_mode_syncs_per_check(mode, syncs):
    # the negative control of the deferred tests' "no sync": the counter sees sync mode's
    mode("sync")
    x = _x("cuda")
    x[_idx([1], "cuda")]
    F.embedding(_idx([0], "cuda"), x)
    assert syncs[0] == 2


@pytest.mark.parametrize("m", ["sync", "deferred", "off"])
def test_checks_inside_a_graph_capture_clamp_and_read_nothing(mode, m):
    """Inside a CUDA graph capture every mode clamps only: ``sync``'s read-back would break
    the capture (an embedding in a graphed model could not be captured), and ``deferred``
    would record a capture's values, which are never real."""
    mode(m)
    w = tg.tensor(np.arange(40.0).reshape(10, 4), device="cuda")
    ids = tg.tensor([1, 3], device="cuda")
    F.embedding(ids, w)  # warm-up, eager (checked as the mode says)
    g = tg.cuda.CUDAGraph()
    with tg.cuda.graph(g):
        out = F.embedding(ids, w)
    ids.copy_(tg.tensor([2, 9], device="cuda"))
    g.replay()
    np.testing.assert_array_equal(host(out), host(w)[[2, 9]])
    ids.copy_(tg.tensor([0, 12], device="cuda"))  # out of range: clamped in the replay
    g.replay()
    tg.cuda.synchronize()
    got = host(out)
    np.testing.assert_array_equal(got[0], host(w)[0])
    assert any((got[1] == row).all() for row in host(w))  # some row: never out of bounds
    checks.raise_deferred_index_errors()  # the capture recorded nothing to raise
    if m != "off":
        with pytest.raises(IndexError):  # and eager checks are as before
            F.embedding(tg.tensor([12], device="cuda"), w)
            checks.raise_deferred_index_errors()


def test_deferred_slots_start_afresh_after_a_raise(mode):
    # the slots fold extremes atomically (one index_guard kernel per check): a read resets
    # them, so a later check in range does not meet the extremes of one reported before
    mode("deferred")
    x = _x("cuda")
    x[_idx([1, 7], "cuda")]
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        checks.raise_deferred_index_errors()
    y = x[_idx([0, 3], "cuda")]
    checks.raise_deferred_index_errors()  # nothing pending fails
    np.testing.assert_array_equal(host(y), host(_x("cpu"))[[0, 3]])
