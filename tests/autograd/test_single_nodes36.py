"""Ops PyTorch records as one node, recorded here as one node too: aminmax, rot90, diag_embed,
trace, fmax/fmin, dist, addcmul/addcdiv, masked_scatter and put (and their in-place forms).
Each is checked for its grad_fn name, edges and saved values, its values against float64
NumPy, its gradients against finite differences (to second order, through create_graph), its
forward-mode tangents against its reverse-mode gradient, and its errors; and against PyTorch
where it is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.autograd.forward_ad as fwAD
from tests.helpers import assert_grads_match, host, second_order

NAN, INF = math.nan, math.inf
_rng = np.random.default_rng(36)
MASK = _rng.random((3, 4)) > 0.5
INDEX = np.array([[0, 5], [-1, 3]])
DUPS = np.array([0, 5, 5, -12])


def t(shape, lo=-2.0, hi=2.0, device="cpu") -> tg.Tensor:
    return tg.tensor(_rng.uniform(lo, hi, shape), dtype=tg.float64, device=device)


def node_name(y) -> str:
    return type(y.grad_fn).__name__


# Each case: (name, node, function of tensors, input shapes (low, high) ...). The functions
# take float64 tensors and return one tensor (aminmax: both outputs, summed with weights).
CASES = [
    ("aminmax", "AminmaxBackward0",
     lambda x: (lambda r: r.min * 2 + r.max)(tg.aminmax(x, dim=1)), [((3, 4), -2, 2)]),
    ("aminmax_all", "AminmaxBackward0",
     lambda x: (lambda r: r.min - r.max * 3)(tg.aminmax(x, keepdim=True)), [((3, 4), -2, 2)]),
    ("rot90", "Rot90Backward0", lambda x: tg.rot90(x, 1, (0, 2)), [((2, 3, 4), -2, 2)]),
    ("rot90_k3", "Rot90Backward0", lambda x: tg.rot90(x, -1, [-1, 0]), [((2, 3), -2, 2)]),
    ("rot90_k2", "Rot90Backward0", lambda x: tg.rot90(x, 2), [((2, 3), -2, 2)]),
    ("rot90_k0", "Rot90Backward0", lambda x: tg.rot90(x, 4), [((2, 3), -2, 2)]),
    ("diag_embed", "DiagEmbedBackward0", lambda x: tg.diag_embed(x, 1, 0, 2),
     [((2, 3), -2, 2)]),
    ("diag_embed_neg", "DiagEmbedBackward0", lambda x: tg.diag_embed(x, -2),
     [((2, 3), -2, 2)]),
    ("trace", "TraceBackward0", tg.trace, [((3, 4), -2, 2)]),
    ("trace_tall", "TraceBackward0", tg.trace, [((4, 2), -2, 2)]),
    ("fmax", "FmaxBackward0", tg.fmax, [((3, 4), -2, 2), ((4,), -2, 2)]),
    ("fmin", "FminBackward0", tg.fmin, [((3, 1), -2, 2), ((4,), -2, 2)]),
    ("dist", "DistBackward0", tg.dist, [((3, 4), -2, 2), ((4,), -2, 2)]),
    ("dist_p1", "DistBackward0", lambda a, b: tg.dist(a, b, 1),
     [((3, 4), -2, 2), ((3, 4), -2, 2)]),
    ("dist_p3", "DistBackward0", lambda a, b: tg.dist(a, b, 3),
     [((3, 4), -2, 2), ((3, 4), -2, 2)]),
    ("dist_p05", "DistBackward0", lambda a, b: tg.dist(a, b, 0.5),
     [((3, 4), -2, 2), ((3, 4), -2, 2)]),
    ("dist_p25", "DistBackward0", lambda a, b: tg.dist(a, b, 2.5),
     [((3, 4), -2, 2), ((3, 1), -2, 2)]),
    ("dist_inf", "DistBackward0", lambda a, b: tg.dist(a, b, INF),
     [((3, 4), -2, 2), ((3, 4), -2, 2)]),
    ("dist_ninf", "DistBackward0", lambda a, b: tg.dist(a, b, -INF),
     [((3, 4), -2, 2), ((3, 4), -2, 2)]),
    ("addcmul", "AddcmulBackward0", lambda a, b, c: tg.addcmul(a, b, c, value=-0.7),
     [((4,), -2, 2), ((3, 1), -2, 2), ((3, 4), -2, 2)]),
    ("addcdiv", "AddcdivBackward0", lambda a, b, c: tg.addcdiv(a, b, c, value=1.3),
     [((4,), -2, 2), ((3, 1), -2, 2), ((3, 4), 0.5, 2)]),
    ("addcmul_", "AddcmulBackward0", lambda a, b, c: (a * 1).addcmul_(b, c, value=2),
     [((3, 4), -2, 2), ((3, 1), -2, 2), ((4,), -2, 2)]),
    ("addcdiv_", "AddcdivBackward0", lambda a, b, c: (a * 1).addcdiv_(b, c),
     [((3, 4), -2, 2), ((3, 1), -2, 2), ((4,), 0.5, 2)]),
    ("masked_scatter", "MaskedScatterBackward0",
     lambda x, s: tg.masked_scatter(x, tg.tensor(MASK, device=x.device), s),
     [((3, 4), -2, 2), ((14,), -2, 2)]),
    ("masked_scatter_bcast", "MaskedScatterBackward0",
     lambda x, s: tg.masked_scatter(x, tg.tensor(MASK, device=x.device), s),
     [((4,), -2, 2), ((3, 5), -2, 2)]),
    ("masked_scatter_", "MaskedScatterBackward0",
     lambda x, s: (x * 1).masked_scatter_(tg.tensor(MASK, device=x.device), s),
     [((3, 4), -2, 2), ((14,), -2, 2)]),
    ("put", "PutBackward0", lambda x, s: tg.put(x, tg.tensor(INDEX, device=x.device), s),
     [((3, 4), -2, 2), ((2, 2), -2, 2)]),
    ("put_acc", "PutBackward0",
     lambda x, s: x.put(tg.tensor(DUPS, device=x.device), s, accumulate=True),
     [((3, 4), -2, 2), ((4,), -2, 2)]),
    ("put_", "PutBackward0",
     lambda x, s: (x * 1).put_(tg.tensor(INDEX, device=x.device), s),
     [((3, 4), -2, 2), ((2, 2), -2, 2)]),
    ("put_acc_", "PutBackward0",
     lambda x, s: (x * 1).put_(tg.tensor(DUPS, device=x.device), s, True),
     [((3, 4), -2, 2), ((4,), -2, 2)]),
]
IDS = [c[0] for c in CASES]


def inputs_of(case, device="cpu"):
    return [t(shape, lo, hi, device) for shape, lo, hi in case[3]]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_one_node_with_an_edge_per_input(case):
    name, node, fn, _ = case
    xs = [x.requires_grad_() for x in inputs_of(case)]
    y = fn(*xs)
    if name.startswith("aminmax"):  # (the weighted sum of the two outputs: its node's input)
        y = tg.aminmax(xs[0], dim=1).min
    elif name.endswith("_"):  # in place on x * 1: the node's first edge is MulBackward0's
        assert node_name(y) == node
        assert len(y.grad_fn.next_functions) == len(xs)
        return
    assert node_name(y) == node
    edges = y.grad_fn.next_functions
    assert len(edges) == len(xs)
    # one node: its edges lead straight to the leaves
    assert [type(f).__name__ for f, _ in edges] == ["AccumulateGrad"] * len(xs)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_match_finite_differences(case):
    xs = inputs_of(case)
    w = _rng.uniform(0.5, 1.5, tuple(case[2](*xs).shape))
    assert_grads_match(case[2], xs, grad_output=w)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_second_derivatives_through_create_graph(case):
    fn = case[2]
    # (a square makes the first derivative depend on the inputs for the linear ops too)
    second_order(lambda *xs: fn(*xs) * fn(*xs), inputs_of(case))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_ad_tangent_is_the_transposed_gradient(case):
    """<J t, u> == <t, J^T u>: the jvp against the vjp (itself checked above)."""
    fn, xs = case[2], inputs_of(case)
    tans = [t(tuple(x.shape)) for x in xs]
    with fwAD.dual_level():
        y = fn(*[fwAD.make_dual(x, tn) for x, tn in zip(xs, tans)])
        jt = fwAD.unpack_dual(y).tangent
    xs = [x.requires_grad_() for x in xs]
    y = fn(*xs)
    u = t(tuple(y.shape))
    gs = tg.autograd.grad(y, xs, u)
    lhs = float((jt * u).sum())
    rhs = sum(float((tn * g).sum()) for tn, g in zip(tans, gs))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("case", [c for c in CASES if not c[0].endswith("_")], ids=lambda c: c[0])
def test_jacfwd_agrees_with_jacrev(case):
    """Batched tangents (jacfwd) through the node's jvp, against its vjp (jacrev)."""
    from tritongrad.func import jacfwd, jacrev
    xs = inputs_of(case)
    argnums = tuple(range(len(xs)))
    for a, b in zip(jacfwd(case[2], argnums)(*xs), jacrev(case[2], argnums)(*xs)):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-12, atol=1e-12)


def test_put_into_an_empty_tensor():
    assert tg.put(tg.zeros(0), tg.zeros(0, dtype=tg.int64), tg.zeros(0)).shape == (0,)
    with pytest.raises(IndexError, match=r"^put_\(\): Tried to put elements into an empty"):
        tg.put(tg.zeros(0), tg.tensor([0]), tg.zeros(1))
    with pytest.raises(IndexError, match="^out of range: tried to access index -4 on a tensor "
                                         "of 3 elements"):
        tg.put(tg.zeros(3), tg.tensor([-4]), tg.zeros(1))


# -- values against NumPy -----------------------------------------------------------------------

def test_aminmax_values_ties_and_nan():
    a = np.array([[1., 3., 3.], [1., 0., 3.], [2., NAN, 0.]])
    x = tg.tensor(a, requires_grad=True)
    lo, hi = tg.aminmax(x, dim=1)
    np.testing.assert_array_equal(host(lo), [1., 0., NAN])
    np.testing.assert_array_equal(host(hi), [3., 3., NAN])
    assert lo.grad_fn is hi.grad_fn
    (lo.sum() + 2 * hi.sum()).backward()
    # ties share a gradient evenly; a NaN extreme gives NaN, as amin's and amax's
    np.testing.assert_array_equal(host(x.grad)[:2], [[1., 1., 1.], [0., 1., 2.]])
    assert np.isnan(host(x.grad)[2]).all()
    lo, hi = tg.aminmax(tg.tensor([[4, -1], [2, 9]]), keepdim=True)
    assert lo.tolist() == [[-1]] and hi.tolist() == [[9]] and lo.dtype is tg.int64
    lo, hi = tg.aminmax(tg.tensor(5.), dim=0)
    assert lo.item() == hi.item() == 5.0 and lo.shape == ()


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 3, 6])
def test_rot90_values(k):
    a = np.arange(24.).reshape(2, 3, 4)
    for dims in ((0, 1), (2, 0), (-1, -2)):
        np.testing.assert_array_equal(host(tg.rot90(tg.tensor(a), k, dims)),
                                      np.rot90(a, k, dims))
    # PyTorch's layout: a flip, then a transposed view (k odd); a copy otherwise
    y = tg.rot90(tg.tensor(a[0]), k)
    assert y.is_contiguous() == (k % 2 == 0)


@pytest.mark.parametrize("offset,d1,d2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0), (3, 1, 0)])
def test_diag_embed_values(offset, d1, d2):
    a = np.arange(1., 7.).reshape(2, 3)
    m = 3 + abs(offset)
    planes = np.zeros((2, m, m))
    for b in range(2):
        planes[b] = np.diag(a[b], offset)
    ref = np.moveaxis(planes, (1, 2), (d1 % 3, d2 % 3))
    y = tg.diag_embed(tg.tensor(a), offset, d1, d2)
    np.testing.assert_array_equal(host(y), ref)
    assert y.is_contiguous()
    assert tg.diag_embed(tg.tensor([True, False])).tolist() == [[True, False], [False, False]]
    assert tuple(tg.diag_embed(tg.zeros(2, 0)).shape) == (2, 0, 0)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (0, 3), (1, 1)])
def test_trace_values_and_gradient(shape):
    a = _rng.uniform(-2, 2, shape)
    x = tg.tensor(a, requires_grad=True)
    y = tg.trace(x)
    assert y.item() == pytest.approx(np.trace(a), abs=1e-12)
    y.backward()
    np.testing.assert_array_equal(host(x.grad), np.eye(*shape))
    z = tg.trace(tg.tensor(np.arange(9).reshape(3, 3), dtype=tg.int8))
    assert z.dtype is tg.int64 and z.item() == 12  # (integers sum in int64, as PyTorch)


def test_fmax_fmin_values_nan_and_ties():
    a = np.array([NAN, 1., NAN, 2., 2., -1.])
    b = np.array([1., NAN, NAN, 2., 3., -4.])
    for fn, ref in ((tg.fmax, np.fmax), (tg.fmin, np.fmin)):
        x, y = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
        r = fn(x, y)
        np.testing.assert_array_equal(host(r), ref(a, b))
        r.backward(tg.tensor([1., 2., 3., 4., 5., 6.]))
        # input gets g where it is chosen (a tie too, and where other is NaN); other elsewhere
        to_x = (ref is np.fmax and a >= b) | (ref is np.fmin and a <= b) | np.isnan(b)
        g = np.arange(1., 7.)
        np.testing.assert_array_equal(host(x.grad), np.where(to_x, g, 0))
        np.testing.assert_array_equal(host(y.grad), np.where(to_x, 0, g))
    assert tg.fmax(tg.tensor([1, 5]), tg.tensor([2., 3.])).tolist() == [2.0, 5.0]
    assert tg.fmin(tg.tensor([True, False]), tg.tensor([True, True])).dtype is tg.bool
    assert tg.fmax(tg.tensor([1, 2], dtype=tg.int32), tg.tensor([3, 0])).dtype is tg.int64


@pytest.mark.parametrize("p", [2, 1, 0, 3, 0.5, 2.5, INF, -INF])
def test_dist_values(p):
    a, b = _rng.uniform(-2, 2, (3, 4)), _rng.uniform(-2, 2, (4,))
    b[1] = a[0, 1]  # (one difference of 0: p = 0 counts it out)
    d = np.abs(a - b).ravel()
    ref = (np.count_nonzero(d) if p == 0 else d.max() if p == INF else d.min() if p == -INF
           else (d ** p).sum() ** (1 / p))
    y = tg.dist(tg.tensor(a), tg.tensor(b), p)
    assert y.shape == () and y.item() == pytest.approx(ref, rel=1e-12)
    assert y.grad_fn is None


def test_dist_gradient_at_zero_and_p0():
    x = tg.tensor([1., 2.], requires_grad=True)
    y = tg.tensor([1., 2.], requires_grad=True)
    for p in (2, 1, 3, INF):  # the subgradient 0 where the norm is 0, as PyTorch's
        gx, gy = tg.autograd.grad(tg.dist(x, y, p), (x, y))
        assert gx.tolist() == [0., 0.] and gy.tolist() == [0., 0.]
    # p = 0 is a count: no gradient (PyTorch's backward raises there)
    r = tg.dist(x, y * 2, 0)
    assert r.item() == 2 and r.grad_fn._saved_p == 0
    assert tg.autograd.grad(r, (x,), allow_unused=True) == (None,)


def test_dist_promotes_and_takes_complex_and_a_tensor_p():
    r = tg.dist(tg.tensor([1., 2.]), tg.tensor([4., 6.], dtype=tg.float64))
    assert r.dtype is tg.float64 and r.item() == 5.0
    r = tg.dist(tg.tensor([3j, 0]), tg.tensor([0, 4 + 0j]))
    assert r.dtype is tg.float32 and r.item() == pytest.approx(5.0)
    assert tg.dist(tg.tensor([1., 2.]), tg.tensor([4., 6.]), tg.tensor(1.)).item() == 7.0
    assert tg.dist(tg.tensor([1., 2.], dtype=tg.float16),
                   tg.tensor([4., 6.], dtype=tg.float16)).dtype is tg.float16


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_values_and_dtypes(op):
    a, b, c = _rng.uniform(-2, 2, (4,)), _rng.uniform(-2, 2, (3, 1)), _rng.uniform(.5, 2, (4,))
    ref = a + 0.5 * (b * c if op == "addcmul" else b / c)
    y = getattr(tg, op)(tg.tensor(a), tg.tensor(b), tg.tensor(c), value=0.5)
    np.testing.assert_allclose(host(y), ref, rtol=1e-14)
    y = getattr(tg, op)(tg.tensor(a, dtype=tg.float32), tg.tensor(b), tg.tensor(c))
    assert y.dtype is tg.float64
    y = getattr(tg, op)(tg.tensor([1, 2]), tg.tensor([3., 4.]), tg.tensor([2., 2.]), value=2)
    assert y.dtype is tg.float32
    z = tg.tensor(np.broadcast_to(a, (3, 4)).copy()).requires_grad_()
    w = z * 1
    getattr(w, op + "_")(tg.tensor(b), tg.tensor(c), value=0.5)
    np.testing.assert_allclose(host(w), ref, rtol=1e-14)
    assert node_name(w) == ("AddcmulBackward0" if op == "addcmul" else "AddcdivBackward0")
    assert w.grad_fn._saved_value == 0.5


def test_addcmul_integers_truncate_value():
    i = tg.tensor([1, 2, 3])
    # PyTorch converts the Scalar to the integer dtype: 0.5 -> 0, 1.7 -> 1, -1.7 -> -1
    assert tg.addcmul(i, i, i, value=0.5).tolist() == [1, 2, 3]
    assert tg.addcmul(i, i, i, value=1.7).tolist() == [2, 6, 12]
    assert tg.addcmul(i, i, i, value=-1.7).tolist() == [0, -2, -6]
    assert tg.addcmul(i, i, i, value=True).tolist() == [2, 6, 12]


def test_addc_complex_value():
    a, b, c = (tg.tensor(_rng.uniform(-1, 1, 3) + 1j * _rng.uniform(-1, 1, 3),
                         requires_grad=True) for _ in range(3))
    y = tg.addcmul(a, b, c, value=1 + 2j)
    ref = host(a) + (1 + 2j) * host(b) * host(c)
    np.testing.assert_allclose(host(y), ref, rtol=1e-6)
    g = tg.tensor(_rng.uniform(-1, 1, 3) + 0j, dtype=y.dtype)
    ga, gb, gc = tg.autograd.grad(y, (a, b, c), g)
    # PyTorch's rule: grad * conj(value * other factor)
    np.testing.assert_allclose(host(gb), host(g) * np.conj((1 + 2j) * host(c)), rtol=1e-6)
    np.testing.assert_allclose(host(gc), host(g) * np.conj((1 + 2j) * host(b)), rtol=1e-6)
    np.testing.assert_allclose(host(ga), host(g), rtol=1e-6)


def test_masked_scatter_values_and_gradients():
    x = tg.tensor(np.arange(12.).reshape(3, 4), requires_grad=True)
    s = tg.tensor(np.arange(100., 120.).reshape(4, 5), requires_grad=True)
    y = tg.masked_scatter(x, tg.tensor(MASK), s)
    ref = np.arange(12.).reshape(3, 4)
    n = int(MASK.sum())
    ref[MASK] = np.arange(100., 100 + n)
    np.testing.assert_array_equal(host(y), ref)
    assert node_name(y) == "MaskedScatterBackward0"
    assert y.grad_fn._saved_source_sym_sizes == (4, 5)
    assert y.grad_fn._saved_mask.tolist() == MASK.tolist()
    g = np.arange(1., 13.).reshape(3, 4)
    y.backward(tg.tensor(g))
    np.testing.assert_array_equal(host(x.grad), np.where(MASK, 0, g))
    gs = np.zeros(20)
    gs[:n] = g[MASK]  # the masked places in order, zeros for the unread rest
    np.testing.assert_array_equal(host(s.grad), gs.reshape(4, 5))
    # a broadcast input's gradient is summed back to its shape
    x1 = tg.tensor(np.arange(4.), requires_grad=True)
    tg.masked_scatter(x1, tg.tensor(MASK), s.detach()).backward(tg.tensor(g))
    np.testing.assert_array_equal(host(x1.grad), np.where(MASK, 0, g).sum(0))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_values_and_gradients(accumulate):
    a = np.arange(12.).reshape(3, 4)
    x = tg.tensor(a, requires_grad=True)
    s = tg.tensor([[10., 20.], [30., 40.]], dtype=tg.float64, requires_grad=True)
    y = tg.put(x, tg.tensor(INDEX), s, accumulate)
    ref = a.copy().ravel()
    flat = INDEX.ravel() % 12
    if accumulate:
        np.add.at(ref, flat, [10., 20., 30., 40.])
    else:
        ref[flat] = [10., 20., 30., 40.]
    np.testing.assert_array_equal(host(y), ref.reshape(3, 4))
    assert y.grad_fn._saved_accumulate is accumulate
    assert y.grad_fn._saved_index.tolist() == (INDEX % 12).tolist()
    g = np.arange(1., 13.).reshape(3, 4)
    y.backward(tg.tensor(g))
    gx = g.copy().ravel()
    if not accumulate:
        gx[flat] = 0
    np.testing.assert_array_equal(host(x.grad), gx.reshape(3, 4))
    np.testing.assert_array_equal(host(s.grad), g.ravel()[flat].reshape(2, 2))


def test_put_in_place_on_a_transposed_tensor():
    a = np.arange(12.).reshape(3, 4)
    x = tg.tensor(a).t().contiguous().t()  # (a column-major tensor)
    x.put_(tg.tensor([1, 7]), tg.tensor([-1., -2.], dtype=tg.float64))
    ref = a.copy().ravel()
    ref[[1, 7]] = [-1., -2.]
    np.testing.assert_array_equal(host(x), ref.reshape(3, 4))
    y = tg.put(tg.tensor(a).t(), tg.tensor([1]), tg.tensor([9.], dtype=tg.float64))
    assert y.tolist()[0][1] == 9.0


def test_saved_values_as_pytorch_names_them():
    x = t((2, 3, 4)).requires_grad_()
    f = tg.rot90(x, 3, (2, 0)).grad_fn
    assert (f._saved_k, f._saved_dims) == (3, (2, 0))
    f = tg.diag_embed(x, 1, 0, 2).grad_fn
    assert (f._saved_offset, f._saved_dim1, f._saved_dim2) == (1, 0, 2)
    m = x[0]
    assert tg.trace(m).grad_fn._saved_self_sym_sizes == (3, 4)
    f = tg.aminmax(x, dim=1).min.grad_fn
    assert (f._saved_dim, f._saved_keepdim) == (1, False)
    assert tg.aminmax(x).min.grad_fn._saved_dim is None
    lo, hi = tg.aminmax(m, dim=0)
    assert np.array_equal(host(f._saved_self), host(x))
    assert np.array_equal(host(lo.grad_fn._saved_min), host(lo))
    assert np.array_equal(host(lo.grad_fn._saved_max), host(hi))
    y = t((3,)).requires_grad_()
    f = tg.fmax(m[0, :3], y).grad_fn
    assert np.array_equal(host(f._saved_other), host(y))
    d = tg.dist(m[0, :3], y, 3)
    assert d.grad_fn._saved_p == 3.0
    assert np.array_equal(host(d.grad_fn._saved_result), host(d))
    f = tg.addcdiv(y, y * 2, y * 3, value=4).grad_fn
    assert f._saved_value == 4
    assert np.array_equal(host(f._saved_tensor2), host(y * 3))


def test_addcmul_saves_a_factor_only_for_the_other_gradient():
    a, b = t((3,)).requires_grad_(), t((3,))
    f = tg.addcmul(a, b, t((3,))).grad_fn
    assert f._saved_tensor1 is None and f._saved_tensor2 is None  # (neither factor needs one)
    f = tg.addcmul(a, b.requires_grad_(), t((3,))).grad_fn
    assert f._saved_tensor1 is None and f._saved_tensor2 is not None


def test_a_hook_on_aminmax_sees_both_gradients():
    x = t((3, 4)).requires_grad_()
    lo, hi = tg.aminmax(x, dim=1)
    seen = []
    lo.grad_fn.register_prehook(lambda grads: seen.append(len(grads)))
    (lo.sum() + hi.sum()).backward()
    assert seen == [2]


# -- errors, as PyTorch's -----------------------------------------------------------------------

@pytest.mark.parametrize("call,err,start", [
    (lambda: tg.aminmax(tg.tensor([1j])), NotImplementedError, '"aminmax_cpu" not implemented'),
    (lambda: tg.aminmax(tg.zeros(0, 3)), RuntimeError, "aminmax(): cannot compute aminmax"),
    (lambda: tg.aminmax(tg.zeros(0, 3), dim=0), IndexError,
     "aminmax: Expected reduction dim 0 to have non-zero size."),
    (lambda: tg.rot90(tg.zeros(3)), RuntimeError, "expected total dims >= 2"),
    (lambda: tg.rot90(tg.zeros(2, 3), 1, (1, 1)), RuntimeError,
     "expected rotation dims to be different"),
    (lambda: tg.rot90(tg.zeros(2, 3), 1, (0, 1, 2)), RuntimeError,
     "expected total rotation dims == 2"),
    (lambda: tg.diag_embed(tg.tensor(1.)), IndexError, "Dimension out of range"),
    (lambda: tg.diag_embed(tg.zeros(2, 3), 0, 1, 1), RuntimeError,
     "diagonal dimensions cannot be identical"),
    (lambda: tg.trace(tg.zeros(2, 2, 2)), RuntimeError, "trace: expected a matrix"),
    (lambda: tg.trace(tg.tensor([[True]])), NotImplementedError, '"trace" not implemented'),
    (lambda: tg.fmax(tg.tensor([1j]), tg.tensor([1j])), RuntimeError,
     "fmax not implemented for complex tensors."),
    (lambda: tg.fmin(tg.zeros(2), 1.0), TypeError, "fmin(): argument 'other'"),
    (lambda: tg.dist(tg.tensor([1, 2]), tg.tensor([2, 3])), RuntimeError,
     "norm(): input dtype should be either floating point or complex. Got Long instead."),
    (lambda: tg.addcmul(tg.tensor([True]), tg.tensor([True]), tg.tensor([True])),
     NotImplementedError, '"addcmul_cpu_out" not implemented'),
    (lambda: tg.addcdiv(tg.zeros(2), tg.tensor([1, 2]), tg.tensor([1, 2])), RuntimeError,
     "Integer division with addcdiv is no longer supported"),
    (lambda: tg.addcmul(tg.tensor([1, 2]), tg.tensor([1, 2]), tg.tensor([1, 2]), value=1j),
     RuntimeError, "value cannot be converted to type int64_t without overflow"),
    (lambda: tg.addcmul(tg.zeros(2), tg.zeros(2), tg.zeros(2), value="a"), TypeError,
     "addcmul(): argument 'value' must be Number"),
    (lambda: tg.tensor([1, 2]).addcmul_(tg.zeros(2), tg.zeros(2)), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    (lambda: tg.zeros(4).addcmul_(tg.zeros(3, 4), tg.zeros(4)), RuntimeError,
     "output with shape [4] doesn't match the broadcast shape [3, 4]"),
    (lambda: tg.masked_scatter(tg.zeros(3), tg.ones(3, dtype=tg.bool), tg.zeros(2)),
     RuntimeError, "Number of elements of source < number of ones in mask"),
    (lambda: tg.masked_scatter(tg.zeros(3), tg.ones(3), tg.zeros(3)), RuntimeError,
     "masked_scatter_ only supports boolean masks"),
    (lambda: tg.masked_scatter(tg.zeros(3), tg.ones(3, dtype=tg.bool),
                               tg.zeros(3, dtype=tg.float64)), RuntimeError,
     "masked_scatter: expected self and source to have same dtypes"),
    (lambda: tg.zeros(4).masked_scatter_(tg.ones(3, 4, dtype=tg.bool), tg.zeros(12)),
     RuntimeError, "expand(CPUBoolType{[3, 4]}, size=[4])"),
    (lambda: tg.put(tg.zeros(3), tg.tensor([3]), tg.zeros(1)), IndexError,
     "out of range: tried to access index 3 on a tensor of 3 elements."),
    (lambda: tg.put(tg.zeros(3), tg.tensor([1], dtype=tg.int32), tg.zeros(1)), RuntimeError,
     "put_(): Expected a long tensor for index"),
    (lambda: tg.put(tg.zeros(3), tg.tensor([1, 2]), tg.zeros(1)), IndexError,
     "put_(): Expected source and index to have the same number of elements"),
    (lambda: tg.put(tg.zeros(3), tg.tensor([1]), tg.zeros(1, dtype=tg.float64)), RuntimeError,
     "put_(): self and source expected to have the same dtype"),
])
def test_errors(call, err, start):
    with pytest.raises(err) as info:
        call()
    assert str(info.value).startswith(start), str(info.value)


# -- the CUDA backend (the emulated device in CI) -----------------------------------------------

@pytest.mark.parametrize("case", [c for c in CASES if not c[0].endswith("_")], ids=lambda c: c[0])
def test_on_the_cuda_backend_as_on_the_cpu(case):
    xs = inputs_of(case)
    w = _rng.uniform(0.5, 1.5, tuple(case[2](*xs).shape))
    ref = [x.requires_grad_() for x in xs]
    y = case[2](*ref)
    y.backward(tg.tensor(w))
    dev = [x.detach().to("cuda").requires_grad_() for x in xs]
    yd = case[2](*dev)
    assert node_name(yd) == node_name(y)
    yd.backward(tg.tensor(w, device="cuda"))
    np.testing.assert_allclose(host(yd), host(y), rtol=1e-12, atol=1e-12)
    for a, b in zip(dev, ref):
        np.testing.assert_allclose(host(a.grad), host(b.grad), rtol=1e-12, atol=1e-12)


# -- against PyTorch ------------------------------------------------------------------------------

def _torch_cases(torch):
    """(name, fn(lib, *tensors), input arrays) run by both libraries."""
    f64 = lambda *s, lo=-2, hi=2: _rng.uniform(lo, hi, s)  # noqa: E731
    c128 = lambda *s: _rng.uniform(-1, 1, s) + 1j * _rng.uniform(-1, 1, s)  # noqa: E731
    m = _rng.random((3, 4)) > 0.5
    return [
        ("aminmax", lambda L, x: L.aminmax(x, dim=-1, keepdim=True), [f64(3, 4)]),
        ("aminmax_f32", lambda L, x: L.aminmax(x), [f64(3, 4).astype(np.float32)]),
        ("rot90_c", lambda L, x: L.rot90(x, 3, [1, 0]), [c128(2, 3)]),
        ("diag_embed_c", lambda L, x: L.diag_embed(x, -1, 2, 0), [c128(2, 3)]),
        ("trace_c", lambda L, x: L.trace(x), [c128(3, 2)]),
        ("trace_f16", lambda L, x: L.trace(x), [f64(3, 3).astype(np.float16)]),
        ("fmax_f16", lambda L, a, b: L.fmax(a, b),
         [f64(4).astype(np.float16), f64(4).astype(np.float16)]),
        ("fmin_mixed", lambda L, a, b: L.fmin(a, b), [f64(3).astype(np.float32), f64(2, 1)]),
        ("dist_c", lambda L, a, b: L.dist(a, b, 3), [c128(3), c128(3)]),
        ("dist_f16", lambda L, a, b: L.dist(a, b, 0.5),
         [f64(4).astype(np.float16), f64(4).astype(np.float16)]),
        ("addcmul_c", lambda L, a, b, c: L.addcmul(a, b, c, value=2 - 1j),
         [c128(3), c128(3), c128(3)]),
        ("addcdiv_c", lambda L, a, b, c: L.addcdiv(a, b, c, value=0.5),
         [c128(3), c128(3), c128(3)]),
        ("addcdiv_f16", lambda L, a, b, c: L.addcdiv(a, b, c, value=0.3),
         [f64(4).astype(np.float16), f64(4).astype(np.float16),
          f64(4, lo=.5).astype(np.float16)]),
        ("masked_scatter_c", lambda L, x, s: L.masked_scatter(x, L.tensor(m), s),
         [c128(3, 4), c128(12)]),
        ("put_c", lambda L, x, s: L.put(x, L.tensor([0, 5, -1]), s, True), [c128(3, 4), c128(3)]),
    ]


@pytest.mark.parametrize("i", range(15))
def test_against_pytorch(i):
    torch = pytest.importorskip("torch", minversion="2.13")
    name, fn, arrays = _torch_cases(torch)[i]
    results = []
    for L in (torch, tg):
        xs = [L.tensor(a).requires_grad_() for a in arrays]
        y = fn(L, *xs)
        ys = list(y) if isinstance(y, tuple) else [y]
        gs = L.autograd.grad(ys, xs, [L.ones_like(o) for o in ys])
        results.append((type(ys[0].grad_fn).__name__, len(ys[0].grad_fn.next_functions),
                        [str(o.dtype).split(".")[-1] for o in ys],
                        [o.detach().numpy() for o in ys], [g.numpy() for g in gs]))
    (tn, ta, td, tv, tgs), (gn, ga, gd, gv, ggs) = results
    assert (gn, ga, gd) == (tn, ta, td), name
    tol = 2e-3 if "f16" in name else 1e-5 if "f32" in name else 1e-12
    for a, b in zip(gv + ggs, tv + tgs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=name)
