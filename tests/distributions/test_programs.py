"""Ordinary PyTorch programs that use distributions, run with ``import tritongrad as torch``:
a VAE step (Normal rsample, Bernoulli likelihood, KL to the prior), a REINFORCE policy
(Categorical sample, log_prob, entropy bonus) and a Gaussian mixture fitted by maximum
likelihood."""

from __future__ import annotations

import tritongrad as torch
from tritongrad import nn
from tritongrad.distributions import (Bernoulli, Categorical, Independent, MixtureSameFamily,
                                      Normal, kl_divergence)


def test_vae_elbo_improves():
    torch.manual_seed(0)
    data = (torch.rand(64, 8) > 0.5).float()
    enc, dec = nn.Linear(8, 2 * 2), nn.Linear(2, 8)
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.05)
    prior = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)
    losses = []
    for _ in range(60):
        mu, log_sigma = enc(data).chunk(2, dim=-1)
        q = Independent(Normal(mu, log_sigma.exp()), 1)
        z = q.rsample()
        likelihood = Independent(Bernoulli(logits=dec(z)), 1)
        loss = -(likelihood.log_prob(data) - kl_divergence(q, prior)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert enc.weight.grad is not None and dec.weight.grad is not None
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10 - 0.3


def test_reinforce_learns_the_rewarded_action(device="cpu"):  # (slow on the emulated device)
    torch.manual_seed(0)
    logits = torch.zeros(3, device=device, requires_grad=True)
    opt = torch.optim.SGD([logits], lr=0.5)
    reward = torch.tensor([0.0, 1.0, 0.2], device=device)
    for _ in range(40):
        policy = Categorical(logits=logits)
        actions = policy.sample((16,))
        loss = -(policy.log_prob(actions) * reward[actions]).mean() - 0.01 * policy.entropy()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert Categorical(logits=logits).probs.argmax().item() == 1


def test_gaussian_mixture_fit_by_maximum_likelihood():
    torch.manual_seed(0)
    data = torch.cat([torch.randn(200) * 0.3 - 2, torch.randn(200) * 0.3 + 2])
    weights = torch.zeros(2, requires_grad=True)
    locs = torch.tensor([-0.5, 0.5], requires_grad=True)
    log_scales = torch.zeros(2, requires_grad=True)
    opt = torch.optim.Adam([weights, locs, log_scales], lr=0.1)
    for _ in range(150):
        gmm = MixtureSameFamily(Categorical(logits=weights), Normal(locs, log_scales.exp()))
        loss = -gmm.log_prob(data).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert sorted(round(v, 1) for v in locs.tolist()) == [-2.0, 2.0]
