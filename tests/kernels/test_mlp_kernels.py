"""The NumPy backend's compiled ReLU and ``where`` selects (elementwise_loops.py) against their
NumPy forms and float64 references, and the two backends' ReLU against each other (the
Triton kernel interpreted in CI)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_kit import FLOATS, INTS, D, tk
from tritongrad.kernels import numpy as nk
from tritongrad.kernels.numpy import jit

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # (PyTorch's relu is silent)

SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, -1.5, 2.5, 1e-30, -1e-30]


def _input(rng, shape, dtype):
    x = rng.standard_normal(shape)
    flat = x.reshape(-1)
    k = min(len(SPECIAL), flat.size)
    flat[:k] = SPECIAL[:k]
    return x.astype(dtype)


def _reference(x):
    """torch.relu in float64 (0 where x < 0, else x: NaN and -0.0 kept) and the elements
    whose gradient passes (not x <= 0: NaN passes)."""
    x64 = x.astype(np.float64)
    return np.where(x64 < 0, 0.0, x64), ~(x64 <= 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 257), (2, 3, 5)])
def test_numpy_relu(rng, cpu_forms, dtype, shape):
    x = _input(rng, shape, dtype)
    want, _ = _reference(x)
    y = nk.relu(x)
    assert type(y) is np.ndarray and y.dtype == dtype and y.shape == shape
    np.testing.assert_array_equal(y, want)
    if cpu_forms == "loops":  # PyTorch's -0.0 (NumPy's maximum gives +0.0, equal under ==)
        np.testing.assert_array_equal(np.signbit(y), np.signbit(want))
    if x.ndim:
        y = nk.relu(np.swapaxes(x, 0, -1))  # strided
        np.testing.assert_array_equal(y, np.swapaxes(want, 0, -1))
    out = np.full(shape, 7.0, np.float64 if dtype == np.float32 else np.float32)
    assert nk.relu(x, out=out) is out
    np.testing.assert_array_equal(out, want.astype(out.dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_where_selects(rng, cpu_forms, dtype):
    cond = rng.random((5, 33)) < 0.5
    a = _input(rng, (5, 33), dtype)
    b = _input(rng, (5, 33), dtype)[::-1].copy()
    row = _input(rng, (33,), dtype)
    cases = [(cond, a, b), (cond, a, 0), (cond, 0, a), (cond, a, -0.0), (cond, 2.5, a),
             (cond, a, row), (cond[:1], a, b), (cond, a.T.copy().T, b),
             (cond[:, ::2], a[:, ::2], 1),
             (cond[0, 0], a, b), (np.asarray(True), a, 3)]
    for c, x, y in cases:
        got, want = nk.where(c, x, y), np.where(c, x, y)
        assert type(got) is np.ndarray and got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # scalars the dtype cannot hold exactly, mixed dtypes, int arrays: NumPy's where, unchanged
    for c, x, y in [(cond, a, 0.1), (cond, a, a.astype(np.float16)), (cond, 1, 2),
                    (cond, np.arange(165).reshape(5, 33), 0)]:
        np.testing.assert_array_equal(nk.where(c, x, y), np.where(c, x, y))


def test_where_select_is_the_compiled_one(rng, monkeypatch):
    """The fast path is taken (a negative control for the tests above: with np.where stubbed
    out, the float cases still compute, and the int case reaches the stub)."""
    if not jit.enabled():
        pytest.skip("the compiled CPU loops are off")
    import tritongrad.kernels.numpy.elementwise as ne

    def refuse(*args):
        raise AssertionError("np.where called")

    cond = rng.random((4, 8)) < 0.5
    a = rng.standard_normal((4, 8)).astype(np.float32)
    monkeypatch.setattr(ne.np, "where", refuse)
    try:
        ne.where(cond, a, 0)
        ne.where(cond, a, a)
        with pytest.raises(AssertionError, match="np.where called"):
            ne.where(cond, a.astype(np.int64), 0)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_backends_agree_on_relu(kit, rng, dtype):
    """The two backends' relu, to the bit for floats (-0.0 and NaN kept by both)."""
    host = kit.values((5, 7), dtype, rng)
    if dtype in FLOATS:
        host.reshape(-1)[:7] = np.array(SPECIAL[:7], np.float32)
    x = kit.up(host, dtype)
    rx = kit.down(x)  # (bfloat16 uploads make every NaN positive)
    want = nk.relu(rx.astype(np.float32) if dtype is D.bfloat16 else rx)
    got = kit.down(tk.relu(x))
    np.testing.assert_array_equal(got, want)
    if dtype in (D.float32, D.float64) and jit.enabled():
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
