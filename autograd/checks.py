"""The argument checks ops share, each in one place with PyTorch's wording: devices, dtypes,
index bounds, and arguments tritongrad accepts for compatibility but does not implement.

An op calls these before it dispatches, so a refusal names the op and the argument and nothing
has run yet. Dimension wrapping (``wrap_dim``) and dtype promotion live with the Tensor and in
``runtime.dtype``; broadcasting's error is ``ops.elementwise.broadcast_shapes``.
"""

from __future__ import annotations

import inspect
import numbers
import os
import re
import threading

from ..runtime import dtype as dtypes
from ..runtime import streams as _streams
from ..runtime.graphs import is_current_stream_capturing
from .tensor import Tensor, make

__all__ = ["tensor_arg", "argument_error", "bad_argument", "type_name",
           "check_devices_match", "check_index_dtype", "check_index_range",
           "check_memory_format", "check_ordered", "check_same_device", "checked_index",
           "expected_scalar_type", "get_index_check_mode", "guard_index", "index_extremes",
           "index_out_of_range", "operand_on_device", "out_of_bounds",
           "raise_deferred_index_errors", "scalar_type_name", "set_index_check_mode",
           "target_out_of_bounds", "unsupported"]


# -- devices ----------------------------------------------------------------------------------

def type_name(x) -> str:
    """The type of ``x`` as PyTorch's argument errors print it: "list", "NoneType",
    "numpy.ndarray" (a non-builtin type with its module, so a NumPy array is not taken for
    some tritongrad class)."""
    t = type(x)
    if t.__module__ == "builtins" or isinstance(x, Tensor):
        return t.__name__
    return f"{t.__module__}.{t.__qualname__}"


def tensor_arg(x, op: str, name: str = "input") -> Tensor:
    """``x`` itself if it is a Tensor, else PyTorch's TypeError naming ``op`` and the
    argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


# -- arguments of the wrong type, found after the fact ----------------------------------------
#
# Note [Argument errors after the fact]: PyTorch parses every argument before an op runs, so
# ``torch.exp([1.0])`` is a TypeError naming the op, the argument and the type given. Checking
# each argument up front would cost every call; instead the public functions (registry.guarded)
# run the op as it is and, only when it raises (Python 3.11's try is free until then), ask
# ``bad_argument`` whether an argument the op's signature annotates as a Tensor was something
# else. Then that, not the AttributeError or NumPy error it caused deep inside, is the error.
# A list, string, None or array where a Tensor belongs is never right, so whatever it led to
# is replaced; a Python number there (which some ops take beyond what their annotation says)
# replaces only the errors such a mix-up causes (``_CAUSED_BY_TYPE``): an op's own
# RuntimeError (a shape mismatch, say) stands, though an argument beside it be a number.

_CAUSED_BY_TYPE = (AttributeError, TypeError, ValueError, IndexError, KeyError)
_NUMBER_WORDS = frozenset(["Number", "float", "int", "complex", "bool", "Scalar"])
_SEQUENCE_WORDS = ("Sequence[", "Iterable[", "list[", "tuple[", "List[", "Tuple[")
_rules_cache: dict = {}
_NUMBER_ENDS = (" int", " float", " complex", " bool")  # (bad_argument's "..., not int")


def _rule(annotation) -> tuple | None:
    """(each element of a sequence?, None allowed?, numbers allowed?) for a parameter
    annotated ``annotation`` (a string under ``from __future__ import annotations``); None
    where it is not a Tensor parameter."""
    ann = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    ann = ann.replace(" ", "").replace("'", "").replace('"', "")
    if "Tensor" not in ann or ann.startswith("Callable"):
        return None
    sequence = any(ann.startswith(w + "Tensor") for w in _SEQUENCE_WORDS)
    words = set(ann.replace("[", "|").replace("]", "|").replace(",", "|").split("|"))
    return sequence, "None" in words or "Optional" in ann, bool(words & _NUMBER_WORDS)


def _rules(fn) -> tuple:
    """``fn``'s signature and its Tensor parameters' rules, by name (cached per function)."""
    found = _rules_cache.get(fn)
    if found is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        rules = {} if sig is None else {p.name: (p, _rule(p.annotation))
                                        for p in sig.parameters.values()}
        found = _rules_cache[fn] = (sig, rules)
    return found


def _bad_value(value, rule) -> bool:
    _, none_ok, numbers_ok = rule
    if isinstance(value, Tensor) or (value is None and none_ok):
        return False
    return not (numbers_ok and isinstance(value, numbers.Number))  # (NumPy's scalars too)


def bad_argument(fn, op: str, args: tuple, kwargs: dict) -> TypeError | None:
    """PyTorch's TypeError for the first argument of ``fn(*args, **kwargs)`` that its
    signature annotates as a Tensor (or a sequence of Tensors) but is not one, naming ``op``;
    None when every such argument is right (Note [Argument errors after the fact])."""
    sig, rules = _rules(fn)
    if sig is None:
        return None
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    for position, (name, value) in enumerate(bound.arguments.items(), 1):
        param, rule = rules[name]
        if rule is None:
            continue
        where = f" (position {position})" if position <= len(args) else ""
        if param.kind is param.VAR_POSITIONAL:  # (*tensors: each is one)
            for i, v in enumerate(value):
                if _bad_value(v, rule):
                    return TypeError(f"{op}(): expected Tensor as element {i} in argument "
                                     f"{position - 1}, but got {type_name(v)}")
        elif rule[0]:  # a sequence of tensors
            if value is None and rule[1]:
                continue
            if not isinstance(value, (list, tuple)):
                return TypeError(f"{op}(): argument '{name}'{where} must be tuple of Tensors, "
                                 f"not {type_name(value)}")
            for i, v in enumerate(value):
                if _bad_value(v, (False, False, rule[2])):
                    return TypeError(f"{op}(): expected Tensor as element {i} in argument "
                                     f"{position - 1}, but got {type_name(v)}")
        elif _bad_value(value, rule):
            kind = "Tensor or Number" if rule[2] else "Tensor"
            return TypeError(f"{op}(): argument '{name}'{where} must be {kind}, not "
                             f"{type_name(value)}")
    return None


_POSITION = re.compile(r" \(position \d+\)")


def argument_error(error: BaseException, fn, op: str, canonical: str, args: tuple,
                   kwargs: dict) -> BaseException | None:
    """What public function ``op`` (whose own errors name it ``canonical``) raises in place of
    ``error``, raised by ``fn(*args, **kwargs)``: None (``error`` stands) when it is the op's
    own TypeError, one naming it and the wrong type, which is renamed when ``op`` is another
    name for it (``special_expit``, not ``sigmoid``); else ``bad_argument``'s TypeError when
    an argument is of the wrong type (and ``error`` of a kind that caused, for a number: see
    the Note); else None."""
    found = bad_argument(fn, op, args, kwargs)
    if type(error) is TypeError:
        msg = str(error)
        # (the op's own error stands, under the name called, where it names the op and the
        # type it was given: "mm(): arguments must be Tensors" names no type)
        named = msg.startswith(op + "(") or msg.startswith(canonical + "(")
        if named and (found is None or found.args[0].rsplit(" ", 1)[-1].split(".")[-1] in msg):
            if found is not None and _POSITION.sub("", found.args[0]) == op + msg[
                    msg.index("("):]:
                return found  # (the same words, with PyTorch's "(position N)" in them)
            if op == canonical or msg.startswith(op + "("):
                return None
            return TypeError(op + msg[len(canonical):])
    if found is not None:
        if isinstance(error, _CAUSED_BY_TYPE) or not found.args[0].endswith(_NUMBER_ENDS):
            return found
    return None


# How PyTorch 2.13 refuses complex input to an op that orders values, where it is not
# "<op>(): does not support complex input": the kernel's NotImplementedError (``{}``: device).
_UNORDERED_KERNEL = {"max_all": "max_all", "min_all": "min_all", "amax": "max_values_{}",
                     "amin": "min_values_{}", "aminmax": "aminmax_{}", "kthvalue": "kthvalue_{}",
                     "cummax": "cummax_{}", "cummin": "cummin_{}", "unique": "unique"}
_UNORDERED_MESSAGE = {
    "sort": (RuntimeError, " Sort does not support complex dtypes on {}"),
    "argsort": (RuntimeError, " Sort does not support complex dtypes on {}"),
    "topk": (RuntimeError, " topk does not support complex dtypes on {}"),
    "maximum": (RuntimeError, "maximum not implemented for complex tensors."),
    "minimum": (RuntimeError, "minimum not implemented for complex tensors."),
    "clamp": (NotImplementedError, "clamp is not supported for complex types"),
}


def check_ordered(x, op: str) -> None:
    """PyTorch's refusal of a complex input to an op that compares values by order (max, sort,
    clamp, ...), with the error it raises for ``op`` (``"max_all"``: max without a dim):
    complex numbers have none, and NumPy's lexicographic order would give some answer.
    (A non-tensor ``x`` gets ``tensor_arg``'s TypeError.)"""
    dt = tensor_arg(x, op.removesuffix("_all"))._dtype
    if not dt.is_complex:
        return
    device = x.device.type
    if op in _UNORDERED_KERNEL:
        raise kernel_not_implemented(_UNORDERED_KERNEL[op].format(device), dt)
    if op.removesuffix("_") in _UNORDERED_MESSAGE:
        kind, message = _UNORDERED_MESSAGE[op.removesuffix("_")]
        raise kind(message.format(device.upper()))
    raise RuntimeError(f"{op}(): does not support complex input")


def check_same_device(like: Tensor, t: Tensor, arg: str, op: str) -> None:
    """PyTorch's RuntimeError unless argument ``arg`` (``t``) of ``op`` is on the device of
    ``like`` (the tensor the op runs on). Index tensors, targets and weights go through it as
    they are: nothing is moved behind the caller's back, so gather(cuda_x, 1, cpu_index) is
    refused as every other mixed-device op is."""
    if t._device is not like._device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but got {arg} is on "
                           f"{t._device}, different from other tensors on {like._device} "
                           f"(when checking argument in method {op})")


def check_devices_match(first, other, op: str) -> None:
    """PyTorch's RuntimeError for ops over several peer tensors (cat, stack, mm, bmm,
    masked_fill's mask), where no one argument is the odd one out: ``first`` and ``other``
    are devices."""
    if other is not first:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {first} and {other}! (in {op})")


def operand_on_device(a: Tensor, b: Tensor, op: str) -> Tensor:
    """``b`` on ``a``'s device for an elementwise op: a CPU 0-d tensor may join an op on
    another device (PyTorch's TensorIterator allows it, either side); anything else must
    match."""
    if a._device is b._device:
        return b
    if b.ndim == 0 and b._device.type == "cpu":
        return b.to(a._device)
    if a.ndim == 0 and a._device.type == "cpu":
        return b
    check_same_device(a, b, "other", op)
    return b


# -- dtypes -----------------------------------------------------------------------------------

# PyTorch's C++ names for dtypes, which its dtype errors print ("expected scalar type Long but
# found Float")
_SCALAR_TYPE_NAMES = dtypes.CPP_NAMES


def scalar_type_name(dt) -> str:
    """PyTorch's C++ name of dtype ``dt`` ("Long", "Float", ...), as its errors print it."""
    return _SCALAR_TYPE_NAMES[dt.name]


def kernel_not_implemented(kernel: str, dt) -> NotImplementedError:
    """PyTorch's error for a dtype ``dt`` its kernel ``kernel`` does not take:
    ``"lt_cpu" not implemented for 'ComplexFloat'``."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(dt)}'")


def expected_scalar_type(expected, found) -> RuntimeError:
    """PyTorch's error for a tensor of dtype ``found`` where ``expected`` is required."""
    return RuntimeError(f"expected scalar type {scalar_type_name(expected)} but found "
                        f"{scalar_type_name(found)}")


def check_index_dtype(index: Tensor, op: str) -> None:
    """Index tensors of index_select, gather and scatter are int64 or int32, as in PyTorch."""
    if index._dtype is not dtypes.int64 and index._dtype is not dtypes.int32:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index (got {index._dtype})")


# -- index bounds -----------------------------------------------------------------------------

def index_extremes(idx: Tensor) -> tuple:
    """(smallest, largest) entry of the non-empty integer tensor ``idx`` as Python ints: one
    copy home for both (a device sync on CUDA)."""
    k, a = idx._k, idx._data
    dims = tuple(range(len(a.shape)))
    lo = make(k.reduce("amin", a, dims, False))
    hi = make(k.reduce("amax", a, dims, False))
    if lo._device.type != "cpu":
        from .ops.shape import stack
        both = stack([lo, hi]).cpu()._data
        return int(both[0]), int(both[1])
    return int(lo._data), int(hi._data)


def out_of_bounds(bad: int, dim: int, size: int, op: str | None = None) -> str:
    """PyTorch's message for an index outside its dimension (prefixed with the op, when given,
    as tritongrad's indexing errors are)."""
    msg = f"index {bad} is out of bounds for dimension {dim} with size {size}"
    return msg if op is None else f"{op}: {msg}"


def index_out_of_range(bad) -> IndexError:
    """PyTorch's error for index_select's and embedding's out-of-range indices."""
    return IndexError("index out of range in self")


def target_out_of_bounds(bad) -> IndexError:
    """PyTorch's error for an nll_loss / cross_entropy class target outside [0, C)."""
    return IndexError(f"Target {bad} is out of bounds.")


def first_bad_target(idx: Tensor, classes: int, ignore_index: int):
    """An error factory for nll_loss / cross_entropy: PyTorch's kernel names the first target
    (in order) outside [0, classes), not the extreme one the range check finds. Reads the
    targets on the error path only."""
    def error(_extreme: int) -> IndexError:
        a = idx.detach().cpu().numpy().reshape(-1)
        bad = (a != ignore_index) & ((a < 0) | (a >= classes))
        return target_out_of_bounds(int(a[bad][0]) if bad.any() else _extreme)
    return error


def check_index_range(idx: Tensor, size: int, error, allow_negative: bool = False,
                      ignore_index=None):
    """Raises ``error(bad)`` for the offending extreme unless every entry of ``idx`` (other
    than ``ignore_index``) lies in [0, size), or [-size, size) with ``allow_negative``; the
    kernels take index arrays as already checked. Returns the smallest entry (None when
    ``idx`` is empty), so a caller knows whether negatives need wrapping."""
    if idx.numel() == 0:
        return None
    if ignore_index is not None:
        k, a = idx._k, idx._data
        idx = make(k.where(k.ne(a, ignore_index), a, 0))
    lo, hi = index_extremes(idx)
    if hi >= size or lo < (-size if allow_negative else 0):
        raise error(hi if hi >= size else lo)
    return lo


def checked_index(idx: Tensor, size: int, dim: int, op: str, allow_negative: bool,
                  error=None) -> Tensor:
    """``idx`` as int64, in range [0, size) (negatives wrapped if allowed), or the op's error
    for index ``bad``: ``error(bad)``, by default advanced indexing's IndexError (raised when
    Note [index check modes] says)."""
    if idx._dtype is not dtypes.int64:
        idx = idx.to(dtypes.int64)
    if error is None:
        def error(bad):
            return IndexError(out_of_bounds(bad, dim, size, op))
    return guard_index(idx, size, error, allow_negative)


# Note [index check modes]: a bounds check on CUDA that reads the index's extremes back to the
# host is a device sync per indexing op: the host stops queueing until the GPU has caught up,
# three times in a GPT step (two embeddings, the loss's targets). ``TRITONGRAD_CHECK_INDICES``
# (or ``set_index_check_mode``) chooses, for CUDA tensors only (the CPU always raises at once):
#
# - ``sync``: that read-back, and the error at once, as on the CPU; the default where
#   ``CUDA_LAUNCH_BLOCKING=1`` (PyTorch users' way to get errors where they happen);
# - ``deferred`` (the default): no sync, as PyTorch's device-side asserts (on an H200,
#   2026-11-30, a GPT step took 20.8 ms with it against 26.1 ms in ``sync`` mode, both with
#   matmul's split-K on). One kernel (the contract's ``index_guard``) folds the indices'
#   extremes into a per-device buffer (one (min, max) slot per check, atomically) and writes
#   the indices the op gets, wrapped and clamped into range, so nothing is read or written
#   out of bounds (the op's result is then meaningless, as after a CUDA device-side assert).
#   ``raise_deferred_index_errors()`` reads the buffer (one sync for all pending checks),
#   resets its slots and raises the first failed check's error, the very error ``sync`` mode
#   would have raised; it runs at the next point where the host waits for the device anyway
#   (``.item()``, ``.cpu()``, ``tg.cuda.synchronize()``: a runtime sync hook), when the
#   buffer's slots are all taken, or when called. (Written with separate amin, amax, copy,
#   where, maximum and minimum launches, the checks of a GPT step's two embeddings and its
#   loss took 22 launches; as one kernel each, 3.)
# - ``off``: indices clamped (the same kernel, recording nothing), nothing raised.
#
# Inside a CUDA graph capture every mode is ``off``: a capture can read nothing back (``sync``
# would break it: a graphed GPT, whose embedding checks its ids, could not be captured), and a
# capture's buffer values are never real (``deferred``). The replays' indices are clamped,
# never reported, as PyTorch's device-side asserts are the only check inside its graphs.
_INDEX_CHECK_MODES = ("sync", "deferred", "off")
_DEFERRED_SLOTS = 1024


def _valid_mode(mode: str) -> str:
    if mode not in _INDEX_CHECK_MODES:
        raise ValueError(f"index check mode must be one of {', '.join(_INDEX_CHECK_MODES)}, "
                         f"got {mode!r} (TRITONGRAD_CHECK_INDICES or set_index_check_mode)")
    return mode


def _initial_mode() -> str:
    mode = os.environ.get("TRITONGRAD_CHECK_INDICES", "").strip()
    if mode:
        return _valid_mode(mode)
    return "sync" if os.environ.get("CUDA_LAUNCH_BLOCKING", "").strip() == "1" else "deferred"


_index_checks = {"mode": _initial_mode()}
_deferred_lock = threading.RLock()
# device -> [buffer, its initial values (2 * _DEFERRED_SLOTS int64: (max, min) pairs, so the
# first fold sets them), [(size, lower, error) per slot taken], the kernel backend]
_deferred: dict = {}
_I64_MAX, _I64_MIN = (1 << 63) - 1, -(1 << 63)


def set_index_check_mode(mode: str) -> None:
    """Sets how CUDA ops check their index tensors: ``"sync"``, ``"deferred"`` or ``"off"``
    (Note [index check modes]); the initial mode is ``TRITONGRAD_CHECK_INDICES``, else
    ``"sync"`` under ``CUDA_LAUNCH_BLOCKING=1``, else ``"deferred"``."""
    _index_checks["mode"] = _valid_mode(mode)


def get_index_check_mode() -> str:
    """The current index check mode of CUDA ops (see ``set_index_check_mode``)."""
    return _index_checks["mode"]


def raise_deferred_index_errors() -> None:
    """Raises the error of the first index check that failed since the last call, if any
    (``deferred`` mode; one device sync per device with pending checks). Clears them all."""
    first = None
    with _deferred_lock:  # (held: a check must not take a slot before it is reset)
        taken = []
        for entry in _deferred.values():  # all taken first: the read's sync hook finds none
            if entry[2]:
                taken.append(tuple(entry))
                entry[2] = []
        for buf, init, pending, k in taken:
            values = make(buf).cpu()._data  # the one sync
            used = (slice(0, 2 * len(pending), 1),)
            k.copy_(k.getitem(buf, used), k.getitem(init, used))
            for slot, (size, lower, error) in enumerate(pending):
                lo, hi = int(values[2 * slot]), int(values[2 * slot + 1])
                if first is None and (hi >= size or lo < lower):
                    first = error(hi if hi >= size else lo)
    if first is not None:
        raise first


def _raise_pending_at_sync() -> None:
    if any(entry[2] for entry in _deferred.values()):
        raise_deferred_index_errors()


def _slot(k, dev, size: int, lower: int, error):
    """A (min, max) slot of the device's deferred buffer for a check of ``size`` and
    ``lower`` raising ``error``, kept for the next raise (Note [index check modes])."""
    with _deferred_lock:
        entry = _deferred.get(dev)
        if entry is None:
            init = k.full((2 * _DEFERRED_SLOTS,), _I64_MAX, dtypes.int64, dev)
            k.copy_(k.getitem(init, (slice(1, 2 * _DEFERRED_SLOTS, 2),)),
                    k.full((1,), _I64_MIN, dtypes.int64, dev))
            buf = k.empty((2 * _DEFERRED_SLOTS,), dtypes.int64, dev)
            k.copy_(buf, init)
            entry = _deferred[dev] = [buf, init, [], k]
            _streams.add_sync_hook(_raise_pending_at_sync)
        if len(entry[2]) == _DEFERRED_SLOTS:
            raise_deferred_index_errors()
        pending = entry[2]
        slot = len(pending)
        pending.append((size, lower, error))
        return k.getitem(entry[0], (slice(2 * slot, 2 * slot + 2, 1),))


def guard_index(idx: Tensor, size: int, error, allow_negative: bool = False,
                ignore_index=None) -> Tensor:
    """``idx`` ready for a kernel: every entry other than ``ignore_index`` in [0, size)
    (negatives in [-size, 0) wrapped when ``allow_negative``), else ``error(bad)`` for the
    offending extreme, raised at once (the CPU, ``sync`` mode) or later, with the entries
    clamped meanwhile (CUDA in ``deferred``/``off`` mode: Note [index check modes])."""
    kind = idx._device.type
    if kind == "meta":  # no values to check (Note [The meta device] in kernels/meta.py)
        return idx
    on_cpu = kind == "cpu"
    mode = "sync" if on_cpu else _index_checks["mode"]
    if not on_cpu and is_current_stream_capturing():  # nothing to read back or record
        mode = "off"
    if size == 0:  # no index is in range, nor can one be clamped into it: fail at once
        mode = "sync"
    if mode == "sync":
        lo = check_index_range(idx, size, error, allow_negative, ignore_index)
        if lo is not None and lo < 0 and allow_negative:
            k, a = idx._k, idx._data
            idx = make(k.where(k.lt(a, 0), k.add(a, size), a))
        return idx
    if idx.numel() == 0:
        return idx
    k, lower = idx._k, -size if allow_negative else 0
    slot = _slot(k, idx._device, size, lower, error) if mode == "deferred" else None
    return make(k.index_guard(idx._data, size, lower, ignore_index, slot))


# -- accepted for compatibility, not implemented -----------------------------------------------

def unsupported(op: str, arg: str, value, supported: str) -> NotImplementedError:
    """The error for a PyTorch argument value tritongrad does not implement: it names the op,
    the argument and what is supported. A NotImplementedError is a RuntimeError, the type
    PyTorch raises for unsupported combinations. Returned so callers ``raise`` it."""
    return NotImplementedError(f"{op}: {arg}={value!r} is not supported by tritongrad "
                               f"({supported})")


_ROW_MAJOR = "tritongrad creates row-major tensors: pass contiguous_format or preserve_format"
_ROW_MAJOR_FORMATS = (dtypes.contiguous_format, dtypes.preserve_format)


def check_memory_format(op: str, memory_format, allowed=_ROW_MAJOR_FORMATS) -> None:
    """Checks that ``memory_format`` (None: the op's default) is a memory format, and refuses
    one the op cannot honour. ``allowed`` defaults to contiguous_format and preserve_format,
    for ops whose results are row-major (``resize_``); ``allowed=None`` accepts every format
    (the ops that lay out their results by autograd/layout.py)."""
    if memory_format is None:
        return
    if not isinstance(memory_format, dtypes.memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be memory_format, not "
                        f"{type(memory_format).__name__}")
    if allowed is not None and memory_format not in allowed:
        raise unsupported(op, "memory_format", memory_format,
                          _ROW_MAJOR if len(allowed) > 1 else
                          f"only {allowed[0]} is supported here")
