"""``Module``: the base class of layers and models, with PyTorch's registration rules.

A module keeps three ordered registries: ``_parameters`` (name -> Parameter or None),
``_buffers`` (name -> Tensor or None; non-persistent ones are left out of ``state_dict``) and
``_modules`` (name -> child Module or None). Assigning a Parameter, a Module, or a Tensor to a
registered buffer name as an attribute files it in the right registry (``__setattr__``);
reading falls back to them (``__getattr__``), so ``self.weight`` works as in PyTorch.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import TypeVar

from ..autograd.grad_mode import no_grad
from ..autograd.node import RemovableHandle
from ..autograd.tensor import Tensor
from . import _global_hooks
from .parameter import Buffer, Parameter, is_lazy

__all__ = ["Module"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"  # the key of get_extra_state()'s value, as PyTorch's
_LEGACY_BACKWARD_HOOK = ("Using a non-full backward hook when the forward contains multiple "
                         "autograd Nodes is deprecated and will be removed in future versions. "
                         "This hook will be missing some grad_input. Please use "
                         "register_full_backward_hook to get the documented behavior.")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and those it did not use."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class for all neural network modules; subclasses define ``forward``.

    Submodules, parameters and buffers assigned as attributes are registered, so that
    ``parameters()``, ``state_dict()``, ``to()``, ``train()``/``eval()`` and ``zero_grad()`` see
    the whole tree.

    Example:
        >>> class Net(tg.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = tg.nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
        >>> net = Net()
        >>> [name for name, _ in net.named_parameters()]
        ['fc.weight', 'fc.bias']
        >>> net(tg.randn(3, 4)).shape
        tritongrad.Size([3, 2])
    """

    training: bool
    T_destination = TypeVar("T_destination", bound=dict)  # PyTorch's state_dict annotation
    _version = 1  # the state_dict metadata version, as PyTorch's
    # PyTorch's class flags: dump_patches (a legacy serialization switch, unused here) and
    # call_super_init (Module.__init__ passes its arguments on to the next class in the MRO)
    dump_patches: bool = False
    call_super_init: bool = False

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument "
                            f"but {len(args) + 1} were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = set()
        d["_forward_hooks_always_called"] = set()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_post_hooks_in_place"] = set()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        if self.call_super_init:
            # cooperative multiple inheritance: the rest of the MRO gets the arguments
            super().__init__(*args, **kwargs)

    def __getstate__(self) -> dict:
        # as PyTorch's: what ``compile()`` made is left out (a copy or an unpickled module runs
        # eagerly; pickling it would fail on the compiled callable)
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state: dict) -> None:
        # modules pickled before the hook registries existed get empty ones, as PyTorch does
        self.__dict__.update(state)
        for name, factory in (("_forward_hooks_with_kwargs", set),
                              ("_forward_hooks_always_called", set),
                              ("_forward_pre_hooks_with_kwargs", set),
                              ("_backward_hooks", OrderedDict),
                              ("_backward_pre_hooks", OrderedDict),
                              ("_state_dict_pre_hooks", OrderedDict),
                              ("_state_dict_hooks", OrderedDict),
                              ("_state_dict_post_hooks_in_place", set),
                              ("_load_state_dict_pre_hooks", OrderedDict),
                              ("_load_state_dict_post_hooks", OrderedDict)):
            self.__dict__.setdefault(name, factory())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_hooks.ANY):
            return self.forward(*args, **kwargs)  # (most calls: no hook to run)
        return self._call_with_hooks(args, kwargs)

    # PyTorch's names for the call (its ``__call__`` is ``_wrapped_call_impl``, which runs
    # ``_call_impl``): code that calls them directly, or a subclass's ``__call__`` that
    # delegates to ``_call_impl``, gets this one
    _call_impl = __call__
    _wrapped_call_impl = __call__
    _compiled_call_impl = None  # what ``compile()`` made (class default, as PyTorch's)

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        """``forward`` with the hooks around it, in PyTorch's order: global hooks
        (nn/_global_hooks.py) before the module's own of each kind."""
        g = _global_hooks
        pre_kwargs = self._forward_pre_hooks_with_kwargs
        fwd_kwargs = self._forward_hooks_with_kwargs
        fwd_hooks = (*g.FORWARD.items(), *self._forward_hooks.items())
        called = set()  # the forward hooks run, so always_call ones run once on an exception
        result = None
        try:
            for hid, hook in (*g.FORWARD_PRE.items(), *self._forward_pre_hooks.items()):
                if hid in pre_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if not (isinstance(res, tuple) and len(res) == 2):
                            raise RuntimeError(f"forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {res}.")
                        args, kwargs = res
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_hooks = [*g.BACKWARD.values(), *self._backward_hooks.values()]
            bw_pre_hooks = [*g.BACKWARD_PRE.values(), *self._backward_pre_hooks.values()]
            bw_hook = None
            if bw_hooks or bw_pre_hooks:
                from ._hooks import BackwardHook
                if self.__dict__.get("_is_full_backward_hook") is False:
                    warnings.warn(_LEGACY_BACKWARD_HOOK, FutureWarning, stacklevel=3)
                bw_hook = BackwardHook(self, bw_hooks, bw_pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hid, hook in fwd_hooks:
                called.add(hid)
                if hid in fwd_kwargs or hid in g.FORWARD_WITH_KWARGS:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple, list)):  # (lists: see _hooks.py)
                    warnings.warn(f"For backward hooks to be called, module output should be a "
                                  f"Tensor or a tuple of Tensors but received {type(result)}",
                                  stacklevel=3)
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            always = self._forward_hooks_always_called
            for hid, hook in fwd_hooks:
                if (hid in always or hid in g.FORWARD_ALWAYS_CALLED) and hid not in called:
                    try:
                        if hid in fwd_kwargs or hid in g.FORWARD_WITH_KWARGS:
                            hook(self, args, kwargs, result)
                        else:
                            hook(self, args, result)
                    except Exception as e:  # noqa: BLE001  (the forward's error wins)
                        kind = "global module" if hid in g.FORWARD_ALWAYS_CALLED else "module"
                        warnings.warn(f"{kind} forward hook with ``always_call=True`` raised an "
                                      f"exception that was silenced as another error was "
                                      f"raised in forward: {e}", stacklevel=2)
            raise

    @staticmethod
    def _add_hook(hooks: OrderedDict, hook, prepend: bool, *extra) -> RemovableHandle:
        h = RemovableHandle(hooks, *extra)
        hooks[h.id] = hook
        if prepend:
            hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Registers a forward pre-hook, run before ``forward``: ``hook(module, args) -> None
        or modified input`` (a single value is wrapped into a tuple), or with ``with_kwargs``
        ``hook(module, args, kwargs) -> None or a tuple (new_args, new_kwargs)``. ``prepend``
        runs it before the hooks already registered. Returns a handle whose ``remove()``
        unregisters it."""
        h = self._add_hook(self._forward_pre_hooks, hook, prepend,
                           self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(h.id)
        return h

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Registers a forward hook, run after ``forward``: ``hook(module, args, output) ->
        None or modified output``, or with ``with_kwargs`` ``hook(module, args, kwargs,
        output)``. ``prepend`` runs it before the hooks already registered; ``always_call``
        runs it even when ``forward`` (or an earlier hook) raises. Returns a handle whose
        ``remove()`` unregisters it.

        Example:
            >>> m = tg.nn.Linear(2, 2)
            >>> h = m.register_forward_hook(lambda mod, args, out: out * 0)
            >>> m(tg.ones(1, 2)).abs().sum().item()
            0.0
            >>> h.remove()
        """
        h = self._add_hook(self._forward_hooks, hook, prepend, self._forward_hooks_with_kwargs,
                           self._forward_hooks_always_called)
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(h.id)
        if always_call:
            self._forward_hooks_always_called.add(h.id)
        return h

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Registers a backward hook, called when the gradients with respect to the module's
        inputs have been computed: ``hook(module, grad_input, grad_output) -> tuple or None``.

        ``grad_input`` has one entry per positional argument (keyword arguments are ignored)
        and ``grad_output`` one per output (a tensor, or the items of a tuple/list), None where
        there is no gradient (a non-tensor argument, an input that does not require grad, an
        output not used). Returning a tuple replaces ``grad_input``. The hook is a post-hook
        of an identity ``Function`` (``BackwardHookFunction``) wrapped around the call's inputs,
        another around its outputs (nn/_hooks.py), so it sees exactly what flows through the
        module, once per forward call: a double backward that reaches the inputs again without
        passing through the outputs does not call it. When no input requires grad, it is
        called (with a warning) as soon as the outputs' gradients are known.

        Example:
            >>> m = tg.nn.Linear(2, 1)
            >>> seen = []
            >>> h = m.register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].shape))
            >>> m(tg.ones(3, 2, requires_grad=True)).sum().backward()
            >>> seen
            [tritongrad.Size([3, 1])]
        """
        self._set_backward_hook_kind(True)
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """The legacy, deprecated backward hook: ``hook(module, grad_input, grad_output)``.

        tritongrad runs it as a full backward hook (``register_full_backward_hook``), so it
        gets the documented ``grad_input`` (one entry per positional argument) rather than
        the gradients of the forward's last autograd node that PyTorch's legacy hook sees;
        each call of the module warns (FutureWarning) as PyTorch does when those differ.
        As in PyTorch, a module cannot have both kinds (RuntimeError)."""
        self._set_backward_hook_kind(False)
        return self._add_hook(self._backward_hooks, hook, False)

    def _set_backward_hook_kind(self, full: bool) -> None:
        kind = self.__dict__.get("_is_full_backward_hook")
        if kind is not None and kind != full and self._backward_hooks:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = full

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Registers a backward pre-hook, called when the gradients with respect to the
        module's outputs are computed, before any input gradient: ``hook(module, grad_output)
        -> tuple or None``; a returned tuple replaces ``grad_output``."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    # -- registration ------------------------------------------------------------------------
    def _check_name(self, name, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:  # (PyTorch's add_module names the module; the others do not)
            raise KeyError(f'{kind} name can\'t contain "."' +
                           (f", got: {name}" if kind == "module" else ""))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Adds parameter ``param`` (or None: a declared, absent parameter) under ``name``."""
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter "
                            f"'{name}' (tritongrad.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly.")
        if _global_hooks.PARAMETER_REGISTRATION:
            param = _global_hooks.registered(_global_hooks.PARAMETER_REGISTRATION, self, name,
                                             param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Adds a buffer (state that is not a parameter, e.g. running statistics) under
        ``name``; non-persistent buffers are left out of ``state_dict``."""
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer "
                            f"'{name}' (tritongrad Tensor or None required)")
        if _global_hooks.BUFFER_REGISTRATION:
            tensor = _global_hooks.registered(_global_hooks.BUFFER_REGISTRATION, self, name,
                                              tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds child ``module`` under ``name`` (also reachable as an attribute)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if _global_hooks.MODULE_REGISTRATION:
            module = _global_hooks.registered(_global_hooks.MODULE_REGISTRATION, self, name,
                                              module)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` ("" is this module)."""
        mod = self
        for item in target.split(".") if target else ():
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Sets the submodule at the dotted path ``target`` (``"net.0"``) to ``module``.

        The parent path must exist (``get_submodule``'s errors otherwise); an existing
        attribute of that name must be a module (AttributeError). With ``strict``, the
        name must already exist on the parent (AttributeError), else it is added.

        Example:
            >>> m = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.ReLU())
            >>> m.set_submodule("1", tg.nn.Tanh()); type(m[1]).__name__
            'Tanh'
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target`` (``"bn.running_mean"``); AttributeError
        when the path or the name does not exist, or names something that is not a buffer.

        Example:
            >>> tg.nn.BatchNorm1d(3).get_buffer("running_var").tolist()
            [1.0, 1.0, 1.0]
        """
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        buffer = getattr(mod, name)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return buffer

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name, "_parameters")
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                f"(tritongrad.nn.Parameter or None expected)")
            params[name] = None
            return
        modules = d.get("_modules")
        is_module = isinstance(value, Module)
        if is_module or (modules is not None and name in modules):
            if not is_module and value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module "
                                f"'{name}' (tritongrad.nn.Module or None expected)")
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name, "_modules")
            if _global_hooks.MODULE_REGISTRATION:  # (None too, as PyTorch's)
                value = _global_hooks.registered(_global_hooks.MODULE_REGISTRATION, self, name,
                                                 value)
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer):  # nn.Buffer: registered, persistent as it says
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            d["_non_persistent_buffers_set"].discard(name)
            self.register_buffer(name, value, value.persistent)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                f"(tritongrad.nn.Buffer, tritongrad.Tensor or None expected)")
            if _global_hooks.BUFFER_REGISTRATION:
                value = _global_hooks.registered(_global_hooks.BUFFER_REGISTRATION, self, name,
                                                 value)
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _drop(self, name: str, keep: str) -> None:
        """Forgets ``name`` in the instance dict and every registry but ``keep`` (where it is
        about to be filed: re-assigning keeps its place in the order, as in PyTorch)."""
        d = self.__dict__
        d.pop(name, None)
        for reg in ("_parameters", "_buffers", "_modules"):
            if reg != keep:
                d[reg].pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for reg in ("_parameters", "_buffers", "_modules"):
            r = d.get(reg)
            if r is not None and name in r:
                return r[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for reg in ("_parameters", "_buffers", "_modules"):
            r = self.__dict__[reg]
            if name in r:
                del r[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(
            self._modules)
        # as PyTorch's: names that are not Python identifiers ("0" in a Sequential) left out
        return sorted(k for k in keys if not k[0].isdigit())

    # -- traversal ---------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True):
        """Yields (dotted name, module) for this module and every descendant, each once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                       remove_duplicate)

    def modules(self):
        """This module and every descendant, each once."""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """Yields (name, module) for the direct children, each once."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, registry, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):
        """(dotted name, member) of every module's ``registry`` ("_parameters", "_buffers"),
        or of the (name, member) pairs the callable ``registry(module)`` gives (PyTorch's
        ``get_members_fn`` form, which other libraries call)."""
        members = registry if callable(registry) else (lambda m: getattr(m, registry).items())
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, v in members(mod):
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + name, v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """Yields (dotted name, Parameter); a parameter shared by several modules (weight
        tying) appears once, under its first name."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        """The module's parameters (and its descendants' when ``recurse``), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- modes and gradients -----------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Sets training mode (``self.training``) on this module and its descendants."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")  # noqa: TRY004
        # as PyTorch's: an attribute assignment and each child's own ``train`` (a subclass
        # that overrides it, e.g. to keep its batch norms frozen, is obeyed)
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """Sets evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all parameters: to None (default), or to zeros in place."""
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    # -- moving and casting ------------------------------------------------------------------
    def _apply(self, fn, recurse: bool = True) -> Module:
        """Replaces every parameter's and buffer's values by ``fn(tensor)``, keeping the
        Parameter objects (optimizers holding them stay valid) and moving their gradients
        along. ``torch.__future__``'s switches change that, as in PyTorch: with
        ``set_overwrite_module_params_on_conversion(True)`` each parameter (and gradient) is
        replaced by a new object, with ``set_swap_module_params_on_conversion(True)`` the new
        values are swapped into the old objects (``utils.swap_tensors``)."""
        if recurse:
            for m in self.children():
                m._apply(fn)
        overwrite, swap = _CONVERSION["overwrite"], _CONVERSION["swap"]
        with no_grad():
            for name, p in self._parameters.items():
                if p is None:
                    continue
                new = fn(p)
                g = p._grad
                if swap:
                    if g is not None:
                        p.grad = None  # (PyTorch drops it first: a swapped grad is re-set)
                    try:
                        _swap(p, Parameter(new, p.requires_grad))
                    except Exception as e:
                        if g is not None:
                            p.grad = g
                        raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}."
                                           f"{name}") from e
                    out = p
                elif overwrite:
                    out = self._parameters[name] = Parameter(new, p.requires_grad)
                else:
                    if new is not p:
                        p.data = new
                    out = p
                if g is None:
                    continue
                new_g = fn(g)
                if swap:
                    new_g.requires_grad_(g.requires_grad)
                    try:
                        _swap(g, new_g)
                    except Exception as e:
                        raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}."
                                           f"{name}.grad") from e
                    out.grad = g
                elif overwrite:
                    out.grad = new_g.requires_grad_(g.requires_grad)
                elif new_g is not g:
                    g.data = new_g
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Moves the parameters and buffers to ``device`` without copying their values (new,
        uninitialized storage), e.g. to allocate a model built elsewhere before loading a state
        dict into it; ``recurse=False`` leaves the submodules where they are."""
        from ..autograd.ops.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def apply(self, fn) -> Module:
        """Calls ``fn(module)`` on every descendant, then on this module (e.g. to initialise
        weights); returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Moves and/or casts the parameters and buffers in place: ``to(device)``,
        ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``, with keywords ``device=``,
        ``dtype=``, ``non_blocking=`` (a hint: copies are synchronous), ``memory_format=``
        (applied, as in PyTorch, to the 4-D and 5-D tensors only: ``channels_last`` lays out
        convolution weights NHWC). Only floating point tensors change dtype."""
        from ..autograd.ops.conversion import _to_args
        if "copy" in kwargs or sum(isinstance(a, bool) for a in args) > 1:
            raise RuntimeError(".to() does not accept copy argument")
        dtype, device, _, _, memory_format = _to_args(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")
        if dtype is not None and dtype.is_complex:
            warnings.warn("Complex modules are a new feature under active development whose "
                          "design may change, and some modules might not work as expected "
                          "when using complex tensors as parameters or buffers. Please file an "
                          "issue at https://github.com/pytorch/pytorch/issues/new?"
                          "template=bug-report.yml if a complex module does not work as "
                          "expected.", stacklevel=2)

        def convert(t):
            fmt = memory_format if memory_format is not None and t.dim() in (4, 5) else None
            if t.is_meta and device is not None and device.type != "meta":
                raise NotImplementedError(  # (PyTorch's words, its hint included)
                    "Cannot copy out of meta tensor; no data! Please use "
                    "torch.nn.Module.to_empty() instead of torch.nn.Module.to() when moving "
                    "module from meta to a different device.")
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                return t.to(device=device, dtype=dtype, memory_format=fmt)
            if device is None and fmt is None:
                return t
            return t.to(device=device, memory_format=fmt)
        return self._apply(convert)

    def cuda(self, device=None) -> Module:
        """Moves every parameter and buffer to a CUDA device."""
        return self._apply(lambda t: t.cuda(device))

    def _no_backend(self, kind: str, exc: type) -> Module:
        # PyTorch's CPU/CUDA builds raise the same way for these device kinds
        if any(True for _ in self.parameters()) or any(True for _ in self.buffers()):
            raise exc(f"tritongrad has no {kind} backend (devices: cpu, cuda)")
        return self

    def xpu(self, device=None) -> Module:
        """Moves every parameter and buffer to an XPU device: tritongrad has no XPU backend,
        so a module holding tensors raises AssertionError (as a torch build without XPU)."""
        return self._no_backend("XPU", AssertionError)

    def ipu(self, device=None) -> Module:
        """Moves every parameter and buffer to an IPU device: tritongrad has none
        (RuntimeError, as a torch build without IPU support)."""
        return self._no_backend("IPU", RuntimeError)

    def mtia(self, device=None) -> Module:
        """Moves every parameter and buffer to an MTIA device: tritongrad has none
        (AssertionError, as a torch build without MTIA)."""
        return self._no_backend("MTIA", AssertionError)

    def cpu(self) -> Module:
        """Moves every parameter and buffer to the CPU."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type) -> Module:
        """Casts every parameter and buffer (integer ones too, as PyTorch's) to
        ``dst_type``, a dtype or a type string such as ``"torch.DoubleTensor"``; returns
        self."""
        return self._apply(lambda t: t.type(dst_type))

    def share_memory(self) -> Module:
        """Moves every parameter, gradient and buffer to shared memory
        (``Tensor.share_memory_``, in place: the Parameter objects stay), so that processes
        of ``tritongrad.multiprocessing`` given the module update the same memory; returns
        self."""
        return self._apply(lambda t: t.share_memory_())

    def compile(self, *args, **kwargs) -> None:
        """Compiles this module in place, as PyTorch's ``Module.compile``: the arguments are
        those of ``tritongrad.compile`` (and checked by it: a bad ``mode`` raises, a backend
        other than "eager" warns once). tritongrad compiles by running eagerly, so calls keep
        going through ``__call__`` unchanged; the compiled callable is kept as
        ``_compiled_call_impl``, as in PyTorch."""
        from ..compiler import compile as _compile
        self._compiled_call_impl = _compile(self.__call__, *args, **kwargs)

    def _cast(self, dtype) -> Module:
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> Module:
        from ..runtime import dtype as dtypes
        return self._cast(dtypes.float32)

    def double(self) -> Module:
        from ..runtime import dtype as dtypes
        return self._cast(dtypes.float64)

    def half(self) -> Module:
        from ..runtime import dtype as dtypes
        return self._cast(dtypes.float16)

    def bfloat16(self) -> Module:
        from ..runtime import dtype as dtypes
        return self._cast(dtypes.bfloat16)

    # -- state dict --------------------------------------------------------------------------
    # PyTorch's protocol, kept method for method because user code overrides its pieces:
    # ``_save_to_state_dict`` and ``_load_from_state_dict`` are each module's own part (a
    # module that renames or converts entries overrides them and reads its ``version`` from
    # the metadata), ``state_dict``/``load_state_dict`` walk the tree and run the hooks.
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Saves this module's own parameters, persistent buffers and extra state (not its
        children's) into ``destination`` under ``prefix``."""
        # (an uninitialized parameter of a lazy module has no data to detach: it is saved as
        # it is, and loading it back into a lazy module keeps that module lazy)
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict of every parameter and persistent buffer by dotted name (detached
        tensors sharing storage with the module's, unless ``keep_vars``), plus the extra state
        of modules that define ``get_extra_state``. Its ``_metadata`` attribute maps each
        module's prefix to ``{"version": module._version}``, which ``_load_from_state_dict``
        receives as ``local_metadata``.

        Example:
            >>> tg.nn.Linear(2, 1).state_dict().keys()
            odict_keys(['weight', 'bias'])
        """
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars)
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning,
                          stacklevel=2)
            destination, prefix, keep_vars = (list(args) + [None, "", False][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in tuple(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hid, hook in tuple(self._state_dict_hooks.items()):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                if hid in self._state_dict_post_hooks_in_place:
                    raise RuntimeError("state_dict post-hook must return None")
                destination = result  # the private hook's contract: it may replace the dict
        return destination

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        """Copies this module's own parameters, persistent buffers and extra state (not its
        children's) from ``state_dict``, after running the load pre-hooks. Problems are
        appended to ``missing_keys``, ``unexpected_keys`` (only when ``strict``) and
        ``error_msgs``; nothing is raised here. ``local_metadata`` is what ``state_dict``
        recorded for this module (``{"version": ...}``; empty for a plain dict)."""
        for hook in tuple(self._load_state_dict_pre_hooks.values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        local_state = {n: p for n, p in self._parameters.items() if p is not None}
        local_state.update((n, b) for n, b in self._buffers.items()
                           if b is not None and n not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, cur in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            src = state_dict[key]
            if not isinstance(src, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f'tritongrad.Tensor or Tensor-like object from checkpoint '
                                  f'but received {type(src)}')
                continue
            lazy = is_lazy(cur)
            if lazy and is_lazy(src):
                continue  # uninitialized into uninitialized: nothing to copy, stays lazy
            if not lazy and cur.ndim == 0 and src.ndim == 1:
                src = src[0]  # a scalar saved as a 1-element tensor (PyTorch 0.3's format)
            if not lazy and tuple(src.shape) != tuple(cur.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{src.shape} from checkpoint, the shape in current model "
                                  f"is {cur.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(cur, Parameter):
                            src = (src.requires_grad_(cur.requires_grad)
                                   if isinstance(src, Parameter)
                                   else Parameter(src, cur.requires_grad))
                        setattr(self, name, src)
                    else:
                        if not lazy and cur.is_meta and not src.is_meta:
                            warnings.warn(f"for {key}: copying from a non-meta parameter in "
                                          f"the checkpoint to a meta parameter in the current "
                                          f"model, which is a no-op. (Did you mean to pass "
                                          f"`assign=True` to assign items in the state "
                                          f"dictionary to their corresponding key in the module "
                                          f"instead of copying them in place?)", stacklevel=2)
                        cur.copy_(src)
            except Exception as e:  # noqa: BLE001  (reported with the key, as PyTorch)
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f'dimensions in the model are {cur.shape} and whose '
                                  f'dimensions in the checkpoint are {src.shape}, an '
                                  f'exception occurred : {e.args}.')
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head, *rest = key[len(prefix):].split(".", 1)
                    if (head not in self._modules) if rest else (head not in local_state):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copies parameters and buffers from ``state_dict`` into this module and its
        descendants (in place, under no_grad; values are cast and moved to each tensor's
        dtype and device).

        Args:
            state_dict: a mapping of dotted names to tensors (e.g. from ``state_dict()`` or
                ``tg.load``).
            strict: raise if keys are missing or unexpected (default True). Shape mismatches
                raise either way.
            assign: replace the module's tensors by (Parameters wrapping) those of
                ``state_dict`` instead of copying into them.

        Returns:
            A named tuple ``(missing_keys, unexpected_keys)``.

        Raises:
            RuntimeError: listing every missing key, unexpected key and size mismatch, e.g.
                ``size mismatch for fc.weight: copying a param with shape
                tritongrad.Size([10, 5]) from checkpoint, the shape in current model is
                tritongrad.Size([10, 4]).``
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # pre-hooks may edit it; the caller's stays
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module: Module, local: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            # strict is always True here, as in PyTorch: the keys are collected either way
            # and ``strict`` only decides below whether they are an error
            module._load_from_state_dict(local, prefix, local_metadata, True, missing,
                                         unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local.items() if k.startswith(child_prefix)},
                         child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in tuple(module._load_state_dict_post_hooks.values()):
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with "  # (PyTorch's type)
                                         "``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if "
                                         "incompatible_keys need to be modified, it should "
                                         "be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def get_extra_state(self):
        """The module's state beyond parameters and buffers, to be saved in its state dict
        under ``"_extra_state"`` (picklable); override it together with
        ``set_extra_state``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. Please file an issue at "
                           "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml"
                           " to report this bug.")

    def set_extra_state(self, state) -> None:
        """Restores what ``get_extra_state`` returned, when a state dict is loaded."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. Please file an issue at "
                           "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml"
                           " to report this bug.")

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Registers ``hook(module, prefix, keep_vars) -> None``, run by ``state_dict`` before
        this module's entries are saved (e.g. to materialize or synchronize them)."""
        return self._add_hook(self._state_dict_pre_hooks, hook, False)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Registers ``hook(module, state_dict, prefix, local_metadata) -> None``, run by
        ``state_dict`` after this module and its children are saved; it may edit
        ``state_dict`` in place (returning a value raises)."""
        h = self._add_hook(self._state_dict_hooks, hook, False,
                           self._state_dict_post_hooks_in_place)
        self._state_dict_post_hooks_in_place.add(h.id)
        return h

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        # PyTorch's older private form: the hook may return a new state dict
        return self._add_hook(self._state_dict_hooks, hook, False)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Registers ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) -> None``, run before this module's entries are loaded;
        it may edit ``state_dict`` (the copy ``load_state_dict`` works on)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False
                                           ) -> RemovableHandle:
        # PyTorch's private form: without ``with_module`` the hook gets no module argument
        return self._add_hook(self._load_state_dict_pre_hooks,
                              functools.partial(hook, self) if with_module else hook, False)

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Registers ``hook(module, incompatible_keys) -> None``, run after this module and
        its children are loaded; it may edit ``incompatible_keys.missing_keys`` and
        ``.unexpected_keys`` in place, which ``strict`` then judges."""
        return self._add_hook(self._load_state_dict_post_hooks, hook, False)

    # -- printing ----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The module's own settings, shown inside its repr (override in subclasses)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(m), 2) for name, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


# ``torch.__future__``'s switches for ``Module._apply`` (tritongrad/__future__.py's setters)
_CONVERSION = {"overwrite": False, "swap": False}


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """``torch.__future__``'s: whether ``Module.to()``/``float()``/... make new Parameter
    objects (True) instead of changing the existing ones' data (False, the default)."""
    _CONVERSION["overwrite"] = value


def get_overwrite_module_params_on_conversion() -> bool:
    return _CONVERSION["overwrite"]


def set_swap_module_params_on_conversion(value: bool) -> None:
    """``torch.__future__``'s: whether ``Module.to()``/``float()``/... swap the converted
    values into the existing Parameter objects (``utils.swap_tensors``; default False)."""
    _CONVERSION["swap"] = value


def get_swap_module_params_on_conversion() -> bool:
    return _CONVERSION["swap"]


def _swap(t1: Tensor, t2: Tensor) -> None:
    from ..utils import swap_tensors
    swap_tensors(t1, t2)


def _type_name(value) -> str:
    """PyTorch's ``typename`` of ``value`` in its messages: 'tritongrad.FloatTensor',
    'tritongrad.nn.activation.ReLU', 'int'."""
    from ..autograd.ops.queries import typename
    return typename(value)


def _zero_grad(p: Tensor, set_to_none: bool) -> None:
    g = p.grad
    if g is None:
        return
    if set_to_none:
        p.grad = None
        return
    if g.grad_fn is not None:
        g.detach_()
    else:
        g.requires_grad_(False)
    g.zero_()  # (as PyTorch's zero_grad: one fill, aten::zero_ to the profiler)
