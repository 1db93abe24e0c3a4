"""Muon: momentum orthogonalised by a Newton-Schulz iteration, for 2-D parameters."""

from __future__ import annotations

import math

from ..autograd.ops import addmm
from .optimizer import Optimizer

__all__ = ["Muon"]

# The quintic's coefficients, chosen (by Muon's authors) to maximise its slope at zero so that
# five steps push every singular value into roughly [0.7, 1.2]; PyTorch's defaults.
DEFAULT_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
DEFAULT_NS_STEPS = 5
EPS = 1e-7


def zeropower_via_newtonschulz(g, ns_coefficients=DEFAULT_NS_COEFFICIENTS,
                               ns_steps: int = DEFAULT_NS_STEPS, eps: float = EPS):
    """An approximate orthogonalisation U S' V^T (S' near the identity) of the 2-D ``g`` = U S V^T.

    ``ns_steps`` iterations of X <- a X + (b A + c A^2) X, A = X X^T, in bfloat16 as PyTorch's
    Muon runs them, starting from X = g / max(||g||_F, eps) (so every singular value is <= 1),
    on the wide orientation (a tall ``g`` is transposed so that A is the smaller Gram matrix).

    Raises:
        ValueError: PyTorch's messages for ``ns_steps >= 100``, a non-2-D ``g`` or not three
            coefficients.
    """
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if g.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = g.shape[0] > g.shape[1]
    x = g.bfloat16()
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        # (addmm, as PyTorch: b A + c A A and a X + (..) X each rounded to bfloat16 once)
        x = addmm(x, addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    # scales the update so its RMS does not depend on the matrix's aspect ratio ("original",
    # Keller Jordan's) or matches AdamW's typical RMS ("match_rms_adamw", Moonshot's)
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))


class Muon(Optimizer):
    r"""Muon, as ``torch.optim.Muon``: SGD momentum whose update is orthogonalised.

    For each 2-D parameter p with gradient g (the buffer B starts at zero)::

        B = momentum * B + (1 - momentum) * g          (B.lerp_(g, 1 - momentum))
        U = (1 - momentum) * g + momentum * B          if nesterov   else   U = B
        O = NS(U)                                      (zeropower_via_newtonschulz, bfloat16)
        p = p * (1 - lr * weight_decay)                (decoupled weight decay)
        p = p - lr_adj * O     lr_adj = lr * sqrt(max(1, rows / cols))       ("original")
                               lr_adj = 0.2 * lr * sqrt(max(rows, cols))     ("match_rms_adamw")

    Args:
        params: 2-D parameters (or groups of them); biases and embeddings belong to another
            optimizer (AdamW).
        lr: learning rate (default 1e-3).
        weight_decay: decoupled weight decay (default 0.1).
        momentum: momentum factor (default 0.95).
        nesterov: Nesterov momentum (default True).
        ns_coefficients: the iteration's (a, b, c) (default (3.4445, -4.7750, 2.0315)).
        eps: floor of the norm the iteration starts by dividing by (default 1e-7).
        ns_steps: Newton-Schulz steps (default 5, fewer than 100).
        adjust_lr_fn: ``None`` or ``"original"``, or ``"match_rms_adamw"``.

    Raises:
        ValueError: a negative lr, momentum or weight decay, an unknown ``adjust_lr_fn`` or a
            parameter that is not 2-D, with PyTorch's messages.

    Example:
        >>> model = tg.nn.Linear(4, 3, bias=False)
        >>> opt = tg.optim.Muon(model.parameters(), lr=0.02)
        >>> model(tg.randn(8, 4)).pow(2).mean().backward()
        >>> opt.step()
    """

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "Muon does not support sparse gradients"

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = DEFAULT_NS_COEFFICIENTS,
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                                  "nesterov": nesterov, "ns_coefficients": ns_coefficients,
                                  "eps": eps, "ns_steps": ns_steps,
                                  "adjust_lr_fn": adjust_lr_fn})
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _update(self, p, group) -> None:
        if p.is_complex():
            raise RuntimeError("Muon does not support complex parameters")
        grad = p.grad
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        momentum = group["momentum"]
        lr = float(group["lr"])
        state = self.state[p]
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = grad.new_zeros(tuple(grad.shape))
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        ortho = zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"],
                                           group["eps"])
        p.mul_(1 - lr * group["weight_decay"])
        p.add_(ortho.to(p.dtype), alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
