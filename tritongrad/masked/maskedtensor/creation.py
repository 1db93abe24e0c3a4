"""The factories: ``masked_tensor`` (a leaf, as ``tritongrad.tensor``) and
``as_masked_tensor`` (keeps the data's history, as ``tritongrad.as_tensor``)."""

from __future__ import annotations

from .core import MaskedTensor

__all__ = ["as_masked_tensor", "masked_tensor"]


def masked_tensor(data, mask, requires_grad: bool = False) -> MaskedTensor:
    """A MaskedTensor leaf holding a copy of ``data`` and of ``mask``.

    Args:
        data (Tensor): the values (float16/32/64, bool or int8/16/32/64, strided).
        mask (Tensor): a bool tensor of ``data``'s shape: True where an element is specified.
        requires_grad (bool): whether autograd records operations on it. Default: False.

    Example::

        >>> from tritongrad.masked import masked_tensor
        >>> masked_tensor(tritongrad.tensor([1., 2.]), tritongrad.tensor([True, False]))
        MaskedTensor(
          [  1.0000,       --]
        )
    """
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask) -> MaskedTensor:
    """A MaskedTensor of a copy of ``data`` that keeps ``data``'s autograd history: gradients
    of the result reach ``data`` (as plain tensors, zero where they are masked out)."""
    return MaskedTensor._from_values(data, mask)
