"""``replace_pattern`` (PyTorch's ``torch.fx.subgraph_rewriter``): finds the places where a
GraphModule computes what ``pattern`` computes and puts ``replacement``'s computation there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .graph import Graph
from .graph_module import GraphModule, _copy_attr
from .node import Node

__all__ = ["Match", "InternalMatch", "ReplacedPatterns", "replace_pattern",
           "replace_pattern_with_filters"]


class Match(NamedTuple):
    """One replaced occurrence: ``anchor`` the graph node matched to the pattern's (first)
    returned node, ``nodes_map`` each pattern node to the graph node it matched."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _as_graph(fn: Callable | Graph | GraphModule) -> tuple[Graph, Any]:
    if isinstance(fn, Graph):
        return fn, fn.owning_module
    if isinstance(fn, GraphModule):
        return fn.graph, fn
    from ._symbolic_trace import symbolic_trace
    gm = symbolic_trace(fn)
    return gm.graph, gm


def _same_target(a: Any, b: Any) -> bool:
    # a tritongrad function and its __torch_function__ wrapper are the same operation
    ua = getattr(a, "__torch_function_wrapped__", a)
    ub = getattr(b, "__torch_function_wrapped__", b)
    return a == b or ua is ub


class _Matcher:
    def __init__(self, pattern: Graph, ignore_literals: bool = False) -> None:
        self.pattern = pattern
        self.ignore_literals = ignore_literals
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        outputs = [n for n in pattern.nodes if n.op == "output"]
        if len(outputs) != 1:
            raise ValueError("replace_pattern: the pattern graph must have one output node")
        returned = outputs[0].args[0]
        self.returning = list(returned) if isinstance(returned, (tuple, list)) else [returned]
        if not all(isinstance(r, Node) and r.op != "placeholder" for r in self.returning):
            raise ValueError("replace_pattern: the pattern must return values it computes "
                             "(not its inputs or constants)")

    def match_at(self, anchor: Node) -> dict[Node, Node] | None:
        self.map: dict[Node, Node] = {}
        self.used: dict[Node, Node] = {}
        if not self._match_node(self.returning[0], anchor):
            return None
        # further returned nodes: matched from their own inputs, anywhere in the graph
        for r in self.returning[1:]:
            if r not in self.map:
                found = False
                for cand in anchor.graph.nodes:
                    saved = (dict(self.map), dict(self.used))
                    if self._match_node(r, cand):
                        found = True
                        break
                    self.map, self.used = saved
                if not found:
                    return None
        # the matched nodes' values may not be used outside the match, but for those returned
        inner = {g for p, g in self.map.items() if p.op not in ("placeholder", "output")}
        returned = {self.map[r] for r in self.returning}
        for g in inner - returned:
            if any(u not in inner for u in g.users):
                return None
        return self.map

    def _match_node(self, pn: Node, gn: Any) -> bool:
        if not isinstance(gn, Node):
            return False
        if pn in self.map:
            return self.map[pn] is gn
        if pn.op == "placeholder":
            if gn in self.used and self.used[gn].op != "placeholder":
                return False
            self.map[pn] = gn
            self.used.setdefault(gn, pn)
            return True
        if gn in self.used or pn.op != gn.op or not _same_target(pn.target, gn.target):
            return False
        self.map[pn], self.used[gn] = gn, pn
        if self._match_args(pn.args, gn.args) and set(pn.kwargs) == set(gn.kwargs) \
                and all(self._match_args(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs):
            return True
        del self.map[pn], self.used[gn]
        return False

    def _match_args(self, pa: Any, ga: Any) -> bool:
        if isinstance(pa, Node):
            return self._match_node(pa, ga)
        if isinstance(pa, (list, tuple)):
            return isinstance(ga, (list, tuple)) and len(pa) == len(ga) and \
                all(self._match_args(a, b) for a, b in zip(pa, ga))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and set(pa) == set(ga) and \
                all(self._match_args(pa[k], ga[k]) for k in pa)
        if isinstance(ga, Node):
            return False
        return self.ignore_literals or (type(pa) is type(ga) and pa == ga)


@dataclass
class InternalMatch:
    """A match as ``match_filters`` and ``replacement_callback`` see it: the graph nodes
    matched to the pattern's returned nodes (``anchors``, ``returning_nodes``) and inputs
    (``placeholder_nodes``), and ``nodes_map`` from each pattern node to its graph node."""

    anchors: list[Node]
    nodes_map: dict[Node, Node] = field(default_factory=dict)
    placeholder_nodes: list[Node] = field(default_factory=list)
    returning_nodes: list[Node] = field(default_factory=list)


@dataclass
class ReplacedPatterns:
    """One replaced occurrence (``replace_pattern_with_filters``): ``anchor`` and ``nodes_map``
    as :class:`Match`, and the nodes the replacement added."""

    anchor: Node
    nodes_map: dict[Node, Node]
    replacements: list[Node]


def replace_pattern(gm: GraphModule, pattern: Callable | Graph | GraphModule,
                    replacement: Callable | Graph | GraphModule) -> list[Match]:
    """Replaces each non-overlapping occurrence of ``pattern`` in ``gm.graph`` by
    ``replacement`` and recompiles ``gm``. Both are functions (traced with
    ``symbolic_trace``), GraphModules or Graphs with the same inputs; ``pattern``'s inputs
    match any value in the graph, its operations must be the same operations (op and target)
    with the same constant arguments, and its intermediate values may not be used elsewhere.

    Example::

        >>> import tritongrad as tg
        >>> def f(x, w):
        ...     return tg.relu(tg.add(x, w)) * 2
        >>> gm = tg.fx.symbolic_trace(f)
        >>> def pattern(a, b):
        ...     return tg.relu(tg.add(a, b))
        >>> def replacement(a, b):
        ...     return tg.nn.functional.gelu(a + b)
        >>> len(tg.fx.replace_pattern(gm, pattern, replacement))
        1

    Returns:
        the list of :class:`Match` es replaced, in graph order.
    """
    done = _replace_pattern(gm, pattern, replacement)
    return [Match(anchor=r.anchor, nodes_map=r.nodes_map) for r in done]


def replace_pattern_with_filters(
        gm: GraphModule, pattern: Callable | Graph | GraphModule,
        replacement: Callable | Graph | GraphModule | None = None,
        match_filters: list[Callable[[InternalMatch, Graph, Graph], bool]] | None = None,
        ignore_literals: bool = False,
        replacement_callback: Callable[[InternalMatch, Graph, Graph], Graph] | None = None
) -> list[ReplacedPatterns]:
    """:func:`replace_pattern` with more control: an occurrence is replaced only if every
    filter in ``match_filters`` (called with the match, ``gm.graph`` and the pattern's graph)
    returns True; ``ignore_literals`` lets the pattern's constant arguments match any
    constant; ``replacement_callback`` (same arguments) returns the replacement graph of each
    match, in place of ``replacement``.

    Returns:
        a :class:`ReplacedPatterns` per occurrence replaced, in graph order.
    """
    if (replacement is None) == (replacement_callback is None):
        raise ValueError("replace_pattern_with_filters: give exactly one of replacement and "
                         "replacement_callback")
    return _replace_pattern(gm, pattern, replacement, match_filters or [], ignore_literals,
                            replacement_callback)


def _replace_pattern(gm: GraphModule, pattern: Callable | Graph | GraphModule,
                     replacement: Callable | Graph | GraphModule | None,
                     match_filters: list | None = None, ignore_literals: bool = False,
                     replacement_callback: Callable | None = None) -> list[ReplacedPatterns]:
    pattern_graph, _ = _as_graph(pattern)
    matcher = _Matcher(pattern_graph, ignore_literals)
    graph = gm.graph
    found: list[InternalMatch] = []
    taken: set[Node] = set()
    for node in list(graph.nodes):
        if node in taken or node.op in ("placeholder", "output"):
            continue
        m = matcher.match_at(node)
        if m is None:
            continue
        inner = {g for p, g in m.items() if p.op != "placeholder"}
        if inner & taken:
            continue
        match = InternalMatch(anchors=[m[matcher.returning[0]]], nodes_map=dict(m),
                              placeholder_nodes=[m[p] for p in matcher.placeholders],
                              returning_nodes=[m[r] for r in matcher.returning])
        if not all(f(match, graph, pattern_graph) for f in match_filters or []):
            continue
        taken |= inner
        found.append(match)

    done: list[ReplacedPatterns] = []
    replaced: dict[Node, Node] = {}  # returned nodes of earlier matches -> their replacement
    for match in found:
        if replacement_callback is not None:
            replacement_graph, replacement_owner = \
                _as_graph(replacement_callback(match, graph, pattern_graph))
        else:
            replacement_graph, replacement_owner = _as_graph(replacement)
        rep_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
        if len(rep_placeholders) != len(matcher.placeholders):
            raise ValueError(f"replace_pattern: pattern takes {len(matcher.placeholders)} "
                             f"inputs but replacement takes {len(rep_placeholders)}")
        m = {p: _follow(replaced, g) for p, g in match.nodes_map.items()}
        returned = [m[r] for r in matcher.returning]
        inner = {g for p, g in m.items() if p.op != "placeholder"}
        # new nodes go before the first outside use of a returned value (after all inputs)
        outside_users = [u for r in returned for u in r.users if u not in inner]
        order = {n: i for i, n in enumerate(graph.nodes)}
        insert_before = min(outside_users, key=order.__getitem__) if outside_users else \
            max(returned, key=order.__getitem__).next
        val_map = {rp: m[pp] for rp, pp in zip(rep_placeholders, matcher.placeholders)}
        if replacement_owner is not None:
            for rn in replacement_graph.nodes:
                if rn.op in ("get_attr", "call_module") and not _has(gm, rn.target):
                    _copy_attr(replacement_owner, gm, rn.target)
        before = set(graph.nodes)
        with graph.inserting_before(insert_before):
            copied = graph.graph_copy(replacement_graph, val_map)
        copied = list(copied) if isinstance(copied, (tuple, list)) else [copied]
        if len(copied) != len(returned):
            raise ValueError(f"replace_pattern: pattern returns {len(returned)} values but "
                             f"replacement returns {len(copied)}")
        for old, new in zip(returned, copied):
            old.replace_all_uses_with(new)
            replaced[old] = new
        for g in reversed([n for n in graph.nodes if n in inner]):
            graph.erase_node(g)
        done.append(ReplacedPatterns(anchor=match.anchors[0], nodes_map=match.nodes_map,
                                     replacements=[n for n in graph.nodes if n not in before]))
    gm.recompile()
    return done


def _follow(replaced: dict[Node, Node], n: Node) -> Node:
    while n in replaced:
        n = replaced[n]
    return n


def _has(mod: Any, target: str) -> bool:
    for atom in target.split("."):
        if not hasattr(mod, atom):
            return False
        mod = getattr(mod, atom)
    return True



