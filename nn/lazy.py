"""Lazy modules: ``LazyModuleMixin`` and the lazy layers over it (``LazyLinear``,
``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``, ``LazyBatchNorm1d/2d/3d``,
``LazyInstanceNorm1d/2d/3d``), whose parameters' shapes are inferred from the first input
(PyTorch's ``torch.nn.modules.lazy``).

A lazy module starts with ``UninitializedParameter`` s; a forward pre-hook calls its
``initialize_parameters(*input)`` before the first forward, which materializes them, then the
hook removes itself and the module becomes ``cls_to_become`` (``LazyLinear`` a ``Linear``).
A state dict loads into a module that is still uninitialized: a load pre-hook materializes
each uninitialized parameter with the shape of its entry (then copied in as usual); the module
stays lazy until its first forward, as PyTorch's does. Saving an uninitialized module saves its
``UninitializedParameter`` s as they are (Module._save_to_state_dict).
"""

from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..autograd.ops.creation import tensor
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes
from . import conv, normalization
from .layers import Linear
from .parameter import (
    UninitializedBuffer,
    UninitializedParameter,
    UninitializedTensorMixin,
    is_lazy,
)

__all__ = ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
           "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear",
           "LazyModuleMixin"]


class LazyModuleMixin:
    """A mixin for modules that lazily initialize parameters ("lazy modules"): they infer
    the shapes of their parameters from the first input to their forward, calling
    ``initialize_parameters``; until then they hold ``UninitializedParameter`` s. After it
    the module becomes its ``cls_to_become`` (when set), a regular module.

    Example::

        >>> m = tg.nn.LazyLinear(3)
        >>> m(tg.randn(2, 5)).shape, type(m).__name__, m.weight.shape
        (tritongrad.Size([2, 3]), 'Linear', tritongrad.Size([3, 5]))
    """

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs) -> None:
        """Materializes each uninitialized parameter or buffer that ``state_dict`` has an
        initialized entry for, with that entry's shape (its values are copied afterwards)."""
        for registry in (self._parameters, self._buffers):
            for name, t in registry.items():
                key = prefix + name
                if t is not None and is_lazy(t) and key in state_dict \
                        and not is_lazy(state_dict[key]):
                    with no_grad():
                        t.materialize(state_dict[key].shape)

    def _uninitialized_weight(self, bias: bool, device, dtype) -> None:
        # a lazy Linear's or convolution's weight (and bias) before the first input
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def has_uninitialized_params(self) -> bool:
        """Whether the module still has uninitialized parameters or buffers."""
        own = list(self._parameters.values()) + list(self._buffers.values())
        return any(isinstance(t, UninitializedTensorMixin) for t in own)

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Initializes the parameters from the first input (lazy modules implement it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    @staticmethod
    def _infer_parameters(module, args, kwargs=None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(module).__name__} has not been fully "
                               f"initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` module whose ``in_features`` is inferred from the last dimension of its
    first input; its ``weight`` and ``bias`` are ``UninitializedParameter`` s until then,
    and it becomes a ``Linear`` (initialized as one) after the first forward.

    Args:
        out_features: size of each output sample.
        bias: learn an additive bias (default True).
        device, dtype: where and how the parameters are created.
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self._uninitialized_weight(bias, device, dtype)
        self.out_features = out_features

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Materializes ``weight`` (out_features, in_features) and ``bias`` with
        ``in_features = input.shape[-1]``, initialized as ``Linear``'s."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


# -- convolutions ----------------------------------------------------------------------------------

class _LazyConvMixin(LazyModuleMixin):
    """Shared by the lazy (transposed) convolutions: ``in_channels`` is the channel dim of the
    first input (dim 1 batched, dim 0 unbatched); the weight is then materialized as the
    ``cls_to_become``'s, (out, in / groups, *k) or, transposed, (in, out / groups, *k), and
    initialized as it."""

    def _lazy_init(self, out_channels: int, bias: bool, device, dtype) -> None:
        self._uninitialized_weight(bias, device, dtype)
        self.out_channels = out_channels

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _in_channels(self, input: Tensor) -> int:
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input "
                               f"to {type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        return input.shape[1] if input.ndim == nd + 2 else input.shape[0]

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        """Materializes ``weight`` and ``bias`` for ``in_channels`` = the input's channels."""
        if not self.has_uninitialized_params():
            if self.in_channels == 0:  # loaded from a state dict: its weight has the count
                self.in_channels = self.weight.shape[0 if self._transposed else 1] * (
                    1 if self._transposed else self.groups)
            return
        with no_grad():
            self.in_channels = self._in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.out_channels % self.groups != 0:
                raise ValueError("out_channels must be divisible by groups")
            channels = ((self.in_channels, self.out_channels // self.groups) if self._transposed
                        else (self.out_channels, self.in_channels // self.groups))
            self.weight.materialize(channels + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


class _LazyConvNd(_LazyConvMixin):
    """A lazy convolution: ``Conv*d``'s arguments without ``in_channels``."""

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class _LazyConvTransposeNd(_LazyConvMixin):
    """A lazy transposed convolution: ``ConvTranspose*d``'s arguments without
    ``in_channels``."""

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)


def _lazy_class(base, cls, doc: str):
    """The lazy twin of the layer ``cls``: ``base`` then ``cls``, becoming ``cls``."""
    return type(f"Lazy{cls.__name__}", (base, cls),
                {"cls_to_become": cls, "__doc__": doc, "__module__": __name__})


_CONV_DOC = ("A ``{0}`` whose ``in_channels`` is inferred from its first input (``input.size(1)``"
             ", or dim 0 unbatched); its ``weight`` and ``bias`` are ``UninitializedParameter`` s "
             "until then, and it becomes a ``{0}`` (initialized as one) after the first forward."
             "\n\n    Args: ``{0}``'s, without ``in_channels``.")
LazyConv1d, LazyConv2d, LazyConv3d = (
    _lazy_class(_LazyConvNd, c, _CONV_DOC.format(c.__name__))
    for c in (conv.Conv1d, conv.Conv2d, conv.Conv3d))
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = (
    _lazy_class(_LazyConvTransposeNd, c, _CONV_DOC.format(c.__name__))
    for c in (conv.ConvTranspose1d, conv.ConvTranspose2d, conv.ConvTranspose3d))


# -- normalization ---------------------------------------------------------------------------------

class _LazyNormBase(LazyModuleMixin):
    """Shared by the lazy batch and instance norms: ``num_features`` is the channel dim of the
    first input; ``weight``/``bias`` (``affine``) and ``running_mean``/``running_var``
    (``track_running_stats``) are uninitialized until then."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.register_buffer("running_mean", UninitializedBuffer(device=device, dtype=dtype))
            self.register_buffer("running_var", UninitializedBuffer(device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 tensor(0, dtype=dtypes.int64, device=device))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def _feature_dim(self, input: Tensor) -> int:
        if input.ndim not in self._ranks:
            self._check_input_dim(input)  # (raises the layer's rank error)
        return 1

    def initialize_parameters(self, input: Tensor) -> None:
        """Materializes the parameters and running statistics for ``num_features`` = the
        input's channels, initialized as the ``cls_to_become``'s."""
        if not self.has_uninitialized_params():
            if self.num_features == 0:  # loaded from a state dict
                t = self.weight if self.weight is not None else self.running_mean
                self.num_features = input.shape[self._feature_dim(input)] if t is None \
                    else t.shape[0]
            return
        with no_grad():
            self.num_features = input.shape[self._feature_dim(input)]
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None:
                    t.materialize((self.num_features,))
            self.reset_parameters()


class _LazyInstanceNorm(_LazyNormBase):
    """Lazy instance norms. As PyTorch's, ``affine`` and ``track_running_stats`` default to
    True here (the eager instance norms' to False); the channel dim is that of the input's
    rank: 0 for an unbatched input (PyTorch reads dim 1 even then)."""

    def _feature_dim(self, input: Tensor) -> int:
        self._check_input_dim(input)
        return input.ndim - self._ranks[0]


_NORM_DOC = ("A ``{0}`` whose ``num_features`` is inferred from its first input's channel dim;"
             " its parameters and running statistics are uninitialized until then, and it "
             "becomes a ``{0}`` after the first forward.\n\n    Args: ``{0}``'s, without "
             "``num_features``.")
LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (
    _lazy_class(_LazyNormBase, c, _NORM_DOC.format(c.__name__))
    for c in (normalization.BatchNorm1d, normalization.BatchNorm2d, normalization.BatchNorm3d))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (
    _lazy_class(_LazyInstanceNorm, c, _NORM_DOC.format(c.__name__))
    for c in (normalization.InstanceNorm1d, normalization.InstanceNorm2d,
              normalization.InstanceNorm3d))
