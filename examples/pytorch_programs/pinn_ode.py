"""A physics-informed neural network as PyTorch users write one: solve the damped oscillator
u'' + 0.2 u' + 4 u = 0 with u(0) = 1, u'(0) = 0 on [0, 4] by a Tanh MLP u(t), its first and
second derivatives taken with torch.autograd.grad(create_graph=True) over collocation points
(torch.linspace(...).requires_grad_()), the initial conditions as extra loss terms, Adam
first, then LBFGS with a closure and line_search_fn="strong_wolfe" to finish. main returns
the largest error against the closed-form solution on a fine grid."""

import math

import tritongrad as torch
import tritongrad.nn as nn

ZETA, OMEGA, T_END = 0.2, 2.0, 4.0


def exact(t):
    # u'' + 2 zeta' u' + omega^2 u = 0 with 2 zeta' = 0.2: underdamped, u(0) = 1, u'(0) = 0
    a = ZETA / 2
    wd = math.sqrt(OMEGA ** 2 - a ** 2)
    return torch.exp(-a * t) * (torch.cos(wd * t) + a / wd * torch.sin(wd * t))


def derivatives(model, t):
    u = model(t)
    (du,) = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), create_graph=True)
    (d2u,) = torch.autograd.grad(du, t, grad_outputs=torch.ones_like(du), create_graph=True)
    return u, du, d2u


def pinn_loss(model, t_col, t0):
    u, du, d2u = derivatives(model, t_col)
    residual = d2u + ZETA * du + OMEGA ** 2 * u
    u0, du0, _ = derivatives(model, t0)
    return residual.pow(2).mean() + (u0 - 1).pow(2).sum() + du0.pow(2).sum()


def main(adam_steps: int = 400, lbfgs_steps: int = 3, verbose: bool = True) -> float:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                          nn.Linear(32, 1))
    t_col = torch.linspace(0, T_END, 100).view(-1, 1).requires_grad_()
    t0 = torch.zeros(1, 1, requires_grad=True)

    adam = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(adam_steps):
        adam.zero_grad()
        loss = pinn_loss(model, t_col, t0)
        loss.backward()
        adam.step()
        if verbose and step % 100 == 99:
            print(f"adam step {step + 1}: loss {loss.item():.3e}")

    lbfgs = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=40, history_size=20,
                              tolerance_grad=1e-9, tolerance_change=1e-12,
                              line_search_fn="strong_wolfe")

    def closure():
        lbfgs.zero_grad()
        loss = pinn_loss(model, t_col, t0)
        loss.backward()
        return loss

    for step in range(lbfgs_steps):
        loss = lbfgs.step(closure)
        if verbose:
            print(f"lbfgs step {step + 1}: loss {loss.item():.3e}")

    with torch.no_grad():
        t = torch.linspace(0, T_END, 400).view(-1, 1)
        err = (model(t) - exact(t)).abs().max().item()
    if verbose:
        print(f"max |u - u_exact| on [0, {T_END}]: {err:.2e}")
    return err


if __name__ == "__main__":
    main()
