"""``cat``: arrays joined along one dim, up to four of them per launch.

The output is contiguous: along the joined dim each input owns a window, and for each index of
the dims before it (``outer``) the windows of a group of inputs make one contiguous run of
``width * inner`` elements (``inner``: the elements after the dim). One program covers BLOCK
positions p of the group's runs; p splits into the outer row o, the place j along the group's
width and the inner position c, and j picks the input (its window [e_i, e_i+1)):

    out[o * out_row + out_start + j * inner + c] = a_i[o * s_o + (j - e_i) * s_n + c * s_i]

Each input needs one stride per part (its dims before the joined one, and after it, each
collapsing to one), which every contiguous input has; an input that does not collapse is
copied on its own (``copy_``), as are complex arrays (copied on their real views there).

Joining the pieces one ``copy_`` each took a launch per input: a GPT step's three attention
gradients per layer (the qkv split's backward) took 12 launches, 4 as groups of three.
"""

from __future__ import annotations

import math

import triton.language as tl

from ...runtime.array import DeviceArray
from . import _launch as L
from ._launch import block_range
from .launcher import Launch, jit
from .memory import copy_, empty, getitem

__all__ = ["cat"]

BLOCK = 1024
GROUP = 4  # inputs per launch (the kernel's pointer arguments)


@jit
def _pick(v, ptr, o, j, c, lo, hi, so, sn, si, mask, BOUNDED: tl.constexpr):
    # v, or where lo <= j (< hi when BOUNDED) the input at ptr's element (o, j - lo, c)
    inside = j >= lo
    if BOUNDED:
        inside = inside & (j < hi)
    x = tl.load(ptr + (o * so + (j - lo) * sn + c * si), mask=mask & inside, other=0)
    return tl.where(inside, x, v)


@jit
def _cat_kernel(
    out_ptr,  # *T: the contiguous output, its group's windows written
    a0, a1, a2, a3,  # *T: the group's inputs (unused ones: a0 again)
    inner, width, out_row, out_start,  # elements after the dim; the group's width along it;
    #                                    out's stride between outer rows; the window's offset
    e1, e2, e3,  # where inputs 1, 2, 3 start along the group's width
    s0o, s0n, s0i, s1o, s1n, s1i, s2o, s2n, s2i, s3o, s3n, s3i,  # per input: outer, dim, inner
    n,  # outer * width * inner positions
    NIN: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    run = width * inner
    o = p // run
    r = p - o * run
    j = r // inner
    c = r - j * inner
    v = tl.load(a0 + (o * s0o + j * s0n + c * s0i), mask=mask & (j < e1), other=0)
    v = _pick(v, a1, o, j, c, e1, e2, s1o, s1n, s1i, mask, NIN > 2)
    if NIN > 2:
        v = _pick(v, a2, o, j, c, e2, e3, s2o, s2n, s2i, mask, NIN > 3)
    if NIN > 3:
        v = _pick(v, a3, o, j, c, e3, e3, s3o, s3n, s3i, mask, False)
    tl.store(out_ptr + (o * out_row + out_start + r), v, mask=mask)


_PLANS = L.plan_cache()  # (dim, dtype, (shape, strides) of each input) -> (shape, steps)


def _strides3(shape: tuple, st: tuple, dim: int):
    """The (outer, dim, inner) strides of an input of ``shape`` and strides ``st``, or None
    when the dims before ``dim`` or after it do not collapse to one stride each."""
    parts = []
    for sh, s in ((shape[:dim], st[:dim]), (shape[dim + 1:], st[dim + 1:])):
        cshape, (cst,) = L.collapse(sh, s)
        if len(cshape) > 1:
            return None
        parts.append(cst[0] if cshape else 0)
    return parts[0], st[dim], parts[1]


def cat(arrays: list, dim: int) -> DeviceArray:
    """The arrays (one dtype, one ndim, equal sizes but along ``dim``) joined along ``dim``:
    a new contiguous array (the contract's words)."""
    first = arrays[0]
    key = (dim, first.dtype, *[(a.shape, a.strides) for a in arrays])
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(key)
    shape, steps = plan
    out = empty(shape, first.dtype, first.device)
    if steps:
        L.ensure_driver()
    for launch, which, start in steps:
        if launch is None:
            _copy_into(out, arrays[which], dim, start)
        else:
            launch(out, *[arrays[i] for i in which])
    return out


def _plan(key) -> tuple:
    """(out's shape, steps) of a cat of inputs laid out as ``key`` says, kept: each step a
    group's ``Launch`` with the group's input numbers (up to GROUP, the first repeated in
    unused places), or ``(None, input number, start along dim)`` for an input copied alone."""
    dim, dtype, *layouts = key
    shape = list(layouts[0][0])
    shape[dim] = sum(sh[dim] for sh, _ in layouts)
    shape = tuple(shape)
    steps: list = []
    if 0 in shape:
        _PLANS[key] = (shape, steps)
        return shape, steps
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    fused, start = [], 0  # (start along dim, input number, its size, its strides)
    for i, (sh, st) in enumerate(layouts):
        size = sh[dim]
        if size:
            st3 = None if dtype.is_complex else _strides3(sh, st, dim)
            if st3 is None:
                steps.append((None, i, start))
            else:
                fused.append((start, i, size, st3))
        start += size
    # consecutive inputs in groups of up to GROUP (a group's windows must be adjacent)
    group: list = []
    for item in fused:
        if group and (len(group) == GROUP or item[0] != group[-1][0] + group[-1][2]):
            steps.append(_join(group, outer, inner, shape[dim]))
            group = []
        group.append(item)
    if group:
        steps.append(_join(group, outer, inner, shape[dim]))
    _PLANS[key] = (shape, steps)
    return shape, steps


def _copy_into(out, a, dim: int, start: int) -> None:
    """``a`` copied alone into its window of ``out`` along ``dim`` (from ``start``)."""
    lead = (slice(None),) * dim
    copy_(getitem(out, lead + (slice(start, start + a.shape[dim], 1),)), a)


def _join(group, outer, inner, total) -> tuple:
    """The step joining a group of adjacent inputs into their windows of the output: one
    launch, its ints all the plan's (the call passes the output and the inputs)."""
    if len(group) == 1:  # (one input: the copy kernel's plan)
        return None, group[0][1], group[0][0]
    start = group[0][0]
    ends, strides, which = [], [], []
    for s, i, _, st in group:
        ends.append(s - start)
        strides += st
        which.append(i)
    width = group[-1][0] + group[-1][2] - start
    nin = len(group)
    while len(which) < GROUP:  # (unused inputs: never read)
        which.append(which[0])
        ends.append(width)
        strides += (0, 0, 0)
    n = outer * width * inner
    int64 = L.needs_int64((outer, total, inner), (total * inner, inner, 1)) or any(
        L.needs_int64((outer, size, inner), st) for _, _, size, st in group)
    launch = Launch(_cat_kernel, (L.cdiv(n, BLOCK),), (
        inner, width, total * inner, start * inner, *ends[1:], *strides, n, nin, BLOCK, int64))
    return launch, tuple(which), start
