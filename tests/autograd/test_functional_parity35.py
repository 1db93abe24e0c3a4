"""Parity of ``autograd.functional`` and ``gradcheck`` with PyTorch 2.13 (round 35 sweep).

Expected values are written out from the closed-form derivatives (float64 NumPy); the torch
comparisons run only where torch is installed.
"""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import functional as AF
from tritongrad.autograd.gradcheck import GradcheckError

X = np.array([[0.3, -1.2, 0.8], [1.5, 0.1, -0.7]])
Y = np.array([0.4, -0.9, 1.3])


def _t(a, **kw):
    return tg.tensor(np.asarray(a), **kw)


def _f2(x, y):
    return (x * y).sum(1), x.sin() + y


def _jac_f2_expected():
    """d((x*y).sum(1), sin(x) + y) / d(x, y), by hand."""
    eye2, eye3 = np.eye(2), np.eye(3)
    d0x = eye2[:, :, None] * Y[None, None, :]                         # (2, 2, 3)
    d0y = X.copy()                                                     # (2, 3)
    d1x = (np.einsum("ia,jb->ijab", eye2, eye3) * np.cos(X)[:, :, None, None])
    d1y = np.broadcast_to(eye3, (2, 3, 3))                             # (2, 3, 3)
    return [[d0x, d0y], [d1x, d1y]]


def _fwd(func, inputs, **kw):
    return AF.jacobian(func, inputs, vectorize=True, strategy="forward-mode", **kw)


# -- jacobian / hessian in forward mode ---------------------------------------------------------

def test_forward_mode_jacobian_nests_lists_as_pytorch():
    res = _fwd(_f2, (_t(X), _t(Y)))
    assert type(res) is list and all(type(r) is list for r in res)
    for got_row, exp_row in zip(res, _jac_f2_expected()):
        for got, exp in zip(got_row, exp_row):
            assert got.dtype is tg.float64 and tuple(got.shape) == exp.shape
            np.testing.assert_allclose(got.numpy(), exp, rtol=1e-12, atol=1e-12)
    # tuple of inputs, one output: a list; one input, tuple of outputs: a tuple (PyTorch's
    # _tuple_postprocess of its lists)
    one_out = _fwd(lambda x, y: (x * y).sum(1), (_t(X), _t(Y)))
    assert type(one_out) is list and len(one_out) == 2
    np.testing.assert_allclose(one_out[1].numpy(), X, rtol=1e-12)
    one_in = _fwd(lambda x: (x.sum(), x * 2), _t(Y))
    assert type(one_in) is tuple
    np.testing.assert_allclose(one_in[0].numpy(), np.ones(3))
    np.testing.assert_allclose(one_in[1].numpy(), 2 * np.eye(3))
    single = _fwd(lambda x: x.exp(), _t(Y))
    np.testing.assert_allclose(single.numpy(), np.diag(np.exp(Y)), rtol=1e-12)


def test_forward_mode_jacobian_agrees_with_reverse_mode():
    fwd = _fwd(_f2, (_t(X), _t(Y)))
    rev = AF.jacobian(_f2, (_t(X), _t(Y)))
    assert type(rev) is tuple and all(type(r) is tuple for r in rev)
    for fr, rr in zip(fwd, rev):
        for a, b in zip(fr, rr):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_forward_over_reverse_hessian_nests_lists():
    def f(x, y):
        return (x.pow(2) * y).sum() + (y ** 3).sum()
    x, y = Y, Y[::-1].copy()
    res = AF.hessian(f, (_t(x), _t(y)), vectorize=True, outer_jacobian_strategy="forward-mode")
    assert type(res) is list and all(type(r) is list for r in res)
    expected = [[np.diag(2 * y), np.diag(2 * x)], [np.diag(2 * x), np.diag(6 * y)]]
    for got_row, exp_row in zip(res, expected):
        for got, exp in zip(got_row, exp_row):
            np.testing.assert_allclose(got.numpy(), exp, rtol=1e-12, atol=1e-12)
            assert not got.requires_grad  # create_graph=False: nothing to differentiate
    single = AF.hessian(lambda a: (a ** 3).sum(), _t(Y), vectorize=True,
                        outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(single.numpy(), np.diag(6 * Y), rtol=1e-12)


def test_forward_mode_checks_inputs_before_vectorize():
    # PyTorch's order: strict, then the inputs' types, then vectorize
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor"):
        AF.jacobian(lambda a: a, [_t(Y)], strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True` and `strategy=\"forward-mode\"`"):
        AF.jacobian(lambda a: a, [_t(Y)], strict=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(lambda a: a, _t(Y), strategy="forward-mode")


def test_forward_mode_integer_input_is_make_duals_value_error():
    ints = tg.arange(3)
    with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
        _fwd(lambda a: a * 2, ints)
    with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
        AF.hessian(lambda a: (a * a).sum(), ints, vectorize=True,
                   outer_jacobian_strategy="forward-mode")
    assert not ints.requires_grad


def test_forward_mode_non_tensor_output_names_jacobian():
    with pytest.raises(TypeError, match="The outputs given to jacobian must be either a Tensor "
                                        "or a tuple of Tensors but the given outputs has type"):
        _fwd(lambda a: 3.0, _t(Y))
    with pytest.raises(TypeError, match="but the value at index 1 has type"):
        _fwd(lambda a: (a * 2, None), _t(Y))


def test_forward_mode_jacobian_is_detached():
    # create_graph=False (forward mode refuses True): the result carries no history, as
    # documented (PyTorch's result keeps a graph to an input that requires grad).
    x = _t(Y, requires_grad=True)
    j = _fwd(lambda a: a.exp(), x)
    assert not j.requires_grad and j.grad_fn is None
    np.testing.assert_allclose(j.numpy(), np.diag(np.exp(Y)), rtol=1e-12)


def test_vectorized_zero_blocks_are_expanded():
    # an input no output depends on: its block is one row of zeros expanded (stride 0, as
    # PyTorch's), not out.numel() * in.numel() zeros in memory
    rev = AF.jacobian(lambda x, y: x * 2, (_t(Y), _t(X)), vectorize=True)
    assert rev[1].stride()[0] == 0 and not rev[1].is_contiguous()
    assert tuple(rev[1].shape) == (3, 2, 3) and not np.any(rev[1].numpy())
    np.testing.assert_allclose(rev[0].numpy(), 2 * np.eye(3))
    # in forward mode an output without a tangent: its zeros broadcast over the input's
    fwd = _fwd(lambda x: tg.ones(2, dtype=tg.float64), _t(X))
    assert tuple(fwd.shape) == (2, 2, 3) and fwd.stride()[1:] == (0, 0)
    assert not fwd.is_contiguous() and not np.any(fwd.numpy())
    hes = AF.hessian(lambda a: a.sum() * 2, _t(Y), vectorize=True)
    assert not hes.is_contiguous() and not np.any(hes.numpy())


# -- gradcheck ----------------------------------------------------------------------------------

def _x(**kw):
    return _t(X, requires_grad=True, **kw)


class _WrongSquare(tg.autograd.Function):
    """x * x with backward 3 x g (the right one is 2 x g)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * 3


@pytest.mark.parametrize("out", [lambda x: 3.0, lambda x: (x * 2, None)])
def test_gradcheck_refuses_non_tensor_outputs(out):
    # PyTorch fails reading ``requires_grad`` from the output (AttributeError); the error is
    # also a TypeError, and raise_exception=False does not turn it into False.
    for exc in (TypeError, AttributeError):
        with pytest.raises(exc, match="gradcheck: func must return a Tensor or a tuple of "
                                      "Tensors, but output"):
            tg.autograd.gradcheck(out, (_x(),), raise_exception=False)
    with pytest.raises(AttributeError, match="has type float"):
        tg.autograd.gradgradcheck(lambda x: 3.0, (_x(),))


def test_gradcheck_outputs_without_grad():
    # a Tensor output that needs no grad is checked to have a zero numerical gradient
    assert tg.autograd.gradcheck(lambda x: (x > 0).long(), (_x(),))
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be "
                                             "zero"):
        tg.autograd.gradcheck(lambda x: x.detach() * 2, (_x(),))


def test_gradcheck_no_input_requires_grad_wording():
    with pytest.raises(ValueError, match="but none of them have requires_grad=True"):
        tg.autograd.gradcheck(lambda x: x * 2, (_t(X),))


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_wrong_backward(fast_mode):
    assert issubclass(GradcheckError, RuntimeError)
    x = _t([1.0, 2.0], requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        tg.autograd.gradcheck(_WrongSquare.apply, (x,), fast_mode=fast_mode)
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    if not fast_mode:  # the whole Jacobians: numerical diag(2x), analytical diag(3x)
        assert "analytical:" in msg and "[0, 0]: numerical 2, analytical 3" in msg
    assert tg.autograd.gradcheck(_WrongSquare.apply, (x,), raise_exception=False,
                                 fast_mode=fast_mode) is False
    # analytical 3x against numerical 2x: within rtol=0.6 (|3x - 2x| <= 0.6 * 2x)
    assert tg.autograd.gradcheck(_WrongSquare.apply, (x,), rtol=0.6, fast_mode=fast_mode)
    # gradgradcheck differentiates the backward (3 x g) as written, which autograd does right
    assert tg.autograd.gradgradcheck(_WrongSquare.apply, (x,), fast_mode=fast_mode)


def test_gradcheck_float32_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert tg.autograd.gradcheck(lambda x: x * 2, (_x(dtype=tg.float32),), eps=1e-3,
                                     atol=1e-3)
    assert any("Input #0 requires gradient and is not a double precision" in str(m.message)
               for m in w)


# -- against torch ------------------------------------------------------------------------------

def _structure(res, torch_mod):
    if isinstance(res, (list, tuple)):
        return type(res).__name__, [_structure(r, torch_mod) for r in res]
    return tuple(res.shape), np.asarray(res.detach().numpy())


def _same(a, b):
    if isinstance(a[1], list):
        assert a[0] == b[0] and len(a[1]) == len(b[1])
        for x, y in zip(a[1], b[1]):
            _same(x, y)
    else:
        assert a[0] == b[0]
        np.testing.assert_allclose(a[1], b[1], rtol=1e-10, atol=1e-12)


# ("1t", one input and a tuple of outputs, is left to the test above: torch's vmap takes
# seconds compiling for its 0-d output)
@pytest.mark.parametrize("case", ["tt", "t1", "11", "hess"])
def test_forward_mode_structures_match_torch(case):
    torch = pytest.importorskip("torch")

    def run(lib, tensor):
        fn = {"tt": _f2, "t1": lambda x, y: (x * y).sum(1), "11": lambda x: x.exp()}
        if case == "hess":
            return lib.autograd.functional.hessian(
                lambda x, y: (x.pow(2) * y).sum() + (y ** 3).sum(),
                (tensor(Y), tensor(Y[::-1].copy())), vectorize=True,
                outer_jacobian_strategy="forward-mode")
        args = (tensor(X), tensor(Y)) if case[0] == "t" else tensor(Y)
        return lib.autograd.functional.jacobian(fn[case], args, vectorize=True,
                                                strategy="forward-mode")
    _same(_structure(run(tg, tg.tensor), tg), _structure(run(torch, torch.tensor), torch))


def test_vectorized_zero_block_layout_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        fn = lib.autograd.functional
        rev = fn.jacobian(lambda x, y: x * 2, (lib.tensor(Y), lib.tensor(X)), vectorize=True)
        fwd = fn.jacobian(lambda x: lib.ones(2, dtype=lib.float64), lib.tensor(X),
                          vectorize=True, strategy="forward-mode")
        assert not rev[1].is_contiguous() and not fwd.is_contiguous()
        assert rev[1].stride()[0] == 0 and fwd.stride()[1:] == (0, 0)


def test_gradcheck_non_tensor_output_type_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, tg):
        x = lib.tensor(X, requires_grad=True)
        with pytest.raises(AttributeError):
            lib.autograd.gradcheck(lambda a: (a * 2, None), (x,))
