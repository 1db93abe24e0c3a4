"""Batched gradients (Note [Batched gradients], autograd/batched.py): grad(is_grads_batched=
True), jacobian/hessian(vectorize=True) and gradcheck(check_batched_grad=True). Every batched
result is checked against one backward per batch entry; the tests that say "one pass" also
check that no node fell back to running once per entry."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tritongrad.autograd import Function, batched
from tritongrad.autograd.functional import hessian, jacobian
from tritongrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck


def host(t):
    return t.detach().cpu().numpy()


def t64(*shape, device="cpu"):
    return (tg.randn(tuple(shape), dtype=tg.float64) * 0.7).to(device).requires_grad_()


@pytest.fixture
def per_entry(monkeypatch):
    """The node classes that fell back to one run per batch entry, in order."""
    seen = []
    run = batched._per_entry

    def spy(node, grads, size):
        seen.append(type(node).__name__)
        return run(node, grads, size)

    monkeypatch.setattr(batched, "_per_entry", spy)
    return seen


def assert_batched_equals_loop(outputs, inputs, vs, **kwargs):
    """grad(outputs, inputs, vs, is_grads_batched=True) against grad once per entry."""
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    vs = vs if isinstance(vs, tuple) else (vs,)
    got = tg.autograd.grad(outputs, inputs, vs, retain_graph=True, is_grads_batched=True,
                           **kwargs)
    size = vs[0].shape[0]
    for j, inp in enumerate(inputs):
        rows = [tg.autograd.grad(outputs, inputs, tuple(v[b] for v in vs), retain_graph=True,
                                 **kwargs)[j] for b in range(size)]
        assert tuple(got[j].shape) == (size,) + tuple(inp.shape)
        np.testing.assert_allclose(host(got[j]), np.stack([host(r) for r in rows]),
                                   rtol=1e-12, atol=1e-12)
    return got


def mlp_like(x, w, b):
    """Matmul, a broadcast bias, activations, softmax, views, slices and reductions: the
    ops of a training step."""
    h = (x @ w + b).tanh()
    h = h.relu() + h.sigmoid() * h.exp() / (1 + h.pow(2))
    s = h.softmax(-1) + h.log_softmax(dim=0)
    r = s.t().reshape(-1, 2).permute(1, 0)[:, 1:5]
    return (r * r.mean(0, keepdim=True)).sum(1) + s[:2].sum() + h.expand(2, *h.shape).amax(0)[0, :2]


def test_one_batched_backward_matches_one_backward_per_entry(device, per_entry):
    tg.manual_seed(0)
    x, w, b = t64(4, 3, device=device), t64(3, 6, device=device), t64(6, device=device)
    out = mlp_like(x, w, b)
    vs = tg.randn(5, *out.shape, dtype=tg.float64).to(device)
    assert_batched_equals_loop(out, (x, w, b), vs)
    assert per_entry == [], "every node here has batching rules for its contract functions"


def test_several_outputs_and_a_partly_unused_input(device):
    tg.manual_seed(1)
    x, y, z = t64(3, device=device), t64(2, 3, device=device), t64(2, device=device)
    o1, o2 = x * y, (y.sum(1) * 2).exp()
    vs = (tg.randn(4, 2, 3, dtype=tg.float64).to(device),
          tg.randn(4, 2, dtype=tg.float64).to(device))
    *_, gz = tg.autograd.grad((o1, o2), (x, y, z), vs, is_grads_batched=True,
                             allow_unused=True, retain_graph=True)
    assert gz is None
    assert_batched_equals_loop((o1, o2), (x, y), vs)
    gz = tg.autograd.grad((o1, o2), (x, z), vs, is_grads_batched=True,
                          materialize_grads=True)[1]
    assert tuple(gz.shape) == (4, 2) and not host(gz).any()


def test_rules_that_cannot_batch_fall_back_per_entry_and_stay_right(device, per_entry):
    class Cube(Function):  # a custom backward: user code, run once per entry
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * a * a * g

    tg.manual_seed(2)
    x = t64(3, 4, device=device)
    idx = tg.tensor([2, 0, 2]).to(device)
    out = Cube.apply(x).index_select(1, idx).sort(dim=1)[0]  # sort, index_select: batched
    vs = tg.randn(3, *out.shape, dtype=tg.float64).to(device)
    assert_batched_equals_loop(out, (x,), vs)
    assert per_entry and set(per_entry) == {"CubeBackward"}


def test_create_graph_gives_differentiable_batched_gradients(device):
    tg.manual_seed(3)
    x = t64(3, device=device)
    y = (x.sin() * x).sum(0, keepdim=True) * x
    vs = tg.randn(4, 3, dtype=tg.float64).to(device)
    (g,) = tg.autograd.grad(y, x, vs, create_graph=True, is_grads_batched=True)
    rows = [tg.autograd.grad(y, x, vs[i], create_graph=True)[0] for i in range(4)]
    np.testing.assert_allclose(host(g), np.stack([host(r) for r in rows]), rtol=1e-12)
    assert g.requires_grad
    (gg,) = tg.autograd.grad(g.sum(), x, retain_graph=True)
    expected = sum(tg.autograd.grad(r.sum(), x, retain_graph=True)[0] for r in rows)
    np.testing.assert_allclose(host(gg), host(expected), rtol=1e-12)


def test_is_grads_batched_argument_errors():
    x = t64(3)
    y = x * 2
    with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first "
                                           "dimension of each grad_output as the batch"):
        tg.autograd.grad(y, x, tg.ones(3, 4, dtype=tg.float64), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="needs grad_outputs"):
        tg.autograd.grad(y.sum(), x, is_grads_batched=True)
    z = x * 3
    with pytest.raises(ValueError, match=r"got sizes \[2, 5\] for the mapped dimension"):
        tg.autograd.grad((y, z), x, (tg.ones(2, 3, dtype=tg.float64),
                                     tg.ones(5, 3, dtype=tg.float64)), is_grads_batched=True)


@settings(max_examples=25, deadline=None)
@given(shapes=st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)),
                               ((4, 2, 3), (2, 1)), ((1,), (2, 2)), ((), (2,))]),
       op=st.sampled_from(["add", "sub", "mul", "div", "maximum", "pow", "minimum", "where"]),
       size=st.integers(1, 4))
def test_broadcasting_binary_ops_batch_like_the_loop(shapes, op, size):
    """Operands of different ranks: the batched rule lines the batch up past the leading
    dims of the lower-rank operand."""
    a = (tg.rand(tuple(shapes[0]), dtype=tg.float64) + 0.5).requires_grad_()
    b = (tg.rand(tuple(shapes[1]), dtype=tg.float64) + 0.5).requires_grad_()
    if op == "where":
        out = tg.where(a > 0.9, a * b, b)
    else:
        out = getattr(tg, op)(a, b)
    vs = tg.randn(size, *out.shape, dtype=tg.float64)
    assert_batched_equals_loop(out, (a, b), vs)


# -- jacobian / hessian (vectorize=True) ------------------------------------------------------

def _two_in_two_out(x, w):
    return (x @ w).tanh() * 2, (x.exp().sum(0) + w.sum()).sin()


def test_vectorized_jacobian_equals_the_row_loop(device, per_entry):
    tg.manual_seed(4)
    x, w = t64(3, 4, device=device).detach(), t64(4, 5, device=device).detach()
    loop = jacobian(_two_in_two_out, (x, w))
    vec = jacobian(_two_in_two_out, (x, w), vectorize=True)
    for i in range(2):
        for j in range(2):
            assert vec[i][j].shape == loop[i][j].shape
            np.testing.assert_allclose(host(vec[i][j]), host(loop[i][j]), rtol=1e-12,
                                       atol=1e-14)
    assert per_entry == []
    single = jacobian(lambda a: a.sin() * 3, x[0], vectorize=True)
    np.testing.assert_allclose(host(single), np.diag(3 * np.cos(host(x[0]))), rtol=1e-12)


def test_vectorized_jacobian_with_create_graph_and_unused_inputs():
    tg.manual_seed(5)
    x, y = t64(3).detach(), t64(2).detach()
    jac = jacobian(lambda a, b: a * a, (x, y), vectorize=True, create_graph=True)
    assert jac[0].requires_grad and not host(jac[1]).any()
    np.testing.assert_allclose(host(jac[0]), np.diag(2 * host(x)), rtol=1e-12)


def test_vectorized_hessian_equals_the_row_loop(device):
    tg.manual_seed(6)
    x = t64(2, 3, device=device).detach()

    def f(a):
        return (a.sin() * a).sum() + (a @ a.t()).pow(2).sum() / 10

    np.testing.assert_allclose(host(hessian(f, x, vectorize=True)), host(hessian(f, x)),
                               rtol=1e-11, atol=1e-12)
    fwd = hessian(f, x, vectorize=True, outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(host(fwd), host(hessian(f, x)), rtol=1e-11, atol=1e-12)


# -- gradcheck(check_batched_grad=True) -------------------------------------------------------

def test_check_batched_grad_passes_and_catches_a_wrong_batching_rule(monkeypatch):
    x = t64(2, 3)
    assert gradcheck(lambda a: (a * a).sum(1), (x,), check_batched_grad=True)
    assert gradgradcheck(lambda a: (a * a.exp()).sum(1), (x,), check_batched_grad=True)

    def doubled(kb, fn, a, dims, *rest, **kwargs):  # a batching rule with a wrong result
        return batched.BatchedArray(kb.k.mul(fn(a.data, tuple(d + 1 for d in dims), *rest,
                                                **kwargs), 2.0))

    def f(a):
        return a.sum(1, keepdim=True) * a

    monkeypatch.setitem(batched._RULES, "sum", doubled)
    with pytest.raises(GradcheckError, match="For output 0 and input 0:\n\ngradcheck or "
                                             "gradgradcheck failed while testing batched"):
        gradcheck(f, (x,), check_batched_grad=True)
    assert not gradcheck(f, (x,), check_batched_grad=True, raise_exception=False)

    def wrong_dims(kb, fn, a, dims, *rest, **kwargs):  # fails outright
        return batched.BatchedArray(fn(a.data, tuple(dims), *rest, **kwargs))

    monkeypatch.setitem(batched._RULES, "sum", wrong_dims)
    with pytest.raises(GradcheckError, match="While computing batched gradients, got: "):
        gradcheck(f, (x,), check_batched_grad=True)
