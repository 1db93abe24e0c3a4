"""PyTorch's ``torch._foreach_*`` list ops (``optim/_foreach.py``), against PyTorch 2.13's
results recorded here and, where torch is installed, a PyTorch run of the same calls: the
operand forms (a number, a list of numbers, a list of tensors, one tensor), the in-place forms
returning the list they were given, an EMA update as a mean teacher writes it, the gradients
through the out-of-place forms, and the errors in PyTorch's words."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import tritongrad as tg

# (not yet re-exported as tg._foreach_*: requested of tritongrad/__init__.py)
FE = importlib.import_module("tritongrad.optim._foreach")


def _lists(m):
    return [m.tensor([1.0, -2.0]), m.tensor([0.5, 3.0, -1.5])]


def _calls(m, F) -> list:
    """Each call's result as nested Python lists (tuples of tensors flattened)."""
    a = _lists(m)
    b = [m.tensor([2.0, 0.5]), m.tensor([-1.0, 1.0, 4.0])]
    results = [
        F._foreach_add(a, 1.5), F._foreach_add(a, [1.0, -2.0]), F._foreach_add(a, b, alpha=0.5),
        F._foreach_add(a, m.tensor(2.0)), F._foreach_sub(a, b, alpha=2),
        F._foreach_mul(a, b), F._foreach_div(a, [2.0, 4.0]), F._foreach_pow(a, 2.0),
        F._foreach_pow(2.0, a), F._foreach_maximum(a, b), F._foreach_maximum(a, 0.75),
        F._foreach_minimum(a, 0.0), F._foreach_clamp_min(a, [0.0, 1.0]),
        F._foreach_clamp_max(a, 0.5), F._foreach_abs(a), F._foreach_neg(a), F._foreach_sign(a),
        F._foreach_lerp(a, b, 0.25), F._foreach_lerp(a, b, [0.5, 1.0]),
        F._foreach_addcmul(a, a, b, 0.5), F._foreach_addcdiv(a, a, b, [1.0, -1.0]),
        F._foreach_norm(a), F._foreach_norm(a, 1), F._foreach_norm(a, float("inf")),
        F._foreach_max(a), F._foreach_powsum(a, 2), F._foreach_sqrt(F._foreach_abs(a)),
    ]
    return [[t.tolist() for t in r] for r in results]


# PyTorch 2.13's results of _calls
_EXPECTED = [
    [[2.5, -0.5], [2.0, 4.5, 0.0]], [[2.0, -1.0], [-1.5, 1.0, -3.5]],
    [[2.0, -1.75], [0.0, 3.5, 0.5]], [[3.0, 0.0], [2.5, 5.0, 0.5]],
    [[-3.0, -3.0], [2.5, 1.0, -9.5]], [[2.0, -1.0], [-0.5, 3.0, -6.0]],
    [[0.5, -1.0], [0.125, 0.75, -0.375]], [[1.0, 4.0], [0.25, 9.0, 2.25]],
    [[2.0, 0.25], [1.4142135381698608, 8.0, 0.3535533845424652]],
    [[2.0, 0.5], [0.5, 3.0, 4.0]], [[1.0, 0.75], [0.75, 3.0, 0.75]],
    [[0.0, -2.0], [0.0, 0.0, -1.5]], [[1.0, 0.0], [1.0, 3.0, 1.0]],
    [[0.5, -2.0], [0.5, 0.5, -1.5]], [[1.0, 2.0], [0.5, 3.0, 1.5]],
    [[-1.0, 2.0], [-0.5, -3.0, 1.5]], [[1.0, -1.0], [1.0, 1.0, -1.0]],
    [[1.25, -1.375], [0.125, 2.5, -0.125]], [[1.5, -0.75], [-1.0, 1.0, 4.0]],
    [[2.0, -2.5], [0.25, 4.5, -4.5]], [[1.5, -6.0], [1.0, 0.0, -1.125]],
    [2.2360680103302, 3.391165018081665], [3.0, 5.0], [2.0, 3.0], [1.0, 3.0], [5.0, 11.5],
    [[1.0, 1.4142135381698608], [0.7071067690849304, 1.7320507764816284, 1.2247449159622192]],
]


def test_foreach_ops_as_torch() -> None:
    got = _calls(tg, FE)
    for g, e in zip(got, _EXPECTED, strict=True):
        np.testing.assert_allclose(np.concatenate([np.ravel(x) for x in g]),
                                   np.concatenate([np.ravel(x) for x in e]), rtol=1e-6)
    torch = pytest.importorskip("torch")
    ref = _calls(torch, torch)
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(np.concatenate([np.ravel(x) for x in g]),
                                   np.concatenate([np.ravel(x) for x in r]), rtol=1e-6)


def _ema(m, F) -> tuple:
    """A mean teacher's EMA step, and the in-place forms' return value."""
    teacher, student = _lists(m), [m.tensor([3.0, 1.0]), m.tensor([0.0, 0.0, 1.0])]
    same = F._foreach_mul_(teacher, 0.9) is teacher
    F._foreach_add_(teacher, student, alpha=0.1)
    F._foreach_lerp_(teacher, student, 0.5)
    F._foreach_addcmul_(teacher, student, student, 0.25)
    F._foreach_clamp_max_(teacher, 2.0)
    F._foreach_maximum_(teacher, -1.0)
    copied = [m.zeros(2), m.zeros(3)]
    F._foreach_copy_(copied, teacher)
    F._foreach_zero_(teacher)
    return same, [t.tolist() for t in copied], [t.tolist() for t in teacher]


_EMA_EXPECTED = (True, [[2.0, -0.1], [0.225, 1.35, 0.125]], [[0.0, 0.0], [0.0, 0.0, 0.0]])


def test_in_place_forms_update_the_list_and_return_it() -> None:
    same, copied, zeroed = _ema(tg, FE)
    assert same and zeroed == _EMA_EXPECTED[2]
    np.testing.assert_allclose(np.concatenate(copied), np.concatenate(_EMA_EXPECTED[1]),
                               rtol=1e-6)
    torch = pytest.importorskip("torch")
    r_same, r_copied, r_zeroed = _ema(torch, torch)
    assert (r_same, r_zeroed) == (same, zeroed)
    np.testing.assert_allclose(np.concatenate(copied), np.concatenate(r_copied), rtol=1e-6)


def test_out_of_place_forms_record_autograd() -> None:
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.tensor([3.0], requires_grad=True)
    out = FE._foreach_mul(FE._foreach_pow([x, y], 2.0), [3.0, 0.5])
    (out[0].sum() + out[1].sum()).backward()
    assert x.grad.tolist() == [6.0, 12.0] and y.grad.tolist() == [3.0]


@pytest.mark.parametrize("call, kind, message", [
    (lambda m, F: F._foreach_add(_lists(m), [1.0]), RuntimeError,
     "Tensor list must have same number of elements as scalar list."),
    (lambda m, F: F._foreach_mul(_lists(m), _lists(m)[:1]), RuntimeError,
     "Tensor lists must have the same number of tensors, got 2 and 1"),
    (lambda m, F: F._foreach_add([], 1.0), RuntimeError,
     "Tensor list must have at least one tensor."),
    (lambda m, F: F._foreach_mul_([1, 2], 2.0), TypeError,
     "expected Tensor as element 0 in argument 0, but got int"),
])
def test_errors_in_torch_words(call, kind, message) -> None:
    with pytest.raises(kind) as caught:
        call(tg, FE)
    assert str(caught.value) == message
    torch = pytest.importorskip("torch")
    with pytest.raises(kind) as ref:
        call(torch, torch)
    assert str(ref.value) == message


def test_reachable_at_the_top():
    """``tg._foreach_*`` as ``torch._foreach_*`` (kept out of ``__all__``, as PyTorch's)."""
    import tritongrad as top
    ps = [top.ones(2), top.ones(3)]
    top._foreach_mul_(ps, 0.5)
    top._foreach_add_(ps, [top.ones(2), top.ones(3)], alpha=0.5)
    assert [p.tolist() for p in ps] == [[1.0, 1.0], [1.0, 1.0, 1.0]]
    assert "_foreach_mul_" not in top.__all__
