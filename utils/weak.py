"""Weak references keyed by identity (PyTorch's ``torch.utils.weak``): ``WeakIdRef`` and
``WeakIdKeyDictionary`` (alias ``WeakTensorKeyDictionary``), a weak-keyed dict that compares
its keys with ``is``, not ``==`` (a Tensor's ``==`` is elementwise and its hash is its id),
and ``TensorWeakRef``."""

from __future__ import annotations

import collections.abc as _collections_abc
import weakref
from collections.abc import Mapping, MutableMapping
from weakref import ref

from ..autograd.tensor import Tensor

__all__ = ["TensorWeakRef", "WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary"]

WeakRef = ref


class _IterationGuard:
    """While a dict is iterated, removals of dead keys are queued and made at the end (as
    ``weakref.WeakKeyDictionary``'s guard)."""

    def __init__(self, weakcontainer) -> None:
        self.weakcontainer = ref(weakcontainer)

    def __enter__(self):
        w = self.weakcontainer()
        if w is not None:
            w._iterating.add(self)
        return self

    def __exit__(self, e, t, b):
        w = self.weakcontainer()
        if w is not None:
            s = w._iterating
            s.remove(self)
            if not s:
                w._commit_removals()


class WeakIdRef(weakref.ref):
    """A weak reference that hashes by its object's ``id`` and compares by identity (equal
    to another ``WeakIdRef`` of the same live object; a dead one only to itself)."""

    __slots__ = ["_id"]

    def __init__(self, key, callback=None) -> None:
        # (the id is taken now: once the object dies the reference must still hash the same,
        # for the dict to find and drop it)
        self._id = id(key)
        super().__init__(key, callback)

    def __hash__(self) -> int:
        return self._id

    def __eq__(self, other) -> bool:
        a = self()
        b = other()
        if a is not None and b is not None:
            return a is b
        return self is other

    def __ne__(self, other) -> bool:  # (weakref.ref's own would compare the objects with ==)
        return not self.__eq__(other)


class WeakIdKeyDictionary(MutableMapping):
    """A mapping whose keys are held by weak reference and compared by identity: an entry
    goes away when its key is garbage collected (``weakref.WeakKeyDictionary`` with
    ``WeakIdRef`` keys, so Tensors, whose ``==`` is elementwise, can be keys).

    Example:
        >>> d = WeakIdKeyDictionary()
        >>> t = tg.ones(2)
        >>> d[t] = "seen"
        >>> t in d, tg.ones(2) in d, len(d)
        (True, False, 1)
        >>> del t; len(d)
        0
    """

    def __init__(self, dict=None, ref_type=WeakIdRef) -> None:  # noqa: A002 (PyTorch's name)
        self.data = {}
        self.ref_type = ref_type

        def remove(k, selfref=ref(self)) -> None:
            self = selfref()
            if self is not None:
                if self._iterating:
                    self._pending_removals.append(k)
                else:
                    self.data.pop(k, None)

        self._remove = remove
        self._pending_removals: list = []
        self._iterating: set = set()
        self._dirty_len = False
        if dict is not None:
            self.update(dict)

    def _commit_removals(self) -> None:
        d = self.data
        while self._pending_removals:
            d.pop(self._pending_removals.pop(), None)

    def _scrub_removals(self) -> None:
        d = self.data
        self._pending_removals = [k for k in self._pending_removals if k in d]
        self._dirty_len = False

    def __delitem__(self, key) -> None:
        self._dirty_len = True
        del self.data[self.ref_type(key)]

    def __getitem__(self, key):
        return self.data[self.ref_type(key)]

    def __len__(self) -> int:
        if self._dirty_len and self._pending_removals:
            self._scrub_removals()
        return len(self.data) - len(self._pending_removals)

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__} at {id(self):#x}>"

    def __setitem__(self, key, value) -> None:
        self.data[self.ref_type(key, self._remove)] = value

    def copy(self) -> WeakIdKeyDictionary:
        new = WeakIdKeyDictionary()
        with _IterationGuard(self):
            for key, value in self.data.items():
                o = key()
                if o is not None:
                    new[o] = value
        return new

    __copy__ = copy

    def __deepcopy__(self, memo):
        from copy import deepcopy
        new = self.__class__()
        with _IterationGuard(self):
            for key, value in self.data.items():
                o = key()
                if o is not None:
                    new[o] = deepcopy(value, memo)
        return new

    def get(self, key, default=None):
        return self.data.get(self.ref_type(key), default)

    def __contains__(self, key) -> bool:
        try:
            wr = self.ref_type(key)
        except TypeError:  # (an object that cannot be weakly referenced is never a key)
            return False
        return wr in self.data

    def items(self):
        with _IterationGuard(self):
            for wr, value in self.data.items():
                key = wr()
                if key is not None:
                    yield key, value

    def keys(self):
        with _IterationGuard(self):
            for wr in self.data:
                obj = wr()
                if obj is not None:
                    yield obj

    __iter__ = keys

    def values(self):
        with _IterationGuard(self):
            for wr, value in self.data.items():
                if wr() is not None:
                    yield value

    def keyrefs(self) -> list:
        """A list of weak references to the keys (not guaranteed to be live when used)."""
        return list(self.data)

    def popitem(self):
        self._dirty_len = True
        while True:
            key, value = self.data.popitem()
            o = key()
            if o is not None:
                return o, value

    def pop(self, key, *args):
        self._dirty_len = True
        return self.data.pop(self.ref_type(key), *args)

    def setdefault(self, key, default=None):
        return self.data.setdefault(self.ref_type(key, self._remove), default)

    def update(self, dict=None, **kwargs) -> None:  # noqa: A002
        d = self.data
        if dict is not None:
            if not hasattr(dict, "items"):
                dict = type({})(dict)
            for key, value in dict.items():
                d[self.ref_type(key, self._remove)] = value
        if kwargs:
            self.update(kwargs)

    def __ior__(self, other):
        self.update(other)
        return self

    def __or__(self, other):
        if isinstance(other, _collections_abc.Mapping):
            c = self.copy()
            c.update(other)
            return c
        return NotImplemented

    def __ror__(self, other):
        if isinstance(other, _collections_abc.Mapping):
            c = self.__class__()
            c.update(other)
            c.update(self)
            return c
        return NotImplemented

    def __eq__(self, other) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return {id(k): v for k, v in self.items()} == {id(k): v for k, v in other.items()}


WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a Tensor: ``ref()`` gives the Tensor or None once it is gone."""

    ref: WeakRef

    def __init__(self, tensor: Tensor) -> None:
        if not isinstance(tensor, Tensor):
            raise AssertionError(f"expected torch.Tensor, got {type(tensor)}.")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        out = self.ref()
        if out is not None and not isinstance(out, Tensor):
            raise AssertionError(f"expected torch.Tensor, got {type(out)}.")
        return out
