"""PyTorch's ``torch.ao``: quantization (``tritongrad.ao.quantization``, eager mode) and the
quantized, QAT and fused modules (``tritongrad.ao.nn``). The quantized tensors, dtypes and
qschemes live in ``_qtensor`` (re-exported at the top of ``tritongrad``)."""

import importlib as _importlib

from . import _qtensor  # noqa: F401

__all__ = ["nn", "quantization"]


def __getattr__(name: str):
    # ``nn`` and ``quantization`` load on first use: the top of tritongrad needs only
    # ``_qtensor`` (its dtypes and functions), and the two cost ~30 ms to import
    if name in __all__:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
