"""``vmap``: ``torch.func.vmap``, as a loop over the batch.

tritongrad's batched machinery (autograd/batched.py) batches the rules of a backward or a
forward-mode pass, not arbitrary user code, so ``vmap(func)`` runs ``func`` once per entry of
the mapped dimension: each mapped input is sliced along its ``in_dim`` (``select``, a view:
autograd flows back into the batched inputs, and an in-place op writes through, as with
functorch), unmapped ones (``in_dim`` None) and the keyword arguments are passed as they are,
and the results are stacked along ``out_dims``. The semantics are PyTorch's (pytrees of
``in_dims`` and ``out_dims``, nesting, ``chunk_size``, ``randomness``, the errors); the speed
is a Python loop's, not a vectorized kernel's.

Where the loop shows through:

- ``func`` sees one entry's real values, so data-dependent Python (``.item()``, ``if``) works
  where functorch raises; so do ops whose result's shape depends on the data (``nonzero``,
  ``masked_select``, ``unique``) when every entry's result has one shape, and otherwise
  stacking them raises functorch's "dynamic shape" error;
- an output with ``out_dims`` None is returned once; functorch refuses one that depends on a
  mapped input ("can not return a BatchedTensor"), here one whose values differ between the
  entries is refused;
- a batch of size 0 runs ``func`` once on zeros of an entry's shape, to learn the shapes of
  the (empty) results;
- ``chunk_size`` is checked (a TypeError for a non-int, on ``vmap`` itself where PyTorch's
  comes on the call) and changes no value (the loop is already one entry at a time); with it
  the results are new contiguous tensors, as PyTorch's concatenated chunks are, where
  without it they are laid out as functorch's (the batch moved from dim 0 to ``out_dims``,
  views of an input for a view op);
- an in-place write into a tensor that is not vmapped over (an input with in_dim None, a
  tensor ``func`` captures, a module's parameter or buffer) would be made once per entry, so
  it is refused, also where functorch would make it once (an unbatched value written): Note
  [Writes into unbatched tensors]; a batch norm (or instance norm) about to update running
  statistics that are not vmapped over raises PyTorch's own error first
  (``check_running_stats``);
- a custom Function's ``vmap`` staticmethod is asked for each entry's outputs
  (custom_function_forward): on the whole batch when its arguments are the mapped inputs
  themselves (once, reused by the other entries), on a batch of one otherwise; the rule runs
  outside its own level, so one that applies the Function to the batched inputs gets its
  forward.

Random operations are seen through ``autograd.ops.random.draw_hook``, called before every
draw: ``randomness="error"`` raises PyTorch's error, ``"same"`` gives each entry the generator
state the first entry drew with (so the state after ``vmap`` is that after one call),
``"different"`` lets the loop draw on. (functorch refuses ``"same"`` for a random op whose
input is vmapped over, ``bernoulli(p)`` with a batched ``p``; the loop gives each entry the
same generator state and draws with that entry's input.)
"""

from __future__ import annotations

import contextlib
import functools
import threading
import types
from typing import NamedTuple

from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten
from .tensor import Tensor

__all__ = ["VmapInfo", "check_randomness_arg", "check_running_stats", "custom_function_forward",
           "randomness_mode", "transform", "vmap"]

_RANDOMNESS = ("error", "different", "same")


def check_randomness_arg(randomness) -> None:
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


# -- randomness ---------------------------------------------------------------------------------

class _Randomness:
    """One vmap level's randomness mode, told of every draw while the level is active."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.start: dict = {}     # id(generator) -> (generator, its state at entry 0's draw)
        self.synced: set = set()  # generators already set back in the current entry
        # A vmap call's level also knows its batch (jacfwd's has none: entry stays None), for
        # custom Functions' vmap rules (custom_function_forward): the batch size, the flat
        # inputs and their in_dims, the entry being run and its flat arguments.
        self.size = 0
        self.flat_args: list = []
        self.flat_dims: list = []
        self.index = 0
        self.entry: list | None = None
        # the vmap rules' results on the whole batch, in call order: each entry runs the
        # same calls, which entry 0 computed for all (custom_function_forward)
        self.rules: list = []
        self.rule_calls = 0

    def next_entry(self) -> None:
        self.synced.clear()
        self.rule_calls = 0

    def on_draw(self, generator, op: str) -> None:
        if self.mode == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags "
                               "on vmap or perform the randomness operation out of vmap")
        if self.mode != "same" or id(generator) in self.synced:
            return
        self.synced.add(id(generator))
        first = self.start.get(id(generator))
        if first is None:
            self.start[id(generator)] = (generator, generator.get_state())
        else:
            generator.set_state(first[1])


class _Local(threading.local):
    """This thread's vmap state. (Class-level defaults: custom Functions read both on every
    apply, and a getattr default on a missing attribute costs an exception each time.)"""

    levels: list = ()  # the active levels, outermost first (a list once one began)
    transforms = 0     # how many torch.func transforms are running func


_local = _Local()
_active = [0]  # levels active in all threads: the hook is installed while > 0
_lock = threading.Lock()


def _on_draw(generator, op: str) -> None:
    for level in _local.levels:
        level.on_draw(generator, op)


@contextlib.contextmanager
def randomness_mode(mode: str):
    """A level of randomness ``mode`` ("error", "same" or "different") while the block runs:
    random draws in this thread are checked against it (and every enclosing level)."""
    from .ops import random
    level = _Randomness(mode)
    levels = _local.__dict__.setdefault("levels", [])
    levels.append(level)
    with _lock:
        _active[0] += 1
        random.draw_hook = _on_draw
    try:
        yield level
    finally:
        levels.pop()
        with _lock:
            _active[0] -= 1
            if not _active[0]:
                random.draw_hook = None


# -- which transforms are running (custom Functions check it) ----------------------------------

@contextlib.contextmanager
def transform():
    """Marks a ``torch.func`` transform (vmap, grad, vjp, jvp, jacrev, jacfwd, linearize) as
    running ``func`` in this thread while the block runs: a custom Function applied there
    must be of the ``setup_context`` kind, as PyTorch requires (function.py)."""
    _local.transforms += 1
    try:
        yield
    finally:
        _local.transforms -= 1


# -- custom Functions under vmap (PyTorch's custom_function_call_vmap) -------------------------

class VmapInfo(NamedTuple):
    """What a custom Function's ``vmap`` staticmethod is told about the vmap it runs under."""

    batch_size: int
    randomness: str


_VMAP_RETURNS = ("Expected the vmap staticmethod to have two returns, an output and out_dims "
                 "with pytree structure compatible with the output. ")
_VMAP_DOCS = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


def custom_function_forward(cls, inputs: tuple, forward):
    """The outputs of custom Function ``cls`` on ``inputs`` (its forward's arguments, defaults
    bound), run by ``forward()`` or, inside a vmap call, by the Function's own ``vmap``
    staticmethod when it has one.

    The loop (module docstring) runs the function once per entry, so the rule is asked for
    that entry's outputs: when every tensor argument is an entry of a mapped input (the
    ``select`` vmap made of it) or an input that is not mapped, the rule gets the whole
    batched inputs and their ``in_dims``, as in PyTorch, and the entry's slice of its outputs
    is kept; otherwise (arguments computed inside the vmapped function) it gets a batch of
    one, each argument that is not an unmapped input given a leading batch dim. With
    ``generate_vmap_rule = True`` the forward itself runs on the entry (what a generated rule
    computes)."""
    levels = _local.levels
    level = levels[-1] if levels else None
    if level is None or level.entry is None:  # (jacfwd's level is no vmap call)
        return forward()
    has_rule = cls.vmap is not _base_vmap(cls)
    if cls.generate_vmap_rule:
        if has_rule:
            raise RuntimeError(
                f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True "
                f"and an overridden vmap staticmethod. Please set generate_vmap_rule=False or "
                f"delete the overridden vmap staticmethod to avoid ambiguity. {_VMAP_DOCS}")
        return forward()
    if not has_rule:
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
            f"override and implement the vmap staticmethod or set generate_vmap_rule=True. "
            f"{_VMAP_DOCS}")
    unmapped = {id(a) for a, d in zip(level.flat_args, level.flat_dims) if d is None}
    where = [_entry_index(a, level) if isinstance(a, Tensor) and id(a) not in unmapped
             else None for a in inputs]
    if -1 not in where:
        if all(j is None for j in where):
            return forward()  # nothing batched: PyTorch skips the level
        size, index = level.size, level.index
        args = tuple(a if j is None else level.flat_args[j] for a, j in zip(inputs, where))
        in_dims = tuple(None if j is None else level.flat_dims[j] for j in where)
        key = (cls, in_dims, tuple(id(a) if isinstance(a, Tensor) else a for a in args))
        k = level.rule_calls
        level.rule_calls += 1
        if k < len(level.rules) and _same_key(level.rules[k][0], key):
            result = level.rules[k][1]
        else:
            result = _run_rule(cls, level, size, in_dims, args)
            level.rules[k:] = [(key, result)]
    else:
        size, index = 1, 0
        batched = [isinstance(a, Tensor) and id(a) not in unmapped for a in inputs]
        args = tuple(a.unsqueeze(0) if b else a for a, b in zip(inputs, batched))
        in_dims = tuple(0 if b else None for b in batched)
        result = _run_rule(cls, level, size, in_dims, args)
    if not isinstance(result, tuple):
        raise RuntimeError(_VMAP_RETURNS + f"Got a {type(result)} instead")
    if len(result) != 2:
        raise RuntimeError(_VMAP_RETURNS + f"Got {len(result)} returns instead")
    output, out_dims = result
    flat, spec = tree_flatten(output)
    dims = broadcast_prefix(out_dims, spec)
    if dims is None:
        raise ValueError(f"The autograd.Function's vmap staticmethod returned an incompatible "
                         f"(output, out_dims) tuple. Expected out_dims={out_dims} to be "
                         f"compatible with the structure of `output`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but output has structure {spec}.")
    # (a copy of the entry's slice: the output is the Function's, not a view of the rule's)
    return tree_unflatten([o.select(d % o.dim(), index).clone()
                           if d is not None and isinstance(o, Tensor) else o
                           for o, d in zip(flat, dims)], spec)


def _run_rule(cls, level, size: int, in_dims: tuple, args: tuple):
    """``cls.vmap`` on the batch, run outside ``level`` (the enclosing vmap levels stay), as
    PyTorch runs it one level down: a rule that applies the Function itself to the batched
    inputs (the usual way to write one) gets its forward, not the rule again."""
    levels = _local.levels
    at = len(levels) - 1 - levels[::-1].index(level)
    del levels[at]
    try:
        return cls.vmap(VmapInfo(size, level.mode), in_dims, *args)
    finally:
        levels.insert(at, level)


def _entry_index(t: Tensor, level) -> int:
    """Which mapped input ``t`` is the current entry of (the ``select`` vmap made, or an
    alias of it with the same layout, as grad's aliases of its arguments), or -1 (a tensor
    computed inside the vmapped function)."""
    for j, (e, d) in enumerate(zip(level.entry, level.flat_dims)):
        if d is None:
            continue
        if t is e or (t.data_ptr() == e.data_ptr() and t.shape == e.shape
                      and t.stride() == e.stride() and t.dtype == e.dtype
                      and t.device == e.device):
            return j
    return -1


def _same_key(a: tuple, b: tuple) -> bool:
    try:
        return a[0] is b[0] and a[1] == b[1] and len(a[2]) == len(b[2]) and all(
            x is y or bool(x == y) for x, y in zip(a[2], b[2]))
    except Exception:  # (a non-tensor argument that cannot be compared: run the rule again)
        return False


def _base_vmap(cls):
    from .function import Function
    return Function.vmap


# -- inputs and outputs (PyTorch's checks and messages) ----------------------------------------

def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _batched_inputs(in_dims, args: tuple, func):
    """(batch size, flat in_dims, flat args, args' spec) of a call."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(  # noqa: TRY004 - PyTorch's type
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
            f"to be int or a (potentially nested) tuple matching the structure of "
            f"inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         f"inputs, or you are trying to vmap over a function with no inputs. "
                         f"The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_prefix(in_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(in_dims)[1]} but inputs has structure {spec}.")
    where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    for i, (arg, d) in enumerate(zip(flat_args, flat_dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(  # noqa: TRY004 - PyTorch's type
                f"{where}: Got in_dim={d} for an input but in_dim must be either "
                f"an integer dimension or None.")
        if not isinstance(arg, Tensor):
            raise ValueError(  # noqa: TRY004 - PyTorch's type
                f"{where}: Got in_dim={d} for an input but the input is of type "
                f"{type(arg)}. We cannot vmap over non-Tensor arguments, please "
                f"use None as the respective in_dim")
        if isinstance(d, bool):  # (PyTorch's size(dim) refuses it; int() would read 1)
            raise TypeError(f"{where}: Got in_dim={d} for an input: an in_dim must be an int, "
                            f"not bool")
        if not -arg.dim() <= d < arg.dim():
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a "
                             f"Tensor of dimensionality {arg.dim()} so expected in_dim to "
                             f"satisfy -{arg.dim()} <= in_dim < {arg.dim()}.")
        flat_dims[i] = d % arg.dim()
    sizes = [arg.shape[d] for arg, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0], flat_dims, flat_args, spec


def _check_out_dims(out_dims, func) -> None:
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must "
                             f"be an int, None or a python collection of ints representing "
                             f"where in the outputs the vmapped dimension should appear.")


def _entry(arg, d, i: int):
    """Entry ``i`` of a mapped input (-1: zeros of an entry's shape, for a size-0 batch)."""
    if d is None:
        return arg
    if i < 0:
        return arg.new_zeros(tuple(arg.shape[:d]) + tuple(arg.shape[d + 1:]))
    return arg.select(d, i)


def _stacked(rows: list, out_dims, func, size: int, chunked: bool = False):
    """The entries' outputs stacked along ``out_dims`` (PyTorch's checks and messages).
    ``chunked`` (a ``chunk_size`` was given): PyTorch concatenates the chunks' results, so
    they are new contiguous tensors, never views of an input."""
    from .ops.shape import stack
    name = _name(func)
    flats = [tree_flatten(r) for r in rows]
    spec = flats[0][1]
    for _, other in flats[1:]:
        if other != spec:  # (a loop can see it: functorch's single call cannot)
            raise ValueError(f"vmap({name}, ...): `{name}` must return outputs of one "
                             f"structure for every entry of the batch, got {spec} and {other}")
    if spec.is_leaf():
        dims = (list(out_dims) if isinstance(out_dims, tuple) and len(out_dims) == 1
                else [out_dims] if out_dims is None or isinstance(out_dims, int) else None)
    else:
        dims = broadcast_prefix(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")
    out = []
    for j, d in enumerate(dims):
        column = [flat[j] for flat, _ in flats]
        first = column[0]
        if d is None:
            if isinstance(first, Tensor) and not all(
                    c is first or (tuple(c.shape) == tuple(first.shape) and c.equal(first))
                    for c in column[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 f"when out_dim is None")
            out.append(first)
            continue
        if not isinstance(first, Tensor):
            raise ValueError(  # noqa: TRY004 - PyTorch's type
                f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                f"{type(first)}. Did you mean to set out_dims= to None for "
                f"output?")
        rank = first.dim() + 1
        if not -rank <= d < rank:  # (PyTorch's movedim of the batch dim says it so)
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-rank}, {rank - 1}], but got {d})")
        _check_shapes(column, name)
        alias = _as_view(column, d) if size and not chunked else None
        if alias is not None:
            out.append(alias)
            continue
        # (stacked along dim 0 and the batch dim moved to ``d``, as functorch moves it out of
        # its physical first place: a non-contiguous view where ``d`` is not 0, as there)
        stacked = stack(column, dim=d if chunked else 0)
        if size == 0:
            stacked = stacked.narrow(d if chunked else 0, 0, 0)
        out.append(stacked if chunked or d % rank == 0 else stacked.movedim(0, d))
    return tree_unflatten(out, spec)


def _check_shapes(column: list, name: str) -> None:
    """The entries' outputs in one place of the outputs must be of one shape: the loop runs
    ``func`` per entry, so shapes that differ come from data (``nonzero``, ``masked_select``,
    ``unique``, a data-dependent branch), which functorch refuses for every entry alike."""
    shape = tuple(column[0].shape)
    for i, c in enumerate(column[1:], 1):
        if not isinstance(c, Tensor) or tuple(c.shape) != shape:
            got = list(c.shape) if isinstance(c, Tensor) else type(c)
            raise RuntimeError(
                f"vmap: We do not support batching operators that can output dynamic shape. "
                f"`{name}` returned a Tensor of shape {list(shape)} for entry 0 of the batch "
                f"and {got} for entry {i}: the shape of an output must not depend on the "
                f"values of the inputs (nonzero, masked_select, unique, boolean-mask indexing "
                f"or data-dependent control flow)")


def _as_view(column: list, d: int):
    """The entries' outputs as one view of their storage, when they are views of it evenly
    spaced (as the entries of a mapped input, or one unmapped tensor returned by every entry),
    else None: functorch returns a view of an input for a view op, so writes through the
    result reach the input. With history, every entry must be a view of one base, which the
    view is taken of (its backward then reaches all of the base, not one entry's part)."""
    from ..runtime import dtype as dtypes
    from . import dispatch
    from .batched import BatchedTensor
    first = column[0]
    # (not under forward AD, whose tangents the stack carries, nor for batched tangents or
    # tensors without strides)
    if dispatch.dual_levels or not isinstance(first, Tensor) \
            or isinstance(first, BatchedTensor) or first.layout is not dtypes.strided:
        return None
    shape, strides, vc = tuple(first.shape), first.stride(), first._vc
    for c in column[1:]:
        if not (isinstance(c, Tensor) and c._vc is vc and tuple(c.shape) == shape
                and c.stride() == strides and c.dtype == first.dtype):
            return None
    offsets = [c.storage_offset() for c in column]
    step = offsets[1] - offsets[0] if len(offsets) > 1 else 0
    if any(o != offsets[0] + i * step for i, o in enumerate(offsets)):
        return None
    if not -len(shape) - 1 <= d <= len(shape):
        return None  # (stack raises PyTorch's IndexError)
    d = d % (len(shape) + 1)
    if len(column) == 1:
        return first.unsqueeze(d)
    source = first
    if any(c.requires_grad for c in column):
        roots = {id(c._base if c._base is not None else c) for c in column}
        if len(roots) != 1:
            return None
        source = first._base if first._base is not None else first
    return source.as_strided(shape[:d] + (len(column),) + shape[d:],
                             strides[:d] + (step,) + strides[d:], offsets[0])


# -- writes into tensors that are not vmapped over ---------------------------------------------

# Note [Writes into unbatched tensors]
#   functorch runs ``func`` once: an in-place op on a tensor that is not vmapped over (an input
#   with in_dim None, a tensor ``func`` captures, a module's parameter or buffer) happens once,
#   and functorch refuses it when the value written is vmapped over ("inplace arithmetic(self,
#   *extra_args) is not possible ..."). The loop runs ``func`` once per entry, so the same write
#   would happen ``size`` times and leave a different value (a batch norm's running statistics
#   updated once per entry, ``y.add_(1)`` adding ``size``). The tensors the loop can see are
#   watched through their version counters (shared by all views of a storage), read after each
#   entry: a write into one is refused, with the entry's write already made (the check cannot
#   come before it). Storages shared with a mapped input are not watched: writing through a
#   mapped input is allowed, as in PyTorch.

_UNBATCHED_WRITE = (
    "vmap: inplace arithmetic(self, *extra_args) is not possible on a Tensor that is not "
    "vmapped over ({what}), as `{name}` did: tritongrad's vmap runs the function once per "
    "entry of the batch, so the write would be made {size} times, once per entry (PyTorch "
    "refuses it where the value written is vmapped over, and makes it once otherwise). "
    "Please use out-of-place operators instead, or vmap over the tensor (in_dims); for batch "
    "norm modules, see torch.func.replace_all_batch_norm_modules_.")


def _captured(func, out: list, seen: set, depth: int = 0) -> None:
    """The (what, Tensor) pairs ``func`` can reach without being called: a module's parameters
    and buffers, a bound method's module, a partial's arguments, closure cells' contents, the
    module-level tensors and modules a function names."""
    from ..nn.module import Module  # (autograd/ is imported before nn/)
    if id(func) in seen or depth > 4:  # (deep enough for transforms of closures)
        return
    seen.add(id(func))
    if isinstance(func, Tensor):
        out.append(("a tensor the function captures", func))
    elif isinstance(func, Module):
        out.extend((f"the module's parameter or buffer {n!r}", t)
                   for n, t in (*func.named_parameters(), *func.named_buffers()))
    elif isinstance(func, functools.partial):
        _captured(func.func, out, seen, depth + 1)
        for a in tree_flatten((func.args, func.keywords))[0]:
            _captured(a, out, seen, depth + 1)
    elif getattr(func, "__self__", None) is not None and not isinstance(func.__self__, type):
        _captured(func.__self__, out, seen, depth + 1)
    elif isinstance(func, (tuple, list, dict)):
        for a in tree_flatten(func)[0]:
            _captured(a, out, seen, depth + 1)
    for cell in getattr(func, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # (a cell not yet filled)
            continue
        _captured(value, out, seen, depth + 1)
    if isinstance(func, types.FunctionType):  # (the module-level tensors and modules it names)
        names = func.__globals__
        for n in func.__code__.co_names:
            value = names.get(n)
            if isinstance(value, (Tensor, Module)):
                _captured(value, out, seen, depth + 1)


def _watched(func, flat_args: list, flat_dims: list, kwargs: dict) -> list:
    """[what, tensor, its version] for the tensors of a call that are not vmapped over
    (Note [Writes into unbatched tensors])."""
    found: list = []
    for i, (a, d) in enumerate(zip(flat_args, flat_dims)):
        if d is None and isinstance(a, Tensor):
            found.append((f"input {i} of the flattened inputs, with in_dim None", a))
    found.extend(("a keyword argument", a) for a in tree_flatten(kwargs)[0]
                 if isinstance(a, Tensor))
    _captured(func, found, set())
    # (one entry per storage; the counters live as long as the call's tensors, so ids hold)
    seen = {id(a._vc) for a, d in zip(flat_args, flat_dims) if d is not None}
    watched = []
    for what, t in found:
        if id(t._vc) not in seen:
            seen.add(id(t._vc))
            watched.append((what, t, t._vc[0]))
    return watched


_BATCH_NORM_UNBATCHED = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which "
    "will be updated in place, were not batched.\nIf you are using a module and do not need "
    "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
    "module and do not need eval mode, please see the functorch website for resources on how "
    "to patch your module to work with vmap")


def check_running_stats(input: Tensor, *stats: Tensor | None) -> None:
    """PyTorch's batch norm rule under vmap: the running statistics a batch norm (or an
    instance norm with input statistics) is about to update in place must be vmapped over
    when its input is. Called by nn/_normalization.py before the update; nothing outside a
    vmap call. In the loop every tensor ``func`` sees is one entry's, so "vmapped over" is
    read from storage: a tensor is batched when it shares one with a mapped input of the
    innermost vmap call, and the input counts as batched unless it shares one with an
    input passed with in_dim None."""
    levels = _local.levels
    level = levels[-1] if levels else None
    if level is None or level.entry is None:  # (not in a vmap call: jacfwd's level has none)
        return
    mapped = {id(a._vc) for a, d in zip(level.flat_args, level.flat_dims)
              if d is not None and isinstance(a, Tensor)}
    unmapped = {id(a._vc) for a, d in zip(level.flat_args, level.flat_dims)
                if d is None and isinstance(a, Tensor)}
    if id(input._vc) in unmapped and id(input._vc) not in mapped:
        return
    if any(t is not None and id(t._vc) not in mapped for t in stats):
        raise RuntimeError(_BATCH_NORM_UNBATCHED)


def _check_writes(watched: list, func, size: int) -> None:
    for what, t, version in watched:
        if t._vc[0] != version:
            raise RuntimeError(_UNBATCHED_WRITE.format(name=_name(func), what=what, size=size))


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size: int | None = None):
    """vmap is the vectorizing map; ``vmap(func)`` returns a new function that maps ``func``
    over some dimension of the inputs. Semantically, vmap pushes the map into PyTorch
    operations called by ``func``, effectively vectorizing those operations.

    tritongrad runs ``func`` once per entry of the mapped dimension and stacks the results
    (the module's docstring says where that shows).

    Args:
        func (function): A Python function that takes one or more arguments. Must return one
            or more Tensors.
        in_dims (int or nested structure): Specifies which dimension of the inputs should be
            mapped over. ``in_dims`` should have a structure like the inputs. If the
            ``in_dim`` for a particular input is None, then that indicates there is no map
            dimension. Default: 0.
        out_dims (int or Tuple[int]): Specifies where the mapped dimension should appear in
            the outputs. If ``out_dims`` is a Tuple, then it should have one element per
            output. Default: 0.
        randomness (str): Specifies whether the randomness in this vmap should be the same or
            different across batches. If 'different', the randomness for each batch will be
            different. If 'same', the randomness will be the same across batches. If 'error',
            any calls to random functions will error. Default: 'error'. WARNING: this flag
            only applies to random tritongrad operations and does not apply to Python's
            random module or numpy randomness.
        chunk_size (None or int): If None (default), apply a single vmap over inputs. If not
            None, then compute the vmap :attr:`chunk_size` samples at a time.

    Returns:
        Returns a new "batched" function. It takes the same inputs as ``func``, except each
        input has an extra dimension at the index specified by ``in_dims``. It takes returns
        the same outputs as ``func``, except each output has an extra dimension at the index
        specified by ``out_dims``.

    Example:
        >>> batched_dot = tritongrad.func.vmap(tg.dot)  # [N, D], [N, D] -> [N]
        >>> x, y = tg.randn(2, 5), tg.randn(2, 5)
        >>> batched_dot(x, y)
    """
    check_randomness_arg(randomness)
    # (PyTorch compares first, so 0 and negatives are a ValueError here; a float or a bool
    # fails later there, on the call, with a TypeError from splitting the batch)
    if chunk_size is not None and not isinstance(chunk_size, int):
        raise TypeError(f"vmap: chunk_size should be None or an int, got "
                        f"{type(chunk_size).__name__} ({chunk_size!r})")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    if isinstance(chunk_size, bool):
        raise TypeError(f"vmap: chunk_size should be None or an int, got bool ({chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        size, flat_dims, flat_args, spec = _batched_inputs(in_dims, args, func)
        rows = []
        watched = _watched(func, flat_args, flat_dims, kwargs)
        with randomness_mode(randomness) as level, transform():
            level.size, level.flat_args, level.flat_dims = size, flat_args, flat_dims
            for i in range(size) if size else (-1,):
                level.next_entry()
                level.index = i
                level.entry = entry = [_entry(a, d, i) for a, d in zip(flat_args, flat_dims)]
                rows.append(func(*tree_unflatten(entry, spec), **kwargs))
                _check_writes(watched, func, size)
        return _stacked(rows, out_dims, func, size, chunk_size is not None)

    return wrapped
