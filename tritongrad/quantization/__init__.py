"""PyTorch's ``torch.quantization``: an alias of ``tritongrad.ao.quantization`` (its
submodules ``observer``, ``fake_quantize``, ``qconfig``, ``stubs``, ``quantize``,
``fuse_modules`` are the same module objects)."""

import sys as _sys

from tritongrad.ao.quantization import *  # noqa: F401,F403
from tritongrad.ao.quantization import __all__  # noqa: F401
from tritongrad.ao.quantization import fake_quantize, observer, qconfig, stubs  # noqa: F401

# ``import tritongrad.quantization.observer`` finds the ao module (as in PyTorch, the names
# ``quantize`` and ``fuse_modules`` stay the functions, not their modules)
for _name in ("fake_quantize", "fuse_modules", "observer", "qconfig", "quantize", "stubs"):
    _sys.modules[f"{__name__}.{_name}"] = _sys.modules[f"tritongrad.ao.quantization.{_name}"]
del _name
