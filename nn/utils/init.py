"""``nn.utils.init`` (PyTorch's module of the same name): ``skip_init``; ``nn.utils``
re-exports it."""

from __future__ import annotations

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Creates an instance of ``module_cls`` (with ``args`` and ``kwargs``) whose parameters
    and buffers are meant to be overwritten before use (PyTorch leaves them uninitialized).
    tritongrad has no meta device to build it without allocating, so it runs the constructor
    on ``device`` (default 'cpu'): the values are the constructor's initialization.

    Example:
        >>> m = tg.nn.utils.skip_init(tg.nn.Linear, 5, 1)
        >>> m.weight.shape
        tritongrad.Size([1, 5])
    """
    import inspect

    from ..module import Module
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    return module_cls(*args, **kwargs)
