"""A sequence-to-sequence nn.Transformer as a PyTorch user writes one: learn to reverse digit
strings. Encoder-decoder with batch_first, padding masks and a causal target mask from
generate_square_subsequent_mask, learned positions, CrossEntropyLoss with ignore_index and
label smoothing, AdamW with parameter groups (no decay on biases and norms), a warmup
LambdaLR, gradient clipping, and greedy decoding under inference_mode."""

import math

import tritongrad as torch
import tritongrad.nn as nn

PAD, BOS, EOS, VOCAB, MAX_LEN = 0, 1, 2, 13, 8  # digits are tokens 3..12


def make_batch(n, gen):
    lengths = torch.randint(2, 6, (n,), generator=gen)
    src = torch.full((n, MAX_LEN), PAD, dtype=torch.long)
    tgt = torch.full((n, MAX_LEN + 2), PAD, dtype=torch.long)
    for i, L in enumerate(lengths.tolist()):
        digits = torch.randint(3, VOCAB, (L,), generator=gen)
        src[i, :L] = digits
        tgt[i, 0] = BOS
        tgt[i, 1:L + 1] = digits.flip(0)
        tgt[i, L + 1] = EOS
    return src, tgt


class Seq2Seq(nn.Module):
    def __init__(self, d_model=64, nhead=4, layers=2):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.pos = nn.Parameter(torch.zeros(1, MAX_LEN + 2, d_model))
        nn.init.normal_(self.pos, std=0.02)
        self.transformer = nn.Transformer(d_model, nhead, layers, layers, dim_feedforward=128,
                                          dropout=0.0, batch_first=True)
        self.out = nn.Linear(d_model, VOCAB)

    def encode_tokens(self, x):
        return self.embed(x) * math.sqrt(self.d_model) + self.pos[:, :x.shape[1]]

    def forward(self, src, tgt_in):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1])
        h = self.transformer(self.encode_tokens(src), self.encode_tokens(tgt_in),
                             tgt_mask=tgt_mask, src_key_padding_mask=src == PAD,
                             tgt_key_padding_mask=tgt_in == PAD,
                             memory_key_padding_mask=src == PAD)
        return self.out(h)

    @torch.inference_mode()
    def greedy(self, src):
        ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
        for _ in range(MAX_LEN + 1):
            nxt = self(src, ys)[:, -1].argmax(-1, keepdim=True)
            ys = torch.cat([ys, nxt], dim=1)
        return ys


def main(steps: int = 500, verbose: bool = True) -> float:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = Seq2Seq()
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in name or name == "pos" else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
    warmup = 30
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
    for step in range(steps):
        src, tgt = make_batch(64, gen)
        logits = model(src, tgt[:, :-1])
        loss = loss_fn(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if verbose and step % 50 == 49:
            print(f"step {step + 1}: loss {loss.item():.3f}")
    model.eval()
    src, tgt = make_batch(200, gen)
    out = model.greedy(src)
    wrong = 0
    for i in range(src.shape[0]):
        want = tgt[i, 1:][tgt[i, 1:] != PAD].tolist()
        got = out[i, 1:].tolist()
        got = got[:got.index(EOS) + 1] if EOS in got else got
        wrong += got != want
    err = wrong / src.shape[0]
    if verbose:
        print(f"held-out sequence error: {err:.3f}")
    return err


if __name__ == "__main__":
    main()
