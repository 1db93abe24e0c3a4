"""Variable-length sequence classification as PyTorch users write it: pad_sequence, a
bidirectional two-layer GRU over pack_padded_sequence(enforce_sorted=False), pad_packed_sequence
for the outputs, masked mean pooling, and the final hidden states of both directions."""

import tritongrad as torch
import tritongrad.nn as nn
from tritongrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


def make_data(n, gen):
    """Label: whether the sequence's sum of signs is positive (needs the whole sequence)."""
    seqs, labels = [], []
    for _ in range(n):
        L = int(torch.randint(3, 15, (1,), generator=gen))
        s = torch.randn(L, 1, generator=gen)
        seqs.append(torch.cat([s, s.abs()], dim=1))
        labels.append(int(s.sign().sum() > 0))
    return seqs, torch.tensor(labels)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(2, 32, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(4 * 32, 2)

    def forward(self, seqs):
        lengths = torch.tensor([len(s) for s in seqs])
        padded = pad_sequence(seqs, batch_first=True)
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        out, h = self.gru(packed)
        out, out_lengths = pad_packed_sequence(out, batch_first=True)
        assert out_lengths.tolist() == lengths.tolist()
        mask = (torch.arange(out.shape[1])[None, :] < lengths[:, None]).unsqueeze(-1)
        mean = (out * mask).sum(1) / lengths[:, None]
        last = torch.cat([h[-2], h[-1]], dim=1)  # the top layer's two directions
        return self.head(torch.cat([mean, last], dim=1))


def main(steps: int = 150, verbose: bool = True) -> float:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = Classifier()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(steps):
        seqs, y = make_data(32, gen)
        loss = nn.functional.cross_entropy(model(seqs), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if verbose and step % 50 == 49:
            print(f"step {step + 1}: loss {loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        seqs, y = make_data(300, gen)
        err = (model(seqs).argmax(1) != y).float().mean().item()
    if verbose:
        print(f"held-out error: {err:.3f}")
    return err


if __name__ == "__main__":
    main()
