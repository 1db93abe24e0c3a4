"""``GradScaler``: dynamic loss scaling for mixed precision training (PyTorch's
``torch.amp.GradScaler``).

float16 gradients of small magnitude flush to zero. The scaler multiplies the loss by a scale
factor before backward, so the gradients are scaled by it too, then divides them by it again
(``unscale_``) before the optimizer uses them. If any gradient is inf or NaN, the step is
skipped and the scale shrinks (``backoff_factor``); after ``growth_interval`` steps without
one it grows (``growth_factor``). See docs/training.md, "Mixed precision".
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import numpy as np

from ..autograd.grad_mode import no_grad
from ..autograd.ops.creation import full
from ..autograd.ops.shape import cat
from ..autograd.tensor import Tensor
from ..runtime.dtype import bfloat16, float16, float32, int32

__all__ = ["GradScaler", "OptState"]


def _amp_foreach_non_finite_check_and_unscale_(grads: list, found_inf: Tensor,
                                               inv_scale: Tensor) -> None:
    """PyTorch's ``torch._amp_foreach_non_finite_check_and_unscale_``: sets ``found_inf`` (a
    1-element float32 tensor) to 1.0 if any of ``grads`` (tensors of one device) holds an inf
    or NaN, then multiplies each of them in place by ``inv_scale`` (a 1-element float32
    tensor), float16 and bfloat16 ones computed in float32 and rounded once, as PyTorch's
    kernel does (multiplying by ``inv_scale`` rounded to their dtype would be off by up to
    one unit in the last place)."""
    if not grads:
        return
    with no_grad():
        # Checked before unscaling, as PyTorch does: a scale below 1 (after many backoffs)
        # can turn a finite gradient infinite, and that one does not skip the step there.
        # One reduction per dtype; the flag is set (0 or 1, never more) without a host sync.
        by_dtype: dict = defaultdict(list)
        for g in grads:
            by_dtype[g.dtype].append(g.reshape(-1))
        for flats in by_dtype.values():
            flat = cat(flats) if len(flats) > 1 else flats[0]
            found_inf.copy_(found_inf.logical_or(flat.isfinite().all().logical_not()))
        for g in grads:
            if g.dtype is float16 or g.dtype is bfloat16:
                g.copy_(g.float().mul_(inv_scale))
            else:
                g.mul_(inv_scale)


def _amp_update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor,
                       growth_factor: float, backoff_factor: float,
                       growth_interval: int) -> Tensor:
    """PyTorch's ``torch._amp_update_scale_``: ``scale`` (a 1-element float32 tensor)
    multiplied in place by ``backoff_factor`` when ``found_inf`` is nonzero (the growth
    tracker reset), else the tracker (an int32 tensor) counts one more clean step, and at
    ``growth_interval`` of them the scale is multiplied by ``growth_factor`` (kept only while
    finite) and the tracker reset. Returns ``scale``."""
    s, t = scale.item(), int(growth_tracker.item())
    with np.errstate(over="ignore"):  # (products in double, rounded to float32 once)
        if found_inf.item():
            s, t = float(np.float32(s * backoff_factor)), 0
        elif t + 1 == growth_interval:
            grown = np.float32(s * growth_factor)
            s, t = (float(grown) if np.isfinite(grown) else s), 0
        else:
            t += 1
    scale.fill_(s)
    growth_tracker.fill_(t)
    return scale


class OptState(Enum):
    """Where an optimizer is in the iteration: nothing done yet, gradients unscaled, stepped."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scales the loss, unscales the gradients, skips steps whose gradients overflowed, and
    adjusts the scale factor.

    Typical use, with ``autocast`` (the same on the CPU with ``"cpu"``)::

        scaler = tg.amp.GradScaler("cuda")
        for input, target in data:
            optimizer.zero_grad()
            with tg.autocast("cuda"):
                loss = loss_fn(model(input), target)
            scaler.scale(loss).backward()
            scaler.step(optimizer)   # unscales, then steps unless a gradient is inf/NaN
            scaler.update()          # adjusts the scale for the next iteration

    Args:
        device: the device type of the gradients: "cuda" (default) or "cpu".
        init_scale: the initial scale factor. Default: 2.**16.
        growth_factor: what the scale is multiplied by after ``growth_interval`` consecutive
            iterations without inf/NaN gradients. Default: 2.0.
        backoff_factor: what the scale is multiplied by in an iteration whose gradients hold
            an inf or NaN. Default: 0.5.
        growth_interval: the number of consecutive iterations without inf/NaN gradients after
            which the scale grows. Default: 2000.
        enabled: if False, ``step`` simply calls ``optimizer.step()`` and the other methods do
            nothing. Default: True.

    Example:
        >>> model = tg.nn.Linear(4, 1)
        >>> opt = tg.optim.SGD(model.parameters(), lr=0.1)
        >>> scaler = tg.amp.GradScaler("cpu", init_scale=1024.)
        >>> scaler.scale(model(tg.randn(8, 4)).sum()).backward()
        >>> scaler.step(opt)
        >>> scaler.update()
        >>> scaler.get_scale()
        1024.0
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled:
            from ..runtime.cuda_api import is_available
            if not is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available."
                              "  Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None  # made on the first scale(), on its device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: defaultdict = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier "
               "in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        # 0-dim, so that scaling a float16 loss keeps it float16 (PyTorch's promotion rule)
        self._scale = full((), self._init_scale, dtype=float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=int32, device=dev)

    def scale(self, outputs):
        """Multiplies ``outputs`` (a Tensor, or an iterable of them, nested) by the scale
        factor. Returns them unmodified when the scaler is disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        if isinstance(outputs, (list, tuple)):
            scaled = [self.scale(v) for v in outputs]
            return type(outputs)(scaled) if isinstance(outputs, tuple) else scaled
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, found_inf: Tensor,
                        allow_fp16: bool) -> dict:
        """Multiplies every gradient by ``inv_scale`` in place; returns, per device, a copy of
        ``found_inf`` set to 1.0 when any of that device's gradients holds an inf or NaN."""
        per_device: dict = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if not isinstance(p, Tensor):
                        raise AssertionError(
                            f"expected param to be torch.Tensor, got {type(p).__name__}")
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    per_device[g.device].append(g)
        found = {}
        for dev, grads in per_device.items():
            found[dev] = found_inf if found_inf.device == dev else found_inf.to(device=dev)
            _amp_foreach_non_finite_check_and_unscale_(grads, found[dev],
                                                       inv_scale.to(device=dev))
        return found

    def unscale_(self, optimizer) -> None:
        """Divides ("unscales") the optimizer's gradients by the scale factor, in place.

        Call it between ``backward`` and ``step`` to inspect or clip the true gradients;
        ``step`` then does not unscale them again. At most once per optimizer per ``update``.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in double precision, as PyTorch computes it, then float32
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscales the gradients (unless ``unscale_`` did already) and calls
        ``optimizer.step(*args, **kwargs)`` unless they hold an inf or NaN, in which case the
        step is skipped. Returns what ``optimizer.step`` returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def _maybe_opt_step(self, optimizer, optimizer_state: dict, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless an inf or NaN was found."""
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Updates the scale factor: multiplied by ``backoff_factor`` if any optimizer's
        gradients held an inf or NaN this iteration, by ``growth_factor`` after
        ``growth_interval`` iterations in a row without; or set to ``new_scale``. Call it once
        per iteration, after every ``step``."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not (isinstance(new_scale, Tensor) and new_scale.device.type == self._device
                        and new_scale.numel() == 1 and not new_scale.requires_grad):
                    raise AssertionError(reason)
                scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [f for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            found = found_infs[0].to(device=scale.device)
            for f in found_infs[1:]:
                found = found + f.to(device=scale.device)
            _amp_update_scale_(scale, tracker, found, self._growth_factor,
                               self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def get_scale(self) -> float:
        """The current scale factor (the initial one before the first ``scale``; 1.0 when
        disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self) -> float:
        """The scale growth factor."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Sets the scale growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The scale backoff factor."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Sets the scale backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The growth interval."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Sets the growth interval."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None \
            else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        """Whether the scaler is enabled."""
        return self._enabled

    def state_dict(self) -> dict:
        """The scaler's state: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval`` and ``_growth_tracker`` (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Loads a state from ``state_dict()``."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        # (pickled as PyTorch's: the scale and tracker as numbers, made again on first use)
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def _get_scale_async(self) -> Tensor | None:
        return self._scale

    def _check_inf_per_device(self, optimizer) -> dict:
        """Records, without unscaling, whether each device's gradients hold an inf or NaN."""
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = full((), 1.0, dtype=float32, device=scale.device)
        found_inf = full((), 0.0, dtype=float32, device=scale.device)
        state = self._per_optimizer_states[id(optimizer)]
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, dummy_inv_scale,
                                                             found_inf, True)
        return state["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
