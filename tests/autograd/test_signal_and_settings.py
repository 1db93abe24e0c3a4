"""Window functions, stft/istft (autograd/ops/signal.py) against NumPy float64 formulas, the
global settings (autograd/settings.py, printing.py) taking effect, and the nn.functional
operations at the top of the package (nn/_torch_functions.py)."""

import math

import numpy as np
import pytest
import tritongrad.nn.functional as F

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64


def same(t, ref, tol=1e-12):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_allclose(host(t), ref, rtol=tol, atol=tol)


# -- windows -----------------------------------------------------------------------------------

def _symmetric(name, n):
    k = np.arange(n)
    if n == 1:
        return np.ones(1)
    phase = 2 * math.pi * k / (n - 1)
    return {"hann_window": np.hanning(n), "hamming_window": np.hamming(n),
            "blackman_window": 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase),
            "bartlett_window": np.bartlett(n), "kaiser_window": np.kaiser(n, 12.0)}[name]


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("length", [1, 2, 7, 8])
def test_windows_match_numpy(name, length, device):
    fn = getattr(tg, name)
    same(fn(length, periodic=False, dtype=tg.float64, device=device), _symmetric(name, length))
    periodic = _symmetric(name, length + 1)[:length] if length > 1 else np.ones(1)
    w = fn(length, dtype=tg.float64, device=device)
    same(w, periodic)
    assert w.device == tg.device(device) or device == "cuda"


def test_window_arguments():
    assert tg.hann_window(0).shape == (0,) and tg.hann_window(3).dtype is tg.float32
    assert tg.hann_window(3, requires_grad=True).requires_grad
    same(tg.hamming_window(5, False, 0.5, 0.3, dtype=tg.float64),
         0.5 - 0.3 * np.cos(2 * math.pi * np.arange(5) / 4))
    same(tg.kaiser_window(5, False, 3.0, dtype=tg.float64), np.kaiser(5, 3.0))
    with pytest.raises(RuntimeError, match="hann_window requires non-negative window_length"):
        tg.hann_window(-1)
    with pytest.raises(RuntimeError, match="kaiser_window expects floating point dtypes"):
        tg.kaiser_window(4, dtype=tg.int64)


# -- stft / istft ------------------------------------------------------------------------------

def _stft_reference(x, n_fft, hop, window, center, onesided=True, normalized=False):
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode="reflect")
    n = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., f * hop:f * hop + n_fft] * window for f in range(n)], -2)
    spec = (np.fft.rfft if onesided else np.fft.fft)(frames, axis=-1)
    if normalized:
        spec = spec / math.sqrt(n_fft)
    return np.swapaxes(spec, -1, -2)


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("shape", [(20,), (2, 17)])
def test_stft_matches_numpy(center, shape, device):
    x = t64(shape, device)
    w = tg.hann_window(8, dtype=tg.float64, device=device)
    out = tg.stft(x, 8, hop_length=3, window=w, center=center, return_complex=True)
    ref = _stft_reference(host(x), 8, 3, host(w), center)
    np.testing.assert_allclose(host(tg.view_as_real(out)), np.stack([ref.real, ref.imag], -1),
                               atol=1e-12)
    full = tg.stft(x, 8, hop_length=3, window=w, center=center, return_complex=True,
                   onesided=False, normalized=True)
    ref = _stft_reference(host(x), 8, 3, host(w), center, False, True)
    np.testing.assert_allclose(host(tg.view_as_real(full)),
                               np.stack([ref.real, ref.imag], -1), atol=1e-12)


def test_stft_win_length_pads_the_window_and_gradients():
    x = t64((16,))
    w = t64((6,), low=0.5, high=1.0)
    out = tg.stft(x, 8, hop_length=2, win_length=6, window=w, return_complex=True)
    ref = _stft_reference(host(x), 8, 2, np.pad(host(w), 1), True)
    np.testing.assert_allclose(host(tg.view_as_real(out)), np.stack([ref.real, ref.imag], -1),
                               atol=1e-12)
    assert_grads_match(lambda a, b: tg.view_as_real(
        tg.stft(a, 8, hop_length=2, win_length=6, window=b, return_complex=True)).sum(-1),
        [x, w])


def test_istft_inverts_stft(device):
    x = t64((2, 24), device)
    w = tg.hann_window(8, dtype=tg.float64, device=device)
    spec = tg.stft(x, 8, hop_length=2, window=w, return_complex=True)
    same(tg.istft(spec, 8, hop_length=2, window=w), host(x), 1e-10)
    same(tg.istft(spec, 8, hop_length=2, window=w, length=20), host(x)[:, :20], 1e-10)
    full = tg.stft(x, 8, hop_length=2, window=w, return_complex=True, onesided=False)
    same(tg.istft(full, 8, hop_length=2, window=w, onesided=False), host(x), 1e-10)
    z = tg.istft(full, 8, hop_length=2, window=w, onesided=False, return_complex=True)
    same(tg.view_as_real(z)[..., 0], host(x), 1e-10)
    with pytest.warns(UserWarning, match="padded with zeros"):
        padded = tg.istft(spec, 8, hop_length=2, window=w, length=30)
    # (the span kept runs past the signal into stft's padding, then 2 zeros: PyTorch's too)
    assert tuple(padded.shape) == (2, 30)
    same(padded[:, :24], host(x), 1e-10)
    same(padded[:, 28:], np.zeros((2, 2)))


def test_stft_istft_errors():
    x = tg.ones(10)
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        tg.stft(x, 4)
    with pytest.raises(RuntimeError, match="expected 0 < n_fft < 10, but got n_fft=12"):
        tg.stft(x, 12, center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="expected hop_length > 0"):
        tg.stft(x, 4, hop_length=0, return_complex=True, window=tg.ones(4))
    with pytest.raises(RuntimeError, match="expected a 1D window tensor of size equal to "
                                           "win_length=4"):
        tg.stft(x, 4, window=tg.ones(3), return_complex=True)
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        tg.stft(tg.ones(3), 8, return_complex=True, window=tg.ones(8))
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        tg.stft(x, 4, pad_mode="foo", return_complex=True, window=tg.ones(4))
    with pytest.raises(RuntimeError, match="Cannot have onesided output"):
        tg.stft(x, 4, onesided=True, return_complex=True, window=tg.ones(4, dtype=tg.complex64))
    spec = tg.stft(x, 4, window=tg.hann_window(4), return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input"):
        tg.istft(tg.view_as_real(spec), 4)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        tg.istft(spec, 4, window=tg.hann_window(4), center=False)
    with pytest.raises(RuntimeError, match="match n_fft / 2 \\+ 1 when onesided=True"):
        tg.istft(spec, 6, window=tg.ones(6))


# -- settings ----------------------------------------------------------------------------------

@pytest.fixture
def restore_settings():
    yield
    tg.set_printoptions(profile="default")
    tg.set_default_device(None)
    tg.set_default_dtype(tg.float32)
    tg.use_deterministic_algorithms(False)
    tg.set_warn_always(False)
    tg.set_anomaly_enabled(False)


def test_set_printoptions_changes_printing(restore_settings):
    x = tg.tensor([1.123456, 2.5])
    assert repr(x) == "tensor([1.1235, 2.5000])"
    tg.set_printoptions(precision=2)
    assert repr(x) == "tensor([1.12, 2.50])"
    tg.set_printoptions(sci_mode=True)
    assert repr(x) == "tensor([1.12e+00, 2.50e+00])"
    tg.set_printoptions(profile="default")
    tg.set_printoptions(threshold=5)
    assert repr(tg.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    tg.set_printoptions(threshold=5, edgeitems=1)
    assert repr(tg.arange(10)) == "tensor([0,  ..., 9])"
    tg.set_printoptions(profile="default", linewidth=20)
    assert repr(tg.arange(8)) == "tensor([0, 1, 2, 3,\n        4, 5, 6, 7])"  # (20 - 7) // 3
    tg.set_printoptions(profile="full")
    assert "..." not in repr(tg.arange(2000))
    tg.set_printoptions(profile="default")
    assert repr(x) == "tensor([1.1235, 2.5000])"


def test_default_device_is_used_by_factories(restore_settings):
    assert tg.get_default_device() == tg.device("cpu")
    tg.set_default_device("cuda")
    assert tg.get_default_device().type == "cuda"
    for t in (tg.zeros(2), tg.ones(2), tg.empty(2), tg.rand(2), tg.arange(3), tg.tensor([1.0]),
              tg.full((2,), 1.0), tg.eye(2), tg.hann_window(4), tg.asarray([1.0]),
              tg.scalar_tensor(1.0), tg.linspace(0, 1, 3), tg.randperm(3)):
        assert t.device.type == "cuda", t
    assert tg.zeros(2, device="cpu").device.type == "cpu"
    assert tg.ones(2, device="cpu").add(1).device.type == "cpu"  # ops keep their inputs'
    tg.set_default_device(None)
    assert tg.zeros(2).device.type == "cpu"


def test_set_default_tensor_type(restore_settings):
    with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
        tg.set_default_tensor_type(tg.DoubleTensor)
    assert tg.get_default_dtype() is tg.float64 and tg.zeros(1).dtype is tg.float64
    with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating-point"):
        tg.set_default_tensor_type("torch.LongTensor")


def test_threads_determinism_and_flags(restore_settings):
    n = tg.get_num_threads()
    assert n >= 1 and tg.get_num_interop_threads() >= 1
    tg.set_num_threads(1)
    assert tg.get_num_threads() == 1
    tg.set_num_threads(n)
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        tg.set_num_threads(0)
    assert not tg.are_deterministic_algorithms_enabled()
    tg.use_deterministic_algorithms(True, warn_only=True)
    assert tg.are_deterministic_algorithms_enabled()
    assert tg.is_deterministic_algorithms_warn_only_enabled()
    assert tg.get_deterministic_debug_mode() == 1
    tg.set_deterministic_debug_mode("error")
    assert tg.get_deterministic_debug_mode() == 2
    tg.set_deterministic_debug_mode(0)
    assert not tg.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        tg.set_deterministic_debug_mode("foo")
    with pytest.raises(TypeError, match="must be bool"):
        tg.use_deterministic_algorithms("x")
    tg.set_warn_always(True)
    assert tg.is_warn_always_enabled()
    tg.set_anomaly_enabled(True, check_nan=False)
    assert tg.is_anomaly_enabled() and not tg.is_anomaly_check_nan_enabled()
    assert tg.autograd.anomaly_mode.is_anomaly_enabled()
    assert tg.set_flush_denormal(True) is False


# -- nn.functional at the top ------------------------------------------------------------------

def test_aliases_are_nn_functional():
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose2d", "pixel_shuffle", "bilinear",
                 "prelu", "rms_norm", "cosine_similarity", "pairwise_distance",
                 "adaptive_avg_pool1d"):
        assert getattr(tg, name) is getattr(F, name), name


def test_aten_signatures_call_through(device):
    x = t64((2, 4, 6), device)
    same(tg.dropout(x, 0.5, False), host(x))
    same(tg.feature_dropout(x, 0.5, False), host(x))
    tg.manual_seed(0)
    d = host(tg.feature_dropout(x, 0.5, True))
    assert all(np.all(row == 0) or np.allclose(row, 2 * r) for row, r in
               zip(d.reshape(8, 6), host(x).reshape(8, 6)))
    same(tg.batch_norm(x, None, None, None, None, True, 0.1, 1e-5, False),
         host(F.batch_norm(x, None, None, training=True)))
    same(tg.layer_norm(x, (6,)), host(F.layer_norm(x, (6,))))
    same(tg.threshold(x, 0.1, -3.0), np.where(host(x) > 0.1, host(x), -3.0))
    same(tg.celu(x, 2.0), np.maximum(host(x), 0) + np.minimum(0, 2 * np.expm1(host(x) / 2)))
    same(tg.rrelu(x), np.where(host(x) >= 0, host(x), host(x) * (1 / 8 + 1 / 3) / 2))
    y = t64((2, 4, 6), device)
    same(tg.kl_div(x, y.exp(), 2), host(F.kl_div(x, y.exp(), reduction="sum")))
    same(tg.max_pool1d(x, 2), host(F.max_pool1d(x, 2)))
    vals, indices = tg.adaptive_max_pool1d(x, 3)
    assert indices.dtype is tg.int64
    same(vals, host(F.adaptive_max_pool1d(x, 3)))
    same(tg.constant_pad_nd(x, (1, 2), 0.5), np.pad(host(x), [(0, 0), (0, 0), (1, 2)],
                                                     constant_values=0.5))
    w = t64((3, 4, 2), device)
    same(tg.convolution(x, w, None, (1,), (0,), (1,), False, (0,), 1), host(F.conv1d(x, w)))


def test_channel_shuffle_and_pdist(device):
    x = t64((2, 6, 3), device)
    ref = host(x).reshape(2, 3, 2, 3).transpose(0, 2, 1, 3).reshape(2, 6, 3)
    same(tg.channel_shuffle(x, 3), ref)
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups"):
        tg.channel_shuffle(x, 4)
    p = t64((5, 3), device)
    a = host(p)
    for norm in (1.0, 2.0):
        ref = [np.linalg.norm(a[i] - a[j], norm) for i in range(5) for j in range(i + 1, 5)]
        same(tg.pdist(p, norm), np.array(ref), 1e-10)
    assert_grads_match(tg.pdist, [p])
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        tg.pdist(x)
