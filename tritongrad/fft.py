"""``tritongrad.fft``: PyTorch's ``torch.fft`` functions.

The transforms (``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` and their 2-D and
N-D forms) are differentiable, for real and complex inputs, built as PyTorch builds them from
three primitives (complex-to-complex, real-to-complex, complex-to-real) with PyTorch's
derivative rules (autograd/ops/fft.py). They run numpy.fft on the host: a CUDA tensor takes a
host round trip that synchronizes with the current stream (there are no Triton FFT kernels).
``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` complete the namespace.

Example:
    >>> tg.fft.rfft(tg.tensor([1., 2., 3., 4.]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j])
"""

from .autograd.ops.fft import (
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    hfft2,
    hfftn,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    ihfft2,
    ihfftn,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft",
           "ifft2", "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2",
           "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]

# PyTorch's errors name these functions fft_<name> ("fft_fft(): argument 'input' (position 1)
# must be Tensor, not list"): each is guarded under that name (registry.guarded)
from .autograd.registry import guarded as _guarded  # noqa: E402

globals().update({_n: _guarded(globals()[_n], "fft_" + _n, rename=True, module=__name__,
                           attr=_n) for _n in __all__})
