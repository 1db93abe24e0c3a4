"""The kernel contract over Tensors, differentiably: the ``k`` of a derivative rule that is
being recorded.

A Primitive's ``vjp(ctx, k, saved, *grads)`` is written once against the kernel contract
(kernels/__init__.py). A backward that records nothing runs it on the backend's arrays
(``k = kernels.backend(device)``): no Tensor, node or dispatch per intermediate. Under
``create_graph=True`` the same rule runs with ``k`` = this module, whose functions have the
contract's names and signatures but are built from recorded Tensor ops, so the rule's own
derivative needs no rule of its own. The fused backward kernels (``tanh_backward``,
``layer_norm_backward``, ...) appear here as their composite formulas, which are what gets
differentiated.

Only the part of the contract that derivative rules use is here.
"""

from __future__ import annotations

from ..dispatch import Primitive, apply
from ..state import state
from ..tensor import Tensor
from . import complex_parts, creation, pointwise
from . import elementwise as _ew

__all__ = ["add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "pow", "where", "gt", "ge",
           "lt", "le", "eq", "ne", "unary", "binary", "sum", "view", "expand", "permute",
           "strides", "storage_offset", "getitem", "as_strided", "matmul", "bmm",
           "contiguous", "astype", "full", "arange", "index_put_", "cat", "conj", "real", "imag",
           "view_as_real", "view_as_complex"]

add = _ew.add
sub = _ew.sub
mul = _ew.mul
div = _ew.div
neg = _ew.neg
exp = _ew.exp
log = _ew.log
sqrt = _ew.sqrt
where = _ew.where
gt, ge, lt, le, eq, ne = _ew.gt, _ew.ge, _ew.lt, _ew.le, _ew.eq, _ew.ne
conj, real, imag = complex_parts.conj, complex_parts.real, complex_parts.imag
view_as_real, view_as_complex = complex_parts.view_as_real, complex_parts.view_as_complex

# The fused derivative kernels of the ``binary`` table (a: incoming gradient, b: the forward's
# output), as the formulas the kernels compute: what a recorded backward differentiates.
_COMPOSITE = {
    "tanh_backward": lambda g, y: g * (1 - y * y),
    "sigmoid_backward": lambda g, y: g * (y * (1 - y)),
    "relu_backward": lambda g, y: g * (y > 0),
}


def _fused_op(name: str) -> type:
    """The fused kernel as a primitive of its own, so profiles and NVTX ranges name it."""

    class Op(Primitive):
        __slots__ = ()
        op_name = name
        differentiable = False

        @staticmethod
        def forward(ctx, k, g, y):
            return k.binary(name, g, y)

    Op.__name__ = Op.__qualname__ = name
    return Op


_FUSED = {name: _fused_op(name) for name in _COMPOSITE}


_FUNCTIONS = {"trunc_divide": "div_trunc"}  # the table's names that differ from pointwise's


def binary(op: str, a: Tensor, b) -> Tensor:
    if op not in _COMPOSITE:  # the table's ops (floor_divide, bitwise_and, ...)
        return getattr(pointwise, _FUNCTIONS.get(op, op))(a, b)
    if state.grad_enabled:
        return _COMPOSITE[op](a, b)
    return apply(_FUSED[op], (a, b))  # observed, not recorded: the kernel itself


def unary(op: str, a: Tensor) -> Tensor:
    return getattr(a, op)()


def pow(a: Tensor, b) -> Tensor:  # noqa: A001
    return a.pow(b)


def sum(a: Tensor, dims: tuple, keepdim: bool) -> Tensor:  # noqa: A001
    return a.sum(dims, keepdim=keepdim) if dims else a


def view(a: Tensor, shape) -> Tensor:
    # The contract's view returns None where strides forbid one; rules then copy. Recorded
    # reshape makes that choice itself.
    return a.reshape(shape)


def expand(a: Tensor, shape) -> Tensor:
    return a.expand(shape)


def permute(a: Tensor, dims) -> Tensor:
    return a.permute(*dims)


def strides(a: Tensor) -> tuple:
    return a.stride()


def matmul(a: Tensor, b: Tensor) -> Tensor:
    return a.mm(b)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    return a.bmm(b)


def contiguous(a: Tensor) -> Tensor:
    return a.contiguous()


def astype(a: Tensor, dtype) -> Tensor:
    return a.to(dtype)


def storage_offset(a: Tensor) -> int:
    return a.storage_offset()


def getitem(a: Tensor, index) -> Tensor:
    from .views import getitem  # (views imports this module)
    return getitem(a, index)


def as_strided(a: Tensor, shape, strides, offset) -> Tensor:
    from .views import as_strided
    return as_strided(a, shape, strides, offset)


def cat(arrays, dim: int) -> Tensor:
    from .shape import cat  # (local, as getitem's: the op modules load after this one)
    return cat(list(arrays), dim)


def index_put_(a: Tensor, indices: tuple, values: Tensor, accumulate: bool) -> None:
    a.index_put_(indices, values, accumulate=accumulate)


def full(shape, value, dtype, device) -> Tensor:
    return creation.full(shape, value, dtype=dtype, device=device)


def arange(start, step, n, dtype, device) -> Tensor:
    return creation.arange(start, start + step * n, step, dtype=dtype, device=device)


def _install() -> None:
    import sys

    from .. import dispatch
    dispatch.traced = sys.modules[__name__]


_install()
