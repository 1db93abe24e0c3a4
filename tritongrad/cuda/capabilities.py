"""What the CUDA devices can do: bfloat16, TF32 and the architectures kernels are built for
(``torch.cuda.is_bf16_supported``, ``is_tf32_supported``, ``get_arch_list``)."""

from __future__ import annotations

from ..runtime import cuda_api

__all__ = ["get_arch_list", "get_gencode_flags", "is_bf16_supported", "is_tf32_supported"]


def _major() -> int | None:
    """The current device's compute capability major, or None without CUDA."""
    if not cuda_api.is_available():
        return None
    return cuda_api.get_device_capability(cuda_api.current_device())[0]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Return a bool indicating if the current CUDA device supports dtype bfloat16.

    Natively from compute capability 8.0 (Ampere) on; with ``including_emulation`` also on
    older devices, where tritongrad's kernels compute bfloat16 in float32 lanes and round (as
    PyTorch emulates it). False without a CUDA device.
    """
    major = _major()
    if major is None:
        return False
    return major >= 8 or including_emulation


def is_tf32_supported() -> bool:
    """Return a bool indicating if the current CUDA device supports dtype tf32 (compute
    capability 8.0 or newer)."""
    major = _major()
    return major is not None and major >= 8


def get_arch_list() -> list[str]:
    """Return list of CUDA architectures this library's kernels are built for: Triton compiles
    each kernel on first use for the device it runs on, so these are the visible devices'
    architectures (``sm_90`` on an H100); empty without CUDA."""
    if not cuda_api.is_available():
        return []
    return sorted({"sm_{}{}".format(*cuda_api.get_device_capability(i))
                   for i in range(cuda_api.device_count())})


def get_gencode_flags() -> str:
    """Return NVCC gencode flags this library was compiled with: those of
    :func:`get_arch_list` (``-gencode compute=compute_90,code=sm_90``); empty without CUDA."""
    return " ".join(f"-gencode compute=compute_{arch},code={kind}_{arch}"
                    for kind, arch in (a.split("_") for a in get_arch_list()))
