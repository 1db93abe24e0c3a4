"""Trains a small causal transformer language model on a text that ships with Python.

Character level; by default the text is the Zen of Python (the ``this`` module), or with
``--text module:NAME`` the source of a standard-library module (e.g. ``module:textwrap``).
The model is GPT-style: token and position embeddings, pre-LayerNorm blocks of causal
multi-head self-attention (``F.scaled_dot_product_attention(..., is_causal=True)``) and a GELU
MLP, a final LayerNorm and an output layer tied to the token embedding. It prints the unigram
entropy of the text (the loss of the best model that ignores context) and the training loss
as it falls well below it, then a sample of generated text (top-k sampling with
``tg.topk`` and ``tg.multinomial``).

    python examples/train_transformer.py [--device cpu|cuda] [--steps 400] [--text zen]

Runs in about a minute on a laptop CPU; ``--device cuda`` for a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import io
import math
import os
import time

# The CPU runs multiply small matrices, where BLAS worker threads cost more than they give and
# stall badly when other processes hold the cores: one thread unless the user says otherwise
# (set before NumPy loads its BLAS).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

import tritongrad as tg
from tritongrad import nn, optim

F = nn.functional


def load_text(spec: str = "zen") -> str:
    """The Zen of Python (``"zen"``) or the source of a stdlib module (``"module:NAME"``)."""
    if spec == "zen":
        with contextlib.redirect_stdout(io.StringIO()):
            import this  # prints the Zen on import; we want its text
        return "".join(this.d.get(c, c) for c in this.s)
    if spec.startswith("module:"):
        return inspect.getsource(importlib.import_module(spec.split(":", 1)[1]))
    raise ValueError(f"unknown text {spec!r}: use 'zen' or 'module:NAME'")


def unigram_entropy(ids: np.ndarray, vocab: int) -> float:
    """-sum p log p (nats) of the character frequencies: the baseline loss."""
    p = np.bincount(ids, minlength=vocab) / len(ids)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


# -- the model ------------------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: tg.Tensor) -> tg.Tensor:
        b, t, d = x.shape
        h = self.heads
        qkv = self.qkv(x).reshape(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)  # 3, b, h, t, hd
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.permute(0, 2, 1, 3).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, dropout)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim), nn.Dropout(dropout))

    def forward(self, x: tg.Tensor) -> tg.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharTransformer(nn.Module):
    """A GPT-style character model: (batch, time) token ids -> (batch, time, vocab) logits."""

    def __init__(self, vocab: int, context: int, dim: int = 64, heads: int = 4,
                 layers: int = 2, dropout: float = 0.0, tie_weights: bool = True):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([Block(dim, heads, dropout) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.apply(self._init)
        if tie_weights:
            self.head.weight = self.tok.weight  # one matrix for input and output embeddings

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx: tg.Tensor) -> tg.Tensor:
        _, t = idx.shape
        x = self.tok(idx) + self.pos(tg.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


# -- training -------------------------------------------------------------------------------------

def batches(ids: np.ndarray, context: int, batch: int, rng):
    """Random windows: inputs ids[o:o+context], targets shifted by one."""
    starts = rng.integers(0, len(ids) - context - 1, size=batch)
    x = np.stack([ids[s:s + context] for s in starts])
    y = np.stack([ids[s + 1:s + context + 1] for s in starts])
    return x, y


def evaluate(model: CharTransformer, ids: np.ndarray, context: int, device) -> float:
    """Mean next-character loss over every position of ``ids`` (non-overlapping windows)."""
    n = (len(ids) - 1) // context
    x = ids[:n * context].reshape(n, context)
    y = ids[1:n * context + 1].reshape(n, context)
    model.eval()
    with tg.no_grad():
        logits = model(tg.tensor(x, device=device))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               tg.tensor(y.reshape(-1), device=device)).item()
    model.train()
    return loss


def sample(model: CharTransformer, prompt: np.ndarray, n: int, device, temperature=0.8,
           top_k: int = 10, seed: int = 0) -> list:
    """``n`` token ids continuing ``prompt``: each drawn from the ``top_k`` most likely next
    tokens, in proportion to their probabilities at ``temperature``."""
    gen = tg.Generator(device=device).manual_seed(seed)
    ids = tg.tensor(np.asarray(prompt)[None, :], device=device)
    model.eval()
    with tg.no_grad():
        for _ in range(n):
            logits = model(ids[:, -model.context:])[:, -1] / temperature  # (1, vocab)
            top = tg.topk(logits, min(top_k, logits.shape[-1]))
            pick = tg.multinomial(F.softmax(top.values, dim=-1), 1, generator=gen)
            ids = tg.cat([ids, top.indices.gather(-1, pick)], dim=1)
    model.train()
    return ids[0, len(prompt):].tolist()


def train(device: str | None = None, steps: int = 400, text: str = "zen", context: int = 64,
          batch: int = 32, dim: int = 64, heads: int = 4, layers: int = 2, lr: float = 3e-3,
          seed: int = 0, log_every: int = 50, sample_chars: int = 200,
          verbose: bool = True) -> dict:
    """Trains; returns {"baseline", "losses", "final_loss", "seconds", "device"}."""
    device = device or ("cuda" if tg.cuda.is_available() else "cpu")
    txt = load_text(text)
    chars = sorted(set(txt))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in txt], dtype=np.int64)
    context = min(context, len(ids) - 2)
    baseline = unigram_entropy(ids, len(chars))
    tg.manual_seed(seed)
    model = CharTransformer(len(chars), context, dim, heads, layers).to(device)
    opt = optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.99), weight_decay=0.01)
    rng = np.random.default_rng(seed)
    if verbose:
        n_params = sum(p.numel() for p in model.parameters())
        print(f"text: {text!r}, {len(ids)} characters, vocabulary {len(chars)}; model: "
              f"{layers} layers, {heads} heads, dim {dim}, context {context}, {n_params} "
              f"parameters, on {device}")
        print(f"unigram entropy baseline: {baseline:.4f} nats/char "
              f"({baseline / math.log(2):.3f} bits/char)")
    losses = []
    warmup = max(1, steps // 20)
    t0 = time.perf_counter()
    for step in range(steps):
        scale = min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / steps))
        for g in opt.param_groups:
            g["lr"] = lr * max(scale, 0.05)
        xb, yb = batches(ids, context, batch, rng)
        logits = model(tg.tensor(xb, device=device))
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), tg.tensor(yb.reshape(-1),
                                                                         device=device))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if verbose and (step % log_every == 0 or step == steps - 1):
            recent = float(np.mean(losses[-log_every:]))
            last = min(log_every, len(losses))
            print(f"step {step:4d}  loss {losses[-1]:.4f}  (mean of last {last}: {recent:.4f}; "
                  f"baseline {baseline:.4f})  {time.perf_counter() - t0:6.1f} s")
    seconds = time.perf_counter() - t0
    final = evaluate(model, ids, context, device)
    if verbose:
        print(f"{steps} steps in {seconds:.1f} s; loss over the whole text {final:.4f} nats/char "
              f"vs unigram baseline {baseline:.4f} ({final / baseline:.0%} of it)")
        if sample_chars:
            prompt = ids[:context]
            out = sample(model, prompt, sample_chars, device)
            print(f"sample (continuing the text's first {context} characters): "
                  + repr("".join(chars[i] for i in out)))
    return {"baseline": baseline, "losses": losses, "final_loss": final, "seconds": seconds,
            "device": device}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--text", default="zen", help="'zen' or 'module:NAME' (a stdlib module)")
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    return train(args.device, args.steps, args.text, args.context, args.batch, args.dim,
                 args.heads, args.layers, args.lr, args.seed)


if __name__ == "__main__":
    main()
