"""``tritongrad.func``: PyTorch's ``torch.func`` function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` and
``linearize`` are built on the autograd tape (autograd/func.py: Note [Function transforms on
the tape]); they nest (``grad(grad(f))``, ``jacrev(jacrev(f))``, ``vmap(grad(f))``), take
pytrees (tuples, lists, dicts) of Tensors, and need no input to require grad. ``vmap`` runs
``func`` once per entry of the mapped dimension and stacks the results: PyTorch's semantics,
a loop's speed (autograd/vmap.py). ``functional_call`` and ``stack_module_state`` call
modules as functions of their state (nn/_functional_call.py).

Example:
    >>> from tritongrad.func import functional_call, grad, vmap
    >>> model = tg.nn.Linear(3, 1)
    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> def loss(params, x, y):
    ...     return ((functional_call(model, params, (x,)) - y) ** 2).mean()
    >>> x, y = tg.randn(8, 3), tg.randn(8, 1)
    >>> per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    >>> per_sample["weight"].shape
    tritongrad.Size([8, 1, 3])
"""

from .autograd.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from .autograd.vmap import vmap
from .nn._functional_call import functional_call, stack_module_state

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "stack_module_state", "vjp", "vmap"]
