"""tritongrad: a torch-free, GPU-first autograd runtime.

``import tritongrad as tg`` gives PyTorch's names: tensors and their ops, ``tg.autograd``,
``tg.cuda`` (devices, streams, memory), ``tg.nn`` and ``tg.optim``. The work is done in the
subpackages ``runtime`` (CUDA through cuda-python), ``kernels`` (NumPy and Triton) and
``autograd``; this module only re-exports them.
"""

import os as _os

# In the source tree, runtime/, kernels/, autograd/, nn/ and optim/ sit beside this folder, not
# in it (pyproject.toml maps them into the package when it is installed). Imported from the
# source tree (PYTHONPATH=., or the repository root shadowing a non-editable install), the
# package looks for its subpackages there too, so the tree runs as it is.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(__path__[0], "runtime")) and _os.path.isfile(
        _os.path.join(_root, "runtime", "__init__.py")):
    __path__.append(_root)

from .runtime.device import device
from .runtime.streams import DeviceEvent as Event, DeviceStream as Stream
from .runtime.dtype import (bfloat16, bool, cdouble, cfloat, channels_last, channels_last_3d,
                            complex64, complex128, contiguous_format, double, dtype, float,
                            finfo, float16, float32, float64, get_default_dtype, half, iinfo, int,
                            int8, int16,
                            int32, int64, layout, long, memory_format, preserve_format,
                            promote_types, set_default_dtype, strided, uint8,
                            uint16, uint32, uint64)
from .runtime.dtype import public_result_type as result_type
from . import autograd
from .autograd import (Function, enable_grad, inference_mode, is_grad_enabled,
                       is_inference_mode_enabled, no_grad, set_grad_enabled)
from .autograd.ops import *  # noqa: F401,F403  (tensor ops and factories)
from .autograd.ops import __all__ as _ops_all
from .autograd.grad_mode import is_inference
from .autograd.tensor import Size, Tensor
from . import cuda, distributed, nn, optim, utils
from . import distributions  # torch.distributions (distributions/)
from .serialization import load, save
from . import backends, linalg
from . import special  # torch.special (tritongrad/special.py)
from . import fft  # torch.fft (tritongrad/fft.py)
from . import compiler  # torch.compiler (tritongrad/compiler.py)
from . import __future__  # torch.__future__: Module conversion switches (tritongrad/__future__.py)
from . import jit  # torch.jit, run eagerly (tritongrad/jit.py)
from .compiler import compile  # noqa: A004 - torch.compile, run eagerly
from . import func  # torch.func (tritongrad/func.py)
from .func import vmap  # torch.vmap is torch.func.vmap
from ._higher_order_ops import cond, while_loop  # structured control flow, run eagerly
from .backends import get_float32_matmul_precision, set_float32_matmul_precision
from . import amp
from . import profiler  # torch.profiler (tritongrad/profiler.py)
from . import sparse  # torch.sparse (tritongrad/sparse.py; the tensor: autograd/sparse.py)
from .autograd.sparse import sparse_coo_tensor
from .autograd.sparse_compressed import (sparse_bsc_tensor, sparse_bsr_tensor,
                                         sparse_compressed_tensor, sparse_csc_tensor,
                                         sparse_csr_tensor)
from .runtime.dtype import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from .runtime.dtype import jagged
# float8 storage formats (CPU arrays through the `float8` extra's ml_dtypes) and _scaled_mm
from .runtime.dtype import (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,
                            float8_e8m0fnu)
from .autograd.ops.float8 import _scaled_mm  # noqa: F401 - private in torch too
from .autograd.autocast import (autocast, autocast_decrement_nesting,
                                autocast_increment_nesting, clear_autocast_cache,
                                get_autocast_dtype, is_autocast_available,
                                is_autocast_cache_enabled, is_autocast_enabled,
                                set_autocast_cache_enabled, set_autocast_dtype,
                                set_autocast_enabled)

from . import cpu  # noqa: E402  (PyTorch's torch.cpu: the CPU's device API and its amp)

# numbers and the legacy typed-tensor classes (``tg.LongTensor([1, 2])``, ``isinstance(t,
# tg.FloatTensor)``)
import math as _math  # noqa: E402

inf, nan, pi, e = _math.inf, _math.nan, _math.pi, _math.e
from .autograd.ops.conversion import legacy_tensor_types as _legacy_tensor_types  # noqa: E402

_legacy_types = _legacy_tensor_types("cpu")
globals().update(_legacy_types)

from .version import __version__  # noqa: E402

__all__ = ["device", "dtype", "Tensor", "Size", "autograd", "cuda", "distributed", "nn", "optim",
           "utils", "save", "load",
           "Function", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "is_inference", "get_default_dtype", "set_default_dtype",
           "promote_types", "result_type", "bfloat16", "bool", "cdouble", "cfloat", "complex64",
           "complex128", "double", "float", "float16", "float32", "float64", "half", "int",
           "int8", "int16", "int32", "int64", "long", "uint8", "is_tensor", "numel",
           "memory_format", "contiguous_format", "preserve_format", "channels_last",
           "channels_last_3d", "finfo", "iinfo", "layout", "strided"]
__all__ += ["backends", "get_float32_matmul_precision", "linalg", "special",
            "set_float32_matmul_precision"]
__all__ += ["fft"]
__all__ += ["Event", "Stream"]
__all__ += ["nested", "jagged"]
__all__ += ["distributions"]
__all__ += ["compile", "compiler", "jit"]
__all__ += ["cond", "func", "vmap", "while_loop"]
__all__ += ["sparse", "sparse_coo", "sparse_coo_tensor", "sparse_csr", "sparse_csc", "sparse_bsr",
            "sparse_bsc", "sparse_compressed_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
            "sparse_bsr_tensor", "sparse_bsc_tensor"]
__all__ += ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
            "float8_e8m0fnu"]
__all__ += ["amp", "autocast", "autocast_decrement_nesting", "autocast_increment_nesting",
            "clear_autocast_cache", "get_autocast_dtype",
            "is_autocast_available", "is_autocast_cache_enabled", "is_autocast_enabled",
            "set_autocast_cache_enabled", "set_autocast_dtype", "set_autocast_enabled"]
__all__ += list(_ops_all)
__all__ += ["inf", "nan", "pi", "e"] + list(_legacy_types)


from .autograd.ops.statistics import can_cast  # noqa: E402 - a dtype rule, not an op

__all__ += ["can_cast"]

# global settings (default device, threads, determinism, ...) and print options
from .autograd import settings as _settings  # noqa: E402
from .autograd.printing import set_printoptions  # noqa: E402
from .autograd.settings import *  # noqa: E402,F401,F403

__all__ += list(_settings.__all__) + ["set_printoptions"]

# nn.functional's operations that PyTorch also has at the top (torch.conv2d, torch.dropout, ...)
from .nn import _torch_functions as _nn_top  # noqa: E402
from .nn._torch_functions import *  # noqa: E402,F401,F403

__all__ += list(_nn_top.__all__)


def is_tensor(obj) -> bool:
    """True if ``obj`` is a tritongrad Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    return input.numel()


# The functions that are not op table rows (numel; the top-level forms of nn.functional's, with
# PyTorch's signatures) get the table's argument errors too (registry.guarded: PyTorch's
# TypeError for a non-tensor, in place of an AttributeError from inside). Those that are
# nn.functional's own functions stay those (tg.conv2d is F.conv2d, as in PyTorch).
from .autograd.registry import guarded as _guarded  # noqa: E402

numel = _guarded(numel, "numel", module=__name__)
globals().update({_n: _guarded(globals()[_n], _n, module=__name__) for _n in _nn_top.__all__
                  if getattr(nn.functional, _n, None) is not globals()[_n]})


# torch.testing, torch.random (and its default_generator), torch.accelerator, torch.version
from . import accelerator, random, testing, version  # noqa: E402
from .random import default_generator  # noqa: E402

short = int16  # PyTorch's alias
newaxis = None  # NumPy's name for None as an index, as PyTorch has it

__all__ += ["accelerator", "default_generator", "newaxis", "random", "short", "testing",
            "version"]

# torch.signal, torch.quasirandom, torch.hub; the legacy autocast functions and has_* flags
from . import hub, quasirandom, signal  # noqa: E402
from . import masked  # noqa: E402  (torch.masked: tritongrad/masked/)
from . import nested  # noqa: E402  (torch.nested: tritongrad/nested/)
from . import multiprocessing  # noqa: E402  (torch.multiprocessing: shared CPU tensors)
from . import functional, futures  # noqa: E402  (torch.functional, torch.futures)
from .autograd.sparse_products import dsmm, hsmm, hspmm, saddmm, smm, spmm, sspaddmm  # noqa: E402
from .autograd.storage import LEGACY_STORAGES as _LEGACY_STORAGES  # noqa: E402
from .autograd.storage import TypedStorage, UntypedStorage, resize_as_  # noqa: E402
from .jit import _fork as fork, _wait as wait  # noqa: E402  (torch.fork / torch.wait: no warning)
from .runtime.device import device as _device_type  # noqa: E402  (get_device_module's own name)

globals().update(_LEGACY_STORAGES)  # FloatStorage, DoubleStorage, ... (TypedStorage factories)


def get_device_module(device=None):
    """Returns the module associated with a given device (``tg.cuda`` for ``"cuda"``,
    ``"cuda:1"`` or a CUDA ``tg.device``; ``tg.cpu`` for ``"cpu"``). If no device is given,
    return the module for the current accelerator or CPU if none is present."""
    if device is None:
        acc = accelerator.current_accelerator(check_available=True)
        kind = acc.type if acc is not None else "cpu"
    elif isinstance(device, (str, _device_type)):
        kind = _device_type(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           f"None")
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'torch.{kind}'.")
    return cpu if kind == "cpu" else cuda


def init_num_threads() -> None:
    """Initializes the number of parallel threads used on the current thread: a no-op here,
    as in PyTorch builds without OpenMP (NumPy's libraries manage their own threads)."""


def compiled_with_cxx11_abi() -> bool:
    """Returns whether PyTorch was built with _GLIBCXX_USE_CXX11_ABI=1: True, as PyTorch's
    current wheels (tritongrad has no C++ library of its own; the answer is what a C++
    extension built alongside a torch install expects)."""
    return True


__all__ += ["functional", "futures", "dsmm", "hsmm", "hspmm", "saddmm", "smm", "spmm", "sspaddmm",
            "TypedStorage", "UntypedStorage", "resize_as_", "fork", "wait", "get_device_module",
            "init_num_threads", "compiled_with_cxx11_abi"] + list(_LEGACY_STORAGES)
from . import _legacy_api  # noqa: E402
from ._legacy_api import *  # noqa: E402,F401,F403

# torch.sym_* on Python numbers, and ATen entry points under their native names
from . import _aten_aliases, _symbolic  # noqa: E402
from ._aten_aliases import *  # noqa: E402,F401,F403
from ._symbolic import *  # noqa: E402,F401,F403

__all__ += _aten_aliases.__all__ + _symbolic.__all__

from .nn._rnn_functions import gru, lstm, rnn_relu, rnn_tanh  # noqa: E402

__all__ += ["hub", "masked", "multiprocessing", "quasirandom", "signal", "uint16", "uint32", "uint64"]
__all__ += ["gru", "lstm", "rnn_relu", "rnn_tanh"]
__all__ += list(_legacy_api.__all__)

# names PyTorch also keeps at the top: torch.OutOfMemoryError (torch.cuda's), torch.GradScaler
# (torch.amp's), torch.to_dlpack (torch.utils.dlpack's)
from .amp import GradScaler  # noqa: E402
from .optim.grad_scaler import (_amp_foreach_non_finite_check_and_unscale_,  # noqa: E402
                                _amp_update_scale_)
from .cuda import OutOfMemoryError  # noqa: E402
from .optim._foreach import *  # noqa: E402,F403  (torch._foreach_*: not in __all__, as torch)
from .runtime.driver import AcceleratorError  # noqa: E402  (the base of CUDA errors)
from .utils.dlpack import to_dlpack  # noqa: E402

__all__ += ["AcceleratorError", "GradScaler", "OutOfMemoryError", "to_dlpack"]

# torch.overrides (the __torch_function__ protocol) and its switches, torch._C's and the top's
from . import _C, overrides  # noqa: E402
from ._C import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: E402

__all__ += ["DisableTorchFunction", "DisableTorchFunctionSubclass", "overrides"]

# torch.library (custom operators), torch.ops (them by namespace) and torch.types; the
# operator schemas (torch.parse_schema, torch.FunctionSchema) and tags (torch.Tag)
from . import library, storage, types  # noqa: E402
from ._op_schema import Argument, FunctionSchema, Tag, parse_schema  # noqa: E402
from .library import ops  # noqa: E402

Storage = FloatStorage  # noqa: F821 (PyTorch's torch.Storage, its legacy float storage)
__all__ += ["Argument", "FunctionSchema", "Storage", "Tag", "library", "ops", "parse_schema",
            "storage", "types"]


# torch.ao (eager-mode quantization: tritongrad/ao/) and its alias torch.quantization; the
# quantized tensors' functions, dtypes and qschemes at the top, as PyTorch has them
from .ao._qtensor import (dequantize, int_repr, per_channel_affine,  # noqa: E402
                          per_channel_affine_float_qparams, per_channel_symmetric,
                          per_tensor_affine, per_tensor_symmetric, q_per_channel_axis,
                          q_per_channel_scales, q_per_channel_zero_points, q_scale,
                          q_zero_point, qint8, qint32, qscheme, quantize_per_channel,
                          quantize_per_tensor, quantize_per_tensor_dynamic, quint4x2, quint8)

__all__ += ["int_repr", "q_per_channel_axis", "q_per_channel_scales",
            "q_per_channel_zero_points", "q_scale", "q_zero_point"]
__all__ += ["ao", "quantization", "dequantize", "per_channel_affine",
            "per_channel_affine_float_qparams", "per_channel_symmetric", "per_tensor_affine",
            "per_tensor_symmetric", "qint8", "qint32", "qscheme", "quantize_per_channel",
            "quantize_per_tensor", "quantize_per_tensor_dynamic", "quint4x2", "quint8"]


# torch.fx and torch.quantization load on first use (``tg.fx``, ``import tritongrad.fx``):
# together ~60-90 ms of ``import tritongrad`` that most programs never need; so does
# ``torch._tensor_str``'s path to the print options
_LAZY_SUBMODULES = ("fx", "quantization", "_tensor_str")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
