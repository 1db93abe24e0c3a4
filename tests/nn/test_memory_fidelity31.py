"""nn.functional ops that were compositions of Tensor ops, now one node each named as
PyTorch's (autograd/ops/sampling_nodes.py, NllLossBackward0 in autograd/ops/nn.py):
grid_sample, bilinear, interpolate (every mode), adaptive average pools, unfold and fold,
multi_margin_loss,
multilabel_margin_loss and nll_loss (so weighted cross_entropy). Each is checked for values
and gradients against float64 NumPy references (or the composite it replaces), gradcheck
with forward AD, gradgradcheck, its node's name, an upper bound on the bytes its saved
tensors hold (what the op's rule must read), both backends, half precision and PyTorch's
errors. Comparisons with PyTorch under importorskip."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host, saved_bytes
from tritongrad.nn import _sampling
from tritongrad.nn import functional as F

_rng = np.random.default_rng(31)


def _nbytes(*ts) -> int:
    return sum(t.numel() * t.element_size() for t in ts if t is not None)


def _one_node(out, name):
    assert out.grad_fn.name() == name
    assert {type(n).__name__ for n, _ in out.grad_fn.next_functions if n is not None} <= \
        {"AccumulateGrad"}


def _t(a, device="cpu", grad=True, dtype=None):
    return tg.tensor(a, device=device, dtype=dtype, requires_grad=grad)


# -- grid_sample ------------------------------------------------------------------------------

def _grid_sample_ref(x, grid, align_corners):
    """Bilinear, zeros padding, 2-D: float64 loops over the output."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b in range(n):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                gx, gy = grid[b, i, j]
                if align_corners:
                    ix, iy = (gx + 1) / 2 * (w - 1), (gy + 1) / 2 * (h - 1)
                else:
                    ix, iy = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
                x0, y0 = math.floor(ix), math.floor(iy)
                for xx, wx in ((x0, 1 - (ix - x0)), (x0 + 1, ix - x0)):
                    for yy, wy in ((y0, 1 - (iy - y0)), (y0 + 1, iy - y0)):
                        if 0 <= xx < w and 0 <= yy < h:
                            out[b, :, i, j] += wx * wy * x[b, :, yy, xx]
    return out


@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_node_valuessaved_bytes(device, align_corners):
    xs = _rng.normal(size=(2, 3, 5, 6))
    gs = _rng.uniform(-1.2, 1.2, size=(2, 4, 3, 2))
    x, grid = _t(xs, device), _t(gs, device)
    nbytes, count, y = saved_bytes(F.grid_sample, x, grid, "bilinear", "zeros", align_corners)
    _one_node(y, "GridSampler2DBackward0")
    assert count == 2 and nbytes <= _nbytes(x, grid)  # the input and the grid, as PyTorch's
    np.testing.assert_allclose(host(y), _grid_sample_ref(xs, gs, align_corners), rtol=1e-12,
                               atol=1e-14)
    g = _rng.normal(size=y.shape)
    y.backward(tg.tensor(g, device=device))
    # the composite it replaces, recorded op by op, gives the same gradients
    x2, grid2 = _t(xs), _t(gs)
    _sampling._grid_sample(x2, grid2, "bilinear", "zeros", align_corners).backward(tg.tensor(g))
    np.testing.assert_allclose(host(x.grad), host(x2.grad), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(grid.grad), host(grid2.grad), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode,padding", [("bilinear", "reflection"), ("bicubic", "zeros")])
def test_grid_sample_gradcheck_forward_ad_gradgradcheck(mode, padding):
    x = _t(_rng.normal(size=(1, 1, 3, 4)))
    grid = _t(_rng.uniform(-1.1, 1.1, size=(1, 2, 2, 2)))
    fn = lambda a, b: F.grid_sample(a, b, mode, padding, align_corners=False)  # noqa: E731
    assert fn(x, grid).grad_fn.name() == "GridSampler2DBackward0"
    assert tg.autograd.gradcheck(fn, (x, grid), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x, grid))


def test_grid_sample_3d_and_one_input_needing_grad():
    x = _t(_rng.normal(size=(1, 1, 3, 3, 2)))
    grid = _t(_rng.uniform(-1, 1, size=(1, 2, 1, 1, 3)))
    nbytes, _, y = saved_bytes(F.grid_sample, x, grid, "bilinear", "zeros", True)
    _one_node(y, "GridSampler3DBackward0")
    assert nbytes <= _nbytes(x, grid)
    fn = lambda a, b: F.grid_sample(a, b, align_corners=True)  # noqa: E731
    assert tg.autograd.gradcheck(fn, (x, grid), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x, grid))
    # only the grid needs a gradient (a spatial transformer over a fixed image), then only x
    (gg,) = tg.autograd.grad(F.grid_sample(x.detach(), grid, align_corners=True).sum(), grid)
    (gx,) = tg.autograd.grad(F.grid_sample(x, grid.detach(), align_corners=True).sum(), x)
    y = F.grid_sample(x, grid, align_corners=True).sum()
    want_x, want_g = tg.autograd.grad(y, (x, grid))
    np.testing.assert_allclose(host(gg), host(want_g), rtol=1e-12)
    np.testing.assert_allclose(host(gx), host(want_x), rtol=1e-12)


def test_grid_sample_half_and_errors():
    x = tg.tensor(_rng.normal(size=(1, 2, 5, 5)), dtype=tg.float16, requires_grad=True)
    grid = tg.tensor(_rng.uniform(-1, 1, size=(1, 3, 3, 2)), dtype=tg.float16,
                     requires_grad=True)
    y = F.grid_sample(x, grid, align_corners=False)
    y.sum().backward()
    assert y.dtype is x.grad.dtype is grid.grad.dtype is tg.float16
    want = F.grid_sample(x.detach().double(), grid.detach().double(), align_corners=False)
    np.testing.assert_allclose(host(y).astype(np.float64), host(want), atol=1e-2)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or "
                                         "'bicubic', but got: 'linear'"):
        F.grid_sample(x, grid, mode="linear")
    with pytest.raises(RuntimeError, match="expected scalar type Half but found Float"):
        F.grid_sample(x, grid.detach().float())


# -- interpolate and the adaptive average pools ------------------------------------------------

def _windows(n: int, o: int) -> np.ndarray:
    """(o, n) adaptive averaging matrix: window i is [floor(i n / o), ceil((i + 1) n / o))."""
    m = np.zeros((o, n))
    for i in range(o):
        lo, hi = (i * n) // o, -((-(i + 1) * n) // o)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def _adaptive_ref(x, out):
    for d, o in enumerate(out):
        axis = x.ndim - len(out) + d
        x = np.moveaxis(np.tensordot(_windows(x.shape[axis], o), x, axes=(1, axis)), 0, axis)
    return x


POOLS = {  # name: (fn, input shape, output size, node)
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 4)), (1, 2, 5, 7), (3, 4),
                            "AdaptiveAvgPool2DBackward0"),
    "adaptive_avg_pool2d_global": (lambda x: F.adaptive_avg_pool2d(x, 1), (2, 3, 4, 5), (1, 1),
                                   "AdaptiveAvgPool2DBackward0"),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), (1, 1, 3, 4, 3),
                            (2, 3, 2), "AdaptiveAvgPool3DBackward0"),
    "area_2d": (lambda x: F.interpolate(x, size=(3, 4), mode="area"), (2, 3, 7, 9), (3, 4),
                "AdaptiveAvgPool2DBackward0"),
    "area_3d": (lambda x: F.interpolate(x, size=(3, 2, 2), mode="area"), (1, 2, 5, 4, 3),
                (3, 2, 2), "AdaptiveAvgPool3DBackward0"),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 4), (2, 3, 9), (4,), None),
    "area_1d": (lambda x: F.interpolate(x, size=4, mode="area"), (2, 3, 9), (4,), None),
}


@pytest.mark.parametrize("name", POOLS)
def test_adaptive_pools_values_gradients_nothingsaved_bytes(device, name):
    fn, shape, out, node = POOLS[name]
    xs = _rng.normal(size=shape)
    x = _t(xs, device)
    nbytes, count, y = saved_bytes(fn, x)
    assert count == 0 and nbytes == 0  # linear: the rule reads only the gradient
    if node is not None:
        _one_node(y, node)
    np.testing.assert_allclose(host(y), _adaptive_ref(xs, out), rtol=1e-12, atol=1e-14)
    g = _rng.normal(size=y.shape)
    y.backward(tg.tensor(g, device=device))
    # the transpose: each output's gradient spread over its window
    want = g
    for d in reversed(range(len(out))):
        axis = xs.ndim - len(out) + d
        m = _windows(shape[axis], out[d])
        want = np.moveaxis(np.tensordot(m.T, want, axes=(1, axis)), 0, axis)
    np.testing.assert_allclose(host(x.grad), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["adaptive_avg_pool2d", "adaptive_avg_pool3d", "area_1d"])
def test_adaptive_pools_gradcheck_forward_ad_gradgradcheck(name):
    fn, shape, _, _ = POOLS[name]
    x = _t(_rng.normal(size=shape))
    assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x,))


MODES = {  # name: (kwargs, input shape, node)
    "nearest_1d": ({"scale_factor": 1.7, "mode": "nearest"}, (2, 3, 5),
                   "UpsampleNearest1DBackward0"),
    "nearest_exact_2d": ({"size": (7, 3), "mode": "nearest-exact"}, (2, 3, 5, 4),
                         "UpsampleNearestExact2DBackward0"),
    "nearest_3d": ({"size": (3, 5, 2), "mode": "nearest"}, (1, 2, 2, 3, 4),
                   "UpsampleNearest3DBackward0"),
    "linear": ({"size": 9, "mode": "linear", "align_corners": True}, (2, 3, 5),
               "UpsampleLinear1DBackward0"),
    "bilinear": ({"scale_factor": (1.5, 0.7), "mode": "bilinear"}, (2, 3, 5, 6),
                 "UpsampleBilinear2DBackward0"),
    "bicubic": ({"size": (7, 4), "mode": "bicubic"}, (2, 3, 5, 6),
                "UpsampleBicubic2DBackward0"),
    "bilinear_aa": ({"size": (3, 4), "mode": "bilinear", "antialias": True}, (2, 3, 7, 9),
                    "UpsampleBilinear2DAaBackward0"),
    "bicubic_aa": ({"size": (3, 11), "mode": "bicubic", "antialias": True}, (2, 3, 7, 9),
                   "UpsampleBicubic2DAaBackward0"),
    "trilinear": ({"size": (3, 5, 2), "mode": "trilinear"}, (1, 2, 2, 3, 4),
                  "UpsampleTrilinear3DBackward0"),
}


def _composite_resize(x, kwargs):
    """The composite each node replaced: every dimension's taps recorded op by op."""
    nd = x.ndim - 2
    aa, mode = kwargs.get("antialias", False), kwargs["mode"]
    ac = bool(kwargs.get("align_corners"))
    if "size" in kwargs:
        size = kwargs["size"]
        out, sfs = ((size,) * nd if isinstance(size, int) else size), (None,) * nd
    else:
        sf = kwargs["scale_factor"]
        sfs = (sf,) * nd if isinstance(sf, float) else sf
        out = [math.floor(n * f) for n, f in zip(x.shape[2:], sfs)]
    for d, (n_in, n_out, sf) in enumerate(zip(x.shape[2:], out, sfs)):
        taps = (_sampling._aa_taps if aa else _sampling._taps)(mode, n_in, n_out, ac, sf)
        x = _sampling._resize_dim(x, 2 + d, taps)
    return x


def _bilinear_ac_ref(x, oh, ow):
    """align_corners=True bilinear resize, float64."""
    def matrix(n, o):
        m = np.zeros((o, n))
        for i in range(o):
            s = i * (n - 1) / (o - 1) if o > 1 else 0.0
            lo = min(int(math.floor(s)), n - 1)
            hi, t = min(lo + 1, n - 1), s - lo
            m[i, lo] += 1 - t
            m[i, hi] += t
        return m
    return np.einsum("ah,nchw,bw->ncab", matrix(x.shape[2], oh), x, matrix(x.shape[3], ow))


@pytest.mark.parametrize("name", MODES)
def test_interpolate_node_values_gradients_nothingsaved_bytes(name, device="cpu"):
    kwargs, shape, node = MODES[name]
    xs = _rng.normal(size=shape)
    x = _t(xs, device)
    nbytes, count, y = saved_bytes(lambda a: F.interpolate(a, **kwargs), x)
    _one_node(y, node)
    assert count == 0 and nbytes == 0
    g = _rng.normal(size=y.shape)
    y.backward(tg.tensor(g, device=device))
    x2 = _t(xs)
    ref = _composite_resize(x2, kwargs)
    ref.backward(tg.tensor(g))
    np.testing.assert_allclose(host(y), host(ref), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(x.grad), host(x2.grad), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["bicubic_aa", "nearest_3d"])
def test_interpolate_on_both_backends(device, name):
    test_interpolate_node_values_gradients_nothingsaved_bytes(name, device)


def test_interpolate_bilinear_against_numpy_and_second_order():
    xs = _rng.normal(size=(1, 2, 4, 5))
    x = _t(xs)
    y = F.interpolate(x, size=(6, 3), mode="bilinear", align_corners=True)
    np.testing.assert_allclose(host(y), _bilinear_ac_ref(xs, 6, 3), rtol=1e-12, atol=1e-14)
    for kwargs in ({"scale_factor": (1.5, 0.7), "mode": "bilinear"},
                   {"size": (2, 3), "mode": "bicubic", "antialias": True},
                   {"size": (4, 2), "mode": "nearest-exact"}):
        x = _t(_rng.normal(size=(1, 1, 5, 4)))
        fn = lambda a: F.interpolate(a, **kwargs)  # noqa: E731
        assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
        assert tg.autograd.gradgradcheck(fn, (x,))


def test_interpolate_half_and_same_size():
    x = tg.tensor(_rng.normal(size=(1, 2, 4, 4)), dtype=tg.float16, requires_grad=True)
    y = F.interpolate(x, scale_factor=2, mode="bilinear")
    y.sum().backward()
    assert y.dtype is x.grad.dtype is tg.float16
    want = F.interpolate(x.detach().double(), scale_factor=2, mode="bilinear")
    np.testing.assert_allclose(host(y).astype(np.float64), host(want), atol=5e-3)
    np.testing.assert_allclose(host(x.grad).astype(np.float64), 4.0, atol=1e-2)
    z = tg.zeros(1, 1, 3, 3, dtype=tg.uint8)  # nearest on uint8 images: no gradient
    assert F.interpolate(z, scale_factor=2).dtype is tg.uint8
    with pytest.raises(NotImplementedError, match="bilinear mode needs 4D input"):
        F.interpolate(tg.zeros(1, 1, 3), scale_factor=2, mode="bilinear")


# -- unfold and fold ---------------------------------------------------------------------------

def _im2col_ref(x, k, d, p, st):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // st[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // st[1] + 1
    cols = np.zeros((n, c, k[0], k[1], oh, ow))
    for i in range(k[0]):
        for j in range(k[1]):
            cols[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + st[0] * (oh - 1) + 1:st[0],
                                  j * d[1]:j * d[1] + st[1] * (ow - 1) + 1:st[1]]
    return cols.reshape(n, c * k[0] * k[1], oh * ow)


def test_unfold_fold_nodes_values_adjoint_nothingsaved_bytes(device):
    k, d, p, st = (2, 3), (2, 1), (1, 0), (1, 2)
    xs = _rng.normal(size=(2, 3, 6, 7))
    x = _t(xs, device)
    nbytes, count, cols = saved_bytes(F.unfold, x, k, d, p, st)
    _one_node(cols, "Im2ColBackward0")
    assert count == 0 and nbytes == 0  # linear: PyTorch's node saves no tensor either
    want = _im2col_ref(xs, k, d, p, st)
    np.testing.assert_allclose(host(cols), want, rtol=1e-12)
    cs = _rng.normal(size=want.shape)
    c = _t(cs, device)
    nbytes, count, y = saved_bytes(F.fold, c, (6, 7), k, d, p, st)
    _one_node(y, "Col2ImBackward0")
    assert count == 0 and nbytes == 0
    # fold is unfold's adjoint: <unfold(x), c> = <x, fold(c)>; each one's gradient the other
    np.testing.assert_allclose((want * cs).sum(), (xs * host(y)).sum(), rtol=1e-12)
    cols.backward(tg.tensor(cs, device=device))
    np.testing.assert_allclose(host(x.grad), host(y), rtol=1e-12)
    y.backward(tg.tensor(xs, device=device))
    np.testing.assert_allclose(host(c.grad), want, rtol=1e-12)


def test_unfold_fold_gradcheck_forward_ad_gradgradcheck():
    x = _t(_rng.normal(size=(1, 2, 4, 4)))
    fn = lambda a: F.unfold(a, (2, 3), padding=1, stride=(2, 1))  # noqa: E731
    assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x,))
    c = _t(_rng.normal(size=(12, 6)))  # unbatched
    fn = lambda a: F.fold(a, (4, 5), (2, 3), padding=(1, 0), stride=2)  # noqa: E731
    assert tg.autograd.gradcheck(fn, (c,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (c,))


# -- bilinear ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [False, True])
def test_bilinear_node_values_gradientssaved_bytes(device, bias):
    a, b = _rng.normal(size=(2, 4, 3)), _rng.normal(size=(2, 4, 5))
    w, c = _rng.normal(size=(6, 3, 5)), _rng.normal(size=6)
    x1, x2, wt = _t(a, device), _t(b, device), _t(w, device)
    bt = _t(c, device) if bias else None
    nbytes, count, y = saved_bytes(F.bilinear, x1, x2, wt, bt)
    node = y.grad_fn if not bias else y.grad_fn.next_functions[0][0]
    assert type(node).__name__ == "TrilinearBackward0"
    assert count == 3 and nbytes <= _nbytes(x1, x2, wt)  # PyTorch's: both inputs, the weight
    np.testing.assert_allclose(host(y), np.einsum("nbi,oij,nbj->nbo", a, w, b) + (c if bias
                                                                                  else 0),
                               rtol=1e-12)
    g = _rng.normal(size=y.shape)
    y.backward(tg.tensor(g, device=device))
    np.testing.assert_allclose(host(x1.grad), np.einsum("nbo,oij,nbj->nbi", g, w, b),
                               rtol=1e-12)
    np.testing.assert_allclose(host(x2.grad), np.einsum("nbo,oij,nbi->nbj", g, w, a),
                               rtol=1e-12)
    np.testing.assert_allclose(host(wt.grad), np.einsum("nbo,nbi,nbj->oij", g, a, b),
                               rtol=1e-12)


def test_bilinear_gradcheck_forward_ad_gradgradcheck_and_errors():
    args = (_t(_rng.normal(size=(4, 3))), _t(_rng.normal(size=(4, 5))),
            _t(_rng.normal(size=(2, 3, 5))), _t(_rng.normal(size=2)))
    assert tg.autograd.gradcheck(F.bilinear, args, check_forward_ad=True)
    assert tg.autograd.gradgradcheck(F.bilinear, args)
    with pytest.raises(RuntimeError, match="input batch dimensions do not match"):
        F.bilinear(tg.zeros(4, 3), tg.zeros(3, 5), tg.zeros(2, 3, 5))


# -- margin losses -----------------------------------------------------------------------------

def _multi_margin_ref(x, y, p, margin, w):
    n, c = x.shape
    h = margin - x[np.arange(n), y][:, None] + x
    h[np.arange(n), y] = 0.0
    pos = h > 0
    scale = (w[y] if w is not None else np.ones(n))[:, None] / c
    loss = (np.where(pos, h, 0.0) ** p * scale).sum(1)
    d = np.where(pos, p * np.where(pos, h, 0.0) ** (p - 1), 0.0) * scale
    d[np.arange(n), y] = -d.sum(1)
    return loss, d


@pytest.mark.parametrize("p,weighted,reduction", [(1, False, "mean"), (2, True, "none"),
                                                  (1, True, "sum")])
def test_multi_margin_node_values_gradientssaved_bytes(device, p, weighted, reduction):
    xs = _rng.normal(size=(6, 5))
    ys = np.array([0, 4, 2, 2, 1, 3])
    ws = _rng.uniform(0.5, 2, size=5) if weighted else None
    x, t = _t(xs, device), tg.tensor(ys, device=device)
    w = tg.tensor(ws, device=device) if weighted else None
    nbytes, count, out = saved_bytes(lambda a: F.multi_margin_loss(a, t, p, 0.9, w,
                                                              reduction=reduction), x)
    assert out.grad_fn.name() == "MultiMarginLossBackward0"
    assert count == (3 if weighted else 2) and nbytes <= _nbytes(x, t, w)
    loss, d = _multi_margin_ref(xs, ys, p, 0.9, ws)
    g = _rng.normal(size=6) if reduction == "none" else np.ones(())
    want = {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]
    np.testing.assert_allclose(host(out), want, rtol=1e-12)
    out.backward(tg.tensor(g, device=device))
    scale = (g if reduction == "none" else g / (6 if reduction == "mean" else 1))
    np.testing.assert_allclose(host(x.grad), d * np.reshape(scale, (-1, 1)), rtol=1e-12,
                               atol=1e-15)


def test_multi_margin_gradcheck_forward_ad_gradgradcheck_and_errors():
    x = _t(_rng.normal(size=(4, 5)))
    w = tg.tensor(_rng.uniform(0.5, 2, size=5))
    t = tg.tensor([0, 2, 1, 4])
    for p in (1, 2):
        fn = lambda a: F.multi_margin_loss(a, t, p=p, weight=w, reduction="none")  # noqa: E731
        assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
        assert tg.autograd.gradgradcheck(fn, (x,))
    # class weights that require grad: PyTorch's refusal (the composite this replaced gave
    # them a gradient)
    wg = w.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="'multi_margin_loss' is not differentiable with "
                                           "respect to argument 'weight'"):
        F.multi_margin_loss(x, t, p=2, weight=wg)
    xv = _t(_rng.normal(size=5))  # one sample (C,)
    assert F.multi_margin_loss(xv, tg.tensor(3)).grad_fn.name() == "MultiMarginLossBackward0"
    assert tg.autograd.gradcheck(lambda a: F.multi_margin_loss(a, tg.tensor(3)), (xv,),
                                 check_forward_ad=True)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, t, p=3)
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multi_margin_loss(x, tg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="inconsistent weight size, expected 5"):
        F.multi_margin_loss(x, t, weight=tg.ones(4, dtype=tg.float64))


def _multilabel_ref(x, t):
    n, c = x.shape
    loss, d = np.zeros(n), np.zeros_like(x)
    for r in range(n):
        targets = []
        for v in t[r]:
            if v < 0:
                break
            targets.append(int(v))
        others = [i for i in range(c) if i not in targets]
        for j in targets:
            for i in others:
                h = 1 - (x[r, j] - x[r, i])
                if h > 0:
                    loss[r] += h / c
                    d[r, j] -= 1 / c
                    d[r, i] += 1 / c
    return loss, d


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_multilabel_margin_node_values_gradientssaved_bytes(device, reduction):
    xs = _rng.normal(size=(4, 6))
    ts = np.array([[0, 2, -1, 1, 1, 1], [3, -1, 0, 0, 0, 0], [1, 2, 3, 4, 0, 5],
                   [-1, 0, 0, 0, 0, 0]])
    x, t = _t(xs, device), tg.tensor(ts, device=device)
    nbytes, count, y = saved_bytes(lambda a: F.multilabel_margin_loss(a, t, reduction=reduction), x)
    _one_node(y, "MultilabelMarginLossBackward0")
    # the input and the target (PyTorch's node keeps an (N, C) mask too); not the (N, P, C)
    # pairs the composite kept
    assert count == 2 and nbytes <= _nbytes(x, t)
    loss, d = _multilabel_ref(xs, ts)
    np.testing.assert_allclose(host(y), loss if reduction == "none" else loss.mean(),
                               rtol=1e-12)
    g = _rng.normal(size=4) if reduction == "none" else np.ones(())
    y.backward(tg.tensor(g, device=device))
    scale = g if reduction == "none" else np.full(4, 0.25)
    np.testing.assert_allclose(host(x.grad), d * scale[:, None], rtol=1e-12, atol=1e-15)
    fn = lambda a: F.multilabel_margin_loss(a, tg.tensor(ts))  # noqa: E731
    assert tg.autograd.gradcheck(fn, (_t(xs),), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (_t(xs),))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(x, tg.tensor(ts[:, :3], device=device))


# -- nll_loss and weighted cross_entropy -------------------------------------------------------

def _nll_ref(logp, t, w, ignore, reduction):
    valid = t != ignore
    tt = np.where(valid, t, 0)
    rows = np.where(valid, w[tt] if w is not None else 1.0, 0.0)
    loss = -logp[np.arange(len(t)), tt] * rows
    d = np.zeros_like(logp)
    d[np.arange(len(t)), tt] = -rows
    if reduction == "none":
        return loss, d
    if reduction == "sum":
        return loss.sum(), d
    return loss.sum() / rows.sum(), d / rows.sum()


@pytest.mark.parametrize("weighted,reduction", [(True, "mean"), (True, "none"),
                                                (False, "sum"), (False, "mean")])
def test_nll_node_values_gradients_saves_no_input(device, weighted, reduction):
    xs = _rng.normal(size=(6, 5))
    ts = np.array([0, 4, -100, 2, 1, 4])
    ws = _rng.uniform(0.5, 2, size=5) if weighted else None
    x, t = _t(xs, device), tg.tensor(ts, device=device)
    w = tg.tensor(ws, device=device) if weighted else None
    nbytes, count, y = saved_bytes(lambda a: F.nll_loss(a, t, w, reduction=reduction), x)
    _one_node(y, "NllLossBackward0")
    assert nbytes <= _nbytes(t, w)  # the rule reads the target and the weights, not the input
    loss, d = _nll_ref(xs, ts, ws, -100, reduction)
    np.testing.assert_allclose(host(y), loss, rtol=1e-12)
    g = _rng.normal(size=6) if reduction == "none" else np.ones(())
    y.backward(tg.tensor(g, device=device))
    np.testing.assert_allclose(host(x.grad), d * np.reshape(g, (-1, 1) if g.ndim else ()),
                               rtol=1e-12)


def test_weighted_cross_entropy_saved_and_checks():
    xs = _rng.normal(size=(8, 5))
    t = tg.tensor([0, 4, 1, 2, 1, 4, 3, 0])
    w = tg.tensor(_rng.uniform(0.5, 2, size=5))
    x = _t(xs)
    nbytes, _, y = saved_bytes(lambda a: F.cross_entropy(a, t, w), x)
    assert y.grad_fn.name() == "NllLossBackward0"
    assert nbytes <= _nbytes(x, t, w)  # log_softmax's output, the target, the weights
    logp = xs - np.log(np.exp(xs).sum(1, keepdims=True))
    np.testing.assert_allclose(host(y), _nll_ref(logp, host(t), host(w), -100, "mean")[0],
                               rtol=1e-12)
    for ls, red in ((0.0, "mean"), (0.2, "none")):
        fn = lambda a: F.cross_entropy(a, t, w, label_smoothing=ls, reduction=red)  # noqa
        assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
        assert tg.autograd.gradgradcheck(fn, (x,))
    x4 = _t(_rng.normal(size=(2, 3, 2, 2)))
    t4 = tg.tensor([[[0, 2], [1, 1]], [[2, -100], [0, 1]]])
    w3 = tg.tensor(_rng.uniform(0.5, 2, size=3))
    assert F.nll_loss(x4, t4, w3).grad_fn.name() == "NllLoss2DBackward0"
    fn = lambda a: F.nll_loss(a, t4, w3, reduction="none")  # noqa: E731
    assert tg.autograd.gradcheck(fn, (x4,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x4,))
    # every row ignored: 0 / 0 is NaN, with a zero gradient (PyTorch's)
    xa = _t(xs[:2])
    ya = F.nll_loss(xa, tg.tensor([-100, -100]), w)
    ya.backward()
    assert math.isnan(ya.item()) and not host(xa.grad).any()
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'weight'"):
        F.nll_loss(x, t, w.clone().requires_grad_())
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.nll_loss(x, tg.tensor([7, 0, 0, 0, 0, 0, 0, 0]))
    xh = tg.tensor(xs, dtype=tg.float16, requires_grad=True)
    yh = F.nll_loss(xh, t, w.half())
    yh.backward()
    assert yh.dtype is xh.grad.dtype is tg.float16


# -- autocast ----------------------------------------------------------------------------------

def test_nodes_are_one_op_to_autocast_backward_inside_the_region():
    """The composites' matmuls and einsums are not cast (PyTorch's nodes are single kernels),
    and a backward run inside the region gives gradients in the inputs' dtype."""
    x = _t(_rng.normal(size=(1, 2, 7, 7)), dtype=tg.float32)
    a = _t(_rng.normal(size=(3, 4)), dtype=tg.float32)
    with tg.autocast("cpu"):
        y = F.adaptive_avg_pool2d(x, 3)
        z = F.bilinear(a, a, tg.ones(2, 4, 4))
        (y.sum() + z.sum()).backward()
    assert y.dtype is z.dtype is x.grad.dtype is a.grad.dtype is tg.float32
    m = _windows(7, 3).sum(0)  # each input's share of the windows holding it
    np.testing.assert_allclose(host(x.grad), np.broadcast_to(np.outer(m, m), (1, 2, 7, 7)),
                               rtol=1e-6)


# -- PyTorch comparisons -----------------------------------------------------------------------

TORCH_CASES = {  # name: (fn(m, F, *inputs), input makers (numpy))
    "grid_sample": (lambda m, f, x, g: f.grid_sample(x, g, align_corners=False),
                    (lambda: _rng.normal(size=(2, 4, 8, 8)),
                     lambda: _rng.uniform(-1, 1, size=(2, 5, 5, 2)))),
    "bilinear": (lambda m, f, a, b, w: f.bilinear(a, b, w),
                 (lambda: _rng.normal(size=(16, 6)), lambda: _rng.normal(size=(16, 4)),
                  lambda: _rng.normal(size=(3, 6, 4)))),
    "area": (lambda m, f, x: f.interpolate(x, size=(3, 5), mode="area"),
             (lambda: _rng.normal(size=(2, 4, 8, 8)),)),
    "adaptive_avg_pool3d": (lambda m, f, x: f.adaptive_avg_pool3d(x, 3),
                            (lambda: _rng.normal(size=(1, 2, 5, 7, 4)),)),
    "bicubic": (lambda m, f, x: f.interpolate(x, scale_factor=1.5, mode="bicubic"),
                (lambda: _rng.normal(size=(2, 4, 8, 8)),)),
    "multi_margin": (lambda m, f, x: f.multi_margin_loss(x, m.tensor([0, 3, 2, 1]), p=2),
                     (lambda: _rng.normal(size=(4, 6)),)),
    "multilabel_margin": (lambda m, f, x: f.multilabel_margin_loss(
        x, m.tensor([[0, 3, -1, 0, 0, 0], [1, 2, 3, 4, 5, 0], [-1, 0, 0, 0, 0, 0],
                     [5, -1, 0, 0, 0, 0]])), (lambda: _rng.normal(size=(4, 6)),)),
    "unfold": (lambda m, f, x: f.unfold(x, 3, padding=1, stride=2),
               (lambda: _rng.normal(size=(2, 3, 7, 6)),)),
    "weighted_ce": (lambda m, f, x: f.cross_entropy(x, m.tensor([0, 3, 2, 1]),
                                                   weight=m.linspace(0.5, 2, 6, dtype=m.float64)),
                    (lambda: _rng.normal(size=(4, 6)),)),
}


@pytest.mark.parametrize("name", TORCH_CASES)
def test_against_torch_values_gradients_and_saved_bytes(name):
    torch = pytest.importorskip("torch")
    fn, makers = TORCH_CASES[name]
    arrays = [mk() for mk in makers]
    ours = [_t(a) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        yt = fn(torch, torch.nn.functional, *theirs)
    torch_bytes = sum(t.numel() * t.element_size() for t in
                      {t.untyped_storage().data_ptr(): t for t in packed}.values())
    nbytes, _, y = saved_bytes(lambda *a: fn(tg, F, *a), *ours)
    assert nbytes <= torch_bytes
    assert y.grad_fn.name() == yt.grad_fn.name() or name == "bilinear"
    np.testing.assert_allclose(host(y), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = _rng.normal(size=tuple(yt.shape))
    y.backward(tg.tensor(g))
    yt.backward(torch.tensor(g))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-10, atol=1e-12)
