"""``nn.utils.parametrize``: PyTorch's parametrizations of module tensors.

``register_parametrization(module, "weight", P)`` replaces the parameter (or buffer)
``module.weight`` by ``P(original)``: the original tensor moves to
``module.parametrizations.weight.original`` (several, ``original0``, ``original1``, ..., when
``P.right_inverse`` returns a sequence), and ``module.weight`` becomes a property of a
subclass made for the module (``Parametrized<Class>``) that computes the parametrized value
on each access (once inside ``cached()``). Assigning ``module.weight = X`` stores
``P.right_inverse(X)`` in the original.
"""

from __future__ import annotations

import collections.abc
import contextlib
from collections.abc import Iterator

from ...autograd.grad_mode import no_grad
from ...autograd.tensor import Tensor
from ..container import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "transfer_parametrizations_and_params",
           "type_before_parametrizations"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Context manager that enables the caching system within parametrizations registered
    with ``register_parametrization``: the value of a parametrized object is computed and
    cached the first time it is required inside the context, and the cached values are
    discarded when leaving it.

    Useful when a parametrized parameter is used more than once in the forward pass (the
    weight of a recurrent network, for instance) or when parameters are shared.

    Example::

        >>> with tg.nn.utils.parametrize.cached():  # doctest: +SKIP
        ...     output = model(inputs)
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _set_original(original: Tensor, value: Tensor) -> None:
    """Makes ``original`` (the same object, so optimizers holding it keep it) hold
    ``value``."""
    if value is not original:
        original.set_(value)


class ParametrizationList(ModuleList):
    """A sequential container that holds and manages the original parameters or buffers of
    a parametrized ``nn.Module``: the type of ``module.parametrizations[tensor_name]`` when
    ``module[tensor_name]`` has been parametrized with ``register_parametrization``.

    Its ``original`` (or ``original0``, ``original1``, ...) is the unparametrized tensor;
    calling it returns ``modules[-1](...modules[0](original))``.

    Args:
        modules: the parametrizations.
        original: the parameter or buffer that is parametrized.
        unsafe: whether the parametrization may change the dtype and shape of the tensor
            (the checks are then skipped).
    """

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        # the stored form of the current value: right_inverse of each parametrization, last
        # first (one without right_inverse, or whose right_inverse is not implemented, is
        # taken as the identity)
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError(  # noqa: TRY004 (PyTorch's type)
                f"'right_inverse' must return a Tensor or a Sequence of tensors "
                f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the device.\noriginal.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                _set_original(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(  # noqa: TRY004 (PyTorch's type)
                        f"'right_inverse' must return a Tensor or a Sequence of "
                        f"tensors (list, tuple...). Got element {i} of the "
                        f"sequence with type {type(part).__name__}.")
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            _check_unchanged(z, original_dtype, original_shape, "the `unsafe` flag")

    def right_inverse(self, value: Tensor) -> None:
        """Calls the ``right_inverse`` methods of the parametrizations in the inverse
        registration order, and stores the result in ``self.original`` (or ``original0``,
        ``original1``, ...)."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       f"implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set_original(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(  # noqa: TRY004 (PyTorch's type)
                    f"'right_inverse' must return a sequence of tensors. Got "
                    f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                 f"length {self.ntensors}. Got a sequence of length "
                                 f"{len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(  # noqa: TRY004 (PyTorch's type)
                        f"`right_inverse` must return a sequence of tensors. Got "
                        f"element {i} of type {type(tensor).__name__}")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{tensor.dtype} while `original{i}` has dtype "
                                     f"{original_i.dtype}")
                _set_original(original_i, tensor)

    def forward(self) -> Tensor:
        parametrizations = list(self)
        if self.is_tensor:
            x = parametrizations[0](self.original)
        else:
            x = parametrizations[0](*(getattr(self, f"original{i}")
                                      for i in range(self.ntensors)))
        for module in parametrizations[1:]:
            x = module(x)
        return x


def _check_unchanged(x: Tensor, dtype, shape, flag: str) -> None:
    if x.dtype != dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the "
                         f"tensor, unless {flag} is enabled.\nunparametrized dtype: {dtype}\n"
                         f"parametrized dtype: {x.dtype}")
    if x.shape != shape:
        raise ValueError(f"Registering a parametrization may not change the shape of the "
                         f"tensor, unless {flag} is enabled.\nunparametrized shape: {shape}\n"
                         f"parametrized shape: {x.shape}")


def _inject_new_class(module: Module) -> None:
    """Gives ``module`` a class of its own, ``Parametrized<Class>``, to hold the properties
    of its parametrized tensors (other instances of its class are left alone)."""
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Registers a parametrization to a tensor in a module.

    ``module.tensor_name`` then returns ``parametrization(module.tensor_name)``; the original
    tensor is ``module.parametrizations[tensor_name].original``. Registering several
    parametrizations on one tensor chains them (the first registered is applied first).
    If ``parametrization`` has a ``right_inverse(X)`` method, it is called on the current
    value to initialise the original, and on every assignment ``module.tensor_name = X``;
    it may return a sequence of tensors, which are then stored as ``original0``,
    ``original1``, ... and passed to ``parametrization.forward`` as separate arguments.

    Args:
        module: module on which to register the parametrization.
        tensor_name: name of the parameter or buffer to parametrize.
        parametrization: the parametrization (a Module).
        unsafe: if True, the parametrization may change the dtype and shape of the tensor
            (the consistency checks are skipped). Default: False.

    Raises:
        ValueError: if the module has no parameter or buffer named ``tensor_name``, or if
            the parametrization changes the tensor's dtype or shape without ``unsafe``.

    Example::

        >>> class Symmetric(tg.nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).T
        >>> m = tg.nn.Linear(3, 3)
        >>> _ = register_parametrization(m, "weight", Symmetric())
        >>> bool((m.weight == m.weight.T).all())
        True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(x).__name__}.")
            _check_unchanged(x, y.dtype, y.shape, "the `unsafe` flag")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(  # noqa: TRY004 (PyTorch's type)
                            f"parametrization.right_inverse must return a "
                            f"tensor. Got: {type(z).__name__}")
                    if z.dtype != y.dtype:
                        raise ValueError(f"The tensor returned by parametrization.right_inverse "
                                         f"must have the same dtype as "
                                         f"module.{tensor_name}, unless the `unsafe` flag is "
                                         f"enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
                                         f"returned dtype: {z.dtype}")
                    if z.shape != y.shape:
                        raise ValueError(f"The tensor returned by parametrization.right_inverse "
                                         f"must have the same shape as "
                                         f"module.{tensor_name}, unless the `unsafe` flag is "
                                         f"enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
                                         f"returned shape: {z.shape}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Removes the parametrizations on a tensor in a module.

    With ``leave_parametrized=True``, ``module[tensor_name]`` is set to its current output
    (stored in the original Parameter object, so optimizers keep working); with False, to
    the unparametrized original tensor (possible only when it is one tensor).

    Raises:
        ValueError: if ``module[tensor_name]`` is not parametrized, or if
            ``leave_parametrized=False`` and the parametrization depends on several tensors.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                _set_original(original, getattr(module, tensor_name))
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        # (not under no_grad: whether the originals require grad decides what this is)
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's type before parametrizations were registered (its type otherwise)."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Transfers the parametrizations of ``from_module`` (all of them, or those on
    ``tensor_name``) and the tensors they parametrize to ``to_module``: the same
    parametrization modules are registered on ``to_module`` (a tensor it lacks is first
    created as a Parameter holding ``from_module``'s current value), and its originals
    become ``from_module``'s original tensors, shared. Nothing happens if ``from_module``
    is not parametrized.

    Returns:
        ``to_module``.
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        originals = ["original"] if source.is_tensor else \
            [f"original{i}" for i in range(source.ntensors)]
        for attr in originals:
            setattr(target, attr, getattr(source, attr))
    return to_module
