"""``Optimizer``: parameter groups, per-parameter state, zero_grad and (de)serialisation.

Subclasses implement ``_update(p, group)``, which ``step`` calls for every parameter that has
a gradient (or override ``step`` itself); each update runs under no_grad with in-place ops.
Every class's ``step`` runs the step hooks (``register_step_pre_hook``/``post_hook`` on an
optimizer, ``register_optimizer_step_pre_hook``/``post_hook`` for all of them) around it.
Where the backend provides a fused update for the algorithm (``sgd_step``, ``adam_step`` in
the kernel contract) and ``fused`` allows it, a parameter is updated by one kernel call instead
of ~10 elementwise launches; otherwise by Tensor ops that follow PyTorch's single-tensor
implementation operation by operation.
"""

from __future__ import annotations

import copy
import functools
from collections import defaultdict
from collections.abc import Callable
from contextlib import nullcontext
from itertools import chain

import numpy as np

from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.node import RemovableHandle, _HookDict
from ..kernels import multi_tensor
from ..autograd.profiler import record_function
from ..autograd.sparse import SparseTensor
from ..autograd.state import state
from ..autograd.tensor import Tensor
from ..kernels import backend
from ..runtime.graphs import is_current_stream_capturing

__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook",
           "required"]

# Step hooks of every optimizer: global pre-hooks run before an optimizer's own, global
# post-hooks after its own (PyTorch's order).
_global_pre_hooks: _HookDict = _HookDict()
_global_post_hooks: _HookDict = _HookDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs)`` to run before the ``step`` of every
    optimizer (before the optimizer's own pre-hooks). It may return ``(new_args, new_kwargs)``
    to replace the arguments of ``step``; ``args`` starts with the optimizer itself, as in
    PyTorch. Returns a handle whose ``remove()`` unregisters it."""
    handle = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs)`` to run after the ``step`` of every optimizer
    (after the optimizer's own post-hooks). Returns a handle whose ``remove()`` unregisters
    it."""
    handle = RemovableHandle(_global_post_hooks)
    _global_post_hooks[handle.id] = hook
    return handle


def _with_step_hooks(step: Callable) -> Callable:
    """Wraps an optimizer class's ``step`` so that it runs the step hooks around it. A
    subclass's step calling ``super().step()`` runs them once: the inner call sees the
    instance already inside a hooked step."""

    @functools.wraps(step)
    def hooked_step(*args, **kwargs):
        self = args[0]
        if state.observers and not self.__dict__.get("_in_profiled_step"):
            # under a profiler, PyTorch's range around each step (its profile_hook_step); a
            # subclass's super().step() inside it opens none
            self._in_profiled_step = True
            try:
                with record_function(f"Optimizer.step#{type(self).__name__}.step"):
                    return hooked_step(*args, **kwargs)
            finally:
                self._in_profiled_step = False
        if is_current_stream_capturing():
            _capture_check(self)
        own_pre = self.__dict__.get("_optimizer_step_pre_hooks")
        own_post = self.__dict__.get("_optimizer_step_post_hooks")  # (see Optimizer._add_hook)
        if not (own_pre or own_post or _global_pre_hooks or _global_post_hooks) \
                or self.__dict__.get("_in_hooked_step"):
            return step(*args, **kwargs)
        self._in_hooked_step = True
        try:
            for hook in chain(_global_pre_hooks.values(), (own_pre or {}).values()):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"{type(self).__name__}.step: the step pre-hook "
                                           f"{hook} must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {result}.")
                    args, kwargs = result
            out = step(*args, **kwargs)
            for hook in chain((own_post or {}).values(), _global_post_hooks.values()):
                hook(self, args, kwargs)
            return out
        finally:
            self._in_hooked_step = False

    hooked_step._with_step_hooks = True
    return hooked_step


def _capture_check(opt) -> None:
    """Note [capturing step()]: an optimizer with a ``capturable`` option keeps host values that
    a CUDA graph would freeze (the step count, its bias corrections): a replay would repeat the
    captured step's numbers. PyTorch raises when such a step() is captured without
    capturable=True (Note [capturable step counts]), and so does this, with PyTorch's error.
    Optimizers without the option (SGD) capture as they are."""
    if any(not group.get("capturable", True) for group in opt.param_groups):
        raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of "
                           f"{type(opt).__name__} but param_groups' capturable is False.")


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class of the optimizers.

    Args:
        params: an iterable of Tensors or of ``(name, Tensor)`` pairs (``named_parameters()``),
            or of dicts (parameter groups) each holding such a ``"params"`` list and any
            per-group hyperparameter overrides. With names, each group also holds
            ``"param_names"`` (saved by ``state_dict``; every group named or none).
        defaults: the default hyperparameters of every group.

    Attributes:
        param_groups: list of dicts: ``"params"`` and the group's hyperparameters.
        state: per-parameter state (a dict per parameter, keyed by the parameter).
    """

    # the types of the hooks, as PyTorch names them
    OptimizerPreHook = Callable[["Optimizer", tuple, dict], "tuple[tuple, dict] | None"]
    OptimizerPostHook = Callable[["Optimizer", tuple, dict], None]

    @staticmethod
    def profile_hook_step(func: Callable) -> Callable:
        """Wraps an optimizer's ``step`` so that it runs the step hooks around it, inside a
        profiler range ``Optimizer.step#<Class>.step`` when a profiler is on. Every class's
        ``step`` is wrapped so at its creation; wrapping again changes nothing."""
        return func if getattr(func, "_with_step_hooks", False) else _with_step_hooks(func)

    # Per-parameter state entries whose shape load_state_dict does not check (scalars); every
    # other state tensor must have the shape ``_state_shape`` gives (the parameter's, unless a
    # subclass with, say, factored second moments says otherwise).
    _unshaped_state: frozenset = frozenset({"step"})

    # Note [Sparse gradients in dense optimizers]
    # An optimizer whose update needs dense gradients names itself here with PyTorch's
    # message ("RMSprop does not support sparse gradients"; Adam's and AdamW's add "please
    # consider SparseAdam instead"), and ``step`` raises it when a group holds a sparse
    # gradient (nn.Embedding(sparse=True)'s), before updating any parameter of that group, as
    # PyTorch's ``_init_group`` does (after the closure, which may make the gradients). None
    # (the default): the update takes sparse gradients (SGD, Adagrad, SparseAdam; LBFGS
    # densifies them) or the subclass decides. ``_sparse_grad_message`` may depend on the group
    # (SGD's fused=True refuses them).
    _sparse_grad_error: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if callable(step) and not getattr(step, "_with_step_hooks", False):
            cls.step = _with_step_hooks(step)

    def _state_shape(self, key: str, p: Tensor) -> tuple | None:
        """The shape state entry ``key`` of parameter ``p`` has (None: not checked)."""
        return None if key in self._unshaped_state else tuple(p.shape)

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + params.type())
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self) -> str:
        # PyTorch's layout: each group's lines end with a newline and each group starts with
        # one, so a blank line separates the groups
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            s += "".join(f"    {key}: {group[key]}\n" for key in sorted(group) if key != "params")
        return s + ")"

    def _add_hook(self, kind: str, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Registers ``hook`` in this optimizer's ``_optimizer_<kind>_hooks`` (made on first
        use: a deep copy or a pickle of the optimizer drops its hooks, as PyTorch's does)."""
        hooks = self.__dict__.setdefault(f"_optimizer_{kind}_hooks", _HookDict())
        handle = RemovableHandle(hooks)
        if prepend:
            rest = list(hooks.items())
            hooks.clear()
            hooks[handle.id] = hook
            hooks.update(rest)
        else:
            hooks[handle.id] = hook
        return handle

    def _hooks(self, kind: str):
        return self.__dict__.get(f"_optimizer_{kind}_hooks", {}).values()

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)`` to run before each ``step`` of this
        optimizer. It may return ``(new_args, new_kwargs)``, which ``step`` is then called
        with (``args`` starts with the optimizer itself, as in PyTorch).

        Returns:
            a handle whose ``remove()`` unregisters the hook.

        Example:
            >>> import tritongrad as tg
            >>> opt = tg.optim.SGD(tg.nn.Linear(2, 1).parameters(), lr=0.1)
            >>> handle = opt.register_step_pre_hook(lambda o, args, kwargs: None)
            >>> handle.remove()
        """
        return self._add_hook("step_pre", hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)`` to run after each ``step`` of this
        optimizer (e.g. to update an exponential moving average of the weights); its return
        value is ignored. Returns a handle whose ``remove()`` unregisters the hook."""
        return self._add_hook("step_post", hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                     ) -> RemovableHandle:
        """Registers ``hook(optimizer)`` to run when ``state_dict()`` starts (before the other
        such hooks with ``prepend=True``). Returns a handle whose ``remove()`` unregisters
        it."""
        return self._add_hook("state_dict_pre", hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                      ) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict)`` to run on the dict ``state_dict()``
        built; a dict it returns replaces that one (None keeps it, changed in place or not).
        Returns a handle whose ``remove()`` unregisters it."""
        return self._add_hook("state_dict_post", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                          ) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict)`` to run when ``load_state_dict()`` starts,
        on a shallow copy of the caller's dict; a dict it returns is loaded instead. Returns a
        handle whose ``remove()`` unregisters it."""
        return self._add_hook("load_state_dict_pre", hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                           ) -> RemovableHandle:
        """Registers ``hook(optimizer)`` to run once ``load_state_dict()`` has loaded the
        state. Returns a handle whose ``remove()`` unregisters it."""
        return self._add_hook("load_state_dict_post", hook, prepend)

    def add_param_group(self, param_group: dict) -> None:
        """Adds a group of parameters (a dict with ``"params"`` and optional overrides of the
        defaults), e.g. a layer unfrozen during fine-tuning.

        Raises:
            ValueError: as PyTorch's: only some parameters are ``(name, Tensor)`` pairs, or
                the group is named and the others are not (or the other way round); a
                parameter is in another group; a required hyperparameter is missing.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        params, names = _split_names(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params "
                                f"is {type(p).__name__}")
            # (differentiable=True optimizes a tensor computed from others, so that the
            # update stays in their graph, as PyTorch allows)
            if not (p.is_leaf or p.retains_grad or self.defaults.get("differentiable")):
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        if names:
            group["param_names"] = names  # (after the caller's keys, as PyTorch adds it)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        if group.get("fused"):
            for p in params:
                # (the fused kernels take real floating-point arrays, as PyTorch's)
                if not p.is_floating_point():
                    raise RuntimeError(f"`fused=True` requires all the params to be floating "
                                       f"point Tensors of supported devices: ['cpu', 'cuda'] "
                                       f"but {p.dtype} and {p.device.type}")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see github.com/pytorch/pytorch/"
                          "issues/40967 for more information", stacklevel=3)
        for g in self.param_groups:
            if ("param_names" in group) != ("param_names" in g):
                kind = "with names" if "param_names" in group else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of every optimized parameter: to None (the default), or to
        zeros in place."""
        from ..nn.module import _zero_grad
        # (PyTorch's profiler range; it costs nothing outside a profiler)
        with record_function(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"):
            for group in self.param_groups:
                for p in group["params"]:
                    _zero_grad(p, set_to_none)

    @no_grad()
    def step(self, closure=None):
        """Performs one update of every parameter that has a gradient; returns the closure's
        loss if a closure (re-evaluating the model) is given."""
        loss = self._closure(closure)
        # Note [differentiable]: with differentiable=True the update is recorded by autograd,
        # as any other in-place ops on the (then non-leaf) parameters: a gradient computed with
        # create_graph=True, the parameters and the state carry it into what follows the step.
        with self._grad_mode():
            for group in self.param_groups:
                self._refuse_sparse_grads(group)
                params = [p for p in group["params"] if p.grad is not None]
                if (len(params) > 1 and self._multi_tensor_ok(group)
                        and multi_tensor(params[0].device) is not None):  # (not on the CPU)
                    params = self._multi_tensor_update(params, group)
                for p in params:
                    self._update_param(p, group)
        return loss

    step = _with_step_hooks(step)

    def _multi_tensor_ok(self, group: dict) -> bool:
        """Whether ``group``'s parameters may go to ``_multi_tensor_update`` (the backend's
        multi-tensor kernel, a launch for many parameters) where the backend has one: a
        class that has such an update says when (``foreach``, ``fused``, options the kernel
        does not take); none by default."""
        return False

    def _multi_tensor_update(self, params: list, group: dict) -> list:
        """Updates those of ``params`` (each with a gradient) the backend's multi-tensor
        kernel takes; returns the others, for ``_update`` one at a time."""
        return params

    def _grad_mode(self):
        """The grad mode of the updates: enabled for differentiable=True (Note
        [differentiable]), as it is (step's no_grad) otherwise."""
        return enable_grad() if self.defaults.get("differentiable") else nullcontext()

    # Note [Complex parameters]
    # PyTorch's adaptive optimizers (Adam and its relatives, Adagrad, Adadelta, RMSprop, Rprop)
    # update a complex parameter as the real tensor ``view_as_real`` makes of it, its gradient
    # and its state alike: every elementwise rule (squares, maxima, signs) then treats the real
    # and imaginary parts as two independent real parameters. The state stays complex, shaped
    # as the parameter (what state_dict() shows, as PyTorch's). A class whose update is already
    # right on complex numbers (SGD's, linear in the gradient) or that refuses them sets False.
    _complex_as_real: bool = False

    def _update_param(self, p: Tensor, group: dict) -> None:
        """``_update(p, group)``, on real views of a complex ``p`` where the class says so
        (Note [Complex parameters])."""
        if self._complex_as_real and p.is_complex():
            self._update_as_real(p, group)
        else:
            self._update(p, group)

    def _update_as_real(self, p: Tensor, group: dict) -> None:
        from ..autograd.ops.complex_parts import view_as_complex, view_as_real
        if type(p.grad) is SparseTensor:
            raise RuntimeError(f"{type(self).__name__}: sparse gradients of complex parameters "
                               f"are not supported")
        if group.get("differentiable"):
            raise NotImplementedError(f"{type(self).__name__}: differentiable=True with complex "
                                      f"parameters is not supported")
        real = view_as_real(p.detach())  # (shares p's memory: the update writes p)
        real.grad = view_as_real(p.grad.detach())
        views = {k: view_as_real(v) if isinstance(v, Tensor) and v.is_complex() else v
                 for k, v in self.state.get(p, {}).items()}
        if views:
            self.state[real] = views
        try:
            self._update(real, group)
        finally:
            new = self.state.pop(real, None)
        if new is None:
            return
        # state tensors shaped as the real view (made or replaced by the update) go back to
        # complex; scalars (step, NAdam's mu_product) stay as they are
        self.state[p] = {k: view_as_complex(v) if isinstance(v, Tensor)
                         and tuple(v.shape) == tuple(real.shape) and v.is_floating_point()
                         else v for k, v in new.items()}

    def _sparse_grad_message(self, group: dict) -> str | None:
        """The error for a sparse gradient in ``group``, or None where the update takes them
        (Note [Sparse gradients in dense optimizers])."""
        return self._sparse_grad_error

    def _refuse_sparse_grads(self, group: dict) -> None:
        """Raises ``_sparse_grad_message``'s RuntimeError if a parameter of ``group`` has a
        sparse gradient (Note [Sparse gradients in dense optimizers])."""
        message = self._sparse_grad_message(group)
        if message is not None:
            for p in group["params"]:
                if type(p.grad) is SparseTensor:
                    raise RuntimeError(message)

    def _update(self, p: Tensor, group: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement step() or _update()")

    def _closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- serialisation -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: per-parameter state}, "param_groups": [group dicts with
        "params" as indices]}``: parameters are numbered in group order, so the dict can be
        loaded into an optimizer built the same way over other (e.g. reloaded) parameters.
        State tensors are returned by reference. The ``register_state_dict_pre_hook`` hooks run
        first, the ``register_state_dict_post_hook`` ones on the result."""
        for hook in self._hooks("state_dict_pre"):
            hook(self)
        mapping: dict = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                mapping.setdefault(id(p), len(mapping))
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {mapping[id(p)] if isinstance(p, Tensor) else p: v
                 for p, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for hook in self._hooks("state_dict_post"):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Loads a ``state_dict()`` into this optimizer, replacing its state.

        Group hyperparameters come from ``state_dict``; the parameters stay this optimizer's,
        matched by their number in group order (never by ``param_names``: saved names replace
        this optimizer's, and a group saved without names keeps its own, as PyTorch's).
        Per-parameter state tensors are moved to the parameter's device and floating point
        ones cast to its dtype; as PyTorch's, a tensor already there is used as it is, not
        copied (``step`` always: it stays as saved, a CPU scalar), so loading a checkpoint
        holds no second copy of the state, and a state dict taken from a live optimizer shares
        those tensors with it; other values are deep-copied. Nothing changes unless every
        check passes. The
        ``register_load_state_dict_pre_hook`` hooks run first (on a shallow copy of
        ``state_dict``), the ``register_load_state_dict_post_hook`` ones after loading.

        Args:
            state_dict: what ``state_dict()`` returned (possibly through ``tg.save``/
                ``tg.load``), from an optimizer built over parameters of the same shapes.

        Raises:
            ValueError: ``state_dict`` is malformed; it has another number of parameter
                groups, or a group has another number of parameters; or a per-parameter
                state tensor (``exp_avg``, ``momentum_buffer``, ...) does not have its
                parameter's shape (the state of a model of other shapes).
        """
        if isinstance(state_dict, dict):
            state_dict = state_dict.copy()  # the pre-hooks may edit it; the caller's stays
            for hook in self._hooks("load_state_dict_pre"):
                result = hook(self, state_dict)
                if result is not None:
                    state_dict = result
        if not isinstance(state_dict, dict) or "state" not in state_dict \
                or "param_groups" not in state_dict:
            raise ValueError("optimizer state_dict must be a dict with 'state' and "
                             "'param_groups'")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, sg in zip(self.param_groups, saved_groups):
            if len(g["params"]) != len(sg["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        index_to_param = {}
        for g, sg in zip(self.param_groups, saved_groups):
            for i, p in zip(sg["params"], g["params"]):
                index_to_param[i] = p
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            p = index_to_param.get(key)
            if p is None:
                state[key] = copy.deepcopy(value)
                continue
            # Checked here, not left to step(): a state of other shapes would otherwise load
            # and then fail (or broadcast silently) inside the update's arithmetic.
            for k, v in value.items():
                want = self._state_shape(k, p) if isinstance(v, Tensor) else None
                if want is not None and tuple(v.shape) != want:
                    expected = "" if want == tuple(p.shape) else f" (so {k!r} has {want})"
                    raise ValueError(f"loaded state dict has state {k!r} of shape "
                                     f"{tuple(v.shape)} for parameter {key}, but that "
                                     f"parameter has shape {tuple(p.shape)}{expected}")
            state[p] = {k: _cast_state(p, k, v) for k, v in value.items()}
        new_groups = []
        for g, sg in zip(self.param_groups, saved_groups):
            # (a copy, so that the caller's dict and this optimizer share no group values; the
            # keys keep the saved order, "params" included)
            ng = {k: copy.deepcopy(v) for k, v in sg.items()}
            ng["params"] = g["params"]
            # the saved names replace this optimizer's; without saved names, its own stay.
            # PyTorch's rule: the names are kept for the user's own matching (say in a
            # load_state_dict pre-hook), never used to match the parameters
            if "param_names" in g and "param_names" not in ng:
                ng["param_names"] = g["param_names"]
            new_groups.append(ng)
        self.state = state
        self.param_groups = new_groups
        for hook in self._hooks("load_state_dict_post"):
            hook(self)


def _split_names(params: list) -> tuple[list, list]:
    """``params`` (Tensors, or ``(name, Tensor)`` pairs as ``named_parameters()`` yields) as
    ``(tensors, names)``; names is empty when no pair was given. Raises PyTorch's ValueError
    when only some have names."""
    names = [p[0] for p in params if isinstance(p, tuple)]
    if not names:
        return params, []
    if len(names) != len(params):
        raise ValueError("all optimizer params should be with/without names. Some param names "
                         "are missing")
    return [p[1] for p in params], names


def _cast_state(p: Tensor, key, value):
    """A saved state value as ``load_state_dict`` loads it for parameter ``p`` (PyTorch's
    policy: tensors converted only where they differ, ``step`` as saved)."""
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    if key == "step":
        return value
    with no_grad():
        if value.is_floating_point() and p.is_floating_point():
            return value.to(device=p.device, dtype=p.dtype)
        return value.to(device=p.device)


# -- helpers shared by the algorithms ----------------------------------------------------------

def fused_kernel(fused, name: str, *tensors):
    """The backend's fused update ``name`` if it should be used for these tensors, else None:
    ``fused=None`` uses it where the backend has it and every tensor is contiguous;
    ``fused=True`` requires it; ``fused=False`` never uses it."""
    if fused is False:
        return None
    k = backend(tensors[0].device)
    fn = getattr(k, name, None)
    ok = fn is not None and all(t is None or _contiguous(t) for t in tensors)
    if fused and not ok:
        raise RuntimeError(f"fused=True: the {tensors[0].device.type} backend has no usable "
                           f"{name} for these parameters (it needs contiguous tensors)")
    return fn if ok else None


def _contiguous(t: Tensor) -> bool:
    # (a NumPy array answers from its flags; the optimizer asks for every tensor of every
    # parameter on every step)
    a = t._data
    return a.flags.c_contiguous if type(a) is np.ndarray else t.is_contiguous()


def advance_step(step: Tensor) -> float:
    """Adds one to a parameter's ``step`` counter (``new_step``'s float32 CPU scalar) in place,
    as ``step += 1`` does, and returns the new count: on its array, which a Tensor op would
    wrap in ~5 us of dispatch, once per parameter per step."""
    data = step._data
    if type(data) is not np.ndarray:  # (a counter loaded onto another device)
        step += 1
        return float(step.item())
    # (stored, not ``data += 1``: a NumPy ufunc call on a 0-d array costs a microsecond. The
    # sum of a float32 count and 1 is exact in a double, so storing it rounds once, as the
    # float32 addition does)
    data[()] = float(data) + 1.0
    step._vc[0] += 1
    return float(data)


def advance_device_step(owner: str, p: Tensor, state: dict) -> Tensor:
    """Note [capturable step counts]: with ``capturable=True`` a parameter's ``step`` count is
    a float32 tensor on the parameter's device, advanced there, so that a step() queues device
    work only and each replay of a CUDA graph of it counts one more step; anything computed
    from the count (bias corrections) must then be tensor ops on it. As PyTorch, parameters
    must be on a device that can capture (not the CPU). Returns the advanced count."""
    if p.device.type == "cpu":
        raise RuntimeError(f"{owner}: If capturable=True, params and state_steps must be on "
                           f"supported devices: ['cuda'].")
    step = state["step"]
    if step.device != p.device:  # (a state loaded onto the CPU)
        step = state["step"] = step.to(p.device)
    step.add_(1)
    return step


def host_scalar(value):
    """A hyperparameter as a fused kernel takes it: a Python number (``lr`` may be a
    one-element Tensor, as PyTorch allows)."""
    return float(value.item()) if isinstance(value, Tensor) else value


def bump_versions(*tensors) -> None:
    """Records an in-place change made by a fused kernel (as an ``op_`` would)."""
    for t in tensors:
        if t is not None:
            t._vc[0] += 1


def zeros_like(p: Tensor) -> Tensor:
    from ..autograd.ops.creation import zeros
    return zeros(tuple(p.shape), dtype=p.dtype, device=p.device)


def new_step(device=None) -> Tensor:
    """The ``step`` counter of a parameter's state: a float32 scalar, as PyTorch's; on the CPU
    unless a ``device`` is given (a capturable optimizer's)."""
    from ..autograd.ops.creation import tensor
    from ..runtime import dtype as dtypes
    return tensor(0.0, dtype=dtypes.float32, device=device)


def check_lr(lr) -> None:
    """Raises PyTorch's ValueError for a Tensor ``lr`` of other than one element (before the
    range check, which could not compare it)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


def check_hyperparameters(owner: str, **values) -> None:
    """Raises PyTorch's ``ValueError("Invalid <name> value: <v>")`` for the first negative
    value (``lr`` is worded "Invalid learning rate", ``eps`` "Invalid epsilon value")."""
    if "lr" in values:
        check_lr(values["lr"])
    words = {"lr": "learning rate", "eps": "epsilon value"}
    for name, v in values.items():
        if not 0.0 <= v:
            raise ValueError(f"{owner}: Invalid {words.get(name, name + ' value')}: {v}")


def check_fused_options(fused, foreach, differentiable: bool) -> None:
    """PyTorch's checks of ``fused=True`` against the options it excludes, made first, before
    tritongrad's own refusal of ``differentiable``."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
