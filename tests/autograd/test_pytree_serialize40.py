"""``treespec_dumps``/``treespec_loads`` (session 40): PyTorch's JSON, both ways (Note
[Serialized tree specs] in autograd/_pytree.py)."""

import collections

import pytest

import tritongrad as tg

P = collections.namedtuple("P", "x y")
TREES = [{"a": [1, (2, 3)], "b": None}, collections.OrderedDict(x=1), P(1, [2]),
         collections.defaultdict(list, a=1), collections.deque([1, 2], maxlen=3), (1,), 5, []]
LEAF = '{"type": null, "context": null, "children_spec": []}'
# torch 2.13's treespec_dumps of some of TREES
RECORDED = {
    1: '[1, {"type": "collections.OrderedDict", "context": "[\\"x\\"]", "children_spec": '
       f'[{LEAF}]}}]',
    2: f'[1, {{"type": "collections.namedtuple", "context": "m.P", "children_spec": [{LEAF}, '
       f'{{"type": "builtins.list", "context": "null", "children_spec": [{LEAF}]}}]}}]',
    3: '[1, {"type": "collections.defaultdict", "context": {"default_factory_module": '
       '"builtins", "default_factory_name": "list", "dict_context": ["a"]}, "children_spec": '
       f'[{LEAF}]}}]',
    4: f'[1, {{"type": "collections.deque", "context": "3", "children_spec": [{LEAF}, {LEAF}]}}]',
    6: f"[1, {LEAF}]",
}


def _scenario(torch) -> list:
    p = torch.utils._pytree
    p._register_namedtuple(P, serialized_type_name="m.P")
    out = []
    for tree in TREES:
        text = p.treespec_dumps(p.tree_structure(tree))
        back = p.treespec_loads(text)
        out += [text, p.tree_unflatten(list(range(back.num_leaves)), back)]
    for bad in (lambda: p.treespec_dumps(p.tree_structure(collections.namedtuple("Q", "x")(1))),
                lambda: p.treespec_dumps(p.tree_structure([1]), protocol=2),
                lambda: p.treespec_loads('[1, {"type": "m.X", "context": "null", '
                                         '"children_spec": []}]')):
        try:
            bad()
        except (NotImplementedError, ValueError) as e:
            out.append(f"{type(e).__name__}: {str(e).split(' because')[0]}")
    return out


def test_as_recorded():
    out = _scenario(tg)
    for i, text in RECORDED.items():
        assert out[2 * i] == text
    assert out[2 * 3 + 1] == collections.defaultdict(list, a=0)
    assert out[2 * 2 + 1] == P(0, [1])
    assert out[-2:] == ["ValueError: Unknown protocol 2. Available protocols: [1]",
                        "NotImplementedError: Deserializing m.X in pytree is not registered."]
    assert out[-3].startswith("NotImplementedError: Can't serialize TreeSpec of namedtuple")


def test_against_torch():
    torch = pytest.importorskip("torch")
    assert _scenario(tg) == _scenario(torch)
    spec = torch.utils._pytree.tree_structure({"a": [1, (2, 3)]})
    mine = tg.utils._pytree.treespec_loads(torch.utils._pytree.treespec_dumps(spec))
    assert tg.utils._pytree.tree_unflatten([1, 2, 3], mine) == {"a": [1, (2, 3)]}
