"""CUDAGraph(keep_graph=...), instantiate, raw handles, debug dumps and tg.accelerator.Graph,
on the emulated device in CI (the same tests run on a GPU when one is lent)."""

import warnings

import pytest

import tritongrad as tg


@pytest.fixture(autouse=True)
def cuda():
    if not tg.cuda.is_available():
        pytest.skip("needs the (emulated) CUDA device")


def _capture(g, fn):
    with tg.cuda.graph(g):
        fn()


def test_keep_graph_instantiates_at_first_replay():
    x = tg.ones(4, device="cuda")
    g = tg.cuda.CUDAGraph(keep_graph=True)
    _capture(g, lambda: x.mul_(3))
    assert g.raw_cuda_graph() != 0
    with pytest.raises(RuntimeError, match="until instantiate"):
        g.raw_cuda_graph_exec()
    assert x.tolist() == [1.0] * 4  # (captured, not run)
    g.replay()
    first = g.raw_cuda_graph_exec()
    assert x.tolist() == [3.0] * 4
    g.instantiate()  # (a new executable graph of the same CUgraph)
    assert g.raw_cuda_graph_exec() != first
    g.replay()
    assert x.tolist() == [9.0] * 4
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()


def test_default_graph_drops_its_cugraph():
    x = tg.ones(2, device="cuda")
    g = tg.cuda.CUDAGraph()
    _capture(g, lambda: x.add_(1))
    assert g.raw_cuda_graph_exec() != 0
    with pytest.raises(RuntimeError, match="keep_graph=true"):
        g.raw_cuda_graph()
    with pytest.raises(RuntimeError, match="no captured graph to instantiate"):
        g.instantiate()
    g.replay()
    assert x.tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="keep_graph"):
        tg.cuda.CUDAGraph(keep_graph=1)


def test_debug_dump(tmp_path):
    x = tg.ones(2, device="cuda")
    g = tg.cuda.CUDAGraph()
    g.enable_debug_mode()
    _capture(g, lambda: x * 2)
    g.debug_dump(tmp_path / "g.dot")
    text = (tmp_path / "g.dot").read_text()
    assert text.startswith("digraph") and "node" in text
    plain = tg.cuda.CUDAGraph()
    _capture(plain, lambda: x * 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plain.debug_dump(tmp_path / "plain.dot")
    assert "enable_debug_mode" in str(caught[0].message)
    assert not (tmp_path / "plain.dot").exists()


def test_accelerator_graph_captures_the_current_stream():
    x = tg.zeros(3, device="cuda")
    g = tg.accelerator.Graph()
    with tg.Stream(), g:
        assert tg.cuda.is_current_stream_capturing()
        x += 1
    assert x.tolist() == [0.0] * 3 and not tg.cuda.is_current_stream_capturing()
    g.replay()
    g.replay()
    assert x.tolist() == [2.0] * 3
    shared = tg.accelerator.Graph(pool=g.pool(), capture_error_mode="relaxed")
    with tg.Stream(), shared:
        x *= 10
    shared.replay()
    assert x.tolist() == [20.0] * 3 and shared.pool() == g.pool()
    with pytest.raises(RuntimeError, match="non-default stream"), tg.accelerator.Graph():
        pass
    with pytest.raises(KeyError), tg.Stream(), tg.accelerator.Graph():
        raise KeyError("body")
    assert not tg.cuda.is_current_stream_capturing()


def test_accelerator_memory_functions():
    free, total = tg.accelerator.get_memory_info()
    assert 0 < free <= total
    assert tg.accelerator.get_memory_info(0) == tg.cuda.mem_get_info(0)
    caps = tg.accelerator.get_device_capability()
    assert {tg.float32, tg.bfloat16, tg.int64, tg.bool} <= caps["supported_dtypes"]
    x = tg.ones(256, device="cuda")
    del x
    tg.accelerator.reset_accumulated_memory_stats()
    stats = tg.cuda.memory_stats()
    assert stats["allocation.all.allocated"] == 0
    tg.accelerator.empty_host_cache()
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        tg.accelerator.get_memory_info("cpu")
