"""Questions about a tensor and per-element Python callables: ``is_signed is_nonzero
is_same_size get_device ndimension dim_order``, ``share_memory_``/``is_shared`` (built in
tritongrad/multiprocessing/_shm.py), and the CPU-only ``apply_ map_ map2_`` (a Python
function per element, in place, as PyTorch's).

None of these is differentiable: the questions answer Python values, and the callables run
outside autograd (PyTorch refuses them on tensors that require grad; so does this).
"""

from __future__ import annotations

import itertools

from ...runtime import dtype as dtypes
from ..checks import tensor_arg
from ..registry import OpInfo
from ..tensor import Tensor


def is_signed(input: Tensor) -> bool:
    """Whether the dtype is signed: every dtype but bool and uint8."""
    return tensor_arg(input, "is_signed").dtype.is_signed


def is_nonzero(input: Tensor) -> bool:
    """Whether the tensor's single element is nonzero (NaN is); a tensor of no elements, or of
    more than one, is an error."""
    x = tensor_arg(input, "is_nonzero")
    n = x.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(x.detach().reshape(()).item() != 0)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    return tuple(tensor_arg(input, "is_same_size").shape) == \
        tuple(tensor_arg(other, "is_same_size", "other").shape)


def get_device(input: Tensor) -> int:
    """The index of the CUDA device the tensor is on, or -1 for a CPU (or meta) tensor."""
    dev = tensor_arg(input, "get_device").device
    return (dev.index or 0) if dev.type == "cuda" else -1


def ndimension(self: Tensor) -> int:
    """The number of dimensions (``dim()``)."""
    return self.dim()


def share_memory_(self: Tensor) -> Tensor:
    """Moves the underlying storage to shared memory.

    This is a no-op if the underlying storage is already in shared memory and for CUDA
    tensors. A CPU storage moves in place into a POSIX shared memory object (``shm_open``,
    mapped with ``mmap``): every tensor viewing it sees the shared memory afterwards, with its
    values unchanged, and ``tritongrad.multiprocessing`` sends it to other processes by
    handle (see docs/multiprocessing.md).

    Example:
        >>> t = tritongrad.zeros(3).share_memory_()
        >>> t.is_shared()
        True
    """
    from ...multiprocessing import _shm  # (loads multiprocessing only when sharing)
    return _shm.share_memory_(self)


def is_shared(self: Tensor) -> bool:
    """Checks if tensor is in shared memory.

    This is always ``True`` for CUDA tensors; a CPU tensor is after ``share_memory_()`` (of
    it or of any tensor viewing its storage), or when it came from another process through
    ``tritongrad.multiprocessing``.
    """
    if self.device.type != "cpu":
        return self.device.type == "cuda"
    from ...multiprocessing import _shm
    return _shm.is_shared(self)


_AMBIGUITY_CHECK = "The ambiguity_check argument must be a bool or a list of memory formats."


def dim_order(self: Tensor, *, ambiguity_check: bool | list = False) -> tuple:
    """The dimensions in the order they are laid out in memory, outermost first:
    ``(0, 1, 2, 3)`` for a contiguous 4-D tensor, ``(0, 2, 3, 1)`` for a channels-last one.
    The order may not be unique (a size-1 dimension, or equal strides): with
    ``ambiguity_check=True`` that raises a RuntimeError; with a list of memory formats, it
    raises unless the tensor is contiguous in exactly one of them; with False one of the
    legal orders is returned."""
    from ..layout import dim_order as order
    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list)
            and all(isinstance(f, dtypes.memory_format) for f in ambiguity_check)):
        raise TypeError(_AMBIGUITY_CHECK)
    shape, strides = tuple(self.shape), self.stride()
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    if (ambiguity_check is not False and (1 in shape or any(
            a == b for a, b in itertools.pairwise(strides)))
            and sum(self.is_contiguous(memory_format=f) for f in formats) != 1):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    perm = order(shape, strides, check=bool(ambiguity_check))
    if perm is None:
        raise RuntimeError("The tensor does not have unique dim order.")
    return perm


def _per_element(self: Tensor, others: tuple, fn, op: str) -> Tensor:
    """``self`` with each element replaced by ``fn(self's element, others' elements...)``
    (Python numbers; ``others`` broadcast to ``self``), written in place by ``copy_``."""
    if not callable(fn):
        raise TypeError(f"{op}(): argument 'callable' must be callable, not "
                        f"{type(fn).__name__}")
    if self.device.type != "cpu":
        raise TypeError(f"{op} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use "
                           f"var.detach().{op}() instead.")
    columns = [self.reshape(-1).tolist()]
    for o in others:
        o = tensor_arg(o, op, "other")
        if o.dtype is not self.dtype:
            raise TypeError(f"{op}: expected {self.type()} for 'other' (got {o.type()})")
        columns.append(o.detach().expand(self.shape).reshape(-1).tolist())
    from .creation import tensor
    values = [fn(*vs) for vs in zip(*columns)]
    if self.numel():
        self.copy_(tensor(values, device="cpu").reshape(self.shape))
    return self


def apply_(self: Tensor, callable) -> Tensor:
    """Replaces each element ``v`` by ``callable(v)`` (a Python number in, a number out, cast
    to the tensor's dtype) in place; CPU only, and slow: for small tensors or tests."""
    return _per_element(self, (), callable, "apply_")


def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:
    """Replaces each element ``a`` by ``callable(a, b)``, ``b`` the element of ``tensor``
    (broadcast to this tensor's shape, of its dtype), in place; CPU only."""
    return _per_element(self, (tensor,), callable, "map_")


def map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:
    """Replaces each element ``a`` by ``callable(a, b, c)``, ``b`` and ``c`` the elements of
    ``x`` and ``y`` (broadcast to this tensor's shape, of its dtype), in place; CPU only."""
    return _per_element(self, (x, y), callable, "map2_")


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("is_signed", is_signed, dtypes="all; Python bool", grad="none"),
    OpInfo("is_nonzero", is_nonzero, dtypes="all; Python bool", grad="none"),
    OpInfo("is_same_size", is_same_size, dtypes="all; Python bool", grad="none"),
    OpInfo("get_device", get_device, dtypes="all; Python int", grad="none"),
    OpInfo("dim_order", dim_order, function=False, dtypes="all; tuple of ints", grad="none"),
    OpInfo("ndimension", ndimension, function=False, dtypes="all; Python int", grad="none"),
    OpInfo("share_memory_", share_memory_, function=False, dtypes="all", grad="none"),
    OpInfo("is_shared", is_shared, function=False, dtypes="all; Python bool", grad="none"),
    OpInfo("apply_", apply_, function=False, dtypes="all (CPU)", grad="none"),
    OpInfo("map_", map_, function=False, dtypes="all (CPU)", grad="none"),
    OpInfo("map2_", map2_, function=False, dtypes="all (CPU)", grad="none"),
)
