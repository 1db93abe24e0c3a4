"""Autograd corners found by a differential sweep against PyTorch 2.13 (gaps 26): custom
Functions (materialize_grads with only undefined gradients, vmap staticmethods, the
setup_context requirement under torch.func transforms, ctx errors), the non-tensor values
built-in nodes expose as ``grad_fn._saved_<name>``, autograd.graph details and torch.func
argument corners.

Expected values come from NumPy float64 or hand derivations; torch itself appears only in the
dev-only tests at the end (``pytest.importorskip("torch")``)."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import Function
from tritongrad.func import grad, jacrev, vmap

# -- set_materialize_grads(False): backward still runs when every gradient is None ---------------


class _DropsGrad(Function):
    """Passes x through; its backward gives x no gradient (None)."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return None


def _recording(materialize: bool, calls: list):
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(None if g is None else g.detach().numpy().copy())
            return None if g is None else 2 * g
    return Twice


def test_backward_runs_with_none_when_no_gradient_arrives_and_materialize_is_off():
    calls = []
    x = tg.ones(2, requires_grad=True)
    _DropsGrad.apply(_recording(False, calls).apply(x)).sum().backward()
    assert len(calls) == 1 and calls[0] is None  # called, with the undefined gradient
    assert x.grad is None


def test_backward_gets_zeros_when_no_gradient_arrives_and_materialize_is_on():
    calls = []
    x = tg.ones(2, requires_grad=True)
    _DropsGrad.apply(_recording(True, calls).apply(x)).sum().backward()
    assert len(calls) == 1
    np.testing.assert_array_equal(calls[0], [0.0, 0.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])  # 2 * zeros reaches the leaf


def test_backward_with_two_undefined_outputs_gets_two_nones():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, a, b):
            seen.append((a, b))
            return None

    x = tg.ones(2, requires_grad=True)
    a, b = Two.apply(x)
    (_DropsGrad.apply(a) + _DropsGrad.apply(b)).sum().backward()
    assert seen == [(None, None)]


# -- the custom Function node and ctx ------------------------------------------------------------

class _Scale(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_a_custom_function_node_is_not_callable():
    y = _Scale.apply(tg.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match=r"^'_ScaleBackward' object is not callable$"):
        y.grad_fn(tg.ones(2))
    (g,) = y.grad_fn.apply(tg.ones(2))  # (apply still runs it)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])


def test_save_for_forward_of_a_non_tensor_is_an_assertion_error():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x, 3)
            return x

    with pytest.raises(AssertionError, match="you should save non-tensors as attributes on ctx"):
        F.apply(tg.ones(2))


def test_save_for_backward_of_a_non_tensor_names_the_argument():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

    with pytest.raises(TypeError, match=r"argument 1 is of type int$"):
        F.apply(tg.ones(2, requires_grad=True))


def test_saved_tensors_read_inside_forward_are_empty():
    seen = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            seen.append(ctx.saved_tensors)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(len(ctx.saved_tensors))
            return g

    F.apply(tg.ones(2, requires_grad=True)).sum().backward()
    assert seen == [(), 1]


def test_raw_saved_tensors_of_a_custom_function_take_hooks():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = _Scale.apply(x)
    (raw,) = y.grad_fn._raw_saved_tensors
    log = []
    raw.register_hooks(lambda t: log.append("pack") or t * 1,
                       lambda t: log.append("unpack") or t)
    assert y.grad_fn.saved_tensors[0].tolist() == [1.0, 2.0]
    assert log == ["pack", "unpack"]


def test_a_modified_saved_output_is_reported_against_the_function_name():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    y = F.apply(tg.ones(2, requires_grad=True))
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"which is output 0 of F, is at version 1"):
        y.sum().backward()


def test_setup_context_arguments_are_bound_before_forward_runs():
    ran = []

    class F(Function):
        @staticmethod
        def forward(x):
            ran.append(1)
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

    with pytest.raises(TypeError, match=r"^missing a required argument: 'x'$"):
        F.apply()
    assert ran == []


def test_legacy_instantiation_messages():
    with pytest.warns(DeprecationWarning, match="will raise an error in a future version"):
        f = _Scale()
    with pytest.raises(RuntimeError, match=r"static forward method\. \(Example: https://"):
        f(tg.ones(1))


# -- custom Functions under torch.func transforms ------------------------------------------------

class _OldStyle(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


@pytest.mark.parametrize("transform", [
    lambda f, x: grad(lambda t: f(t).sum())(x),
    lambda f, x: vmap(f)(x),
    lambda f, x: jacrev(f)(x[0]),
    lambda f, x: tg.func.jvp(f, (x,), (x,)),
    lambda f, x: tg.func.jacfwd(f)(x[0]),
], ids=["grad", "vmap", "jacrev", "jvp", "jacfwd"])
def test_a_function_without_setup_context_is_refused_under_transforms(transform):
    with pytest.raises(RuntimeError, match="it must override the setup_context staticmethod"):
        transform(_OldStyle.apply, tg.ones(2, 2))
    # outside a transform it still works
    np.testing.assert_array_equal(_OldStyle.apply(tg.ones(2)).numpy(), [2.0, 2.0])


def _with_vmap_rule(log: list, lib=tg):
    class Square(lib.autograd.Function):
        """x ** 2 whose vmap rule adds 100 (so that its use is visible in the values)."""

        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

        @staticmethod
        def vmap(info, in_dims, x):
            log.append((info.batch_size, info.randomness, in_dims, tuple(x.shape)))
            return x ** 2 + 100, in_dims[0]
    return Square


def test_the_vmap_staticmethod_runs_once_on_the_whole_batch():
    log = []
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = vmap(_with_vmap_rule(log).apply)(tg.tensor(a))
    np.testing.assert_allclose(out.numpy(), a ** 2 + 100)
    assert log == [(2, "error", (0,), (2, 3))]


def test_the_vmap_staticmethod_gets_the_in_dim_and_randomness():
    log = []
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = vmap(_with_vmap_rule(log).apply, in_dims=1, randomness="same")(tg.tensor(a))
    np.testing.assert_allclose(out.numpy(), (a ** 2 + 100).T)  # entries are columns
    assert log == [(3, "same", (1,), (2, 3))]


def test_the_vmap_staticmethod_sees_unmapped_inputs_as_none():
    log = []

    class Add(Function):
        @staticmethod
        def forward(x, y):
            return x + y

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g, g

        @staticmethod
        def vmap(info, in_dims, x, y):
            log.append(in_dims)
            return x.movedim(in_dims[0], 0) + y, 0

    a, b = np.ones((3, 2)), np.array([1.0, 2.0])
    out = vmap(Add.apply, in_dims=(1, None))(tg.tensor(a.T.copy()), tg.tensor(b))
    np.testing.assert_allclose(out.numpy(), a + b)
    assert log == [(1, None)]


def test_the_vmap_staticmethod_on_values_computed_inside_gets_a_batch_of_one():
    log = []
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = vmap(lambda t: _with_vmap_rule(log).apply(t * 3))(tg.tensor(a))
    np.testing.assert_allclose(out.numpy(), (3 * a) ** 2 + 100)
    assert log == [(1, "error", (0,), (1, 2))] * 2  # (one call per entry of the loop)


def test_vmap_of_grad_through_a_function_with_a_vmap_rule_uses_its_backward():
    log = []
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = vmap(grad(lambda t: _with_vmap_rule(log).apply(t).sum()))(tg.tensor(a))
    np.testing.assert_allclose(out.numpy(), 2 * a)  # d/dx sum(x ** 2), the backward's rule
    assert log[0][:3] == (2, "error", (0,))


@pytest.mark.parametrize("kind", ["not_a_tuple", "no_rule", "both"])
def test_vmap_rule_errors(kind):
    class F(Function):
        generate_vmap_rule = kind == "both"

        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g

    if kind != "no_rule":
        F.vmap = staticmethod(lambda info, in_dims, x: x * 2)
    message = {"not_a_tuple": "Expected the vmap staticmethod to have two returns",
               "no_rule": "You tried to vmap over F, but it does not have vmap support",
               "both": "it has both generate_vmap_rule=True and an overridden vmap"}[kind]
    with pytest.raises(RuntimeError, match=message):
        vmap(F.apply)(tg.ones(2, 2))


def test_generate_vmap_rule_runs_forward_per_entry():
    class Cube(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    a = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(vmap(Cube.apply)(tg.tensor(a)).numpy(), a ** 3)
    per_row = vmap(grad(lambda t: Cube.apply(t).sum()))(tg.tensor(a))
    np.testing.assert_allclose(per_row.numpy(), 3 * a ** 2)


# -- grad_fn._saved_<name> for non-tensor values --------------------------------------------------

def test_saved_non_tensor_values_of_reductions():
    x = tg.ones(2, 3, requires_grad=True)
    s = x.sum(dim=1)
    assert (s.grad_fn._saved_dim, s.grad_fn._saved_keepdim) == ((1,), False)
    assert tuple(s.grad_fn._saved_self_sym_sizes) == (2, 3)
    m = x.mean(dim=0, keepdim=True)
    assert (m.grad_fn._saved_dim, m.grad_fn._saved_keepdim) == ((0,), True)
    assert m.grad_fn._saved_self_sym_numel == 6
    s.sum().backward()  # (still readable once the saved tensors are freed)
    assert s.grad_fn._saved_dim == (1,)


def test_saved_non_tensor_values_of_pointwise_and_shape_ops():
    x = tg.ones(2, 3, requires_grad=True)
    assert x.pow(3).grad_fn._saved_exponent == 3
    assert tg.add(x, x, alpha=2).grad_fn._saved_alpha == 2
    assert (x + 1).grad_fn._saved_alpha == 1
    t = x.transpose(0, 1).grad_fn
    assert (t._saved_dim0, t._saved_dim1) == (0, 1)
    assert x.softmax(1).grad_fn._saved_dim == 1
    assert tg.cat([x, x], 1).grad_fn._saved_dim == 1
    sl = x[:, 1:3].grad_fn
    assert (sl._saved_dim, sl._saved_start, sl._saved_end, sl._saved_step) == (1, 1, 3, 1)
    assert tuple(x.view(3, 2).grad_fn._saved_self_sym_sizes) == (2, 3)


def test_saved_tensor_aliases_use_pytorchs_formula_names():
    a = tg.tensor([[1.0, 2.0]], requires_grad=True)
    b = tg.tensor([[3.0], [4.0]], requires_grad=True)
    mm = (a @ b).grad_fn
    assert mm._saved_mat2.tolist() == [[3.0], [4.0]]
    p = a.pow(tg.tensor([[2.0, 3.0]])).grad_fn
    assert p._saved_exponent.tolist() == [[2.0, 3.0]]


# -- autograd.graph ------------------------------------------------------------------------------

def test_gradient_edge_has_pytorchs_three_fields():
    x = tg.ones(2, requires_grad=True)
    edge = tg.autograd.graph.get_gradient_edge(x * 2)
    assert edge._fields == ("node", "output_nr", "ownership_token")
    assert edge.ownership_token is None and edge.output_nr == 0


def test_multi_grad_hook_all_mode_needs_every_tensor_to_require_grad():
    a = tg.ones(2, requires_grad=True)
    with pytest.raises(AssertionError, match="Expected gradient function to be set"):
        tg.autograd.graph.register_multi_grad_hook((a, tg.ones(2)), lambda grads: None)
    # "any" mode skips it
    seen = []
    tg.autograd.graph.register_multi_grad_hook((a, tg.ones(2)), seen.append, mode="any")
    (a * 3).sum().backward()
    assert [g.tolist() for g in seen] == [[3.0, 3.0]]


# -- torch.func arguments ------------------------------------------------------------------------

def test_grad_of_a_function_writing_into_its_input_is_refused_as_for_a_leaf():
    def f(t):
        t.mul_(2)
        return t.sum()

    with pytest.raises(RuntimeError, match=r"^a leaf Variable that requires grad is being used "
                                           r"in an in-place operation\.$"):
        grad(f)(tg.ones(2))


def test_grad_of_an_integer_input_is_refused_with_functorchs_message():
    with pytest.raises(RuntimeError, match=r"^only Tensors of floating point dtype can require "
                                           r"gradients$"):
        grad(lambda a: a.sum())(tg.tensor([1, 2]))


# -- dev-only: the same programs under torch ------------------------------------------------------

def _run_vmap_rule_program(lib):
    log = []
    Sq = _with_vmap_rule(log, lib)
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = lib.func.vmap(Sq.apply)(x).tolist()
    g = lib.func.vmap(lib.func.grad(lambda t: Sq.apply(t).sum()))(x).tolist()
    return out, g, log[0]


def test_dev_vmap_rule_program_matches_torch():
    torch = pytest.importorskip("torch")
    assert _run_vmap_rule_program(tg) == _run_vmap_rule_program(torch)


def _run_materialize_program(lib):
    calls = []

    class Drop(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return None

    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, a, b):
            calls.append((a is None, b is None))
            return None

    x = lib.ones(2, requires_grad=True)
    a, b = F.apply(x)
    (Drop.apply(a) + b * 0).sum().backward()
    return calls, x.grad is None


def test_dev_materialize_program_matches_torch():
    torch = pytest.importorskip("torch")
    assert _run_materialize_program(tg) == _run_materialize_program(torch)


def test_graph_node_is_abstract_and_matches_every_node():
    Node = tg.autograd.graph.Node
    with pytest.raises(TypeError, match="abstract"):
        Node()
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    assert isinstance(y.grad_fn, Node)
    assert isinstance(y.grad_fn.next_functions[0][0], Node)  # AccumulateGrad
    assert isinstance(_Scale.apply(x).grad_fn, Node)
    assert not isinstance(object(), Node)


def test_an_unknown_jacobian_strategy_is_an_assertion_error():
    f = tg.autograd.functional
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode"'):
        f.jacobian(lambda a: a.sin(), tg.ones(2), strategy="sideways")
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode"'):
        f.hessian(lambda a: a.sum(), tg.ones(2), outer_jacobian_strategy="sideways")


@pytest.mark.parametrize("transform", [
    lambda f, x: grad(f)(x),
    lambda f, x: tg.func.grad_and_value(f)(x),
    lambda f, x: tg.func.vjp(f, x),
    lambda f, x: jacrev(f)(x),
], ids=["grad", "grad_and_value", "vjp", "jacrev"])
def test_reverse_transforms_refuse_saved_tensor_hooks(transform):
    x = tg.tensor([1.0, 2.0])
    message = r"torch\.func\.\{grad, vjp, jacrev, hessian\} don't yet support saved tensor hooks"
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match=message):
            transform(lambda a: (a * a).sum(), x)

    def hooked(a):  # (entering them inside func is refused too)
        with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            return (a * a).sum()

    with pytest.raises(RuntimeError, match=message):
        transform(hooked, x)
    # vmap and the forward-mode transforms allow them
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        np.testing.assert_allclose(vmap(lambda a: a * 2)(x).numpy(), [2.0, 4.0])
        np.testing.assert_allclose(tg.func.jacfwd(lambda a: a * a)(x).numpy(),
                                   [[2.0, 0.0], [0.0, 4.0]])


def test_one_int_among_full_slices_is_select():
    # PyTorch records x[0], x[:, -1] and select() as SelectBackward0 (aten::select in the
    # profiler), slices as SliceBackward0
    x = tg.ones(3, 4, requires_grad=True)
    for y in (x[0], x[:, 1], x[..., -1], x.select(1, 2)):
        assert y.grad_fn.name() == "SelectBackward0"
    for y in (x[0:2], x[0, 1:3], x[:, ::2]):
        assert y.grad_fn.name() == "SliceBackward0"
    node = x[:, -1].grad_fn
    assert (node._saved_dim, node._saved_index, tuple(node._saved_self_sym_sizes)) == (1, 3, (3, 4))
    x[:, 2].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(4)[[2, 2, 2]])
    with tg.profiler.profile() as prof:
        x[1]
    assert [e.name for e in prof.events()] == ["aten::select"]
    z = tg.ones(2, 2, dtype=tg.complex64, requires_grad=True)
    (z[0] * 1j).abs().sum().backward()  # (complex autograd through select)
    np.testing.assert_allclose(z.grad.numpy(), [[1, 1], [0, 0]])
