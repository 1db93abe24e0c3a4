"""``nn.utils.weight_norm`` / ``remove_weight_norm``: PyTorch's older, hook-based weight
normalization (deprecated there in favour of ``nn.utils.parametrizations.weight_norm``):
the parameter ``name`` is replaced by ``name_g`` and ``name_v``, and a forward pre-hook
recomputes ``module.name = g * v / ||v||`` before each forward."""

from __future__ import annotations

import warnings

from ..module import Module
from ..parameter import Parameter
from .parametrizations import _weight_norm, norm_except_dim

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]


class WeightNorm:
    """The forward pre-hook of ``weight_norm`` on the parameter ``name``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        # the weight's magnitude and direction become the parameters
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2,
                                                                         fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Applies weight normalization to a parameter in the given module:
    ``w = g * v / ||v||`` (Salimans & Kingma, 2016), with the magnitude ``name_g`` and the
    direction ``name_v`` as parameters and ``name`` recomputed before every forward.

    Deprecated (as in PyTorch): use ``nn.utils.parametrizations.weight_norm``.

    Args:
        module: containing module.
        name: name of the weight parameter. Default: ``"weight"``.
        dim: the dimension over which the norm is not taken; None: the whole tensor.

    Example::

        >>> m = weight_norm(tg.nn.Linear(20, 40), name="weight")  # doctest: +SKIP
        >>> m.weight_g.shape, m.weight_v.shape  # doctest: +SKIP
        (tritongrad.Size([40, 1]), tritongrad.Size([40, 20]))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Removes the weight normalization reparameterization from a module: ``name`` is a
    parameter again, holding the current normalized weight."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
