"""Batched forward AD (Note [Batched forward AD], autograd/batched.py): a batch of tangents in
one forward pass, as PyTorch's vmap over jvp; used by gradcheck(check_batched_forward_grad=
True) and jacobian/hessian(strategy="forward-mode", vectorize=True). Every batched result is
checked against one forward pass per batch entry (float64); the common rules must batch, so
the tests also check that nothing fell back to running once per entry."""

from __future__ import annotations

import numpy as np
import pytest
import tritongrad.autograd.forward_ad as fwAD
from tritongrad.autograd import Function, batched
from tritongrad.autograd.functional import hessian, jacobian
from tritongrad.autograd.gradcheck import GradcheckError, gradcheck

import tritongrad as tg
from tests.autograd.test_forward_ad import SAMPLES
from tests.autograd.test_ops_pointwise import REFERENCE, UNARY_ROWS

B = 3  # batch size


def host(t):
    return t.detach().cpu().numpy()


def t64(*shape, device="cpu"):
    return (tg.randn(tuple(shape), dtype=tg.float64) * 0.7).to(device)


@pytest.fixture
def fallbacks(monkeypatch):
    """What ran once per batch entry instead of once for the batch: contract functions
    with no batching rule, ops, whole jvp rules."""
    seen = []
    each, op_pe, jvp_pe = batched.Batched._each, batched.op_per_entry, batched.jvp_per_entry

    def spy_each(self, fn, args, kwargs):
        seen.append(f"contract {fn.__name__}")
        return each(self, fn, args, kwargs)

    def spy_op(op, inputs, params, size):
        seen.append(f"op {op.op_name}")
        return op_pe(op, inputs, params, size)

    def spy_rule(run, tangents, size):
        seen.append("rule")
        return jvp_pe(run, tangents, size)

    monkeypatch.setattr(batched.Batched, "_each", spy_each)
    monkeypatch.setattr(batched, "op_per_entry", spy_op)
    monkeypatch.setattr(batched, "jvp_per_entry", spy_rule)
    return seen


def run_jvp(func, primals, tangents):
    """func's output tangents (None kept) for one tangent per primal (None: no tangent)."""
    with fwAD.dual_level():
        args = [p if t is None else fwAD.make_dual(p, t) for p, t in zip(primals, tangents)]
        outs = func(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return [fwAD.unpack_dual(o).tangent for o in outs]


def assert_batched_equals_loop(func, primals, with_tangent=None, device="cpu", every=True):
    """One pass with a batch of B random tangents per primal (those in ``with_tangent``,
    default all) against B passes with one tangent each. ``every``: each output's tangent
    must be a batch (else: None where the loop's are, or one tangent for all entries)."""
    with_tangent = range(len(primals)) if with_tangent is None else with_tangent
    stacks = [t64(B, *p.shape, device=p.device) if i in with_tangent else None
              for i, p in enumerate(primals)]
    got = run_jvp(func, primals, [None if s is None else batched.batch(s) for s in stacks])
    rows = [run_jvp(func, primals, [None if s is None else s[b].clone() for s in stacks])
            for b in range(B)]
    assert len(got) == len(rows[0])
    for j, g in enumerate(got):
        if not every and g is None:
            assert all(r[j] is None for r in rows), f"output {j}: no tangent from the batch"
            continue
        assert not every or isinstance(g, batched.BatchedTensor), f"output {j}: not a batch"
        stacked = batched.unbatch(g, B)
        assert tuple(stacked.shape) == (B,) + tuple(rows[0][j].shape)
        np.testing.assert_allclose(host(stacked), np.stack([host(r[j]) for r in rows]),
                                   rtol=1e-12, atol=1e-12)
    return got


# -- the common rules run once for the batch ------------------------------------------------

ELEMENTWISE = {
    "sin": lambda x: x.sin(),
    "exp_log": lambda x: (x.exp() + 1).log(),
    "tanh_sigmoid": lambda x: x.tanh() * x.sigmoid(),
    "relu_abs": lambda x: x.relu() + x.abs(),
    "pow_div": lambda x: x.pow(3) / (x * x + 1),
    "sqrt_clamp": lambda x: (x * x + 0.5).sqrt().clamp(0.6, 1.2),
    "where": lambda x: tg.where(x > 0, x * 2, x.exp()),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_batches(name, fallbacks):
    assert_batched_equals_loop(ELEMENTWISE[name], [t64(3, 4)])
    assert fallbacks == []


def test_binary_with_two_batched_tangents(fallbacks):
    assert_batched_equals_loop(lambda x, y: x * y + x / (y * y + 1) - y.exp(),
                               [t64(3, 4), t64(3, 4)])
    assert fallbacks == []


@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((4,), (3, 4)), ((2, 1, 4), (3, 1)),
                                    ((), (2, 3))])
def test_broadcasting(shapes, fallbacks):
    """Batched tangents of inputs of fewer dims than the result line up by their trailing
    dims, as unbatched ones do; the broadcast tangent is expanded to its output."""
    a, b = (t64(*s) for s in shapes)
    assert_batched_equals_loop(lambda x, y: x * y + x, [a, b])
    assert_batched_equals_loop(lambda x, y: x * y + x, [a, b], with_tangent=(0,))
    assert_batched_equals_loop(lambda x, y: x * y + x, [a, b], with_tangent=(1,))
    assert fallbacks == []


@pytest.mark.parametrize("func,shapes", [
    (lambda a, b: a @ b, ((3, 4), (4, 5))),
    (lambda a, b: a.mm(b), ((2, 3), (3, 2))),
    (lambda a, b: a.bmm(b), ((2, 3, 4), (2, 4, 2))),
    (lambda a, b: a @ b, ((4,), (4, 3))),
    (lambda a, b: a @ b, ((2, 3, 4), (4, 5))),
], ids=["matmul", "mm", "bmm", "vector-matrix", "batched-matrix"])
def test_matmul(func, shapes, fallbacks):
    a, b = (t64(*s) for s in shapes)
    assert_batched_equals_loop(func, [a, b])
    assert_batched_equals_loop(func, [a, b], with_tangent=(0,))
    assert_batched_equals_loop(func, [a, b], with_tangent=(1,))
    assert fallbacks == []


REDUCTIONS = {
    "sum": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(1, keepdim=True) * x,
    "mean": lambda x: x.mean(0),
    "var": lambda x: x.var(1),
    "amax": lambda x: x.amax(1),
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: x.log_softmax(0),
    "cumsum": lambda x: x.cumsum(1),
    "norm": lambda x: x.norm(),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name, fallbacks):
    assert_batched_equals_loop(REDUCTIONS[name], [t64(3, 4)])
    assert fallbacks == []


VIEWS = {
    "transpose": lambda x: x.t() * 2,
    "reshape": lambda x: x.reshape(2, 6).exp(),
    "view": lambda x: x.view(12).sin(),
    "slice": lambda x: x[1:, ::2] * x[:2, 1::2],
    "index_int": lambda x: x[1] + x[:, 2].sum(),
    "permute_unsqueeze": lambda x: x.unsqueeze(0).permute(2, 0, 1).squeeze(1),
    "expand": lambda x: x[:1].expand(5, 4),
    "unbind": lambda x: x.unbind(0),
    "split": lambda x: x.split(2, dim=1),
    "cat_stack": lambda x: tg.cat([x, x.exp()], 0) + tg.stack([x, x], 0).sum(0).repeat(2, 1),
    "as_strided": lambda x: x.as_strided((2, 2), (1, 4), 1),
    "contiguous": lambda x: x.t().contiguous().view(-1),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views(name, fallbacks):
    assert_batched_equals_loop(VIEWS[name], [t64(3, 4)])
    assert fallbacks == []


def test_non_contiguous_primal(fallbacks):
    """A tangent is laid out per entry as its primal is, so a view taken by strides (as_strided
    reads storage positions) reads each entry where it reads the primal."""
    base = t64(5, 6)
    primal = base[1:, 2:].t()  # strided, offset
    assert_batched_equals_loop(lambda x: x.as_strided((2, 3), (1, 6), 9) * 3, [primal])
    assert_batched_equals_loop(lambda x: (x @ x.t()).tanh(), [primal])
    assert fallbacks == []


def test_a_network_step(fallbacks):
    def f(x, w, b):
        h = (x @ w + b).tanh()
        return h.softmax(-1).log().mean(0), (h[:, :2] ** 2).sum()

    assert_batched_equals_loop(f, [t64(4, 3), t64(3, 5), t64(5)])
    assert fallbacks == []


def test_in_place_ops(fallbacks):
    def f(x, y):
        z = x.clone()
        z.mul_(y)
        z.add_(x.exp())
        return z

    assert_batched_equals_loop(f, [t64(3), t64(3)])
    assert fallbacks == []


def test_in_place_into_a_tensor_without_tangent():
    """copy_ of a dual into a plain tensor gives it a batch of tangents of its own."""
    x = t64(2, 3)
    stack = t64(B, 2, 3)
    with fwAD.dual_level():
        z = tg.zeros(2, 3, dtype=tg.float64)
        z.copy_(fwAD.make_dual(x, batched.batch(stack)))
        z.mul_(2)
        t = fwAD.unpack_dual(z).tangent
    np.testing.assert_allclose(host(batched.unbatch(t, B)), 2 * host(stack))


def test_tangent_of_an_output_that_does_not_depend_on_the_batch():
    """A rule whose result does not use the batched tangent (zero_jvp) gives an unbatched
    tangent, the same for every entry; unbatch expands it."""
    x = t64(4)
    with fwAD.dual_level():
        y = fwAD.make_dual(x, batched.batch(t64(B, 4))).floor()
        t = fwAD.unpack_dual(y).tangent
    assert np.all(host(batched.unbatch(t, B)) == 0) and tuple(batched.unbatch(t, B).shape) == (B, 4)


def test_batched_tangent_looks_like_one_example():
    stack = t64(B, 3, 4)
    t = batched.batch(stack)
    assert tuple(t.shape) == (3, 4) and t.dim() == 2 and t.numel() == 12
    assert tuple(t.stride()) == (4, 1) and t.is_contiguous()
    assert "batch_size=3" in repr(t)
    assert batched.unbatch(t, B) is not stack and np.array_equal(host(batched.unbatch(t, B)),
                                                                 host(stack))
    with pytest.raises(RuntimeError, match="leading batch dimension"):
        batched.batch(tg.tensor(1.0))


@pytest.mark.parametrize("name", ["sin", "tanh_sigmoid", "where"])
def test_cuda_elementwise(name, fallbacks):
    assert_batched_equals_loop(ELEMENTWISE[name], [t64(3, 4, device="cuda")], device="cuda")
    assert fallbacks == []


def test_cuda_matmul_and_reduction(fallbacks):
    a, b = t64(3, 4, device="cuda"), t64(4, 2, device="cuda")
    assert_batched_equals_loop(lambda x, y: (x @ y).softmax(1).sum(0), [a, b], device="cuda")
    assert fallbacks == []


# Contract functions with no batching rule in batched.py (the indexing kernels) run once
# per batch entry inside an otherwise batched rule, as does a device transfer.
PER_ENTRY = {"contract gather", "contract index", "contract index_put_", "contract scatter_",
             "op to",
             # (scatter_reduce's jvp scatters src's terms into their places, as its rule's
             # scatter_: one index for every entry)
             "op scatter_add",
             # (the decompositions run NumPy's LAPACK on the host, outside the kernel
             # contract: their jvp rules' solves go entry by entry)
             "op linalg_solve_ex", "op linalg_solve_triangular", "op linalg_matrix_exp"}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_jvp_rule_batches(name, fallbacks):
    """Every op with a jvp rule (test_forward_ad's samples): the batched tangents equal the
    loop's, and no rule falls back as a whole."""
    fn, inputs = SAMPLES[name]("cpu")
    assert_batched_equals_loop(fn, inputs, [i for i, t in enumerate(inputs)
                                            if t.dtype.is_floating_point], every=False)
    assert set(fallbacks) <= PER_ENTRY, fallbacks


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_every_unary_rule_batches(name, fallbacks):
    _, (lo, hi) = REFERENCE[name]
    x = tg.rand(3, 5, dtype=tg.float64) * (hi - lo) + lo
    assert_batched_equals_loop(UNARY_ROWS[name].fn, [x])
    assert fallbacks == []


# -- custom Functions ----------------------------------------------------------------------

class ScaledSin(Function):
    calls = 0

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_forward(x, y)
        ctx.save_for_backward(x, y)
        return x.sin() * y

    @staticmethod
    def jvp(ctx, x_t, y_t):
        ScaledSin.calls += 1
        x, y = ctx.saved_tensors
        return x_t * x.cos() * y + x.sin() * y_t

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * x.cos() * y, g * x.sin()


def test_custom_function_jvp_runs_once_for_the_batch(fallbacks):
    ScaledSin.calls = 0
    x, y = t64(3), t64(3)
    with fwAD.dual_level():
        out = ScaledSin.apply(fwAD.make_dual(x, batched.batch(t64(B, 3))), y)
        assert isinstance(fwAD.unpack_dual(out).tangent, batched.BatchedTensor)
    assert ScaledSin.calls == 1
    assert_batched_equals_loop(ScaledSin.apply, [x, y])
    assert_batched_equals_loop(ScaledSin.apply, [x, y], with_tangent=(1,))
    assert fallbacks == []


class ReadsValues(Function):
    """A jvp that reads its tangent's values: it cannot run on the batch, so it runs once per
    entry (the fallback) and its results are still right."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def jvp(ctx, x_t):
        return x_t * 2 + float(np.asarray(x_t).sum())

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError


def test_a_rule_that_cannot_batch_falls_back_per_entry(fallbacks):
    with fwAD.dual_level():
        out = ReadsValues.apply(fwAD.make_dual(t64(3), t64(3)))
        assert fwAD.unpack_dual(out).tangent is not None  # (unbatched: the plain path)
    assert fallbacks == []
    assert_batched_equals_loop(lambda x: ReadsValues.apply(x).exp(), [t64(3)])
    assert fallbacks == ["rule"]


# -- gradcheck ------------------------------------------------------------------------------

@pytest.mark.parametrize("func,n", [
    (lambda x: x.sin(), 1),
    (lambda x, y: x + y, 2),
    (lambda x, y: (x @ y).tanh().sum(1), 2),
    (lambda x: (x.t()[1:].softmax(0), x.sum()), 1),
    (ScaledSin.apply, 2),
])
def test_gradcheck_check_batched_forward_grad(func, n, fallbacks):
    inputs = [t64(3, 3).requires_grad_() for _ in range(n)]
    assert gradcheck(func, inputs, check_forward_ad=True, check_batched_forward_grad=True,
                     check_batched_grad=True)
    assert fallbacks == []


class CountingJvp(Function):
    """A jvp right for its first ``honest`` calls and wrong after: for a one-element input,
    gradcheck's Jacobian (one call) and its loop over the batch (two) are right and the
    batched pass (the fourth) disagrees, which gradcheck must report."""
    calls = 0
    honest = 3

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def jvp(ctx, x_t):
        CountingJvp.calls += 1
        return x_t * (1 if CountingJvp.calls <= CountingJvp.honest else 3)

    @staticmethod
    def backward(ctx, g):
        return g


def test_gradcheck_reports_a_batched_mismatch():
    x = t64(1).requires_grad_()
    CountingJvp.calls = 0
    with pytest.raises(GradcheckError, match="testing batched gradient computation with "
                                             "forward-mode AD"):
        gradcheck(CountingJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                  check_undefined_grad=False, check_batched_forward_grad=True)
    CountingJvp.calls = 0
    assert not gradcheck(CountingJvp.apply, (x,), check_forward_ad=True,
                         check_backward_ad=False, check_undefined_grad=False,
                         check_batched_forward_grad=True, raise_exception=False)


def test_gradcheck_counts_jvp_calls():
    """Per differentiable input: one forward pass per element (the Jacobian), two with one
    tangent each and ONE with the batch of two (PyTorch's counts)."""
    calls = [0]

    class Pair(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            calls[0] += 1
            return x_t, y_t

    x, y = t64(1).requires_grad_(), t64(1).requires_grad_()
    gradcheck(Pair.apply, (x, y), check_forward_ad=True, check_backward_ad=False,
              check_undefined_grad=False, check_batched_forward_grad=True)
    assert calls[0] == 2 + 2 * 3
    calls[0] = 0
    gradcheck(Pair.apply, (x, y.detach()), check_forward_ad=True, check_backward_ad=False,
              check_undefined_grad=False, check_batched_forward_grad=True)
    assert calls[0] == 1 + 3


def test_check_batched_forward_grad_needs_check_forward_ad():
    with pytest.raises(AssertionError, match="requires check_forward_ad"):
        gradcheck(lambda x: x, (t64(2).requires_grad_(),), check_batched_forward_grad=True)


# -- jacobian and hessian in forward mode -----------------------------------------------------

def test_forward_mode_jacobian_is_one_batched_pass(fallbacks):
    calls = [0]

    def f(x, y):
        calls[0] += 1
        return (x @ y).exp(), (x.sin() * 2).sum(0), y.t()

    x, y = t64(2, 3), t64(3, 4)
    fwd = jacobian(f, (x, y), vectorize=True, strategy="forward-mode")
    assert calls[0] == 1
    assert fallbacks == []
    rev = jacobian(f, (x, y))
    for fo, ro in zip(fwd, rev):
        for fj, rj in zip(fo, ro):
            assert tuple(fj.shape) == tuple(rj.shape) and not fj.requires_grad
            np.testing.assert_allclose(host(fj), host(rj), rtol=1e-12, atol=1e-12)


def test_forward_mode_jacobian_single_input_and_output():
    x = t64(3)
    fwd = jacobian(lambda v: v.exp() * v.sum(), x, vectorize=True, strategy="forward-mode")
    e = np.exp(host(x))
    expected = np.diag(e * host(x).sum()) + e[:, None]
    np.testing.assert_allclose(host(fwd), expected, rtol=1e-12)


def test_forward_mode_jacobian_of_an_output_without_tangent_and_empty_input():
    x, empty = t64(3), t64(0)
    jx, je = jacobian(lambda a, b: a.floor() + b.sum(), (x, empty), vectorize=True,
                      strategy="forward-mode")
    assert np.all(host(jx) == 0) and tuple(jx.shape) == (3, 3)
    assert tuple(je.shape) == (3, 0)


def test_forward_over_reverse_hessian(fallbacks):
    def f(x, y):
        return (x.exp() * y.sin()).sum() + (x @ y.view(3, 1)).sum() ** 2

    x, y = t64(3), t64(3)
    fwd = hessian(f, (x, y), vectorize=True, outer_jacobian_strategy="forward-mode")
    rev = hessian(f, (x, y))
    for fo, ro in zip(fwd, rev):
        for fj, rj in zip(fo, ro):
            np.testing.assert_allclose(host(fj), host(rj), rtol=1e-10, atol=1e-12)
    assert fallbacks == []


class DoubleInPlace(Function):
    """An in-place custom Function: its jvp must modify the (batched) tangent in place and
    return it as-is, which a batch allows as one tangent does."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def jvp(ctx, x_t):
        x_t.mul_(2)
        return x_t

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_in_place_custom_function_with_a_batch(fallbacks):
    assert_batched_equals_loop(lambda x: DoubleInPlace.apply(x.clone()).sin(), [t64(4)])
    assert fallbacks == []
