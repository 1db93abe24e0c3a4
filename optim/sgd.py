"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from ..autograd.ops.creation import empty
from ..autograd.sparse import add_into_, is_sparse
from ..kernels import multi_tensor
from .optimizer import (Optimizer, bump_versions, check_fused_options, check_lr,
                        fused_kernel, host_scalar, zeros_like)

__all__ = ["SGD"]


_NO_STATE: dict = {}  # what a parameter without state reads (never written)


class SGD(Optimizer):
    r"""Stochastic gradient descent (optionally with momentum), as ``torch.optim.SGD``.

    For each parameter p with gradient g, at step t (buffers start at the first step)::

        g = -g                                  if maximize
        g = g + weight_decay * p                if weight_decay != 0
        if momentum != 0:
            b = g                               at t = 1
            b = momentum * b + (1 - dampening) * g   for t > 1
            g = g + momentum * b                if nesterov   else   g = b
        p = p - lr * g

    Args:
        params: parameters or parameter groups.
        lr: learning rate (default 1e-3).
        momentum: momentum factor (default 0).
        dampening: dampening of the momentum (default 0).
        weight_decay: L2 penalty (default 0).
        nesterov: Nesterov momentum (needs momentum > 0 and dampening = 0).
        maximize: maximize the objective instead of minimizing.
        foreach: None (default) or True: on CUDA, the parameters of a group are updated
            by the backend's multi-tensor kernel, one launch per (device, dtype) (as
            PyTorch's foreach implementation batches them; the same results as one at a
            time); False: one update per parameter.
        differentiable: record the update in the autograd graph, so that gradients flow
            through ``step()`` (into a gradient computed with ``create_graph=True``, or into
            the parameters, which may then be non-leaf tensors).
        fused: None (default) uses the backend's fused ``sgd_step`` kernel when it has one;
            True requires it; False uses Tensor ops.

    Example:
        >>> model = tg.nn.Linear(3, 1)
        >>> opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> model(tg.randn(4, 3)).sum().backward()
        >>> opt.step(); opt.zero_grad()
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach=None, differentiable: bool = False, fused=None):
        check_lr(lr)
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_fused_options(fused, foreach, differentiable)
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov,
                                  "maximize": maximize, "foreach": foreach,
                                  "differentiable": bool(differentiable), "fused": fused})

    def _multi_tensor_ok(self, group: dict) -> bool:
        return (group["foreach"] is not False and group["fused"] is not False
                and not group["differentiable"])

    def _multi_tensor_update(self, params: list, group) -> list:
        """Updates the parameters the backend's multi-tensor ``sgd_step`` takes, a launch per
        (device, dtype, whether their momentum buffers are new); returns the others (each to
        ``_update``). The kernel checks the arrays (dtypes, layouts, devices) and refuses,
        launching nothing, a batch it cannot take."""
        momentum = group["momentum"]
        batches: dict = {}
        rest = []
        seen = set()
        for p in params:  # (per parameter per step: kept to a few operations)
            grad = p.grad
            if p.dtype.is_complex or grad.dtype is not p.dtype or is_sparse(grad) \
                    or id(p) in seen:  # (listed twice: in turn)
                rest.append(p)
                continue
            buf = self.state.get(p, _NO_STATE).get("momentum_buffer") if momentum else None
            seen.add(id(p))
            batches.setdefault((p.device, p.dtype, buf is None), []).append((p, buf))
        lr = host_scalar(group["lr"])
        for (device, _, first), batch in batches.items():
            multi = getattr(multi_tensor(device), "sgd_step", None)
            ps = [p for p, _ in batch]
            bufs = None
            if momentum:  # (a new buffer is written whole by the kernel: the gradient)
                bufs = [empty(p.shape, dtype=p.dtype, device=p.device) if b is None else b
                        for p, b in batch]
            try:
                if multi is not None:
                    multi([p._data for p in ps], [p.grad._data for p in ps],
                          None if bufs is None else [b._data for b in bufs], lr, momentum,
                          group["dampening"], group["weight_decay"], group["nesterov"],
                          group["maximize"], first)
            except TypeError:  # arrays the kernel does not take (dtypes, layouts, devices)
                multi = None
            if multi is None:  # one at a time
                rest += ps
                continue
            for p, buf in zip(ps, bufs or [None] * len(ps)):
                bump_versions(p, buf)
                if momentum:
                    self.state[p]["momentum_buffer"] = buf
        return rest

    def _sparse_grad_message(self, group: dict) -> str | None:
        # PyTorch's fused SGD kernel refuses sparse gradients; its other paths take them
        return "`_fused_sgd` does not support sparse gradients" if group["fused"] else None

    def _update(self, p, group) -> None:
        if is_sparse(p.grad):
            return self._update_sparse(p, group)
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        grad = p.grad
        # (read without indexing: ``self.state`` is a defaultdict, and PyTorch's SGD keeps no
        # state at all, not even an empty dict, for a parameter without momentum)
        buf = self.state.get(p, _NO_STATE).get("momentum_buffer")
        first = buf is None
        # (a differentiable step is Tensor ops that autograd records, Note [differentiable])
        fused = None if group["differentiable"] else \
            fused_kernel(group["fused"], "sgd_step", p, grad, buf)
        if fused is not None:
            if momentum != 0 and first:
                buf = zeros_like(p)  # the kernel writes the first buffer (= g) itself
            fused(p._data, grad._data, None if buf is None else buf._data, host_scalar(lr),
                  momentum, dampening, wd, nesterov, maximize, first)
            bump_versions(p, buf)
        else:
            g = -grad if maximize else grad
            if wd != 0:
                g = g.add(p, alpha=wd)
            if momentum != 0:
                if first:
                    buf = g.detach().clone()
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g.add(buf, alpha=momentum) if nesterov else buf
            p.add_(g, alpha=-lr)
        if momentum != 0:
            self.state[p]["momentum_buffer"] = buf

    def _update_sparse(self, p, group) -> None:
        """The update for a sparse gradient (``nn.Embedding(sparse=True)``): the same rule,
        touching only the gradient's rows; the momentum buffer is sparse too (coalesced each
        step, so it holds each row once). Weight decay would make the gradient dense, and is
        refused as PyTorch refuses it."""
        if group["weight_decay"] != 0:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        momentum = group["momentum"]
        g = -p.grad if group["maximize"] else p.grad
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = g.detach().clone().coalesce()
            else:
                buf = buf.mul(momentum).add(g * (1 - group["dampening"])).coalesce()
            state["momentum_buffer"] = buf
            g = g.add(buf * momentum) if group["nesterov"] else buf
        add_into_(p, g, alpha=-group["lr"])
