"""torch.autograd API parity, sweep 32 (/tmp/h32/autograd_sweep.py): the fixes it led to.

Each behaviour is checked against float64 NumPy references or explicit expectations, and, when
torch is installed, against torch 2.13 as well (``pytest.importorskip``).
"""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import forward_ad as fwAD
from tritongrad.autograd.graph import disable_saved_tensors_hooks, saved_tensors_hooks

X = np.array([1.0, -2.0, 0.5])
Y = np.array([3.0, 0.25, -1.5])


def leaf(lib, a=X):
    return lib.tensor(np.array(a, dtype=np.float64), requires_grad=True)


def kw_function(lib):
    """a * b * c with b passed by keyword: backward returns (g*b*c, g*a*c, None)."""
    class F(lib.autograd.Function):
        seen = []

        @staticmethod
        def forward(ctx, a, b=None, c=2.0):
            F.seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(a, b)
            ctx.c = c
            return a * b * c

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            F.seen.append(ctx.needs_input_grad)
            return g * b * ctx.c, g * a * ctx.c, None
    return F


# -- Function.apply: keyword arguments are inputs like positional ones ---------------------------

def test_function_tensor_passed_by_keyword_gets_its_gradient():
    F = kw_function(tg)
    a, b = leaf(tg), leaf(tg, Y)
    F.apply(a, b=b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * Y)
    np.testing.assert_allclose(b.grad.numpy(), 2.0 * X)  # (was None: the keyword was ignored)
    assert F.seen == [(True, True), (True, True)]


def test_function_keywords_bound_in_signature_order():
    F = kw_function(tg)
    a, b = leaf(tg), leaf(tg, Y)
    y = F.apply(a, c=5.0, b=b)
    assert F.seen == [(True, True, False)]
    np.testing.assert_allclose(y.detach().numpy(), X * Y * 5.0)
    y.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), 5.0 * X)


def test_function_unknown_keyword_names_forward():
    with pytest.raises(TypeError, match=r"^forward\(\) got an unexpected keyword argument 'nope'"):
        kw_function(tg).apply(leaf(tg), nope=3)


def test_function_keywords_match_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    out = {}
    for lib in (tg, torch):
        F = kw_function(lib)
        a, b = leaf(lib), leaf(lib, Y)
        F.apply(a, c=3.0, b=b).sum().backward()
        out[lib] = (F.seen, a.grad.detach().numpy(), b.grad.detach().numpy())
    assert out[tg][0] == out[torch][0]
    np.testing.assert_allclose(out[tg][1], out[torch][1])
    np.testing.assert_allclose(out[tg][2], out[torch][2])


# -- Function backward: a complex gradient for a real input is refused ---------------------------

def complex_grad_function(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).to(lib.complex128)
    return F


def test_function_complex_gradient_for_real_input_raises():
    x = leaf(tg)
    y = complex_grad_function(tg).apply(x).sum()
    with pytest.raises(RuntimeError, match="complex gradient"):
        y.backward()
    assert x.grad is None  # (it used to keep the real part silently)


def test_function_real_gradient_for_complex_input_is_accepted():
    class F(tg.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            return z * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).real  # a real gradient for a complex input: allowed, as in PyTorch
    z = tg.tensor(np.array([1 + 1j, 2 - 1j]), requires_grad=True)
    F.apply(z).abs().sum().backward()
    assert z.grad.dtype is tg.complex128


def test_function_complex_gradient_error_type_matches_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    for lib in (tg, torch):
        y = complex_grad_function(lib).apply(leaf(lib)).sum()
        with pytest.raises(RuntimeError):
            y.backward()


# -- ctx methods validate their arguments ----------------------------------------------------------

def ctx_call_function(lib, call):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            call(ctx, x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g
    return F


CTX_CALLS = {
    "mark_dirty": (lambda ctx, x: ctx.mark_dirty(3), RuntimeError,
                   "mark_dirty can only accept variables"),
    "mark_non_differentiable": (lambda ctx, x: ctx.mark_non_differentiable(x, "s"), RuntimeError,
                                "mark_non_differentiable only accepts variable arguments"),
    "set_materialize_grads": (lambda ctx, x: ctx.set_materialize_grads(0), TypeError,
                              "set_materialize_grads"),
}


@pytest.mark.parametrize("name", sorted(CTX_CALLS))
def test_ctx_methods_refuse_bad_arguments(name):
    call, err, msg = CTX_CALLS[name]
    with pytest.raises(err, match=msg):
        ctx_call_function(tg, call).apply(leaf(tg))


@pytest.mark.parametrize("name", sorted(CTX_CALLS))
def test_ctx_method_errors_match_torch(name):
    torch = pytest.importorskip("torch", minversion="2.13")
    call, err, msg = CTX_CALLS[name]
    with pytest.raises(err, match=msg):
        ctx_call_function(torch, call).apply(leaf(torch))


# -- grad mode inside inference mode -------------------------------------------------------------

def inference_enable_grad(lib):
    x = leaf(lib)
    with lib.inference_mode():
        with lib.enable_grad():
            y = x * 2
            inside = (lib.is_grad_enabled(), y.requires_grad, y.is_inference())
        with lib.set_grad_enabled(True):
            z = x * 3
            inside_set = (lib.is_grad_enabled(), z.requires_grad)
        after_inner = lib.is_grad_enabled()
        with lib.no_grad():
            nograd = lib.is_grad_enabled()
    return inside, inside_set, after_inner, nograd, lib.is_grad_enabled()


def test_enable_grad_inside_inference_mode_records_nothing():
    inside, inside_set, after_inner, nograd, outside = inference_enable_grad(tg)
    # grad mode reads True, but inference mode still records no graph (was: a graph)
    assert inside == (True, False, True)
    assert inside_set == (True, False)
    assert after_inner is False and nograd is False and outside is True


def test_grad_mode_inside_inference_mode_matches_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    assert inference_enable_grad(tg) == inference_enable_grad(torch)


def test_inference_mode_false_inside_still_records():
    x = leaf(tg)
    with tg.inference_mode():
        with tg.inference_mode(False):
            y = x * 2
            assert tg.is_grad_enabled() and y.requires_grad and not y.is_inference()
        assert not tg.is_grad_enabled()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))


def test_grad_mode_restored_after_exception_in_inference_mode():
    with tg.inference_mode():
        with pytest.raises(ValueError):
            with tg.enable_grad():
                raise ValueError
        assert tg.is_grad_enabled() is False
    assert tg.is_grad_enabled() is True and not tg.is_inference_mode_enabled()


def test_set_grad_enabled_function_form_inside_inference_mode():
    with tg.inference_mode():
        tg.set_grad_enabled(True)
        assert tg.is_grad_enabled() and not (leaf(tg) * 2).requires_grad
    assert tg.is_grad_enabled()


def test_inference_mode_refuses_non_bool():
    with pytest.raises(TypeError, match="inference_mode"):
        tg.inference_mode("yes")


@pytest.mark.parametrize("lib_name", ["tritongrad", "torch"])
def test_forward_ad_is_off_in_inference_mode(lib_name):
    lib = tg if lib_name == "tritongrad" else pytest.importorskip("torch", minversion="2.13")
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(lib.tensor(X), lib.tensor(Y))
        with lib.inference_mode():
            y = d * 2
        z = d * 2  # the level is back after the block
        assert fw.unpack_dual(y).tangent is None
        np.testing.assert_allclose(fw.unpack_dual(z).tangent.numpy(), 2 * Y)
        np.testing.assert_allclose(y.numpy(), 2 * X)


# -- disable_saved_tensors_hooks as a decorator ---------------------------------------------------

@pytest.mark.parametrize("lib_name", ["tritongrad", "torch"])
def test_disable_saved_tensors_hooks_decorates(lib_name):
    lib = tg if lib_name == "tritongrad" else pytest.importorskip("torch", minversion="2.13")
    graph = lib.autograd.graph

    @graph.disable_saved_tensors_hooks("no hooks in here")
    def f(x):
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            return x * 2
    with pytest.raises(RuntimeError, match="no hooks in here"):
        f(leaf(lib))
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # restored afterwards
        pass


def test_disable_saved_tensors_hooks_decorator_keeps_plain_saving():
    @disable_saved_tensors_hooks("nope")
    def f(x):
        return (x * x).sum()
    x = leaf(tg)
    f(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * X)
    assert f.__name__ == "f"
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


# -- unpack_dual's argument error ----------------------------------------------------------------

def test_unpack_dual_non_tensor_message():
    with fwAD.dual_level():
        with pytest.raises(TypeError, match=r"\(position 1\) must be Tensor, not float"):
            fwAD.unpack_dual(3.0)


# -- grad / backward with inputs as a dict (PyTorch 2.13) -----------------------------------------

def dict_inputs(lib):
    x, z, w = leaf(lib), leaf(lib, Y), leaf(lib)
    g = lib.autograd.grad((x * x * 3 + z).sum(), {"x": x, "z": z})
    unused = lib.autograd.grad((x * 2).sum(), {"x": x, "w": w}, allow_unused=True)
    lib.autograd.backward((x * z).sum(), inputs={"z": z})
    return g, unused, x.grad, z.grad


def test_grad_and_backward_take_dict_inputs():
    g, unused, xg, zg = dict_inputs(tg)
    assert list(g) == ["x", "z"] and list(unused) == ["x", "w"]
    np.testing.assert_allclose(g["x"].numpy(), 6 * X)
    np.testing.assert_allclose(g["z"].numpy(), np.ones(3))
    np.testing.assert_allclose(unused["x"].numpy(), np.full(3, 2.0))
    assert unused["w"] is None
    assert xg is None  # backward(inputs=...) accumulated into z alone
    np.testing.assert_allclose(zg.numpy(), X)


def test_dict_inputs_match_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    ours, theirs = dict_inputs(tg), dict_inputs(torch)
    for a, b in zip(ours[:2], theirs[:2]):
        assert list(a) == list(b)
        for k in a:
            assert (a[k] is None) == (b[k] is None)
            if a[k] is not None:
                np.testing.assert_allclose(a[k].numpy(), b[k].numpy())
    assert ours[2] is None and theirs[2] is None
    np.testing.assert_allclose(ours[3].numpy(), theirs[3].numpy())


def test_only_inputs_warning_points_at_the_caller():
    x = leaf(tg)
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated") as rec:
        tg.autograd.grad((x * 3).sum(), x, only_inputs=False)
    assert rec[0].filename == __file__
