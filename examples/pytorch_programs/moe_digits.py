"""A sparse mixture-of-experts classifier on the 8x8 digits as PyTorch users write one: a
router scoring 4 experts, torch.topk picking 2 per sample, softmax over the chosen scores,
dispatch by torch.where on the expert assignments, each expert run on its own samples and
its weighted outputs summed back with index_add_, the Switch-Transformer load-balancing
loss from F.one_hot counts, nn.ModuleList of experts, torch.compile(model, backend="eager")
with the compiled module's parameters and state_dict keys, and expert usage counted with
torch.bincount. main returns the held-out error rate."""

import numpy as np
import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    return torch.from_numpy((d.data / 16.0).astype(np.float32)), torch.from_numpy(d.target).long()


class MoE(nn.Module):
    def __init__(self, dim, hidden, n_experts=4, k=2):
        super().__init__()
        self.k, self.n_experts = k, n_experts
        self.router = nn.Linear(dim, n_experts, bias=False)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
            for _ in range(n_experts))

    def forward(self, x):
        logits = self.router(x)                                    # (N, E)
        top_val, top_idx = torch.topk(logits, self.k, dim=-1)      # (N, k)
        weights = F.softmax(top_val, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(top_idx == e)
            if rows.numel() == 0:
                continue
            y = expert(x[rows]) * weights[rows, slot].unsqueeze(-1)
            out.index_add_(0, rows, y)
        # Switch Transformer's auxiliary loss: E * sum_e (fraction routed to e) * (mean prob of e)
        probs = F.softmax(logits, dim=-1)
        routed = F.one_hot(top_idx, self.n_experts).float().sum(1).mean(0) / self.k
        self.aux_loss = self.n_experts * (routed * probs.mean(0)).sum()
        self.last_choice = top_idx
        return out


class Net(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.inp = nn.Linear(64, dim)
        self.moe = MoE(dim, 2 * dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        h = F.relu(self.inp(x))
        return self.head(self.norm(h + self.moe(h)))


def main(epochs: int = 8, verbose: bool = True) -> float:
    torch.manual_seed(0)
    x, y = digits()
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    train, test = perm[:1400], perm[1400:]
    net = Net()
    model = torch.compile(net, backend="eager")
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in net.parameters())
    assert all(k.startswith("_orig_mod.") for k in model.state_dict())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(epochs):
        model.train()
        for idx in train[torch.randperm(len(train))].split(64):
            logits = model(x[idx])
            loss = F.cross_entropy(logits, y[idx]) + 0.01 * net.moe.aux_loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        if verbose:
            print(f"epoch {epoch + 1}: loss {loss.item():.3f} aux {net.moe.aux_loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        acc = (model(x[test]).argmax(1) == y[test]).float().mean().item()
        usage = torch.bincount(net.moe.last_choice.flatten(), minlength=4)
    if verbose:
        print(f"held-out accuracy {acc:.3f}; expert usage {usage.tolist()}")
    return 1.0 - acc


if __name__ == "__main__":
    main()
