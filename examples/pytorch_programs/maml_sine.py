"""Model-agnostic meta-learning (MAML) on sine-wave regression as PyTorch users write it: a
task family y = a sin(x + phase) with amplitude and phase drawn from torch.distributions.Uniform,
an MLP run on explicit parameter dicts through torch.func.functional_call, inner-loop SGD steps
whose gradients come from torch.autograd.grad(create_graph=True) so the meta-gradient flows
through the adaptation (second order), Adam on the meta-parameters with clip_grad_norm_, and
test-time adaptation of new tasks with torch.func.grad. main returns the mean squared error on
held-out tasks after adapting with 10 samples and 5 steps."""

import math

import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F
from tritongrad.distributions import Uniform
from tritongrad.func import functional_call, grad

AMPLITUDE = Uniform(0.1, 5.0)
PHASE = Uniform(0.0, math.pi)
X_RANGE = Uniform(-5.0, 5.0)


def sample_task(k):
    a, phase = AMPLITUDE.sample(), PHASE.sample()

    def draw(n):
        x = X_RANGE.sample((n, 1))
        return x, a * torch.sin(x + phase)

    return draw(k), draw(k)


def adapt(model, params, x, y, steps, lr, create_graph):
    for _ in range(steps):
        loss = F.mse_loss(functional_call(model, params, (x,)), y)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=create_graph)
        params = {name: p - lr * g for (name, p), g in zip(params.items(), grads)}
    return params


def main(meta_steps: int = 300, verbose: bool = True) -> float:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(),
                          nn.Linear(40, 1))
    meta_opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    inner_lr, tasks_per_batch, k = 0.02, 4, 10
    for step in range(meta_steps):
        meta_opt.zero_grad()
        meta_loss = 0.0
        for _ in range(tasks_per_batch):
            (xs, ys), (xq, yq) = sample_task(k)
            fast = adapt(model, dict(model.named_parameters()), xs, ys, steps=1, lr=inner_lr,
                         create_graph=True)
            meta_loss = meta_loss + F.mse_loss(functional_call(model, fast, (xq,)), yq)
        meta_loss = meta_loss / tasks_per_batch
        meta_loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        meta_opt.step()
        if verbose and step % 100 == 99:
            print(f"meta step {step + 1}: post-adaptation query loss {meta_loss.item():.3f}")

    # test time: plain first-order adaptation of new tasks, gradients from torch.func.grad
    def loss_fn(params, x, y):
        return F.mse_loss(functional_call(model, params, (x,)), y)

    errors, before = [], []
    for _ in range(50):
        (xs, ys), (xq, yq) = sample_task(k)
        params = {n: p.detach() for n, p in model.named_parameters()}
        with torch.no_grad():
            before.append(loss_fn(params, xq, yq).item())
        for _ in range(5):
            g = grad(loss_fn)(params, xs, ys)
            params = {n: p - inner_lr * g[n] for n, p in params.items()}
        with torch.no_grad():
            errors.append(loss_fn(params, xq, yq).item())
    mse = sum(errors) / len(errors)
    if verbose:
        print(f"held-out tasks: MSE {sum(before) / len(before):.3f} before adaptation, "
              f"{mse:.3f} after 5 steps on {k} samples")
    return mse


if __name__ == "__main__":
    main()
