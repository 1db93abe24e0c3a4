"""The statistics composites (autograd/ops/statistics.py) against NumPy float64: nansum,
nanmean, count_nonzero, aminmax, dist, cov (weights, corrections), corrcoef, fmax, fmin, frac,
rot90, broadcast_tensors, logspace, can_cast; on both backends (gradients: test_registry)."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host

rng = np.random.default_rng(17)
NAN = float("nan")


def close(t, ref, rtol=1e-12):
    np.testing.assert_allclose(host(t), ref, rtol=rtol, atol=1e-12)


def test_nan_reductions_and_counts(device):
    x = rng.standard_normal((3, 5))
    x[0, 1] = x[2, 4] = NAN
    t = tg.tensor(x, device=device)
    close(tg.nansum(t), np.nansum(x))
    close(tg.nansum(t, 1, keepdim=True), np.nansum(x, 1, keepdims=True))
    close(tg.nanmean(t, 0), np.nanmean(x, 0))
    assert np.isnan(host(tg.nanmean(tg.tensor([NAN, NAN], device=device))))
    assert tg.nansum(tg.tensor([1, 2], device=device)).item() == 3  # integers: no NaN
    z = np.array([[0, 1, 2], [0, 0, 3]])
    assert tg.count_nonzero(tg.tensor(z, device=device)).item() == 3
    assert host(tg.count_nonzero(tg.tensor(z, device=device), 1)).tolist() == [2, 1]
    lo, hi = tg.aminmax(tg.tensor(x[1:], device=device), dim=1)
    close(lo, x[1:].min(1))
    close(hi, x[1:].max(1))
    assert tg.aminmax(tg.tensor(x[1], device=device)).max.item() == x[1].max()
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating"):
        tg.nanmean(tg.tensor([1, 2]))


@pytest.mark.parametrize("kw", [{}, {"correction": 0}, {"correction": 2},
                                {"fweights": [1, 2, 1, 3, 1, 1]},
                                {"aweights": [0.5, 1.0, 2.0, 1.5, 0.25, 1.0]},
                                {"fweights": [1, 2, 1, 3, 1, 1],
                                 "aweights": [0.5, 1.0, 2.0, 1.5, 0.25, 1.0]}],
                         ids=lambda kw: ",".join(kw) or "plain")
def test_cov_matches_numpy(device, kw):
    x = rng.standard_normal((3, 6))
    np_kw = {"ddof": kw.get("correction", 1)}
    if "fweights" in kw:
        np_kw["fweights"] = kw["fweights"]
    if "aweights" in kw:
        np_kw["aweights"] = kw["aweights"]
    tg_kw = {k: (tg.tensor(v, device=device) if isinstance(v, list) else v)
             for k, v in kw.items()}
    close(tg.cov(tg.tensor(x, device=device), **tg_kw), np.cov(x, **np_kw))
    close(tg.cov(tg.tensor(x[0], device=device), **tg_kw), np.cov(x[0], **np_kw))


def test_corrcoef_dist_and_nan_aware_extrema(device):
    x = rng.standard_normal((4, 7))
    close(tg.corrcoef(tg.tensor(x, device=device)), np.corrcoef(x))
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    for p in (1, 2, 3.5):
        close(tg.dist(tg.tensor(a, device=device), tg.tensor(b, device=device), p),
              (np.abs(a - b) ** p).sum() ** (1 / p))
    u = np.array([1.0, NAN, 3.0, NAN, -0.0])
    v = np.array([2.0, 1.0, NAN, NAN, 0.0])
    for fn, ref in ((tg.fmax, np.fmax), (tg.fmin, np.fmin)):
        got = host(fn(tg.tensor(u, device=device), tg.tensor(v, device=device)))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref(u, v)))
        np.testing.assert_array_equal(got[:3], ref(u, v)[:3])


def test_frac_rot90_broadcast_logspace(device):
    x = np.array([-2.75, -0.5, 0.0, 1.25, 7.5])
    close(tg.frac(tg.tensor(x, device=device)), x - np.trunc(x))
    r = np.arange(24.0).reshape(2, 3, 4)
    for k, dims in [(1, (0, 1)), (2, (1, 2)), (3, (0, 2)), (-1, (2, 0)), (4, (0, 1))]:
        close(tg.rot90(tg.tensor(r, device=device), k, dims), np.rot90(r, k, dims))
    with pytest.raises(RuntimeError, match="expected rotation dims to be different"):
        tg.rot90(tg.tensor(r), 1, (1, 1))
    a, b = tg.tensor(rng.standard_normal((3, 1)), device=device), tg.ones(1, 4, device=device)
    for got, ref in zip(tg.broadcast_tensors(a, b), np.broadcast_arrays(host(a), host(b))):
        close(got, ref)
    close(tg.logspace(-1, 2, 7, dtype=tg.float64, device=device), np.logspace(-1, 2, 7))
    close(tg.logspace(0, 3, 4, base=2, dtype=tg.float64), [1.0, 2.0, 4.0, 8.0])


def test_can_cast_follows_the_category_order():
    assert tg.can_cast(tg.int32, tg.float16) and tg.can_cast(tg.bool, tg.uint8)
    assert tg.can_cast(tg.float64, tg.complex64) and tg.can_cast(tg.int64, tg.int8)
    assert not tg.can_cast(tg.float32, tg.int64) and not tg.can_cast(tg.complex64, tg.float64)
    assert not tg.can_cast(tg.int32, tg.bool)
