"""gradcheck and gradgradcheck: passing on correct ops and Functions, the failure messages on
wrong ones, raise_exception, nondet_tol, the undefined/zero grad_output checks, the input
checks, fast mode and the flags that need vmap or forward AD."""

import sys

import numpy as np
import pytest

import tritongrad as torch
from tritongrad.autograd import Function, GradcheckError, gradcheck, gradgradcheck
from tests.helpers import Mul, Exp

# The module, not the function that autograd re-exports under the same name.
gc = sys.modules["tritongrad.autograd.gradcheck"]


def rand64(*shape, device="cpu", requires_grad=True):
    return torch.rand(*shape, dtype=torch.float64, device=device, requires_grad=requires_grad)


class WrongMul(Mul):
    """a * b whose gradient for b is doubled."""

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a * 2


class CubeFirstOrderOnly(Function):
    """x ** 3 with a right first derivative that is not differentiable (detached)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() * x.detach()


class NoisySquare(Function):
    """x ** 2 whose backward is multiplied by (1 + tiny noise): a nondeterministic backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * (1 + 1e-9 * torch.rand(*x.shape, dtype=x.dtype))


OPS = {
    "exp_log_sqrt": lambda x: (x.exp() + x.log() * x.sqrt()).sum(dim=0),
    "div_pow": lambda x: x.pow(3) / (x + 1) - 2 / x,
    "mm_t_mean": lambda x: x.mm(x.t()).mean(dim=1),
    "views": lambda x: x.transpose(0, 1)[1:, ::2].unsqueeze(0) * x[0].expand(2, 3)[:, :1],
    "relu_maximum": lambda x: (x - 0.5).relu() + torch.maximum(x, x.pow(2) * 0.9),
    "custom_exp": lambda x: Exp.apply(x * 2),
}


# -- gradcheck passes on correct code -----------------------------------------------------------

@pytest.mark.parametrize("name", list(OPS))
def test_gradcheck_passes_on_tritongrad_ops(name):
    x = torch.tensor([[0.3, 0.7, 1.1], [1.6, 0.45, 0.9]], dtype=torch.float64,
                     requires_grad=True)
    assert gradcheck(OPS[name], (x,))


def test_gradcheck_passes_on_the_seed_function_on_device(device):
    x = rand64(2, 3, device=device)
    assert gradcheck(Exp.apply, x)  # a single Tensor is accepted as inputs


def test_gradcheck_several_inputs_and_outputs_with_non_tensor_and_integer_outputs():
    a, b = rand64(2, 3), rand64(3, 2)
    c = torch.rand(2, dtype=torch.float64)  # no grad: not checked, still passed through

    def f(a, scale, b, c):
        y = a.mm(b) * scale
        return y, (a * a).sum(), y > 1.0, c * 2

    assert gradcheck(f, (a, 3, b, c))


def test_gradcheck_non_contiguous_input():
    base = rand64(3, 2)
    xt = base.t()  # a non-leaf, non-contiguous input that requires grad
    assert not xt.is_contiguous()
    assert gradcheck(lambda x: x.exp() * torch.arange(3, dtype=torch.float64), (xt,))


def test_gradcheck_zero_dim_and_empty_inputs():
    s = torch.full((), 0.7, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda s: s.exp() * s, (s,))
    assert gradgradcheck(lambda s: s.exp() * s, [s])  # a list is taken as the tuple
    assert gradcheck(lambda e: e.exp(), (rand64(0, 3),))


def test_exports():
    assert torch.autograd.gradcheck is gradcheck and torch.autograd.gradgradcheck is gradgradcheck
    assert issubclass(torch.autograd.GradcheckError, RuntimeError)
    assert torch.autograd.functional.jacobian.__module__ == "tritongrad.autograd.functional"
    for name in ("functional", "GradcheckError", "gradcheck", "gradgradcheck"):
        assert name in torch.autograd.__all__


def test_gradcheck_restores_the_inputs():
    x = rand64(2, 2)
    before, version = x.detach().numpy().copy(), x._version
    gradcheck(lambda x: x * x, (x,))
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x._version == version and x.grad is None


def test_gradcheck_fast_mode():
    a, b = rand64(2, 3), rand64(3, 4)
    assert gradcheck(lambda a, b: (a.mm(b).exp(), a.sum()), (a, b), fast_mode=True)
    with pytest.raises(GradcheckError, match="computed in fast mode") as info:
        gradcheck(WrongMul.apply, (rand64(3), rand64(3)), fast_mode=True)
    assert "Jacobian mismatch for output 0 with respect to input 1" in str(info.value)
    assert "The max per-element difference (slow mode) is" in str(info.value)


# -- failures -----------------------------------------------------------------------------------

def test_gradcheck_reports_the_wrong_input_and_the_differing_elements():
    a = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.25, 3.0, 1.5], dtype=torch.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongMul.apply, (a, b))
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 1,\nnumerical:")
    assert "\nanalytical:" in msg
    assert "3 of 9 elements differ" in msg
    # d(a*b)/db = a on the diagonal: numerical a, analytical 2a; the largest first
    assert "[2, 2]: numerical 2, analytical 4, difference 2" in msg
    assert msg.index("[2, 2]") < msg.index("[1, 1]") < msg.index("[0, 0]")


def test_gradcheck_input_index_counts_differentiable_inputs_only():
    # As in PyTorch: "input 1" is the second input that requires grad.
    const = rand64(3, requires_grad=False)
    with pytest.raises(GradcheckError, match="with respect to input 1"):
        gradcheck(lambda c, a, b: WrongMul.apply(a, b) + c, (const, rand64(3), rand64(3)))


def test_gradcheck_raise_exception_false_returns_false():
    assert gradcheck(WrongMul.apply, (rand64(3), rand64(3)), raise_exception=False) is False
    assert gradcheck(lambda x: x * 2, (rand64(3),), raise_exception=False) is True


def test_gradcheck_nondet_tol():
    x = rand64(4)
    with pytest.raises(GradcheckError, match="Backward is not reentrant.*tolerance for "
                                             "nondeterminism was 0.0"):
        gradcheck(NoisySquare.apply, (x,))
    assert gradcheck(NoisySquare.apply, (x,), nondet_tol=1e-6)


class TwoOutputs(Function):
    """(2x, 3x) whose backward gets None for an output that received no gradient, and whose
    handling of the pair (None, all-zero) is chosen by ``on_undefined``. Only the
    undefined-grad check produces that pair: Jacobian rows pass unit vectors and the
    zero-grad check passes defined zeros."""

    on_undefined = "zeros"

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        given = [g for g in (g1, g2) if g is not None]
        if len(given) == 1 and not bool(given[0].ne(0).any()):
            if TwoOutputs.on_undefined == "raise":
                raise RuntimeError("cannot handle an undefined gradient")
            if TwoOutputs.on_undefined == "ones":
                return torch.ones_like(given[0])
        total = None
        for g, k in ((g1, 2), (g2, 3)):
            if g is not None:
                total = g * k if total is None else total + g * k
        return total


@pytest.mark.parametrize("mode, message", [
    ("raise", "Expected backward function to handle undefined output grads"),
    ("ones", ("Expected all input grads to be undefined or zero when all output grads are "
              "undefined or zero")),
])
def test_gradcheck_checks_undefined_output_grads(monkeypatch, mode, message):
    x = rand64(3)
    assert gradcheck(TwoOutputs.apply, (x,))
    monkeypatch.setattr(TwoOutputs, "on_undefined", mode)
    with pytest.raises(GradcheckError, match=message):
        gradcheck(TwoOutputs.apply, (x,))
    assert gradcheck(TwoOutputs.apply, (x,), check_undefined_grad=False)


def test_gradcheck_checks_that_backward_is_multiplied_by_grad_output():
    class ConstantWhenZero(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 if bool(g.ne(0).any()) else torch.ones_like(g)

    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(ConstantWhenZero.apply, (rand64(3),))


def test_gradcheck_grad_dtypes(monkeypatch):
    # A backward that returns float32 gradients for float64 inputs (simulated: the engine and
    # Function both cast gradients to the input's dtype, so no real op does this).
    real_grad = gc._grad

    def float32_grads(*args, **kwargs):
        return tuple(None if g is None else g.float() for g in real_grad(*args, **kwargs))

    monkeypatch.setattr(gc, "_grad", float32_grads)
    x = rand64(3)
    with pytest.raises(GradcheckError, match="Gradient has dtype mismatch"):
        gradcheck(lambda x: x * 2, (x,), check_grad_dtypes=True)
    with pytest.raises(GradcheckError, match="grad is incorrect type"):
        gradcheck(lambda x: x * 2, (x,))


def test_gradcheck_no_differentiable_outputs():
    x = rand64(2)
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be "
                                             "zero"):
        gradcheck(lambda x: x.detach() * 2, (x,))
    assert gradcheck(lambda x: (), (x,))
    assert gradcheck(lambda x: torch.ones(2), (x,))


# -- argument checks ----------------------------------------------------------------------------

def test_gradcheck_warns_for_single_precision_inputs():
    x = torch.rand(3, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double "
                                         "precision floating point"):
        gradcheck(lambda x: x * 2, (x,), eps=1e-3, atol=1e-3)


def test_gradcheck_input_errors():
    with pytest.raises(ValueError, match="expects at least one input tensor to require "
                                         "gradient"):
        gradcheck(lambda x: x * 2, (rand64(3, requires_grad=False),))
    expanded = rand64(1).expand(3)
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda x: x * 2, (expanded,))


def test_gradcheck_mode_flags():
    x = rand64(2)
    with pytest.raises(AssertionError, match="at least one of check_forward_ad or "
                                         "check_backward_ad"):
        gradcheck(lambda x: x * 2, (x,), check_backward_ad=False)
    assert gradcheck(lambda x: x * 2, (x,), check_forward_ad=True, check_batched_forward_grad=True)
    with pytest.raises(AssertionError, match="at least one of check_fwd_over_rev or "
                                         "check_rev_over_rev"):
        gradgradcheck(lambda x: x * 2, (x,), check_rev_over_rev=False)
    # (check_batched_grad: tests/autograd/test_batched_grad.py)


class _Doubler(Function):
    """2x with a backward and a forward-mode rule that can each be made wrong."""

    backward_factor = forward_factor = 2.0

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * _Doubler.backward_factor

    @staticmethod
    def jvp(ctx, t):
        return t * _Doubler.forward_factor


def test_check_forward_ad_compares_the_forward_mode_jacobian(monkeypatch):
    x = rand64(3)
    assert gradcheck(lambda a: (a * a.exp()).sum(0, keepdim=True) * a, (x,),
                     check_forward_ad=True)
    assert gradcheck(_Doubler.apply, (x,), check_forward_ad=True)
    monkeypatch.setattr(_Doubler, "forward_factor", 3.0)
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch for "
                                             "output 0 with respect to input 0"):
        gradcheck(_Doubler.apply, (x,), check_forward_ad=True)
    assert not gradcheck(_Doubler.apply, (x,), check_forward_ad=True, raise_exception=False)
    # only the backward is checked without the flag, only the forward without the other one
    assert gradcheck(_Doubler.apply, (x,))
    monkeypatch.setattr(_Doubler, "forward_factor", 2.0)
    monkeypatch.setattr(_Doubler, "backward_factor", 3.0)
    assert gradcheck(_Doubler.apply, (x,), check_forward_ad=True, check_backward_ad=False)


def test_gradgradcheck_forward_over_reverse():
    x = rand64(2, 3)
    f = lambda a: (a.sin() * a).sum(1)  # noqa: E731
    assert gradgradcheck(f, (x,), check_fwd_over_rev=True)
    assert gradgradcheck(f, (x,), check_fwd_over_rev=True, check_rev_over_rev=False,
                         check_undefined_grad=False)


def test_gradcheck_accepts_the_seed_positional_order_and_sparse_flags():
    x = rand64(3)
    assert gradcheck(lambda x: x.exp(), (x,), 1e-6, 1e-5, 1e-3, True, True)
    assert gradcheck(lambda x: x.exp(), (x,), masked=True)


# -- gradgradcheck ------------------------------------------------------------------------------

GRADGRAD_OPS = {
    "cube": lambda x: x.pow(3),
    "exp_mul_sum": lambda x: (x.exp() * x).sum(dim=1),
    "div_sqrt": lambda x: x.sqrt() / (x + 1),
    "mm": lambda x: x.mm(x.t()),
}


@pytest.mark.parametrize("name", list(GRADGRAD_OPS))
def test_gradgradcheck_passes_on_tritongrad_ops(name):
    x = torch.tensor([[0.3, 0.7, 1.1], [1.6, 0.45, 0.9]], dtype=torch.float64,
                     requires_grad=True)
    assert gradgradcheck(GRADGRAD_OPS[name], (x,))


def test_gradgradcheck_with_given_grad_outputs_and_two_inputs():
    a, b = rand64(2, 3), rand64(3, 2)
    go = rand64(2, 2)
    assert gradgradcheck(lambda a, b: a.mm(b).exp(), (a, b), (go,))
    assert gradgradcheck(lambda a, b: a.mm(b).exp(), (a, b), go, fast_mode=True)


def test_gradgradcheck_detects_a_wrong_second_derivative():
    x = rand64(3)
    assert gradcheck(CubeFirstOrderOnly.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        gradgradcheck(CubeFirstOrderOnly.apply, (x,))
    assert gradgradcheck(CubeFirstOrderOnly.apply, (x,), raise_exception=False) is False


@pytest.mark.parametrize("non_contig", [False, True])
def test_gradgradcheck_random_grad_outputs(monkeypatch, non_contig):
    seen = []
    real = gc.gradcheck

    def spy(func, inputs, **kwargs):
        seen.append(inputs)
        return real(func, inputs, **kwargs)

    monkeypatch.setattr(gc, "gradcheck", spy)
    x = rand64(2, 3)
    assert gradgradcheck(lambda x: (x * x, x.sum() * x.sum()), (x,),
                         gen_non_contig_grad_outputs=non_contig)
    (inputs,) = seen
    assert inputs[0] is x and len(inputs) == 3
    go_matrix, go_scalar = inputs[1], inputs[2]
    assert go_matrix.shape == (2, 3) and go_scalar.shape == ()
    assert go_matrix.requires_grad and go_matrix.is_leaf
    assert go_matrix.is_contiguous() is not non_contig
    values = go_matrix.detach().numpy()
    assert values.min() >= -1 and values.max() < 1
