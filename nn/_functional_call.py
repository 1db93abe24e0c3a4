"""``torch.func.functional_call`` and ``torch.func.stack_module_state`` (exported as
``tritongrad.func``): a module called as a function of its parameters and buffers, and the
stacked state of an ensemble of modules, to ``vmap`` over."""

from __future__ import annotations

from collections.abc import Sequence

from ..autograd.tensor import Tensor
from .module import Module
from .utils.stateless import _functional_call

__all__ = ["functional_call", "stack_module_state"]


def functional_call(module: Module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Performs a functional call on the module by replacing the module parameters and
    buffers with the provided ones.

    .. note:: If the module performs in-place operations on parameters/buffers, these will be
        reflected in the ``parameter_and_buffer_dicts`` input.

    .. note:: If the module has tied weights, whether or not functional_call respects the
        tying is determined by the tie_weights flag.

    Args:
        module (tritongrad.nn.Module): the module to call
        parameter_and_buffer_dicts (Dict[str, Tensor] or tuple of Dict[str, Tensor]): the
            parameters that will be used in the module call. If given a tuple of
            dictionaries, they must have distinct keys so that all dictionaries can be used
            together
        args (Any or tuple): arguments to be passed to the module call. If not a tuple,
            considered a single argument.
        kwargs (dict): keyword arguments to be passed to the module call
        tie_weights (bool, optional): If True, then parameters and buffers tied in the
            original model will be treated as tied in the reparameterized version. Therefore,
            if True and different values are passed for the tied parameters and buffers, it
            will error. If False, it will not respect the originally tied parameters and
            buffers unless the values passed for both weights are the same. Default: True.
        strict (bool, optional): If True, then the parameters and buffers passed in must
            match the parameters and buffers in the original module. Therefore, if True and
            there are any missing or unexpected keys, it will error. Default: False.

    Returns:
        Any: the result of calling ``module``.

    Example:
        >>> model = tg.nn.Linear(3, 3)
        >>> def compute_loss(params, x, t):
        ...     y = functional_call(model, params, x)
        ...     return tg.nn.functional.mse_loss(y, t)
        >>> params = {k: v.detach() for k, v in model.named_parameters()}
        >>> grad_weights = tritongrad.func.grad(compute_loss)(params, x, t)
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(  # noqa: TRY004 - PyTorch's type
            f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
            f"dicts, but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _stacked_leaf(tensors: tuple, name: str) -> Tensor:
    from ..autograd.ops.shape import stack
    requires = [t.requires_grad for t in tensors]
    if any(requires) and not all(requires):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    # a new leaf, unrelated to the models' parameters: it can go to an optimizer
    return result.detach().requires_grad_() if all(requires) else result


def stack_module_state(models) -> tuple[dict, dict]:
    """stack_module_state(models) -> params, buffers

    Prepares a list of tritongrad.nn.Modules for ensembling with :func:`vmap`.

    Given a list of ``M`` ``nn.Modules`` of the same class, returns two dictionaries that
    stack all of their parameters and buffers together, indexed by name. The stacked
    parameters are optimizable (i.e. they are new leaf nodes in the autograd history that are
    unrelated to the original parameters and can be passed directly to an optimizer).

    Example:
        >>> models = [tg.nn.Linear(3, 3) for _ in range(5)]
        >>> data = tg.randn(64, 3)
        >>> def wrapper(params, buffers, data):
        ...     return tritongrad.func.functional_call(models[0], (params, buffers), data)
        >>> params, buffers = stack_module_state(models)
        >>> output = tritongrad.func.vmap(wrapper, (0, 0, None))(params, buffers, data)
        >>> assert output.shape == (5, 64, 3)

    .. warning::
        All of the modules being stacked together must be the same (except for the values of
        their parameters/buffers). For example, they should be in the same mode (training vs
        eval).
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    states = []
    for named in ("named_parameters", "named_buffers"):
        per_model = [dict(getattr(m, named)()) for m in models]
        states.append({k: _stacked_leaf(tuple(d[k] for d in per_model), k)
                       for k in per_model[0]})
    return states[0], states[1]
