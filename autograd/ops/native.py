"""ATen-level functions PyTorch exposes at the top level: the ``native_*`` normalisations and
dropout (which return their saved statistics or mask beside the output), ``segment_reduce``,
and the deprecated non-in-place ``Tensor.resize`` / ``Tensor.resize_as``.

All are composites: the outputs come from nn.functional's ops (the fused kernels where those
have them) and the statistics are computed beside them: from the detached input for layer
and batch norm, whose statistics carry no gradient in PyTorch either, and from the input itself
for group norm, whose statistics PyTorch differentiates.
"""

from __future__ import annotations

import math
import warnings

from ...runtime import dtype as dtypes
from ..checks import tensor_arg
from ..registry import OpInfo
from ..tensor import Tensor


def _functional():
    from ...nn import functional  # (nn imports the ops: loaded on first call)
    return functional


def native_layer_norm(input: Tensor, normalized_shape, weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple:
    """``(layer_norm(input, ...), mean, rstd)``: the mean and 1 / sqrt(biased var + eps) over
    the normalised dims, shaped ``input.shape[:axis] + (1,) * len(normalized_shape)``."""
    x = tensor_arg(input, "native_layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    out = _functional().layer_norm(x, shape, weight, bias, eps)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    d = x.detach()
    mean = d.mean(dims, keepdim=True)
    rstd = (d.var(dims, unbiased=False, keepdim=True) + eps).rsqrt()
    return out, mean, rstd


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                      momentum: float, eps: float) -> tuple:
    """``(batch_norm(...), save_mean, save_invstd)``. Training: the batch's per-channel mean
    and 1 / sqrt(biased var + eps) (and the running statistics updated in place); evaluation:
    two empty tensors, as PyTorch's CPU kernel returns."""
    x = tensor_arg(input, "native_batch_norm")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("native_batch_norm: running_mean and running_var must be defined "
                           "in evaluation mode")
    out = _functional().batch_norm(x, running_mean, running_var, weight, bias, training,
                                   momentum, eps)
    if not training:
        return out, x.new_empty((0,)), x.new_empty((0,))
    dims = (0,) + tuple(range(2, x.ndim))
    d = x.detach()
    return out, d.mean(dims), (d.var(dims, unbiased=False) + eps).rsqrt()


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int,
                      C: int, HxW: int, group: int, eps: float) -> tuple:
    """``(group_norm(input, group, ...), mean, rstd)``, the statistics (N, group). Unlike
    the other two's, these statistics are differentiable, as PyTorch's (its derivative
    formulas give them gradients and tangents)."""
    x = tensor_arg(input, "native_group_norm")
    if x.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements (N={N}, C={C}, "
                           f"HxW={HxW}), got input of shape {list(x.shape)}")
    out = _functional().group_norm(x, group, weight, bias, eps)
    g = x.reshape(N, group, -1)
    return out, g.mean(-1), (g.var(-1, unbiased=False) + eps).rsqrt()


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple:
    """``(output, mask)``: in training (``train`` True or None) each element is kept with
    probability 1 - p (the boolean ``mask``) and scaled by 1 / (1 - p); otherwise the output
    is a copy of the input and the mask all True."""
    x = tensor_arg(input, "native_dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if train is False:
        return x.clone(), x.new_ones(tuple(x.shape), dtype=dtypes.bool)
    from .creation import rand
    keep = rand(tuple(x.shape), device=x.device) >= p
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return x * keep.to(x.dtype) * scale, keep


_SEGMENT_REDUCTIONS = ("sum", "prod", "mean", "max", "min", "amax", "amin")


def _segments(data: Tensor, lengths: list, reduce: str, axis: int, initial) -> Tensor:
    from .shape import stack
    empty = {"sum": 0.0, "prod": 1.0, "mean": math.nan, "max": -math.inf, "min": math.inf}
    rest = tuple(data.shape[:axis]) + tuple(data.shape[axis + 1:])
    outs, start = [], 0
    for n in lengths:
        if n == 0:
            fill = empty[reduce] if initial is None else initial
            outs.append(data.new_full(rest, fill))
            start += n
            continue
        s = data.narrow(axis, start, n)
        start += n
        if reduce == "sum":
            r = s.sum(axis) + (0.0 if initial is None else initial)
        elif reduce == "prod":
            r = s.prod(axis) * (1.0 if initial is None else initial)
        elif reduce == "mean":
            r = (s.sum(axis) + (0.0 if initial is None else initial)) / n
        elif reduce == "max":
            r = s.amax(axis) if initial is None else s.amax(axis).clamp(min=initial)
        else:
            r = s.amin(axis) if initial is None else s.amin(axis).clamp(max=initial)
        outs.append(r)
    return stack(outs, axis)


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None,
                   indices: Tensor | None = None, offsets: Tensor | None = None, axis: int = 0,
                   unsafe: bool = False, initial=None) -> Tensor:
    """Reduces consecutive segments of ``data`` along ``axis``: segment i spans
    ``lengths[..., i]`` entries (or ``offsets[..., i]`` to ``offsets[..., i + 1]``), the
    leading dims of ``lengths`` batching over ``data``'s (``axis`` must be
    ``lengths.ndim - 1``). ``reduce``: ``"sum"``, ``"prod"``, ``"mean"``, ``"max"``/``"amax"``,
    ``"min"``/``"amin"``. An empty segment gives ``initial``, or 0, 1, nan, -inf, inf;
    ``initial`` otherwise joins each segment's reduction. Differentiable in ``data``.

    Example:
        >>> tg.segment_reduce(tg.tensor([1., 2., 3.]), "sum", lengths=tg.tensor([2, 1]))
        tensor([3., 3.])
    """
    x = tensor_arg(data, "segment_reduce")
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    reduce = {"amax": "max", "amin": "min"}.get(reduce, reduce)
    if indices is not None:
        raise NotImplementedError("segment_reduce(): indices based reduction is not "
                                  "supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if lengths is None:
        o = offsets.cpu().numpy()
        seg = o[..., 1:] - o[..., :-1]
    else:
        seg = lengths.cpu().numpy()
    axis = axis % max(x.ndim, 1)
    if axis != seg.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"lengths but got {axis}.")
    if (seg < 0).any():
        raise RuntimeError("lengths contains negative value!")
    if not unsafe and (seg.sum(-1) != x.shape[axis]).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                           "to data.size(lengths.dim()-1) when !unsafe.")

    def batched(d: Tensor, s, ax: int) -> Tensor:
        if s.ndim == 1:
            return _segments(d, [int(n) for n in s], reduce, ax, initial)
        from .shape import stack
        return stack([batched(d[i], s[i], ax - 1) for i in range(s.shape[0])], 0)
    return batched(x, seg, axis)


def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated: ``self`` reshaped to ``sizes``, which must keep its number of elements
    (autograd's resize only changes the shape; use ``reshape``)."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    n = math.prod(shape)
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({n} elements in "
                           f"total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           f"autograd's resize can only change the shape of a given tensor, "
                           f"while preserving the number of elements. ")
    return self.reshape(shape)  # (a view of a contiguous tensor, as PyTorch's)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated: ``self.resize(tensor.shape)``."""
    tensor_arg(tensor, "resize_as", "the_template")
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, tuple(tensor.shape))


_NORM = {"dtypes": "float", "grad": "the output's, through nn.functional's op"}
OPS = (
    OpInfo("native_layer_norm", native_layer_norm, method=False, **_NORM),
    OpInfo("native_batch_norm", native_batch_norm, method=False, **_NORM),
    OpInfo("native_group_norm", native_group_norm, method=False, **_NORM),
    OpInfo("native_dropout", native_dropout, method=False, **_NORM),
    OpInfo("segment_reduce", segment_reduce, method=False, dtypes="float",
           grad="each segment's reduction's"),
    OpInfo("resize", resize, function=False, dtypes="all", grad="reshape's"),
    OpInfo("resize_as", resize_as, function=False, dtypes="all", grad="reshape's"),
)
