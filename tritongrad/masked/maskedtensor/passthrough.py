"""MaskedTensor's views, shape ops and copies: the op applies to data and mask alike
(``mt[0]``, ``mt.t()``, ``tg.cat([a, b])``), and conversions, which apply to the data and move
the mask with it (``mt.to("cuda")``, ``mt.double()``, ``mt.clone()``); ``where``; and the
Tensor methods that only read metadata or run autograd, run as on any tensor."""

from __future__ import annotations

import tritongrad as tg
from tritongrad.autograd.tensor import Tensor

from .core import MaskedTensor, _validate, is_masked_tensor

PASSTHROUGH_NAMES = (
    "__getitem__", "select", "narrow", "transpose", "swapaxes", "swapdims", "t", "permute",
    "movedim", "view", "view_as", "reshape", "reshape_as", "flatten", "squeeze", "unsqueeze",
    "expand", "expand_as", "unfold", "split", "chunk", "unbind", "flip", "T", "mT")
SEQUENCE_NAMES = ("cat", "concat", "concatenate", "stack")
CONVERT_NAMES = ("clone", "detach", "contiguous", "to", "cpu", "cuda", "float", "double",
                 "half", "int", "long", "short", "bool")
# Tensor methods that run as on a plain tensor, their results returned as they are
PLAIN_NAMES = (
    "dim", "size", "numel", "nelement", "ndimension", "element_size", "is_floating_point",
    "is_complex", "is_signed", "is_contiguous", "stride", "storage_offset", "data_ptr",
    "get_device", "requires_grad_", "retain_grad", "register_hook", "backward", "__len__",
    "item", "__bool__", "__float__", "__int__", "__format__")


def _data(a):
    return a.get_data() if is_masked_tensor(a) else a


def _mask(a):
    return a.get_mask() if is_masked_tensor(a) else a


def _wrap(data, mask):
    if isinstance(data, (tuple, list)):
        return type(data)(_wrap(d, m) for d, m in zip(data, mask))
    return MaskedTensor._wrap(data, mask)


def _passthrough(func, args, kwargs):
    data_args = [_data(a) for a in args]
    mask_args = [_mask(a) for a in args]
    data_kwargs = {k: _data(v) for k, v in kwargs.items()}
    mask_kwargs = {k: _mask(v) for k, v in kwargs.items()}
    with tg.DisableTorchFunctionSubclass():
        data = func(*data_args, **data_kwargs)
        mask = func(*mask_args, **mask_kwargs)
    return _wrap(data, mask)


def _sequence(func, args, kwargs):
    """cat/stack: a plain Tensor among the MaskedTensors counts as all masked in."""
    tensors, rest = args[0], args[1:]
    with tg.DisableTorchFunctionSubclass():
        data = func([_data(t) for t in tensors], *rest, **kwargs)
        mask = func([t.get_mask() if is_masked_tensor(t)
                     else tg.ones(tuple(t.shape), dtype=tg.bool, device=t.device)
                     for t in tensors], *rest, **kwargs)
    return MaskedTensor._wrap(data, mask)


def _convert(func, args, kwargs):
    self = args[0]
    with tg.DisableTorchFunctionSubclass():
        data = func(*args, **kwargs)
        if data is self:  # (``to`` and ``contiguous`` with nothing to do)
            return self
        mask = self.get_mask()
        if func.__name__ == "clone":
            mask = mask.clone()
        if mask.device != data.device:
            mask = mask.to(data.device)
        _validate(data, mask)
    return MaskedTensor._wrap(data, mask)


def _plain(func, args, kwargs):
    with tg.DisableTorchFunctionSubclass():
        out = func(*args, **{k: _data(v) for k, v in kwargs.items()})
    return out


def _where(func, args, kwargs):
    """``where(condition, input, other)`` (also ``input.where(condition, other)``): data and
    masks chosen alike; a plain operand counts as all masked in."""
    if kwargs:
        raise ValueError("MaskedTensor where takes no keyword arguments")
    if func.__qualname__.startswith("Tensor."):
        input, condition, other = args
    else:
        condition, input, other = args
    if is_masked_tensor(condition):
        raise TypeError("where: condition must be a bool Tensor, not a MaskedTensor")

    def mask_of(a):
        if is_masked_tensor(a):
            return a.get_mask()
        if isinstance(a, Tensor):
            return tg.ones(tuple(a.shape), dtype=tg.bool, device=a.device)
        return tg.ones((), dtype=tg.bool, device=condition.device)

    with tg.DisableTorchFunctionSubclass():
        data = tg.where(condition, _data(input), _data(other))
        mask = tg.where(condition, mask_of(input), mask_of(other))
        mask = mask.expand(tuple(data.shape))
    return MaskedTensor._wrap(data, mask)


def _iter(func, args, kwargs):
    self = args[0]
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter([self[i] for i in range(len(self))])


def handlers():
    for name in PASSTHROUGH_NAMES:
        yield f"tritongrad.{name}", _passthrough
        yield f"Tensor.{name}", _passthrough
    for name in SEQUENCE_NAMES:
        yield f"tritongrad.{name}", _sequence
    for name in CONVERT_NAMES:
        yield f"tritongrad.{name}", _convert
        yield f"Tensor.{name}", _convert
    for name in PLAIN_NAMES:
        yield f"Tensor.{name}", _plain
    yield "tritongrad.where", _where
    yield "Tensor.where", _where
    yield "Tensor.__iter__", _iter
