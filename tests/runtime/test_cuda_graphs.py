"""CUDA graphs: capture and replay, the graph's memory pool, the errors, and
make_graphed_callables.

The tests that take the ``cuda`` fixture run on the emulated device in CI (where capture
records the interpreted kernels, copies and memsets, and replay runs them again) and on the
real driver's stream capture where a GPU is lent; the ``gpu`` ones check what only the real
driver shows. Every capture is preceded by an eager run of the same work, as PyTorch asks: on
a GPU that compiles the kernels, which a capture may not do.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda_driver import _libcuda_missing, _offline_real_driver
from tritongrad.runtime import driver, memory
from tritongrad.runtime.driver import CudaError, EmulatedDriver

import tritongrad as tg

CUDA = tg.device("cuda", 0)

NOT_PERMITTED = "operation not permitted when stream is capturing"


def _host(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def _fill(static, values: np.ndarray) -> None:
    """Fresh data into a captured input, as a training loop would (outside the capture)."""
    static.copy_(tg.tensor(values, device="cuda", dtype=static.dtype))


def _no_capture_left() -> None:
    assert driver.get_driver().capturing == 0
    assert not tg.cuda.is_current_stream_capturing()


# -- capture and replay ---------------------------------------------------------------------
def _work(x, w):
    h = (x @ w).relu()
    return h.softmax(dim=-1) * 3.0 - h.sum(dim=0), (x * x).mean()


def _reference(x, w):
    h = np.maximum(x @ w, 0)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) * 3.0 - h.sum(axis=0), (x * x).mean()


def test_replay_computes_the_captured_ops_on_fresh_inputs(cuda):
    rng = np.random.default_rng(0)
    static_x = tg.zeros(7, 5, device="cuda", dtype=tg.float64)
    static_w = tg.tensor(rng.standard_normal((5, 3)), device="cuda")
    _work(static_x, static_w)  # warm-up
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        static_out, static_mean = _work(static_x, static_w)
    assert repr(g) == "<tritongrad.cuda.CUDAGraph captured>"
    for _ in range(3):
        x = rng.standard_normal((7, 5))
        _fill(static_x, x)
        g.replay()
        want_out, want_mean = _reference(x, _host(static_w))
        np.testing.assert_allclose(_host(static_out), want_out, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_host(static_mean), want_mean, rtol=1e-12)
    _no_capture_left()


def test_capture_records_and_does_not_run(cuda):
    """PyTorch runs nothing while capturing: a write captured into an existing tensor shows
    only after replay, and each replay writes again."""
    src = tg.full((4,), 2.0, device="cuda")
    dst = tg.zeros(4, device="cuda")
    dst.add_(src)  # warm-up: dst = 2
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        dst.add_(src)
    np.testing.assert_array_equal(_host(dst), [2.0] * 4)
    g.replay()
    np.testing.assert_array_equal(_host(dst), [4.0] * 4)
    g.replay()
    g.replay()
    np.testing.assert_array_equal(_host(dst), [8.0] * 4)


def test_device_copies_and_memsets_are_recorded(cuda):
    """The runtime's own device work (cuMemcpyDtoDAsync, cuMemsetD8Async) is captured too."""
    a = memory.to_device(np.arange(6, dtype=np.float32), CUDA)
    b = memory.empty((6,), a.dtype, CUDA)
    c = memory.empty((6,), a.dtype, CUDA)
    drv = driver.get_driver()
    s = cuda.Stream()
    g = cuda.CUDAGraph()
    with cuda.stream(s):
        drv.memset_d8(0, c.data_ptr(), 0, 24, s.cuda_stream)
        g.capture_begin()
        memory.copy_between(b, a)
        drv.memset_d8(0, c.data_ptr(), 0x3F, 24, s.cuda_stream)
        g.capture_end()
    s.synchronize()
    assert not memory.to_host(c).any()  # the capture ran nothing
    g.replay()
    cuda.synchronize()
    np.testing.assert_array_equal(memory.to_host(b), np.arange(6, dtype=np.float32))
    assert (memory.to_host(c).view(np.uint8) == 0x3F).all()


def test_replay_on_the_default_stream_and_on_another(cuda):
    x = tg.ones(5, device="cuda")
    y = x * 3
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        y = x * 3
    for s in (cuda.default_stream(), cuda.Stream()):
        _fill(x, np.full(5, 2.0 if s.cuda_stream else 5.0, np.float32))
        cuda.synchronize()
        with cuda.stream(s):
            g.replay()
        s.synchronize()
        np.testing.assert_array_equal(_host(y), x.cpu().numpy() * 3)


def test_capture_begin_end_by_hand_on_a_side_stream(cuda):
    x = tg.arange(4.0, device="cuda")
    y = x + 1
    s = cuda.Stream()
    g = cuda.CUDAGraph()
    with cuda.stream(s):
        g.capture_begin()
        assert cuda.is_current_stream_capturing()
        y = x + 1
        g.capture_end()
    assert not cuda.is_current_stream_capturing()
    _fill(x, np.array([10, 20, 30, 40], np.float32))
    g.replay()
    cuda.synchronize()
    np.testing.assert_array_equal(_host(y), [11, 21, 31, 41])


def test_reset_lets_the_instance_capture_again(cuda):
    x = tg.ones(3, device="cuda")
    y = x * 2
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        y = x * 2
    g.reset()
    assert repr(g) == "<tritongrad.cuda.CUDAGraph empty>"
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with cuda.graph(g):
        z = x * 5
    g.replay()
    np.testing.assert_array_equal(_host(z), [5, 5, 5])
    del y


def test_empty_capture_warns(cuda):
    g = cuda.CUDAGraph()
    with pytest.warns(UserWarning, match="The CUDA Graph is empty"), cuda.graph(g):
        pass


# -- the memory pool --------------------------------------------------------------------------
def _segments_of(pool_id) -> list[tuple[int, int]]:
    alloc = memory.allocator(0)
    return [(s.ptr, s.ptr + s.size) for s in alloc._segments.values()
            if s.pool is not None and s.pool.id == pool_id]


def _inside(ptr: int, spans) -> bool:
    return any(lo <= ptr < hi for lo, hi in spans)


def test_memory_allocated_in_capture_comes_from_the_graph_pool(cuda):
    x = tg.ones(1000, device="cuda")
    (x * 2 + 1).exp()
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        tmp = x * 2 + 1     # intermediates, freed before the capture ends
        out = tmp.exp()
        tmp_ptr = tmp.data_ptr()
        del tmp
    spans = _segments_of(g.pool())
    assert spans and memory.allocator(0).pool_reserved(g.pool()) == sum(b - a for a, b in spans)
    assert _inside(out.data_ptr(), spans) and _inside(tmp_ptr, spans)
    assert not _inside(x.data_ptr(), spans)
    # The intermediate's block is free but the replays still write it: nothing outside the
    # pool may get it, nor the output's once freed, nor any other pool address.
    out_ptr = out.data_ptr()
    del out
    eager = [tg.empty(1000, device="cuda") for _ in range(64)]
    eager += [tg.empty(n, device="cuda") for n in (1, 100, 4000, 300_000)]
    assert not any(_inside(t.data_ptr(), spans) for t in eager)
    assert out_ptr not in {t.data_ptr() for t in eager}
    memory.empty_cache()  # the pool outlives empty_cache while the graph lives
    assert _segments_of(g.pool()) == spans
    g.replay()  # still valid: it writes only pool memory and x
    assert (memory.to_host(x._data) == 1).all()


def test_pool_is_released_with_the_last_graph(cuda):
    x = tg.ones(1000, device="cuda")
    x * 2
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        y = x * 2
    pool = g.pool()
    reserved = memory.allocator(0).pool_reserved(pool)
    assert reserved > 0
    g.reset()
    # y still holds its block; the rest of the pool is releasable once the graph is gone
    memory.empty_cache()
    assert 0 < memory.allocator(0).pool_reserved(pool) <= reserved
    del y
    memory.empty_cache()
    assert memory.allocator(0).pool_reserved(pool) == 0
    assert pool not in memory.allocator(0)._private


def test_graphs_sharing_a_pool_reuse_its_freed_memory(cuda):
    x = tg.ones(2048, device="cuda")
    (x * 2).sin()
    pool = cuda.graph_pool_handle()
    g1, g2 = cuda.CUDAGraph(), cuda.CUDAGraph()
    with cuda.graph(g1, pool=pool):
        tmp = x * 2
        a = tmp.sin()
        tmp_ptr = tmp.data_ptr()
        del tmp
    assert g1.pool() == pool
    with cuda.graph(g2, pool=g1.pool()):
        b = a * 10  # the block of g1's freed intermediate is the best fit
    assert b.data_ptr() == tmp_ptr
    assert _inside(b.data_ptr(), _segments_of(pool))
    _fill(x, np.full(2048, 0.5, np.float32))
    g1.replay()
    g2.replay()
    np.testing.assert_allclose(_host(b), 10 * np.sin(np.float32(1.0)), rtol=1e-6)
    # a pool of its own (the default) never sees another graph's memory
    g3 = cuda.CUDAGraph()
    with cuda.graph(g3):
        c = a * 3
    assert g3.pool() != pool and not _inside(c.data_ptr(), _segments_of(pool))


def test_allocations_on_other_streams_during_capture_stay_in_the_general_pool(make_allocator):
    alloc, raw, _ = make_allocator()
    alloc.begin_allocate_to_pool((7, 0), "capturing")
    inside = alloc.malloc(1000, "capturing")
    outside = alloc.malloc(1000, "other")
    assert inside.segment.pool.id == (7, 0) and outside.segment.pool is None
    alloc.free(inside)
    again = alloc.malloc(1000, "capturing")   # reused inside the capture
    assert again.ptr == inside.ptr
    alloc.free(again)
    alloc.empty_cache()                        # nothing is released during a capture
    assert raw.frees == 0
    alloc.end_allocate_to_pool("capturing")
    later = alloc.malloc(1000, "capturing")   # after the capture: the general pool
    assert later.segment.pool is None
    alloc.free(later)
    alloc.free(outside)
    alloc.empty_cache()  # the general pool's two segments go; the graph's stays
    assert raw.frees == 2 and alloc.pool_reserved((7, 0)) > 0
    alloc.release_pool((7, 0))
    alloc.empty_cache()
    assert raw.frees == 3 and alloc.pool_reserved((7, 0)) == 0 and not raw.live
    with pytest.raises(RuntimeError, match="not in use"):
        alloc.release_pool((7, 0))


def test_cross_stream_frees_in_a_capture_get_their_events_after_it(make_allocator):
    alloc, _, events = make_allocator()
    alloc.begin_allocate_to_pool((1, 0), "s")
    b = alloc.malloc(512, "s")
    alloc.record_stream(b, "t")
    alloc.free(b)
    assert events.recorded == []  # not inside the capture
    alloc.end_allocate_to_pool("s")
    assert [e.stream for e in events.recorded] == ["t"]
    events.complete()
    c = alloc.malloc(512, "s")  # the general pool: not b's block, which stays the graph's
    assert c.segment.pool is None


# -- errors ---------------------------------------------------------------------------------
def test_capturing_on_the_default_stream_is_an_error(cuda):
    g = cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="must be captured on a non-default stream"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="must be captured on a non-default stream"), \
            cuda.graph(g, stream=cuda.default_stream()):
        pass
    _no_capture_left()
    with cuda.graph(g):  # the failed attempts left nothing behind
        tg.ones(1, device="cuda").add_(1)


def _sync_ops():
    return {
        "item": lambda y: y.sum().item(),
        "cpu": lambda y: y.cpu(),
        "numpy": lambda y: y.numpy(force=True),
        "tolist": lambda y: y.tolist(),
        "nonzero": lambda y: tg.nonzero(y),
        "bool": lambda y: bool(y[0] > 0),
        "host_to_device": lambda y: tg.tensor([1.0, 2.0], device="cuda"),
        "synchronize": lambda y: tg.cuda.synchronize(),
        "stream_synchronize": lambda y: tg.cuda.current_stream().synchronize(),
    }


@pytest.mark.parametrize("op", list(_sync_ops()))
def test_host_syncs_during_capture_raise(cuda, op):
    x = tg.ones(4, device="cuda")
    g = cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=NOT_PERMITTED) as info, cuda.graph(g):
        y = x * 2
        _sync_ops()[op](y)
    assert isinstance(info.value, CudaError)
    assert info.value.code == "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
    _no_capture_left()
    assert cuda.current_stream() == cuda.default_stream()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with cuda.graph(g):  # the instance is usable again
        z = x * 4
    g.replay()
    np.testing.assert_array_equal(_host(z), [4] * 4)


def test_capture_end_after_an_invalidating_error_raises(cuda):
    s = cuda.Stream()
    g = cuda.CUDAGraph()
    with cuda.stream(s):
        g.capture_begin()
        with pytest.raises(CudaError, match=NOT_PERMITTED):
            s.synchronize()
        with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
            g.capture_end()
    _no_capture_left()
    assert memory.allocator(0)._capture_pools == {}


def test_misuse_errors(cuda):
    g = cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.pool()
    with pytest.raises(RuntimeError, match="no capture is underway"):
        g.capture_end()
    with pytest.raises(TypeError, match="graph_pool_handle"):
        g.capture_begin(pool=3)
    with pytest.raises(ValueError, match="capture_error_mode"):
        g.capture_begin(capture_error_mode="loose")
    with pytest.raises(TypeError, match="CUDAGraph"):
        cuda.graph(object())
    with cuda.graph(g):
        tg.ones(1, device="cuda").add_(1)
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        g.capture_begin()
    s1, s2 = cuda.Stream(), cuda.Stream()
    h = cuda.CUDAGraph()
    with cuda.stream(s1):
        h.capture_begin()
    with cuda.stream(s2), pytest.raises(RuntimeError, match="same stream it began on"):
        h.capture_end()
    with cuda.stream(s1):
        h.capture_end()
    _no_capture_left()


# -- the emulated driver's capture ----------------------------------------------------------
def test_emulated_driver_capture_rules():
    import ctypes

    d = EmulatedDriver(total_memory=1 << 20)
    s = d.stream_create(0)
    p = d.mem_alloc(0, 64)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
        d.stream_begin_capture(0, 0)
    with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_STATE"):
        d.stream_end_capture(0, s)
    d.stream_begin_capture(0, s, "thread_local")
    assert d.capturing == 1 and d.stream_is_capturing(0, s) and not d.stream_is_capturing(0, 0)
    with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_STATE"):
        d.stream_begin_capture(0, s)
    d.memset_d8(0, p, 7, 64, s)
    ran = []
    d.launch(0, s, lambda: ran.append(1))
    d.memset_d8(0, p, 9, 8, 0)  # the legacy stream is not capturing: runs now
    assert ctypes.string_at(p, 8) == b"\x09" * 8
    assert ran == []
    graph = d.stream_end_capture(0, s)
    assert d.capturing == 0 and d.graph_node_count(0, graph) == 2
    ex = d.graph_instantiate(0, graph)
    d.graph_launch(0, ex, 0)
    assert ctypes.string_at(p, 64) == b"\x07" * 64 and ran == [1]
    d.graph_exec_destroy(0, ex)
    d.graph_destroy(0, graph)
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_VALUE"):
        d.graph_launch(0, ex, 0)
    # an error during capture invalidates it
    d.stream_begin_capture(0, s)
    with pytest.raises(CudaError, match=NOT_PERMITTED):
        d.ctx_synchronize(0)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        d.stream_end_capture(0, s)
    assert d.capturing == 0


# (the graph calls' arguments against cuda-python: tests/runtime/test_cuda_driver.py)

@pytest.mark.skipif(not _libcuda_missing(), reason="libcuda is present")
def test_real_driver_allocates_in_relaxed_mode_while_capturing():
    d = _offline_real_driver()
    d.capturing = 1  # cuThreadExchangeStreamCaptureMode is reached first, and accepted
    with pytest.raises(Exception) as info:
        d.mem_alloc(0, 512)
    assert type(info.value).__name__ == "DynamicLibNotFoundError", repr(info.value)


# -- make_graphed_callables -------------------------------------------------------------------
def _mlp(seed: int, dtype=tg.float64):
    tg.manual_seed(seed)
    return tg.nn.Sequential(tg.nn.Linear(6, 16), tg.nn.Tanh(), tg.nn.Linear(16, 3)).to(
        device="cuda", dtype=dtype)


def _batches(steps: int, dtype=np.float64):
    """Batches of a linear teacher's regression task, which a few SGD steps make progress on."""
    rng = np.random.default_rng(1)
    teacher = rng.standard_normal((6, 3)) / 3
    xs = [rng.standard_normal((8, 6)) for _ in range(steps)]
    return [(x.astype(dtype), (x @ teacher).astype(dtype)) for x in xs]


def _train(model, call, batches, lr=0.1):
    opt = tg.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for x, y in batches:
        x, y = tg.tensor(x, device="cuda"), tg.tensor(y, device="cuda")
        loss = ((call(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("dtype, tol", [(tg.float64, 1e-12), (tg.float32, 1e-5)],
                         ids=["float64", "float32"])
def test_graphed_module_trains_as_eager(cuda, dtype, tol):
    np_dtype = np.float64 if dtype is tg.float64 else np.float32
    batches = _batches(6, np_dtype)
    eager = _mlp(0, dtype)
    graphed_model = _mlp(0, dtype)
    sample = tg.tensor(batches[0][0], device="cuda")
    graphed = cuda.make_graphed_callables(graphed_model, (sample,))
    assert graphed is graphed_model
    want = _train(eager, eager, batches)
    got = _train(graphed_model, graphed, batches)
    np.testing.assert_allclose(got, want, rtol=tol)
    assert want[-1] < want[0]
    for p, q in zip(eager.parameters(), graphed_model.parameters()):
        np.testing.assert_allclose(_host(q), _host(p), rtol=tol, atol=tol)
    # eval mode was not captured: the original forward runs
    graphed_model.eval()
    x = tg.tensor(batches[1][0], device="cuda")
    np.testing.assert_allclose(_host(graphed_model(x)), _host(eager.eval()(x)), rtol=tol)


def test_graphed_function_and_input_gradients(cuda):
    """A plain function of tensors, with gradients for its input, chained after a module."""
    rng = np.random.default_rng(2)
    w = tg.tensor(rng.standard_normal((4, 4)), device="cuda", requires_grad=True)

    def f(x, scale):
        return (x @ w).sin() * scale, x.exp().sum()

    x0 = tg.tensor(rng.standard_normal((3, 4)), device="cuda", requires_grad=True)
    s0 = tg.tensor(rng.standard_normal((3, 4)), device="cuda")
    layer = _mlp(3)[0]  # Linear(6, 16): a second callable feeding nothing here
    gf, glayer = cuda.make_graphed_callables(
        (f, layer), ((x0, s0), (tg.zeros(2, 6, device="cuda", dtype=tg.float64,
                                         requires_grad=True),)), num_warmup_iters=1)
    for _ in range(2):
        xv, sv = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
        outs = []
        for fn in (f, gf):
            x = tg.tensor(xv, device="cuda", requires_grad=True)
            s = tg.tensor(sv, device="cuda")
            a, b = fn(x, s)
            ((a * a).sum() + b).backward()
            outs.append((_host(a), _host(b), _host(x.grad)))
        for got, want in zip(outs[1], outs[0]):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    assert glayer is layer


def test_graphed_callable_outputs_are_overwritten_by_the_next_call(cuda):
    """PyTorch's documented caveat: the outputs are the graph's static tensors."""
    x = tg.ones(3, device="cuda", dtype=tg.float64, requires_grad=True)
    g = cuda.make_graphed_callables(lambda t: t * 2, (x,))
    first = g(tg.ones(3, device="cuda", dtype=tg.float64, requires_grad=True))
    g(tg.full((3,), 5.0, device="cuda", dtype=tg.float64, requires_grad=True))
    np.testing.assert_array_equal(_host(first), [10.0] * 3)


def test_make_graphed_callables_refuses_what_it_cannot_graph(cuda):
    m = _mlp(0)
    m.register_forward_hook(lambda *a: None)
    x = tg.zeros(2, 6, device="cuda", dtype=tg.float64)
    with pytest.raises(RuntimeError, match="must not have hooks"):
        cuda.make_graphed_callables(m, (x,))
    with pytest.raises(TypeError, match="sample arguments must be tensors"):
        cuda.make_graphed_callables(lambda a: a, (3.0,))
    with pytest.raises(ValueError, match="must be CUDA tensors"):
        cuda.make_graphed_callables(lambda a: a, (tg.zeros(2),))
    with pytest.raises(TypeError, match="sample_args"):
        cuda.make_graphed_callables((m, m), (x,))


# -- on a GPU only ----------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_graph_holds_one_node_per_launch(cuda):
    x = tg.ones(1 << 20, device="cuda")
    y = (x * 2 + 1).exp()
    g = cuda.CUDAGraph(keep_graph=True)  # (else the CUgraph goes once instantiated)
    with cuda.graph(g):
        y = (x * 2 + 1).exp()
    assert driver.get_driver().graph_node_count(0, g.raw_cuda_graph()) >= 3
    _fill(x, np.zeros(1 << 20, np.float32))
    g.replay()
    np.testing.assert_allclose(_host(y)[:5], np.exp(1.0), rtol=1e-6)


@pytest.mark.gpu
def test_gpu_new_segment_during_capture(cuda):
    """A capture that needs a fresh segment allocates it (relaxed mode around cuMemAlloc)."""
    x = tg.ones(1 << 22, device="cuda")
    x * 2
    memory.empty_cache()
    before = memory.allocator(0).num_device_alloc
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        y = x * 2
    assert memory.allocator(0).num_device_alloc > before
    g.replay()
    assert float(_host(y)[-1]) == 2.0


@pytest.mark.gpu
def test_gpu_replay_is_cheaper_on_the_host_than_eager(cuda):
    """Twenty small kernels: one cuGraphLaunch costs the host far less than twenty launches."""
    import time

    x = tg.ones(1024, device="cuda")

    def chain(t):
        for _ in range(20):
            t = t * 1.0001 + 0.5
        return t

    chain(x)
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        chain(x)
    cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        chain(x)
    eager = time.perf_counter() - t0
    cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        g.replay()
    replay = time.perf_counter() - t0
    cuda.synchronize()
    assert replay < eager / 3, (replay, eager)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "NAdam"])
def test_capturing_a_non_capturable_optimizer_step_raises(cuda, name):
    """Note [capturing step()]: a replay would repeat the captured step count's numbers, so
    PyTorch's error, before anything is captured; SGD (no step count) captures."""
    p = tg.nn.Parameter(tg.ones(3, device="cuda"))
    p.grad = tg.full((3,), 0.5, device="cuda")
    opt = getattr(tg.optim, name)([p], lr=0.1)
    opt.step()  # eager: fine
    g = cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=f"Attempting CUDA graph capture of step\\(\\) for an "
                                           f"instance of {name} but param_groups' capturable "
                                           f"is False."):
        with cuda.graph(g):
            opt.step()
    _no_capture_left()
    sgd = tg.optim.SGD([p], lr=0.1, momentum=0.9)
    sgd.step()
    before = _host(p).copy()
    g2 = cuda.CUDAGraph()
    with cuda.graph(g2):
        sgd.step()
    g2.replay()
    assert not np.array_equal(_host(p), before)


@pytest.mark.parametrize("name, kw", [("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
                                      ("AdamW", {"weight_decay": 0.1}),
                                      ("Adam", {"maximize": True, "foreach": True})])
def test_capturable_adam_step_replays_as_eager_steps(cuda, name, kw):
    """Note [capturable Adam]: the step count lives on the device, so each replay of a captured
    step() advances it and applies that step's bias corrections: the very parameters of eager
    capturable steps, and those of CPU steps (capturable=False) within the float32 rounding of
    the count's bias corrections (PyTorch's capturable step computes them in float32 too)."""
    rng = np.random.default_rng(3)
    p0, grads = rng.standard_normal(5), [rng.standard_normal(5) for _ in range(4)]
    cls = getattr(tg.optim, name)
    ref = tg.nn.Parameter(tg.tensor(p0))
    ref_opt = cls([ref], lr=0.1, **kw)
    eager = tg.nn.Parameter(tg.tensor(p0, device="cuda"))
    eager_opt = cls([eager], lr=0.1, capturable=True, **kw)
    for g in grads:
        ref.grad, eager.grad = tg.tensor(g), tg.tensor(g, device="cuda")
        ref_opt.step()
        eager_opt.step()
    p = tg.nn.Parameter(tg.tensor(p0, device="cuda"))
    p.grad = tg.tensor(grads[0], device="cuda")
    opt = cls([p], lr=0.1, capturable=True, **kw)
    opt.step()  # eager: makes the state (its count on the device)
    assert opt.state[p]["step"].device.type == "cuda"
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        opt.step()
    for grad in grads[1:]:
        _fill(p.grad, grad)
        g.replay()
    np.testing.assert_array_equal(_host(p), _host(eager))
    # 1 - 0.999 ** step in float32 loses ~1e-5 relative to cancellation (PyTorch's too): about
    # 1e-6 on each update of size lr
    np.testing.assert_allclose(_host(p), _host(ref), rtol=1e-5, atol=1e-5)
    assert float(opt.state[p]["step"]) == 4.0
    _no_capture_left()


def test_capturable_adam_refusals():
    p = tg.nn.Parameter(tg.ones(2))
    p.grad = tg.ones(2)
    opt = tg.optim.Adam([p], capturable=True)
    with pytest.raises(RuntimeError, match=r"If capturable=True, params and state_steps must be "
                                           r"on supported devices: \['cuda'\]"):
        opt.step()
    with pytest.raises(NotImplementedError, match="fused=True with capturable=True"):
        tg.optim.AdamW([p], capturable=True, fused=True)


def _tiny_gpt_step(seed: int = 0):
    """(step, optimizer) of a 1-layer causal transformer on cuda trained with clipping and
    capturable AdamW: every kind of op a GPT step captures (embeddings, layer norm, fused
    attention, GELU, cross-entropy, the multi-tensor norm and AdamW)."""
    nn, F = tg.nn, tg.nn.functional
    tg.manual_seed(seed)
    dim, vocab, ctx = 16, 11, 6

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim)
            self.ln, self.qkv = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
            self.head = nn.Linear(dim, vocab, bias=False)

        def forward(self, idx):
            b, t = idx.shape
            x = self.tok(idx) + self.pos(tg.arange(t, device=idx.device))
            q, k, v = (a.reshape(b, t, 2, dim // 2).transpose(1, 2)
                       for a in self.qkv(self.ln(x)).split(dim, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + y.transpose(1, 2).reshape(b, t, dim)
            return self.head(x + self.mlp(x))

    model = Net().to("cuda")
    opt = tg.optim.AdamW(model.parameters(), lr=1e-2, capturable=True)
    ids = tg.tensor(np.random.default_rng(seed).integers(0, vocab, (2, ctx + 1)), device="cuda")
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step():
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        return loss

    return step, opt


def test_whole_training_step_captured_replays_as_eager_steps(cuda):
    """PyTorch's whole-network recipe: warm-up steps on a side stream, then forward, loss,
    backward, clipping and a capturable AdamW step captured as one graph; each replay is the
    next training step, bit for bit. (As in PyTorch, a graph does not keep the tensors it uses
    alive: ``step`` and ``opt`` here hold the model, its gradients and the optimizer's state.)"""
    step, opt = _tiny_gpt_step()
    eager = []
    for _ in range(5):
        opt.zero_grad(set_to_none=True)
        eager.append(float(step()))
    step, opt = _tiny_gpt_step()
    side = cuda.Stream()
    side.wait_stream(cuda.current_stream())
    got = []
    with cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            got.append(float(step()))
    cuda.current_stream().wait_stream(side)
    g = cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with cuda.graph(g):
        static_loss = step()
    for _ in range(2):
        g.replay()
        got.append(float(static_loss))
    assert len(set(eager)) == 5  # it trains: every step's loss differs
    # (bit for bit on a GPU too: on the H200, 2026-12-04, the fifth loss moved by an ulp while
    # the embeddings' backward summed with float atomics; it sorts now, Note [deterministic
    # embedding backward] in kernels/triton/nn.py)
    np.testing.assert_array_equal(got, eager)
    _no_capture_left()
