"""Dynamically quantized modules (PyTorch's ``torch.ao.nn.quantized.dynamic``): the weights
are quantized ahead of time, the activations at run time from their own range, and the
outputs are float."""

from __future__ import annotations

import numpy as np

import tritongrad as tg

from ... import _qtensor as q
from . import modules as nnq

__all__ = ["Linear", "LSTM"]


def _dynamic_linear(x, weight: q.QuantizedTensor, bias, reduce_range: bool):
    """FBGEMM's dynamic quantized linear: ``x`` quantized to quint8 from its own range (all
    of it at once), the products with the int8 ``weight`` summed exactly, and the float
    output ``acc * float32(x_scale * w_scale) + bias`` rounded once to float32 (one fused
    multiply-add)."""
    from .functional import _shifted
    xq = q.quantize_per_tensor_dynamic(x.detach().to(tg.float32), q.quint8, reduce_range)
    xs, _ = _shifted(xq)
    w, w_scales = _shifted(weight)
    lead = tuple(x.shape[:-1])
    acc = (xs.reshape(-1, xs.shape[-1]) @ w.t()).cpu().numpy()
    act_w = (np.float32(xq.q_scale()) * w_scales.astype(np.float32)).astype(np.float32)
    y = acc.astype(np.float64) * act_w.astype(np.float64)
    if bias is not None:
        y = y + bias.cpu().numpy().astype(np.float64)
    return tg.as_tensor(y.astype(np.float32), device=x.device).reshape(*lead, w.shape[0])


class Linear(nnq.Linear):
    """A dynamic quantized linear module with floating point tensor as inputs and outputs:
    each input is quantized to quint8 with parameters chosen from its min and max (PyTorch's
    ``ChooseQuantizationParams``, ``reduce_range`` as the weight observer's), multiplied with
    the int8 weight exactly, and the result scaled back to float32, plus the bias.

    Example:
        >>> m = Linear(20, 30)
        >>> m(tg.randn(128, 20)).shape
        tritongrad.Size([128, 30])
    """

    _FLOAT_MODULE = (tg.nn.Linear,)
    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype=q.qint8):
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4
        self.reduce_range = True

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._weight.dtype}, qscheme={self._weight.qscheme()}")

    def forward(self, x):
        self._on(x.device)
        return _dynamic_linear(x, self._weight, self._bias, self.reduce_range)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """Create a dynamic quantized module from a float module (``nn.Linear`` or QAT)."""
        if type(mod) not in (tg.nn.Linear,) and not hasattr(mod, "weight_fake_quant"):
            raise AssertionError(f"nn.quantized.dynamic.Linear.from_float only works for "
                                 f"nn.Linear, got: {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        weight_observer = mod.qconfig.weight()
        dtype = weight_observer.dtype
        if dtype is not q.qint8:
            raise RuntimeError(f"Unsupported dtype specified for dynamic quantized Linear: "
                               f"{dtype} (only qint8 is supported)")
        weight_observer(mod.weight)
        qweight = nnq._quantize_weight(mod.weight.detach().float(), weight_observer)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear


class LSTM(tg.nn.Module):
    """A dynamic quantized LSTM (PyTorch's ``torch.ao.nn.quantized.dynamic.LSTM``): the
    input-hidden and hidden-hidden weights of each layer and direction are int8 (per tensor,
    from the qconfig's weight observer), each matrix product a dynamic quantized linear
    (``_dynamic_linear``: the input's parameters from its range, with ``reduce_range``),
    the gates float32. As PyTorch's CPU
    kernel, a layer's input-hidden product is taken over the whole sequence at once (one set
    of input parameters), the hidden-hidden one step by step.

    Input ``(seq, batch, input_size)`` (``batch_first``: batch first) and optional
    ``(h_0, c_0)``; returns ``output, (h_n, c_n)``. Not supported: packed sequences,
    unbatched input, ``proj_size``."""

    _FLOAT_MODULE = (tg.nn.LSTM,)

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype=q.qint8) -> None:
        super().__init__()
        self.mode = "LSTM"
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.dtype = float(dropout), bidirectional, dtype
        self.reduce_range = True
        # [layer * num_directions + direction] -> (w_ih, w_hh, b_ih, b_hh)
        self._all_weight_values: list[tuple] = []

    def _get_name(self) -> str:
        return "DynamicQuantizedLSTM"

    proj_size = 0  # (not taken: the float LSTM's repr then reads the same)
    extra_repr = tg.nn.LSTM.extra_repr

    def _cell_run(self, x, h, c, weights, reverse: bool):
        w_ih, w_hh, b_ih, b_hh = weights
        gates_in = _dynamic_linear(x, w_ih, b_ih, self.reduce_range)  # (seq, batch, 4H)
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        out = [None] * x.shape[0]
        for t in steps:
            gates = _dynamic_linear(h, w_hh, b_hh, self.reduce_range) + gates_in[t]
            i, f, g, o = gates.chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            out[t] = h
        return tg.stack(out, 0), h, c

    def forward(self, input, hx=None):
        if not isinstance(input, tg.Tensor):
            raise NotImplementedError("DynamicQuantizedLSTM: packed sequences are not "
                                      "supported")
        if input.dim() != 3:
            raise ValueError(f"DynamicQuantizedLSTM: expected a 3-D input (batched), got "
                             f"{input.dim()}-D")
        x = input.detach().to(tg.float32)
        if self.batch_first:
            x = x.transpose(0, 1)
        dirs = 2 if self.bidirectional else 1
        shape = (self.num_layers * dirs, x.shape[1], self.hidden_size)
        if hx is None:
            h0 = c0 = tg.zeros(*shape, device=x.device)
        else:
            h0, c0 = hx
            for i, t in enumerate((h0, c0)):
                if tuple(t.shape) != shape:
                    raise RuntimeError(f"Expected hidden[{i}] size {shape}, got "
                                       f"{list(t.shape)}")
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                o, h, c = self._cell_run(x, h0[k], c0[k], self._all_weight_values[k], d == 1)
                outs.append(o)
                hn.append(h)
                cn.append(c)
            x = outs[0] if dirs == 1 else tg.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = tg.nn.functional.dropout(x, self.dropout, True)
        out = x.transpose(0, 1) if self.batch_first else x
        return out, (tg.stack(hn, 0), tg.stack(cn, 0))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """A dynamic quantized LSTM from an ``nn.LSTM`` with a ``qconfig``: each weight
        quantized with its own observer (``mod.qconfig.weight()``)."""
        if type(mod) not in cls._FLOAT_MODULE:
            raise AssertionError(f"nn.quantized.dynamic.LSTM.from_float only works for "
                                 f"nn.LSTM, got: {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.bias:  # (PyTorch's packed cell parameters need the biases)
            raise AssertionError("mod.bias must be True")
        if getattr(mod, "proj_size", 0):
            raise NotImplementedError("DynamicQuantizedLSTM: proj_size is not supported")
        new = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias,
                  mod.batch_first, mod.dropout, mod.bidirectional)
        dtype = mod.qconfig.weight().dtype
        if dtype is not q.qint8:
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype} "
                               f"(only qint8 is supported)")

        def quantized(w):
            observer = mod.qconfig.weight()
            observer(w)
            return nnq._quantize_weight(w.detach().float(), observer)
        for layer in range(mod.num_layers):
            for sfx in ("", "_reverse")[:2 if mod.bidirectional else 1]:
                def p(kind):
                    return getattr(mod, f"{kind}_l{layer}{sfx}", None)
                biases = [None if b is None else b.detach().to(tg.float32).clone()
                          for b in (p("bias_ih"), p("bias_hh"))]
                new._all_weight_values.append(
                    (quantized(p("weight_ih")), quantized(p("weight_hh")), *biases))
        return new
