"""Multi-tensor ("foreach") kernels: one launch over a whole list of arrays, for the steps that
touch every parameter or gradient (gradient clipping, the optimizer) and would otherwise launch
per array.

    norm(arrays, p):     sum |x|^2 (p = 2), max |x| (p = inf) or sum |x|^p (0 < p < inf) over
                         every element of every array, then sqrt, itself or ^(1/p)
    clip coefficient:    min(max_norm / (total + 1e-6), 1), a NaN total giving NaN (PyTorch's
                         ``clip_grad_norm_``), computed on the device from the total
    mul_(arrays, c):     every array multiplied in place by a 0-d device array c
    adam_step(...):      optim.py's Adam/AdamW update (its ``_adam_formulas``: the same bits)
                         of every parameter at once; amsgrad is left to optim.py
    adam_step_capturable(...): the same with each parameter's count on the device (a launch
                         adds one to every count, a second updates every parameter)
    sgd_step(...):       optim.py's SGD update (its ``_sgd_update``: the same bits) of every
                         parameter and momentum buffer at once

Note [chunk tables]: a multi-tensor kernel reads two int64 tables from the device. The chunk
map cuts the arrays into chunks of ``CHUNK`` elements, a row per chunk and per program: (the
array's index in the list, the chunk's first element, its element count); it depends on the
arrays' shapes only, so it is made once and kept. The address table holds each array's address
(a row per array; a column per operand where the kernel takes several arrays per position, as
Adam's parameter, gradient and moments). A program reads its chunk's row, then the array's
address, casts it to a pointer (``.to(tl.pointer_type(T), bitcast=True)``; Triton's interpreter
does the same on the emulated device, whose memory is the host's) and walks its chunk ``WIDTH``
elements at a time. One launch then covers every array of a dtype, whatever their number and
sizes. The address table is copied when the addresses change (gradients come back elsewhere
after ``zero_grad``, so about once a step: a few hundred bytes) and kept under them, so the norm
and the scaling of one clipping share it. Both are kept per stream. While a CUDA graph
captures (the gradients of a captured step are new, at new addresses), a new table is copied
from page-locked memory, a copy the graph records and repeats, and the graph keeps the tables
it reads and their sources (``keep_alive`` in runtime/graphs.py). The launchers used to refuse
new tables there, and a captured ``clip_grad_norm_`` then took four launches a gradient (216
nodes for the GPT benchmark).

The norm takes three launches for arrays of one dtype (a partial per chunk, a one-program
finish that folds the partials into the total and the clip coefficient, and the scaling), two
more per further dtype. Accumulation is in float32 for float16, bfloat16 and float32 arrays and
in float64 for float64 ones (arrays of both kinds at once are refused); the total and the
coefficient are rounded to the dtype of the first array after each step, as the elementwise
ops computing them one by one would. The launchers refuse (TypeError, from ``L.unsupported``)
what they do not handle, for the caller to take its per-array path: non-contiguous arrays,
arrays on several devices, other dtypes or norm types, and the interpreter on a real GPU
(whose argument copies would leave the table's addresses pointing at device memory).

``reference_norm`` and ``reference_mul_`` are the NumPy twins, in float64 (Adam's and SGD's
are kernels/numpy/optim.py's ``adam_step`` and ``sgd_step``, per parameter).
"""

from __future__ import annotations

import math
import struct

import numpy as np
import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import driver as _drv
from ...runtime import dtype as D
from ...runtime import graphs as _graphs
from ...runtime import memory as _memory
from ...runtime import pinned as _pinned
from ...runtime import streams as _streams
from . import _launch as L
from .launcher import Launch, jit
from .optim import (_adam_formulas, _device_bias_corrections, _div, _f, _sgd_update, _sqrt,
                    adam_capturable_scalars, adam_scalars, sgd_scalars)

__all__ = ["adam_step", "adam_step_capturable", "mul_", "norm", "reference_mul_",
           "reference_norm", "sgd_step"]

CHUNK = 4096  # elements per program (a row of the chunk table)
WIDTH = 1024  # elements a program loads at a time

_SQUARES, _MAX, _POWER = 0, 1, 2  # what a chunk's partial is (the NORM constexpr)
_CT = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
       D.float64: tl.float64}


@jit
def _chunk(chunks_ptr, arrays_ptr, T: tl.constexpr, COLUMNS: tl.constexpr,
           COLUMN: tl.constexpr):
    """This program's chunk (Note [chunk tables]): a pointer to its first element in operand
    ``COLUMN`` of the address table, and its element count."""
    row = chunks_ptr + 3 * tl.program_id(0)
    array = tl.load(arrays_ptr + tl.load(row) * COLUMNS + COLUMN).to(tl.pointer_type(T),
                                                                       bitcast=True)
    return array + tl.load(row + 1), tl.load(row + 2)


@jit
def _nan_max(acc):
    # max of a vector that is NaN where any lane is (tl.max alone may skip NaNs)
    has_nan = tl.max((acc != acc).to(tl.int32), axis=0) > 0  # noqa: PLR0124 - NaN test
    return tl.where(has_nan, float("nan"), tl.max(acc, axis=0))


@jit(do_not_specialize=["p_b"])
def _norm_partials_kernel(
    chunks_ptr,  # *int64: the chunk map (Note [chunk tables]), a row a program
    arrays_ptr,  # *int64: the address table, one column
    part_ptr,   # *ACC: the partials; this launch writes part_ptr[first + program_id]
    p_b: tl.int64,  # the float64 bits of p (POWER only)
    first,  # the rest: the plan's
    NORM: tl.constexpr, T: tl.constexpr, ACC: tl.constexpr, CHUNK: tl.constexpr,
    WIDTH: tl.constexpr,
):
    ptr, n = _chunk(chunks_ptr, arrays_ptr, T, 1, 0)
    acc = tl.zeros((WIDTH,), ACC)
    for start in range(0, CHUNK, WIDTH):
        offs = start + tl.arange(0, WIDTH)
        x = tl.abs(tl.load(ptr + offs, mask=offs < n, other=0).to(ACC))
        if NORM == 0:
            acc += x * x
        elif NORM == 1:
            acc = tl.maximum(acc, x, propagate_nan=tl.PropagateNan.ALL)
        else:
            acc += libdevice.pow(x, _f(p_b, ACC))
    if NORM == 1:
        r = _nan_max(acc)
    else:
        r = tl.sum(acc, axis=0)
    tl.store(part_ptr + first + tl.program_id(0), r)


@jit(do_not_specialize=["max_norm_b", "inv_p_b"])
def _norm_finish_kernel(
    part_ptr,   # *ACC: the n_parts partials
    total_ptr,  # *OUT: the norm, 0-d
    coef_ptr,   # *OUT: min(max_norm / (total + eps), 1), 0-d (CLIP only, else None)
    max_norm_b: tl.int64, inv_p_b: tl.int64,  # float64 bits: max_norm, 1 / p (POWER)
    eps_b: tl.int64, n_parts,  # the rest: the plan's
    NORM: tl.constexpr, ACC: tl.constexpr, OUT: tl.constexpr, CLIP: tl.constexpr,
    F64: tl.constexpr, WIDTH: tl.constexpr,
):
    acc = tl.zeros((WIDTH,), ACC)
    for start in range(0, n_parts, WIDTH):
        offs = start + tl.arange(0, WIDTH)
        x = tl.load(part_ptr + offs, mask=offs < n_parts, other=0)
        if NORM == 1:
            acc = tl.maximum(acc, x, propagate_nan=tl.PropagateNan.ALL)
        else:
            acc += x
    if NORM == 0:
        total = _sqrt(tl.sum(acc, axis=0), F64)
    elif NORM == 1:
        total = _nan_max(acc)
    else:
        total = libdevice.pow(tl.sum(acc, axis=0), _f(inv_p_b, ACC))
    total = total.to(OUT)
    tl.store(total_ptr, total)
    if CLIP:
        # each step rounded to OUT; where(c > 1, 1, c) keeps a NaN, as PyTorch's clamp (in
        # ACC: Triton 3.6's interpreter cannot make the bfloat16 constant 1)
        denom = (total.to(ACC) + _f(eps_b, ACC)).to(OUT)
        c = _div(_f(max_norm_b, ACC), denom.to(ACC), F64).to(OUT).to(ACC)
        tl.store(coef_ptr, tl.where(c > 1, 1, c).to(OUT))


@jit
def _mul_kernel(
    chunks_ptr,  # *int64: the chunk map (Note [chunk tables]), a row a program
    arrays_ptr,  # *int64: the address table, one column
    coef_ptr,   # *C: the factor, 0-d
    T: tl.constexpr, CT: tl.constexpr, CHUNK: tl.constexpr, WIDTH: tl.constexpr,
):
    # the factor cast to the arrays' dtype, then x * c rounded to it, as the elementwise mul;
    # a factor of exactly 1 changes nothing, so nothing is written (a clip below the bound)
    c = tl.load(coef_ptr).to(T).to(CT)
    if c != 1:
        ptr, n = _chunk(chunks_ptr, arrays_ptr, T, 1, 0)
        for start in range(0, CHUNK, WIDTH):
            offs = start + tl.arange(0, WIDTH)
            mask = offs < n
            x = tl.load(ptr + offs, mask=mask, other=0).to(CT)
            tl.store(ptr + offs, (x * c).to(T), mask=mask)


@jit(do_not_specialize=["lr_b", "momentum_b", "damp_b", "wd_b"])
def _sgd_kernel(
    chunks_ptr,  # *int64: the chunk map (Note [chunk tables]), a row a program
    arrays_ptr,  # *int64: the address table: param, grad (and with MOMENTUM buffer) columns
    lr_b: tl.int64, momentum_b: tl.int64, damp_b: tl.int64, wd_b: tl.int64,  # float64 bits
    MAXIMIZE: tl.constexpr, WD: tl.constexpr, MOMENTUM: tl.constexpr,  # the rest: the plan's
    FIRST: tl.constexpr, NESTEROV: tl.constexpr, COLUMNS: tl.constexpr, T: tl.constexpr,
    CT: tl.constexpr, CHUNK: tl.constexpr, WIDTH: tl.constexpr,
):
    # optim.py's per-parameter update (its _sgd_update), over a chunk of every parameter
    lr, momentum = _f(lr_b, CT), _f(momentum_b, CT)
    damp, wd = _f(damp_b, CT), _f(wd_b, CT)
    p_ptr, n = _chunk(chunks_ptr, arrays_ptr, T, COLUMNS, 0)
    g_ptr, n = _chunk(chunks_ptr, arrays_ptr, T, COLUMNS, 1)  # (the same n)
    b_ptr = g_ptr  # (no buffer without MOMENTUM: not read)
    if MOMENTUM:
        b_ptr, n = _chunk(chunks_ptr, arrays_ptr, T, COLUMNS, 2)
    for start in range(0, CHUNK, WIDTH):
        offs = start + tl.arange(0, WIDTH)
        _sgd_update(p_ptr, g_ptr, b_ptr, offs, offs < n, lr, momentum, damp, wd, MAXIMIZE, WD,
                    MOMENTUM, FIRST, NESTEROV, CT)


@jit(do_not_specialize=["decay_b", "wd_b", "one_m_b1_b", "b2_b", "one_m_b2_b", "bc2_sqrt_b",
                        "eps_b", "step_size_b"])
def _adam_kernel(
    chunks_ptr,  # *int64: the chunk map (Note [chunk tables]), a row a program
    arrays_ptr,  # *int64: the address table: param, grad, exp_avg, exp_avg_sq columns
    decay_b: tl.int64, wd_b: tl.int64, one_m_b1_b: tl.int64, b2_b: tl.int64,
    one_m_b2_b: tl.int64, bc2_sqrt_b: tl.int64, eps_b: tl.int64, step_size_b: tl.int64,
    MAXIMIZE: tl.constexpr, WD: tl.constexpr, DECOUPLED: tl.constexpr,  # the rest: the plan's
    T: tl.constexpr, CT: tl.constexpr, F64: tl.constexpr, CHUNK: tl.constexpr,
    WIDTH: tl.constexpr,
):
    # optim.py's per-parameter update (its _adam_kernel's scalars), over a chunk of every
    # parameter
    _adam_chunk(chunks_ptr, arrays_ptr, _f(decay_b, CT), _f(wd_b, CT), _f(one_m_b1_b, CT),
                _f(b2_b, CT), _f(one_m_b2_b, CT), _f(bc2_sqrt_b, CT), _f(eps_b, CT),
                _f(step_size_b, CT), MAXIMIZE, WD, DECOUPLED, T, CT, F64, CHUNK, WIDTH)


@jit
def _adam_chunk(chunks_ptr, arrays_ptr, decay, wd, one_m_b1, b2, one_m_b2, bc2_sqrt, eps,
                step_size, MAXIMIZE: tl.constexpr, WD: tl.constexpr, DECOUPLED: tl.constexpr,
                T: tl.constexpr, CT: tl.constexpr, F64: tl.constexpr, CHUNK: tl.constexpr,
                WIDTH: tl.constexpr):
    """This program's chunk of the Adam update (optim.py's ``_adam_formulas``, the scalars
    as values of CT), loaded from and stored to the four columns of the address table."""
    p_ptr, n = _chunk(chunks_ptr, arrays_ptr, T, 4, 0)
    g_ptr, n = _chunk(chunks_ptr, arrays_ptr, T, 4, 1)  # (the same n)
    m_ptr, n = _chunk(chunks_ptr, arrays_ptr, T, 4, 2)
    v_ptr, n = _chunk(chunks_ptr, arrays_ptr, T, 4, 3)
    for start in range(0, CHUNK, WIDTH):
        offs = start + tl.arange(0, WIDTH)
        mask = offs < n
        p = tl.load(p_ptr + offs, mask=mask, other=0).to(CT)
        g = tl.load(g_ptr + offs, mask=mask, other=0).to(CT)
        m = tl.load(m_ptr + offs, mask=mask, other=0).to(CT)
        v = tl.load(v_ptr + offs, mask=mask, other=0).to(CT)
        p, m, v, _ = _adam_formulas(p, g, m, v, v, decay, wd, one_m_b1, b2, one_m_b2,
                                    bc2_sqrt, eps, step_size, MAXIMIZE, WD, DECOUPLED, False,
                                    F64)
        tl.store(m_ptr + offs, m, mask=mask)
        tl.store(v_ptr + offs, v, mask=mask)
        tl.store(p_ptr + offs, p, mask=mask)


@jit
def _count_kernel(chunks_ptr, arrays_ptr):
    """Adds one to the float32 count of this program's one-element array (a step count of
    capturable Adam: its chunk map has a row, of one element, an array)."""
    ptr, _ = _chunk(chunks_ptr, arrays_ptr, tl.float32, 1, 0)
    tl.store(ptr, tl.load(ptr) + 1.0)


@jit(do_not_specialize=["decay_b", "wd_b", "one_m_b1_b", "b2_b", "one_m_b2_b", "eps_b",
                        "lr_b", "beta1_b"])
def _adam_capturable_kernel(
    chunks_ptr,  # *int64: the chunk map (Note [chunk tables]), a row a program
    arrays_ptr,  # *int64: the address table: param, grad, exp_avg, exp_avg_sq columns
    steps_ptr,   # *int64: the step counts' address table, a row a parameter (float32 counts)
    decay_b: tl.int64, wd_b: tl.int64, one_m_b1_b: tl.int64, b2_b: tl.int64,
    one_m_b2_b: tl.int64, eps_b: tl.int64, lr_b: tl.int64, beta1_b: tl.int64,
    MAXIMIZE: tl.constexpr, WD: tl.constexpr, DECOUPLED: tl.constexpr,  # the rest: the plan's
    T: tl.constexpr, CT: tl.constexpr, F64: tl.constexpr, CHUNK: tl.constexpr,
    WIDTH: tl.constexpr,
):
    # optim.py's capturable update (Note [capturable Adam]: the bias corrections from each
    # parameter's count on the device), over a chunk of every parameter
    step_ptr = tl.load(steps_ptr + tl.load(chunks_ptr + 3 * tl.program_id(0))).to(
        tl.pointer_type(tl.float32), bitcast=True)
    step_size, bc2_sqrt = _device_bias_corrections(step_ptr, lr_b, beta1_b, b2_b)
    _adam_chunk(chunks_ptr, arrays_ptr, _f(decay_b, CT), _f(wd_b, CT), _f(one_m_b1_b, CT),
                _f(b2_b, CT), _f(one_m_b2_b, CT), bc2_sqrt.to(CT), _f(eps_b, CT),
                step_size.to(CT), MAXIMIZE, WD, DECOUPLED, T, CT, F64, CHUNK, WIDTH)


# -- launchers ---------------------------------------------------------------------------------
_PLANS = L.plan_cache()
_CHUNKS = L.plan_cache()  # (CHUNK, stream, shapes) -> (chunk map, rows)
_ADDRESSES = L.plan_cache()  # (stream, columns, addresses) -> address table
_KEPT = 8  # tables of each kind kept (the oldest dropped first)
_EPS_BITS = struct.unpack("<q", struct.pack("<d", 1e-6))[0]


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _plan(kernel, grid: int, tail: tuple) -> Launch:
    key = (kernel, grid, tail)
    launch = _PLANS.get(key)
    if launch is None:
        launch = _PLANS[key] = Launch(kernel, (grid,), tail, **L.EXACT)
    return launch


def _groups(op: str, arrays) -> tuple:
    """The arrays by dtype (first-seen order), their device, and the accumulation type;
    raises TypeError (``L.unsupported``) where the kernels do not apply."""
    if not arrays:
        raise ValueError(f"{op}: no arrays")
    device = arrays[0].storage.device
    if L.INTERPRET and not _drv.get_driver().emulated:
        raise L.unsupported(op, arrays[0].dtype, "chunk tables need the GPU or the emulated "
                                                 "device, not the interpreter on a GPU")
    # The common call (an optimizer's or clipping's lists, every step): one dtype, every array
    # row-major (strides as empty() made them: its layout cache answers) on one device.
    dt, layouts = arrays[0].dtype, _memory._LAYOUTS
    if dt in _CT:
        for a in arrays:
            layout = layouts.get(a.shape)
            if a.dtype is not dt or layout is None or a.strides != layout[0] \
                    or a.device is not device:
                break
        else:
            return {dt: list(arrays)}, device, _CT[dt]
    groups: dict = {}
    for a in arrays:  # (per array per step: the common case first, in few operations)
        group = groups.get(a.dtype)
        if group is None:
            if a.dtype not in _CT:
                raise L.unsupported(op, a.dtype, "floating point arrays only")
            group = groups[a.dtype] = []
        if a.strides != L.contiguous_strides(a.shape) and not a.is_contiguous():
            raise L.unsupported(op, a.dtype, "contiguous arrays only")
        if a.storage.device is not device:  # (devices are interned)
            raise L.unsupported(op, a.dtype, f"arrays on one device only ({device} and "
                                             f"{a.storage.device})")
        group.append(a)
    kinds = {_CT[dt] for dt in groups}
    if len(kinds) > 1:
        raise L.unsupported(op, D.float64, "float64 arrays with arrays of other dtypes")
    return groups, device, kinds.pop()


def _keep(cache: dict, key, value):
    if len(cache) >= _KEPT:
        del cache[next(iter(cache))]
    cache[key] = value
    return value


def _tables(dtype, columns: tuple, device) -> tuple:
    """``(chunk map, address table, rows)`` of ``columns`` (lists of arrays of one dtype; the
    arrays at one position have one shape) on ``device`` (Note [chunk tables]); rows may be 0,
    the tables then None."""
    stream = _streams.current_stream_handle(device.index)
    shapes = tuple([a.shape for a in columns[0]])
    chunks = _CHUNKS.get(key := (CHUNK, stream, shapes))
    if chunks is None:
        rows = [(i, start, min(CHUNK, n - start))
                for i, n in enumerate(math.prod(shape) for shape in shapes)
                for start in range(0, n, CHUNK)]
        table = _upload(np.array(rows, dtype=np.int64), device) if rows else None
        chunks = _keep(_CHUNKS, key, (table, len(rows)))
    size = dtype.itemsize
    # (row-major, one row per array position: the table's layout, so no transposed copy)
    addresses = tuple([a.storage.ptr + a.offset * size for row in zip(*columns) for a in row])
    table = _ADDRESSES.get(key := (stream, len(columns), addresses))
    if table is None:
        host = np.array(addresses, dtype=np.int64).reshape(-1, len(columns))
        table = _keep(_ADDRESSES, key, _upload(host, device))
    if _drv.get_driver().capturing:  # the graph reads both tables at every replay
        _graphs.keep_alive(table, chunks[0])
    return chunks[0], table, chunks[1]


def _upload(host: np.ndarray, device):
    """``host`` (an int64 table) copied to ``device``. While a CUDA graph captures, a copy
    from pageable memory would end the capture (Note [stream capture] in runtime/driver.py),
    so the bytes go through page-locked memory, whose copy the graph records and repeats at
    each replay; the graph keeps that memory (``keep_alive`` in runtime/graphs.py)."""
    if not _drv.get_driver().capturing:
        return _memory.to_device(host, device)
    staged = _pinned.empty(host.shape, host.dtype)
    staged[...] = host
    table = _memory.to_device(staged, device, non_blocking=True)
    _graphs.keep_alive(staged)
    return table


def norm(arrays: list, norm_type: float, max_norm: float | None = None):
    """The ``norm_type``-norm of all elements of ``arrays`` together, and with ``max_norm``
    the clip coefficient min(max_norm / (norm + 1e-6), 1), both 0-d arrays of the first array's
    dtype on its device, computed without reading anything back.

    Args:
        arrays: contiguous floating point DeviceArrays on one device (float64 ones not mixed
            with others); empty ones count for nothing.
        norm_type: 2, inf, or a finite p > 0.
        max_norm: the clipping bound, or None for the norm alone.

    Returns:
        ``(total, coef)``, coef None without ``max_norm``.

    Raises:
        TypeError: the kernels do not handle these arrays or this norm (see the module
            docstring); the caller takes its per-array path.
    """
    groups, device, acc = _groups("foreach norm", arrays)
    p = float(norm_type)
    if p == 2.0:
        kind = _SQUARES
    elif p == math.inf:
        kind = _MAX
    elif 0.0 < p < math.inf:
        kind = _POWER
    else:
        raise L.unsupported("foreach norm", arrays[0].dtype, f"norm_type {norm_type}")
    tables = [(dt, *_tables(dt, (group,), device)) for dt, group in groups.items()]
    n_parts = sum(rows for *_, rows in tables)
    if not n_parts:
        raise L.unsupported("foreach norm", arrays[0].dtype, "no elements")
    L.ensure_driver()
    acc_dtype = D.float64 if acc is tl.float64 else D.float32
    out = arrays[0].dtype
    parts = _memory.empty((n_parts,), acc_dtype, device)
    p_b = _bits(p) if kind == _POWER else 0
    first = 0
    for dt, chunks, addresses, rows in tables:
        if rows:
            _plan(_norm_partials_kernel, rows, (first, kind, L.TL[dt], acc, CHUNK, WIDTH))(
                chunks, addresses, parts, p_b)
            first += rows
    total = _memory.empty((), out, device)
    coef = None if max_norm is None else _memory.empty((), out, device)
    _plan(_norm_finish_kernel, 1, (_EPS_BITS, n_parts, kind, acc, L.TL[out],
                                   coef is not None, acc is tl.float64, WIDTH))(
        parts, total, coef, _bits(0.0 if max_norm is None else float(max_norm)),
        _bits(1.0 / p) if kind == _POWER else 0)
    return total, coef


def mul_(arrays: list, factor) -> None:
    """Multiplies every array in place by ``factor``, a 0-d floating point DeviceArray on
    their device (cast to each array's dtype first, as ``a * factor.to(a.dtype)``).

    Raises:
        TypeError: as ``norm`` (the caller takes its per-array path).
    """
    groups, device, _ = _groups("foreach mul_", arrays)
    if factor.dtype not in _CT or factor.storage.device != device:
        raise L.unsupported("foreach mul_", factor.dtype,
                            f"a floating point factor on {device}")
    L.ensure_driver()
    for dt, group in groups.items():
        chunks, addresses, rows = _tables(dt, (group,), device)
        if rows:
            _plan(_mul_kernel, rows, (L.TL[dt], _CT[dt], CHUNK, WIDTH))(chunks, addresses, factor)


def _update_arrays(op: str, params: list, *others: list):
    """The device and dtype of an optimizer update's arrays (the parameters and, position by
    position, their gradients and state); raises TypeError (``L.unsupported``) or ValueError
    as ``adam_step`` documents."""
    groups, device, _ = _groups(op, [a for arrays in (params, *others) for a in arrays])
    if len(groups) > 1:
        raise L.unsupported(op, params[0].dtype, "one dtype for all arrays")
    for column in others:
        for a, b in zip(params, column, strict=True):
            if a.shape != b.shape and a.numel != b.numel:
                raise ValueError(f"{op}: sizes differ: {b.shape} vs the parameter's {a.shape}")
    return device, params[0].dtype


def sgd_step(params: list, grads: list, momentum_buffers: list | None, lr, momentum,
             dampening, weight_decay, nesterov, maximize, first_step) -> None:
    """One SGD update of every parameter (and of its momentum buffer) in place, as optim.py's
    ``sgd_step`` for each (the same formulas and scalars: the results agree to the last bit),
    in one launch.

    Args:
        params, grads: lists of contiguous DeviceArrays, one dtype (float16, bfloat16, float32
            or float64) and device, position i of each the same size.
        momentum_buffers: the parameters' buffers, as ``params``, with a nonzero
            ``momentum``; else None.
        first_step: every buffer is new: it is written (the gradient), not read.
        lr ... maximize: as optim.py's.

    Raises:
        TypeError: the arrays do not qualify (the caller updates per parameter).
    """
    columns = (params, grads, momentum_buffers) if momentum else (params, grads)
    device, dt = _update_arrays("foreach sgd_step", *columns)
    chunks, addresses, rows = _tables(dt, columns, device)
    if not rows:
        return
    bits = sgd_scalars(lr, momentum, dampening, weight_decay)
    L.ensure_driver()
    _plan(_sgd_kernel, rows, (bool(maximize), bool(weight_decay), bool(momentum),
                              bool(first_step), bool(nesterov), len(columns), L.TL[dt],
                              _CT[dt], CHUNK, WIDTH))(chunks, addresses, *bits)


def adam_step(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, step, lr, beta1,
              beta2, eps, weight_decay, maximize, decoupled) -> None:
    """One Adam/AdamW update of every parameter in place, as optim.py's ``adam_step`` for each
    (the same formulas and scalars: the results agree to the last bit), in one launch.

    Args:
        params, grads, exp_avgs, exp_avg_sqs: lists of contiguous DeviceArrays, one dtype
            (float16, bfloat16, float32 or float64) and device, position i of each the same
            size (the i-th parameter, its gradient and its state).
        step: the step count of every parameter (from 1); the rest as optim.py's.

    Raises:
        TypeError: the arrays do not qualify (the caller updates per parameter); amsgrad is
            not handled here.
    """
    device, dt = _update_arrays("foreach adam_step", params, grads, exp_avgs, exp_avg_sqs)
    chunks, addresses, rows = _tables(dt, (params, grads, exp_avgs, exp_avg_sqs), device)
    if not rows:
        return
    bits = adam_scalars(step, lr, beta1, beta2, eps, weight_decay)
    L.ensure_driver()
    _plan(_adam_kernel, rows, (bool(maximize), bool(weight_decay), bool(decoupled), L.TL[dt],
                               _CT[dt], dt is D.float64, CHUNK, WIDTH))(chunks, addresses,
                                                                        *bits)


def adam_step_capturable(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list,
                         steps: list, lr, beta1, beta2, eps, weight_decay, maximize,
                         decoupled) -> None:
    """``adam_step`` with each parameter's count on the device (Note [capturable Adam] in
    optim/adam.py): adds one to every count, then updates every parameter with the bias
    corrections computed from its count in the kernel, as optim.py's ``adam_step_capturable``
    for each (the same bits), in two launches, so that a CUDA graph of the step replays it
    with the counts it advances. Nothing is launched unless every array qualifies.

    Args:
        params, grads, exp_avgs, exp_avg_sqs: as ``adam_step``'s.
        steps: each parameter's count, a one-element float32 DeviceArray on their device.
        lr ... decoupled: as ``adam_step``'s (``lr`` a number).

    Raises:
        TypeError, ValueError: as ``adam_step``'s, and for counts that are not one float32
            element each on the parameters' device.
    """
    op = "foreach adam_step_capturable"
    device, dt = _update_arrays(op, params, grads, exp_avgs, exp_avg_sqs)
    if len(steps) != len(params):
        raise ValueError(f"{op}: {len(steps)} step counts for {len(params)} parameters")
    for s in steps:
        if s.dtype is not D.float32 or s.numel != 1 or s.storage.device is not device:
            raise L.unsupported(op, s.dtype, f"one-element float32 step counts on {device}")
    chunks, addresses, rows = _tables(dt, (params, grads, exp_avgs, exp_avg_sqs), device)
    counts, count_addresses, n = _tables(D.float32, (steps,), device)
    bits = adam_capturable_scalars(lr, beta1, beta2, eps, weight_decay)
    L.ensure_driver()
    _plan(_count_kernel, n, ())(counts, count_addresses)
    if rows:
        _plan(_adam_capturable_kernel, rows, (
            bool(maximize), bool(weight_decay), bool(decoupled), L.TL[dt], _CT[dt],
            dt is D.float64, CHUNK, WIDTH))(chunks, addresses, count_addresses, *bits)


# -- the NumPy twins (float64) ---------------------------------------------------------------
def reference_norm(arrays: list, norm_type: float, max_norm: float | None = None):
    """``norm`` on NumPy arrays, in float64: (total, coef or None) as Python floats."""
    x = np.concatenate([np.abs(np.asarray(a, dtype=np.float64)).ravel() for a in arrays])
    p = float(norm_type)
    if p == math.inf:
        total = float(x.max()) if x.size else 0.0
    else:
        with np.errstate(all="ignore"):
            total = float((x ** p).sum() ** (1.0 / p))
    if max_norm is None:
        return total, None
    with np.errstate(all="ignore"):
        coef = max_norm / (total + 1e-6)
    return total, coef if math.isnan(coef) or coef < 1.0 else 1.0


def reference_mul_(arrays: list, factor: float) -> None:
    """``mul_`` on NumPy arrays: each multiplied in place (in float64, then rounded)."""
    for a in arrays:
        a[...] = (a.astype(np.float64) * factor).astype(a.dtype)
