"""``torch.nn.modules.module``'s import path: Module and the global module hooks.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..module import Module
from .._global_hooks import (register_module_buffer_registration_hook,
                             register_module_forward_hook, register_module_forward_pre_hook,
                             register_module_full_backward_hook,
                             register_module_full_backward_pre_hook,
                             register_module_module_registration_hook,
                             register_module_parameter_registration_hook)

__all__ = ["Module", "register_module_buffer_registration_hook", "register_module_forward_hook",
           "register_module_forward_pre_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]
