"""``repr`` of tensors in PyTorch's format: ``tensor([1., 2.], requires_grad=True)``."""

from __future__ import annotations

import numpy as np

from ..runtime import dtype as dtypes

_DEFAULT_DTYPES = (dtypes.float32, dtypes.int64, dtypes.bool)


def _format_array(a: np.ndarray, indent: int) -> str:
    if a.dtype.kind == "f":
        finite = a[np.isfinite(a)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        # compared as Python floats: 1e8 would overflow a float16 comparison
        big = finite.size and (float(np.abs(finite).max()) >= 1e8 or
                               float(np.abs(finite[finite != 0]).min(initial=1)) < 1e-4)
        if big:
            fmt = {"float_kind": lambda v: f"{v:.4e}"}
        elif integral:
            fmt = {"float_kind": lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)}
        else:
            fmt = {"float_kind": lambda v: f"{v:.4f}" if np.isfinite(v) else str(v)}
    elif a.dtype.kind == "b":
        # padded to the widest value present, as PyTorch: [True, True] but [ True, False]
        width = 4 if a.all() else 5
        fmt = {"bool": lambda v: f"{v!s:>{width}}"}
    else:
        fmt = None
    return np.array2string(a, separator=", ", formatter=fmt, prefix=" " * indent,
                           threshold=1000, edgeitems=3, max_line_width=80)


def tensor_repr(t) -> str:
    a = t.detach().cpu()._host_array()
    body = _format_array(np.asarray(a), len("tensor("))
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if t.dtype not in _DEFAULT_DTYPES or (t.numel() == 0 and t.dtype is not dtypes.float32):
        extras.append(f"dtype={t.dtype}")
    try:
        fn = t.grad_fn  # (a view's, regenerated if its base was modified in place since)
        name = None if fn is None else fn.name()
    except RuntimeError:
        # a view whose history cannot be regenerated (Note [View + in-place]): PyTorch
        # prints it rather than fail
        name = "Invalid"
    if name is not None:
        extras.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    from .forward_ad import current_tangent  # (forward_ad imports tensor, which imports this)
    tangent = current_tangent(t)
    if tangent is not None:
        extras.append(f"tangent={tangent!r}")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
