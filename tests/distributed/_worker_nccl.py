"""The nccl backend on a real GPU, in a world of one (our GPU machines have one GPU each):
the calls go through nccl4py and NCCL end to end; results against NumPy."""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from _launch import run_checks  # noqa: E402

import tritongrad as tg  # noqa: E402
import tritongrad.distributed as dist  # noqa: E402

X = np.random.default_rng(0).standard_normal((4, 6))


def close(t, expected) -> None:
    np.testing.assert_allclose(t.cpu().numpy(), expected, rtol=1e-12, atol=1e-12)


def check_collectives() -> None:
    assert dist.get_backend() == "nccl" and dist.get_world_size() == 1
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX):
        t = tg.tensor(X, device="cuda")
        v = t._version
        dist.all_reduce(t, op=op)
        close(t, X)  # one rank: every reduction is the identity
        assert t._version == v + 1
    t = tg.tensor(X, device="cuda").t()  # non-contiguous: through a contiguous copy
    dist.all_reduce(t)
    close(t, X.T)
    dist.broadcast(t, 0)
    out = tg.zeros(4, 6, dtype=tg.float64, device="cuda")
    dist.all_gather_into_tensor(out, tg.tensor(X, device="cuda"))
    close(out, X)
    out = tg.zeros(4, 6, dtype=tg.float64, device="cuda")
    dist.reduce_scatter_tensor(out, tg.tensor(X, device="cuda"))
    close(out, X)
    w = dist.all_reduce(tg.tensor(X, device="cuda"), async_op=True)
    w.wait()
    tg.cuda.synchronize()
    assert w.is_completed()
    dist.barrier()


def check_cpu_tensor_refused() -> None:
    try:
        dist.all_reduce(tg.ones(3))
    except ValueError as e:
        assert re.search(r"'nccl' backend works on CUDA tensors, but tensor is on cpu", str(e))
    else:
        raise AssertionError("a CPU tensor was accepted by the nccl backend")


if __name__ == "__main__":
    dist.init_process_group("nccl")
    run_checks([check_collectives, check_cpu_tensor_refused])
    dist.destroy_process_group()
