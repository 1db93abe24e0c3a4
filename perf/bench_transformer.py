"""One training step of a GPT-style transformer: forward, backward, gradient clipping, AdamW.

4 layers, width 128, 4 heads, 64 tokens, batch 16, exact GELU, causal attention through
``F.scaled_dot_product_attention``: the model is written once (``build`` below) for any module
with PyTorch's API, so tritongrad and torch (when installed) run the same program. Rows:
tritongrad and torch, with the step's time and the share of it spent in tritongrad's hot spots
(``--profile`` prints tritongrad's profiler table). On cuda a second table times the step with
the model's forward and backward as CUDA graphs, and the whole step as one graph, against
torch's eager and graphed steps.

    python perf/bench_transformer.py [--device cpu|cuda] [--profile]
"""

from __future__ import annotations

import argparse
import math

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import compare_steps

LAYERS, DIM, HEADS, CONTEXT, BATCH, VOCAB = 4, 128, 4, 64, 16, 96


def build(T, device: str, graphed: bool = False, whole: bool = False):
    """(model, optimizer, step) for framework ``T`` (tritongrad or torch). ``graphed``: the
    model's forward and backward replayed as CUDA graphs (``T.cuda.make_graphed_callables``,
    PyTorch's partial-network capture); the loss, clipping and AdamW stay eager. ``whole``:
    the whole step (forward, loss, backward, clipping, a capturable AdamW) captured as one
    graph after three warm-up steps on a side stream (PyTorch's whole-network recipe); the
    step replays it."""
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
            self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
            self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (a.reshape(b, t, HEADS, d // HEADS).transpose(1, 2) for a in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, DIM), nn.Embedding(CONTEXT, DIM)
            self.blocks = nn.Sequential(*[Block() for _ in range(LAYERS)])
            self.ln_f, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, VOCAB, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(T.arange(idx.shape[1], device=idx.device))
            return self.head(self.ln_f(self.blocks(x)))

    T.manual_seed(0)
    model = GPT().to(device)
    opt = T.optim.AdamW(model.parameters(), lr=3e-4, capturable=whole)
    rng = np.random.default_rng(0)
    ids = T.tensor(rng.integers(0, VOCAB, (BATCH, CONTEXT + 1)), device=device)
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    forward = T.cuda.make_graphed_callables(model, (x,)) if graphed else model

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(forward(x).reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    if whole:
        step = _captured(T, step, opt)
    return model, opt, step


def _captured(T, step, opt):
    """``step`` captured whole after three warm-up steps on a side stream: a function that
    replays it and returns the captured loss. It holds ``step`` (so the model, its inputs and
    gradients) and ``opt`` (its state): a graph, as PyTorch's, does not keep alive the tensors
    it reads and writes, and freed ones would be handed out again under it."""
    side = T.cuda.Stream()
    side.wait_stream(T.cuda.current_stream())
    with T.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            step()
    T.cuda.current_stream().wait_stream(side)
    graph = T.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with T.cuda.graph(graph):
        loss = step()

    def replay():
        graph.replay()
        return loss

    replay.keep = (step, opt)
    return replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    import tritongrad as tg

    compare_steps(f"GPT-style training step ({LAYERS} layers, width {DIM}, {HEADS} heads, "
                  f"{BATCH} x {CONTEXT} tokens, exact GELU, AdamW)",
                  lambda T: build(T, args.device)[2], args.device, args.repeat, args.profile)
    n_params = sum(math.prod(p.shape) for p in build(tg, args.device)[0].parameters())
    print(f"parameters: {n_params}")
    if args.device == "cuda":
        _graphed(args.repeat)


def _graphed(repeat: int) -> None:
    """The same step with the model's forward and backward as CUDA graphs, against torch's
    eager step and torch's graphed one (issue 15's target: <= 0.8x torch eager)."""
    import tritongrad as tg
    from _common import report, timeit, try_torch

    cases = [("graphed tritongrad", build(tg, "cuda", graphed=True)[2], tg.cuda.synchronize),
             ("whole-step graph tritongrad", build(tg, "cuda", whole=True)[2],
              tg.cuda.synchronize)]
    torch = try_torch("cuda")
    if torch is not None:
        cases += [("eager torch", build(torch, "cuda")[2], torch.cuda.synchronize),
                  ("graphed torch", build(torch, "cuda", graphed=True)[2],
                   torch.cuda.synchronize),
                  ("whole-step graph torch", build(torch, "cuda", whole=True)[2],
                   torch.cuda.synchronize)]
    rows = timeit(cases, warmup=3, repeat=repeat, interleave=False)
    report("the same step as CUDA graphs: forward and backward (make_graphed_callables; "
           "loss, clipping and AdamW eager), or the whole step captured once, cuda", rows)


if __name__ == "__main__":
    main()
