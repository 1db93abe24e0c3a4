"""Signal processing at the top of ``torch``: the window functions (``hann_window``,
``hamming_window``, ``blackman_window``, ``bartlett_window``, ``kaiser_window``) and the
short-time Fourier transform ``stft`` with its inverse ``istft``.

The windows are factories: computed on the host in float64 from PyTorch's formulas (its docs,
aten/src/ATen/native/TensorFactories.cpp) and cast to the requested floating dtype, on the
requested (or default) device. A periodic window of length L is the first L points of the
symmetric window of length L + 1.

``stft`` and ``istft`` follow aten/src/ATen/native/SpectralOps.cpp, composed from tritongrad's
differentiable ops: padding (``center``), framing by ``Tensor.unfold`` (a strided view),
the window product, the FFTs of autograd/ops/fft.py, and for ``istft`` the overlap-add
(``index_add``) divided by the overlap-added squared window. Gradients flow to the signal (or
spectrum) and to the window through that composition. The FFTs run on the host (fft.py), so
on CUDA every call synchronizes with the current stream.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from ...runtime import dtype as dtypes
from ..checks import tensor_arg, unsupported
from ..registry import OpInfo
from ..tensor import Tensor
from .creation import _finish, _pinned, as_dtype, host_to, resolve_device

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window",
           "istft", "kaiser_window", "stft"]


# -- windows -----------------------------------------------------------------------------------

def _window(name: str, window_length: int, periodic: bool, formula, dtype, device,
            requires_grad: bool, pin_memory: bool = False) -> Tensor:
    """The window ``formula(n, N)`` (float64 NumPy, ``n = 0 .. N - 1``) of ``window_length``
    points as a ``dtype`` tensor: of the symmetric window of ``window_length + 1`` points when
    ``periodic``, as PyTorch's."""
    window_length = operator.index(window_length)
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        values = formula(np.arange(n, dtype=np.float64), n)[:window_length]
    out = host_to(np.ascontiguousarray(values), dt, resolve_device(device))
    return _finish(_pinned(out, pin_memory), requires_grad)


def _cosine_sum(*coefficients):
    """The generalized cosine window sum_k (-1)^k a_k cos(2 pi k n / (N - 1))."""
    def formula(n, N):
        phase = 2 * math.pi * n / (N - 1)
        return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))
    return formula


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Hann window: ``w[n] = 0.5 - 0.5 cos(2 pi n / (N - 1))``, ``N = window_length + 1`` if
    ``periodic`` (the default, for use with ``stft``) else ``window_length``."""
    return _window("hann_window", window_length, periodic, _cosine_sum(0.5, 0.5), dtype,
                   device, requires_grad, pin_memory)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Hamming window: ``w[n] = alpha - beta cos(2 pi n / (N - 1))``, ``N`` as for
    :func:`hann_window`."""
    return _window("hamming_window", window_length, periodic, _cosine_sum(alpha, beta), dtype,
                   device, requires_grad, pin_memory)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:
    """Blackman window: ``w[n] = 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N -
    1))``, ``N`` as for :func:`hann_window`."""
    return _window("blackman_window", window_length, periodic, _cosine_sum(0.42, 0.5, 0.08),
                   dtype, device, requires_grad, pin_memory)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:
    """Bartlett (triangular) window: ``w[n] = 1 - |2 n / (N - 1) - 1|``, ``N`` as for
    :func:`hann_window`."""
    return _window("bartlett_window", window_length, periodic,
                   lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1), dtype, device, requires_grad,
                   pin_memory)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None,
                  layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """Kaiser window: ``w[n] = I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)``,
    ``a = (N - 1) / 2``, ``N`` as for :func:`hann_window`; ``I0`` the modified Bessel
    function of the first kind, order zero."""
    def formula(n, N):
        a = (N - 1) / 2
        return np.i0(beta * np.sqrt(np.clip(1 - ((n - a) / a) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, formula, dtype, device,
                   requires_grad, pin_memory)


# -- stft --------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_signal(x: Tensor, pad: int, mode: str) -> Tensor:
    """``x`` padded by ``pad`` on both ends of its last dim, as ``F.pad`` of its 3-D view
    (PyTorch's stft pads ``input.view(1, ..., L)``)."""
    from .shape import cat
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if pad == 0:
        return x
    n = x.shape[-1]
    if mode == "reflect" and pad >= n:
        shape = [1] * (3 - x.ndim) + list(x.shape)
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({pad}, {pad}) at dimension 2 "
                           f"of input {shape}")
    if mode == "circular" and pad > n:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode == "constant":
        z = x.new_zeros(tuple(x.shape[:-1]) + (pad,))
        left = right = z
    elif mode == "reflect":
        left = x.narrow(-1, 1, pad).flip(-1)
        right = x.narrow(-1, n - 1 - pad, pad).flip(-1)
    elif mode == "replicate":
        size = tuple(x.shape[:-1]) + (pad,)
        left, right = x.narrow(-1, 0, 1).expand(size), x.narrow(-1, n - 1, 1).expand(size)
    else:  # circular
        left, right = x.narrow(-1, n - pad, pad), x.narrow(-1, 0, pad)
    return cat([left, x, right], -1)


def _full_window(window: Tensor | None, win_length: int, n_fft: int, like: Tensor,
                 op: str) -> Tensor | None:
    """The window zero-padded on both sides to ``n_fft`` points (centered), or None for
    PyTorch's rectangular default when ``win_length == n_fft``."""
    from .shape import cat
    if window is None:
        if win_length == n_fft:
            return None
        real = like.dtype.to_real() if like.dtype.is_complex else like.dtype
        window = like.new_ones((win_length,), dtype=real)
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    return cat([window.new_zeros((left,)), window,
                window.new_zeros((n_fft - win_length - left,))])


def _describe(x: Tensor) -> str:
    return f"tensor of shape {list(x.shape)}"


def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """Short-time Fourier transform: the FFT of each ``n_fft``-point frame of ``input``
    (1-D, or 2-D with a batch dim), frames ``hop_length`` apart (default ``n_fft // 4``),
    each multiplied by ``window`` (``win_length`` points, default ``n_fft``, centered and
    zero-padded to ``n_fft``; default rectangular). ``center=True`` pads the signal by
    ``n_fft // 2`` on both sides with ``pad_mode`` first. Returns ``(..., n_fft // 2 + 1,
    n_frames)`` complex (``onesided``, the default for real input and window) or
    ``(..., n_fft, n_frames)``; ``normalized`` scales by ``n_fft^-0.5``.

    ``return_complex`` must be given for real input, as PyTorch 2 requires (``False``, which
    PyTorch deprecates, returns ``view_as_real`` of the result with its warning).
    Differentiable with respect to the input and the window.
    """
    from . import fft as _fft
    from .complex_parts import view_as_real
    op = "stft"
    tensor_arg(input, op)
    if window is not None:
        tensor_arg(window, op, "window")
    n_fft = operator.index(n_fft)
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if align_to_window:
        raise unsupported(op, "align_to_window", align_to_window, "frames start at the signal's "
                          "start (align_to_window=False)")
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    elif not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
    if center:
        if input.ndim not in (1, 2):
            raise RuntimeError(f"stft({_describe(input)}): expected a 1D or 2D tensor")
        input = _pad_signal(input, n_fft // 2, pad_mode)
    hop = n_fft // 4 if hop_length is None else operator.index(hop_length)
    win = n_fft if win_length is None else operator.index(win_length)
    prefix = f"stft({_describe(input)}, n_fft={n_fft}, hop_length={hop}, win_length={win})"
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{prefix}: expected a 1D or 2D tensor")
    length = input.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"{prefix}: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{prefix}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{prefix}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(f"{prefix}: expected a 1D window tensor of size equal to "
                           f"win_length={win}, but got window with size {list(window.shape)}")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is "
                      "known to cause spectral leakage. Other windows such as torch.hann_window "
                      "or torch.hamming_window are recommended to reduce spectral leakage.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    w = _full_window(window, win, n_fft, input, op)
    frames = input.unfold(-1, n_fft, hop)  # (..., n_frames, n_fft), a strided view
    if w is not None:
        frames = frames * w
    complex_fft = frames.dtype.is_complex
    onesided = (not complex_fft) if onesided is None else bool(onesided)
    if complex_fft and onesided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    if complex_fft:
        out = _fft.fft(frames, dim=-1, norm=norm)
    elif onesided:
        out = _fft.rfft(frames, dim=-1, norm=norm)
    else:
        out = _fft.fft(frames, dim=-1, norm=norm)
    out = out.transpose(-1, -2)
    return out if return_complex else view_as_real(out)


def _overlap_add(frames: Tensor, hop: int, length: int) -> Tensor:
    """The frames (B, n_frames, n) summed into a (B, length) signal, frame f starting at
    ``f * hop`` (``unfold``'s adjoint; PyTorch's ``unfold_backward``)."""
    from .creation import arange
    b, n_frames, n = frames.shape
    index = (arange(n_frames, device=frames.device).unsqueeze(1) * hop
             + arange(n, device=frames.device)).reshape(-1)
    return frames.new_zeros((b, length)).index_add(1, index, frames.reshape(b, n_frames * n))


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """Inverse short-time Fourier transform: the inverse FFT of each frame of the complex
    spectrum ``input`` (``(..., freq, n_frames)`` as :func:`stft` returns it), multiplied by
    ``window``, overlap-added ``hop_length`` apart and divided by the overlap-added squared
    window (which must not vanish anywhere in the kept span: "window overlap add min").
    ``center`` removes the ``n_fft // 2`` padding of ``stft(center=True)``; ``length`` trims
    (or zero-pads) the result. ``onesided`` defaults to ``input.size(-2) != n_fft``. Real
    output unless ``return_complex``. Differentiable with respect to the input and the
    window."""
    from . import fft as _fft
    from .shape import cat
    op = "istft"
    tensor_arg(input, op)
    n_fft = operator.index(n_fft)
    hop = n_fft // 4 if hop_length is None else operator.index(hop_length)
    win = n_fft if win_length is None else operator.index(win_length)
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    prefix = f"istft({_describe(input)}, n_fft={n_fft}, hop_length={hop}, win_length={win})"
    if input.numel() == 0:
        raise RuntimeError(f"{prefix}: input tensor cannot be empty.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{prefix}: expected a tensor with 3 or 4 dimensions of real, or 2 "
                           f"or 3 dimensions of complex, but got {input.ndim + 1}")
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    fft_size, n_frames = x.shape[-2], x.shape[-1]
    expected_len = n_fft + hop * (n_frames - 1)
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{prefix}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    if not 0 < hop <= win:
        raise RuntimeError(f"{prefix}: expected 0 < hop_length <= win_length")
    if window is not None:
        tensor_arg(window, op, "window")
        if window.ndim != 1 or window.shape[0] != win:
            raise RuntimeError(f"{prefix}: Invalid window shape. window has to be 1D and length "
                               f"of `win_length`")
    else:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    real = x.dtype.to_real()
    w = _full_window(window, win, n_fft, x, op)
    if w is None:
        w = x.new_ones((n_fft,), dtype=real)
    onesided = fft_size != n_fft if onesided is None else bool(onesided)
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"{prefix}: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(f"{prefix}: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got "
                           f"{fft_size}")
    x = x.transpose(1, 2)  # (B, n_frames, fft_size)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _fft.ifft(x, dim=-1, norm=norm)
    else:
        if w.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = x.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft.irfft(x, n_fft, dim=-1, norm=norm)
    y = _overlap_add(frames * w, hop, expected_len)
    envelope = _overlap_add((w * w).expand((1, n_frames, n_fft)), hop, expected_len)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + operator.index(length)
    else:
        end = expected_len - n_fft // 2 if center else expected_len
    stop = min(end, expected_len)
    y, envelope = y[:, start:stop], envelope[:, start:stop]
    lowest = float(envelope.detach().abs().min().item()) if envelope.numel() else 1.0
    if lowest < 1e-11:
        raise RuntimeError(f"{prefix}: window overlap add min: {lowest}")
    if y.dtype.is_complex and not envelope.dtype.is_complex:
        # (real and imaginary parts divided by the real envelope: a complex division would
        # divide by its zero imaginary part too)
        from .complex_parts import view_as_complex, view_as_real
        y = view_as_complex(view_as_real(y) / envelope.unsqueeze(-1))
    else:
        y = y / envelope
    if not batched:
        y = y.squeeze(0)
    if end > expected_len:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        y = cat([y, y.new_zeros(tuple(y.shape[:-1]) + (end - expected_len,))], -1)
    return y


# -- the table ---------------------------------------------------------------------------------

_WINDOW = {"method": False, "dtypes": "floats (the default dtype)", "grad": "none"}
OPS = (
    OpInfo("hann_window", hann_window, **_WINDOW),
    OpInfo("hamming_window", hamming_window, **_WINDOW),
    OpInfo("blackman_window", blackman_window, **_WINDOW),
    OpInfo("bartlett_window", bartlett_window, **_WINDOW),
    OpInfo("kaiser_window", kaiser_window, **_WINDOW),
    OpInfo("stft", stft, dtypes="float32/64, complex64/128",
           grad="through unfold, the window product and the FFT"),
    OpInfo("istft", istft, dtypes="complex64/128",
           grad="through the inverse FFT, overlap-add (index_add) and the envelope division"),
)
