"""A WGAN-GP on 2-D Gaussian points as a PyTorch user writes one: generator and critic MLPs, two Adam
optimizers with betas, the gradient penalty through torch.autograd.grad(create_graph=True) on
interpolates, requires_grad_ toggling of the critic, and detach() of fakes for the critic step."""

import tritongrad as torch
import tritongrad.nn as nn


CENTER = (3.0, -1.0)


def real_batch(n, gen):
    return torch.randn(n, 2, generator=gen) * 0.5 + torch.tensor(CENTER)


def main(steps: int = 300, verbose: bool = True) -> float:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    G = nn.Sequential(nn.Linear(4, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64),
                      nn.LeakyReLU(0.2), nn.Linear(64, 2))
    D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64),
                      nn.LeakyReLU(0.2), nn.Linear(64, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))
    for step in range(steps):
        for p in D.parameters():
            p.requires_grad_(True)
        for _ in range(3):
            real = real_batch(64, gen)
            fake = G(torch.randn(64, 4)).detach()
            eps = torch.rand(64, 1)
            inter = (eps * real + (1 - eps) * fake).requires_grad_(True)
            grads = torch.autograd.grad(D(inter).sum(), inter, create_graph=True)[0]
            gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
            loss_d = D(fake).mean() - D(real).mean() + 10.0 * gp
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
        for p in D.parameters():
            p.requires_grad_(False)
        loss_g = -D(G(torch.randn(64, 4))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        if verbose and step % 100 == 99:
            print(f"step {step + 1}: critic {loss_d.item():.3f} generator {loss_g.item():.3f}")
    with torch.no_grad():
        fake = G(torch.randn(2000, 4))
    err = (fake.mean(0) - torch.tensor(CENTER)).norm().item()
    if verbose:
        print(f"|mean of generated points - center|: {err:.3f}, std {fake.std(0).tolist()}")
    return err


if __name__ == "__main__":
    main()
