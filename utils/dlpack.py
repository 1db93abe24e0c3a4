"""``torch.utils.dlpack``: tensors shared with other array libraries through DLPack capsules,
without copying (``autograd/ops/interop.py`` has the protocol and its stream rules)."""

from __future__ import annotations

import enum

from ..autograd.ops.interop import from_dlpack
from ..autograd.tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """The device types of the DLPack protocol (``__dlpack_device__()[0]``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor: Tensor):
    """Returns an opaque object (a "DLPack capsule") representing the tensor.

    .. note::
        ``to_dlpack`` is a legacy DLPack interface. The capsule it returns cannot be used for
        anything in Python other than use it as input to ``from_dlpack``. The more idiomatic
        use of DLPack is to call ``from_dlpack`` directly on the tensor object - this works
        when that object has a ``__dlpack__`` method, which tritongrad tensors do.

    Args:
        tensor: a tensor to be exported

    The DLPack capsule shares the tensor's memory.
    """
    if not isinstance(tensor, Tensor):  # (PyTorch's words: its binding's name and argument)
        raise TypeError(f"_to_dlpack(): argument 'data' (position 1) must be Tensor, not "
                        f"{_tp_name(type(tensor))}")
    return tensor.__dlpack__()


def _tp_name(cls: type) -> str:
    """A type's name as CPython's ``tp_name`` spells it in PyTorch's argument errors: a class
    defined in Python by its name, a C type by its dotted path (``numpy.ndarray``, ``list``)."""
    if cls.__flags__ & (1 << 9) or cls.__module__ == "builtins":  # Py_TPFLAGS_HEAPTYPE
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"
