"""The ops' array-level implementations, one backend per device type.

``backend(device)`` is the one place a device picks its implementation: ``kernels.numpy`` for
``cpu`` (NumPy arrays), ``kernels.triton`` for ``cuda`` (``runtime.DeviceArray``; Triton kernels
launched on tritongrad's current stream). Op code above this layer never branches on the
device. Both backends export every name in ``CONTRACT`` with the same signature and semantics;
``tests/kernels/test_contract.py`` holds them to it, and the Triton kernels run in CI through
Triton's interpreter against the NumPy results.

The contract (``a``, ``b``: backend arrays of one dtype, already promoted by the caller; ``s``: a
Python scalar; results are new contiguous arrays unless ``out=`` is given):

creation      empty(shape, dtype, device), full(shape, value, dtype, device)
movement      astype(a, dtype), contiguous(a), copy_(dst, src)  [src broadcast and cast to dst]
views         view(a, shape) -> array | None, permute(a, dims), expand(a, shape),
              getitem(a, index), as_strided(a, shape, strides, offset),
              strides(a), storage_offset(a)   [element units, as PyTorch]
elementwise   add sub mul div pow maximum minimum (a, a|s, out=None): broadcasting
              gt ge lt le eq ne (a, a|s) -> bool array
              neg exp log relu sqrt (a, out=None)
              where(cond, a, b)
reductions    sum(a, dims, keepdim)   [dims: sorted tuple of non-negative ints]
linear alg.   matmul(a, b)            [2-D]
"""

from __future__ import annotations

import importlib

__all__ = ["backend", "CONTRACT"]

CONTRACT = (
    "empty", "full", "astype", "contiguous", "copy_",
    "view", "permute", "expand", "getitem", "as_strided", "strides", "storage_offset",
    "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "gt", "ge", "lt", "le", "eq", "ne",
    "neg", "exp", "log", "relu", "sqrt", "where",
    "sum", "matmul",
)

_MODULES = {"cpu": "tritongrad.kernels.numpy", "cuda": "tritongrad.kernels.triton"}
_loaded: dict = {}


def backend(device):
    """The kernel module for ``device`` (imported on first use: Triton only loads for cuda)."""
    try:
        return _loaded[device.type]
    except KeyError:
        mod = _loaded[device.type] = importlib.import_module(_MODULES[device.type])
        return mod
