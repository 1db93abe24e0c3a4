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


@pytest.mark.parametrize("brand,vendor,name", [
    # PyTorch's cpu_name is cpuinfo's package name (Note [package names] in tritongrad/cpu.py);
    # the first row is the H200 machines' CPU (torch 2.11 there: "Intel Xeon")
    ("Intel(R) Xeon(R) Processor", "GenuineIntel", "Intel Xeon"),
    ("AMD EPYC", "AuthenticAMD", "AMD EPYC"),
    ("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "GenuineIntel", "Intel Xeon E5-2680 v4"),
    ("Intel(R) Xeon(R) CPU E3-1230 V2 @ 3.30GHz", "GenuineIntel", "Intel Xeon E3-1230 v2"),
    ("Intel(R) Core(TM) i7 CPU X 990  @ 3.47GHz", "GenuineIntel", "Intel Core i7 990X"),
    ("Intel(R) Xeon(R) Platinum 8480+", "GenuineIntel", "Intel Xeon Platinum 8480+"),
    ("AMD Ryzen 9 7950X 16-Core Processor", "AuthenticAMD", "AMD Ryzen 9 7950X"),
    ("AMD EPYC 7B13 64-Core Processor", "AuthenticAMD", "AMD EPYC 7B13 64-Core"),
    ("AMD FX(tm)-6100 Six-Core Processor", "AuthenticAMD", "AMD FX-6100"),
    ("AMD Athlon(tm) 64 X2 Dual Core Processor 3800+", "AuthenticAMD", "AMD Athlon 64 X2 3800+"),
    ("AMD A10-7850K APU with Radeon(TM) R7 Graphics", "AuthenticAMD", "AMD A10-7850K"),
    ("Intel(R) Pentium(R) 4 CPU @ 3.00GHz", "GenuineIntel", "Intel Pentium 4 3.00GHz"),
    ("Genuine Intel(R) CPU @ 2.13GHz", "GenuineIntel", ""),  # only a clock: no name
    ("AMD Eng Sample: 2D3151A2M88E4_35/31_N", "AuthenticAMD", ""),
])
def test_package_name_normalizes_brand_strings(brand, vendor, name):
    from tritongrad.cpu import _package_name
    assert _package_name(brand, vendor) == name
