"""Eager mode quantization end to end: fuse, prepare, calibrate, convert (PTQ) and
prepare_qat, train, convert (QAT) on a small conv net; the quantized model against the float
one (within a quantization step per layer) and against PyTorch's bit for bit (torch only
where installed); dynamic quantization, FloatFunctional, QuantWrapper."""

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.ao.nn.intrinsic as nni
import tritongrad.ao.nn.intrinsic.qat as nniqat
import tritongrad.ao.nn.intrinsic.quantized as nniq
import tritongrad.ao.nn.qat as nnqat
import tritongrad.ao.nn.quantized as nnq
import tritongrad.ao.quantization as tq
from tests.quantization.helpers import FUSE, Q, build_net, dyadic_input, dyadic_state
from tritongrad.ao._qtensor import QuantizedTensor

pytestmark = [pytest.mark.filterwarnings("ignore:.*reduce_range will be deprecated"),
              pytest.mark.filterwarnings("ignore:.*deprecated:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:.*quantized tensor creation:UserWarning")]


def float_model(seed=0):
    rng = np.random.default_rng(seed)
    m = build_net(tg, tq)
    state = dyadic_state({k: v.detach().numpy() for k, v in m.state_dict().items()}, rng)
    m.load_state_dict({k: tg.tensor(v) for k, v in state.items()})
    m.bn.eps = 2 ** -10
    return m, state, rng


def ptq(m, rng, qconfig):
    m.eval()
    m.qconfig = qconfig
    fused = tq.fuse_modules(m, FUSE)
    prepared = tq.prepare(fused)
    calib = [dyadic_input(rng, (4, 3, 8, 8)) for _ in range(3)]
    for x in calib:
        prepared(tg.tensor(x))
    return fused, prepared, tq.convert(prepared), calib


def test_fuse_modules_eval_and_qat():
    m, _, rng = float_model()
    m.eval()
    fused = tq.fuse_modules(m, FUSE)
    assert type(fused.conv) is nni.ConvReLU2d and type(fused.bn) is tg.nn.Identity
    assert type(fused.conv2) is nni.ConvReLU2d and type(m.conv) is tg.nn.Conv2d  # a copy
    x = tg.tensor(dyadic_input(rng, (2, 3, 8, 8)))
    np.testing.assert_allclose(fused(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    m.train()
    qf = tq.fuse_modules_qat(m, FUSE)
    assert type(qf.conv) is nni.ConvBnReLU2d
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        tq.fuse_modules(m, FUSE)
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        tq.fuse_modules(m.eval(), [["conv", "fc"]])


def test_ptq_flow_structure_and_accuracy():
    m, _, rng = float_model()
    fused, prepared, q, calib = ptq(m, rng, tq.default_qconfig)
    assert isinstance(prepared.conv.activation_post_process, tq.MinMaxObserver)
    assert not hasattr(prepared.dequant, "activation_post_process")
    assert type(q.quant) is nnq.Quantize and type(q.conv) is nniq.ConvReLU2d
    assert type(q.fc) is nnq.Linear and type(q.dequant) is nnq.DeQuantize
    assert not hasattr(q.conv, "qconfig") and not hasattr(q.conv, "activation_post_process")
    assert len(q.conv._forward_hooks) == 0
    x = tg.tensor(calib[0])
    # layer by layer: each quantized layer is the float op on the dequantized input and
    # weight, rounded to its output's grid: at most half a step away inside the output's range
    F = tg.nn.functional
    xq = q.quant(x)
    assert isinstance(xq, QuantizedTensor)
    for qmod in (q.conv, q.conv2):
        ref = F.relu(F.conv2d(xq.dequantize(), qmod.weight().dequantize(), qmod.bias(),
                              qmod.stride, qmod.padding)).numpy()
        out = qmod(xq)
        _check_half_step(out, ref)
        xq = out
    flat = xq.reshape(xq.shape[0], -1)
    out = q.fc(flat)
    _check_half_step(out, F.linear(flat.dequantize(), q.fc.weight().dequantize(),
                                   q.fc.bias()).numpy())
    # end to end against the float model (weights and activations rounded): a few steps
    y, yf = q(x).numpy(), m(x).detach().numpy()
    assert np.abs(y - yf).max() <= 4 * q.fc.scale


def _check_half_step(out, ref):
    step, zp = out.q_scale(), out.q_zero_point()
    inside = (ref >= -zp * step) & (ref <= (255 - zp) * step)
    assert inside.mean() > 0.95
    assert np.abs(out.dequantize().numpy() - ref)[inside].max() <= step / 2 * (1 + 1e-5)


def test_quantized_linear_and_conv_exact_integer_math():
    # power-of-two scales: x_scale * w_scale / out_scale is exact, so the NumPy reference
    # (the integer sum, scaled, plus the bias, rounded half to even, shifted) is exact
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((5, 7)) * 0.3).astype(np.float32)
    qw = Q.quantize_per_tensor(tg.tensor(w), 2 ** -7, 0, Q.qint8)
    b = (rng.integers(-8, 9, 5) / 16).astype(np.float32)
    lin = nnq.Linear(7, 5)
    lin.set_weight_bias(qw, tg.tensor(b))
    lin.scale, lin.zero_point = 0.125, 64
    x = Q.quantize_per_tensor(tg.tensor(rng.standard_normal((3, 7)).astype(np.float32)), 0.5,
                              10, Q.quint8)
    wi = qw.int_repr().numpy().astype(np.int64)
    acc = (x.int_repr().numpy().astype(np.int64) - 10) @ wi.T
    expected = np.clip(np.rint((acc * 2.0 ** -8 + b) / 0.125 + 64), 0, 255)
    np.testing.assert_array_equal(lin(x).int_repr().numpy(), expected)
    with pytest.raises(ValueError, match="quantized tensor"):
        lin(tg.tensor(rng.standard_normal((3, 7)).astype(np.float32)))
    # a convolution with per-channel weights, padding (the input's zero point) and ReLU
    wc = (rng.standard_normal((4, 2, 3, 3)) * 0.3).astype(np.float32)
    scales = 2.0 ** -rng.integers(5, 8, 4)
    qwc = Q.quantize_per_channel(tg.tensor(wc), tg.tensor(scales), tg.tensor(np.zeros(4, int)),
                                 0, Q.qint8)
    conv = nniq.ConvReLU2d(2, 4, 3, padding=1)
    conv.set_weight_bias(qwc, None)
    conv.scale, conv.zero_point = 0.25, 20
    xc = Q.quantize_per_tensor(tg.tensor(rng.standard_normal((1, 2, 5, 5)).astype(np.float32)),
                               0.5, 7, Q.quint8)
    xi = np.pad(xc.int_repr().numpy().astype(np.int64) - 7, ((0, 0), (0, 0), (1, 1), (1, 1)))
    wci = qwc.int_repr().numpy().astype(np.int64)
    acc = np.zeros((1, 4, 5, 5), np.int64)
    for i in range(5):
        for j in range(5):
            acc[0, :, i, j] = np.tensordot(wci, xi[0, :, i:i + 3, j:j + 3], 3)
    expected = np.clip(np.rint(acc * (0.5 * scales)[None, :, None, None] / 0.25) + 20, 20, 255)
    np.testing.assert_array_equal(conv(xc).int_repr().numpy(), expected)


def test_qat_flow_gradients_and_convert():
    m, _, rng = float_model()
    m.train()
    # (qnnpack's: no reduce_range, so the converted model has the fake-quantized one's ranges)
    m.qconfig = tq.get_default_qat_qconfig("qnnpack")
    prepared = tq.prepare_qat(tq.fuse_modules_qat(m, FUSE))
    assert type(prepared.conv) is nniqat.ConvBnReLU2d
    assert type(prepared.conv2) is nniqat.ConvReLU2d and type(prepared.fc) is nnqat.Linear
    assert isinstance(prepared.fc.weight_fake_quant, tq.FusedMovingAvgObsFakeQuantize)
    assert prepared.fc.weight_fake_quant.qscheme is Q.per_tensor_symmetric
    opt = tg.optim.SGD(prepared.parameters(), lr=0.01)
    x = tg.tensor(dyadic_input(rng, (8, 3, 8, 8)))
    target = tg.tensor(rng.standard_normal((8, 10)).astype(np.float32))
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = ((prepared(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    # the straight-through estimate for the linear weight: dL/dW = g^T x where the fake
    # quantized weight was not clamped, 0 where it was (the weights moved since observed)
    fc = prepared.fc
    fc.apply(tq.disable_observer)
    fc.activation_post_process.disable_fake_quant()  # (its own mask would apply to g)
    inp = tg.tensor(rng.standard_normal((6, 36)).astype(np.float32))
    fc.weight.grad = None
    out = fc(inp)
    g = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    out.backward(tg.tensor(g))
    wfq = fc.weight_fake_quant
    inv = (np.float32(1) / wfq.scale.numpy()).astype(np.float32)
    qw = np.rint((fc.weight.detach().numpy() * inv).astype(np.float32)) + wfq.zero_point.numpy()
    mask = (qw >= -128) & (qw <= 127)
    np.testing.assert_allclose(fc.weight.grad.numpy(), np.where(mask, g.T @ inp.numpy(), 0),
                               rtol=1e-5, atol=1e-5)
    prepared.eval()
    prepared.apply(tq.disable_observer)
    prepared.apply(tq.enable_fake_quant)
    q = tq.convert(prepared)
    assert type(q.conv) is nniq.ConvReLU2d and type(q.fc) is nnq.Linear
    y = q(x).numpy()
    yf = prepared(x).detach().numpy()  # the fake-quantized model the training saw
    # (fake quantization's parameters come from the fused kernel's formula, the converted
    # model's from the observer's: a step or two apart at the ends)
    assert np.abs(y - yf).max() <= 3 * q.fc.scale


def test_qat_modules_to_float():
    """to_float gives the float module back: the fused ReLU kept (as PyTorch), the batch norm
    folded into the convolution; in eval with fake quantization off each computes what the
    QAT module computes, and the float model's fused layers."""
    m, _, rng = float_model()
    m.train()
    m.qconfig = tq.get_default_qat_qconfig("qnnpack")
    prepared = tq.prepare_qat(tq.fuse_modules_qat(m, FUSE))
    prepared.eval()
    prepared.apply(tq.disable_fake_quant)
    x = tg.tensor(dyadic_input(rng, (2, 3, 8, 8)))
    conv = prepared.conv.to_float()  # ConvBnReLU2d
    assert type(conv) is nni.ConvReLU2d and not conv.training
    assert [type(c) for c in conv] == [tg.nn.Conv2d, tg.nn.ReLU]
    conv2 = prepared.conv2.to_float()  # ConvReLU2d
    assert type(conv2) is nni.ConvReLU2d and [type(c) for c in conv2] == [tg.nn.Conv2d,
                                                                          tg.nn.ReLU]
    fc = prepared.fc.to_float()  # Linear
    assert type(fc) is tg.nn.Linear and fc.weight is not prepared.fc.weight
    for q_mod, f_mod, inp in ((prepared.conv, conv, x), (prepared.conv2, conv2, conv(x)),
                              (prepared.fc, fc, tg.randn(3, 36))):
        want = q_mod(inp).detach().numpy()
        np.testing.assert_allclose(f_mod(inp).detach().numpy(), want, rtol=1e-5, atol=1e-5)
    # the folded conv-bn-relu is the float model's relu(bn(conv(x))) in eval
    m.eval()
    want = m.relu(m.bn(m.conv(x))).detach().numpy()
    np.testing.assert_allclose(conv(x).detach().numpy(), want, rtol=1e-5, atol=1e-5)
    bn_only = nniqat.ConvBn2d(3, 4, 3, qconfig=m.qconfig).eval().to_float()
    assert type(bn_only) is tg.nn.Conv2d
    lr = nniqat.LinearReLU(5, 2, qconfig=m.qconfig).to_float()
    assert type(lr) is nni.LinearReLU and lr.training
    with pytest.raises(AssertionError, match=r"LinearReLU takes \(Linear, ReLU\)"):
        nni.LinearReLU(tg.nn.Linear(2, 2), tg.nn.Sigmoid())


def test_custom_module_options_are_refused_by_name():
    """Custom module classes are not supported: each entry point that takes them says so
    rather than ignoring them."""
    m = tg.nn.Sequential(tg.nn.Linear(2, 2)).eval()
    m.qconfig = tq.default_qconfig
    prep = {"float_to_observed_custom_module_class": {tg.nn.Linear: tg.nn.Linear}}
    conv = {"observed_to_quantized_custom_module_class": {tg.nn.Linear: tg.nn.Linear}}
    with pytest.raises(NotImplementedError, match="^prepare: custom module classes"):
        tq.prepare(m, prepare_custom_config_dict=prep)
    with pytest.raises(NotImplementedError, match="^propagate_qconfig_: custom module"):
        tq.propagate_qconfig_(m, prepare_custom_config_dict=prep)
    prepared = tq.prepare(m, prepare_custom_config_dict={})  # (empty ones are fine)
    prepared(tg.randn(3, 2))
    with pytest.raises(NotImplementedError, match="^convert: custom module classes"):
        tq.convert(prepared, convert_custom_config_dict=conv)
    with pytest.raises(NotImplementedError, match="^swap_module: custom module classes"):
        tq.swap_module(prepared[0], {}, {tg.nn.Linear: tg.nn.Linear})
    assert type(tq.convert(prepared, convert_custom_config_dict={})[0]) is nnq.Linear


@pytest.mark.parametrize("name,args", [("ReLU", ()), ("ReLU6", ()), ("MaxPool2d", (2,)),
                                       ("AvgPool2d", (2,)), ("AdaptiveAvgPool2d", (3,))])
def test_swapped_parameter_free_modules_take_float_and_quantized_inputs(name, args):
    """Note [Swapped parameter-free modules]: the float op on a float input, the quantized op
    (the input's parameters kept, within a step of the float op) on a quantized one."""
    f_mod = getattr(tg.nn, name)(*args)
    q_mod = getattr(nnq, name).from_float(f_mod)
    x = tg.tensor(np.random.default_rng(4).standard_normal((2, 3, 6, 6)).astype(np.float32) * 3)
    np.testing.assert_array_equal(q_mod(x).numpy(), f_mod(x).numpy())
    xq = Q.quantize_per_tensor(x, 0.05, 128, Q.quint8)
    out = q_mod(xq)
    assert isinstance(out, QuantizedTensor) and out.q_scale() == 0.05
    want = f_mod(xq.dequantize()).numpy()
    np.testing.assert_allclose(out.dequantize().numpy(), want, rtol=0, atol=0.05 / 2 + 1e-6)


def test_dynamic_quantization_linear():
    rng = np.random.default_rng(12)
    m = tg.nn.Sequential(tg.nn.Linear(16, 8), tg.nn.ReLU(), tg.nn.Linear(8, 4))
    qm = tq.quantize_dynamic(m)
    assert type(qm[0]).__name__ == "Linear" and isinstance(qm[0], nnq.dynamic.Linear)
    x = tg.tensor(rng.standard_normal((5, 16)).astype(np.float32))
    np.testing.assert_allclose(qm(x).numpy(), m(x).detach().numpy(), atol=0.05)
    assert type(m[0]) is tg.nn.Linear  # not in place
    only_first = tq.quantize_dynamic(m, {"0"})
    assert isinstance(only_first[0], nnq.dynamic.Linear) and type(only_first[2]) is tg.nn.Linear


def _residual(lib, stubs, nnq_mod):
    class Res(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = stubs.QuantStub()
            self.conv = lib.nn.Conv2d(3, 3, 3, padding=1)
            self.add = nnq_mod.FloatFunctional()
            self.dequant = stubs.DeQuantStub()

        def forward(self, x):
            x = self.quant(x)
            return self.dequant(self.add.add(self.conv(x), x))
    return Res()


def test_float_functional_flow_and_quant_wrapper():
    rng = np.random.default_rng(13)
    m = _residual(tg, tq, nnq).eval()
    m.qconfig = tq.default_qconfig
    p = tq.prepare(m)
    assert isinstance(p.add.activation_post_process, tq.MinMaxObserver)
    x = tg.tensor(dyadic_input(rng, (2, 3, 5, 5)))
    p(x)
    q = tq.convert(p)
    assert type(q.add) is nnq.QFunctional
    assert np.abs(q(x).numpy() - m(x).detach().numpy()).max() <= 3 * q.add.scale
    lin = tg.nn.Linear(4, 2)
    lin.qconfig = tq.default_qconfig
    w = tq.QuantWrapper(lin)
    assert isinstance(w.quant, tq.QuantStub) and w.module is lin
    wrapped = tq.add_quant_dequant(tg.nn.Sequential(lin))
    assert isinstance(wrapped[0], tq.QuantWrapper)


# -- PyTorch's bits ------------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


def _torch_model(torch, state):
    import torch.ao.quantization as TQ
    tm = build_net(torch, TQ)
    tm.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    tm.bn.eps = 2 ** -10
    return tm, TQ


@pytest.mark.parametrize("backend", ["x86", "qnnpack"])
def test_ptq_matches_torch_bit_for_bit(backend):
    torch = _torch()
    m, state, rng = float_model(1)
    tm, TQ = _torch_model(torch, state)
    fused, prepared, q, calib = ptq(m, rng, tq.get_default_qconfig(backend))
    tm.eval()
    tm.qconfig = TQ.get_default_qconfig(backend)
    tp = TQ.prepare(TQ.fuse_modules(tm, FUSE))
    for x in calib:
        tp(torch.from_numpy(x))
    tc = TQ.convert(tp)
    x = dyadic_input(rng, (5, 3, 8, 8))
    np.testing.assert_array_equal(q(tg.tensor(x)).numpy(), tc(torch.from_numpy(x)).numpy())
    assert (q.fc.scale, q.fc.zero_point) == (tc.fc.scale, tc.fc.zero_point)
    np.testing.assert_array_equal(q.conv.weight().int_repr().numpy(),
                                  tc.conv.weight().int_repr().numpy())


def test_qat_matches_torch():
    torch = _torch()
    import torch.ao.nn.intrinsic.qat as t_nniqat
    m, state, rng = float_model(2)
    tm, TQ = _torch_model(torch, state)
    m.train()
    tm.train()
    m.qconfig = tq.get_default_qat_qconfig("x86")
    tm.qconfig = TQ.get_default_qat_qconfig("x86")
    p = tq.prepare_qat(tq.fuse_modules_qat(m, FUSE))
    tp = TQ.prepare_qat(TQ.fuse_modules_qat(tm, FUSE))
    p.apply(nniqat.freeze_bn_stats)
    tp.apply(t_nniqat.freeze_bn_stats)
    for _ in range(2):
        x = dyadic_input(rng, (4, 3, 8, 8))
        tx = torch.from_numpy(x).requires_grad_()
        gx = tg.tensor(x, requires_grad=True)
        ty, y = tp(tx), p(gx)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=0, atol=1e-6)
        g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        ty.backward(torch.from_numpy(g))
        y.backward(tg.tensor(g))
        np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
        for name in ("conv.weight", "conv.bn.weight", "conv2.weight", "fc.weight", "fc.bias"):
            got = p.get_parameter(name).grad.numpy()
            want = tp.get_parameter(name).grad.numpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # convert from the same trained state: PyTorch's integers bit for bit (the float
    # forward passes above differ from PyTorch's in the last bits, so the observers' state is
    # handed over to compare convert and the quantized kernels alone)
    p.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in tp.state_dict().items()})
    p.eval()
    tp.eval()
    q, tc = tq.convert(p), TQ.convert(tp)
    x = dyadic_input(rng, (5, 3, 8, 8))
    np.testing.assert_array_equal(q(tg.tensor(x)).numpy(), tc(torch.from_numpy(x)).numpy())


def test_dynamic_and_functional_match_torch():
    torch = _torch()
    import torch.ao.nn.quantized as t_nnq
    import torch.ao.quantization as TQ
    rng = np.random.default_rng(14)
    m = tg.nn.Sequential(tg.nn.Linear(16, 8), tg.nn.ReLU(), tg.nn.Linear(8, 4))
    tm = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    tm.load_state_dict({k: torch.from_numpy(v.detach().numpy())
                        for k, v in m.state_dict().items()})
    qm, tqm = tq.quantize_dynamic(m), TQ.quantize_dynamic(tm)
    x = rng.standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_array_equal(qm[0](tg.tensor(x)).numpy(),
                                  tqm[0](torch.from_numpy(x)).numpy())
    res, tres = _residual(tg, tq, nnq).eval(), _residual(torch, TQ, t_nnq).eval()
    state = dyadic_state({k: v.detach().numpy() for k, v in res.state_dict().items()}, rng)
    res.load_state_dict({k: tg.tensor(v) for k, v in state.items()})
    tres.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    res.qconfig, tres.qconfig = tq.default_qconfig, TQ.default_qconfig
    p, tp = tq.prepare(res), TQ.prepare(tres)
    x = dyadic_input(rng, (2, 3, 5, 5))
    p(tg.tensor(x))
    tp(torch.from_numpy(x))
    q, tc = tq.convert(p), TQ.convert(tp)
    np.testing.assert_array_equal(q(tg.tensor(x)).numpy(), tc(torch.from_numpy(x)).numpy())


def test_quantized_model_on_cuda():
    # (the emulated device without a GPU: the integers and buffers live there; the
    # requantization is computed on the host)
    m, _, rng = float_model(3)
    _, _, q, _ = ptq(m, rng, tq.default_per_channel_qconfig)
    x = dyadic_input(rng, (2, 3, 8, 8))
    y = q(tg.tensor(x)).numpy()
    qc = q.to("cuda")
    xq = qc.quant(tg.tensor(x, device="cuda"))
    assert xq.device.type == "cuda" and xq.int_repr().device.type == "cuda"
    yc = qc(tg.tensor(x, device="cuda"))
    assert yc.device.type == "cuda"
    np.testing.assert_array_equal(yc.cpu().numpy(), y)
    made_there = nnq.Quantize(0.5, 3, Q.quint8, factory_kwargs={"device": "cuda"})
    assert made_there.scale.device.type == made_there.zero_point.device.type == "cuda"
    w = qc.fc.weight().cpu()
    assert w.q_per_channel_scales().device.type == "cpu"


def test_quantized_state_dict_round_trip():
    m, _, rng = float_model(4)
    _, _, q, _ = ptq(m, rng, tq.default_qconfig)
    other, _, rng2 = float_model(5)
    _, _, fresh, _ = ptq(other, rng2, tq.default_qconfig)  # other weights and parameters
    x = tg.tensor(dyadic_input(rng, (2, 3, 8, 8)))
    assert not np.array_equal(fresh(x).numpy(), q(x).numpy())
    fresh.load_state_dict(q.state_dict())
    np.testing.assert_array_equal(fresh(x).numpy(), q(x).numpy())
    assert (fresh.fc.scale, fresh.fc.zero_point) == (q.fc.scale, q.fc.zero_point)


def _pool_net(lib, stubs):
    nn = lib.nn
    return nn.Sequential(stubs.QuantStub(), nn.Conv2d(3, 4, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 4, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         stubs.DeQuantStub(), nn.ReLU())


def test_unfused_relu_and_pools():
    rng = np.random.default_rng(15)
    m = _pool_net(tg, tq).eval()
    m.load_state_dict({k: tg.tensor(v) for k, v in dyadic_state(
        {k: v.detach().numpy() for k, v in m.state_dict().items()}, rng).items()})
    m.qconfig = tq.default_qconfig
    p = tq.prepare(m)
    assert not hasattr(p[2], "activation_post_process")  # (ReLU: no observer, as PyTorch)
    x = dyadic_input(rng, (2, 3, 9, 9))
    p(tg.tensor(x))
    q = tq.convert(p)
    assert type(q[2]) is nnq.ReLU and type(q[3]) is nnq.MaxPool2d and type(q[8]) is nnq.ReLU
    y = q(tg.tensor(x)).numpy()  # the last ReLU runs on a float tensor
    assert np.abs(y - m(tg.tensor(x)).detach().numpy()).max() <= 3 * q[4].scale
    torch = pytest.importorskip("torch")
    import torch.ao.quantization as TQ
    tm = _pool_net(torch, TQ).eval()
    tm.load_state_dict({k: torch.from_numpy(v.detach().numpy())
                        for k, v in m.state_dict().items()})
    tm.qconfig = TQ.default_qconfig
    tp = TQ.prepare(tm)
    tp(torch.from_numpy(x))
    np.testing.assert_array_equal(y, TQ.convert(tp)(torch.from_numpy(x)).numpy())
