"""Launch plumbing shared by the Triton kernel families: shape collapsing, block sizes and
heuristics, plan caches, dtype tables, the one-time driver binding, the numeric constants the
kernels' formulas share, and ``block_range``, the prologue of the one-dimensional kernels.

Note [lean launches]: a small op costs more host time in Python than GPU time (Triton's Python
launch path takes some 10-20 us, the kernel a few us), so the launchers do as little per call
as they can. Everything that depends only on shapes, strides and dtypes is computed once and
kept in a plain dict keyed by those tuples (a "plan"); a call then costs a few dict lookups,
one allocation and the launch. The plans of the kernels a training step runs (elementwise,
reductions, matmul, rows, nn, attention, gather/scatter, optimizers) hold the launch itself,
a ``launcher.Launch`` with the grid, options and layout arguments bound (Note [plan launches]
in launcher.py), and whatever else is the same on every call (an optimizer step's scalars, a
view's strides) is kept too. Plans never hold pointers, so a plan is reused by every array
with the same layout.
"""

from __future__ import annotations

import contextlib
import math

import triton
import triton.language as tl

from ...runtime import dtype as D
from ...runtime.array import DeviceArray, contiguous_strides

__all__ = [
    "EXACT",
    "GELU_TANH_A",
    "HALF_INV_SQRT_PI",
    "INTERPRET",
    "INV_SQRT_2PI",
    "MAX_BLOCK_N",
    "PLANS",
    "ROW_TILE",
    "SINGLE_MAX",
    "SQRT1_2",
    "SQRT_2_OVER_PI",
    "TILE",
    "TL",
    "ComplexOperand",
    "DeviceArray",
    "block_range",
    "broadcast_shape",
    "broadcast_strides",
    "cdiv",
    "check_supported",
    "clear_plans",
    "collapse",
    "contiguous_strides",
    "ensure_driver",
    "needs_int64",
    "next_pow2",
    "num_warps",
    "unsupported",
]

from .compat import EMULATION_ERROR, INTERPRET, kernel_constant, patch_interpreter


def _launch_on_the_emulated_stream() -> None:
    """Routes interpreted launches through the emulated driver while a CUDA graph captures.

    Note [capturing interpreted launches]: on a GPU the driver records the kernels Triton
    queues on a capturing stream by itself, and nothing here is involved. The interpreter
    runs a kernel on the host at once instead, so while a capture is underway each launch
    is handed to the emulated driver's ``launch`` with its arguments frozen: arrays become
    non-owning views of the same addresses (a recording must not keep the capture's
    temporaries alive; their blocks stay reserved in the graph's pool instead), scalars stay
    as they are. The driver records it when the current stream captures, else runs it. With
    no capture anywhere a launch costs one attribute test more.
    """
    from triton.runtime import interpreter

    launch = interpreter.GridExecutor.__call__
    if getattr(launch, "_tritongrad_capture", False):
        return
    from ...runtime import driver as drv_module
    from ...runtime import streams
    from ...runtime.memory import ForeignStorage

    def frozen(arg, views: dict):
        if type(arg) is DeviceArray:
            s = arg.storage
            view = views.get(s.ptr)  # one view per storage: the interpreter groups by address
            if view is None:
                view = views[s.ptr] = ForeignStorage(s.ptr, s.nbytes, s.device, None, s.stream)
            return DeviceArray(view, arg.offset, arg.shape, arg.strides, arg.dtype)
        if type(arg) is tuple:
            return tuple(frozen(a, views) for a in arg)
        return arg

    def capturable_launch(self, *args, **kwargs):
        drv = drv_module._driver
        if drv is None or not drv.capturing or not drv.emulated:
            return launch(self, *args, **kwargs)
        index = streams.current_device()
        views: dict = {}
        args = tuple(frozen(a, views) for a in args)
        kwargs = {k: frozen(v, views) for k, v in kwargs.items()}
        return drv.launch(index, streams.current_stream_handle(index),
                          lambda: launch(self, *args, **kwargs))

    capturable_launch._tritongrad_capture = True
    interpreter.GridExecutor.__call__ = capturable_launch


if INTERPRET:
    patch_interpreter()
    _launch_on_the_emulated_stream()

# Launch options of the kernels that compare with NumPy elementwise: no multiply-add contraction
# (FMA), so each + and * rounds as NumPy's do (memory-bound kernels lose nothing by it).
EXACT = {"enable_fp_fusion": False}

# Every plan cache registers here so tests (and anyone changing the block sizes below) can
# drop them all at once.
PLANS: list[dict] = []


def plan_cache() -> dict:
    d: dict = {}
    PLANS.append(d)
    return d


def clear_plans() -> None:
    for d in PLANS:
        d.clear()


@contextlib.contextmanager
def knobs(module, **values):
    """Sets a launcher module's planning globals (block sizes, thresholds, matmul's split-K
    ``TARGET_PROGRAMS``) for the ``with`` block, with the plans dropped on entry and exit, so
    that plans made under the values never outlive them."""
    old = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    clear_plans()
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(module, name, value)
        clear_plans()


# -- block sizes -------------------------------------------------------------------------------
# Shared by the kernel families. The launchers read them as ``L.NAME`` when they plan (never a
# copy taken at import), so tests can shrink them to force multi-program grids (the
# ``small_blocks`` fixture); call clear_plans() after changing them.
TILE = 2048          # elements per program of a 2-D tile: strided elementwise, reductions
ROW_TILE = 4096      # elements per program of the row kernels (rowwise.py, nn.py)
MAX_BLOCK_N = 1024   # widest block along a row: the elementwise inner dim (BLOCK_C), a
#                      reduction's reduced dim, the chunks a long row is walked in
SINGLE_MAX = 8192    # rows up to this length are loaded once, kept in registers (softmax,
#                      layer norm)


def num_warps(elements: int) -> int:
    """Warps for a program of ``elements`` block elements: 8 from 4096 on, else 4."""
    return 8 if elements >= 4096 else 4


# The dtype each float dtype accumulates in (sums, products, partial results): float32 for the
# half types and float32, float64 for float64. One table for every kernel family.
ACC_DT = {D.float16: D.float32, D.bfloat16: D.float32, D.float32: D.float32,
          D.float64: D.float64}


# -- numeric constants -------------------------------------------------------------------------
# The numbers the kernels' formulas share, each written once (kernels/numpy/nn.py has its own);
# kernels import them and read them as globals (Note [kernel constants] in compat.py).
SQRT1_2 = kernel_constant(math.sqrt(0.5))                       # 1 / sqrt(2)
INV_SQRT_2PI = kernel_constant(1 / math.sqrt(2 * math.pi))      # the normal density at 0
HALF_INV_SQRT_PI = kernel_constant(0.5 / math.sqrt(math.pi))
SQRT_2_OVER_PI = kernel_constant(math.sqrt(2 / math.pi))        # GELU's tanh form is
GELU_TANH_A = kernel_constant(0.044715)                         # tanh(sqrt(2/pi) (x + A x^3))


# -- the driver binding ------------------------------------------------------------------------
_driver_ready = False


def ensure_driver() -> None:
    """Installs tritongrad's Triton driver (current stream/device answered by the runtime) once.

    ``runtime/triton_driver.py`` is written by the runtime work; until it exists, launches use
    Triton's stock driver. Under the interpreter no driver is involved at all.
    """
    global _driver_ready
    if _driver_ready:
        return
    if EMULATION_ERROR:
        raise RuntimeError(EMULATION_ERROR)
    if not INTERPRET:
        try:
            from ...runtime.triton_driver import ensure_triton_driver
        except ModuleNotFoundError as e:
            if e.name != __package__.rsplit(".", 2)[0] + ".runtime.triton_driver":
                raise
        else:
            ensure_triton_driver()
    _driver_ready = True


# -- shapes ------------------------------------------------------------------------------------
def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def broadcast_shape(op: str, *shapes) -> tuple:
    """NumPy's broadcast of ``shapes``; raises ValueError naming ``op`` when impossible."""
    nd = max(len(s) for s in shapes)
    out = []
    for i in range(nd):
        n = 1
        for s in shapes:
            j = i - nd + len(s)
            if j >= 0:
                m = s[j]
                if m != 1:
                    if n != 1 and m != n:
                        raise ValueError(
                            f"{op}: shapes {' and '.join(str(tuple(x)) for x in shapes)} cannot "
                            f"be broadcast together (dimension {i}: {n} != {m})")
                    n = m
        out.append(n)
    return tuple(out)


def broadcast_strides(shape: tuple, strides: tuple, to: tuple) -> tuple:
    """Strides that view (shape, strides) as ``to``: zero on new and stretched dimensions."""
    lead = len(to) - len(shape)
    out = [0] * lead
    for n, s, m in zip(shape, strides, to[lead:]):
        out.append(s if n == m else 0)
    return tuple(out)


def collapse(shape: tuple, *strides: tuple):
    """Drops size-1 dimensions and merges neighbours that are contiguous for every operand.

    ``collapse((4, 5, 6), (30, 6, 1), (0, 6, 1))`` is ``((4, 30), ((30, 1), (0, 1)))``: the
    last two dims merge (6 * 1 == 6 for both), the first cannot (broadcast in one operand).
    Returns (shape, strides per operand), innermost dimension last; () for a single element.
    """
    dims = [i for i, n in enumerate(shape) if n != 1]
    if not dims:
        return (), tuple(() for _ in strides)
    last = dims[-1]
    out_shape = [shape[last]]
    out_strides = [[s[last]] for s in strides]
    for i in reversed(dims[:-1]):
        n = shape[i]
        inner = out_shape[-1]
        if all(s[i] == o[-1] * inner for s, o in zip(strides, out_strides)):
            out_shape[-1] = inner * n
        else:
            out_shape.append(n)
            for s, o in zip(strides, out_strides):
                o.append(s[i])
    out_shape.reverse()
    for o in out_strides:
        o.reverse()
    return tuple(out_shape), tuple(tuple(o) for o in out_strides)


_INT32_SAFE = 2**31 - 2**20  # offsets computed for masked-off lanes may run a block past the end


def needs_int64(shape: tuple, *strides: tuple) -> bool:
    """True when an element offset (or the element count) of these views may pass int32."""
    numel = 1
    for n in shape:
        numel *= n
    if numel >= _INT32_SAFE:
        return True
    for st in strides:
        span = 0
        for n, s in zip(shape, st):
            span += (n - 1) * abs(s)
        if span >= _INT32_SAFE:
            return True
    return False


# -- dtypes ------------------------------------------------------------------------------------
# Triton element types of the tritongrad dtypes this backend handles.
TL = {
    D.bool: tl.int1, D.uint8: tl.uint8, D.int8: tl.int8, D.int16: tl.int16,
    D.int32: tl.int32, D.int64: tl.int64, D.float16: tl.float16, D.bfloat16: tl.bfloat16,
    D.float32: tl.float32, D.float64: tl.float64,
}
FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)
INTS = (D.uint8, D.int8, D.int16, D.int32, D.int64)


class ComplexOperand(TypeError):
    """The refusal of a real-only kernel family given a complex dtype: a TypeError naming the
    op and dtype, which the contract's entry points that have a complex variant catch to hand
    the call to complex.py (so the real path pays nothing for complex support; Note [complex
    lanes] in complex.py)."""


def unsupported(op: str, dtype, why: str = "") -> TypeError:
    msg = f"{op}: dtype {dtype} is not supported by the Triton backend"
    cls = ComplexOperand if getattr(dtype, "is_complex", False) else TypeError
    return cls(msg + (f" ({why})" if why else ""))


def check_supported(op: str, dtype) -> None:
    if dtype not in TL:
        raise unsupported(op, dtype, "supported: " + ", ".join(d.name for d in TL))


@triton.jit
def block_range(n, BLOCK: tl.constexpr, INT64: tl.constexpr):
    """The BLOCK positions this program covers in a one-dimensional grid, and which of them
    are below ``n``. INT64 computes them in int64 (grids over 2**31 elements and more)."""
    pid = tl.program_id(0)
    if INT64:
        pid = pid.to(tl.int64)
    p = pid * BLOCK + tl.arange(0, BLOCK)
    return p, p < n
