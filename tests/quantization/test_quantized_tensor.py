"""Quantized tensors: quantize / dequantize against NumPy float64 references (rounding half to
even, clamping, per-channel axes), the accessors and errors, and PyTorch's bits (torch only
where installed)."""

import copy
import pickle

import numpy as np
import pytest

import tritongrad as tg
from tests.quantization.helpers import Q
from tritongrad.ao import _qtensor

pytestmark = pytest.mark.filterwarnings("ignore:.*quantized tensor creation:UserWarning")
RANGES = {"quint8": (0, 255), "qint8": (-128, 127), "qint32": (-2 ** 31, 2 ** 31 - 1)}


def ref_quantize(x, scale, zp, lo, hi):
    """The float64 reference: shift, round half to even, clamp (PyTorch's kernels round
    ``x / scale + zero_point``, so a tie goes to the even integer after the shift)."""
    return np.clip(np.rint(np.asarray(x, np.float64) / scale + zp), lo, hi).astype(np.int64)


def test_dtypes_and_qschemes():
    assert isinstance(Q.qint8, tg.dtype) and Q.qint8.itemsize == 1 and Q.qint32.itemsize == 4
    assert Q.qint8.is_signed and not Q.quint8.is_signed and not Q.quint8.is_floating_point
    assert repr(Q.quint8) == "tritongrad.quint8"
    assert repr(Q.per_channel_affine) == "tritongrad.per_channel_affine"
    for obj in (Q.qint8, Q.quint8, Q.qint32, Q.quint4x2, Q.per_tensor_affine,
                Q.per_channel_affine_float_qparams):
        assert pickle.loads(pickle.dumps(obj)) is obj
        assert copy.deepcopy(obj) is obj


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
def test_quantize_per_tensor_rounds_half_to_even_and_clamps(dtype):
    lo, hi = RANGES[dtype]
    scale, zp = 0.125, 3  # a power of two: x / scale is exact, ties are exact ties
    k = np.arange(-2000, 2001)
    x = (k / 4.0).astype(np.float32) * np.float32(scale)  # quarters of a step: ties at .5
    q = Q.quantize_per_tensor(tg.tensor(x), scale, zp, getattr(Q, dtype))
    expected = ref_quantize(x, scale, zp, lo, hi)
    assert q.int_repr().dtype is {"quint8": tg.uint8, "qint8": tg.int8,
                                  "qint32": tg.int32}[dtype]
    np.testing.assert_array_equal(q.int_repr().numpy().astype(np.int64), expected)
    # (2.5 steps -> 2, 3.5 -> 4: half to even; zero point 0)
    half = Q.quantize_per_tensor(tg.tensor([2.5 * scale, 3.5 * scale, -2.5 * scale]), scale, 0,
                                 getattr(Q, dtype))
    assert half.int_repr().tolist() == [2, 4, max(-2, lo)]
    np.testing.assert_array_equal(q.dequantize().numpy(),
                                  ((expected - zp) * scale).astype(np.float32))
    assert q.q_scale() == scale and q.q_zero_point() == zp and q.qscheme() is Q.per_tensor_affine
    assert q.dtype is getattr(Q, dtype) and tuple(q.shape) == x.shape


def test_quantize_per_tensor_random_scale_against_float64():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(5000) * 3).astype(np.float32)
    scale, zp = 0.0371, 7
    q = Q.quantize_per_tensor(tg.tensor(x), scale, zp, Q.quint8).int_repr().numpy()
    ref = ref_quantize(x, scale, zp, 0, 255)
    t = np.float64(x) / scale + zp
    near_tie = np.abs(np.abs(t - np.floor(t)) - 0.5) < 1e-4  # float32 products may differ there
    assert np.array_equal(q[~near_tie], ref[~near_tie])
    assert np.abs(q.astype(np.int64) - ref).max() <= 1
    d = Q.quantize_per_tensor(tg.tensor(x), scale, zp, Q.quint8).dequantize().numpy()
    inside = (ref > 0) & (ref < 255)
    assert np.abs(d - x)[inside].max() <= scale / 2 + 1e-6  # half a step inside the range


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_quantize_per_channel_axis(axis):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 5, 6)) * 2).astype(np.float32)
    n = x.shape[axis]
    scales = 2.0 ** -rng.integers(2, 6, n)  # powers of two: exact reference
    zps = rng.integers(-10, 10, n)
    q = Q.quantize_per_channel(tg.tensor(x), tg.tensor(scales), tg.tensor(zps), axis, Q.qint8)
    shape = [1, 1, 1]
    shape[axis] = n
    ref = ref_quantize(x, scales.reshape(shape), zps.reshape(shape), -128, 127)
    np.testing.assert_array_equal(q.int_repr().numpy(), ref)
    np.testing.assert_array_equal(q.dequantize().numpy(),
                                  ((ref - zps.reshape(shape)) * scales.reshape(shape))
                                  .astype(np.float32))
    assert q.q_per_channel_axis() == axis % 3 and q.qscheme() is Q.per_channel_affine
    assert q.q_per_channel_scales().dtype is tg.float64
    assert q.q_per_channel_zero_points().dtype is tg.int64
    np.testing.assert_array_equal(q.q_per_channel_zero_points().numpy(), zps)


def test_quantize_per_channel_float_qparams():
    x = np.array([[0.1, 0.26, 1.0], [-1.0, 0.0, 0.5]], np.float32)
    s = np.array([0.25, 0.5], np.float32)
    z = np.array([0.5, 2.0], np.float32)
    q = Q.quantize_per_channel(tg.tensor(x), tg.tensor(s), tg.tensor(z), 0, Q.quint8)
    assert q.qscheme() is Q.per_channel_affine_float_qparams
    ref = np.clip(np.rint(x / s[:, None] + z[:, None]), 0, 255)  # zero point before rounding
    np.testing.assert_array_equal(q.int_repr().numpy(), ref)
    np.testing.assert_array_equal(q.dequantize().numpy(), (ref - z[:, None]) * s[:, None])


def test_quint4x2_packs_two_per_byte():
    q = Q.quantize_per_tensor(tg.tensor([1.0, 2.0, 3.3]), 0.1, 3, Q.quint4x2)
    # values 13, 15 (23 clamped), 15 (36 clamped): low nibble first
    assert q.int_repr().tolist() == [13 | (15 << 4), 15]
    np.testing.assert_allclose(q.dequantize().numpy(), [1.0, 1.2, 1.2], rtol=1e-6)


def test_quantize_per_tensor_dynamic_closed_form():
    x = np.array([-1.0, 0.0, 3.0], np.float32)
    q = Q.quantize_per_tensor_dynamic(tg.tensor(x), Q.quint8, False)
    scale = 4.0 / 255  # (max - min) / (qmax - qmin), the range holding 0
    assert q.q_scale() == pytest.approx(scale, rel=1e-12)
    assert q.q_zero_point() == 64  # round(0 - min / scale) = round(63.75)
    qr = Q.quantize_per_tensor_dynamic(tg.tensor(x), Q.qint8, True)
    assert qr.q_scale() == pytest.approx(4.0 / 127, rel=1e-12)  # reduce_range: [-64, 63]


def test_accessors_and_errors():
    q = Q.quantize_per_tensor(tg.tensor([1.0, 2.0]), 0.1, 3, Q.quint8)
    with pytest.raises(RuntimeError, match="kPerChannelAffine"):
        q.q_per_channel_scales()
    qc = Q.quantize_per_channel(tg.tensor([[1.0, 2.0]]), tg.tensor([0.1]), tg.tensor([0]), 0,
                                Q.qint8)
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        qc.q_scale()
    with pytest.raises(RuntimeError, match="Quantize only works on Float Tensor, got Double"):
        Q.quantize_per_tensor(tg.tensor([1.0], dtype=tg.float64), 0.1, 0, Q.quint8)
    with pytest.raises(RuntimeError, match="not supported in new_qtensor"):
        Q.quantize_per_tensor(tg.tensor([1.0]), 0.1, 0, tg.float32)
    with pytest.raises(RuntimeError, match="above upper bound"):
        Q.quantize_per_tensor(tg.tensor([1.0]), 0.1, 300, Q.quint8)
    with pytest.raises(RuntimeError, match="channel size"):
        Q.quantize_per_channel(tg.tensor([[1.0, 2.0]]), tg.tensor([0.1, 0.2]), tg.tensor([0, 0]),
                               0, Q.qint8)
    with pytest.raises(TypeError, match="must be Tensor"):
        Q.dequantize([1.0][0])
    with pytest.raises(RuntimeError, match="dequantize"):
        q.to(tg.float32)


def test_repr_and_list_forms():
    q = Q.quantize_per_tensor(tg.tensor([1.0, 2.5, -1.0]), 0.5, 2, Q.quint8)
    assert repr(q) == ("tensor([ 1.0000,  2.5000, -1.0000], size=(3,), dtype=tritongrad.quint8,\n"
                       "       quantization_scheme=tritongrad.per_tensor_affine, scale=0.5, "
                       "zero_point=2)")
    qs = Q.quantize_per_tensor([tg.tensor([1.0]), tg.tensor([2.0])], tg.tensor([0.5, 0.25]),
                               tg.tensor([0, 1]), Q.quint8)
    assert [t.int_repr().tolist() for t in qs] == [[2], [9]]
    assert Q.dequantize(qs)[1].tolist() == [2.0]


def test_ops_on_quantized_tensors():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    q = Q.quantize_per_tensor(tg.tensor(x), 0.05, 128, Q.quint8)
    ints = q.int_repr().numpy()
    r = tg.relu(q)  # through __torch_function__
    assert isinstance(r, _qtensor.QuantizedTensor)
    np.testing.assert_array_equal(r.int_repr().numpy(), np.maximum(ints, 128))
    np.testing.assert_array_equal(tg.nn.functional.relu(q).int_repr().numpy(),
                                  np.maximum(ints, 128))
    assert tuple(tg.flatten(q, 1).shape) == (2, 48) and tuple(q.reshape(6, 16).shape) == (6, 16)
    pooled = tg.nn.functional.max_pool2d(q, 2)
    np.testing.assert_array_equal(pooled.int_repr().numpy(),
                                  ints.reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5)))
    cat = tg.cat([q, q], 1)
    assert tuple(cat.shape) == (2, 6, 4, 4) and cat.q_scale() == 0.05
    assert q[0].int_repr().tolist() == ints[0].tolist()
    with pytest.raises(TypeError):
        tg.exp(q)  # no quantized exp: PyTorch refuses too
    with pytest.raises(NotImplementedError, match="^cat: out= is not supported"):
        tg.cat([q, q], 1, out=cat)
    # hardtanh in place: the input takes the clamped integers (-0.5 and 1.0 are 10 below and
    # 20 above the zero point), its parameters unchanged; out of place the input is kept
    from tritongrad.ao.nn.quantized import functional as qF
    kept = qF.hardtanh(q, -0.5, 1.0)
    np.testing.assert_array_equal(q.int_repr().numpy(), ints)
    assert ints.min() < 118 and ints.max() > 148
    np.testing.assert_array_equal(kept.int_repr().numpy(), np.clip(ints, 118, 148))
    assert qF.hardtanh(q, -0.5, 1.0, inplace=True) is q and q.q_scale() == 0.05
    np.testing.assert_array_equal(q.int_repr().numpy(), np.clip(ints, 118, 148))


# -- PyTorch's bits ------------------------------------------------------------------------


def _torch():
    return pytest.importorskip("torch", minversion="2.13")


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
@pytest.mark.parametrize("n", [7, 1000, 40001])
def test_quantize_dequantize_match_torch(dtype, n):
    torch = _torch()
    rng = np.random.default_rng(n)
    # half the values on exact ties of the float32 product (dequantized values requantized)
    x = np.concatenate([(rng.standard_normal(n) * 3),
                        np.round(rng.standard_normal(n) * 50) * np.float32(0.02)]).astype(
                            np.float32)
    for scale, zp in ((0.04, 3), (0.0371, -5 if dtype != "quint8" else 110)):
        t = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, getattr(torch, dtype))
        q = Q.quantize_per_tensor(tg.tensor(x), scale, zp, getattr(Q, dtype))
        np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())
        np.testing.assert_array_equal(q.dequantize().numpy(), t.dequantize().numpy())


def test_per_channel_and_dynamic_match_torch():
    torch = _torch()
    rng = np.random.default_rng(3)
    x = (np.round(rng.standard_normal((4, 999)) * 50) * np.float32(0.02)).astype(np.float32)
    s = np.array([0.04, 0.0813, 0.02, 0.031])
    z = np.array([3, 10, -7, 0])
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(s),
                                   torch.from_numpy(z), 0, torch.qint8)
    q = Q.quantize_per_channel(tg.tensor(x), tg.tensor(s), tg.tensor(z), 0, Q.qint8)
    np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(q.dequantize().numpy(), t.dequantize().numpy())
    zf = np.array([3.3, -1.7, 100.2, 0.5], np.float32)
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(s.astype(np.float32)),
                                   torch.from_numpy(zf), 0, torch.quint8)
    q = Q.quantize_per_channel(tg.tensor(x), tg.tensor(s.astype(np.float32)), tg.tensor(zf), 0,
                               Q.quint8)
    np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(q.dequantize().numpy(), t.dequantize().numpy())
    for data in (x[0], np.abs(x[1]) + 1, -np.abs(x[2]), np.full(5, 1e-7, np.float32)):
        for dtype, rr in (("quint8", False), ("quint8", True), ("qint8", False)):
            t = torch.quantize_per_tensor_dynamic(torch.from_numpy(data), getattr(torch, dtype),
                                                  rr)
            q = Q.quantize_per_tensor_dynamic(tg.tensor(data), getattr(Q, dtype), rr)
            assert (q.q_scale(), q.q_zero_point()) == (t.q_scale(), t.q_zero_point())
            np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())


def test_quantized_functional_ops_match_torch():
    torch = _torch()
    from tritongrad.ao.nn.quantized import functional as qF
    rng = np.random.default_rng(4)
    a = rng.standard_normal((30, 50)).astype(np.float32)
    b = (rng.standard_normal((30, 50)) * 2).astype(np.float32)
    ta = torch.quantize_per_tensor(torch.from_numpy(a), 0.02, 100, torch.quint8)
    tb = torch.quantize_per_tensor(torch.from_numpy(b), 0.05, 130, torch.quint8)
    qa = Q.quantize_per_tensor(tg.tensor(a), 0.02, 100, Q.quint8)
    qb = Q.quantize_per_tensor(tg.tensor(b), 0.05, 130, Q.quint8)
    for name in ("add", "mul", "add_relu"):
        t = getattr(torch.ops.quantized, name)(ta, tb, 0.07, 120)
        np.testing.assert_array_equal(getattr(qF, name)(qa, qb, 0.07, 120).int_repr().numpy(),
                                      t.int_repr().numpy())
    t = torch.ops.quantized.cat([ta, tb], 1, 0.04, 110)
    np.testing.assert_array_equal(qF.cat([qa, qb], 1, 0.04, 110).int_repr().numpy(),
                                  t.int_repr().numpy())
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    tx = torch.quantize_per_tensor(torch.from_numpy(x), 0.02, 100, torch.quint8)
    qx = Q.quantize_per_tensor(tg.tensor(x), 0.02, 100, Q.quint8)
    pairs = [(torch.nn.functional.avg_pool2d(tx, 2), qF.avg_pool2d(qx, 2)),
             (torch.nn.functional.adaptive_avg_pool2d(tx, (2, 2)),
              qF.adaptive_avg_pool2d(qx, (2, 2))),
             (torch.nn.functional.hardtanh(tx, 0.0, 6.0), qF.relu6(qx))]
    for t, q in pairs:
        np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())


class _TopLevel:
    """``tg`` in the docstring examples: tritongrad with the quantized names at the top (as
    tritongrad/__init__.py re-exports them)."""

    def __getattr__(self, name):
        return getattr(Q if hasattr(Q, name) else tg, name)


def test_docstring_examples_run():
    """The examples in the docstrings print what they say."""
    import doctest
    import importlib

    from tritongrad.ao.nn.quantized import dynamic, modules
    from tritongrad.ao.quantization import observer
    # (the package's name fuse_modules is the function, as in PyTorch)
    fuse_modules = importlib.import_module("tritongrad.ao.quantization.fuse_modules")
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    ran = 0
    for mod in (_qtensor, modules, dynamic, observer, fuse_modules):
        for test in finder.find(mod, globs={**vars(mod), "tg": _TopLevel()}):
            ran += len(test.examples)
            runner.run(test)
    assert ran >= 15
    assert runner.failures == 0, runner.summarize(verbose=False)


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
def test_nonfinite_inputs(dtype):
    lo, hi = RANGES[dtype]
    x = np.array([np.nan, np.inf, -np.inf, 1.0] * 3, np.float32)
    q = Q.quantize_per_tensor(tg.tensor(x), 0.1, 3, getattr(Q, dtype)).int_repr().numpy()
    assert q[1] == hi and q[2] == lo and q[3] == 13  # infinities clamp to the range's ends
    assert q[0] in (lo, hi)  # NaN: an end of the range, as PyTorch's kernels give it
    torch = pytest.importorskip("torch", minversion="2.13")
    t = torch.quantize_per_tensor(torch.from_numpy(x), 0.1, 3, getattr(torch, dtype))
    np.testing.assert_array_equal(q, t.int_repr().numpy())


def test_scalar_ops():
    from tritongrad.ao.nn.quantized import functional as qF
    q = Q.quantize_per_tensor(tg.tensor([0.0, 1.0, 2.0, 2.5]), 0.01, 0, Q.quint8)
    # inside the range: the zero point moves by round(c / scale), the integers stay
    r = qF.add_scalar(Q.quantize_per_tensor(tg.tensor([1.0, 2.0]), 0.01, 50, Q.quint8), 0.5)
    assert (r.q_scale(), r.q_zero_point()) == (0.01, 0)
    np.testing.assert_allclose(r.dequantize().numpy(), [1.5, 2.5], rtol=1e-6)
    # past the range: widened to hold [0.5, 3.05] and 0 -> scale 3.05 / 255
    r = qF.add_scalar(q, 0.5)
    assert r.q_scale() == pytest.approx(3.05 / 255) and r.q_zero_point() == 0
    assert np.abs(r.dequantize().numpy() - [0.5, 1.5, 2.5, 3.0]).max() <= r.q_scale() / 2
    r = qF.mul_scalar(q, -2.0)
    assert r.q_scale() == pytest.approx(0.02) and r.q_zero_point() == 255
    np.testing.assert_allclose(r.dequantize().numpy(), [0.0, -2.0, -4.0, -5.0], atol=1e-6)
    z = qF.mul_scalar(q, 0.0)
    assert z.int_repr().tolist() == [0] * 4 and z.q_scale() == 1.0


def test_scalar_ops_match_torch():
    torch = _torch()
    from tritongrad.ao.nn.quantized import functional as qF
    x = (np.random.default_rng(16).standard_normal(1000) * 2).astype(np.float32)
    for dtype, cases in (("quint8", ((0.01, 0), (0.02, 100), (0.05, 250))),
                         ("qint8", ((0.01, 0), (0.03, -100), (0.05, 120)))):
        for s, z in cases:
            t = torch.quantize_per_tensor(torch.from_numpy(x), s, z, getattr(torch, dtype))
            g = Q.quantize_per_tensor(tg.tensor(x), s, z, getattr(Q, dtype))
            for c in (0.5, -0.5, 3.0, -3.0, 0.0, 0.013, 7.7, -7.7):
                for name in ("add_scalar", "mul_scalar"):
                    tr, gr = getattr(torch.ops.quantized, name)(t, c), getattr(qF, name)(g, c)
                    assert (gr.q_scale(), gr.q_zero_point()) == (tr.q_scale(),
                                                                 tr.q_zero_point())
                    np.testing.assert_array_equal(gr.int_repr().numpy(), tr.int_repr().numpy())
