"""``torch.utils.data._utils.collate``'s import path: re-exports ``default_collate`` and
``default_convert`` (defined in utils/data/_collate.py)."""

from .._collate import default_collate, default_convert

__all__ = ["default_collate", "default_convert"]
