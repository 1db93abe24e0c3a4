"""``FlopCounterMode``: counts the FLOPs of matrix products, convolutions and attention run
inside it, in forward and in backward, per module (PyTorch's ``torch.utils.flop_counter``).

How it sees ops: PyTorch's counter is a ``TorchDispatchMode`` that sees each ATen op below
autograd. tritongrad's is an observer (``autograd/observe.py``), told of each op run, in
forward and inside backward, and of each backward node the engine applies. The ops report
PyTorch's names (``aten::mm``, ``aten::addmm``, ``aten::bmm``; composites such as
``aten::linear`` and ``matmul`` report the products they are made of, as PyTorch decomposes
them). Three of tritongrad's ops are one fused kernel where PyTorch's has another ATen name,
and their backward is one node that runs no observed op; they are counted under PyTorch's
names (Note [Fused ops]):

    tritongrad event or node                 counted as (PyTorch on CUDA)
    aten::convolution (conv1d/2d, and the    aten.convolution
      transposed ones)
    ConvolutionBackward0, ConvTransposeBackward0   aten.convolution_backward
    aten::scaled_dot_product_attention       aten._scaled_dot_product_flash_attention
      (the fused kernel)
    ScaledDotProductFlashAttentionBackward0  aten._scaled_dot_product_flash_attention_backward

An op with a formula is counted once: the ops it runs inside (an observed composite part, a
backward node's own ops) are not counted again, as PyTorch's mode does not see below an op it
counts. A backward node's rule runs with grad mode off; ops run inside it with grad mode on
are a checkpoint's recomputation (unpacking what the node saved), and count. Under
``create_graph=True`` the fused nodes' rules run as recorded, differentiable ops (products),
and those are counted instead of the node.

Note [Fused ops]
    A fused node's formula needs its inputs' shapes. They come from the node's saved tensors;
    where saved-tensor hooks packed them into something without a shape (checkpointing), from
    what the forward op reported under the node's sequence number, when that forward ran
    inside this counter.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections import defaultdict
from functools import wraps
from typing import Any, Callable

from ..autograd import observe
from ..autograd._pytree import tree_map
from ..autograd.ops.conv import ConvolutionBackward0, ConvTransposeBackward0
from ..autograd.ops.nn import ScaledDotProductFlashAttentionBackward0
from ..autograd.state import state
from ..autograd.tensor import Tensor
from ..library import OpOverloadPacket
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]

prod = math.prod


# -- op keys -----------------------------------------------------------------------------------

class _OpKey(OpOverloadPacket):
    """An op as the registry and the counts key it (PyTorch keys them by ``aten.mm``): one key
    per op name, equal to any ``tg.ops`` packet of the same op (OpOverloadPacket compares by
    name); ``str`` gives ``aten.mm``."""


_KEYS: dict[str, _OpKey] = {}


def _missing(qualname: str) -> Callable:
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{qualname}: tritongrad has no function of this name; "
                                  f"FlopCounterMode counts its fused kernels under it")
    return fn


def _key(target) -> _OpKey:
    """The one key of ``target``, a ``tg.ops.<ns>.<op>`` packet or a qualified name."""
    name = target if isinstance(target, str) else target._qualname
    key = _KEYS.get(name)
    if key is None:
        fn = target._fn if isinstance(target, OpOverloadPacket) else None
        if fn is None:
            from .. import library
            ns, op = name.split("::")
            try:
                fn = getattr(getattr(library.ops, ns), op)._fn
            except AttributeError:
                fn = _missing(name)
        key = _KEYS[name] = _OpKey(name, fn)
    return key


class _Aten:
    """``aten.<op>``: the key of ``aten::<op>`` (PyTorch's ``torch.ops.aten``)."""

    def __getattr__(self, op: str) -> _OpKey:
        if op.startswith("__"):
            raise AttributeError(op)
        return _key("aten::" + op)


aten = _Aten()


# -- the formulas ------------------------------------------------------------------------------

def get_shape(i):
    """A Tensor's shape; anything else as it is."""
    return i.shape if isinstance(i, Tensor) else i


flop_registry: dict[Any, Any] = {}


def shape_wrapper(f: Callable) -> Callable:
    """``f`` called with each Tensor argument (and ``out_val``, as ``out_shape``) replaced by
    its shape: what a formula registered without ``get_raw`` receives."""
    @wraps(f)
    def nf(*args, out_val=None, **kwargs):
        args, kwargs, out_shape = tree_map(get_shape, (args, kwargs, out_val))
        return f(*args, out_shape=out_shape, **kwargs)
    return nf


def register_flop_formula(targets, get_raw: bool = False) -> Callable:
    """Decorator: registers a FLOP formula for an op or a list of ops, for every
    ``FlopCounterMode``.

    Args:
        targets: ``tg.ops.<namespace>.<op>`` (an ``OpOverloadPacket``: ``tg.ops.aten.mm``, a
            custom op's ``tg.ops.mylib.my_op``), or a list of them.
        get_raw: pass the formula the op's arguments as they are; by default (False) each
            Tensor is replaced by its shape and the result's shape comes as ``out_shape``.

    The formula is called as ``formula(*args, out_shape=..., **kwargs)`` and returns the FLOP
    count. tritongrad's observers see an op's Tensor arguments and its other arguments, not
    their original order: ops other than the matrix products, convolutions and attention
    this module knows get their Tensors first, then the rest (a custom op reports its Tensor
    arguments only), and ``out_shape`` None.

    Raises:
        ValueError: a target is not an op packet.
        RuntimeError: a target already has a formula.

    Example:
        >>> @register_flop_formula(tg.ops.mylib.scale)  # doctest: +SKIP
        ... def scale_flop(x_shape, *args, out_shape=None, **kwargs) -> int:
        ...     return prod(x_shape)
    """
    def register_fun(flop_formula: Callable) -> Callable:
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)

        def register(target) -> None:
            if not isinstance(target, OpOverloadPacket):
                raise ValueError(f"register_flop_formula(targets): expected each target to be "
                                 f"OpOverloadPacket (i.e. torch.ops.mylib.foo), JitFunction, "
                                 f"or HigherOrderOperator, got {target} which is of type "
                                 f"{type(target)}")
            key = _key(target)
            if key in flop_registry:
                raise RuntimeError(f"duplicate registrations for {key}")
            flop_registry[key] = flop_formula

        tree_map(register, targets)
        return flop_formula
    return register_fun


@register_flop_formula(aten.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """Count flops for matmul."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    # (2 * k - 1 would be exact: k multiplications and k - 1 additions per output; PyTorch
    # counts 2 * k)
    return m * n * 2 * k


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for addmm."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for the bmm operation."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for the baddbmm operation."""
    return bmm_flop(a_shape, b_shape)


@register_flop_formula(aten._scaled_mm)
def _scaled_mm_flop(a_shape, b_shape, scale_a_shape, scale_b_shape, bias_shape=None,
                    scale_result_shape=None, out_dtype=None, use_fast_accum=False,
                    out_shape=None, **kwargs) -> int:
    """Count flops for _scaled_mm."""
    return mm_flop(a_shape, b_shape)


def conv_flop_count(x_shape: list[int], w_shape: list[int], out_shape: list[int],
                    transposed: bool = False) -> int:
    """Count flops for convolution: only multiplications and their additions, not the bias.

    For each point of the output's spatial dims (of the input's, for a transposed
    convolution) the filter meets the input once: ``prod(spatial) * prod(filter_size)``
    multiply-adds, times the batch and the input and output channels (the weight's first two
    dims), times 2.

    Args:
        x_shape: the input shape before convolution.
        w_shape: the filter shape.
        out_shape: the output shape after convolution.
        transposed: is the convolution transposed.
    Returns:
        int: the number of flops.
    """
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@register_flop_formula([aten.convolution, aten._convolution, aten.cudnn_convolution,
                        aten._slow_conv2d_forward, aten.convolution_overrideable])
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args,
              out_shape=None, **kwargs) -> int:
    """Count flops for convolution."""
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


def transpose_shape(shape):
    """``shape`` with its first two dims swapped."""
    return [shape[1], shape[0]] + list(shape[2:])


@register_flop_formula(aten.convolution_backward)
def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                       transposed, _output_padding, _groups, output_mask, out_shape,
                       **kwargs) -> int:
    """Count flops for the convolution's backward: the input gradient is a transposed
    convolution of the output gradient with the weight (a plain one for a transposed
    convolution), the weight gradient a convolution of the input with the output gradient
    (batch and channel dims swapped)."""
    t = transpose_shape
    flop_count = 0
    if output_mask[0]:
        grad_input_shape = get_shape(out_shape[0])
        flop_count += conv_flop_count(grad_out_shape, w_shape, grad_input_shape, not transposed)
    if output_mask[1]:
        grad_weight_shape = get_shape(out_shape[1])
        if transposed:
            flop_count += conv_flop_count(t(grad_out_shape), t(x_shape), t(grad_weight_shape),
                                          transposed=False)
        else:
            flop_count += conv_flop_count(t(x_shape), t(grad_out_shape), t(grad_weight_shape),
                                          transposed=False)
    return flop_count


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """Count flops for self-attention: ``q @ k^T`` and ``scores @ v`` as batched products
    over (batch * query heads); grouped-query attention (fewer key/value heads) broadcasts the
    key/value heads."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    if not (b == _b2 == _b3 and h_kv == _h3 and d_q == _d2 and s_k == _s3):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: "
                             f"q={query_shape}, k={key_shape}, v={value_shape}")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_flop_count: query heads ({h_q}) must be a multiple of "
                             f"key/value heads ({h_kv})")
    total_flops = bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))
    total_flops += bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v))
    return total_flops


@register_flop_formula([aten._scaled_dot_product_efficient_attention,
                        aten._scaled_dot_product_flash_attention,
                        aten._scaled_dot_product_cudnn_attention])
def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """Count flops for self-attention (a causal mask is not accounted for, as PyTorch's)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """Count flops for self-attention's backward: the scores recomputed, then the gradients
    through ``scores @ v`` (two products) and through ``q @ k^T`` (two more)."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    _b4, _h4, _s4, _d4 = grad_out_shape
    if not (b == _b2 == _b3 == _b4 and h_kv == _h3 and h_q == _h4):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_backward_flop_count: query heads ({h_q}) must be a "
                             f"multiple of key/value heads ({h_kv})")
    if not (d_q == _d2 and d_v == _d4 and s_k == _s3 and s_q == _s4):
        raise AssertionError("sdpa_backward_flop_count: grad_out/value/key/query shapes are "
                             "incompatible")
    bh = b * h_q
    total_flops = bmm_flop((bh, s_q, d_q), (bh, d_q, s_k))
    total_flops += bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))
    total_flops += bmm_flop((bh, s_k, s_q), (bh, s_q, d_v))
    total_flops += bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))
    total_flops += bmm_flop((bh, d_q, s_q), (bh, s_q, s_k))
    return total_flops


@register_flop_formula([aten._scaled_dot_product_efficient_attention_backward,
                        aten._scaled_dot_product_flash_attention_backward,
                        aten._scaled_dot_product_cudnn_attention_backward])
def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs) -> int:
    """Count flops for self-attention backward."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


# -- the table ---------------------------------------------------------------------------------

suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number: int) -> str:
    """The suffix the table shows ``number`` with, with some overflow: 1.01B shows as
    1001M."""
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number: int, suffix: str) -> str:
    """``number`` in units of ``suffix``, three decimals: ``"1.234K"``."""
    index = suffixes.index(suffix)
    return f"{number / 1000 ** index:.3f}" + suffixes[index]


def convert_to_percent_str(num: int, denom: int) -> str:
    """``num / denom`` as a percentage with two decimals; ``"0%"`` for a zero ``denom``."""
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


def normalize_tuple(x):
    """``x`` as a tuple (a non-tuple as a one-element tuple)."""
    return x if isinstance(x, tuple) else (x,)


def _number(s: str):
    """``s`` as an int or float where it reads as one (as the tabulate package, which
    PyTorch prints its table with, reads cells), else None."""
    for kind in (int, float):
        try:
            return kind(s)
        except ValueError:
            pass
    return None


def _tabulate(rows: list, headers: list, colalign: tuple) -> str:
    """The table as ``tabulate.tabulate(rows, headers, colalign=...)`` prints it in its
    default ("simple") format with whitespace kept: columns two spaces apart, each at least
    its header plus two wide, a column whose every cell reads as a number printed as numbers
    (ints as ints, floats with ``g``), trailing spaces dropped."""
    cols = [list(c) for c in zip(*rows)]
    for c in cols:
        nums = [_number(s) for s in c]
        if all(n is not None for n in nums):
            kind = float if any(isinstance(n, float) for n in nums) else int
            c[:] = [format(float(n), "g") if kind is float else format(n) for n in nums]
    widths = [max([len(h) + 2] + [len(s) for s in c]) for h, c in zip(headers, cols)]

    def line(cells) -> str:
        return "  ".join(s.ljust(w) if a == "left" else s.rjust(w)
                         for s, w, a in zip(cells, widths, colalign)).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in zip(*cols)]
    return "\n".join(out)


# -- the counter -------------------------------------------------------------------------------

class FlopCounterMode:
    """``FlopCounterMode`` is a context manager that counts the number of flops within its
    context: of matrix products (``mm``, ``addmm``, ``bmm``, and ``linear``, ``matmul``,
    ``einsum`` through them), convolutions and scaled dot-product attention, in forward and in
    backward, by op and by module.

    It also supports hierarchical output: the counts of each op are filed under "Global" and
    under the fully qualified name of every module running it (the outermost by its class
    name, ``"Sequential.0"`` below it; in backward, the module whose backward runs), found by
    ``ModuleTracker``.

    Args:
        mods: not needed anymore (a warning says so): modules are found as they run.
        depth: how deep a module hierarchy the printed table shows.
        display: print the table (``get_table(depth)``) on exit.
        custom_mapping: ``{op: formula}`` replacing or adding formulas for this counter
            (``tg.ops.aten.mm``, a custom op); each formula gets shapes unless it has a true
            ``_get_raw`` attribute, as with ``register_flop_formula``.

    Example:
        >>> mod = tg.nn.Linear(8, 4)
        >>> with FlopCounterMode(display=False) as flop_counter:
        ...     mod(tg.randn(2, 8)).sum().backward()
        >>> flop_counter.get_total_flops()  # forward 2*2*8*4, backward twice that
        384
    """

    def __init__(self, mods=None, depth: int = 2, display: bool = True,
                 custom_mapping: dict[Any, Any] | None = None) -> None:
        self.flop_counts: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode: _FlopCounterObserver | None = None
        if custom_mapping is None:
            custom_mapping = {}
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        custom = {}
        for k, v in custom_mapping.items():
            if not isinstance(k, OpOverloadPacket):
                raise ValueError(f"FlopCounterMode(custom_mapping): expected each key to be an "
                                 f"OpOverloadPacket (i.e. tg.ops.mylib.foo), got {k!r} of type "
                                 f"{type(k)}")
            custom[_key(k)] = v if getattr(v, "_get_raw", False) else shape_wrapper(v)
        self.flop_registry = {**flop_registry, **custom}
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self) -> int:
        """The FLOPs counted in all (under "Global")."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[Any, int]]:
        """Return the flop counts as a dictionary of dictionaries: the outer dictionary is
        keyed by module name ("Global" for all), the inner one by operation
        (``aten.mm``).

        Returns:
            Dict[str, Dict[Any, int]]: The flop counts as a dictionary.
        """
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as a table (Module, FLOP, % Total), modules down to ``depth`` levels
        (default: the counter's ``depth``), each followed by its ops; "Global" first where
        some FLOPs ran outside every module."""
        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999
        header = ["Module", "FLOP", "% Total"]
        values: list = []
        global_flops = self.get_total_flops()
        global_suffix = get_suffix_str(global_flops)
        is_global_subsumed = False

        def process_mod(mod_name: str, depth: int) -> list:
            nonlocal is_global_subsumed
            total_flops = sum(self.flop_counts[mod_name].values())
            is_global_subsumed |= total_flops >= global_flops
            padding = " " * depth
            rows = [[padding + mod_name, convert_num_with_suffix(total_flops, global_suffix),
                     convert_to_percent_str(total_flops, global_flops)]]
            for k, v in self.flop_counts[mod_name].items():
                rows.append([padding + " - " + str(k),
                             convert_num_with_suffix(v, global_suffix),
                             convert_to_percent_str(v, global_flops)])
            return rows

        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))

        # "Global" is shown only where some FLOPs are not already within a module
        if "Global" in self.flop_counts and not is_global_subsumed:
            for value in values:
                value[0] = " " + value[0]
            values = process_mod("Global", 0) + values

        if len(values) == 0:
            values = [["Global", "0", "0%"]]
        return _tabulate(values, header, ("left", "right", "right"))

    # (not reentrant, as PyTorch's)
    def __enter__(self) -> FlopCounterMode:
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterObserver(self)
        observe.add_observer(self.mode)
        return self

    def __exit__(self, *args) -> bool:
        if self.mode is None:
            raise AssertionError("Internal error: FlopCounter.__exit__ called but mode is None")
        observe.remove_observer(self.mode)
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _count_flops(self, func_packet, out, args, kwargs):
        if func_packet in self.flop_registry:
            flop_count = self.flop_registry[func_packet](*args, **kwargs, out_val=out)
            for par in set(self.mod_tracker.parents):
                self.flop_counts[par][func_packet] += flop_count
        return out


# -- from observed ops to PyTorch's ops --------------------------------------------------------
# Each translator takes what the observer was told and returns (PyTorch's op name, its
# arguments in PyTorch's order, keyword arguments, the result's shape).

def _mm(op, inputs, params):
    a, b = inputs
    return "aten::mm", (a, b), {}, (a.shape[0], b.shape[1])


def _addmm(op, inputs, params):
    c, a, b = inputs
    beta, alpha = params
    return "aten::addmm", (c, a, b), {"beta": beta, "alpha": alpha}, (a.shape[0], b.shape[1])


def _bmm(op, inputs, params):
    a, b = inputs
    return "aten::bmm", (a, b), {}, (a.shape[0], a.shape[1], b.shape[2])


def _baddbmm(op, inputs, params):  # (beta and alpha, where given, are not in the formula)
    c, a, b = inputs
    return "aten::baddbmm", (c, a, b), {}, (a.shape[0], a.shape[1], b.shape[2])


def _scaled_mm(op, inputs, params):  # (input, mat2, scale_a, scale_b, bias, scale_result)
    a, b = inputs[:2]
    return "aten::_scaled_mm", tuple(inputs[:4]), {}, (a.shape[0], b.shape[1])


def _torch_padding(padding) -> list:
    """((top, bottom), (left, right)) as PyTorch's per-dim padding where symmetric."""
    return [lo if lo == hi else (lo, hi) for lo, hi in padding]


def _conv_out_shape(x_shape, w_shape, stride, padding, dilation) -> tuple:
    spatial = [(n + lo + hi - d * (k - 1) - 1) // s + 1
               for n, k, s, (lo, hi), d in zip(x_shape[2:], w_shape[2:], stride, padding,
                                               dilation)]
    return (x_shape[0], w_shape[0], *spatial)


def _output_padding(size, x_shape, w_shape, stride, padding, dilation) -> list:
    """A transposed convolution's output_padding: what its output ``size`` has beyond the
    size the input, stride, padding and dilation give."""
    return [o - ((n - 1) * s - lo - hi + d * (k - 1) + 1)
            for o, n, k, s, (lo, hi), d in zip(size, x_shape[2:], w_shape[2:], stride, padding,
                                               dilation)]


def _conv(op, inputs, params):
    x, w = inputs[:2]
    bias = inputs[2] if len(inputs) > 2 else None
    stride, padding, dilation, groups = params[:4]
    transposed = op is ConvTransposeBackward0
    if transposed:  # (params[4]: the output's spatial size, output_padding included)
        size = params[4]
        out = (x.shape[0], w.shape[1] * groups, *size)
        output_padding = _output_padding(size, x.shape, w.shape, stride, padding, dilation)
    else:
        out = _conv_out_shape(x.shape, w.shape, stride, padding, dilation)
        output_padding = [0] * len(stride)
    return ("aten::convolution", (x, w, bias, list(stride), _torch_padding(padding),
                                  list(dilation), transposed, output_padding, groups), {}, out)


def _sdpa(op, inputs, params):
    q, k, v = inputs
    scale, causal = params
    out = (*q.shape[:-1], v.shape[-1])
    return ("aten::_scaled_dot_product_flash_attention", (q, k, v, 0.0, causal, False),
            {"scale": scale}, out)


_FORWARD = {"aten::mm": _mm, "aten::addmm": _addmm, "aten::bmm": _bmm,
            "aten::baddbmm": _baddbmm, "aten::_scaled_mm": _scaled_mm,
            "aten::convolution": _conv, "aten::scaled_dot_product_attention": _sdpa}
# the fused ops whose inputs' shapes their backward node may need (Note [Fused ops])
_FUSED = ("aten::convolution", "aten::_scaled_dot_product_flash_attention")


def _saved_shapes(node) -> list | None:
    """The shapes of what ``node`` saved, without unpacking it; None where a saved-tensor
    hook packed one into something without a shape, or the node was released."""
    saved = node._saved
    if not isinstance(saved, tuple):
        return None
    shapes = []
    for s in saved:
        shape = None if s is None else getattr(s.stored(), "shape", None)
        if shape is None:
            return None
        shapes.append(tuple(shape))
    return shapes


def _conv_backward(counter, node, grads):
    g = grads[0]
    shapes = _saved_shapes(node) or counter.forward_shapes.get(node._seq)
    if g is None or shapes is None:
        return None
    x_shape, w_shape = shapes[:2]
    needs = tuple(node.needs_input_grad) + (False,) * 3
    mask = [needs[0], needs[1], needs[2]]
    transposed = type(node) is ConvTransposeBackward0
    groups = node.groups
    c_out = w_shape[1] * groups if transposed else w_shape[0]
    bias_sizes = [c_out] if len(node.next_functions) > 2 else None
    out = (x_shape if mask[0] else None, w_shape if mask[1] else None,
           (c_out,) if mask[2] else None)
    if transposed:
        output_padding = _output_padding(g.shape[2:], x_shape, w_shape, node.stride,
                                         node.padding, node.dilation)
    else:
        output_padding = [0] * len(node.stride)
    args = (g, x_shape, w_shape, bias_sizes, list(node.stride), _torch_padding(node.padding),
            list(node.dilation), transposed, output_padding, groups, mask)
    return "aten::convolution_backward", args, {}, out


def _sdpa_backward(counter, node, grads):
    shapes = _saved_shapes(node) or counter.forward_shapes.get(node._seq)
    if shapes is None:
        return None
    q, k, v, out = shapes[:4]
    g = grads[0] if grads[0] is not None else out
    args = (g, q, k, v, out, None, None, None, q[-2], k[-2], 0.0, node.causal, None, None)
    return ("aten::_scaled_dot_product_flash_attention_backward", args, {"scale": node.scale},
            (q, k, v))


_BACKWARD = {ConvolutionBackward0: _conv_backward, ConvTransposeBackward0: _conv_backward,
             ScaledDotProductFlashAttentionBackward0: _sdpa_backward}


class _Local(threading.local):
    inside = 0  # counted ops open in this thread: the ops they run are not counted again
    nodes = 0   # counted backward nodes open: their rule's ops (run with grad mode off) are
                # not counted again; ops run with grad mode on (a checkpoint's recomputation
                # while the node unpacks what it saved) are


class _FlopCounterObserver:
    """The observer a ``FlopCounterMode`` adds while active (PyTorch's ``_FlopCounterMode``,
    its dispatch mode). Its tokens: 0 nothing counted, 1 an op (or what runs inside one), 2 a
    backward node."""

    def __init__(self, counter: FlopCounterMode) -> None:
        self.counter = counter
        self.local = _Local()
        # op name -> key, for the ops this counter has a formula for
        self.formulas = {k._qualname: k for k in counter.flop_registry}
        self.forward_shapes: dict = {}  # seq -> input shapes of a fused op (Note [Fused ops])

    def _count(self, name: str, args: tuple, kwargs: dict, out) -> bool:
        key = self.formulas.get(name)
        if key is None:
            return False
        self.counter._count_flops(key, out, args, kwargs)
        return True

    def op_enter(self, op, seq: int, inputs: tuple, params: tuple) -> int:
        local = self.local
        if local.inside or (local.nodes and not state.grad_enabled):
            local.inside += 1
            return 1
        name = observe.event_name(op)
        translate = _FORWARD.get(name)
        if translate is not None:
            name, args, kwargs, out = translate(op, inputs, params)
            if name in _FUSED and seq >= 0:
                self.forward_shapes[seq] = [tuple(t.shape) for t in args[:3]
                                            if isinstance(t, Tensor)] + [out]
        elif name in self.formulas:  # (a registered op: its Tensors first, then the rest)
            args, kwargs, out = tuple(inputs) + tuple(params), {}, None
        else:
            return 0
        if self._count(name, args, kwargs, out):
            local.inside += 1
            return 1
        return 0

    def op_exit(self, token: int) -> None:
        if token == 1:
            self.local.inside -= 1
        elif token == 2:
            self.local.nodes -= 1

    def node_enter(self, node, grads) -> int:
        local = self.local
        if local.inside:
            local.inside += 1
            return 1
        translate = _BACKWARD.get(type(node))
        # (with grad mode on, create_graph=True, a fused node's rule runs as recorded ops,
        # which are counted as they run)
        if translate is None or state.grad_enabled:
            return 0
        found = translate(self, node, grads)
        if found is not None and self._count(*found):
            local.nodes += 1
            return 2
        return 0

    node_exit = op_exit
