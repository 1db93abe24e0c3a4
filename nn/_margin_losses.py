"""The margin, ranking and embedding losses of ``torch.nn.functional``, as compositions of
tensor ops (so both backends run them and their gradients come through their parts), with
PyTorch's formulas:

- margin_ranking_loss: max(0, -y (x1 - x2) + margin);
- hinge_embedding_loss: x where y = 1, max(0, margin - x) where y = -1;
- soft_margin_loss: log(1 + exp(-y x)), averaged over every element;
- multilabel_soft_margin_loss: -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), times the class
  weight, averaged over the classes, then reduced over the samples;
- multi_margin_loss: sum over classes i != y of max(0, margin - x[y] + x[i])^p / C, times
  weight[y];
- multilabel_margin_loss: sum over the targets j (a row's leading entries up to the first -1)
  and the classes i that are no target of max(0, 1 - (x[j] - x[i])) / C;
- cosine_embedding_loss: 1 - cos where y = 1, max(0, cos - margin) where y = -1, cos computed
  with 1e-12 added to each squared norm (as PyTorch);
- triplet_margin_loss: max(d(a, p) - d(a, n) + margin, 0), d the pairwise p-norm distance (with
  ``swap``, d(a, n) is min(d(a, n), d(p, n))); the ``_with_distance`` form takes any d.
"""

from __future__ import annotations

from collections.abc import Callable

from ..autograd import checks
from ..autograd.autocast import autocast_op
from ..autograd.ops.elementwise import broadcast_shapes
from ..autograd.ops.nn import check_class_indices
from ..autograd.ops.sampling_nodes import (MultilabelMarginLossBackward0, MultiMarginLossBackward0,
                                           recomputed_node)
from ..autograd.tensor import Tensor
from . import functional as F  # (imported first by the package: its helpers exist at call time)

__all__ = ["cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss",
           "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "soft_margin_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss"]


@autocast_op("float32")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -target (input1 - input2) + margin); ``target`` holds 1 or -1."""
    reduction = F._reduction(size_average, reduce, reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {list(input1.shape)}, input2: "
                           f"{list(input2.shape)}, target: {list(target.shape)} ")
    return F._reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


@autocast_op("float32")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """``input`` where ``target`` is 1, max(0, margin - input) where it is -1."""
    reduction = F._reduction(size_average, reduce, reduction)
    margin_part = (margin - input).clamp(min=0.0).where(target != 1, 0.0)
    return F._reduce(margin_part + input.where(target != -1, 0.0), reduction)


@autocast_op("float32")
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * input)) per element (two-class logistic loss)."""
    reduction = F._reduction(size_average, reduce, reduction)
    if isinstance(input, Tensor) and not (input.dtype.is_floating_point
                                          or input.dtype.is_complex):
        raise F._cast_error("soft_margin_loss", "Float", input.dtype)  # (computed into input's)
    if isinstance(target, Tensor):  # (PyTorch has no derivative for the target)
        F._not_differentiable("soft_margin_loss", target=target)
        # PyTorch computes the loss in place into an input-shaped tensor: the target may
        # broadcast to input's shape, not input to a larger one
        shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
        if shape != tuple(input.shape):
            raise RuntimeError(f"soft_margin_loss: output with shape {list(input.shape)} "
                               f"doesn't match the broadcast shape {list(shape)}")
    return F._reduce(F.softplus(-target * input), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """The one-versus-all logistic loss of (N, C) ``input`` against 0/1 ``target``, averaged
    over the C classes (``weight`` (C,) rescales each)."""
    checks.tensor_arg(input, "multilabel_soft_margin_loss")  # (a number target broadcasts)
    if input.ndim == 0:
        raise IndexError("multilabel_soft_margin_loss: Dimension specified as -1 but tensor has "
                         "no dimensions")
    reduction = F._reduction(size_average, reduce, reduction)
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return F._reduce(loss.sum(input.ndim - 1) / input.shape[-1], reduction)


@autocast_op("float32")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss of (N, C) or (C,) ``input`` against class indices."""
    F._loss_operands("multi_margin_loss", input, target)
    reduction = F._reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    if target.ndim > 1 and x.ndim == 2:  # (a 1-D target of the right size: next)
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{x.shape[0]}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    t = check_class_indices(target).reshape(-1)
    if input.ndim == 1 and target.ndim == 0:  # (PyTorch's: a () loss, where (1,) gives (1,))
        t = t.reshape(())
    if x.ndim != 2 or t.numel() != x.shape[0]:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size: {list(target.shape)} "
                           f"for input of size: {list(input.shape)}")
    c = x.shape[1]
    if weight is not None:  # (PyTorch's checks and words)
        if weight.ndim != 1:
            raise ValueError("multi_margin_loss: weight must be one-dimensional")
        if weight.shape[0] != c:
            raise RuntimeError(f"multi_margin_loss: inconsistent weight size, expected {c} but "
                               f"got {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise checks.expected_scalar_type(input.dtype, weight.dtype)
        F._not_differentiable("multi_margin_loss", weight=weight)
    checks.check_index_range(t, c, lambda bad: RuntimeError(
        "multi_margin_loss: target out of range"))
    # one node saving input, target and weight, as PyTorch's, with its closed-form rule
    if weight is None:
        return recomputed_node(MultiMarginLossBackward0, (input, t), _multi_margin, None, p,
                               margin, reduction, rule=_multi_margin_rule)
    return recomputed_node(_MultiMarginWeighted, (input, t, weight), _multi_margin, p, margin,
                           reduction, rule=_multi_margin_rule)


def _multi_margin(input: Tensor, t: Tensor, weight: Tensor | None, p: int, margin: float,
                  reduction: str) -> Tensor:
    """multi_margin_loss's composite (checked operands, ``t`` the (N,) class indices)."""
    x = input.unsqueeze(0) if input.ndim == 1 else input
    squeeze, t = t.ndim == 0, t.reshape(-1)
    c = x.shape[1]
    picked = x.gather(1, t.unsqueeze(1))                  # x[y], (N, 1)
    terms = (margin - picked + x).clamp(min=0.0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight[t].unsqueeze(1)
    own = t.unsqueeze(1) == t.new_tensor(list(range(c))).unsqueeze(0)  # i == y: no term
    loss = terms.where(own.logical_not(), 0.0).sum(1) / c
    if squeeze:
        loss = loss.squeeze(0)
    return F._reduce(loss, reduction)


def _multi_margin_rule(g: Tensor, needs: tuple, input: Tensor, t: Tensor, *rest) -> tuple:
    """multi_margin_loss's vjp: with h_i = margin - x[y] + x[i] and s = g w[y] / C for a row,
    dx[i] = s h_i'^p [h_i > 0] (i != y; p h^(p-1)), dx[y] = -(sum of those); dw[y] += g
    (the row's unweighted loss). ``rest``: (weight, p, margin, reduction), or (None, ...)."""
    weight, p, margin, reduction = rest if len(rest) == 4 else (None,) + tuple(rest)
    x = input.unsqueeze(0) if input.ndim == 1 else input
    t = t.reshape(-1)
    n, c = x.shape
    rows = g.reshape(-1) if reduction == "none" else (g / n if reduction == "mean" else g)
    rows = rows.expand(n) / c
    h = margin - x.gather(1, t.unsqueeze(1)) + x
    own = t.unsqueeze(1) == t.new_tensor(list(range(c))).unsqueeze(0)
    keep = (h > 0).logical_and(own.logical_not())
    scale = rows if weight is None else rows * weight[t]
    gx = gw = None
    if needs[0]:
        d = (h * 2.0 if p == 2 else h.new_ones(h.shape)).where(keep, 0.0) * scale.unsqueeze(1)
        gx = d.where(own.logical_not(), -d.sum(1, keepdim=True)).reshape(input.shape)
    if weight is not None and needs[2]:
        terms = h.where(keep, 0.0)
        unweighted = (terms * terms if p == 2 else terms).sum(1)
        gw = weight.new_zeros(weight.shape).index_add(0, t, rows * unweighted)
    return (gx, None) if weight is None else (gx, None, gw)


_MultiMarginWeighted = MultiMarginLossBackward0.variant(  # (PyTorch's node: weight saved too)
    "MultiMarginLossBackward0", "multi_margin_loss", save_inputs=(0, 1, 2))


def _multilabel_rows(input: Tensor, target: Tensor) -> tuple:
    """(N, C) input and int64 target rows, checked as PyTorch's multilabel_margin_loss checks
    them: a vector (C,) with a target of C entries, a matrix (N, C) with one of its shape, or a
    0-d input (one class) with a 0-d or one-element target."""
    shape = list(input.shape)
    if not ((input.ndim == 2 and shape[1] != 0) or (input.ndim == 1 and shape[0] != 0)
            or input.ndim == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {shape}")
    c = shape[-1] if input.ndim else 1
    if (target.ndim > 1 or target.numel() != c) if input.ndim < 2 else (
            list(target.shape) != shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{shape}")
    return input.reshape(-1, c), check_class_indices(target).reshape(-1, c)


def _target_out_of_range(bad) -> RuntimeError:
    return RuntimeError("argument #2 'target' is out of range")


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """The multi-class multi-label hinge loss of (N, C) or (C,) ``input``: each row of
    ``target`` lists the row's target classes in its leading entries, ended by the first -1
    (entries after it are ignored); the loss of a row sums max(0, 1 - (x[j] - x[i])) over its
    targets j and the classes i that are not among them, divided by C."""
    reduction = F._reduction(size_average, reduce, reduction)
    checks.tensor_arg(input, "multilabel_margin_loss")
    checks.tensor_arg(target, "multilabel_margin_loss", "target")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"multilabel_margin_loss_forward_out_frame\" not "
                                  f"implemented for '{checks.scalar_type_name(input.dtype)}'")
    checks.check_same_device(input, target, "target", "multilabel_margin_loss")
    x, t = _multilabel_rows(input, target)
    t = checks.guard_index(t, x.shape[1], _target_out_of_range, ignore_index=-1)  # in [-1, C)
    # one node saving input and target (PyTorch's also keeps an (N, C) target mask; this one
    # recomputes it): recorded op by op, the (N, P, C) hinge mask was kept
    return recomputed_node(MultilabelMarginLossBackward0, (input, t), _multilabel_margin,
                           reduction)


def _multilabel_margin(input: Tensor, t: Tensor, reduction: str) -> Tensor:
    """multilabel_margin_loss's composite (checked operands, ``t`` (N, C) in [-1, C))."""
    x = input.reshape(t.shape)
    n, c = x.shape
    valid = (t < 0).long().cumsum(1) == 0  # the targets: the entries before the first -1
    # (the pairs (j, i) span only as many target slots as the longest row uses: one read)
    p = int(valid.sum(1).amax().item()) if n else 0
    valid, t = valid[:, :p], t[:, :p].where(valid[:, :p], 0)
    is_target = x.new_zeros((n, c), dtype=t.dtype).scatter_add(1, t, valid.long()) > 0
    picked = x.gather(1, t)  # x[j] for each target slot, (N, P)
    # relu, not clamp: at a margin of exactly 0 the gradient is 0, as PyTorch's kernel's
    hinge = (1 - picked.unsqueeze(2) + x.unsqueeze(1)).relu()  # (N, P, C)
    pairs = valid.unsqueeze(2) & is_target.logical_not().unsqueeze(1)
    loss = hinge.where(pairs, 0.0).sum((1, 2)) / c
    if input.ndim < 2:
        loss = loss.squeeze(0)
    if reduction == "mean":  # (an empty batch's mean is 0, as PyTorch's)
        return loss.sum() / max(n, 1)
    return F._reduce(loss, reduction)


@autocast_op("float32")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(input1, input2) where ``target`` is 1, max(0, cos - margin) where it is -1."""
    reduction = F._reduction(size_average, reduce, reduction)
    for name, t in (("input1", input1), ("input2", input2), ("target", target)):
        checks.tensor_arg(t, "cosine_embedding_loss", name)
    if target.ndim > 1:  # (PyTorch's checks and words: the target's rank is one less)
        raise RuntimeError("cosine_embedding_loss: 0D or 1D target tensor expected, "
                           "multi-target not supported")
    if input1.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
        raise RuntimeError(f"cosine_embedding_loss: {target.ndim}D target tensor expects "
                           f"{target.ndim + 1}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if input1.ndim != input2.ndim or input1.ndim not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss: 1D target tensor expects 1D or 2D input "
                           f"tensors of the same dimension, but found inputs of sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    dim = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = prod / mag.sqrt()
    pos = (1 - cos).where(target == 1, 0.0)
    neg = (cos - margin).clamp(min=0.0).where(target == -1, 0.0)
    return F._reduce(pos + neg, reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable | None = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0), ``d`` the given distance
    (default: the pairwise Euclidean distance)."""
    reduction = F._reduction(None, None, reduction)  # (PyTorch's order of checks)
    _check_triplet(anchor, positive, negative, margin)
    d = F.pairwise_distance if distance_function is None else distance_function
    d_ap, d_an = d(anchor, positive), d(anchor, negative)
    if swap:
        d_an = d_an.minimum(d(positive, negative))
    return F._reduce((d_ap - d_an + margin).clamp(min=0.0), reduction)


def _check_triplet(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float) -> None:
    """The triplet losses' checks, PyTorch's: a positive margin, equal numbers of dims."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")


@autocast_op("float32")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """The triplet loss with the pairwise ``p``-norm distance (``eps`` added to each
    difference, as ``pairwise_distance``)."""
    reduction = F._reduction(size_average, reduce, reduction)
    _check_triplet(anchor, positive, negative, margin)
    d_ap = F.pairwise_distance(anchor, positive, p, eps)
    d_an = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = d_an.minimum(F.pairwise_distance(positive, negative, p, eps))
    return F._reduce((d_ap - d_an + margin).clamp(min=0.0), reduction)
