"""Max pooling with indices as one node on the CPU: ``MaxPool2DWithIndicesBackward0`` (and its
1-D and 3-D variants), over the CPU kernels of kernels/numpy/pool.py (a compiled loop each way
where Numba runs). nn/_convolution.py's ``_max_pool`` uses it for CPU tensors; other devices
compose the pool from gathered windows and a max (several nodes, several kernels).

The backward adds each output's gradient at its index; recorded (``create_graph=True``) it is
a scatter_add, differentiable again. The forward-mode tangent is the input's tangent at the
indices.
"""

from __future__ import annotations

import math

from ...kernels.numpy import pool as _pool
from ..dispatch import Primitive, apply, zeros
from ..layout import channels_last_order, laid_out
from ..tensor import Tensor
from . import traced

__all__ = ["max_pool_with_indices"]


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
