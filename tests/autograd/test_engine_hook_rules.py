"""Engine and hook semantics that follow PyTorch's engine: which hooks run when and on what,
backward to a GradientEdge, create_graph warnings, anomaly-mode reports, module backward
hooks, and the gradcheck behaviours around them. Values are hand-derived."""

import gc
import io
import sys
import warnings

import numpy as np
import pytest
from tritongrad.autograd import Function, GradcheckError, detect_anomaly, gradcheck, gradgradcheck
from tritongrad.autograd import engine
from tritongrad.autograd.graph import GradientEdge, get_gradient_edge

import tritongrad as torch
from tritongrad import nn


def rand64(*shape, requires_grad=True):
    return torch.rand(*shape, dtype=torch.float64, requires_grad=requires_grad)


# -- node and tensor hooks ----------------------------------------------------------------------

def _prehook_log():
    log = []

    def hook1(g):
        log.append(1)
        return g * 3

    def hook2(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = torch.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(hook2)
    b.register_hook(hook1)
    b.grad_fn.register_prehook(hook2)
    return log, a, b


def test_backward_inputs_non_leaf_runs_its_node_and_retains_its_grad():
    # backward(inputs=[b]) runs b's node (its pre-hooks too), and b.grad is what retain_grad
    # sees: after the tensor hook (x3), before the node's pre-hooks.
    log, a, b = _prehook_log()
    b.sum().backward(inputs=(b,))
    assert log == [1, 2, 2]
    assert b.grad.item() == 3.0 and b.retains_grad
    assert a.grad is None  # (its AccumulateGrad is not on a path to an input)


def test_grad_runs_leaf_tensor_hooks_and_prehooks_of_the_path():
    log, a, b = _prehook_log()
    a.register_hook(lambda g: (log.append(1), g)[1])
    (g,) = torch.autograd.grad(b.sum(), inputs=(a,))
    assert log == [1, 2, 2, 1]
    assert g.item() == 12.0  # 1 * 3 * 2 * 2


def test_leaf_hooks_order_with_an_adopted_gradient():
    # tensor hook, AccumulateGrad pre-hook, post-accumulate hook, AccumulateGrad post-hook; the
    # first .grad is the engine's gradient itself, so the post-hook sees the in-place +0.5:
    # ((1 - 2) / 5 + 0.5) * 10 = 3
    t = torch.rand(3, requires_grad=True)
    acc = t.view_as(t).grad_fn.next_functions[0][0]
    t.register_hook(lambda g: g.sub(2.0))
    acc.register_prehook(lambda go: (go[0].div(5.0),))

    def post_accumulate(x):
        x.grad.add_(0.5)

    t.register_post_accumulate_grad_hook(post_accumulate)

    def post(grad_in, grad_out):
        t.grad = grad_out[0].mul(10)

    acc.register_hook(post)
    t.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), [3.0, 3.0, 3.0], rtol=1e-6)


def test_post_hooks_run_when_every_gradient_is_none():
    x = torch.ones(2, requires_grad=True)
    y = x.clone()
    z = y * 2
    log = []
    y.grad_fn.register_prehook(lambda g: (None,))
    y.grad_fn.register_hook(lambda gi, go: log.append((gi, go)))
    z.sum().backward()
    assert log == [((None,), (None,))]
    assert x.grad is None


# -- GradientEdge roots and inputs --------------------------------------------------------------

def test_backward_to_a_leaf_edge_creates_the_implicit_gradient():
    x = torch.tensor([2.0], requires_grad=True)
    torch.autograd.backward(get_gradient_edge(x))
    assert x.grad.tolist() == [1.0]


def test_backward_to_an_edge_noted_by_its_node_outlives_the_tensor():
    inp = rand64(1).clone()
    out = inp.clone()
    edge = GradientEdge(out.grad_fn, out.output_nr)
    edge.node._note_output(edge.output_nr, out)  # (what get_gradient_edge does)
    del out
    torch.autograd.backward(edge)
    torch.autograd.backward(edge)  # (CloneBackward saves nothing: a second run is fine)


def test_backward_to_an_edge_without_a_scalar_shape_needs_its_gradient():
    x = rand64(3)
    y = x * 2
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        torch.autograd.backward(GradientEdge(y.grad_fn, 0))  # (no shape known)
    with pytest.raises(RuntimeError, match=r"output 0 has shape \[3\]"):
        torch.autograd.backward(get_gradient_edge(x))
    torch.autograd.backward(GradientEdge(y.grad_fn, 0), torch.ones(3, dtype=torch.float64))
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_materialize_grads_with_edges_fails_only_for_an_unused_edge():
    x = rand64(2).clone()
    y = rand64(2).clone()
    out = x.clone()
    gx, gy = torch.autograd.grad(out.sum(), (GradientEdge(x.grad_fn, x.output_nr), y),
                                 allow_unused=True, materialize_grads=True)
    assert gx.tolist() == [1.0, 1.0] and gy.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used when the given "
                                           "input is a GradientEdge"):
        torch.autograd.grad(out.sum(), (x, GradientEdge(y.grad_fn, y.output_nr)),
                            allow_unused=True, materialize_grads=True)


# -- create_graph -------------------------------------------------------------------------------

def test_backward_with_create_graph_warns_about_the_grad_cycle(monkeypatch):
    monkeypatch.setattr(engine, "_warned", dict(engine._warned, create_graph=False))  # (once)
    b = rand64(3)
    c = b * b
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        c.backward(torch.ones_like(c), create_graph=True)
    assert any("Using backward() with create_graph=True" in str(w.message) for w in ws)
    b.grad = None
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        torch.autograd.grad(c, b, torch.ones_like(c), create_graph=True)
    assert not any("Using backward() with create_graph=True" in str(w.message) for w in ws)


# -- module full backward hooks -----------------------------------------------------------------

def test_module_backward_hook_node_is_named_as_pytorch_names_it():
    lin = nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gi, go: None)
    out = lin(torch.ones(1, 2, requires_grad=True))
    assert out.grad_fn.name() == "BackwardHookFunctionBackward"


def test_module_backward_hook_grad_input_has_one_entry_per_positional_argument():
    class M(nn.Module):
        def forward(self, x, s, y):
            return x * s * y

    seen = []
    m = M()
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    x = torch.ones(2, requires_grad=True)
    m(x, 3.0, torch.full((2,), 2.0)).sum().backward()
    (gi,) = seen
    # a tensor argument that needs no gradient gets zeros (PyTorch 2.13 prints
    # (tensor([6., 6.]), None, tensor([0., 0.]))); the float argument None
    assert len(gi) == 3 and gi[1] is None
    assert gi[0].tolist() == [6.0, 6.0] and gi[2].tolist() == [0.0, 0.0]


def test_module_backward_hook_does_not_fire_again_in_double_backward():
    x = rand64(1)
    y = torch.rand_like(x)
    loss = nn.MSELoss()
    calls = []
    loss.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    f = loss(x, y)
    (gx,) = torch.autograd.grad(f, x, create_graph=True)
    assert calls == [1]
    (ggx,) = torch.autograd.grad(gx, x)  # through the inputs' hook node, not the outputs'
    assert calls == [1]
    assert ggx.tolist() == [2.0]  # d/dx 2 (x - y)


def test_module_backward_hook_without_input_grad_warns_and_fires_from_outputs():
    w = torch.ones(2, requires_grad=True)

    class UsesParam(nn.Module):
        def forward(self, x):
            return x * w

    calls = []
    u = UsesParam()
    u.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, go[0].tolist())))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are "
                                         "computed with respect to module outputs"):
        u(torch.ones(2)).sum().backward()
    assert calls == [((None,), [1.0, 1.0])]


def test_module_backward_hooks_and_create_graph_leave_no_live_graph():
    class Obj:
        pass

    a = torch.tensor(1.0, requires_grad=True)

    class Sq(nn.Module):
        def forward(self, x):
            return x ** 2 * a ** 2

    m = Sq()
    m.register_full_backward_hook(lambda *args: None)
    tmp = m(rand64(4))
    obj = Obj()
    ref = __import__("weakref").ref(obj)
    tmp.grad_fn.metadata["a"] = obj
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmp.exp().sum().backward(create_graph=True)
    a.grad = None
    del tmp, obj
    gc.collect()
    assert ref() is None


# -- anomaly mode -------------------------------------------------------------------------------

class _Outer(Function):
    """Its backward calls _Inner, whose backward produces a NaN in gradient ``nan_at``."""

    @staticmethod
    def forward(ctx, x, nan_at):
        ctx.nan_at = nan_at
        ctx.save_for_backward(x)
        return x.sum(0, keepdim=True)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        g = g.expand(3)
        return _Inner.apply(g * x, g + x, ctx.nan_at), None


class _Inner(Function):
    @staticmethod
    def forward(ctx, a, b, nan_at):
        ctx.nan_at = nan_at
        return a + b

    @staticmethod
    def backward(ctx, g):
        grads = [g.clone(), g.clone()]
        grads[ctx.nan_at] = grads[ctx.nan_at] * float("nan")
        return grads[0], grads[1], None


def test_anomaly_nan_without_forward_information():
    x = rand64(3)
    (gx,) = torch.autograd.grad(_Outer.apply(x, 0), x, create_graph=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function '_InnerBackward' returned nan values "
                                               "in its 0th output."), detect_anomaly():
            gx.sum().backward()
    messages = [str(m.message) for m in w]
    assert "Anomaly Detection has been enabled" in messages[0]
    assert messages[1].startswith("Error detected in _InnerBackward. No forward pass "
                                  "information available.")
    assert len(messages) == 2


def test_anomaly_reports_the_node_and_the_backward_that_created_it():
    x = rand64(3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="returned nan values in its 1th output"), \
                detect_anomaly():
            (gx,) = torch.autograd.grad(_Outer.apply(x, 1), x, create_graph=True)
            gx.sum().backward()
    messages = [str(m.message) for m in w]
    assert messages[1].startswith("Error detected in _InnerBackward. Traceback of forward call")
    assert "_Inner.apply" in messages[1]
    assert messages[2].startswith("\n\nPrevious calculation was induced by _OuterBackward. "
                                  "Traceback of forward call that induced the previous "
                                  "calculation:")
    assert "_Outer.apply" in messages[2]


def test_anomaly_reports_only_when_enabled_during_backward():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with detect_anomaly():
            a = rand64(3)
            d1 = a + 1
            d2 = d1 ** 2
    d1 += 1
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            d2.sum().backward()
    assert not [m for m in w if "Error detected" in str(m.message)]


def test_anomaly_report_goes_to_stderr_when_warnings_are_errors(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with warnings.catch_warnings(), detect_anomaly():
        warnings.simplefilter("error")
        a = rand64(5)
        d1 = a + 1
        d2 = d1 ** 2
        d1 += 1
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            torch.autograd.grad(d2.sum(), a)
    assert "UserWarning: Error detected in PowBackward0" in err.getvalue()


# -- gradcheck ----------------------------------------------------------------------------------

def test_gradcheck_argument_combinations_are_assertions():
    x = rand64(2)
    with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or "
                                             "check_backward_ad to be True"):
        gradcheck(lambda t: t * 2, (x,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="Setting check_batched_grad=True requires "
                                             "check_backward_ad to be True"):
        gradcheck(lambda t: t * 2, (x,), check_forward_ad=True, check_backward_ad=False,
                  check_batched_grad=True)
    with pytest.raises(AssertionError, match="Expected at least one of check_fwd_over_rev"):
        gradgradcheck(lambda t: t * 2, (x,), check_rev_over_rev=False)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_output_shape_or_dtype_that_depends_on_values(fast_mode):
    a = torch.ones(1, dtype=torch.float64, requires_grad=True)

    def grows(x):
        return torch.cat([x, x]) if bool((x >= 1).all()) else x

    def casts(x):
        return x.to(torch.float32) if bool((x >= 1).all()) else x

    with pytest.raises(AssertionError, match="return outputs with the same shape when inputs "
                                             "are perturbed"):
        gradcheck(grows, (a,), fast_mode=fast_mode, raise_exception=False)
    with pytest.raises(AssertionError, match="return outputs with the same dtype when inputs "
                                             "are perturbed"):
        gradcheck(casts, (a,), fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_undefined_grad_failure_warns(fast_mode):
    def fn(x):
        def hook(g):
            if g is None:
                raise RuntimeError("x is undefined")

        y = x.clone()
        y.register_hook(hook)
        return y

    x = torch.ones(1, dtype=torch.float64, requires_grad=True)
    bc_warning = "Backwards compatibility: New undefined gradient support checking feature"
    with pytest.warns(UserWarning, match=bc_warning), \
            pytest.raises(GradcheckError, match="Expected backward function to handle "
                                                "undefined output grads"):
        gradcheck(fn, (x,), fast_mode=fast_mode)
    with pytest.warns(UserWarning, match=bc_warning):
        assert not gradcheck(fn, (x,), raise_exception=False, fast_mode=fast_mode)


def test_gradcheck_checks_undefined_tangents_once_per_input_and_case():
    calls = [0]

    class Twice(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            calls[0] += 1
            return x_t, y_t

    x, y = rand64(1), rand64(1)
    kw = {"check_forward_ad": True, "check_backward_ad": False, "check_batched_grad": False}
    assert gradcheck(Twice.apply, (x, y), check_undefined_grad=False, **kw)
    assert calls[0] == 2  # one tangent per input element
    calls[0] = 0
    assert gradcheck(Twice.apply, (x, y), check_undefined_grad=True, **kw)
    assert calls[0] == 6  # + (zero tangent, no tangent) for each of the 2 inputs
    calls[0] = 0
    assert gradcheck(Twice.apply, (x, rand64(1, requires_grad=False)), **kw)
    assert calls[0] == 2  # 1 + zero tangent; with no tangent at all jvp is not called


def test_gradcheck_catches_a_jvp_that_differs_for_zero_and_missing_tangent():
    class Odd(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.set_materialize_grads(False)  # (a missing tangent reaches jvp as None)
            ctx.x, ctx.y = x.detach(), y.detach()
            return x * y

        @staticmethod
        def jvp(ctx, x_t, y_t):
            # right with one tangent (what the Jacobian check gives it), but it drops y's term
            # when both are given: a zero tangent for x then differs from none
            if x_t is not None and y_t is not None:
                return x_t * ctx.y
            return x_t * ctx.y if y_t is None else y_t * ctx.x

    with pytest.raises(GradcheckError, match="Mismatch in tangent values for output with "
                                             "index: 0"):
        gradcheck(Odd.apply, (rand64(1), rand64(1)), check_forward_ad=True,
                  check_backward_ad=False)


def test_deprecated_numerical_jacobian():
    from tritongrad.autograd.gradcheck import get_numerical_jacobian

    def fn(inputs):
        x, y = inputs
        return 2 * x + y, x + 2 * y

    a, b = rand64(2, 2), rand64(2, 2)
    with pytest.warns(FutureWarning, match="`get_numerical_jacobian` was part of PyTorch's "
                                           "private API"):
        (ja,) = get_numerical_jacobian(fn, (a, b), target=a, eps=1e-6)
    np.testing.assert_allclose(ja.numpy(), 2 * np.eye(4), atol=1e-6)
    with pytest.warns(FutureWarning):
        ja, jb = get_numerical_jacobian(fn, (a, b), eps=1e-6)
    np.testing.assert_allclose(jb.numpy(), np.eye(4), atol=1e-6)
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="Expected grad_out to "
                                                                      "be 1.0"):
        get_numerical_jacobian(fn, (a, b), eps=1e-6, grad_out=2.0)


def test_deprecated_analytical_jacobian_reports_reentrancy():
    from tritongrad.autograd.gradcheck import get_analytical_jacobian
    a, b = rand64(2, 2), rand64(2, 2)
    with pytest.warns(FutureWarning, match="`get_analytical_jacobian` was part of PyTorch's "
                                           "private API"):
        jacs, reentrant, sizes_ok, types_ok = get_analytical_jacobian((a, b), 2 * a + b)
    np.testing.assert_array_equal(jacs[0].numpy(), 2 * np.eye(4))
    np.testing.assert_array_equal(jacs[1].numpy(), np.eye(4))
    assert reentrant and sizes_ok and types_ok

    class Jitter(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * (1 + torch.rand_like(g) * 1e-6)

    with pytest.warns(FutureWarning):
        _, reentrant, _, _ = get_analytical_jacobian((a,), Jitter.apply(a))
    assert not reentrant
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="Expected grad_out to "
                                                                      "be 1.0"):
        get_analytical_jacobian((a,), 2 * a, grad_out=2.0)


def test_gradcheck_name_is_the_function_and_its_module_has_the_helpers():
    import importlib
    assert callable(torch.autograd.gradcheck)
    mod = importlib.import_module("tritongrad.autograd.gradcheck")
    assert callable(mod.get_numerical_jacobian) and callable(mod.get_analytical_jacobian)


def test_materialized_zeros_require_grad_only_under_create_graph():
    x = torch.ones(4, requires_grad=True)
    unused = torch.ones(4, requires_grad=True)
    for create_graph in (False, True):
        z = (x ** 2).sum()
        gx, gu = torch.autograd.grad(z, (x, unused), allow_unused=True, materialize_grads=True,
                                  create_graph=create_graph)
        assert gu.tolist() == [0.0] * 4
        assert gu.requires_grad is create_graph
        assert gx.requires_grad is create_graph
