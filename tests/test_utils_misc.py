"""tritongrad.utils._pytree (autograd/_pytree.py), tritongrad.utils.weak and
tritongrad.utils.swap_tensors."""

from __future__ import annotations

import copy
import gc
import weakref
from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest

import tritongrad as tg
from tritongrad.utils import _pytree as pytree
from tritongrad.utils import swap_tensors
from tritongrad.utils.weak import (TensorWeakRef, WeakIdKeyDictionary, WeakIdRef,
                                   WeakTensorKeyDictionary)

Point = namedtuple("Point", "x y")


def _tree():
    return {"a": [1, (2, Point(3, 4))], "b": OrderedDict(c=5, d=None),
            "e": defaultdict(list, f=6), "g": deque([7, "s"], maxlen=3)}


# -- pytrees -------------------------------------------------------------------------------------

def test_flatten_unflatten_round_trip_over_every_builtin_node():
    tree = _tree()
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5, None, 6, 7, "s"]
    back = pytree.tree_unflatten([x for x in leaves], spec)
    assert back == tree
    assert type(back["b"]) is OrderedDict and type(back["a"][1][1]) is Point
    assert back["e"].default_factory is list and back["g"].maxlen == 3
    assert spec.num_leaves == 9 and spec.num_children == 4
    # the leaves and 7 containers: dict, list, tuple, Point, OrderedDict, defaultdict, deque
    assert spec.num_nodes == 9 + 7
    assert spec.child(0).type is list and spec.children()[1].type is OrderedDict
    assert spec.child(0).child(1).child(1).type is namedtuple
    assert spec.child(0).child(1).child(1).context is Point
    assert pytree.tree_structure(tree) == spec and hash(pytree.tree_structure(tree)) == hash(spec)
    assert pytree.tree_structure([1, 2]) != pytree.tree_structure((1, 2))
    assert pytree.tree_leaves(tree) == leaves
    assert pytree.tree_flatten(tg.ones(2))[1].is_leaf()
    with pytest.raises(ValueError, match="`leaves` has length 2 but the spec refers to a "
                                         "pytree that holds 9 items"):
        pytree.tree_unflatten([1, 2], spec)


def test_treespec_repr_and_pprint():
    spec = pytree.tree_structure((1, [2, {"a": 3}]))
    assert pytree.treespec_pprint(spec) == "(*, [*, {'a': *}])"
    assert spec.pprint() == "(*, [*, {'a': *}])"
    assert pytree.treespec_pprint(pytree.tree_structure(Point(1, [2]))) == "Point(x=*, y=[*])"
    assert repr(pytree.tree_structure((1, [2]))) == (
        "TreeSpec(tuple, None, [*,\n  TreeSpec(list, None, [*])])")
    assert repr(pytree.LeafSpec()) == "*"


def test_tree_map_variants():
    tree = {"x": 7, "y": (42, 64)}
    assert pytree.tree_map(lambda x: x + 1, tree) == {"x": 8, "y": (43, 65)}
    assert pytree.tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]]) == [[5, 7, 9],
                                                                              [6, 1, 2]]
    # is_leaf: the inner pair is one leaf
    assert pytree.tree_map(lambda t: t if isinstance(t, int) else sum(t), (1, (2, 3)),
                           is_leaf=lambda n: isinstance(n, tuple) and n == (2, 3)) == (1, 5)
    seen = []
    assert pytree.tree_map_(seen.append, tree) is tree and seen == [7, 42, 64]
    assert pytree.tree_map_only(int, lambda x: -x, [1, "a", (2.5, 3)]) == [-1, "a", (2.5, -3)]
    assert pytree.tree_map_only((int, str), lambda x: x * 2, [1, "a", 2.5]) == [2, "aa", 2.5]
    t = tg.ones(2)
    out = pytree.tree_map_only(tg.Tensor, lambda x: x * 3, {"t": t, "n": 1})
    assert out["n"] == 1 and out["t"].tolist() == [3.0, 3.0]
    assert pytree.tree_all(lambda x: x > 0, [1, (2, 3)])
    assert not pytree.tree_any(lambda x: x > 5, [1, (2, 3)])
    assert pytree.tree_all_only(int, lambda x: x > 0, [1, "no", 2])
    assert pytree.tree_any_only(str, lambda s: s == "no", [1, "no"])
    with pytest.raises(ValueError, match="Node arity mismatch; expected 2, but got 3"):
        pytree.tree_map(lambda x, y: x, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="Node keys mismatch; missing key"):
        pytree.tree_map(lambda x, y: x, {"a": 1, "b": 2}, {"a": 1})
    with pytest.raises(ValueError, match="Node type mismatch"):
        pytree.tree_map(lambda x, y: x, [1], (1,))


def test_key_paths():
    pairs, spec = pytree.tree_flatten_with_path({"a": [1, Point(2, 3)]})
    assert [(pytree.keystr(k), v) for k, v in pairs] == [
        ("['a'][0]", 1), ("['a'][1].x", 2), ("['a'][1].y", 3)]
    assert spec == pytree.tree_structure({"a": [1, Point(2, 3)]})
    tree = {"a": [1, Point(2, 3)]}
    assert [pytree.key_get(tree, k) for k, _ in pairs] == [1, 2, 3]
    assert pytree.tree_map_with_path(lambda k, v: pytree.keystr(k), {"q": (1,)}) == {
        "q": ("['q'][0]",)}


def test_register_pytree_node():
    class Box:
        def __init__(self, items, label):
            self.items, self.label = items, label

    pytree.register_pytree_node(
        Box, lambda b: (b.items, b.label), lambda items, label: Box(list(items), label),
        flatten_with_keys_fn=lambda b: ([(pytree.SequenceKey(i), v)
                                         for i, v in enumerate(b.items)], b.label))
    try:
        leaves, spec = pytree.tree_flatten([Box([1, (2, 3)], "L"), 4])
        assert leaves == [1, 2, 3, 4]
        back = pytree.tree_unflatten([10, 20, 30, 40], spec)
        assert back[0].items == [10, (20, 30)] and back[0].label == "L" and back[1] == 40
        with pytest.raises(ValueError, match="already registered"):
            pytree.register_pytree_node(Box, lambda b: ([], None), lambda v, c: Box([], c))
        pairs, _ = pytree.tree_flatten_with_path(Box([5], "M"))
        assert [(pytree.keystr(k), v) for k, v in pairs] == [("[0]", 5)]
    finally:
        pytree._deregister_pytree_node(Box)
    assert pytree.tree_leaves(Box([1], "x"))[0].__class__ is Box  # a leaf again


def test_broadcast_prefix_for_vmap():
    spec = pytree.tree_structure(((1, 2), {"a": 3}))
    assert pytree.broadcast_prefix(0, spec) == [0, 0, 0]
    assert pytree.broadcast_prefix((None, {"a": 1}), spec) == [None, None, 1]
    assert pytree.broadcast_prefix((0, 1, 2), spec) is None
    assert pytree._broadcast_to_and_flatten([0, 1], pytree.tree_structure([(1, 2), 3])) == [
        0, 0, 1]


def test_pytree_agrees_with_pytorch():
    torch_pytree = pytest.importorskip("torch.utils._pytree")
    for tree in (_tree(), (1, [2, {"a": 3, "b": (4,)}]), Point(1, [2, 3]), [], {}):
        ours, spec = pytree.tree_flatten(tree)
        theirs, tspec = torch_pytree.tree_flatten(tree)
        assert ours == theirs
        assert pytree.treespec_pprint(spec) == torch_pytree.treespec_pprint(tspec)
        assert repr(spec) == repr(tspec)
        assert spec.num_nodes == tspec.num_nodes
        pairs = pytree.tree_flatten_with_path(tree)[0]
        tpairs = torch_pytree.tree_flatten_with_path(tree)[0]
        assert [pytree.keystr(k) for k, _ in pairs] == [torch_pytree.keystr(k) for k, _ in tpairs]


# -- weak references -----------------------------------------------------------------------------

def test_weak_id_key_dictionary():
    d = WeakIdKeyDictionary()
    a, b = tg.ones(2), tg.ones(2)  # equal values, different objects
    d[a] = "a"
    d[b] = "b"
    assert len(d) == 2 and d[a] == "a" and d[b] == "b"
    assert a in d and tg.ones(2) not in d and 3 not in d
    assert d.get(tg.zeros(1), "none") == "none"
    assert {id(k) for k in d} == {id(a), id(b)}
    assert sorted(d.values()) == ["a", "b"]
    c = d.copy()
    assert c == d and c[a] == "a"
    assert copy.deepcopy(d)  # (keys kept, values copied)
    assert d.setdefault(a, "x") == "a" and d.pop(b) == "b" and len(d) == 1
    del b
    del a
    gc.collect()
    assert len(d) == 0 and len(c) == 0  # entries go with their keys
    assert WeakTensorKeyDictionary is WeakIdKeyDictionary
    with pytest.raises(KeyError):
        d[tg.ones(1)]


def test_weak_id_ref_identity_and_tensor_weak_ref():
    t = tg.ones(2)
    r1, r2 = WeakIdRef(t), WeakIdRef(t)
    assert r1 == r2 and hash(r1) == id(t) and r1 != WeakIdRef(tg.ones(2))
    tr = TensorWeakRef(t)
    assert tr() is t
    del t
    gc.collect()
    assert tr() is None and r1() is None and r1 != r2  # dead: equal only to itself
    with pytest.raises(AssertionError, match="expected torch.Tensor"):
        TensorWeakRef([1])


# -- swap_tensors --------------------------------------------------------------------------------

def test_swap_tensors_swaps_contents_class_and_attributes():
    a = tg.zeros(2)
    p = tg.nn.Parameter(tg.ones(3))
    a.note = "a's"
    p.grad = tg.full((3,), 5.0)
    swap_tensors(a, p)
    assert type(a) is tg.nn.Parameter and type(p) is tg.Tensor
    assert a.tolist() == [1.0, 1.0, 1.0] and a.requires_grad and a.grad.tolist() == [5.0] * 3
    assert p.tolist() == [0.0, 0.0] and not p.requires_grad and p.grad is None
    assert p.note == "a's" and not hasattr(a, "note")
    y = (a * 2).sum()  # the swapped-in leaf works as a leaf
    y.backward()
    assert a.grad.tolist() == [7.0] * 3


def test_swap_tensors_keeps_histories_with_their_contents():
    x = tg.ones(2, requires_grad=True)
    h = x * 3  # a non-leaf: its grad_fn moves with it
    z = tg.zeros(2)
    swap_tensors(h, z)
    assert z.grad_fn is not None and h.grad_fn is None and h.tolist() == [0.0, 0.0]
    z.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_swap_tensors_refusals():
    a, b = tg.ones(1), tg.ones(1)
    r = weakref.ref(a)
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
        swap_tensors(a, b)
    with pytest.raises(RuntimeError, match="Cannot swap t2 because it has weakref"):
        swap_tensors(b, a)
    del r

    class Slotted(tg.Tensor):
        __slots__ = ("extra",)

    s = tg.ones(1).as_subclass(Slotted)
    with pytest.raises(RuntimeError, match="Cannot swap t1 and t2 if they have different "
                                           "slots"):
        swap_tensors(a, s)
    with pytest.raises(TypeError, match="expected t2 to be a Tensor"):
        swap_tensors(a, [1.0])


def test_swap_tensors_poisons_a_live_gradient_accumulator():
    w = tg.ones(2, requires_grad=True)
    loss = (w * 2).sum()  # a graph that accumulates into w's object
    swap_tensors(w, tg.zeros(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="AccumulateGrad node that was poisoned by "
                                           "swap_tensors"):
        loss.backward()
    (w * 1).sum().backward()  # a new graph gets a new accumulator
    assert w.grad.tolist() == [1.0, 1.0]
