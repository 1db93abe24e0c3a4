"""Numerical gradient checking: ``gradcheck`` and ``gradgradcheck``, as in ``torch.autograd``.

``gradcheck`` compares, for every input that requires grad and every output that does, two
Jacobians of shape ``(input.numel(), output.numel())``:

* numerical: central differences, ``(f(x + eps) - f(x - eps)) / (2 * eps)``, perturbing each
  element of the input in place (through ``input.data``, so no version counter moves) and
  restoring it;
* analytical: one ``autograd.grad`` per output element, with a unit vector as
  ``grad_outputs``, which gives one column (a row of J^T).

They must satisfy ``allclose(analytical, numerical, rtol, atol)``. The backward is run twice
and both results must agree within ``nondet_tol`` (PyTorch's reentrancy check). Then, as in
PyTorch, zero ``grad_outputs`` must give zero gradients, and so must undefined (None) ones.
``fast_mode=True`` checks the scalar ``v^T J u`` for random unit ``u``, ``v`` instead of the
whole Jacobians. ``gradgradcheck`` runs ``gradcheck`` on the function that maps
``(inputs, grad_outputs)`` to the gradients computed with ``create_graph=True``.

The Jacobians are tritongrad tensors on the inputs' device; only the final comparisons and
the error messages read them on the host. ``check_forward_ad`` compares the Jacobians of
forward-mode AD with the numerical ones too (``check_fwd_over_rev``: those of the first
gradients, forward-over-reverse), and ``check_batched_grad`` batched vector-Jacobian products
with one backward each. Complex inputs and outputs are checked through their real views
(``_real_view``), which checks PyTorch's convention for complex gradients. Not available
here: batched tangents (``check_batched_forward_grad``); asking for them raises
NotImplementedError. tritongrad has no sparse layouts, so ``check_sparse_nnz`` and ``masked``
have nothing to act on and are accepted for compatibility only.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from .engine import grad as _grad
from .function import Function
from .functional import _unit_grad_output
from .grad_mode import no_grad
from .tensor import Tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when a check fails (a RuntimeError, so
    that ``except RuntimeError`` written for PyTorch still catches it)."""


_NONDET_HINT = (
    "\n\nNOTE: If your op relies on non-deterministic operations (e.g. atomic adds), this "
    "failure might be expected. Call gradcheck/gradgradcheck with `nondet_tol=<tol>` as a "
    "keyword argument to allow for it.")

_UNDEFINED_GRAD_HINT = (
    "Expected backward function to handle undefined output grads. A backward must accept "
    "None for the gradients of outputs that received none, and treat them as zeros.")

_NO_BATCHED_FORWARD_GRAD = (
    "check_batched_forward_grad=True needs batched tangents (vmap over forward-mode AD), which "
    "tritongrad does not have: forward-mode AD runs one tangent at a time. Call it with "
    "check_batched_forward_grad=False (the default).")


# -- helpers ------------------------------------------------------------------------------------

def _as_tuple(x) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(x) -> tuple:
    return tuple(o for o in _as_tuple(x) if isinstance(o, Tensor) and o.requires_grad)


def _diff_inputs(inputs: tuple) -> list:
    return [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]


def _is_float(t) -> bool:
    return isinstance(t, Tensor) and t.dtype.is_floating_point


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu())


def _zeros(rows: int, cols: int, like: Tensor) -> Tensor:
    from .ops.creation import zeros
    return zeros((rows, cols), dtype=like.dtype, device=like.device)


def _flat(t: Tensor) -> Tensor:
    """``t`` flattened in row-major order, as a new tensor. Copied into a row-major buffer
    rather than reshaped, which works for every layout (transposed outputs and gradients)."""
    from .ops.creation import zeros
    return zeros(t.shape, dtype=t.dtype, device=t.device).copy_(t).view(-1)


def _element(x: Tensor, idx: tuple) -> Tensor:
    """A one-element view of ``x`` at ``idx`` that writes through to ``x``'s storage (made of
    1-long slices, so it keeps every dimension; ``x`` itself when it is 0-d)."""
    return x[tuple(slice(i, i + 1) for i in idx)] if idx else x


def _check_inputs(tupled_inputs: tuple) -> None:
    any_input_requiring_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            continue
        if inp.dtype.name not in ("float64", "complex128"):
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision floating point "
                f"or complex. This check will likely fail if all the inputs are not of double "
                f"precision floating point or complex. ", UserWarning, stacklevel=4)
        # (an empty tensor cannot overlap, whatever strides its backend reports)
        if inp.numel() and not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only supports "
                f"inputs that are non-overlapping to be able to compute the numerical "
                f"gradients correctly. You should call .contiguous on the input before "
                f"passing it to gradcheck.")
        any_input_requiring_grad = True
    if not any_input_requiring_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")


def _real_view(func, inputs: tuple) -> tuple:
    """(func, inputs) with every complex input and output replaced by its real view
    (``view_as_real``): checking the real Jacobians of that function checks the complex
    gradients in PyTorch's convention (dL/dx + i dL/dy is the gradient of the real view), as
    PyTorch's Wirtinger checks do."""
    from .ops.complex_parts import view_as_complex, view_as_real
    was = [isinstance(t, Tensor) and t.is_complex() for t in inputs]
    real_inputs = tuple(view_as_real(t.detach()).requires_grad_(t.requires_grad) if w else t
                        for t, w in zip(inputs, was))

    def real_func(*args):
        out = _as_tuple(func(*[view_as_complex(a) if w else a for a, w in zip(args, was)]))
        return tuple(view_as_real(o) if isinstance(o, Tensor) and o.is_complex() else o
                     for o in out)
    return real_func, real_inputs


# -- numerical Jacobians ------------------------------------------------------------------------

def _evaluate(func, inputs: tuple) -> tuple:
    # Outputs are copied: func may return views of the input being perturbed.
    return tuple(o.detach().clone() if isinstance(o, Tensor) else o
                 for o in _as_tuple(func(*inputs)))


def _central_difference(func, inputs: tuple, entry: Tensor, delta, eps: float,
                        where: str) -> list:
    """Per output of ``func``: ``(f(entry + delta) - f(entry - delta)) / (2 eps)`` flattened
    (None for outputs that are not floating point). ``entry`` is perturbed in place and
    restored exactly."""
    orig = entry.clone()
    entry.copy_(orig - delta)
    outa = _evaluate(func, inputs)
    entry.copy_(orig + delta)
    outb = _evaluate(func, inputs)
    entry.copy_(orig)
    cols = []
    for a, b in zip(outa, outb):
        if not _is_float(a):
            cols.append(None)
            continue
        if a.shape != b.shape or a.dtype is not b.dtype:
            raise GradcheckError(
                f"Expected `func` to return outputs with the same shape and dtype when inputs "
                f"are perturbed {where}by {eps}, but got: shapes {a.shape} and {b.shape}, "
                f"dtypes {a.dtype} and {b.dtype}.")
        cols.append(_flat((b - a) / (2 * eps)))
    return cols


def _numerical_jacobian(func, inputs: tuple, inp: Tensor, outputs: tuple, eps: float) -> list:
    """Per output in ``outputs``: the (inp.numel(), output.numel()) Jacobian of ``func`` with
    respect to ``inp`` by central differences, or None for non-floating outputs."""
    x = inp.data  # shares storage, not the version counter: perturbing it is invisible
    jacs = [_zeros(inp.numel(), o.numel(), o) if _is_float(o) else None for o in outputs]
    for d, idx in enumerate(itertools.product(*[range(n) for n in inp.shape])):
        cols = _central_difference(func, inputs, _element(x, idx), eps, eps,
                                   f"on index {idx} ")
        for jac, col in zip(jacs, cols):
            if jac is not None:
                jac[d:d + 1].copy_(col)
    return jacs


def _numerical_jacobians(func, inputs: tuple, func_out: tuple, eps: float) -> list:
    """numerical[j][i]: the Jacobian of differentiable output i w.r.t. differentiable input j
    (the numerical path sees every output; only those that require grad are compared)."""
    return [[jac for o, jac in zip(func_out, _numerical_jacobian(func, inputs, inp, func_out,
                                                                 eps))
             if _is_float(o) and o.requires_grad]
            for inp in _diff_inputs(inputs)]


# -- analytical Jacobians -----------------------------------------------------------------------

def _vjp_columns(inputs: tuple, output: Tensor, grad_outputs) -> tuple:
    """(Jacobians, dtypes ok, sizes ok): column ``j`` of Jacobian ``i`` is the gradient of
    ``output`` with respect to the i-th differentiable input for ``grad_outputs[j]``."""
    diff = _diff_inputs(inputs)
    jacs = [_zeros(t.numel(), len(grad_outputs), t) for t in diff]
    types_ok = sizes_ok = True
    for j, go in enumerate(grad_outputs):
        grads = _grad(output, diff, go, retain_graph=True, allow_unused=True)
        for jac, g, t in zip(jacs, grads, diff):
            if g is None:
                continue
            if g.shape != t.shape:
                sizes_ok = False
                continue
            if g.dtype is not t.dtype:
                types_ok = False
            jac[:, j:j + 1].copy_(_flat(g).view(-1, 1))
    return jacs, types_ok, sizes_ok


def _analytical_jacobian(inputs: tuple, output: Tensor, nondet_tol: float,
                         check_grad_dtypes: bool, v: Tensor | None = None) -> list:
    """The Jacobians of ``output`` w.r.t. each differentiable input, (numel_in, numel_out),
    or with ``v`` the single column ``v^T J``; computed twice to check reentrancy."""
    if v is None:
        grad_outputs = [_unit_grad_output(output, j) for j in range(output.numel())]
    else:
        grad_outputs = [v]
    with no_grad():
        jacs1, types_ok, sizes_ok = _vjp_columns(inputs, output, grad_outputs)
        jacs2, _, _ = _vjp_columns(inputs, output, grad_outputs)
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    for j1, j2 in zip(jacs1, jacs2):
        if j1.numel() and np.abs(_host(j1) - _host(j2)).max() > nondet_tol:
            raise GradcheckError(
                f"Backward is not reentrant, i.e., running backward with same input and "
                f"grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}." + _NONDET_HINT)
    return jacs1


# -- comparisons and messages -------------------------------------------------------------------

def _allclose(a: np.ndarray, n: np.ndarray, rtol: float, atol: float) -> bool:
    # allclose(analytical, numerical): |a - n| <= atol + rtol * |n|, NaN never close.
    return bool(np.allclose(a, n, rtol=rtol, atol=atol))


def _largest_differences(a: np.ndarray, n: np.ndarray, rtol: float, atol: float,
                         k: int = 5) -> str:
    a64, n64 = a.astype(np.float64), n.astype(np.float64)
    diff = np.abs(a64 - n64)
    bad = ~(diff <= atol + rtol * np.abs(n64))  # NaN counts as bad
    flat = np.flatnonzero(bad)
    order = flat[np.argsort(-np.nan_to_num(diff.reshape(-1)[flat], nan=np.inf),
                            kind="stable")][:k]
    lines = [(f"{len(flat)} of {diff.size} elements differ by more than atol + rtol * "
              f"|numerical| (atol={atol}, rtol={rtol}); the largest, at [input element, "
              f"output element] of the flattened tensors:")]
    for f in order:
        r, c = np.unravel_index(f, diff.shape)
        lines.append(f"  [{r}, {c}]: numerical {n64[r, c]:.6g}, analytical {a64[r, c]:.6g}, "
                     f"difference {diff[r, c]:.6g}")
    return "\n".join(lines) + "\n"


def _mismatch_message(analytical, numerical, output_idx: int, input_idx: int) -> str:
    return (f"Jacobian mismatch for output {output_idx} with respect to input {input_idx},\n"
            f"numerical:{numerical}\nanalytical:{analytical}\n")


# -- the checks ---------------------------------------------------------------------------------

def _check_no_differentiable_outputs(func, inputs: tuple, func_out: tuple, eps: float) -> None:
    # With no differentiable output, the numerical gradient must be zero.
    for inp in _diff_inputs(inputs):
        for jac in _numerical_jacobian(func, inputs, inp, func_out, eps):
            if jac is not None and np.any(_host(jac) != 0):
                raise GradcheckError("Numerical gradient for function expected to be zero")


def _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                    nondet_tol) -> None:
    numerical = _numerical_jacobians(func, inputs, func_out, eps)
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes)
        for j, (a, per_input) in enumerate(zip(analytical, numerical)):
            n = per_input[i]
            a_h, n_h = _host(a), _host(n)
            if not _allclose(a_h, n_h, rtol, atol):
                raise GradcheckError(_mismatch_message(a, n, i, j)
                                     + _largest_differences(a_h, n_h, rtol, atol))


def _random_unit(like: Tensor, rng: np.random.Generator) -> Tensor:
    from .ops.creation import tensor
    vec = rng.random(like.numel())
    return tensor(vec / np.linalg.norm(vec), dtype=like.dtype, device=like.device)


def _fast_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                    nondet_tol) -> None:
    # Compares v^T J u, with J u by finite differences along u and v^T J by one backward,
    # for random unit u (per input) and v (per output). A private generator: the user's
    # random state is left alone, and the vectors are the same on every call.
    rng = np.random.default_rng(0)
    diff = _diff_inputs(inputs)
    all_u = [_random_unit(t, rng) for t in diff]
    all_v = [_random_unit(o, rng) for o in outputs]
    numerical = []  # numerical[i][j] = v_j . (J_ji u_i)
    for inp, u in zip(diff, all_u):
        cols = _central_difference(func, inputs, inp.data, u.view(inp.shape) * eps, eps, "")
        ju = [c for o, c in zip(func_out, cols) if _is_float(o) and o.requires_grad]
        numerical.append([float(_host(v).astype(np.float64) @ _host(c)) for v, c in
                          zip(all_v, ju)])
    for j, (o, v) in enumerate(zip(outputs, all_v)):
        vjs = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes, v=v.view(o.shape))
        for i, (vj, u) in enumerate(zip(vjs, all_u)):
            u_h = _host(u).astype(np.float64)
            a = float(_host(vj).reshape(-1) @ u_h)
            n = numerical[i][j]
            # |v^T (A - N) u| <= v^T (atol 1 1^T) u + ...: atol scales by sum(u) sum(v).
            tol = atol * float(u_h.sum()) * float(_host(v).sum())
            if not _allclose(np.float64(a), np.float64(n), rtol, tol):
                slow_n = _numerical_jacobians(func, inputs, func_out, eps)[i][j]
                slow_a = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes)[i]
                sa, sn = _host(slow_a), _host(slow_n)
                raise GradcheckError(
                    _mismatch_message(a, n, j, i)
                    + "\nThe above quantities relating the numerical and analytical jacobians "
                      "are computed in fast mode (v^T J u for random unit vectors u, v). "
                      "Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
                    + f"Numerical:\n {slow_n}\nAnalytical:\n{slow_a}\n\n"
                    + f"The max per-element difference (slow mode) is: "
                      f"{np.abs(sa.astype(np.float64) - sn).max() if sa.size else 0.0}.\n"
                    + _largest_differences(sa, sn, rtol, atol))


def _test_backward_mul_by_grad_output(outputs: tuple, inputs: tuple) -> None:
    from .ops.creation import zeros_like
    diff = _diff_inputs(inputs)
    with no_grad():
        grads = _grad(outputs, diff, [zeros_like(o) for o in outputs], allow_unused=True)
    for gi, di in zip(grads, diff):
        if gi is None:
            continue
        if np.any(_host(gi) != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype is not di.dtype or gi.device != di.device:
            raise GradcheckError("grad is incorrect type")
        if gi.shape != di.shape:
            raise GradcheckError("grad is incorrect size")


class _UndefinedGrad(Function):
    """Identity whose backward sends no gradient at all (None: PyTorch's undefined grad)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return None


def _test_undefined_backward_mode(func, inputs: tuple) -> None:
    from .ops.creation import zeros_like
    diff = _diff_inputs(inputs)
    undefined = _UndefinedGrad.apply

    def check(outputs_to_check) -> None:
        try:
            with no_grad():
                grads = _grad(outputs_to_check, diff,
                              [zeros_like(o) for o in outputs_to_check], allow_unused=True)
        except (RuntimeError, TypeError, AttributeError) as e:
            # TypeError/AttributeError: a Python backward doing arithmetic on a None gradient
            raise GradcheckError(_UNDEFINED_GRAD_HINT) from e
        for gi in grads:
            if gi is not None and np.any(_host(gi) != 0):
                raise GradcheckError("Expected all input grads to be undefined or zero when "
                                     "all output grads are undefined or zero.")

    # Every output undefined at once, then (with several outputs) one at a time.
    check([undefined(o) for o in _differentiable_outputs(func(*inputs))])
    n = len(_differentiable_outputs(func(*inputs)))
    if n > 1:
        for k in range(n):
            outs = _differentiable_outputs(func(*inputs))
            check([undefined(o) if i == k else o for i, o in enumerate(outs)])


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                      check_grad_dtypes, fast_mode, check_batched_grad=False,
                      check_forward_ad=False, check_backward_ad=True) -> bool:
    tupled_inputs = _as_tuple(inputs)
    _check_inputs(tupled_inputs)
    func_out = _as_tuple(func(*tupled_inputs))
    if any(isinstance(t, Tensor) and t.is_complex() for t in tupled_inputs + func_out):
        func, tupled_inputs = _real_view(func, tupled_inputs)
        func_out = _as_tuple(func(*tupled_inputs))
    outputs = _differentiable_outputs(func_out)
    if not outputs:
        _check_no_differentiable_outputs(func, tupled_inputs, func_out, eps)
        return True
    if check_backward_ad:  # (first, as PyTorch: a failing backward is reported first)
        check = _fast_gradcheck if fast_mode else _slow_gradcheck
        check(func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes,
              nondet_tol)
        _test_backward_mul_by_grad_output(outputs, tupled_inputs)
        if check_undefined_grad:
            _test_undefined_backward_mode(func, tupled_inputs)
        if check_batched_grad:
            # (on a fresh graph: the checks above may have freed the first one's saved tensors)
            for i, out in enumerate(_differentiable_outputs(_as_tuple(func(*tupled_inputs)))):
                _test_batched_grad(tupled_inputs, out, i)
    if check_forward_ad:
        _forward_gradcheck(func, func_out, tupled_inputs, eps, rtol, atol)
    return True


def _forward_jacobians(func, inputs: tuple, func_out: tuple) -> list:
    """forward[j][i]: the (numel_in, numel_out) Jacobian of differentiable output i w.r.t.
    differentiable input j from forward-mode AD: row d is the output's tangent for the unit
    tangent d of input j (the other inputs carry none)."""
    from . import forward_ad
    keep = [k for k, o in enumerate(func_out) if _is_float(o) and o.requires_grad]
    result = []
    for inp in _diff_inputs(inputs):
        jacs = [_zeros(inp.numel(), func_out[k].numel(), func_out[k]) for k in keep]
        for d in range(inp.numel()):
            with forward_ad.dual_level():
                # (inp itself, which requires grad: a func that differentiates itself, as
                # gradgradcheck's does, keeps the dual in its graph: forward-over-reverse)
                dual = forward_ad.make_dual(inp, _unit_grad_output(inp, d))
                outs = _as_tuple(func(*[dual if t is inp else t for t in inputs]))
                tangents = [forward_ad.unpack_dual(outs[k]).tangent for k in keep]
            with no_grad():
                for jac, t in zip(jacs, tangents):
                    if t is not None:
                        jac[d:d + 1].copy_(_flat(t).view(1, -1))
        result.append(jacs)
    return result


def _forward_gradcheck(func, func_out, inputs, eps, rtol, atol) -> None:
    """The Jacobians from forward-mode AD against central differences (PyTorch's
    ``check_forward_ad``; the whole Jacobian, in fast mode too)."""
    numerical = _numerical_jacobians(func, inputs, func_out, eps)
    for j, (forward, per_input) in enumerate(zip(_forward_jacobians(func, inputs, func_out),
                                                 numerical)):
        for i, (a, n) in enumerate(zip(forward, per_input)):
            a_h, n_h = _host(a), _host(n)
            if not _allclose(a_h, n_h, rtol, atol):
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {i} with respect "
                    f"to input {j},\nnumerical:{n}\nanalytical:{a}\n"
                    + _largest_differences(a_h, n_h, rtol, atol))


_BATCHED_GRAD_FAILED = (
    "gradcheck or gradgradcheck failed while testing batched gradient computation "
    "(grad(..., is_grads_batched=True): one backward for a batch of grad_outputs, each node's "
    "rule run once on the whole batch) against one backward per grad_output.")


def _test_batched_grad(inputs: tuple, output: Tensor, output_idx: int, size: int = 3) -> None:
    """The vector-Jacobian products of ``size`` random grad_outputs, from one batched
    backward and from one backward each, must agree (PyTorch's check, with vmap's batching
    in the engine: Note [Batched gradients])."""
    from .ops.shape import stack
    diff = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    vs = [_random_grad_output(output, False).detach() for _ in range(size)]
    expected = [_grad(output, diff, v, retain_graph=True, allow_unused=True) for v in vs]
    try:
        got = _grad(output, diff, stack(vs), retain_graph=True, allow_unused=True,
                    is_grads_batched=True)
    except Exception as err:
        raise GradcheckError(f"While computing batched gradients, got: {err}\n\n"
                             f"{_BATCHED_GRAD_FAILED}") from err
    for j, g in enumerate(got):
        rows = [e[j] for e in expected]
        if g is None and all(r is None for r in rows):
            continue
        exp = stack([r if r is not None else diff[j].new_zeros(diff[j].shape) for r in rows])
        if g is None or tuple(g.shape) != tuple(exp.shape) or not np.allclose(
                g.detach().cpu().numpy(), exp.detach().cpu().numpy(), rtol=1e-5, atol=1e-8):
            raise GradcheckError(f"For output {output_idx} and input {j}:\n\n"
                                 f"{_BATCHED_GRAD_FAILED}\n\nGot:\n{g}\n\nExpected:\n{exp}")


# -- public API ---------------------------------------------------------------------------------

def gradcheck(func, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, check_sparse_nnz: bool = False,
              nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, *,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked=None) -> bool:
    """Check gradients computed via small finite differences against analytical gradients
    w.r.t. tensors in ``inputs`` that are of floating point type and with
    ``requires_grad=True``.

    The check between numerical and analytical gradients uses ``allclose()``: for every
    differentiable input ``j`` and differentiable output ``i``, the Jacobians (of shape
    ``(inputs[j].numel(), outputs[i].numel())``) must satisfy
    ``|analytical - numerical| <= atol + rtol * |numerical|``. As in PyTorch, ``i`` and ``j``
    in error messages count only the outputs and inputs that require grad.

    Note:
        The default values are designed for ``input`` of double precision. This check will
        likely fail if ``input`` is of less precision, e.g., ``float32`` (a warning says so).

    Warning:
        If any checked tensor in ``input`` has overlapping memory, i.e., different indices
        pointing to the same memory address (e.g., from ``expand()``), this check will
        likely fail because the numerical gradients computed by point perturbation at such
        indices will change values at all other indices that share the same memory address.

    Args:
        func (function): a Python function that takes Tensor inputs and returns a Tensor or
            a tuple of Tensors
        inputs (tuple of Tensor or Tensor): inputs to the function
        eps (float, optional): perturbation for finite differences
        atol (float, optional): absolute tolerance
        rtol (float, optional): relative tolerance
        raise_exception (bool, optional): indicating whether to raise an exception if the
            check fails. The exception (``GradcheckError``) gives more information about the
            exact nature of the failure. This is helpful when debugging gradchecks.
        check_sparse_nnz (bool, optional): accepted for compatibility; tritongrad has no
            sparse tensors, so every input is dense and checked at every element.
        nondet_tol (float, optional): tolerance for nondeterminism. When running identical
            inputs through the differentiation, the results must either match exactly
            (default, 0.0) or be within this tolerance.
        check_undefined_grad (bool, optional): if True, check if undefined output grads are
            supported and treated as zeros, for ``Tensor`` outputs.
        check_grad_dtypes (bool, optional): if True, check that the gradients have the dtype
            of their inputs.
        check_batched_grad (bool, optional): if True, check if we can compute batched
            gradients: the vector-Jacobian products of a batch of random grad_outputs from
            one ``grad(..., is_grads_batched=True)`` must equal those of one backward each.
            Defaults to False.
        check_batched_forward_grad (bool, optional): needs batched tangents, which
            tritongrad's forward-mode AD does not have: True raises NotImplementedError.
        check_forward_ad (bool, optional): if True, also check the Jacobians that
            forward-mode AD (``autograd.forward_ad``) computes against the numerical ones
            (the whole Jacobian, one tangent per input element, in fast mode too).
        check_backward_ad (bool, optional): check the backward (reverse-mode) gradients
            (at least one of ``check_forward_ad`` and ``check_backward_ad`` must be True).
        fast_mode (bool, optional): if True, compare ``v^T J u`` for random unit vectors
            ``u`` and ``v`` instead of the full Jacobians (one backward per output instead of
            one per output element); on a mismatch the message shows the full Jacobians.
        masked (bool, optional): accepted for compatibility; it only concerns sparse inputs.

    Returns:
        True if all differences satisfy allclose condition (False instead of raising when
        ``raise_exception=False``).

    Example:
        >>> import tritongrad as torch
        >>> from tritongrad.autograd import gradcheck
        >>> x = torch.rand(3, 2, dtype=torch.float64, requires_grad=True)
        >>> gradcheck(lambda x: (x * x.exp()).sum(dim=1), (x,))
        True
    """
    if not (check_forward_ad or check_backward_ad):
        raise ValueError("Expected at least one of check_forward_ad or check_backward_ad to be "
                         "True")
    if check_batched_grad and not check_backward_ad:
        raise ValueError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise ValueError("Setting check_batched_forward_grad=True requires check_forward_ad to "
                         "be True")
    if check_batched_forward_grad:
        raise NotImplementedError(_NO_BATCHED_FORWARD_GRAD)
    try:
        return _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol,
                                 check_undefined_grad, check_grad_dtypes, fast_mode,
                                 check_batched_grad, check_forward_ad, check_backward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _random_grad_output(like: Tensor, noncontiguous: bool) -> Tensor:
    """Uniform in [-1, 1), shaped like ``like``; with ``noncontiguous`` (and more than one
    element) every other element of a tensor twice as wide in the last dimension."""
    from ..runtime import dtype as dtypes
    from .ops.creation import rand
    if like.dtype.is_complex:  # real and imaginary parts, each as a real one would be
        from .ops.complex_parts import view_as_complex, view_as_real
        parts = _random_grad_output(view_as_real(like.detach()), noncontiguous)
        return view_as_complex(parts.detach()).requires_grad_(True)
    dtype = like.dtype if like.dtype.is_floating_point else dtypes.float64
    shape = tuple(like.shape)
    n = like.numel()
    if noncontiguous and n > 1:
        wide = rand(2 * n, dtype=dtype, device=like.device) * 2 - 1
        t = wide.reshape(shape[:-1] + (2 * shape[-1],))[..., ::2]
    else:
        # rand(n) then reshape: also right for 0-d outputs
        t = (rand(n, dtype=dtype, device=like.device) * 2 - 1).reshape(shape)
    return t.detach().requires_grad_(True)


def gradgradcheck(func, inputs, grad_outputs=None, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, *, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check gradients of gradients computed via small finite differences against analytical
    gradients w.r.t. tensors in ``inputs`` and ``grad_outputs`` that are of floating point
    type and with ``requires_grad=True``.

    This function checks that backpropagating through the gradients computed to the given
    ``grad_outputs`` are correct: it runs ``gradcheck`` on the function
    ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs,
    create_graph=True)``.

    The check between numerical and analytical gradients uses ``allclose()``.

    Note:
        The default values are designed for ``input`` and ``grad_outputs`` of double
        precision. This check will likely fail if they are of less precision, e.g.,
        ``float32``.

    Warning:
        If any checked tensor in ``input`` and ``grad_outputs`` has overlapping memory, i.e.,
        different indices pointing to the same memory address (e.g., from ``expand()``), this
        check will likely fail because the numerical gradients computed by point perturbation
        at such indices will change values at all other indices that share the same memory
        address.

    Args:
        func (function): a Python function that takes Tensor inputs and returns a Tensor or
            a tuple of Tensors
        inputs (tuple of Tensor or Tensor): inputs to the function
        grad_outputs (tuple of Tensor or Tensor, optional): The gradients with respect to the
            function's outputs. If None, random ones (uniform in [-1, 1), requiring grad) are
            drawn from tritongrad's global generator.
        eps (float, optional): perturbation for finite differences
        atol (float, optional): absolute tolerance
        rtol (float, optional): relative tolerance
        gen_non_contig_grad_outputs (bool, optional): if ``grad_outputs`` is ``None`` and
            ``gen_non_contig_grad_outputs`` is ``True``, the randomly generated gradient
            outputs are made to be noncontiguous
        raise_exception (bool, optional): indicating whether to raise an exception if the
            check fails. The exception gives more information about the exact nature of the
            failure. This is helpful when debugging gradchecks.
        nondet_tol (float, optional): tolerance for nondeterminism. When running identical
            inputs through the differentiation, the results must either match exactly
            (default, 0.0) or be within this tolerance. Note that a small amount of
            nondeterminism in the gradient will lead to larger inaccuracies in the second
            derivative.
        check_undefined_grad (bool, optional): if True, check if undefined output grads are
            supported and treated as zeros
        check_grad_dtypes (bool, optional): if True, check that the gradients have the dtype
            of their inputs.
        check_batched_grad (bool, optional): if True, check batched gradients of the first
            gradients (as ``gradcheck``'s ``check_batched_grad``). Defaults to False.
        check_fwd_over_rev (bool, optional): check forward-over-reverse: the Jacobians of the
            first gradients from forward-mode AD against the numerical ones.
        check_rev_over_rev (bool, optional): check reverse-over-reverse (at least one of the
            two must be True).
        fast_mode (bool, optional): passed to ``gradcheck``.
        masked (bool, optional): accepted for compatibility; it only concerns sparse inputs.

    Returns:
        True if all differences satisfy allclose condition

    Example:
        >>> import tritongrad as torch
        >>> from tritongrad.autograd import gradgradcheck
        >>> x = torch.rand(3, dtype=torch.float64, requires_grad=True)
        >>> gradgradcheck(lambda x: x.pow(3), (x,))
        True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise ValueError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to "
                         "be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise ValueError("Setting check_undefined_grad=True requires check_rev_over_rev to be "
                         "True")
    if check_batched_grad and not check_rev_over_rev:
        raise ValueError("Setting check_batched_grad=True requires check_rev_over_rev to be "
                         "True")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs)
                                    for o in outputs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    n_inputs = len(tupled_inputs)
    diff_input_indices = {i for i, x in enumerate(tupled_inputs)
                          if isinstance(x, Tensor) and x.requires_grad}

    def new_func(*args):
        input_args, grads = args[:n_inputs], args[n_inputs:]
        outputs = _differentiable_outputs(func(*input_args))
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_input_indices)
        grad_inputs = _grad(outputs, diff_input_args, grads, create_graph=True,
                            allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                     fast_mode=fast_mode, masked=masked)
