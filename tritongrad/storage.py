"""``torch.storage``: the storage classes (autograd/storage.py)."""

from .autograd.storage import TypedStorage, UntypedStorage

Storage = UntypedStorage  # (torch.storage.Storage: what every storage class is)

__all__ = ["Storage", "TypedStorage", "UntypedStorage"]
