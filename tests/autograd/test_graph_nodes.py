"""Ops recorded as one node, as PyTorch records them: ``F.mse_loss`` (MseLossBackward0),
``lerp``/``lerp_`` (LerpBackward0, LerpBackward1), ``flip``, ``roll``, ``diagonal`` and
``Tensor.unfold`` (views), ``vector_norm``/``norm`` (LinalgVectorNormBackward0).

For each: the grad_fn graph (names and edges, written out here and, where torch is installed,
compared with its graph), values against float64 NumPy, gradients and second derivatives
against central differences, forward AD, the views' storage sharing, the profiler's op name,
on the CPU and on the (emulated) CUDA device.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import tritongrad.autograd.forward_ad as fwAD
import tritongrad.nn.functional as F
from tritongrad.autograd import gradcheck, gradgradcheck

import tritongrad as tg
from tests.helpers import host, t64

_rng = np.random.default_rng(7)


def graph(fn) -> str:
    """``fn``'s node and, recursively, its next_functions: ``Name[(child,nr), ...]``."""
    if fn is None:
        return "None"
    return f"{type(fn).__name__}[" + ", ".join(
        f"({graph(f)},{i})" for f, i in fn.next_functions) + "]"


# (case, the graph PyTorch 2.13 records for it) with x requiring grad, c and w constants
# (w requires grad where named ``wg``)
LEAF = "(AccumulateGrad[],0)"
GRAPHS = {
    "mse_loss": (lambda m, x, c, wg: m.nn.functional.mse_loss(x, c),
                 f"MseLossBackward0[{LEAF}, (None,0)]"),
    "mse_loss_both": (lambda m, x, c, wg: m.nn.functional.mse_loss(x, wg, reduction="none"),
                      f"MseLossBackward0[{LEAF}, {LEAF}]"),
    "mse_loss_target": (lambda m, x, c, wg: m.nn.functional.mse_loss(c, wg, reduction="sum"),
                        f"MseLossBackward0[(None,0), {LEAF}]"),
    "lerp": (lambda m, x, c, wg: m.lerp(x, c, 0.5), f"LerpBackward0[{LEAF}, (None,0)]"),
    "lerp_tensor": (lambda m, x, c, wg: m.lerp(x, c, wg),
                    f"LerpBackward1[{LEAF}, (None,0), {LEAF}]"),
    "lerp_": (lambda m, x, c, wg: x.clone().lerp_(c, 0.7),
              f"LerpBackward0[(CloneBackward0[{LEAF}],0), (None,0)]"),
    "flip": (lambda m, x, c, wg: x.flip(0), f"FlipBackward0[{LEAF}]"),
    "fliplr": (lambda m, x, c, wg: m.fliplr(x), f"FlipBackward0[{LEAF}]"),
    "roll": (lambda m, x, c, wg: x.roll(1, 0), f"RollBackward0[{LEAF}]"),
    "roll_dims": (lambda m, x, c, wg: x.roll((1, -2), (0, 1)), f"RollBackward0[{LEAF}]"),
    "roll_flat": (lambda m, x, c, wg: x.roll(5), f"RollBackward0[{LEAF}]"),
    "diagonal": (lambda m, x, c, wg: x.diagonal(), f"DiagonalBackward0[{LEAF}]"),
    "unfold": (lambda m, x, c, wg: x.unfold(1, 2, 1), f"UnfoldBackward0[{LEAF}]"),
    "norm": (lambda m, x, c, wg: x.norm(), f"LinalgVectorNormBackward0[{LEAF}]"),
    "vector_norm": (lambda m, x, c, wg: m.linalg.vector_norm(x, 3, dim=1),
                    f"LinalgVectorNormBackward0[{LEAF}]"),
    "vector_norm_inf": (lambda m, x, c, wg: m.linalg.vector_norm(x, -math.inf, (0, 1), True),
                        f"LinalgVectorNormBackward0[{LEAF}]"),
    "vector_norm_dtype": (lambda m, x, c, wg: m.linalg.vector_norm(x, dtype=m.float64),
                          f"LinalgVectorNormBackward0[{LEAF}]"),
}


def _graph_inputs(m):
    m.manual_seed(0)
    x = m.randn(3, 4, requires_grad=True)
    c = m.randn(3, 4)
    return x, c, m.rand(3, 4, requires_grad=True)


@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_one_node_as_pytorch_records(case):
    fn, expected = GRAPHS[case]
    assert graph(fn(tg, *_graph_inputs(tg)).grad_fn) == expected


@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_graphs_equal_torchs(case):
    torch = pytest.importorskip("torch")
    fn, expected = GRAPHS[case]
    assert graph(fn(torch, *_graph_inputs(torch)).grad_fn) == expected
    assert graph(fn(tg, *_graph_inputs(tg)).grad_fn) == expected


@pytest.mark.parametrize("fn, name", [
    (lambda x, c: F.mse_loss(x, c), "aten::mse_loss"),
    (lambda x, c: tg.lerp(x, c, 0.25), "aten::lerp"),
    (lambda x, c: x.flip(1), "aten::flip"),
    (lambda x, c: x.roll(1, 1), "aten::roll"),
    (lambda x, c: x.diagonal(), "aten::diagonal"),
    (lambda x, c: x.unfold(0, 2, 1), "aten::unfold"),
    (lambda x, c: tg.linalg.vector_norm(x), "aten::linalg_vector_norm"),
])
def test_the_profiler_shows_one_op(fn, name):
    x, c = t64((3, 4)).requires_grad_(), t64((3, 4))
    with tg.profiler.profile() as prof:
        fn(x, c)
    assert [e.name for e in prof.events()] == [name]


# -- values against float64 NumPy -------------------------------------------------------------

def _np_lerp(a, b, w):
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def _np_norm(a, p, axis=None, keepdims=False):
    m = np.abs(a)
    if p == math.inf:
        return m.max(axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return m.min(axis=axis, keepdims=keepdims)
    if p == 0:
        return (m != 0).sum(axis=axis, keepdims=keepdims).astype(a.dtype)
    return (m ** p).sum(axis=axis, keepdims=keepdims) ** (1 / p)


def _np_unfold(a, d, size, step):
    n = (a.shape[d] - size) // step + 1
    windows = [np.take(a, range(i * step, i * step + size), axis=d) for i in range(n)]
    return np.moveaxis(np.stack(windows, axis=d), d + 1, -1)


VALUE_CASES = {
    "mse_mean": (lambda x, y: F.mse_loss(x, y), lambda a, b: ((a - b) ** 2).mean()),
    "mse_sum": (lambda x, y: F.mse_loss(x, y, reduction="sum"),
                lambda a, b: ((a - b) ** 2).sum()),
    "mse_none": (lambda x, y: F.mse_loss(x, y, reduction="none"), lambda a, b: (a - b) ** 2),
    "lerp_low": (lambda x, y: tg.lerp(x, y, 0.3), lambda a, b: _np_lerp(a, b, 0.3)),
    "lerp_high": (lambda x, y: tg.lerp(x, y, 0.8), lambda a, b: _np_lerp(a, b, 0.8)),
    "lerp_tensor": (lambda x, y: tg.lerp(x, y, y.sin()), lambda a, b: _np_lerp(a, b, np.sin(b))),
    "flip": (lambda x, y: x.flip(0, -1), lambda a, b: a[::-1, ::-1]),
    "roll": (lambda x, y: x.roll((1, -5), (0, 1)), lambda a, b: np.roll(a, (1, -5), (0, 1))),
    "roll_flat": (lambda x, y: x.roll(7), lambda a, b: np.roll(a, 7)),
    "diagonal": (lambda x, y: x.diagonal(1, -1, 0), lambda a, b: np.diagonal(a, 1, 1, 0)),
    "unfold": (lambda x, y: x.unfold(-1, 2, 1), lambda a, b: _np_unfold(a, 1, 2, 1)),
    "unfold_gaps": (lambda x, y: x.unfold(0, 1, 2), lambda a, b: _np_unfold(a, 0, 1, 2)),
}
NORM_ORDS = (2, 1, 3, 0.5, 1.5, -1, -0.5, math.inf, -math.inf, 0)


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_values_match_numpy(case, device):
    fn, ref = VALUE_CASES[case]
    a, b = _rng.standard_normal((3, 4)), _rng.standard_normal((3, 4))
    got = fn(tg.tensor(a, device=device), tg.tensor(b, device=device))
    np.testing.assert_allclose(host(got), ref(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("p", NORM_ORDS)
def test_vector_norm_values_match_numpy(p, device):
    a = _rng.standard_normal((3, 4))
    x = tg.tensor(a, device=device)
    np.testing.assert_allclose(host(tg.linalg.vector_norm(x, p)), _np_norm(a, p), rtol=1e-12)
    np.testing.assert_allclose(host(tg.linalg.vector_norm(x, p, -1, True)),
                               _np_norm(a, p, -1, True), rtol=1e-12)


def test_lerp_keeps_pytorchs_two_formulas():
    # exact ends at w = 0 and w = 1, and each formula's own rounding in float32
    a, b = np.float32([1e-3, 3.3, -7.1]), np.float32([1e8, 0.1, 2.9])
    x, e = tg.tensor(a), tg.tensor(b)
    np.testing.assert_array_equal(tg.lerp(x, e, 1.0).numpy(), b)
    np.testing.assert_array_equal(tg.lerp(x, e, 0.0).numpy(), a)
    for w in (0.3, 0.7):
        with np.errstate(all="ignore"):
            expected = _np_lerp(a, b, np.float32(w)).astype(np.float32)
        np.testing.assert_array_equal(tg.lerp(x, e, w).numpy(), expected)
    w = np.float32([0.2, 0.5, 0.9])
    np.testing.assert_array_equal(tg.lerp(x, e, tg.tensor(w)).numpy(), _np_lerp(a, b, w))


def test_empty_and_0d_inputs():
    z = tg.zeros(0, 3, requires_grad=True)
    assert F.mse_loss(z, z.detach(), reduction="sum").item() == 0
    assert math.isnan(F.mse_loss(z, z.detach()).item())
    assert tuple(tg.lerp(z, z.detach(), 0.5).shape) == (0, 3)
    assert tuple(z.flip(0).shape) == (0, 3) and tuple(z.roll(2, 0).shape) == (0, 3)
    assert tuple(z.diagonal().shape) == (0,) and tuple(z.unfold(1, 2, 1).shape) == (0, 2, 2)
    assert tuple(tg.linalg.vector_norm(z, 2, 1).shape) == (0,)
    F.mse_loss(z, z.detach(), reduction="sum").backward()
    assert tuple(z.grad.shape) == (0, 3)
    s = tg.tensor(-2.0, requires_grad=True)
    for y, expected in ((s.flip(()), -2.0), (s.flip(0), -2.0), (s.roll(3), -2.0),
                        (tg.linalg.vector_norm(s, 3), 2.0), (F.mse_loss(s, s * 0), 4.0)):
        assert y.item() == expected and y.requires_grad
    assert s.unfold(0, 1, 1).tolist() == [-2.0]


# -- gradients, second derivatives ------------------------------------------------------------

GRAD_CASES = {
    "mse_mean": (lambda x, y: F.mse_loss(x, y), ((3, 4), (3, 4))),
    "mse_sum": (lambda x, y: F.mse_loss(x, y, reduction="sum"), ((3, 4), (3, 4))),
    "mse_none_broadcast": (lambda x, y: F.mse_loss(x, y, reduction="none"), ((3, 4), (4,))),
    "lerp": (lambda x, y: tg.lerp(x, y, 0.3), ((3, 4), (4,))),
    "lerp_high": (lambda x, y: tg.lerp(x, y, -0.9), ((3, 4), (3, 4))),
    "lerp_tensor": (lambda x, y, w: tg.lerp(x, y, w), ((3, 1), (4,), (3, 4))),
    "lerp_": (lambda x, y: x.clone().lerp_(y, 0.6), ((3, 4), (3, 4))),
    "flip": (lambda x: x.flip(1, 0), ((3, 4),)),
    "roll": (lambda x: x.roll((2, 1), (-1, 0)), ((3, 4),)),
    "roll_flat": (lambda x: x.t().roll(-3), ((3, 4),)),
    "diagonal": (lambda x: x.diagonal(-1), ((2, 4, 3),)),
    "unfold_overlapping": (lambda x: x.unfold(1, 3, 1), ((3, 5),)),
    "unfold_transposed": (lambda x: x.t().unfold(0, 2, 2), ((3, 5),)),
    "norm": (lambda x: x.norm(), ((3, 4),)),
    "norm_p3": (lambda x: tg.linalg.vector_norm(x, 3, 0), ((3, 4),)),
    "norm_p1_5": (lambda x: tg.linalg.vector_norm(x, 1.5, (0, 1), True), ((3, 4),)),
    "norm_p0_5": (lambda x: tg.linalg.vector_norm(x, 0.5, 1), ((3, 4),)),
    "norm_p-1": (lambda x: tg.linalg.vector_norm(x, -1, 1), ((3, 4),)),
    "norm_p1": (lambda x: tg.linalg.vector_norm(x, 1, 1), ((3, 4),)),
    "norm_inf": (lambda x: tg.linalg.vector_norm(x, math.inf, 1), ((3, 4),)),
    "norm_-inf": (lambda x: x.norm(-math.inf, 0, True), ((3, 4),)),
}
SECOND_ORDER = sorted(set(GRAD_CASES) - {"norm_inf", "norm_-inf", "norm_p1"})  # (piecewise
# linear in x: their second derivatives are zero, and finite differences cross the kinks)


def _grad_inputs(case, device):
    shapes = GRAD_CASES[case][1]
    return [t64(s, device, 0.3, 2.0).requires_grad_() if case.startswith("norm") else
            t64(s, device).requires_grad_() for s in shapes]


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_central_differences(case, device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (mse_loss's broadcasting warning)
        assert gradcheck(GRAD_CASES[case][0], _grad_inputs(case, device))


@pytest.mark.parametrize("case", SECOND_ORDER)
def test_second_derivatives(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradgradcheck(GRAD_CASES[case][0], _grad_inputs(case, "cpu"))


@pytest.mark.parametrize("p", (2, 1, 3, 0.5, 1.5, -1, -0.5, math.inf, -math.inf))
def test_norm_gradient_at_zero_is_zero(p, device):
    # PyTorch's subgradient: 0 where the norm is 0 (and where an element is 0, for p < 1)
    x = tg.zeros(3, 4, dtype=tg.float64, device=device, requires_grad=True)
    tg.linalg.vector_norm(x, p).backward()
    np.testing.assert_array_equal(host(x.grad), np.zeros((3, 4)))
    x = tg.tensor([0.0, 1.0, -2.0], dtype=tg.float64, device=device, requires_grad=True)
    tg.linalg.vector_norm(x, p).backward()
    assert x.grad[0].item() == 0 and np.isfinite(host(x.grad)).all()


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_batched_gradients(case):
    # grad(..., is_grads_batched=True): each rule runs once over a batch of gradients
    inputs = _grad_inputs(case, "cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = GRAD_CASES[case][0](*inputs)
        gs = t64((3,) + tuple(out.shape))
        batched = tg.autograd.grad(out, inputs, gs, is_grads_batched=True)
        for i in range(3):
            single = tg.autograd.grad(GRAD_CASES[case][0](*inputs), inputs, gs[i])
            for b, g in zip(batched, single):
                np.testing.assert_allclose(host(b[i]), host(g), rtol=1e-12, atol=1e-12)


def test_norm_dtype_argument():
    x = t64((3, 4)).float().requires_grad_()
    y = tg.linalg.vector_norm(x, 3, 1, dtype=tg.float64)
    assert y.dtype is tg.float64
    np.testing.assert_allclose(host(y), _np_norm(host(x).astype(np.float64), 3, 1), rtol=1e-12)
    y.sum().backward()
    assert x.grad.dtype is tg.float32
    a = host(x).astype(np.float64)
    expected = a * np.abs(a) / _np_norm(a, 3, 1, True) ** 2
    np.testing.assert_allclose(host(x.grad), expected, rtol=1e-6)


def test_mse_loss_gradients_to_input_and_target():
    a, b = _rng.standard_normal((3, 4)), _rng.standard_normal((3, 4))
    x, y = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
    F.mse_loss(x, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (a - b) / a.size, rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), -2 * (a - b) / a.size, rtol=1e-12)


# -- forward AD --------------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(set(GRAD_CASES) - {"lerp_"}))
def test_forward_ad_matches_central_differences(case, device):
    fn = GRAD_CASES[case][0]
    inputs = [x.detach() for x in _grad_inputs(case, device)]
    tangents = [t64(tuple(x.shape), device) for x in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fwAD.dual_level():
            out = fn(*[fwAD.make_dual(x, t) for x, t in zip(inputs, tangents)])
            got = fwAD.unpack_dual(out).tangent
        eps = 1e-6
        with tg.no_grad():
            plus = fn(*[x + eps * t for x, t in zip(inputs, tangents)])
            minus = fn(*[x - eps * t for x, t in zip(inputs, tangents)])
        _, tangent = tg.func.jvp(fn, tuple(inputs), tuple(tangents))
    np.testing.assert_allclose(host(got), (host(plus) - host(minus)) / (2 * eps), atol=1e-6,
                               rtol=1e-5)
    np.testing.assert_allclose(host(tangent), host(got), rtol=1e-12, atol=1e-12)


def test_forward_ad_through_lerp_in_place():
    x, e, t = t64((3, 4)), t64((3, 4)), t64((3, 4))
    with fwAD.dual_level():
        d = fwAD.make_dual(x.clone(), t.clone())  # (the write changes the tangent in place)
        d.lerp_(e, 0.8)
        np.testing.assert_allclose(host(fwAD.unpack_dual(d).tangent), 0.2 * host(t),
                                   rtol=1e-12)


def test_view_tangents_follow_their_own_layout():
    # a tangent laid out unlike its primal still gets its own diagonal and windows
    x = t64((3, 4))
    t = t64((4, 3)).t()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        np.testing.assert_array_equal(host(fwAD.unpack_dual(d.diagonal(1)).tangent),
                                      np.diagonal(host(t), 1))
        np.testing.assert_array_equal(host(fwAD.unpack_dual(d.unfold(1, 2, 2)).tangent),
                                      _np_unfold(host(t), 1, 2, 2))


def test_vmap():
    x = t64((5, 3, 4))
    for fn in (lambda a: a.diagonal(), lambda a: a.flip(0).roll(1, 1),
               lambda a: tg.linalg.vector_norm(a, 3), lambda a: tg.lerp(a, a.cos(), 0.7)):
        out = tg.func.vmap(fn)(x)
        for i in range(5):
            np.testing.assert_allclose(host(out[i]), host(fn(x[i])), rtol=1e-12)


# -- views ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda b: b.diagonal(), lambda b: b.unfold(1, 2, 2)],
                         ids=["diagonal", "unfold"])
def test_views_share_storage_and_history(make, device):
    x = t64((4, 4), device).requires_grad_()
    base = x.clone()
    v = make(base)
    assert v._base is base and v.data_ptr() == base.data_ptr() + 0 * v.storage_offset()
    version = base._version
    v.mul_(3)  # in place through the view: the base's history becomes CopySlices
    assert base._version == version + 1 and v._version == base._version
    assert type(base.grad_fn).__name__ == "CopySlices"
    expected = np.ones((4, 4))
    mask = np.zeros((4, 4), bool)
    probe = make(tg.tensor(np.arange(16.0).reshape(4, 4)))
    mask.flat[host(probe).astype(int).ravel()] = True
    expected[mask] = 3
    base.sum().backward()
    np.testing.assert_array_equal(host(x.grad), expected)


def test_flip_and_roll_always_copy(device):
    # (also where nothing moves: a flip of size-1 dims, a roll by a multiple of the size)
    x = tg.ones(1, 3, device=device)
    one = tg.ones((), device=device)
    for y in (x.flip(0), x.roll(0, 1), x.roll(3, 1), x.roll(0), one.flip(())):
        y.add_(1)
    assert one.item() == 1
    np.testing.assert_array_equal(host(x), np.ones((1, 3)))


def test_unfold_overlapping_windows_add_their_gradients():
    x = tg.zeros(5, dtype=tg.float64, requires_grad=True)
    x.unfold(0, 3, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 2, 3, 2, 1])


# -- dtypes, complex, errors ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tg.float32, tg.float16, tg.bfloat16])
def test_low_precision_values_and_gradients(dtype):
    a, b = _rng.standard_normal((3, 4)) * 2, _rng.standard_normal((3, 4)) * 2
    for fn in (lambda x, y: F.mse_loss(x, y), lambda x, y: tg.lerp(x, y, 0.7),
               lambda x, y: tg.linalg.vector_norm(x, 3, 1), lambda x, y: x.diagonal(),
               lambda x, y: x.roll(1, 1).flip(0)):
        ref = fn(tg.tensor(a, requires_grad=True), tg.tensor(b))
        x = tg.tensor(a, dtype=dtype, requires_grad=True)
        out = fn(x, tg.tensor(b, dtype=dtype))
        assert out.dtype is dtype
        np.testing.assert_allclose(host(out.float()), host(ref), rtol=2e-2, atol=2e-2)
        out.float().sum().backward()
        assert x.grad.dtype is dtype


def test_complex_gradients():
    a = _rng.standard_normal((3, 4)) + 1j * _rng.standard_normal((3, 4))
    b = _rng.standard_normal((3, 4)) + 1j * _rng.standard_normal((3, 4))
    x = tg.tensor(a, requires_grad=True)
    tg.linalg.vector_norm(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), a / np.linalg.norm(a), rtol=1e-12)
    x.grad = None
    (x.flip(0).roll(1, 1).diagonal().abs() ** 2).sum().backward()
    expected = np.zeros((3, 4), complex)
    for i in range(3):  # element i of the diagonal: rolled column i, flipped row i
        expected[2 - i, (i - 1) % 4] = 2 * a[2 - i, (i - 1) % 4]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
    x.grad = None
    w = 0.3 + 0.2j
    (tg.lerp(x, tg.tensor(b), tg.tensor(w, dtype=tg.complex128)).abs() ** 2).sum().backward()
    y = _np_lerp(a, b, w)
    np.testing.assert_allclose(x.grad.numpy(), 2 * y * np.conj(1 - w), rtol=1e-12)


def test_errors_and_warnings():
    x = tg.zeros(2, 3)
    with pytest.warns(UserWarning, match="target size"):
        F.mse_loss(x, tg.zeros(3))
    with pytest.raises(NotImplementedError, match='"mse_cpu" not implemented for \'Long\''):
        F.mse_loss(tg.tensor([1, 2]), tg.tensor([2, 3]))
    with pytest.raises(RuntimeError, match="must match the size"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F.mse_loss(x, tg.zeros(4))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        tg.zeros(3).lerp_(tg.zeros(2, 3), 0.5)
    with pytest.raises(NotImplementedError, match='"lerp" not implemented'):
        tg.lerp(tg.tensor([1]), tg.tensor([2]), 0.5)
    with pytest.raises(RuntimeError, match="multiple times"):
        x.flip(0, 0)
    with pytest.raises(RuntimeError, match="must align"):
        x.roll((1, 2), 0)
    with pytest.raises(RuntimeError, match="cannot be identical"):
        x.diagonal(0, 1, 1)
    with pytest.raises(RuntimeError, match="maximum size"):
        x.unfold(1, 4, 1)
    with pytest.raises(RuntimeError, match="does not have an identity"):
        tg.linalg.vector_norm(tg.zeros(0), math.inf)


# -- against torch -------------------------------------------------------------------------------

TORCH_CASES = {
    "mse_mean": lambda m, x, y, w: m.nn.functional.mse_loss(x, y),
    "mse_none": lambda m, x, y, w: m.nn.functional.mse_loss(x, y, reduction="none"),
    "mse_sum_broadcast": lambda m, x, y, w: m.nn.functional.mse_loss(x, y[0], reduction="sum"),
    "lerp": lambda m, x, y, w: m.lerp(x, y, 0.4),
    "lerp_high": lambda m, x, y, w: m.lerp(x, y, 1.3),
    "lerp_tensor": lambda m, x, y, w: m.lerp(x, y, w),
    "flip": lambda m, x, y, w: x.flip(-1, 0) * y,
    "roll": lambda m, x, y, w: x.roll((3, -1), (1, 0)) * y,
    "diagonal": lambda m, x, y, w: x.diagonal(-1, 1, 0),
    "unfold": lambda m, x, y, w: x.unfold(-1, 3, 1),
    **{f"norm_{p}": (lambda p: lambda m, x, y, w: m.linalg.vector_norm(x, p, -1))(p)
       for p in (2, 1, 3, 0.5, 1.5, -1, math.inf, -math.inf)},
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", sorted(TORCH_CASES))
def test_values_and_gradients_equal_torchs(case, dtype):
    torch = pytest.importorskip("torch")
    fn = TORCH_CASES[case]
    arrays = [_rng.standard_normal((3, 4)) for _ in range(2)] + [_rng.uniform(-1, 1, (3, 4))]
    arrays[0][0, 0] = 0.0  # (a zero element: the norms' singular points)
    results = []
    for m in (torch, tg):
        inputs = [m.tensor(a, dtype=getattr(m, dtype), requires_grad=True) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(m, *inputs)
        grads = m.autograd.grad(out.sum(), inputs, allow_unused=True)
        results.append([out.detach().numpy()] + [None if g is None else g.numpy()
                                                 for g in grads])
    tol = 1e-12 if dtype == "float64" else 1e-5
    for ours, theirs in zip(results[1], results[0]):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_half_and_complex_values_equal_torchs():
    torch = pytest.importorskip("torch")
    a, b = _rng.standard_normal((3, 4)) * 3, _rng.standard_normal((3, 4)) * 3
    for dt in ("float16", "bfloat16"):
        # (lerp rounds after each step in half, where PyTorch rounds once: within 2 ulps)
        for fn in (lambda m, x, y: m.lerp(x, y, 0.3), lambda m, x, y: m.lerp(x, y, 0.6),
                   lambda m, x, y: m.linalg.vector_norm(x, 3),
                   lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction="none")):
            ours, theirs = (fn(m, m.tensor(a, dtype=getattr(m, dt)),
                               m.tensor(b, dtype=getattr(m, dt))).float().numpy()
                            for m in (tg, torch))
            np.testing.assert_allclose(ours, theirs, rtol=2 ** -6, atol=2 ** -6)
    z = a + 1j * b
    for p in (2, 1, 3, math.inf):
        grads = []
        for m in (torch, tg):
            x = m.tensor(z, requires_grad=True)
            m.linalg.vector_norm(x, p, 0).sum().backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


# -- basic indexing: PyTorch's chain of views (Note [Basic indexing as PyTorch's chain of
# views], autograd/ops/views.py) ----------------------------------------------------------------

def _chain(t) -> list:
    names, fn = [], t.grad_fn
    while fn is not None and type(fn).__name__ != "AccumulateGrad":
        names.append(type(fn).__name__)
        fn = fn.next_functions[0][0]
    return names


@pytest.mark.parametrize("index, chain", [
    ((slice(None),), ["AliasBackward0"]),
    ((Ellipsis,), ["AliasBackward0"]),
    ((slice(0, 10),), ["AliasBackward0"]),  # (covers the whole dim: no slice)
    ((0,), ["SelectBackward0"]),
    ((slice(None), 1), ["SelectBackward0"]),
    ((None,), ["UnsqueezeBackward0"]),
    ((0, slice(1, 3)), ["SliceBackward0", "SelectBackward0"]),
    ((slice(1, None), slice(None, None, 2)), ["SliceBackward0", "SliceBackward0"]),
    ((slice(None), None, 1), ["SelectBackward0", "UnsqueezeBackward0"]),
    ((1, None, slice(2, 4), Ellipsis, 0),
     ["SelectBackward0", "SliceBackward0", "UnsqueezeBackward0", "SelectBackward0"]),
])
def test_basic_indexing_records_pytorchs_chain(device, index, chain):
    x0 = np.arange(60.0).reshape(3, 4, 5)
    x = tg.tensor(x0, dtype=tg.float64, device=device, requires_grad=True)
    y = x[index]
    assert _chain(y) == chain
    assert y._base is x  # one view of x, however many steps
    w = np.random.default_rng(0).standard_normal(tuple(y.shape))
    (y * tg.tensor(w, device=device)).sum().backward()
    expected = np.zeros_like(x0)
    np.add.at(expected, index, w.reshape(x0[index].shape))
    np.testing.assert_array_equal(y.detach().cpu().numpy(), x0[index])
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expected)


def test_chained_index_saved_values_and_writes():
    x = tg.zeros(3, 4, 5, requires_grad=True).clone()
    y = x[0, 1:3]
    assert (y.grad_fn._saved_dim, y.grad_fn._saved_start, y.grad_fn._saved_end) == (0, 1, 3)
    inner = y.grad_fn.next_functions[0][0]
    assert (inner._saved_dim, inner._saved_index) == (0, 0)
    y.add_(1)  # a write through the chained view reaches the base
    assert float(x.sum()) == 10.0 and type(x.grad_fn).__name__ == "CopySlices"
