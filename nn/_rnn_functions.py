"""ATen's whole-sequence recurrent functions at the top level: ``lstm``, ``gru``,
``rnn_tanh``, ``rnn_relu`` (PyTorch's ``torch.lstm(input, hx, params, has_biases, num_layers,
dropout, train, bidirectional, batch_first)``, the form ``nn.LSTM`` & co. call).

Each runs the cells (``lstm_cell``'s step, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``:
nn/rnn.py) step by step over the sequence, per layer and direction; gradients by composition.
``params`` is the flat list of every layer's and direction's weights in ``nn.LSTM``'s order
(``w_ih, w_hh[, b_ih, b_hh][, w_hr]``: ``all_weights`` flattened). The packed-sequence forms
(``batch_sizes`` as the second argument) are not supported: pack with ``nn.LSTM`` instead.
"""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import functional as F
from .rnn import _lstm_step, gru_cell, rnn_relu_cell, rnn_tanh_cell

__all__ = ["gru", "lstm", "rnn_relu", "rnn_tanh"]


def _refuse_packed(mode: str) -> None:
    raise NotImplementedError(f"{mode}: the packed-sequence form (data, batch_sizes, ...) is not "
                              f"supported; run nn.LSTM / nn.GRU / nn.RNN on a PackedSequence")


def _run(mode: str, input: Tensor, hx: tuple, params, has_biases: bool, num_layers: int,
         dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    from ..autograd.ops import cat, stack
    if isinstance(params, Tensor):
        _refuse_packed(mode)
    dirs = 2 if bidirectional else 1
    params = list(params)
    per = len(params) // (num_layers * dirs)
    if per * num_layers * dirs != len(params) or per not in (2, 3, 4, 5):
        raise RuntimeError(f"{mode}: got {len(params)} parameters for {num_layers} layer(s) and "
                           f"{dirs} direction(s)")
    unbatched = input.ndim == 2
    x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if batch_first else input)
    states = [h.unsqueeze(1) if unbatched else h for h in hx]
    last = [[] for _ in states]
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            w = params[(layer * dirs + d) * per:(layer * dirs + d + 1) * per]
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            w_hr = w[-1] if per in (3, 5) else None
            state = [s[layer * dirs + d] for s in states]
            steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
            ys = [None] * x.shape[0]
            for t in steps:
                if mode == "lstm":  # (the step itself: with w_hr, h is narrower than c)
                    gates = F.linear(x[t], w_ih, b_ih) + F.linear(state[0], w_hh, b_hh)
                    h, c = _lstm_step(gates, state[1], w_ih.shape[0] // 4)
                    if w_hr is not None:
                        h = F.linear(h, w_hr)
                    state = [h, c]
                else:
                    cell = {"gru": gru_cell, "rnn_tanh": rnn_tanh_cell,
                            "rnn_relu": rnn_relu_cell}[mode]
                    state = [cell(x[t], state[0], w_ih, w_hh, b_ih, b_hh)]
                ys[t] = state[0]
            outs.append(stack(ys, 0))
            for i, s in enumerate(state):
                last[i].append(s)
        x = outs[0] if dirs == 1 else cat(outs, -1)
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    out = x.squeeze(1) if unbatched else (x.transpose(0, 1) if batch_first else x)
    finals = tuple(stack(s, 0).squeeze(1) if unbatched else stack(s, 0) for s in last)
    return (out,) + finals


def lstm(input: Tensor, hx, params, has_biases: bool, num_layers: int, dropout: float,
         train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    """``(output, h_n, c_n)`` of a multi-layer LSTM over ``input`` ((T, N, H_in), (N, T, H_in)
    with ``batch_first``, or unbatched (T, H_in)) from ``hx = [h_0, c_0]`` (layers * dirs, N,
    H_out / H); ``w_hr`` in ``params`` (5 or 3 per layer and direction) projects h.

    Example:
        >>> m = tg.nn.LSTM(3, 4)
        >>> out, h, c = tg.lstm(tg.randn(5, 2, 3), [tg.zeros(1, 2, 4), tg.zeros(1, 2, 4)],
        ...                     [p for ws in m.all_weights for p in ws], True, 1, 0.0, False,
        ...                     False, False)
    """
    if isinstance(hx, Tensor):  # (data, batch_sizes, hx, ...): the packed form
        _refuse_packed("lstm")
    return _run("lstm", input, tuple(hx), params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)


def gru(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int, dropout: float,
        train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    """``(output, h_n)`` of a multi-layer GRU; arguments as ``lstm``'s, ``hx`` one tensor."""
    return _run("gru", input, (hx,), params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)


def rnn_tanh(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int,
             dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    """``(output, h_n)`` of a multi-layer Elman RNN with tanh."""
    return _run("rnn_tanh", input, (hx,), params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)


def rnn_relu(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int,
             dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    """``(output, h_n)`` of a multi-layer Elman RNN with relu."""
    return _run("rnn_relu", input, (hx,), params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)
