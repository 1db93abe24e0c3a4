"""One training step of a character-level LSTM language model: embedding, a 2-layer nn.LSTM,
a linear head, cross-entropy, Adam (the loop of examples/pytorch_programs/char_lstm.py).

Each nn.LSTM layer runs its time loop as one op (autograd/ops/recurrent.py): per step the
recurrent GEMM and one fused cell kernel (kernels/numpy/recurrent.py on the CPU, one compiled
pass; kernels/triton/recurrent.py on CUDA, one launch), each way; torch runs its own C++ loop. ``--mode GRU`` / ``RNN_TANH`` times the other recurrent layers. Rows: tritongrad
and torch (when installed), taking turns.

    python perf/bench_rnn.py [--device cpu|cuda] [--mode LSTM|GRU|RNN_TANH] [--profile]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import compare_steps

VOCAB, DIM, HIDDEN, LAYERS, BATCH, SEQ = 24, 32, 64, 2, 8, 32


def build(T, device: str, mode: str):
    """The step for framework ``T`` (tritongrad or torch)."""
    nn, F = T.nn, T.nn.functional
    layer = {"LSTM": nn.LSTM, "GRU": nn.GRU,
             "RNN_TANH": lambda *a, **k: nn.RNN(*a, nonlinearity="tanh", **k)}[mode]

    class CharLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, DIM)
            self.rnn = layer(DIM, HIDDEN, num_layers=LAYERS, batch_first=True)
            self.head = nn.Linear(HIDDEN, VOCAB)

        def forward(self, x):
            return self.head(self.rnn(self.embed(x))[0])

    T.manual_seed(0)
    model = CharLM().to(device)
    opt = T.optim.Adam(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(0)
    x = T.tensor(rng.integers(0, VOCAB, (BATCH, SEQ)), device=device)
    y = T.tensor(rng.integers(0, VOCAB, (BATCH, SEQ)), device=device)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--mode", default="LSTM", choices=["LSTM", "GRU", "RNN_TANH"])
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    compare_steps(f"{args.mode} language-model step ({LAYERS} layers, hidden {HIDDEN}, "
                  f"batch {BATCH} x {SEQ} steps, Adam)",
                  lambda T: build(T, args.device, args.mode), args.device, args.repeat,
                  args.profile)


if __name__ == "__main__":
    main()
