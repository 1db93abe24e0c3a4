"""The polynomial fit through a custom autograd Function: y = a + b * P3(c + d * x), with P3
the Legendre polynomial of degree three, whose forward and backward are written by hand, and
the four coefficients updated by ``torch.optim.SGD``."""

import math

import tritongrad as torch


class LegendrePolynomial3(torch.autograd.Function):
    """P3(x) = (5 x^3 - 3 x) / 2, and its derivative 1.5 (5 x^2 - 1)."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


def main(steps: int = 2000, verbose: bool = True) -> float:
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=dtype, requires_grad=True)
    optimizer = torch.optim.SGD([a, b, c, d], lr=5e-6)
    P3 = LegendrePolynomial3.apply
    for t in range(steps):
        loss = (a + b * P3(c + d * x) - y).pow(2).sum()
        if verbose and t % 500 == 499:
            print(t, loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if verbose:
        print(f"Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)")
    return loss.item()


if __name__ == "__main__":
    main()
