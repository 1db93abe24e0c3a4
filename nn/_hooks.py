"""Module backward hooks (``register_full_backward_hook``, ``register_full_backward_pre_hook``),
as PyTorch's ``BackwardHook`` builds them: two identity ``Function``s around a call.

* the module's tensor inputs that require grad pass through a ``_GradHook`` (the inputs'
  hook): its backward sees the gradients with respect to them (``grad_input``), which only
  exist once the gradients of all the outputs have flowed through the module;
* its tensor outputs pass through another (the outputs' hook): its backward sees
  ``grad_output`` first, runs the backward pre-hooks (which may replace it) and keeps it for
  the inputs' hook.

When no input requires grad there is no inputs' hook: the outputs' hook calls the full hooks
with a ``grad_input`` of Nones, as PyTorch does.
"""

from __future__ import annotations

from ..autograd.function import Function
from ..autograd.tensor import Tensor

__all__ = ["BackwardHook"]


def _replace(kind: str, old: tuple, new) -> tuple:
    """A hook's result: None keeps ``old``; else a tuple of the same length."""
    if new is None:
        return old
    new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
    if len(new) != len(old):
        raise RuntimeError(f"Backward hook returned an invalid number of {kind}s - got "
                           f"{len(new)}, but expected {len(old)}")
    return new


class _GradHook(Function):
    """Passes tensors through unchanged; its backward hands their gradients to the
    BackwardHook method named ``on_grad`` (``_on_grad_output`` or ``_on_grad_input``)."""

    @staticmethod
    def forward(ctx, hook, on_grad, *tensors):
        ctx.on_grad = getattr(hook, on_grad)
        ctx.set_materialize_grads(False)
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None, None) + ctx.on_grad(grads)


class BackwardHook:
    """One module call's backward hooks: ``setup_input_hook`` wraps the call's arguments,
    ``setup_output_hook`` its result."""

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.n_inputs = 0
        self.input_slots = None  # positions, among the tensor arguments, of those hooked
        self.n_outputs, self.output_slots = 0, []
        self.grad_output = None

    def setup_input_hook(self, args: tuple) -> tuple:
        tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(tensors)
        hooked = [i for i in tensors if args[i].requires_grad]
        if not hooked:
            return args
        self.input_slots = [tensors.index(i) for i in hooked]
        outs = _GradHook.apply(self, "_on_grad_input", *(args[i] for i in hooked))
        args = list(args)
        for i, t in zip(hooked, outs):
            args[i] = t
        return tuple(args)

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        items = [result] if single else list(result) if isinstance(result, (tuple, list)) \
            else None
        if items is None:
            return result  # a structure the hooks cannot see into: passed through untouched
        hooked = [i for i, a in enumerate(items) if isinstance(a, Tensor) and a.requires_grad]
        self.n_outputs = len(items)
        self.output_slots = hooked
        if not hooked:
            return result
        outs = _GradHook.apply(self, "_on_grad_output", *(items[i] for i in hooked))
        for i, t in zip(hooked, outs):
            items[i] = t
        return items[0] if single else type(result)(items)

    def _on_grad_output(self, grads: tuple) -> tuple:
        full = [None] * self.n_outputs
        for slot, g in zip(self.output_slots, grads):
            full[slot] = g
        grad_output = tuple(full)
        for hook in self.pre_hooks:
            grad_output = _replace("grad_output", grad_output, hook(self.module, grad_output))
        self.grad_output = grad_output
        if self.input_slots is None and self.hooks:
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, none, grad_output)
                if res is not None and any(r is not None for r in res):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
        return tuple(grad_output[slot] for slot in self.output_slots)

    def _on_grad_input(self, grads: tuple) -> tuple:
        full = [None] * self.n_inputs
        for slot, g in zip(self.input_slots, grads):
            full[slot] = g
        grad_input = tuple(full)
        grad_output = self.grad_output if self.grad_output is not None \
            else (None,) * self.n_outputs
        for hook in self.hooks:
            grad_input = _replace("grad_input", grad_input,
                                  hook(self.module, grad_input, grad_output))
        return tuple(grad_input[slot] for slot in self.input_slots)
