"""What the cost of a recorded node rests on (Note [Edges as two tuples], autograd/node.py):
a node keeps its edges as ``_next`` (nodes) and ``_nrs`` (output numbers), so each recorded op
leaves the node and one tuple for the cyclic garbage collector to track; ``next_functions``
still gives PyTorch's (node, output_nr) pairs. A graph is freed by reference counting alone
(no cycles), with or without backward, and a node drops its saved tensors after backward."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd.node import AccumulateGrad, Node


@pytest.fixture
def no_gc():
    """The cyclic collector off: whatever is freed is freed by reference counting."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _chain(x, n):
    y = x
    for _ in range(n):
        y = y + x
    return y


def test_next_functions_are_the_edges_tensor_edge_gives():
    x = tg.randn(3, requires_grad=True)
    c = tg.randn(3)
    h = x * 2.0
    parts = tg.randn(2, 3, requires_grad=True).unbind()  # outputs 0 and 1 of one node
    v = x[1:]
    for a, b in ((x, c), (c, x), (h, x), (parts[1], parts[0]), (parts[0], h), (v, v)):
        y = a * b
        edges = y.grad_fn.next_functions
        assert edges == (a._edge(), b._edge())
        assert all(type(e) is tuple and len(e) == 2 for e in edges)
    assert parts[1]._edge()[1] == 1
    y = parts[1] * parts[0]
    assert y.grad_fn._nrs == (1, 0)
    assert y.grad_fn._next == (parts[1].grad_fn, parts[0].grad_fn)
    z = parts[1].exp()
    assert z.grad_fn.next_functions == ((parts[1].grad_fn, 1),)
    # three inputs: the general path
    c = tg.randn(3, requires_grad=True)
    w = tg.lerp(h, parts[1], c)
    assert w.grad_fn.next_functions == (h._edge(), parts[1]._edge(), c._edge())
    assert w.grad_fn._nrs == (0, 1, 0)


def test_assigning_next_functions_splits_the_pairs():
    x = tg.randn(2, requires_grad=True)
    node = Node()
    assert node.next_functions == () and node._next == () and node._nrs == ()
    acc = x._grad_accumulator()
    node.next_functions = [(acc, 0), (None, 0), (x.exp().grad_fn, 3)]
    assert node._next == (acc, None, node._next[2]) and node._nrs == (0, 0, 3)
    assert node.next_functions == ((acc, 0), (None, 0), (node._next[2], 3))
    node.next_functions = ((acc, 0),)
    assert node.next_functions == ((acc, 0),)
    assert isinstance(AccumulateGrad(x).next_functions, tuple)
    assert AccumulateGrad(x).next_functions == ()


def test_usual_output_numbers_are_shared_and_untracked():
    x = tg.randn(3, requires_grad=True)
    a, b = (x * 2).exp(), x + 1
    for y in (a * b, a + x, x.tanh(), a.sin()):
        assert not any(y.grad_fn._nrs)
        assert not gc.is_tracked(y.grad_fn._nrs)
    nodes = [(a * b).grad_fn, (b * a).grad_fn]
    assert nodes[0]._nrs is nodes[1]._nrs


def test_a_recorded_op_leaves_two_tracked_objects(no_gc):
    """The node and its ``_next``: the edges' pairs and their tuple are not made (each tracked
    object that lives as long as the graph costs every full pass of the collector)."""
    x = tg.ones(1, requires_grad=True)
    _chain(x, 20)  # (the first calls' caches)
    n = 300
    before = len(gc.get_objects())
    y = _chain(x, n)
    grown = len(gc.get_objects()) - before
    # each node's output tensor and its version counter die with the next op; the last one's
    # live on (a few objects besides)
    assert grown <= 2 * n + 20, grown
    assert grown >= 2 * n - 20, grown  # (the measure sees the nodes at all)
    del y


@pytest.mark.parametrize("backward", ["none", "backward", "retain_graph"])
def test_a_graph_is_freed_by_reference_counting(no_gc, backward):
    x = tg.randn(4, 3, requires_grad=True)
    w = tg.randn(3, 5, requires_grad=True)
    y = x @ w
    z = (y.tanh() * y).sum(1)
    u = z.unbind()[1] * z[2] + (x * x).sum()
    nodes = []
    stack = [u.grad_fn]
    while stack:
        n = stack.pop()
        if n is not None and all(n is not m for m in nodes):
            nodes.append(n)
            stack.extend(n._next)
    assert len(nodes) >= 8
    refs = [weakref.ref(n) for n in nodes] + [weakref.ref(y), weakref.ref(z)]
    if backward == "backward":
        u.backward()
    elif backward == "retain_graph":
        u.backward(retain_graph=True)
        u.backward()
    del y, z, u, n, nodes, stack
    # (the leaves hold their accumulators weakly, so nothing of the graph lives on)
    assert [r() for r in refs if r() is not None] == []
    if backward != "none":
        assert x.grad is not None and w.grad is not None
    assert gc.collect() == 0


def test_a_node_releases_its_saved_tensors_after_backward(no_gc):
    x = tg.randn(5, requires_grad=True)
    h = x.exp()
    y = h * h  # saves h (twice)
    ref = weakref.ref(h)
    node = y.grad_fn
    del h
    assert ref() is not None  # kept for backward
    y.sum().backward()
    assert ref() is None
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node.saved_tensors


def test_gradients_through_long_chains_and_reuse():
    """The engine walks ``_next``/``_nrs``: a chain with a reused leaf, a multi-output op whose
    outputs feed one node, and grad() with inputs, against closed forms."""
    x0 = np.array([0.3, -1.2, 2.0])
    x = tg.tensor(x0, dtype=tg.float64, requires_grad=True)
    _chain(x, 500).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 501.0))
    a = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    p, q = a.unbind()
    out = (q * p.exp()).sum()
    ga, = tg.autograd.grad(out, a)
    a0 = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(ga.numpy(), np.stack([a0[1] * np.exp(a0[0]), np.exp(a0[0])]))
    h = x * x
    gh, gx = tg.autograd.grad((h * x).sum(), (h, x))
    np.testing.assert_allclose(gh.numpy(), x0)
    np.testing.assert_allclose(gx.numpy(), 3 * x0 ** 2)  # (through h too)


def test_needs_input_grad_reads_the_edges():
    seen = []

    class F(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g, g

    x = tg.randn(2, requires_grad=True)
    F.apply(x, tg.randn(2)).sum().backward()
    F.apply(tg.randn(2), x).sum().backward()
    assert seen == [(True, False), (False, True)]
    y = x * tg.randn(2)
    assert y.grad_fn.needs_input_grad == (True, False)


def test_a_leaf_that_stopped_requiring_grad_gets_no_edge():
    """``_new_node`` reads a leaf's live accumulator itself: one left from before
    ``requires_grad_(False)`` must not become an edge."""
    x = tg.randn(3, requires_grad=True)
    w = tg.randn(3, requires_grad=True)
    y = x * w  # keeps x's accumulator alive
    acc = x._grad_accumulator()
    assert y.grad_fn._next[0] is acc
    x.requires_grad_(False)
    for z in (x * w, w * x, tg.lerp(w, x, w)):
        assert all(n is not acc for n in z.grad_fn._next)
        assert (None, 0) in z.grad_fn.next_functions
    assert x.exp().grad_fn is None
    (x * w).sum().backward()
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), x.numpy())


def test_next_functions_is_built_once_per_edges(no_gc):
    """Code that indexes ``next_functions[i]`` per input (a custom Function's gradient checks)
    gets the pairs built once; assigning new edges gives new pairs; the kept pairs make no
    cycle."""
    x = tg.randn(3, requires_grad=True)
    y = (x * 2) * x
    node = y.grad_fn
    first = node.next_functions
    assert node.next_functions is first
    node.next_functions = ((None, 0), first[1])
    assert node.next_functions == ((None, 0), first[1])
    ref = weakref.ref(node)
    del y, node, first
    assert ref() is None
