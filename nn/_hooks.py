"""Module backward hooks (``register_full_backward_hook``, ``register_full_backward_pre_hook``),
built as PyTorch's ``BackwardHook`` builds them: an identity ``Function``
(``BackwardHookFunction``) around the call's tensor inputs, another around its tensor outputs,
and the hooks as post-hooks of their graph nodes.

* the outputs' node runs first in backward: its post-hook sees ``grad_output``, runs the
  backward pre-hooks (which may replace it) and keeps it for the inputs' node;
* the inputs' node runs once the gradients of all the outputs have flowed through the module:
  its post-hook sees the gradients with respect to the inputs (``grad_input``) and calls the
  full backward hooks with both, then forgets ``grad_output``.

Forgetting it matters twice: a later backward that reaches the inputs' node without passing
through the outputs (double backward through the module's first gradients) calls no hook,
and under ``create_graph=True`` the kept ``grad_output``, whose graph leads back to these
nodes, would otherwise keep the whole graph alive through the hooks.

When no input requires grad there is no inputs' node: the outputs' post-hook calls the full
hooks with a ``grad_input`` of Nones (and warns that it does), as PyTorch does.

Otherwise every tensor argument gets a gradient in ``grad_input``: zeros for one that does
not require grad or that the outputs do not depend on, as PyTorch's (its identity Function
takes all the tensor arguments and materializes missing gradients as zeros). The zeros
given to an input that requires grad reach it, so its ``.grad`` becomes zeros, also as
PyTorch's.
"""

from __future__ import annotations

import warnings

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.tensor import Tensor
from ..autograd.ops.creation import zeros

__all__ = ["BackwardHook", "BackwardHookFunction"]


def _replace(what: str, old: tuple, new) -> tuple:
    """A hook's result: None keeps ``old``; else a tuple of the same length (``what``: the
    error's words for the hook and the values)."""
    if new is None:
        return old
    new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
    if len(new) != len(old):
        raise RuntimeError(f"{what} got {len(new)}, but expected {len(old)}")
    return new


class BackwardHookFunction(Function):
    """Identity on tensors; its node (``BackwardHookFunctionBackward``) carries the hooks.
    Gradients that are None stay None (no zeros are made for them)."""

    @staticmethod
    def forward(ctx, *tensors):
        ctx.set_materialize_grads(False)
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack(slots: list, values, size: int) -> tuple:
    """``values`` placed at ``slots`` of a tuple of ``size`` Nones."""
    full = [None] * size
    for slot, v in zip(slots, values):
        full[slot] = v
    return tuple(full)


class BackwardHook:
    """One module call's backward hooks: ``setup_input_hook`` wraps the call's positional
    arguments, ``setup_output_hook`` its result."""

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.n_inputs, self.input_slots = 0, None  # positions of the hooked arguments
        self.input_zeros = ()  # (position, shape, dtype, device) of every tensor argument
        self.n_outputs, self.output_slots = 0, None
        self.grad_output = None  # from the outputs' node, until the inputs' node uses it

    def _wrap(self, items: list, post_hook) -> list | None:
        """Passes the tensors of ``items`` that require grad through a BackwardHookFunction
        whose node gets ``post_hook``; returns their positions (None when there are none)."""
        slots = [i for i, a in enumerate(items) if isinstance(a, Tensor) and a.requires_grad]
        if not slots or not is_grad_enabled():
            return None
        outs = BackwardHookFunction.apply(*(items[i] for i in slots))
        if not isinstance(outs, tuple):
            outs = (outs,)

        def hook(grad_inputs: tuple, grad_outputs: tuple):
            # (named as PyTorch's wrapper: the engine's errors about a replaced gradient say
            # "hook 'hook' has changed the size of value")
            return post_hook(grad_inputs, grad_outputs)
        outs[0].grad_fn.register_hook(hook)
        for i, t in zip(slots, outs):
            items[i] = t
        return slots

    def setup_input_hook(self, args: tuple) -> tuple:
        items = list(args)
        self.n_inputs = len(items)
        self.input_slots = self._wrap(items, self._on_grad_input)
        if self.input_slots is None:
            return args
        self.input_zeros = tuple((i, a.shape, a.dtype, a.device) for i, a in enumerate(args)
                                 if isinstance(a, Tensor))
        return tuple(items)

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        items = [result] if single else list(result) if isinstance(result, (tuple, list)) \
            else None
        if items is None:
            return result  # a structure the hooks cannot see into: passed through untouched
        self.n_outputs = len(items)
        self.output_slots = self._wrap(items, self._on_grad_output)
        if self.output_slots is None:
            return result
        return items[0] if single else type(result)(items)

    def _on_grad_output(self, _grad_inputs: tuple, grads: tuple):
        """The outputs' node post-hook: ``grads`` flow into the module's outputs."""
        grad_output = _pack(self.output_slots, grads, self.n_outputs)
        for hook in self.pre_hooks:
            grad_output = _replace("Backward pre hook returned an invalid number of "
                                   "grad_output,", grad_output, hook(self.module, grad_output))
        self.grad_output = grad_output
        if self.input_slots is None:
            warnings.warn("Full backward hook is firing when gradients are computed with "
                          "respect to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=5)
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, none, grad_output)
                if res is not None and any(r is not None for r in res):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_output = None
        return tuple(grad_output[slot] for slot in self.output_slots)

    def _on_grad_input(self, grads: tuple, _grad_outputs: tuple):
        """The inputs' node post-hook: ``grads`` flow to the module's inputs."""
        if self.grad_output is None:
            return None  # reached without passing through the outputs (double backward)
        grad_input = list(_pack(self.input_slots, grads, self.n_inputs))
        for i, shape, dtype, device in self.input_zeros:
            if grad_input[i] is None:
                grad_input[i] = zeros(shape, dtype=dtype, device=device)
        grad_input = tuple(grad_input)
        for hook in self.hooks:
            grad_input = _replace("Backward hook returned an invalid number of grad_input,",
                                  grad_input, hook(self.module, grad_input, self.grad_output))
        self.grad_output = None
        return tuple(grad_input[slot] for slot in self.input_slots)
