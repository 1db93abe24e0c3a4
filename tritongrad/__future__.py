"""``torch.__future__``: the switches for how ``Module.to()``/``float()``/... convert a module's
parameters (nn/module.py's ``_apply``): overwrite them with new Parameter objects, or swap the
new values into the existing ones (``utils.swap_tensors``); both off by default."""

from .nn.module import (get_overwrite_module_params_on_conversion,
                        get_swap_module_params_on_conversion,
                        set_overwrite_module_params_on_conversion,
                        set_swap_module_params_on_conversion)

__all__ = ["get_overwrite_module_params_on_conversion", "get_swap_module_params_on_conversion",
           "set_overwrite_module_params_on_conversion", "set_swap_module_params_on_conversion"]
