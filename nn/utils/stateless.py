"""``nn.utils.stateless``: calling a module with other parameters and buffers
(``functional_call``, deprecated in PyTorch for ``torch.func.functional_call``, which
``tritongrad.func`` has: nn/_functional_call.py).

The module's own tensors are swapped out for the call and back afterwards, by writing its
registries directly (``_parameters``, ``_buffers``; a plain attribute otherwise), as PyTorch's
``NamedMemberAccessor`` does: a plain Tensor can then stand where a Parameter was, which
``Module.__setattr__`` would refuse.
"""

from __future__ import annotations

import contextlib
import warnings

from ...autograd.tensor import Tensor
from ..module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _swap_tensor(module: Module, name: str, tensor, allow_missing: bool = False):
    """Puts ``tensor`` (``_MISSING``: nothing) under ``name`` in ``module``; returns what was
    there (``_MISSING`` if nothing was)."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of tritongrad.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for registry in (module._parameters, module._buffers):
        if name in registry:
            orig = registry[name]
            if tensor is _MISSING:
                del registry[name]
            else:
                registry[name] = tensor
            return orig
    if hasattr(module, name):
        orig = getattr(module, name)
        if orig is not None and not isinstance(orig, Tensor):
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of "
                            f"tritongrad.Tensor")
    elif not allow_missing:
        raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
    else:
        orig = _MISSING
    if tensor is not _MISSING:
        object.__setattr__(module, name, tensor)
    elif hasattr(module, name):
        object.__delattr__(module, name)
    return orig


class _Accessor:
    """Dotted names of a module's tensors (``"layer1.weight"``): its submodules looked up
    once each."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.memo: dict = {}

    def submodule(self, path: str) -> Module:
        if not path:
            return self.module
        if path not in self.memo:
            prefix, _, attr = path.rpartition(".")
            parent = self.submodule(prefix)
            try:
                sub = getattr(parent, attr)
            except AttributeError as ex:
                raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
            if not isinstance(sub, Module):
                raise TypeError(f"submodule `{path}`: {sub} is not an instance of "
                                f"tritongrad.nn.Module")
            self.memo[path] = sub
        return self.memo[path]

    def swap(self, named: dict) -> dict:
        """Swaps every ``name: tensor`` in; returns the originals (undoes a partial swap
        before re-raising)."""
        orig: dict = {}
        try:
            for name, tensor in named.items():
                prefix, _, attr = name.rpartition(".")
                orig[name] = _swap_tensor(self.submodule(prefix), attr, tensor,
                                          allow_missing=True)
        except Exception:
            self.swap(orig)
            raise
        return orig

    def check_keys(self, keys) -> tuple[list, list]:
        """(missing, unexpected) names, against every parameter and buffer name."""
        keys = set(keys)
        valid = {n for n, _ in self.module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in self.module.named_buffers(remove_duplicate=False)}
        return sorted(valid - keys), sorted(keys - valid)


def _untie_named_tensors_map(module: Module, parameters_and_buffers: dict) -> dict:
    """``parameters_and_buffers`` with a value for every name tied to a given one (weights
    shared between names: one tensor under several names); different values given for tied
    names are a ValueError."""
    names_of: dict = {}  # id(tensor) -> its names
    for name, t in (*module.named_parameters(remove_duplicate=False),
                    *module.named_buffers(remove_duplicate=False)):
        names_of.setdefault(id(t), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    given = [name for name in parameters_and_buffers if name in tied]
    for name in given:
        names = tied[name]
        if (len(names.intersection(given)) > 1 and len(
                {id(parameters_and_buffers[n]) for n in names if n in parameters_and_buffers})
                != 1):
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             f"which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given:
        for other in tied[name]:
            untied[other] = parameters_and_buffers[name]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict,
                          tie_weights: bool = False, strict: bool = False):
    """Within the block, ``module``'s tensors named in ``parameters_and_buffers`` are those
    tensors. A tensor the call replaced in the module (an in-place update of a buffer by
    assignment) is written back into ``parameters_and_buffers``, as in PyTorch."""
    untied = (_untie_named_tensors_map(module, parameters_and_buffers) if tie_weights
              else parameters_and_buffers)
    accessor = _Accessor(module)
    if strict:
        missing, unexpected = accessor.check_keys(untied)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    orig: dict = {}
    try:
        orig = accessor.swap(untied)
        yield
    finally:
        new = accessor.swap(orig)
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    from ..parallel import DataParallel
    if isinstance(module, DataParallel):
        raise RuntimeError(  # noqa: TRY004 - PyTorch's type
            "The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Perform a functional call on the module by replacing the module parameters and buffers
    with the provided ones.

    .. warning::
        This API is deprecated as of PyTorch 2.0 and will be removed in a future version of
        PyTorch. Please use :func:`tritongrad.func.functional_call` instead, which is a
        drop-in replacement for this API.

    The arguments and the result are those of :func:`tritongrad.func.functional_call` with
    one dict of parameters and buffers.
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
