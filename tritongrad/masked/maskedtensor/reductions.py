"""MaskedTensor's reductions and normalizations: ``tritongrad.masked``'s op over the data and
the mask; a reduction's result is masked out where its slice had no element."""

from __future__ import annotations

import tritongrad as tg

from .. import _ops
from .core import MaskedTensor

REDUCE_NAMES = ("sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "all", "norm",
                "var", "std")
NORMALIZE_NAMES = ("softmax", "log_softmax", "softmin")


# The signatures the calls are bound by (the ordinary ops' own: ``tg.sum(mt, 1, True)``)
def _sig_reduce(input, dim=None, keepdim=False, *, dtype=None):
    return input, dim, keepdim, {"dtype": dtype}


def _sig_extremum(input, dim=(), keepdim=False):
    return input, dim, keepdim, {}


def _sig_arg(input, dim=None, keepdim=False):
    return input, dim, keepdim, {}


def _sig_var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, dtype=None):
    return input, dim, keepdim, {"unbiased": unbiased, "correction": correction,
                                 "dtype": dtype}


def _sig_norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if p == "fro":
        p = 2.0
    elif isinstance(p, str):
        raise ValueError(f"norm: MaskedTensor supports vector norms only, got p={p!r}")
    return input, dim, keepdim, {"ord": p, "dtype": dtype}


_SIGNATURES = {"amin": _sig_extremum, "amax": _sig_extremum, "argmin": _sig_arg,
               "argmax": _sig_arg, "all": _sig_arg, "var": _sig_var, "std": _sig_var,
               "norm": _sig_norm}


def _all(data, mask, dim, keepdim):
    filled = data.masked_fill(~mask, True)
    if dim is None:
        out = filled.all()
        return out.reshape((1,) * data.ndim) if keepdim else out
    return tg.all(filled, dim, keepdim)


def _reduction(name: str):
    sig = _SIGNATURES.get(name, _sig_reduce)

    def run(func, args, kwargs):
        self, dim, keepdim, extra = sig(*args, **kwargs)
        mask = self.get_mask()
        if dim == ():
            dim = None
        if name == "all":
            result = _all(self.get_data(), mask, dim, keepdim)
        elif name == "norm":
            ord = extra.pop("ord")
            result = _ops.norm(self, ord, dim, keepdim=bool(keepdim), **extra)
        else:
            result = getattr(_ops, name)(self, dim, keepdim=bool(keepdim), **extra)
        out_mask = _ops._output_mask(mask, dim, keepdim, mask=mask)
        return MaskedTensor._wrap(result, out_mask.reshape(tuple(result.shape)))

    return run


def _sig_softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    return input, dim, dtype


def _sig_functional_softmax(input, dim=None, _stacklevel=3, dtype=None):  # (F.softmax's order)
    return input, dim, dtype


def _normalization(name: str):
    def run(func, args, kwargs):
        functional = func.__module__ == "tritongrad.nn.functional"
        sig = _sig_functional_softmax if functional else _sig_softmax
        self, dim, dtype = sig(*args, **kwargs)
        if dim is None:
            raise TypeError(f"{name}(): a MaskedTensor needs an explicit dim")
        result = getattr(_ops, name)(self, dim, dtype=dtype)
        return MaskedTensor._wrap(result, self.get_mask())

    return run


def handlers():
    for name in REDUCE_NAMES:
        run = _reduction(name)
        yield f"tritongrad.{name}", run
        yield f"Tensor.{name}", run
    for name in NORMALIZE_NAMES:
        run = _normalization(name)
        yield f"tritongrad.{name}", run
        yield f"Tensor.{name}", run
        yield f"tritongrad.nn.functional.{name}", run
