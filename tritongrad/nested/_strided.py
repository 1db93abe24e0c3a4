"""``StridedNestedTensor``: nested tensors in the strided layout (PyTorch's default).

Note [Strided layout]
  A strided nested tensor holds B components of the same number of dimensions that may differ
  in any of them (``(2, 3)`` and ``(4, 5)``). Its storage is one flat buffer, ``values()``,
  the components flattened one after another (row-major, each contiguous), and its structure
  is the tuple of the components' sizes, ``_sizes``: component i is the ``_starts[i]`` ...
  slice of the buffer viewed with ``_sizes[i]``. That is PyTorch's own representation (a
  buffer with nested sizes, strides and offsets), less the strides: every component here is
  contiguous, so a transpose copies.

  As the jagged ``NestedTensor`` (Note [Jagged layout]), the tensor is an alias of its buffer
  made by ``as_subclass``: pointwise ops run once on the buffer, ops that keep each row of a
  regular last dimension together (``linear``, ``softmax`` and ``layer_norm`` over regular
  trailing dims, ``sum`` over the last dim) run once on the buffer seen as ``(rows, D)``,
  views that only relabel sizes (``view``, ``reshape``, ``unsqueeze``, ``squeeze``) wrap the
  same buffer, and the rest runs per component (a Python loop over the batch) and packs the
  results again. Autograd records ordinary ops throughout. A nested leaf is Note [Nested
  leaves]'s.

  The class derives from the jagged ``NestedTensor`` for what the layouts share (``is_nested``,
  the leaf and ``.grad`` machinery, the view hooks); everything that reads the jagged
  structure is overridden here, and its ops are its own table (``_strided_ops.py``): a jagged
  handler never sees a strided tensor, because dispatch hands an op to the subclass first.
"""

from __future__ import annotations

import tritongrad as tg
from tritongrad.autograd import overrides as _overrides
from tritongrad.autograd.ops.views import as_subclass
from tritongrad.autograd.tensor import Tensor, wrap_dim

from ._tensor import NestedTensor

__all__ = ["StridedNestedTensor"]


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def wrap(buffer: Tensor, sizes: tuple) -> "StridedNestedTensor":
    """A strided nested tensor over the flat ``buffer`` (an alias keeping its history) whose
    components have ``sizes`` (Note [Strided layout])."""
    out = as_subclass(buffer, StridedNestedTensor)
    out.__dict__["_sizes"] = tuple(tuple(int(n) for n in s) for s in sizes)
    out.__dict__["_ragged"] = None
    return out


def wrap_leaf(buffer: Tensor, sizes: tuple, requires_grad: bool) -> "StridedNestedTensor":
    """A strided nested leaf (Note [Nested leaves]) over a detached ``buffer``."""
    leaf = buffer.detach()
    if not requires_grad:
        return wrap(leaf, sizes)
    leaf.requires_grad_(True)
    with tg.enable_grad():
        out = wrap(leaf, sizes)
    out.__dict__["_leaf"] = leaf
    return out


def pack(parts: list, like: Tensor | None = None) -> "StridedNestedTensor":
    """The tensors ``parts`` (differentiable) as the components of a new strided nested
    tensor; ``like`` gives the dtype and device of an empty one."""
    if not parts:
        ref = like if like is not None else tg.empty(0)
        return wrap(tg.empty(0, dtype=ref.dtype, device=ref.device), ())
    buffer = tg.cat([p.reshape(-1) for p in parts])
    return wrap(buffer, tuple(tuple(p.shape) for p in parts))


class StridedNestedTensor(NestedTensor):
    """A nested tensor in the strided layout (PyTorch's ``torch.nested`` default,
    ``layout=torch.strided``): B tensors of the same number of dimensions that may differ in
    any of them, held in one flat buffer (Note [Strided layout]).

    Make one with :func:`tritongrad.nested.nested_tensor` (a leaf) or
    :func:`~tritongrad.nested.as_nested_tensor` (keeps the components' history). ``size(i)``
    is defined where every component has the same size in dim i; ``size()`` and ``shape`` are
    refused, as PyTorch's. Pointwise ops, ``bmm`` / ``matmul`` of two nested tensors,
    ``linear``, ``softmax``, ``layer_norm``, ``sum`` over the last dim, ``transpose``,
    ``reshape`` / ``view`` and ``scaled_dot_product_attention`` are supported (docs/nested.md);
    other ops are refused.

    Example::

        >>> import tritongrad.nested
        >>> nt = tritongrad.nested.nested_tensor([tritongrad.ones(2, 3), tritongrad.ones(4, 5)])
        >>> nt.layout, nt.dim(), nt.size(0)
        (tritongrad.strided, 3, 2)
        >>> tritongrad.nested.to_padded_tensor(nt * 2, 0.0).shape
        tritongrad.Size([2, 4, 5])
    """

    # (replaced below the class, as NestedTensor's: the first instance installs the check)
    __torch_function__ = _overrides._disabled_torch_function_impl

    # -- the structure ---------------------------------------------------------------------
    @property
    def _starts(self) -> list:
        starts = self.__dict__.get("_starts_cache")
        if starts is None:
            starts, at = [], 0
            for s in self._sizes:
                starts.append(at)
                at += _numel(s)
            self.__dict__["_starts_cache"] = starts
        return starts

    def _components(self) -> list:
        """The components as views of ``values()`` (differentiable)."""
        v = self.values()
        return [v.narrow(0, at, _numel(s)).view(s) for at, s in zip(self._starts, self._sizes)]

    def _component(self, i: int) -> Tensor:
        s = self._sizes[i]
        return self.values().narrow(0, self._starts[i], _numel(s)).view(s)

    def _regular(self, d: int) -> int | None:
        """The size of nested dim ``d`` (>= 1) where all components have the same, else None."""
        sizes = {s[d - 1] for s in self._sizes}
        return sizes.pop() if len(sizes) == 1 else None

    def offsets(self):
        raise AttributeError("offsets() is defined for nested tensors in the jagged layout "
                             "only; this one is strided")

    def lengths(self):
        raise AttributeError("lengths() is defined for nested tensors in the jagged layout "
                             "only; this one is strided")

    # -- what it is --------------------------------------------------------------------------
    @property
    def layout(self):
        """``tritongrad.strided``."""
        return tg.strided

    @property
    def shape(self):
        raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. Please file "
                           "an issue.")

    def size(self, dim: int | None = None) -> int:
        """The size of dimension ``dim``: the batch size for 0, else the components' common
        size in ``dim - 1``; an error where they differ (``dim`` is irregular) or without
        ``dim``, as PyTorch's (a strided nested tensor has no shape)."""
        if dim is None:
            return self.shape
        d = wrap_dim(dim, self.dim(), "size")
        if d == 0:
            return len(self._sizes)
        n = self._regular(d)
        if n is None:
            raise RuntimeError(f"Given dimension {d} is irregular and does not have a size.")
        return n

    def dim(self) -> int:
        return 1 + (len(self._sizes[0]) if self._sizes else 0)

    @property
    def ndim(self) -> int:
        return self.dim()

    def numel(self) -> int:
        """The number of elements in all components."""
        return sum(_numel(s) for s in self._sizes)

    def __len__(self) -> int:
        return len(self._sizes)

    def is_contiguous(self, memory_format=None) -> bool:
        """True: the components lie one after another in a contiguous buffer."""
        return True

    # -- autograd ----------------------------------------------------------------------------
    def _like(self, values: Tensor) -> "StridedNestedTensor":
        return wrap(values, self._sizes)

    def _new_leaf(self, requires_grad: bool) -> "StridedNestedTensor":
        return wrap_leaf(self.values(), self._sizes, requires_grad)

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Computes the gradient of this nested tensor with respect to the graph's leaves,
        ``gradient`` (a strided nested tensor of the same sizes) being its own gradient."""
        if gradient is None:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not isinstance(gradient, StridedNestedTensor) or gradient._sizes != self._sizes:
            raise RuntimeError(f"backward: the gradient must be a strided nested tensor with "
                               f"the output's component sizes {list(self._sizes)}")
        with tg.DisableTorchFunctionSubclass():
            tg.autograd.backward([self.values()], [gradient.values()],
                                 retain_graph=retain_graph, create_graph=create_graph,
                                 inputs=inputs)

    # -- printing ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        with tg.DisableTorchFunctionSubclass():
            rg = ", requires_grad=True" if self.requires_grad else ""
            lines = []
            with tg.no_grad():
                for c in self._components():
                    text = repr(c.detach())
                    text = text[:-1] + rg + ")"
                    lines.append("  " + text.replace("\n", "\n  "))
            body = ",\n".join(lines)
            tail = ""
            fn = self.grad_fn
            if fn is not None:
                tail = f", grad_fn=<{_node_name(fn)}>"
            elif self.requires_grad:
                tail = ", requires_grad=True"
            return f"nested_tensor([\n{body}\n]{tail})" if lines else f"nested_tensor([]{tail})"

    __str__ = __repr__

    # -- copies --------------------------------------------------------------------------------
    def __reduce_ex__(self, proto):
        with tg.DisableTorchFunctionSubclass():
            buffer = self.values().detach()
        return _rebuild, (buffer, self._sizes, self.requires_grad and self.is_leaf)

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        if id(self) in memo:
            return memo[id(self)]
        with tg.DisableTorchFunctionSubclass():
            buffer = self.values().detach().clone()
        out = _rebuild(buffer, self._sizes, self.requires_grad)
        memo[id(self)] = out
        return out


def _node_name(fn) -> str:
    """The name PyTorch shows for a nested result's grad_fn: the op's node, not the alias the
    nested tensor is of its buffer."""
    name = fn.name()
    if name == "AliasBackward0" and fn.next_functions:
        inner = fn.next_functions[0][0]
        if inner is not None and inner.name() != "torch::autograd::AccumulateGrad":
            return inner.name()
    return name


def _rebuild(buffer: Tensor, sizes: tuple, requires_grad: bool) -> StridedNestedTensor:
    """A pickled or deep-copied strided nested tensor, rebuilt."""
    return wrap_leaf(buffer, sizes, requires_grad)


def _strided_torch_function(cls, func, types, args=(), kwargs=None):
    """StridedNestedTensor's ``__torch_function__``: the op's handler (``_strided_ops.py``),
    or refused."""
    from ._strided_ops import handle
    return handle(cls, func, types, args, kwargs or {})


StridedNestedTensor.__torch_function__ = classmethod(_strided_torch_function)
_overrides.override_from_first_instance(StridedNestedTensor)
