"""Fused 2-D convolution: ``ConvolutionBackward0``, the primitive under nn.functional's conv1d
and conv2d (conv1d is a convolution of height one).

The forward is one call to the kernel contract's ``conv2d`` (im2col over BLAS on the CPU,
an implicit-GEMM Triton kernel on CUDA), the first-order backward one call to
``conv2d_backward``. As layer norm's (``fused = True``), the rule on arrays is that fused
kernel, and recorded (``create_graph=True``, ``k`` is ``ops.traced``) it is a composite of
differentiable Tensor ops, so double backward, hessians and gradgradcheck work:

    cols = x's taps gathered per output position (index_select; off-input taps read a zero)
    dw = g @ cols^T summed over the batch,  dcols = w^T @ g,  dx = dcols index_add-ed back
    (col2im),  db = g summed over (N, OH, OW)

Forward-mode AD: the convolution is bilinear in (x, w) and linear in the bias, so its jvp is
conv(tx, w) + conv(x, tw) + tb.

A backend may also offer ``conv2d_columns`` / ``conv2d_backward_columns`` (the NumPy one
does, outside the contract): the forward then keeps the im2col matrix it multiplied on the
node, and the weight gradient reads it instead of gathering the taps again (Note [Kept
columns] in kernels/numpy/conv.py; PyTorch's CPU slow_conv2d keeps its ``finput`` so). Only
while the weight needs a gradient and no saved-tensor hooks are active (they decide what
backward keeps, as checkpointing and save_on_cpu do; the columns are KH*KW times the input);
released with the saved tensors.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import checks
from ..dispatch import Primitive, apply
from ..layout import channels_last_order, laid_out
from ..state import anywhere, state
from ..tensor import Tensor, array_meta
from . import traced

__all__ = ["conv2d", "conv_transpose2d"]


class ConvolutionBackward0(Primitive):
    """y = conv2d(x, w) (+ bias) on NCHW tensors; inputs (x, w[, bias]), params (stride,
    padding ((top, bottom), (left, right)), dilation, groups)."""

    __slots__ = ()
    op_name = "convolution"
    save_inputs = (0, 1)
    fused = True
    _columns = None  # the forward's im2col matrix, where kept (module docstring)

    @staticmethod
    def forward(ctx, k, x, w, *args):
        arrays, (stride, padding, dilation, groups) = args[:-4], args[-4:]
        ctx.stride, ctx.padding, ctx.dilation, ctx.groups = stride, padding, dilation, groups
        bias = arrays[0] if arrays else None
        keep = getattr(k, "conv2d_columns", None)
        # (recording with the weight's gradient needed: a node with its edges; forward AD's
        # ctx without a record has none)
        edges = getattr(ctx, "next_functions", None) if keep is not None else None
        if edges and edges[1][0] is not None \
                and not (anywhere.saved_hooks and state.saved_hooks):
            out, ctx._columns = keep(x, w, bias, stride, padding, dilation, groups)
            return out
        return k.conv2d(x, w, bias, stride, padding, dilation, groups)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, w = saved
        needs = ctx.needs_input_grad
        params = (ctx.stride, ctx.padding, ctx.dilation, ctx.groups)
        if k is traced:  # recorded: the composite formula, differentiable to any order
            grads = _composite_backward(g, x, w, *params, needs)
        else:
            needs3 = tuple(needs) + (False,) * (3 - len(needs))
            if ctx._columns is not None:
                grads = k.conv2d_backward_columns(g, x, w, *params, needs3, ctx._columns)
            else:
                grads = k.conv2d_backward(g, x, w, *params, needs3)
            grads = _in_conv_layout(k, grads, x, w)
        return tuple(gr if need else None for gr, need in zip(grads, needs))

    def _release(self) -> None:
        super()._release()
        self._columns = None

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        return _bilinear_jvp(ConvolutionBackward0, primals, tangents, out, params)


def _in_conv_layout(k, grads: tuple, x, w) -> tuple:
    """(dx, dw, db) with dx and dw in the memory format of the convolution of ``x`` and ``w``:
    channels-last when either one's strides suggest it and it is not row-major as well, else
    row-major (what PyTorch 2.13's CPU convolutions give both gradients)."""
    order = channels_last_order(k, x, w, row_major_wins=True)
    return tuple(laid_out(k, a, order) if a is not None and i < 2 else a
                 for i, a in enumerate(grads))


def _bilinear_jvp(op: type, primals, tangents, out, params):
    """The tangent of a convolution (or its transpose), bilinear in (x, w) and linear in the
    bias: op(tx, w) + op(x, tw) + tb."""
    x, w = primals[:2]
    tx, tw = tangents[:2]
    tb = tangents[2] if len(tangents) > 2 else None
    res = None
    for a, b in ((tx, w), (x, tw)):
        if a is not None and b is not None:
            term = apply(op, (a, b), *params)
            res = term if res is None else res + term
    if tb is not None:
        term = tb.reshape(1, -1, 1, 1)
        res = term.expand(tuple(out.shape)) if res is None else res + term
    return res


@functools.lru_cache(maxsize=128)
def _tap_index(H, W, KH, KW, OH, OW, stride, padding, dilation) -> np.ndarray:
    """(KH*KW*OH*OW,) int64: the flat input position (in H*W) that tap (kh, kw) of output
    position (oh, ow) reads, H*W (a zero appended to the input) where it falls in the
    padding; taps major, then output positions."""
    (sh, sw), ((pt, _), (pl, _)), (dh, dw) = stride, padding, dilation
    ih = (np.arange(KH) * dh)[:, None] + (np.arange(OH) * sh - pt)[None, :]  # (KH, OH)
    iw = (np.arange(KW) * dw)[:, None] + (np.arange(OW) * sw - pl)[None, :]  # (KW, OW)
    ih = ih[:, None, :, None]
    iw = iw[None, :, None, :]
    inside = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    return np.where(inside, ih * W + iw, H * W).astype(np.int64).reshape(-1)


def _composite_backward(g, x, w, stride, padding, dilation, groups, needs):
    from .creation import tensor, zeros
    from .shape import cat

    N, C, H, W = x.shape
    O, Cg, KH, KW = w.shape
    OH, OW = g.shape[2:]
    Og, CgK, L = O // groups, Cg * KH * KW, OH * OW
    idx = tensor(_tap_index(H, W, KH, KW, OH, OW, stride, padding, dilation), device=x.device)
    gm = g.reshape(N, groups, Og, L)
    dx = dw = db = None
    if needs[0]:
        dcols = w.reshape(groups, Og, CgK).transpose(-1, -2).matmul(gm)  # (N, g, CgK, L)
        dxz = zeros(N, C, H * W + 1, dtype=g.dtype, device=g.device).index_add(
            2, idx, dcols.reshape(N, C, KH * KW * L))
        dx = dxz[:, :, :H * W].reshape(N, C, H, W)
    if needs[1]:
        xz = cat([x.reshape(N, C, H * W), zeros(N, C, 1, dtype=x.dtype, device=x.device)], 2)
        cols = xz.index_select(2, idx).reshape(N, groups, CgK, L)
        dw = gm.matmul(cols.transpose(-1, -2)).sum(0).reshape(O, Cg, KH, KW)
    if len(needs) > 2 and needs[2]:
        db = g.sum((0, 2, 3))
    return dx, dw, db


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None, stride: tuple, padding: tuple,
           dilation: tuple, groups: int, op: str = "conv2d") -> Tensor:
    """The fused convolution of NCHW ``input`` with ``weight`` (O, C/groups, KH, KW) and
    ``bias`` (O,) or None; ``padding`` is ((top, bottom), (left, right)) zeros. Arguments
    are those nn.functional's ``op`` (conv1d, conv2d) has checked; the tensors are converted
    to their common floating point dtype."""
    return apply(ConvolutionBackward0, *_prepared(input, weight, bias, stride, padding, dilation,
                                                  groups, op))


def _prepared(input, weight, bias, stride, padding, dilation, groups, op: str) -> tuple:
    """(tensors, stride, padding, dilation, groups) of a convolution primitive: the tensors,
    checked to be on one device in one floating point dtype (nn/_convolution.py refuses
    mixed dtypes with PyTorch's errors before this; nothing is promoted), the parameters as
    ints."""
    tensors = (input, weight) + (() if bias is None else (bias,))
    dt = input.dtype
    for name, t in zip(("weight", "bias"), tensors[1:]):
        checks.check_same_device(input, t, name, op)
        if t.dtype is not dt:
            raise RuntimeError(f"{op}: expected {name} of dtype {dt}, got {t.dtype}")
    if not dt.is_floating_point:
        raise RuntimeError(f"{op}: expected floating point tensors, got {dt}")
    return (tensors, tuple(map(int, stride)), tuple((int(lo), int(hi)) for lo, hi in padding),
            tuple(map(int, dilation)), int(groups))


# -- the transposed convolution ------------------------------------------------------------------
# conv_transpose2d(x, w) is the adjoint of conv2d(., w): the input gradient conv2d's backward
# computes, with x in the place of the output gradient. So its forward is the kernel contract's
# conv2d_backward asked for dx alone (the convolution's input, which that does not read, is an
# uninitialised array of the output's shape), and its own gradients are a forward convolution
# (for x) and conv2d's weight gradient with the roles of input and output swapped (for w).

class ConvTransposeBackward0(Primitive):
    """y = conv_transpose2d(x, w) (+ bias) on NCHW tensors; w is (C_in, C_out / groups, KH,
    KW); params (stride, padding ((top, bottom), (left, right)), dilation, groups, output size
    (OH, OW))."""

    __slots__ = ()
    op_name = "convolution"
    save_inputs = (0, 1)

    @staticmethod
    def forward(ctx, k, x, w, *args):
        arrays, (stride, padding, dilation, groups, size) = args[:-5], args[-5:]
        ctx.stride, ctx.padding, ctx.dilation, ctx.groups = stride, padding, dilation, groups
        n, o = x.shape[0], w.shape[1] * groups
        device, dtype = array_meta(x)
        shape = k.empty((n, o) + tuple(size), dtype, device)
        y = k.conv2d_backward(x, shape, w, stride, padding, dilation, groups,
                              (True, False, False))[0]
        if arrays:
            y = k.add(y, k.view(arrays[0], (1, o, 1, 1)), out=y)
        return y

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, w = saved
        needs = ctx.needs_input_grad
        params = (ctx.stride, ctx.padding, ctx.dilation, ctx.groups)
        dx = dw = db = None
        if k is traced:  # recorded: differentiable compositions
            if needs[0]:
                dx = apply(ConvolutionBackward0, (g, w), *params)
            if needs[1]:
                dw = _composite_backward(x, g, w, *params, (False, True))[1]
            if len(needs) > 2 and needs[2]:
                db = g.sum((0, 2, 3))
            return dx, dw, db
        if needs[0]:
            dx = k.conv2d(g, w, None, *params)
        if needs[1]:
            dw = k.conv2d_backward(x, g, w, *params, (False, True, False))[1]
        if len(needs) > 2 and needs[2]:
            db = k.sum(g, (0, 2, 3), False)
        return _in_conv_layout(k, (dx, dw, db), x, w)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        return _bilinear_jvp(ConvTransposeBackward0, primals, tangents, out, params)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None, stride: tuple,
                     padding: tuple, dilation: tuple, groups: int, size: tuple,
                     op: str = "conv_transpose2d") -> Tensor:
    """The fused transposed convolution of NCHW ``input`` with ``weight`` (C_in, C_out/groups,
    KH, KW), output spatial ``size`` (what nn.functional's ``op`` has computed and checked,
    output_padding included); ``padding`` as conv2d's."""
    return apply(ConvTransposeBackward0, *_prepared(input, weight, bias, stride, padding,
                                                    dilation, groups, op), tuple(map(int, size)))
