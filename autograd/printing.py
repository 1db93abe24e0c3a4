"""``repr`` of tensors in PyTorch's format: ``tensor([1., 2.], requires_grad=True)``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..runtime import dtype as dtypes

if TYPE_CHECKING:
    from .tensor import Tensor


class PrintOptions:
    """PyTorch's ``PRINT_OPTS``: what ``set_printoptions`` sets and every repr reads."""

    __slots__ = ("edgeitems", "linewidth", "precision", "sci_mode", "threshold")

    def __init__(self):
        self.precision, self.threshold, self.edgeitems, self.linewidth = 4, 1000, 3, 80
        self.sci_mode = None


PRINT_OPTS = PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set options for printing tensors (PyTorch's, taken from NumPy).

    Args:
        precision: digits after the point for floating values (default 4).
        threshold: number of elements above which a tensor prints summarized (default 1000).
        edgeitems: items shown at the start and end of each summarized dim (default 3).
        linewidth: characters per line before a line break (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``: sets the four above (the
            arguments given override it).
        sci_mode: True or False forces scientific notation on or off; None (the default,
            which every call without it restores) chooses from the values.

    Example:
        >>> tg.set_printoptions(precision=2)
        >>> tg.tensor([1.12345])
        tensor([1.12])
        >>> tg.set_printoptions(profile="default")
    """
    if profile is not None and profile in _PROFILES:
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options, as a dict ``set_printoptions(**d)`` takes back (PyTorch's
    ``torch._tensor_str.get_printoptions``).

    Example:
        >>> tg.autograd.printing.get_printoptions()["precision"]
        4
    """
    return {name: getattr(PRINT_OPTS, name)
            for name in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Sets print options (``set_printoptions``'s arguments) for the block, restoring the
    previous ones after it, even when it raises (PyTorch's ``torch._tensor_str.printoptions``).

    Example:
        >>> with tg.autograd.printing.printoptions(precision=1):
        ...     print(tg.tensor([1.25]))
        tensor([1.2])
    """
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


def _summarized(a: np.ndarray) -> np.ndarray:
    """The values a summarized print shows (the first and last ``edgeitems`` along each long
    dimension): PyTorch sizes its columns from these alone."""
    edge = PRINT_OPTS.edgeitems
    for axis, n in enumerate(a.shape):
        if n > 2 * edge:
            a = np.concatenate([a.take(range(edge), axis), a.take(range(n - edge, n), axis)],
                               axis)
    return a


class _Formatter:
    """PyTorch's ``_Formatter``: one column width for every value printed. Floating values
    print as ``2.`` when all are integral, else with four decimals, in scientific notation
    when the nonzero finite magnitudes span more than 1000x or pass 1e8 (or, non-integral, go
    below 1e-4); the width is the widest nonzero finite value's (other kinds: the widest
    value's)."""

    def __init__(self, a: np.ndarray):
        self.floating = a.dtype.kind == "f"
        self.int_mode, self.sci, self.width = True, False, 1
        if not self.floating:
            self.width = max((len(self._plain(v)) for v in a.ravel().tolist()), default=1)
            return
        vals = [v for v in a.ravel().tolist() if v != 0 and np.isfinite(v)]
        if not vals:
            return
        mags = [abs(v) for v in vals]
        lo, hi = min(mags), max(mags)
        self.int_mode = all(v == np.ceil(v) for v in vals)
        self.sci = (hi / lo > 1000.0 or hi > 1.0e8 or (not self.int_mode and lo < 1.0e-4)
                    if PRINT_OPTS.sci_mode is None else bool(PRINT_OPTS.sci_mode))
        p = PRINT_OPTS.precision
        if self.sci:
            self.width = max(len(f"{v:.{p}e}") for v in vals)
        elif self.int_mode:
            self.width = max(len(f"{v:.0f}") + 1 for v in vals)
        else:
            self.width = max(len(f"{v:.{p}f}") for v in vals)

    @staticmethod
    def _plain(v) -> str:
        return str(v)

    def format(self, v) -> str:
        if not self.floating:
            text = self._plain(v)
        elif self.sci:
            text = f"{v:.{PRINT_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{v:.0f}" + ("." if np.isfinite(v) else "")
        else:
            text = f"{v:.{PRINT_OPTS.precision}f}"
        return text.rjust(self.width)


def _value(v, real: _Formatter, imag: _Formatter | None) -> str:
    if imag is None:
        return real.format(v)
    re, im = real.format(v.real), (imag.format(v.imag) + "j").lstrip()
    return re + im if im[0] in "+-" else re + "+" + im


def _vector(a: np.ndarray, indent: int, summarize: bool, real, imag) -> str:
    width = real.width + 2 + (0 if imag is None else imag.width + 1)
    per_line = max(1, (PRINT_OPTS.linewidth - indent) // width)
    n, edge = a.shape[0], PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and n > 2 * edge:
        data = ([_value(v, real, imag) for v in a[:edge].tolist()] + [" ..."]
                + [_value(v, real, imag) for v in a[n - edge:].tolist()])
    else:
        data = [_value(v, real, imag) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, real, imag) -> str:
    if a.ndim == 0:
        return _value(a.item(), real, imag)
    if a.ndim == 1:
        return _vector(a, indent, summarize, real, imag)
    n, edge = a.shape[0], PRINT_OPTS.edgeitems
    rows = range(n) if not summarize or n <= 2 * edge else [*range(edge), None,
                                                            *range(n - edge, n)]
    parts = ["..." if i is None else _nested(a[i], indent + 1, summarize, real, imag)
             for i in rows]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _format_array(a: np.ndarray, indent: int) -> str:
    """The values part of PyTorch's tensor repr (``_tensor_str``) for host array ``a``."""
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    shown = _summarized(a) if summarize else a
    if a.dtype.kind == "c":
        real, imag = _Formatter(shown.real), _Formatter(shown.imag)
    else:
        real, imag = _Formatter(shown), None
    return _nested(a, indent, summarize, real, imag)


_FLOAT8_NP = frozenset(d.np for d in dtypes.FLOAT8_TYPES)  # (ml_dtypes' dtypes)


def _implied_dtype(dtype) -> bool:
    """Whether a repr's values imply ``dtype``, so that PyTorch shows no ``dtype=`` suffix:
    the default dtype, its complex counterpart, int64 and bool."""
    default = dtypes.get_default_dtype()
    return dtype in (default, dtypes.complex128 if default is dtypes.float64 else
                     dtypes.complex64, dtypes.int64, dtypes.bool)


def tensor_repr(t: Tensor, tensor_contents: str | None = None) -> str:
    """PyTorch's repr of dense tensor ``t``: its values, then the suffixes (device, size,
    dtype, grad_fn, tangent) that PyTorch shows. ``tensor_contents`` (PyTorch's
    ``Tensor.__repr__(tensor_contents=...)``, for subclasses) replaces the values."""
    # (a user's subclass shows its name, as PyTorch's: ``MyTensor([1., 2.])``)
    prefix = "tensor" if type(t).__module__.startswith("tritongrad") else type(t).__name__
    no_data = t.device.type == "meta"  # (Note [The meta device]: "...", the size, a dtype)
    if tensor_contents is None and no_data:
        body = "..."
    elif tensor_contents is None:
        a = t.detach().cpu()._host_array()
        if a.itemsize == 1 and a.dtype in _FLOAT8_NP:  # float8: shown by its values (PyTorch)
            a = a.astype(np.float32)
        body = _format_array(np.asarray(a), len(prefix) + 1)
    else:
        body = tensor_contents
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if no_data:  # (PyTorch's: the size always, and any dtype but the default)
        extras.append(f"size={tuple(t.shape)}")
        if t.dtype is not dtypes.get_default_dtype():
            extras.append(f"dtype={t.dtype}")
    elif t.numel() == 0 and t.ndim != 1:
        extras.append(f"size={tuple(t.shape)}")
    elif t.numel() and not PRINT_OPTS.edgeitems:  # (PyTorch's: the values show as "...")
        extras.append(f"size={tuple(t.shape)}")
    if no_data:
        pass
    elif not _implied_dtype(t.dtype) or (t.numel() == 0
                                         and t.dtype is not dtypes.get_default_dtype()):
        extras.append(f"dtype={t.dtype}")
    try:
        fn = t.grad_fn  # (a view's, regenerated if its base was modified in place since)
        name = None if fn is None else _fn_name(fn)
    except RuntimeError:
        # a view whose history cannot be regenerated (Note [View + in-place]): PyTorch
        # prints it rather than fail
        name = "Invalid"
    if name is not None:
        extras.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    from .forward_ad import current_tangent  # (forward_ad imports tensor, which imports this)
    tangent = current_tangent(t)
    if tangent is not None:
        extras.append(f"tangent={tangent!r}")
    # (wrapped as PyTorch's _add_suffixes: a suffix passing linewidth goes on a new line)
    text = _with_suffixes(prefix + "(" + body, extras, len(prefix) + 1, False)
    if prefix != "tensor":
        from ..nn.parameter import Parameter  # (nn imports autograd, which imports this)
        if isinstance(t, Parameter):  # a user's Parameter subclass: PyTorch's "P(MyP([...]))"
            text = f"Parameter({text})"
    return text


def _with_suffixes(body: str, suffixes: list, indent: int, force_newline: bool) -> str:
    """``body`` and its ``name=value`` suffixes, wrapped as PyTorch wraps them: each on the
    current line unless that would pass ``linewidth`` (or the first one when
    ``force_newline``), else on a new line indented by ``indent``."""
    parts = [body]
    line = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if force_newline or line + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            line, force_newline = indent + len(s), False
        else:
            parts.append(", " + s)
            line += len(s) + 2
    return "".join(parts) + ")"


def _part(t, indent: int) -> str:
    """``tensor(...)`` of a sparse tensor's indices or values (PyTorch adds the size of an
    empty one)."""
    a = np.asarray(t.detach().cpu()._host_array())
    body = "tensor(" + _format_array(a, indent)
    return body + (f", size={tuple(a.shape)})" if a.size == 0 else ")")


def sparse_repr(t: Tensor, tensor_contents: str | None = None) -> str:
    """PyTorch's repr of a sparse COO tensor: ``tensor(indices=tensor([[...]]),
    values=tensor([...]), size=(..), nnz=.., layout=torch.sparse_coo)`` (``tensor_contents``,
    as ``tensor_repr``'s, replaces the indices and values)."""
    pre = len("tensor(")
    if tensor_contents is not None:
        body = "tensor(" + tensor_contents
    else:
        body = ("tensor(indices=" + _part(t._indices(), pre + len("indices=tensor(")) + ",\n"
                + " " * pre + "values=" + _part(t._values(), pre + len("values=tensor(")))
    return _with_suffixes(body, sparse_suffixes(t), pre, force_newline=True)


def sparse_suffixes(t) -> list:
    """The ``name=value`` suffixes of a sparse tensor's repr (any layout), PyTorch's order."""
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes += [f"size={tuple(t.shape)}", f"nnz={t._nnz()}"]
    if not _implied_dtype(t.dtype):
        suffixes.append(f"dtype={t.dtype}")
    suffixes.append(f"layout={t.layout}")
    fn = t.grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{_fn_name(fn)}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return suffixes


def _fn_name(fn) -> str:
    """A node's name as a tensor's repr shows it: without the namespace of the engine's own
    nodes (``grad_fn=<CopySlices>``, whose ``name()`` is ``tritongrad::autograd::CopySlices``),
    as PyTorch's."""
    return fn.name().rsplit("::", 1)[-1]
