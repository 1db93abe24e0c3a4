"""Lazy modules: ``LazyModuleMixin`` and ``LazyLinear``, whose parameters' shapes are
inferred from the first input (PyTorch's ``torch.nn.modules.lazy``).

A lazy module starts with ``UninitializedParameter`` s; a forward pre-hook calls its
``initialize_parameters(*input)`` before the first forward, which materializes them, then the
hook removes itself and the module becomes ``cls_to_become`` (``LazyLinear`` a ``Linear``).
A state dict loads into a module that is still uninitialized: a load pre-hook materializes
each uninitialized parameter with the shape of its entry (then copied in as usual); the module
stays lazy until its first forward, as PyTorch's does. Saving an uninitialized module saves its
``UninitializedParameter`` s as they are (Module._save_to_state_dict).
"""

from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..autograd.tensor import Tensor
from .layers import Linear
from .parameter import UninitializedParameter, UninitializedTensorMixin, is_lazy

__all__ = ["LazyLinear", "LazyModuleMixin"]


class LazyModuleMixin:
    """A mixin for modules that lazily initialize parameters ("lazy modules"): they infer
    the shapes of their parameters from the first input to their forward, calling
    ``initialize_parameters``; until then they hold ``UninitializedParameter`` s. After it
    the module becomes its ``cls_to_become`` (when set), a regular module.

    Example::

        >>> m = tg.nn.LazyLinear(3)
        >>> m(tg.randn(2, 5)).shape, type(m).__name__, m.weight.shape
        (tritongrad.Size([2, 3]), 'Linear', tritongrad.Size([3, 5]))
    """

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs) -> None:
        """Materializes each uninitialized parameter or buffer that ``state_dict`` has an
        initialized entry for, with that entry's shape (its values are copied afterwards)."""
        for registry in (self._parameters, self._buffers):
            for name, t in registry.items():
                key = prefix + name
                if t is not None and is_lazy(t) and key in state_dict \
                        and not is_lazy(state_dict[key]):
                    with no_grad():
                        t.materialize(state_dict[key].shape)

    def has_uninitialized_params(self) -> bool:
        """Whether the module still has uninitialized parameters or buffers."""
        own = list(self._parameters.values()) + list(self._buffers.values())
        return any(isinstance(t, UninitializedTensorMixin) for t in own)

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Initializes the parameters from the first input (lazy modules implement it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    @staticmethod
    def _infer_parameters(module, args, kwargs=None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(module).__name__} has not been fully "
                               f"initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` module whose ``in_features`` is inferred from the last dimension of its
    first input; its ``weight`` and ``bias`` are ``UninitializedParameter`` s until then,
    and it becomes a ``Linear`` (initialized as one) after the first forward.

    Args:
        out_features: size of each output sample.
        bias: learn an additive bias (default True).
        device, dtype: where and how the parameters are created.
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Materializes ``weight`` (out_features, in_features) and ``bias`` with
        ``in_features = input.shape[-1]``, initialized as ``Linear``'s."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
