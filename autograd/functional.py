"""The functional higher-level autograd API: ``jacobian``, ``hessian``, ``vjp``, ``jvp``,
``vhp`` and ``hvp``, as in ``torch.autograd.functional``.

Each function takes a user function of Tensors and a Tensor or tuple of Tensors, runs the
function on fresh copies of the inputs that require grad, and differentiates with
``autograd.grad``. Results mirror the shape of the arguments: a single Tensor for a single
input (or output), a tuple for a tuple, a tuple of tuples where both are tuples.

* ``jvp`` runs the function once on dual tensors (forward-mode AD, autograd/forward_ad.py).
* ``hvp`` uses the double-backward trick: the backward of a function is linear in its
  ``grad_outputs``, so differentiating ``u -> J^T u`` with respect to ``u`` (a dummy that
  requires grad) in the direction ``v`` gives ``J v``.
* ``jacobian`` takes one backward per output element (one Jacobian row); with
  ``vectorize=True``, ONE batched backward for all rows (``grad(..., is_grads_batched=True)``
  with the identity as the batch of grad_outputs: each node's rule runs once for the whole
  batch, Note [Batched gradients] in autograd/batched.py). With ``strategy="forward-mode"``
  (which PyTorch allows only with ``vectorize=True``) it takes ONE forward pass on dual
  tensors whose tangents are a batch, the standard basis (Note [Batched forward AD]): entry
  r of each output's tangent is column r.
* ``hessian`` is the jacobian of the gradient; ``outer_jacobian_strategy="forward-mode"``
  takes that outer jacobian in forward mode (forward-over-reverse: the tangents flow through
  the backward pass, recorded with create_graph).

Errors and their messages are PyTorch's, so that code written against
``torch.autograd.functional`` fails (or not) in the same places.
"""

from __future__ import annotations

from .engine import grad as _grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from .tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


class _StrategyError(ValueError, AssertionError):
    """PyTorch asserts that ``strategy`` is known (an AssertionError); tritongrad raised a
    ValueError before, which code written against it may catch: this is both."""


# The arguments every function here documents alike (PyTorch's words); ``_shared_doc`` puts
# them into each docstring's ``{func}``/``{scalar_func}``/``{create_graph}``/... fields.
_SHARED_ARGS = {
    "func": """\
        func (function): a Python function that takes Tensor inputs and returns a tuple of
            Tensors or a Tensor.
        inputs (tuple of Tensors or Tensor): inputs to the function ``func``.
""",
    "scalar_func": """\
        func (function): a Python function that takes Tensor inputs and returns a Tensor with
            a single element.
        inputs (tuple of Tensors or Tensor): inputs to the function ``func``.
""",
    "create_graph": """\
        create_graph (bool, optional): If ``True``, both the output and result will be
            computed in a differentiable way. Note that when ``strict`` is ``False``, the
            result can not require gradients or be disconnected from the inputs. Defaults to
            ``False``.
""",
    "create_graph_manner": """\
        create_graph (bool, optional): If ``True``, the {Name} will be computed in a
            differentiable manner. Note that when ``strict`` is ``False``, the result can not
            require gradients or be disconnected from the inputs. Defaults to ``False``.
""",
    "v": """\
        v (tuple of Tensors or Tensor): The vector for which the {product} product is
            computed. Must be the same size as the {v_side} of ``func``. This argument is
            optional when the {v_side} of ``func`` contains a single element and (if it is
            not provided) will be set as a Tensor containing a single ``1``.
""",
    "returns": """\
        output (tuple): tuple with ``func_output`` (tuple of Tensors or Tensor), the output
        of ``func(inputs)``, and ``{name}`` (tuple of Tensors or Tensor), the result of the dot
        product with the same shape as the {result_side}.
""",
    "strict": """\
        strict (bool, optional): If ``True``, an error will be raised when we detect that
            there exists an input such that all the outputs are independent of it. If
            ``False``, we return a Tensor of zeros as the {name} for said inputs, which is
            the expected mathematical value. Defaults to ``False``.
""",
}


def _shared_doc(product: str = "", v_side: str = "", result_side: str = "",
                scalar: bool = False):
    """Fills a function's docstring fields from ``_SHARED_ARGS``, named for the function (a
    product's ``v`` and result described by ``product``, ``v_side`` and ``result_side``;
    ``scalar``: ``func`` returns a single element)."""
    def fill(fn):
        words = {"name": fn.__name__, "Name": fn.__name__.capitalize(), "product": product,
                 "v_side": v_side, "result_side": result_side}
        fields = {k: v.format(**words) for k, v in _SHARED_ARGS.items()}
        fields["product_sections"] = "".join((
            "    Args:\n", fields["scalar_func" if scalar else "func"], fields["v"],
            fields["create_graph"], fields["strict"], "\n    Returns:\n", fields["returns"]))
        fn.__doc__ = fn.__doc__.format(**fields)
        return fn
    return fill


# -- argument handling (PyTorch's helpers, same names, same messages) ---------------------------

def _as_tuple(inp, arg_name: str, fn_name: str) -> tuple:
    """(was it a tuple, the Tensors as a tuple); anything but Tensors is a TypeError."""
    is_inp_tuple = isinstance(inp, tuple)
    if not is_inp_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = (f"the value at index {i} has type {type(el)}" if is_inp_tuple
                     else f"the given {arg_name} has type {type(el)}")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where}.")
    return is_inp_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undoes ``_as_tuple``: ``to_unpack`` is one flag, or (outer, inner) for nested tuples."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    # Always new Tensor objects, so that the inputs we differentiate with respect to are told
    # apart from the same tensors captured by the user's function (pytorch/pytorch#32576).
    # With create_graph, a view keeps the way back to the caller's tensor.
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view(inp.shape))
        else:
            res.append(inp.detach().requires_grad_(bool(need_graph)))
    return tuple(res)


def _grad_postprocess(inputs: tuple, create_graph: bool, *more: tuple):
    # Without create_graph nothing we return may carry history. (With ``more``, each tuple
    # is processed alike and all are returned.)
    if more:
        return tuple(_grad_postprocess(t, create_graph) for t in (inputs, *more))
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


def _check_requires_grad(inputs: tuple, input_type: str, strict: bool) -> None:
    """In strict mode, raises when ``inputs`` (of kind ``input_type``) show an independence."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:  # only grad_inputs can hold None
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(f"The hessian of the user-provided function with respect to input "
                               f"{i} is independent of the input. This is not allowed in strict "
                               f"mode. You should ensure that your function is thrice "
                               f"differentiable and that the hessian depends on the inputs.")
        if input_type == "jacobian":
            raise RuntimeError(f"While computing the hessian, found that the jacobian of the "
                               f"user-provided function with respect to input {i} is independent "
                               f"of the input. This is not allowed in strict mode. You should "
                               f"ensure that your function is twice differentiable and that the "
                               f"jacobian depends on the inputs (this would be violated by a "
                               f"linear function for example).")
        if input_type == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the "
                               f"inputs of the user-provided function. This is not allowed in "
                               f"strict mode.")
        raise RuntimeError(f"Output {i} of the user-provided function does not require "
                           f"gradients. The outputs must be computed in a differentiable manner "
                           f"from the input when running in strict mode.")


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph=False,
                   retain_graph=None, is_grads_batched=False) -> tuple:
    """``autograd.grad`` that skips outputs that are None or need no grad (None for every
    input when no output is left) and returns None for unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    new_outputs, new_grad_outputs = zip(*pairs)
    return _grad(new_outputs, inputs, new_grad_outputs, allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph,
                 is_grads_batched=is_grads_batched)


_STAGE_ERRORS = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                   stage: str) -> tuple:
    """Replaces None gradients by zeros shaped like ``refs`` (or raises, in strict mode)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STAGE_ERRORS[stage].format(i=i))
            from .ops.creation import zeros_like
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               f"create_graph=True.")
        res.append(g)
    return tuple(res)


def _prepare_v(v, reference: tuple, is_reference_tuple: bool, fn_name: str,
               create_graph: bool) -> tuple:
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, reference, is_reference_tuple)
    return v


def _call(func, inputs, create_graph: bool, strict: bool, fn_name: str) -> tuple:
    """Runs ``func`` on fresh copies of ``inputs`` (grad enabled by the caller): whether the
    inputs were a tuple, the copies, whether the outputs were a tuple, the outputs."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_inputs_tuple, inputs, is_outputs_tuple, outputs


def _check_single_element_input(inputs: tuple) -> None:
    if len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")


def _check_scalar_output(outputs: tuple, is_outputs_tuple: bool, fn_name: str) -> None:
    if is_outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           f"contain a single element")


# -- vjp, jvp -----------------------------------------------------------------------------------

@_shared_doc(product="vector Jacobian", v_side="output", result_side="inputs")
def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Function that computes the dot product between a vector ``v`` and the Jacobian of the
    given function at the point given by the inputs.

{product_sections}
    Example:
        >>> import tritongrad as torch
        >>> from tritongrad.autograd.functional import vjp
        >>> def exp_reducer(x):
        ...     return x.exp().sum(dim=1)
        >>> inputs = torch.ones(2, 2)
        >>> vjp(exp_reducer, inputs, torch.ones(2))
        (tensor([5.4366, 5.4366]), tensor([[2.7183, 2.7183],
                [2.7183, 2.7183]]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs = _call(func, inputs, create_graph,
                                                                   strict, "vjp")

        if v is not None:
            v = _prepare_v(v, outputs, is_outputs_tuple, "vjp", create_graph)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")

    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")

    outputs, result = _grad_postprocess(outputs, create_graph, result)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


@_shared_doc(product="Jacobian vector", v_side="input", result_side="output")
def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Function that computes the dot product between the Jacobian of the given function at
    the point given by the inputs and a vector ``v``.

{product_sections}
    Note:
        Computed in forward mode (``autograd.forward_ad``): one pass of ``func`` on dual
        tensors. Every op on the path must have a forward-mode rule (most built-in ops do; a
        custom ``Function`` needs ``jvp``). With ``strict=True`` one backward also checks that
        every input is used.

    Example:
        >>> import tritongrad as torch
        >>> from tritongrad.autograd.functional import jvp
        >>> def adder(x, y):
        ...     return 2 * x + 3 * y
        >>> inputs = (torch.ones(2), torch.ones(2))
        >>> v = (torch.ones(2), torch.ones(2))
        >>> jvp(adder, inputs, v)
        (tensor([5., 5.]), tensor([5., 5.]))
    """
    from . import forward_ad
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)

        if v is not None:
            v = _prepare_v(v, inputs, is_inputs_tuple, "jvp", create_graph)
        else:
            _check_single_element_input(inputs)
            from .ops.creation import ones_like
            v = (ones_like(inputs[0]),)

        with forward_ad.dual_level():
            outputs = func(*[forward_ad.make_dual(i, t) for i, t in zip(inputs, v)])
            is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided "
                                                  "function", "jvp")
            _check_requires_grad(outputs, "outputs", strict=strict)
            tangents = tuple(forward_ad.unpack_dual(out).tangent for out in outputs)
        # (the outputs themselves, not unpack_dual's primal views: out of the level they are
        # plain tensors again, with func's own history)
        if strict:  # every input must reach an output (PyTorch's double-backward check)
            from .ops.creation import zeros_like
            used = _autograd_grad(outputs, inputs, tuple(zeros_like(o) for o in outputs),
                                  retain_graph=True)
            for i, g in enumerate(used):
                if g is None:
                    raise RuntimeError(_STAGE_ERRORS["back"].format(i=i))

    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        result = _fill_in_zeros(tangents, outputs, strict, create_graph, "back_trick")

    outputs, result = _grad_postprocess(outputs, create_graph, result)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_outputs_tuple))


# -- jacobian, hessian --------------------------------------------------------------------------

def _unit_grad_output(out: Tensor, j: int) -> Tensor:
    """A fresh tensor shaped like ``out`` with a 1 at flat (row-major) index ``j``."""
    from .ops.creation import arange
    # (view before eq: the result owns its memory, as a tangent handed to make_dual must)
    return arange(out.numel(), device=out.device).view(out.shape).eq(j).to(out.dtype)


def _stack_rows(rows: list, out_shape, ref: Tensor) -> Tensor:
    """Tensor of shape ``out_shape + ref.shape`` whose row ``j`` (over the flattened
    ``out_shape``) is ``rows[j]``; differentiable through the rows when grad mode is on.

    The rows are copied into a new row-major tensor rather than reshaped or viewed: a row
    may have any layout (gradients follow their input's), and copy_ accepts them all."""
    from .ops.creation import zeros
    shape = tuple(out_shape) + tuple(ref.shape)
    if len(rows) == 1:
        return zeros(shape, dtype=ref.dtype, device=ref.device).copy_(rows[0])
    res = zeros((len(rows),) + tuple(ref.shape), dtype=ref.dtype, device=ref.device)
    for j, row in enumerate(rows):
        res[j:j + 1].copy_(row)  # the row broadcasts into a 1-long slice, 0-d refs included
    return res.view(shape)


def standard_basis(tensors) -> list:
    """Per tensor, its block of the standard basis over all ``tensors``' elements together:
    (total, *shape) with ones where row r is the tensor's own element r - start, so that a
    batch of them as tangents gives column r of a Jacobian in entry r."""
    from .ops.creation import eye, zeros
    sizes = [t.numel() for t in tensors]
    total = sum(sizes)
    basis, start = [], 0
    for t, n in zip(tensors, sizes):
        b = zeros((total, n), dtype=t.dtype, device=t.device)
        if n:
            b[start:start + n] = eye(n, dtype=t.dtype, device=t.device)
        basis.append(b.view((total,) + tuple(t.shape)))
        start += n
    return basis


def _jacfwd(func, inputs, strict: bool, vectorize: bool):
    """The Jacobian in forward mode: ONE pass of ``func`` on dual tensors whose tangents are a
    batch (Note [Batched forward AD], autograd/batched.py): the standard basis over all
    inputs' elements together, each input's tangent its block of rows, so that entry r of
    each output's tangent is column r of the Jacobian (PyTorch's vmap over jvp)."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    # (PyTorch's order of checks: strict, then the inputs' types, then vectorize)
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian is only implemented for `vectorize=True`.")
    from . import forward_ad
    from .batched import batch, unbatch
    from .ops.creation import zeros
    for inp in inputs:  # (make_dual's ValueError, as PyTorch's forward mode raises it)
        if not (inp.dtype.is_floating_point or inp.dtype.is_complex):
            raise ValueError(f"Expected primal to be floating point or complex, but got: "
                             f"{inp.dtype}")
    # The inputs require grad so that a function differentiating itself (hessian's jac_func:
    # forward-over-reverse) keeps their duals in its graph by a view, not a detach, which
    # would drop their tangents; the result is detached at the end.
    inputs = _grad_preprocess(inputs, create_graph=False, need_graph=True)
    tangents = standard_basis(inputs)
    sizes = [inp.numel() for inp in inputs]
    total = sum(sizes)
    with forward_ad.dual_level():
        if total:
            args = [forward_ad.make_dual(inp, batch(t)) for inp, t in zip(inputs, tangents)]
        else:  # (no element: an empty batch of tangents is none)
            args = list(inputs)
        # ("The outputs given to ...": PyTorch's words on this path)
        is_outputs_tuple, outs = _as_tuple(func(*args), "outputs", "jacobian")
        unpacked = [forward_ad.unpack_dual(o) for o in outs]
    # Lists, not tuples, where the result is a sequence: PyTorch's forward-mode jacobian (and so
    # a forward-over-reverse hessian) returns lists; code may compare with ==.
    result = []
    for u in unpacked:
        out = u.primal
        cols = None if u.tangent is None or not total else unbatch(u.tangent, total)
        blocks, start = [], 0
        for inp, n in zip(inputs, sizes):
            shape = tuple(out.shape) + tuple(inp.shape)
            if cols is None or not n or not out.numel():
                # (the output's zero tangent broadcast over the input's elements, as
                # PyTorch's vmap gives it: stride 0 there, no memory per input element)
                zero = zeros(out.shape, dtype=out.dtype, device=out.device)
                blocks.append(zero.reshape(tuple(out.shape) + (1,) * inp.ndim).expand(shape))
            else:
                block = cols[start:start + n].reshape(n, out.numel())
                blocks.append(block.t().reshape(shape))
            start += n
        result.append([b.detach() for b in blocks])
    return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def _jacrev_vectorized(outputs: tuple, inputs: tuple, is_outputs_tuple: bool,
                       is_inputs_tuple: bool, create_graph: bool):
    """Every row of the Jacobian from ONE batched backward (Note [Batched gradients]): the
    batch is the identity over all outputs' elements together, each output's grad_output
    its block of columns; row r of each input's result is the vjp with unit vector r."""
    from .ops.creation import zeros
    sizes = [out.numel() for out in outputs]
    total = sum(sizes)
    grad_outputs = standard_basis(outputs)
    grads = (None,) * len(inputs)
    if total:
        grads = _autograd_grad(outputs, inputs, tuple(grad_outputs), create_graph=create_graph,
                               retain_graph=True, is_grads_batched=True)
    result, start = [], 0
    for out, n in zip(outputs, sizes):
        blocks = []
        for g, inp in zip(grads, inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            if g is None:  # (one row of zeros expanded, as PyTorch's: no memory per row)
                blocks.append(zeros(inp.shape, dtype=inp.dtype, device=inp.device).expand(shape))
            else:
                blocks.append(g[start:start + n].reshape(shape))
        result.append(tuple(blocks))
        start += n
    result = _grad_postprocess(tuple(result), create_graph)
    return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


@_shared_doc()
def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """Function that computes the Jacobian of a given function.

    Args:
{func}{create_graph_manner}{strict}        vectorize (bool, optional): compute all rows of the Jacobian with a single
            ``autograd.grad`` call with ``is_grads_batched=True`` (each node's rule runs once
            on the batch of all rows) instead of one call per row. ``strict=True`` is refused
            together with it, as in PyTorch. Defaults to ``False``.
        strategy (str, optional): Set to ``"forward-mode"`` or ``"reverse-mode"`` to
            determine whether the Jacobian will be computed with forward or reverse mode AD.
            Currently, ``"forward-mode"`` requires ``vectorized=True`` (one forward pass
            with a batch of tangents, one per input element). Defaults to
            ``"reverse-mode"``. If ``func`` has more outputs than inputs, ``"forward-mode"``
            tends to be more performant. Otherwise, prefer to use ``"reverse-mode"``.

    Returns:
        Jacobian (Tensor or nested tuple of Tensors): if there is a single input and output,
        this will be a single Tensor containing the Jacobian for the linearized inputs and
        output. If one of the two is a tuple, then the Jacobian will be a tuple of Tensors.
        If both of them are tuples, then the Jacobian will be a tuple of tuple of Tensors
        where ``Jacobian[i][j]`` will contain the Jacobian of the ``i``\\ th output and
        ``j``\\ th input and will have as size the concatenation of the sizes of the
        corresponding output and the corresponding input and will have same dtype and device
        as the corresponding input. With ``strategy="forward-mode"`` the tuples are lists,
        as PyTorch's.

    Example:
        >>> import tritongrad as torch
        >>> from tritongrad.autograd.functional import jacobian
        >>> def exp_reducer(x):
        ...     return x.exp().sum(dim=1)
        >>> jacobian(exp_reducer, torch.zeros(2, 2))
        tensor([[[1., 1.],
                 [0., 0.]],
        <BLANKLINE>
                [[0., 0.],
                 [1., 1.]]])
    """
    if strategy not in _STRATEGIES:
        raise _StrategyError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, "forward-mode" '
                             'tends to be more performant. Otherwise, prefer to use '
                             '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` '
                                      'and `strategy="forward-mode"` are not supported together '
                                      '(yet). Please either set `create_graph=False` or '
                                      '`strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)

    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs = _call(func, inputs, create_graph,
                                                                   strict, "jacobian")
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")

        if vectorize:
            return _jacrev_vectorized(outputs, inputs, is_outputs_tuple, is_inputs_tuple,
                                      create_graph)

        jacobian_rows = []
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)  # rows[k][j]: row j of d out / d inputs[k]
            for j in range(out.nelement()):
                # Row j is the vjp with the j-th unit vector (PyTorch differentiates
                # out.reshape(-1)[j], the same quantity).
                vj = _autograd_grad((out,), inputs, (_unit_grad_output(out, j),),
                                    retain_graph=True, create_graph=create_graph)
                for k, (vj_el, inp_el) in enumerate(zip(vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is "
                                               f"independent of input {i}. This is not allowed "
                                               f"in strict mode when create_graph=True.")
                        rows[k].append(vj_el)
                        continue
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {k}. This is not allowed "
                                           f"in strict mode.")
                    from .ops.creation import zeros_like
                    rows[k].append(zeros_like(inp_el))
            with set_grad_enabled(bool(create_graph)):
                jacobian_rows.append(tuple(_stack_rows(r, out.shape, inp)
                                           for r, inp in zip(rows, inputs)))

        result = _grad_postprocess(tuple(jacobian_rows), create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


@_shared_doc()
def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """Function that computes the Hessian of a given scalar function.

    Args:
{scalar_func}{create_graph_manner}{strict}        vectorize (bool, optional): passed to the outer ``jacobian``: all rows of the
            Hessian from one batched backward (see ``jacobian``). Defaults to ``False``.
        outer_jacobian_strategy (str, optional): The Hessian is computed by computing the
            Jacobian of a Jacobian. The inner Jacobian is always computed in reverse-mode AD.
            Setting strategy to ``"forward-mode"`` or ``"reverse-mode"`` determines whether
            the outer Jacobian will be computed with forward or reverse mode AD. Currently,
            computing the outer Jacobian in ``"forward-mode"`` requires ``vectorized=True``.
            Defaults to ``"reverse-mode"``.

    Returns:
        Hessian (Tensor or a tuple of tuple of Tensors): if there is a single input, this
        will be a single Tensor containing the Hessian for the input. If it is a tuple, then
        the Hessian will be a tuple of tuples where ``Hessian[i][j]`` will contain the
        Hessian of the ``i``\\ th input and ``j``\\ th input with size the sum of the size of
        the ``i``\\ th input plus the size of the ``j``\\ th input. ``Hessian[i][j]`` will
        have the same dtype and device as the corresponding ``i``\\ th input.

    Example:
        >>> import tritongrad as torch
        >>> from tritongrad.autograd.functional import hessian
        >>> def pow_reducer(x):
        ...     return x.pow(3).sum()
        >>> hessian(pow_reducer, torch.ones(2))
        tensor([[6., 0.],
                [0., 6.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise _StrategyError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        _check_scalar_output(t_out, is_out_tuple, "hessian")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


# -- vhp, hvp -----------------------------------------------------------------------------------

def _scalar_function_and_gradient(func, inputs, v, create_graph, strict, fn_name):
    """Shared start of vhp and hvp: runs ``func`` and differentiates it once, recording.

    Returns (is_inputs_tuple, inputs, v, outputs, jac) with ``jac = d func / d inputs``
    computed with create_graph=True (must be called with grad enabled)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)

    if v is not None:
        v = _prepare_v(v, inputs, is_inputs_tuple, fn_name, create_graph)
    else:
        _check_single_element_input(inputs)
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    _check_scalar_output(outputs, is_outputs_tuple, fn_name)

    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, outputs, jac


@_shared_doc(product="vector Hessian", v_side="input", result_side="inputs", scalar=True)
def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Function that computes the dot product between a vector ``v`` and the Hessian of a
    given scalar function at the point given by the inputs.

{product_sections}
    Example:
        >>> import tritongrad as torch
        >>> from tritongrad.autograd.functional import vhp
        >>> def pow_adder_reducer(x, y):
        ...     return (2 * x.pow(2) + 3 * y.pow(2)).sum()
        >>> inputs = (torch.ones(2), torch.ones(2))
        >>> v = (torch.zeros(2), torch.ones(2))
        >>> vhp(pow_adder_reducer, inputs, v)
        (tensor(10.), (tensor([0., 0.]), tensor([6., 6.])))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _scalar_function_and_gradient(
            func, inputs, v, create_graph, strict, "vhp")

    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")

    outputs, result = _grad_postprocess(outputs, create_graph, result)
    return outputs[0], _tuple_postprocess(result, is_inputs_tuple)


@_shared_doc(product="Hessian vector", v_side="input", result_side="inputs", scalar=True)
def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Function that computes the dot product between the Hessian of a given scalar function
    and a vector ``v`` at the point given by the inputs.

{product_sections}
    Note:
        Computed with the double backward trick (a third backward), so it is slower than
        ``vhp``. If your function is twice continuously differentiable, then
        ``hvp = vhp.t()``: prefer ``vhp`` when you know that your function satisfies this
        condition.

    Example:
        >>> import tritongrad as torch
        >>> from tritongrad.autograd.functional import hvp
        >>> def pow_reducer(x):
        ...     return x.pow(3).sum()
        >>> hvp(pow_reducer, torch.ones(2, 2), torch.ones(2, 2))
        (tensor(4.), tensor([[6., 6.],
                [6., 6.]]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _scalar_function_and_gradient(
            func, inputs, v, create_graph, strict, "hvp")
        from .ops.creation import zeros_like
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)

    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")

    outputs, result = _grad_postprocess(outputs, create_graph, result)
    return outputs[0], _tuple_postprocess(result, is_inputs_tuple)

