"""``tritongrad.version``: PyTorch's ``torch.version``: the package's version and what it was
built for. tritongrad is not built: ``cuda`` is the CUDA release of the installed cuda-python
bindings (None without them), ``git_version`` ``"Unknown"``; there is no ROCm or XPU support
(``hip``, ``rocm``, ``xpu`` are None)."""

from __future__ import annotations

import importlib.metadata

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]

__version__ = "0.1.0"
debug = False
git_version = "Unknown"
hip: str | None = None
rocm: str | None = None
xpu: str | None = None


def _cuda_release() -> str | None:
    """The CUDA ``major.minor`` the installed cuda-bindings were made for, read from its
    package metadata (so nothing of CUDA is loaded)."""
    for dist in ("cuda-bindings", "cuda-python"):
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        return ".".join(version.split(".")[:2])
    return None


cuda: str | None = _cuda_release()
