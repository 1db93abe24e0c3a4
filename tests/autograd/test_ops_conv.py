"""The fused convolution primitive (autograd/ops/conv.py) under nn.functional's conv1d/conv2d:
gradients against central differences, the fused backward against the recorded composite rule
(create_graph) and against the im2col composite it replaced, second derivatives, forward AD;
on the CPU and on the emulated CUDA device (the Triton kernels through the interpreter)."""

import numpy as np
import pytest
from tritongrad.autograd import forward_ad as fwAD
from tritongrad.nn import _convolution
from tritongrad.nn import functional as F

import tritongrad as tg
from tests.helpers import host

rng = np.random.default_rng(5)

# (x shape, w shape, stride, padding, dilation, groups)
CASES = [
    ((2, 4, 6, 5), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((1, 3, 5, 7), (2, 3, 2, 3), 1, "same", (2, 1), 1),  # asymmetric: even kernel, 'same'
    ((2, 2, 4, 4), (2, 1, 1, 1), (1, 2), 1, 1, 2),
]


def _t(a, device, dtype=tg.float64, grad=True):
    return tg.tensor(a, dtype=dtype, device=device, requires_grad=grad)


def _case(case, device, dtype=tg.float64):
    xs, ws, stride, padding, dilation, groups = case
    x = _t(rng.standard_normal(xs), device, dtype)
    w = _t(rng.standard_normal(ws), device, dtype)
    b = _t(rng.standard_normal(ws[0]), device, dtype)
    return x, w, b, (stride, padding, dilation, groups)


def _composite(x, w, b, stride, padding, dilation, groups, nd=2):
    return _convolution._conv(x, w, b, stride, padding, dilation, groups, nd,
                              "conv2d" if nd == 2 else "conv1d", fused=False)


# The Triton interpreter runs each launch in tens of milliseconds: on the emulated device the
# numerical checks take one small case (the kernel tests cover the shapes).
TINY = ((1, 2, 4, 3), (2, 1, 2, 2), (2, 1), (1, 0), 1, 2)


@pytest.mark.parametrize("case", CASES)
def test_gradcheck_through_the_fused_op(case, device):
    if device == "cuda" and case is not CASES[0]:
        pytest.skip("one case on the emulated device (see TINY)")
    x, w, b, args = _case(TINY if device == "cuda" else case, device)
    y = F.conv2d(x, w, b, *args)
    assert type(y.grad_fn).__name__ == "ConvolutionBackward0"
    assert tg.autograd.gradcheck(lambda x, w, b: F.conv2d(x, w, b, *args), (x, w, b))


@pytest.mark.parametrize("case", CASES[:2])
def test_gradgradcheck(case):
    """Second derivatives through the recorded rule (the composite Tensor ops, the same on
    both devices; test_create_graph_rule_matches_the_fused_backward runs it on CUDA)."""
    x, w, b, args = _case(case, "cpu")
    assert tg.autograd.gradgradcheck(lambda x, w, b: F.conv2d(x, w, b, *args), (x, w, b))


@pytest.mark.parametrize("dtype", [tg.float64, tg.float32])
@pytest.mark.parametrize("case", CASES)
def test_fused_matches_the_composite(case, device, dtype):
    x, w, b, args = _case(case, device, dtype)
    g = tg.tensor(rng.standard_normal(tuple(F.conv2d(x, w, b, *args).shape)), dtype=dtype,
                  device=device)
    outs = []
    for fn in (F.conv2d, _composite):
        y = fn(x, w, b, *args)
        outs.append([host(y)] + [host(t) for t in tg.autograd.grad(y, (x, w, b), g)])
    tol = 1e-12 if dtype is tg.float64 else 2e-5
    for fused, comp in zip(*outs):
        np.testing.assert_allclose(fused, comp, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES)
def test_kept_columns_only_where_they_are_read(case, monkeypatch):
    # the CPU forward keeps its im2col columns on the node while the weight needs a gradient
    # and no saved-tensor hooks are active; the backward reads them (the same gradients as
    # gathering them again), and they go with the saved tensors
    from tritongrad.autograd.ops import conv as conv_ops
    from tritongrad.kernels import numpy as kn

    used = []
    real = kn.conv2d_backward_columns

    def spy(*args):
        used.append(args[-1] is not None)
        return real(*args)

    monkeypatch.setattr(kn, "conv2d_backward_columns", spy)
    x, w, b, args = _case(case, "cpu")
    y = F.conv2d(x, w, b, *args)
    node = y.grad_fn
    depthwise = w.shape[1] == 1 and w.shape[0] == args[-1]  # (no im2col: nothing to keep)
    assert isinstance(node, conv_ops.ConvolutionBackward0)
    assert (node._columns is None) == depthwise
    g = tg.tensor(rng.standard_normal(tuple(y.shape)))
    kept = tg.autograd.grad(y, (x, w, b), g)
    assert used == ([] if depthwise else [True])
    assert node._columns is None  # released with the saved tensors
    y2 = F.conv2d(x, w, b, *args)
    y2.grad_fn._columns = None  # gathered again
    again = tg.autograd.grad(y2, (x, w, b), g)
    for a, c in zip(kept, again):
        np.testing.assert_array_equal(host(a), host(c))
    # not kept: the weight needs no gradient, or saved-tensor hooks decide what is kept
    assert F.conv2d(x, w.detach(), b, *args).grad_fn._columns is None
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert F.conv2d(x, w, b, *args).grad_fn._columns is None
    with tg.no_grad():
        F.conv2d(x, w, b, *args)  # (nothing recorded, nothing kept)


def test_create_graph_rule_matches_the_fused_backward(device):
    """The recorded rule (composite Tensor ops) gives the fused kernel's first derivatives."""
    x, w, b, args = _case(CASES[0], device)
    y = F.conv2d(x, w, b, *args)
    g = tg.tensor(rng.standard_normal(tuple(y.shape)), device=device)
    fused = tg.autograd.grad(y, (x, w, b), g, retain_graph=True)
    traced = tg.autograd.grad(y, (x, w, b), g, create_graph=True)
    assert all(t.grad_fn is not None for t in traced[:2])
    for a, c in zip(fused, traced):
        np.testing.assert_allclose(host(a), host(c), rtol=1e-12, atol=1e-12)


def test_only_the_needed_gradients(device):
    x, w, _, args = _case(CASES[0], device)
    xd = x.detach()
    y = F.conv2d(xd, w, None, *args)
    y.sum().backward()
    assert w.grad is not None and xd.grad is None
    yc = _composite(xd, w.detach().requires_grad_(), None, *args)
    np.testing.assert_allclose(host(y), host(yc), rtol=1e-12, atol=1e-12)


def test_conv1d_goes_through_the_fused_op(device):
    x = _t(rng.standard_normal((2, 4, 9)), device)
    w = _t(rng.standard_normal((6, 2, 3)), device)
    b = _t(rng.standard_normal(6), device)
    for kw in ({"padding": "same", "dilation": 2, "groups": 2}, {"stride": 2, "groups": 2}):
        y = F.conv1d(x, w, b, **kw)
        assert type(y.grad_fn.next_functions[0][0]).__name__ == "ConvolutionBackward0"
        args = (kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1), kw["groups"])
        np.testing.assert_allclose(host(y), host(_composite(x, w, b, *args, nd=1)), rtol=1e-12,
                                   atol=1e-12)
        if device == "cpu":  # (the interpreter is slow for numerical checks, see TINY)
            assert tg.autograd.gradcheck(lambda x, w, b, kw=kw: F.conv1d(x, w, b, **kw),
                                         (x, w, b))
        else:
            grads = [tg.autograd.grad(fn(x, w, b).sum(), (x, w, b))
                     for fn in (lambda x, w, b, kw=kw: F.conv1d(x, w, b, **kw),
                                lambda x, w, b, a=args: _composite(x, w, b, *a, nd=1))]
            for a, c in zip(*grads):
                np.testing.assert_allclose(host(a), host(c), rtol=1e-12, atol=1e-12)


def test_forward_ad_is_the_composites(device):
    x, w, b, args = _case(CASES[0], device)
    tx, tw, tb = (tg.tensor(rng.standard_normal(tuple(t.shape)), device=device)
                  for t in (x, w, b))
    tangents = []
    for fn in (F.conv2d, _composite):
        with fwAD.dual_level():
            y = fn(fwAD.make_dual(x.detach(), tx), fwAD.make_dual(w.detach(), tw),
                   fwAD.make_dual(b.detach(), tb), *args)
            tangents.append(host(fwAD.unpack_dual(y).tangent))
    np.testing.assert_allclose(tangents[0], tangents[1], rtol=1e-12, atol=1e-12)


def test_mixed_dtypes_refused_and_integers_stay_composite():
    # PyTorch refuses an input and a weight of different dtypes (no promotion)
    x = tg.ones(1, 1, 3, 3)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.conv2d(x, tg.ones(1, 1, 2, 2, dtype=tg.float64))
    y = F.conv2d(x.double(), tg.ones(1, 1, 2, 2, dtype=tg.float64))
    assert y.dtype is tg.float64
    np.testing.assert_array_equal(host(y), 4.0)
    yi = F.conv2d(tg.ones(1, 1, 3, 3, dtype=tg.int64), tg.ones(1, 1, 2, 2, dtype=tg.int64))
    assert yi.dtype is tg.int64
    np.testing.assert_array_equal(host(yi), 4)


def test_training_layers_in_float32(device):
    m = tg.nn.Conv2d(3, 4, 3, padding=1, device=device)
    x = tg.randn(2, 3, 6, 6, device=device)
    y = m(x)
    (y * y).mean().backward()
    ref = _composite(x, m.weight, m.bias, 1, 1, 1, 1)
    np.testing.assert_allclose(host(y), host(ref), rtol=1e-5, atol=1e-5)
    assert m.weight.grad.shape == m.weight.shape and m.bias.grad.shape == (4,)


def test_errors_name_the_op():
    for fn, x, w in ((F.conv1d, tg.randn(1, 2, 5), tg.randn(3, 2, 2, device="cuda")),
                     (F.conv2d, tg.randn(1, 2, 5, 5), tg.randn(3, 2, 2, 2, device="cuda"))):
        with pytest.raises(RuntimeError, match=f"same device.*{fn.__name__}"):
            fn(x, w)
