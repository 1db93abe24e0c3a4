"""``AdaptiveLogSoftmaxWithLoss``: efficient softmax approximation for large output spaces
(Grave et al., 2017), composed of Linear layers, ``log_softmax`` and ``gather``.

The classes are split by ``cutoffs`` into a shortlist [0, cutoffs[0]) and clusters
[cutoffs[i], cutoffs[i + 1]). The head scores the shortlist classes and one entry per cluster;
cluster i has its own two-layer tail (in_features -> in_features // div_value^(i+1) ->
cluster size). The log-probability of class c in cluster i is
``head_logprob[cluster entry i] + tail_i_logprob[c - cutoffs[i]]``; of a shortlist class, its
head log-probability.
"""

from __future__ import annotations

from collections import namedtuple

from ..autograd.ops.creation import tensor as _tensor
from ..autograd.ops.shape import cat as _cat
from ..autograd.tensor import Tensor
from . import functional as F
from .container import ModuleList, Sequential
from .layers import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation: the log-probabilities of ``n_classes`` classes from a
    head over the frequent classes and clusters, and one tail per cluster.

    Args:
        in_features: number of features in the input tensor.
        n_classes: number of classes in the dataset.
        cutoffs: increasing integers in [1, n_classes - 1]: the clusters' first classes.
        div_value: the tails' hidden sizes are ``in_features // div_value ** (i + 1)``
            (default 4.0).
        head_bias: whether the head has a bias (default False).

    ``forward(input, target)`` returns ``(output, loss)``: ``output`` (N,) the log-probability
    of each target, ``loss`` the mean of ``-output``. ``log_prob(input)`` gives all (N,
    n_classes) log-probabilities; ``predict(input)`` the most likely class.

    Example:
        >>> asm = tg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
        >>> out = asm(tg.randn(4, 8), tg.tensor([0, 3, 7, 9]))
        >>> out.output.shape, out.loss.shape
        (tritongrad.Size([4]), tritongrad.Size([]))
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if (len(cutoffs) == 0 or cutoffs != sorted(cutoffs) or min(cutoffs) <= 0
                or max(cutoffs) > n_classes - 1 or len(set(cutoffs)) != len(cutoffs)
                or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList(
            Sequential(Linear(in_features, int(in_features // div_value ** (i + 1)), bias=False,
                              **kw),
                       Linear(int(in_features // div_value ** (i + 1)),
                              self.cutoffs[i + 1] - self.cutoffs[i], bias=False, **kw))
            for i in range(self.n_clusters))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        targ_dim = target_.ndim
        if targ_dim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {list(input_.shape)}")
        elif targ_dim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {list(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        input = input_ if targ_dim == 1 else input_.unsqueeze(0)
        target = target_ if targ_dim == 1 else target_.unsqueeze(0)
        # the head's entry for each row: its class (shortlist) or its cluster's entry; the
        # tails add the in-cluster log-probability of the rows whose target they hold
        t = target.detach().cpu().numpy().astype("int64")
        if t.size and (t.min() < 0 or t.max() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{t.min()}, {t.max()}] were found. ")
        gather = t.copy()
        output = input.new_zeros((t.shape[0],))
        for i in range(self.n_clusters):
            lo, hi = self.cutoffs[i], self.cutoffs[i + 1]
            rows = ((t >= lo) & (t < hi)).nonzero()[0]
            if rows.size == 0:
                continue
            gather[rows] = self.shortlist_size + i
            rows_t = _tensor(rows, device=input.device)
            local = F.log_softmax(self.tail[i](input.index_select(0, rows_t)), dim=1)
            relative = _tensor(t[rows] - lo, device=input.device).unsqueeze(1)
            output = output.index_add(0, rows_t, local.gather(1, relative).squeeze(1))
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(
            1, _tensor(gather, device=input.device).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if targ_dim == 1 else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i:
                                                self.shortlist_size + i + 1])
        return _cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probabilities of all classes: (N, n_classes), or (n_classes,) for an
        unbatched (in_features,) input."""
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row: (N,), or a scalar for an unbatched input."""
        return self.log_prob(input).argmax(dim=-1)
