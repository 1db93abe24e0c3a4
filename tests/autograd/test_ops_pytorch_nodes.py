"""Graph details PyTorch's autograd tests look at: what a node saves (only what its rule
needs), which nodes an op records (AddmmBackward0, VarMeanBackward0, SumBackward1), that
out= functions refuse forward AD, that index nodes' saved indices are freed with the graph,
and that float kernels making inf/NaN stay silent (as PyTorch's)."""

import warnings

import numpy as np
import pytest
from tritongrad.autograd import graph

import tritongrad as tg


def _t(values, requires_grad=False):
    return tg.tensor(values, dtype=tg.float64, requires_grad=requires_grad)


# -- save only what backward needs (dispatch.Primitive.save_when) --------------------------------

def test_mul_saves_each_operand_only_for_the_other_gradient():
    a, b = _t([1.0, 2.0], True), _t([3.0, 4.0])
    out = a * b
    assert out.grad_fn._saved_self is None  # a is needed only for b's gradient
    np.testing.assert_array_equal(out.grad_fn._saved_other.numpy(), [3.0, 4.0])
    out = b * a
    np.testing.assert_array_equal(out.grad_fn._saved_self.numpy(), [3.0, 4.0])
    assert out.grad_fn._saved_other is None


def test_div_saves_self_only_for_the_divisor_gradient():
    a, b = _t([1.0, 2.0], True), _t([4.0, 8.0])
    assert (a / b).grad_fn._saved_self is None
    out = b / a
    np.testing.assert_array_equal(out.grad_fn._saved_self.numpy(), [4.0, 8.0])
    out.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [-4.0, -2.0])  # -b / a^2


def test_an_unsaved_operand_may_be_modified_before_backward():
    # x * ft where ft needs no gradient: x is not saved, so writing x later is fine
    mu = _t([1.0], True)
    x = tg.empty(1, dtype=tg.float64)
    loss = 0
    for i in range(3):
        x.detach_()
        x.copy_(mu + i)
        loss = loss + (x * _t([float(i)])).sum()
    loss.backward()
    np.testing.assert_allclose(mu.grad.numpy(), [3.0])  # 0 + 1 + 2
    # while a needed operand modified in place still fails backward
    a, b = _t([1.0], True), _t([2.0])
    out = a * b
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_pack_hooks_see_only_the_saved_operands():
    packed = []
    a, b = _t([1.0, 2.0], True), _t([3.0, 4.0])
    with graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        out = a * b
        (a * a).sum()  # both operands need it: hooks see each save
    assert len(packed) == 3 and packed[0] is b
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])


def test_x_times_x_saves_once_and_in_place_mul_keeps_only_what_is_needed():
    x = _t([1.0, 3.0], True)
    node = (x * x).grad_fn
    assert node._saved[0] is node._saved[1]
    leaf = _t([2.0, 5.0], True)
    y = leaf.clone()
    w = _t([4.0, 6.0])
    y.mul_(w)  # y needs a gradient, w does not: w is saved, no copy of y is made
    assert y.grad_fn._saved_self is None
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [4.0, 6.0])


# -- index nodes free their indices with the graph ---------------------------------------------

@pytest.mark.parametrize("retain", [False, True])
def test_index_nodes_refuse_a_second_backward_unless_retained(retain):
    b = _t([1.0, 2.0, 3.0], True)
    c = tg.zeros(3, dtype=tg.float64)
    c[[1, 2]] = b[[1, 1]]  # IndexPutBackward0 over IndexBackward0
    assert c.grad_fn.name() == "IndexPutBackward0"
    c.backward(tg.ones(3, dtype=tg.float64), retain_graph=retain)
    np.testing.assert_array_equal(b.grad.numpy(), [0.0, 2.0, 0.0])
    if retain:
        c.backward(tg.ones(3, dtype=tg.float64))
        np.testing.assert_array_equal(b.grad.numpy(), [0.0, 4.0, 0.0])
    else:
        with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
            c.backward(tg.ones(3, dtype=tg.float64))
        assert "indices" not in vars(c.grad_fn)  # freed, as PyTorch's saved indices


# -- out= functions refuse forward AD ----------------------------------------------------------

def test_out_functions_refuse_tangents_in_inputs_or_out():
    import tritongrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        dual = fwAD.make_dual(_t([1.0, 2.0]), _t([1.0, 0.0]))
        plain = _t([3.0, 4.0])
        for args, out in (((plain, plain), dual), ((dual, plain), plain)):
            with pytest.raises(RuntimeError, match="Trying to use forward AD with add_out that "
                                                   "does not support it because it is an out= "
                                                   "function"):
                tg.add(*args, out=out)
        with pytest.raises(RuntimeError, match="with mul_out .* out= function"):
            tg.mul(dual, 2.0, out=_t([0.0, 0.0]))
        target = _t([0.0, 0.0])  # no tangent anywhere: written as usual
        assert tg.add(plain, plain, out=target) is target
        np.testing.assert_array_equal(target.numpy(), [6.0, 8.0])


# -- one node where PyTorch records one ----------------------------------------------------------

def _leaves(*shapes):
    rng = np.random.default_rng(0)
    return [tg.tensor(rng.uniform(0.5, 2.0, s), requires_grad=True) for s in shapes]


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3.0)])
def test_addmm_is_one_node_with_its_gradients(beta, alpha):
    c, a, b = _leaves((4,), (3, 2), (2, 4))
    out = tg.addmm(c, a, b, beta=beta, alpha=alpha)
    node = out.grad_fn
    assert node.name() == "AddmmBackward0"
    assert [e[0] for e in node.next_functions] == [t.grad_fn or t._edge()[0] for t in (c, a, b)]
    np.testing.assert_allclose(out.detach().numpy(), beta * c.detach().numpy()
                               + alpha * a.detach().numpy() @ b.detach().numpy())
    g = np.arange(12.0).reshape(3, 4)
    out.backward(tg.tensor(g))
    np.testing.assert_allclose(c.grad.numpy(), beta * g.sum(0))  # summed back to (4,)
    np.testing.assert_allclose(a.grad.numpy(), alpha * g @ b.detach().numpy().T)
    np.testing.assert_allclose(b.grad.numpy(), alpha * a.detach().numpy().T @ g)


def test_addmm_saves_each_matrix_only_for_the_other_gradient_and_second_order():
    c, a, b = _leaves((4,), (3, 2), (2, 4))
    node = tg.addmm(c, a.detach(), b).grad_fn
    np.testing.assert_array_equal(node._saved_mat1.numpy(), a.detach().numpy())
    assert node._saved_mat2 is None
    # through create_graph: ga = d/da sum(out^2) = 2 out b^T, recorded, then differentiated:
    # d/dc sum(ga) = 2 * rows * b.sum(0)
    out = tg.addmm(c, a, b)
    ga, = tg.autograd.grad((out ** 2).sum(), a, create_graph=True)
    np.testing.assert_allclose(ga.detach().numpy(),
                               2 * out.detach().numpy() @ b.detach().numpy().T)
    ga.sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), 6 * b.detach().numpy().sum(0), rtol=1e-12)


def test_addmm_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match=r"mat1 must be a matrix, got 1-D tensor"):
        tg.addmm(tg.zeros(3), tg.zeros(5), tg.zeros(4, 3))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match "
                                           r"the existing size \(4\) at non-singleton "
                                           r"dimension 1"):
        tg.addmm(tg.zeros(4), tg.zeros(2, 5), tg.zeros(5, 3))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got "
                                           "Double and Float"):
        tg.addmm(tg.zeros(3, dtype=tg.float64), tg.zeros(2, 4), tg.zeros(4, 3))


def test_linear_with_bias_on_2d_input_is_addmm():
    x, w, bias = _leaves((5, 3), (4, 3), (4,))
    out = tg.nn.functional.linear(x, w, bias)
    assert out.grad_fn.name() == "AddmmBackward0"
    names = [e[0].name() for e in out.grad_fn.next_functions]
    assert names == ["torch::autograd::AccumulateGrad", "torch::autograd::AccumulateGrad",
                     "TBackward0"]
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.ones((4, 5)) @ x.detach().numpy())
    np.testing.assert_allclose(bias.grad.numpy(), [5.0] * 4)
    # without a bias, or on other ranks: matmul (and add), as PyTorch
    assert tg.nn.functional.linear(x, w).grad_fn.name() == "MmBackward0"
    assert tg.nn.functional.linear(x[0], w, bias).grad_fn.name() != "AddmmBackward0"


@pytest.mark.parametrize("fn,node", [(tg.var_mean, "VarMeanBackward0"),
                                     (tg.std_mean, "StdMeanBackward0")])
def test_var_mean_and_std_mean_are_one_node_with_two_outputs(fn, node):
    x, = _leaves((3, 4))
    stat, mean = fn(x, dim=0)
    assert stat.grad_fn is mean.grad_fn and stat.grad_fn.name() == node
    assert (stat._output_nr, mean._output_nr) == (0, 1)
    seen = []
    mean.grad_fn.register_prehook(lambda grads: seen.append(grads) or
                                  tuple(None if g is None else g * 2 for g in grads))
    (stat + mean).sum().backward()
    assert len(seen) == 1 and len(seen[0]) == 2  # one call, both gradients
    xv = x.detach().numpy()
    dstat = 2 * (xv - xv.mean(0)) / (3 - 1)  # d var / dx over 3 rows, correction 1
    if node == "StdMeanBackward0":
        dstat = dstat / (2 * np.sqrt(xv.var(0, ddof=1)))  # d sqrt(var) = d var / (2 std)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (dstat + 1 / 3), rtol=1e-12)
    # only one output used: the other gradient is absent
    x.grad = None
    fn(x, dim=1)[1].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 4), 0.25))


def test_sum_and_mean_with_a_dim_argument_record_the_dim_overload():
    x, = _leaves((2, 3))
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert tg.sum(x, dtype=tg.float64).grad_fn.name() == "SumBackward0"
    for kw in ({"dim": None}, {"dim": 0}, {"dim": (0, 1)}):
        out = x.sum(**kw)
        assert out.grad_fn.name() == "SumBackward1"
    assert x.sum(None).shape == () and x.sum(dim=None, keepdim=True).shape == (1, 1)
    assert (x.mean().grad_fn.name(), x.mean(dim=None).grad_fn.name()) == \
        ("MeanBackward0", "MeanBackward1")


# -- profiler events of ops outside the dispatcher ---------------------------------------------

def test_factory_functions_linear_and_in_place_ops_are_named_as_pytorchs():
    from tritongrad.autograd import profiler
    layer = tg.nn.Linear(3, 4)
    with profiler.profile(record_shapes=True) as prof:
        x = tg.randn(5, 3)
        z = tg.zeros(2)
        y = layer(x)
        z.mul_(2)
        z.add_(tg.ones(2))
    events = prof.function_events
    top = [e.name for e in events if e.cpu_parent is None]
    assert top[:2] == ["aten::randn", "aten::zeros"]
    assert [e.sequence_nr for e in events if e.name == "aten::randn"] == [-1]
    linear, = [e for e in events if e.name == "aten::linear"]
    assert linear.input_shapes == [[5, 3], [4, 3], [4]]
    assert linear.sequence_nr >= 0
    assert "aten::addmm" in [e.name for e in events if e.cpu_parent is linear]
    assert "aten::mul_" in top and "aten::add_" in top and "aten::mul" not in top
    del y


# -- float kernels are silent where they make inf / NaN ------------------------------------------

def test_float_kernels_make_inf_and_nan_without_warnings():
    x = _t([1.0, 0.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = x / 0
        r = x / tg.zeros(3, dtype=tg.float64)
        logs = tg.log(x)
        roots = tg.sqrt(x)
    assert q.tolist()[0] == np.inf and np.isnan(q.tolist()[1]) and q.tolist()[2] == -np.inf
    assert r.tolist()[0] == np.inf and np.isnan(r.tolist()[1])
    assert logs.tolist()[1] == -np.inf and np.isnan(logs.tolist()[2])
    assert np.isnan(roots.tolist()[2])


@pytest.mark.parametrize("call,node", [
    (lambda x: x.squeeze(), "SqueezeBackward0"),
    (lambda x: x.squeeze(1), "SqueezeBackward1"),
    (lambda x: tg.squeeze(x, -1), "SqueezeBackward1"),
    (lambda x: x.squeeze((1, 3)), "SqueezeBackward2"),
    (lambda x: tg.squeeze(x, [1]), "SqueezeBackward2"),
])
def test_squeeze_overloads_name_their_nodes(call, node):
    # PyTorch's three squeeze overloads (all dims, one dim, a list of dims) record three nodes
    x, = _leaves((2, 1, 3, 1))
    y = call(x)
    assert y.grad_fn.name() == node
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 1, 3, 1), 3.0))


# -- rsub, reciprocal and number ** tensor: PyTorch's single nodes ------------------------------

@pytest.mark.parametrize("call, node, edges", [
    (lambda x, y: 1 - x, "RsubBackward1", 1),
    (lambda x, y: tg.rsub(x, 3, alpha=2), "RsubBackward1", 1),
    (lambda x, y: tg.rsub(x, y, alpha=2), "RsubBackward0", 2),
    (lambda x, y: tg.reciprocal(x), "ReciprocalBackward0", 1),
    (lambda x, y: 2 ** x, "PowBackward2", 1),
    (lambda x, y: tg.pow(0.0, x.abs()), "PowBackward2", 1),  # (0 ** -1 is inf: not checkable)
    (lambda x, y: (1 + 1j) ** x, "PowBackward2", 1),
])
def test_rsub_reciprocal_and_number_pow_are_single_nodes(call, node, edges):
    # (they were AddBackward0 <- NegBackward0, PowBackward0 and PowBackward1 with a None edge)
    x = _t([0.5, -1.0, 2.0], True)
    y = _t([1.0, 2.0, 3.0], True)
    out = call(x, y)
    assert out.grad_fn.name() == node and len(out.grad_fn.next_functions) == edges
    def real(a, b):
        r = call(a, b)
        return tg.view_as_real(r * r) if r.is_complex() else r * r

    assert tg.autograd.gradcheck(real, (x, y))
    assert tg.autograd.gradgradcheck(real, (x, y))


def test_number_pow_gradient_limits():
    e = _t([-1.0, 0.0, 2.0], True)
    (tg.pow(0.0, e) * _t([1.0, 1.0, 1.0])).sum().backward()
    # 0 ** e: d/de is 0 where e >= 0 (the limit), -inf * y where e < 0 (y = inf there)
    assert e.grad.tolist()[1:] == [0.0, 0.0] and e.grad[0].item() == -np.inf
    e.grad = None
    ((-2.0) ** e).sum().backward()  # (a negative base of a real power: NaN, as PyTorch)
    assert np.isnan(e.grad.numpy()).all()
    assert (2 ** tg.tensor([1, 2])).dtype is tg.int64
    assert tg.rsub(tg.tensor([1, 2]), 1.5).tolist() == [0.5, -0.5]
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        tg.rsub(tg.tensor([True]), 1)
