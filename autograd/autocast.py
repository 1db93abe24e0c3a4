"""Autocasting (automatic mixed precision): ``autocast`` and the casting every listed op does.

Inside an ``autocast(device_type)`` region, ops on tensors of that device type run in the
dtype their policy names, PyTorch's "Autocast Op Reference":

    lower    the region's lower precision dtype (float16 or bfloat16): matmuls, linear, conv,
             attention, where it is fast and safe
    float32  float32: ops that need its range or precision (reductions, exp/log, losses, norms)
    promote  the widest floating dtype among the inputs: ops with several float inputs that
             must agree (cat, stack, addcmul, index_put)
    banned   refused with PyTorch's error (binary_cross_entropy on CUDA)

An op's policy is one field of its row in the op tables (``OpInfo.autocast``: the policy, or
per device type, "float32 on cuda"), or, for nn.functional's composites, the argument of
``autocast_op``; both go through ``entry``, the one place casting happens. Only floating
point tensors of the region's device type, other than float64, are cast (PyTorch's
eligibility); ops called with an explicit ``dtype=`` or ``out=`` run as called; the op runs
with autocast suspended, so the ops it is made of are not cast again (PyTorch excludes the
Autocast dispatch key likewise). Casts are ordinary recorded ops (``Tensor.to``), so backward
runs in the dtypes the forward used and gradients reach each input in its own dtype.

Note [Autocast cost]
Outside any region a listed op costs one more Python call and one test of a module global
(``_threads_on``, the number of threads with a region enabled), and unlisted ops cost nothing:
the check sits at the listed ops' entries, not in dispatch, which every primitive passes
(including those that composites such as addmm are made of, whose policy is the composite's).
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable

import numpy as np

from ..runtime.dtype import bfloat16, float16, float32, float64, promote_types
from ..runtime.dtype import dtype as _dtype
from .state import state
from .tensor import Tensor

__all__ = [
    "POLICIES",
    "autocast",
    "autocast_decrement_nesting",
    "autocast_increment_nesting",
    "autocast_op",
    "clear_autocast_cache",
    "entry",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_cache_enabled",
    "is_autocast_enabled",
    "parse_policy",
    "set_autocast_cache_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "suspended",
]

POLICIES = ("lower", "float32", "promote", "banned")
_DEVICE_TYPES = ("cpu", "cuda")
_DEFAULT_DTYPE = {"cpu": bfloat16, "cuda": float16}
_SUPPORTED = (bfloat16, float16)
# The device types a device string may start with (PyTorch's list, for its error): of these
# only cpu and cuda have autocast here; the others are refused as unsupported.
_KNOWN_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep",
                       "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta",
                       "hpu", "mtia", "privateuseone")

_BANNED_MSG = {
    "binary_cross_entropy": (
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
        "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
        "In this case, combine the two layers using "
        "torch.nn.functional.binary_cross_entropy_with_logits\n"
        "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
        "safe to autocast."),
}


class _State(threading.local):
    """This thread's autocast state (PyTorch's is thread-local too)."""

    def __init__(self):
        self.enabled = dict.fromkeys(_DEVICE_TYPES, False)
        self.dtype = dict(_DEFAULT_DTYPE)
        self.cache_enabled = True
        self.nesting = 0
        # (id(leaf), grad mode) -> (leaf, its version when cast, the cast): casts of float32
        # leaves that require grad (weights), reused by every op of the outermost region,
        # cleared on exit
        self.cache: dict = {}
        self.on = False  # some device type enabled and not suspended by a running listed op


_tls = _State()
_threads_on = 0  # threads whose _tls.on is True: the one test a listed op makes otherwise
_lock = threading.Lock()


def _set_on(value: bool) -> None:
    global _threads_on
    if value != _tls.on:
        _tls.on = value
        with _lock:
            _threads_on += 1 if value else -1


def _refresh() -> None:
    _set_on(any(_tls.enabled.values()))


def _parse_device_type(device_type: str, api: str) -> str | None:
    """``device_type`` as a key of the state ("cuda:1" -> "cuda"), or None for a device type
    without autocast here; PyTorch's errors for a non-string and an unknown device string."""
    if type(device_type) is str and device_type in _DEFAULT_DTYPE:  # (the common case)
        return device_type
    if not isinstance(device_type, str):
        raise TypeError(f"{api}(): argument 'device_type' (position 1) must be str, not "
                        f"{type(device_type).__name__}")
    base, colon, index = device_type.partition(":")
    if base not in _KNOWN_DEVICE_TYPES or (colon and not index.isdigit()):
        raise RuntimeError(f"Expected one of {', '.join(_KNOWN_DEVICE_TYPES)} device type at "
                           f"start of device string: {device_type}")
    return base if base in _DEFAULT_DTYPE else None


def _check_device_type(device_type: str, api: str = "autocast") -> str:
    """``device_type``'s key in the state; RuntimeError for one without autocast here."""
    key = _parse_device_type(device_type, api)
    if key is None:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return key


def _check_bool(value, api: str) -> bool:
    # (PyTorch's bindings take a bool only: a 0/1 or a string is refused, not truth-tested)
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{api}(): argument 'enabled' (position 2) must be bool, not "
                        f"{type(value).__name__}")
    return bool(value)


def is_autocast_available(device_type: str) -> bool:
    """Returns whether autocast is available for ``device_type`` ("cpu" and "cuda", with or
    without an index); RuntimeError for a string that names no device type."""
    return _parse_device_type(device_type, "is_autocast_available") is not None


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Returns whether autocast is enabled for ``device_type`` in this thread. Without an
    argument it answers for CUDA (PyTorch's older form)."""
    device_type = "cuda" if device_type is None else device_type
    if device_type == "meta":  # (a meta tensor's ops ask: never cast, Note [The meta device])
        return False
    return _tls.enabled[_check_device_type(device_type, "is_autocast_enabled")]


def set_autocast_enabled(device_type: str | bool, enabled: bool | None = None) -> None:
    """Enables or disables autocast for ``device_type`` in this thread (prefer ``autocast``,
    which restores the previous state). ``set_autocast_enabled(enabled)``, PyTorch's older
    form, sets it for CUDA."""
    if enabled is None and isinstance(device_type, (bool, np.bool_)):
        device_type, enabled = "cuda", device_type
    key = _check_device_type(device_type, "set_autocast_enabled")
    _tls.enabled[key] = _check_bool(enabled, "set_autocast_enabled")
    _refresh()


def get_autocast_dtype(device_type: str) -> _dtype:
    """Returns the lower precision dtype autocast uses for ``device_type``: by default
    bfloat16 on the CPU and float16 on CUDA."""
    return _tls.dtype[_check_device_type(device_type, "get_autocast_dtype")]


def set_autocast_dtype(device_type: str, dtype: _dtype) -> None:
    """Sets the lower precision dtype autocast uses for ``device_type`` in this thread."""
    key = _check_device_type(device_type, "set_autocast_dtype")
    if not isinstance(dtype, _dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be "
                        f"tritongrad.dtype, not {type(dtype).__name__}")
    _tls.dtype[key] = dtype


def is_autocast_cache_enabled() -> bool:
    """Returns whether autocast regions cache the casts of weights (this thread)."""
    return _tls.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Sets whether autocast regions cache the casts of weights (this thread)."""
    if not isinstance(enabled, (bool, np.bool_)):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _tls.cache_enabled = bool(enabled)


def autocast_increment_nesting() -> int:
    """Enters one more autocast nesting level; returns the new depth (``autocast`` does this;
    the cache of casts is cleared when the depth returns to 0)."""
    _tls.nesting += 1
    return _tls.nesting


def autocast_decrement_nesting() -> int:
    """Leaves one autocast nesting level; returns the new depth (PyTorch's: it may go below
    0 when called unpaired)."""
    _tls.nesting -= 1
    return _tls.nesting


class suspended:
    """Autocast off for every device type while inside, the enabled state left as it is (so
    ``is_autocast_enabled`` still answers True): for calls PyTorch does not autocast though
    the op is listed, such as the ``out=`` forms. Cheap: one test when no region is on."""

    __slots__ = ("_was_on",)

    def __enter__(self) -> None:
        self._was_on = _tls.on
        if self._was_on:
            _set_on(False)

    def __exit__(self, *exc) -> bool:
        if self._was_on:
            _refresh()
        return False


def clear_autocast_cache() -> None:
    """Drops this thread's cached casts (done on leaving the outermost region)."""
    _tls.cache.clear()


class autocast:
    """Context manager (and decorator) for regions where ops run in mixed precision.

    In an autocast-enabled region, ops on ``device_type`` tensors run in an op-specific
    dtype chosen to improve performance while keeping accuracy: matmuls and convolutions in
    ``dtype``, reductions, exp/log and losses in float32 (see docs/ops.md's autocast column
    and docs/training.md). Only the forward pass (model and loss) belongs in the region;
    backward ops run in the dtype autocast chose for the corresponding forward ops.
    ``autocast(enabled=False)`` subregions can be nested in enabled ones. The state is
    thread-local.

    Args:
        device_type: "cuda" or "cpu" (a tensor's ``device.type``; "cuda:0" names CUDA too).
        dtype: the lower precision dtype: float16 or bfloat16. Default: ``get_autocast_dtype
            (device_type)`` (float16 on CUDA, bfloat16 on the CPU).
        enabled: whether autocasting is enabled in the region. Default: True.
        cache_enabled: whether the casts of weights (float32 leaves that require grad) are
            cached and reused within the region. Default: ``is_autocast_cache_enabled()``.

    Example:
        >>> a, b = tg.rand(8, 8), tg.rand(8, 8)
        >>> with tg.autocast("cpu"):
        ...     c = a @ b
        >>> c.dtype
        tritongrad.bfloat16
    """

    def __init__(self, device_type: str, dtype: _dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(  # noqa: TRY004 - PyTorch raises ValueError here
                f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self._key = _check_device_type(device_type)  # ("cuda:0" -> "cuda")
        self.device = device_type
        self.fast_dtype = _tls.dtype[self._key] if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else cache_enabled
        if enabled:
            if self._key == "cuda":
                from ..runtime.cuda_api import is_available
                if not is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
            if enabled and self.fast_dtype not in _SUPPORTED:
                name = self._key.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              + ", ".join(map(str, _SUPPORTED)) + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled  # (checked to be a bool on entering, as PyTorch does)

    def __enter__(self):
        # (the arguments' types first, so that a refused region changes no state)
        enabled = _check_bool(self._enabled, "set_autocast_enabled")
        if not isinstance(self._cache_enabled, (bool, np.bool_)):
            raise TypeError(f"enabled must be a bool (got {type(self._cache_enabled).__name__})")
        key = self._key
        self._prev = (_tls.enabled[key], _tls.dtype[key], _tls.cache_enabled, _tls.on)
        _tls.enabled[key] = enabled
        _tls.dtype[key] = self.fast_dtype
        _tls.nesting += 1
        _tls.cache_enabled = bool(self._cache_enabled)
        _refresh()
        return self

    def __exit__(self, *exc) -> bool:
        _tls.nesting -= 1
        if _tls.nesting == 0:  # leaving the outermost region: cached casts are stale now
            _tls.cache.clear()
        key = self._key
        _tls.enabled[key], _tls.dtype[key], _tls.cache_enabled, on = self._prev
        # (as it was on entering: a region entered inside a listed op, where autocast is
        # suspended, leaves it suspended for the rest of that op)
        _set_on(on)
        return False

    def _clone(self) -> autocast:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __call__(self, func: Callable) -> Callable:
        """Decorates ``func`` to run inside the region (each call in a fresh copy of it, so a
        recursive or concurrent call does not overwrite another's saved state; PyTorch's
        shares one, and a recursive call leaves its region enabled after returning)."""
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you "
                f"mean to use autocast as a context manager? For example:\n"
                f"    with tritongrad.autocast(device_type=...):\n"
                f"        output = model(input)")

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self._clone():
                return func(*args, **kwargs)
        return decorated


# -- the op entry --------------------------------------------------------------------------------

def parse_policy(spec: str) -> dict[str, str]:
    """``"lower"`` -> the policy for both device types; ``"float32 on cuda"`` -> for CUDA only;
    ``"float32 on cpu, banned on cuda"`` -> one each."""
    out: dict[str, str] = {}
    for part in spec.split(","):
        policy, _, device_type = part.strip().partition(" on ")
        if policy not in POLICIES or (device_type and device_type not in _DEVICE_TYPES):
            raise ValueError(f"autocast policy must be one of {POLICIES}, optionally followed "
                             f"by ' on <device type>', got {spec!r}")
        for d in (device_type,) if device_type else _DEVICE_TYPES:
            out[d] = policy
    return out


def _tensors(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors(a)


def _eligible(t: Tensor, device_type: str) -> bool:
    return t._dtype.is_floating_point and t._dtype is not float64 \
        and t._device.type == device_type


def _cast(t: Tensor, to: _dtype, device_type: str):
    """``t`` in dtype ``to`` when eligible; casts of weights go through the region's cache."""
    if not _eligible(t, device_type) or t._dtype is to:
        return t
    cacheable = (_tls.cache_enabled and to is not float32 and t._dtype is float32
                 and t._requires_grad and t._grad_fn is None and t._base is None)
    if not cacheable:
        return t.to(to)
    # Keyed by grad mode too: a cast made under no_grad has no history, and reusing it with
    # grad on would cut the weight out of the graph. The version check recasts a weight
    # updated in place within the region (PyTorch's cache would return the stale cast).
    key = (id(t), state.grad_enabled)
    hit = _tls.cache.get(key)
    if hit is not None and hit[0] is t and hit[1] == t._vc[0] and hit[2]._dtype is to:
        return hit[2]
    out = t.to(to)
    _tls.cache[key] = (t, t._vc[0], out)
    return out


def _cast_args(args, to, device_type):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = _cast(a, to, device_type)
        elif isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
            a = type(a)(_cast_args(a, to, device_type))
        out.append(a)
    return out


def _run(name: str, fn: Callable, policies: dict, args: tuple, kwargs: dict):
    """``fn`` called under autocast: its eligible inputs cast by its policy, the op itself run
    with autocast suspended."""
    first = next(_tensors((*args, *kwargs.values())), None)
    if first is None:
        return fn(*args, **kwargs)
    device_type = first._device.type
    policy = policies.get(device_type)
    if policy is None or not _tls.enabled.get(device_type, False) \
            or kwargs.get("out") is not None or kwargs.get("dtype") is not None \
            or any(isinstance(a, _dtype) for a in args):  # (an explicit dtype is obeyed)
        return fn(*args, **kwargs)
    if policy == "banned":
        raise RuntimeError(_BANNED_MSG.get(name, f"{name} is unsafe to autocast."))
    if policy == "lower":
        to = _tls.dtype[device_type]
    elif policy == "float32":
        to = float32
    else:  # promote: the widest eligible dtype
        to = None
        for t in _tensors((*args, *kwargs.values())):
            if _eligible(t, device_type):
                to = t._dtype if to is None else promote_types(to, t._dtype)
        if to is None:
            return fn(*args, **kwargs)
    args = _cast_args(args, to, device_type)
    kwargs = dict(zip(kwargs, _cast_args(kwargs.values(), to, device_type)))
    _set_on(False)
    try:
        return fn(*args, **kwargs)
    finally:
        _refresh()


def entry(fn: Callable, spec: str, name: str | None = None) -> Callable:
    """``fn`` with autocast's casting at its entry, by policy ``spec`` (see ``parse_policy``).
    Outside a region it adds one test (Note [Autocast cost])."""
    policies = parse_policy(spec)
    name = name or fn.__name__

    @functools.wraps(fn)
    def op(*args, **kwargs):
        if _threads_on and _tls.on:
            return _run(name, fn, policies, args, kwargs)
        return fn(*args, **kwargs)
    op.autocast = spec
    return op


def autocast_op(spec: str):
    """Decorator form of ``entry`` for composite ops outside the op tables (nn.functional's
    linear, conv and attention, losses, norms)."""
    return lambda fn: entry(fn, spec)
