"""A Transformer-encoder sequence classifier as a PyTorch user writes one: token embeddings
with a sinusoidal positional-encoding buffer (register_buffer), nn.TransformerEncoder of
nn.TransformerEncoderLayer (batch_first, norm_first, GELU), src_key_padding_mask for padded
sequences, masked mean pooling, AdamW with weight-decay parameter groups, a warmup LambdaLR,
and torch.inference_mode evaluation. main returns the held-out error rate."""

import math

import tritongrad as torch
import tritongrad.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)

    def forward(self, x):
        return x + self.pe[:, :x.size(1)]


class Classifier(nn.Module):
    def __init__(self, vocab, dim=32, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = PositionalEncoding(dim)
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=64, dropout=0.1,
                                           activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        pad = tokens == 0
        h = self.encoder(self.pos(self.embed(tokens)), src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        return self.head((h * keep).sum(1) / keep.sum(1).clamp(min=1))


def make_batch(n, gen):
    """Sequences of random length; class 1 when token 7 appears more often than token 9."""
    lengths = torch.randint(4, 16, (n,), generator=gen)
    tokens = torch.randint(1, 12, (n, 16), generator=gen)
    tokens[torch.arange(16).unsqueeze(0) >= lengths.unsqueeze(1)] = 0
    labels = ((tokens == 7).sum(1) > (tokens == 9).sum(1)).long()
    return tokens, labels


def main(steps: int = 200, verbose: bool = True) -> float:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = Classifier(vocab=12)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=2e-3)
    warmup = 20
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    loss_fn = nn.CrossEntropyLoss()
    for step in range(steps):
        model.train()
        tokens, labels = make_batch(32, gen)
        loss = loss_fn(model(tokens), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if verbose and step % 50 == 49:
            print(f"step {step + 1}: loss {loss.item():.3f}")
    model.eval()
    tokens, labels = make_batch(256, gen)
    with torch.inference_mode():
        acc = (model(tokens).argmax(-1) == labels).float().mean().item()
    if verbose:
        print(f"accuracy {acc:.3f}")
    return 1.0 - acc


if __name__ == "__main__":
    main()
