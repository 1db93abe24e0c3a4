"""``tritongrad.optim.lr_scheduler``: learning-rate schedules, as ``torch.optim.lr_scheduler``.

A scheduler wraps an optimizer and rewrites each parameter group's ``"lr"`` when its
``step()`` is called (after ``optimizer.step()``, once per epoch or per batch as the schedule
is meant). Most schedules are *chainable*: ``get_lr()`` computes the next rate from the
group's current ``"lr"`` (the recursive form), so several schedulers may act on one optimizer;
those with a closed form also have ``_get_closed_form_lr()``, the rate at ``last_epoch``
straight from ``base_lrs``, used by the deprecated ``step(epoch)``.

The base class and its protocol are in ``_lr_base.py``; the schedulers driven by a metric or
by other schedulers (``ReduceLROnPlateau``, ``SequentialLR``, ``ChainedScheduler``) in
``_lr_drivers.py``; this module holds the schedules themselves and exports them all.

Example:
    >>> model = tg.nn.Linear(4, 1)
    >>> opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
    >>> for epoch in range(100):
    ...     train(...)       # opt.step() for each batch
    ...     sched.step()
"""

from __future__ import annotations

import math
import types
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ._lr_base import (
    LRScheduler,
    _check_optimizer,
    _FactorScheduler,
    _group_values,
    _LRScheduler,
    _per_group,
    _positive_int,
    _set_group_value,
)
from ._lr_drivers import ChainedScheduler, ReduceLROnPlateau, SequentialLR
from .optimizer import Optimizer

__all__ = ["LRScheduler", "_LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR",
           "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR",
           "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR",
           "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"]


# -- schedules from a function of the epoch -------------------------------------------------------

class _LambdaScheduler(LRScheduler):
    """Holds one function per group; saves callable objects' ``__dict__`` (not functions or
    lambdas, which cannot be saved) in the state dict, as PyTorch."""

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"{type(self).__name__}: lr_lambda must be callable, got "
                                f"{type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state; ``lr_lambdas`` holds, for each group, the ``__dict__`` of a
        callable object, or None for a function or lambda."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads the state; the saved ``__dict__`` of each callable object is applied to this
        scheduler's object (the functions themselves are not saved)."""
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    r"""Sets the learning rate of each parameter group to the initial lr times a given
    function: ``lr = base_lr * lr_lambda(last_epoch)``.

    Args:
        optimizer: wrapped optimizer.
        lr_lambda: a function which computes a multiplicative factor given an integer
            parameter epoch, or a list of such functions, one for each group.
        last_epoch: the index of last epoch (default -1).

    Example:
        >>> sched = LambdaLR(opt, lr_lambda=lambda epoch: 0.95 ** epoch)
    """

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        return [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]


class MultiplicativeLR(_LambdaScheduler):
    r"""Multiply the learning rate of each parameter group by the factor given in the
    specified function: ``lr = lr * lr_lambda(last_epoch)`` at each step after the first.

    Args:
        optimizer: wrapped optimizer.
        lr_lambda: a function which computes the multiplicative factor of one step given
            the epoch it steps to, or a list of such functions, one for each group.
        last_epoch: the index of last epoch (default -1).

    Example:
        >>> sched = MultiplicativeLR(opt, lr_lambda=lambda epoch: 0.95)
    """

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self._is_initial:
            return self._current_lrs()
        return [g["lr"] * fn(self.last_epoch)
                for g, fn in zip(self.optimizer.param_groups, self.lr_lambdas)]


# -- decays by a factor ----------------------------------------------------------------------------

class StepLR(_FactorScheduler):
    r"""Decays the learning rate of each parameter group by gamma every step_size epochs:
    ``lr = base_lr * gamma ** (last_epoch // step_size)``.

    Args:
        optimizer: wrapped optimizer.
        step_size: period of learning rate decay.
        gamma: multiplicative factor of learning rate decay (default 0.1).
        last_epoch: the index of last epoch (default -1).

    Example:
        >>> # lr = 0.05 if epoch < 30, 0.005 if 30 <= epoch < 60, 0.0005 if 60 <= epoch < 90
        >>> sched = StepLR(opt, step_size=30, gamma=0.1)
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = _positive_int("StepLR", "step_size", step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float:
        return self.gamma if self.last_epoch and self.last_epoch % self.step_size == 0 else 1.0

    def _get_closed_form_lr(self) -> list:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(_FactorScheduler):
    r"""Decays the learning rate of each parameter group by gamma once the number of epoch
    reaches one of the milestones (a milestone listed k times decays by ``gamma ** k``).

    Args:
        optimizer: wrapped optimizer.
        milestones: list of epoch indices.
        gamma: multiplicative factor of learning rate decay (default 0.1).
        last_epoch: the index of last epoch (default -1).

    Example:
        >>> # lr = 0.05 if epoch < 30, 0.005 if 30 <= epoch < 80, 0.0005 if epoch >= 80
        >>> sched = MultiStepLR(opt, milestones=[30, 80], gamma=0.1)
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float:
        k = self.milestones.get(self.last_epoch, 0)
        return self.gamma ** k if k else 1.0

    def _get_closed_form_lr(self) -> list:
        # (a loaded state dict may hold the milestones as a plain dict of counts)
        passed = sum(n for m, n in self.milestones.items() if m <= self.last_epoch)
        return [b * self.gamma ** passed for b in self.base_lrs]


class ExponentialLR(_FactorScheduler):
    r"""Decays the learning rate of each parameter group by gamma every epoch:
    ``lr = base_lr * gamma ** last_epoch``.

    Args:
        optimizer: wrapped optimizer.
        gamma: multiplicative factor of learning rate decay.
        last_epoch: the index of last epoch (default -1).
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float:
        return 1.0 if self._is_initial else self.gamma

    def _get_closed_form_lr(self) -> list:
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


# -- warm-up ramps ---------------------------------------------------------------------------------

class ConstantLR(_FactorScheduler):
    r"""Multiply the learning rate of each parameter group by a small constant factor until
    the number of epoch reaches a pre-defined milestone: total_iters.

    Args:
        optimizer: wrapped optimizer.
        factor: the number we multiply learning rate until the milestone (default 1/3).
        total_iters: the number of steps that the scheduler multiplies the learning rate by
            the factor (default 5).
        last_epoch: the index of last epoch (default -1).

    Example:
        >>> # lr = 0.025 if epoch < 4, 0.05 if epoch >= 4 (base lr 0.05)
        >>> sched = ConstantLR(opt, factor=0.5, total_iters=4)
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float:
        if self.last_epoch == 0:
            return self.factor
        return 1.0 / self.factor if self.last_epoch == self.total_iters else 1.0

    def _get_closed_form_lr(self) -> list:
        done = self.last_epoch >= self.total_iters
        return [b * (self.factor + done * (1 - self.factor)) for b in self.base_lrs]


class LinearLR(_FactorScheduler):
    r"""Decays the learning rate of each parameter group by linearly changing small
    multiplicative factor until the number of epoch reaches a pre-defined milestone:
    total_iters. ``lr = base_lr * (start_factor + (end_factor - start_factor) *
    min(last_epoch, total_iters) / total_iters)``.

    Args:
        optimizer: wrapped optimizer.
        start_factor: the number we multiply learning rate in the first epoch (default 1/3).
        end_factor: the number we multiply learning rate at the end of linear changing
            process (default 1.0).
        total_iters: the number of iterations that multiplicative factor reaches to 1
            (default 5).
        last_epoch: the index of the last epoch (default -1).

    Example:
        >>> # lr = 0.025, 0.03125, 0.0375, 0.04375, then 0.05 (base lr 0.05)
        >>> sched = LinearLR(opt, start_factor=0.5, total_iters=4)
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float:
        if self.last_epoch == 0:
            return self.start_factor
        if self._is_initial or self.last_epoch > self.total_iters:
            return 1.0
        # The ratio of this epoch's factor to the previous one's.
        span = self.end_factor - self.start_factor
        return 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)

    def _get_closed_form_lr(self) -> list:
        done = min(self.total_iters, self.last_epoch)
        return [b * (self.start_factor
                     + (self.end_factor - self.start_factor) * done / self.total_iters)
                for b in self.base_lrs]


class PolynomialLR(_FactorScheduler):
    r"""Decays the learning rate of each parameter group using a polynomial function in the
    given total_iters: ``lr = base_lr * (1 - min(last_epoch, total_iters) / total_iters) **
    power``.

    Args:
        optimizer: wrapped optimizer.
        total_iters: the number of steps that the scheduler decays the learning rate
            (default 5).
        power: the power of the polynomial (default 1.0).
        last_epoch: the index of last epoch (default -1).
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float:
        if self._is_initial or self.last_epoch > self.total_iters:
            return 1.0
        return ((1.0 - self.last_epoch / self.total_iters)
                / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power

    def _get_closed_form_lr(self) -> list:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * (1.0 - frac) ** self.power for b in self.base_lrs]


# -- cosine and one-cycle --------------------------------------------------------------------------

class CosineAnnealingLR(LRScheduler):
    r"""Set the learning rate of each parameter group using a cosine annealing schedule.

    The closed form is ``eta_t = eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) /
    2``; ``step()`` uses the recursive form (PyTorch's), which equals it while nothing else
    changes the rate and keeps following the cosine's shape when something does::

        eta_t = eta_min + (eta_{t-1} - eta_min) * (1 + cos(pi t / T_max))
                                                / (1 + cos(pi (t - 1) / T_max))
        eta_t = eta_{t-1} + (base_lr - eta_min) * (1 - cos(pi / T_max)) / 2
                                                  where (t - 1 - T_max) % (2 T_max) == 0

    (the second where the first would divide by zero, at the cosine's troughs: the schedule
    continues past T_max, rising again).

    Args:
        optimizer: wrapped optimizer.
        T_max: maximum number of iterations.
        eta_min: minimum learning rate (default 0).
        last_epoch: the index of last epoch (default -1).
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and t > 0:  # resumed: start from the closed form
            return self._get_closed_form_lr()
        groups = self.optimizer.param_groups
        if (t - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, g in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (g["lr"] - lo) + lo for g in groups]

    def _get_closed_form_lr(self) -> list:
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]


class OneCycleLR(LRScheduler):
    r"""Sets the learning rate of each parameter group according to the 1cycle learning rate
    policy (Smith & Topin, 2017): from ``max_lr / div_factor`` up to ``max_lr`` and down to
    ``initial_lr / final_div_factor``, stepped after every batch; momentum (SGD's
    ``momentum`` or Adam's ``beta1``) cycles inversely between ``max_momentum`` and
    ``base_momentum``.

    Two phases (``three_phase=False``): up over the first ``pct_start * total_steps - 1``
    steps, then down to the minimum at step ``total_steps - 1``. Three phases: up, back down
    to the initial rate symmetrically, then down to the minimum. Within a phase from rate a to
    b, with fraction ``pct`` of it done, the rate is ``b + (a - b) / 2 * (cos(pi pct) + 1)``
    (``anneal_strategy="cos"``) or ``a + (b - a) pct`` (``"linear"``).

    Args:
        optimizer: wrapped optimizer.
        max_lr: upper learning rate boundaries in the cycle for each parameter group.
        total_steps: the total number of steps in the cycle; or give ``epochs`` and
            ``steps_per_epoch``.
        epochs, steps_per_epoch: the number of epochs and of steps per epoch to train for.
        pct_start: the percentage of the cycle spent increasing the learning rate
            (default 0.3).
        anneal_strategy: ``"cos"`` (default) or ``"linear"``.
        cycle_momentum: if ``True`` (default), momentum is cycled inversely to learning
            rate; the optimizer must have ``momentum`` or ``betas``.
        base_momentum: lower momentum boundaries in the cycle (default 0.85).
        max_momentum: upper momentum boundaries in the cycle (default 0.95).
        div_factor: determines the initial learning rate via
            ``initial_lr = max_lr / div_factor`` (default 25).
        final_div_factor: determines the minimum learning rate via
            ``min_lr = initial_lr / final_div_factor`` (default 1e4).
        three_phase: use the three-phase schedule (default ``False``).
        last_epoch: the index of the last batch (default -1).

    Example:
        >>> sched = OneCycleLR(opt, max_lr=0.01, steps_per_epoch=len(loader), epochs=10)
        >>> for epoch in range(10):
        ...     for batch in loader:
        ...         train_batch(...)
        ...         opt.step()
        ...         sched.step()
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        _check_optimizer("OneCycleLR", optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if not isinstance(pct_start, (int, float)) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        # Each phase: its last step and the group keys it anneals between.
        up = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                       "base_momentum", "max_momentum"),
                _phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                       "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                       "max_momentum"),
            ]
        self._anneal_func_type = anneal_strategy  # (after the phases: state_dict()'s order)
        max_lrs = _per_group("OneCycleLR", "max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _cycled_momentum_key(optimizer) == "betas"
            maxes = _per_group("OneCycleLR", "max_momentum", optimizer, max_momentum)
            bases = _per_group("OneCycleLR", "base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m, b, group in zip(maxes, bases, optimizer.param_groups):
                    self._set_momentum(group, m)
                    group["max_momentum"] = m
                    group["base_momentum"] = b
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, value: float) -> None:
        _set_group_momentum(group, value, self.use_beta1)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        """The next rates; with ``cycle_momentum``, also sets each group's momentum (a side
        effect, as PyTorch's)."""
        self._warn_if_outside_step()
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"Tried to step {t} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                if t <= ph["end_step"] or i == last:
                    pct = (t - start) / (ph["end_step"] - start)
                    lrs.append(self._anneal_func(group[ph["start_lr"]], group[ph["end_lr"]],
                                                 pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal_func(
                            group[ph["start_momentum"]], group[ph["end_momentum"]], pct))
                    break
                start = ph["end_step"]
        return lrs


def _cycled_momentum_key(optimizer: Optimizer) -> str:
    """"momentum" (SGD, RMSprop) or "betas" (Adam's family: beta1 cycles): what a schedule
    with ``cycle_momentum`` sets."""
    for key in ("momentum", "betas"):
        if key in optimizer.defaults:
            return key
    raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option "
                     "enabled")


def _set_group_momentum(group: dict, value: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class CosineAnnealingWarmRestarts(LRScheduler):
    r"""Cosine annealing with warm restarts (SGDR, Loshchilov & Hutter, 2017), as PyTorch's::

        eta_t = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2

    ``T_cur`` counts the epochs since the last restart and ``T_i`` is the current cycle's
    length: ``T_0``, then multiplied by ``T_mult`` at each restart. ``step(epoch)`` may be
    given a fractional epoch (batches within an epoch), without the deprecation warning of
    the other schedulers' ``step(epoch)``.

    Args:
        optimizer: wrapped optimizer.
        T_0: number of iterations until the first restart.
        T_mult: a factor by which T_i increases after a restart (default 1).
        eta_min: minimum learning rate (default 0).
        last_epoch: the index of the last epoch (default -1).
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if isinstance(T_0, bool) or not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if isinstance(T_mult, bool) or not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        c = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advances one epoch, or sets the schedule to ``epoch`` (fractional allowed)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                # (a remainder, not a difference: a schedule resumed at last_epoch past
                # several cycles restarts at a multiple of T_i, as PyTorch's)
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:  # the restart epoch is in: T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


class CyclicLR(LRScheduler):
    r"""Cycles the learning rate between ``base_lr`` and ``max_lr`` (Smith, 2017), stepped
    after every batch, as PyTorch's.

    With ``cycle = floor(1 + t / (up + down))`` and ``x`` the position within it, the rate
    rises linearly over ``step_size_up`` steps and falls over ``step_size_down``::

        lr = base_lr + (max_lr - base_lr) * ramp(x) * scale

    ``scale`` is 1 (``mode="triangular"``), halved each cycle (``"triangular2"``:
    ``1 / 2^(cycle - 1)``), ``gamma^t`` (``"exp_range"``), or ``scale_fn`` of the cycle or of
    ``t`` (``scale_mode``). With ``cycle_momentum`` the momentum (or Adam's beta1) cycles
    inversely, between ``max_momentum`` and ``base_momentum``.

    Args:
        optimizer: wrapped optimizer.
        base_lr, max_lr: the cycle's bounds, one value or one per group.
        step_size_up: steps in the rising half (default 2000); step_size_down: in the falling
            half (default: step_size_up).
        mode: ``"triangular"``, ``"triangular2"`` or ``"exp_range"``; gamma: exp_range's base.
        scale_fn: a custom scale (then ``mode`` is ignored); scale_mode: ``"cycle"`` or
            ``"iterations"``, what ``scale_fn`` is applied to.
        cycle_momentum: cycle the momentum too (default True); base_momentum, max_momentum:
            its bounds (defaults 0.8 and 0.9).
        last_epoch: the index of the last batch (default -1).
    """

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1) -> None:
        _check_optimizer("CyclicLR", optimizer)
        base_lrs = _per_group("CyclicLR", "base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _per_group("CyclicLR", "max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _cycled_momentum_key(optimizer) == "betas"
            self.base_momentums = _per_group("CyclicLR", "base_momentum", optimizer,
                                             base_momentum)
            self.max_momentums = _per_group("CyclicLR", "max_momentum", optimizer,
                                            max_momentum)
            if last_epoch == -1:
                for m, b, group in zip(self.max_momentums, self.base_momentums,
                                       optimizer.param_groups):
                    _set_group_momentum(group, m, self.use_beta1)
                    group["max_momentum"], group["base_momentum"] = m, b
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "exp_range":
            self.scale_mode = "iterations"
        else:
            self.scale_mode = "cycle"

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma ** x
        return 1.0

    def get_lr(self) -> list:
        """The next rates; with ``cycle_momentum``, also sets each group's momentum (a side
        effect, as PyTorch's)."""
        self._warn_if_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            ramp = x / self.step_ratio
        else:
            ramp = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [b + (m - b) * ramp * scale for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for b, m, group in zip(self.base_momentums, self.max_momentums,
                                   self.optimizer.param_groups):
                _set_group_momentum(group, m - (m - b) * ramp * scale, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """As the base class's, with a custom ``scale_fn`` kept only as its ``__dict__`` (a
        callable object's state; a plain function is not saved), as PyTorch's."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a ``state_dict()``; a saved custom ``scale_fn``'s ``__dict__`` updates this
        scheduler's ``scale_fn``. As PyTorch's, this takes ``"_scale_fn_custom"`` out of the
        caller's dict (PyTorch would then raise KeyError when the same dict is loaded again;
        here a dict without the key loads, keeping this scheduler's ``scale_fn`` as it is)."""
        fn = state_dict.pop("_scale_fn_custom", None)
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str,
           end_momentum: str) -> dict:
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}
