"""Recurrent layers: RNN, LSTM and GRU (multi-layer, optionally bidirectional; LSTM with
projections), the cells RNNCell, LSTMCell and GRUCell and ATen's cell functions they call
(``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``, also at the top of the
package), built from differentiable Tensor ops (``F.linear``, ``sigmoid``, ``tanh``,
``relu``), so their gradients, to any order, come from composition.

Parameters, their names, shapes and order, the gate orders (LSTM: input, forget, cell, output;
GRU: reset, update, new) and the initialisation U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
are PyTorch's, so a state dict moves between the two. Each layer projects the whole input
sequence with one matmul (``x W_ih^T + b_ih`` for every step at once); only the recurrent
``h W_hh^T`` runs per step. Without projections (``proj_size``) or packing, the loop is one
op (``autograd/ops/recurrent.py``: one node per layer and direction, backpropagation through
time as its rule); otherwise it is recorded step by step, from the cell functions below.

A PackedSequence input (nn.utils.rnn) runs the same loop over its data: step t holds the
``batch_sizes[t]`` sequences still running, longest first, so the state shrinks to its first
rows as sequences end (their final states are kept aside) and, read backwards, grows as
sequences start from their own last element; the output is a PackedSequence with the same
batch sizes and h_n holds every sequence's state after its own length, as PyTorch's.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings

from ..autograd import checks
from ..autograd.dispatch import dual_levels
from ..autograd.ops.creation import zeros
from ..autograd.autocast import autocast_op
from ..autograd.ops.recurrent import rnn_layer
from ..autograd.ops.shape import cat, stack
from ..autograd.tensor import Tensor
from ..runtime.dtype import float16
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase",
           "gru_cell", "lstm_cell", "rnn_relu_cell", "rnn_tanh_cell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _lstm_step(gates: Tensor, c: Tensor, hidden: int):
    """LSTM's update from its four gate pre-activations (input terms plus recurrent ones)."""
    i = gates[:, :hidden].sigmoid()
    f = gates[:, hidden:2 * hidden].sigmoid()
    g = gates[:, 2 * hidden:3 * hidden].tanh()
    o = gates[:, 3 * hidden:].sigmoid()
    c = f * c + i * g
    return o * c.tanh(), c


def _gru_step(gi: Tensor, gh: Tensor, h: Tensor, hidden: int) -> Tensor:
    """GRU's update from the input terms ``gi`` and the recurrent terms ``gh`` (each r, z, n):
    the reset gate multiplies the recurrent term of n, bias included, as PyTorch's."""
    r = (gi[:, :hidden] + gh[:, :hidden]).sigmoid()
    z = (gi[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden]).sigmoid()
    n = (gi[:, 2 * hidden:] + r * gh[:, 2 * hidden:]).tanh()
    # (PyTorch's form: under CPU autocast the float32 state meets the lower precision gates
    # here, and the blend is made in float32)
    return (h - n) * z + n


# -- one step: ATen's cell functions (torch.lstm_cell, ...), which the cell modules call ---------

def _check_cell(op: str, input: Tensor, hx: tuple, w_ih: Tensor, w_hh: Tensor,
                gates: int) -> None:
    """ATen's checks of a cell's arguments (check_rnn_cell_forward_*), in its order: the
    weights against ``hidden_size = w_hh.size(1)``, the input, then each hidden state."""
    for t, name in ((input, "input"), (w_ih, "w_ih"), (w_hh, "w_hh")) + tuple(
            (h, "hx") for h in hx):
        checks.tensor_arg(t, op, name)
    hidden = w_hh.size(1)
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.size(0) != gates * hidden:
            raise RuntimeError(f"{name} first dim must be {gates} * hidden_size = "
                               f"{gates * hidden}, but got {w.size(0)}")
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"{op}: input has inconsistent input_size: got {input.size(1)} "
                           f"expected {w_ih.size(1)}")
    for i, h in enumerate(hx):
        if input.size(0) != h.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} "
                               f"batch size {h.size(0)}")
        if h.size(1) != hidden:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, "
                               f"expected {hidden}")


def _rnn_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih, b_hh,
              relu: bool) -> Tensor:
    _check_cell("rnn_relu_cell" if relu else "rnn_tanh_cell", input, (hx,), w_ih, w_hh, 1)
    pre = F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step, ``tanh(input w_ih^T + b_ih + hx w_hh^T + b_hh)``: ``input``
    (N, H_in), ``hx`` (N, H), ``w_ih`` (H, H_in), ``w_hh`` (H, H)."""
    return _rnn_cell(input, hx, w_ih, w_hh, b_ih, b_hh, relu=False)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """``rnn_tanh_cell`` with relu instead of tanh."""
    return _rnn_cell(input, hx, w_ih, w_hh, b_ih, b_hh, relu=True)


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple:
    """One LSTM step: ``hx`` is ``(h, c)``, the weights hold the input, forget, cell and output
    gates' rows (4 H of them); returns ``(h', c')``."""
    if isinstance(hx, Tensor) or not isinstance(hx, (tuple, list)):
        raise TypeError(f"lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, "
                        f"not {type(hx).__name__}")
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell("lstm_cell", input, tuple(hx), w_ih, w_hh, 4)
    gates = F.linear(input, w_ih, b_ih) + F.linear(hx[0], w_hh, b_hh)
    return _lstm_step(gates, hx[1], w_hh.size(1))


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step: the weights hold the reset, update and new gates' rows (3 H of them)."""
    _check_cell("gru_cell", input, (hx,), w_ih, w_hh, 3)
    return _gru_step(F.linear(input, w_ih, b_ih), F.linear(hx, w_hh, b_hh), hx, w_hh.size(1))


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters, checks, layers and directions (``mode``:
    ``"LSTM"``, ``"GRU"``, ``"RNN_TANH"`` or ``"RNN_RELU"``)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 \
                or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size),
                            ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        self.mode = mode
        gates = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        out_size = proj_size or hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gates, layer_in)), ("weight_hh", (gates, out_size))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for stem, shape in shapes:
                    setattr(self, stem + suffix,
                            Parameter(zeros(shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(stem + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Does nothing: the weights are separate tensors here (cuDNN's flat buffer is a
        PyTorch detail)."""

    # -- PyTorch's argument checks, public there (subclasses call and override them) --------
    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        """Checks ``input``: its dtype is the weights' (ValueError), it has 3 dims (2 for the
        data of a packed sequence) and its last size is ``input_size`` (RuntimeError)."""
        self._check_input_dtype(input)
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None) -> tuple:
        """(num_layers * num_directions, batch, proj_size or hidden_size)."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        directions = 2 if self.bidirectional else 1
        return (self.num_layers * directions, mini_batch, self.proj_size or self.hidden_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """RuntimeError (``msg`` formatted with the sizes) unless ``hx`` has that size."""
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden, batch_sizes: Tensor | None) -> None:
        """``check_input`` then the size of ``hidden`` (h_0)."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None):
        """``hx`` with its batch dim (1) reordered by ``permutation`` (None: unchanged)."""
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    @property
    def _flat_weights(self) -> list:
        """The parameters named by ``_flat_weights_names``, in that order (PyTorch's
        attribute; read live, so a reassigned weight shows)."""
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters per layer and direction, as lists in registration order."""
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional
                                                                    else 1))
        weights = [getattr(self, n) for n in self._flat_weights_names]
        return [weights[i:i + per] for i in range(0, len(weights), per)]

    def _weights(self, layer: int, direction: int) -> tuple:
        suffix = f"_l{layer}" + ("_reverse" if direction else "")

        def get(stem):
            return getattr(self, stem + suffix, None)

        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), \
            get("weight_hr")

    def _check_input_dtype(self, x: Tensor) -> None:
        """PyTorch's ValueError when the input's dtype is not the weights' (outside autocast,
        which casts both)."""
        w = getattr(self, self._flat_weights_names[0], None) if self._flat_weights_names \
            else None
        if w is None or x.dtype is w.dtype:
            return
        from ..autograd.autocast import is_autocast_enabled
        if is_autocast_enabled(x.device.type):
            return
        raise ValueError(f"RNN input dtype ({x.dtype}) does not match weight dtype "
                         f"({w.dtype}). Convert input: input.to({w.dtype}), or convert model: "
                         f"model.to({x.dtype})")

    def forward(self, input: Tensor | PackedSequence, hx=None):
        """``input`` (L, N, H_in) ((N, L, H_in) with ``batch_first``; (L, H_in) unbatched;
        or a PackedSequence, ``batch_first`` then not applying) and the initial state (zeros
        by default): h_0 (D * num_layers, N, H_out), for LSTM the pair (h_0, c_0). Returns
        ``output, h_n`` (LSTM: ``output, (h_n, c_n)``); output is a PackedSequence for a
        packed input, and h_n then holds each sequence's state after its own last element, in
        the batch's original order."""
        name = type(self).__name__
        batch_sizes = sorted_indices = unsorted_indices = None
        if isinstance(input, PackedSequence):
            x, sizes, sorted_indices, unsorted_indices = input
            if x.ndim != 2:
                raise RuntimeError(f"input must have 2 dimensions, got {x.ndim}")
            batch_sizes = [int(b) for b in sizes.tolist()]
            if sum(batch_sizes) != x.shape[0]:
                raise RuntimeError(f"{name}: the packed input has {x.shape[0]} rows but its "
                                   f"batch_sizes sum to {sum(batch_sizes)}")
            unbatched = False
        elif not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected a Tensor or PackedSequence input, got "
                            f"{type(input).__name__}")
        elif input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D "
                             f"instead")
        else:
            unbatched = input.ndim == 2
            x = input.unsqueeze(1) if unbatched else \
                (input.transpose(0, 1) if self.batch_first else input)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        self._check_input_dtype(x)
        if x.shape[0] == 0:  # (no step to run: PyTorch refuses it)
            raise RuntimeError(f"{name}: Expected sequence length to be larger than 0 in RNN")
        lstm = self.mode == "LSTM"
        directions = 2 if self.bidirectional else 1
        out_size = self.proj_size or self.hidden_size
        batch = x.shape[1] if batch_sizes is None else batch_sizes[0]
        h_shape = (self.num_layers * directions, batch, out_size)
        c_shape = (self.num_layers * directions, batch, self.hidden_size)
        c0 = None
        if hx is None:
            h0 = zeros(h_shape, dtype=x.dtype, device=x.device)
            if lstm:
                c0 = zeros(c_shape, dtype=x.dtype, device=x.device)
        elif lstm:
            if isinstance(hx, Tensor) or len(hx) != 2:  # (not a pair to unpack)
                raise IndexError(f"{name}: expected hx to be a tuple (h_0, c_0), got "
                                 f"{type(hx).__name__} of length "
                                 f"{len(hx) if not isinstance(hx, Tensor) or hx.ndim else 0}")
            h0, c0 = hx
            if unbatched:
                if h0.ndim != 2 or c0.ndim != 2:
                    raise RuntimeError(f"{name}: For unbatched 2-D input, hx and cx should also "
                                       f"be 2-D but got ({h0.ndim}-D, {c0.ndim}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            elif h0.ndim != 3 or c0.ndim != 3:
                raise RuntimeError(f"{name}: For batched 3-D input, hx and cx should also be 3-D "
                                   f"but got ({h0.ndim}-D, {c0.ndim}-D) tensors")
            for i, (t, shape) in enumerate(((h0, h_shape), (c0, c_shape))):
                if tuple(t.shape) != shape:
                    raise RuntimeError(f"{name}: Expected hidden[{i}] size {shape}, got "
                                       f"{list(t.shape)}")
        else:
            h0 = hx
            if unbatched:
                if h0.ndim != 2:
                    raise RuntimeError(f"{name}: For unbatched 2-D input, hx should also be 2-D "
                                       f"but got {h0.ndim}-D tensor")
                h0 = h0.unsqueeze(1)
            elif h0.ndim != 3:
                raise RuntimeError(f"{name}: For batched 3-D input, hx should also be 3-D but got "
                                   f"{h0.ndim}-D tensor")
            if tuple(h0.shape) != h_shape:
                raise RuntimeError(f"{name}: Expected hidden size {h_shape}, got {list(h0.shape)}")
        if sorted_indices is not None and hx is not None:  # hx is in the caller's batch order
            h0 = h0.index_select(1, sorted_indices)
            c0 = None if c0 is None else c0.index_select(1, sorted_indices)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                y, h, c = self._run(x, h0[k], None if c0 is None else c0[k],
                                    *self._weights(layer, direction), reverse=bool(direction),
                                    batch_sizes=batch_sizes)
                outs.append(y)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if directions == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        state = (stack(h_n), stack(c_n)) if lstm else (stack(h_n),)
        if batch_sizes is not None:
            if unsorted_indices is not None:
                state = tuple(t.index_select(1, unsorted_indices) for t in state)
            x = PackedSequence(x, sizes, sorted_indices, unsorted_indices)
        elif unbatched:
            x, state = x.squeeze(1), tuple(t.squeeze(1) for t in state)
        elif self.batch_first:
            x = x.transpose(0, 1)
        return x, (state if lstm else state[0])

    def _run(self, x: Tensor, h: Tensor, c, w_ih, *args, **kwargs):
        """``_layer`` under autocast's policy for ``self.mode``: a layer is one lower
        precision op, as PyTorch's cudnn layers and CPU LSTM layer (mkldnn_rnn_layer, float32
        and bfloat16 weights) are, and as its CPU RNN's linears make it (the tanh/relu of
        lower precision sums). PyTorch's CPU GRU, and LSTM with float16 weights, are
        composites: their linears run in lower precision and the state, in its own dtype, is
        updated with the gates in the promoted dtype (float32 for float32 weights)."""
        composite = self.mode == "GRU" or (self.mode == "LSTM" and w_ih.dtype is float16)
        layer = self._composite_layer if composite else self._lower_layer
        return layer(x, h, c, w_ih, *args, **kwargs)

    def _layer(self, x: Tensor, h: Tensor, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse: bool,
               batch_sizes: list | None = None):
        """One layer in one direction over the sequence x (L, N, H_in), or, with
        ``batch_sizes``, over a packed sequence's data (sum(batch_sizes), H_in): (outputs
        shaped as x with H_out features, h, c (None but for LSTM)), h and c holding each
        sequence's state after its own last element."""
        projected = F.linear(x, w_ih, b_ih)  # every step's input term at once
        # the loop as one op (autograd/ops/recurrent.py), which has no forward-mode rule
        # (step by step where the state's dtype is not the projection's: a CPU GRU under
        # autocast, whose linears are cast and whose state is not; see _run)
        if batch_sizes is None and w_hr is None and not dual_levels \
                and projected.dtype is h.dtype:
            ys, *state = rnn_layer(self.mode, projected, h, c, w_hh, b_hh, reverse)
            return ys, state[0], (state[1] if c is not None else None)
        if batch_sizes is None:
            inputs = [projected[t] for t in range(x.shape[0])]
        else:  # step t: the rows of the batch_sizes[t] sequences still running
            ends = itertools.accumulate(batch_sizes)
            inputs = [projected[end - n:end] for n, end in zip(batch_sizes, ends)]
        hidden, mode = self.hidden_size, self.mode
        h_init, c_init = h, c
        if reverse and inputs and inputs[-1].shape[0] < h.shape[0]:
            n = inputs[-1].shape[0]  # backward: the longest sequences start at the last step
            h, c = h[:n], None if c is None else c[:n]
        ended = []  # forward: the final (h, c) of sequences that ended, shortest first
        ys = [None] * len(inputs)
        for t in (range(len(inputs) - 1, -1, -1) if reverse else range(len(inputs))):
            n, running = inputs[t].shape[0], h.shape[0]
            if n < running:  # forward: sequences n.. ended at the step before
                ended.append((h[n:], None if c is None else c[n:]))
                h, c = h[:n], None if c is None else c[:n]
            elif n > running:  # backward: sequences start here, at their own last element
                h = cat([h, h_init[running:n]])
                c = None if c is None else cat([c, c_init[running:n]])
            recurrent = F.linear(h, w_hh, b_hh)
            if mode == "LSTM":
                h, c = _lstm_step(inputs[t] + recurrent, c, hidden)
                if w_hr is not None:
                    h = F.linear(h, w_hr)
            elif mode == "GRU":
                h = _gru_step(inputs[t], recurrent, h, hidden)
            else:
                pre = inputs[t] + recurrent
                h = pre.tanh() if mode == "RNN_TANH" else pre.relu()
            ys[t] = h
        if ended:  # the batch in its (sorted) order: the longest sequences' rows first
            h = cat([h] + [e[0] for e in reversed(ended)])
            c = None if c is None else cat([c] + [e[1] for e in reversed(ended)])
        if not ys:  # an empty sequence: no outputs, the state unchanged
            return zeros((0,) + tuple(h.shape), dtype=x.dtype, device=x.device), h, c
        return (stack(ys) if batch_sizes is None else cat(ys)), h, c

    _lower_layer = autocast_op("lower")(_layer)
    _composite_layer = autocast_op("lower on cuda")(_layer)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


def _refuse_proj_size(proj_size) -> None:
    """RNN and GRU take no ``proj_size``: PyTorch's ValueError for any value given, 0
    included."""
    if proj_size is not None:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


class RNN(RNNBase):
    r"""A multi-layer Elman RNN: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` for each element
    of the sequence (``nonlinearity='relu'``: relu instead of tanh). Arguments, layers,
    directions, input and state shapes as ``LSTM``'s (no cell state, no projection):
    ``forward(input, h_0=None)`` returns ``output, h_n``.

    Example:
        >>> rnn = tg.nn.RNN(10, 20, 2)
        >>> output, hn = rnn(tg.randn(5, 3, 10))
        >>> output.shape, hn.shape
        (tritongrad.Size([5, 3, 20]), tritongrad.Size([2, 3, 20]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None,
                 proj_size: int | None = None):
        _refuse_proj_size(proj_size)
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """A multi-layer long short-term memory RNN. For each element of the sequence, each layer
    computes::

        i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)
        f = sigmoid(W_if x + b_if + W_hf h + b_hf)
        g = tanh(W_ig x + b_ig + W_hg h + b_hg)
        o = sigmoid(W_io x + b_io + W_ho h + b_ho)
        c' = f * c + i * g
        h' = o * tanh(c')          (times W_hr when proj_size > 0)

    Layer ``l > 0`` takes the previous layer's h (with dropout ``dropout`` between layers in
    training); ``bidirectional`` adds a layer reading the sequence backwards, whose h is
    concatenated to the forward one.

    Args:
        input_size, hidden_size: the features of x and of h (and c).
        num_layers: stacked layers (default 1).
        bias: use b_ih and b_hh (default True).
        batch_first: input and output are (N, L, H) instead of (L, N, H).
        dropout: dropout probability on the outputs of every layer but the last.
        bidirectional: add the backward direction.
        proj_size: project h to this size (0: no projection).

    ``forward(input, (h_0, c_0)=None)``: input (L, N, H_in) (or (L, H_in) unbatched), h_0
    (D * num_layers, N, H_out), c_0 (D * num_layers, N, H_cell), zeros by default. Returns
    ``output, (h_n, c_n)``, output (L, N, D * H_out). ``input`` may also be a
    ``PackedSequence`` (``nn.utils.rnn.pack_padded_sequence``): output is then one too, and
    h_n, c_n hold each sequence's state after its own last element.

    Example:
        >>> rnn = tg.nn.LSTM(10, 20, 2)
        >>> output, (hn, cn) = rnn(tg.randn(5, 3, 10))
        >>> output.shape, hn.shape
        (tritongrad.Size([5, 3, 20]), tritongrad.Size([2, 3, 20]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Tensor | None) -> tuple:
        """(num_layers * num_directions, batch, hidden_size): c_0's size."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch,
                self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: tuple,  # type: ignore[override]
                           batch_sizes: Tensor | None) -> None:
        """``check_input`` then the sizes of h_0 and c_0."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: tuple, permutation: Tensor | None) -> tuple:  # type: ignore
        """(h, c) with their batch dim reordered by ``permutation``."""
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)


class GRU(RNNBase):
    r"""A multi-layer gated recurrent unit RNN. For each element of the sequence, each layer
    computes::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    Arguments, layers, directions, input and state shapes as ``LSTM``'s (no cell state, no
    projection): ``forward(input, h_0=None)`` returns ``output, h_n``.

    Example:
        >>> gru = tg.nn.GRU(10, 20, 2, batch_first=True)
        >>> output, hn = gru(tg.randn(3, 5, 10))
        >>> output.shape, hn.shape
        (tritongrad.Size([3, 5, 20]), tritongrad.Size([2, 3, 20]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None,
                 proj_size: int | None = None):
        _refuse_proj_size(proj_size)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)


# -- cells: one step ---------------------------------------------------------------------------

class RNNCellBase(Module):
    """The base of RNNCell, LSTMCell and GRUCell (one step of the layer with the same
    ``mode``), with PyTorch's constructor: ``weight_ih`` (num_chunks * hidden_size,
    input_size), ``weight_hh`` (num_chunks * hidden_size, hidden_size) and, with ``bias``,
    ``bias_ih`` and ``bias_hh`` (num_chunks * hidden_size), all U(-1/sqrt(hidden),
    1/sqrt(hidden)), as the layers'. Subclasses define ``forward``."""

    mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        shapes = [("weight_ih", (gates, input_size)), ("weight_hh", (gates, hidden_size))]
        if bias:
            shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        for name, shape in shapes:
            setattr(self, name, Parameter(zeros(shape, device=device, dtype=dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _input(self, input: Tensor) -> tuple[Tensor, bool]:
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D "
                             f"instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        unbatched = input.ndim == 1
        return (input.unsqueeze(0) if unbatched else input), unbatched

    def _state(self, hx, x: Tensor, unbatched: bool) -> Tensor:
        if hx is None:
            return zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
        if hx.ndim != (1 if unbatched else 2):
            raise RuntimeError(f"{type(self).__name__}: Expected hidden to be "
                               f"{1 if unbatched else 2}D, got {hx.ndim}D instead")
        return hx.unsqueeze(0) if unbatched else hx

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class _GatedCell(RNNCellBase):
    """LSTMCell and GRUCell: their chunks are their mode's gates."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, _GATES[self.mode], device, dtype)


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu).
    ``forward(input, hx=None)``: input (N, H_in) or (H_in,), hx (N, H) (zeros by default)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched)
        h = _rnn_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh,
                      relu=self.nonlinearity == "relu")
        return h.squeeze(0) if unbatched else h


class LSTMCell(_GatedCell):
    """One LSTM step (``LSTM``'s equations). ``forward(input, (h, c)=None)`` returns
    ``(h', c')``."""

    mode = "LSTM"

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        x, unbatched = self._input(input)
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"lstm_cell(): argument 'hx' (position 2) must be tuple of "
                            f"Tensors, not {type(hx).__name__}")
        h, c = (None, None) if hx is None else hx
        h, c = self._state(h, x, unbatched), self._state(c, x, unbatched)
        h, c = lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(_GatedCell):
    """One GRU step (``GRU``'s equations). ``forward(input, hx=None)`` returns ``h'``."""

    mode = "GRU"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched)
        h = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h.squeeze(0) if unbatched else h
