"""``tg.cuda``'s seeding of every device (torch.cuda.random), the memory module's nested
statistics and deprecated names, capability queries, ``device_of`` and ``StreamContext``: on
the emulated device in CI, on the real one where a GPU is lent."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg


def _draw():
    return tg.rand(16, device="cuda").cpu().numpy()


def test_rng_state_all_round_trips(cuda):
    states = cuda.get_rng_state_all()
    assert len(states) == cuda.device_count()
    assert all(s.dtype == tg.uint8 and s.device.type == "cpu" for s in states)
    first = _draw()
    cuda.set_rng_state_all(states)
    np.testing.assert_array_equal(_draw(), first)
    assert not np.array_equal(_draw(), first)  # (the state moved on)


def test_seed_all_seeds_every_device_alike_and_initial_seed_reports_it(cuda):
    cuda.manual_seed_all(5)
    assert cuda.initial_seed() == 5
    a = _draw()
    cuda.seed_all()
    s = cuda.initial_seed()
    assert s != 5 and all(g.initial_seed() == s for g in cuda.default_generators)
    cuda.manual_seed(s)
    b = _draw()
    cuda.manual_seed(s)
    np.testing.assert_array_equal(_draw(), b)
    assert not np.array_equal(a, b)
    cuda.seed()
    assert cuda.initial_seed() != s


def test_default_generators_are_the_draws_generators(cuda):
    g = cuda.default_generators[0]
    assert g.device == tg.device("cuda", 0)
    g.manual_seed(11)
    a = _draw()
    cuda.manual_seed(11)
    np.testing.assert_array_equal(_draw(), a)


def test_memory_stats_as_nested_dict_mirrors_the_flat_keys(cuda):
    x = tg.empty(1024, device="cuda")
    flat = cuda.memory_stats()
    nested = cuda.memory_stats_as_nested_dict()
    for key, value in flat.items():
        node = nested
        for part in key.split("."):
            node = node[part]
        assert node == value
    assert nested["allocated_bytes"]["all"]["current"] >= x.numel() * 4
    assert cuda.memory is tg.cuda.memory and cuda.memory.memory_allocated is cuda.memory_allocated


def test_deprecated_memory_names_warn_and_forward(cuda):
    with pytest.warns(FutureWarning, match="renamed to torch.cuda.memory_reserved"):
        assert cuda.memory_cached() == cuda.memory_reserved()
    with pytest.warns(FutureWarning, match="max_memory_reserved"):
        assert cuda.max_memory_cached() == cuda.max_memory_reserved()
    x = tg.empty(1 << 16, device="cuda")
    del x
    assert cuda.max_memory_allocated() > cuda.memory_allocated()
    with pytest.warns(FutureWarning, match="resets /all/ peak memory stats"):
        cuda.reset_max_memory_allocated()
    assert cuda.max_memory_allocated() == cuda.memory_allocated()
    with pytest.warns(FutureWarning, match="resets /all/ peak memory stats"):
        cuda.reset_max_memory_cached()


def test_capabilities_follow_the_compute_capability(cuda, monkeypatch):
    major, minor = cuda.get_device_capability()
    assert cuda.get_arch_list() == [f"sm_{major}{minor}"] * (cuda.device_count() > 0)
    assert cuda.is_tf32_supported() == (major >= 8)
    assert cuda.is_bf16_supported()
    from tritongrad.cuda import capabilities
    monkeypatch.setattr(capabilities.cuda_api, "get_device_capability", lambda d=None: (7, 5))
    assert not cuda.is_tf32_supported()
    assert cuda.is_bf16_supported() and not cuda.is_bf16_supported(including_emulation=False)


def test_capabilities_without_cuda(monkeypatch):
    from tritongrad.cuda import capabilities
    monkeypatch.setattr(capabilities.cuda_api, "is_available", lambda: False)
    assert capabilities.get_arch_list() == []
    assert not capabilities.is_bf16_supported() and not capabilities.is_tf32_supported()


def test_device_of_selects_the_tensors_device(cuda):
    x = tg.zeros(2, device="cuda")
    before = cuda.current_device()
    with cuda.device_of(x):
        assert cuda.current_device() == x.device.index
    with cuda.device_of(tg.zeros(2)):  # a CPU tensor: nothing changes
        assert cuda.current_device() == before
    assert cuda.current_device() == before


def test_stream_context_selects_a_stream(cuda):
    s = cuda.Stream()
    with cuda.StreamContext(s):
        assert cuda.current_stream() == s
    assert cuda.current_stream() != s
