"""``DistributedDataParallel``: data parallelism at the module level, as PyTorch's.

Each process holds a replica of the module and runs it on its own share of the batch; the
gradients are averaged across the processes during backward, so every replica takes the same
optimizer step (the step a single process would take on the whole batch, when the loss is a
mean and the shares are equal).

Note [DDP buckets]: gradients are averaged in buckets of about ``bucket_cap_mb`` MiB, filled
in the reverse order of ``module.parameters()`` (roughly the order in which backward produces
them). A hook that runs after a parameter's gradient has been accumulated into ``.grad``
marks the parameter ready; when every parameter of a bucket is ready, the bucket's gradients
are flattened into one tensor and an asynchronous all-reduce (``Iallreduce`` under MPI) is
started, so communication overlaps the rest of backward. Buckets are started strictly in
order (a bucket ready early waits for the ones before it), which keeps the collectives in
the same order on every rank, as MPI and NCCL require. When the last bucket has been started
(that is, from the hook of the last parameter to become ready), every bucket is waited for
and its averaged values are copied back into the ``.grad`` tensors. This runs in the last
gradient hook rather than through the engine's ``queue_callback`` at the end of backward: for
the parameters it is the same moment, since nothing after it writes a parameter's gradient.

Note [DDP hooks]: a parameter becomes ready in its ``register_post_accumulate_grad_hook``,
which runs once a backward has accumulated the parameter's gradient into ``.grad`` (so
gradients accumulated under ``no_sync`` are included in the average, as in PyTorch).
"""

from __future__ import annotations

import contextlib

from ... import distributed as dist
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...autograd.node import AccumulateGrad
from ...autograd.ops.creation import tensor as make_tensor
from ...autograd.ops.creation import zeros_like
from ...autograd.ops.shape import cat
from ...autograd.tensor import Tensor
from ...runtime import dtype as dtypes
from ..module import Module

__all__ = ["DistributedDataParallel"]

_NOT_FINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by "
    "making sure all `forward` function outputs participate in calculating loss.")


class _Bucket:
    """Parameters whose gradients are averaged together (Note [DDP buckets])."""

    __slots__ = ("flat", "params", "pending", "work")

    def __init__(self, params: list):
        self.params = params
        self.pending = len(params)
        self.flat = self.work = None


class DistributedDataParallel(Module):
    r"""Implements distributed data parallelism at the module level.

    The module is replicated on each process (the replicas are made equal at construction:
    parameters and buffers are broadcast from rank 0). During backward, gradients are
    averaged across processes in buckets whose communication overlaps the rest of backward
    (Note [DDP buckets]); after ``loss.backward()`` every replica holds the averaged
    gradients.

    Args:
        module: module to be parallelized.
        device_ids: for a CUDA module, None or ``[i]``, the one device it lives on; must be
            None for a CPU module.
        output_device: the device of the outputs: None or the module's device.
        broadcast_buffers: sync the module's buffers from rank 0 at the beginning of every
            forward.
        process_group: the process group to average over (default: the world).
        bucket_cap_mb: the bucket size in MiB (default 25).
        find_unused_parameters: traverse the autograd graph from the outputs of every
            forward and mark the parameters it does not reach as ready, so their (zero)
            share still lets the buckets complete; a parameter that no rank used keeps its
            ``.grad`` as it was.
        dim: accepted for compatibility (inputs are never split: one device per process).
        init_sync: broadcast rank 0's parameters and buffers at construction (default).
        check_reduction: ignored, as in PyTorch (deprecated there).
        gradient_as_bucket_view: accepted; the gradients get the same values either way
            (here they are never views of the communication buffers).
        static_graph: the set of used parameters is the same in every iteration; handled
            as ``find_unused_parameters`` (a graph walk per forward), which gives the
            gradients PyTorch's static-graph mode gives.

    ``state_dict()`` keys carry the ``module.`` prefix, exactly as PyTorch's DDP (save
    ``ddp.module.state_dict()`` for a checkpoint without it).

    Example (``mpirun -n 2``)::

        >>> dist.init_process_group("mpi")
        >>> model = DistributedDataParallel(nn.Linear(4, 2))
        >>> loss = model(tg.randn(8, 4)).square().mean()
        >>> loss.backward()          # gradients averaged across the 2 processes
        >>> opt.step()
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a tritongrad.nn.Module, "
                            f"got {type(module).__name__}")
        self.module = module
        self.process_group = process_group
        world = dist.get_world_size(process_group)  # raises before init_process_group
        if world == -1:
            raise ValueError("DistributedDataParallel: this rank is not a member of "
                             "process_group")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {p.device for p in module.parameters()}
        device = next(iter(devices))
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel: the module's parameters are on "
                             f"several devices {sorted(map(str, devices))}; multi-device "
                             f"modules are not supported")
        for name, value in (("device_ids", device_ids), ("output_device", output_device)):
            ok = value is None or (device.type == "cuda" and _same_cuda(value, device, name))
            if not ok:
                raise ValueError(f"DistributedDataParallel device_ids and output_device "
                                 f"arguments only work with single-device GPU modules or "
                                 f"CPU modules, but got {name} {value!r} and module "
                                 f"parameters on {device}")
        self.device_ids = device_ids
        self.output_device = output_device
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.dim = dim
        self._walk_graph = find_unused_parameters or static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2**20)
        self.require_backward_grad_sync = True
        self._params = params
        self._world = world
        self._src = dist.get_process_group_ranks(process_group)[0] if process_group else 0

        self._verify_shapes()
        if init_sync:
            self._sync_module_states()
        self._buckets, self._where = self._make_buckets(params)
        self._hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                       for i, p in enumerate(params)]  # Note [DDP hooks]
        # the state of one iteration (forward, then backward)
        self._expect_hooks = False   # a synced forward ran: its backward averages gradients
        self._in_flight = False      # some gradient became ready; not all buckets finished
        self._ready = [False] * len(params)
        self._next_bucket = 0
        self._unused: list[int] = []
        self._used_work = self._used_counts = None

    # -- construction ----------------------------------------------------------------------------
    def _verify_shapes(self) -> None:
        """Every replica must have the same parameters (else the buckets would not line up
        and the all-reduces would mix unrelated values)."""
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        everyone = [None] * self._world
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for rank, theirs in enumerate(everyone):
            if theirs != mine:
                diff = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                            min(len(mine), len(theirs)))
                raise RuntimeError(
                    f"DistributedDataParallel: the replicas' parameters differ: this rank has "
                    f"{len(mine)} parameters, group rank {rank} has {len(theirs)}; the first "
                    f"difference is parameter {diff}: "
                    f"{mine[diff] if diff < len(mine) else None} here, "
                    f"{theirs[diff] if diff < len(theirs) else None} there")

    def _sync_module_states(self) -> None:
        """Parameters and buffers from rank 0 (in place: the module keeps its tensors)."""
        with no_grad():
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(t.detach(), self._src, group=self.process_group)

    def _make_buckets(self, params: list):
        """Buckets over the parameters in reverse order, one dtype and device per bucket,
        each closed when it reaches the size cap; returns (buckets, parameter -> bucket)."""
        buckets, current, size, key = [], [], 0, None
        for i in reversed(range(len(params))):
            p = params[i]
            k = (p.dtype, p.device)
            if current and (k != key or size >= self.bucket_bytes_cap):
                buckets.append(_Bucket(current))
                current, size = [], 0
            current.append(i)
            size += p.numel() * p.element_size()
            key = k
        buckets.append(_Bucket(current))
        where = {}
        for b, bucket in enumerate(buckets):
            for i in bucket.params:
                where[i] = b
        return buckets, where

    # -- forward ---------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._in_flight:
            raise RuntimeError(_NOT_FINISHED)
        if self.broadcast_buffers:
            with no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b.detach(), self._src, group=self.process_group)
        outputs = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(outputs)
        else:
            self._expect_hooks = False
        return outputs

    def _prepare_for_backward(self, outputs) -> None:
        self._expect_hooks = True
        self._ready = [False] * len(self._params)
        for b in self._buckets:
            b.pending, b.flat, b.work = len(b.params), None, None
        self._next_bucket = 0
        self._unused = []
        if self._walk_graph:
            reached = _leaves_reached(outputs)
            self._unused = [i for i, p in enumerate(self._params) if id(p) not in reached]

    @contextlib.contextmanager
    def no_sync(self):
        """A context manager to disable gradient synchronizations across DDP processes:
        gradients of the backward passes of forwards run inside it accumulate locally in
        ``.grad``, and the first synced backward after it averages the accumulated sums.

        Example::

            >>> with ddp.no_sync():
            ...     for x in micro_batches[:-1]:
            ...         ddp(x).sum().backward()   # no communication
            >>> ddp(micro_batches[-1]).sum().backward()  # averages all of them
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # -- backward (Note [DDP buckets]) -----------------------------------------------------------
    def _make_hook(self, i: int):
        def hook(param):
            if self._expect_hooks:
                self._mark_ready(i)
        return hook

    def _mark_ready(self, i: int) -> None:
        if not self._in_flight:
            self._in_flight = True
            if self._walk_graph:
                self._start_used_count()
                for j in self._unused:
                    self._mark_one(j)
        self._mark_one(i)
        for b in self._buckets[:self._next_bucket]:
            b.work.is_completed()  # lets MPI progress the all-reduces already started
        self._launch_ready_buckets()

    def _mark_one(self, i: int) -> None:
        if self._ready[i]:
            raise RuntimeError(f"Expected to mark a variable ready only once: parameter {i} "
                               f"(shape {list(self._params[i].shape)}) received its gradient "
                               f"twice in one iteration (a second backward through the same "
                               f"forward); run forward again, or use no_sync()")
        self._ready[i] = True
        self._buckets[self._where[i]].pending -= 1

    def _launch_ready_buckets(self) -> None:
        buckets = self._buckets
        while self._next_bucket < len(buckets) and buckets[self._next_bucket].pending == 0:
            b = buckets[self._next_bucket]
            with no_grad():
                grads = [self._params[i].grad for i in b.params]
                b.flat = cat([(zeros_like(self._params[i]) if g is None else g.detach())
                              .reshape(-1) for i, g in zip(b.params, grads)])
                b.work = dist.all_reduce(b.flat, op=dist.ReduceOp.AVG,
                                         group=self.process_group, async_op=True)
            self._next_bucket += 1
        if self._next_bucket == len(buckets):
            self._finish_reduction()

    def _start_used_count(self) -> None:
        """How many ranks used each parameter: those no rank used keep their ``.grad``."""
        unused = set(self._unused)
        used = [0 if i in unused else 1 for i in range(len(self._params))]
        self._used_counts = make_tensor(used, dtype=dtypes.int32, device=self._params[0].device)
        self._used_work = dist.all_reduce(self._used_counts, group=self.process_group,
                                          async_op=True)

    def _finish_reduction(self) -> None:
        used_anywhere = None
        if self._used_work is not None:
            self._used_work.wait()
            used_anywhere = [c > 0 for c in self._used_counts.tolist()]
            self._used_work = None
        with no_grad():
            for b in self._buckets:
                b.work.wait()
                offset = 0
                for i in b.params:
                    p = self._params[i]
                    n = p.numel()
                    avg = b.flat[offset:offset + n].view(p.shape)
                    offset += n
                    if used_anywhere is not None and not used_anywhere[i]:
                        continue
                    if p.grad is None:
                        p.grad = avg.clone()
                    else:
                        p.grad.copy_(avg)
                b.flat = b.work = None
        self._in_flight = False
        self._expect_hooks = False


def _same_cuda(value, device, name: str) -> bool:
    """Whether ``device_ids`` ([i]) or ``output_device`` (i or a device) names ``device``."""
    from ...runtime.device import device as Device
    items = value if name == "device_ids" else [value]
    if len(items) != 1:
        return False
    d = items[0]
    d = Device("cuda", d) if isinstance(d, int) else Device(d)
    return d == device


def _leaves_reached(outputs) -> set:
    """ids of the leaf tensors whose AccumulateGrad nodes the outputs' graphs reach."""
    stack, seen, reached = [], set(), set()

    def collect(o):
        if isinstance(o, Tensor):
            if o.grad_fn is not None:
                stack.append(o.grad_fn)
            elif o.requires_grad:
                reached.add(id(o))
        elif isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
        elif isinstance(o, dict):
            for x in o.values():
                collect(x)
    collect(outputs)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, AccumulateGrad):
            reached.add(id(node.variable))
        for nx in node._next:
            if nx is not None and nx not in seen:
                stack.append(nx)
    return reached
