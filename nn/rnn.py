"""Recurrent layers: LSTM (multi-layer, optionally bidirectional, with projections), built from
differentiable Tensor ops (``F.linear``, ``sigmoid``, ``tanh``), so its gradients, to any order,
come from composition.

Parameters, their names, shapes and order, the gate order (input, forget, cell, output) and
the initialisation U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) are PyTorch's, so a state dict
moves between the two. Each layer projects the whole input sequence with one matmul
(``x W_ih^T + b_ih`` for every step at once); only the recurrent ``h W_hh^T`` runs per step.
PackedSequence inputs are not supported.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ..autograd.ops.creation import zeros
from ..autograd.ops.shape import cat, stack
from ..autograd.tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["LSTM"]


class LSTM(Module):
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
    ``output, (h_n, c_n)``, output (L, N, D * H_out).

    Example:
        >>> rnn = tg.nn.LSTM(10, 20, 2)
        >>> output, (hn, cn) = rnn(tg.randn(5, 3, 10))
        >>> output.shape, hn.shape
        (tritongrad.Size([5, 3, 20]), tritongrad.Size([2, 3, 20]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 \
                or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        for name, value in (("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero" if name == "hidden_size"
                                 else "num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        self.mode = "LSTM"
        directions = 2 if bidirectional else 1
        out_size = proj_size or hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (4 * hidden_size, layer_in)),
                          ("weight_hh", (4 * hidden_size, out_size))]
                if bias:
                    shapes += [("bias_ih", (4 * hidden_size,)), ("bias_hh", (4 * hidden_size,))]
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

    def forward(self, input: Tensor, hx: tuple | None = None):
        if not isinstance(input, Tensor):
            raise TypeError(f"LSTM: expected a Tensor input (PackedSequence is not supported), "
                            f"got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.ndim}D instead")
        unbatched = input.ndim == 2
        x = input.unsqueeze(1) if unbatched else \
            (input.transpose(0, 1) if self.batch_first else input)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        directions = 2 if self.bidirectional else 1
        out_size = self.proj_size or self.hidden_size
        batch = x.shape[1]
        h_shape = (self.num_layers * directions, batch, out_size)
        c_shape = (self.num_layers * directions, batch, self.hidden_size)
        if hx is None:
            h0 = zeros(h_shape, dtype=x.dtype, device=x.device)
            c0 = zeros(c_shape, dtype=x.dtype, device=x.device)
        else:
            h0, c0 = hx
            if unbatched:
                if h0.ndim != 2 or c0.ndim != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D "
                                       f"but got ({h0.ndim}-D, {c0.ndim}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            elif h0.ndim != 3 or c0.ndim != 3:
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but "
                                   f"got ({h0.ndim}-D, {c0.ndim}-D) tensors")
            for i, (t, shape) in enumerate(((h0, h_shape), (c0, c_shape))):
                if tuple(t.shape) != shape:
                    raise RuntimeError(f"Expected hidden[{i}] size {shape}, got "
                                       f"{tuple(t.shape)}")
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                y, h, c = self._run(x, h0[k], c0[k], *self._weights(layer, direction),
                                    reverse=bool(direction))
                outs.append(y)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if directions == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n, c_n = stack(h_n), stack(c_n)
        if unbatched:
            return x.squeeze(1), (h_n.squeeze(1), c_n.squeeze(1))
        return (x.transpose(0, 1) if self.batch_first else x), (h_n, c_n)

    def _run(self, x: Tensor, h: Tensor, c: Tensor, w_ih, w_hh, b_ih, b_hh, w_hr,
             reverse: bool):
        """One layer in one direction over the sequence x (L, N, H_in): (outputs (L, N,
        H_out), h, c)."""
        steps = x.shape[0]
        projected = F.linear(x, w_ih, b_ih)  # every step's input term at once
        hidden = self.hidden_size
        ys = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            gates = projected[t] + F.linear(h, w_hh, b_hh)
            i = gates[:, :hidden].sigmoid()
            f = gates[:, hidden:2 * hidden].sigmoid()
            g = gates[:, 2 * hidden:3 * hidden].tanh()
            o = gates[:, 3 * hidden:].sigmoid()
            c = f * c + i * g
            h = o * c.tanh()
            if w_hr is not None:
                h = F.linear(h, w_hr)
            ys[t] = h
        if not ys:  # an empty sequence: no outputs, the state unchanged
            return zeros((0,) + tuple(h.shape), dtype=x.dtype, device=x.device), h, c
        return stack(ys), h, c

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
