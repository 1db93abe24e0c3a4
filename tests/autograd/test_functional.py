"""autograd.functional: the seeds' documented examples (random values checked against closed
forms), result shapes and nesting, v checks, strict mode, create_graph, vectorize and
strategy."""

import numpy as np
import pytest

import tritongrad as torch
from tritongrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp


def np_(t):
    return t.detach().cpu().numpy()


def rand64(*shape, device="cpu"):
    return torch.rand(*shape, dtype=torch.float64, device=device)


def scalar64(value):
    return torch.full((), value, dtype=torch.float64)


def exp_reducer(x):
    return x.exp().sum(dim=1)


def exp_adder(x, y):
    return 2 * x.exp() + 3 * y


def pow_reducer(x):
    return x.pow(3).sum()


def pow_adder_reducer(x, y):
    return (2 * x.pow(2) + 3 * y.pow(2)).sum()


def adder(x, y):
    return 2 * x + 3 * y


def block_diag_exp(x):
    """The Jacobian of exp_reducer: J[i, k, l] = exp(x[k, l]) if i == k else 0."""
    e = np.exp(x)
    n, m = x.shape
    out = np.zeros((n, n, m))
    for i in range(n):
        out[i, i] = e[i]
    return out


def diag4(values):
    """The (n, m, n, m) tensor with values[i, j] at [i, j, i, j]: d(f(x)) / dx for an
    elementwise f with derivative ``values``."""
    n, m = values.shape
    out = np.zeros((n, m, n, m))
    for i in range(n):
        for j in range(m):
            out[i, j, i, j] = values[i, j]
    return out


# -- jacobian -----------------------------------------------------------------------------------

def test_jacobian_doc_example_exp_reducer(device):
    inputs = torch.rand(2, 2, device=device)
    jac = jacobian(exp_reducer, inputs)
    assert jac.shape == (2, 2, 2) and jac.dtype is torch.float32
    assert jac.device == inputs.device and not jac.requires_grad
    np.testing.assert_allclose(np_(jac), block_diag_exp(np_(inputs)), rtol=1e-6)


def test_jacobian_doc_example_create_graph():
    inputs = torch.rand(2, 2)
    jac = jacobian(exp_reducer, inputs, create_graph=True)
    assert jac.requires_grad and jac.grad_fn is not None
    np.testing.assert_allclose(np_(jac), block_diag_exp(np_(inputs)), rtol=1e-6)


def test_jacobian_doc_example_exp_adder():
    inputs = (torch.rand(2), torch.rand(2))
    jx, jy = jacobian(exp_adder, inputs)
    np.testing.assert_allclose(np_(jx), np.diag(2 * np.exp(np_(inputs[0]))), rtol=1e-6)
    np.testing.assert_allclose(np_(jy), [[3.0, 0.0], [0.0, 3.0]])


def test_jacobian_nesting_and_shapes_for_tuples():
    x, y = rand64(2, 3), rand64(4)

    def f(x, y):
        return x * y.sum(), x.exp().sum()

    jac = jacobian(f, (x, y))
    assert isinstance(jac, tuple) and len(jac) == 2
    assert all(isinstance(row, tuple) and len(row) == 2 for row in jac)
    assert [[tuple(j.shape) for j in row] for row in jac] == [
        [(2, 3, 2, 3), (2, 3, 4)], [(2, 3), (4,)]]
    xs, ys = np_(x), np_(y)
    np.testing.assert_allclose(np_(jac[0][0]), diag4(np.full((2, 3), ys.sum())))
    np.testing.assert_allclose(np_(jac[0][1]), np.broadcast_to(xs[..., None], (2, 3, 4)))
    np.testing.assert_allclose(np_(jac[1][0]), np.exp(xs))
    np.testing.assert_array_equal(np_(jac[1][1]), np.zeros(4))  # independent: zeros
    assert all(j.dtype is torch.float64 for row in jac for j in row)


def test_jacobian_single_input_tuple_output_and_reverse():
    x = rand64(3)
    jac = jacobian(lambda x: (x * 2, x.sum()), x)
    assert isinstance(jac, tuple) and [tuple(j.shape) for j in jac] == [(3, 3), (3,)]
    np.testing.assert_allclose(np_(jac[0]), 2 * np.eye(3))
    jac = jacobian(lambda x, y: (x * y).sum(), (x, rand64(3)))
    assert isinstance(jac, tuple) and [tuple(j.shape) for j in jac] == [(3,), (3,)]


def test_jacobian_of_zero_dim_input_and_output():
    x = scalar64(1.5)
    jac = jacobian(lambda x: x * x, x)
    assert jac.shape == ()
    assert jac.item() == pytest.approx(3.0)


def test_jacobian_of_identity_and_of_a_closure():
    x = rand64(3)
    np.testing.assert_array_equal(np_(jacobian(lambda a: a, x)), np.eye(3))
    # Only the argument is differentiated, not the same tensor captured by the function.
    np.testing.assert_allclose(np_(jacobian(lambda a: a * x, x)), np.diag(np_(x)))


def test_jacobian_with_transposed_inputs_and_outputs():
    x = rand64(2, 3)
    jac = jacobian(lambda a: a.t().exp(), x)
    expected = np.transpose(diag4(np.exp(np_(x))), (1, 0, 2, 3))
    assert jac.shape == (3, 2, 2, 3)
    np.testing.assert_allclose(np_(jac), expected)
    xt = rand64(3, 2).t()  # a non-contiguous input
    jac = jacobian(lambda a: a.exp(), xt, create_graph=True)
    np.testing.assert_allclose(np_(jac), diag4(np.exp(np_(xt))))


def test_jacobian_result_is_detached_without_create_graph():
    x = rand64(3).requires_grad_()
    jac = jacobian(lambda a: a.exp(), x)
    assert not jac.requires_grad and jac.grad_fn is None


def test_jacobian_create_graph_is_differentiable_wrt_the_inputs():
    x = rand64(2, 2).requires_grad_()
    jac = jacobian(exp_reducer, x, create_graph=True)
    jac.sum().backward()
    np.testing.assert_allclose(np_(x.grad), np.exp(np_(x)), rtol=1e-12)


def test_jacobian_create_graph_of_linear_function_need_not_require_grad():
    # "when strict is False, the result can not require gradients"
    jac = jacobian(lambda a: 3 * a, rand64(2), create_graph=True)
    assert not jac.requires_grad
    np.testing.assert_allclose(np_(jac), 3 * np.eye(2))


def test_jacobian_works_under_no_grad_and_restores_the_mode():
    x = rand64(2)
    with torch.no_grad():
        jac = jacobian(lambda a: a * a, x)
        assert not torch.is_grad_enabled()
    np.testing.assert_allclose(np_(jac), np.diag(2 * np_(x)))


def test_jacobian_strict_mode():
    x, y = rand64(2), rand64(2)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode."):
        jacobian(lambda x, y: x * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        jacobian(lambda x: torch.ones(2), x, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True"):
        jacobian(lambda x: 3 * x, x, strict=True, create_graph=True)
    # not strict: the mathematical value
    np.testing.assert_array_equal(np_(jacobian(lambda x: torch.ones(2), x)), np.zeros((2, 2)))


def test_jacobian_vectorize_gives_the_same_rows():
    x, y = rand64(3, 2), rand64(2)
    def f(a, b):
        return (a * b).exp()

    plain = jacobian(f, (x, y))
    vec = jacobian(f, (x, y), vectorize=True)
    for p, v in zip(plain, vec):
        np.testing.assert_array_equal(np_(p), np_(v))
    with pytest.raises(RuntimeError, match="not supported together"):
        jacobian(f, (x, y), vectorize=True, strict=True)


def test_jacobian_strategy():
    x = rand64(2)
    np.testing.assert_array_equal(np_(jacobian(lambda a: a * 1, x, strategy="reverse-mode")),
                                  np.eye(2))
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        jacobian(lambda a: a, x, strategy="forward-mode")  # (test_forward_ad.py: with it)
    with pytest.raises(ValueError, match="Expected strategy"):
        jacobian(lambda a: a, x, strategy="sideways")


@pytest.mark.parametrize("fn", [jacobian, hessian])
def test_inputs_and_outputs_must_be_tensors(fn):
    name = fn.__name__
    with pytest.raises(TypeError, match=f"The inputs given to {name} must be either a Tensor "
                                        f"or a tuple of Tensors but the value at index 1"):
        fn(lambda *a: a[0].sum(), (rand64(2), 3.0))
    with pytest.raises(TypeError, match="but the given inputs has type <class 'list'>"):
        fn(lambda a: a.sum(), [rand64(2)])
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to"):
        fn(lambda a: 1.0, rand64(2))


# -- hessian ------------------------------------------------------------------------------------

def test_hessian_doc_example_pow_reducer():
    inputs = torch.rand(2, 2)
    hes = hessian(pow_reducer, inputs)
    assert hes.shape == (2, 2, 2, 2) and hes.dtype is torch.float32 and not hes.requires_grad
    np.testing.assert_allclose(np_(hes), diag4(6 * np_(inputs)), rtol=1e-6)
    hes = hessian(pow_reducer, inputs, create_graph=True)
    assert hes.requires_grad and hes.grad_fn is not None
    np.testing.assert_allclose(np_(hes), diag4(6 * np_(inputs)), rtol=1e-6)


def test_hessian_doc_example_pow_adder_reducer():
    inputs = (torch.rand(2), torch.rand(2))
    hes = hessian(pow_adder_reducer, inputs)
    expected = [[4 * np.eye(2), np.zeros((2, 2))], [np.zeros((2, 2)), 6 * np.eye(2)]]
    assert isinstance(hes, tuple) and all(isinstance(row, tuple) for row in hes)
    for row, exp_row in zip(hes, expected):
        for h, e in zip(row, exp_row):
            np.testing.assert_allclose(np_(h), e)


def test_hessian_cross_terms_shapes_and_vectorize():
    x, y = rand64(2), rand64(3)

    def f(x, y):
        return (x.sum() * y.exp()).sum()

    hes = hessian(f, (x, y))
    assert [[tuple(h.shape) for h in row] for row in hes] == [[(2, 2), (2, 3)],
                                                              [(3, 2), (3, 3)]]
    ey = np.exp(np_(y))
    np.testing.assert_allclose(np_(hes[0][0]), np.zeros((2, 2)))
    np.testing.assert_allclose(np_(hes[0][1]), np.broadcast_to(ey, (2, 3)))
    np.testing.assert_allclose(np_(hes[1][0]), np.broadcast_to(ey[:, None], (3, 2)))
    np.testing.assert_allclose(np_(hes[1][1]), np.diag(np_(x).sum() * ey))
    vec = hessian(f, (x, y), vectorize=True)
    for row, vrow in zip(hes, vec):
        for h, v in zip(row, vrow):
            np.testing.assert_array_equal(np_(h), np_(v))


def test_hessian_errors():
    x = rand64(2)
    with pytest.raises(RuntimeError, match="function given to hessian should return a single "
                                           "Tensor"):
        hessian(lambda a: (a.sum(), a.sum()), x)
    with pytest.raises(RuntimeError, match="returned by the function given to hessian should "
                                           "contain a single element"):
        hessian(lambda a: a * a, x)
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the "
                                           "jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        hessian(lambda a: (3 * a).sum(), x, strict=True)
    np.testing.assert_array_equal(np_(hessian(lambda a: (3 * a).sum(), x)), np.zeros((2, 2)))
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        hessian(pow_reducer, x, outer_jacobian_strategy="forward-mode")


# -- vjp ----------------------------------------------------------------------------------------

def test_vjp_doc_example_exp_reducer(device):
    inputs = torch.rand(4, 4, device=device)
    v = torch.ones(4, device=device)
    out, res = vjp(exp_reducer, inputs, v)
    e = np.exp(np_(inputs))
    np.testing.assert_allclose(np_(out), e.sum(1), rtol=1e-6)
    np.testing.assert_allclose(np_(res), e, rtol=1e-6)
    assert not out.requires_grad and not res.requires_grad


def test_vjp_doc_example_create_graph():
    inputs = torch.rand(4, 4)
    out, res = vjp(exp_reducer, inputs, torch.ones(4), create_graph=True)
    assert out.grad_fn.name() == "SumBackward1" and res.grad_fn.name() == "MulBackward0"
    np.testing.assert_allclose(np_(res), np.exp(np_(inputs)), rtol=1e-6)


def test_vjp_doc_example_adder():
    inputs = (torch.rand(2), torch.rand(2))
    out, (gx, gy) = vjp(adder, inputs, torch.ones(2))
    np.testing.assert_allclose(np_(out), 2 * np_(inputs[0]) + 3 * np_(inputs[1]), rtol=1e-6)
    np.testing.assert_array_equal(np_(gx), [2.0, 2.0])
    np.testing.assert_array_equal(np_(gy), [3.0, 3.0])


def test_vjp_with_weights_and_tuple_outputs():
    x = rand64(3)
    v = (rand64(3), scalar64(2.0))
    _, g = vjp(lambda a: (a * a, a.sum()), x, v)
    assert isinstance(g, torch.Tensor)
    np.testing.assert_allclose(np_(g), 2 * np_(x) * np_(v[0]) + 2.0)


def test_vjp_v_may_be_none_only_for_a_single_element_output():
    x = rand64(3)
    _, g = vjp(lambda a: (a * a).sum(), x)
    np.testing.assert_allclose(np_(g), 2 * np_(x))
    with pytest.raises(RuntimeError, match="The vector v can only be None if the "
                                           "user-provided function returns a single Tensor "
                                           "with a single element."):
        vjp(lambda a: a * a, x)


def test_v_validation_messages():
    x = rand64(3)
    with pytest.raises(RuntimeError, match=r"^v has invalid size: should be "):
        vjp(lambda a: a * 2, x, rand64(2))
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        vjp(lambda a: a * 2, x, (rand64(3), rand64(3)))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but "
                                           "got 1."):
        vjp(lambda a: (a, a), x, (rand64(3),))
    with pytest.raises(RuntimeError, match="Entry 1 in v has invalid size"):
        jvp(adder, (x, x), (rand64(3), rand64(4)))
    with pytest.raises(TypeError, match="The v given to vjp must be either a Tensor or a tuple "
                                        "of Tensors"):
        vjp(lambda a: a * 2, x, [1.0, 2.0, 3.0])


def test_vjp_strict_mode():
    x, y = rand64(2), rand64(2)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode."):
        vjp(lambda x, y: x * 2, (x, y), torch.ones(2, dtype=torch.float64), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True"):
        vjp(lambda x: x * 2, x, torch.ones(2, dtype=torch.float64), strict=True,
            create_graph=True)
    _, (_, gy) = vjp(lambda x, y: x * 2, (x, y), torch.ones(2, dtype=torch.float64))
    np.testing.assert_array_equal(np_(gy), [0.0, 0.0])


def test_vjp_create_graph_flows_back_to_inputs_and_v():
    x = rand64(3).requires_grad_()
    v = rand64(3).requires_grad_()
    _, g = vjp(lambda a: a * a, x, v, create_graph=True)  # g = 2 x v
    g.sum().backward()
    np.testing.assert_allclose(np_(x.grad), 2 * np_(v))
    np.testing.assert_allclose(np_(v.grad), 2 * np_(x))
    _, g = vjp(lambda a: a * a, x, v)
    assert not g.requires_grad


# -- jvp ----------------------------------------------------------------------------------------

def test_jvp_doc_example_exp_reducer(device):
    inputs = torch.rand(4, 4, device=device)
    out, res = jvp(exp_reducer, inputs, torch.ones(4, 4, device=device))
    expected = np.exp(np_(inputs)).sum(1)
    np.testing.assert_allclose(np_(out), expected, rtol=1e-6)
    np.testing.assert_allclose(np_(res), expected, rtol=1e-6)
    assert not res.requires_grad


def test_jvp_doc_example_create_graph():
    inputs = torch.rand(4, 4)
    out, res = jvp(exp_reducer, inputs, torch.ones(4, 4), create_graph=True)
    assert out.grad_fn.name() == "SumBackward1" and res.requires_grad
    np.testing.assert_allclose(np_(res), np.exp(np_(inputs)).sum(1), rtol=1e-6)


def test_jvp_doc_example_adder():
    inputs = (torch.rand(2), torch.rand(2))
    out, res = jvp(adder, inputs, (torch.ones(2), torch.ones(2)))
    np.testing.assert_allclose(np_(out), 2 * np_(inputs[0]) + 3 * np_(inputs[1]), rtol=1e-6)
    np.testing.assert_array_equal(np_(res), [5.0, 5.0])


def test_jvp_matches_the_jacobian_and_handles_tuple_outputs():
    x, u = rand64(2, 3), rand64(2, 3)
    _, (j1, j2) = jvp(lambda a: (a.exp(), (a * a).sum()), x, u)
    np.testing.assert_allclose(np_(j1), np.exp(np_(x)) * np_(u))
    np.testing.assert_allclose(np_(j2), (2 * np_(x) * np_(u)).sum())
    assert j2.shape == ()


def test_jvp_v_none_needs_a_single_element_input():
    _, res = jvp(lambda a: a * a * a, scalar64(2.0))
    assert res.item() == pytest.approx(12.0)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the "
                                           "user-provided function is a single Tensor with a "
                                           "single element."):
        jvp(lambda a: a * 2, rand64(2))


def test_jvp_strict_mode_and_zeros():
    x, y = rand64(2), rand64(2)
    ones = torch.ones(2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                                           "independent of input 1"):
        jvp(lambda x, y: x * 2, (x, y), (ones, ones), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients"):
        jvp(lambda x: torch.ones(2), x, ones, strict=True)
    _, res = jvp(lambda x: torch.ones(2, dtype=torch.float64), x, ones)
    np.testing.assert_array_equal(np_(res), [0.0, 0.0])


# -- vhp, hvp -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [vhp, hvp])
def test_vhp_hvp_doc_example_pow_reducer(fn):
    inputs = torch.rand(2, 2)
    out, res = fn(pow_reducer, inputs, torch.ones(2, 2))
    assert out.shape == () and not out.requires_grad and not res.requires_grad
    assert out.item() == pytest.approx(float((np_(inputs) ** 3).sum()), rel=1e-6)
    np.testing.assert_allclose(np_(res), 6 * np_(inputs), rtol=1e-6)
    out, res = fn(pow_reducer, inputs, torch.ones(2, 2), create_graph=True)
    assert out.grad_fn.name() == "SumBackward0" and res.grad_fn.name() == "MulBackward0"


@pytest.mark.parametrize("fn", [vhp, hvp])
def test_vhp_hvp_doc_example_pow_adder_reducer(fn):
    inputs = (torch.rand(2), torch.rand(2))
    out, (rx, ry) = fn(pow_adder_reducer, inputs, (torch.zeros(2), torch.ones(2)))
    x, y = np_(inputs[0]), np_(inputs[1])
    assert out.item() == pytest.approx(float((2 * x ** 2 + 3 * y ** 2).sum()), rel=1e-6)
    np.testing.assert_array_equal(np_(rx), [0.0, 0.0])
    np.testing.assert_array_equal(np_(ry), [6.0, 6.0])


def test_vhp_and_hvp_agree_with_the_hessian():
    x, v = rand64(3), rand64(3)

    def f(a):
        return (a.exp() * a.sum()).sum()

    h = np_(hessian(f, x))
    _, left = vhp(f, x, v)
    _, right = hvp(f, x, v)
    np.testing.assert_allclose(np_(left), np_(v) @ h, rtol=1e-12)
    np.testing.assert_allclose(np_(right), h @ np_(v), rtol=1e-12)


@pytest.mark.parametrize("fn", [vhp, hvp])
def test_vhp_hvp_errors_and_v_none(fn):
    name = fn.__name__
    x = rand64(2)
    with pytest.raises(RuntimeError, match=f"The function given to {name} should return a "
                                           f"single Tensor"):
        fn(lambda a: (a.sum(), a.sum()), x, x)
    with pytest.raises(RuntimeError, match=f"returned by the function given to {name} should "
                                           f"contain a single element"):
        fn(lambda a: a * a, x, x)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the "
                                           "user-provided function is a single Tensor"):
        fn(pow_reducer, x)
    _, res = fn(pow_reducer, scalar64(2.0))
    assert res.item() == pytest.approx(12.0)
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the "
                                           "jacobian of the user-provided function"):
        fn(lambda a: (3 * a).sum(), x, x, strict=True)
    _, res = fn(lambda a: (3 * a).sum(), x, x)
    np.testing.assert_array_equal(np_(res), [0.0, 0.0])


def test_vhp_create_graph_gives_third_derivatives():
    x = rand64(3).requires_grad_()
    _, res = vhp(pow_reducer, x, torch.ones(3, dtype=torch.float64), create_graph=True)
    res.sum().backward()  # d/dx sum(6 x) = 6
    np.testing.assert_allclose(np_(x.grad), [6.0, 6.0, 6.0])
