"""``DataParallel``: PyTorch's single-process module wrapper, in its one-device forms.

PyTorch's DataParallel splits each batch across ``device_ids``, runs a replica of the module on
every device in its own thread and gathers the outputs on ``output_device``. Two of its cases
need no replication, and those are what is here:

- no CUDA device: the wrapper calls the module itself, in the caller's thread (so thread-local
  state such as saved-tensor hooks applies);
- one device (``device_ids=[i]``, or a machine with one GPU): the module is moved to that
  device at construction, each call's tensor arguments are moved there, and the outputs are
  moved to ``output_device``.

Splitting a batch over several devices (replicas whose gradients meet in the original
parameters) is not implemented: such a DataParallel raises NotImplementedError at
construction and points to DistributedDataParallel, rather than silently running on one
device.
"""

from __future__ import annotations

from ... import cuda
from ...autograd.tensor import Tensor
from ...runtime.device import device as Device
from ..module import Module

__all__ = ["DataParallel"]


def _device_index(d) -> int:
    if isinstance(d, int):
        return d
    d = Device(d)
    if d.type != "cuda":
        raise ValueError(f"DataParallel: device_ids must be CUDA devices, got {d}")
    return 0 if d.index is None else d.index


def _moved(obj, device):
    """``obj`` with every tensor in it (nested in tuples, lists and dicts) on ``device``."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple
        return type(obj)(*(_moved(v, device) for v in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_moved(v, device) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _moved(v, device)) for k, v in obj.items())
    return obj


class DataParallel(Module):
    """Runs ``module`` on the batch, on the CUDA device given (see the module docstring for
    what is supported: no CUDA device, or one).

    Args:
        module: the module to run.
        device_ids: CUDA devices (ints or devices); default: all visible devices.
        output_device: where outputs go; default ``device_ids[0]``.
        dim: the batch dimension (PyTorch scatters along it; kept for the interface).

    Example:
        >>> model = tg.nn.DataParallel(tg.nn.Linear(4, 2))
        >>> model(tg.randn(8, 4)).shape
        tritongrad.Size([8, 2])
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.dim = dim
        if not cuda.is_available():
            self.device_ids, self.output_device, self.src_device_obj = [], None, None
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        self.device_ids = [_device_index(d) for d in device_ids]
        if len(self.device_ids) > 1:
            raise NotImplementedError(
                f"DataParallel over more than one device ({self.device_ids}) is not "
                f"implemented in tritongrad (it would replicate the module on every device); "
                f"use DistributedDataParallel, or pass device_ids=[{self.device_ids[0]}]")
        self.output_device = _device_index(self.device_ids[0] if output_device is None
                                           else output_device)
        self.src_device_obj = Device("cuda", self.device_ids[0])
        module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:  # no CUDA device: the module itself, in this thread
            return self.module(*inputs, **kwargs)
        out = self.module(*_moved(inputs, self.src_device_obj),
                          **_moved(kwargs, self.src_device_obj))
        return _moved(out, Device("cuda", self.output_device))
