"""The few names of PyTorch's ``torch._C`` that Python code written for PyTorch reaches for:
the ``__torch_function__`` switches (autograd/overrides.py) and the grad-mode and anomaly
switches (autograd/grad_mode.py, autograd/settings.py)."""

from .autograd.overrides import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                                 _disabled_torch_function_impl, _get_function_stack_at,
                                 _is_torch_function_enabled, _is_torch_function_mode_enabled,
                                 _len_torch_function_stack, _pop_torch_function_stack,
                                 _push_on_torch_function_stack)
from .autograd.overrides import has_torch_function as _has_torch_function  # noqa: F401
from .autograd.overrides import \
    has_torch_function_unary as _has_torch_function_unary  # noqa: F401
from .autograd.overrides import \
    has_torch_function_variadic as _has_torch_function_variadic  # noqa: F401
from .autograd.grad_mode import (_is_view_replay_enabled, _set_grad_enabled,  # noqa: F401
                                 _set_multithreading_enabled, _set_view_replay_enabled)
from .autograd.grad_mode import is_grad_enabled, is_inference_mode_enabled  # noqa: F401
from .autograd.grad_mode import \
    is_multithreading_enabled as _is_multithreading_enabled  # noqa: F401
from .autograd.engine import current_graph_task_id as _current_graph_task_id  # noqa: F401
from .autograd.engine import will_engine_execute_node as _will_engine_execute_node  # noqa: F401
from .autograd.settings import (is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: F401
                                set_anomaly_enabled)

from .library import _AutoDispatchBelowAutograd  # noqa: F401

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass"]
