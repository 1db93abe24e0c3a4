"""Saved tensors under hooks (autograd/saved.py Note [Packed saved tensors]) and
allow_mutation_on_saved_tensors' clone-on-mutate bookkeeping (graph.py Note [Clone on mutate]),
as PyTorch's SavedVariable and _AllowMutationOnSavedContext behave."""

import gc
import weakref

import numpy as np
import pytest
from tritongrad.autograd import graph
from tritongrad.autograd.node import FREED

import tritongrad as tg


def _f64(values, requires_grad=True):
    return tg.tensor(values, dtype=tg.float64, requires_grad=requires_grad)


# -- the hook stack --------------------------------------------------------------------------

def test_exit_pops_the_innermost_pair_even_when_entered_twice():
    ctx = graph.saved_tensors_hooks(lambda x: x, lambda x: x)
    ctx.__enter__()
    ctx.__enter__()
    ctx.__exit__()
    x = _f64([1.0])
    assert x.exp().grad_fn._raw_saved_result.unpack_hook is not None  # one pair left
    ctx.__exit__()
    assert x.exp().grad_fn._raw_saved_result.unpack_hook is None
    with pytest.raises(RuntimeError, match="more exits than enters"):
        ctx.__exit__()


def test_an_unpack_hook_that_exits_or_enters_hooks_leaves_the_stack_as_it_was():
    def exits(p):
        outer.__exit__()
        return p

    outer = graph.saved_tensors_hooks(lambda x: x, exits)
    with outer:
        x = _f64([1.0, 2.0])
        x.sin().sum().backward()
    # the exit inside backward did not count: the with block's exit emptied the stack
    assert x.exp().grad_fn._raw_saved_result.unpack_hook is None

    def scope():
        def enters(p):
            ref().__enter__()
            return p

        ctx = graph.saved_tensors_hooks(lambda x: x, enters)
        ref = weakref.ref(ctx)
        with ctx:
            _f64([1.0]).sin().sum().backward()
        return weakref.ref(enters)

    gc.disable()
    try:
        assert scope()() is None  # nothing (the hook stack) kept the hook alive
    finally:
        gc.enable()


# -- packing and unpacking -------------------------------------------------------------------

def test_pack_runs_without_grad_and_unpacked_values_take_the_saved_edge():
    a = _f64([1.0, -2.0])
    seen = []

    def pack(t):
        seen.append(tg.is_grad_enabled())
        return 2 * t

    with graph.saved_tensors_hooks(pack, lambda p: p):
        y = a ** 3  # saves a, packed as 2a (a value: no history of its own)
    assert seen == [False]
    unpacked = y.grad_fn._saved_self
    assert unpacked.requires_grad and unpacked.grad_fn is None  # a's place: the leaf
    np.testing.assert_allclose(unpacked.detach().numpy(), [2.0, -4.0])
    (g,) = tg.autograd.grad(y.sum(), a, create_graph=True)  # 3 (2a)^2
    np.testing.assert_allclose(g.detach().numpy(), [12.0, 48.0])
    g.sum().backward()  # d/da of 3 p^2 with p standing for a: 6 p = 12 a
    np.testing.assert_allclose(a.grad.numpy(), [12.0, -24.0])


def test_unpacked_non_leaf_keeps_its_grad_fn_and_an_output_its_node():
    a = _f64([1.0, 2.0])
    b = a * 3
    with graph.saved_tensors_hooks(lambda t: t.detach(), lambda p: p):
        y = b.sin()
        e = a.exp()
    assert y.grad_fn._saved_self.grad_fn is b.grad_fn
    assert e.grad_fn._saved_result.grad_fn is e.grad_fn
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 3 * np.cos([3.0, 6.0]))


def test_hooks_replace_the_version_check():
    b = _f64([1.0, 2.0]) * 1
    with graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
        y = (b * b).sum()
    b.mul_(5)  # the hooks kept their own copy: backward uses it, no error
    y.backward()


def test_unpack_hook_must_return_a_tensor():
    with graph.saved_tensors_hooks(lambda t: t, lambda p: 1):
        y = _f64([1.0]).exp()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result "
                                        "of type int"):
        _ = y.grad_fn._saved_result


def _add_one(t):
    t += 1
    return t


def test_a_pack_hook_modifying_its_input_in_place_raises():
    a = _f64([1.0, 2.0])
    with graph.saved_tensors_hooks(_add_one, lambda p: p), \
            pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input "
                                              "in place"):
        a.exp()
    y = a.exp()
    with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
        y.grad_fn._raw_saved_result.register_hooks(_add_one, lambda p: p)


def test_register_hooks_packs_a_detached_alias():
    x = _f64([1.0, 2.0])
    y = x * x
    packed = []
    y.grad_fn._raw_saved_self.register_hooks(lambda t: packed.append(t) or t * 10,
                                             lambda p: p)
    (p,) = packed
    assert p is not x and not p.requires_grad and p._version == x._version
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [11.0, 22.0])  # other + 10 self
    # an output is packed without its history, and unpacks with it
    e = x.exp()
    e.grad_fn._raw_saved_result.register_hooks(lambda t: packed.append(t) or t, lambda p: p)
    assert packed[-1].grad_fn is None
    assert e.grad_fn._saved_result.grad_fn is e.grad_fn


def test_raw_saved_tensor_data_and_unpack_hook():
    def pack(t):
        return ("packed", t)

    def unpack(p):
        return p[1]

    a = _f64([2.0])
    with graph.saved_tensors_hooks(pack, unpack):
        b = a ** 2
    c = b.exp()
    d = c ** 2
    raw = b.grad_fn._raw_saved_self
    assert raw.data[1] is a and raw.unpack_hook is unpack
    out = c.grad_fn._raw_saved_result
    assert out.data is not c and out.data.grad_fn is None and out.unpack_hook is None
    np.testing.assert_allclose(out.data.numpy(), c.detach().numpy())
    assert d.grad_fn._raw_saved_self.data is c
    d.sum().backward()
    assert b.grad_fn._raw_saved_self.data is None  # freed


# -- detach_ ---------------------------------------------------------------------------------

def test_a_saved_input_detached_in_place_raises_a_saved_output_does_not():
    a = _f64([1.0]).clone()
    b = a.sin()
    a.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been "
                                           "detached in-place"):
        b.backward()
    x = _f64([1.0])
    a = x.clone()
    b = a.exp()
    a.detach_()
    b.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0]))


# -- allow_mutation_on_saved_tensors ---------------------------------------------------------
# (clone-on-mutate needs dispatch to call graph._before_inplace_write before in-place writes)

def test_a_mutated_saved_tensor_is_cloned_once_and_dropped_with_its_graph():
    with graph.allow_mutation_on_saved_tensors() as ctx:
        a = _f64([1.0, 2.0])
        b = a.clone()
        out = (b ** 2).sum()
        out2 = (b ** 2).sum()  # the same tensor at the same version: one handle
        assert len(ctx.tid_to_weakhandle) == 1 and len(ctx.cloned) == 0
        b.mul_(3)  # (saves nothing itself)
        assert len(ctx.cloned) == 1
        out.backward()
        np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0])  # 2 b before mul_
        del out2
        assert len(ctx.cloned) == 0 and len(ctx.tid_to_weakhandle) == 0
    assert len(ctx.sid_to_tid) == 0  # cleared on exit


@pytest.mark.parametrize("dtype", [tg.float64, tg.bfloat16])  # (host bfloat16: 4-byte cells)
def test_a_write_through_a_view_clones_the_saved_base(dtype):
    with graph.allow_mutation_on_saved_tensors() as ctx:
        a = tg.tensor([1.0, 2.0, 3.0], dtype=dtype, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b[1:] *= 10  # a view at an offset into b's storage
        assert len(ctx.cloned) == 1
        out.backward()
    np.testing.assert_allclose(a.grad.float().numpy(), [2.0, 4.0, 6.0])


def test_each_saved_version_gets_its_own_clone():
    with graph.allow_mutation_on_saved_tensors() as ctx:
        a = _f64([1.0, 2.0])
        b = a.clone()
        y1 = b ** 2
        b.mul_(3)
        y2 = b ** 2
        b.mul_(3)
        assert len(ctx.cloned) == 2
        (y1.sum() + y2.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), [2 * 1.0 + 2 * 9 * 1.0, 2 * 2.0 + 2 * 9 * 2.0])


def test_a_tensor_no_longer_saved_is_not_cloned():
    with graph.allow_mutation_on_saved_tensors() as ctx:
        b = _f64([1.0, 2.0]).clone()
        (b ** 2).sum().backward()
        b.sin_()
        assert len(ctx.cloned) == 0


def test_out_variant_writes_clone_too():
    with graph.allow_mutation_on_saved_tensors() as ctx:
        a = _f64([1.0])
        b = _f64([3.0], requires_grad=False)
        out = (a ** 2) * b
        tg.sin(_f64([2.0], requires_grad=False), out=b)
        assert len(ctx.cloned) == 1
        out.backward()
    np.testing.assert_allclose(a.grad.numpy(), [6.0])


def test_backward_outside_the_recording_context_raises():
    msg = "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
    with graph.allow_mutation_on_saved_tensors():
        out = (_f64([1.0]) ** 2).sum()
    with pytest.raises(AssertionError, match=msg):
        out.backward()
    with graph.allow_mutation_on_saved_tensors():
        out = (_f64([1.0]) ** 2).sum()
    with graph.allow_mutation_on_saved_tensors(), pytest.raises(AssertionError, match=msg):
        out.backward()


def test_a_write_the_context_cannot_see_raises_instead_of_using_new_values():
    with graph.allow_mutation_on_saved_tensors():
        b = _f64([1.0, 2.0]).clone()
        out = (b ** 2).sum()
        b.detach().numpy()[0] = 7.0
        graph.increment_version(b)
        with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors did not see"):
            out.backward()


def test_nesting_raises_and_leaves_the_outer_context_working():
    with graph.allow_mutation_on_saved_tensors() as ctx:
        with pytest.raises(RuntimeError, match="contexts cannot be nested"), \
                graph.allow_mutation_on_saved_tensors():
            pass
        a = _f64([1.0])
        out = (a ** 2).sum()
        assert len(ctx.tid_to_weakhandle) == 1
        out.backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0])


def test_clear_saved_tensors_on_access_hands_the_tensors_over_once():
    class Sq(tg.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert ctx._saved is FREED  # the node holds nothing now
            with pytest.raises(RuntimeError, match="can only be accessed once"):
                ctx.saved_tensors
            return 2 * x * g

    x = tg.tensor([1.0, -3.0], dtype=tg.float64, requires_grad=True)
    Sq.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, -6.0]
