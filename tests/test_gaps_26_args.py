"""Session 26: a non-tensor where an op takes a Tensor is PyTorch's TypeError naming the op,
the argument and the type given ("exp(): argument 'input' (position 1) must be Tensor, not
list"), never an AttributeError or a NumPy error from inside; numbers stay accepted where
PyTorch takes them (``torch.add(2, x)``, ``torch.where(c, x, 0.0)``). Each case here failed
before the fix (registry.guarded, Note [Argument errors after the fact] in autograd/checks.py)
with an AttributeError, a NumPy error, an error naming another op, or, for the numbers, a
TypeError."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd.ops import FAMILIES
from tritongrad.autograd.registry import guarded, unguarded

RNG = np.random.default_rng(26)
BAD = {"list": [1.0, 2.0], "str": "a", "NoneType": None, "numpy.ndarray": np.ones(3)}


def _x(*shape):
    return tg.tensor(RNG.standard_normal(shape).astype(np.float32))


def _check(err: pytest.ExceptionInfo, op: str, bad: str) -> None:
    msg = str(err.value)
    assert err.type is TypeError, f"{op}: {err.type.__name__}: {msg}"
    assert f"{op}(" in msg, msg
    assert bad.split(".")[-1] in msg, msg  # (PyTorch says "numpy.ndarray")


# -- every op whose only required argument is a Tensor, from the tables -----------------------

def _unary_ops() -> list[str]:
    """The public functions whose one required parameter is annotated Tensor."""
    names = []
    for rows in FAMILIES.values():
        for row in rows:
            if not row.function:
                continue
            sig = inspect.signature(row.fn)
            required = [p for p in sig.parameters.values() if p.default is p.empty
                        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
            if len(required) == 1 and required[0].annotation in ("Tensor", tg.Tensor) \
                    and required[0].kind is not required[0].KEYWORD_ONLY and not varargs:
                names.append(row.name)  # (its aliases are the same function)
    return sorted(names)


UNARY = _unary_ops()


def test_the_table_sweep_is_not_empty():
    assert len(UNARY) > 120, len(UNARY)


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("name", UNARY)
def test_table_op_refuses_a_non_tensor(name, bad):
    with pytest.raises(Exception) as err:
        getattr(tg, name)(BAD[bad])
    _check(err, name, bad)


# -- ops with several arguments: the bad one in each tensor position --------------------------

def _cases():
    x, v = _x(3, 3), _x(3)
    i = tg.tensor([[0, 1, 2], [2, 1, 0], [1, 1, 1]])
    c = x > 0
    return [  # (op, args, position of the bad argument)
        ("matmul", (x, x), 0), ("matmul", (x, x), 1), ("mm", (x, x), 1), ("bmm", (x[None],
                                                                             x[None]), 0),
        ("addmm", (x, x, x), 2), ("addr", (x, v, v), 0), ("outer", (v, v), 1),
        ("dot", (v, v), 1), ("gather", (x, 0, i), 0), ("gather", (x, 0, i), 2),
        ("scatter_add", (x, 0, i, x), 0), ("index_select", (x, 0, v.long().abs()), 0),
        ("where", (c, x, x), 0), ("masked_select", (x, c), 1), ("take", (x, i), 1),
        ("take_along_dim", (x, i), 1), ("lerp", (x, x, x), 2), ("cumsum", (x, 1), 0),
        ("flatten", (x,), 0), ("flip", (x, [0]), 0), ("chunk", (x, 1), 0),
        ("broadcast_to", (x, (3, 3)), 0), ("diagonal", (x,), 0), ("clone", (x,), 0),
        ("kron", (x, x), 1), ("cross", (x, x), 1), ("cdist", (x, x), 1),
        ("embedding", (x, i), 0), ("embedding", (x, i), 1), ("numel", (x,), 0),
        ("atan2", (x, x), 1), ("maximum", (x, x), 1), ("logical_and", (x, x), 1),
        ("searchsorted", (v.sort().values, v), 0), ("bucketize", (v, v.sort().values), 1),
        ("histc", (x,), 0), ("tensordot", (x, x), 0), ("einsum", ("ij->j", x), 1),
        ("positive", (x,), 0),
    ]


CASES = [(op, pos) for op, _, pos in _cases()]


@pytest.mark.parametrize("bad", ["list", "str", "numpy.ndarray"])
@pytest.mark.parametrize("op,pos", CASES, ids=[f"{o}-{p}" for o, p in CASES])
def test_op_refuses_a_non_tensor_in_each_tensor_position(op, pos, bad):
    args = {(o, p): a for o, a, p in _cases()}[op, pos]
    args = list(args)
    args[pos] = BAD[bad]
    if op == "einsum" and bad == "list":  # (a list is einsum's other form: its operands)
        args[pos], bad = [1.0], "float"
    if op == "matmul" and pos == 1 and bad == "numpy.ndarray":
        # (``x @ a`` takes an array, as PyTorch's operator does, and ``matmul`` is that
        # operator: Note [NumPy array operands])
        assert getattr(tg, op)(*args).dtype is tg.float64
        return
    with pytest.raises(Exception) as err:
        getattr(tg, op)(*args)
    _check(err, op, bad)


@pytest.mark.parametrize("op", ["cat", "stack", "hstack", "vstack", "dstack", "column_stack"])
def test_sequence_ops_name_the_bad_element(op):
    x = _x(2, 2)
    with pytest.raises(TypeError, match=rf"{op}\(\): .*\blist\b"):
        getattr(tg, op)([x, [1.0, 2.0]])
    with pytest.raises(TypeError, match=rf"{op}\(\): .*\bstr\b"):
        getattr(tg, op)("ab")


def test_varargs_ops_name_the_bad_element():
    with pytest.raises(TypeError, match=r"broadcast_tensors\(\): expected Tensor as element 1"):
        tg.broadcast_tensors(_x(2), [1.0])
    with pytest.raises(TypeError, match=r"block_diag\(\): .*ndarray"):
        tg.block_diag(np.ones((2, 2)), _x(2, 2))


@pytest.mark.parametrize("op,alias", [("acos", "arccos"), ("abs", "absolute"),
                                      ("mul", "multiply"), ("div", "true_divide"),
                                      ("clamp", "clip")])
def test_an_alias_is_its_op_and_names_it(op, alias):
    # (one function per row: tg.arccos is tg.acos, so its errors name the row, as
    # torch.Tensor.arccos's would not; registry.guarded cannot tell the name it was called by)
    assert getattr(tg, alias) is getattr(tg, op)
    with pytest.raises(TypeError) as err:
        getattr(tg, alias)("a", _x(2)) if op in ("mul", "div") else getattr(tg, alias)("a")
    assert str(err.value).startswith(op + "(")
    assert "not str" in str(err.value)


@pytest.mark.parametrize("fn,name", [
    (lambda b: tg.linalg.inv(b), "linalg_inv"), (lambda b: tg.linalg.det(b), "linalg_det"),
    (lambda b: tg.linalg.vector_norm(b), "linalg_vector_norm"),
    (lambda b: tg.special.expit(b), "special_expit"),
    (lambda b: tg.special.erf(b), "special_erf"),
    (lambda b: tg.fft.fft(b), "fft_fft"), (lambda b: tg.fft.rfft2(b), "fft_rfft2")])
def test_namespaces_name_their_functions_as_pytorch(fn, name):
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument .* must be Tensor, not list"):
        fn([1.0, 2.0])


@pytest.mark.parametrize("pos,name", [(0, "indices"), (1, "weight")])  # (PyTorch's names)
def test_functional_embedding(pos, name):
    args = [tg.tensor([0, 1]), _x(3, 2)]
    args[pos] = [0, 1]
    with pytest.raises(TypeError, match=rf"embedding\(\): argument '{name}' must be Tensor, "
                                        r"not list"):
        tg.nn.functional.embedding(*args)


def test_top_level_nn_functions():
    x = _x(2, 3)
    with pytest.raises(TypeError, match=r"margin_ranking_loss\(\): .*not list"):
        tg.margin_ranking_loss([1.0], x, x)
    with pytest.raises(TypeError, match=r"triplet_margin_loss\(\): .*not list"):
        tg.triplet_margin_loss([1.0], x, x)
    with pytest.raises(TypeError, match=r"binary_cross_entropy_with_logits\(\): .*not list"):
        tg.binary_cross_entropy_with_logits(x, x, [1.0])


# -- numbers where PyTorch takes them: values as NumPy's --------------------------------------

def test_a_number_first_for_the_arithmetic_ops():
    a = RNG.standard_normal(4).astype(np.float32) + 3
    x = tg.tensor(a)
    i = tg.tensor([1, 2, 3])
    for op, ref in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                    ("div", np.divide), ("multiply", np.multiply), ("subtract", np.subtract),
                    ("true_divide", np.divide)]:
        out = getattr(tg, op)(2, x)
        assert out.dtype is tg.float32
        np.testing.assert_allclose(out.numpy(), ref(np.float32(2), a), rtol=1e-6)
        out = getattr(tg, op)(2.5, i)  # (a float with an integer tensor: the default dtype)
        assert out.dtype is tg.float32
        np.testing.assert_allclose(out.numpy(), ref(2.5, np.array([1, 2, 3])), rtol=1e-6)
    out = tg.add(3, i)
    assert out.dtype is tg.int64 and out.tolist() == [4, 5, 6]
    y = tg.tensor(a, requires_grad=True)
    tg.sub(1.0, y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), -np.ones(4))


def test_numbers_where_pytorch_takes_them():
    a = RNG.standard_normal((3, 3)).astype(np.float32)
    x, c = tg.tensor(a), tg.tensor(a > 0)
    np.testing.assert_allclose(tg.where(c, x, 0.0).numpy(), np.where(a > 0, a, 0))
    np.testing.assert_allclose(tg.where(c, 1.0, x).numpy(), np.where(a > 0, 1, a))
    np.testing.assert_allclose(tg.add(x, 2).numpy(), a + 2)
    np.testing.assert_allclose(tg.pow(2, x).numpy(), np.float32(2) ** a, rtol=1e-6)
    np.testing.assert_allclose(tg.clamp(x, min=0).numpy(), np.maximum(a, 0))
    np.testing.assert_allclose(tg.clamp_min(x, 0.5).numpy(), np.maximum(a, 0.5))
    np.testing.assert_allclose(tg.lerp(x, x * 2, 0.5).numpy(), a * 1.5, rtol=1e-6)
    np.testing.assert_allclose(tg.float_power(2, x).numpy(), 2.0 ** a.astype(np.float64),
                               rtol=1e-12)
    b = tg.tensor([0.0, 1.0, 2.0])
    assert tg.bucketize(1.5, b).item() == np.searchsorted([0.0, 1.0, 2.0], 1.5)


def test_a_number_where_pytorch_refuses_it():
    x = _x(3)
    with pytest.raises(TypeError, match=r"exp\(\): argument 'input' .* not int"):
        tg.exp(2)
    with pytest.raises(TypeError, match=r"matmul\(\): argument 'other' .* not float"):
        tg.matmul(x, 2.0)
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'input' .* not int"):
        tg.maximum(2, x)
    with pytest.raises(TypeError, match=r"add\(\): argument 'input' .* not int"):
        tg.add(2, 3)


# -- the mechanism: no masking, no cost on methods --------------------------------------------

def test_an_internal_error_with_tensor_inputs_stands():
    def op(input: tg.Tensor) -> tg.Tensor:
        return input.no_such_attribute

    with pytest.raises(AttributeError, match="no_such_attribute"):
        guarded(op, "op")(_x(2))


def test_an_ops_own_runtime_error_stands_beside_a_number():
    def op(input: tg.Tensor, other: tg.Tensor) -> tg.Tensor:
        raise RuntimeError("shapes do not match")

    with pytest.raises(RuntimeError, match="shapes do not match"):
        guarded(op, "op")(_x(2), 2.0)
    with pytest.raises(TypeError, match=r"op\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not list"):
        guarded(op, "op")(_x(2), [2.0])


def test_the_replaced_error_stays_on_context():
    with pytest.raises(TypeError) as err:
        tg.flatten(3)
    assert err.value.__suppress_context__ and err.value.__context__ is not None


def test_methods_and_operators_are_the_unguarded_functions():
    # (the op-heavy path, perf/bench_chain.py, pays nothing for the guard)
    for name in ("exp", "mul", "add", "tanh", "sigmoid", "sum", "matmul"):
        assert getattr(tg, name).guarded
        assert not getattr(getattr(tg.Tensor, name), "guarded", False)
    assert tg.exp.__wrapped__ is tg.Tensor.exp or getattr(tg.Tensor.exp, "autocast", None)
    assert not getattr(tg.Tensor.__mul__, "guarded", False)


def test_identities_kept():
    assert tg.linalg.matmul is tg.matmul
    assert tg.prelu is tg.nn.functional.prelu and unguarded(tg.prelu) is tg.Tensor.prelu
    assert unguarded(tg.exp_) is tg.Tensor.exp_ and unguarded(tg.multiply) is tg.Tensor.mul
    assert inspect.signature(tg.matmul) == inspect.signature(tg.Tensor.matmul)


def test_guarded_functions_pickle_as_themselves():
    import pickle
    for f in (tg.add, tg.exp, tg.matmul, tg.arccos, tg.exp_, tg.special.expit, tg.fft.fft,
              tg.linalg.inv, tg.numel, tg.embedding):
        assert pickle.loads(pickle.dumps(f)) is f


_ROW_OF = {n: row.name for rows in FAMILIES.values() for row in rows for n in row.names()}


@pytest.mark.parametrize("name", sorted(n for n in tg.autograd.registry.INPLACE_FUNCTIONS
                                        if hasattr(tg, n) and n not in ("clamp_", "clip_")))
def test_inplace_functions_refuse_a_non_tensor(name):
    # (tg.exp_ is Tensor.exp_, unguarded: each checks its own target; an alias's error names
    # its row, arccos_ as acos_)
    args = {"addmv_": (_x(2, 2), _x(2)), "as_strided_": ((1,), (1,)),
            "gcd_": (tg.tensor([2]),), "lcm_": (tg.tensor([2]),), "clamp_min_": (0,),
            "clamp_max_": (0,)}.get(name, ())
    with pytest.raises(TypeError) as err:
        getattr(tg, name)([1.0], *args)
    msg = str(err.value)
    assert _ROW_OF[name[:-1]] in msg and "list" in msg, msg


def test_equality_operators_fall_back_to_identity_for_other_types():
    # PyTorch's == and != return NotImplemented for what eq/ne refuse: Python then compares
    # identities, so `x == "auto"` is False instead of an error; eq() itself still raises
    x = tg.tensor([1.0, 2.0])
    assert (x == "auto") is False and (x != "auto") is True
    assert (x == None) is False and (x != None) is True  # noqa: E711
    assert (x == [1.0, 2.0]) is False and (x == (1.0, 2.0)) is False
    np.testing.assert_array_equal((x == 2.0).numpy(), [False, True])
    np.testing.assert_array_equal((x != tg.tensor([1.0, 0.0])).numpy(), [False, True])
    with pytest.raises(TypeError, match=r"eq\(\): argument 'other'"):
        tg.eq(x, "auto")
    with pytest.raises(TypeError, match=r"ne\(\): argument 'other'"):
        x.ne([1.0, 2.0])
