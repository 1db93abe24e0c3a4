"""The CTC loss primitive, ``CtcLossBackward0``: per-sample negative log-likelihoods of
(T, N, C) log-probabilities against padded targets, under nn.functional's ctc_loss.

Its forward and backward are host kernels (kernels/numpy/ctc.py): the recursions are
sequential in time and the Triton backend has no kernel for them, so a CUDA tensor takes a
host round trip, as the decompositions' do: ``runtime.memory.to_host`` queues the copy on the
current stream and waits for it, NumPy computes, and the result is copied back up on the
current stream (every CTC forward and backward on CUDA synchronizes the host with it). The
forward's alpha variables stay on the host, on the node, for the backward.

The gradient is PyTorch's (``ctc_loss_backward``), the derivative with respect to logits
behind a log_softmax (kernels/numpy/ctc.py says why), computed by ``_CtcLossBackward``, an op
of (grad, log_probs) recorded under ``create_graph=True`` whose own derivative is not
implemented, as PyTorch's ``_ctc_loss_backward``'s. Forward-mode AD is refused, as PyTorch's.
"""

from __future__ import annotations

import numpy as np

from ...kernels import host_values
from ...kernels.numpy import ctc as _ctc
from ..dispatch import Primitive, apply, call
from ..tensor import Tensor, array_meta
from .creation import host_to

__all__ = ["ctc_loss_rows"]


def _on_host(a) -> np.ndarray:
    """Backend array ``a``'s values in a NumPy array (a CUDA array's copied once the current
    stream's work is done)."""
    if array_meta(a)[0].type == "cpu":
        return host_values(a)
    from ...runtime import memory
    return memory.to_host(a)


def _like(values: np.ndarray, like):
    """NumPy ``values`` as a backend array of ``like``'s dtype on its device."""
    dev, dt = array_meta(like)
    return host_to(values, dt, dev)._data


class CtcLossBackward0(Primitive):
    """nll = ctc_loss(log_probs, targets, ...) per sample: d log_probs = _CtcLossBackward."""

    __slots__ = ()
    op_name = "_ctc_loss"
    save_inputs = (0,)
    fused = True  # (the rule on arrays is one host kernel; recorded, it is one node too)

    @staticmethod
    def forward(ctx, k, log_probs, labels, input_lengths, target_lengths, blank, zero_infinity):
        nll, log_alpha = _ctc.ctc_loss(_on_host(log_probs), labels, input_lengths,
                                       target_lengths, blank)
        ctx.nll, ctx.log_alpha = nll, log_alpha
        ctx.args = (labels, input_lengths, target_lengths, blank, zero_infinity)
        return _like(nll, log_probs)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return call(k, _CtcLossBackward, (g, saved[0]), ctx.nll, ctx.log_alpha, *ctx.args)


class _CtcLossBackward(Primitive):
    """PyTorch's ``_ctc_loss_backward``: the gradient of CtcLossBackward0 as an op of (grad,
    log_probs). Its grad_fn is PyTorch's ``NotImplemented``: differentiating it raises."""

    __slots__ = ()
    op_name = "_ctc_loss_backward"

    def name(self) -> str:
        return "NotImplemented"

    @staticmethod
    def forward(ctx, k, g, log_probs, nll, log_alpha, labels, input_lengths, target_lengths,
                blank, zero_infinity):
        grad = _ctc.ctc_loss_backward(_on_host(g), _on_host(log_probs), labels, input_lengths,
                                      target_lengths, nll, log_alpha, blank, zero_infinity)
        return _like(grad, log_probs)

    @staticmethod
    def vjp(ctx, k, saved, gg):
        raise RuntimeError("derivative for aten::_ctc_loss_backward is not implemented")


def ctc_loss_rows(log_probs: Tensor, labels: np.ndarray, input_lengths: np.ndarray,
                  target_lengths: np.ndarray, blank: int, zero_infinity: bool) -> Tensor:
    """Each sample's CTC negative log-likelihood, (N,), of (T, N, C) float32/float64
    ``log_probs`` against host int64 ``labels`` (N, S) (sample n's targets in its first
    ``target_lengths[n]`` entries), the arguments already checked (nn.functional.ctc_loss
    checks them); inf where no alignment exists."""
    return apply(CtcLossBackward0, (log_probs,), labels, input_lengths, target_lengths,
                 int(blank), bool(zero_infinity))
