"""The ``mpi`` backend: collectives over an MPI communicator, on host memory, through mpi4py.

This is the only module that imports mpi4py, and only when a process group is created, so
``import tritongrad`` works without it. Every collective uses mpi4py's buffer interface (the
upper-case methods: no pickling) on the tensor's own host NumPy memory, and is started
non-blocking (``Iallreduce``, ``Ibcast``, ...), so one code path serves ``async_op`` and the
blocking calls (which wait at once).

Note [MPI staging]: MPI reads and writes a C-contiguous host buffer.
  * A C-contiguous CPU tensor *is* that buffer: MPI writes straight into its storage, so every
    view of the storage sees the result.
  * A non-contiguous CPU tensor is copied into a contiguous buffer, and the result is copied
    back into the tensor's strided storage when the operation completes.
  * A CUDA tensor is staged through host memory the same way (a device-to-host copy before,
    a host-to-device copy after): correct, not fast. Use the ``nccl`` backend for GPU tensors.
  * bfloat16 (which NumPy lacks) travels as its float32 values; results of reductions are
    rounded back onto the bfloat16 grid when written back. float16 reductions also run on
    float32 copies and are rounded once at the end: no partial sum is rounded to float16 (or
    overflows it) on the way, so the result is the correctly rounded one.
"""

from __future__ import annotations

import numpy as np

from ..kernels import host_array, host_values
from ..runtime import dtype as dtypes
from ._work import Work

__all__ = ["MPIBackend", "load_mpi"]

_MPI = None


def load_mpi():
    """mpi4py's ``MPI`` module (imported, and MPI initialised, on first use)."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError(
                "tritongrad.distributed: the 'mpi' backend (and the launch of every process "
                "group) needs the mpi4py package and an MPI library; install them with "
                "`pip install tritongrad[mpi]` (mpi4py and mpich), then launch with "
                f"`mpirun -n N python script.py` ({e})") from None
        _MPI = MPI
    return _MPI


class _Staged:
    """A tensor's values as a C-contiguous host buffer MPI works on (Note [MPI staging]), and
    ``commit()``, which puts a result back into the tensor's storage and bumps its version
    counter once, as an in-place op does."""

    __slots__ = ("buf", "direct", "divisor", "tensor")

    def __init__(self, t, writes: bool = True, divisor: int | None = None,
                 widen: bool = False):
        self.tensor = t
        self.divisor = divisor  # ReduceOp.AVG: MPI sums, the average is the sum / size
        if t._device.type == "cpu":
            host = host_values(t._data)
            self.direct = host.flags.c_contiguous and (host.flags.writeable or not writes)
            self.buf = host if self.direct else np.ascontiguousarray(host)
        else:  # CUDA: staged through host memory
            self.direct = False
            self.buf = np.ascontiguousarray(host_values(t.detach().cpu()._data))
        if widen and self.buf.dtype == np.float16:  # a reduction's operand: float32
            self.buf, self.direct = self.buf.astype(np.float32), False

    def commit(self) -> None:
        t, buf = self.tensor, self.buf
        if self.divisor is not None:
            np.divide(buf, self.divisor, out=buf)
        if t._dtype is dtypes.bfloat16 or not self.direct:
            values = host_array(buf, t._dtype)  # bfloat16: rounded to the grid
            if t._device.type == "cpu":
                np.copyto(host_values(t._data), host_values(values))
            else:
                from ..autograd.tensor import make
                t._k.copy_(t._data, make(values).to(t._device)._data)
        t._vc[0] += 1


class MPIBackend:
    """Collectives over one MPI communicator, ranks numbered as in it. Each collective starts
    a non-blocking MPI operation on the tensors' staged host buffers and returns its Work."""

    name = "mpi"

    def __init__(self, comm):
        self.comm = comm
        MPI = load_mpi()
        self._ops = {"SUM": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX,
                     "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}
        # MPI defines no arithmetic on C_BOOL: sums and maxima of bools are their OR, products
        # and minima their AND (PyTorch's NCCL backend treats bool the same way).
        self._bool_ops = {"SUM": MPI.LOR, "MAX": MPI.LOR, "BOR": MPI.LOR,
                          "PRODUCT": MPI.LAND, "MIN": MPI.LAND, "BAND": MPI.LAND,
                          "BXOR": MPI.LXOR}
        self.MPI = MPI

    # -- helpers ---------------------------------------------------------------------------------
    def _op(self, op_name: str, dtype):
        if op_name == "AVG":  # summed here, divided by _Staged.commit
            op_name = "SUM"
        return (self._bool_ops if dtype is dtypes.bool else self._ops)[op_name]

    def _avg(self, op_name: str) -> int | None:
        return self.comm.Get_size() if op_name == "AVG" else None

    @staticmethod
    def _bytes(buf: np.ndarray) -> np.ndarray:
        """The buffer as raw bytes: data movement needs no MPI datatype, so every dtype
        (float16 and bfloat16 included) travels the same way."""
        return buf.reshape(-1).view(np.uint8)

    def _work(self, req, writes: tuple, reads: tuple = (), status=None) -> Work:
        """A Work over one request: on completion the staged ``writes`` are committed. The
        staged buffers stay referenced until then (MPI owns them while the request runs)."""
        def finish(_keep=reads):  # _keep: the buffers MPI reads, alive until the request ends
            for s in writes:
                s.commit()
            return None if status is None else status.Get_source()
        if status is None:
            return Work(req.Test, req.Wait, finish)
        return Work(lambda: req.Test(status), lambda: req.Wait(status), finish)

    # -- collectives (every rank of the communicator calls each, in the same order) --------------
    def allreduce(self, t, op_name: str) -> Work:
        s = _Staged(t, divisor=self._avg(op_name), widen=True)
        req = self.comm.Iallreduce(self.MPI.IN_PLACE, s.buf, self._op(op_name, t._dtype))
        return self._work(req, (s,))

    def broadcast(self, t, root: int) -> Work:
        is_root = self.comm.Get_rank() == root
        s = _Staged(t, writes=not is_root)
        req = self.comm.Ibcast(self._bytes(s.buf), root=root)
        return self._work(req, () if is_root else (s,), (s,))  # the root's values stay

    def reduce(self, t, root: int, op_name: str) -> Work:
        s = _Staged(t, divisor=self._avg(op_name), widen=True)
        is_root = self.comm.Get_rank() == root
        op = self._op(op_name, t._dtype)
        if is_root:
            req = self.comm.Ireduce(self.MPI.IN_PLACE, s.buf, op, root=root)
        else:  # PyTorch leaves non-root tensors unspecified; here they keep their values
            req = self.comm.Ireduce(s.buf, None, op, root=root)
        return self._work(req, (s,) if is_root else (), (s,))

    def allgather(self, out, inp) -> Work:
        """``out`` (world_size * inp.numel() elements, rank-major) receives every ``inp``."""
        so, si = _Staged(out), _Staged(inp, writes=False)
        req = self.comm.Iallgather(self._bytes(si.buf), self._bytes(so.buf))
        return self._work(req, (so,), (si,))

    def reduce_scatter(self, out, inp, op_name: str) -> Work:
        """``out`` receives this rank's block of the elementwise reduction of ``inp``."""
        so = _Staged(out, divisor=self._avg(op_name), widen=True)
        si = _Staged(inp, writes=False, widen=True)
        req = self.comm.Ireduce_scatter_block(si.buf, so.buf, self._op(op_name, inp._dtype))
        return self._work(req, (so,), (si,))

    def gather(self, out, inp, root: int) -> Work:
        """On ``root``, ``out`` (world_size * inp.numel() elements, rank-major) receives
        every rank's ``inp``; the other ranks pass ``out=None``."""
        si = _Staged(inp, writes=False)
        if out is None:
            req = self.comm.Igather(self._bytes(si.buf), None, root=root)
            return self._work(req, (), (si,))
        so = _Staged(out)
        req = self.comm.Igather(self._bytes(si.buf), self._bytes(so.buf), root=root)
        return self._work(req, (so,), (si,))

    def scatter(self, out, inp, root: int) -> Work:
        """``out`` receives block ``rank`` of root's ``inp`` (None on the other ranks)."""
        so = _Staged(out)
        si = None if inp is None else _Staged(inp, writes=False)
        req = self.comm.Iscatter(None if si is None else self._bytes(si.buf),
                                 self._bytes(so.buf), root=root)
        return self._work(req, (so,), (si,))

    def alltoallv(self, out, inp, out_counts: list, in_counts: list) -> Work:
        """Block ``j`` of ``inp`` (``in_counts[j]`` elements, in order) goes to rank ``j``;
        block ``i`` of ``out`` (``out_counts[i]`` elements) comes from rank ``i``."""
        so, si = _Staged(out), _Staged(inp, writes=False)
        size = so.buf.itemsize

        def spec(buf, counts):
            nbytes = [c * size for c in counts]
            displs = np.concatenate(([0], np.cumsum(nbytes)[:-1])).astype(int).tolist()
            return [self._bytes(buf), (nbytes, displs), self.MPI.BYTE]
        req = self.comm.Ialltoallv(spec(si.buf, in_counts), spec(so.buf, out_counts))
        return self._work(req, (so,), (si,))

    def barrier(self) -> Work:
        return self._work(self.comm.Ibarrier(), ())

    def send(self, t, peer: int, tag: int) -> Work:
        s = _Staged(t, writes=False)
        return self._work(self.comm.Isend(self._bytes(s.buf), dest=peer, tag=tag), (), (s,))

    def recv(self, t, peer: int | None, tag: int | None) -> Work:
        """Receives into ``t`` from ``peer`` (None: any rank); the Work's ``source_rank()``
        is the sender's rank in this communicator."""
        s = _Staged(t)
        MPI = self.MPI
        req = self.comm.Irecv(self._bytes(s.buf), source=MPI.ANY_SOURCE if peer is None else peer,
                              tag=MPI.ANY_TAG if tag is None else tag)
        return self._work(req, (s,), status=MPI.Status())

    # -- groups and checks -----------------------------------------------------------------------
    def split(self, member: bool, key: int):
        """A communicator over the members (every rank of this one must call it), or None for
        non-members."""
        comm = self.comm.Split(0 if member else self.MPI.UNDEFINED, key)
        return None if comm == self.MPI.COMM_NULL else MPIBackend(comm)

    def allgather_object(self, obj) -> list:
        """Every rank's small Python ``obj`` (pickled): for argument checks, never for data."""
        return self.comm.allgather(obj)

    def broadcast_object(self, obj, root: int):
        return self.comm.bcast(obj, root=root)

    def gather_object(self, obj, root: int) -> list | None:
        return self.comm.gather(obj, root=root)

    def scatter_object(self, objs: list | None, root: int):
        return self.comm.scatter(objs, root=root)

    def free(self) -> None:
        if self.comm != self.MPI.COMM_WORLD and self.comm != self.MPI.COMM_NULL:
            self.comm.Free()
