"""``tg.cpu`` (session 40): the CPU's device API, against torch 2.13's ``torch.cpu``."""

import platform

import pytest

import tritongrad as tg


def test_device_api():
    cpu = tg.cpu
    assert (cpu.current_device(), cpu.device_count(), cpu.is_available(),
            cpu.is_initialized()) == ("cpu", 1, True, True)
    assert cpu.set_device("cpu") is None and cpu.synchronize() is None
    default = cpu.current_stream()
    assert isinstance(default, cpu.Stream) and default is cpu.current_stream("cpu")
    other = cpu.Stream(priority=0)
    with cpu.stream(other) as entered:
        assert entered is other and cpu.current_stream() is other
        with cpu.stream(None):
            assert cpu.current_stream() is other
    assert cpu.current_stream() is default
    event = default.record_event()
    assert isinstance(event, cpu.Event) and event.query()
    assert event.synchronize() is None and event.wait() is None
    assert default.wait_event(event) is None and default.wait_stream(other) is None
    assert cpu.amp.autocast is not None  # (the deprecated forms stay reachable)
    import tritongrad.cpu.amp  # noqa: F401 (PyTorch's submodule imports)


def test_capabilities_shape():
    caps = tg.cpu.get_capabilities()
    assert caps["architecture"] == platform.machine()
    assert caps["num_logical_cores"] >= caps["num_physical_cores"] >= 1
    assert caps["num_sockets"] >= 1
    if platform.system() == "Linux":
        assert caps["l1d_cache_size"] > 0 and caps["l2_cache_size"] > caps["l1d_cache_size"]
    if caps["architecture"] == "x86_64":
        assert caps["sse2"] is True  # (every x86-64 CPU has it)
        assert all(type(caps[k]) is bool for k in ("avx", "avx2", "avx512_f", "amx_tile"))
        # an extension implies the ones it builds on
        assert not caps["avx2"] or caps["avx"]
        assert not caps["avx512_bw"] or caps["avx512_f"]


def test_against_torch():
    torch = pytest.importorskip("torch")
    assert tg.cpu.get_capabilities() == torch.cpu.get_capabilities()
    for name in ("current_device", "device_count", "is_available", "is_initialized"):
        assert getattr(tg.cpu, name)() == getattr(torch.cpu, name)()
    assert sorted(torch.cpu.__all__) == \
        sorted(n for n in tg.cpu.__all__ if n != "amp")
