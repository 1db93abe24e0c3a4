"""The Jacobian of a function with 256 outputs: one batched backward against the row loop.

``jacobian(f, x, vectorize=True)`` runs ONE backward with the identity as a batch of 256
grad_outputs (each node's rule once, on the whole batch: Note [Batched gradients]);
``vectorize=False`` runs 256 backwards, one per row. f is a small two-layer network,
x (64,) -> tanh(W2 tanh(W1 x + b1)) (256,). Peers: the same Jacobian by hand in NumPy (the
closed form: diag(1 - y^2) W2 diag(1 - h^2) W1), and torch's vectorized jacobian (vmap) and
row loop when torch is installed.

    python perf/bench_jacobian.py [--device cpu|cuda]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch

N_IN, N_HIDDEN, N_OUT = 64, 128, 256


def numpy_jacobian(x, w1, b1, w2):
    h = np.tanh(w1 @ x + b1)
    y = np.tanh(w2 @ h)
    return (1 - y * y)[:, None] * (w2 @ ((1 - h * h)[:, None] * w1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    import tritongrad as tg
    from tritongrad.autograd.functional import jacobian

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.2
              for s in ((N_IN,), (N_HIDDEN, N_IN), (N_HIDDEN,), (N_OUT, N_HIDDEN))]
    x, w1, b1, w2 = (tg.tensor(a, device=args.device) for a in arrays)
    sync = tg.cuda.synchronize if args.device != "cpu" else None

    def f(v):
        return (w2 @ (w1 @ v + b1).tanh()).tanh()

    cases = [("tritongrad vectorize=True (one batched backward)",
              lambda: jacobian(f, x, vectorize=True), sync),
             ("tritongrad row loop (256 backwards)", lambda: jacobian(f, x), sync)]
    if args.device == "cpu":
        cases.append(("numpy closed form", lambda: numpy_jacobian(*arrays), None))
    torch = try_torch(args.device)
    if torch is not None:
        dev = "cuda" if args.device != "cpu" else "cpu"
        tx, tw1, tb1, tw2 = (torch.tensor(a, device=dev) for a in arrays)
        tsync = torch.cuda.synchronize if dev == "cuda" else None

        def tf(v):
            return torch.tanh(tw2 @ torch.tanh(tw1 @ v + tb1))

        tjac = torch.autograd.functional.jacobian
        cases.append(("torch vectorize=True (vmap)", lambda: tjac(tf, tx, vectorize=True), tsync))
        cases.append(("torch row loop", lambda: tjac(tf, tx), tsync))
    rows = timeit(cases, warmup=2, repeat=7)
    expected = numpy_jacobian(*arrays)
    for vectorize in (True, False):  # every tritongrad row computed the same Jacobian
        np.testing.assert_allclose(jacobian(f, x, vectorize=vectorize).cpu().numpy(), expected,
                                   rtol=1e-4, atol=1e-6)
    report(f"Jacobian of a {N_IN} -> {N_OUT} two-layer tanh network (float32), {args.device}",
           rows)


if __name__ == "__main__":
    main()
