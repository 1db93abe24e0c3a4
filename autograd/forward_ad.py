"""Forward-mode automatic differentiation, as ``torch.autograd.forward_ad``.

Inside a dual level a tensor may carry a *tangent* (its forward gradient): ``make_dual(x, t)``
returns a view of ``x`` whose tangent is ``t``, and every op applied to tensors with tangents
gives its outputs the tangents ``J t`` (the Jacobian-vector product), computed by the op's
``jvp`` rule beside its ``vjp`` (autograd/dispatch.py, Note [Forward AD]). ``unpack_dual``
reads a tensor's primal and tangent back. Leaving the level drops every tangent made in it.

Example:
    >>> import tritongrad as torch
    >>> import tritongrad.autograd.forward_ad as fwAD
    >>> x, v = torch.tensor([1., 2.]), torch.tensor([1., 0.])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, v).exp()
    ...     jvp = fwAD.unpack_dual(y).tangent
    >>> jvp
    tensor([2.7183, 0.0000])

As in PyTorch, one dual level exists at a time: entering a second one while the first is
active raises "Nested forward mode AD is not supported at the moment".

A tangent may also be a batch of tangents (``autograd.batched.batch``: Note [Batched forward
AD]): one forward pass then gives the outputs a batch of Jacobian-vector products, as
PyTorch's vmap over forward AD does; gradcheck's ``check_batched_forward_grad`` and
``jacobian(strategy="forward-mode", vectorize=True)`` use it.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

from . import dispatch
from .batched import BatchedArray, with_layout
from .storage import has_same_meta, new_with_same_meta
from .tensor import Tensor

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]

# The active levels, innermost last: dispatch's list, read on every op (empty: no forward AD,
# and the op's path is unchanged). At most one, as PyTorch allows.
_levels: list = dispatch.dual_levels
# level -> {id(tensor): weakref to it}: the tensors given a tangent in that level, whose
# tangents are dropped when it exits. (By id: Tensor's == is elementwise, so tensors cannot
# be keys of a WeakSet.)
_holders: dict = {}


def enter_dual_level() -> int:
    """Function that can be used to enter a new forward grad level.

    This level can be used to make and unpack dual Tensors to compute forward gradients.
    This function also updates the current level that is used by default by the other
    functions in this API.

    Returns:
        int: the new level (0: only one level can be active at a time).
    """
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    level = 0
    _levels.append(level)
    _holders[level] = {}
    return level


def exit_dual_level(*, level: int | None = None) -> None:
    """Function that can be used to exit a forward grad level.

    This function deletes all the gradients associated with this level. Only deleting the
    latest entered level is allowed.
    """
    if level is None:
        if not _levels:
            raise RuntimeError("Dual level must be a positive number.")
        level = _levels[-1]
    if not _levels or level != _levels[-1]:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    _levels.pop()
    for ref in _holders.pop(level, {}).values():
        t = ref()
        if t is not None:
            grads = t.__dict__.get("_fw_grads")
            if grads is not None:
                grads.pop(level, None)


def _current(level: int | None, what: str) -> int:
    if level is None:
        if not _levels:
            raise RuntimeError(f"Trying to {what} but no level exists, make sure to "
                               f"enter_dual_level() first.")
        return _levels[-1]
    if level not in _levels:
        raise RuntimeError("Invalid level given to _make_dual" if what.startswith("create")
                           else "Invalid level given to _unpack_dual")
    return level


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """Associate a tensor value with its tangent to create a "dual tensor" for forward AD
    gradient computation.

    The result is a new tensor aliased to ``tensor`` with ``tangent`` embedded as an
    attribute as-is if it has the same storage layout or copied otherwise. The tangent
    attribute can be recovered with :func:`unpack_dual`.

    This function is backward differentiable.

    Given a function ``f`` whose jacobian is ``J``, it allows one to compute the
    Jacobian-vector product (``jvp``) between ``J`` and a given vector ``v`` as follows.

    Example:
        >>> with dual_level():
        ...     inp = make_dual(x, v)
        ...     out = f(inp)
        ...     y, jvp = unpack_dual(out)
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    if not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual(): argument 'tangent' must be Tensor, not "
                        f"{type(tangent).__name__}")
    level = _current(level, "create a dual Tensor for forward AD")
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.dtype.is_floating_point or tangent.dtype.is_complex):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if tangent.dtype is not tensor.dtype and \
            tangent.dtype.is_complex is tensor.dtype.is_complex:
        # PyTorch takes a tangent of another floating dtype (its ops' tangents come out in
        # their results' dtypes): here it is cast to the primal's, where the rules expect it
        tangent = tangent.to(tensor.dtype)
    if tangent.dtype is not tensor.dtype:
        raise RuntimeError(f"Trying to set a forward gradient that has a different dtype than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"dtype {tensor.dtype} while the given forward gradient is of dtype "
                           f"{tangent.dtype}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"Trying to set a forward gradient that is on a different device "
                           f"than that of the original Tensor, this is not supported. Tensor is "
                           f"on {tensor.device} while the given forward gradient is on "
                           f"{tangent.device}.")
    if get_tangent(tensor, level) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    if get_tangent(tangent, level) is not None:  # (PyTorch's wording, "level0" included)
        raise RuntimeError(f"Setting a forward grad that itself has a forward gradient at the "
                           f"same level{level} is not supported.")
    with dispatch.dual_masked():
        dual = tensor.view(tensor.shape)  # an alias with tensor's backward history
        if type(tangent._data) is BatchedArray:  # (Note [Batched forward AD]: each entry so)
            tangent = with_layout(tensor, tangent)
        elif not has_same_meta(tensor, tangent):
            # a view of the dual must read the tangent's elements where it reads the
            # primal's (as_strided, storage offsets included): the tangent is copied into
            # the primal's layout
            tangent = new_with_same_meta(tensor, tangent)
    set_tangent(dual, level, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """Namedtuple returned by :func:`unpack_dual` containing the primal and tangent
    components of the dual tensor."""

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """Unpack a "dual tensor" to get both its Tensor value and its forward AD gradient.

    The result is a namedtuple ``(primal, tangent)`` where ``primal`` is a view of
    ``tensor``'s primal and ``tangent`` is ``tensor``'s tangent as-is. Neither of these
    tensors can be dual tensor of level ``level``.

    This function is backward differentiable.

    Example:
        >>> with dual_level():
        ...     inp = make_dual(x, x_t)
        ...     out = f(inp)
        ...     y, jvp = unpack_dual(out)
        ...     jvp = unpack_dual(out).tangent
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    if level is None and not _levels:
        return UnpackedDualTensor(tensor, None)
    level = _current(level, "unpack a dual Tensor")
    tangent = get_tangent(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with dispatch.dual_masked():
        primal = tensor.view(tensor.shape)
    return UnpackedDualTensor(primal, tangent)


class dual_level:  # (PyTorch's name)
    """Context-manager for forward AD, where all forward AD computation must occur within
    the ``dual_level`` context.

    The ``__enter__`` method returns the new level (``enter_dual_level``); on exit the level
    and every tangent made in it are dropped (``exit_dual_level``).

    Example:
        >>> x = torch.tensor([1.])
        >>> x_t = torch.tensor([1.])
        >>> with dual_level():
        ...     inp = make_dual(x, x_t)
        ...     # Do computations with inp
        ...     out = your_fn(inp)
        ...     _, grad = unpack_dual(out)
        >>> grad is None
        False
        >>> # After exiting the level, the grad is deleted
        >>> _, grad_after = unpack_dual(out)
        >>> grad_after is None
        True
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        exit_dual_level()


# -- the tangent slot (read and written by dispatch's forward-AD path) --------------------------

def get_tangent(t: Tensor, level: int) -> Tensor | None:
    """``t``'s tangent at ``level``, or None."""
    grads = t.__dict__.get("_fw_grads")
    return None if grads is None else grads.get(level)


def current_tangent(t: Tensor) -> Tensor | None:
    """``t``'s tangent at the active level, or None (no level, or no tangent): what a
    tensor's repr shows as ``tangent=``."""
    return get_tangent(t, _levels[-1]) if _levels else None


def set_tangent(t: Tensor, level: int, tangent: Tensor) -> None:
    """Gives ``t`` the tangent ``tangent`` at ``level`` (dropped when the level exits)."""
    grads = t.__dict__.get("_fw_grads")
    if grads is None:
        grads = t.__dict__["_fw_grads"] = {}
    grads[level] = tangent
    _holders[level][id(t)] = weakref.ref(t, _forget(level, id(t)))


def _forget(level: int, key: int):
    def callback(_ref) -> None:
        holders = _holders.get(level)
        if holders is not None:
            holders.pop(key, None)
    return callback


dispatch.install_forward_ad(get_tangent, set_tangent)
