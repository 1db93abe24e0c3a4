"""The learning-rate scheduler protocol shared by every schedule in ``lr_scheduler``: the
``LRScheduler`` base class (``initial_lr`` and ``base_lrs``, the constructor's first step,
``step()`` and its call-order warnings, state dicts) and small argument checks."""

from __future__ import annotations

import warnings
import weakref
from functools import wraps
from typing import Any

from ..autograd.tensor import Tensor
from .optimizer import Optimizer

__all__ = ["LRScheduler", "_LRScheduler"]

_EPOCH_DEPRECATION = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler. During the "
    "deprecation, if epoch is different from None, the closed form is used instead of the "
    "new chainable form, where available.")
# where PyTorch's call-order warnings send the user
_ORDER_DOCS = "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"


def _check_optimizer(owner: str, optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not an Optimizer")


def _per_group(owner: str, name: str, optimizer: Optimizer, value) -> list:
    """``value`` for each parameter group: a list or tuple of one per group, or one value."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{owner}: {name} must have the same length as "
                             f"optimizer.param_groups. {name} has {len(value)} values, "
                             f"param_groups has {n}.")
        return list(value)
    return [value] * n


# Note [Tensor learning rates]
# A group's "lr" may be a one-element Tensor (PyTorch allows it, so that a compiled or captured
# step reads the rate from memory). As PyTorch's, a scheduler then writes each new rate into
# that tensor in place (``_set_group_value``), never replacing it, so whatever holds the
# tensor sees the schedule; and every list it keeps of the rates (``base_lrs``,
# ``get_last_lr()``, ``initial_lr``) holds clones (``_group_values``), which later fills leave
# as they were.

def _group_values(optimizer: Optimizer, key: str) -> list:
    """``group[key]`` of each parameter group, Tensors cloned (Note [Tensor learning
    rates])."""
    return [_copy(group[key]) for group in optimizer.param_groups]


def _copy(value):
    return value.clone() if isinstance(value, Tensor) else value


def _set_group_value(group: dict, key: str, value) -> None:
    """Sets ``group[key]`` to ``value``: a Tensor already there is filled in place (Note
    [Tensor learning rates])."""
    current = group[key]
    if isinstance(current, Tensor):
        current.fill_(float(value.item()) if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def _positive_int(owner: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return value


class LRScheduler:
    r"""Adjusts the learning rate of each of an optimizer's parameter groups during
    optimization; the base class of the schedulers.

    On construction with ``last_epoch=-1`` each group's ``"initial_lr"`` is set to its
    ``"lr"`` (unless already there), ``base_lrs`` lists them, and the scheduler takes its first
    step (``last_epoch`` becomes 0, the rate at epoch 0 is set). Resuming with
    ``last_epoch >= 0`` needs the groups' ``"initial_lr"`` (restored with the optimizer's
    state dict).

    Subclasses implement ``get_lr()`` (the next rates, from ``last_epoch`` and the groups'
    current rates) and optionally ``_get_closed_form_lr()``.

    Args:
        optimizer: wrapped optimizer.
        last_epoch: the index of the last epoch (default -1: a new schedule).

    Raises:
        TypeError: ``optimizer`` is not an ``Optimizer``.
        KeyError: resuming (``last_epoch >= 0``) without ``"initial_lr"`` in a group.
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   f"when resuming scheduler with last_epoch >= 0.\nThis "
                                   f"typically happens when:\n1. You're trying to resume "
                                   f"training from a checkpoint but haven't properly loaded the "
                                   f"optimizer state\n2. You're using last_epoch >= 0 for a "
                                   f"fresh training run (not recommended)")
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """Resets the step count and takes the constructor's step."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: every entry of ``self.__dict__`` but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads the scheduler's state (a ``state_dict()``)."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The most recent learning rates computed by this scheduler, one per group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The next learning rate of each group (called by ``step()``; to read the current
        rate, use ``get_last_lr()``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_lr()")

    def _warn_if_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def step(self, epoch: int | None = None) -> None:
        """Advances the schedule by one (call it after ``optimizer.step()``).

        Args:
            epoch: deprecated, as in PyTorch: sets ``last_epoch`` to ``epoch`` and uses the
                closed form where the scheduler has one.
        """
        if self._step_count == 1:
            # The old order (scheduler before optimizer) skips the schedule's first value.
            # (PyTorch 2.13's words: the API and its documentation are PyTorch's)
            if not getattr(self.optimizer.step, "_wrapped_by_lr_sched", False):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning "
                              "rate scheduler initialization. Please, make sure to call "
                              "`optimizer.step()` before `lr_scheduler.step()`. See more "
                              f"details at {_ORDER_DOCS}", UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before "
                              "`optimizer.step()`. In PyTorch 1.1.0 and later, you should call "
                              "them in the opposite order: `optimizer.step()` before "
                              "`lr_scheduler.step()`.  Failure to do this will result in "
                              "PyTorch skipping the first value of the learning rate schedule. "
                              f"See more details at {_ORDER_DOCS}", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _current_lrs(self, factor: float = 1.0) -> list:
        """Each group's current learning rate (a clone of a Tensor one), times ``factor`` (the
        recursive forms' step)."""
        if factor == 1.0:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * factor for group in self.optimizer.param_groups]


class _FactorScheduler(LRScheduler):
    """A schedule whose step multiplies every group's current rate by one factor, which a
    subclass gives in ``_factor()`` (1.0 on the constructor's initial step unless it says
    otherwise)."""

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        return self._current_lrs(self._factor())

    def _factor(self) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement _factor()")


class _LRScheduler(LRScheduler):
    """The base class's former name, kept for code that subclasses it."""


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Wraps ``optimizer.step`` (once) so that it records having been called: ``step()`` of a
    scheduler warns when it runs first (the pre-1.1 PyTorch order)."""
    if getattr(optimizer.step, "_wrapped_by_lr_sched", False):
        return
    func = optimizer.step.__func__
    ref = weakref.ref(optimizer)  # no cycle through the instance attribute

    @wraps(func)
    def wrapper(*args, **kwargs):
        opt = ref()
        opt._opt_called = True
        return func(opt, *args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper
