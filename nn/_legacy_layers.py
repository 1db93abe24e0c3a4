"""Two legacy layers ``torch.nn`` still exports: ``CrossMapLRN2d`` (Lua torch's local
response normalisation across channels) and ``NLLLoss2d`` (an alias of ``NLLLoss``)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .loss import NLLLoss
from .module import Module

__all__ = ["CrossMapLRN2d", "NLLLoss2d"]


def cross_map_lrn2d(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                    k: float = 1.0) -> Tensor:
    """input / (k + alpha / size * S) ** beta, S a running sum of squares over channels.

    S follows PyTorch's recurrence exactly (pre = (size - 1) // 2 + 1): S_0 = sum of the
    squares of channels [0, pre); S_c = S_{c-1} + x_{c+pre-1}^2 (while that channel exists)
    - x_{c-pre}^2 (only for c > pre). The last condition, carried over from 1-based Lua code,
    never removes channel 0 from later windows; PyTorch's results have that, so these do too.
    """
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    from ..autograd.ops import stack
    channels = input.shape[1]
    sq = input * input
    pre = int((size - 1) / 2 + 1)
    s = sq[:, 0]
    for c in range(1, min(pre, channels)):
        s = s + sq[:, c]
    sums = [s]
    for c in range(1, channels):
        if c < channels - pre + 1:
            s = s + sq[:, c + pre - 1]
        if c > pre:
            s = s - sq[:, c - pre]
        sums.append(s)
    scale = stack(sums, 1) * (alpha / size) + k
    return input * scale ** -beta


class CrossMapLRN2d(Module):
    """Local response normalisation across the channels of a 4-D input, as
    ``torch.nn.CrossMapLRN2d`` (see ``cross_map_lrn2d``; ``LocalResponseNorm`` is the modern
    layer, with a centred window).

    Example:
        >>> tg.nn.CrossMapLRN2d(3)(tg.ones(1, 4, 2, 2)).shape
        tritongrad.Size([1, 4, 2, 2])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class NLLLoss2d(NLLLoss):
    """Deprecated alias of ``NLLLoss`` (which takes (N, C, H, W) inputs itself)."""
