"""The profiler's and emit_nvtx's event names, nesting and metadata, as PyTorch's
(test_autograd.py's test_profiler_seq_nr / test_record_function / test_profiler_shapes):
ops named ``aten::<op>``, custom Functions by class, the engine's
``autograd::engine::evaluate_function: <Node>`` around each node with the node's number,
``fwd_thread``, sequence numbers only where a node could be recorded, and the helpers that
let code outside the dispatcher (factory functions, composites) report an op."""

import threading

import pytest

import tritongrad as tg
from tritongrad.autograd import Function, nvprof, nvtx, observe, profiler
from tritongrad.autograd.profiler_util import FunctionEvent, estimate_flops

EVAL = "autograd::engine::evaluate_function: "


class Twice(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


# -- names -------------------------------------------------------------------------------------

def test_event_name_of_each_kind_of_op():
    x = tg.ones(2, requires_grad=True)
    mul_cls = type((x * 2).grad_fn)  # a primitive op class (its node class), op_name "mul"
    assert observe.event_name(mul_cls) == "aten::mul"
    assert observe.event_name(Twice) == "Twice"  # a custom Function: its class name
    assert observe.event_name("mul") == "aten::mul"  # a bare name (op_range): an ATen op
    assert observe.event_name("aten::linear") == "aten::linear"  # already qualified


def test_ops_and_custom_functions_are_named_as_pytorchs():
    x = tg.ones(3, requires_grad=True)
    with profiler.profile() as prof:
        y = Twice.apply(x) + x
    names = [e.name for e in prof.function_events]
    assert names == ["Twice", "aten::mul", "aten::add"]
    twice, inner, _ = prof.function_events
    assert inner.cpu_parent is twice
    del y


# -- PyTorch's test_profiler_seq_nr, without its factory functions -----------------------------

def test_backward_events_are_wrapped_numbered_and_threaded():
    x = tg.ones(10, 10, requires_grad=True)
    y = tg.ones(10, 10, requires_grad=True)
    with profiler.profile() as prof:
        z = x + y
        s = z.sum()
        s.backward()
    evts = prof.function_events
    me = threading.get_native_id()
    for fwd_name, node_name in (("aten::add", "AddBackward0"), ("aten::sum", "SumBackward0")):
        fwd = next(e for e in evts if e.name == fwd_name)
        evaluate = next(e for e in evts if e.name == EVAL + node_name)
        node = next(e for e in evts if e.name == node_name)
        assert fwd.sequence_nr >= 0
        assert evaluate.sequence_nr == node.sequence_nr == fwd.sequence_nr
        assert node.cpu_parent is evaluate and evaluate.cpu_parent is None
        assert (evaluate.scope, node.scope) == (0, 1)  # RecordScope FUNCTION, BACKWARD_FUNCTION
        assert fwd.fwd_thread == 0 and fwd.thread == me
        assert evaluate.fwd_thread == node.fwd_thread == fwd.thread
    accs = [e for e in evts if e.name == "torch::autograd::AccumulateGrad"]
    assert len(accs) == 2
    for acc in accs:  # made by no op: no number, no forward thread
        assert acc.cpu_parent.name == EVAL + acc.name
        assert acc.sequence_nr == acc.cpu_parent.sequence_nr == -1
        assert acc.fwd_thread == acc.cpu_parent.fwd_thread == 0
    # evaluate_function ranges are the backward's top level, in the engine's order
    top = [e.name for e in evts if e.cpu_parent is None]
    assert top == ["aten::add", "aten::sum", EVAL + "SumBackward0", EVAL + "AddBackward0",
                   EVAL + "torch::autograd::AccumulateGrad",
                   EVAL + "torch::autograd::AccumulateGrad"]


def test_sequence_numbers_only_where_grad_mode_is_on():
    x = tg.ones(2, requires_grad=True)
    c = tg.ones(2)
    with profiler.profile() as prof:
        with tg.no_grad():
            x * 2  # grad mode off: no node can be recorded, no number (PyTorch: -1)
        c * 2  # grad mode on, nothing requires grad: the counter's value, as PyTorch's
        (x * 3).sum().backward()
    evts = prof.function_events
    off, on, recorded = [e for e in evts if e.name == "aten::mul"][:3]
    assert off.sequence_nr == -1
    assert on.sequence_nr == recorded.sequence_nr >= 0  # neither c * 2 nor no_grad moved it
    node = next(e for e in evts if e.name == "MulBackward0")
    assert node.sequence_nr == recorded.sequence_nr
    # the ops a node runs (grad mode off inside backward) show no number
    inside = [e for e in evts if e.cpu_parent is not None and e.cpu_parent.scope == 1]
    assert inside and all(e.sequence_nr == -1 for e in inside)


def test_create_graph_backward_ops_keep_their_numbers():
    x = tg.ones(2, requires_grad=True)
    with profiler.profile() as prof:
        (g,) = tg.autograd.grad((x * x).sum(), x, create_graph=True)
    node = next(e for e in prof.function_events if e.name == "MulBackward0")
    assert node.cpu_children and all(c.sequence_nr >= 0 for c in node.cpu_children)
    del g


def test_hooks_run_inside_evaluate_function_but_outside_the_node():
    x = tg.ones(2, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 5)  # a tensor hook of the node that made y
    with profiler.profile() as prof:
        y.sum().backward()
    hook_mul = next(e for e in prof.function_events
                    if e.name == "aten::mul" and e.cpu_parent is not None
                    and e.cpu_parent.name == EVAL + "MulBackward0")
    node = next(e for e in prof.function_events if e.name == "MulBackward0")
    assert node.cpu_parent is hook_mul.cpu_parent
    assert hook_mul.time_range.end <= node.time_range.start  # the hook ran first
    assert x.grad.tolist() == [15.0, 15.0]


def test_no_evaluate_events_without_a_profiler():
    seen = []

    class Watcher:  # an observer without evaluate_enter: the engine skips it for those
        def op_enter(self, op, seq, inputs, params):
            seen.append(observe.event_name(op))

        def op_exit(self, token):
            pass

        def node_enter(self, node, grads=None):
            seen.append(node.name())

        def node_exit(self, token):
            pass

    x = tg.ones(2, requires_grad=True)
    with observe.observing(Watcher()):
        (x * 2).sum().backward()
    assert not any(s.startswith(EVAL) for s in seen)
    assert "MulBackward0" in seen and "aten::mul" in seen


def test_record_function_order_as_in_pytorch():
    x = tg.ones(10, 10)
    with profiler.profile() as prof:
        with profiler.record_function("outer"):
            y = x * 2 + 4
            with profiler.record_function("inner"):
                y = y - 1
        y = y / 1
    names = [e.name for e in prof.function_events]
    assert names == ["outer", "aten::mul", "aten::add", "inner", "aten::sub", "aten::div"]


# -- ops outside the dispatcher ----------------------------------------------------------------

@observe.observed_op("aten::my_linear", seq_from_counter=True)
def _composite(input, weight, bias=None):
    return input.matmul(weight.t()) + bias if bias is not None else input.matmul(weight.t())


@observe.observed_op("aten::my_factory")
def _factory(n, *, value=1.0):
    with observe.op_range("aten::empty", params=(n,)):
        out = tg.empty(n)
    with observe.op_range("aten::fill_", (out,), (value,)):
        out.fill_(value)
    return out


def test_observed_op_reports_a_composite_with_its_arguments():
    x, w, b = tg.ones(4, 3), tg.ones(5, 3, requires_grad=True), tg.ones(5)
    with profiler.profile(record_shapes=True) as prof:
        _composite(x, w, b)
        _composite(x, w)
    outer = [e for e in prof.function_events if e.name == "aten::my_linear"]
    assert [e.input_shapes for e in outer] == [[[4, 3], [5, 3], [5]], [[4, 3], [5, 3]]]
    first = outer[0]
    assert [c.name for c in first.cpu_children] == ["aten::t", "aten::mm", "aten::add"]
    # it goes through autograd: the counter's value, the number its first node gets
    assert first.sequence_nr == first.cpu_children[0].sequence_nr >= 0
    assert _composite.__name__ == "_composite"


def test_observed_op_and_op_range_report_a_factory():
    with profiler.profile(record_shapes=True) as prof:
        out = _factory(3, value=2.0)
    assert out.tolist() == [2.0, 2.0, 2.0]
    top = prof.function_events[0]
    assert top.name == "aten::my_factory" and top.sequence_nr == -1
    assert top.input_shapes == [[], []]  # n and value: no tensors
    kids = [c.name for c in top.cpu_children]
    assert kids[0] == "aten::empty" and kids[-1] == "aten::fill_"
    assert all(c.sequence_nr == -1 for c in top.cpu_children)


def test_helpers_are_plain_calls_without_observers():
    assert tg.autograd.state.state.observers == ()
    assert _factory(2).tolist() == [1.0, 1.0]
    with observe.op_range("aten::empty") as r:
        pass
    assert r._open is None


# -- emit_nvtx's messages ----------------------------------------------------------------------

def test_emit_nvtx_messages_use_pytorchs_names(monkeypatch):
    pushed = []
    monkeypatch.setattr(nvtx, "_push_once", pushed.append)
    monkeypatch.setattr(nvtx, "_pop", lambda: None)
    monkeypatch.setattr(nvtx, "_range_push", pushed.append)
    x = tg.ones(2, requires_grad=True)
    obs = nvtx._Observer(record_shapes=False)
    with observe.observing(obs):
        y = x * 2
        seq = y.grad_fn._seq
        y.sum().backward()
        with observe.op_range("aten::empty"):  # a factory's part: no number
            pass
    assert f"aten::mul, seq = {seq}" in pushed
    i = pushed.index(f"MulBackward0, stashed seq = {seq}")
    assert pushed[i - 1] == EVAL + "MulBackward0"  # named alone, around the node's range
    assert EVAL + "torch::autograd::AccumulateGrad" in pushed
    assert pushed[-1] == "aten::empty"


# -- FLOPs, events read from a trace -----------------------------------------------------------

def test_flops_follow_the_new_names():
    a, b = tg.ones(3, 4), tg.ones(4, 5)
    with profiler.profile(with_flops=True) as prof:
        a @ b
    assert [(e.name, e.flops) for e in prof.function_events] == [("aten::mm", 120)]
    assert estimate_flops("aten::mul", [(2, 3), (3,)]) == estimate_flops("mul", [(2, 3), (3,)]) \
        == 6


def test_load_nvprof_numbers_evaluate_ranges_from_their_node():
    def evt(i, name, t0, t1, seq=-1, scope=0):
        return FunctionEvent(i, name, 7, t0, t1, sequence_nr=seq, scope=scope)

    events = [evt(0, EVAL + "MulBackward0", 0, 10),
              evt(1, "MulBackward0", 1, 9, seq=4, scope=1),
              evt(2, EVAL + "torch::autograd::AccumulateGrad", 11, 20),
              evt(3, "torch::autograd::AccumulateGrad", 12, 19, scope=0)]
    profiler.EventList(events)._build_tree()
    nvprof._number_evaluate_ranges(events)
    assert [e.sequence_nr for e in events] == [4, 4, -1, -1]
    assert events[0].fwd_thread is None  # unknown for events read from a trace (PyTorch's)


def test_function_event_takes_fwd_thread():
    e = FunctionEvent(0, "MulBackward0", 5, 0.0, 1.0, fwd_thread=3, sequence_nr=2, scope=1)
    assert (e.thread, e.fwd_thread) == (5, 3)
    with pytest.raises(TypeError):
        FunctionEvent(0, "x", 5, 0.0, 1.0, 3)  # keyword only, as the other options


def test_format_time_has_pytorchs_private_name_too():
    from tritongrad.autograd import profiler_util
    assert profiler_util._format_time(12.3456) == "12.346us"
    assert profiler_util._format_time(1234.5) == "1.234ms"
    assert profiler_util._format_time(2e6) == "2.000s"


def test_addmm_counts_the_flops_of_its_product():
    from tritongrad.autograd.profiler_util import estimate_flops
    assert estimate_flops("aten::addmm", [(4,), (2, 3), (3, 4)]) == 2 * 2 * 3 * 4
    assert estimate_flops("aten::baddbmm", [(5, 2, 4), (5, 2, 3), (5, 3, 4)]) == 5 * 2 * 2 * 3 * 4
    with profiler.profile(with_flops=True) as prof:
        tg.nn.functional.linear(tg.ones(8, 16), tg.ones(4, 16), tg.ones(4))  # one addmm node
    assert [(e.name, e.flops) for e in prof.function_events if e.flops] == [
        ("aten::addmm", 2 * 8 * 16 * 4)]
