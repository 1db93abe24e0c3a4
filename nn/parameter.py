"""``Parameter``: a Tensor that a Module registers as one of its trainable parameters."""

from __future__ import annotations

import weakref

from ..autograd import overrides
from ..autograd.overrides import DisableTorchFunctionSubclass, _disabled_torch_function_impl
from ..autograd.state import state
from ..autograd.tensor import Tensor, user_subclass

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter",
           "affine_parameters", "is_lazy", "normalized_shape_parameters"]


class _ParameterMeta(type):
    # An instance of a user's Tensor subclass made a parameter keeps its class (its methods
    # and __torch_function__) and is marked as one: isinstance answers from the mark, as
    # PyTorch's _ParameterMeta does.
    def __instancecheck__(cls, instance) -> bool:
        # (Tensor first: an fx Proxy answers any getattr with a proxy, whose truth raises)
        if cls is Parameter and isinstance(instance, Tensor) \
                and getattr(instance, "_is_param", False):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A Tensor that is a module parameter: assigning one as a Module attribute registers it
    (it then appears in ``parameters()`` and ``state_dict()``).

    It is a leaf that shares ``data``'s storage (and version counter) and requires grad unless
    ``requires_grad=False``; ops on it return plain Tensors, as in PyTorch. ``data`` of a
    user's Tensor subclass gives ``data.detach()``, of that subclass, marked as a parameter
    (``isinstance(p, Parameter)`` holds), as PyTorch's.

    Args:
        data: the initial values (a Tensor; an empty float tensor when None).
        requires_grad: whether the parameter requires gradient (default True).

    Example:
        >>> p = tg.nn.Parameter(tg.zeros(2))
        >>> p
        Parameter containing:
        tensor([0., 0.], requires_grad=True)
        >>> isinstance(p, tg.Tensor), p.is_leaf, (p * 2).__class__.__name__
        (True, True, 'Tensor')
    """

    __slots__ = ()
    __torch_function__ = _disabled_torch_function_impl  # (ops give plain Tensors)
    _is_parameter_class = True  # (tensor.user_subclass: not a user's class)

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ..autograd.ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a Tensor, got {type(data).__name__}")
        if user_subclass(data):
            return _marked_parameter(data, requires_grad)
        p = Tensor._make_subclass(cls, data)  # data's storage and version counter, no history
        if requires_grad:
            if p._inference and not state.inference:
                p._inference = False  # a parameter is a normal tensor (PyTorch clones here)
            p.requires_grad_(True)
        return p

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        # Pickle (copy.copy, multiprocessing) as "rebuild from a copy of the values": the
        # storage is not shared with the pickled object, as with any copy. Attributes a user
        # or library gave the parameter (``p.is_sharded = True``) are kept, as PyTorch's.
        args = (self.detach().cpu().numpy().copy(), str(self.dtype), str(self.device),
                self.requires_grad)
        attributes = self._user_attributes()
        return (_rebuild_parameter, (*args, attributes) if attributes else args)


def _marked_parameter(data: Tensor, requires_grad: bool) -> Tensor:
    """PyTorch's parameter of a Tensor subclass: ``data.detach()``, of ``data``'s class,
    marked ``_is_param``."""
    t = data.detach().requires_grad_(requires_grad)
    if type(t) is not type(data):
        raise RuntimeError(
            f"Creating a Parameter from an instance of type {type(data).__name__} requires "
            f"that detach() returns an instance of the same type, but return type "
            f"{type(t).__name__} was found instead. To use the type as a Parameter, please "
            f"correct the detach() semantics defined by its __torch_dispatch__() "
            f"implementation.")
    t._is_param = True
    return t


class _BufferMeta(type):
    # a Buffer is a plain Tensor marked as one: isinstance answers from the mark
    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A kind of Tensor that should not be considered a model parameter. For example,
    BatchNorm's ``running_mean`` is not a parameter, but is part of the module's state.

    When assigned as a Module attribute, a Buffer is added to the module's buffers (it then
    appears in ``buffers()`` and, when persistent, in ``state_dict()``); assigning a plain
    Tensor does not do that (``register_buffer`` does). ``Buffer(t)`` returns a detached
    alias of ``t`` (its storage, its ``requires_grad``) marked as a buffer.

    Args:
        data: buffer tensor.
        persistent: whether the buffer is part of the module's ``state_dict``. Default: True.

    Example:
        >>> m = tg.nn.Module()
        >>> m.steps = tg.nn.Buffer(tg.zeros(()), persistent=False)
        >>> [name for name, _ in m.named_buffers()], list(m.state_dict())
        (['steps'], [])
    """

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            from ..autograd.ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: data must be a Tensor, got {type(data).__name__}")
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


# Tensor methods an uninitialized parameter or buffer still allows (PyTorch's
# ``UninitializedTensorMixin._allowed_methods``): what Module.to/cuda/half/... and copying
# call on it, which act on its (empty) data; every other op raises.
_ALLOWED_METHODS = frozenset(f"Tensor.{n}" for n in (
    "__hash__", "size", "copy_", "is_complex", "is_floating_point", "half", "float", "double",
    "char", "short", "int", "long", "cuda", "cpu", "to", "get_device"))


# The uninitialized parameters and buffers not yet materialized, id -> weak reference (a
# tensor's == is elementwise: no WeakSet; one that dies uninitialized leaves without a call to
# release_transient).
_uninitialized: dict = {}


def _track(t: Tensor) -> Tensor:
    key = id(t)
    _uninitialized[key] = weakref.ref(t, lambda _: _uninitialized.pop(key, None))
    return t


class UninitializedTensorMixin:
    """What an uninitialized parameter or buffer of a lazy module does: it holds no values
    until ``materialize(shape)`` gives it some and turns it into ``cls_to_become``; its shape
    cannot be read and ops other than conversions (``to``, ``float``, ``copy_``, ``size``,
    ...) raise a ValueError before that."""

    cls_to_become: type = Tensor
    __slots__ = ()
    _transient_override = True  # (Note [Transient overrides] in autograd/overrides.py)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # (a property's getter comes as its __get__, a method-wrapper: allowed, as in PyTorch)
        if getattr(func, "__qualname__", None) in _ALLOWED_METHODS \
                or type(func).__name__ == "method-wrapper":
            return _disabled_torch_function_impl(func, types, args, kwargs)
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {func}. This error happens when "
            f"you are using a `LazyModule` or explicitly manipulating "
            f"`torch.nn.parameter.{cls.__name__}` objects. When using LazyModules Call "
            f"`forward` with a dummy batch to initialize the parameters before calling torch "
            f"functions")

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Creates a tensor of ``shape`` (uninitialized values; on ``device`` and of
        ``dtype``, this tensor's own by default) in place of this one's data, and turns this
        object into a ``Parameter`` (or a ``Tensor``, for a buffer)."""
        from ..autograd.ops.creation import empty
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = empty(tuple(shape), device=device, dtype=dtype)
        self.__class__ = self.cls_to_become
        _uninitialized.pop(id(self), None)
        if not _uninitialized:  # (the last one: ops need not ask about them any more)
            overrides.release_transient()

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to "
                           "load an uninitialized parameter into an initialized one. Call "
                           "`forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __deepcopy__(self, memo):
        # (a new uninitialized one; PyTorch's buffer copy runs an op and raises here)
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, protocol):
        # (rebuilt uninitialized, as PyTorch: there are no values to save)
        return (self.__class__, (self.requires_grad,))

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer (of a lazy module)."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter that is not initialized yet: a lazy module's (``nn.LazyLinear``), whose
    shape the first forward infers. It becomes a regular ``Parameter`` when materialized."""

    cls_to_become = Parameter
    __slots__ = ()

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        from ..autograd.ops.creation import empty
        with DisableTorchFunctionSubclass():  # (Parameter's setup runs ops on the new object)
            p = Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)
        return _track(p)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer that is not initialized yet (of a lazy module); it becomes a regular
    ``Tensor`` when materialized."""

    cls_to_become = Tensor
    __slots__ = ()

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        from ..autograd.ops.creation import empty
        with DisableTorchFunctionSubclass():  # (requires_grad_ on the new object)
            b = Tensor._make_subclass(cls, empty(0, device=device, dtype=dtype), requires_grad)
        return _track(b)


def _rebuild_parameter(array, dtype_name: str, device: str, requires_grad: bool,
                       attributes: dict | None = None) -> Parameter:
    from ..autograd.ops.creation import as_dtype, tensor
    p = Parameter(tensor(array, dtype=as_dtype(dtype_name), device=device), requires_grad)
    if attributes:
        p.__dict__.update(attributes)
    return p


def affine_parameters(module, shape, names=("weight", "bias"), present=True, device=None,
                      dtype=None) -> None:
    """Registers each of ``names`` on ``module`` as an uninitialised Parameter of ``shape``,
    or, when not ``present`` (``bias=False``, ``affine=False``), as None, which keeps the name
    a parameter slot as PyTorch does (``module.bias is None``, absent from the state dict)."""
    from ..autograd.ops.creation import empty
    for name in names:
        if present:
            setattr(module, name, Parameter(empty(tuple(shape), device=device, dtype=dtype)))
        else:
            module.register_parameter(name, None)


def normalized_shape_parameters(module, normalized_shape, eps, elementwise_affine: bool,
                                bias: bool | None, device=None, dtype=None) -> None:
    """LayerNorm's and RMSNorm's shared setup: ``normalized_shape`` (an int or a sequence)
    kept as a tuple, ``eps``, and the per-element ``weight`` (and ``bias``) when
    ``elementwise_affine``; ``bias=None``: the layer has no bias slot at all (RMSNorm)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    module.normalized_shape = tuple(normalized_shape)
    module.eps = eps
    module.elementwise_affine = elementwise_affine
    affine_parameters(module, module.normalized_shape, ("weight",), elementwise_affine, device,
                      dtype)
    if bias is not None:
        affine_parameters(module, module.normalized_shape, ("bias",),
                          elementwise_affine and bias, device, dtype)
