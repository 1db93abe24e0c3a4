"""tritongrad.distributed, DistributedDataParallel and DistributedSampler.

The collectives and DDP run in real processes under a real ``mpirun`` (2 and 3 ranks): each
launch runs a worker script that batches many checks (``_worker_*.py``, results against
NumPy and against single-process training), and the test asserts that every check passed on
every rank. The rest (errors before ``init_process_group``, lazy imports, the sampler's index
assignment) runs in this process, which never initialises MPI.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest
from _launch import HERE, mpi_missing, mpirun, passed

import tritongrad as tg
import tritongrad.distributed as dist
from tritongrad.utils.data.distributed import DistributedSampler

needs_mpi = pytest.mark.skipif(mpi_missing() is not None, reason=str(mpi_missing()))


def checks_in(worker: str) -> set:
    """The names of the check functions a worker script defines."""
    return set(re.findall(r"^def (check_\w+)", (HERE / worker).read_text(), re.MULTILINE))


# -- real processes ------------------------------------------------------------------------------

@needs_mpi
def test_collectives_on_2_ranks():
    p = mpirun(2, HERE / "_worker_collectives.py")
    assert passed(p) == checks_in("_worker_collectives.py") - {"check_cuda_staged"}


@needs_mpi
def test_collectives_on_3_ranks_with_cuda_tensors_staged():
    # conftest selected the device: the emulated one without a GPU (inherited by the ranks)
    p = mpirun(3, HERE / "_worker_collectives.py", "--cuda")
    assert passed(p) == checks_in("_worker_collectives.py")


@needs_mpi
def test_ddp_matches_single_process_training_on_2_ranks():
    p = mpirun(2, HERE / "_worker_ddp.py")
    assert passed(p) == checks_in("_worker_ddp.py") - {"check_cuda_module_staged"}


@needs_mpi
def test_ddp_on_3_ranks_with_a_cuda_module_staged():
    p = mpirun(3, HERE / "_worker_ddp.py", "--cuda")
    assert passed(p) == checks_in("_worker_ddp.py")


@needs_mpi
def test_train_digits_ddp_example():
    pytest.importorskip("sklearn")
    p = mpirun(2, HERE.parent.parent / "examples" / "train_digits_ddp.py", "--epochs", "3",
               timeout=120)
    assert "replicas identical: yes" in p.stdout
    acc = float(re.search(r"held-out accuracy: ([\d.]+)%", p.stdout).group(1))
    assert acc > 85.0, p.stdout  # ~93% after 3 epochs; the full 40 reach ~98%


@pytest.mark.gpu
@pytest.mark.skipif(not importlib.util.find_spec("nccl"), reason="nccl4py is not installed")
@needs_mpi
def test_nccl_world_of_one():
    p = mpirun(1, HERE / "_worker_nccl.py")
    assert passed(p) == checks_in("_worker_nccl.py")


# -- this process (MPI never initialised here) ---------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: dist.all_reduce(tg.ones(2)),
    lambda: dist.broadcast(tg.ones(2), 0),
    lambda: dist.barrier(),
    lambda: dist.get_rank(),
    lambda: dist.new_group([0]),
])
def test_collective_before_init_process_group(call):
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match=re.escape(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group.")):
        call()


def test_ddp_before_init_process_group():
    from tritongrad.nn.parallel import DistributedDataParallel
    with pytest.raises(RuntimeError, match="Default process group has not been initialized"):
        DistributedDataParallel(tg.nn.Linear(2, 2))


def test_init_arguments_checked_before_mpi_starts():
    with pytest.raises(ValueError, match="Invalid backend: 'gloo'"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="init_method='tcp://10.0.0.1:23456' is not supported"):
        dist.init_process_group("mpi", init_method="tcp://10.0.0.1:23456")
    with pytest.raises(TypeError, match="init_process_group: timeout must be a "
                                        "datetime.timedelta, got str"):
        dist.init_process_group("mpi", timeout="5s")
    assert not dist.is_initialized()


@pytest.mark.skipif(mpi_missing() is not None, reason="needs mpi4py and an MPI library")
def test_init_timeout_is_monitored_barriers_default():
    # (a world of one, in its own process: MPI is started and finalized there)
    code = ("import datetime, tritongrad.distributed as dist\n"
            "from tritongrad.distributed import c10d\n"
            "dist.init_process_group('mpi', timeout=datetime.timedelta(seconds=7))\n"
            "assert c10d._state.timeout == datetime.timedelta(seconds=7)\n"
            "dist.monitored_barrier()\n"
            "dist.destroy_process_group()\n"
            "assert c10d._state.timeout is None\n"
            "print('ok')\n")
    p = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


@pytest.mark.skipif(importlib.util.find_spec("nccl") is not None,
                    reason="nccl4py is installed here")
def test_nccl_backend_without_nccl4py_names_the_package():
    with pytest.raises(RuntimeError, match=r"nccl4py.*pip install tritongrad\[nccl\]"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_import_is_lazy_and_missing_mpi4py_is_explained():
    code = ("import sys; sys.modules['mpi4py'] = None\n"  # as if not installed
            "import tritongrad, tritongrad.distributed as dist\n"
            "from tritongrad.nn.parallel import DistributedDataParallel\n"
            "assert dist.is_available()\n"
            "try:\n"
            "    dist.init_process_group('mpi')\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "needs the mpi4py package" in p.stdout
    assert "pip install tritongrad[mpi]" in p.stdout


def test_reduce_op_and_backend_names():
    assert {op.name for op in dist.ReduceOp.RedOpType} == {
        "SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"}
    assert dist.ReduceOp.SUM is dist.ReduceOp.RedOpType.SUM
    assert dist.Backend("MPI") == "mpi" and dist.Backend.NCCL == "nccl"


# -- DistributedSampler: PyTorch's index assignment ----------------------------------------------

@pytest.mark.parametrize("n, replicas, drop_last, expected", [
    # 10 indices on 3 replicas: padded with the first two indices to 12
    (10, 3, False, [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]),
    # drop_last: cut to the largest multiple of 3
    (10, 3, True, [[0, 3, 6], [1, 4, 7], [2, 5, 8]]),
    # fewer indices than replicas: the list is repeated to fill the padding
    (2, 5, False, [[0], [1], [0], [1], [0]]),
    (7, 7, True, [[i] for i in range(7)]),
    (1, 1, False, [[0]]),
])
def test_distributed_sampler_assignment(n, replicas, drop_last, expected):
    shards = [list(DistributedSampler(range(n), replicas, r, shuffle=False,
                                      drop_last=drop_last)) for r in range(replicas)]
    assert shards == expected
    assert all(len(DistributedSampler(range(n), replicas, r, shuffle=False,
                                      drop_last=drop_last)) == len(expected[0])
               for r in range(replicas))


def test_distributed_sampler_shuffle_is_shared_and_changes_with_epoch():
    from tests.helpers import TorchMT
    samplers = [DistributedSampler(range(11), 2, r, seed=5) for r in range(2)]
    epoch0 = [list(s) for s in samplers]
    # randperm(11) from a generator seeded with seed + epoch: PyTorch's Fisher-Yates pass
    perm = list(range(11))
    for i, draw in enumerate(TorchMT(5).raw32(10)):
        j = i + draw % (11 - i)
        perm[i], perm[j] = perm[j], perm[i]
    padded = perm + perm[:1]
    assert epoch0 == [padded[0::2], padded[1::2]]
    assert [list(s) for s in samplers] == epoch0  # same epoch, same order
    for s in samplers:
        s.set_epoch(1)
    epoch1 = [list(s) for s in samplers]
    assert epoch1 != epoch0
    assert set(epoch1[0] + epoch1[1]) == set(range(11))


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval "
                                         r"\[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(range(4))  # defaults need the process group
    from tritongrad.utils.data.sampler import Sampler
    assert isinstance(DistributedSampler(range(4), 2, 0), Sampler)


def test_wrong_device_for_the_backend(monkeypatch):
    """The nccl backend refuses CPU tensors before any NCCL call (checked here on a stand-in
    group: no GPU or NCCL needed to reach the check)."""
    from tritongrad.distributed import c10d
    fake = c10d.ProcessGroup("nccl", None, [0], 0)
    monkeypatch.setattr(c10d._state, "world", fake)
    with pytest.raises(ValueError, match=r"all_reduce: the 'nccl' backend works on CUDA "
                                         r"tensors, but tensor is on cpu"):
        dist.all_reduce(tg.ones(3))
    with pytest.raises(ValueError, match=r"all_gather_into_tensor: .* output_tensor is on cpu"):
        dist.all_gather_into_tensor(tg.ones(3), tg.ones(3))


def test_not_initialized_is_both_pytorch_error_types():
    # PyTorch 2 raises ValueError before init_process_group, PyTorch 1 RuntimeError
    for exc in (ValueError, RuntimeError):
        with pytest.raises(exc, match="Default process group has not been initialized"):
            dist.get_world_size()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.destroy_process_group()
