"""``torch.cond`` and ``torch.while_loop``, run eagerly.

PyTorch's structured control flow is captured by ``torch.compile``; called outside it with a
tensor predicate (``cond``) or at all (``while_loop``), PyTorch still compiles it with its
eager backend, tracing both branches (the loop body) on fake tensors. tritongrad has no
compiler (``tg.compile`` runs eagerly), so these run as PyTorch documents them to behave:

    cond:        true_fn(*operands) if pred else false_fn(*operands)
    while_loop:  val = carried_inputs
                 while cond_fn(*val): val = body_fn(*val)
                 return val

with PyTorch's checks of the arguments, and the checks of the outputs that can be made on what
runs: outputs are tensors or ints (nested in tuples, lists, dicts), no output aliases an input
or another output, no input is mutated in place (``cond``: only while grad mode is on, as
PyTorch allows mutation during inference; ``while_loop``: always, for the carried inputs), and
each iteration's outputs match the carried inputs (count, and per tensor shape, dtype and
device). The branch not taken is never run, so a mismatch between the two branches' outputs,
which PyTorch's tracing finds, goes unnoticed here; strides are not compared (tritongrad's ops
may lay results out otherwise than PyTorch's), and a ``cond_fn`` that is constantly True loops
forever. A tensor predicate is read on the host (on CUDA: a synchronisation).

The ops that run are recorded as usual, so gradients flow through the branch that ran (and
through every iteration, and to tensors the functions close over).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .autograd._pytree import tree_flatten, tree_map, tree_unflatten
from .autograd.state import state
from .autograd.tensor import Tensor
from .runtime import dtype as dtypes

__all__ = ["cond", "while_loop"]

_NO_ALIAS = ("{}: Higher order ops do not support aliasing: an output is {} (or a view of it). "
             "Replace `return input` with `return input.clone()` to avoid aliasing.")
_NO_MUTATION = ("{}: Higher order ops do not support input mutation: an input was modified in "
                "place. Clone it before the mutation.")


def _check_outputs(op: str, out, inputs: list, versions: list, strict: bool = True) -> list:
    """The leaves of ``out`` (a branch's or the body's result), after PyTorch's checks: tensors
    or ints only and, ``strict``, no aliasing of an input or of another output, no input
    mutated (its version counter moved)."""
    leaves = tree_flatten(out)[0]
    for leaf in leaves:
        if not isinstance(leaf, (Tensor, int)):
            raise RuntimeError(  # noqa: TRY004 - PyTorch's type
                f"{op}: HigherOrderOperator body's output must consist of "
                f"tensors or ints/bools only but got {type(leaf)}.")
    if not strict:
        return leaves
    if any(t._vc[0] != v for t, v in zip(inputs, versions)):
        raise RuntimeError(_NO_MUTATION.format(op))
    seen = [t._vc for t in inputs]
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            # (views and detached aliases share their storage's version counter)
            if any(leaf._vc is vc for vc in seen[:len(inputs)]):
                raise RuntimeError(_NO_ALIAS.format(op, "an input"))
            if any(leaf._vc is vc for vc in seen[len(inputs):]):
                raise RuntimeError(_NO_ALIAS.format(op, "another output"))
            seen.append(leaf._vc)
    return leaves


def cond(pred: bool | float | Tensor, true_fn: Callable, false_fn: Callable,
         operands: tuple | list = ()) -> Any:
    r"""Conditionally applies ``true_fn`` or ``false_fn``: ``true_fn(*operands)`` if ``pred``,
    else ``false_fn(*operands)``.

    Args:
        pred (bool or Tensor): a boolean expression or a tensor with one element, indicating
            which branch function to apply.
        true_fn (Callable): the function applied when ``pred`` is true.
        false_fn (Callable): the function applied when ``pred`` is false; the branches take
            the same inputs and return the same structure of tensors (of the same shapes and
            dtypes) or ints.
        operands (tuple of possibly nested dict/list/tuple of Tensor): the inputs of the
            branch functions. Defaults to ().

    A Python ``pred`` simply picks the branch (no checks, as PyTorch's). With a tensor
    ``pred``, the branch must not return an input (or a view of one) nor modify an input in
    place while grad mode is on: PyTorch's errors. Only the branch taken runs (this module's
    docstring says what that leaves unchecked); gradients flow through it.

    Example:
        >>> x = tg.tensor([0.5, 1.0])
        >>> tg.cond(x.sum() > 1, lambda a: a.cos(), lambda a: a.sin(), (x,))
        tensor([0.8776, 0.5403])
    """
    if isinstance(pred, (bool, int, float)):
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(  # noqa: TRY004 - PyTorch's type
            f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")  # noqa: TRY004
    inputs = tree_flatten(operands)[0] if isinstance(operands, (tuple, list)) else None
    if inputs is None or not all(isinstance(t, Tensor) for t in inputs):
        raise RuntimeError(f"Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    versions = [t._vc[0] for t in inputs]
    out = (true_fn if bool(pred) else false_fn)(*operands)
    # (in inference a branch may modify and return its inputs, as PyTorch allows)
    _check_outputs("torch.cond", out, inputs, versions, strict=state.grad_enabled)
    return out


def _check_pred(p) -> bool:
    """``cond_fn``'s result as a Python bool: it must be a bool or a one-element bool tensor
    with no dimensions."""
    if isinstance(p, bool):
        return p
    if isinstance(p, Tensor) and p.ndim == 0 and p.dtype is dtypes.bool:
        return bool(p)
    what = f"tensor of shape {list(p.shape)} and dtype {p.dtype}" if isinstance(p, Tensor) \
        else type(p).__name__
    raise RuntimeError(f"torch.while_loop: Expected cond_fn to return a scalar tensor or a bool "
                       f"but got {what}.")


def _check_carried(out_leaves: list, carried: list) -> None:
    """PyTorch's check that an iteration's outputs match the carried inputs: as many, and
    each tensor of the same shape, dtype and device (an int for an int)."""
    if len(out_leaves) != len(carried):
        raise RuntimeError(f"torch.while_loop: Expected body_fn_output and carried_inputs to "
                           f"have same number of outputs but got {len(out_leaves)} and "
                           f"{len(carried)}")
    for i, (a, b) in enumerate(zip(out_leaves, carried)):
        if isinstance(a, Tensor) != isinstance(b, Tensor):
            raise RuntimeError(f"torch.while_loop: Expected body_fn_output and carried_inputs "
                               f"to have same metadata but found:\npair[{i}] differ in type: "
                               f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, Tensor):
            diffs = [f"'{name}: {x} vs {y}'" for name, x, y in (
                ("shape", a.shape, b.shape), ("dtype", a.dtype, b.dtype),
                ("device", a.device, b.device)) if x != y]
            if diffs:
                raise RuntimeError(f"torch.while_loop: Expected body_fn_output and "
                                   f"carried_inputs to have same metadata but found:\n"
                                   f"pair[{i}] differ in {', '.join(diffs)}")


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list) -> Any:
    r"""Runs ``body_fn(*carried_inputs)`` while ``cond_fn(*carried_inputs)`` returns a True
    scalar tensor (or True). Returns the output of ``body_fn`` or, if it never ran, the
    initial carried inputs (as a tuple of copies).

    Args:
        cond_fn (Callable): returns a boolean scalar tensor or a Python bool.
        body_fn (Callable): takes the same inputs as ``cond_fn`` and returns the next carried
            values: tensors of the same shapes, dtypes and devices (or ints).
        carried_inputs (tuple of possibly nested dict/list/tuple of tensors or ints): the
            inputs of ``cond_fn`` and ``body_fn``, and the initial state carried across
            iterations.

    ``body_fn`` and ``cond_fn`` must not modify the carried inputs in place nor return one of
    them (clone first): PyTorch's errors. Gradients flow through every iteration.

    Example:
        >>> tg.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
        ...               (tg.tensor(0), tg.ones(2)))
        (tensor(3), tensor([8., 8.]))
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")  # noqa: TRY004
    carried, spec = tree_flatten(carried_inputs) if isinstance(carried_inputs, (tuple, list)) \
        else (None, None)
    if carried is None or not all(isinstance(v, (Tensor, int)) for v in carried):
        raise RuntimeError(f"Expect carried_inputs to be a tuple of possibly nested "
                           f"dict/list/tuple that only consists of tensor or int leaves, but "
                           f"got {carried_inputs}.")
    val, out = carried_inputs, None
    while True:
        tensors = [t for t in carried if isinstance(t, Tensor)]
        versions = [t._vc[0] for t in tensors]
        go = _check_pred(cond_fn(*val))
        if any(t._vc[0] != v for t, v in zip(tensors, versions)):
            raise RuntimeError(_NO_MUTATION.format("torch.while_loop"))
        if not go:
            break
        out = body_fn(*val)
        leaves = _check_outputs("torch.while_loop", out, tensors, versions)
        _check_carried(leaves, carried)
        # (the functions always see the carried inputs' structure; the result keeps body_fn's)
        carried, val = leaves, tree_unflatten(leaves, spec)
    if out is not None:
        return out
    # (no iteration: copies, as PyTorch's outputs never alias the inputs)
    return tuple(tree_map(lambda v: v.clone() if isinstance(v, Tensor) else v, val))
