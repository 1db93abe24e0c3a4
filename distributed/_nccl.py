"""The ``nccl`` backend: collectives on CUDA tensors through NVIDIA's ``nccl4py``.

This is the only module that imports nccl4py (``nccl.core``), and only when a ``nccl`` group
is created. The processes are still launched by MPI: the world's MPI communicator numbers the
ranks and carries NCCL's unique id from rank 0 to the others, then
``nccl.core.Communicator.init(nranks, rank, unique_id)`` connects them.

Note [NCCL streams]: each operation is enqueued on the caller's current tritongrad stream of
the tensor's device (its handle passed as ``stream=``), so it is ordered after the kernels
that produced its inputs and before those that read its outputs, with no host wait. ``Work``
records an event after it: ``is_completed()`` queries the event, ``wait()`` makes the then
current stream wait for it (as PyTorch's NCCL ``Work.wait`` does: the host does not block).
Non-contiguous tensors go through a contiguous copy, copied back on the same stream.

Status: written against nccl4py's documented API (``Communicator.init/allreduce/broadcast/
reduce/allgather/reduce_scatter/send/recv/destroy``, ``NcclRedOp``, ``get_unique_id``); our GPU
machines have one GPU each, so only a world of one has run it (tests/distributed, marked gpu).
"""

from __future__ import annotations

from ._work import Work

__all__ = ["NCCLBackend", "load_nccl"]

_nccl = None

# ReduceOp name -> nccl4py NcclRedOp member. NCCL has no bitwise reductions.
_OPS = {"SUM": "SUM", "PRODUCT": "PROD", "MIN": "MIN", "MAX": "MAX", "AVG": "AVG"}


def load_nccl():
    """nccl4py's ``nccl.core`` (imported on first use)."""
    global _nccl
    if _nccl is None:
        try:
            from nccl import core
        except ImportError as e:
            raise RuntimeError(
                "tritongrad.distributed: the 'nccl' backend needs the nccl4py package (NVIDIA's "
                "Python binding of NCCL); install it with `pip install tritongrad[nccl]`, or use "
                f"backend='mpi' ({e})") from None
        _nccl = core
    return _nccl


class NCCLBackend:
    """Collectives over one NCCL communicator, bootstrapped by an ``MPIBackend`` (which also
    serves ``split`` and the argument checks' small exchanges)."""

    name = "nccl"

    def __init__(self, mpi, device_id=None):
        from ..runtime import driver
        from ..runtime.device import device as Device
        core = load_nccl()
        if driver.is_emulated() or driver.device_count() == 0:
            raise RuntimeError("init_process_group: the 'nccl' backend needs a real NVIDIA GPU "
                               "(this process has none, or only tritongrad's emulated device); "
                               "use backend='mpi'")
        self.mpi = mpi
        self.core = core
        from ..runtime import streams
        self.device = Device("cuda", streams.device_index(device_id))
        uid = core.get_unique_id() if mpi.comm.Get_rank() == 0 else None
        uid = mpi.comm.bcast(uid, root=0)  # a small object, pickled once at setup
        with _on_device(self.device):
            self.comm = core.Communicator.init(mpi.comm.Get_size(), mpi.comm.Get_rank(), uid)

    # -- helpers ---------------------------------------------------------------------------------
    def _check_device(self, t) -> None:
        if t._device != self.device:
            raise ValueError(f"nccl: the tensor is on {t._device}, but this process group "
                             f"uses {self.device}; one process drives one GPU")

    def _op(self, op_name: str):
        if op_name not in _OPS:
            raise ValueError(f"nccl: ReduceOp.{op_name} is not supported by NCCL (it has "
                             f"SUM, PRODUCT, MIN, MAX and AVG)")
        return getattr(self.core.NcclRedOp, _OPS[op_name])

    def _stream(self) -> int:
        from ..runtime import streams
        return streams.current_stream_handle(self.device.index)

    def _run(self, launch, writes=(), reads=()) -> Work:
        """Enqueues ``launch(stream, *buffers)`` on the current stream (Note [NCCL streams]):
        ``writes`` are output tensors (a contiguous stand-in is used and copied back for a
        non-contiguous one), ``reads`` are inputs (made contiguous if needed)."""
        from ..autograd.grad_mode import no_grad
        from ..runtime import streams
        for t in writes + reads:
            self._check_device(t)
        with no_grad(), _on_device(self.device):
            wbufs = [t.detach() if t.is_contiguous() else t.detach().contiguous() for t in writes]
            rbufs = [t.detach() if t.is_contiguous() else t.detach().contiguous() for t in reads]
            launch(self._stream(), *wbufs, *rbufs)
            for t, b in zip(writes, wbufs):
                if b._data is not t._data:
                    t.detach().copy_(b)  # bumps the version counter
                else:
                    t._vc[0] += 1
            done = streams.Event()
            done.record(streams.current_stream(self.device))

        def wait(_keep=(wbufs, rbufs)):  # keeps the staging buffers until the work ran
            streams.current_stream(self.device).wait_event(done)
        return Work(done.query, wait)

    # -- collectives -----------------------------------------------------------------------------
    def allreduce(self, t, op_name: str) -> Work:
        op = self._op(op_name)
        return self._run(lambda s, b: self.comm.allreduce(b, b, op, stream=s), (t,))

    def broadcast(self, t, root: int) -> Work:
        return self._run(lambda s, b: self.comm.broadcast(b, b, root, stream=s), (t,))

    def reduce(self, t, root: int, op_name: str) -> Work:
        op = self._op(op_name)
        return self._run(lambda s, b: self.comm.reduce(b, b, op, root=root, stream=s), (t,))

    def allgather(self, out, inp) -> Work:
        return self._run(lambda s, o, i: self.comm.allgather(i, o, stream=s), (out,), (inp,))

    def reduce_scatter(self, out, inp, op_name: str) -> Work:
        op = self._op(op_name)
        return self._run(lambda s, o, i: self.comm.reduce_scatter(i, o, op, stream=s), (out,),
                         (inp,))

    def barrier(self) -> Work:
        # NCCL has no barrier: MPI's, on the host, after this stream's work so far
        from ..runtime import streams
        streams.current_stream(self.device).synchronize()
        return self.mpi.barrier()

    def send(self, t, peer: int, tag: int) -> Work:
        if tag != 0:
            raise ValueError("nccl: send/recv tags are not supported by NCCL; use tag=0")
        return self._run(lambda s, b: self.comm.send(b, peer, stream=s), (), (t,))

    def recv(self, t, peer: int | None, tag: int | None) -> Work:
        if peer is None or tag not in (0, None):
            raise ValueError("nccl: recv needs an explicit src (NCCL cannot receive from any "
                             "rank) and tag=0")
        work = self._run(lambda s, b: self.comm.recv(b, peer, stream=s), (t,))
        work._finish = lambda: peer
        return work

    # -- groups and checks -----------------------------------------------------------------------
    def split(self, member: bool, key: int):
        sub = self.mpi.split(member, key)
        return None if sub is None else NCCLBackend(sub, self.device)

    # gather, scatter and all-to-all have no NCCL collective of their own (NCCL would need
    # grouped send/recv): they go through MPI, the tensors staged through host memory.
    def gather(self, out, inp, root: int) -> Work:
        return self.mpi.gather(out, inp, root)

    def scatter(self, out, inp, root: int) -> Work:
        return self.mpi.scatter(out, inp, root)

    def alltoallv(self, out, inp, out_counts: list, in_counts: list) -> Work:
        return self.mpi.alltoallv(out, inp, out_counts, in_counts)

    def allgather_object(self, obj) -> list:
        return self.mpi.allgather_object(obj)

    def gather_object(self, obj, root: int) -> list | None:
        return self.mpi.gather_object(obj, root)

    def scatter_object(self, objs: list | None, root: int):
        return self.mpi.scatter_object(objs, root)

    def broadcast_object(self, obj, root: int):
        return self.mpi.broadcast_object(obj, root)

    def free(self) -> None:
        self.comm.destroy()
        self.mpi.free()


class _on_device:
    """Makes ``device`` current for NCCL's calls (it binds to the current CUDA device)."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        from ..runtime import streams
        self.prev = streams.current_device()
        streams.set_device(self.device.index)

    def __exit__(self, *exc):
        from ..runtime import streams
        streams.set_device(self.prev)
