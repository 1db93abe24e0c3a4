"""Data-parallel training of the digits MLP: ``examples/train_digits.py`` on several processes.

    mpirun -n 2 python examples/train_digits_ddp.py [--epochs 40] [--batch-size 64]
                                                    [--lr 1e-2] [--seed 0] [--backend mpi]

Each process (rank) reads its own share of the training set through ``DistributedSampler``
and trains a replica of the same model wrapped in ``DistributedDataParallel``, which averages
the gradients across the ranks during backward. The global batch (``--batch-size``, split
evenly across the ranks), learning rate and schedule are those of the single-process main
job, so the held-out accuracy is the same (about 98% after 40 epochs). Rank 0 prints the
progress and the accuracy; every rank checks at the end that the replicas are identical.

The data, model and evaluation are imported from train_digits.py, not copied.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread per rank
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from train_digits import accuracy, build_model, load_digits_split  # noqa: E402

import tritongrad as tg  # noqa: E402
import tritongrad.distributed as dist  # noqa: E402
from tritongrad import nn, optim  # noqa: E402
from tritongrad.nn.parallel import DistributedDataParallel  # noqa: E402
from tritongrad.utils.data.distributed import DistributedSampler  # noqa: E402


def train(epochs: int = 40, batch_size: int = 64, lr: float = 1e-2, hidden: int = 128,
          seed: int = 0, device: str = "cpu", verbose: bool = True) -> dict:
    """Trains on this rank's shard; returns {"accuracy", "seconds", "steps", "in_sync"}."""
    rank, world = dist.get_rank(), dist.get_world_size()
    if batch_size % world:
        raise SystemExit(f"--batch-size {batch_size} must be divisible by the number of "
                         f"processes ({world}): each rank takes an equal share of a batch")
    local_batch = batch_size // world
    xtr, ytr, xte, yte = load_digits_split(seed=seed)
    tg.manual_seed(seed + rank)  # dropout differs per rank; the weights come from rank 0
    model = DistributedDataParallel(build_model(hidden).to(device))
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    sampler = DistributedSampler(range(len(ytr)), seed=seed)  # rank and size from the group
    steps_per_epoch = math.ceil(len(sampler) / local_batch)
    total_steps = epochs * steps_per_epoch
    if verbose and rank == 0:
        print(f"digits on {world} processes ({dist.get_backend()}): {len(ytr)} train images, "
              f"{len(sampler)} per rank, batches of {local_batch} per rank "
              f"({local_batch * world} in all)")
    t0 = time.perf_counter()
    step = 0
    for epoch in range(epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        order = np.fromiter(sampler, dtype=np.int64)
        epoch_loss = 0.0
        for b in range(steps_per_epoch):
            for g in opt.param_groups:  # the main job's cosine schedule
                g["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / total_steps))
            sel = order[b * local_batch:(b + 1) * local_batch]
            loss = loss_fn(model(tg.tensor(xtr[sel], device=device)),
                           tg.tensor(ytr[sel], device=device))
            opt.zero_grad()
            loss.backward()  # gradients averaged across the ranks here
            opt.step()
            epoch_loss += loss.item()
            step += 1
        if verbose and rank == 0 and (epoch + 1) % max(1, epochs // 10) == 0:
            print(f"epoch {epoch + 1:3d}/{epochs}  loss (rank 0) "
                  f"{epoch_loss / steps_per_epoch:.4f}", flush=True)
    seconds = time.perf_counter() - t0
    acc = accuracy(model.module, tg.tensor(xte, device=device), yte)
    # the replicas took identical steps: the largest difference from rank 0's weights is 0
    flat = tg.cat([p.detach().reshape(-1) for p in model.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, 0)
    gap = (flat - ref).abs().max()
    dist.all_reduce(gap, op=dist.ReduceOp.MAX)
    result = {"accuracy": acc, "seconds": seconds, "steps": total_steps,
              "in_sync": gap.item() == 0.0}
    if verbose and rank == 0:
        print(f"trained {epochs} epochs ({total_steps} steps) in {seconds:.2f} s")
        print(f"replicas identical: {'yes' if result['in_sync'] else 'NO'}")
        print(f"held-out accuracy: {100 * acc:.2f}% ({round(acc * len(yte))}/{len(yte)})")
    return result


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=64, help="the global batch size")
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default="mpi", choices=["mpi", "nccl"],
                    help="mpi: CPU tensors; nccl: one GPU per process")
    args = ap.parse_args(argv)
    dist.init_process_group(args.backend)
    try:
        device = "cuda" if args.backend == "nccl" else "cpu"
        result = train(args.epochs, args.batch_size, args.lr, args.hidden, args.seed, device)
    finally:
        dist.destroy_process_group()
    if not result["in_sync"]:
        sys.exit("the replicas diverged")
    return result


if __name__ == "__main__":
    main()
