"""The few names of PyTorch's ``torch._C`` that Python code written for PyTorch reaches for:
the ``__torch_function__`` switches (autograd/overrides.py)."""

from .autograd.overrides import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                                 _disabled_torch_function_impl, _is_torch_function_enabled,
                                 _is_torch_function_mode_enabled, _len_torch_function_stack)

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass"]
