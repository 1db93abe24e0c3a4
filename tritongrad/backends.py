"""``tritongrad.backends``: PyTorch's backend switches, so scripts that set them run unchanged.

``backends.cuda.matmul.allow_tf32`` and :func:`set_float32_matmul_precision` are one setting,
as in PyTorch (``allow_tf32 = True`` is precision ``"high"``): below ``"highest"``, CUDA's
float32 matmul multiplies in TensorFloat-32 (``tl.dot(..., input_precision="tf32")``, tensor
cores); the CPU always computes in float32. ``backends.cudnn`` holds its four flags for the same reason:
tritongrad has no cuDNN (``cudnn.is_available()`` is False) and its kernels are deterministic
whatever ``deterministic`` says. ``backends.mps`` reports no Metal device.

The submodules are registered in ``sys.modules``, so ``import tritongrad.backends.cudnn as
cudnn`` works as it does in PyTorch.

Example:
    >>> tg.backends.cuda.matmul.allow_tf32 = True
    >>> tg.get_float32_matmul_precision()
    'high'
"""

from __future__ import annotations

import sys
import types
import warnings

from .runtime.dtype import get_float32_matmul_precision, set_float32_matmul_precision

__all__ = ["cuda", "cudnn", "get_float32_matmul_precision", "mps",
           "set_float32_matmul_precision"]

class _Matmul:
    """``backends.cuda.matmul``: ``allow_tf32`` is the float32 matmul precision seen as a
    bool (True for ``"high"`` or ``"medium"``)."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        set_float32_matmul_precision("high" if value else "highest")

    def __repr__(self) -> str:
        return f"<tritongrad.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


def _submodule(name: str, doc: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(f"{__name__}.{name}", doc)
    mod.__dict__.update(attrs)
    sys.modules[mod.__name__] = mod
    return mod


def _sdp_switches() -> dict:
    """``backends.cuda``'s scaled-dot-product-attention switches, PyTorch's names over the
    flags ``nn.attention.sdpa_kernel`` narrows (nn/_attention.py; the CPU's choice reads them
    too, as PyTorch's does)."""
    def flags():
        from .nn import _attention
        return _attention

    def switch(backend: str):
        def enable(enabled: bool) -> None:
            flags().set_backend_enabled(getattr(flags().SDPBackend, backend), enabled)

        def enabled() -> bool:
            return flags().backend_enabled(getattr(flags().SDPBackend, backend))
        return enable, enabled

    out = {}
    for stem, backend in (("flash", "FLASH_ATTENTION"), ("mem_efficient", "EFFICIENT_ATTENTION"),
                          ("math", "MATH"), ("cudnn", "CUDNN_ATTENTION")):
        out[f"enable_{stem}_sdp"], out[f"{stem}_sdp_enabled"] = switch(backend)

    def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
                   enable_mem_efficient: bool = True, enable_cudnn: bool = True):
        """Deprecated: ``nn.attention.sdpa_kernel`` with the backends whose flag is True."""
        warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                      "context manager will be removed. Please see "
                      "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                      "updated signature.", FutureWarning, stacklevel=2)
        B = flags().SDPBackend
        chosen = [b for b, on in ((B.FLASH_ATTENTION, enable_flash), (B.MATH, enable_math),
                                  (B.EFFICIENT_ATTENTION, enable_mem_efficient),
                                  (B.CUDNN_ATTENTION, enable_cudnn)) if on]
        return flags().sdpa_kernel(chosen or [B.ERROR])
    out["sdp_kernel"] = sdp_kernel
    return out


cuda = _submodule(
    "cuda", "CUDA switches: ``matmul.allow_tf32`` (float32 matmul precision) and the scaled "
    "dot product attention backends (``enable_flash_sdp``, ``flash_sdp_enabled``, ...).",
    matmul=_Matmul(), is_built=lambda: True, **_sdp_switches())
cudnn = _submodule(
    "cudnn", "cuDNN flags, kept for compatibility: tritongrad does not use cuDNN.",
    enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
    is_available=lambda: False, version=lambda: None)
mps = _submodule(
    "mps", "Apple Metal: not available in tritongrad.",
    is_available=lambda: False, is_built=lambda: False)
