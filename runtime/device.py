"""Devices: ``device("cpu")``, ``device("cuda")``, ``device("cuda:1")``, ``device("cuda", 1)``,
``device("meta")`` (shapes and dtypes without values: Note [The meta device] in kernels/meta.py)."""

from __future__ import annotations

__all__ = ["device", "as_device"]


class device:
    """Where a tensor's memory lives: ``device(type='cpu')``, ``device(type='cuda', index=0)``,
    or ``device(type='meta')`` (no memory: a shape and a dtype).

    Instances are interned, so two equal devices are the same object and comparing them is
    cheap. ``device("cuda")`` has ``index=None`` and means "the current CUDA device";
    tensors always report a device with an index.

    Example:
        >>> import tritongrad as tg
        >>> tg.device("cuda:1")
        device(type='cuda', index=1)
    """

    __slots__ = ("type", "index", "_str")
    _interned: dict = {}

    def __new__(cls, type_or_str, index: int | None = None):
        if isinstance(type_or_str, device):
            if index is None:
                return type_or_str
            type_or_str = type_or_str.type
        key = (type_or_str, index)
        d = cls._interned.get(key)
        if d is not None:
            return d
        typ, idx = _parse(type_or_str, index)
        d = cls._interned.get((typ, idx))
        if d is None:
            d = object.__new__(cls)
            d.type, d.index = typ, idx
            d._str = typ if idx is None else f"{typ}:{idx}"
            cls._interned[(typ, idx)] = d
        cls._interned[key] = d
        return d

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return self is other

    def __hash__(self) -> int:
        return hash(self._str)

    def __reduce__(self):
        return (device, (self.type, self.index))

    # ``with tg.device("cuda"): ...`` makes this the default device of the factories inside
    # the block (``tg.set_default_device``), restoring the previous one after, as PyTorch's.
    # Devices are interned, so the saved defaults live on a class-wide stack, not on self.
    _saved_defaults: list = []

    def __enter__(self) -> device:
        from ..autograd import settings
        from ..autograd.ops import creation
        previous = creation.default_device
        settings.set_default_device(self)  # (raises before anything changes if it must)
        device._saved_defaults.append(previous)
        return self

    def __exit__(self, *exc) -> None:
        from ..autograd.ops import creation
        creation.default_device = device._saved_defaults.pop()


def _parse(spec, index):
    if isinstance(spec, int) and not isinstance(spec, bool):
        return "cuda", spec  # PyTorch accepts a bare ordinal as a CUDA device
    if not isinstance(spec, str):
        raise TypeError(f"device: expected a string, an int or a device, got {type(spec).__name__}")
    typ, sep, idx = spec.partition(":")
    if typ not in ("cpu", "cuda", "meta"):
        raise RuntimeError(f"device: expected one of cpu, cuda, meta device type at start of "
                           f"device string: {spec!r}")
    if sep:
        if index is not None:
            raise RuntimeError(f"device: index given twice in device({spec!r}, {index})")
        if not idx.isdigit():
            raise RuntimeError(f"device: invalid device string {spec!r}")
        index = int(idx)
    if index is not None and index < 0:
        raise RuntimeError(f"device: device index must be non-negative, got {index}")
    if typ == "cpu" and index not in (None, 0):
        raise RuntimeError(f"device: CPU device index must be 0 or absent, got {index}")
    return typ, (None if typ == "cpu" else index)


def as_device(spec) -> device:
    """Coerces a string, int or device into an interned device."""
    return spec if isinstance(spec, device) else device(spec)
