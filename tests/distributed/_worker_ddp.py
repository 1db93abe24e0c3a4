"""DistributedDataParallel on real MPI ranks, against one process training on the whole batch
(float64, so the two agree to rounding)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from _launch import raises, run_checks  # noqa: E402

import tritongrad as tg  # noqa: E402
import tritongrad.distributed as dist  # noqa: E402
from tritongrad import nn, optim  # noqa: E402
from tritongrad.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

BATCH = 12  # divisible by 2 and 3: equal shares, so the mean of means is the global mean


class Net(nn.Module):
    """A small MLP with a buffer (a running count, to see broadcast_buffers) and an extra
    layer that forward uses only when asked (for find_unused_parameters)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 3)
        self.extra = nn.Linear(3, 3)
        self.register_buffer("seen", tg.zeros(1, dtype=tg.float64))

    def forward(self, x, use_extra: bool = True):
        h = self.fc3(self.fc2(self.fc1(x).tanh()).tanh())
        return self.extra(h) if use_extra else h


def make_net(seed: int) -> Net:
    tg.manual_seed(seed)
    return Net().double()


def batch(step: int):
    rng = np.random.default_rng(1000 + step)
    return rng.standard_normal((BATCH, 5)), rng.standard_normal((BATCH, 3))


def shard(a: np.ndarray) -> np.ndarray:
    n = len(a) // N
    return a[RANK * n:(RANK + 1) * n]


def params_np(model) -> list:
    return [p.detach().numpy().copy() for p in model.parameters()]


def assert_params_close(model, ref, tol=1e-12) -> None:
    for (name, p), r in zip(model.named_parameters(), ref):
        np.testing.assert_allclose(p.detach().numpy(), r, rtol=tol, atol=tol, err_msg=name)


def train(model, steps: int, whole_batch: bool) -> None:
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = batch(step)
        if not whole_batch:
            x, y = shard(x), shard(y)
        loss = nn.functional.mse_loss(model(tg.tensor(x)), tg.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()


# -- the checks ----------------------------------------------------------------------------------

def check_construction_broadcasts_rank0() -> None:
    ddp = DDP(make_net(seed=RANK))  # different initial values on every rank
    assert_params_close(ddp.module, params_np(make_net(seed=0)), 0)
    assert isinstance(ddp.module, Net)
    keys = list(ddp.state_dict())
    assert keys == ["module." + k for k in ddp.module.state_dict()], keys


def check_training_equals_single_process() -> None:
    for cap in (None, 0.0005):  # one bucket; several (0.5 KiB each)
        ddp = DDP(make_net(seed=RANK), bucket_cap_mb=cap)
        assert (len(ddp._buckets) == 1) == (cap is None), len(ddp._buckets)
        train(ddp, steps=5, whole_batch=False)
        ref = make_net(seed=0)
        train(ref, steps=5, whole_batch=True)
        assert_params_close(ddp.module, params_np(ref))


def check_allreduce_overlaps_backward() -> None:
    """With small buckets, the first all-reduce starts while backward still has parameters
    without a gradient: communication overlaps the rest of backward."""
    ddp = DDP(make_net(seed=0), bucket_cap_mb=0.0005)
    launches = []
    real = dist.all_reduce

    def spy(t, *args, **kwargs):
        launches.append(sum(p.grad is None for p in ddp.module.parameters()))
        return real(t, *args, **kwargs)
    dist.all_reduce = spy
    try:
        x, y = batch(0)
        nn.functional.mse_loss(ddp(tg.tensor(shard(x))), tg.tensor(shard(y))).backward()
    finally:
        dist.all_reduce = real
    assert len(launches) == len(ddp._buckets) > 2, launches
    assert launches[0] > 0, f"first bucket launched only after backward: {launches}"


def check_no_sync_accumulates() -> None:
    ddp = DDP(make_net(seed=0))
    ref = make_net(seed=0)
    x0, y0 = batch(0)
    x1, y1 = batch(1)
    with ddp.no_sync():
        nn.functional.mse_loss(ddp(tg.tensor(shard(x0))), tg.tensor(shard(y0))).backward()
    local = [p.grad.numpy().copy() for p in ddp.module.parameters()]
    nn.functional.mse_loss(ddp(tg.tensor(shard(x1))), tg.tensor(shard(y1))).backward()
    for x, y in ((x0, y0), (x1, y1)):
        nn.functional.mse_loss(ref(tg.tensor(x)), tg.tensor(y)).backward()
    for p, r in zip(ddp.module.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), r.grad.numpy(), rtol=1e-12, atol=1e-12)
    # inside no_sync the gradients were this rank's own (they differ across ranks)
    assert not np.allclose(local[0], ddp.module.fc1.weight.grad.numpy())


def check_find_unused_parameters() -> None:
    ddp = DDP(make_net(seed=0), find_unused_parameters=True)
    ref = make_net(seed=0)
    x, y = batch(0)
    # rank 0 uses the extra layer, the others do not: its gradient is rank 0's share / N
    out = ddp(tg.tensor(shard(x)), use_extra=RANK == 0)
    nn.functional.mse_loss(out, tg.tensor(shard(y))).backward()
    n = BATCH // N
    nn.functional.mse_loss(ref(tg.tensor(x[:n]), use_extra=True), tg.tensor(y[:n])).backward()
    np.testing.assert_allclose(ddp.module.extra.weight.grad.numpy(),
                               ref.extra.weight.grad.numpy() / N, rtol=1e-12, atol=1e-12)
    # no rank uses it: its .grad stays as it was (None here), the others are averaged
    ddp.zero_grad()
    out = ddp(tg.tensor(shard(x)), use_extra=False)
    nn.functional.mse_loss(out, tg.tensor(shard(y))).backward()
    assert ddp.module.extra.weight.grad is None
    assert ddp.module.fc1.weight.grad is not None


def check_broadcast_buffers() -> None:
    ddp = DDP(make_net(seed=0))
    ddp.module.seen.fill_(float(RANK + 5))
    ddp(tg.zeros(2, 5, dtype=tg.float64))
    assert ddp.module.seen.item() == 5.0
    ddp = DDP(make_net(seed=0), broadcast_buffers=False)
    ddp.module.seen.fill_(float(RANK + 5))
    with tg.no_grad():
        ddp(tg.zeros(2, 5, dtype=tg.float64))
    assert ddp.module.seen.item() == RANK + 5


def check_errors() -> None:
    raises(RuntimeError, r"replicas' parameters differ.*parameter 0",
           lambda: DDP(nn.Linear(4 + (RANK == 0), 2)))
    raises(RuntimeError, "doesn't have any parameter that requires a gradient",
           lambda: DDP(nn.Linear(2, 2).requires_grad_(False)))
    raises(ValueError, "device_ids and output_device",
           lambda: DDP(nn.Linear(2, 2), device_ids=[0]))
    # an unused parameter without find_unused_parameters: the reduction cannot finish, and
    # the next forward says why (as PyTorch's)
    ddp = DDP(make_net(seed=0))
    x, y = batch(0)
    out = ddp(tg.tensor(shard(x)), use_extra=False)
    nn.functional.mse_loss(out, tg.tensor(shard(y))).backward()
    raises(RuntimeError, "find_unused_parameters=True", lambda: ddp(tg.tensor(shard(x))))


def check_cuda_module_staged() -> None:
    """A CUDA module under the mpi backend: buckets staged through host memory (here on
    the emulated device), the averaged gradients written back on the device."""
    ddp = DDP(make_net(seed=RANK).cuda(), device_ids=[0], bucket_cap_mb=0.0005)
    x, y = batch(0)
    out = ddp(tg.tensor(shard(x), device="cuda"))
    nn.functional.mse_loss(out, tg.tensor(shard(y), device="cuda")).backward()
    ref = make_net(seed=0)
    nn.functional.mse_loss(ref(tg.tensor(x)), tg.tensor(y)).backward()
    for p, r in zip(ddp.module.parameters(), ref.parameters()):
        assert p.grad.device.type == "cuda"
        np.testing.assert_allclose(p.grad.cpu().numpy(), r.grad.numpy(), rtol=1e-12,
                                   atol=1e-12)


if __name__ == "__main__":
    dist.init_process_group("mpi")
    N, RANK = dist.get_world_size(), dist.get_rank()
    checks = [check_construction_broadcasts_rank0, check_training_equals_single_process,
              check_allreduce_overlaps_backward, check_no_sync_accumulates,
              check_find_unused_parameters, check_broadcast_buffers, check_errors]
    if "--cuda" in sys.argv:
        checks.append(check_cuda_module_staged)
    run_checks(checks)
    dist.destroy_process_group()
