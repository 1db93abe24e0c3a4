"""Host cost of one CUDA op: microseconds from the Python call to the kernel being queued.

Every tritongrad row runs the op with autograd recording (the inputs require grad) unless it
says ``no_grad``, on 16x16 float32 tensors, so the kernels are tiny and the host path is what
is timed. Ops: ``x * w`` (binary elementwise), ``x.tanh()`` (unary), ``x.sum()``
(reduction) and ``x @ w`` (matmul).

On a GPU the rows are tritongrad, tritongrad without recording, the same op replayed from a
CUDA graph (a capture of 20 of them, per op), a raw Triton launch of a one-line add kernel over
preallocated arrays (the floor of Triton's launch path), and torch eager when installed. Times
are host times per call over a few hundred calls with one synchronize at the end of each
round, so a row is the host's cost whenever the GPU keeps up (a 16x16 kernel runs in a few
microseconds).

Without a GPU (the emulated device, ``TRITONGRAD_EMULATE_CUDA=1``) kernels run in Triton's
interpreter, milliseconds each, which would drown the host path. The launch is then stubbed at
Triton's entry (``kernel[grid](...)`` returns at once), so the tritongrad rows time the whole
plumbing up to Triton's launcher (dispatch, autograd recording, launch plans, the caching
allocator), next to the stubbed raw launch, one malloc+free of the caching allocator and the
NumPy op on host arrays; a second table times the interpreter running the op for real.

``--compiled`` (no GPU needed; run it in a process without ``TRITON_INTERPRET``) times the
compiled path instead, up to the driver's launch call: the kernels are compiled for sm_90 by
Triton as on an H100 and given launchers that run nothing (tests/kernels/compile_sm90.py), and
the current device and stream are answered as tritongrad's Triton driver answers them on a GPU
(runtime/triton_driver.py, over the emulated device's thread-local state). Each compiled kernel
gets Triton's own launcher object (``CudaLauncher``, its Python ``__call__`` included: about
0.9 us) over a C ``launch`` that runs nothing, so the rows are the host cost of an op less the C
launch and cuLaunchKernel (2-3 us on a GPU): tritongrad
with its cached launches (Notes [cached launches] and [plan launches],
kernels/triton/launcher.py), the same through Triton's own dispatch (``JITFunction.run``) on
every launch, the op through the kernel contract alone (``kernels.triton`` on the tensors'
arrays: what is left once Tensors and autograd are taken away), and the raw add kernel both
ways. These rows are this thread's CPU time (no device work is left in them), the 25th
percentile of interleaved rounds, so other processes on a shared machine move them little.

    python perf/bench_launch.py [--ops mul,tanh,sum,matmul] [--inner 300] [--compiled]
"""

from __future__ import annotations

import argparse
import contextlib
import time

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch

SHAPE = (16, 16)
GRAPH_OPS = 20  # ops per captured graph in the replay row

OPS = {
    "mul": (lambda x, w: x * w, lambda x, w: x * w),
    "tanh": (lambda x, w: x.tanh(), lambda x, w: np.tanh(x)),
    "sum": (lambda x, w: x.sum(), lambda x, w: x.sum()),
    "matmul": (lambda x, w: x @ w, lambda x, w: x @ w),
}
# the same ops through the kernel contract on the tensors' arrays (no Tensor, no autograd):
# what of a row is the kernels layer's (``--compiled``)
CONTRACT = {
    "mul": lambda k, a, b: k.mul(a, b),
    "tanh": lambda k, a, b: k.unary("tanh", a),
    "sum": lambda k, a, b: k.sum(a, (0, 1), False),
    "matmul": lambda k, a, b: k.matmul(a, b),
}


def _raw_kernel():
    """A one-line Triton add kernel: the raw launch every row is compared with."""
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        p = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = p < n
        tl.store(out_ptr + p, tl.load(x_ptr + p, mask=mask) + tl.load(y_ptr + p, mask=mask),
                 mask=mask)

    return add_kernel


@contextlib.contextmanager
def stubbed_launches():
    """Makes every interpreted ``kernel[grid](...)`` return at once (the emulated device's
    kernels are the only thing left out of the timing)."""
    from triton.runtime import interpreter

    run = interpreter.InterpretedFunction.run
    interpreter.InterpretedFunction.run = lambda self, *args, grid, warmup, **kw: None
    try:
        yield
    finally:
        interpreter.InterpretedFunction.run = run


@contextlib.contextmanager
def tritons_dispatch():
    """Sends every launch of tritongrad's kernels through ``JITFunction.run`` (no cached
    launches, neither the kernels' own nor the plans': ``CachedLaunchJIT.enabled`` off)."""
    from tritongrad.kernels.triton.launcher import CachedLaunchJIT

    CachedLaunchJIT.enabled = False
    try:
        yield
    finally:
        CachedLaunchJIT.enabled = True


def _with_cuda_launcher(compile_only):
    """``compile_only`` (compile_sm90's), whose kernels then launch through Triton's
    ``CudaLauncher``, its Python ``__call__`` as on a GPU, over the harness's launcher (which
    counts the launch and runs nothing) in place of the C ``launch``."""
    import triton
    from triton.backends.nvidia.driver import CudaLauncher

    release = ".".join(triton.__version__.split(".")[:2])

    def compile_(self, *args, **kwargs):
        kernel = compile_only(self, *args, **kwargs)
        stub, md = kernel._run, kernel.metadata
        launcher = object.__new__(CudaLauncher)
        for name in ("global_scratch_size", "global_scratch_align", "profile_scratch_size",
                     "profile_scratch_align", "launch_cooperative_grid", "launch_pdl"):
            setattr(launcher, name, getattr(md, name))
        launcher.num_ctas, launcher.gsan_enabled = getattr(md, "num_ctas", 1), False
        launcher.arg_annotations, launcher.kernel_signature = (), b""
        if release == "3.9":  # the C launch's arguments, back in __call__'s order for the stub
            def launch(gx, gy, gz, stream, fn, coop, pdl, km, lm, enter, leave, gs, ps, ann, sig,
                       args):
                stub(gx, gy, gz, stream, fn, km, lm, enter, leave, *args)
        else:  # 3.6's order
            def launch(gx, gy, gz, stream, fn, coop, pdl, gs, ps, *args):
                stub(gx, gy, gz, stream, fn, *args)
        launcher.launch = launch
        kernel._run = launcher
        return kernel

    return compile_


def compiled_stand_ins(script: str):
    """Installs the ``--compiled`` setup (see the module docstring) in this process: Triton
    compiles for sm_90 and every compiled kernel gets a launcher that runs nothing; returns
    tests/kernels/compile_sm90.py, whose ``LAUNCHED`` counts the launches per kernel.
    ``script`` names the caller in the refusal under ``TRITON_INTERPRET``."""
    import os
    import sys

    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise SystemExit(f"{script}: run without TRITON_INTERPRET")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "kernels"))
    import compile_sm90  # the stand-in sm_90 driver and launchers (a test double)

    compile_sm90.compile_only()
    import triton
    from triton.runtime.jit import JITFunction
    from tritongrad.runtime import triton_driver

    # device and stream as a GPU run asks them, at every launch (the stand-in's are constants)
    ours = triton_driver.make_driver_class()(utils=object())
    active = triton.runtime.driver.active
    active.get_current_device = ours.get_current_device
    active.get_current_stream = ours.get_current_stream

    JITFunction.run = compile_sm90._run  # Triton's own, without the harness's bookkeeping
    JITFunction._do_compile = _with_cuda_launcher(compile_sm90._compile)
    from tritongrad.kernels.triton import _launch
    from tritongrad.kernels.triton.launcher import CachedLaunchJIT

    CachedLaunchJIT.check = False
    _launch._driver_ready = True
    return compile_sm90


def cpu_timeit(cases: list, inner: int, repeat: int) -> list:
    """``[(name, seconds per call)]`` for ``cases`` of ``(name, fn)``: this thread's CPU time
    of ``inner`` calls, rounds interleaved across the cases (each turn after one untimed call),
    the 25th percentile of ``repeat`` rounds."""
    for _, fn in cases:
        for _ in range(5):
            fn()
    times: dict = {name: [] for name, _ in cases}
    clock = time.thread_time
    for _ in range(repeat):
        for name, fn in cases:
            fn()
            t0 = clock()
            for _ in range(inner):
                fn()
            times[name].append((clock() - t0) / inner)
    return [(name, sorted(t)[len(t) // 4]) for name, t in times.items()]


def compiled_host_path(args) -> None:
    """The ``--compiled`` tables (see the module docstring)."""
    compiled_stand_ins("bench_launch --compiled")
    from tritongrad.kernels import triton as kernels
    from tritongrad.kernels.triton.launcher import CachedLaunchJIT
    from tritongrad.runtime import memory

    import tritongrad as tg

    rng = np.random.default_rng(0)
    x0, w0 = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2))
    dev = tg.device("cuda", 0)
    x = tg.tensor(x0, device=dev, requires_grad=True)
    w = tg.tensor(w0, device=dev, requires_grad=True)
    a, b = memory.to_device(x0, dev), memory.to_device(w0, dev)
    out = memory.empty(SHAPE, a.dtype, dev)
    add_kernel = CachedLaunchJIT(_raw_kernel().fn)
    n = a.numel

    def raw_launch():
        add_kernel[(1,)](a, b, out, n, BLOCK=256)

    for op in args.ops.split(","):
        fn = OPS[op][0]

        def tg_op(fn=fn):
            fn(x, w)

        def tg_no_grad(fn=fn):
            with tg.no_grad():
                fn(x, w)

        def contract(call=CONTRACT[op]):
            call(kernels, x._data, w._data)

        def through_triton(f):
            def timed():
                with tritons_dispatch():
                    for _ in range(args.inner):
                        f()
            return timed

        for f in (tg_op, contract, raw_launch):
            f()
            f()  # compiled, then cached
        rows = cpu_timeit([("tritongrad", tg_op), ("tritongrad no_grad", tg_no_grad),
                           ("kernel contract alone", contract),
                           ("raw Triton launch, cached", raw_launch)], args.inner, args.repeat)
        slow = cpu_timeit([("tritongrad, Triton's dispatch", through_triton(tg_op)),
                           ("raw Triton launch, Triton's dispatch", through_triton(raw_launch))],
                          1, args.repeat)
        rows[1:1] = [(name, t / args.inner) for name, t in slow[:1]]
        rows += [(name, t / args.inner) for name, t in slow[1:]]
        report(f"launch path: {op} on {SHAPE[0]}x{SHAPE[1]} float32, host CPU time per call "
               f"(compiled for sm_90, up to the driver's launch call; p25 of interleaved rounds)",
               rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--inner", type=int, default=300, help="calls per timed round")
    ap.add_argument("--repeat", type=int, default=15, help="timed rounds per row")
    ap.add_argument("--compiled", action="store_true",
                    help="time the compiled path up to the launch call (no GPU needed)")
    args = ap.parse_args()
    if args.compiled:
        compiled_host_path(args)
        return
    from tritongrad.runtime import memory

    import tritongrad as tg

    if not tg.cuda.is_available():
        raise SystemExit("bench_launch: no CUDA device; on a machine without a GPU run it with "
                         "TRITONGRAD_EMULATE_CUDA=1 (the emulated device)")
    emulated = tg.cuda.is_emulated()
    torch = None if emulated else try_torch()
    rng = np.random.default_rng(0)
    x0, w0 = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2))
    x = tg.tensor(x0, device="cuda", requires_grad=True)
    w = tg.tensor(w0, device="cuda", requires_grad=True)
    a = memory.to_device(x0, tg.device("cuda", 0))
    b = memory.to_device(w0, tg.device("cuda", 0))
    out = memory.empty(SHAPE, a.dtype, tg.device("cuda", 0))
    import tritongrad.kernels.triton
    add_kernel = _raw_kernel()        # device before this script imports Triton)
    n = a.numel
    sync = tg.cuda.synchronize

    def raw_launch():
        add_kernel[(1,)](a, b, out, n, BLOCK=256)

    def malloc_free():
        memory.empty(SHAPE, a.dtype, tg.device("cuda", 0))

    where = "emulated device, kernels stubbed at Triton's entry" if emulated else \
        tg.cuda.get_device_name()
    for op in args.ops.split(","):
        fn, np_fn = OPS[op]

        def tg_op(fn=fn):
            fn(x, w)

        def tg_no_grad(fn=fn):
            with tg.no_grad():
                fn(x, w)

        fn(x, w)  # compile / plan before anything is timed
        raw_launch()
        cases = [("tritongrad", tg_op, None), ("tritongrad no_grad", tg_no_grad, None)]
        if emulated:
            cases += [("raw Triton launch (stub)", raw_launch, None),
                      ("allocator malloc+free", malloc_free, None),
                      ("NumPy op on the host", lambda f=np_fn: f(x0, w0), None)]
            with stubbed_launches():
                rows = timeit(cases, inner=args.inner, repeat=args.repeat, interleave=True)
        else:
            g = tg.cuda.CUDAGraph()
            with tg.cuda.graph(g):
                for _ in range(GRAPH_OPS):
                    fn(x, w)

            def replay_per_op(g=g):
                g.replay()

            cases = [(name, f, sync) for name, f, _ in cases]
            cases += [("raw Triton launch", raw_launch, sync)]
            rows = timeit(cases, inner=args.inner, repeat=args.repeat, interleave=True)
            (_, t), = timeit([("graph", replay_per_op, sync)], inner=args.inner,
                             repeat=args.repeat)
            rows.insert(2, (f"CUDA graph replay (/{GRAPH_OPS})", t / GRAPH_OPS))
            if torch is not None:
                tx = torch.tensor(x0, device="cuda", requires_grad=True)
                tw = torch.tensor(w0, device="cuda", requires_grad=True)
                rows += timeit([("torch eager", lambda f=fn, a=tx, b=tw: f(a, b),
                                 torch.cuda.synchronize)],
                               inner=args.inner, repeat=args.repeat)
        report(f"launch path: {op} on {SHAPE[0]}x{SHAPE[1]} float32, host time per call "
               f"({where})", rows)

    if emulated:  # what the stub left out: the interpreter running each op's kernels
        rows = []
        for op in args.ops.split(","):
            fn = OPS[op][0]
            rows += timeit([(f"{op}, interpreted", lambda fn=fn: fn(x, w), None)],
                           inner=3, repeat=5)
        report("the emulated device's kernels: Triton's interpreter per op (not a GPU time)",
               rows)


if __name__ == "__main__":
    main()
