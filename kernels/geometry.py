"""What both backends share: the output size of a convolution window, and the lookup of the
activation op table (kernels/numpy/nn.py, kernels/triton/activations.py)."""

from __future__ import annotations

import numpy as np

__all__ = ["activation_entry", "conv_geometry", "conv_pads"]


def conv_pads(padding) -> tuple:
    """((top, bottom), (left, right)) from (ph, pw), each an int (both sides) or a pair."""
    out = []
    for p in padding:
        lo, hi = (p, p) if isinstance(p, (int, np.integer)) else p
        out.append((int(lo), int(hi)))
    return tuple(out)


def conv_geometry(op: str, x_shape, w_shape, stride, padding, dilation, groups: int) -> tuple:
    """Checks the shapes; returns (N, C, H, W, O, Cg, KH, KW, OH, OW, pads)."""
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ValueError(f"{op}: expected 4-D input and weight (NCHW, OIHW), got shapes "
                         f"{tuple(x_shape)} and {tuple(w_shape)}")
    N, C, H, W = x_shape
    O, Cg, KH, KW = w_shape
    if groups < 1 or O % groups or C != Cg * groups:
        raise ValueError(f"{op}: input {tuple(x_shape)} and weight {tuple(w_shape)} do not "
                         f"agree with groups={groups}")
    (pt, pb), (pl, pr) = pd = conv_pads(padding)
    (sh, sw), (dh, dw) = stride, dilation
    OH = (H + pt + pb - dh * (KH - 1) - 1) // sh + 1
    OW = (W + pl + pr - dw * (KW - 1) - 1) // sw + 1
    if OH < 1 or OW < 1:
        raise ValueError(f"{op}: the kernel {(KH, KW)} (dilation {tuple(dilation)}) does not "
                         f"fit the padded input {(H + pt + pb, W + pl + pr)}")
    return N, C, H, W, O, Cg, KH, KW, OH, OW, pd


def activation_entry(table: dict, op: str, params: tuple) -> tuple:
    """``table[op]``, an activation's (forward, backward, number of parameters), checked
    against the parameters given."""
    entry = table.get(op)
    if entry is None:
        raise ValueError(f"activation: unknown op {op!r} (one of {', '.join(table)})")
    if len(params) != entry[2]:
        raise TypeError(f"activation {op!r} takes {entry[2]} parameters, got {len(params)}")
    return entry
