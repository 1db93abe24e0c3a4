"""The function transforms of ``torch.func``: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``,
``jacrev``, ``jacfwd``, ``hessian`` and ``linearize``. (``vmap`` is autograd/vmap.py;
``functional_call`` and ``stack_module_state`` are nn/_functional_call.py; tritongrad/func.py
gathers them as ``tritongrad.func``.)

Arguments and results are pytrees of Tensors (tuples, lists, dicts: autograd/_pytree.py);
``argnums`` picks the positional arguments to differentiate (an int: that argument's
structure; a tuple: a tuple of them).

Note [Function transforms on the tape]
  functorch wraps tensors once per transform level; tritongrad builds the transforms on its
  one autograd tape instead, as ``autograd.functional`` does:

  - a transform differentiates with respect to fresh *aliases* of the arguments it is asked
    about: ``view_as`` of the argument (a view keeps an outer transform's history and a
    forward-mode tangent), made a leaf that requires grad when the argument does not require
    grad. So the inputs need not require grad, nothing is accumulated into ``.grad``, and a
    tensor ``func`` captures in a closure is a constant of this transform;
  - ``autograd.grad`` records the backward (``create_graph=True``) only when the result may
    be differentiated again: grad mode is on outside and the outputs' history reaches a leaf
    that requires grad other than the transform's own aliases (an outer transform's alias,
    an argument or a captured parameter that requires grad), or a forward-AD level is active
    (its tangents flow through the recorded backward). Otherwise the backward runs on arrays,
    the fast path, which is what a transform at top level, or one inside ``vmap``, takes;
  - results are then *lowered* to the caller: one whose history reaches no leaf but the
    transform's own aliases is detached (keeping its forward-mode tangent), one that reaches
    an outer leaf keeps its history (functorch's unwrapping of a level gives the same).
    Under ``no_grad`` every result is detached.

  This is how ``grad(grad(f))``, ``jacrev(jacrev(f))``, ``jacfwd(jacrev(f))`` (``hessian``)
  and ``vmap(grad(f))`` nest. Forward mode has one level (autograd/forward_ad.py), so a
  forward transform inside another one (``jacfwd(jacfwd(f))``, ``jvp`` of ``jvp``) computes
  its inner products in reverse mode (``jvp`` by the double-backward trick), which gives the
  same numbers and lets the outer tangents flow through.
"""

from __future__ import annotations

import functools
import itertools

from . import forward_ad
from ._pytree import tree_flatten, tree_map, tree_unflatten
from .functional import _autograd_grad, standard_basis
from .grad_mode import enable_grad, is_grad_enabled
from .graph import disable_saved_tensors_hooks
from .node import AccumulateGrad
from .tensor import Tensor
from .vmap import check_randomness_arg, randomness_mode, transform

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "vjp"]

_JVP = "jvp(f, primals, tangents)"
# (the reverse-mode transforms refuse saved-tensor hooks, around them or inside func: PyTorch's
# doesnt_support_saved_tensors_hooks)
_NO_SAVED_HOOKS = ("torch.func.{grad, vjp, jacrev, hessian} don't yet support saved tensor "
                   "hooks. Please open an issue with your use case.")
_VJP = "vjp(f, *primals)"


def _forward_active() -> bool:
    return bool(forward_ad._levels)


# -- argument checks (PyTorch's messages) -------------------------------------------------------

def _wrap_argnum(argnum, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(  # noqa: TRY004 - PyTorch's type
            f"argnum must be int, got: {type(argnum)}")
    if -num_args <= argnum < num_args:
        return argnum % num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _argnums(argnums, num_args: int):
    """``argnums`` checked and made non-negative."""
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    if not isinstance(argnums, tuple):
        raise RuntimeError(  # noqa: TRY004 - PyTorch's type
            f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    wrapped = tuple(_wrap_argnum(a, num_args) for a in argnums)
    if not wrapped:
        raise RuntimeError("argnums must be non-empty")
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {wrapped}")
    return wrapped


def _pick(args: tuple, argnums):
    """The differentiated arguments (all of them: argnums None) and a function putting new
    values in their places."""
    if argnums is None:
        return args, lambda new: new
    idx = _argnums(argnums, len(args))
    if isinstance(idx, int):
        return args[idx], lambda new: args[:idx] + (new,) + args[idx + 1:]
    return (tuple(args[i] for i in idx),
            lambda new: tuple(new[idx.index(i)] if i in idx else a for i, a in enumerate(args)))


def _check_tensors(flat: list, api: str, what: str = "f(*primals)") -> None:
    if not flat or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(  # noqa: TRY004 - PyTorch's type
                f"{api}: expected {what} to return only tensors, got unsupported "
                f"type {type(o)}")


def _check_inputs(flat: list) -> None:
    for x in flat:
        if not isinstance(x, Tensor):
            raise ValueError(  # noqa: TRY004 - PyTorch's type
                f"Thing passed to transform API must be Tensor, got {type(x)}")


def _error_if_complex(api: str, tree, is_input: bool) -> None:
    for idx, x in enumerate(tree_flatten(tree)[0]):
        if isinstance(x, Tensor) and x.dtype.is_complex:
            what = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{api}: Expected all {what} to be real but received complex "
                               f"tensor at flattened input idx: {idx}")


def _tensors_only(tree):
    """``tree`` (an ``aux``), after PyTorch's check that it holds only Tensors."""
    for x in tree_flatten(tree)[0]:
        if not isinstance(x, Tensor):
            raise RuntimeError(  # noqa: TRY004 - PyTorch's type
                f"Expected tensors, got unsupported type {type(x)}")
    return tree


def _split_aux(output, has_aux: bool, api: str):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           f"has_aux is True")
    return output


# -- one transform's aliases, backward and lowering (Note [Function transforms on the tape]) --

_serials = itertools.count()


class _Level:
    """One call of a transform: the aliases it differentiates with respect to, and the
    lowering of its results to the caller.

    Levels are numbered as they begin, and each leaf a level makes carries its number
    (``_func_level``): for a level, an *outer* leaf is one that no level made, or one made
    by a level that began before it (an enclosing transform's variable). Its own leaves, and
    those of the transforms run inside it, are not."""

    def __init__(self) -> None:
        self.outer_grad = is_grad_enabled()
        self.serial = next(_serials)
        self._clean: set = set()  # nodes known to reach no outer leaf

    def leaf(self, t: Tensor) -> Tensor:
        """``t`` (a new tensor) made a leaf of this level."""
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        t.requires_grad_()
        t.__dict__["_func_level"] = self.serial
        return t

    def alias(self, t: Tensor) -> Tensor:
        """A fresh alias of ``t`` to differentiate with respect to (grad mode must be on)."""
        if not t.requires_grad and forward_ad.current_tangent(t) is None:
            # (detached, not a view: func's in-place write on its input is refused as one on
            # a leaf that requires grad, PyTorch's error, not as one on a view of it)
            return self.leaf(t.detach())
        a = t.view_as(t)
        return a if a.requires_grad else self.leaf(a)

    def _outer(self, leaf: Tensor) -> bool:
        made_by = leaf.__dict__.get("_func_level")
        return made_by is None or made_by < self.serial

    def call(self, func, args: tuple, kwargs: dict, argnums):
        """``func`` on ``args`` with the differentiated ones replaced by aliases: (output,
        flat aliases, their spec)."""
        diff, put = _pick(args, argnums)
        flat, spec = tree_flatten(diff)
        _check_inputs(flat)
        flat = [self.alias(t) for t in flat]
        with transform():
            return func(*put(tree_unflatten(flat, spec)), **kwargs), flat, spec

    def reaches_outer(self, tensors) -> bool:
        """Whether the history of any of ``tensors`` reaches an outer leaf that requires
        grad."""
        clean = self._clean
        for t in tensors:
            if not isinstance(t, Tensor) or not t.requires_grad:
                continue
            fn = t.grad_fn
            if fn is None:
                if self._outer(t):
                    return True
                continue
            seen, stack = set(), [fn]
            while stack:
                node = stack.pop()
                key = id(node)
                if key in seen or key in clean:
                    continue
                seen.add(key)
                if type(node) is AccumulateGrad:
                    if self._outer(node.variable):
                        return True
                    continue
                stack.extend(n for n in node._next if n is not None)
            clean |= seen  # (fully explored: nothing below reaches an outer leaf)
        return False

    def needs_graph(self, outputs, cotangents=()) -> bool:
        """Whether the backward must be recorded (Note [Function transforms on the tape])."""
        return _forward_active() or (is_grad_enabled() and (
            self.reaches_outer(outputs) or self.reaches_outer(cotangents)))

    def grads(self, outputs, inputs, grad_outputs=None, *, create_graph: bool,
              retain_graph=None, batch: int = 0, fill: bool = True) -> list:
        """d outputs / d inputs (vector-Jacobian products with ``grad_outputs``; a batch of
        ``batch`` of them when non-zero); zeros (None: ``fill=False``) for an input no output
        depends on."""
        res = _autograd_grad(tuple(outputs), tuple(inputs), grad_outputs,
                             create_graph=create_graph, retain_graph=retain_graph,
                             is_grads_batched=bool(batch))
        if not fill:
            return list(res)
        from .ops.creation import zeros
        lead = (batch,) if batch else ()
        return [zeros(lead + tuple(x.shape), dtype=x.dtype, device=x.device) if g is None
                else g for g, x in zip(res, inputs)]

    def lower(self, tree, outer_grad: bool | None = None):
        """``tree``'s tensors as the caller sees them (Note [Function transforms on the
        tape]); anything else in it is an error, as in PyTorch."""
        outer = self.outer_grad if outer_grad is None else outer_grad

        def one(x):
            if not x.requires_grad or (outer and self.reaches_outer((x,))):
                return x
            tangent = forward_ad.current_tangent(x)
            d = x.detach()
            if tangent is not None:  # (detach drops it; the caller's transform reads it)
                d = forward_ad.make_dual(d, self.lower(tangent, outer))
            return d

        return tree_map(one, _tensors_only(tree))


# -- grad, grad_and_value ------------------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux: bool = False):
    """Returns a function to compute a tuple of the gradient and primal, or forward,
    computation.

    Args:
        func (Callable): A Python function that takes one or more arguments. Must return a
            single-element Tensor. If specified ``has_aux`` equals ``True``, function can
            return a tuple of single-element Tensor and other auxiliary objects:
            ``(output, aux)``.
        argnums (int or Tuple[int]): Specifies arguments to compute gradients with respect
            to. ``argnums`` can be single integer or tuple of integers. Default: 0.
        has_aux (bool): Flag indicating that ``func`` returns a tensor and other auxiliary
            objects: ``(output, aux)``. Default: False.

    Returns:
        Function to compute a tuple of gradients with respect to its inputs and the forward
        computation. By default, the output of the function is a tuple of the gradient
        tensor(s) with respect to the first argument and the primal computation. If
        specified ``has_aux`` equals ``True``, tuple of gradients and tuple of the forward
        computation with output auxiliary objects is returned.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with disable_saved_tensors_hooks(_NO_SAVED_HOOKS):
            return _grad_and_value(func, args, kwargs, argnums, has_aux)

    return wrapper


def _grad_and_value(func, args: tuple, kwargs: dict, argnums, has_aux: bool):
    """One call of ``grad_and_value(func, argnums, has_aux)``."""
    api = "grad_and_value(f)(*args)"
    level = _Level()
    with enable_grad():
        output, flat, spec = level.call(func, args, kwargs, argnums)
        output, aux = _split_aux(output, has_aux, api)
        if not isinstance(output, Tensor):
            raise RuntimeError(  # noqa: TRY004 - PyTorch's type
                f"{api}: Expected f(*args) to return a Tensor, got "
                f"{type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got "
                               f"tensor with {output.dim()} dims. Maybe you wanted to use "
                               f"the vjp or jacrev APIs instead?")
    # (out of enable_grad: needs_graph reads the caller's grad mode)
    grads = level.grads((output,), flat, create_graph=level.needs_graph((output,)))
    grads = level.lower(tree_unflatten(grads, spec))
    if has_aux:
        return grads, (level.lower(output), level.lower(aux))
    return grads, level.lower(output)


def grad(func, argnums=0, has_aux: bool = False):
    """``grad`` operator helps computing gradients of ``func`` with respect to the input(s)
    specified by ``argnums``. This operator can be nested to compute higher-order gradients.

    Args:
        func (Callable): A Python function that takes one or more arguments. Must return a
            single-element Tensor. If specified ``has_aux`` equals ``True``, function can
            return a tuple of single-element Tensor and other auxiliary objects:
            ``(output, aux)``.
        argnums (int or Tuple[int]): Specifies arguments to compute gradients with respect
            to. ``argnums`` can be single integer or tuple of integers. Default: 0.
        has_aux (bool): Flag indicating that ``func`` returns a tensor and other auxiliary
            objects: ``(output, aux)``. Default: False.

    Returns:
        Function to compute gradients with respect to its inputs. By default, the output of
        the function is the gradient tensor(s) with respect to the first argument. If
        specified ``has_aux`` equals ``True``, tuple of gradients and output auxiliary
        objects is returned. If ``argnums`` is a tuple of integers, a tuple of output
        gradients with respect to each ``argnums`` value is returned.

    Example:
        >>> from tritongrad.func import grad
        >>> x = tg.randn([])
        >>> cos_x = grad(lambda x: tg.sin(x))(x)
        >>> neg_sin_x = grad(grad(lambda x: tg.sin(x)))(x)
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


# -- vjp -----------------------------------------------------------------------------------------

class _Recorded:
    """``func`` run on aliases of (some of) its arguments, its outputs kept with their
    history: what ``vjp_fn`` and ``jacrev`` differentiate."""

    def __init__(self, func, args: tuple, kwargs: dict, argnums, has_aux: bool) -> None:
        self.level = level = _Level()
        with enable_grad(), disable_saved_tensors_hooks(_NO_SAVED_HOOKS):
            out, self.inputs, self.in_spec = level.call(func, args, kwargs, argnums)
            out, aux = _split_aux(out, has_aux, _VJP)
            self.outputs, self.out_spec = tree_flatten(out)
            _check_tensors(self.outputs, _VJP)
            for o in self.outputs:
                if not (o.dtype.is_floating_point or o.dtype.is_complex):
                    raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point "
                                       f"or complex Tensors, got Tensor with dtype {o.dtype}")
        self.output = level.lower(out)
        self.aux = level.lower(aux) if has_aux else None

    def vjp(self, cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        flat, spec = tree_flatten(cotangents)
        if spec != self.out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{spec.pprint()}, primal output: {self.out_spec.pprint()}")
        level = self.level
        if create_graph is None:
            create_graph = level.needs_graph(self.outputs, flat)
        grads = level.grads(self.outputs, self.inputs, tuple(flat), create_graph=create_graph,
                            retain_graph=retain_graph)
        return level.lower(tree_unflatten(grads, self.in_spec), outer_grad=create_graph)


def vjp(func, *primals, has_aux: bool = False):
    """Standing for the vector-Jacobian product, returns a tuple containing the results of
    ``func`` applied to ``primals`` and a function that, when given ``cotangents``, computes
    the reverse-mode Jacobian of ``func`` with respect to ``primals`` times ``cotangents``.

    Args:
        func (Callable): A Python function that takes one or more arguments. Must return one
            or more Tensors.
        primals (Tensors): Positional arguments to ``func`` that must all be Tensors. The
            returned function will also be computing the derivative with respect to these
            arguments
        has_aux (bool): Flag indicating that ``func`` returns a ``(output, aux)`` tuple where
            the first element is the output of the function to be differentiated and the
            second element is other auxiliary objects that will not be differentiated.
            Default: False.

    Returns:
        Returns a ``(output, vjp_fn)`` tuple containing the output of ``func`` applied to
        ``primals`` and a function that computes the vjp of ``func`` with respect to all
        ``primals`` using the cotangents passed to the returned function. If
        ``has_aux is True``, then instead returns a ``(output, vjp_fn, aux)`` tuple. The
        returned ``vjp_fn`` function will return a tuple of each VJP. ``vjp_fn(cotangents,
        retain_graph=True, create_graph=None)`` keeps the graph by default, so it can be
        called again.

    Example:
        >>> x = tg.randn([5])
        >>> f = lambda x: x.sin().sum()
        >>> (_, vjpfunc) = tritongrad.func.vjp(f, x)
        >>> vjp = vjpfunc(tg.tensor(1.))[0]
    """
    rec = _Recorded(func, primals, {}, None, has_aux)
    if has_aux:
        return rec.output, rec.vjp, rec.aux
    return rec.output, rec.vjp


# -- jacrev --------------------------------------------------------------------------------------

def _unit_rows(out: Tensor, r0: int, r1: int, start: int) -> Tensor:
    """Rows ``r0:r1`` of the identity over all outputs' elements, the columns of ``out``
    (which begin at ``start``): a (r1 - r0, *out.shape) batch of grad_outputs."""
    from .ops.creation import arange
    rows = arange(r0, r1, device=out.device).view(r1 - r0, 1)
    cols = arange(start, start + out.numel(), device=out.device).view(1, out.numel())
    return rows.eq(cols).to(out.dtype).view((r1 - r0,) + tuple(out.shape))


def _assemble(blocks: list, in_spec, out_spec):
    """``blocks[i][j]`` (output i, input j) as the Jacobian pytree: the outputs' structure,
    each holding the differentiated arguments' structure."""
    return tree_unflatten([tree_unflatten(row, in_spec) for row in blocks], out_spec)


def _jacobian_blocks(rec: _Recorded, chunk_size: int | None) -> list:
    """``rec``'s Jacobian blocks, ``[output i][input j]`` of shape ``out_i.shape +
    in_j.shape``: its rows are vector-Jacobian products with the unit vectors, ``chunk_size``
    of them (all: None) from each batched backward (Note [Batched gradients])."""
    from .ops.creation import zeros
    from .ops.shape import cat
    level, outputs, inputs = rec.level, rec.outputs, rec.inputs
    sizes = [o.numel() for o in outputs]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    total = sum(sizes)
    create_graph = level.needs_graph(outputs)
    step = chunk_size or max(total, 1)
    chunks: list = [[] for _ in inputs]
    with enable_grad():
        for r0 in range(0, total, step):
            r1 = min(total, r0 + step)
            live = [i for i, (s, n) in enumerate(zip(starts, sizes)) if s < r1 and s + n > r0]
            basis = tuple(_unit_rows(outputs[i], r0, r1, starts[i]) for i in live)
            grads = level.grads([outputs[i] for i in live], inputs, basis,
                                create_graph=create_graph, retain_graph=True, batch=r1 - r0)
            for j, g in enumerate(grads):
                chunks[j].append(g)
        rows = [c[0] if len(c) == 1 else cat(c) for c in chunks] if total else None
        blocks = []
        for o, s, n in zip(outputs, starts, sizes):
            blocks.append([zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
                           if rows is None else
                           rows[j][s:s + n].reshape(tuple(o.shape) + tuple(x.shape))
                           for j, x in enumerate(inputs)])
    return level.lower(blocks)


def _jacrev(func, args: tuple, kwargs: dict, argnums, has_aux: bool, chunk_size):
    _error_if_complex("jacrev", args, is_input=True)
    rec = _Recorded(func, args, kwargs, argnums, has_aux)
    _error_if_complex("jacrev", rec.outputs, is_input=False)
    jac = _assemble(_jacobian_blocks(rec, chunk_size), rec.in_spec, rec.out_spec)
    return (jac, rec.aux) if has_aux else jac


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False):
    """Computes the Jacobian of ``func`` with respect to the arg(s) at index ``argnum`` using
    reverse mode autodiff.

    Args:
        func (function): A Python function that takes one or more arguments, one of which
            must be a Tensor, and returns one or more Tensors
        argnums (int or Tuple[int]): Optional, integer or tuple of integers, saying which
            arguments to get the Jacobian with respect to. Default: 0.
        has_aux (bool): Flag indicating that ``func`` returns a ``(output, aux)`` tuple where
            the first element is the output of the function to be differentiated and the
            second element is auxiliary objects that will not be differentiated.
            Default: False.
        chunk_size (None or int): If None (default), use the maximum chunk size (equivalent
            to doing a single vmap over vjp to compute the jacobian). If 1, then compute the
            jacobian row-by-row with a for-loop. If not None, then compute the jacobian
            :attr:`chunk_size` rows at a time (equivalent to doing multiple vmap over vjp).

    Returns:
        Returns a function that takes in the same inputs as ``func`` and returns the Jacobian
        of ``func`` with respect to the arg(s) at ``argnums``. If ``has_aux is True``, then
        the returned function instead returns a ``(jacobian, aux)`` tuple where ``jacobian``
        is the Jacobian and ``aux`` is auxiliary objects returned by ``func``.

    The rows come from ``autograd.grad(..., is_grads_batched=True)`` with the unit vectors
    as the batch of grad_outputs (each node's rule runs once per chunk of rows).

    Example:
        >>> from tritongrad.func import jacrev
        >>> x = tg.randn(5)
        >>> jacobian = jacrev(tg.sin)(x)
        >>> expected = tg.diag(tg.cos(x))
        >>> assert tg.allclose(jacobian, expected)
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _jacrev(func, args, kwargs, argnums, has_aux, chunk_size)

    return wrapper


# -- jvp, jacfwd ---------------------------------------------------------------------------------

def _check_tensor_list(flat: list, argname: str) -> None:
    if not flat:
        raise RuntimeError(f"{_JVP}: Expected {argname} to contain at least one Tensor.")
    for x in flat:
        if not isinstance(x, Tensor):
            raise RuntimeError(  # noqa: TRY004 - PyTorch's type
                f"{_JVP}: Expected {argname} to only contain Tensors, got "
                f"{type(x)}")


def _independent(strict: bool) -> None:
    if strict:
        raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                           "independent of the inputs. This is not allowed with strict=True.")


def _jvp_double_backward(func, primals: tuple, flat_t: list, strict: bool, has_aux: bool):
    """``jvp`` inside an active forward-AD level (nested forward mode): ``J t`` is the
    gradient of ``u -> J^T u`` (linear in ``u``, a dummy of this level) in direction ``t``."""
    from .ops.creation import zeros_like
    level = _Level()
    with enable_grad():
        out, inputs, _ = level.call(func, primals, {}, None)
        out, aux = _split_aux(out, has_aux, _JVP)
        flat_out, out_spec = tree_flatten(out)
        _check_tensors(flat_out, _JVP)
        diff = [o for o in flat_out if o.requires_grad]
        dummies = [level.leaf(zeros_like(o)) for o in diff]
        back = level.grads(diff, inputs, tuple(dummies), create_graph=True, fill=False)
        pairs = [(g, t) for g, t in zip(back, flat_t) if g is not None]
        jt = iter(level.grads([g for g, _ in pairs], dummies, tuple(t for _, t in pairs),
                              create_graph=True, fill=False) if pairs else [None] * len(diff))
        tangents = []
        for o in flat_out:
            t = next(jt) if o.requires_grad else None
            if t is None:
                _independent(strict)
                t = zeros_like(o)
            tangents.append(t)
    result = (level.lower(out), level.lower(tree_unflatten(tangents, out_spec)))
    return result + (level.lower(aux),) if has_aux else result


def _jvp(func, primals, tangents, strict: bool, has_aux: bool):
    if not isinstance(primals, tuple):
        raise RuntimeError(  # noqa: TRY004 - PyTorch's type
            f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
            f"call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {p_spec} and "
                           f"tangents with structure {t_spec}")
    _check_tensor_list(flat_p, "primals")
    _check_tensor_list(flat_t, "tangents")
    # (a tangent of another floating dtype is taken in the primal's, as functorch does)
    flat_t = [t.to(p.dtype) if t.dtype != p.dtype and p.dtype.is_floating_point
              and t.dtype.is_floating_point else t for p, t in zip(flat_p, flat_t)]
    if _forward_active():
        return _jvp_double_backward(func, primals, flat_t, strict, has_aux)
    from .ops.creation import zeros_like
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        with transform():
            out = func(*tree_unflatten(duals, p_spec))
        out, aux = _split_aux(out, has_aux, _JVP)
        flat_out, out_spec = tree_flatten(out)
        _check_tensors(flat_out, _JVP)
        tangents_out = []
        for o in flat_out:
            t = forward_ad.unpack_dual(o).tangent
            if t is None:
                _independent(strict)
                t = zeros_like(o)
            tangents_out.append(t)
    # (the outputs themselves: out of the level they are plain tensors again)
    result = (out, tree_unflatten(tangents_out, out_spec))
    return result + (_tensors_only(aux),) if has_aux else result


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """Standing for the Jacobian-vector product, returns a tuple containing the output of
    ``func(*primals)`` and the "Jacobian of ``func`` evaluated at ``primals``" times
    ``tangents``. This is also known as forward-mode autodiff.

    Args:
        func (function): A Python function that takes one or more arguments, one of which
            must be a Tensor, and returns one or more Tensors
        primals (Tensors): Positional arguments to ``func`` that must all be Tensors. The
            returned function will also be computing the derivative with respect to these
            arguments
        tangents (Tensors): The "vector" for which Jacobian-vector-product is computed. Must
            be the same structure and sizes as the inputs to ``func``.
        has_aux (bool): Flag indicating that ``func`` returns a ``(output, aux)`` tuple where
            the first element is the output of the function to be differentiated and the
            second element is other auxiliary objects that will not be differentiated.
            Default: False.

    Returns:
        Returns a ``(output, jvp_out)`` tuple containing the output of ``func`` evaluated at
        ``primals`` and the Jacobian-vector product. If ``has_aux is True``, then instead
        returns a ``(output, jvp_out, aux)`` tuple.

    Runs ``func`` once on dual tensors (autograd.forward_ad); inside another forward
    transform, by the double-backward trick (Note [Function transforms on the tape]).

    Example:
        >>> from tritongrad.func import jvp
        >>> x = tg.randn([])
        >>> f = lambda x: x * tg.tensor([1.0, 2.0, 3])
        >>> value, grad = jvp(f, (x,), (tg.tensor(1.0),))
        >>> assert tg.allclose(grad, tg.tensor([1.0, 2, 3]))
    """
    return _jvp(func, primals, tangents, strict, has_aux)


def _jacfwd_batched(func, args: tuple, kwargs: dict, argnums, has_aux: bool, randomness: str):
    """The Jacobian from ONE forward pass whose tangents are a batch, the standard basis
    over all differentiated inputs' elements (Note [Batched forward AD]); None when the
    outputs require grad (batched tangents record no history: the caller falls back)."""
    from .batched import batch, unbatch
    from .ops.creation import zeros
    diff, put = _pick(args, argnums)
    flat, in_spec = tree_flatten(diff)
    _check_inputs(flat)
    sizes = [x.numel() for x in flat]
    total = sum(sizes)
    basis = standard_basis(flat)
    with forward_ad.dual_level(), randomness_mode(randomness):
        duals = ([forward_ad.make_dual(x, batch(b)) for x, b in zip(flat, basis)] if total
                 else flat)
        with transform():
            out = func(*put(tree_unflatten(duals, in_spec)), **kwargs)
        out, aux = _split_aux(out, has_aux, _JVP)
        flat_out, out_spec = tree_flatten(out)
        _check_tensors(flat_out, _JVP)
        tangents = [forward_ad.unpack_dual(o).tangent for o in flat_out]
    if is_grad_enabled() and any(o.requires_grad for o in flat_out):
        return None
    blocks = []
    for o, t in zip(flat_out, tangents):
        cols = None if t is None or not total else unbatch(t, total)
        row, start = [], 0
        for x, n in zip(flat, sizes):
            shape = tuple(o.shape) + tuple(x.shape)
            if cols is None:
                row.append(zeros(shape, dtype=o.dtype, device=o.device))
            else:  # (column block n x out: its first dim moved last)
                row.append(cols[start:start + n].movedim(0, -1).reshape(shape))
            start += n
        blocks.append(row)
    jac = _assemble(blocks, in_spec, out_spec)
    return (jac, _tensors_only(aux)) if has_aux else jac


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """Computes the Jacobian of ``func`` with respect to the arg(s) at index ``argnum`` using
    forward-mode autodiff.

    Args:
        func (function): A Python function that takes one or more arguments, one of which
            must be a Tensor, and returns one or more Tensors
        argnums (int or Tuple[int]): Optional, integer or tuple of integers, saying which
            arguments to get the Jacobian with respect to. Default: 0.
        has_aux (bool): Flag indicating that ``func`` returns a ``(output, aux)`` tuple where
            the first element is the output of the function to be differentiated and the
            second element is auxiliary objects that will not be differentiated.
            Default: False.
        randomness (str): Flag indicating what type of randomness to use. See :func:`vmap`
            for more detail. Allowed: "different", "same", "error". Default: "error"

    Returns:
        Returns a function that takes in the same inputs as ``func`` and returns the Jacobian
        of ``func`` with respect to the arg(s) at ``argnums``. If ``has_aux is True``, then
        the returned function instead returns a ``(jacobian, aux)`` tuple where ``jacobian``
        is the Jacobian and ``aux`` is auxiliary objects returned by ``func``.

    ``func`` runs once, on dual tensors whose tangents are a batch (the standard basis), so
    ``"same"`` and ``"different"`` both draw once. Nested in another forward transform, or
    when the Jacobian must carry history (grad mode on and the outputs require grad), it is
    computed in reverse mode instead (Note [Function transforms on the tape]): the same
    numbers.

    Example:
        >>> from tritongrad.func import jacfwd
        >>> x = tg.randn(5)
        >>> jacobian = jacfwd(tg.sin)(x)
        >>> expected = tg.diag(tg.cos(x))
        >>> assert tg.allclose(jacobian, expected)
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        check_randomness_arg(randomness)
        _error_if_complex("jacfwd", args, is_input=True)
        if not _forward_active() and not (is_grad_enabled() and any(
                isinstance(x, Tensor) and x.requires_grad for x in tree_flatten(args)[0])):
            jac = _jacfwd_batched(func, args, kwargs, argnums, has_aux, randomness)
            if jac is not None:
                return jac
        return _jacrev(func, args, kwargs, argnums, has_aux, None)

    return wrapper


def hessian(func, argnums=0):
    """Computes the Hessian of ``func`` with respect to the arg(s) at index ``argnum`` via a
    forward-over-reverse strategy.

    The forward-over-reverse strategy (composing ``jacfwd(jacrev(func))``) is a good default
    for good performance. It is possible to compute Hessians through other compositions of
    :func:`jacfwd` and :func:`jacrev` like ``jacfwd(jacfwd(func))`` or
    ``jacrev(jacrev(func))``.

    Args:
        func (function): A Python function that takes one or more arguments, one of which
            must be a Tensor, and returns one or more Tensors
        argnums (int or Tuple[int]): Optional, integer or tuple of integers, saying which
            arguments to get the Hessian with respect to. Default: 0.

    Returns:
        Returns a function that takes in the same inputs as ``func`` and returns the Hessian
        of ``func`` with respect to the arg(s) at ``argnums``.

    Example:
        >>> from tritongrad.func import hessian
        >>> x = tg.randn(5)
        >>> hess = hessian(lambda x: x.sin().sum())(x)  # jacfwd(jacrev(f))(x)
        >>> assert tg.allclose(hess, tg.diag(-x.sin()))
    """
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """Returns the value of ``func`` at ``primals`` and linear approximation at
    ``primals``.

    Args:
        func (Callable): A Python function that takes one or more arguments.
        primals (Tensor): Positional arguments to ``func``. All must be Tensors or pytrees
            of them.

    Returns:
        Returns a ``(output, jvp_fn)`` tuple containing the output of ``func`` applied to
        ``primals`` and a function that computes the jvp of ``func`` evaluated at
        ``primals``.

    PyTorch traces ``func`` once into a graph of the jvp; tritongrad's ``jvp_fn`` runs
    ``func`` again in forward mode (``jvp``) on each call, with the tangents checked as
    PyTorch checks them.

    Example:
        >>> from tritongrad.func import linearize
        >>> output, jvp_fn = linearize(lambda x: x.sin(), tg.zeros(3, 3))
        >>> jvp_fn(tg.ones(3, 3))
        tensor([[1., 1., 1.],
                [1., 1., 1.],
                [1., 1., 1.]])
    """
    with transform():
        output = func(*primals)
    flat_p, p_spec = tree_flatten(primals)
    meta = [(p.shape, p.device, p.dtype) for p in flat_p]

    def jvp_fn(*tangents):
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as "
                               f"the primals {p_spec}")
        for idx, (t, (shape, device, dtype)) in enumerate(zip(flat_t, meta)):
            for what, got, want in (("shape", t.shape, shape),
                                    ("device", t.device, device), ("dtype", t.dtype, dtype)):
                if got != want:
                    raise RuntimeError(f"tangent:{idx} with {what} {got} in flattened pytree "
                                       f"doesn't match the {what} {want} of the corresponding "
                                       f"primal.")
        return _jvp(func, primals, tangents, False, False)[1]

    return output, jvp_fn
