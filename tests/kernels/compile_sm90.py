"""Compiles the Triton kernels for a real GPU target (sm_90) on a machine without one.

    python tests/kernels/compile_sm90.py [--full]

Triton's compiler (frontend, MLIR passes, LLVM, and the ptxas it bundles) needs no GPU: only
the launch does. This script installs a stand-in driver that answers "cuda, sm_90" for the
target, makes every launch a compile-only warmup, and drives the backend's launchers the way
the ops do, so every (op, dtype, layout) variant they reach is compiled to a cubin exactly as
it would be on an H100. It checks what the interpreter cannot: that the kernels are valid
compiled Triton (constexpr use, tuple arguments, libdevice calls, dot shapes, types).

The default set compiles one representative variant per kernel; ``--full`` adds every dtype,
the layout variants and every formula of the elementwise op table (elementwise.OPS; one that
no case reaches is a failure). Prints one line per compiled variant and exits 1 if any failed.
Run in a fresh process (it must not see TRITON_INTERPRET=1).

The launches themselves go as far as they can without a GPU: each compiled kernel gets a
stand-in launcher (no module is loaded, nothing runs), so Note [cached launches]
(kernels/triton/launcher.py) is exercised too. Every case runs twice with
``CachedLaunchJIT.check`` on: the second round launches through the cached launchers, each
checked against the kernel Triton's own dispatch picks for the same arguments, and a kernel
that launched in the first round but never through its cache is a failure.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.pop("TRITON_INTERPRET", None)
os.environ["TRITONGRAD_EMULATE_CUDA"] = "1"  # host memory for the (never launched) arrays
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import numpy as np
import triton
from triton.backends.compiler import GPUTarget
from triton.runtime.jit import JITFunction


class _CompileOnlyDriver:
    """What JITFunction.run asks of the active driver, for a compile-only sm_90 'device'."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def is_active(self):
        return True


COMPILED: list = []
# sm_90's most shared memory per block (227 KiB, opted in): a kernel asking for more compiles
# but cannot be loaded on the GPU (Triton's OutOfResources at the first launch)
SM90_SHARED_LIMIT = 232448
OVER_SHARED: list = []  # (kernel name, bytes) of the compiled kernels over it
PASSED_FUNCTIONS: set = set()  # @triton.jit functions passed as arguments (elementwise formulas)
LAUNCHED: dict = {}  # kernel name -> [launches through Triton's path, through the cache]
# kernel name -> the kernel arguments its last launch was given, while RECORD_ARGS (off by
# default: kept arrays would hold references that the engine's gradient stealing counts)
LAST_ARGS: dict = {}
RECORD_ARGS = False
_run, _do_compile = JITFunction.run, JITFunction._do_compile


def _recording_run(self, *args, grid, warmup, **kwargs):
    PASSED_FUNCTIONS.update(a for a in args if isinstance(a, JITFunction))
    return _run(self, *args, grid=grid, warmup=warmup, **kwargs)


def _compile(self, *args, **kwargs):
    """Compiles as Triton does, then gives the kernel a launcher that runs nothing."""
    t0 = time.perf_counter()
    kernel = _do_compile(self, *args, **kwargs)
    if hasattr(kernel, "result"):
        kernel = kernel.result()
    name = getattr(self, "__name__", str(self))
    COMPILED.append((name, time.perf_counter() - t0))
    shared = getattr(kernel.metadata, "shared", 0)
    if shared > SM90_SHARED_LIMIT:
        OVER_SHARED.append((name, shared))
    counts = LAUNCHED.setdefault(name, [0, 0])

    def launch(*launch_args):
        # the cached path passes no launch metadata (None), Triton's own a LazyDict or None
        counts[launch_args[6] is None and launch_args[7] is None] += 1
        if RECORD_ARGS:  # (after grid, stream, function, metadata and hooks)
            LAST_ARGS[name] = launch_args[9:]

    kernel.module, kernel.function, kernel._run = "compile-only", 0, launch
    return kernel


def compile_only() -> None:
    """Installs the stand-in driver and the compile-only launchers (see the docstring)."""
    from tritongrad.kernels.triton.launcher import CachedLaunchJIT

    triton.runtime.driver.set_active(_CompileOnlyDriver())
    JITFunction.run, JITFunction._do_compile = _recording_run, _compile
    CachedLaunchJIT.check = True


def main(full: bool) -> int:
    compile_only()
    from tritongrad.kernels import triton as tk
    from tritongrad.kernels.triton import _launch, elementwise_ops

    # Compile only: the stand-in driver above stays the active one, and nothing runs on the
    # emulated device's host memory (which would need the interpreter), so the binding of
    # tritongrad's driver before the first launch is skipped.
    _launch._driver_ready = True
    from tritongrad.kernels.triton import matmul as _  # noqa: F401 - the module, for _f64_dot
    from tritongrad.runtime import dtype as D
    from tritongrad.runtime import memory
    from tritongrad.runtime.device import device

    dev = device("cuda", 0)
    # nothing runs, so device values read back (nonzero's count) are made up: one element
    memory.to_host = lambda a: np.ones(a.shape, dtype=a.dtype.np)

    def arr(shape, dtype=D.float32):
        host = np.ones(shape, dtype=np.float32 if dtype is D.bfloat16 else dtype.np)
        if dtype is D.bfloat16:
            return memory.to_device(np.full(shape, 0x3F80, np.uint16), dev, dtype=D.bfloat16)
        return memory.to_device(host, dev)

    floats = [D.float32, D.float16, D.bfloat16, D.float64] if full else [D.float32]
    ints = [D.int32, D.int64, D.uint8, D.bool] if full else [D.int32]
    cases = []
    for dt in floats:
        x, y, b = arr((64, 48), dt), arr((64, 48), dt), arr((48,), dt)
        xt = tk.permute(arr((48, 64), dt), (1, 0))
        ops = (["add", "sub", "mul", "div", "pow", "maximum", "minimum", "ge", "lt", "le", "eq",
                "ne"] if full else ["div"])
        for op in ops:
            cases.append((f"{op} {dt}", lambda op=op, x=x, y=y: getattr(tk, op)(x, y)))
        cases += [
            (f"add bcast {dt}", lambda x=x, b=b: tk.add(x, b)),
            (f"mul scalar transposed {dt}", lambda xt=xt: tk.mul(xt, 2.5)),
            (f"where {dt}", lambda x=x, y=y: tk.where(tk.gt(x, 0.0), x, y)),
            (f"silu {dt}", lambda x=x: tk.activation("silu", x)),
            (f"softplus_backward {dt}",
             lambda x=x, y=y: tk.activation_backward("softplus", y, x, 1.0, 20.0)),
            (f"glu_backward {dt}", lambda x=x, dt=dt: tk.glu_backward(arr((64, 24), dt), x, 1)),
            (f"astype {dt}->bf16", lambda x=x: tk.astype(x, D.bfloat16)),
            (f"full {dt}", lambda dt=dt: tk.full((5,), 0.1, dt)),
            (f"arange {dt}", lambda dt=dt: tk.arange(0.5, 0.25, 9, dt)),
            (f"sum {dt}", lambda x=x: tk.sum(x, (1,), False)),
            (f"sum dim0 {dt}", lambda x=x: tk.sum(x, (0,), False)),
            (f"amax {dt}", lambda x=x: tk.reduce("amax", x, (1,), False)),
            (f"prod {dt}", lambda x=x: tk.reduce("prod", x, (0, 1), False)),
            (f"argmax {dt}", lambda x=x: tk.argreduce("argmax", x, 1, False)),
            (f"cumsum {dt}", lambda x=x: tk.cumsum(x, 1, True)),
            (f"softmax {dt}", lambda x=x: tk.softmax(x, 1, False)),
            (f"log_softmax long {dt}", lambda dt=dt: tk.softmax(arr((4, 9000), dt), 1, True)),
            (f"matmul {dt}", lambda x=x, xt=xt: tk.matmul(x, tk.permute(xt, (1, 0)))),
            (f"addmm bias row {dt}", lambda x=x, xt=xt, dt=dt: tk.addmm(
                arr((64,), dt), x, tk.permute(xt, (1, 0)))),
            (f"bmm {dt}", lambda dt=dt: tk.bmm(arr((2, 16, 32), dt), arr((2, 32, 8), dt))),
            (f"matmul split-K {dt}", lambda dt=dt: _split_k_matmul(tk, arr, dt)),
            (f"gelu {dt}", lambda x=x: tk.gelu(x, "none")),
            (f"gelu_backward tanh {dt}", lambda x=x, y=y: tk.gelu_backward(y, x, "tanh")),
            (f"gelu_backward {dt}", lambda x=x, y=y: tk.gelu_backward(y, x, "none")),
            (f"layer_norm {dt}", lambda x=x, b=b: tk.layer_norm(x, b, b, 1e-5)),
            (f"layer_norm long {dt}",
             lambda dt=dt: tk.layer_norm(arr((2, 9000), dt), None, None, 1e-5)),
            (f"layer_norm_backward {dt}", lambda x=x, y=y, b=b: tk.layer_norm_backward(
                y, x, b, *tk.layer_norm(x, b, b, 1e-5)[1:])),
            (f"attention causal {dt}", lambda dt=dt: _attention(tk, arr, dt, 64, True)),
            (f"attention_backward {dt}", lambda dt=dt: _attention(tk, arr, dt, 64, False, True)),
            (f"cross_entropy {dt}", lambda x=x: tk.cross_entropy(
                x, tk.full((64,), 3, D.int64), -100, 0.1)),
            (f"cross_entropy_backward {dt}", lambda x=x: tk.cross_entropy_backward(
                tk.full((64,), 1.0, x.dtype), x, tk.full((64,), 3, D.int64),
                tk.full((64,), 1.0, D.float64 if x.dtype is D.float64 else D.float32), -100,
                0.0)),
            (f"batch_norm {dt}", lambda dt=dt: _batch_norm(tk, arr, dt, (4, 3, 5, 6))),
            (f"batch_norm channels-last {dt}", lambda dt=dt: _batch_norm(
                tk, arr, dt, (4, 3, 5, 6), (0, 2, 3, 1), affine=False)),
            (f"mean_over_targets {dt}", lambda dt=dt: tk.mean_over_targets(
                arr((64,), dt), tk.full((64,), 3, D.int64), -100)),
            (f"embedding_backward {dt}", lambda x=x: tk.embedding_backward(
                x, tk.full((64,), 2, D.int64), 10, 0)),
            (f"sgd_step {dt}", lambda x=x, y=y: tk.sgd_step(
                x, y, tk.empty(x.shape, x.dtype), 0.1, 0.9, 0.0, 0.01, True, False, False)),
            (f"adam_step {dt}", lambda x=x, y=y: tk.adam_step(
                x, y, tk.empty(x.shape, x.dtype), tk.empty(x.shape, x.dtype),
                tk.empty(x.shape, x.dtype), 3, 1e-3, 0.9, 0.999, 1e-8, 0.01, True, False,
                True)),
            (f"adam_step_capturable {dt}", lambda x=x, y=y: tk.adam_step_capturable(
                x, y, tk.empty(x.shape, x.dtype), tk.empty(x.shape, x.dtype),
                tk.empty(x.shape, x.dtype), tk.full((), 3.0, D.float32), 1e-3, 0.9, 0.999,
                1e-8, 0.01, True, False, True)),
        ]
        if full:
            for op in [op for op in elementwise_ops.UNARY_OPS
                       if op not in elementwise_ops._INT_ONLY]:
                cases.append((f"unary {op} {dt}", lambda op=op, x=x: tk.unary(op, x)))
            for op in ["atan2", "igamma", "igammac", "igamma_dx", "floor_divide",
                       "trunc_divide", "remainder", "fmod", "tanh_backward", "sigmoid_backward",
                       "relu_backward"]:
                cases.append((f"binary {op} {dt}", lambda op=op, x=x, y=y: tk.binary(op, x, y)))
            cases.append((f"gelu tanh {dt}", lambda x=x: tk.gelu(x, "tanh")))
            for op in ["exp", "log", "sqrt", "neg", "relu"]:
                cases.append((f"{op} {dt}", lambda op=op, x=x: getattr(tk, op)(x)))
    for dt in ints:
        i, j = arr((32, 16), dt), arr((16,), dt)
        cases += [
            (f"add {dt}", lambda i=i, j=j: tk.add(i, j)),
            (f"sum {dt}", lambda i=i: tk.sum(i, (0, 1), False)),
            (f"any {dt}", lambda i=i: tk.reduce("any", i, (1,), False)),
            (f"argmin {dt}", lambda i=i: tk.argreduce("argmin", i, 0, True)),
            (f"nonzero {dt}", lambda i=i: tk.nonzero(i)),
        ]
        if dt is not D.bool:
            cases += [(f"floor_divide {dt}", lambda i=i, j=j: tk.binary("floor_divide", i, j)),
                      (f"bitwise_xor {dt}", lambda i=i, j=j: tk.binary("bitwise_xor", i, j)),
                      (f"pow {dt}", lambda i=i, j=j: tk.pow(i, j))]
        if full:
            if dt is not D.bool:
                for op in ["trunc_divide", "remainder", "fmod", "bitwise_and", "bitwise_or"]:
                    cases.append((f"{op} {dt}", lambda op=op, i=i, j=j: tk.binary(op, i, j)))
                cases += [(f"maximum {dt}", lambda i=i, j=j: tk.maximum(i, j)),
                          (f"minimum {dt}", lambda i=i, j=j: tk.minimum(i, j))]
            cases.append((f"bitwise_not {dt}", lambda i=i: tk.unary("bitwise_not", i)))
    c4 = tk.permute(arr((3, 4, 5, 6)), (0, 2, 1, 3))  # non-collapsible 4-D layouts
    cases += [
        ("add 4-d strided", lambda: tk.add(c4, arr((5, 1, 6)))),
        ("sum 4-d dims (0, 2)", lambda: tk.sum(c4, (0, 2), True)),
        ("argmax 4-d", lambda: tk.argreduce("argmax", c4, 1, False)),
        ("cumsum 4-d", lambda: tk.cumsum(c4, 2)),
        ("softmax 4-d", lambda: tk.softmax(c4, 0)),
        ("nonzero 4-d", lambda: tk.nonzero(c4)),
        ("gather 4-d", lambda: tk.gather(c4, 1, tk.full((2, 3, 2, 2), 1, D.int64))),
    ]
    w = arr((10, 8))
    idx = tk.full((3, 4), 2, D.int64)
    cases += [
        ("index", lambda: tk.index(w, (idx, None))),
        ("index two arrays", lambda: tk.index(w, (idx, tk.full((4,), 1, D.int64)))),
        ("index_put_ accumulate", lambda: tk.index_put_(w, (idx,), arr((3, 4, 8)), True)),
        ("index_put_ f16 accumulate",
         lambda: tk.index_put_(arr((10, 8), D.float16), (idx,), arr((3, 4, 8), D.float16),
                               True)),
        ("gather", lambda: tk.gather(w, 0, tk.full((3, 8), 1, D.int64))),
        ("scatter_ scalar", lambda: tk.scatter_(w, 1, tk.full((3, 4), 1, D.int64), 2.0, False)),
        ("embedding", lambda: tk.embedding(w, idx)),
        ("index_guard recorded, wrapped, ignore_index",
         lambda: tk.index_guard(idx, 10, -10, -100, tk.full((2,), 0, D.int64))),
        ("index_guard clamped only", lambda: tk.index_guard(idx, 10, 0, None, None)),
        ("cat two", lambda: tk.cat([arr((4, 3)), arr((4, 5))], 1)),
        ("cat three bf16", lambda: tk.cat([arr((4, 3), D.bfloat16)] * 3, 1)),
        ("cat four, transposed", lambda: tk.cat([tk.permute(arr((3, 4)), (1, 0))] * 4, 0)),
        ("cat bool", lambda: tk.cat([tk.gt(arr((2, 3)), 0.0)] * 2, 1)),
        ("matmul float64 fallback", lambda: _f64_fallback(tk, arr)),
        ("attention head 24 causal backward",
         lambda: _attention(tk, arr, D.float16, 24, True, True)),
        ("attention head 128 backward", lambda: _attention(tk, arr, D.bfloat16, 128, False, True)),
        ("attention float64 fallback", lambda: _f64_fallback(tk, arr, _attention)),
        ("matmul float32 tf32", lambda: _tf32_matmul(tk, arr)),
        ("matmul TMA float16", lambda: _tma_matmul(arr, D.float16, (64, 64, 64, 4, 3),
                                                   (False, True))),
        ("matmul TMA float32", lambda: _tma_matmul(arr, D.float32, (64, 64, 32, 4, 3),
                                                   precision="ieee")),
    ]
    if full:  # every config autotuning may pick (Notes [matmul candidates], [attention
        # candidates])
        cases += _matmul_candidates(arr) + _attention_candidates(tk, arr)
    for dt in (floats + ints if full else [D.float32, D.int64]):  # sorting, scatter_reduce_
        cases += [(f"sort {dt}", lambda dt=dt: tk.sort(arr((4, 100), dt), 1, False)),
                  (f"sort descending strided {dt}",
                   lambda dt=dt: tk.sort(tk.permute(arr((100, 4), dt), (1, 0)), 1, True))]
        reduces = ["sum", "prod", "mean", "amax", "amin"] if full else ["mean", "amax"]
        if dt is not D.bool:
            cases += [(f"scatter_reduce_ {r} {dt}", lambda r=r, dt=dt: tk.scatter_reduce_(
                arr((10, 8), dt), 0, tk.full((3, 8), 2, D.int64), arr((3, 8), dt), r,
                r != "sum")) for r in reduces]
    epoch = tk.full((1,), 1, D.int64)  # a graph-captured draw's epoch (and its bump kernel)
    for dt in floats:  # random numbers (kernels/triton/random.py)
        cases += [(f"rand {dt}", lambda dt=dt: tk.rand((1000,), dt, dev, (7, 3, None))),
                  (f"randn {dt}", lambda dt=dt: tk.randn((1000,), dt, dev, (2**63 + 5, 3, None))),
                  (f"rand captured {dt}", lambda dt=dt: tk.rand((9,), dt, dev, (7, 3, epoch))),
                  (f"dropout_mask {dt}",
                   lambda dt=dt: tk.dropout_mask((64, 48), 0.25, dt, dev, (7, 2**40, None)))]
    for dt in (ints if full else [D.int64]):
        cases.append((f"randint {dt}", lambda dt=dt: tk.randint(0, 2, (1000,), dt, dev,
                                                                (7, 3, None))))
    cases.append(("randint float32", lambda: tk.randint(-5, 5, (100,), D.float32, dev,
                                                        (1, 0, None))))
    from tritongrad.kernels.triton import foreach  # multi-tensor norm and scaling, clipping
    for dt in floats:
        grads = [arr((64, 48), dt), arr((7,), dt), arr((5000,), dt)]
        cases += [(f"foreach norm {p} mul_ {dt}", lambda g=grads, p=p: foreach.mul_(
            g, foreach.norm(g, p, 1.0)[1])) for p in (2.0, float("inf"), 1.5)]
        cases.append((f"foreach adam_step {dt}", lambda g=grads: foreach.adam_step(
            g, g, g, g, 3, 1e-3, 0.9, 0.999, 1e-8, 0.01, False, True)))
        cases.append((f"foreach sgd_step {dt}", lambda g=grads: foreach.sgd_step(
            g, g, g, 0.1, 0.9, 0.1, 0.01, True, False, False)))
    cases += [(f"foreach sgd_step {what}", lambda g=grads, m=m, first=first: foreach.sgd_step(
        g, g, g if m else None, 0.1, m, 0.0, 0.0, False, True, first))
        for what, m, first in (("first step", 0.9, True), ("no momentum", 0.0, False))]
    cases.append(("foreach norm mixed dtypes", lambda: foreach.mul_(
        [arr((9,), D.float16), arr((9,), D.bfloat16)],
        foreach.norm([arr((9,), D.float16), arr((9,), D.bfloat16), arr((9,))], 2.0)[0])))
    for dt in floats:  # convolution (kernels/triton/conv.py): groups, stride, dilation, padding
        xc, wc, gc = arr((2, 4, 9, 8), dt), arr((6, 2, 3, 3), dt), arr((2, 6, 4, 6), dt)
        conv_args = ((2, 1), ((1, 0), (1, 1)), (1, 2), 2)
        cases += [(f"conv2d {dt}", lambda dt=dt, xc=xc, wc=wc, a=conv_args: tk.conv2d(
                       xc, wc, arr((6,), dt), *a)),
                  (f"conv2d_backward {dt}", lambda xc=xc, wc=wc, gc=gc, a=conv_args: (
                      tk.conv2d_backward(gc, xc, wc, *a, (True, True, True)))),
                  # a transposed convolution's forward (dx alone) and weight gradient
                  (f"conv_transpose2d {dt}", lambda xc=xc, wc=wc, gc=gc, a=conv_args: (
                      tk.conv2d_backward(gc, xc, wc, *a, (True, False, False)),
                      tk.conv2d_backward(gc, xc, wc, *a, (False, True, False))))]
    for dt in floats:  # recurrent cells (kernels/triton/recurrent.py): forward and backward
        x4, x3, s = arr((6, 160), dt), arr((6, 120), dt), arr((6, 40), dt)
        cases += [(f"lstm_cell {dt}", lambda x4=x4, s=s, dt=dt: tk.lstm_cell_backward(
                       s, None, tk.lstm_cell(x4, x4, arr((160,), dt), s)[2], s)),
                  (f"gru_cell {dt}", lambda x3=x3, s=s: tk.gru_cell_backward(
                       s, tk.gru_cell(x3, x3, None, s)[1], s))]
    cases += _complex_cases(tk, arr, full)
    failures = 0
    for name, fn in cases:
        n0, over = len(COMPILED), len(OVER_SHARED)
        try:
            fn()
            fn()  # again: through the cached launchers, checked against Triton's dispatch
        except Exception as e:  # noqa: BLE001 - report every failing variant
            failures += 1
            print(f"FAIL {name}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
            continue
        if len(OVER_SHARED) > over:
            failures += 1
            print(f"FAIL {name}: more shared memory than sm_90 has ({SM90_SHARED_LIMIT} "
                  f"bytes): {OVER_SHARED[over:]}")
            continue
        kernels = ", ".join(f"{k} {t:.1f}s" for k, t in COMPILED[n0:]) or "(cached)"
        print(f"ok   {name}: {kernels}")
    uncached = sorted(k for k, counts in LAUNCHED.items() if not counts[1])
    if uncached:
        failures += 1
        print(f"FAIL kernels never launched through their cached launcher: {', '.join(uncached)}")
    if full:  # every formula of the elementwise op table, compiled at least once
        from tritongrad.kernels.triton.elementwise import OPS

        missing = [name for name, fn in OPS.items() if fn not in PASSED_FUNCTIONS]
        if missing:
            failures += 1
            print(f"FAIL elementwise formulas no case compiled: {', '.join(missing)}")
        from tritongrad.kernels.triton.complex import _FORMULAS

        missing = [name for name, fn in _FORMULAS.items() if fn not in PASSED_FUNCTIONS]
        if missing:
            failures += 1
            print(f"FAIL complex formulas no case compiled: {', '.join(missing)}")
    slow, cached = (sum(c[i] for c in LAUNCHED.values()) for i in (0, 1))
    print(f"{len(COMPILED)} launches compiled for sm_90; {slow} launches through Triton's "
          f"dispatch, {cached} through cached launchers; {failures} failures")
    return 1 if failures else 0


def _complex_cases(tk, arr, full):
    """Complex arrays (kernels/triton/complex.py): the lanes through the real kernels (copies,
    casts, where, sum, the four products of matmul) and the complex kernel's formulas; --full
    compiles every formula for both complex dtypes."""
    from tritongrad.kernels.triton import complex as C
    from tritongrad.runtime import dtype as D

    cases = []
    for dt in ([D.complex64, D.complex128] if full else [D.complex64]):
        z, w = arr((64, 48), dt), arr((48,), dt)
        zt = tk.permute(arr((48, 64), dt), (1, 0))
        cases += [
            (f"full {dt}", lambda dt=dt: tk.full((5,), 1 - 2j, dt)),
            (f"astype float32->{dt}", lambda dt=dt: tk.astype(arr((8,)), dt)),
            (f"astype {dt}->float32", lambda z=z: tk.astype(z, D.float32)),
            (f"contiguous {dt}", lambda zt=zt: tk.contiguous(zt)),
            (f"mul bcast {dt}", lambda z=z, w=w: tk.mul(z, w)),
            (f"div scalar transposed {dt}", lambda zt=zt: tk.div(zt, 2 - 1j)),
            (f"pow int scalar {dt}", lambda z=z: tk.pow(z, 3)),
            (f"mul real operand {dt}", lambda z=z: tk.mul(z, arr((48,)))),
            (f"eq {dt}", lambda z=z, w=w: tk.eq(z, w)),
            (f"exp {dt}", lambda z=z: tk.exp(z)),
            (f"abs {dt}", lambda z=z: tk.unary("abs", z)),
            (f"where {dt}", lambda z=z, w=w: tk.where(tk.gt(arr((64, 1)), 0.0), z, w)),
            (f"sum {dt}", lambda z=z: tk.sum(z, (0,), False)),
            (f"matmul {dt}", lambda z=z, zt=zt: tk.matmul(z, tk.permute(zt, (1, 0)))),
            (f"prod {dt}", lambda z=z: tk.reduce("prod", z, (1,), False)),
            (f"cumsum {dt}", lambda zt=zt: tk.cumsum(zt, 1)),
            (f"index {dt}", lambda z=z: tk.index(z, (tk.full((3, 4), 2, D.int64), None))),
            (f"gather {dt}", lambda z=z: tk.gather(z, 1, tk.full((64, 4), 1, D.int64))),
            (f"index_put_ accumulate {dt}", lambda z=z, w=w: tk.index_put_(
                z, (tk.full((3,), 1, D.int64),), w, True)),
        ]
        if full:
            for op in C.BINARY:
                cases.append((f"complex {op} {dt}",
                              lambda op=op, z=z, w=w: C.binary(op, z, w)))
            for op in C.UNARY:
                cases.append((f"complex {op} {dt}", lambda op=op, z=z: C.unary(op, z)))
    return cases


def _matmul_candidates(arr):
    """One case per (dtype, precision, candidate config): the plan's launch of that config on
    a 256 x 256 x 256 product (row-major A, transposed B)."""
    import importlib

    from tritongrad.runtime import dtype as D

    mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed
    cases = []
    for family, dt, precision in (("half", D.float16, "tf32"), ("half", D.bfloat16, "tf32"),
                                  ("f32", D.float32, "ieee"), ("tf32", D.float32, "tf32"),
                                  ("f64", D.float64, "ieee")):
        for config in mm.CANDIDATES[family]:
            def case(dt=dt, precision=precision, config=config):
                a, bt = arr((256, 256), dt), arr((256, 256), dt)
                b = bt.as_strided((256, 256), bt.strides[::-1], bt.offset)
                key = (1, 256, 256, 256, (0, *a.strides), (0, *b.strides), dt, True,
                       precision, None)
                mm._launcher(key, config, 1, 256)(a, b, arr((256, 256), dt), None, precision)
            cases.append((f"matmul candidate {dt} {precision} {config}", case))
    for family, dt, precision in (("half", D.float16, "tf32"), ("half", D.bfloat16, "tf32"),
                                  ("f32", D.float32, "ieee"), ("tf32", D.float32, "tf32")):
        for config in mm.TMA_CANDIDATES[family]:
            cases.append((f"matmul TMA candidate {dt} {precision} {config}",
                          lambda dt=dt, config=config, precision=precision: _tma_matmul(
                              arr, dt, config, precision=precision)))
    return cases


def _tma_matmul(arr, dt, config, a_layouts=(False,), precision="tf32"):
    """The TMA kernel's plan launch (Note [TMA matmul]) with ``config`` on a 256^3 product in
    ``precision``, A by rows (and by columns where ``a_layouts`` says), both layouts of B,
    with and without the bias row."""
    import importlib

    mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed
    from tritongrad.runtime.device import device

    x, y, bias = arr((256, 256), dt), arr((256, 256), dt), arr((256,), dt)
    by_cols = [m.as_strided((256, 256), m.strides[::-1], m.offset) for m in (x, y)]
    for a in [by_cols[0] if cols else x for cols in a_layouts]:
        for b in (y, by_cols[1]):
            key = (1, 256, 256, 256, (0, *a.strides), (0, *b.strides), dt, True, precision, 1)
            launch = mm._launcher(key, (*config, mm.TMA), 1, 256, device("cuda", 0))
            for row in (None, bias):
                launch(a, b, arr((256, 256), dt), row, precision)


def _attention_candidates(tk, arr):
    """One case per (dtype family, attention candidate config): the forward and backward
    kernels with that config, causal, at the largest head size the family is tuned for
    (``attention.MAX_TUNED_HEAD``: the largest tiles)."""
    import importlib

    from tritongrad.kernels.triton import _launch
    from tritongrad.runtime import dtype as D

    ta = importlib.import_module("tritongrad.kernels.triton.attention")
    cases = []
    for family, dt in (("half", D.bfloat16), ("f32", D.float32), ("f64", D.float64)):
        for config in ta.CANDIDATES[family]:
            def case(family=family, dt=dt, config=config):
                with _launch.knobs(ta, CONFIGS={**ta.CONFIGS, family: config}):
                    _attention(tk, arr, dt, ta.MAX_TUNED_HEAD[family], True, True)
            cases.append((f"attention candidate {dt} {config}", case))
    return cases


def _tf32_matmul(tk, arr):
    from tritongrad.runtime import dtype as D

    saved = D.get_float32_matmul_precision()
    D.set_float32_matmul_precision("high")
    try:
        tk.matmul(arr((32, 16), D.float32), arr((16, 8), D.float32))
    finally:
        D.set_float32_matmul_precision(saved)


def _f64_fallback(tk, arr, attention=None):
    import importlib

    from tritongrad.runtime import dtype as D

    mm = importlib.import_module("tritongrad.kernels.triton.matmul")
    saved = list(mm._f64_dot)
    mm._f64_dot[:] = [False]
    try:
        if attention is None:
            tk.matmul(arr((32, 16), D.float64), arr((16, 8), D.float64))
        else:
            attention(tk, arr, D.float64, 32, True, True)
    finally:
        mm._f64_dot[:] = saved


def _split_k_matmul(tk, arr, dt):
    """One tile and a long K, with split-K switched on (off by default: Note [split-K])."""
    import importlib

    mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed
    plans = importlib.import_module("tritongrad.kernels.triton._launch")
    with plans.knobs(mm, TARGET_PROGRAMS=132):
        return tk.matmul(arr((16, 1024), dt), arr((1024, 64), dt))


def _batch_norm(tk, arr, dt, shape, order=None, affine=True):
    """The fused batch norm forward and backward (Note [fused batch norm]) on ``shape``, laid
    out with its dims in ``order`` (channels-last: (0, 2, 3, 1)), with a float32 weight and
    bias for half inputs, as mixed precision has them, or none."""
    from tritongrad.kernels.triton import normalization
    from tritongrad.runtime import dtype as D

    def laid(a):
        if order is None:
            return a
        inverse = [order.index(d) for d in range(len(order))]
        return tk.contiguous(a.permute(order)).permute(inverse)

    x, g = laid(arr(shape, dt)), laid(arr(shape, dt))
    assert normalization._fusable(x, g) is not None
    wdt = D.float32 if dt in (D.float16, D.bfloat16) else dt
    w = arr((shape[1],), wdt) if affine else None
    y, mean, var = tk.batch_norm(x, w, w, 1e-5)
    tk.batch_norm_backward(g, x, w, mean, var, 1e-5)


def _attention(tk, arr, dt, head, causal, backward=False):
    """The fused attention forward (and its backward: the delta, dk/dv and dq kernels) on
    (B, H, T, D) inputs whose sequences end in partial tiles."""
    q, k, v = arr((2, 3, 40, head), dt), arr((2, 3, 33, head), dt), arr((2, 3, 33, head), dt)
    out, lse = tk.attention(q, k, v, head ** -0.5, causal)
    if backward:
        tk.attention_backward(arr((2, 3, 40, head), dt), q, k, v, out, lse, head ** -0.5,
                              causal)


if __name__ == "__main__":
    sys.exit(main("--full" in sys.argv))
