"""``tritongrad.func``: PyTorch's ``torch.func`` function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` and
``linearize`` are built on the autograd tape (autograd/func.py: Note [Function transforms on
the tape]); they nest (``grad(grad(f))``, ``jacrev(jacrev(f))``, ``vmap(grad(f))``), take
pytrees (tuples, lists, dicts) of Tensors, and need no input to require grad. ``vmap`` runs
``func`` once per entry of the mapped dimension and stacks the results: PyTorch's semantics,
a loop's speed (autograd/vmap.py). ``functional_call`` and ``stack_module_state`` call
modules as functions of their state (nn/_functional_call.py); ``replace_all_batch_norm_modules_``
makes a model's batch norms usable under ``vmap``.

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
from .nn.module import Module
from .nn.normalization import _BatchNorm, _InstanceNorm

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value",
           "hessian", "jacfwd", "jacrev", "jvp", "linearize", "replace_all_batch_norm_modules_",
           "stack_module_state", "vjp", "vmap"]


def functionalize(func, *, remove: str = "mutations"):
    """PyTorch's functionalization pass, for graph capture: the function with its mutations
    replaced by out-of-place ops, then copied back into the inputs it mutated. Run eagerly (as
    tritongrad runs every program), that is the function itself: the same results and the
    same mutated inputs. ``remove``: "mutations" or "mutations_and_views"."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n     remove='mutations': "
                           f"all inplace and out= operators will be removed from the program, "
                           f"and replaced with their out-of-place equivalents.\n     "
                           f"remove='mutations_and_views': In addition to the above, all "
                           f"aliasing operators {{view}} will be replaced with their "
                           f"non-aliasing counterparts, {{view}}_copy.\n")
    return func


def debug_unwrap(tensor, *, recurse: bool = True):
    """The plain tensor under a torch.func transform's wrapper, for debugging; tritongrad's
    transforms do not wrap tensors, so ``tensor`` itself."""
    return tensor


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Stops every batch norm module in ``root`` (BatchNorm1d/2d/3d, SyncBatchNorm; not the
    instance norms, as in PyTorch) from tracking running statistics, in place: their
    ``running_mean``, ``running_var`` and ``num_batches_tracked`` become None and
    ``track_running_stats`` False, so they normalise with each batch's own statistics, in
    training and in eval mode. Under ``vmap`` that is what makes them correct: each mapped
    entry is its own batch, and there is no shared running buffer for all of them to update.

    Args:
        root: the module whose submodules (and itself) are changed.

    Returns:
        ``root``.

    Example:
        >>> model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4))
        >>> _ = replace_all_batch_norm_modules_(model)
        >>> vmap(model)(tg.randn(2, 5, 3)).shape
        tritongrad.Size([2, 5, 4])
    """
    for module in root.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm) \
                and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
