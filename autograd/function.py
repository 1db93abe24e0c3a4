"""Custom autograd functions: ``Function`` with static ``forward``/``backward`` and its ctx.

``MyFunc.apply(*args)`` runs ``forward`` without recording, then, if grad mode is on and a
tensor argument requires grad, makes the outputs the results of one node of class
``MyFuncBackward`` (a ``BackwardCFunction``), which is also the ``ctx`` both static methods
receive. ``backward`` returns one gradient per ``forward`` argument (None for non-tensors and
for inputs that need none); wrong counts, shapes or devices are reported against the function.

The outputs follow PyTorch's rules (``_wrap_outputs``): an input returned as-is comes back as
a view of itself, an input marked dirty keeps its identity and gets the node as its history,
and views among the outputs refuse in-place writes (Note [View + in-place], tensor.py).
Under forward AD, ``jvp`` gives the outputs' tangents, checked to keep the same aliasing:
a dirty input's tangent modified in place and returned as-is, a view's tangent a view of its
input's (``_set_output_tangents``).

Under a ``torch.func`` transform a Function must define ``setup_context`` (PyTorch's rule);
under ``vmap`` its ``vmap`` staticmethod, or ``generate_vmap_rule = True``, says how it
batches (autograd/vmap.py: custom_function_forward).
"""

from __future__ import annotations

import functools
import inspect
import traceback
import warnings
import weakref

from . import anomaly_mode
from .dispatch import batch_of, dual_levels, dual_masked, run_batched
from .node import FREED, FREED_MSG, AccumulateGrad, Node
from .saved import SavedTensor
from .state import state
from .tensor import Tensor
from .vmap import _local as _transforms, custom_function_forward

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction"]


class _SaveForForwardError(TypeError, AssertionError):
    """PyTorch asserts that ``save_for_forward`` gets tensors (an AssertionError); tritongrad
    raised a TypeError before, which code written against it may catch: this is both."""


class FunctionCtx:
    """The methods ``forward`` may call on ``ctx``."""

    def save_for_backward(self, *tensors) -> None:
        """Saves tensors (or None) for ``backward``; call at most once, inside ``forward``.

        ``backward`` reads them from ``ctx.saved_tensors``, which checks that none was
        modified in place since.
        """
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Saves given tensors for a future call to ``jvp`` (forward-mode AD); call it at most
        once, inside ``forward`` or ``setup_context``. In ``jvp``, they are read back through
        ``ctx.saved_tensors``."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise _SaveForForwardError("save_for_forward expects all arguments to be "
                                           "tensors; you should save non-tensors as "
                                           "attributes on ctx.")
        self._saved_for_forward = tensors

    def mark_dirty(self, *args) -> None:
        """Marks input tensors that ``forward`` modified in place (call at most once)."""
        for i, t in enumerate(args):
            if not isinstance(t, Tensor):  # (PyTorch's type and message)
                raise RuntimeError(f"mark_dirty can only accept variables, but argument {i} "
                                   f"is of type {type(t).__name__}")
        self._dirty = args

    def mark_non_differentiable(self, *args) -> None:
        """Marks outputs that never require grad (``backward`` still gets a zero gradient
        for each of them)."""
        for t in args:
            if not isinstance(t, Tensor):  # (PyTorch's type and message)
                raise RuntimeError(f"mark_non_differentiable only accepts variable arguments, "
                                   f"but got {type(t).__name__}")
        self._non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zero tensors (True, default) or None for outputs that
        received no gradient (even when none of them did: ``backward`` still runs then, with
        only Nones, as in PyTorch)."""
        if not isinstance(value, bool):  # (PyTorch's binding takes a bool only)
            raise TypeError(f"set_materialize_grads(): argument 'value' must be bool, not "
                            f"{type(value).__name__}")
        self._materialize_grads = value

    def mark_shared_storage(self, *pairs) -> None:
        """Deprecated and does nothing, as in PyTorch: tensors sharing storage are tracked
        without it."""
        warnings.warn("`mark_shared_storage` is deprecated. Tensors with shared storages are "
                      "automatically tracked. Note that calls to `set_()` are not tracked",
                      FutureWarning, stacklevel=2)


_ContextMethodMixin = FunctionCtx  # the name the 2019-2021 seeds document these methods under


class BackwardCFunction(FunctionCtx, Node):
    """The graph node (and ctx) of one ``Function.apply`` call."""

    _forward_cls = None
    _materialize_grads = True  # (set_materialize_grads)
    # The engine skips a node whose incoming gradients are all None unless it has this flag
    # set; PyTorch always runs a custom Function's backward (with zeros, or with the Nones
    # when set_materialize_grads(False)), so every BackwardCFunction has it.
    _materialize = True

    def __init__(self):
        Node.__init__(self)
        self.needs_input_grad = ()

    def name(self) -> str:
        return type(self).__name__

    @property
    def _raw_saved_tensors(self) -> tuple:
        """The saved tensors as stored (``RawSavedTensor``: ``register_hooks``, ``data``), as
        PyTorch's custom-Function nodes give them."""
        from .saved import UNSAVED, RawSavedTensor
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(FREED_MSG)
        return tuple(RawSavedTensor(self, UNSAVED if s is None else s, i)
                     for i, s in enumerate(saved or ()))

    def __call__(self, *grads):
        # PyTorch's custom-Function nodes are not callable, unlike its built-in ones (run
        # one with ``grad_fn.apply(*grads)``)
        raise TypeError(f"'{type(self).__name__}' object is not callable")

    @property
    def saved_tensors(self) -> tuple:
        """The tensors saved by ``save_for_backward`` (in ``jvp``: by ``save_for_forward``)."""
        if self.__dict__.get("_in_jvp"):
            return self.__dict__.get("_saved_for_forward") or ()
        if self._saved is None:  # still inside forward (or nothing saved): PyTorch's ()
            return ()
        if self.__dict__.get("_saved_taken"):
            raise RuntimeError(
                "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True "
                "is set on the autograd.Function. Either access saved_tensors only once, or set "
                "clear_saved_tensors_on_access=False.")
        saved = Node.saved_tensors.__get__(self)
        cls = self._forward_cls
        if cls is not None and cls.clear_saved_tensors_on_access and self._saved is not None:
            # hand the tensors over: once backward drops them they can be freed before the
            # rest of the graph is done
            self._saved = FREED
            self._saved_taken = True
        return saved

    def apply(self, *grads):
        if self._materialize_grads:
            # (a non-differentiable output's gradient stays None when the forward set
            # ctx._materialize_non_diff_grads = False, as PyTorch's)
            keep = () if self.__dict__.get("_materialize_non_diff_grads", True) \
                else self._nondiff_outputs
            grads = tuple(_zeros(meta) if g is None and meta is not None and i not in keep
                          else g for i, (g, meta) in enumerate(zip(grads, self._output_meta)))
        out = _user_backward(self._forward_cls)(self, *grads)
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
            # (PyTorch's type and message, which names neither the function nor the index)
            raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
        if self._next[slot] is None:
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
        node = self._next[slot]
        if isinstance(node, AccumulateGrad):  # a leaf: its grad_dtype decides (None: any)
            dtype = node.variable._accumulated_dtype()
        if dtype is not None and g.dtype is not dtype:
            if g.dtype.is_complex and not dtype.is_complex:
                # (PyTorch refuses it too: taking the real part would hide a wrong backward)
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at "
                                   f"index {position} - got a complex gradient ({g.dtype}) "
                                   f"for a real input ({dtype})")
            g = g.to(dtype)
        return g


def _user_backward(cls):
    """The Function's ``vjp`` or ``backward``, whichever it defines (PyTorch refuses both)."""
    backward, vjp = cls.backward, cls.vjp
    if backward is not Function.backward and vjp is not Function.vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not "
                           "allowed. You should only implement one of them.")
    return vjp if vjp is not Function.vjp else backward


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
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions "
                      f"are all static, so you should invoke them on the class itself. "
                      f"Instantiating an autograd function will raise an error in a future "
                      f"version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: https://pytorch.org/docs/stable/"
                           "autograd.html#torch.autograd.Function)")

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

    # Whether backward's first read of ctx.saved_tensors drops the node's references to them
    # (a second read raises), so that each can be freed as soon as backward is done with it.
    clear_saved_tensors_on_access = False

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    # Under torch.func.vmap (autograd/vmap.py: custom_function_forward): True runs forward
    # on each entry of the batch (PyTorch generates a rule that does the same); otherwise
    # the Function must override the ``vmap`` staticmethod below.
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        """The Function's batching rule under ``torch.func.vmap`` (override it, or set
        ``generate_vmap_rule = True``): given ``info`` (``batch_size``, ``randomness``), the
        ``in_dims`` of the arguments (None: not batched) and the batched arguments, returns
        ``(output, out_dims)``."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs ``forward`` and records the result's history."""
        observers = state.observers
        if not observers:
            return cls._apply(args, kwargs)
        inputs = tuple(a for a in args if isinstance(a, Tensor))
        params = tuple(a for a in args if not isinstance(a, Tensor))
        tokens = [o.op_enter(cls, state.seq, inputs, params) for o in observers]
        try:
            return cls._apply(args, kwargs)
        finally:
            for o, tok in zip(observers, tokens):
                o.op_exit(tok)

    @classmethod
    def _apply(cls, args, kwargs, ctx=None):
        if ctx is None and _transforms.transforms:
            _check_transformable(cls)
        if kwargs:
            args, kwargs = _bind_keywords(cls, args, kwargs)
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
                inputs = _bound_inputs(cls.forward, args, kwargs)  # (first: PyTorch's errors)
                if _transforms.levels:  # (under vmap: its vmap rule)
                    outputs = custom_function_forward(cls, inputs,
                                                      lambda: cls.forward(*args, **kwargs))
                else:
                    outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, inputs, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            state.grad_enabled = prev
        return _wrap_outputs(ctx, args, outputs, record)


def _check_transformable(cls) -> None:
    """PyTorch's refusal of a custom Function without ``setup_context`` under a torch.func
    transform. (tritongrad's own Functions are exempt: they stand for PyTorch's built-in
    ops, which work under every transform.)"""
    if not _overrides(cls, "setup_context") and not cls.__module__.startswith("tritongrad."):
        raise RuntimeError("In order to use an autograd.Function with functorch transforms "
                           "(vmap, grad, jvp, jacrev, ...), it must override the setup_context "
                           "staticmethod. For more details, please see "
                           "https://pytorch.org/docs/main/notes/extending.func.html")


# forward -> its inspect.Signature (reading one costs more than the rest of an apply)
_signatures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _signature(forward) -> inspect.Signature | None:
    """``forward``'s signature, cached; None when inspect cannot read it."""
    try:
        signature = _signatures.get(forward)
    except TypeError:  # (a forward weakrefs cannot point to: read each time)
        signature = None
    if signature is None:
        try:
            signature = inspect.signature(forward)
        except (TypeError, ValueError):
            return None
        try:
            _signatures[forward] = signature
        except TypeError:
            pass
    return signature


def _bound_inputs(forward, args: tuple, kwargs: dict) -> tuple:
    """``setup_context``'s ``inputs``: forward's positional arguments in order, with the
    defaults of the ones not passed filled in (PyTorch's), keyword arguments placed by name."""
    signature = _signature(forward)
    if signature is None:  # (a signature inspect cannot read: the args as given)
        return args
    bound = signature.bind(*args, **kwargs)  # (its TypeError is PyTorch's for bad arguments)
    bound.apply_defaults()
    return bound.args  # (PyTorch's bind_default_args: *args spread, keyword-only left out)


def _bind_keywords(cls, args: tuple, kwargs: dict) -> tuple:
    """``(args, kwargs)`` with every keyword argument that names a positional parameter of
    ``forward`` moved into ``args``, in the signature's order (defaults not filled in), as
    PyTorch's ``apply`` binds them: a Tensor passed by keyword is an input like any other
    (its gradient is ``backward``'s output at its position, and ``needs_input_grad`` counts
    it)."""
    signature = _signature(cls.forward)
    if signature is None:
        return args, kwargs
    with_ctx = not _overrides(cls, "setup_context")
    lead = (None,) if with_ctx else ()
    try:
        bound = signature.bind(*lead, *args, **kwargs)
    except TypeError as e:  # (PyTorch's message names forward)
        raise TypeError(f"forward() {e}") from None
    return bound.args[len(lead):], bound.kwargs


def _apply_dual(cls, args, kwargs):
    """``apply`` under forward AD: ``forward`` runs on the primals (the level masked, as
    PyTorch's custom functions see no forward grads), then ``jvp(ctx, *tangents)`` (one per
    ``forward`` argument, None where there is none) gives the outputs' tangents."""
    from .forward_ad import get_tangent
    level = dual_levels[-1]
    given = tuple(get_tangent(a, level) if isinstance(a, Tensor) else None for a in args)
    ctx = cls._backward_cls()
    ctx._fw_raw = None  # asks _wrap_outputs for forward's own outputs (the checks need them)
    with dual_masked():
        result = cls._apply(args, kwargs, ctx)
    raw, dirty = ctx.__dict__.pop("_fw_raw")
    if all(t is None for t in given):
        return result
    versions = tuple(None if t is None else t._vc[0] for t in given)
    tangents = given
    if ctx._materialize_grads:  # inputs with no tangent get zeros, as backward's grads do
        from .ops.creation import zeros_like
        tangents = tuple(zeros_like(a) if t is None and _differentiable(a) else t
                         for a, t in zip(args, given))
    ctx._in_jvp = True
    try:
        size = batch_of(tangents)
        if size is None:
            with dual_masked():
                res = cls.jvp(ctx, *tangents)
        else:  # (once on the batch, as under PyTorch's vmap: Note [Batched forward AD])
            res = run_batched(lambda ts: cls.jvp(ctx, *ts), tangents, size)
    finally:
        ctx._in_jvp = False
    res = res if isinstance(res, tuple) else (res,)
    outs = result if isinstance(result, tuple) else (result,)
    if len(res) != len(outs):
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients "
                           f"(expected {len(outs)} but got {len(res)})")
    _set_output_tangents(ctx, args, given, versions, raw, dirty, outs, res, level)
    return result


def _differentiable(t) -> bool:
    return isinstance(t, Tensor) and (t._dtype.is_floating_point or t._dtype.is_complex)


def _set_output_tangents(ctx, args, given, versions, raw, dirty, outs, res, level) -> None:
    """Gives the outputs the tangents ``jvp`` returned, with PyTorch's checks that they keep
    the forward's aliasing (its _process_forward_mode_AD): an input modified in place must
    have its tangent modified in place and returned as-is, and an output that is a view of an
    input (an input returned as-is is one) must get a view of that input's tangent."""
    from .dispatch import write_inplace_tangent
    from .forward_ad import set_tangent
    position = {id(a): i for i, a in enumerate(args) if isinstance(a, Tensor)}
    bases = {}  # an input's base (itself if not a view) -> the input's position
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            bases.setdefault(id(a if a._base is None else a._base), i)
    for i, (r, o, t) in enumerate(zip(raw, outs, res)):
        if not isinstance(r, Tensor) or i in ctx._nondiff_outputs:
            if t is not None:
                raise RuntimeError(f"Function's jvp returned a gradient at position {i}, but  "
                                   f"the corresponding forward output is not a differentiable "
                                   f"Tensor.You should return None at that position instead.")
            continue
        if t is None:
            continue
        if tuple(t.shape) != tuple(o.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size "
                               f"than that of the original Tensor, this is not supported. "
                               f"Tensor is of size {list(o.shape)} while the given forward "
                               f"gradient is of size {list(t.shape)}.")
        if t.dtype is not o.dtype:
            with dual_masked(batch_of((t,))):
                t = t.to(o.dtype)
        if id(r) in dirty:
            j = position.get(id(r))
            if j is None:
                raise RuntimeError("Only input Tensors should be given to ctx.mark_dirty(). If "
                                   "a Tensor is not an input, there is no need to pass it to "
                                   "mark_dirty().")
            if given[j] is None:
                write_inplace_tangent(o, level, t)
            elif t._vc[0] == versions[j]:
                raise RuntimeError(_NOT_INPLACE_JVP)
            elif t is not given[j]:
                raise RuntimeError(_NOT_AS_IS_JVP)
            continue
        j = None if o._base is None else bases.get(id(o._base))
        if j is not None:
            if given[j] is None:  # a view whose input has no tangent: as an in-place op
                write_inplace_tangent(o, level, t)
                continue
            _check_view_tangent(t, given[j])
        set_tangent(o, level, t)


_NOT_INPLACE_JVP = (
    "An inplace custom Function is not modifying the forward mode gradients inplace. If the "
    "forward is modifying an input inplace, then the jvp function must modify the "
    "corresponding gradient inplace.")
_NOT_AS_IS_JVP = (
    "An inplace custom Function is not returning the forward mode gradients as-is. If the "
    "forward is modifying an input inplace, then the jvp function must modify the gradient "
    "inplace and return it as-is.")


def _check_view_tangent(t, input_tangent) -> None:
    """The tangent of an output that is a view of an input must be a view of that input's
    tangent (of its base, when that tangent is itself a view)."""
    if t._base is None:
        raise RuntimeError("A custom Function's forward is returning a view (or an input "
                           "as-is) but the jvp is not returning a view.")
    if input_tangent._base is not None:
        if t._base is not input_tangent._base:
            raise RuntimeError("A custom Function is returning a view but the jvp is not "
                               "returning a view of the same base as the given grad input.")
    elif t._base is not input_tangent:
        raise RuntimeError("A custom Function is returning a view but the jvp is not returning "
                           "a view of the given grad input.")


def _overrides(cls, name) -> bool:
    for c in cls.__mro__:
        if name in c.__dict__:
            return c is not Function
    return False


_MARK_DIRTY_NOT_INPUT = ("ctx.mark_dirty() received a tensor that was not an input. Only input "
                         "Tensors that have been mutated should be passed to ctx.mark_dirty().")
_DIRTY_VIEW_MULTI_OUTPUT = (
    "If your Function modifies inplace an input that is a view of another Tensor, your "
    "Function cannot return more than one Tensor. This is not supported by the current "
    "autograd engine. You should either make sure the input is not a view (using .clone() for "
    "example) or make your Function only return one Tensor (potentially splitting it into two "
    "Functions: one doing the inplace that returns a single Tensor and a second one that does "
    "the other operations). You can ask on the forum https://discuss.pytorch.org/ if you need "
    "help to do this change.")


def _wrap_outputs(ctx, args, outputs, record: bool):
    """Gives ``forward``'s outputs their history, as PyTorch's _process_backward_mode_ad.

    A differentiable output (a floating tensor not marked non-differentiable, when the call
    records) gets ``ctx`` as its ``grad_fn``; an input returned as-is is returned as a view of
    itself carrying that history; an input marked dirty keeps its identity and has its
    history rewritten through ``ctx``. Non-differentiable outputs that are inputs requiring
    grad come back as detached aliases.
    """
    is_tuple = isinstance(outputs, tuple)
    raw = outputs if is_tuple else (outputs,)
    outs = list(raw)
    # (taken off ctx: it is the outputs' grad_fn, and must not keep them alive)
    dirty = {id(t) for t in ctx.__dict__.pop("_dirty", ())}
    marked = {id(t) for t in ctx.__dict__.pop("_non_differentiable", ())}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    n = len(outs)
    ctx.num_outputs = n
    meta, nondiff, linked = [], [], set()  # linked: outputs whose history runs through ctx
    for i, t in enumerate(outs):
        if not isinstance(t, Tensor):
            meta.append(None)
            continue
        meta.append((tuple(t.shape), t.dtype, t.device))
        key = id(t)
        is_input, modified = key in inputs, key in dirty
        if modified:
            t._vc[0] += 1
        if key in marked or not (t.dtype.is_floating_point or t.dtype.is_complex):
            nondiff.append(i)
        elif record:
            if modified:
                _rebase_dirty(ctx, t, i, is_input, n)
            else:
                if is_input:
                    outs[i] = t = _view_as_self(t)
                t._grad_fn, t._output_nr, t._requires_grad = ctx, i, True
                if t._base is not None:  # (a view's history is now current: PyTorch's too)
                    t._view_version = t._vc[0]
            linked.add(id(t))
        if i in nondiff or not record:
            if t._requires_grad:  # not differentiable: never the input itself with grad
                if is_input:
                    outs[i] = t = t.detach()
                elif t._base is None:
                    t.detach_()
            elif is_input and not modified:
                outs[i] = t = _view_as_self(t)
        if t._base is not None and not (is_input and modified):
            t._creation_meta = "custom_function"  # Note [View + in-place] (tensor.py)
    if len(linked) > 1:  # several differentiable outputs: none of their views may be written
        for t in outs:
            if isinstance(t, Tensor) and t._base is not None and t._grad_fn is not None:
                t._creation_meta = "multi_output"
    if dirty and not dirty <= {id(t) for t in raw}:
        raise RuntimeError("Some elements marked as dirty during the forward method were not "
                           "returned as output. The inputs that are modified inplace must all "
                           "be outputs of the Function.")
    ctx._output_meta = tuple(meta)
    ctx._nondiff_outputs = tuple(nondiff)
    if "_fw_raw" in ctx.__dict__:  # (forward AD: _apply_dual's checks read them)
        ctx._fw_raw = raw, dirty
    if record:
        to_save = ctx.__dict__.pop("_to_save", None)
        if to_save is not None:
            # An output is saved without its history (a reference cycle through ctx
            # otherwise): a mutated view's history is its base's, which runs through ctx too.
            out_ids = {id(t): i for i, t in enumerate(outs) if id(t) in linked}
            ctx._saved = [None if t is None else
                          SavedTensor(t, id(t) in out_ids, out_ids.get(id(t), 0))
                          for t in to_save]
    return tuple(outs) if is_tuple else outs[0]


def _rebase_dirty(ctx, t, i: int, is_input: bool, n: int) -> None:
    """Makes ``ctx`` the history of ``t``, modified in place by ``forward``."""
    if t._requires_grad and t._grad_fn is None and t._base is None:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                           "operation.")
    if not is_input:
        if t._base is not None:
            raise RuntimeError(_MARK_DIRTY_NOT_INPUT)
        warnings.warn(_MARK_DIRTY_NOT_INPUT, UserWarning, stacklevel=5)
    if t._base is not None and n > 1:
        raise RuntimeError(_DIRTY_VIEW_MULTI_OUTPUT)
    from .dispatch import check_inplace
    check_inplace(t)
    if t._base is None:
        t._grad_fn, t._output_nr, t._requires_grad = ctx, i, True
    else:
        from .ops.views import rebase_history
        rebase_history(t, ctx)


def _view_as_self(t: Tensor) -> Tensor:
    """``t.view_as(t)`` with no history: an input returned as-is is returned as this view of
    it, as in PyTorch (so an in-place change of it is refused, Note [View + in-place])."""
    from .ops.views import _as_view
    return _as_view(t.detach(), t)


def once_differentiable(fn):
    """Decorates a ``backward`` that is not itself differentiable: it runs without recording,
    and a double backward through its results raises a clear error.

    Under ``create_graph=True`` (grad mode on while ``backward`` runs) with a gradient that
    requires grad, the results are given one ``grad_fn``, an ``Error`` node whose backward
    raises "trying to differentiate twice a function that was marked with
    @once_differentiable", as PyTorch's does. (As in PyTorch, that node's edges lead to
    detached aliases of the results, None for a result that is not a tensor, not to the
    function's inputs: ``grad()`` towards an input reports it unused.)
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
        # gives the Error node an edge (PyTorch's DelayedError does the same).
        diff = tuple(_differentiable(o) for o in outs)
        node = Error(_ONCE_DIFFERENTIABLE_MSG, tuple(
            _fake_requires_grad(o)._edge() if d else (None, 0) for o, d in zip(outs, diff)))
        err = tuple(o._with_history(node, i) if d else o
                    for i, (o, d) in enumerate(zip(outs, diff)))
        return err[0] if single else err
    return wrapper


_ONCE_DIFFERENTIABLE_MSG = ("trying to differentiate twice a function that was marked with "
                            "@once_differentiable")


def _fake_requires_grad(t: Tensor) -> Tensor:
    t = t.detach()
    t._requires_grad = True
    return t


class Error(Node):
    """A node whose backward raises ``msg`` (PyTorch's ``Error``): the ``grad_fn`` of
    ``once_differentiable``'s results, one output per result."""

    def __init__(self, msg: str, next_functions: tuple):
        Node.__init__(self)
        self.msg = msg
        self.next_functions = next_functions
        self.num_outputs = len(next_functions)
        self._seq = state.seq
        state.seq += 1

    def apply(self, *grads):
        raise RuntimeError(self.msg)


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
