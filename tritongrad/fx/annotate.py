"""``annotate`` (PyTorch's ``torch.fx.annotate``): gives a traced value a type annotation."""

from __future__ import annotations

from typing import Any

from .proxy import Proxy

__all__ = ["annotate"]


def annotate(val: Any, type: Any) -> Any:  # noqa: A002  (PyTorch's parameter name)
    """While tracing, sets the type of the node behind ``val`` (shown in ``str(graph)`` and
    written as an annotation in the generated code); outside tracing returns ``val`` as is.
    Raises RuntimeError when the node has a type already."""
    if isinstance(val, Proxy):
        if val.node.type:
            raise RuntimeError(f"Tried to annotate a value that already had a type on it! "
                               f"Existing type is {val.node.type} and new type is {type}. "
                               f"This could happen if you tried to annotate a function "
                               f"parameter value (in which case you should use the type slot "
                               f"on the function signature) or you called annotate on the same "
                               f"value twice")
        val.node.type = type
    return val
