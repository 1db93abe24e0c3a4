"""``swap_in_optimizer_params_and_state``: run an optimizer, for the duration of a ``with``
block, on other parameter tensors and another (``state_dict()``-shaped) state, then put its
own back (PyTorch's ``torch.optim.swap_in_optimizer_params_and_state``)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ..autograd.tensor import Tensor
from .optimizer import Optimizer

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _checked_state(state: Any) -> dict:
    """``state`` must map packed parameter ids to per-parameter state dicts."""
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           f"packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           f"packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           f"dictionaries.")
    return state


def _checked_group(idx: int, live: dict, group: Any) -> list:
    """The packed ids of saved group ``idx``, checked against the live group: a dict with a
    ``"params"`` list of ints as long as the live group's, and exactly the live group's keys."""
    if not isinstance(group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           f"param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(live["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                           f"params than the live optimizer param group.")
    swapin_only = [k for k in group if k not in live]
    live_only = [k for k in live if k not in group]
    if swapin_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to "
                           f"exactly match the live optimizer group keys for group {idx}. "
                           f"Keys only in swap-in: {swapin_only}. Keys only in live: "
                           f"{live_only}.")
    return ids


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer, swapin_parameters: dict,
                                       swapin_optim_state: dict) -> Iterator[None]:
    """Temporarily replaces an optimizer's parameters and state with the supplied ones,
    restoring them on exit.

    Inside the block every optimizer API (``step``, ``state_dict``, the hooks) sees the
    swapped-in values. Unlike ``load_state_dict``, which only replaces the state, this also
    replaces the parameters, so that ``optimizer.step()`` updates the tensors you supply.

    Args:
        optimizer: the live optimizer; its state must already be initialized (a step taken).
        swapin_parameters: tensors to use as parameters inside the block (a dict, e.g.
            ``dict(model.named_parameters())`` of another model), in the order of the
            optimizer's parameters (group by group).
        swapin_optim_state: an ``optimizer.state_dict()``-shaped dict (``{"state": ...,
            "param_groups": ...}``) holding the state to install: ``"state"`` keyed by packed
            parameter ids, each group's ``"params"`` a list of those ids and its other keys
            exactly the live group's. Only in-place changes of its tensors propagate back to
            it; other changes made inside the block (a state entry replaced by a new tensor)
            are dropped.

    Raises:
        RuntimeError: as PyTorch's: the optimizer has no state yet, or ``swapin_optim_state``
            is not shaped as a ``state_dict()`` of this optimizer (group count, parameter
            counts, group keys, ids), or there are fewer tensors than parameters.

    Example:
        >>> import tritongrad as tg
        >>> model, shadow = tg.nn.Linear(2, 1), tg.nn.Linear(2, 1)
        >>> opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> model(tg.ones(1, 2)).sum().backward(); opt.step()
        >>> shadow(tg.ones(1, 2)).sum().backward()
        >>> osd = opt.state_dict()
        >>> with tg.optim.swap_in_optimizer_params_and_state(
        ...         opt, dict(shadow.named_parameters()), osd):
        ...     opt.step()   # updates shadow's parameters and osd's momentum buffers
    """
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(swapin_optim_state.get("state"))
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    # the tensors are matched to the parameters by order: [[0, 1], [2]] with tensors
    # [a, b, c] puts a, b in the first group and c in the second
    tensors = list(swapin_parameters.values())
    plan, offset, seen = [], 0, set()
    for idx, (live, group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _checked_group(idx, live, group)
        seen.update(ids)
        if offset + len(ids) > len(tensors):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               f"optimizer.param_groups ordering.")
        plan.append((live, group, tensors[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")

    original_state = optimizer.state
    # (shallow copies: restoring them keeps the identity of each group's own params list)
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: defaultdict = defaultdict(dict)
        for live, group, params in plan:
            live["params"] = params
            live.update((k, v) for k, v in group.items() if k != "params")
            for p, pid in zip(params, group["params"]):
                # a shallow copy: in-place tensor updates reach the caller's dict, entries
                # added or replaced inside the block do not
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
