"""The contract's random functions (kernels/triton/random.py, kernels/numpy/random.py): the
Philox kernel's distributions (moments, Kolmogorov-Smirnov when scipy is there, ranges per
dtype), its positions (a pure function of seed, offset and epoch; distinct offsets
independent; 64-bit seeds and offsets), the captured-draw epoch, and the CPU backend drawing
exactly what NumPy's generator gives."""

from __future__ import annotations

import numpy as np
import pytest
from tritongrad.kernels import numpy as nk
from tritongrad.kernels import triton as tk
from tritongrad.runtime import dtype as D
from tritongrad.runtime import memory
from tritongrad.runtime.device import device

from tests.helpers import TorchMT

CUDA = device("cuda", 0)
N = 4096
FLOATS = [D.float32, D.float16, D.bfloat16, D.float64]


def values(a) -> np.ndarray:
    h = memory.to_host(a)
    return D.bfloat16_values(h).astype(np.float64) if a.dtype is D.bfloat16 else \
        h.astype(np.float64)


def ks(sample, cdf) -> float:
    """The Kolmogorov-Smirnov statistic of ``sample`` against ``cdf`` (no scipy needed)."""
    x = np.sort(sample)
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def normal_cdf(x):
    from math import erf, sqrt
    return np.array([0.5 * (1 + erf(v / sqrt(2))) for v in x])


# 1.63 / sqrt(n) is the KS statistic's 1% critical value for large n
KS_1PCT = 1.63 / np.sqrt(N)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_uniform_range_moments_and_ks(dt):
    u = values(tk.rand((N,), dt, CUDA, (11, 0, None)))
    assert u.min() >= 0 and u.max() < 1  # never rounded up to 1, even in bfloat16
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01
    assert ks(u, lambda x: np.clip(x, 0, 1)) < KS_1PCT + (2.0 ** -8 if dt is D.bfloat16 else 0)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_normal_moments_and_ks(dt):
    z = values(tk.randn((N,), dt, CUDA, (12, 5, None)))
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.06 and abs(z.std() - 1) < 0.05
    assert abs((z ** 3).mean()) < 0.15 and abs((z ** 4).mean() - 3) < 0.35  # skew, kurtosis
    assert ks(z, normal_cdf) < KS_1PCT + (0.01 if dt in (D.float16, D.bfloat16) else 0)


def test_distributions_pass_scipy_kstest():
    stats = pytest.importorskip("scipy.stats")
    u = values(tk.rand((N,), D.float32, CUDA, (1, 9, None)))
    z = values(tk.randn((N,), D.float64, CUDA, (1, 10, None)))
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert stats.kstest(z, "norm").pvalue > 1e-3


@pytest.mark.parametrize("dt", [D.int64, D.int32, D.uint8, D.float32], ids=str)
def test_randint_range_and_uniform_counts(dt):
    low, high = (-7, 9) if dt is not D.uint8 else (3, 19)
    r = values(tk.randint(low, high, (N,), dt, CUDA, (5, 3, None))).astype(np.int64)
    assert r.min() == low and r.max() == high - 1
    counts = np.bincount(r - low, minlength=high - low)
    chi2 = ((counts - N / 16) ** 2 / (N / 16)).sum()
    assert chi2 < 37.7  # chi-square, 15 degrees of freedom, 0.1%


def test_randint_wide_range():
    r = values(tk.randint(-(2 ** 40), 2 ** 40, (N,), D.int64, CUDA, (5, 4, None)))
    assert r.min() >= -(2 ** 40) and r.max() < 2 ** 40 and abs(r.mean()) < 2 ** 40 * 0.05


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9])
def test_dropout_mask_rate(p):
    m = memory.to_host(tk.dropout_mask((64, 64), p, D.float32, CUDA, (3, 1, None)))
    assert m.dtype == np.bool_ and m.shape == (64, 64)
    assert abs(m.mean() - (1 - p)) < 0.03
    # the mask is exactly rand's uniform at that dtype compared with p
    u = values(tk.rand((64, 64), D.float32, CUDA, (3, 1, None)))
    np.testing.assert_array_equal(m, u >= np.float32(p))


def test_positions_are_pure_and_distinct_offsets_independent():
    a = values(tk.rand((N,), D.float32, CUDA, (7, 3, None)))
    np.testing.assert_array_equal(values(tk.rand((N,), D.float32, CUDA, (7, 3, None))), a)
    b = values(tk.rand((N,), D.float32, CUDA, (7, 4, None)))
    c = values(tk.rand((N,), D.float32, CUDA, (8, 3, None)))
    for other in (b, c):
        assert abs(np.corrcoef(a, other)[0, 1]) < 0.06
    # a prefix of a longer draw at the same position is the shorter draw (element counters)
    np.testing.assert_array_equal(values(tk.rand((N + 5,), D.float32, CUDA, (7, 3, None)))[:N],
                                  a)


def test_64_bit_seeds_and_offsets():
    base = values(tk.rand((256,), D.float32, CUDA, (1, 1, None)))
    for seed, offset in [(2 ** 63 + 1, 1), (1 + 2 ** 32, 1), (1, 1 + 2 ** 32)]:
        other = values(tk.rand((256,), D.float32, CUDA, (seed, offset, None)))
        assert not np.array_equal(other, base), (seed, offset)


def test_captured_draw_reads_and_bumps_the_epoch():
    epoch = tk.full((1,), 1, D.int64, CUDA)
    first = values(tk.rand((64,), D.float32, CUDA, (4, 2, epoch)))
    assert int(memory.to_host(epoch)[0]) == 2
    second = values(tk.rand((64,), D.float32, CUDA, (4, 2, epoch)))
    assert int(memory.to_host(epoch)[0]) == 3 and not np.array_equal(first, second)
    eager = values(tk.rand((64,), D.float32, CUDA, (4, 2, None)))  # epoch 0
    assert not np.array_equal(eager, first) and not np.array_equal(eager, second)
    np.testing.assert_array_equal(
        values(tk.rand((64,), D.float32, CUDA, (4, 2, tk.full((1,), 1, D.int64, CUDA)))), first)


def test_empty_draws():
    assert tk.rand((0, 3), D.float32, CUDA, (1, 0, None)).shape == (0, 3)
    assert nk.randn((0,), D.float32, None, np.random.default_rng(0)).shape == (0,)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_cpu_backend_is_pytorchs_stream(dt):
    from tritongrad.kernels.numpy.random import CPUStream
    got = nk.rand((5,), dt, None, CPUStream(3))
    ref = TorchMT(3)
    want = ref.u53(5) if dt is D.float64 else ref.u24(5)
    np.testing.assert_array_equal(np.asarray(got, dtype=np.float64),
                                  np.asarray(nk.astype(want, dt), dtype=np.float64)
                                  if dt is D.bfloat16 else want.astype(dt.np))
    np.testing.assert_array_equal(nk.randint(0, 9, (7,), D.int64, None, CPUStream(2)),
                                  [v % 9 for v in TorchMT(2).raw32(7)])
    mask = nk.dropout_mask((50,), 0.4, D.float32, None, CPUStream(1))
    np.testing.assert_array_equal(mask, TorchMT(1).u53(50) < 0.6)


# -- ATen's rejection samplers in the tensor's dtype (kernels/numpy/random.py) ----------------
# Golden values printed by PyTorch 2.13 (CPU) after ``torch.manual_seed(5)``:
# ``torch._standard_gamma(torch.tensor([0.2, 1.5, 30.0]))``, then ``torch.rand(2)``; and
# ``torch.binomial(torch.tensor([7., 100., 1000.]), torch.tensor([0.3, 0.2, 0.6]))``, then
# ``torch.rand(2)``. float32: ATen computes some steps in float (``1.0f / alpha``, ``alpha -
# 1.0f / 3.0f``, ``count * prob``), which these kernels round alike.

def _after(stream) -> list:
    from tritongrad.kernels.numpy.random import uniform
    return uniform((2,), D.float32, stream).astype(np.float64).tolist()


def test_standard_gamma_float32_is_atens():
    from tritongrad.kernels.numpy.random import CPUStream, standard_gamma
    s = CPUStream(5)
    got = standard_gamma(np.array([0.2, 1.5, 30.0], np.float32), s)
    assert got.dtype == np.float32
    assert got.astype(np.float64).tolist() == [0.004784619435667992, 2.512828826904297,
                                               34.13911056518555]
    assert _after(s) == [0.9809269309043884, 0.6501586437225342]
    # NumPy's name on the stream draws the same, as for float32 tensors with dtype=
    got2 = CPUStream(5).standard_gamma(np.array([0.2, 1.5, 30.0]), dtype=np.float32)
    np.testing.assert_array_equal(got2, got)


def test_binomial_float32_is_atens():
    from tritongrad.kernels.numpy.random import CPUStream, binomial
    s = CPUStream(5)
    got = binomial(np.array([7.0, 100.0, 1000.0], np.float32),
                   np.array([0.3, 0.2, 0.6], np.float32), s)
    assert got.dtype == np.float32 and got.tolist() == [2.0, 18.0, 581.0]
    assert _after(s) == [0.7150057554244995, 0.5793275833129883]


def test_samplers_edge_parameters():
    from tritongrad.kernels.numpy.random import CPUStream, binomial, poisson, standard_gamma
    s = CPUStream(0)
    assert poisson(np.zeros(3), s).tolist() == [0, 0, 0]
    assert binomial(np.array([0.0, 5.0, 5.0]), np.array([0.5, 0.0, 1.0]), s).tolist() == \
        [0.0, 0.0, 5.0]
    assert np.isnan(binomial(np.array([5.0]), np.array([np.nan]), s)[0])
    g = standard_gamma(np.array([0.0, np.nan]), s)
    assert g[0] == np.finfo(np.float64).tiny and np.isnan(g[1])
    # none of these draws (and the samplers' unused chunk is given back to the stream)
    assert s.raw32(3).tolist() == TorchMT(0).raw32(3)


def test_float32_samplers_against_torch():
    """The float32 kernels against ``torch._standard_gamma``/``torch.binomial`` and the
    stream after them: 8 seeds x 2 samplers."""
    torch = pytest.importorskip("torch")
    from tritongrad.kernels.numpy.random import CPUStream, binomial, standard_gamma
    alphas = np.concatenate([np.linspace(0.01, 12, 300), [1.0, 1 / 3, 250.0]]).astype(np.float32)
    counts = np.round(np.linspace(0, 400, 300)).astype(np.float32)
    probs = np.random.default_rng(2).random(300).astype(np.float32)
    for seed in range(8):
        for fn_t, fn_k in ((lambda: torch._standard_gamma(torch.tensor(alphas)),
                            lambda s: standard_gamma(alphas, s)),
                           (lambda: torch.binomial(torch.tensor(counts), torch.tensor(probs)),
                            lambda s: binomial(counts, probs, s))):
            torch.manual_seed(seed)
            want = np.concatenate([fn_t().numpy(), torch.rand(3).numpy()])
            s = CPUStream(seed)
            got = np.concatenate([fn_k(s), nk.random.uniform((3,), D.float32, s)])
            np.testing.assert_array_equal(got, want, err_msg=f"seed {seed}")
