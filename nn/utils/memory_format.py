"""``nn.utils.memory_format`` (PyTorch's module of the same name): converting the weights of
a model's convolutions to the channels-last memory formats; ``nn.utils`` re-exports it."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert_weight_memory_format(module, memory_format, kinds: tuple):
    if isinstance(module, kinds):
        with no_grad():
            module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert_weight_memory_format(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Converts the ``weight`` of every ``nn.Conv2d`` and ``nn.ConvTranspose2d`` in ``module``
    (itself included, recursively) to ``memory_format`` (``channels_last``), leaving the
    other layers as they are; returns ``module``."""
    from ..conv import Conv2d, ConvTranspose2d
    return _convert_weight_memory_format(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """:func:`convert_conv2d_weight_memory_format` for ``nn.Conv3d`` and
    ``nn.ConvTranspose3d`` (``channels_last_3d``)."""
    from ..conv import Conv3d, ConvTranspose3d
    return _convert_weight_memory_format(module, memory_format, (Conv3d, ConvTranspose3d))
