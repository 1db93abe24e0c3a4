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
  where functorch raises;
- an output with ``out_dims`` None is returned once; functorch refuses one that depends on a
  mapped input ("can not return a BatchedTensor"), here one whose values differ between the
  entries is refused;
- a batch of size 0 runs ``func`` once on zeros of an entry's shape, to learn the shapes of
  the (empty) results;
- ``chunk_size`` is checked and changes nothing (the loop is already one entry at a time).

Random operations are seen through ``autograd.ops.random.draw_hook``, called before every
draw: ``randomness="error"`` raises PyTorch's error, ``"same"`` gives each entry the generator
state the first entry drew with (so the state after ``vmap`` is that after one call),
``"different"`` lets the loop draw on.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten
from .tensor import Tensor

__all__ = ["check_randomness_arg", "randomness_mode", "vmap"]

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

    def next_entry(self) -> None:
        self.synced.clear()

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


_local = threading.local()  # .levels: this thread's active levels, outermost first
_active = [0]               # levels active in all threads: the hook is installed while > 0
_lock = threading.Lock()


def _on_draw(generator, op: str) -> None:
    for level in getattr(_local, "levels", ()):
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


def _stacked(rows: list, out_dims, func, size: int):
    """The entries' outputs stacked along ``out_dims`` (PyTorch's checks and messages)."""
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
        stacked = stack(column, dim=d)
        out.append(stacked.narrow(d, 0, 0) if size == 0 else stacked)
    return tree_unflatten(out, spec)


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
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        size, flat_dims, flat_args, spec = _batched_inputs(in_dims, args, func)
        rows = []
        with randomness_mode(randomness) as level:
            for i in range(size) if size else (-1,):
                level.next_entry()
                entry = [_entry(a, d, i) for a, d in zip(flat_args, flat_dims)]
                rows.append(func(*tree_unflatten(entry, spec), **kwargs))
        return _stacked(rows, out_dims, func, size)

    return wrapped
