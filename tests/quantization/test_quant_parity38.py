"""Session 38's quantization sweep against torch 2.13: the quantized batch norm
(``nnq.BatchNorm2d`` / ``qF.batch_norm``, swapped in by ``convert`` for an unfused
``nn.BatchNorm2d``), the fused observer's zero point on a tie, fake quantization's axis
errors, and what a quantized tensor answers for an op it has no kernel for. Expected values
are computed here from the kernels' formulas in NumPy; torch is compared where installed."""

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.ao.nn.intrinsic.qat as nniqat
import tritongrad.ao.nn.quantized as nnq
import tritongrad.ao.quantization as tq
from tests.quantization.helpers import Q

pytestmark = [pytest.mark.filterwarnings("ignore:.*reduce_range will be deprecated"),
              pytest.mark.filterwarnings("ignore:.*deprecated:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:.*quantized tensor creation:UserWarning")]

_f32 = np.float32


def _bn_stats(c, seed):
    r = np.random.default_rng(seed)
    return (r.standard_normal(c).astype(_f32), r.uniform(0.2, 3, c).astype(_f32),
            r.standard_normal(c).astype(_f32), r.standard_normal(c).astype(_f32))


def _bn_reference(ints, in_scale, in_zp, mean, var, w, b, eps, out_scale, out_zp):
    """PyTorch's quantized batch norm kernel, written out: float32 per-channel factors
    (its double steps in float64), one fused multiply-add, round half to even."""
    inv = (1.0 / np.sqrt(var + _f32(eps)).astype(np.float64)).astype(_f32)
    alpha = ((inv * w).astype(_f32).astype(np.float64) * (in_scale / out_scale)).astype(_f32)
    beta = ((b - mean * inv * w).astype(np.float64) / out_scale).astype(_f32)
    shape = (1, -1, 1, 1)
    y = (alpha.astype(np.float64).reshape(shape) * (ints.astype(np.float64) - in_zp)
         + beta.astype(np.float64).reshape(shape)).astype(_f32)
    return np.clip(np.rint(y) + out_zp, 0, 255)


@pytest.mark.parametrize("c", [3, 8, 40])
def test_quantized_batch_norm_module_matches_the_kernel_formula(c):
    mean, var, w, b = _bn_stats(c, c)
    m = nnq.BatchNorm2d(c, eps=1e-3)
    m.running_mean.copy_(tg.tensor(mean))
    m.running_var.copy_(tg.tensor(var))
    with tg.no_grad():
        m.weight.copy_(tg.tensor(w))
        m.bias.copy_(tg.tensor(b))
    m.scale, m.zero_point = tg.tensor(0.037), tg.tensor(100)
    x = np.random.default_rng(c + 1).standard_normal((2, c, 5, 3)).astype(_f32)
    qx = Q.quantize_per_tensor(tg.tensor(x), 0.023, 120, Q.quint8)
    out = m(qx)
    assert out.dtype == Q.quint8 and out.q_scale() == pytest.approx(0.037)
    assert out.q_zero_point() == 100
    want = _bn_reference(qx.int_repr().numpy(), 0.023, 120, mean, var, w, b, 1e-3, 0.037, 100)
    np.testing.assert_array_equal(out.int_repr().numpy(), want)
    # (the real batch norm of the quantized input, within a step of the output's scale)
    xd = qx.dequantize().numpy()
    real = (xd - mean[None, :, None, None]) / np.sqrt(var + 1e-3)[None, :, None, None] \
        * w[None, :, None, None] + b[None, :, None, None]
    inside = (real > -100 * 0.037 + 0.1) & (real < 155 * 0.037 - 0.1)
    np.testing.assert_allclose(out.dequantize().numpy()[inside], real[inside], atol=0.04)
    assert repr(m).startswith("QuantizedBatchNorm2d(")
    assert {"scale", "zero_point", "running_mean", "weight"} <= set(m.state_dict())
    with pytest.raises(RuntimeError, match="Expecting the input tensor of rank 4"):
        m(Q.quantize_per_tensor(tg.ones(c, 4, 4), 0.1, 0, Q.quint8))

    torch = pytest.importorskip("torch")
    tm = torch.ao.nn.quantized.BatchNorm2d(c, eps=1e-3)
    tm.load_state_dict({"weight": torch.tensor(w), "bias": torch.tensor(b),
                        "running_mean": torch.tensor(mean), "running_var": torch.tensor(var),
                        "num_batches_tracked": torch.tensor(0), "scale": torch.tensor(0.037),
                        "zero_point": torch.tensor(100)})
    tq_x = torch.quantize_per_tensor(torch.tensor(x), 0.023, 120, torch.quint8)
    np.testing.assert_array_equal(tm(tq_x).int_repr().numpy(), out.int_repr().numpy())


def _conv_bn_model(lib, stubs):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = stubs.QuantStub()
            self.conv = lib.nn.Conv2d(2, 3, 3, padding=1)
            self.bn = lib.nn.BatchNorm2d(3)
            self.dequant = stubs.DeQuantStub()

        def forward(self, x):
            return self.dequant(self.bn(self.conv(self.quant(x))))
    m = M().eval()
    r = np.random.default_rng(1)
    state = {"conv.weight": r.integers(-8, 8, (3, 2, 3, 3)) / 16,
             "conv.bias": r.integers(-8, 8, 3) / 16,
             "bn.weight": np.array([0.5, 2.0, -1.0]), "bn.bias": np.array([0.25, 0.0, -0.5]),
             "bn.running_mean": np.array([0.5, -0.25, 0.125]),
             "bn.running_var": np.array([0.25, 1.0, 4.0])}
    sd = m.state_dict()
    for k, v in state.items():
        sd[k] = lib.tensor(v.astype(_f32))
    m.load_state_dict(sd)
    return m


def test_convert_swaps_an_unfused_batch_norm_for_the_quantized_one():
    x = (np.random.default_rng(2).integers(-16, 16, (2, 2, 4, 4)) / 8).astype(_f32)
    m = _conv_bn_model(tg, tq)
    m.qconfig = tq.get_default_qconfig("qnnpack")
    p = tq.prepare(m)
    assert hasattr(p.bn, "activation_post_process")
    p(tg.tensor(x))
    c = tq.convert(p)
    assert type(c.bn) is nnq.BatchNorm2d
    qa = c.conv(c.quant(tg.tensor(x)))
    s, z = p.bn.activation_post_process.calculate_qparams()
    assert c.bn.scale.item() == pytest.approx(float(s)) and int(c.bn.zero_point) == int(z)
    qb = c.bn(qa)
    mean, var, w, b = (m.bn.running_mean.numpy(), m.bn.running_var.numpy(),
                       m.bn.weight.detach().numpy(), m.bn.bias.detach().numpy())
    want = _bn_reference(qa.int_repr().numpy(), qa.q_scale(), qa.q_zero_point(), mean, var, w,
                         b, m.bn.eps, float(s), int(z))
    np.testing.assert_array_equal(qb.int_repr().numpy(), want)

    torch = pytest.importorskip("torch")
    import torch.ao.quantization as ttq
    tm = _conv_bn_model(torch, ttq)
    tm.qconfig = ttq.get_default_qconfig("qnnpack")
    tp = ttq.prepare(tm)
    tp(torch.tensor(x))
    tc = ttq.convert(tp)
    np.testing.assert_array_equal(tc(torch.tensor(x)).numpy(), c(tg.tensor(x)).numpy())


def test_qat_convert_leaves_the_batch_norm_inside_a_fused_conv_bn():
    m = _conv_bn_model(tg, tq).train()
    m.qconfig = tq.get_default_qat_qconfig("qnnpack")
    p = tq.prepare_qat(tq.fuse_modules_qat(m, [["conv", "bn"]]))
    assert type(p.conv) is nniqat.ConvBn2d
    p(tg.ones(2, 2, 4, 4))
    c = tq.convert(p.eval())
    assert type(c.conv) is nnq.Conv2d and type(c.bn) is tg.nn.Identity


def test_fused_observer_zero_point_on_a_tie_uses_the_float32_scale():
    # FBGEMM's ChooseQuantizationParams keeps the scale in a float32: 2000 / 255 rounds up,
    # so 1000 / scale is just under 127.5 and the zero point is 127 (dynamic quantization's
    # float64 scale gives exactly 127.5, rounded to 128)
    fq = tq.FusedMovingAvgObsFakeQuantize()
    fq(tg.tensor([-1000.0, 3.0, 1000.0]))
    assert fq.scale.item() == float(_f32(2000 / 255)) and fq.zero_point.tolist() == [127]
    scale = float(_f32(2000 / 255))
    assert 0 - (-1000.0) / scale < 127.5
    assert Q.quantize_per_tensor_dynamic(tg.tensor([-1000.0, 1000.0]), Q.quint8,
                                         False).q_zero_point() == 128
    x = tg.tensor([-137.125, 0.5, 137.125])
    fq = tq.FusedMovingAvgObsFakeQuantize()
    fq(x)
    assert fq.zero_point.tolist() == [127]

    torch = pytest.importorskip("torch")
    tfq = torch.ao.quantization.FusedMovingAvgObsFakeQuantize()
    y = tfq(torch.tensor([-137.125, 0.5, 137.125]))
    assert tfq.zero_point.tolist() == [127]
    np.testing.assert_array_equal(y.numpy(), fq(x).numpy())


def test_fake_quantize_per_channel_axis_errors():
    x = tg.ones(4, 6)
    sc, zp = tg.full((6,), 0.1), tg.zeros(6, dtype=tg.int32)
    for axis in (2, 3, -3):
        with pytest.raises(IndexError, match="Dimension out of range"):
            tg.fake_quantize_per_channel_affine(x, sc, zp, axis, -128, 127)
    with pytest.raises(RuntimeError, match="`axis` must be between 0"):
        tg.fake_quantize_per_channel_affine(x, sc, zp, -1, -128, 127)
    y = tg.fake_quantize_per_channel_affine(x, sc, zp, 1, -128, 127)
    np.testing.assert_allclose(y.numpy(), np.full((4, 6), 1.0, _f32), rtol=1e-6)


def test_quantized_tensor_without_a_kernel_and_t():
    q = Q.quantize_per_tensor(tg.tensor([[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]]), 0.5, 2, Q.quint8)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::exp'"):
        tg.exp(q)
    with pytest.raises(TypeError):  # (what the failed dispatch raised before)
        tg.exp(q)
    qt = q.t()
    assert tuple(qt.shape) == (3, 2) and qt.q_scale() == 0.5
    assert qt.int_repr().tolist() == [[3, 6], [4, 7], [5, 8]]
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions"):
        Q.quantize_per_tensor(tg.ones(2, 2, 2), 0.5, 2, Q.quint8).t()
    with pytest.raises(RuntimeError, match="Channel axis out of range"):
        Q.quantize_per_channel(tg.ones(4, 6), tg.full((4,), 0.1), tg.zeros(4, dtype=tg.int64),
                               2, Q.qint8)


@pytest.mark.parametrize("cfg", [{}, {"num_layers": 2, "bidirectional": True,
                                      "batch_first": True}])
def test_quantize_dynamic_lstm(cfg):
    rng = np.random.default_rng(3)
    m = tg.nn.LSTM(6, 5, **cfg)
    x = rng.standard_normal((3, 7, 6) if cfg.get("batch_first") else (7, 3, 6)).astype(_f32)
    d = tq.quantize_dynamic(tg.nn.Sequential(m))[0]  # (LSTM is in the default spec)
    assert type(d) is tg.ao.nn.quantized.dynamic.LSTM
    assert repr(d).startswith("DynamicQuantizedLSTM(6, 5")
    y, (h, c) = d(tg.tensor(x))
    yf, (hf, cf) = m(tg.tensor(x))
    dirs = 2 if cfg.get("bidirectional") else 1
    assert tuple(h.shape) == (cfg.get("num_layers", 1) * dirs, 3, 5) == tuple(hf.shape)
    assert tuple(y.shape) == tuple(yf.shape)
    # int8 weights and activations: near the float LSTM, but not equal to it
    err = np.abs(y.numpy() - yf.detach().numpy()).max()
    assert 1e-5 < err < 0.05
    w_ih = d._all_weight_values[0][0]
    # (the symmetric observer's parameters; the tensor's scheme is affine, as PyTorch's)
    assert w_ih.dtype == Q.qint8 and w_ih.q_zero_point() == 0
    assert w_ih.q_scale() == pytest.approx(np.abs(m.weight_ih_l0.detach().numpy()).max()
                                           / 127.5, rel=1e-6)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size"):
        d(tg.tensor(x), (tg.zeros(1, 1, 5), tg.zeros(1, 1, 5)))
    with pytest.raises(AssertionError, match="mod.bias must be True"):
        tq.quantize_dynamic(tg.nn.Sequential(tg.nn.LSTM(6, 5, bias=False)))

    torch = pytest.importorskip("torch")
    tm = torch.nn.LSTM(6, 5, **cfg)
    tm.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in m.state_dict().items()})
    td = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(tm))[0]
    hx = rng.standard_normal(tuple(h.shape)).astype(_f32)
    ty, (th, tc) = td(torch.tensor(x), (torch.tensor(hx), torch.tensor(hx / 2)))
    gy, (gh, gc) = d(tg.tensor(x), (tg.tensor(hx), tg.tensor(hx / 2)))
    for a, b in ((ty, gy), (th, gh), (tc, gc)):  # (the gates' float ops: within rounding)
        np.testing.assert_allclose(b.numpy(), a.detach().numpy(), atol=1e-6)


def _lsq_reference(x, s, z, lo, hi):
    """PyTorch's learnable fake quantization backward kernels, written out: the mask and
    the scale's derivative from ``nearbyint(fma(x, inv_scale, zero_point))``."""
    inv = _f32(1) / _f32(s)
    q = np.rint((x.astype(np.float64) * np.float64(inv) + z).astype(_f32))
    inside = (q >= lo) & (q <= hi)
    fq = ((np.clip(q, lo, hi) - z) * _f32(s)).astype(_f32)
    ds = np.where(inside, (fq - x) * inv, np.where(q < lo, lo - z, hi - z))
    dz = np.where(inside, 0.0, -_f32(s))
    return inside.astype(_f32), ds, dz


@pytest.mark.parametrize("s, z, lo, hi", [(0.1, 3.0, 0, 255), (0.3, 7.0, -8, 7),
                                          (0.05, 4.0, -8, 7)])
def test_learnable_fake_quant_gradients_on_ties(s, z, lo, hi):
    # multiples of 0.05: many of them are ties of x / scale, where the backward's fused
    # ``zero_point + x * inv_scale`` rounds the other way than the forward's
    x = (np.arange(-200, 200) / 20).astype(_f32)
    xt = tg.tensor(x, requires_grad=True)
    st = tg.tensor([s], requires_grad=True)
    zt = tg.tensor([z], requires_grad=True)
    tg._fake_quantize_learnable_per_tensor_affine(xt, st, zt, lo, hi, 1.0).sum().backward()
    inside, ds, dz = _lsq_reference(x, s, z, lo, hi)
    np.testing.assert_array_equal(xt.grad.numpy(), inside)
    assert st.grad.item() == pytest.approx(ds.sum(), rel=1e-5, abs=1e-4)
    assert zt.grad.item() == pytest.approx(dz.sum(), rel=1e-5, abs=1e-4)


def test_learnable_per_channel_forward_rounds_before_the_zero_point():
    # x / scale = 0.5 with zero point 1: nearbyint(0.5) + 1 = 1 (PyTorch's int zero point
    # kernel), not nearbyint(1.5) = 2
    x = tg.tensor([[0.25, 0.75], [0.25, -0.25]])
    y = tg._fake_quantize_learnable_per_channel_affine(
        x, tg.tensor([0.5, 0.5]), tg.tensor([1.0, 2.0]), 0, 0, 255, 1.0)
    assert y.tolist() == [[0.0, 1.0], [0.0, 0.0]]

    torch = pytest.importorskip("torch")
    r = np.random.default_rng(4)
    x = (r.integers(-300, 300, (5, 40)) / 20).astype(_f32)
    sc = np.array([0.1, 0.3, 0.05, 0.25, 0.2], _f32)
    zp = np.array([4.3, 7.0, -2.5, 1.5, 0.0], _f32)
    got, want = [], []
    for lib, out in ((tg, got), (torch, want)):
        xt = lib.tensor(x, requires_grad=True)
        st = lib.tensor(sc, requires_grad=True)
        zt = lib.tensor(zp, requires_grad=True)
        y = lib._fake_quantize_learnable_per_channel_affine(xt, st, zt, 0, -8, 7, 1.0)
        (y * lib.arange(200.0).reshape(5, 40)).sum().backward()
        out += [y.detach().numpy(), xt.grad.numpy(), st.grad.numpy(), zt.grad.numpy()]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-3)
