"""The fused activations (kernels/triton/activations.py, kernels/numpy/nn.py; the contract's
``activation``, ``activation_backward``, ``glu``, ``glu_backward``) behind SiLU, Mish,
Softplus, LogSigmoid, Hardswish, Hardsigmoid, Hardtanh/ReLU6 and GLU: values and gradients on
both devices against float64 NumPy formulas, the Triton kernel against the NumPy routines
for every float dtype and layout, PyTorch's special values, float16/bfloat16 computed in
float32 and rounded once, one kernel launch each way on the Triton backend, the NumPy forms
without the compiled loops, and the kernel compiled for sm_90."""

from __future__ import annotations

import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host, sigmoid_ref, softplus_ref
from tritongrad.kernels import host_values
from tritongrad.kernels import numpy as nk
from tritongrad.kernels.triton import activations as ta
from tritongrad.kernels.triton import launcher
from tritongrad.nn import functional as F
from tritongrad.runtime import dtype as D


_sig, _softplus = sigmoid_ref, softplus_ref


# contract op -> (params, tritongrad call, float64 value, float64 derivative)
REF = {
    "silu": ((), F.silu, lambda x: x * _sig(x), lambda x: _sig(x) * (1 + x * (1 - _sig(x)))),
    "mish": ((), F.mish, lambda x: x * np.tanh(_softplus(x)),
             lambda x: np.tanh(_softplus(x)) + x * _sig(x) * (1 - np.tanh(_softplus(x)) ** 2)),
    "softplus": ((2.0, 3.0), lambda x: F.softplus(x, 2.0, 3.0), lambda x: _softplus(x, 2, 3),
                 lambda x: np.where(2 * x > 3.0, 1.0, _sig(2 * x))),
    "log_sigmoid": ((), F.logsigmoid, lambda x: -_softplus(-x), lambda x: _sig(-x)),
    "hardswish": ((), F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
                  lambda x: np.where(x <= -3, 0.0, np.where(x < 3, x / 3 + 0.5, 1.0))),
    "hardsigmoid": ((), F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6,
                    lambda x: np.where((x > -3) & (x < 3), 1 / 6, 0.0)),
    "hardtanh": ((-0.5, 1.5), lambda x: F.hardtanh(x, -0.5, 1.5),
                 lambda x: np.clip(x, -0.5, 1.5),
                 lambda x: np.where((x > -0.5) & (x < 1.5), 1.0, 0.0)),
}
FLOATS = [D.float16, D.bfloat16, D.float32, D.float64]
TOL = {"float32": (2e-6, 1e-6), "float64": (1e-12, 1e-14)}


def _points(shape, seed=0):
    """Uniform points in (-7, 7) with the kinks (+-3, -0.5, 1.5, threshold 1.5) approached
    on both sides but not met, float64."""
    n = int(np.prod(shape))
    kinks = np.array([-3.0, 3.0, -0.5, 1.5])
    near = (kinks[:, None] + np.array([-1e-3, 1e-3])).ravel()
    x = np.random.default_rng(seed).uniform(-7, 7, n)
    x[: near.size] = near
    return x.reshape(shape)


def _glu_ref(x, dim):
    a, b = np.split(x, 2, axis=dim)
    s = _sig(b)
    return a * s, (s, a * s * (1 - s))


# -- values and gradients through the autograd ops, both devices ------------------------------

@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("op", REF)
def test_values_and_gradients_against_float64(device, op, dt):
    _, fn, value, deriv = REF[op]
    xs = _points((37, 6))
    # a transposed input: the kernels read any strides
    x = tg.tensor(xs.T.copy(), dtype=getattr(tg, dt), device=device).t().requires_grad_()
    x64 = host(x.double())
    gs = np.random.default_rng(1).standard_normal(xs.shape)
    g = tg.tensor(gs, dtype=getattr(tg, dt), device=device)
    y = fn(x)
    (gx,) = tg.autograd.grad(y, x, g)
    rtol, atol = TOL[dt]
    np.testing.assert_allclose(host(y.double()), value(x64), rtol=rtol, atol=atol)
    np.testing.assert_allclose(host(gx.double()), host(g.double()) * deriv(x64), rtol=rtol,
                               atol=atol)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu_values_and_gradients(device, dim):
    xs = _points((4, 6, 8), seed=2)
    x = tg.tensor(xs, device=device, dtype=tg.float64).requires_grad_()
    y = F.glu(x, dim)
    want, (da, db) = _glu_ref(xs, dim)
    gs = np.random.default_rng(3).standard_normal(want.shape)
    (gx,) = tg.autograd.grad(y, x, tg.tensor(gs, device=device, dtype=tg.float64))
    np.testing.assert_allclose(host(y), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(gx), np.concatenate([gs * da, gs * db], axis=dim),
                               rtol=1e-12, atol=1e-14)
    assert y.grad_fn.name() == "GluBackward0"


def test_glu_broadcast_gradient_and_float32(device):
    # y.sum()'s gradient reaches the rule as a stride-0 view; float32 within its rounding (1 - s
    # cancels where s is near 1: absolute, as PyTorch's formula)
    xs = _points((6, 5), seed=4)
    x = tg.tensor(xs, device=device, dtype=tg.float32).requires_grad_()
    F.glu(x, 0).sum().backward()
    _, (da, db) = _glu_ref(host(x.double()), 0)
    np.testing.assert_allclose(host(x.grad), np.concatenate([da, db], 0), rtol=2e-6, atol=1e-6)


# -- the Triton kernel against the NumPy routines ---------------------------------------------

def _kernel_inputs(kit, rng, dtype, layout, shape=(5, 7)):
    """(device array in ``layout``, its values as a host array of the NumPy backend's
    dtype), values in (-9, 9): every piece of every formula."""
    vals = rng.uniform(-9, 9, (2 * shape[0] + 1, 2 * shape[1] + 1))
    host_of = (lambda a: kit.nk.astype(a.astype(np.float32), D.bfloat16)) \
        if dtype is D.bfloat16 else (lambda a: a.astype(dtype.np))
    if layout == "contig":
        v = vals[: shape[0], : shape[1]]
        return kit.up(v, dtype), host_of(np.ascontiguousarray(v))
    if layout == "T":
        v = vals[: shape[1], : shape[0]]
        return kit.tk.permute(kit.up(v, dtype), (1, 0)), host_of(np.ascontiguousarray(v.T))
    idx = (slice(1, 1 + 2 * shape[0], 2), slice(1, 1 + 2 * shape[1], 2))
    return kit.tk.getitem(kit.up(vals, dtype), idx), host_of(np.ascontiguousarray(vals[idx]))


@pytest.mark.parametrize("layout", ["contig", "T", "strided"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", REF)
def test_kernel_matches_numpy(kit, small_blocks, rng, op, dtype, layout):
    params = REF[op][0]
    x_dev, xh = _kernel_inputs(kit, rng, dtype, layout)
    g_dev, g_host = kit.pair((5, 7), dtype, rng, "expanded" if layout == "T" else "contig")
    gh = np.ascontiguousarray(g_host)
    if dtype is D.bfloat16:
        gh = kit.nk.astype(gh.astype(np.float32), D.bfloat16)
    y = ta.activation(op, x_dev, *params)
    kit.check(y, kit.ref(lambda: host_values(nk.activation(op, xh, *params))), dtype)
    assert y.dtype is dtype
    d = ta.activation_backward(op, g_dev, x_dev, *params)
    kit.check(d, kit.ref(lambda: host_values(nk.activation_backward(op, gh, xh, *params))),
              dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_glu_kernels_match_numpy(kit, small_blocks, rng, dtype):
    for dim, layout in ((1, "contig"), (0, "T"), (2, "strided")):
        x_dev, x_host = kit.pair((4, 6, 8), dtype, rng, layout)
        g_shape = list(x_host.shape)
        g_shape[dim] //= 2
        g_dev, g_host = kit.pair(tuple(g_shape), dtype, rng, "contig")
        up = (lambda a: kit.nk.astype(a.astype(np.float32), D.bfloat16)) \
            if dtype is D.bfloat16 else (lambda a: a)
        xh, gh = up(np.ascontiguousarray(x_host)), up(g_host)
        kit.check(ta.glu(x_dev, dim), kit.ref(lambda: host_values(nk.glu(xh, dim))), dtype)
        kit.check(ta.glu_backward(g_dev, x_dev, dim),
                  kit.ref(lambda: host_values(nk.glu_backward(gh, xh, dim))), dtype)


def test_kernel_empty_and_zero_dim(kit):
    e = kit.up(np.zeros((0, 3), np.float32))
    assert ta.activation("silu", e).shape == (0, 3)
    s = kit.up(np.array(-2.0, np.float32))
    kit.check(ta.activation("hardtanh", s, -1.0, 1.0), np.array(-1.0, np.float32))
    kit.check(ta.activation_backward("log_sigmoid", s, s),
              np.array(-2.0 * _sig(2.0), np.float32), rtol=1e-6)


def test_numpy_forms_of_a_zero_dim_array_are_arrays():
    # (NumPy's and the compiled loops' selects give a 0-d operand a scalar, which became a
    # tensor with a NumPy dtype: softplus of a 0-d tensor broke a distribution's log_prob)
    for op, (params, _, value, deriv) in REF.items():
        for dtype in (np.float32, np.float64):
            x = np.array(-0.75, dtype)
            y = nk.activation(op, x, *params)
            dy = nk.activation_backward(op, np.array(2.0, dtype), x, *params)
            assert type(y) is np.ndarray and y.shape == () and y.dtype == dtype, op
            assert type(dy) is np.ndarray and dy.shape == () and dy.dtype == dtype, op
            np.testing.assert_allclose(y, value(np.array([-0.75]))[0], rtol=1e-6, err_msg=op)
            np.testing.assert_allclose(dy, 2 * deriv(np.array([-0.75]))[0], rtol=1e-6,
                                       err_msg=op)


def test_tables_agree():
    # the two backends' activation tables, and every fused node's kernel in them
    from tritongrad.autograd.ops import activations
    from tritongrad.kernels.numpy import nn as numpy_nn
    assert {op: n for op, (_, _, n) in ta.ACTIVATIONS.items()} == \
        {op: n for op, (_, _, n) in numpy_nn.ACTIVATIONS.items()}
    nodes = [c for c in vars(activations).values()
             if isinstance(c, type) and issubclass(c, activations._Activation) and c.kernel]
    # (a set: an in-place form is a node class of its own over the same kernel)
    assert sorted({c.kernel for c in nodes}) == sorted(REF) == sorted(ta.ACTIVATIONS)
    assert all(c.fused for c in nodes)


def test_bad_arguments(kit):
    x = kit.up(np.ones(3, np.float32))
    for k, a in ((ta, x), (nk, np.ones(3, np.float32))):
        with pytest.raises(ValueError, match="unknown op 'swish'"):
            k.activation("swish", a)
        with pytest.raises(TypeError, match="takes 2 parameters, got 0"):
            k.activation("softplus", a)
    with pytest.raises(TypeError, match="silu"):
        ta.activation("silu", kit.up(np.ones(3, np.int32)))
    with pytest.raises(TypeError, match="silu"):
        nk.activation("silu", np.ones(3, np.int32))


# -- special values, half precision -------------------------------------------------------------

@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_special_values(device, dt):
    x = tg.tensor([-math.inf, math.inf, math.nan, -3.0, 3.0, -0.5, 1.5], dtype=getattr(tg, dt),
                  device=device, requires_grad=True)
    nan, inf = math.nan, math.inf
    want = {  # PyTorch's values and gradients at these points (g = 1)
        "silu": ([nan, inf, nan], [nan, nan, nan]),
        "mish": ([nan, inf, nan], [nan, nan, nan]),
        "softplus": ([0.0, inf, nan], [0.0, 1.0, nan]),
        "log_sigmoid": ([-inf, 0.0, nan], [1.0, 0.0, nan]),
        "hardswish": ([nan, inf, nan, 0.0, 3.0], [0.0, 1.0, 1.0, 0.0, 1.0]),
        "hardsigmoid": ([0.0, 1.0, nan, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0]),
        # (the kinks of hardtanh(-0.5, 1.5) at the last two points: gradient 0)
        "hardtanh": ([-0.5, 1.5, nan, -0.5, 1.5, -0.5, 1.5], [0.0] * 7),
    }
    for op, (values, grads) in want.items():
        fn = REF[op][1]
        with np.errstate(all="ignore"):
            y = fn(x)
            (gx,) = tg.autograd.grad(y, x, tg.ones_like(y))
        np.testing.assert_array_equal(host(y)[: len(values)], values, err_msg=op)
        np.testing.assert_array_equal(host(gx)[: len(grads)], grads, err_msg=op)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", REF)
def test_half_computed_in_float32_and_rounded_once(device, op, dt):
    fn = REF[op][1]
    half = getattr(tg, dt)
    x = tg.linspace(-4.5, 4.5, 37, dtype=tg.float32, device=device).to(half)
    g = tg.linspace(-1.0, 2.0, 37, dtype=tg.float32, device=device).to(half)
    x.requires_grad_()
    y = fn(x)
    (gx,) = tg.autograd.grad(y, x, g)
    assert y.dtype is half and gx.dtype is half
    x32 = x.detach().float().requires_grad_()
    y32 = fn(x32)
    (g32,) = tg.autograd.grad(y32, x32, g.float())
    np.testing.assert_array_equal(host(y.float()), host(y32.to(half).float()))
    np.testing.assert_array_equal(host(gx.float()), host(g32.to(half).float()))


# -- launches, the NumPy forms, PyTorch --------------------------------------------------------

@pytest.fixture
def launches(monkeypatch):
    """The names of the kernels launched through plans (``launcher.Launch``), in order."""
    names, call = [], launcher.Launch.__call__

    def counted(launch, *head):
        k = launch.kernel
        names.append(getattr(k, "__name__", None) or k.fn.__name__)
        return call(launch, *head)

    monkeypatch.setattr(launcher.Launch, "__call__", counted)
    return names


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("op", [*REF, "glu"])
def test_one_launch_each_way(launches, op, dt):
    fn = F.glu if op == "glu" else REF[op][1]
    x = tg.linspace(-4.0, 4.0, 24, device="cuda").reshape(3, 8).to(getattr(tg, dt))
    x.requires_grad_()
    g = tg.ones((3, 4) if op == "glu" else (3, 8), device="cuda", dtype=x.dtype)
    launches.clear()
    y = fn(x)
    assert launches == ["_activation_kernel"], launches
    launches.clear()
    tg.autograd.grad(y, x, g)
    assert launches == ["_activation_kernel"], launches


def test_numpy_forms_without_compiled_loops(cpu_forms):
    # the routines' selects and sigmoids take elementwise_loops' ufuncs or NumPy's forms
    xs = _points((300,), seed=5)
    gs = np.random.default_rng(6).standard_normal(300)
    for dtype in (np.float32, np.float64):
        x, g = xs.astype(dtype), gs.astype(dtype)
        rtol, atol = TOL[np.dtype(dtype).name]
        for op, (params, _, value, deriv) in REF.items():
            np.testing.assert_allclose(nk.activation(op, x, *params), value(xs), rtol=rtol,
                                       atol=atol, err_msg=op)
            np.testing.assert_allclose(nk.activation_backward(op, g, x, *params),
                                       g.astype(np.float64) * deriv(x.astype(np.float64)),
                                       rtol=rtol, atol=atol, err_msg=op)
        with np.errstate(all="ignore"):
            special = np.array([-np.inf, np.inf, np.nan, -3.0, 3.0], dtype)
            ones = np.ones_like(special)
            np.testing.assert_array_equal(nk.activation_backward("hardswish", ones, special),
                                          [0.0, 1.0, 1.0, 0.0, 1.0])
            np.testing.assert_allclose(nk.activation_backward("softplus", ones, special, 1.0,
                                                              20.0),
                                       [0.0, 1.0, np.nan, _sig(-3.0), _sig(3.0)], rtol=rtol)


def test_against_torch(device):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    xs = np.concatenate([_points((60,), seed=7), [-40.0, 40.0, 0.0]])
    calls = {"silu": tf.silu, "mish": tf.mish, "softplus": lambda t: tf.softplus(t, 2.0, 3.0),
             "log_sigmoid": tf.logsigmoid, "hardswish": tf.hardswish,
             "hardsigmoid": tf.hardsigmoid, "hardtanh": lambda t: tf.hardtanh(t, -0.5, 1.5)}
    for op, ref in calls.items():
        xt = torch.tensor(xs, dtype=torch.float32, requires_grad=True)
        ref(xt).backward(torch.ones_like(xt))
        x = tg.tensor(xs, dtype=tg.float32, device=device, requires_grad=True)
        y = REF[op][1](x)
        (gx,) = tg.autograd.grad(y, x, tg.ones_like(y))
        np.testing.assert_allclose(host(y), ref(xt).detach().numpy(), rtol=2e-6, atol=1e-6,
                                   err_msg=op)
        np.testing.assert_allclose(host(gx), xt.grad.numpy(), rtol=2e-6, atol=1e-6,
                                   err_msg=op)


# -- sm_90 ---------------------------------------------------------------------------------------

_COMPILE = r"""
import sys
sys.path.insert(0, {here!r})
import compile_sm90 as C
C.compile_only()
import numpy as np
from tritongrad.kernels.triton import _launch, activations as ta
from tritongrad.kernels.triton import permute
from tritongrad.runtime import dtype as D, memory
from tritongrad.runtime.device import device
_launch._driver_ready = True
dev = device("cuda", 0)
def arr(shape, dt):
    if dt is D.bfloat16:
        return memory.to_device(np.full(shape, 0x3F80, np.uint16), dev, dtype=D.bfloat16)
    return memory.to_device(np.ones(shape, dt.np), dev)
cases = []
for op, (_, _, n) in ta.ACTIVATIONS.items():
    p = (1.0, 20.0)[:n]
    # every formula in float32 and float64; the half types' loads and stores once each
    halves = (D.float16, D.bfloat16) if op in ("silu", "softplus") else ()
    for dt in (D.float32, D.float64, *halves):
        x, g = arr((64, 48), dt), arr((64, 48), dt)
        cases.append((f"{{op}} {{dt}}", lambda op=op, x=x, p=p: ta.activation(op, x, *p)))
        cases.append((f"{{op}}_backward {{dt}}",
                      lambda op=op, x=x, g=g, p=p: ta.activation_backward(op, g, x, *p)))
for dt in (D.float32, D.bfloat16):
    x = arr((16, 64), dt)
    cases.append((f"glu {{dt}}", lambda x=x: ta.glu(x, 1)))
    cases.append((f"glu_backward {{dt}}", lambda x=x, dt=dt: ta.glu_backward(arr((16, 32), dt),
                                                                            x, 1)))
xt = permute(arr((48, 64), D.float32), (1, 0))
cases.append(("silu_backward transposed", lambda: ta.activation_backward("silu", xt, xt)))
bad = 0
for name, fn in cases:
    try:
        fn()
        fn()  # through the cached launcher, checked against Triton's dispatch
    except Exception as e:
        bad += 1
        print("FAIL", name, type(e).__name__, str(e).splitlines()[0][:300])
names = set(C.PASSED_FUNCTIONS)
uncached = [k for k, c in C.LAUNCHED.items() if not c[1]]
compiled = sum(1 for k, _ in C.COMPILED if k == "_activation_kernel")
print("compiled", compiled, "uncached", uncached, "over shared", C.OVER_SHARED)
sys.exit(1 if bad or uncached or C.OVER_SHARED or compiled < len(cases) - 2 else 0)
"""


@pytest.mark.slow
def test_kernel_compiles_for_sm90():
    """Every formula of ``_activation_kernel`` (float32 and float64; the half types for two of
    them), GLU's two-output form and a strided layout compile for sm_90 (compile_sm90.py's
    compile-only driver), and launch through the cached launcher the second time."""
    here = str(pathlib.Path(__file__).parent)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-c", _COMPILE.format(here=here)], env=env,
                       capture_output=True, text=True, timeout=900, check=False,
                       cwd=str(pathlib.Path(here).parent.parent))
    if r.returncode and "No module named" in r.stderr and "triton.backends" in r.stderr:
        pytest.skip("this Triton has no CUDA backend to compile with")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
