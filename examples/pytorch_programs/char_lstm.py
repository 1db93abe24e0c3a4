"""A character-level LSTM language model as a PyTorch user writes one: an Embedding, a 2-layer
nn.LSTM with dropout, a Linear head, truncated backpropagation through time (the hidden state
carried across chunks and detached), Adam with gradient clipping, then sampling under
torch.no_grad with temperature and torch.multinomial."""

import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F

TEXT = ("the quick brown fox jumps over the lazy dog. " * 40
        + "pack my box with five dozen liquor jugs. " * 40)


class CharLM(nn.Module):
    def __init__(self, vocab, dim=32, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, dropout=0.1, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def main(steps: int = 150, verbose: bool = True) -> float:
    torch.manual_seed(0)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    batch, seq = 8, 32
    n = (len(data) - 1) // (batch * seq) * batch * seq
    xs = data[:n].view(batch, -1)
    ys = data[1:n + 1].view(batch, -1)
    model = CharLM(len(chars))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    state, pos, losses = None, 0, []
    for step in range(steps):
        if pos + seq > xs.size(1):
            pos, state = 0, None
        x, y = xs[:, pos:pos + seq], ys[:, pos:pos + seq]
        pos += seq
        if state is not None:
            state = tuple(s.detach() for s in state)
        logits, state = model(x, state)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        losses.append(loss.item())
        if verbose and step % 50 == 49:
            print(f"step {step + 1}: loss {sum(losses[-50:]) / 50:.3f}")
    model.eval()
    with torch.no_grad():
        idx = torch.tensor([[stoi["t"]]])
        out, st = [], None
        for _ in range(40):
            logits, st = model(idx, st)
            probs = F.softmax(logits[:, -1] / 0.8, dim=-1)
            idx = torch.multinomial(probs, num_samples=1)
            out.append(chars[idx.item()])
    if verbose:
        print("sample:", "t" + "".join(out))
    return sum(losses[-20:]) / 20


if __name__ == "__main__":
    main()
