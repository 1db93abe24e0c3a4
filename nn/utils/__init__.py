"""``nn.utils``: gradient clipping (``clip_grad``) and flattening parameters
(``convert_parameters``); ``nn.utils.rnn``: packing and padding variable-length sequences
(PackedSequence); ``nn.utils.stateless``: calling a module with other parameters and buffers
(``functional_call``); ``nn.utils.parametrize`` and ``nn.utils.parametrizations``:
parametrized tensors (orthogonal, weight and spectral norms); the older hook-based
``weight_norm`` and ``spectral_norm``; fusing batch norms into convolutions and linear layers
(``fusion``); ``nn.utils.prune``: pruning parameters with masks; ``memory_format`` and
``init`` (``skip_init``). The submodules are PyTorch's, so its import paths work here too."""

from __future__ import annotations

from . import convert_parameters, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "convert_parameters", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "get_total_norm",
           "parameters_to_vector", "parametrizations", "parametrize", "prune",
           "remove_spectral_norm", "remove_weight_norm", "rnn", "skip_init", "spectral_norm",
           "stateless", "vector_to_parameters", "weight_norm"]
