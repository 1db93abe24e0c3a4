"""``torch.overrides``: the ``__torch_function__`` protocol for Tensor subclasses, tensor-like
objects and function modes (the machinery: autograd/overrides.py)."""

from .autograd.overrides import (BaseTorchFunctionMode, TorchFunctionMode,  # noqa: F401
                                 _get_current_function_mode, _get_current_function_mode_stack,
                                 _pop_mode, _pop_mode_temporarily, _push_mode,
                                 enable_reentrant_dispatch, get_default_nowrap_functions,
                                 get_ignored_functions, get_overridable_functions,
                                 get_testing_overrides, handle_torch_function,
                                 has_torch_function, has_torch_function_unary,
                                 has_torch_function_variadic, is_tensor_like,
                                 is_tensor_method_or_property, redispatch_function,
                                 resolve_name, wrap_torch_function)
from .autograd.overrides import __all__  # noqa: F401
