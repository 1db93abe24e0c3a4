"""Per-sample gradients and model ensembling with torch.func, as in PyTorch's tutorials:
functional_call over detached parameters, vmap(grad(loss), in_dims=(None, None, 0, 0)), a
clipped-and-noised (DP-SGD style) update built from them, checked against a loop of ordinary
backward passes, then an ensemble of models run at once with stack_module_state and vmap."""

import copy

import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F
from tritongrad.func import functional_call, grad, stack_module_state, vmap


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main(steps: int = 60, verbose: bool = True) -> float:
    torch.manual_seed(0)
    model = Net()
    x = torch.randn(64, 8)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()

    def loss_fn(params, buffers, sample, target):
        out = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.cross_entropy(out, target.unsqueeze(0))

    per_sample = vmap(grad(loss_fn), in_dims=(None, None, 0, 0))
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    grads = per_sample(params, buffers, x[:8], y[:8])
    for i in range(8):  # the same as one backward per sample
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for name, p in model.named_parameters():
            assert torch.allclose(grads[name][i], p.grad, atol=1e-5), name

    lr, clip, sigma = 0.5, 1.0, 0.01
    for step in range(steps):
        g = per_sample(params, buffers, x, y)
        norms = torch.stack([t.flatten(1).norm(dim=1) for t in g.values()], 1).norm(dim=1)
        scale = (clip / (norms + 1e-6)).clamp(max=1.0)
        with torch.no_grad():
            for name in params:
                clipped = (g[name] * scale.view(-1, *[1] * (g[name].dim() - 1))).sum(0)
                noisy = clipped + sigma * clip * torch.randn_like(clipped)
                params[name] = params[name] - lr * noisy / x.shape[0]
    with torch.no_grad():
        final = F.cross_entropy(functional_call(model, (params, buffers), (x,)), y).item()

    models = [Net() for _ in range(4)]
    stacked, stacked_buffers = stack_module_state(models)
    base = copy.deepcopy(models[0])  # (PyTorch's tutorial moves it to "meta")

    def run(p, b, inp):
        return functional_call(base, (p, b), (inp,))

    outs = vmap(run, in_dims=(0, 0, None))(stacked, stacked_buffers, x)
    for i, m in enumerate(models):
        assert torch.allclose(outs[i], m(x), atol=1e-5)
    if verbose:
        print(f"loss after {steps} private steps: {final:.4f}; ensemble outputs {tuple(outs.shape)}")
    return final


if __name__ == "__main__":
    main()
