"""One SGD step (forward, cross-entropy, backward, update) of a 784-1024-1024-10 MLP.

Rows: tritongrad (nn.Sequential + CrossEntropyLoss + optim.SGD), the same network with
hand-written NumPy forward/backward/update (what the autograd layer adds nothing to), the step's
eight matrix products alone in NumPy (the BLAS floor under the NumPy rows), the same products
through the CBLAS library tritongrad's CPU products call where it calls one
(kernels/numpy/blas.py: "mkl GEMMs only" on an Intel CPU with the ``mkl`` extra), and torch
when installed. Tritongrad's floor, the one its ratio is to be read against, is the GEMMs row
of the library it runs: the title line names it. CPU default: batch 256; on a GPU
(``--device cuda``) use ``--batch 4096``. On the CPU the rows take turns (interleaved), so a
shared machine's drift reaches every row alike and the ratios hold when the times move.

    python perf/bench_mlp.py [--device cpu|cuda] [--batch 256] [--repeat 15]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import profile_step, report, timeit, try_torch

SIZES = (784, 1024, 1024, 10)


def init(rng):
    """PyTorch's default Linear init, as float32 arrays (weights stored out x in)."""
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return params


def numpy_step(params, x, y, lr):
    """Forward, softmax cross-entropy, backward and SGD update, by hand."""
    (w1, b1, w2, b2, w3, b3) = params
    h1 = x @ w1.T + b1
    a1 = np.maximum(h1, 0)
    h2 = a1 @ w2.T + b2
    a2 = np.maximum(h2, 0)
    z = a2 @ w3.T + b3
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.log(p[np.arange(n), y]).mean()
    dz = p
    dz[np.arange(n), y] -= 1
    dz /= n
    gw3, gb3 = dz.T @ a2, dz.sum(0)
    da2 = dz @ w3
    da2 *= h2 > 0
    gw2, gb2 = da2.T @ a1, da2.sum(0)
    da1 = da2 @ w2
    da1 *= h1 > 0
    gw1, gb1 = da1.T @ x, da1.sum(0)
    for p_, g in zip(params, (gw1, gb1, gw2, gb2, gw3, gb3)):
        p_ -= lr * g
    return loss


def numpy_gemms(params, x, h1, h2, dz, mm=np.matmul):
    """Only the step's eight matrix products, with the hand-written step's shapes and operand
    layouts (three forward, five backward; the input needs no gradient): the floor that any
    implementation calling this BLAS (``mm``) pays, whatever its framework adds."""
    w1, _, w2, _, w3, _ = params
    mm(x, w1.T), mm(h1, w2.T), mm(h2, w3.T)
    mm(dz.T, h2), mm(dz, w3), mm(h2.T, h1), mm(h2, w2), mm(h1.T, x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--profile", action="store_true",
                    help="then print tritongrad's and torch's profiles of one step")
    args = ap.parse_args()
    import tritongrad as tg
    from tritongrad import nn, optim

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((args.batch, SIZES[0])).astype(np.float32)
    y0 = rng.integers(0, SIZES[-1], args.batch)
    p0 = init(rng)
    lr = 0.01

    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).to(args.device)
    with tg.no_grad():
        for p, a in zip(model.parameters(), p0):
            p.copy_(tg.tensor(a))
    opt = optim.SGD(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    x, y = tg.tensor(x0, device=args.device), tg.tensor(y0, device=args.device)
    sync = tg.cuda.synchronize if args.device != "cpu" else None

    def tg_step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    cases = [("tritongrad", tg_step, sync)]
    floor = ""
    if args.device == "cpu":
        params = [a.copy() for a in p0]
        cases.append(("numpy", lambda: numpy_step(params, x0, y0, lr), None))
        h = rng.standard_normal((2, args.batch, SIZES[1])).astype(np.float32)
        dz = rng.standard_normal((args.batch, SIZES[-1])).astype(np.float32)
        cases.append(("numpy GEMMs only", lambda: numpy_gemms(params, x0, h[0], h[1], dz),
                      None))
        from tritongrad.kernels.numpy import blas, linalg
        lib = blas.provider()
        floor = f"; tritongrad's floor: {lib.name if lib else 'numpy'} GEMMs only"
        if lib is not None:  # tritongrad's own floor: the CBLAS library it calls
            cases.append((f"{lib.name} GEMMs only",
                          lambda: numpy_gemms(params, x0, h[0], h[1], dz, linalg.matmul), None))
    torch = try_torch(args.device)
    torch_step = None
    if torch is not None:
        dev = "cuda" if args.device != "cpu" else "cpu"
        tm = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                 torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                 torch.nn.Linear(1024, 10)).to(dev)
        with torch.no_grad():
            for p, a in zip(tm.parameters(), p0):
                p.copy_(torch.from_numpy(a))
        topt = torch.optim.SGD(tm.parameters(), lr=lr)
        tloss = torch.nn.CrossEntropyLoss()
        tx, ty = torch.from_numpy(x0).to(dev), torch.from_numpy(y0).to(dev)
        tsync = torch.cuda.synchronize if dev == "cuda" else None

        def torch_step():
            topt.zero_grad(set_to_none=True)
            tloss(tm(tx), ty).backward()
            topt.step()

        cases.append(("torch", torch_step, tsync))
    report(f"MLP 784-1024-1024-10, batch {args.batch}, one SGD step, {args.device}{floor}",
           timeit(cases, warmup=3, repeat=args.repeat, interleave=args.device == "cpu"))
    if args.profile:
        profile_step(tg_step, args.device, torch_step)


if __name__ == "__main__":
    main()
