"""The categorical distribution."""

from __future__ import annotations

import tritongrad as torch
from tritongrad import Size, Tensor

from . import constraints
from .distribution import Distribution
from .utils import _one_of, _ProbsLogits

__all__ = ["Categorical"]


class Categorical(_ProbsLogits, Distribution):
    r"""Creates a categorical distribution parameterized by either ``probs`` or ``logits``
    (but not both).

    Samples are integers from ``{0, ..., K-1}`` where ``K`` is ``probs.size(-1)``. If
    ``probs`` is 1-dimensional with length ``K``, each element is the relative probability of
    sampling the class at that index; if it is N-dimensional, the first N-1 dimensions are
    treated as a batch of relative probability vectors.

    ``probs`` must be non-negative, finite and have a non-zero sum, and it will be normalized
    to sum to 1 along the last dimension. ``logits`` will be interpreted as unnormalized log
    probabilities and can therefore be any real number; they are normalized so that the
    resulting probabilities sum to 1 along the last dimension.

    Args:
        probs (Tensor): event probabilities
        logits (Tensor): event log probabilities (unnormalized)

    Example::

        >>> m = Categorical(torch.tensor([0.25, 0.25, 0.25, 0.25]))
        >>> m.sample()  # equal probability of 0, 1, 2, 3
        tensor(3)
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            # normalize
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.ndimension() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Categorical, batch_shape, _instance, {"probs": 1, "logits": 1})
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return self.mean

    def sample(self, sample_shape=()) -> Tensor:
        sample_shape = Size(sample_shape)
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        samples_2d = torch.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = torch.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        # (a probability of 0 has logit -inf: clamp so that 0 * logit is 0, not nan)
        min_real = torch.finfo(self.logits.dtype).min
        logits = torch.clamp(self.logits, min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = torch.arange(self._num_events, dtype=torch.long, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
