"""``tg.nn.grad`` (session 40): a convolution's input and weight gradients, against autograd
on float64, finite differences, and torch 2.13 where installed."""

import numpy as np
import pytest
import tritongrad.nn.grad as ng

import tritongrad as tg

rng = np.random.default_rng(40)
CASES = [  # (n, input shape, weight shape, stride, padding, dilation, groups)
    (1, (2, 4, 9), (6, 2, 3), 2, 1, 1, 2),
    (2, (1, 2, 6, 7), (3, 2, 3, 2), 1, (1, 0), 2, 1),
    (3, (1, 2, 5, 5, 4), (2, 1, 2, 3, 2), (1, 2, 1), 1, 1, 2),
]


def _t(shape):
    return tg.tensor(rng.standard_normal(shape))


@pytest.mark.parametrize("n, xs, ws, stride, padding, dilation, groups", CASES)
def test_against_autograd(n, xs, ws, stride, padding, dilation, groups):
    x, w = _t(xs).requires_grad_(), _t(ws).requires_grad_()
    conv = getattr(tg.nn.functional, f"conv{n}d")
    out = conv(x, w, None, stride, padding, dilation, groups)
    g = _t(tuple(out.shape))
    gx, gw = tg.autograd.grad(out, (x, w), g)
    got_x = getattr(ng, f"conv{n}d_input")(xs, w.detach(), g, stride, padding, dilation, groups)
    got_w = getattr(ng, f"conv{n}d_weight")(x.detach(), ws, g, stride, padding, dilation, groups)
    np.testing.assert_allclose(got_x.numpy(), gx.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_w.numpy(), gw.numpy(), rtol=1e-12, atol=1e-12)


def test_differentiable_in_grad_output():
    x, w = _t((1, 2, 5, 5)), _t((3, 2, 3, 3))
    g = _t((1, 3, 3, 3)).requires_grad_()
    assert tg.autograd.gradcheck(lambda go: ng.conv2d_input(x.shape, w, go), (g,))
    assert tg.autograd.gradcheck(lambda go: ng.conv2d_weight(x, w.shape, go), (g,))


def test_grad_output_of_the_wrong_shape():
    with pytest.raises(RuntimeError, match=r"Expected a tensor of dimension 4 and "
                                           r"tensor.size\[2\] == 3 but got: dimension 4 and "
                                           r"tensor.size\[2\] = 4"):
        ng.conv2d_input((1, 2, 5, 5), _t((3, 2, 3, 3)), _t((1, 3, 4, 4)))


def test_against_torch():
    torch = pytest.importorskip("torch")
    for n, xs, ws, stride, padding, dilation, groups in CASES:
        x, w = rng.standard_normal(xs), rng.standard_normal(ws)
        out = getattr(torch.nn.functional, f"conv{n}d")(torch.tensor(x), torch.tensor(w), None,
                                                        stride, padding, dilation, groups)
        g = rng.standard_normal(tuple(out.shape))
        for kind, args_t, args_g in (
                ("input", (xs, torch.tensor(w), torch.tensor(g)), (xs, tg.tensor(w), tg.tensor(g))),
                ("weight", (torch.tensor(x), ws, torch.tensor(g)),
                 (tg.tensor(x), ws, tg.tensor(g)))):
            theirs = getattr(torch.nn.grad, f"conv{n}d_{kind}")(*args_t, stride, padding,
                                                                dilation, groups)
            mine = getattr(ng, f"conv{n}d_{kind}")(*args_g, stride, padding, dilation, groups)
            np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-10)


def test_factory_kwargs():
    """``nn.factory_kwargs`` (module constructors' helper, in nn/__init__.py), as torch 2.13."""
    fk = tg.nn.factory_kwargs
    assert fk(None) == {} and fk({"device": "cpu", "dtype": tg.float64}) == {
        "device": "cpu", "dtype": tg.float64}
    assert fk({"factory_kwargs": {"device": "cpu"}, "dtype": tg.float16}) == {
        "device": "cpu", "dtype": tg.float16}
    assert fk({"factory_kwargs": {"bogus": 1}}) == {"bogus": 1}  # (not checked, as torch's)
    with pytest.raises(TypeError, match="unexpected kwargs {'bogus'}"):
        fk({"bogus": 1})
    with pytest.raises(TypeError, match="device specified twice, in \\*\\*kwargs and in "
                                        "factory_kwargs"):
        fk({"device": "cpu", "factory_kwargs": {"device": "cpu"}})


def test_keyword_arguments_as_torch():
    x, w, g = _t((1, 2, 5, 5)), _t((3, 2, 3, 3)), _t((1, 3, 3, 3))
    np.testing.assert_array_equal(
        ng.conv2d_input(input_size=x.shape, weight=w, grad_output=g).numpy(),
        ng.conv2d_input(x.shape, w, g).numpy())
    np.testing.assert_array_equal(
        ng.conv2d_weight(input=x, weight_size=w.shape, grad_output=g).numpy(),
        ng.conv2d_weight(x, w.shape, g).numpy())
