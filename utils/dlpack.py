"""``torch.utils.dlpack``: tensors shared with other array libraries through DLPack capsules,
without copying (``autograd/ops/interop.py`` has the protocol and its stream rules)."""

from __future__ import annotations

from ..autograd.ops.interop import from_dlpack
from ..autograd.tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]


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
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    return tensor.__dlpack__()
