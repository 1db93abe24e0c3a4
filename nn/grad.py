"""``torch.nn.grad``: the gradients of a convolution with respect to its input and its weight,
for code that writes a convolution's backward by hand (a custom ``Function``, a per-sample
gradient). Each is the vector-Jacobian product of ``F.conv{1,2,3}d`` at ``grad_output``, by
autograd: an input gradient does not depend on the input's values (the convolution is linear
in it), nor a weight gradient on the weight's, so a stand-in of zeros of the given size takes
their place. The results are differentiable in ``weight``/``input`` and ``grad_output`` when
those require grad (the backward is recorded then, as for double backward)."""

from __future__ import annotations

from ..autograd import grad as _grad
from ..autograd.grad_mode import enable_grad
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _check_grad_output(expected, grad_output) -> None:
    """PyTorch's message when ``grad_output`` is not the convolution's output shape."""
    want, got = tuple(expected), tuple(grad_output.shape)
    if got == want:
        return
    if len(got) != len(want):
        raise RuntimeError(f"Expected a tensor of dimension {len(want)} but got: dimension "
                           f"{len(got)}")
    i = next(i for i, (a, b) in enumerate(zip(want, got)) if a != b)
    raise RuntimeError(f"Expected a tensor of dimension {len(want)} and tensor.size[{i}] == "
                       f"{want[i]} but got: dimension {len(got)} and tensor.size[{i}] = {got[i]}")


def _vjp(n: int, x, w, grad_output, stride, padding, dilation, groups, wrt: int):
    """The gradient of ``conv{n}d(x, w)`` at ``grad_output`` with respect to argument
    ``wrt`` (0: x, 1: w)."""
    create = grad_output.requires_grad or (x if wrt == 1 else w).requires_grad
    with enable_grad():
        target = (x, w)[wrt].detach().requires_grad_()
        args = (target, w) if wrt == 0 else (x, target)
        out = _CONV[n](*args, None, stride, padding, dilation, groups)
        _check_grad_output(out.shape, grad_output)
        return _grad(out, target, grad_output, create_graph=create)[0]


def _named(fn, n: int, wrt: str, given: str):
    fn.__name__ = fn.__qualname__ = f"conv{n}d_{wrt}"
    fn.__doc__ = (f"The gradient of ``conv{n}d`` with respect to its {wrt}: {given}, "
                  f"``grad_output`` the gradient of the output; ``stride``, ``padding``, "
                  f"``dilation``, ``groups`` as the convolution's.")
    return fn


def _input_fn(n: int):
    def fn(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _vjp(n, weight.new_zeros(tuple(input_size)), weight, grad_output, stride,
                    padding, dilation, groups, 0)
    return _named(fn, n, "input", "``input_size`` the input's shape, ``weight`` the filters")


def _weight_fn(n: int):
    def fn(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _vjp(n, input, input.new_zeros(tuple(weight_size)), grad_output, stride,
                    padding, dilation, groups, 1)
    return _named(fn, n, "weight", "``input`` the input, ``weight_size`` the filters' shape")


conv1d_input, conv2d_input, conv3d_input = (_input_fn(n) for n in (1, 2, 3))
conv1d_weight, conv2d_weight, conv3d_weight = (_weight_fn(n) for n in (1, 2, 3))
