"""Memory layouts of the nn ops against PyTorch 2.13: the strides of each result and of the
gradient each input's hook receives (before AccumulateGrad restrides a leaf's ``.grad``), for
channels-last, row-major and ambiguous inputs and output gradients.

PyTorch's rules checked here: ``cat`` is channels-last when every input's strides suggest it
(``compute_output_memory_format``), else row-major, and ``stack`` below the last dim is that
``cat`` viewed with the new dim; batch norm gives its output and input gradient in the format
the input suggests (row-major where the input is row-major as well); a convolution's input and
weight gradients are channels-last when the input's or the weight's strides suggest it, as are
max pooling's and the 2-D adaptive average pool's input gradients (a global pool's, a mean's,
is row-major); the 2-D nearest/bilinear resizes' input gradient follows the output gradient's
format, bicubic's is row-major; group norm, rms norm, roll, channel shuffle and the pixel
shuffles give their result (group norm its input gradient too) in the format the input
suggests, and instance norm normalises a row-major copy.

The strides were recorded from torch 2.13 (CPU) and are checked without torch; where torch is
installed it is run as well, and the values are compared with the same op on row-major inputs
(layout must not change them) and, for batch norm, with a float64 NumPy reference.
"""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg

C, CL, C5, CL5 = (0, 1, 2, 3), (0, 2, 3, 1), (0, 1, 2, 3, 4), (0, 2, 3, 4, 1)
V = (0,)  # a vector


def arr(seed: int, *shape) -> np.ndarray:
    return np.random.default_rng(seed).random(shape).astype(np.float32) - 0.5


def laid(lib, a: np.ndarray, order, device: str = "cpu"):
    """``a`` as a leaf requiring grad whose memory holds its dims in ``order`` (outermost
    first): CL is channels-last."""
    inv = tuple(np.argsort(order))
    t = lib.tensor(np.ascontiguousarray(a.transpose(order)), device=device).permute(*inv)
    return t.detach().requires_grad_(True)


def F(lib):
    return lib.nn.functional


def _bn(L, x, *wb):
    return F(L).batch_norm(x, None, None, *wb, training=True)


X4 = ((2, 4, 5, 6),)
# name: (op, inputs as (seed, shape, order), output gradient's order,
#        torch 2.13's result strides, torch 2.13's strides of the gradients the hooks see)
CASES = {
    "cat_cl_dim1": (lambda L, a, b: L.cat([a, b], 1), [(0, X4[0], CL), (1, X4[0], CL)], CL,
                    [(240, 1, 48, 8)], [(240, 1, 48, 8), (240, 1, 48, 8)]),
    "cat_cl_dim3": (lambda L, a, b: L.cat([a, b], 3), [(0, X4[0], CL), (1, X4[0], CL)], C,
                    [(240, 1, 48, 4)], [(240, 60, 12, 1), (240, 60, 12, 1)]),
    "cat_mixed": (lambda L, a, b: L.cat([a, b], 0), [(0, X4[0], CL), (1, X4[0], C)], C,
                  [(120, 30, 6, 1)], [(120, 30, 6, 1), (120, 30, 6, 1)]),
    "cat_cl3d": (lambda L, a, b: L.cat([a, b], 1), [(0, (2, 3, 2, 3, 4), CL5),
                                                   (1, (2, 3, 2, 3, 4), CL5)], C5,
                 [(144, 1, 72, 24, 6)], [(144, 24, 12, 4, 1), (144, 24, 12, 4, 1)]),
    "stack_cl_dim0": (lambda L, a, b: L.stack([a, b], 0), [(0, X4[0], CL), (1, X4[0], CL)], C5,
                      [(240, 120, 1, 24, 4)], [(120, 30, 6, 1), (120, 30, 6, 1)]),
    "stack_cl_dim2": (lambda L, a, b: L.stack([a, b], 2), [(0, X4[0], CL), (1, X4[0], CL)], C5,
                      [(240, 1, 120, 24, 4)], [(240, 60, 6, 1), (240, 60, 6, 1)]),
    "stack_cl_dim4": (lambda L, a, b: L.stack([a, b], 4), [(0, X4[0], CL), (1, X4[0], CL)], C5,
                      [(240, 60, 12, 2, 1)], [(240, 60, 12, 2), (240, 60, 12, 2)]),
    "batch_norm_cl": (_bn, [(2, X4[0], CL), (3, (4,), V), (4, (4,), V)], C,
                      [(120, 1, 24, 4)], [(120, 1, 24, 4), (1,), (1,)]),
    "batch_norm_eval_cl": (lambda L, x: F(L).batch_norm(x, L.zeros(4), L.ones(4) * 2.0),
                           [(2, X4[0], CL)], C, [(120, 1, 24, 4)], [(120, 1, 24, 4)]),
    "batch_norm_eval_g_cl": (lambda L, x: F(L).batch_norm(x, L.zeros(4), L.ones(4) * 2.0),
                             [(2, X4[0], C)], CL, [(120, 30, 6, 1)], [(120, 30, 6, 1)]),
    "constant_pad_cl": (lambda L, x: F(L).pad(x, (1, 2, 0, 1), value=0.5), [(2, X4[0], CL)],
                        C, [(216, 1, 36, 4)], [(120, 30, 6, 1)]),
    "constant_pad_g_cl": (lambda L, x: F(L).pad(x, (1, 2, 0, 1), value=0.5), [(2, X4[0], C)],
                          CL, [(216, 54, 9, 1)], [(120, 1, 24, 4)]),
    "batch_norm_n1hw": (_bn, [(2, (2, 1, 5, 6), CL)], C, [(30, 30, 6, 1)], [(30, 30, 6, 1)]),
    "batch_norm_cl3d": (_bn, [(2, (2, 3, 2, 3, 4), CL5)], C5,
                        [(72, 1, 36, 12, 3)], [(72, 1, 36, 12, 3)]),
    "conv2d_x_cl": (lambda L, x, w, b: F(L).conv2d(x, w, b, padding=1),
                    [(5, X4[0], CL), (6, (3, 4, 3, 3), C), (7, (3,), V)], C,
                    [(90, 1, 18, 3)], [(120, 1, 24, 4), (36, 1, 12, 4), (1,)]),
    "conv2d_w_cl": (lambda L, x, w: F(L).conv2d(x, w, stride=2),
                    [(5, X4[0], C), (6, (3, 4, 3, 3), CL)], CL,
                    [(12, 1, 6, 3)], [(120, 1, 24, 4), (36, 1, 12, 4)]),
    "conv2d_1x1": (lambda L, x, w: F(L).conv2d(x, w), [(5, X4[0], C), (6, (3, 4, 1, 1), C)], C,
                   [(90, 30, 6, 1)], [(120, 30, 6, 1), (4, 1, 1, 1)]),
    "conv_transpose2d_cl": (lambda L, x, w: F(L).conv_transpose2d(x, w, stride=2),
                            [(5, X4[0], CL), (6, (4, 3, 3, 3), C)], C,
                            [(429, 1, 39, 3)], [(120, 1, 24, 4), (27, 1, 9, 3)]),
    "max_pool2d_cl": (lambda L, x: F(L).max_pool2d(x, 3, 1, 1, return_indices=True),
                      [(8, X4[0], CL)], C,
                      [(120, 1, 24, 4), (120, 1, 24, 4)], [(120, 1, 24, 4)]),
    "adaptive_avg_pool2d_cl": (lambda L, x: F(L).adaptive_avg_pool2d(x, (2, 3)),
                               [(8, X4[0], CL)], C, [(24, 1, 12, 4)], [(120, 1, 24, 4)]),
    "adaptive_avg_pool2d_1_cl": (lambda L, x: F(L).adaptive_avg_pool2d(x, 1), [(8, X4[0], CL)],
                                 C, [(4, 1, 4, 4)], [(120, 30, 6, 1)]),
    "adaptive_avg_pool2d_1": (lambda L, x: F(L).adaptive_avg_pool2d(x, 1), [(8, X4[0], C)], C,
                              [(4, 1, 1, 1)], [(120, 30, 6, 1)]),
    "nearest_g_cl": (lambda L, x: F(L).interpolate(x, scale_factor=2), [(8, X4[0], C)], CL,
                     [(480, 120, 12, 1)], [(120, 1, 24, 4)]),
    "bilinear_cl": (lambda L, x: F(L).interpolate(x, size=(3, 4), mode="bilinear"),
                    [(8, X4[0], CL)], C, [(48, 1, 16, 4)], [(120, 30, 6, 1)]),
    "bicubic_g_cl": (lambda L, x: F(L).interpolate(x, scale_factor=2, mode="bicubic"),
                     [(8, X4[0], CL)], CL, [(480, 1, 48, 4)], [(120, 30, 6, 1)]),
    # group norm, rms norm, roll, channel shuffle and the pixel shuffles: the result in the
    # format the input suggests (group norm's input gradient too); instance norm normalises a
    # row-major copy
    "group_norm_cl": (lambda L, x: F(L).group_norm(x, 2), [(2, X4[0], CL)], C,
                      [(120, 1, 24, 4)], [(120, 1, 24, 4)]),
    "group_norm_g_cl": (lambda L, x: F(L).group_norm(x, 2), [(2, X4[0], C)], CL,
                        [(120, 30, 6, 1)], [(120, 30, 6, 1)]),
    "instance_norm_cl": (lambda L, x: F(L).instance_norm(x), [(2, X4[0], CL)], CL,
                         [(120, 30, 6, 1)], [(120, 30, 6, 1)]),
    "rms_norm_cl": (lambda L, x: F(L).rms_norm(x, (6,)), [(2, X4[0], CL)], C,
                    [(120, 1, 24, 4)], [(120, 30, 6, 1)]),
    "roll_cl": (lambda L, x: L.roll(x, 1, 2), [(2, X4[0], CL)], C,
                [(120, 1, 24, 4)], [(120, 30, 6, 1)]),
    "roll_permuted": (lambda L, x: L.roll(x, (1, 2), (1, 3)), [(2, X4[0], (0, 2, 1, 3))], C,
                      [(120, 30, 6, 1)], [(120, 30, 6, 1)]),
    "channel_shuffle_cl": (lambda L, x: F(L).channel_shuffle(x, 2), [(2, X4[0], CL)], C,
                           [(120, 1, 24, 4)], [(120, 30, 6, 1)]),
    "pixel_shuffle_cl": (lambda L, x: F(L).pixel_shuffle(x, 2), [(2, (2, 8, 3, 2), CL)], C,
                         [(48, 1, 8, 2)], [(48, 6, 2, 1)]),
    "pixel_unshuffle_cl": (lambda L, x: F(L).pixel_unshuffle(x, 2), [(2, (2, 4, 6, 4), CL)], C,
                           [(96, 1, 32, 16)], [(96, 24, 4, 1)]),
}
# a few on the CUDA device too (emulated by the interpreter where no GPU: kept small)
CUDA_CASES = ("cat_cl_dim1", "stack_cl_dim2", "batch_norm_cl", "conv2d_x_cl", "conv2d_1x1",
              "adaptive_avg_pool2d_cl", "bilinear_cl", "nearest_g_cl", "group_norm_cl",
              "roll_cl")


def _run(lib, name: str, device: str = "cpu", row_major: bool = False):
    """(outputs, hooked gradients by input, leaves) of case ``name`` under ``lib``; with
    ``row_major`` every input and the output gradient are row-major (the reference values)."""
    op, specs, g_order, _, _ = CASES[name]
    xs = [laid(lib, arr(seed, *shape), tuple(range(len(shape))) if row_major else order,
               device) for seed, shape, order in specs]
    seen = {}
    for i, x in enumerate(xs):
        x.register_hook(lambda g, i=i: seen.__setitem__(i, g))
    out = op(lib, *xs)
    outs = out if isinstance(out, tuple) else (out,)
    y = outs[0]
    order = tuple(range(y.ndim)) if row_major else g_order
    y.backward(laid(lib, arr(9, *y.shape), order, device).detach())
    return outs, [seen[i] for i in range(len(xs))], xs


def _strides(ts) -> list:
    return [tuple(t.stride()) for t in ts]


def _host(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def _check(name: str, device: str) -> None:
    _, _, _, out_strides, grad_strides = CASES[name]
    outs, grads, _ = _run(tg, name, device)
    assert _strides(outs) == out_strides
    assert _strides(grads) == grad_strides
    # the layout changes no value: the same op on row-major inputs
    ref_outs, ref_grads, _ = _run(tg, name, device, row_major=True)
    for a, b in zip(outs + tuple(grads), ref_outs + tuple(ref_grads)):
        np.testing.assert_allclose(_host(a), _host(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_layout_as_torch(name: str) -> None:
    _check(name, "cpu")


@pytest.mark.parametrize("name", CUDA_CASES)
def test_layout_as_torch_cuda(name: str) -> None:
    _check(name, "cuda")


@pytest.mark.parametrize("name", sorted(CASES))
def test_recorded_strides_are_torchs(name: str) -> None:
    """The recorded strides are what the installed torch gives, and so are the values."""
    torch = pytest.importorskip("torch")
    _, _, _, out_strides, grad_strides = CASES[name]
    t_outs, t_grads, _ = _run(torch, name)
    assert _strides(t_outs) == out_strides
    assert _strides(t_grads) == grad_strides
    outs, grads, _ = _run(tg, name)
    for a, b in zip(outs + tuple(grads), t_outs + tuple(t_grads)):
        np.testing.assert_allclose(_host(a), _host(b), rtol=1e-4, atol=1e-5)


# Inputs whose strides suggest channels-last without being densely so, or that are both
# formats at once: PyTorch's ops read the strides (suggest_memory_format), so a crop or a
# channel split of a channels-last tensor, and an (N, 1, H, W) one made channels-last, keep
# that format. (input kind, op): torch 2.13's result strides.
def _cropped(L, a):
    return L.tensor(a).to(memory_format=L.channels_last)[:, :, :4, :4]


def _channel_split(L, a):
    return L.tensor(a).to(memory_format=L.channels_last)[:, :2]


def _one_channel(L, a):
    return L.tensor(a[:, :1]).to(memory_format=L.channels_last)


SUGGESTED = {
    ("crop", "conv2d"): (_cropped, lambda L, x: F(L).conv2d(x, L.ones(3, 4, 1, 1)),
                         (48, 1, 12, 3)),
    ("crop", "max_pool2d"): (_cropped, lambda L, x: F(L).max_pool2d(x, 2), (16, 1, 8, 4)),
    ("crop", "reflect_pad"): (_cropped, lambda L, x: F(L).pad(x, (1, 1, 1, 1), mode="reflect"),
                              (144, 1, 24, 4)),
    ("crop", "bilinear"): (_cropped, lambda L, x: F(L).interpolate(x, scale_factor=2,
                                                                   mode="bilinear"),
                           (256, 1, 32, 4)),
    ("split", "avg_pool2d"): (_channel_split, lambda L, x: F(L).avg_pool2d(x, 2), (18, 1, 6, 2)),
    ("split", "group_norm"): (_channel_split, lambda L, x: F(L).group_norm(x, 1),
                              (72, 1, 12, 2)),
    ("split", "channel_shuffle"): (_channel_split, lambda L, x: F(L).channel_shuffle(x, 2),
                                   (72, 1, 12, 2)),
    ("one_channel", "conv2d"): (_one_channel, lambda L, x: F(L).conv2d(x, L.ones(3, 1, 1, 1)),
                                (108, 1, 18, 3)),
    ("one_channel", "adaptive_max"): (_one_channel,
                                      lambda L, x: F(L).adaptive_max_pool2d(x, 2), (4, 1, 2, 1)),
    ("one_channel", "pixel_unshuffle"): (_one_channel, lambda L, x: F(L).pixel_unshuffle(x, 2),
                                         (36, 1, 12, 4)),
}


@pytest.mark.parametrize("key", sorted(SUGGESTED))
def test_suggested_channels_last(key) -> None:
    make, op, strides = SUGGESTED[key]
    a = arr(3, 2, 4, 6, 6)
    x = make(tg, a)
    y = op(tg, x)
    assert tuple(y.stride()) == strides
    # the layout changes no value: the same op on a row-major copy
    np.testing.assert_allclose(_host(y), _host(op(tg, x.contiguous())), rtol=1e-5, atol=1e-6)
    torch = pytest.importorskip("torch")
    ty = op(torch, make(torch, a))
    assert tuple(ty.stride()) == strides
    np.testing.assert_allclose(_host(y), _host(ty), rtol=1e-4, atol=1e-5)


def test_channel_shuffle_of_one_group_is_a_new_tensor() -> None:
    x = tg.tensor(arr(3, 2, 4, 3, 3))
    y = F(tg).channel_shuffle(x, 1)
    y.add_(1.0)  # (no write reaches x: PyTorch's result is a copy)
    np.testing.assert_array_equal(_host(x), arr(3, 2, 4, 3, 3))


def test_batch_norm_channels_last_float64_reference() -> None:
    """Channels-last batch norm (NHWC rows in the kernel) against float64 NumPy: the output and
    the input, weight and bias gradients."""
    x64, w64, b64 = arr(2, 3, 5, 4, 6).astype(np.float64), arr(3, 5) + 1.0, arr(4, 5)
    g64 = arr(9, 3, 5, 4, 6).astype(np.float64)
    x = laid(tg, x64.astype(np.float32), CL)
    w, b = (tg.tensor(v.astype(np.float32), requires_grad=True) for v in (w64, b64))
    y = F(tg).batch_norm(x, None, None, w, b, training=True)
    y.backward(laid(tg, g64.astype(np.float32), CL).detach())
    dims, n = (0, 2, 3), x64.size // 5
    mu, var = x64.mean(dims, keepdims=True), x64.var(dims, keepdims=True)
    xhat = (x64 - mu) / np.sqrt(var + 1e-5)
    shape = (1, 5, 1, 1)
    ref = xhat * w64.reshape(shape) + b64.reshape(shape)
    gs, gxs = g64.sum(dims, keepdims=True), (g64 * xhat).sum(dims, keepdims=True)
    dx = w64.reshape(shape) / np.sqrt(var + 1e-5) * (g64 - gs / n - xhat * gxs / n)
    assert y.is_contiguous(memory_format=tg.channels_last) and not y.is_contiguous()
    np.testing.assert_allclose(_host(y), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_host(x.grad), dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_host(w.grad), gxs.reshape(5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_host(b.grad), gs.reshape(5), rtol=1e-5, atol=1e-5)


def test_cat_skipped_empty_input_makes_row_major() -> None:
    """A skipped 1-D empty input counts as row-major in PyTorch's rule: (240, 30, 6, 1)."""
    a = tg.randn(2, 4, 5, 6).contiguous(memory_format=tg.channels_last)
    r = tg.cat([a, tg.empty(0), a], 1)
    assert r.stride() == (240, 30, 6, 1)
    np.testing.assert_array_equal(r.numpy(), np.concatenate([a.numpy()] * 2, 1))


def test_channels_last_cnn_step_gradients_match_row_major() -> None:
    """A conv -> batch norm -> relu -> max pool -> conv -> mean step, channels-last, gives the
    row-major step's loss and gradients (layout changes no value), its activations' gradients
    channels-last."""
    def step(fmt):
        tg.manual_seed(0)
        net = tg.nn.Sequential(tg.nn.Conv2d(3, 8, 3, padding=1), tg.nn.BatchNorm2d(8),
                               tg.nn.ReLU(), tg.nn.MaxPool2d(2), tg.nn.Conv2d(8, 4, 3))
        net = net.to(memory_format=fmt)
        x = tg.tensor(arr(11, 4, 3, 8, 8)).contiguous(memory_format=fmt).requires_grad_(True)
        loss = net(x).square().mean()
        loss.backward()
        return loss, x.grad, [p.grad for p in net.parameters()]

    loss, dx, grads = step(tg.channels_last)
    loss0, dx0, grads0 = step(tg.contiguous_format)
    assert dx.is_contiguous(memory_format=tg.channels_last) and not dx.is_contiguous()
    np.testing.assert_allclose(loss.item(), loss0.item(), rtol=1e-5)
    for a, b in zip([dx] + grads, [dx0] + grads0):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
