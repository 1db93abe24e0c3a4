"""Stream semantics of backward passes (docs/streams.md, Note [Backward streams] in engine.py).

The first tests run wherever "cuda" runs (the emulated device in CI, a GPU when lent): they
check which stream each backward node ran on and which waits the engine queued. The last ones
need a real GPU: a deliberately slow side stream makes a missing wait visible as a wrong
gradient, and they show the engine's waits are what makes the gradient right.
"""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import Function
from tritongrad.runtime import streams as rt_streams


class Probe(Function):
    """Identity whose backward notes the stream it runs on."""

    seen: list = []

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        Probe.seen.append(tg.cuda.current_stream())
        return g


@pytest.fixture
def waits(monkeypatch):
    """Records (waiting stream, stream the event was recorded on) for every wait_event."""
    calls, recorded_on = [], {}
    real_record, real_wait = rt_streams.Stream.record_event, rt_streams.Stream.wait_event

    def record_event(self, event=None):
        ev = real_record(self, event)
        recorded_on[id(ev)] = self
        return ev

    def wait_event(self, event):
        calls.append((self, recorded_on.get(id(event))))
        return real_wait(self, event)

    monkeypatch.setattr(rt_streams.Stream, "record_event", record_event)
    monkeypatch.setattr(rt_streams.Stream, "wait_event", wait_event)
    return calls


def test_each_backward_node_runs_on_its_forward_stream():
    Probe.seen = []
    x = tg.ones(8, device="cuda", requires_grad=True)
    side = tg.cuda.Stream()
    side.wait_stream(tg.cuda.current_stream())  # the forward's own sync (PyTorch's rule)
    with tg.cuda.stream(side):
        y = Probe.apply(x) * 2
    z = Probe.apply(y)  # on the default stream
    z.sum().backward()
    default = tg.cuda.default_stream()
    assert Probe.seen == [default, side]  # z's node first (newest), then y's
    assert tg.cuda.current_stream() == default
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2.0)


def test_gradient_crossing_streams_waits_and_caller_waits_at_the_end(waits):
    x = tg.ones(8, device="cuda", requires_grad=True)
    side = tg.cuda.Stream()
    side.wait_stream(tg.cuda.current_stream())  # the forward's own sync (PyTorch's rule)
    with tg.cuda.stream(side):
        y = x * 3
    default = tg.cuda.current_stream()
    default.wait_stream(side)
    loss = y.sum()  # default stream
    waits.clear()  # only the engine's waits from here
    loss.backward()
    # SumBackward (default) -> MulBackward (side): side waits on default; the leaf's
    # gradient is accumulated on the caller's stream, which waits on side.
    assert (side, default) in waits
    assert (default, side) in waits
    np.testing.assert_allclose(x.grad.cpu().numpy(), 3.0)


def test_no_waits_when_everything_is_on_one_stream(waits):
    x = tg.ones(8, device="cuda", requires_grad=True)
    (x * 3).exp().sum().backward()
    assert waits == []


_X0 = np.linspace(-1, 1, 8, dtype=np.float32)


def _chain_grad() -> np.ndarray:
    """d/dx of sum(sigmoid(3 tanh(2 x))) at _X0, in float64."""
    t = np.tanh(2 * _X0.astype(np.float64))
    s = 1 / (1 + np.exp(-3 * t))
    return s * (1 - s) * 3 * (1 - t * t) * 2


def test_nodes_on_the_callers_stream_take_the_fast_path(monkeypatch):
    # Note [Backward streams]: a node on the caller's stream needs nothing around it, so it
    # runs as a CPU node does (the engine's _run_rule, chains on arrays), and so does the
    # leaf's AccumulateGrad on the current device (its accumulation alone): none takes the
    # full path
    from tritongrad.autograd import engine

    full = []
    real = engine._GraphTask._run_full

    def counted(self, node, grads):
        full.append(type(node).__name__)
        return real(self, node, grads)

    monkeypatch.setattr(engine._GraphTask, "_run_full", counted)
    x = tg.tensor(_X0, device="cuda", requires_grad=True)
    ((x * 2).tanh() * 3).sigmoid().sum().backward()
    assert full == []
    np.testing.assert_allclose(x.grad.cpu().numpy(), _chain_grad(), rtol=1e-5)


def test_a_node_on_another_device_is_not_home():
    # the full path's run_on makes the node's device current (stream() selects it); the fast
    # path would launch on the current device, so a node elsewhere must not take it (one
    # emulated device: a stand-in stream on ordinal 1)
    from types import SimpleNamespace

    from tritongrad.autograd import engine

    sync = engine._StreamSync()
    elsewhere = SimpleNamespace(_stream=SimpleNamespace(device_index=1))
    here = SimpleNamespace(_stream=tg.cuda.current_stream())
    assert tg.cuda.current_device() == 0
    assert not sync.home(elsewhere) and sync.home(here)
    assert sync.home(SimpleNamespace(_stream=None))  # a CPU node
    # a leaf's accumulation runs on its device's caller stream: home where that device is
    # current, or on the CPU
    cuda1 = SimpleNamespace(_device=SimpleNamespace(type="cuda", index=1))
    cuda0 = SimpleNamespace(_device=SimpleNamespace(type="cuda", index=0))
    cpu = SimpleNamespace(_device=SimpleNamespace(type="cpu", index=None))
    assert not sync.home_leaf(cuda1) and sync.home_leaf(cuda0) and sync.home_leaf(cpu)


def test_a_side_stream_stretch_inside_a_fast_chain_still_waits(waits):
    # the default-stream nodes around it run on the fast path, the side-stream ones on the
    # full path, on side; the gradient crosses streams twice, each time with a wait, and the
    # caller waits on side at the end
    side = tg.cuda.Stream()
    default = tg.cuda.current_stream()
    Probe.seen = []
    x = tg.tensor(_X0, device="cuda", requires_grad=True)
    a = x * 2
    # the forward's own syncs, PyTorch's rule for using a tensor on another stream (the
    # first GPU run of this test, H200 2026-11-30, read `a` on side before it was written)
    side.wait_stream(default)
    with tg.cuda.stream(side):
        b = Probe.apply(a.tanh() * 3)
    default.wait_stream(side)
    waits.clear()  # only the engine's waits from here
    b.sigmoid().sum().backward()
    assert Probe.seen == [side]
    assert (side, default) in waits and (default, side) in waits
    np.testing.assert_allclose(x.grad.cpu().numpy(), _chain_grad(), rtol=1e-5)


def test_backward_in_a_side_stream_context_uses_that_stream_for_roots(waits):
    side = tg.cuda.Stream()
    x = tg.ones(8, device="cuda", requires_grad=True)
    y = (x * 2).sum()  # forward on the default stream
    with tg.cuda.stream(side):
        g = tg.ones((), device="cuda")  # the root gradient is made on side
        y.backward(g)
        grad = x.grad * 1  # used on the same stream: safe without user sync
    # roots count as produced on the caller's current stream (side); the nodes ran on the
    # default stream, so it waited on side first, and side waited on it at the end.
    assert (tg.cuda.default_stream(), side) in waits
    assert (side, tg.cuda.default_stream()) in waits
    np.testing.assert_allclose(grad.cpu().numpy(), 2.0)


# -- real hardware: the waits are what makes the gradient right ------------------------------

GiB = 1 << 30


def _busy(stream, repeats=120):
    """Queues ~50 ms of 1 GiB memsets on ``stream``."""
    from tritongrad.runtime import driver, memory
    from tritongrad.runtime import dtype as dt
    buf = memory.empty((GiB,), dt.uint8, tg.device("cuda", 0))
    for i in range(repeats):
        driver.get_driver().memset_d8(0, buf.data_ptr(), i & 0xFF, GiB, stream.cuda_stream)
    return buf


def _side_stream_step(side):
    n = 1 << 22
    x = tg.ones(n, device="cuda", requires_grad=True)
    side.wait_stream(tg.cuda.current_stream())  # the forward's own syncs (PyTorch's rule)
    with tg.cuda.stream(side):
        y = x * 3  # MulBackward1 will run on side
    tg.cuda.current_stream().wait_stream(side)
    loss = y.sum()
    with tg.cuda.stream(side):
        # A freed NaN block on side: MulBackward1's output (allocated on side) reuses it, so
        # reading the gradient before side wrote it shows NaN, never a stale right answer.
        poison = tg.full((n,), float("nan"), device="cuda")
        del poison
    tg.cuda.synchronize()
    keep = _busy(side)  # side is busy when backward queues MulBackward1 on it
    loss.backward()
    busy_at_read = not side.query()
    grad = x.grad.cpu().numpy()  # read on the caller's (default) stream, no user sync
    tg.cuda.synchronize()
    del keep
    return grad, busy_at_read


@pytest.mark.gpu
def test_side_stream_backward_gradient_is_correct():
    # Once to compile the step's kernels: a first compile outlasts the busy chain (seen on the
    # first GPU run, H200, 2026-11-29), and the check below needs side still busy at the read.
    _side_stream_step(tg.cuda.Stream())
    grad, busy = _side_stream_step(tg.cuda.Stream())
    assert busy, "the side stream finished too early to show anything: lengthen _busy"
    np.testing.assert_array_equal(grad, 3.0)


@pytest.mark.gpu
def test_without_the_engines_waits_the_same_step_races(monkeypatch):
    from tritongrad.autograd import engine
    monkeypatch.setattr(engine._StreamSync, "deliver", lambda self, g, p, c: g)
    monkeypatch.setattr(engine._StreamSync, "finish", lambda self: None)
    _side_stream_step(tg.cuda.Stream())  # compile first (see the test above)
    grad, busy = _side_stream_step(tg.cuda.Stream())
    assert busy
    assert not np.all(grad == 3.0), "expected a race without the engine's synchronisation"
