"""``torch.nn.utils.prune``: pruning a module's parameters with masks.

Pruning ``module.<name>`` re-parametrizes it, as PyTorch does: the original values move to the
parameter ``<name>_orig``, the mask (0 where pruned) becomes the buffer ``<name>_mask``, and
``module.<name>`` is a plain attribute, ``<name>_orig * <name>_mask``, recomputed by a forward
pre-hook (the pruning method itself) before every forward, so gradients reach ``<name>_orig``
through the mask. Pruning the same parameter again combines the methods in a
``PruningContainer``: the new method prunes among the entries (or, for structured methods, the
channels) still unpruned, and the masks multiply. ``remove`` makes the pruning permanent (the
parameter ``<name>`` holds the masked values again; ``_orig``, ``_mask`` and the hook go).

``amount`` is an int (how many entries or channels) or a float in [0, 1] (that fraction,
rounded to the nearest count); the importance of an entry is its absolute value (l1), of a
channel its L``n`` norm over the other dims (``ln_structured``), or random draws from
tritongrad's generator (``manual_seed`` reproduces them).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod

from ...autograd.grad_mode import no_grad
from ...autograd.ops.creation import ones_like, rand, zeros_like
from ...autograd.tensor import Tensor
from ..parameter import Parameter

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured",
           "PruningContainer", "RandomStructured", "RandomUnstructured", "custom_from_mask",
           "global_unstructured", "identity", "is_pruned", "l1_unstructured", "ln_structured",
           "random_structured", "random_unstructured", "remove"]


# -- amounts -------------------------------------------------------------------------------------

def _validate_amount_init(amount) -> None:
    """An int >= 0 or a float in [0, 1] (checked before the tensor is known)."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or amount < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _validate_amount(amount, size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={size}")


def _count(amount, size: int) -> int:
    """How many of ``size`` entries (or channels) ``amount`` prunes."""
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * size)


def _dim_in_range(t: Tensor, dim: int) -> int:
    d = dim + t.dim() if dim < 0 else dim
    if not 0 <= d < t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")
    return d


# -- methods -------------------------------------------------------------------------------------

class BasePruningMethod(ABC):
    """Abstract base class for creation of new pruning techniques.

    Provides a skeleton for customization requiring the overriding of methods such as
    :meth:`compute_mask` and :meth:`apply`. ``PRUNING_TYPE`` says what a mask removes:
    ``"unstructured"`` (entries), ``"structured"`` (channels along ``dim``) or ``"global"``.
    """

    _tensor_name: str
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module, inputs) -> None:
        """The forward pre-hook: ``module.<name>`` from the original and the mask, before each
        forward."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Computes and returns a mask for the input tensor ``t``, starting from
        ``default_mask`` (the mask from earlier pruning iterations, which must be respected)."""

    def apply_mask(self, module) -> Tensor:
        """Simply handles the multiplication between the parameter being pruned and the
        generated mask."""
        if getattr(self, "_tensor_name", None) is None:
            raise AssertionError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores=None, **kwargs):
        """Adds the forward pre-hook that prunes ``module.<name>`` on the fly, the
        re-parametrization into ``<name>_orig`` and ``<name>_mask``, and the first mask.

        Args:
            module (nn.Module): module containing the tensor to prune
            name (str): parameter name within ``module`` on which pruning will act.
            args: arguments passed on to a subclass of :class:`BasePruningMethod`
            importance_scores (torch.Tensor): tensor of importance scores (of same shape as
                module parameter) used to compute mask for pruning. If unspecified or None,
                the parameter will be used in its place.
            kwargs: keyword arguments passed on to a subclass of a :class:`BasePruningMethod`
        """
        method = cls(*args, **kwargs)
        method._tensor_name = name
        earlier = [h for h in module._forward_pre_hooks.values()
                   if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        if len(earlier) > 1:
            raise AssertionError("Only one prior pruning hook per tensor is allowed")
        orig = getattr(module, name) if not earlier else getattr(module, name + "_orig")
        if importance_scores is None:
            importance_scores = orig
        elif tuple(importance_scores.shape) != tuple(orig.shape):
            raise AssertionError(f"importance_scores should have the same shape as parameter "
                                 f"{name} of {module}")
        if earlier:  # combine with what pruned this tensor before
            old = earlier[0]
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            for key, hook in list(module._forward_pre_hooks.items()):
                if hook is old:
                    del module._forward_pre_hooks[key]
            method = container
            default_mask = getattr(module, name + "_mask").detach().clone()
        else:
            default_mask = ones_like(orig)
        try:
            with no_grad():
                mask = method.compute_mask(importance_scores, default_mask=default_mask)
            if not earlier:  # move the parameter aside and keep the mask as a buffer
                module.register_parameter(name + "_orig", orig)
                del module._parameters[name]
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception as e:
            if not earlier:  # (undo a half-done first pruning)
                if name + "_orig" in module._parameters:
                    orig = module._parameters.pop(name + "_orig")
                    module._buffers.pop(name + "_mask", None)
                    module.register_parameter(name, orig)
            raise e
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """Computes and returns a pruned version of input tensor ``t`` according to the
        pruning rule specified in :meth:`compute_mask`."""
        scores = t if importance_scores is None else importance_scores
        mask = self.compute_mask(scores, default_mask=(ones_like(t) if default_mask is None
                                                       else default_mask))
        return t * mask.to(dtype=t.dtype)

    def remove(self, module) -> None:
        """Removes the pruning reparameterization from a module. The pruned parameter named
        ``name`` remains permanently pruned, and the parameter named ``name+'_orig'`` is
        removed from the parameter list. Similarly, the buffer named ``name+'_mask'`` is
        removed from the buffers."""
        name = self._tensor_name
        if getattr(self, "_tensor_name", None) is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 f"removed")
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        with no_grad():
            orig.copy_(weight)
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        module.register_parameter(name, orig if isinstance(orig, Parameter)
                                  else Parameter(orig.detach()))


class PruningContainer(BasePruningMethod):
    """Container holding a sequence of pruning methods for iterative pruning. Keeps track of
    the order in which pruning methods are applied and handles combining successive pruning
    calls."""

    def __init__(self, *args):
        self._pruning_methods: tuple = ()
        if len(args) == 1 and not isinstance(args[0], BasePruningMethod):
            args = tuple(args[0])  # (an iterable of methods)
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Adds a child pruning ``method`` to the container."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and getattr(self, "_tensor_name", None) is not None \
                and method._tensor_name != self._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        if method is not None:
            self._tensor_name = method._tensor_name
            self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask of the newest method, computed on the entries (unstructured) or channels
        (structured) ``default_mask`` leaves unpruned, combined with ``default_mask``."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.clone()
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            keep = default_mask == 1
            new_mask[keep] = method.compute_mask(t[keep], default_mask=default_mask[keep]) \
                .to(dtype=new_mask.dtype)
            return new_mask
        if kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                     'the attribute `dim` defined.')
            dim = _dim_in_range(t, method.dim)
            others = [d for d in range(t.dim()) if d != dim]
            alive = default_mask.sum(dim=others) != 0 if others else default_mask != 0
            index = [slice(None)] * t.dim()
            index[dim] = alive
            index = tuple(index)
            new_mask[index] = method.compute_mask(t[index], default_mask=default_mask[index]) \
                .to(dtype=new_mask.dtype)
            return new_mask
        if kind == "global":
            return method.compute_mask(t, default_mask=default_mask)
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")


class Identity(BasePruningMethod):
    """Utility pruning method that does not prune any units but generates the pruning
    parametrization with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name: str):
        return super().apply(module, name)


class _UnstructuredAmount(BasePruningMethod):
    """Unstructured pruning of ``amount`` entries, the lowest by ``_importance``."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        n = t.numel()
        _validate_amount(self.amount, n)
        k = _count(self.amount, n)
        mask = default_mask.clone()
        if k:
            lowest = self._importance(t).reshape(-1).topk(k, largest=False).indices
            mask.view(-1)[lowest] = 0
        return mask

    @classmethod
    def apply(cls, module, name: str, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomUnstructured(_UnstructuredAmount):
    """Prune (currently unpruned) units in a tensor at random.

    Args:
        amount (int or float): quantity of parameters to prune. If ``float``, should be between
            0.0 and 1.0 and represent the fraction of parameters to prune. If ``int``, it
            represents the absolute number of parameters to prune.
    """

    def _importance(self, t):
        # PyTorch prunes the k largest of rand_like(t): the k lowest of its negation draw the
        # same entries from the same random stream (rand_like: t's dtype consumes the stream)
        return -rand(tuple(t.shape), dtype=t.dtype, device=t.device)


class L1Unstructured(_UnstructuredAmount):
    """Prune (currently unpruned) units in a tensor by zeroing out the ones with the lowest
    L1-norm.

    Args:
        amount (int or float): quantity of parameters to prune. If ``float``, should be between
            0.0 and 1.0 and represent the fraction of parameters to prune. If ``int``, it
            represents the absolute number of parameters to prune.
    """

    def _importance(self, t):
        return t.abs()


class _StructuredAmount(BasePruningMethod):
    """Structured pruning of ``amount`` channels along ``dim``, the lowest by
    ``_importance``."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1):
        _validate_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        if t.dim() <= 1:
            raise ValueError("Structured pruning can only be applied to multidimensional "
                             "tensors. Found tensor of shape {} with {} dims".format(
                                 tuple(t.shape), t.dim()))
        dim = _dim_in_range(t, self.dim)
        channels = t.shape[dim]
        _validate_amount(self.amount, channels)
        k = _count(self.amount, channels)
        if k == 0:
            return default_mask
        keep = self._importance(t, dim).topk(channels - k, largest=True).indices
        index = [slice(None)] * t.dim()
        index[dim] = keep
        mask = zeros_like(t)
        mask[tuple(index)] = 1
        return mask * default_mask

    def _importance(self, t, dim: int) -> Tensor:
        raise NotImplementedError


class RandomStructured(_StructuredAmount):
    """Prune entire (currently unpruned) channels in a tensor at random.

    Args:
        amount (int or float): quantity of parameters to prune. If ``float``, should be between
            0.0 and 1.0 and represent the fraction of parameters to prune. If ``int``, it
            represents the absolute number of parameters to prune.
        dim (int, optional): index of the dim along which we define channels to prune.
            Default: -1.
    """

    def _importance(self, t, dim):
        return rand(t.shape[dim], device=t.device)

    @classmethod
    def apply(cls, module, name: str, amount, dim: int = -1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_StructuredAmount):
    """Prune entire (currently unpruned) channels in a tensor based on their L\\ ``n``-norm.

    Args:
        amount (int or float): quantity of channels to prune. If ``float``, should be between
            0.0 and 1.0 and represent the fraction of parameters to prune. If ``int``, it
            represents the absolute number of parameters to prune.
        n (int, float, inf, -inf, 'fro', 'nuc'): See documentation of valid entries for
            argument ``p`` in :func:`torch.norm`.
        dim (int, optional): index of the dim along which we define channels to prune.
            Default: -1.
    """

    def __init__(self, amount, n, dim: int = -1):
        super().__init__(amount, dim)
        self.n = n

    def _importance(self, t, dim):
        others = [d for d in range(t.dim()) if d != dim]
        return t.norm(p=self.n, dim=others)

    @classmethod
    def apply(cls, module, name: str, amount, n, dim, importance_scores=None):
        return super(_StructuredAmount, cls).apply(module, name, amount=amount, n=n, dim=dim,
                                                   importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (broadcast to the tensor's shape)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(f"mask of shape {tuple(self.mask.shape)} does not match the "
                                 f"tensor's {tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name: str, mask):
        return super().apply(module, name, mask=mask)


# -- functions -----------------------------------------------------------------------------------

def identity(module, name: str):
    """Apply pruning reparametrization without pruning any units (a mask of ones)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount):
    """Prune tensor by removing random (currently unpruned) units: ``amount`` of them."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name: str, amount, importance_scores=None):
    """Prune tensor by removing units with the lowest L1-norm: ``amount`` (currently unpruned)
    units with the lowest absolute values (or ``importance_scores``)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int):
    """Prune tensor by removing random channels along the specified dimension."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name: str, amount, n, dim: int, importance_scores=None):
    """Prune tensor by removing channels with the lowest L\\ ``n``-norm along the specified
    dimension."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name: str, mask: Tensor):
    """Prune tensor corresponding to parameter called ``name`` in ``module`` by applying the
    pre-computed mask in ``mask``."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Globally prunes tensors corresponding to all parameters in ``parameters`` by applying
    the specified ``pruning_method``: the ``amount`` (in ``kwargs``) counts entries across all
    of them, so a tensor whose entries matter less loses more.

    Args:
        parameters (Iterable of (module, name) tuples): parameters of the model to prune in a
            global fashion.
        pruning_method (function): a valid pruning function from this module, or a custom one
            implemented by the user that satisfies the implementation guidelines and has
            ``PRUNING_TYPE='unstructured'``.
        importance_scores (dict): a dictionary mapping (module, name) tuples to the
            corresponding parameter's importance scores tensor.
        kwargs: other keyword arguments such as: amount (int or float).
    """
    from ...autograd.ops.shape import cat
    if not hasattr(parameters, "__iter__") or isinstance(parameters, Tensor):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores, defaults = [], []
    for module, name in parameters:
        scores.append(importance_scores.get((module, name), getattr(module, name)).reshape(-1))
        mask = getattr(module, name + "_mask", None)
        defaults.append(ones_like(getattr(module, name)).reshape(-1) if mask is None
                        else mask.reshape(-1))
    with no_grad():
        flat = cat(scores)
        container = PruningContainer()
        container._tensor_name = "temp"
        method = pruning_method(**kwargs)  # as PyTorch: its arguments are checked first
        method._tensor_name = "temp"
        if method.PRUNING_TYPE != "unstructured":
            raise TypeError('Only "unstructured" PRUNING_TYPE supported for the '
                            f'`pruning_method`. Found method {pruning_method} of type '
                            f'{method.PRUNING_TYPE}')
        container.add_pruning_method(method)
        final = container.compute_mask(flat, cat(defaults))
    start = 0
    for (module, name), s in zip(parameters, scores):
        n = s.numel()
        custom_from_mask(module, name,
                         final[start:start + n].view_as(getattr(module, name)))
        start += n


def remove(module, name: str):
    """Remove the pruning reparameterization from a module and the pruning method from the
    forward hook. The pruned parameter named ``name`` remains permanently pruned, and the
    parameter named ``name+'_orig'`` is removed from the parameter list. Similarly, the buffer
    named ``name+'_mask'`` is removed from the buffers."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     f"can be removed")


def is_pruned(module) -> bool:
    """Check if a module is pruned by looking for pruning pre-hooks: in it or any of its
    submodules."""
    return any(isinstance(h, BasePruningMethod) for m in module.modules()
               for h in m._forward_pre_hooks.values())
