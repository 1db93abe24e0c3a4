"""Random numbers of CUDA tensors are drawn on the device (autograd/ops/random.py, Note
[graph-safe draws]): no host copy per draw, reproducible under ``tg.manual_seed`` and a
``Generator(device="cuda")``, independent across calls, the right distributions through the
factories, bernoulli and dropout, fresh numbers on each CUDA-graph replay; the CPU numbers
are PyTorch's CPU stream (tests.helpers.TorchMT, a reference written apart from the kernels;
tests/test_rng_torch_streams.py checks them against PyTorch's own values)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tritongrad.nn.functional as F
from tritongrad.runtime import memory

import tritongrad as tg
from tests.helpers import TorchMT, host
from tritongrad import nn


@pytest.fixture
def no_host_copies(monkeypatch):
    """Counts host-to-device and device-to-host copies while a test draws."""
    counts = {"to_device": 0, "to_host": 0}
    for name in counts:
        real = getattr(memory, name)

        def counted(*a, _real=real, _name=name, **kw):
            counts[_name] += 1
            return _real(*a, **kw)
        monkeypatch.setattr(memory, name, counted)
    return counts


def _draws():
    x = tg.ones(64, 64, device="cuda", requires_grad=True)
    return [tg.rand(64, 64, device="cuda"), tg.randn(100, device="cuda"),
            tg.randint(0, 10, (100,), device="cuda"), tg.rand_like(x), tg.randn_like(x),
            tg.bernoulli(x, 0.3), F.dropout(x, 0.5),
            nn.Dropout(0.2)(x)]


def test_cuda_draws_make_no_host_copies(no_host_copies):
    _draws()  # (the first draw makes the generator's epoch array, on the device)
    assert no_host_copies == {"to_device": 0, "to_host": 0}
    # bernoulli's tensor of probabilities is still checked on the host (PyTorch's error)
    tg.bernoulli(tg.rand(100, device="cuda"))
    assert no_host_copies == {"to_device": 0, "to_host": 1}


def test_cpu_draws_are_pytorchs_stream():
    tg.manual_seed(5)
    ref = TorchMT(5)
    np.testing.assert_array_equal(host(tg.rand(6)), ref.u24(6))
    # 3 normals (the scalar path): Box-Muller pairs (u1 angle, u2 radius), r cos first, r sin
    # kept for the next one
    u = ref.u53(4)
    r = np.sqrt(-2.0 * np.log1p(-u[1::2]))
    want = [r[0] * np.cos(2 * np.pi * u[0]), r[0] * np.sin(2 * np.pi * u[0]),
            r[1] * np.cos(2 * np.pi * u[2])]
    np.testing.assert_allclose(host(tg.randn(3, dtype=tg.float64)), want, rtol=1e-15)
    tg.manual_seed(5)
    ref = TorchMT(5)
    np.testing.assert_array_equal(host(tg.randint(2, 9, (4,))),
                                  [2 + v % 7 for v in ref.raw32(4)])
    keep = ref.u53(20).reshape(5, 4) < 0.7  # bernoulli_(1 - p)
    np.testing.assert_array_equal(host(F.dropout(tg.ones(5, 4), 0.3)), keep / np.float32(0.7))


def test_manual_seed_reproduces_cuda_draws():
    tg.manual_seed(11)
    a = [host(t) for t in _draws()]
    tg.manual_seed(11)
    b = [host(t) for t in _draws()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    tg.manual_seed(12)
    assert not np.array_equal(host(_draws()[0]), a[0])


def test_cuda_generator_object_is_its_own_stream():
    g = tg.Generator(device="cuda").manual_seed(3)
    tg.manual_seed(0)
    a = host(tg.rand(50, device="cuda", generator=g))
    tg.manual_seed(1)  # the global seed has no say over g
    g.manual_seed(3)
    np.testing.assert_array_equal(host(tg.rand(50, device="cuda", generator=g)), a)
    state = g.get_state()
    b = host(tg.randn(9, device="cuda", generator=g))
    g.set_state(state)
    np.testing.assert_array_equal(host(tg.randn(9, device="cuda", generator=g)), b)
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        tg.rand(3, device="cuda", generator=tg.Generator())


def test_consecutive_draws_are_independent():
    tg.manual_seed(2)
    a, b = host(tg.rand(4096, device="cuda")), host(tg.rand(4096, device="cuda"))
    assert not np.array_equal(a, b) and abs(np.corrcoef(a, b)[0, 1]) < 0.06


@pytest.mark.parametrize("dtype", [tg.float32, tg.float16, tg.bfloat16, tg.float64], ids=str)
def test_factory_distributions(dtype):
    tg.manual_seed(4)
    u = host(tg.rand(4096, device="cuda", dtype=dtype).float()).astype(np.float64)
    z = host(tg.randn(4096, device="cuda", dtype=dtype).float()).astype(np.float64)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    assert abs(z.mean()) < 0.06 and abs(z.std() - 1) < 0.05
    stats = pytest.importorskip("scipy.stats")
    assert stats.kstest(u, "uniform").pvalue > 1e-3 or dtype is tg.bfloat16
    assert stats.kstest(z, "norm").pvalue > 1e-3 or dtype is not tg.float32


def test_bernoulli_and_dropout_on_the_device():
    tg.manual_seed(6)
    p = tg.full((4000,), 0.25, device="cuda")
    assert abs(host(tg.bernoulli(p)).mean() - 0.25) < 0.03
    x = tg.ones(4000, device="cuda", requires_grad=True)
    y = F.dropout(x, 0.4)
    out = host(y)
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.6)}
    assert abs((out == 0).mean() - 0.4) < 0.03
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), out)  # the gradient goes through the same mask


def test_nn_init_draws_on_both_devices():
    w = tg.empty(64, 64, device="cuda")
    nn.init.normal_(w, 0.0, 2.0)
    assert abs(host(w).std() - 2.0) < 0.1
    nn.init.uniform_(w, -1.0, 1.0)
    assert host(w).min() >= -1 and host(w).max() <= 1


# -- CUDA graphs -------------------------------------------------------------------------------

def test_graph_replays_draw_fresh_numbers():
    tg.manual_seed(7)
    x = tg.ones(256, device="cuda")
    F.dropout(x, 0.5)  # warm-up
    g = tg.cuda.CUDAGraph()
    with tg.cuda.graph(g):
        static_u = tg.rand(256, device="cuda")
        static_y = F.dropout(x, 0.5)
    seen = []
    for _ in range(3):
        g.replay()
        seen.append((host(static_u).copy(), host(static_y).copy()))
    for (u1, y1), (u2, y2) in itertools.pairwise(seen):
        assert not np.array_equal(u1, u2) and not np.array_equal(y1, y2)
    for u, _ in seen:
        assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.1
    eager = host(tg.rand(256, device="cuda"))  # the offsets a capture took stay taken
    assert all(not np.array_equal(eager, u) for u, _ in seen)


def test_capture_needs_an_eager_draw_first():
    gen = tg.Generator(device="cuda")
    g = tg.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="draw once outside a graph capture"), \
            tg.cuda.graph(g):
        tg.rand(4, device="cuda", generator=gen)
    tg.rand(4, device="cuda", generator=gen)
    with tg.cuda.graph(g):
        out = tg.rand(4, device="cuda", generator=gen)
    g.replay()
    assert host(out).shape == (4,)


def test_cuda_rng_state_round_trip():
    from tritongrad.autograd.ops import random as R
    tg.manual_seed(8)
    state = R.get_cuda_rng_state()
    a = host(F.dropout(tg.ones(300, device="cuda"), 0.5))
    R.set_cuda_rng_state(state)
    np.testing.assert_array_equal(host(F.dropout(tg.ones(300, device="cuda"), 0.5)), a)


def test_cuda_manual_seed_seeds_only_the_cuda_stream():
    from tritongrad.autograd.ops import random as R
    tg.manual_seed(0)
    cpu = host(tg.rand(5))
    R.cuda_manual_seed(21)
    a = host(tg.rand(5, device="cuda"))
    R.cuda_manual_seed_all(21)
    np.testing.assert_array_equal(host(tg.rand(5, device="cuda")), a)
    tg.manual_seed(0)
    np.testing.assert_array_equal(host(tg.rand(5)), cpu)
    assert not np.array_equal(host(tg.rand(5, device="cuda")), a)  # manual_seed(0) reseeded it


def test_tg_cuda_generator_functions():
    tg.cuda.manual_seed(3)
    a = tg.rand(4, device="cuda")
    state = tg.cuda.get_rng_state()
    b = tg.rand(4, device="cuda")
    tg.cuda.set_rng_state(state)
    assert tg.rand(4, device="cuda").tolist() == b.tolist() != a.tolist()
    tg.cuda.manual_seed_all(3)
    assert tg.rand(4, device="cuda").tolist() == a.tolist()
