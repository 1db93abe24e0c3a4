"""PyTorch's ``*_copy`` functions (``view_copy``, ``permute_copy``, ``split_copy``, ...): each is
its view op followed by a row-major ``clone`` (as PyTorch's), so the result never aliases the
input (the functional forms that graph compilers lower views to).

They are one generated table: ``_VIEWS`` names each copy after its view and says how to call
the view; ``_copy_op`` wraps it (argument check, clone of every result, ``out=``). Gradients
are the view's, by composition.
"""

from __future__ import annotations

from collections.abc import Callable

from ...runtime.dtype import contiguous_format
from ..registry import OpInfo, check_exact_out
from ..tensor import Tensor, wrap_dim
from .complex_parts import view_as_complex, view_as_real
from .elementwise import _result


def _slice(x: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    if x.ndim == 0:
        raise IndexError("slice_copy: slice() cannot be applied to a 0-dim tensor.")
    return x[(slice(None),) * wrap_dim(dim, x.ndim, "slice_copy") + (slice(start, end, step),)]


def _expand(x: Tensor, size, *, implicit: bool = False) -> Tensor:
    return x.expand(size)  # (implicit only marks compiler-inserted expands in PyTorch)


# copy name -> the view it copies, called as view(input, *args, **kwargs)
_VIEWS: dict[str, Callable] = {
    "view_copy": lambda x, *a, **k: x.view(*a, **k),
    "permute_copy": lambda x, dims: x.permute(*dims),
    "transpose_copy": lambda x, dim0, dim1: x.transpose(dim0, dim1),
    "t_copy": lambda x: x.t(),
    "expand_copy": _expand,
    "unsqueeze_copy": lambda x, dim: x.unsqueeze(dim),
    "squeeze_copy": lambda x, *a, **k: x.squeeze(*a, **k),
    "select_copy": lambda x, dim, index: x.select(dim, index),
    "slice_copy": _slice,
    "split_copy": lambda x, split_size, dim=0: x.split(split_size, dim),
    "split_with_sizes_copy": lambda x, split_sizes, dim=0: x.split(list(split_sizes), dim),
    "unbind_copy": lambda x, dim=0: x.unbind(dim),
    "diagonal_copy": lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
    "as_strided_copy": lambda x, size, stride, storage_offset=None: x.as_strided(
        size, stride, storage_offset),
    "detach_copy": lambda x: x.detach(),
    "alias_copy": lambda x: x.view(tuple(x.shape)),
    "unfold_copy": lambda x, dimension, size, step: x.unfold(dimension, size, step),
    "view_as_real_copy": view_as_real,
    "view_as_complex_copy": view_as_complex,
}


def _copy_op(name: str, view: Callable) -> Callable:
    def copy(input: Tensor, *args, out=None, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        result = view(input, *args, **kwargs)
        # (PyTorch's copies are row-major whatever the view's strides: clone(contiguous);
        # their out= forms copy into out without a cast: check_exact_out)
        if isinstance(result, Tensor):
            if out is not None:
                check_exact_out(out, result.dtype)
            return _result(result.clone(memory_format=contiguous_format), out, name)
        pieces = tuple(r.clone(memory_format=contiguous_format) for r in result)
        if out is None:
            return pieces
        if len(out) != len(pieces):
            raise RuntimeError(f"{name}() expected an out= argument of size {len(pieces)}, got "
                               f"size {len(out)}")
        for p, o in zip(pieces, out):
            check_exact_out(o, p.dtype)
            _result(p, o, name)
        return None  # (PyTorch's out= forms of the multi-output copies return nothing)
    copy.__name__ = copy.__qualname__ = name
    copy.__doc__ = (f"``{name[:-5]}(input, ...)`` copied: the same values in new memory (a "
                    f"tuple of copies where the view op gives several views).")
    return copy


_COPIES = {name: _copy_op(name, view) for name, view in _VIEWS.items()}
globals().update(_COPIES)

OPS = tuple(OpInfo(name, fn, method=False, dtypes="all",
                   grad="none" if name == "detach_copy" else "the view's, then clone's")
            for name, fn in _COPIES.items())
