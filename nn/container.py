"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from ..autograd.node import _tensor_type_name
from ..autograd.tensor import Tensor
from .module import Module, _addindent
from .parameter import Parameter

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    ``Sequential(m0, m1, ...)`` names them "0", "1", ...; ``Sequential(OrderedDict(...))``
    keeps the given names. Supports ``len``, iteration, indexing (a slice gives a Sequential),
    ``append``, ``insert``, ``extend``, ``pop``, ``del``, ``+`` / ``+=`` (with another
    Sequential) and ``*`` / ``*=`` (repeats the same modules). As in PyTorch, deleting
    renumbers the children "0", "1", ..., so names stay positions.

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
        _renumber(self, list(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Inserts ``module`` before position ``index`` (``-len <= index <= len``)."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        mods = list(self._modules.values())
        mods.insert(index, module)
        _renumber(self, mods)
        return self

    def extend(self, sequential) -> Sequential:
        """Appends each module of the iterable ``sequential``."""
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key):
        """Removes and returns the module (or, for a slice, the Sequential) at ``key``."""
        v = self[key]
        del self[key]
        return v

    def _check_sequential(self, other) -> None:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")

    def __add__(self, other) -> Sequential:
        self._check_sequential(other)
        return Sequential().extend(self).extend(other)

    def __iadd__(self, other) -> Sequential:  # noqa: PYI034
        self._check_sequential(other)
        return self.extend(other)

    def _check_factor(self, other) -> None:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and "
                            f"{type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")

    def __mul__(self, other: int) -> Sequential:
        """A new Sequential holding this one's modules ``other`` times (the same objects,
        so their parameters are shared, as in PyTorch)."""
        self._check_factor(other)
        return Sequential().extend(list(self) * other)

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other: int) -> Sequential:  # noqa: PYI034
        self._check_factor(other)
        return self.extend(list(self) * (other - 1))

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
        del mods[idx if isinstance(idx, slice) else int(self._index(idx))]
        _renumber(self, mods)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules) -> ModuleList:  # noqa: PYI034
        return self.extend(modules)

    def __add__(self, other) -> ModuleList:
        """A new ModuleList: this one's modules, then those of the iterable ``other``."""
        return ModuleList(list(self) + list(other))

    def pop(self, key):
        """Removes and returns the module (or, for a slice, the ModuleList) at ``key``."""
        v = self[key]
        del self[key]
        return v

    def __repr__(self) -> str:
        # as PyTorch's: runs of children with the same repr print once, "(0-2): 3 x ..."
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [first index, last index, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2)
                 for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, module)
        _renumber(self, mods)


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

    def clear(self) -> None:
        """Removes every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Removes the module under ``key`` and returns it (KeyError when absent)."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        """Adds (or replaces) the modules of a mapping or an iterable of (key, module)
        pairs."""
        for k, m in _update_items(modules, "ModuleDict", sort=False):
            self[k] = m


def _update_items(pairs, owner: str, sort: bool):
    """The (key, value) pairs of ``owner.update(pairs)``, with PyTorch's checks; ``sort``: a
    plain mapping's items in sorted key order (ParameterDict's rule; an OrderedDict or another
    container keeps its order)."""
    what = "ParametersDict" if owner == "ParameterDict" else owner  # (PyTorch's spelling)
    if not isinstance(pairs, Iterable):
        raise TypeError(f"{what}.update should be called with an iterable of key/value pairs, "
                        f"but got {type(pairs).__name__}")
    if isinstance(pairs, (OrderedDict, ModuleDict, ParameterDict)):
        return list(pairs.items())
    if isinstance(pairs, Mapping):
        return sorted(pairs.items()) if sort else list(pairs.items())
    out = []
    for j, p in enumerate(pairs):
        if not isinstance(p, Iterable):
            raise TypeError(f"{owner} update sequence element #{j} should be Iterable; is"
                            f"{type(p).__name__}")
        if len(p) != 2:
            raise ValueError(f"{owner} update sequence element #{j} has length {len(p)}; 2 is "
                             f"required")
        out.append((p[0], p[1]))
    return out


def _as_parameter(value):
    """Tensors stored in a parameter container become Parameters (as in PyTorch); other
    objects are kept as plain attributes."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _renumber(owner: Module, modules: list) -> None:
    """Registers ``modules`` as ``owner``'s only children, named "0", "1", ...: PyTorch's
    Sequential and ModuleList renumber so after a deletion or insertion."""
    owner._modules.clear()
    for i, m in enumerate(modules):
        owner.add_module(str(i), m)


def _describe_lines(items, type_name) -> str:
    """The extra_repr of ParameterList / ParameterDict, as PyTorch's: one "  (key): ..."
    line per item (the leading two spaces are PyTorch's too), a tensor described by
    ``type_name(tensor)``, its size and its device when not on the CPU."""
    lines = []
    for k, v in items:
        if isinstance(v, Tensor):
            kind = "Parameter" if isinstance(v, Parameter) else "Tensor"
            size = "x".join(map(str, v.shape))
            dev = "" if v.device.type == "cpu" else f" ({v.device})"
            lines.append(f"  ({k}): {kind} containing: [{type_name(v)} of size {size}{dev}]")
        else:
            lines.append(f"  ({k}): Object of type: {type(v).__name__}")
    return "\n".join(lines)


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
        # (a Tensor is iterable, but is never unpacked here)
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got "
                            f"{type(values).__name__}")
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return _describe_lines(enumerate(self), lambda t: t.dtype)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


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
        # a missing key raises AttributeError, as PyTorch's (it reads the attribute)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as a key as it is not "
                            f"a string (type is '{type(key).__name__}'). Open an issue on "
                            f"github if you need non-string keys.")
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

    # as PyTorch's: a keys view, and generators of the values and the items
    def keys(self):
        return self._keys.keys()

    def values(self):
        return (self[k] for k in self._keys)

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def get(self, key: str, default=None):
        """The value under ``key``, or ``default`` when there is none."""
        return self[key] if key in self else default

    def pop(self, key: str):
        """Removes the value under ``key`` and returns it."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple:
        """Removes and returns the last (key, value) pair (KeyError when empty)."""
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        k = next(reversed(self._keys))
        v = self[k]
        del self[k]
        return k, v

    def setdefault(self, key: str, default=None):
        """The value under ``key``, first set to ``default`` when there is none."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Removes every value."""
        for k in list(self._keys):
            del self[k]

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same values (the same Parameter objects)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def fromkeys(self, keys, default=None) -> ParameterDict:
        """A new ParameterDict with ``keys``, each set to ``default``."""
        return ParameterDict((k, default) for k in keys)

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> ParameterDict:  # noqa: PYI034
        self.update(other)
        return self

    def update(self, parameters) -> None:
        """Adds (or replaces) the values of a mapping (a plain dict's in sorted key order, as
        PyTorch's) or of an iterable of (key, value) pairs."""
        for k, v in _update_items(parameters, "ParameterDict", sort=True):
            self[k] = v

    def extra_repr(self) -> str:
        # PyTorch prints the legacy type name here (FloatTensor), the dtype in ParameterList
        return _describe_lines(self.items(), _tensor_type_name)

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")
