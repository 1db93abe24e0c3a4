"""``optim.swa_utils``: Stochastic Weight Averaging and exponential moving averages of a
model's weights (``AveragedModel`` with the ``get_*_avg_fn`` updates), the SWA learning-rate
schedule (``SWALR``) and ``update_bn``, which recomputes batch-norm statistics for averaged
weights, as PyTorch's."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

from ..autograd.grad_mode import no_grad
from ..autograd.ops import creation
from ..autograd.tensor import Tensor
from ..nn.module import Module
from ..nn.normalization import _BatchNorm, _InstanceNorm
from ..runtime import dtype as dtypes
from ._lr_base import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn", "update_bn"]


def _is_float(t: Tensor) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """The exponential moving average update of lists of tensors, in place:
    ``ema = decay * ema + (1 - decay) * param``, for ``AveragedModel(multi_avg_fn=...)``."""
    _check_decay(decay)

    def ema_update(ema_param_list: list, current_param_list: list, _) -> None:
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                if _is_float(p_ema):
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """The running mean (SWA) update of lists of tensors, in place:
    ``avg += (param - avg) / (num_averaged + 1)``, for ``AveragedModel(multi_avg_fn=...)``."""

    def swa_update(averaged_param_list: list, current_param_list: list,
                   num_averaged: Tensor | int) -> None:
        weight = 1.0 / (float(num_averaged) + 1)
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                if _is_float(p_avg):
                    p_avg.lerp_(p_model, weight)
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) * weight)

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """The exponential moving average of one tensor:
    ``avg_fn(ema, param, num_averaged) = decay * ema + (1 - decay) * param``."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """The running mean (SWA) of one tensor:
    ``avg_fn(avg, param, n) = avg + (param - avg) / (n + 1)``."""

    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    r"""Implements averaged models for Stochastic Weight Averaging (SWA, Izmailov et al.,
    2018) and Exponential Moving Average (EMA).

    ``AveragedModel`` keeps a copy of ``model`` on ``device`` whose parameters are the
    running average of ``model``'s, updated by ``update_parameters(model)``: the plain mean
    of every update by default (SWA), or what ``avg_fn`` (per tensor, returning the new
    average) or ``multi_avg_fn`` (lists of tensors, updated in place) compute, e.g.
    ``get_ema_multi_avg_fn(0.999)`` for an EMA. The first update copies the model.

    Args:
        model: the model to average.
        device: if given, the averaged model is kept on this device.
        avg_fn: the averaging function of one tensor: ``avg_fn(averaged, current,
            num_averaged)``, returning the new average.
        multi_avg_fn: the in-place averaging function of lists of tensors (one list per
            device and dtype): ``multi_avg_fn(averaged_list, current_list, num_averaged)``.
        use_buffers: if True, the buffers are averaged like the parameters; otherwise they
            are copied from ``model`` on each update (and ``update_bn`` recomputes batch
            norm statistics). Default: False.

    Example::

        >>> model = tg.nn.Linear(4, 2)
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
        >>> ema.update_parameters(model)
        >>> int(ema.n_averaged)
        1
    """

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", creation.tensor(0, dtype=dtypes.int64,
                                                           device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Runs the averaged model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Updates the averaged parameters (and buffers, with ``use_buffers``) with
        ``model``'s current ones."""
        if self.use_buffers:
            own = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            own, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        n = int(self.n_averaged)  # (one read of the count per update, as PyTorch's)
        with no_grad():
            for p_averaged, p_model in zip(own, theirs):
                p_model = p_model.detach().to(p_averaged.device)
                averaged.append(p_averaged.detach())
                current.append(p_model)
                if n == 0:
                    p_averaged.detach().copy_(p_model)
        if n > 0:
            if self.avg_fn is not None:
                for p_averaged, p_model in zip(averaged, current, strict=True):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    with no_grad():
                        p_averaged.copy_(self.avg_fn(p_averaged, p_model, n_averaged))
            else:
                update = self.multi_avg_fn or get_swa_multi_avg_fn()
                groups: dict = {}  # one call per device and dtype, as PyTorch groups them
                for p_averaged, p_model in zip(averaged, current, strict=True):
                    key = (p_averaged.device, p_averaged.dtype)
                    pair = groups.setdefault(key, ([], []))
                    pair[0].append(p_averaged)
                    pair[1].append(p_model)
                for (device, _), (own_list, model_list) in groups.items():
                    update(own_list, model_list, self.n_averaged.to(device))
        if not self.use_buffers:
            # the buffers follow the model (update_bn recomputes batch-norm statistics)
            with no_grad():
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        with no_grad():
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    r"""Updates the BatchNorm running statistics (``running_mean``, ``running_var``) of
    ``model`` with one pass over the data in ``loader``: the statistics are reset, then
    averaged over all the batches (momentum None), with the model in training mode; the
    momenta and the model's mode are restored afterwards.

    Args:
        loader: the dataset loader; each item is a batch of inputs, or a list or tuple whose
            first element is.
        model: the model whose statistics are updated.
        device: if given, each batch is moved there before being passed to the model.

    Example::

        >>> loader = [tg.randn(8, 3) for _ in range(4)]  # doctest: +SKIP
        >>> update_bn(loader, swa_model)  # doctest: +SKIP
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the batches
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    r"""Anneals the learning rate of each parameter group to a fixed value (``swa_lr``)
    over ``anneal_epochs`` steps, then keeps it there: the schedule used with SWA.

    Each step moves the rate from its value at the start of the annealing towards
    ``swa_lr`` by the factor ``alpha(t)``, ``t = step / anneal_epochs``:
    ``(1 - cos(pi t)) / 2`` (``"cos"``) or ``t`` (``"linear"``).

    Args:
        optimizer: wrapped optimizer.
        swa_lr: the learning rate at the end of the annealing, one for every group or a
            list of one per group.
        anneal_epochs: the number of epochs in the annealing phase. Default: 10.
        anneal_strategy: ``"cos"`` or ``"linear"``. Default: ``"cos"``.
        last_epoch: the index of the last epoch. Default: -1.

    Example::

        >>> opt = tg.optim.SGD(tg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = SWALR(opt, swa_lr=0.05, anneal_epochs=2, anneal_strategy="linear")
        >>> for _ in range(3):
        ...     opt.step(); sched.step()
        >>> opt.param_groups[0]["lr"]
        0.05
    """

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        swa_lrs = _per_group(type(self).__name__, "swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """The rate at the start of the annealing, from the current rate ``lr`` reached
        with factor ``alpha``."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        """The next learning rate of each group."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = (self._cosine_anneal if anneal_strategy == "cos" else
                            self._linear_anneal)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: every entry of ``self.__dict__`` but the optimizer and the
        annealing function (restored from ``_anneal_strategy``)."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads the scheduler's state (a ``state_dict()``)."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
