"""``tg.gradient`` (autograd/ops/scans.py) and ``tg.histogramdd`` with ``tg.histogram`` its
one-dimensional case (autograd/ops/numeric.py): values against NumPy float64 (np.gradient,
np.histogramdd: the same formulas), every spacing and bins form, PyTorch's errors, gradients
through ``gradient`` against finite differences, on the CPU and the (emulated) CUDA device."""

import numpy as np
import pytest
from tritongrad.autograd.gradcheck import gradcheck, gradgradcheck

import tritongrad as tg

rng = np.random.default_rng(5)


def t(a, device="cpu", requires_grad=False, dtype=None):
    a = np.asarray(a)
    if dtype is None:
        dtype = tg.float64 if a.dtype.kind == "f" else None
    return tg.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)


def host(x):
    return x.detach().cpu().numpy()


def _raises(fn, exc, message):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == message, str(info.value)


# -- gradient ------------------------------------------------------------------------------------

X = rng.standard_normal((4, 5))
COORDS = [np.array([0.0, 0.5, 2.0, 2.5]), np.array([0.0, 1.0, 1.5, 3.5, 4.0])]


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_spacings_match_numpy(edge_order, device):
    x = t(X, device)
    cases = [({}, ()), ({"spacing": 2.0}, (2.0,)), ({"spacing": [2.0, 0.5]}, (2.0, 0.5)),
             ({"spacing": [t(c, device) for c in COORDS]}, tuple(COORDS))]
    for kwargs, varargs in cases:
        got = tg.gradient(x, edge_order=edge_order, **kwargs)
        ref = np.gradient(X, *varargs, edge_order=edge_order)
        assert isinstance(got, tuple) and len(got) == 2
        for g, r in zip(got, ref):
            assert g.device.type == device
            np.testing.assert_allclose(host(g), r, rtol=1e-12, atol=1e-12)


def test_gradient_dims_and_dtypes():
    x = t(X)
    (g1,) = tg.gradient(x, dim=1)
    np.testing.assert_allclose(host(g1), np.gradient(X, axis=1), rtol=1e-12)
    (g1,) = tg.gradient(x, spacing=[t(COORDS[1])], dim=-1, edge_order=2)
    np.testing.assert_allclose(host(g1), np.gradient(X, COORDS[1], axis=1, edge_order=2),
                               rtol=1e-12)
    g1, g0 = tg.gradient(x, spacing=3.0, dim=(1, 0))  # in dim's order
    np.testing.assert_allclose(host(g0), np.gradient(X, 3.0, axis=0), rtol=1e-12)
    np.testing.assert_allclose(host(g1), np.gradient(X, 3.0, axis=1), rtol=1e-12)
    assert tg.gradient(x, dim=[]) == () and tg.gradient(t(3.0)) == ()
    # integers give the default float dtype; complex values and spacings work
    (gi,) = tg.gradient(tg.tensor([1, 2, 4, 7]), spacing=[tg.tensor([0, 1, 2, 4])])
    assert gi.dtype is tg.float32
    np.testing.assert_allclose(host(gi), np.gradient([1., 2, 4, 7], [0., 1, 2, 4]), rtol=1e-6)
    z = np.array([1 + 2j, 3j, 5, 6])
    (gz,) = tg.gradient(tg.tensor(z), spacing=1j)
    np.testing.assert_allclose(host(gz), np.gradient(z) / 1j, rtol=1e-6)
    # a size-2 dim: only the one-sided differences
    np.testing.assert_allclose(host(tg.gradient(t(X[:2]))[0]), np.gradient(X[:2], axis=0))


def test_gradient_errors_match_pytorch():
    x = t(X)
    _raises(lambda: tg.gradient(tg.tensor([1, 2, 3], dtype=tg.uint8)), RuntimeError,
            "torch.gradient does not support uint8 input.")
    _raises(lambda: tg.gradient(x, spacing=[2.0]), RuntimeError,
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            "equal to 'self.dim() = 2', since dim argument was not given, but got a list of "
            "length 1")
    _raises(lambda: tg.gradient(x, spacing=[2.0, 3.0], dim=1), RuntimeError,
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
            "arguments to have the same length, but got a spacing argument of length 2 and a "
            "dim argument of length 1.")
    _raises(lambda: tg.gradient(x, edge_order=3), RuntimeError,
            "torch.gradient only supports edge_order=1 and edge_order=2.")
    _raises(lambda: tg.gradient(x[:2], edge_order=2), RuntimeError,
            "torch.gradient expected each dimension size to be at least edge_order+1")
    _raises(lambda: tg.gradient(x, dim=(1, 1)), RuntimeError,
            "dim 1 appears multiple times in the list of dims")
    _raises(lambda: tg.gradient(x, spacing=[t([[0., 1, 2, 3, 4]])], dim=1), RuntimeError,
            "torch.gradient expected each element of spacing to have one dimension, but got an "
            "element with 2 dimensions!")
    _raises(lambda: tg.gradient(x, spacing=[1, t(COORDS[1])]), TypeError,
            "expected Tensor as element 0 in argument 1, but got int")
    with pytest.raises(IndexError):
        tg.gradient(x, dim=2)
    with pytest.raises(TypeError):
        tg.gradient(x, spacing=t(COORDS[1]), dim=1)  # a 1-D tensor is not a spacing


def test_gradient_is_differentiable(device):
    # (the emulated CUDA device runs each op through Triton's interpreter: one case there, in
    # the samples only)
    fast = device == "cuda"
    y = t(rng.standard_normal((2, 4)), device, True)
    coords = t(np.array([0.0, 0.7, 1.1, 2.0]), device, not fast)
    for edge_order in (2,) if fast else (1, 2):
        def f(y, c, e=edge_order):
            return tg.gradient(y, spacing=[c], dim=1, edge_order=e)[0]
        assert gradcheck(f, [y, coords], fast_mode=fast)
        if not fast:
            assert gradgradcheck(f, [y, coords])
            assert gradcheck(lambda y, e=edge_order: tg.gradient(y, spacing=0.5, dim=1,
                                                                 edge_order=e)[0], [y])


# -- histogramdd ---------------------------------------------------------------------------------

P = rng.random((30, 2))


def _same_histogram(got, ref_hist, ref_edges):
    hist, edges = got
    assert isinstance(edges, tuple) and len(edges) == len(ref_edges)
    np.testing.assert_allclose(host(hist), ref_hist, rtol=1e-12, atol=1e-12)
    for e, r in zip(edges, ref_edges):
        np.testing.assert_allclose(host(e), r, rtol=1e-12, atol=1e-15)


def test_histogramdd_bins_forms_match_numpy(device):
    x, w = t(P, device), rng.random(30)
    edges = [np.array([0.0, 0.3, 1.0]), np.array([0.1, 0.2, 0.6, 0.9])]
    cases = [({"bins": 3}, {"bins": 3}), ({"bins": [3, 4]}, {"bins": [3, 4]}),
             ({"bins": [t(e, device) for e in edges]}, {"bins": edges}),
             ({"bins": (2, 5), "range": [0.0, 1.0, -1.0, 2.0]},
              {"bins": (2, 5), "range": [(0.0, 1.0), (-1.0, 2.0)]}),
             ({"bins": [3, 4], "weight": t(w, device)}, {"bins": [3, 4], "weights": w}),
             ({"bins": [3, 4], "density": True}, {"bins": [3, 4], "density": True}),
             ({"bins": [t(e, device) for e in edges], "density": True, "weight": t(w, device)},
              {"bins": edges, "density": True, "weights": w})]
    for kwargs, np_kwargs in cases:
        got = tg.histogramdd(x, **kwargs)
        assert got.hist.device.type == device
        _same_histogram(got, *np.histogramdd(P, **np_kwargs))


def test_histogramdd_shapes_and_edge_cases():
    # leading dims are flattened into points; the weight has the input's shape without N
    x3, w3 = rng.random((4, 5, 3)), rng.random((4, 5))
    _same_histogram(tg.histogramdd(t(x3), [2, 3, 4], weight=t(w3)),
                    *np.histogramdd(x3.reshape(-1, 3), [2, 3, 4], weights=w3.reshape(-1)))
    # equal min and max widen by 0.5; no points: [0, 1]; NaN and points outside not counted
    _same_histogram(tg.histogramdd(t(np.zeros((2, 2))), bins=2),
                    np.array([[0.0, 0.0], [0.0, 2.0]]), [np.array([-0.5, 0.0, 0.5])] * 2)
    _same_histogram(tg.histogramdd(t(np.zeros((0, 2))), bins=2),
                    np.zeros((2, 2)), [np.array([0.0, 0.5, 1.0])] * 2)
    pts = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.5], [np.nan, 0.5], [2.0, 0.5]])
    hist, _ = tg.histogramdd(t(pts), bins=2, range=[0.0, 1.0, 0.0, 1.0])
    assert host(hist).tolist() == [[1.0, 0.0], [0.0, 2.0]]  # (the right edge is in)
    f32 = tg.histogramdd(tg.tensor(P, dtype=tg.float32), bins=3)
    assert f32.hist.dtype is tg.float32 and f32.bin_edges[0].dtype is tg.float32
    assert not tg.histogramdd(t(P, requires_grad=True), bins=2).hist.requires_grad
    # histogram is the one-dimensional case: an empty input spans [0, 1], weights are flattened
    hist, edges = tg.histogram(tg.tensor([], dtype=tg.float64), bins=2)
    assert host(edges).tolist() == [0.0, 0.5, 1.0] and host(hist).tolist() == [0.0, 0.0]
    v, w = rng.random((2, 3)), rng.random(6)
    hist, edges = tg.histogram(t(v), bins=3, weight=t(w))
    np.testing.assert_allclose(host(hist), np.histogram(v, 3, weights=w.reshape(2, 3))[0],
                               rtol=1e-12)


def test_histogramdd_errors_match_pytorch():
    x = t(P)
    dd = "torch.histogramdd: "
    e0, e1 = t([0.0, 0.5, 1.0]), t([0.0, 0.2, 1.0])
    _raises(lambda: tg.histogramdd(x[0], bins=3), RuntimeError,
            dd + "input tensor should have at least 2 dimensions")
    _raises(lambda: tg.histogramdd(x.long(), bins=3), NotImplementedError,
            "\"histogramdd\" not implemented for 'Long'")
    _raises(lambda: tg.histogramdd(x.half(), bins=3), NotImplementedError,
            "\"histogramdd\" not implemented for 'Half'")
    _raises(lambda: tg.histogramdd(x, bins=[3]), RuntimeError,
            "histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    _raises(lambda: tg.histogramdd(x, bins=[3, 0]), RuntimeError,
            "torch.histogram(): bins must be > 0, but got 0 for dimension 1")
    _raises(lambda: tg.histogramdd(x, bins=[3, 4], range=[0.0, 1.0]), RuntimeError,
            dd + "for a 2-dimensional histogram range should have 4 elements, but got 2")
    _raises(lambda: tg.histogramdd(x, bins=2, range=[1.0, 0.0, 0.0, 1.0]), RuntimeError,
            dd + "min should not exceed max, but got min 1 max 0 for dimension 0")
    _raises(lambda: tg.histogramdd(x, bins=2, range=[0.0, float("inf"), 0.0, 1.0]),
            RuntimeError, dd + "dimension 0's range [0, inf] is not finite")
    _raises(lambda: tg.histogramdd(t([[np.nan, 0.0]]), bins=2), RuntimeError,
            dd + "dimension 0's range [nan, nan] is not finite")
    _raises(lambda: tg.histogramdd(x, bins=[e0]), RuntimeError,
            dd + "expected 2 sequences of bin edges for a 2-dimensional histogram but got 1")
    _raises(lambda: tg.histogramdd(x, bins=[e0, e1.float()]), RuntimeError,
            dd + "input tensor and bins tensors should have the same dtype, but got input with "
                 "dtype double and bins for dimension 1 with dtype float")
    _raises(lambda: tg.histogramdd(x, bins=[e0, e1.reshape(1, 3)]), RuntimeError,
            dd + "bins tensor should have one dimension, but got 2 dimensions in the bins tensor "
                 "for dimension 1")
    _raises(lambda: tg.histogramdd(x, bins=[e0, e1[:0]]), RuntimeError,
            dd + "bins tensor should have at least 1 element, but got 0 elements in the bins "
                 "tensor for dimension 1")
    _raises(lambda: tg.histogramdd(x, bins=[e0, e1[:1]]), RuntimeError,
            "torch.histogram(): bins must be > 0, but got 0 for dimension 1")
    _raises(lambda: tg.histogramdd(x, bins=2, weight=tg.ones(30)), RuntimeError,
            dd + "if weight tensor is provided, input tensor and weight tensor should have the "
                 "same dtype, but got input(double), and weight(float)")
    _raises(lambda: tg.histogramdd(x, bins=2, weight=t(np.ones((30, 1)))), RuntimeError,
            dd + "if weight tensor is provided it should have the same shape as the input "
                 "tensor excluding its innermost dimension, but got input with shape [30, 2] "
                 "and weight with shape [30, 1]")
    _raises(lambda: tg.histogramdd(x, bins=[3, e0]), TypeError,
            "expected Tensor as element 0 in argument 1, but got int")
    with pytest.raises(TypeError):
        tg.histogramdd(x, bins=e0)
