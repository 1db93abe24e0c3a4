"""``tritongrad.fx``: capture a program as a graph, change it, and run the result
(PyTorch's ``torch.fx``).

- :func:`symbolic_trace` / :class:`Tracer` run a module's ``forward`` on :class:`Proxy`
  objects and record each operation as a :class:`Node` of a :class:`Graph`;
- :class:`GraphModule` is an ``nn.Module`` whose ``forward`` is generated from a graph;
- :class:`Interpreter` / :class:`Transformer` run or rewrite a graph node by node;
- :func:`replace_pattern` rewrites every occurrence of a subgraph;
- ``passes.shape_prop.ShapeProp`` records shapes in ``node.meta``.

Example::

    >>> import tritongrad as tg
    >>> class M(tg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.linear = tg.nn.Linear(4, 5)
    ...     def forward(self, x):
    ...         return tg.relu(self.linear(x)).sum(-1)
    >>> gm = tg.fx.symbolic_trace(M())
    >>> print(gm.code.strip())
    def forward(self, x):
        linear = self.linear(x);  x = None
        relu = tritongrad.relu(linear);  linear = None
        sum_1 = relu.sum(-1);  relu = None
        return sum_1

See docs/fx.md.
"""

from . import annotate, immutable_collections, passes  # noqa: F401
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_aggregate, map_arg
from .proxy import Attribute, Proxy, TraceError
from .subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "wrap", "PH", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "Attribute", "TraceError", "replace_pattern",
           "map_arg", "map_aggregate", "has_side_effect", "PythonCode"]
