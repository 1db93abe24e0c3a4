"""Exact Gaussian-process regression as PyTorch users write it (GPyTorch's model, by hand):
an RBF kernel plus noise whose log-hyperparameters (length scale, signal scale, noise) are
fitted by Adam on the exact negative log marginal likelihood, through torch.linalg.cholesky,
torch.cholesky_solve and the log-determinant from the factor's diagonal, in float64. The
posterior mean at test points then comes from the same factor. main returns the test RMSE
against the noise-free function."""

import math

import tritongrad as torch


def rbf(a, b, log_ell, log_sf):
    d2 = torch.cdist(a / log_ell.exp(), b / log_ell.exp()).pow(2)
    return (2 * log_sf).exp() * torch.exp(-0.5 * d2)


def neg_log_marginal_likelihood(x, y, params):
    log_ell, log_sf, log_sn = params
    n = x.shape[0]
    k = rbf(x, x, log_ell, log_sf) + (2 * log_sn).exp() * torch.eye(n, dtype=x.dtype)
    chol = torch.linalg.cholesky(k)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), chol)
    return (0.5 * (y.unsqueeze(-1) * alpha).sum() + chol.diagonal().log().sum()
            + 0.5 * n * math.log(2 * math.pi)) / n


def posterior_mean(x, y, x_test, params):
    log_ell, log_sf, log_sn = params
    k = rbf(x, x, log_ell, log_sf) + (2 * log_sn).exp() * torch.eye(x.shape[0], dtype=x.dtype)
    chol = torch.linalg.cholesky(k)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), chol)
    return (rbf(x_test, x, log_ell, log_sf) @ alpha).squeeze(-1)


def f(x):
    return torch.sin(3 * x[:, 0]) + 0.5 * torch.cos(5 * x[:, 1])


def main(steps: int = 150, verbose: bool = True) -> float:
    torch.manual_seed(0)
    x = torch.rand(80, 2, dtype=torch.float64) * 2 - 1
    y = f(x) + 0.1 * torch.randn(80, dtype=torch.float64)
    x_test = torch.rand(200, 2, dtype=torch.float64) * 2 - 1

    params = [torch.zeros((), dtype=torch.float64, requires_grad=True) for _ in range(3)]
    opt = torch.optim.Adam(params, lr=0.05)
    for step in range(steps):
        opt.zero_grad()
        loss = neg_log_marginal_likelihood(x, y, params)
        loss.backward()
        opt.step()
        if verbose and step % 50 == 49:
            ell, sf, sn = (p.exp().item() for p in params)
            print(f"step {step + 1}: nlml {loss.item():.4f}  ell {ell:.3f}  sf {sf:.3f}  "
                  f"sn {sn:.3f}")
    with torch.no_grad():
        rmse = (posterior_mean(x, y, x_test, params) - f(x_test)).pow(2).mean().sqrt().item()
    if verbose:
        print(f"test RMSE against the noise-free function: {rmse:.4f}")
    return rmse


if __name__ == "__main__":
    main()
