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


cuda = _submodule(
    "cuda", "CUDA switches: ``matmul.allow_tf32`` (float32 matmul precision).",
    matmul=_Matmul(), is_built=lambda: True)
cudnn = _submodule(
    "cudnn", "cuDNN flags, kept for compatibility: tritongrad does not use cuDNN.",
    enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
    is_available=lambda: False, version=lambda: None)
mps = _submodule(
    "mps", "Apple Metal: not available in tritongrad.",
    is_available=lambda: False, is_built=lambda: False)
