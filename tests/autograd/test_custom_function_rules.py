"""PyTorch's rules for what a custom Function's outputs are (autograd/function.py): inputs
returned as-is or marked dirty, non-differentiable outputs, once_differentiable's Error node,
materialized gradients; and the checks of a custom ``jvp``'s results under forward AD, with
make_dual's and in-place tangents' rules (autograd/forward_ad.py, dispatch.py)."""

import gc
import warnings
import weakref

import numpy as np
import pytest
import tritongrad.autograd.forward_ad as fwAD
from tritongrad.autograd import Function
from tritongrad.autograd.function import once_differentiable

import tritongrad as tg


def _f64(values, requires_grad=False):
    return tg.tensor(values, dtype=tg.float64, requires_grad=requires_grad)


def _fn(name: str, forward, **rules) -> type:
    """A custom Function called ``name`` with ``forward`` and the given static rules."""
    body = {k: staticmethod(v) for k, v in dict(rules, forward=forward).items()}
    return type(name, (Function,), body)


def _graph(fn) -> str:
    if fn is None:
        return "None"
    return type(fn).__name__ + "(" + ", ".join(_graph(f) for f, _ in fn.next_functions) + ")"


# -- backward side ---------------------------------------------------------------------------

def test_once_differentiable_results_hang_from_one_error_node():
    def backward(ctx, g):
        return g * 2, None, g * 3

    fn = _fn("Twice", lambda ctx, a, s, b: a * 2 + b * 3,
             backward=once_differentiable(backward))
    a, b = _f64([1.0, 2.0], True), _f64([3.0, 4.0], True)
    go = _f64(1.0, True)
    ga, gb = tg.autograd.grad(fn.apply(a, 5, b).sum(), (a, b), go, create_graph=True)
    # PyTorch's Error node: one edge per result, None for the one that is not a tensor
    assert ga.grad_fn is gb.grad_fn
    assert _graph(ga.grad_fn) == "Error(AccumulateGrad(), None, AccumulateGrad())"
    np.testing.assert_allclose(ga.detach().numpy(), [2.0, 2.0])
    np.testing.assert_allclose(gb.detach().numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked "
                                           "with @once_differentiable"):
        ga.sum().backward()


def test_non_differentiable_outputs_get_none_when_not_materialized():
    seen = []

    def forward(ctx, x, materialize):
        a, b = x.clone(), x.clone()
        ctx.mark_non_differentiable(b)
        ctx._materialize_non_diff_grads = materialize
        return a, b

    def backward(ctx, ga, gb):
        seen.append(gb)
        return ga, None

    fn = _fn("TwoOut", forward, backward=backward)
    x = _f64([1.0, 2.0], True)
    fn.apply(x, False)[0].sum().backward()
    fn.apply(x, True)[0].sum().backward()
    assert seen[0] is None
    np.testing.assert_allclose(seen[1].numpy(), [0.0, 0.0])  # the default: zeros


def test_defining_both_backward_and_vjp_is_refused():
    fn = _fn("Both", lambda ctx, x: x.clone(), backward=lambda ctx, g: g, vjp=lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp' for a "
                                           "custom Function is not allowed"):
        fn.apply(_f64([1.0], True)).sum().backward()
    only_vjp = _fn("OnlyVjp", lambda ctx, x: x * 2, vjp=lambda ctx, g: g * 2)
    x = _f64([1.0], True)
    only_vjp.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])


def test_an_input_returned_as_is_comes_back_as_a_view_of_it():
    ident = _fn("Ident", lambda ctx, x: x, backward=lambda ctx, g: g * 3)
    x = _f64([1.0, 2.0], True).clone()
    y = ident.apply(x)
    assert y is not x and y._base is x and y.grad_fn.name() == "IdentBackward"
    with pytest.raises(RuntimeError, match="Output 0 of Ident is a view and is being modified "
                                           "inplace. This view was created inside a custom "
                                           "Function \\(or because an input was returned"):
        y.add_(1)
    with tg.no_grad():  # nothing recorded: a detached alias of an input that requires grad
        z = ident.apply(x)
    assert z._base is None and not z.requires_grad
    w = ident.apply(_f64([1.0]))  # an input that requires no grad: a view of it
    assert w._base is not None and not w.requires_grad


def test_a_view_output_modified_inside_forward_keeps_the_function_history():
    def forward(ctx, x):
        v = x.clone()[:2]
        v += 2  # the view's own write, before it is given the Function's history
        return v

    fn = _fn("Local", forward, backward=lambda ctx, g: tg.cat([g, g.new_zeros(1)]))
    x = _f64([1.0, 2.0, 3.0], True)
    y = fn.apply(x)
    assert y.grad_fn.name() == "LocalBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0, 0.0])


def test_several_differentiable_outputs_make_their_views_unwritable():
    fn = _fn("Split", lambda ctx, x: (x[:1], x[1:]), backward=lambda ctx, a, b: tg.cat([a, b]))
    a, _ = fn.apply(_f64([1.0, 2.0], True).clone())
    with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
        a.mul_(2)


def test_mark_dirty_rules():
    def non_input(ctx, a):
        c = a * 3
        c.add_(1)
        ctx.mark_dirty(c)
        return c

    bad = _fn("NonInput", non_input, backward=lambda ctx, g: g * 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        bad.apply(_f64([1.0], True).clone())
    assert len(w) == 1 and "received a tensor that was not an input" in str(w[0].message)

    def view_of_intermediate(ctx, a):
        out = a.clone().view_as(a)
        ctx.mark_dirty(out)
        return out

    worse = _fn("ViewOfIntermediate", view_of_intermediate, backward=lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="received a tensor that was not an input"):
        worse.apply(_f64([1.0], True).clone())

    def not_returned(ctx, a):
        a.add_(1)
        ctx.mark_dirty(a)
        return a.clone()

    lost = _fn("NotReturned", not_returned, backward=lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not "
                                           "returned as output"):
        lost.apply(_f64([1.0], True).clone())

    def two_outputs(ctx, a, b):
        a.add_(b)
        ctx.mark_dirty(a)
        return a, a + b

    two = _fn("TwoOutputs", two_outputs, backward=lambda ctx, ga, gb: (ga + gb, ga + gb))
    b = _f64([1.0], True)
    with pytest.raises(RuntimeError, match="modifies inplace an input that is a view of another "
                                           "Tensor, your Function cannot return more than one"):
        two.apply(_f64([1.0], True).clone().view_as(b), b)
    c, d = two.apply(_f64([1.0], True).clone(), b)  # not a view: allowed
    np.testing.assert_allclose((c * d).detach().numpy(), [6.0])


def test_saving_a_mutated_view_makes_no_reference_cycle():
    def forward(ctx, x):
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    fn = _fn("SaveDirty", forward, backward=lambda ctx, g: g)

    def scope():
        x = _f64(1.0, True).clone().view_as(_f64(1.0))
        fn.apply(x)
        return weakref.ref(x)

    gc.disable()  # freed by reference counting alone, as in PyTorch
    try:
        assert scope()() is None
    finally:
        gc.enable()


# -- forward AD --------------------------------------------------------------------------------

def test_jvp_must_return_none_for_non_differentiable_outputs():
    def forward(ctx, x, y):
        out = y.clone()
        ctx.mark_non_differentiable(out)
        return x.clone(), out

    marked = _fn("Marked", forward, jvp=lambda ctx, tx, ty: (tx, None))
    wrong = _fn("Wrong", forward, jvp=lambda ctx, tx, ty: (tx, tx.clone()))
    seen = []

    def jvp(ctx, tx, ty):
        seen.append(ty)
        return tx, None

    integer = _fn("Integer", lambda ctx, x, y: (x.clone(), y.clone()), jvp=jvp)
    with fwAD.dual_level():
        d = fwAD.make_dual(_f64(2.0), _f64(1.0))
        _, out = marked.apply(d, _f64(3.0))
        assert fwAD.unpack_dual(out).tangent is None
        with pytest.raises(RuntimeError, match="You should return None at that position"):
            wrong.apply(d, _f64(3.0))
        _, out = integer.apply(d, tg.tensor(3))
        assert seen == [None]  # an integer input gets no zero tangent
        assert fwAD.unpack_dual(out).tangent is None


def test_jvp_of_an_inplace_function_must_modify_the_tangent_inplace():
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.mul_(2)

    good = _fn("Good", forward, backward=lambda ctx, g: g * 2, jvp=lambda ctx, t: t.mul_(2))
    lazy = _fn("Lazy", forward, backward=lambda ctx, g: g * 2, jvp=lambda ctx, t: t)
    fresh = _fn("Fresh", forward, backward=lambda ctx, g: g * 2,
                jvp=lambda ctx, t: t.mul_(2).clone())
    with fwAD.dual_level():
        tangent = _f64([1.0, 2.0])
        d = fwAD.make_dual(_f64([1.0, 1.0]), tangent)
        out = good.apply(d)
        assert out is d and fwAD.unpack_dual(out).tangent is tangent
        np.testing.assert_allclose(tangent.numpy(), [2.0, 4.0])
        with pytest.raises(RuntimeError, match="not modifying the forward mode gradients "
                                               "inplace"):
            lazy.apply(d)
        with pytest.raises(RuntimeError, match="not returning the forward mode gradients "
                                               "as-is"):
            fresh.apply(d)
        # an input without a tangent gets the one jvp returned (as an in-place op's)
        plain = _f64([1.0, 1.0])
        other = fwAD.make_dual(_f64([0.0, 0.0]), _f64([5.0, 6.0]))
        both = _fn("Both", lambda ctx, x, y: (ctx.mark_dirty(x), x.add_(y))[1],
                   jvp=lambda ctx, tx, ty: tx.add_(ty))
        out = both.apply(plain, other)
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), [5.0, 6.0])


def test_jvp_of_a_view_output_must_be_the_same_view_of_the_input_tangent():
    def view_jvp(ctx, t):
        return t.narrow(0, 0, 1)

    ok = _fn("Ok", lambda ctx, x: x.narrow(0, 0, 1), jvp=view_jvp)
    copy = _fn("Copy", lambda ctx, x: x.narrow(0, 0, 1), jvp=lambda ctx, t: view_jvp(ctx, t) * 1)
    other = _fn("Other", lambda ctx, x: x.narrow(0, 0, 1),
                jvp=lambda ctx, t: view_jvp(ctx, t).clone().view_as(view_jvp(ctx, t)))
    as_is = _fn("AsIs", lambda ctx, x: x, jvp=lambda ctx, t: t)
    as_view = _fn("AsView", lambda ctx, x: x, jvp=lambda ctx, t: t.view_as(t))
    with fwAD.dual_level():
        tangent = _f64([1.0, 2.0])
        d = fwAD.make_dual(_f64([3.0, 4.0]), tangent)
        assert fwAD.unpack_dual(ok.apply(d)).tangent._base is tangent
        with pytest.raises(RuntimeError, match="the jvp is not returning a view\\.$"):
            copy.apply(d)
        with pytest.raises(RuntimeError, match="not returning a view of the given grad input"):
            other.apply(d)
        with pytest.raises(RuntimeError, match="forward is returning a view \\(or an input "
                                               "as-is\\) but the jvp is not returning a view"):
            as_is.apply(d)
        assert fwAD.unpack_dual(as_view.apply(d)).tangent._base is tangent
        v = d.view_as(d)  # an input that is a view: the jvp must view its tangent's base
        with pytest.raises(RuntimeError, match="not returning a view of the same base"):
            other.apply(v)
        assert fwAD.unpack_dual(ok.apply(v)).tangent._base is tangent


def test_make_dual_refuses_a_tangent_with_its_own_tangent():
    with fwAD.dual_level():
        dual = fwAD.make_dual(_f64([1.0, 2.0]), _f64([3.0, 4.0]))
        with pytest.raises(RuntimeError, match="^Setting a forward grad that itself has a "
                                               "forward gradient at the same level0 is not "
                                               "supported.$"):
            fwAD.make_dual(_f64([0.0, 0.0]), dual)


def test_an_inplace_write_gives_the_target_its_own_tangent():
    tangent = _f64([[5.0], [6.0]])
    with fwAD.dual_level():
        x = fwAD.make_dual(_f64([[3.0], [4.0]]), tangent)
        target = _f64([[1.0], [2.0]])
        target.copy_(x)
        t = fwAD.unpack_dual(target).tangent
        assert t is not tangent
        np.testing.assert_allclose(t.numpy(), [[5.0], [6.0]])
        t.mul_(0)  # the target's tangent is its own: the source's is untouched
        np.testing.assert_allclose(tangent.numpy(), [[5.0], [6.0]])
        wide = tg.zeros(2, 3, dtype=tg.float64)
        wide.copy_(fwAD.make_dual(_f64([1.0, 2.0, 3.0]), _f64([1.0, 1.0, 1.0])))  # broadcast
        wt = fwAD.unpack_dual(wide).tangent
        assert wt.stride() == (3, 1)  # not the source's broadcast view
        np.testing.assert_allclose(wt.numpy(), np.ones((2, 3)))


def test_current_tangent_is_the_active_levels():
    x = _f64([1.0])
    assert fwAD.current_tangent(x) is None
    with fwAD.dual_level():
        t = _f64([2.0])
        d = fwAD.make_dual(x, t)
        assert fwAD.current_tangent(d) is t and fwAD.current_tangent(x) is None
    assert fwAD.current_tangent(d) is None


def test_out_functions_are_refused_under_forward_ad():
    from tritongrad.autograd.dispatch import refuse_out_dual
    with fwAD.dual_level():
        dual = fwAD.make_dual(_f64([1.0, 2.0]), _f64([1.0, 1.0]))
        plain = _f64([3.0, 4.0])
        for result, out in ((plain * 2, dual), (dual * 2, plain)):
            with pytest.raises(RuntimeError, match="^Trying to use forward AD with add_out that "
                                                   "does not support it because it is an out= "
                                                   "function$"):
                refuse_out_dual("add", result, out)
        refuse_out_dual("add", plain * 2, _f64([0.0, 0.0]))  # no tangent anywhere: allowed
    refuse_out_dual("add", dual * 2, plain)  # no level: nothing to refuse


def test_a_dual_tensor_prints_its_tangent_at_the_active_level():
    import tritongrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        x = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]))
        assert repr(x * 2) == "tensor([2., 4.], tangent=tensor([6., 8.]))"
    assert repr(x) == "tensor([1., 2.])"  # the level exited: the tangent is gone
