"""clip_grad_norm_'s norm types against float64 NumPy references: the total is PyTorch's, the
``norm_type``-norm of the gradients' own norms (for p > 0 the norm of all elements together;
for 0 the number of gradients with a nonzero element), and every gradient is scaled in place
by min(max_norm / (total + 1e-6), 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn


def _host(t):
    return t.detach().cpu().numpy()


def _reference(vals: list, p: float) -> float:
    if math.isinf(p):
        per = [np.abs(v).max() if v.size else 0.0 for v in vals]
        return float(np.max(per))
    if p == 0:
        return float(sum(np.count_nonzero(v) > 0 for v in vals))
    return float(sum((np.abs(v) ** p).sum() for v in vals) ** (1 / p))


def _params(vals: list, dtype, device: str, transpose_first: bool = False) -> list:
    params = []
    for v in vals:
        p = nn.Parameter(tg.zeros(v.shape, dtype=dtype, device=device))
        p.grad = tg.tensor(v, dtype=dtype, device=device)
        params.append(p)
    if transpose_first:  # a non-contiguous gradient (a transposed view)
        v = vals[0]
        params[0] = nn.Parameter(tg.zeros(v.shape, dtype=dtype, device=device))
        params[0].grad = tg.tensor(np.ascontiguousarray(v.T), dtype=dtype, device=device).t()
    return params


@pytest.mark.parametrize("p", [2.0, math.inf, 0.0, 1.0, 3.0, 0.5])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_norm_types_against_float64(device, p, dt):
    rng = np.random.default_rng(5)
    shapes = [(4, 6), (7,), (2, 1, 3), (3,)] + ([] if math.isinf(p) else [(0, 2)])
    vals = [rng.standard_normal(s) for s in shapes]
    vals[3][:] = 0.0  # all zero: counts for nothing in the 0-norm
    dtype = getattr(tg, dt)
    params = _params(vals, dtype, device, transpose_first=True)
    stored = [_host(q.grad).astype(np.float64) for q in params]
    versions = [q.grad._version for q in params]
    want = _reference(stored, p)
    total = nn.utils.clip_grad_norm_(params, 0.25, norm_type=p)
    tol = 1e-5 if dt == "float32" else 1e-12
    assert total.dtype is dtype and total.shape == () and total.device.type == device
    assert abs(total.item() - want) <= tol * want
    coef = 0.25 / (total.item() + 1e-6)
    for q, v, ver in zip(params, stored, versions):
        np.testing.assert_allclose(_host(q.grad), v * coef, rtol=tol, atol=tol)
        assert q.grad._version == ver + 1


@pytest.mark.parametrize("p", [2.0, math.inf, 3.0])
def test_nan_gradient_makes_total_nan(p):
    params = _params([np.array([1.0, np.nan]), np.array([2.0, -5.0])], tg.float32, "cpu")
    total = nn.utils.clip_grad_norm_(params, 1.0, norm_type=p)
    assert math.isnan(total.item())
    assert np.isnan(_host(params[1].grad)).all()  # scaled by a NaN coefficient, as PyTorch
    with pytest.raises(RuntimeError, match="order .* is non-finite"):
        nn.utils.clip_grad_norm_(params, 1.0, norm_type=p, error_if_nonfinite=True)


def test_under_the_bound_and_foreach_agree():
    rng = np.random.default_rng(2)
    vals = [rng.standard_normal(s) for s in [(5, 3), (4,)]]
    for foreach in (None, True, False):
        params = _params(vals, tg.float32, "cpu")
        versions = [q.grad._version for q in params]
        total = nn.utils.clip_grad_norm_(params, 100.0, foreach=foreach)
        assert abs(total.item() - _reference(vals, 2.0)) <= 1e-5 * total.item()
        for q, v, ver in zip(params, vals, versions):  # untouched: no write, no version bump
            np.testing.assert_array_equal(_host(q.grad), v.astype(np.float32))
            assert q.grad._version == ver


def test_mixed_dtypes_take_the_general_path():
    # float32 and float64 gradients together: the total in their promoted dtype (PyTorch
    # stacks the per-gradient norms)
    params = _params([np.array([3.0])], tg.float32, "cpu") + \
        _params([np.array([4.0])], tg.float64, "cpu")
    total = nn.utils.clip_grad_norm_(params, 1.0)
    assert abs(total.item() - 5.0) < 1e-6 and total.dtype is tg.float64
    np.testing.assert_allclose(_host(params[1].grad), [0.8], rtol=1e-5)
