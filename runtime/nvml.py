"""NVML queries of ``tg.cuda`` (``utilization``, ``temperature``, ``power_draw``,
``clock_rate``, ``memory_usage``, ``list_gpu_processes``, ``device_memory_used``), as
``torch.cuda``'s, through the ``nvidia-ml-py`` package (``import pynvml``; tritongrad's
``nvml`` extra).

A CUDA ordinal is matched to its NVML device by UUID (``cuDeviceGetUuid``,
``nvmlDeviceGetHandleByUUID``), so ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER`` (which
NVML ignores) cannot pair it with another GPU. Without the package, or on the emulated device
(which has no NVML), these raise ``NvmlUnavailableError``, a ``RuntimeError`` that names the
package (and a ``ModuleNotFoundError`` when the package is missing, as PyTorch raises).
"""

from __future__ import annotations

from . import driver as _drv
from . import streams as _streams

__all__ = ["NvmlUnavailableError", "clock_rate", "device_memory_used", "list_gpu_processes",
           "memory_usage", "power_draw", "temperature", "utilization"]

_MISSING = ("nvidia-ml-py does not seem to be installed or it can't be imported "
            "(pip install nvidia-ml-py, or tritongrad[nvml])")


class NvmlUnavailableError(ModuleNotFoundError, RuntimeError):
    """NVML cannot answer: ``nvidia-ml-py`` is missing, the NVIDIA driver is not loaded, or
    the device is the emulated one."""


def _pynvml():
    try:
        import pynvml
    except ModuleNotFoundError as e:
        raise NvmlUnavailableError(_MISSING) from e
    return pynvml


def _handle(device):
    """``(pynvml, NVML handle)`` of CUDA device ``device`` (the current device if None)."""
    index = _streams.device_index(device)
    drv = _drv.get_driver()
    if drv.emulated:
        raise NvmlUnavailableError("NVML is not available on the emulated CUDA device "
                                   "(TRITONGRAD_EMULATE_CUDA=1): nvidia-ml-py needs a GPU")
    pynvml = _pynvml()
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        raise NvmlUnavailableError("cuda driver can't be loaded, is cuda enabled? "
                                   f"(nvidia-ml-py's nvmlInit failed: {e})") from e
    return pynvml, pynvml.nvmlDeviceGetHandleByUUID(drv.uuid(index))


def utilization(device=None) -> int:
    """Return the percent of time over the past sample period during which one or more
    kernels was executing on the GPU as given by ``nvidia-smi``
    (``nvmlDeviceGetUtilizationRates().gpu``).

    Args:
        device (device or int, optional): selected device. Returns statistic for the current
            device, given by :func:`current_device`, if :attr:`device` is ``None`` (default).

    Warning: Each sample period may be between 1 second and 1/6 second, depending on the
    product being queried.
    """
    pynvml, h = _handle(device)
    return pynvml.nvmlDeviceGetUtilizationRates(h).gpu


def memory_usage(device=None) -> int:
    """Return the percent of time over the past sample period during which global (device)
    memory was being read or written as given by ``nvidia-smi``
    (``nvmlDeviceGetUtilizationRates().memory``).

    Args:
        device (device or int, optional): selected device (the current device if None).
    """
    pynvml, h = _handle(device)
    return pynvml.nvmlDeviceGetUtilizationRates(h).memory


def temperature(device=None) -> int:
    """Return the average temperature of the GPU sensor in Degrees C (Centigrades), computed
    over the past sample period as given by ``nvidia-smi`` (the GPU die's sensor).

    Args:
        device (device or int, optional): selected device (the current device if None).
    """
    pynvml, h = _handle(device)
    return pynvml.nvmlDeviceGetTemperature(h, 0)  # 0: NVML_TEMPERATURE_GPU, the die


def power_draw(device=None) -> int:
    """Return the average power draw of the GPU sensor in mW (MilliWatts) over the past
    sample period as given by ``nvidia-smi`` for Fermi or newer fully supported devices.

    Args:
        device (device or int, optional): selected device (the current device if None).
    """
    pynvml, h = _handle(device)
    return pynvml.nvmlDeviceGetPowerUsage(h)


def clock_rate(device=None) -> int:
    """Return the clock speed of the GPU SM in MHz (megahertz) over the past sample period as
    given by ``nvidia-smi``.

    Args:
        device (device or int, optional): selected device (the current device if None).
    """
    pynvml, h = _handle(device)
    return pynvml.nvmlDeviceGetClockInfo(h, 1)  # 1: NVML_CLOCK_SM


def device_memory_used(device=None) -> int:
    """Return used global (device) memory in bytes as given by ``nvidia-smi``
    (``nvmlDeviceGetMemoryInfo().used``).

    Where NVML cannot answer (no ``nvidia-ml-py``, the emulated device) this is
    ``total - free`` of ``cuMemGetInfo``, the same device-wide figure.

    Args:
        device (device or int, optional): selected device (the current device if None).
    """
    try:
        pynvml, h = _handle(device)
    except NvmlUnavailableError:
        free, total = _drv.get_driver().mem_get_info(_streams.device_index(device))
        return total - free
    return pynvml.nvmlDeviceGetMemoryInfo(h).used


def list_gpu_processes(device=None) -> str:
    """Return a human-readable printout of the running processes and their GPU memory use
    for a given device.

    This can be useful to display periodically during training, or when handling
    out-of-memory exceptions. As PyTorch's, a missing ``nvidia-ml-py`` or driver is reported
    in the returned text, not raised.

    Args:
        device (device or int, optional): selected device (the current device if None).
    """
    try:
        pynvml, h = _handle(device)
    except NvmlUnavailableError as e:
        if isinstance(e.__cause__, ModuleNotFoundError):
            return "pynvml module not found, please install nvidia-ml-py"
        return str(e)
    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
    lines = [f"GPU:{_streams.device_index(device)}"]
    if not procs:
        lines.append("no processes are running")
    for p in procs:
        mem = (p.usedGpuMemory or 0) / (1024 * 1024)
        lines.append(f"process {p.pid:>10d} uses {mem:>12.3f} MB GPU memory")
    return "\n".join(lines)
