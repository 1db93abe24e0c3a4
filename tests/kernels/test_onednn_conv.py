"""The CPU convolutions through oneDNN (kernels/numpy/onednn.py), where it is installed: forward
and backward against the NumPy path (conv.py with oneDNN off) and against float64 (which never
goes to oneDNN), over strides, padding (asymmetric too), dilation, groups (depthwise, with a
channel multiplier), odd and non-contiguous shapes and each subset of the gradients; the
choice by ``TRITONGRAD_ONEDNN`` and by size; the autograd op and the transposed convolution
on top of it. Skipped where oneDNN is not installed."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import tritongrad as tg

onednn = importlib.import_module("tritongrad.kernels.numpy.onednn")
conv = importlib.import_module("tritongrad.kernels.numpy.conv")


def _installed() -> bool:
    try:
        with onednn.use("on"):
            return True
    except RuntimeError:
        return False


pytestmark = pytest.mark.skipif(not _installed(), reason="oneDNN (onednn-cpu-gomp) is not "
                                                         "installed")

# (x shape, w shape, stride, padding, dilation, groups); padding as the kernels take it: an
# int per side pair or a (low, high) pair
CASES = [
    ((2, 3, 8, 8), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((3, 16, 9, 7), (8, 16, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((2, 5, 11, 6), (7, 5, 2, 3), (2, 1), ((0, 1), (2, 0)), (1, 1), 1),  # asymmetric pads
    ((1, 4, 13, 13), (6, 4, 3, 3), (1, 1), (2, 2), (2, 2), 1),  # dilation
    ((2, 6, 10, 9), (9, 2, 3, 1), (1, 2), (1, 0), (2, 1), 3),  # groups, uneven everything
    ((2, 8, 12, 12), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 8),  # depthwise
    ((2, 4, 7, 7), (12, 1, 5, 5), (2, 2), (2, 2), (1, 1), 4),  # depthwise, multiplier 3
    ((4, 17, 5, 5), (33, 17, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # 1x1, odd channels
    ((1, 1, 1, 257), (3, 1, 1, 5), (1, 3), (0, 2), (1, 1), 1),  # a conv1d of 257
    ((2, 3, 4, 4), (5, 3, 4, 4), (1, 1), (0, 0), (1, 1), 1),  # kernel = the image: 1x1 out
    ((64, 16, 8, 8), (32, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # the digits CNN's layers
    ((64, 32, 4, 4), (64, 32, 3, 3), (1, 1), (1, 1), (1, 1), 1),
]
NEEDS = [(True, True, True), (True, False, False), (False, True, False), (False, False, True),
         (True, False, True), (False, True, True), (True, True, False)]


def _arrays(case, seed=0, dtype=np.float32):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(seed + sum(xs) + sum(ws))
    x = rng.standard_normal(xs)
    w = rng.standard_normal(ws)
    b = rng.standard_normal(ws[0])
    y_shape = conv.conv2d(x, w, None, stride, padding, dilation, groups).shape
    g = rng.standard_normal(y_shape)
    return tuple(a.astype(dtype) for a in (x, w, b, g))


def _close(got, want64, rtol=2e-5):
    """float32 ``got`` against float64 ``want64``: elementwise within ``rtol`` of the largest
    value (sums of many float32 terms)."""
    assert got.dtype == np.float32 and got.shape == want64.shape
    scale = max(float(np.abs(want64).max()), 1e-30)
    np.testing.assert_allclose(got, want64, rtol=rtol, atol=rtol * scale)


def _took(kind: str) -> None:
    """Asserts that oneDNN ran a ``kind`` ("fwd", "bwd") plan and refused no shape (a refused
    one falls back to NumPy silently: only the cache can tell)."""
    assert any(k[0] == kind for k in onednn._PLANS), f"oneDNN did not take the {kind} pass"
    refused = [k for k, plan in onednn._PLANS.items() if plan is onednn._FAILED]
    assert not refused, f"oneDNN refused {refused}"


@pytest.fixture
def on():
    """oneDNN for every float32 convolution, whatever its size; a fresh plan cache."""
    onednn._PLANS.clear()
    with onednn.use("on") as lib:
        yield lib


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_forward_matches_numpy_and_float64(case, bias, on):
    x, w, b, _ = _arrays(case)
    b = b if bias else None
    stride, padding, dilation, groups = case[2:]
    got = conv.conv2d(x, w, b, stride, padding, dilation, groups)
    _took("fwd")
    with onednn.use("off"):
        numpy32 = conv.conv2d(x, w, b, stride, padding, dilation, groups)
    x64, w64, b64, _ = _arrays(case, dtype=np.float64)
    want = conv.conv2d(x64, w64, b64 if bias else None, stride, padding, dilation, groups)
    assert got.flags.c_contiguous
    _close(got, want)
    _close(numpy32, want)  # (the two float32 paths: each within the same bound of float64)


@pytest.mark.parametrize("needs", NEEDS)
@pytest.mark.parametrize("case", CASES)
def test_gradients_match_numpy_and_float64(case, needs, on):
    x, w, _, g = _arrays(case)
    params = case[2:]
    got = conv.conv2d_backward(g, x, w, *params, needs)
    if needs[0] or needs[1]:  # (the bias gradient alone is a NumPy sum)
        _took("bwd")
    with onednn.use("off"):
        numpy32 = conv.conv2d_backward(g, x, w, *params, needs)
    x64, w64, _, g64 = _arrays(case, dtype=np.float64)
    want = conv.conv2d_backward(g64, x64, w64, *params, needs)
    for name, a, n, ref, need in zip("xwb", got, numpy32, want, needs):
        if not need:
            assert a is None and n is None, name
            continue
        _close(a, ref, rtol=5e-5)
        _close(n, ref, rtol=5e-5)


def test_non_contiguous_inputs(on):
    case = CASES[4]
    x, w, b, g = _arrays(case)
    params = case[2:]
    # the same values as transposed, sliced and reversed views
    xv = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    wv = np.ascontiguousarray(w[:, :, ::-1])[:, :, ::-1]
    gv = np.asfortranarray(g)
    bv = np.stack([b, b], 1)[:, 0]
    assert not (xv.flags.c_contiguous or wv.flags.c_contiguous or gv.flags.c_contiguous
                or bv.flags.c_contiguous)
    np.testing.assert_array_equal(conv.conv2d(xv, wv, bv, *params),
                                  conv.conv2d(x, w, b, *params))
    for a, c in zip(conv.conv2d_backward(gv, xv, wv, *params, (True, True, True)),
                    conv.conv2d_backward(g, x, w, *params, (True, True, True))):
        np.testing.assert_array_equal(a, c)
    _took("fwd")
    _took("bwd")


def test_plans_are_made_once_per_shape(on):
    x, w, b, g = _arrays(CASES[1])
    params = CASES[1][2:]
    for _ in range(3):
        conv.conv2d(x, w, b, *params)
        conv.conv2d_backward(g, x, w, *params, (True, True, True))
    assert len(onednn._PLANS) == 2
    conv.conv2d(x[:1], w, b, *params)  # another batch size: another plan
    assert len(onednn._PLANS) == 3


def test_temporaries_past_the_arena_get_their_own_buffer(on, monkeypatch):
    x, w, b, g = _arrays(CASES[1])
    params = CASES[1][2:]
    want = conv.conv2d(x, w, b, *params), *conv.conv2d_backward(g, x, w, *params,
                                                                 (True, True, True))
    monkeypatch.setattr(onednn, "_ARENA_MAX", 0)
    for _ in range(2):
        got = conv.conv2d(x, w, b, *params), *conv.conv2d_backward(g, x, w, *params,
                                                                   (True, True, True))
        for a, c in zip(got, want):
            np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_half_inputs_compute_in_float32_through_onednn(dtype, on):
    from tritongrad.kernels import host_array, host_values
    case = CASES[0]
    x, w, b, g = (host_array(a, tg.bfloat16 if dtype == "bfloat16" else tg.float16)
                  for a in _arrays(case))
    params = case[2:]
    got = conv.conv2d(x, w, b, *params)
    grads = conv.conv2d_backward(g, x, w, *params, (True, True, True))
    with onednn.use("off"):
        want = conv.conv2d(x, w, b, *params)
        wgrads = conv.conv2d_backward(g, x, w, *params, (True, True, True))
    assert type(got) is type(want) and got.dtype == want.dtype
    tol = 1e-2 if dtype == "bfloat16" else 2e-3  # (one rounding of the float32 result)
    for a, c in zip((got,) + grads, (want,) + wgrads):
        av, cv = host_values(a).astype(np.float64), host_values(c).astype(np.float64)
        np.testing.assert_allclose(av, cv, rtol=tol, atol=tol * np.abs(cv).max())


def test_float64_and_empty_convolutions_stay_with_numpy(on):
    x, w, b, g = _arrays(CASES[0], dtype=np.float64)
    conv.conv2d(x, w, b, *CASES[0][2:])
    conv.conv2d_backward(g, x, w, *CASES[0][2:], (True, True, True))
    x32, w32, b32, _ = _arrays(CASES[0])
    y = conv.conv2d(x32[:0], w32, b32, *CASES[0][2:])
    assert y.shape == (0, 4, 8, 8)
    dx, dw, db = conv.conv2d_backward(np.zeros(y.shape, np.float32), x32[:0], w32,
                                      *CASES[0][2:], (True, True, True))
    assert dx.shape == (0, 3, 8, 8) and not dw.any() and not db.any()
    assert not onednn._PLANS


def test_errors_are_the_numpy_paths(on):
    x, w, b, g = _arrays(CASES[0])
    params = CASES[0][2:]
    with pytest.raises(ValueError, match="expected the output gradient of shape"):
        conv.conv2d_backward(g[:, :2], x, w, *params, (True, True, True))
    with pytest.raises(ValueError, match="expected arrays of one dtype"):
        conv.conv2d(x, w.astype(np.float64), b, *params)
    with pytest.raises(ValueError, match="do not agree with groups=2"):
        conv.conv2d(x, w, b, params[0], params[1], params[2], 2)


def test_auto_takes_the_layers_worth_a_call():
    onednn._PLANS.clear()
    with onednn.use("auto"):
        small, large = CASES[0], CASES[-2]  # 14 k and 19 M multiply-adds
        for case in (small, large):
            x, w, b, g = _arrays(case)
            conv.conv2d(x, w, b, *case[2:])
            conv.conv2d_backward(g, x, w, *case[2:], (True, True, True))
    assert {k[1] for k in onednn._PLANS} == {large[0]}
    assert not onednn.wins((2, 3, 8, 8), (4, 3, 3, 3), (8, 8))
    assert onednn.wins((64, 16, 8, 8), (32, 16, 3, 3), (8, 8))


def test_auto_keeps_numpy_while_numpys_blas_runs_threads(monkeypatch):
    # (blas.py's Note [Two thread pools]: auto uses oneDNN only beside a one-thread OpenBLAS)
    onednn._PLANS.clear()
    case = CASES[-2]
    x, w, b, _ = _arrays(case)
    with onednn.use("auto") as lib:
        monkeypatch.setattr(lib, "blas_threads", lambda: 2)
        conv.conv2d(x, w, b, *case[2:])
        assert not onednn._PLANS
        monkeypatch.setattr(lib, "blas_threads", lambda: 1)
        conv.conv2d(x, w, b, *case[2:])
        assert len(onednn._PLANS) == 1


def test_the_environment_switch():
    code = ("from tritongrad.kernels.numpy import onednn; import sys; "
            "print(onednn.provider() is not None)")
    for value, want in (("off", "False"), ("on", "True"), ("auto", "True")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "TRITONGRAD_ONEDNN": value}, check=True)
        assert out.stdout.strip() == want, (value, out.stderr)
    with pytest.raises(ValueError, match="TRITONGRAD_ONEDNN: expected one of auto, on, off"), \
            onednn.use("sometimes"):
        pass


def test_on_without_the_library_names_the_wheel(monkeypatch):
    monkeypatch.setattr(onednn, "_candidates", list)
    monkeypatch.setattr(onednn, "_loaded", onednn._UNSET)
    mode = onednn._mode
    with pytest.raises(RuntimeError, match="pip install onednn-cpu-gomp"), onednn.use("on"):
        pass
    with onednn.use("auto") as lib:  # auto: silently NumPy
        assert lib is None
    assert onednn._mode == mode  # (the refused switch changed nothing)


def test_threads_follow_numpys_blas(on, monkeypatch):
    calls = []
    monkeypatch.setattr(on, "threads", calls.append)
    monkeypatch.setattr(on, "blas_threads", lambda: 3)  # (on: any count; auto: one)
    monkeypatch.setattr(onednn, "_local", type("L", (), {})())
    x, w, b, _ = _arrays(CASES[1])
    conv.conv2d(x, w, b, *CASES[1][2:])
    conv.conv2d(x, w, b, *CASES[1][2:])
    assert calls == [3]  # (set once, while it stays)


@pytest.mark.parametrize("case", [CASES[1], CASES[4], CASES[5]])
def test_autograd_and_the_transposed_convolution(case, on):
    from tritongrad.nn import functional as F
    x0, w0, b0, g0 = _arrays(case)
    stride, padding, dilation, groups = case[2:]
    pad = tuple(p if isinstance(p, int) else p[0] for p in padding)
    if any(isinstance(p, tuple) and p[0] != p[1] for p in padding):
        pytest.skip("F.conv2d takes symmetric padding")
    outs = {}
    for mode in ("on", "off"):
        with onednn.use(mode):
            x, w, b = (tg.tensor(a, requires_grad=True) for a in (x0, w0, b0))
            y = F.conv2d(x, w, b, stride, pad, dilation, groups)
            assert (y.grad_fn._columns is None) == (mode == "on" or w0.shape[1] == 1)
            y.backward(tg.tensor(g0))
            # the transposed convolution: its forward is conv2d's input gradient
            xt = tg.tensor(g0, requires_grad=True)
            wt = tg.tensor(w0, requires_grad=True)
            yt = F.conv_transpose2d(xt, wt, None, stride, pad, groups=groups,
                                    dilation=dilation,
                                    output_padding=_output_padding(x0.shape, y.shape, case))
            yt.sum().backward()
            if mode == "on":
                _took("fwd")
                _took("bwd")
            outs[mode] = [t.detach().numpy() for t in (y, x.grad, w.grad, b.grad, yt, xt.grad,
                                              wt.grad)]
    for a, c in zip(outs["on"], outs["off"]):
        scale = np.abs(c).max()
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5 * scale)


def _output_padding(x_shape, y_shape, case) -> tuple:
    """The output padding that makes conv_transpose2d give back x's spatial size."""
    (_, _, kh, kw), stride, padding, dilation = case[1], case[2], case[3], case[4]
    out = []
    for i, k in enumerate((kh, kw)):
        p = padding[i] if isinstance(padding[i], int) else padding[i][0]
        size = (y_shape[2 + i] - 1) * stride[i] - 2 * p + dilation[i] * (k - 1) + 1
        out.append(x_shape[2 + i] - size)
    return tuple(out)
