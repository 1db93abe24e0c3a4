"""``torch.utils.data._utils``'s import path (``_utils.collate.default_collate``)."""

from . import collate

__all__ = ["collate"]
