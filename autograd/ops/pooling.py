"""Max pooling with indices and average pooling as one node each on the CPU:
``MaxPool2DWithIndicesBackward0`` and ``AvgPool2DBackward0`` (and their 1-D and 3-D variants),
over the CPU kernels of kernels/numpy/pool.py (a compiled loop each way where Numba runs).
nn/_convolution.py's ``_max_pool`` and ``_avg_pool`` use them for floating CPU tensors; other
devices compose the pools from gathered windows and a max or a sum (several nodes, several
kernels).

Max pooling's backward adds each output's gradient at its index; recorded
(``create_graph=True``) it is a scatter_add, differentiable again. The forward-mode tangent is
the input's tangent at the indices.

Average pooling is linear: its backward is the transposed op, PyTorch's
``avg_pool2d_backward`` (``AvgPool2DBackwardBackward0`` when recorded), whose own gradient is
the pool again; each one's tangent is itself applied to the tangent.
"""

from __future__ import annotations

import math

from ...kernels.numpy import pool as _pool
from ..dispatch import Primitive, apply, call, zeros
from ..layout import channels_last_order, laid_out
from ..tensor import Tensor
from . import traced

__all__ = ["avg_pool", "max_pool_with_indices"]


class MaxPool2DWithIndicesBackward0(Primitive):
    """(values, indices) = max_pool(x) over ``kernel``/``stride``/``padding``/``dilation``
    with output size ``out``: indices are flat positions in each input plane."""

    __slots__ = ()
    op_name = "max_pool2d_with_indices"
    nondiff_outputs = (1,)
    keep_outputs = (1,)  # the indices (Note [Saved indices])
    fused = True

    @staticmethod
    def forward(ctx, k, x, kernel, stride, padding, dilation, out):
        values, index = _pool.max_pool(x, kernel, stride, padding, dilation, out)
        ctx.shape = tuple(x.shape)
        ctx.order = channels_last_order(k, x, row_major_wins=True)  # (its gradient: PyTorch's)
        return values, index

    @staticmethod
    def vjp(ctx, k, saved, g, _g_index=None):
        index, = saved
        if math.prod(ctx.shape) == 0:  # (an empty batch or plane: nothing to scatter)
            return (zeros(k, ctx.shape, g),)
        if k is traced:  # recorded: a scatter_add of g, differentiable again
            n, c = ctx.shape[:2]
            dx = g.new_zeros((n, c, math.prod(ctx.shape[2:])))
            return (dx.scatter_add(2, index.reshape(n, c, -1), g.reshape(n, c, -1))
                    .reshape(ctx.shape),)
        dx = _pool.max_pool_backward(g, index, ctx.shape, channels_last=ctx.order is not None)
        return (laid_out(k, dx, ctx.order),)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        """The input's tangent at the indices."""
        index = out[1]
        picked = tangents[0].flatten(2).gather(2, index.flatten(2))
        return picked.reshape(tuple(index.shape)), None


class MaxPool3DWithIndicesBackward0(MaxPool2DWithIndicesBackward0):
    __slots__ = ()
    op_name = "max_pool3d_with_indices"


_NODES = {2: MaxPool2DWithIndicesBackward0, 3: MaxPool3DWithIndicesBackward0}


def max_pool_with_indices(x: Tensor, kernel: tuple, stride: tuple, padding: tuple,
                          dilation: tuple, out: tuple) -> tuple:
    """(values, indices) of the max pool of the batched CPU tensor ``x`` (N, C, *S), the
    arguments already checked and ``out`` computed (nn/_convolution.py's ``_pool_setup``)."""
    return apply(_NODES[len(kernel)], (x,), tuple(kernel), tuple(stride), tuple(padding),
                 tuple(dilation), tuple(out))


class AvgPool2DBackward0(Primitive):
    """avg_pool(x) over ``spec`` = (kernel, stride, padding, out, count_include_pad,
    divisor_override): each window's sum of the taps inside the input over its divisor. x is
    saved, as PyTorch's node saves ``self`` (modifying it in place then refuses backward)."""

    __slots__ = ()
    op_name = "avg_pool2d"
    fused = True
    save_inputs = (0,)

    @staticmethod
    def forward(ctx, k, x, spec):
        ctx.spec = spec
        ctx.order = channels_last_order(k, x, row_major_wins=True)  # (its gradient: PyTorch's)
        return _pool.avg_pool(x, spec)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        return (call(k, _AVG_BACKWARD[len(ctx.spec[0])], (g, x), ctx.order, ctx.spec),)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, spec):
        return call(k, type(ctx), (tangents[0],), spec)


class AvgPool3DBackward0(AvgPool2DBackward0):
    __slots__ = ()
    op_name = "avg_pool3d"


class AvgPool2DBackwardBackward0(Primitive):
    """avg_pool's input gradient from the output gradient ``g`` (PyTorch's
    ``avg_pool2d_backward(grad, self)``): the transposed pool, into an array of ``x``'s shape
    laid out by ``order`` (``channels_last_order``'s). Only x's shape is read; it is an input
    as in PyTorch, so a gradient recorded with ``create_graph=True`` requires grad whenever x
    does (its gradient for x is zero)."""

    __slots__ = ()
    op_name = "avg_pool2d_backward"
    fused = True

    @staticmethod
    def forward(ctx, k, g, x, order, spec):
        shape = tuple(x.shape)
        ctx.spec, ctx.shape = spec, shape
        if math.prod(shape) == 0:  # (an empty batch: nothing to add)
            return zeros(k, shape, g)
        return laid_out(k, _pool.avg_pool_backward(g, shape, spec), order)

    @staticmethod
    def vjp(ctx, k, saved, gg):
        need_g, need_x = ctx.needs_input_grad
        return (call(k, _AVG_POOL[len(ctx.spec[0])], (gg,), ctx.spec) if need_g else None,
                zeros(k, ctx.shape, gg) if need_x else None)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, order, spec):
        if tangents[0] is None:  # (x's tangent moves nothing: only its shape is read)
            return None
        return call(k, type(ctx), (tangents[0], primals[1]), order, spec)


class AvgPool3DBackwardBackward0(AvgPool2DBackwardBackward0):
    __slots__ = ()
    op_name = "avg_pool3d_backward"


_AVG_POOL = {2: AvgPool2DBackward0, 3: AvgPool3DBackward0}
_AVG_BACKWARD = {2: AvgPool2DBackwardBackward0, 3: AvgPool3DBackwardBackward0}


def avg_pool(x: Tensor, kernel: tuple, stride: tuple, padding: tuple, out: tuple,
             count_include_pad: bool, divisor_override) -> Tensor:
    """The average pool of the batched floating CPU tensor ``x`` (N, C, *S), the arguments
    already checked and ``out`` computed (nn/_convolution.py's ``_pool_setup``)."""
    spec = (tuple(kernel), tuple(stride), tuple(padding), tuple(out), bool(count_include_pad),
            divisor_override)
    return apply(_AVG_POOL[len(kernel)], (x,), spec)
