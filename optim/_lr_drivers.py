"""The schedulers that do not compute a rate from the epoch themselves: driven by a metric
(``ReduceLROnPlateau``) or by other schedulers (``SequentialLR``, ``ChainedScheduler``).
Exported by ``lr_scheduler``."""

from __future__ import annotations

import math
import warnings
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ._lr_base import (
    _EPOCH_DEPRECATION,
    LRScheduler,
    _check_optimizer,
    _group_values,
    _set_group_value,
)
from .optimizer import Optimizer

__all__ = ["SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"]

# -- driven by other schedulers ------------------------------------------------------------------

def _check_children(owner: str, optimizer: Optimizer, schedulers: Sequence) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler, but got no scheduler.")
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it "
                             f"requires additional kwargs to be specified when calling `step`, "
                             f"but got one at index {i} in the given schedulers sequence.")
        if s.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, "
                             f"but got scheduler {type(s).__name__} at index {i} has "
                             f"{s.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


class _Composite(LRScheduler):
    """State dict handling of the schedulers made of other schedulers: their own state plus
    each child's ``state_dict()``."""

    _schedulers: list

    def state_dict(self) -> dict[str, Any]:
        """The state, with each wrapped scheduler's state dict under ``"_schedulers"``."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads the state and each wrapped scheduler's."""
        state_dict = dict(state_dict)
        children = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, children):
            s.load_state_dict(sd)


class SequentialLR(_Composite):
    r"""Contains a list of schedulers expected to be called sequentially during the
    optimization process: ``schedulers[i]`` runs from ``milestones[i - 1]`` on (restarted at
    its epoch 0 there).

    Args:
        optimizer: wrapped optimizer.
        schedulers: list of chained schedulers (of this optimizer).
        milestones: list of integers that reflects milestone points (one fewer than the
            schedulers).
        last_epoch: the index of last epoch (default -1).

    Example:
        >>> warm = LinearLR(opt, start_factor=0.1, total_iters=2)
        >>> decay = ExponentialLR(opt, gamma=0.9)
        >>> sched = SequentialLR(opt, schedulers=[warm, decay], milestones=[2])
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler],
                 milestones: list[int], last_epoch: int = -1) -> None:
        _check_children("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to "
                             f"be one more than the number of milestone points, but got "
                             f"number of schedulers {len(schedulers)} and the number of "
                             f"milestones to be equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The children each took a constructor step: undo them, restart from the initial
        # rates, and take the first step with the scheduler that runs at epoch 0 only.
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        self.recursive_undo()
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Recursively undoes the step that each scheduler's construction took (``sched``:
        this scheduler when None; composites are walked into)."""
        sched = self if sched is None else sched
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                self.recursive_undo(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Advances the active scheduler; at a milestone the next one starts at its epoch 0
        (its closed form)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()


class ChainedScheduler(_Composite):
    r"""Chains a list of learning rate schedulers: each ``step()`` steps every one of them,
    in order, so their (chainable) factors multiply.

    Args:
        schedulers: list of chained schedulers.
        optimizer: wrapped optimizer (default: the first scheduler's).

    Example:
        >>> s1 = ConstantLR(opt, factor=0.1, total_iters=2)
        >>> s2 = ExponentialLR(opt, gamma=0.9)
        >>> sched = ChainedScheduler([s1, s2], optimizer=opt)
    """

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, "
                             "but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_children("ChainedScheduler", optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        """Steps every wrapped scheduler."""
        for s in self._schedulers:
            s.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


# -- driven by a metric ----------------------------------------------------------------------------

class ReduceLROnPlateau(LRScheduler):
    r"""Reduce learning rate when a metric has stopped improving.

    Models often benefit from reducing the learning rate by a factor of 2-10 once learning
    stagnates. This scheduler reads a metrics quantity and if no improvement is seen for a
    'patience' number of epochs, the learning rate is reduced: ``lr = max(lr * factor,
    min_lr)``, unless that changes it by no more than ``eps``.

    A value ``a`` improves on the best so far when (``rel``/``abs`` is ``threshold_mode``)::

        min, rel: a < best * (1 - threshold)      min, abs: a < best - threshold
        max, rel: a > best * (1 + threshold)      max, abs: a > best + threshold

    Args:
        optimizer: wrapped optimizer.
        mode: one of ``"min"``, ``"max"`` (default ``"min"``).
        factor: factor by which the learning rate will be reduced (default 0.1, must be
            < 1).
        patience: the number of allowed epochs with no improvement after which the learning
            rate will be reduced (default 10).
        threshold: threshold for measuring the new optimum, to only focus on significant
            changes (default 1e-4).
        threshold_mode: one of ``"rel"``, ``"abs"`` (default ``"rel"``).
        cooldown: number of epochs to wait before resuming normal operation after lr has been
            reduced (default 0).
        min_lr: a scalar or a list of scalars: a lower bound on the learning rate of all
            param groups or each group respectively (default 0).
        eps: minimal decay applied to lr (default 1e-8).

    Example:
        >>> sched = ReduceLROnPlateau(opt, "min")
        >>> for epoch in range(10):
        ...     train(...)
        ...     sched.step(validate(...))   # after the validation loss is known
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | list[float] = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        _check_optimizer("ReduceLROnPlateau", optimizer)
        self.factor = factor
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError("mode " + str(mode) + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + str(threshold_mode) + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether ``a`` improves on ``best`` by the threshold (see the class docstring)."""
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel"
                        else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel"
                    else best + self.threshold)

    _is_better = is_better

    def step(self, metrics: float, epoch: int | None = None) -> None:  # type: ignore[override]
        """Takes the epoch's metric (a number or a one-element tensor) and reduces the rates
        after ``patience`` epochs without improvement."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"ReduceLROnPlateau: the optimizer has "
                                   f"{len(self.optimizer.param_groups)} param groups but "
                                   f"{len(self.min_lrs)} min_lrs were given (a group was added "
                                   f"since); set `min_lrs` to one per group")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                _set_group_value(group, "lr", new)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads the state (and re-checks mode and threshold mode)."""
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
