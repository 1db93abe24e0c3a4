"""Immutable list and dict (PyTorch's ``torch.fx.immutable_collections``): the containers a
:class:`~tritongrad.fx.Node` keeps its ``args`` and ``kwargs`` in, so that changing them goes
through ``Node.args = ...`` and the use lists stay right."""

from __future__ import annotations

__all__ = ["immutable_list", "immutable_dict"]


def _no_mutation(self, *args, **kwargs):
    raise TypeError(f"'{type(self).__name__}' object does not support mutation. If you are "
                    f"attempting to modify the kwargs or args of a tritongrad.fx.Node object,"
                    f"\ninstead create a new copy of it and assign the copy to the node:"
                    f"\n    new_args = ... # copy and mutate args\n    node.args = new_args\n")


class immutable_list(list):  # noqa: N801  (PyTorch's name)
    """A list that refuses every in-place change (hashable: a Node argument may be a key)."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _no_mutation
    append = extend = insert = pop = remove = clear = sort = reverse = _no_mutation

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (tuple(self),))


class immutable_dict(dict):  # noqa: N801  (PyTorch's name)
    """A dict that refuses every in-place change (hashable)."""

    __setitem__ = __delitem__ = __ior__ = _no_mutation
    clear = pop = popitem = setdefault = update = _no_mutation

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (tuple(self.items()),))
