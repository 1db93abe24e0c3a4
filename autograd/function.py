"""Custom autograd functions: ``Function`` with static ``forward``/``backward`` and its ctx.

``MyFunc.apply(*args)`` runs ``forward`` without recording, then, if grad mode is on and a
tensor argument requires grad, makes the outputs the results of one node of class
``MyFuncBackward`` (a ``BackwardCFunction``), which is also the ``ctx`` both static methods
receive. ``backward`` returns one gradient per ``forward`` argument (None for non-tensors and
for inputs that need none); wrong counts, shapes or devices are reported against the function.
"""

from __future__ import annotations

import functools
import inspect
import traceback

from . import anomaly_mode
from .dispatch import dual_levels, dual_masked
from .node import Node
from .saved import SavedTensor
from .state import state
from .tensor import Tensor

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction"]


class FunctionCtx:
    """The methods ``forward`` may call on ``ctx``."""

    def save_for_backward(self, *tensors) -> None:
        """Saves tensors (or None) for ``backward``; call at most once, inside ``forward``.

        ``backward`` reads them from ``ctx.saved_tensors``, which checks that none was
        modified in place since.
        """
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument is of "
                                f"type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Saves given tensors for a future call to ``jvp`` (forward-mode AD); call it at most
        once, inside ``forward`` or ``setup_context``. In ``jvp``, they are read back through
        ``ctx.saved_tensors``."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors; but "
                                f"got {type(t).__name__}")
        self._saved_for_forward = tensors

    def mark_dirty(self, *args) -> None:
        """Marks input tensors that ``forward`` modified in place (call at most once)."""
        self._dirty = args

    def mark_non_differentiable(self, *args) -> None:
        """Marks outputs that never require grad (``backward`` still gets a zero gradient
        for each of them)."""
        self._non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zero tensors (True, default) or None for outputs that
        received no gradient."""
        self._materialize = bool(value)


_ContextMethodMixin = FunctionCtx  # the name the 2019-2021 seeds document these methods under


class BackwardCFunction(FunctionCtx, Node):
    """The graph node (and ctx) of one ``Function.apply`` call."""

    _forward_cls = None

    def __init__(self):
        Node.__init__(self)
        self._materialize = True
        self.needs_input_grad = ()

    def name(self) -> str:
        return type(self).__name__

    @property
    def saved_tensors(self) -> tuple:
        """The tensors saved by ``save_for_backward`` (in ``jvp``: by ``save_for_forward``)."""
        if self.__dict__.get("_in_jvp"):
            return self.__dict__.get("_saved_for_forward") or ()
        return Node.saved_tensors.__get__(self)

    def apply(self, *grads):
        cls = self._forward_cls
        if self._materialize:
            grads = tuple(_zeros(meta) if g is None and meta is not None else g
                          for g, meta in zip(grads, self._output_meta))
        backward = cls.backward if not _uses_vjp(cls) else cls.vjp
        out = backward(self, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        n_args = len(self._is_tensor_arg)
        if len(out) != n_args:
            if len(out) > n_args and all(g is None for g in out[n_args:]):
                out = out[:n_args]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n_args}, got {len(out)})")
        result = []
        for i, (g, is_tensor) in enumerate(zip(out, self._is_tensor_arg)):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different "
                                       f"than None at position {i + 1}, but the corresponding "
                                       f"forward input was not a Variable")
                continue
            result.append(self._validate(g, len(result), i))
        return tuple(result)

    def _validate(self, g, slot: int, position: int):
        if g is None:
            return None
        if not isinstance(g, Tensor):
            raise TypeError(f"function {self.name()} returned a {type(g).__name__} as gradient "
                            f"{position}; expected a Tensor or None")
        if self.next_functions[slot][0] is None:
            return None  # that input needs no gradient
        shape, dtype, device = self._input_meta[slot]
        if tuple(g.shape) != shape:
            try:
                g = g.sum_to_size(shape)
            except RuntimeError:
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index "
                                   f"{position} - got {list(g.shape)} but expected shape "
                                   f"compatible with {list(shape)}") from None
        if g.device is not device:
            raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index "
                               f"{position} - expected device {device} but got {g.device}")
        if g.dtype is not dtype:
            g = g.to(dtype)
        return g


def _uses_vjp(cls) -> bool:
    return "vjp" in cls.__dict__ and "backward" not in cls.__dict__


def _zeros(meta):
    shape, dtype, device = meta
    from .ops.creation import zeros
    return zeros(shape, dtype=dtype, device=device)


class _FunctionMeta(type):
    """Gives each Function subclass its own node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls.__qualname__ = name + "Backward"
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Records operation history and defines formulas for differentiating ops.

    Subclass it with static ``forward(ctx, *args, **kwargs)`` and ``backward(ctx,
    *grad_outputs)`` (one gradient per forward argument), and call ``.apply``.

    Example:
        >>> class Exp(Function):
        ...     @staticmethod
        ...     def forward(ctx, i):
        ...         result = i.exp()
        ...         ctx.save_for_backward(result)
        ...         return result
        ...     @staticmethod
        ...     def backward(ctx, grad_output):
        ...         result, = ctx.saved_tensors
        ...         return grad_output * result
        >>> output = Exp.apply(tg.tensor([0.], requires_grad=True))
    """

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{type(self).__name__} should not be instantiated. Methods on autograd "
                      f"functions are all static, so you should invoke them on the class "
                      f"itself.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method.")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Performs the operation (override it). ``ctx`` stores what backward needs."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optionally, fills ``ctx`` when ``forward`` does not take it (PyTorch 2 style)."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Differentiates the operation (override it): returns one gradient per forward
        argument."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs ``forward`` and records the result's history."""
        observers = state.observers
        if not observers:
            return cls._apply(args, kwargs)
        inputs = tuple(a for a in args if isinstance(a, Tensor))
        params = tuple(a for a in args if not isinstance(a, Tensor))
        tokens = [o.op_enter(cls.__name__, state.seq, inputs, params) for o in observers]
        try:
            return cls._apply(args, kwargs)
        finally:
            for o, tok in zip(observers, tokens):
                o.op_exit(tok)

    @classmethod
    def _apply(cls, args, kwargs, ctx=None):
        if dual_levels and ctx is None:
            return _apply_dual(cls, args, kwargs)
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        record = state.grad_enabled and any(t._requires_grad for t in tensor_args)
        ctx = cls._backward_cls() if ctx is None else ctx
        ctx._is_tensor_arg = tuple(isinstance(a, Tensor) for a in args)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        if record:
            ctx.next_functions = tuple(t._edge() for t in tensor_args)
            ctx._input_meta = tuple((tuple(t.shape), t.dtype, t.device) for t in tensor_args)
            ctx._seq = state.seq
            state.seq += 1
            if tensor_args and tensor_args[0].device.type == "cuda":
                from ..runtime import streams
                ctx._stream = streams.current_stream(tensor_args[0].device)
            if anomaly_mode.enabled:
                ctx._trace = traceback.format_stack()[:-1]
        custom_setup = _overrides(cls, "setup_context")
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            if custom_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, _bound_inputs(cls.forward, args, kwargs), outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            state.grad_enabled = prev
        return _wrap_outputs(ctx, args, outputs, record)


def _bound_inputs(forward, args: tuple, kwargs: dict) -> tuple:
    """``setup_context``'s ``inputs``: forward's arguments in order, with the defaults of the
    ones not passed filled in (PyTorch's), keyword arguments placed by name."""
    try:
        bound = inspect.signature(forward).bind(*args, **kwargs)
    except (TypeError, ValueError):  # (a signature inspect cannot read: the args as given)
        return args
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _apply_dual(cls, args, kwargs):
    """``apply`` under forward AD: ``forward`` runs on the primals (the level masked, as
    PyTorch's custom functions see no forward grads), then ``jvp(ctx, *tangents)`` (one per
    ``forward`` argument, None where there is none) gives the outputs' tangents."""
    from .forward_ad import get_tangent, set_tangent
    level = dual_levels[-1]
    tangents = tuple(get_tangent(a, level) if isinstance(a, Tensor) else None for a in args)
    ctx = cls._backward_cls()
    with dual_masked():
        result = cls._apply(args, kwargs, ctx)
    if all(t is None for t in tangents):
        return result
    outs = result if isinstance(result, tuple) else (result,)
    if ctx._materialize:  # tensor inputs with no tangent get zeros, as backward's grads do
        from .ops.creation import zeros_like
        tangents = tuple(zeros_like(a) if t is None and isinstance(a, Tensor) else t
                         for a, t in zip(args, tangents))
    ctx._in_jvp = True
    try:
        with dual_masked():
            res = cls.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
    res = res if isinstance(res, tuple) else (res,)
    if len(res) != len(outs):
        raise RuntimeError(f"function {ctx.name()} returned an incorrect number of forward "
                           f"gradients (expected {len(outs)}, got {len(res)})")
    for i, (o, t) in enumerate(zip(outs, res)):
        if t is None or not isinstance(o, Tensor):
            continue
        if tuple(t.shape) != tuple(o.shape):
            raise RuntimeError(f"Function {ctx.name()} returned an invalid forward gradient at "
                               f"index {i} - got {list(t.shape)} but expected shape "
                               f"{list(o.shape)}")
        set_tangent(o, level, t if t.dtype is o.dtype else t.to(o.dtype))
    return result


def _overrides(cls, name) -> bool:
    for c in cls.__mro__:
        if name in c.__dict__:
            return c is not Function
    return False


def _wrap_outputs(ctx, args, outputs, record: bool):
    is_tuple = isinstance(outputs, tuple)
    outs = list(outputs) if is_tuple else [outputs]
    dirty = {id(t) for t in ctx.__dict__.get("_dirty", ())}
    nondiff = {id(t) for t in ctx.__dict__.get("_non_differentiable", ())}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    for t in ctx.__dict__.get("_dirty", ()):
        if id(t) not in inputs:
            raise RuntimeError("mark_dirty only accepts input tensors: ctx.mark_dirty() "
                               "received a tensor that was not an input.")
    ctx.num_outputs = len(outs)
    meta = []
    for i, t in enumerate(outs):
        if not isinstance(t, Tensor):
            meta.append(None)
            continue
        meta.append((tuple(t.shape), t.dtype, t.device))
        if id(t) in dirty:
            t._vc[0] += 1
            if record and id(t) not in nondiff:
                from .dispatch import check_inplace
                check_inplace(t)
                if t._base is None:
                    t._grad_fn, t._output_nr, t._requires_grad = ctx, i, True
                else:
                    from .ops.views import rebase_history
                    rebase_history(t, ctx)
            continue
        if id(t) in inputs:
            # Returning an input unchanged: the output is an alias with this node's history.
            alias = t.detach()
            alias._base = t._base
            outs[i] = t = alias
        if record and id(t) not in nondiff:
            if not (t.dtype.is_floating_point or t.dtype.is_complex):
                continue  # integer outputs cannot require grad
            t._grad_fn, t._output_nr, t._requires_grad = ctx, i, True
            if t._base is not None:  # Note [View + in-place] (tensor.py)
                t._creation_meta = "custom_function"
    ctx._output_meta = tuple(meta)
    if record:
        to_save = ctx.__dict__.pop("_to_save", None)
        if to_save is not None:
            out_ids = {id(t): i for i, t in enumerate(outs) if isinstance(t, Tensor)}
            ctx._saved = [None if t is None else
                          SavedTensor(t, id(t) in out_ids and t._grad_fn is ctx,
                                      out_ids.get(id(t), 0))
                          for t in to_save]
    return tuple(outs) if is_tuple else outs[0]


def once_differentiable(fn):
    """Decorates a ``backward`` that is not itself differentiable: it runs without recording,
    and a double backward through its results raises a clear error.

    Under ``create_graph=True`` (grad mode on while ``backward`` runs) with a gradient that
    requires grad, each result is given a ``grad_fn`` whose backward raises "trying to
    differentiate twice a function that was marked with @once_differentiable", as PyTorch's
    does. (As in PyTorch, that node's edges lead to detached aliases of the results, not to
    the function's inputs: ``grad()`` towards an input reports it unused.)
    """
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            state.grad_enabled = prev
        if not prev:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        # The results were computed without recording: an alias of each that requires grad
        # gives DelayedError an input to record against, so the results get its grad_fn.
        fake = tuple(_fake_requires_grad(o) for o in outs)
        err = DelayedError.apply(_ONCE_DIFFERENTIABLE_MSG, *fake)
        return err[0] if single else err
    return wrapper


_ONCE_DIFFERENTIABLE_MSG = ("trying to differentiate twice a function that was marked with "
                            "@once_differentiable")


def _fake_requires_grad(t):
    if isinstance(t, Tensor) and (t._dtype.is_floating_point or t._dtype.is_complex):
        t = t.detach()
        t._requires_grad = True
    return t


class DelayedError(Function):
    """Passes its tensors through (as aliases); differentiating through them raises ``msg``."""

    @staticmethod
    def forward(ctx, msg, *xs):
        ctx.msg = msg
        return xs

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.msg)


class InplaceFunction(Function):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace
