"""Observers against the closed-form min/max math, FakeQuantize (values and the
straight-through gradient), QConfig, and PyTorch's bits (torch only where installed)."""

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.ao.quantization as tq
from tests.quantization.helpers import Q

EPS = float(np.finfo(np.float32).eps)
pytestmark = [pytest.mark.filterwarnings("ignore:.*reduce_range will be deprecated"),
              pytest.mark.filterwarnings("ignore:.*quantized tensor creation:UserWarning")]


def observe(obs, batches):
    for b in batches:
        out = obs(tg.tensor(b))
        assert out is not None
    return obs.calculate_qparams()


def batches(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((4, 3, 5)) * s + o).astype(np.float32)
            for s, o in ((1, 0.3), (2, -1), (0.5, 2))]


def affine(mn, mx, qmin, qmax):
    """float64 closed form of the affine parameters."""
    mn, mx = np.minimum(mn, 0.0), np.maximum(mx, 0.0)
    scale = np.maximum((mx - mn) / (qmax - qmin), EPS)
    return scale, np.clip(qmin - np.rint(mn / scale), qmin, qmax)


def test_minmax_observer_closed_form():
    data = batches()
    lo = min(b.min() for b in data)
    hi = max(b.max() for b in data)
    scale, zp = observe(tq.MinMaxObserver(), data)
    es, ez = affine(lo, hi, 0, 255)
    np.testing.assert_allclose(scale.numpy(), [es], rtol=1e-6)
    assert zp.tolist() == [int(ez)] and zp.dtype is tg.int32
    obs = tq.MinMaxObserver(dtype=Q.qint8, qscheme=Q.per_tensor_symmetric)
    scale, zp = observe(obs, data)
    np.testing.assert_allclose(scale.numpy(), [max(-lo, hi) / 127.5], rtol=1e-6)
    assert zp.tolist() == [0] and zp.dtype is tg.int64
    assert obs.min_val.item() == lo and obs.max_val.item() == hi
    scale, zp = observe(tq.MinMaxObserver(qscheme=Q.per_tensor_symmetric), data)
    assert zp.tolist() == [128]  # quint8 symmetric: the middle of the range
    scale, zp = observe(tq.MinMaxObserver(quant_min=0, quant_max=15), data)
    np.testing.assert_allclose(scale.numpy(), [affine(lo, hi, 0, 15)[0]], rtol=1e-6)
    scale, zp = observe(tq.MinMaxObserver(reduce_range=True), data)
    np.testing.assert_allclose(scale.numpy(), [affine(lo, hi, 0, 127)[0]], rtol=1e-6)
    # an all-positive input: the range still holds 0 (zero point 0)
    scale, zp = observe(tq.MinMaxObserver(), [np.array([2.0, 3.0], np.float32)])
    np.testing.assert_allclose(scale.numpy(), [3.0 / 255], rtol=1e-6)
    assert zp.tolist() == [0]


def test_observer_defaults_and_errors():
    obs = tq.MinMaxObserver()
    with pytest.warns(UserWarning, match="must run observer"):
        scale, zp = obs.calculate_qparams()
    assert scale.tolist() == [1.0] and zp.tolist() == [0]
    with pytest.raises(NotImplementedError, match="per_tensor"):
        tq.MinMaxObserver(qscheme=Q.per_channel_affine)
    with pytest.raises(AssertionError, match="include 0"):
        tq.MinMaxObserver(quant_min=1, quant_max=10)
    with pytest.raises(Exception, match="PlaceholderObserver"):
        tq.PlaceholderObserver().calculate_qparams()
    with pytest.raises(Exception, match="NoopObserver"):
        tq.NoopObserver().calculate_qparams()
    x = tg.tensor([1.0, 2.0])
    assert tq.PlaceholderObserver()(x) is x and tq.NoopObserver()(x) is x
    obs = tq.MinMaxObserver()
    obs(tg.tensor([-1.0, 1.0]))
    obs.reset_min_max_vals()
    assert obs.min_val.item() == float("inf")


def test_fake_quantize_range_checks_use_the_dtypes_integer_range():
    """FakeQuantize checks a given quant_min/quant_max against iinfo of the dtype (as
    PyTorch: quint4x2's storage byte allows 0..255, int16 its own range)."""
    with pytest.raises(AssertionError, match="quant_min must be less than or equal"):
        tq.FakeQuantize(quant_min=5, quant_max=1)
    with pytest.raises(AssertionError, match="quant_min out of bound"):
        tq.FakeQuantize(quant_min=-1, quant_max=255)
    with pytest.raises(AssertionError, match="quant_max out of bound"):
        tq.FakeQuantize(quant_min=-128, quant_max=128, dtype=Q.qint8,
                        qscheme=Q.per_tensor_symmetric)
    with pytest.raises(AssertionError, match="quant_max out of bound"):
        tq.FakeQuantize(observer=tq.MovingAverageMinMaxObserver.with_args(dtype=Q.qint8),
                        quant_min=0, quant_max=200)
    fq = tq.FakeQuantize(observer=tq.PerChannelMinMaxObserver, quant_min=0, quant_max=255,
                         dtype=Q.quint4x2, qscheme=Q.per_channel_affine_float_qparams)
    assert (fq.quant_min, fq.quant_max) == (0, 255)


def test_moving_average_observer_formula():
    data = batches(1)
    c = 0.25
    obs = tq.MovingAverageMinMaxObserver(averaging_constant=c)
    mn, mx = data[0].min(), data[0].max()
    for b in data[1:]:
        mn, mx = mn + c * (b.min() - mn), mx + c * (b.max() - mx)
    scale, zp = observe(obs, data)
    np.testing.assert_allclose([obs.min_val.item(), obs.max_val.item()], [mn, mx], rtol=1e-6)
    es, ez = affine(mn, mx, 0, 255)
    np.testing.assert_allclose(scale.numpy(), [es], rtol=1e-6)
    assert zp.tolist() == [int(ez)]


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_per_channel_observers(axis):
    data = batches(2)
    obs = tq.PerChannelMinMaxObserver(ch_axis=axis, dtype=Q.qint8,
                                      qscheme=Q.per_channel_affine)
    scale, zp = observe(obs, data)
    other = tuple(d for d in range(3) if d != axis)
    mn = np.min([b.min(axis=other) for b in data], axis=0)
    mx = np.max([b.max(axis=other) for b in data], axis=0)
    es, ez = affine(mn, mx, -128, 127)
    np.testing.assert_allclose(scale.numpy(), es, rtol=1e-6)
    np.testing.assert_array_equal(zp.numpy(), ez)
    obs = tq.MovingAveragePerChannelMinMaxObserver(averaging_constant=0.5, ch_axis=axis,
                                                   qscheme=Q.per_channel_symmetric)
    observe(obs, data[:2])
    first = (data[0].min(axis=other), data[0].max(axis=other))
    mn = first[0] + 0.5 * (data[1].min(axis=other) - first[0])
    np.testing.assert_allclose(obs.min_val.numpy(), mn, rtol=1e-6)
    obs = tq.PerChannelMinMaxObserver(ch_axis=axis, qscheme=Q.per_channel_affine_float_qparams)
    scale, zp = observe(obs, data)
    mn = np.min([b.min(axis=other) for b in data], axis=0)
    mx = np.max([b.max(axis=other) for b in data], axis=0)
    np.testing.assert_allclose(scale.numpy(), (mx - mn) / 255, rtol=1e-6)
    np.testing.assert_allclose(zp.numpy(), -mn / ((mx - mn) / 255), rtol=1e-5)


def test_observer_state_dict_round_trip():
    """get_observer_state_dict keeps only the observers' entries; load_observer_state_dict
    puts them back (per-channel buffers of any length) and names the first missing key."""
    def model():
        m = tg.nn.Sequential(tg.nn.Linear(3, 2))
        m.activation_post_process = tq.PerChannelMinMaxObserver(ch_axis=1)
        m.observer_like = tg.nn.Linear(2, 2)  # (a name with "observer" is not a statistic)
        return m
    src, data = model(), batches(2)
    observe(src.activation_post_process, data)
    sd = tq.get_observer_state_dict(src)
    assert sorted(sd) == ["activation_post_process.eps", "activation_post_process.max_val",
                          "activation_post_process.min_val"]
    dst = model()
    tq.load_observer_state_dict(dst, sd)
    for name in ("min_val", "max_val"):
        np.testing.assert_array_equal(getattr(dst.activation_post_process, name).numpy(),
                                      getattr(src.activation_post_process, name).numpy())
    # a fresh observer / fake quantize takes per-channel buffers of any length from load_state_dict
    fresh = tq.PerChannelMinMaxObserver(ch_axis=1)
    fresh.load_state_dict(src.activation_post_process.state_dict())
    np.testing.assert_array_equal(fresh.max_val.numpy(),
                                  src.activation_post_process.max_val.numpy())
    fq = tq.default_per_channel_weight_fake_quant()
    fq(tg.tensor(data[0]))
    fresh_fq = tq.default_per_channel_weight_fake_quant()
    fresh_fq.load_state_dict(fq.state_dict())
    assert fresh_fq.scale.shape == fq.scale.shape == (4,)
    np.testing.assert_array_equal(fresh_fq.zero_point.numpy(), fq.zero_point.numpy())
    del sd["activation_post_process.max_val"]
    with pytest.raises(Exception, match="Missing keys for observer "
                       "activation_post_process.max_val in state_dict"):
        tq.load_observer_state_dict(model(), sd)


def test_min_max_observers_are_not_instances_of_each_other():
    """The shared min/max base is private: the class tree is PyTorch's."""
    assert not isinstance(tq.PerChannelMinMaxObserver(), tq.MinMaxObserver)
    assert not isinstance(tq.MinMaxObserver(), tq.PerChannelMinMaxObserver)
    assert isinstance(tq.MovingAverageMinMaxObserver(), tq.MinMaxObserver)
    assert isinstance(tq.MovingAveragePerChannelMinMaxObserver(), tq.PerChannelMinMaxObserver)


def test_histogram_observer_histogram_and_range():
    rng = np.random.default_rng(5)
    x = (rng.integers(-32, 33, 5000) / 16).astype(np.float32)  # values on the bin edges
    x[:2] = [-2.0, 2.0]
    obs = tq.HistogramObserver(bins=64)
    obs(tg.tensor(x))
    counts, _ = np.histogram(x, bins=64, range=(-2.0, 2.0))
    np.testing.assert_array_equal(obs.histogram.numpy(), counts)
    assert (obs.min_val.item(), obs.max_val.item()) == (-2.0, 2.0)
    obs(tg.tensor(x * 2))  # a wider batch: the old histogram is spread over the new bins
    np.testing.assert_allclose(obs.histogram.numpy().sum(), 10000, rtol=1e-6)
    assert (obs.min_val.item(), obs.max_val.item()) == (-4.0, 4.0)
    scale, zp = obs.calculate_qparams()
    mm_scale, _ = observe(tq.MinMaxObserver(), [x, x * 2])
    # the L2 search keeps a sub-range of [min, max]: the scale is at most MinMax's
    assert 0 < scale.item() <= mm_scale.item() and 0 <= zp.item() <= 255


def test_fake_quantize_values_and_straight_through_gradient():
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(200) * 2).astype(np.float32)
    fq = tq.FakeQuantize(observer=tq.MovingAverageMinMaxObserver, quant_min=0, quant_max=15)
    xt = tg.tensor(x, requires_grad=True)
    y = fq(xt)
    scale, zp = fq.scale.item(), int(fq.zero_point.item())
    es, ez = affine(x.min(), x.max(), 0, 15)
    assert scale == pytest.approx(es, rel=1e-6) and zp == ez
    q = np.rint(x.astype(np.float64) / scale + zp)
    expected = (np.clip(q, 0, 15) - zp) * scale
    np.testing.assert_allclose(y.detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(200).astype(np.float32)
    y.backward(tg.tensor(g))
    mask = (q >= 0) & (q <= 15)
    np.testing.assert_array_equal(xt.grad.numpy(), np.where(mask, g, 0))
    # a value far outside the observed range after observation stops: its gradient is 0
    fq.disable_observer()
    xo = tg.tensor([0.0, 100.0], requires_grad=True)
    fq(xo).sum().backward()
    assert xo.grad.tolist() == [1.0, 0.0]
    fq.disable_fake_quant()
    assert fq(xo) is xo
    fq.apply(tq.enable_fake_quant)
    assert int(fq.fake_quant_enabled.item()) == 1


def test_per_channel_fake_quantize():
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((4, 6))).astype(np.float32)
    fq = tq.default_per_channel_weight_fake_quant()
    y = fq(tg.tensor(w)).numpy()
    scale = np.maximum(np.abs(w).max(axis=1), 0) / 127.5
    np.testing.assert_allclose(fq.scale.numpy(), scale, rtol=1e-6)
    # (the largest magnitude lands on -127.5 steps: float32 products, as the op computes them)
    inv = (np.float32(1) / fq.scale.numpy()).astype(np.float32)
    q = np.clip(np.rint((w * inv[:, None]).astype(np.float32)), -128, 127)
    np.testing.assert_allclose(y, q * scale[:, None], rtol=1e-5, atol=1e-7)


def test_qconfig():
    qc = tq.get_default_qconfig("x86")
    act, wt = qc.activation(), qc.weight()
    assert isinstance(act, tq.HistogramObserver) and act.reduce_range
    assert isinstance(wt, tq.PerChannelMinMaxObserver) and wt.dtype is Q.qint8
    assert isinstance(tq.get_default_qconfig("qnnpack").weight(), tq.MinMaxObserver)
    qat = tq.get_default_qat_qconfig("fbgemm")
    assert isinstance(qat.activation(), tq.FusedMovingAvgObsFakeQuantize)
    assert isinstance(tq.get_default_qat_qconfig("x86", version=0).activation(),
                      tq.FakeQuantize)
    with pytest.raises(AssertionError, match="not supported"):
        tq.get_default_qconfig("tpu")
    with pytest.raises(ValueError, match="observer instance"):
        tq.QConfig(activation=tq.MinMaxObserver(), weight=tq.default_weight_observer)
    with pytest.warns(FutureWarning):
        tq.QConfigDynamic(weight=tq.default_weight_observer)
    assert tq.qconfig_equals(tq.default_qconfig, tq.QConfig(tq.default_observer,
                                                            tq.default_weight_observer))
    assert not tq.qconfig_equals(tq.default_qconfig, tq.default_per_channel_qconfig)
    custom = tq.MinMaxObserver.with_args(dtype=Q.qint8).with_args(quant_min=-8, quant_max=7)()
    assert (custom.dtype, custom.quant_min, custom.quant_max) == (Q.qint8, -8, 7)
    import tritongrad.quantization as alias
    assert alias.prepare is tq.prepare and alias.QConfig is tq.QConfig
    import tritongrad.quantization.observer as obs_alias
    assert obs_alias.MinMaxObserver is tq.MinMaxObserver


# -- PyTorch's bits ------------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


def _case_list():
    cases = []
    for dt in ("quint8", "qint8"):
        for qs in ("per_tensor_affine", "per_tensor_symmetric"):
            for rr in (False, True):
                if rr and dt == "quint8" and qs == "per_tensor_symmetric":
                    continue
                for cls in ("MinMaxObserver", "MovingAverageMinMaxObserver",
                            "HistogramObserver"):
                    cases.append((cls, dict(dtype=dt, qscheme=qs, reduce_range=rr)))
        for qs in ("per_channel_affine", "per_channel_symmetric",
                   "per_channel_affine_float_qparams"):
            if qs.endswith("qparams") and dt == "qint8":
                continue
            for cls in ("PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver"):
                cases.append((cls, dict(dtype=dt, qscheme=qs, ch_axis=1)))
    cases.append(("HistogramObserver", dict(quant_min=0, quant_max=127)))
    return cases


@pytest.mark.parametrize("cls,kw", _case_list())
def test_observers_match_torch(cls, kw):
    torch = _torch()
    import torch.ao.quantization as TQ

    def args(lib):
        return {k: getattr(lib, v) if k in ("dtype", "qscheme") else v for k, v in kw.items()}
    t_obs, obs = getattr(TQ, cls)(**args(torch)), getattr(tq, cls)(**args(Q))
    data = batches(8)
    if cls == "HistogramObserver":  # a constant first batch, then wider ones, all positive
        data = [np.full(10, 2.0, np.float32)] + data + [np.abs(data[0])]
    for b in data:
        t_obs(torch.from_numpy(b))
        obs(tg.tensor(b))
    ts, tz = t_obs.calculate_qparams()
    s, z = obs.calculate_qparams()
    np.testing.assert_array_equal(s.numpy(), ts.numpy())
    np.testing.assert_array_equal(z.numpy(), tz.numpy())
    assert z.dtype.name == str(tz.dtype).split(".")[1]
    if cls == "HistogramObserver":
        np.testing.assert_array_equal(obs.histogram.numpy(), t_obs.histogram.numpy())


@pytest.mark.parametrize("qconfig", ["fused_act", "fused_wt", "fused_per_channel_wt"])
def test_fused_fake_quant_matches_torch(qconfig):
    torch = _torch()
    import torch.ao.quantization as TQ
    name = f"default_{qconfig}_fake_quant"
    t_fq, fq = getattr(TQ, name)(), getattr(tq, name)()
    rng = np.random.default_rng(9)
    for s in (1.0, 3.0, 0.5):
        x = (rng.standard_normal((6, 10)) * s).astype(np.float32)
        tx = torch.from_numpy(x).requires_grad_()
        gx = tg.tensor(x, requires_grad=True)
        ty, y = t_fq(tx), fq(gx)
        np.testing.assert_array_equal(fq.scale.numpy(), t_fq.scale.numpy())
        np.testing.assert_array_equal(fq.zero_point.numpy(), t_fq.zero_point.numpy())
        np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
        g = rng.standard_normal(x.shape).astype(np.float32)
        ty.backward(torch.from_numpy(g))
        y.backward(tg.tensor(g))
        np.testing.assert_array_equal(gx.grad.numpy(), tx.grad.numpy())
