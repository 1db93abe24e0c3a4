"""A recurrent layer's time loop as one op: LSTM, GRU and Elman RNN recurrences over a whole
sequence, with backpropagation through time as its rule.

nn.LSTM/GRU/RNN project every step's input at once (``x W_ih^T + b_ih``, one GEMM); what is
left is the loop, ``h_t = cell(input_t, h_{t-1} W_hh^T + b_hh)``. Recorded op by op it is some
fifteen nodes per step (PyTorch records as many, from C++, on the CPU); here it is one node,
``RnnLayerBackward0``, whose forward runs the loop on the backend's arrays and keeps each
step's gate activations, and whose rule runs it backwards: per step one GEMM for the gradient
of h_{t-1}, and one GEMM over all steps for W_hh's. Per step the pointwise rest of an LSTM or
GRU cell (the gates' activations and the state update, some fifteen array ops; their
derivatives as many) is one fused kernel of the contract: ``lstm_cell``/``gru_cell`` and their
``_backward``s (one compiled pass on the CPU, one launch on CUDA). Both are written once against
the kernel contract, so they run on the CPU and on CUDA alike, and under ``create_graph``
(``k`` is ``ops.traced``) the forward is recomputed in Tensor ops from the saved inputs, with
the cells as their formulas (``_Composite``), so the rule's own derivative comes from
composition.

Gate orders and formulas are PyTorch's (LSTM: input, forget, cell, output; GRU: reset, update,
new, with the reset gate multiplying the recurrent term of n, bias included).
"""

from __future__ import annotations

from ..dispatch import Primitive, apply, call, zeros
from ..tensor import Tensor, array_meta
from . import traced
from .shape import CatBackward0, StackBackward0

__all__ = ["rnn_layer"]

_SIG, _TANH = "sigmoid", "tanh"


def _t(k, w):
    return k.permute(w, (1, 0))


def _cols(k, a, i: int, h: int):
    """Columns [i h, (i + 1) h) of a 2-D array: gate i."""
    return k.getitem(a, (slice(None), slice(i * h, (i + 1) * h)))


def _cat(k, parts):
    return call(k, CatBackward0, parts, 1, tuple(p.shape[1] for p in parts))


def _stack(k, parts):
    return call(k, StackBackward0, parts, 0)


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


class _Composite:
    """The cell kernels (``lstm_cell`` ... ``gru_cell_backward``, kernels/__init__.py) as their
    formulas in the contract's other ops: what a recorded rule (``k`` is ``ops.traced``) runs,
    so that it is differentiated. ``saved`` is a tuple of the activations here."""

    def __init__(self, k):
        self.k = k

    def lstm_cell(self, x, rec, b, c):
        k, hidden = self.k, c.shape[1]
        gates = k.add(x, rec if b is None else k.add(rec, b))
        i, f, o = (k.unary(_SIG, _cols(k, gates, j, hidden)) for j in (0, 1, 3))
        g = k.unary(_TANH, _cols(k, gates, 2, hidden))
        c = k.add(k.mul(f, c), k.mul(i, g))
        tc = k.unary(_TANH, c)
        return k.mul(o, tc), c, (i, f, g, o, tc)

    def lstm_cell_backward(self, dh, dc, saved, c):
        k = self.k
        i, f, g, o, tc = saved
        dc_t = None if dh is None else k.binary("tanh_backward", k.mul(dh, o), tc)
        dc = dc_t if dc is None else (dc if dc_t is None else k.add(dc, dc_t))
        do = _zeros_like(k, o) if dh is None else k.mul(dh, tc)
        if dc is None:
            dc = _zeros_like(k, tc)
        dgates = _cat(k, [k.binary("sigmoid_backward", k.mul(dc, g), i),
                          k.binary("sigmoid_backward", k.mul(dc, c), f),
                          k.binary("tanh_backward", k.mul(dc, i), g),
                          k.binary("sigmoid_backward", do, o)])
        return dgates, k.mul(dc, f)

    def gru_cell(self, x, rec, b, h):
        k, hidden = self.k, h.shape[1]
        if b is not None:
            rec = k.add(rec, b)
        r = k.unary(_SIG, k.add(_cols(k, x, 0, hidden), _cols(k, rec, 0, hidden)))
        z = k.unary(_SIG, k.add(_cols(k, x, 1, hidden), _cols(k, rec, 1, hidden)))
        rec_n = _cols(k, rec, 2, hidden)
        n = k.unary(_TANH, k.add(_cols(k, x, 2, hidden), k.mul(r, rec_n)))
        return k.add(n, k.mul(z, k.sub(h, n))), (r, z, n, rec_n)  # (1 - z) n + z h

    def gru_cell_backward(self, dh, saved, h):
        k = self.k
        r, z, n, rec_n = saved
        dn = k.binary("tanh_backward", k.sub(dh, k.mul(dh, z)), n)
        dr = k.binary("sigmoid_backward", k.mul(dn, rec_n), r)
        dz = k.binary("sigmoid_backward", k.mul(dh, k.sub(h, n)), z)
        return _cat(k, [dr, dz, dn]), _cat(k, [dr, dz, k.mul(dn, r)]), k.mul(dh, z)


def _cells(k):
    """What runs the cells: the backend's fused kernels, or their formulas when recorded."""
    return _Composite(k) if k is traced else k


def _run(k, mode: str, xs, h, c, w_hh, b_hh, reverse: bool):
    """The loop, over time backwards when ``reverse``: states h_0..h_L and cells c_0..c_L (or
    None), and what each step's backward needs, all in the order the steps ran."""
    cells = _cells(k)
    w_t = k.contiguous(_t(k, w_hh))  # (H, G H): each step's product reads rows
    hs, cs, keep = [h], ([c] if c is not None else None), []
    for t in _order(xs.shape[0], reverse):
        x = k.getitem(xs, (t,))
        rec = k.matmul(h, w_t)
        if mode == "LSTM":
            h, c, saved = cells.lstm_cell(x, rec, b_hh, c)
            cs.append(c)
        elif mode == "GRU":
            h, saved = cells.gru_cell(x, rec, b_hh, h)
        else:
            pre = k.add(x, rec if b_hh is None else k.add(rec, b_hh))
            h = k.unary(_TANH, pre) if mode == "RNN_TANH" else k.where(k.gt(pre, 0), pre, 0.0)
            saved = h
        keep.append(saved)
        hs.append(h)
    return hs, cs, keep


class RnnLayerBackward0(Primitive):
    """One layer of an RNN in one direction over a whole sequence: inputs (xs, h0[, c0], w_hh
    [, b_hh]) with xs (L, N, G H) the projected inputs; outputs (ys (L, N, H), h_L[, c_L])."""

    __slots__ = ()
    op_name = "rnn_layer"

    @staticmethod
    def forward(ctx, k, *args):
        *arrays, mode, has_bias, reverse = args
        xs, h0, *rest = arrays
        c0 = rest.pop(0) if mode == "LSTM" else None
        w_hh, b_hh = rest[0], (rest[1] if has_bias else None)
        hs, cs, keep = _run(k, mode, xs, h0, c0, w_hh, b_hh, reverse)
        ctx.mode, ctx.has_bias, ctx.reverse = mode, has_bias, reverse
        all_h = None
        if len(hs) > 1 and not reverse:
            # every state h_0..h_L in one array: ys is its tail (copied: the output is the
            # caller's to change in place), and the rule's W_hh product reads its head
            # without stacking the states again
            all_h = _stack(k, hs)
            ys = _copy(k, k.getitem(all_h, (slice(1, None),)))
        else:
            ys = hs[:0:-1] if reverse else hs[1:]  # (in time order)
            ys = _stack(k, ys) if ys else zeros(k, (0,) + tuple(h0.shape), h0)
        ctx.states = (hs, cs, keep, all_h)  # (arrays: read by the rule on arrays only)
        return (ys, hs[-1], cs[-1]) if mode == "LSTM" else (ys, hs[-1])

    @staticmethod
    def vjp(ctx, k, saved, *grads):
        mode, has_bias, reverse = ctx.mode, ctx.has_bias, ctx.reverse
        xs, h0, *rest = saved
        c0 = rest.pop(0) if mode == "LSTM" else None
        w_hh, b_hh = rest[0], (rest[1] if has_bias else None)
        if k is traced:  # recorded: the loop again, in Tensor ops, so it is differentiated
            hs, cs, keep = _run(k, mode, xs, h0, c0, w_hh, b_hh, reverse)
            all_h = None
        else:
            hs, cs, keep, all_h = ctx.states
        dys, dh = grads[0], grads[1]
        dc = grads[2] if mode == "LSTM" else None
        hidden, steps = h0.shape[1], len(keep)
        times = list(_order(steps, reverse))
        # per step as it ran (p), whose time is times[p]: dxs by time, dgates (of the
        # recurrent term) as the steps ran, as hs and keep are
        dxs, dgates = [None] * steps, [None] * steps
        cells = _cells(k)
        for p in range(steps - 1, -1, -1):
            t = times[p]
            if dys is not None:
                dy = k.getitem(dys, (t,))
                dh = dy if dh is None else k.add(dh, dy)
            if mode == "LSTM":
                dgates[p], dc = cells.lstm_cell_backward(dh, dc, keep[p], cs[p])
                dxs[t] = dgates[p]
            elif mode == "GRU":
                if dh is None:
                    dh = _zeros_like(k, hs[p])
                dxs[t], dgates[p], dh_direct = cells.gru_cell_backward(dh, keep[p], hs[p])
            else:
                y = keep[p]
                if dh is None:
                    dh = _zeros_like(k, y)
                dxs[t] = dgates[p] = (k.binary("tanh_backward", dh, y) if mode == "RNN_TANH"
                                      else k.binary("relu_backward", dh, y))
            dh = k.matmul(dgates[p], w_hh)
            if mode == "GRU":
                dh = k.add(dh, dh_direct)
        needs = ctx.needs_input_grad
        if not steps:  # an empty sequence: the state passed through, nothing else reached
            zero = [zeros(k, tuple(a.shape), a) if need else None
                    for a, need in zip((xs, w_hh, b_hh), (needs[0], needs[-1 - has_bias],
                                                         has_bias and needs[-1]))]
            out = [zero[0], dh if needs[1] else None] + \
                ([dc if needs[2] else None] if mode == "LSTM" else []) + [zero[1]]
            return tuple(out + ([zero[2]] if has_bias else []))
        out = [_stack(k, dxs) if needs[0] else None, dh if needs[1] else None]
        if mode == "LSTM":
            out.append(dc if needs[2] else None)
        j = len(out)
        dw = db = None
        if needs[j] or (has_bias and needs[j + 1]):
            # (L, N, G H): W_hh's and b_hh's sums in one pass; forwards in time, an LSTM's or
            # Elman RNN's dgates are its dxs, in the same order, already stacked
            same = needs[0] and not reverse and mode != "GRU"
            d_all = out[0] if same else _stack(k, dgates)
            rows = steps * h0.shape[0]
            d2 = k.view(k.contiguous(d_all), (rows, d_all.shape[2]))
            if needs[j]:
                h_prev = _stack(k, hs[:-1]) if all_h is None else \
                    k.getitem(all_h, (slice(0, steps),))
                h_prev = k.view(k.contiguous(h_prev), (rows, hidden))
                dw = k.matmul(_t(k, d2), h_prev)
            if has_bias and needs[j + 1]:
                db = k.sum(d2, (0,), False)
        out.append(dw)
        if has_bias:
            out.append(db)
        return tuple(out)


def _copy(k, a):
    """A new array holding ``a``."""
    out = k.empty(tuple(a.shape), *array_meta(a)[::-1])
    k.copy_(out, a)
    return out


def _zeros_like(k, a):
    return zeros(k, tuple(a.shape), a)


def _release(node) -> None:
    Primitive._release(node)
    node.states = None  # (each step's activations: the rule has run, or will never run)


RnnLayerBackward0._release = _release
# One class per number of inputs (3: GRU/RNN without b_hh ... 5: LSTM with it), each saving
# them all: the rule reads W_hh, and recomputes the loop from all of them when recorded.
_BY_ARITY = {n: RnnLayerBackward0.variant("RnnLayerBackward0", "rnn_layer",
                                          save_inputs=tuple(range(n))) for n in (3, 4, 5)}


def rnn_layer(mode: str, xs: Tensor, h0: Tensor, c0: Tensor | None, w_hh: Tensor,
              b_hh: Tensor | None, reverse: bool = False) -> tuple:
    """The recurrence of one layer and direction over projected inputs ``xs`` (L, N, G H),
    from the last step to the first when ``reverse``: ``(ys, h)`` or, for ``mode="LSTM"``,
    ``(ys, h, c)``, with ys in time order and (h, c) the state after the last step run."""
    inputs = (xs, h0) + ((c0,) if mode == "LSTM" else ()) + (w_hh,) + \
        ((b_hh,) if b_hh is not None else ())
    return apply(_BY_ARITY[len(inputs)], inputs, mode, b_hh is not None, reverse)
