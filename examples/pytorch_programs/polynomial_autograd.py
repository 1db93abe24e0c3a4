"""Fits a third-order polynomial to sin(x) on [-pi, pi] by gradient descent, with autograd
computing the gradients of the four coefficients: PyTorch's "tensors and autograd" program,
unchanged but for the import."""

import math

import tritongrad as torch


def main(steps: int = 2000, verbose: bool = True) -> float:
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = torch.sin(x)
    a, b, c, d = (torch.randn((), dtype=dtype, requires_grad=True) for _ in range(4))
    learning_rate = 1e-6
    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        if verbose and t % 500 == 499:
            print(t, loss.item())
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= learning_rate * p.grad
                p.grad = None
    if verbose:
        print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
