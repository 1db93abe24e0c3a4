"""A graph neural network written by hand, as PyTorch users do without a graph library: node
classification on a two-community random graph, messages gathered along edge_index with
index_select, summed with index_add_ / scatter_add, degree normalisation from bincount, a
masked cross-entropy over the labelled nodes, and a custom Dataset with a collate_fn batching
whole graphs into one disconnected graph."""

import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F
from tritongrad.utils.data import DataLoader, Dataset


def random_graph(gen, n=40, p_in=0.25, p_out=0.02):
    """Two communities; node features are noisy hints of the community."""
    y = (torch.arange(n) >= n // 2).long()
    same = y[:, None] == y[None, :]
    prob = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
    adj = torch.rand(n, n, generator=gen) < prob
    adj = torch.triu(adj, diagonal=1)
    adj = adj | adj.T
    edge_index = adj.nonzero().T.contiguous()
    x = torch.randn(n, 8, generator=gen) + 0.5 * F.one_hot(y, 8).float()
    return x, edge_index, y


class Graphs(Dataset):
    def __init__(self, count, seed):
        gen = torch.Generator().manual_seed(seed)
        self.items = [random_graph(gen) for _ in range(count)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    xs, edges, ys, offset = [], [], [], 0
    for x, e, y in batch:
        xs.append(x)
        edges.append(e + offset)
        ys.append(y)
        offset += x.shape[0]
    return torch.cat(xs), torch.cat(edges, dim=1), torch.cat(ys)


class GraphConv(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.self_lin = nn.Linear(d_in, d_out)
        self.nbr_lin = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x, edge_index):
        src, dst = edge_index
        deg = torch.bincount(dst, minlength=x.shape[0]).clamp(min=1).unsqueeze(1).float()
        msgs = self.nbr_lin(x).index_select(0, src)
        agg = torch.zeros(x.shape[0], msgs.shape[1]).index_add_(0, dst, msgs)
        agg2 = torch.zeros_like(agg).scatter_add(0, dst.unsqueeze(1).expand_as(msgs), msgs)
        assert torch.allclose(agg, agg2, atol=1e-5)
        return self.self_lin(x) + agg / deg


class GNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = GraphConv(8, 32), GraphConv(32, 32)
        self.out = nn.Linear(32, 2)

    def forward(self, x, edge_index):
        h = F.relu(self.c1(x, edge_index))
        h = F.relu(self.c2(h, edge_index))
        return self.out(h)


def main(epochs: int = 30, verbose: bool = True) -> float:
    torch.manual_seed(0)
    train = DataLoader(Graphs(32, seed=1), batch_size=8, shuffle=True, collate_fn=collate)
    test = DataLoader(Graphs(16, seed=2), batch_size=16, collate_fn=collate)
    model = GNN()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=5e-4)
    for epoch in range(epochs):
        model.train()
        for x, e, y in train:
            labelled = torch.rand(len(y)) < 0.3  # semi-supervised: a few labels per graph
            loss = F.cross_entropy(model(x, e)[labelled], y[labelled])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if verbose and epoch % 10 == 9:
            print(f"epoch {epoch + 1}: loss {loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        x, e, y = next(iter(test))
        err = (model(x, e).argmax(1) != y).float().mean().item()
    if verbose:
        print(f"held-out node error: {err:.3f}")
    return err


if __name__ == "__main__":
    main()
