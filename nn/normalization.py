"""Normalisation layers: BatchNorm1d/2d/3d, SyncBatchNorm, InstanceNorm1d/2d/3d, GroupNorm,
RMSNorm, LocalResponseNorm (LayerNorm, fused, is in layers.py). Default initialisations are
PyTorch's: weight ones, bias zeros, running mean zeros and running variance ones."""

from __future__ import annotations

import warnings

from ..autograd.grad_mode import no_grad
from ..autograd.ops.creation import ones, tensor, zeros
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes
from . import functional as F
from . import init
from .module import Module
from .parameter import affine_parameters, normalized_shape_parameters

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "RMSNorm", "SyncBatchNorm"]


def _norm_affine(module: Module, n: int, affine: bool, bias: bool, device, dtype) -> None:
    """The per-channel ``weight`` and ``bias`` of a normalization layer: both with ``affine``
    (``bias=False``, PyTorch 2.x's keyword, leaves the shift out), neither without."""
    affine_parameters(module, (n,), ("weight",), affine, device, dtype)
    affine_parameters(module, (n,), ("bias",), affine and bias, device, dtype)


def _reset_affine(module: Module) -> None:
    if module.affine:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


class _NormBase(Module):
    """The state shared by the batch and instance norms, as PyTorch's ``_NormBase``:
    parameters, running statistics, their reset, loading and repr. The forwards live in
    ``_BatchNorm`` and ``_InstanceNorm``, which both derive from it (an instance norm is not
    a ``_BatchNorm``, in PyTorch as here)."""

    _version = 2  # version 2 added num_batches_tracked (PyTorch 0.4.1)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _norm_affine(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros((num_features,), device=device,
                                                       dtype=dtype))
            self.register_buffer("running_var", ones((num_features,), device=device,
                                                     dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dtypes.int64,
                                                               device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        # a state dict saved before version 2 has no num_batches_tracked: keep counting from
        # this module's own (zero for a new one), as PyTorch does, instead of reporting it
        key = prefix + "num_batches_tracked"
        if (local_metadata.get("version") or 1) < 2 and self.track_running_stats \
                and key not in state_dict:
            state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                               else tensor(0, dtype=dtypes.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Shared by BatchNorm1d, BatchNorm2d, BatchNorm3d and SyncBatchNorm, which differ only in
    the input ranks they accept (``_ranks``)."""

    _ranks: tuple = ()

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._ranks:
            want = " or ".join(f"{r}D" for r in self._ranks)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")
        # (a channel count other than num_features is batch_norm's error, naming the first
        # per-channel tensor that does not match, as PyTorch's; without running statistics
        # or affine parameters there is none, and any count is normalised)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average over the batches seen
                factor = 1.0 / float(self.num_batches_tracked.item())
        # batch statistics in training, and in eval when there are no running statistics
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Applies Batch Normalization over a 2D or 3D input: (N, C) or (N, C, L).

    y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta, per channel. In training the batch's
    statistics are used (biased variance) and the running estimates are updated:
    ``running = (1 - momentum) * running + momentum * batch`` (unbiased variance), or, with
    ``momentum=None``, a cumulative average over all batches. In eval mode the running
    estimates are used, unless ``track_running_stats=False``.

    Example:
        >>> bn = tg.nn.BatchNorm1d(4)
        >>> bn(tg.randn(8, 4)).shape
        tritongrad.Size([8, 4])
    """

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Applies Batch Normalization over a 4D input (N, C, H, W); see ``BatchNorm1d``."""

    _ranks = (4,)


class BatchNorm3d(_BatchNorm):
    """Applies Batch Normalization over a 5D input (N, C, D, H, W); see ``BatchNorm1d``."""

    _ranks = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch Normalization over an (N, C, *) input (at least 2-D) whose statistics are meant
    to be reduced over all processes of ``process_group``. Within one process (no
    initialized process group, or a group of one), which is what tritongrad runs, it is
    ``BatchNorm``: the batch's own statistics, on any device, as PyTorch's falls back to.
    Across several processes it raises (no cross-process reduction of the statistics).

    ``SyncBatchNorm.convert_sync_batchnorm(module)`` replaces the batch norms of a model by
    SyncBatchNorms that share their parameters and buffers.

    Example:
        >>> sbn = tg.nn.SyncBatchNorm(3)
        >>> sbn(tg.randn(4, 3, 5)).shape
        tritongrad.Size([4, 3, 5])
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        if self.training:
            from .. import distributed as dist
            if dist.is_initialized() and dist.get_world_size(self.process_group) > 1:
                raise NotImplementedError(
                    f"SyncBatchNorm: synchronizing batch statistics across "
                    f"{dist.get_world_size(self.process_group)} processes is not implemented; "
                    f"use BatchNorm (per-process statistics) or a group of one process")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every BatchNorm1d/2d/3d in it (itself included) replaced by a
        ``SyncBatchNorm`` holding the same parameters, buffers and training mode.

        Example:
            >>> net = tg.nn.Sequential(tg.nn.Conv2d(3, 4, 1), tg.nn.BatchNorm2d(4))
            >>> type(tg.nn.SyncBatchNorm.convert_sync_batchnorm(net)[1]).__name__
            'SyncBatchNorm'
        """
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_NormBase):
    """Shared by InstanceNorm1d/2d/3d: ``_ranks`` are the (unbatched, batched) input ranks.
    Unlike batch norm, affine parameters and running statistics are off by default."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._ranks:
            raise ValueError(f"expected {self._ranks[0]}D or {self._ranks[1]}D input (got "
                             f"{input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.ndim - self._ranks[0]  # (the unbatched rank: C, *spatial)
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          f"can silence this warning by not passing in num_features, which is "
                          f"not used because affine=False", stacklevel=2)
        unbatched = input.ndim == self._ranks[0]
        x = input.unsqueeze(0) if unbatched else input
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            0.0 if self.momentum is None else self.momentum, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Applies Instance Normalization over a 2D (unbatched) or 3D input (N, C, L): each
    channel of each sample normalised over L; see ``InstanceNorm2d``."""

    _ranks = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Applies Instance Normalization over a 3D (unbatched) or 4D input (N, C, H, W): each
    channel of each sample normalised over its H x W values (biased variance). ``affine``
    adds a per-channel scale and shift; ``track_running_stats`` keeps running averages of
    the statistics (updated in training, used in eval). Both are off by default; with
    ``affine=False`` a channel count other than ``num_features`` only warns (PyTorch).

    Example:
        >>> tg.nn.InstanceNorm2d(3)(tg.randn(2, 3, 8, 8)).shape
        tritongrad.Size([2, 3, 8, 8])
    """

    _ranks = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Applies Instance Normalization over a 4D (unbatched) or 5D input (N, C, D, H, W); see
    ``InstanceNorm2d``."""

    _ranks = (4, 5)


class GroupNorm(Module):
    """Applies Group Normalization over a mini-batch of inputs (N, C, *): the channels are
    separated into ``num_groups`` groups, each normalised over its channels and all other
    non-batch dims; ``affine`` adds a per-channel scale (ones) and shift (zeros).

    Example:
        >>> gn = tg.nn.GroupNorm(3, 6)
        >>> gn(tg.randn(20, 6, 10, 10)).shape
        tritongrad.Size([20, 6, 10, 10])
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        if num_groups <= 0:
            raise ValueError(f"GroupNorm: num_groups must be positive, but got {num_groups}")
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        _norm_affine(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Applies Root Mean Square Layer Normalization over the trailing ``normalized_shape``
    dims: y = x / sqrt(mean(x^2) + eps) * gamma. ``eps=None`` uses the machine epsilon of the
    input's dtype.

    Example:
        >>> rms = tg.nn.RMSNorm([2, 3])
        >>> rms(tg.randn(2, 2, 3)).shape
        tritongrad.Size([2, 2, 3])
    """

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        normalized_shape_parameters(self, normalized_shape, eps, elementwise_affine, None,
                                    device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Local response normalization across channels (``F.local_response_norm``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
