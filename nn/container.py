"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict

from ..autograd.tensor import Tensor
from .module import Module
from .parameter import Parameter

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    ``Sequential(m0, m1, ...)`` names them "0", "1", ...; ``Sequential(OrderedDict(...))``
    keeps the given names. Supports ``len``, iteration, indexing (a slice gives a Sequential)
    and ``append``.

    Example:
        >>> model = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.ReLU(), tg.nn.Linear(8, 2))
        >>> len(model), type(model[1]).__name__, model(tg.randn(3, 4)).shape
        (3, 'ReLU', tritongrad.Size([3, 2]))
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def _index(self, idx: int) -> str:
        n = len(self._modules)
        idx = operator.index(idx)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return list(self._modules)[idx % n]

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._index(idx)]

    def __setitem__(self, idx, module: Module) -> None:
        setattr(self, self._index(idx), module)

    def __delitem__(self, idx) -> None:
        names = list(self._modules)[idx] if isinstance(idx, slice) else [self._index(idx)]
        for name in names:
            del self._modules[name]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


class ModuleList(Module):
    """A list of modules, registered (their parameters are the list owner's)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, idx: int) -> str:
        n = len(self._modules)
        idx = operator.index(idx)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return str(idx % n)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._index(idx)]

    def __setitem__(self, idx, module: Module) -> None:
        setattr(self, self._index(idx), module)

    def __delitem__(self, idx) -> None:
        mods = list(self._modules.values())
        del mods[idx]
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules) -> ModuleList:  # noqa: PYI034
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self[k] = m


def _as_parameter(value):
    """Tensors stored in a parameter container become Parameters (as in PyTorch); other
    objects are kept as plain attributes."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value) -> str:
    if isinstance(value, Tensor):
        kind = "Parameter containing:" if isinstance(value, Parameter) else "Tensor:"
        size = "x".join(map(str, value.shape))
        dev = "" if value.device.type == "cpu" else f" ({value.device})"
        return f"{kind} [{value.dtype} of size {size}{dev}]"
    return f"Object of type: {type(value).__name__}"


class ParameterList(Module):
    """Holds parameters in a list, registered (they are the owner's parameters); tensors
    added are wrapped in ``Parameter``. Supports indexing, ``len``, iteration, ``append``,
    ``extend`` and ``+=``.

    Example:
        >>> pl = tg.nn.ParameterList([tg.nn.Parameter(tg.randn(2, 2)) for _ in range(3)])
        >>> len(pl), len(list(pl.parameters()))
        (3, 3)
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _index(self, idx: int) -> int:
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return idx % len(self)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(self._index(idx)))

    def __setitem__(self, idx, param) -> None:
        setattr(self, str(self._index(idx)), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters) -> ParameterList:  # noqa: PYI034
        return self.extend(parameters)

    def append(self, value) -> ParameterList:
        self._size += 1
        setattr(self, str(self._size - 1), _as_parameter(value))
        return self

    def extend(self, values) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): {_describe(p)}" for i, p in enumerate(self))


class ParameterDict(Module):
    """Holds parameters in an ordered dictionary, registered under their keys; tensors added
    are wrapped in ``Parameter``.

    Example:
        >>> pd = tg.nn.ParameterDict({"scale": tg.nn.Parameter(tg.ones(3))})
        >>> list(pd.keys()), [n for n, _ in pd.named_parameters()]
        (['scale'], ['scale'])
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key) -> bool:
        return key in self._keys

    def keys(self):
        return list(self._keys)

    def values(self):
        return [self[k] for k in self._keys]

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def get(self, key: str, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def pop(self, key: str):
        v = self[key]
        del self[key]
        return v

    def update(self, parameters) -> None:
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): {_describe(v)}" for k, v in self.items())
