"""``nn.utils.init`` (PyTorch's module of the same name): ``skip_init``; ``nn.utils``
re-exports it."""

from __future__ import annotations

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Given a module class object and args / kwargs, instantiate the module without
    initializing parameters / buffers. This can be useful if initialization is slow or if
    custom initialization will be performed, making the default initialization unnecessary.
    As PyTorch's, the module is built on the meta device and moved with ``to_empty``: its
    parameters and buffers are left uninitialized, and the global random stream is not
    consumed (a seeded program draws the same numbers after it as PyTorch's).

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
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
