"""A small GPT as LLM code writes it: rotary position embeddings through complex numbers
(torch.polar, view_as_complex/view_as_real), RMSNorm, SwiGLU, weight tying, a KV cache for
generation, parameter groups without weight decay for norms and biases, gradient
accumulation, bfloat16 autocast on the CPU, a warmup + cosine LambdaLR, clip_grad_norm_,
a checkpoint round trip through torch.save/torch.load, and sampling with temperature and top-k."""

import io
import math

import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F

TEXT = ("the quick brown fox jumps over the lazy dog. " * 8 +
        "a stitch in time saves nine. " * 8 + "all that glitters is not gold. " * 8)


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, max_len):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.cache_k = self.cache_v = None

    def forward(self, x, freqs_cis, start_pos=None):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        if start_pos is not None:  # generation: append to the cache
            if start_pos == 0:
                self.cache_k, self.cache_v = xk, xv
            else:
                self.cache_k = torch.cat([self.cache_k, xk], dim=1)
                self.cache_v = torch.cat([self.cache_v, xv], dim=1)
            xk, xv = self.cache_k, self.cache_v
        q, k, v = (t.transpose(1, 2) for t in (xq, xk, xv))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=seqlen > 1)
        return self.wo(out.transpose(1, 2).contiguous().view(bsz, seqlen, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, dim, n_heads, max_len):
        super().__init__()
        self.attention = Attention(dim, n_heads, max_len)
        self.feed_forward = FeedForward(dim, 4 * dim)
        self.attention_norm = nn.RMSNorm(dim, eps=1e-5)
        self.ffn_norm = nn.RMSNorm(dim, eps=1e-5)

    def forward(self, x, freqs_cis, start_pos=None):
        h = x + self.attention(self.attention_norm(x), freqs_cis, start_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class GPT(nn.Module):
    def __init__(self, vocab, dim=64, n_layers=2, n_heads=4, max_len=64):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Block(dim, n_heads, max_len) for _ in range(n_layers))
        self.norm = nn.RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        self.output.weight = self.tok_embeddings.weight  # weight tying
        self.register_buffer("freqs_cis", precompute_freqs_cis(dim // n_heads, max_len * 2),
                             persistent=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("wo.weight") or pn.endswith("w2.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layers))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, tokens, targets=None, start_pos=None):
        _, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        p0 = 0 if start_pos is None else start_pos
        freqs_cis = self.freqs_cis[p0:p0 + seqlen]
        for layer in self.layers:
            h = layer(h, freqs_cis, start_pos)
        logits = self.output(self.norm(h)).float()
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, lr):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay = [p for n, p in param_dict.items() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": nodecay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8)

    @torch.inference_mode()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        logits, _ = self(idx, start_pos=0)
        pos = idx.size(1)
        for _ in range(max_new_tokens):
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
            logits, _ = self(idx_next, start_pos=pos)
            pos += 1
        return idx


def main(steps=120, verbose=True):
    torch.manual_seed(1337)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    block, batch, accum = 32, 8, 2
    model = GPT(len(chars), max_len=block)
    n_params = sum(p.numel() for p in model.parameters())
    assert model.output.weight is model.tok_embeddings.weight
    opt = model.configure_optimizers(weight_decay=0.1, lr=3e-3)
    warmup = 10

    def lr_lambda(it):
        if it < warmup:
            return (it + 1) / warmup
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (it - warmup) / (steps - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    model.train()
    for it in range(steps):
        for micro in range(accum):
            ix = torch.randint(len(data) - block - 1, (batch,))
            x = torch.stack([data[i:i + block] for i in ix])
            y = torch.stack([data[i + 1:i + 1 + block] for i in ix])
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                _, loss = model(x, y)
            (loss / accum).backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if verbose and it % 20 == 0:
            print(f"step {it} loss {loss.item():.4f} norm {norm.item():.3f} "
                  f"lr {sched.get_last_lr()[0]:.2e}")

    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter": steps}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, weights_only=True)
    fresh = GPT(len(chars), max_len=block)
    fresh.load_state_dict(ckpt["model"])
    opt2 = fresh.configure_optimizers(weight_decay=0.1, lr=3e-3)
    opt2.load_state_dict(ckpt["optimizer"])
    assert fresh.output.weight is fresh.tok_embeddings.weight
    fresh.eval()
    with torch.no_grad():
        xs = data[: block].unsqueeze(0)
        a, _ = model.eval()(xs)
        b, _ = fresh(xs)
        torch.testing.assert_close(a, b)
        _, val = fresh(data[:-1][: 4 * block].view(4, block), data[1:][: 4 * block].view(4, block))
    start = torch.tensor([[stoi["t"]]])
    out = fresh.generate(start, 40, temperature=0.8, top_k=5)
    text = "".join(chars[i] for i in out[0].tolist())
    if verbose:
        print(n_params, "params; held loss", val.item(), repr(text))
    return val.item()


if __name__ == "__main__":
    main()
