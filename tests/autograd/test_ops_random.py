"""Random ops (autograd/ops/random.py and the factories of creation.py): Generator objects
(seeding, state round trips, independence from the global stream, device checks), multinomial
(frequencies, without-replacement distinctness, PyTorch's errors), bernoulli/bernoulli_,
randperm, get_rng_state/set_rng_state, on both devices."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host


def test_generator_reproducible(device):
    g = tg.Generator(device=device).manual_seed(7)
    assert g.initial_seed() == 7 and g.device.type == device
    a = tg.rand(5, generator=g, device=device)
    b = tg.randn(2, 3, generator=g, device=device)
    g.manual_seed(7)
    np.testing.assert_array_equal(host(tg.rand(5, generator=g, device=device)), host(a))
    np.testing.assert_array_equal(host(tg.randn(2, 3, generator=g, device=device)), host(b))


def test_generator_is_independent_of_the_global_stream():
    tg.manual_seed(0)
    first = host(tg.rand(4))
    tg.manual_seed(0)
    g = tg.Generator().manual_seed(123)
    tg.rand(3, generator=g)  # does not advance the global stream
    np.testing.assert_array_equal(host(tg.rand(4)), first)


def test_same_seed_same_values_per_device_not_across():
    # CUDA draws on the device (Philox), the CPU from NumPy: each reproducible, as PyTorch's
    g1, g2 = tg.Generator().manual_seed(3), tg.Generator("cuda").manual_seed(3)
    cpu, cuda = host(tg.randn(6, generator=g1)), host(tg.randn(6, generator=g2, device="cuda"))
    assert not np.array_equal(cpu, cuda)
    g2.manual_seed(3)
    np.testing.assert_array_equal(host(tg.randn(6, generator=g2, device="cuda")), cuda)


def test_state_round_trip(device):
    g = tg.Generator(device).manual_seed(5)
    tg.rand(3, generator=g, device=device)
    state = g.get_state()
    assert state.dtype is tg.uint8 and state.device.type == "cpu" and state.ndim == 1
    a = host(tg.randint(0, 100, (6,), generator=g, device=device))
    other = tg.Generator(device).set_state(state)
    assert other.initial_seed() == 5
    np.testing.assert_array_equal(host(tg.randint(0, 100, (6,), generator=other,
                                                  device=device)), a)


def test_global_rng_state_round_trip():
    tg.manual_seed(1)
    state = tg.get_rng_state()
    a = host(tg.randn(4))
    tg.set_rng_state(state)
    np.testing.assert_array_equal(host(tg.randn(4)), a)


def test_manual_seed_returns_the_global_generator():
    g = tg.manual_seed(9)
    assert isinstance(g, tg.Generator) and g.initial_seed() == 9 == tg.initial_seed()
    s = tg.Generator().seed()
    assert isinstance(s, int)


def test_like_factories_take_a_generator(device):
    x = tg.zeros(2, 3, device=device)
    g = tg.Generator(device).manual_seed(2)
    a, b = tg.rand_like(x, generator=g), tg.randn_like(x, generator=g)
    g.manual_seed(2)
    np.testing.assert_array_equal(host(tg.rand_like(x, generator=g)), host(a))
    np.testing.assert_array_equal(host(tg.randn_like(x, generator=g)), host(b))


def test_generator_errors():
    with pytest.raises(TypeError, match=r"^rand\(\): argument 'generator' must be Generator"):
        tg.rand(2, generator="gen")
    with pytest.raises(RuntimeError, match="^Expected a 'cuda' device type for generator but "
                                           "found 'cpu'$"):
        tg.rand(2, device="cuda", generator=tg.Generator())
    with pytest.raises(RuntimeError, match="state size to be 3$"):
        tg.Generator().set_state(tg.zeros(3, dtype=tg.uint8))
    with pytest.raises(RuntimeError, match="uint8"):
        tg.Generator().set_state(tg.zeros(48))


def test_randperm(device):
    g = tg.Generator(device).manual_seed(0)
    p = tg.randperm(10, generator=g, device=device)
    assert p.dtype is tg.int64 and p.device.type == device
    assert sorted(host(p).tolist()) == list(range(10))
    assert tg.randperm(4, dtype=tg.float32).dtype is tg.float32
    assert tuple(tg.randperm(0).shape) == (0,)
    with pytest.raises(RuntimeError, match=r"^Trying to create tensor with negative dimension "
                                           r"-1: \[-1\]$"):
        tg.randperm(-1)


def test_multinomial_frequencies(device):
    w = tg.tensor([[1.0, 0.0, 3.0], [0.0, 2.0, 2.0]], device=device)
    g = tg.Generator(device).manual_seed(0)
    s = tg.multinomial(w, 4000, replacement=True, generator=g)
    assert s.dtype is tg.int64 and tuple(s.shape) == (2, 4000) and s.device.type == device
    h = host(s)
    freq0 = np.bincount(h[0], minlength=3) / 4000
    freq1 = np.bincount(h[1], minlength=3) / 4000
    np.testing.assert_allclose(freq0, [0.25, 0.0, 0.75], atol=0.03)
    np.testing.assert_allclose(freq1, [0.0, 0.5, 0.5], atol=0.03)


def test_multinomial_without_replacement(device):
    w = tg.tensor([5.0, 1.0, 0.0, 2.0], device=device)
    for seed in range(5):
        s = host(w.multinomial(3, generator=tg.Generator(device).manual_seed(seed)))
        assert len(set(s.tolist())) == 3 and 2 not in s  # distinct; weight 0 comes last
    s = host(tg.multinomial(w, 4))
    assert sorted(s.tolist()) == [0, 1, 2, 3] and s[-1] == 2
    # the first draw of the race is an ordinary draw: P(first = 0) = 5/8
    tg.manual_seed(0)
    firsts = [int(tg.multinomial(w, 2)[0]) for _ in range(800)]
    assert abs(firsts.count(0) / 800 - 5 / 8) < 0.06


def test_multinomial_errors():
    cases = [
        (tg.tensor([0.0, 0.0]), 1, False,
         "invalid multinomial distribution (sum of probabilities <= 0)"),
        (tg.tensor([1.0, 2.0]), 3, False,
         "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
        (tg.tensor([-1.0, 2.0]), 1, False,
         "probability tensor contains either `inf`, `nan` or element < 0"),
        (tg.tensor([1.0, float("nan")]), 1, True,
         "probability tensor contains either `inf`, `nan` or element < 0"),
        (tg.tensor([1, 2]), 1, False,
         "multinomial only supports floating-point dtypes for input, got: Long"),
        (tg.ones(2, 2, 2), 1, False, "prob_dist must be 1 or 2 dim"),
        (tg.ones(2), 0, True, "cannot sample n_sample <= 0 samples"),
    ]
    for w, n, replacement, msg in cases:
        with pytest.raises(RuntimeError) as e:
            tg.multinomial(w, n, replacement)
        assert str(e.value) == msg


def test_bernoulli(device):
    p = tg.tensor([0.0, 1.0, 0.3, 0.9] * 500, device=device)
    g = tg.Generator(device).manual_seed(1)
    out = tg.bernoulli(p, generator=g)
    assert out.dtype is p.dtype and out.device.type == device
    h = host(out).reshape(-1, 4)
    assert set(np.unique(h)) <= {0.0, 1.0}
    np.testing.assert_allclose(h.mean(0), [0.0, 1.0, 0.3, 0.9], atol=0.05)
    g.manual_seed(1)
    np.testing.assert_array_equal(host(p.bernoulli(generator=g)), host(out))
    half = host(tg.bernoulli(tg.zeros(4000, device=device), 0.5))
    assert abs(half.mean() - 0.5) < 0.05


def test_bernoulli_inplace(device):
    x = tg.zeros(3000, dtype=tg.int64, device=device)
    assert x.bernoulli_(0.25) is x and x.dtype is tg.int64
    assert abs(host(x).mean() - 0.25) < 0.05
    y = tg.zeros(2, 1000, device=device)
    y.bernoulli_(tg.tensor([[0.0], [1.0]], device=device))
    np.testing.assert_array_equal(host(y), np.repeat([[0.0], [1.0]], 1000, 1))


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match=r"^Expected p_in >= 0 && p_in <= 1 to be true"):
        tg.bernoulli(tg.tensor([1.5]))
    with pytest.raises(RuntimeError, match=r"^bernoulli_ expects p to be in \[0, 1\], but got "
                                           r"p=1.5$"):
        tg.ones(2).bernoulli_(1.5)
    with pytest.raises(NotImplementedError, match="'Long'"):
        tg.bernoulli(tg.tensor([1, 0]))


def test_registered():
    for name in ("Generator", "multinomial", "bernoulli", "randperm", "get_rng_state",
                 "set_rng_state"):
        assert hasattr(tg, name)
    for name in ("multinomial", "bernoulli", "bernoulli_"):
        assert callable(getattr(tg.Tensor, name))
