"""``tritongrad.backends``: PyTorch's backend switches, so scripts that set them run unchanged.

``backends.cuda.matmul.allow_tf32`` and :func:`set_float32_matmul_precision` are one setting,
as in PyTorch (``allow_tf32 = True`` is precision ``"high"``). tritongrad records it but its
float32 matmul kernel always computes in full float32 (the ``"highest"`` precision): PyTorch
documents the lower precisions as permissions, not promises, so results stay within what a
script asking for them expects. ``backends.cudnn`` holds its four flags for the same reason:
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

__all__ = ["cuda", "cudnn", "get_float32_matmul_precision", "mps",
           "set_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")
_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Sets the internal precision of float32 matrix products: ``"highest"`` (full float32,
    the default), ``"high"`` (TF32 allowed) or ``"medium"`` (bfloat16 allowed). tritongrad
    records the setting; its kernels compute at ``"highest"``, which every setting permits."""
    global _precision
    if precision not in _PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: {precision!r} is not one of "
                         f"'highest', 'high', or 'medium'")
    _precision = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision last set (``"highest"`` by default)."""
    return _precision


class _Matmul:
    """``backends.cuda.matmul``: ``allow_tf32`` is the float32 matmul precision seen as a
    bool (True for ``"high"`` or ``"medium"``)."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return _precision != "highest"

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
