"""A variational autoencoder on the 8x8 digits as a PyTorch user writes one: an encoder giving
a Normal's loc and log-variance, rsample through torch.distributions, the KL to the prior with
kl_divergence, a Bernoulli likelihood through binary_cross_entropy_with_logits, a DataLoader
over a TensorDataset, Adam with a StepLR, and a checkpoint round trip through torch.save."""

import io

import numpy as np
import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F
from tritongrad.distributions import Normal, kl_divergence
from tritongrad.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self, d_in=64, hidden=128, latent=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, d_in))

    def forward(self, x):
        h = self.enc(x)
        q = Normal(self.mu(h), torch.exp(0.5 * self.logvar(h)))
        z = q.rsample()
        return self.dec(z), q


def elbo_loss(model, x):
    logits, q = model(x)
    prior = Normal(torch.zeros_like(q.loc), torch.ones_like(q.scale))
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.shape[0]
    kl = kl_divergence(q, prior).sum(dim=1).mean()
    return rec + kl, rec, kl


def load_digits():
    from sklearn.datasets import load_digits as sk_digits
    x = sk_digits().data.astype(np.float32) / 16.0
    return torch.from_numpy(x[:1500]), torch.from_numpy(x[1500:])


def main(epochs: int = 15, verbose: bool = True) -> float:
    torch.manual_seed(0)
    train_x, test_x = load_digits()
    loader = DataLoader(TensorDataset(train_x), batch_size=64, shuffle=True,
                        generator=torch.Generator().manual_seed(0))
    model = VAE()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for (xb,) in loader:
            loss, _, _ = elbo_loss(model, xb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * xb.shape[0]
        sched.step()
        if verbose:
            print(f"epoch {epoch + 1}: train -ELBO {total / len(train_x):.2f}, lr {sched.get_last_lr()[0]:.4f}")
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    restored = VAE()
    restored.load_state_dict(torch.load(buf)["model"])
    restored.eval()
    with torch.no_grad():
        torch.manual_seed(1)
        loss, rec, kl = elbo_loss(restored, test_x)
        samples = torch.sigmoid(restored.dec(torch.randn(16, 8)))
    if verbose:
        print(f"held-out -ELBO {loss.item():.2f} (reconstruction {rec.item():.2f}, KL {kl.item():.2f}); "
              f"sample pixel mean {samples.mean().item():.3f}")
    return loss.item()


if __name__ == "__main__":
    main()
