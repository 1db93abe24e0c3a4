"""The scalar-operand and floating-input fast paths of add, mul and the generated unary ops
(Note [Scalar operand fast path] in autograd/ops/elementwise.py) give what the general path
gives, and every input they do not take still reaches the general path: the same values,
dtype, grad_fn, gradients, errors and observers."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd.ops import elementwise as ew


def _x(dtype=tg.float32, requires_grad=True):
    data = np.random.default_rng(0).uniform(0.1, 1, (3, 4))
    return tg.tensor(data, dtype=dtype, requires_grad=requires_grad)


def _general(op, x, s):
    """What add and mul did before their fast path: binary_operands, apply, _result."""
    a, b = ew.binary_operands(x, s, op)
    node = ew.MulBackward1 if op == "mul" else ew.AddBackward1
    return ew._result(ew.apply(node, (a,), b), None, op)


@pytest.mark.parametrize("op,scalar_node", [("mul", "MulBackward0"), ("add", "AddBackward0")])
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.bfloat16, tg.float16])
def test_float_operand_fast_path_matches_the_general_path(op, scalar_node, dtype):
    x = _x(dtype)
    y = getattr(x, f"__{op}__")(1.25)
    z = _general(op, x, 1.25)
    assert y.dtype == z.dtype == dtype and type(y.grad_fn).__name__ == scalar_node
    assert type(y.grad_fn) is type(z.grad_fn)
    np.testing.assert_array_equal(y.float().detach().numpy(), z.float().detach().numpy())
    (gy,) = tg.autograd.grad(y.sum(), x)
    (gz,) = tg.autograd.grad(z.sum(), x)
    np.testing.assert_array_equal(gy.float().numpy(), gz.float().numpy())


def test_inputs_the_fast_paths_do_not_take():
    ints = tg.arange(4)
    r = ints * 1.5  # an integer tensor promotes: the general path
    assert r.dtype == tg.float32
    np.testing.assert_allclose(r.numpy(), np.arange(4) * 1.5)
    assert (ints + 0.5).dtype == tg.float32
    assert (tg.tensor([True, False]) + 1.0).dtype == tg.float32
    x = _x()
    np.testing.assert_allclose(tg.add(x, 2.0, alpha=3).detach().numpy(),
                               x.detach().numpy() + 6.0, rtol=1e-6)
    out = tg.empty(3, 4)
    tg.mul(x.detach(), 2.0, out=out)
    np.testing.assert_allclose(out.numpy(), x.detach().numpy() * 2, rtol=1e-6)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        tg.mul(x, 2.0, out=tg.empty(3, 4))
    with pytest.raises(TypeError, match="mul\\(\\): argument 'input' must be Tensor"):
        tg.mul(2.0, 3.0)
    with pytest.raises(TypeError, match="tanh\\(\\): argument 'input' \\(position 1\\) must be Tensor"):
        tg.tanh(2.0)
    # an integer tensor through a float unary op promotes; bool refused where the op says
    assert tg.tanh(ints).dtype == tg.float32
    assert tg.relu(ints).dtype == ints.dtype
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        tg.relu(tg.tensor([True]))
    c = tg.tensor([1 + 2j], requires_grad=True)
    assert c.tanh().dtype == tg.complex64  # complex: the general path
    ty = tg.empty(3, 4)
    tg.tanh(x.detach(), out=ty)
    np.testing.assert_allclose(ty.numpy(), np.tanh(x.detach().numpy()), rtol=1e-6)


@pytest.mark.parametrize("method", ["tanh", "sigmoid", "exp", "relu"])
def test_unary_fast_path_records_as_before(method):
    x = _x()
    y = getattr(x, method)()
    general = getattr(tg, method)(x.detach().to(tg.float64)).to(tg.float32)  # promoted first
    np.testing.assert_allclose(y.detach().numpy(), general.numpy(), rtol=1e-6)
    assert y.requires_grad and y.grad_fn.next_functions[0][0] is not None
    y.sum().backward()
    want = tg.tensor(x.detach().numpy().astype(np.float64), requires_grad=True)
    getattr(want, method)().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want.grad.numpy(), rtol=1e-5, atol=1e-7)
    with tg.no_grad():
        assert getattr(x, method)().grad_fn is None


def test_fast_paths_stay_observed_and_checked():
    # the profiler sees the ops; a saved output modified in place still fails backward
    x = _x()
    with tg.autograd.profiler.profile() as prof:
        (x * 2.0 + 1.0).tanh().sum()
    names = [e.name for e in prof.function_events]
    assert {"aten::mul", "aten::add", "aten::tanh"} <= set(names)
    y = (x * 2.0).tanh()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # forward AD reaches the fast path's apply
    import tritongrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        p = fwAD.make_dual(tg.ones(3), tg.full((3,), 2.0))
        t = fwAD.unpack_dual((p * 3.0 + 1.0).tanh()).tangent
    np.testing.assert_allclose(t.numpy(), 6.0 * (1 - np.tanh(4.0) ** 2) * np.ones(3), rtol=1e-4)
