"""``ShapeProp`` (PyTorch's ``torch.fx.passes.shape_prop``): runs a GraphModule on example
inputs and records each node's result shape, dtype and strides in
``node.meta['tensor_meta']``."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a Tensor result."""

    shape: tuple
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any | None
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result: Any) -> TensorMetadata:
    import tritongrad
    memory_format = None
    for name in ("contiguous_format", "channels_last", "channels_last_3d"):
        fmt = getattr(tritongrad, name, None)
        if fmt is None:
            continue
        try:
            if result.is_contiguous(memory_format=fmt):
                memory_format = fmt
                break
        except (TypeError, RuntimeError, ValueError):
            continue
    return TensorMetadata(tuple(result.shape), result.dtype, bool(result.requires_grad),
                          tuple(result.stride()), memory_format, False, {})


class ShapeProp(Interpreter):
    """Runs the module on inputs (:meth:`propagate`) and puts, in each node producing
    Tensors, ``node.meta['tensor_meta']`` (a :class:`TensorMetadata`, or the same nesting of
    them as the result) and ``node.meta['type']`` (the result's type)::

        >>> import tritongrad as tg
        >>> from tritongrad.fx.passes.shape_prop import ShapeProp
        >>> gm = tg.fx.symbolic_trace(tg.nn.Sequential(tg.nn.Linear(4, 3)))
        >>> _ = ShapeProp(gm).propagate(tg.randn(2, 4))
        >>> [n.meta["tensor_meta"].shape for n in gm.graph.nodes if n.op != "output"]
        [(2, 4), (2, 3)]
    """

    def run_node(self, n: Node) -> Any:
        from ...autograd.tensor import Tensor
        result = super().run_node(n)
        found_tensor = False

        def extract(obj: Any) -> Any:
            nonlocal found_tensor
            if isinstance(obj, Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        """Runs the module on ``args``, recording the metadata; returns its result."""
        return super().run(*args)
