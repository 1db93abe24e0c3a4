"""LoRA fine-tuning as PyTorch users write it: pretrain an MLP on the 8x8 digits, then adapt
it to the digits rotated by 90 degrees (torch.rot90) with low-rank updates W + B A * alpha / r
attached to its Linear weights by nn.utils.parametrize.register_parametrization; the base
frozen with requires_grad_(False), trainable parameters counted through named_parameters,
AdamW over the filter of those requiring grad, evaluation under parametrize.cached(), the
adapter-only state_dict (filtered by name) saved with torch.save and loaded into a fresh
copy with strict=False, and finally the adapters merged into the weights with
parametrize.remove_parametrizations, checked to give the same outputs with
torch.testing.assert_close. main returns the merged model's held-out error on rotated digits."""

import io
import math

import numpy as np
import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F
import tritongrad.nn.utils.parametrize as parametrize


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.from_numpy((d.images / 16.0).astype(np.float32))
    return x, torch.from_numpy(d.target).long()


class LoRA(nn.Module):
    """A parametrization W -> W + (B @ A) * alpha / r, zero at the start since B is."""

    def __init__(self, out_features, in_features, rank=4, alpha=8.0):
        super().__init__()
        self.lora_A = nn.Parameter(torch.empty(rank, in_features))
        self.lora_B = nn.Parameter(torch.zeros(out_features, rank))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, W):
        return W + (self.lora_B @ self.lora_A) * self.scale


def add_lora(model, rank=4):
    for module in model.modules():
        if isinstance(module, nn.Linear):
            parametrize.register_parametrization(
                module, "weight", LoRA(*module.weight.shape, rank=rank))


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def fit(model, x, y, epochs, lr):
    params = filter(lambda p: p.requires_grad, model.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    for _ in range(epochs):
        for idx in torch.randperm(len(x)).split(64):
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return loss.item()


def error(model, x, y):
    model.eval()
    with torch.no_grad(), parametrize.cached():
        return (model(x).argmax(1) != y).float().mean().item()


def main(epochs: int = 12, verbose: bool = True) -> float:
    torch.manual_seed(0)
    x, y = digits()
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    train, test = perm[:1400], perm[1400:]
    rotated = torch.rot90(x, 1, dims=(1, 2))

    model = make_model()
    fit(model, x[train], y[train], epochs=epochs, lr=2e-3)
    base_err = error(model, x[test], y[test])
    before = error(model, rotated[test], y[test])

    add_lora(model)
    model.requires_grad_(False)
    for name, p in model.named_parameters():
        if "lora_" in name:
            p.requires_grad_(True)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for _, p in model.named_parameters())
    model.train()
    fit(model, rotated[train], y[train], epochs=epochs, lr=5e-3)
    adapted = error(model, rotated[test], y[test])

    # ship only the adapters, and load them into a fresh copy of the base model
    adapters = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    buf = io.BytesIO()
    torch.save(adapters, buf)
    buf.seek(0)
    fresh = make_model()
    fresh.load_state_dict({k.replace("parametrizations.weight.original", "weight"): v
                           for k, v in model.state_dict().items() if "lora_" not in k})
    add_lora(fresh)
    result = fresh.load_state_dict(torch.load(buf), strict=False)
    assert not result.unexpected_keys
    assert all("original" in k or "bias" in k for k in result.missing_keys)
    # fresh now holds model's base weights and its adapters: the same function
    with torch.no_grad():
        torch.testing.assert_close(fresh(rotated[test]), model(rotated[test]))

    with torch.no_grad():
        expected = model(rotated[test])
    for module in model.modules():
        if isinstance(module, nn.Linear) and parametrize.is_parametrized(module):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
    assert not any("lora_" in k for k in model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(model(rotated[test]), expected, rtol=1e-4, atol=1e-5)
    merged = error(model, rotated[test], y[test])
    if verbose:
        print(f"base model: held-out error {base_err:.3f}, on rotated digits {before:.3f}")
        print(f"LoRA: {trainable} of {total} parameters trained ({100 * trainable / total:.1f}%);"
              f" rotated error {adapted:.3f}, after merging {merged:.3f}")
    return merged


if __name__ == "__main__":
    main()
