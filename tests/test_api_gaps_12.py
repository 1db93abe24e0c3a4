"""PyTorch API gaps, round 12: ``nonzero_static``, ``Tensor.as_subclass``, ``Tensor.dim_order``,
the ``Tensor.prelu`` / ``Tensor.hardshrink`` methods, ``cond`` and ``while_loop`` (run eagerly,
tritongrad/_higher_order_ops.py) and ATen's RNN cell functions (``lstm_cell``, ``gru_cell``,
``rnn_tanh_cell``, ``rnn_relu_cell``, nn/rnn.py). Values against NumPy float64 formulas written
here, gradients against finite differences, errors against PyTorch's messages."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64

rng = np.random.default_rng(12)


# -- nonzero_static --------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 2, 3, 6])
def test_nonzero_static_truncates_or_pads(device, size):
    a = np.array([[0, 1, 0], [2, 0, 3]])
    found = np.argwhere(a)  # (3, 2), row-major order
    want = np.concatenate([found, np.full((6, 2), -7)])[:size]
    for got in (tg.nonzero_static(tg.tensor(a, device=device), size=size, fill_value=-7),
                tg.tensor(a, device=device).nonzero_static(size=size, fill_value=-7)):
        assert got.dtype is tg.int64 and got.shape == (size, 2)
        np.testing.assert_array_equal(host(got), want)


def test_nonzero_static_odd_inputs_and_errors():
    assert tg.nonzero_static(tg.tensor(3.0), size=2).shape == (2, 0)  # 0-d: no index columns
    np.testing.assert_array_equal(host(tg.nonzero_static(tg.zeros(2, 0), size=2)),
                                  [[-1, -1], [-1, -1]])
    np.testing.assert_array_equal(host(tg.nonzero_static(tg.tensor([1.0, float("nan"), 0.0]),
                                                         size=3)), [[0], [1], [-1]])
    out = tg.empty(0, dtype=tg.int64)
    assert tg.nonzero_static(tg.tensor([0, 5]), size=2, out=out) is out
    assert host(out).tolist() == [[1], [-1]]
    with pytest.raises(RuntimeError, match="nonzero_static: 'size' must be an non-negative "
                                           "integer"):
        tg.nonzero_static(tg.ones(2), size=-1)
    with pytest.raises(TypeError, match="argument 'fill_value' must be int, not float"):
        tg.nonzero_static(tg.ones(2), size=1, fill_value=2.5)
    with pytest.raises(TypeError):
        tg.nonzero_static(tg.ones(2), 2)  # size is keyword-only


# -- as_subclass -----------------------------------------------------------------------------------

class Marked(tg.Tensor):
    pass


class Slotted(tg.Tensor):
    __slots__ = ("note",)  # (a layout of its own: __class__ cannot be reassigned)


@pytest.mark.parametrize("cls", [Marked, Slotted])
def test_as_subclass_is_a_view_in_the_graph(device, cls):
    x = t64((3,), device).requires_grad_()
    y = x * 2
    z = y.as_subclass(cls)
    assert type(z) is cls and z._base is y and type(z.grad_fn).__name__ == "AliasBackward0"
    with tg.no_grad():
        z.add_(1)  # the same memory: y sees it, and the version counter is shared
    assert y._version == z._version == 1
    np.testing.assert_array_equal(host(y), host(z))
    (z * 3).sum().backward()
    np.testing.assert_allclose(host(x.grad), np.full(3, 6.0))
    leaf = x.as_subclass(cls)  # of a leaf: a view with history, as PyTorch's
    assert not leaf.is_leaf and leaf.requires_grad


def test_as_subclass_classes_and_errors():
    p = tg.nn.Parameter(tg.ones(2))
    assert type(p.as_subclass(tg.Tensor)) is tg.Tensor
    assert type(tg.ones(2).as_subclass(tg.nn.Parameter)) is tg.nn.Parameter
    assert type(tg.ones(2).as_subclass(Marked) + 1) is Marked  # ops keep the subclass
    with pytest.raises(TypeError, match="Creating a Tensor subclass from a class that does not "
                                        "inherit from Tensor is not possible"):
        tg.ones(2).as_subclass(int)
    with pytest.raises(TypeError, match="cls must be a type \\(got int\\)"):
        tg.ones(2).as_subclass(3)


# -- dim_order -------------------------------------------------------------------------------------

def _strided(shape, strides):
    return tg.empty(1000).as_strided(shape, strides)


@pytest.mark.parametrize("shape, strides, order", [
    ((2, 3, 4, 5), (60, 20, 5, 1), (0, 1, 2, 3)),
    ((2, 3, 4, 5), (60, 1, 15, 3), (0, 2, 3, 1)),     # channels-last
    ((2, 3, 4, 5), (20, 40, 5, 1), (1, 0, 2, 3)),     # a transposed pair
    ((2, 3, 4, 5, 6), (360, 1, 90, 18, 3), (0, 2, 3, 4, 1)),  # channels-last 3d: by strides
    ((4, 3), (1, 4), (1, 0)),
    ((3,), (2,), (0,)),
    ((), (), ()),
    ((4, 2, 3), (0, 3, 1), (0, 1, 2)),                # an expanded dim keeps its place
])
def test_dim_order_follows_the_strides(shape, strides, order):
    assert _strided(shape, strides).dim_order() == order


def test_dim_order_ambiguity_check():
    ambiguous = _strided((2, 1, 1, 3), (3, 3, 3, 1))  # size-1 dims: several orders fit
    assert ambiguous.dim_order() == (0, 1, 2, 3)
    unique = "The tensor does not have unique dim order, or cannot map to exact one of the " \
             "given memory formats."
    with pytest.raises(RuntimeError, match=unique):
        ambiguous.dim_order(ambiguity_check=True)
    both = [tg.contiguous_format, tg.channels_last]
    with pytest.raises(RuntimeError, match=unique):  # contiguous in both formats
        ambiguous.dim_order(ambiguity_check=both)
    assert tg.empty(1, 2, 3, 4).dim_order(ambiguity_check=both) == (0, 1, 2, 3)
    assert tg.empty(2, 3, 4, 5).dim_order(ambiguity_check=True) == (0, 1, 2, 3)
    with pytest.raises(RuntimeError, match="^The tensor does not have unique dim order.$"):
        _strided((2, 3), (0, 1)).dim_order(ambiguity_check=[tg.contiguous_format])
    for bad in ([1], "ILLEGAL", 3):
        with pytest.raises(TypeError, match="The ambiguity_check argument must be a bool or a "
                                            "list of memory formats."):
            tg.empty(2, 3).dim_order(ambiguity_check=bad)


# -- Tensor.prelu, Tensor.hardshrink --------------------------------------------------------------

def test_prelu_and_hardshrink_methods(device):
    x, w = t64((2, 3, 4), device), t64((3,), device, 0.1, 0.5)
    a, b = host(x), host(w)
    np.testing.assert_allclose(host(x.prelu(w)), np.where(a > 0, a, a * b[:, None]), rtol=1e-12)
    np.testing.assert_allclose(host(x.hardshrink(0.7)), np.where(np.abs(a) > 0.7, a, 0),
                               rtol=1e-12)
    np.testing.assert_allclose(host(x.hardshrink()), np.where(np.abs(a) > 0.5, a, 0), rtol=1e-12)
    assert tg.prelu is tg.nn.functional.prelu is tg.Tensor.prelu
    assert tg.hardshrink is tg.nn.functional.hardshrink is tg.Tensor.hardshrink
    assert_grads_match(lambda x, w: x.prelu(w), [x, w])
    assert_grads_match(lambda x: x.hardshrink(0.7), [x])


# -- cond ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pred", [True, False])
def test_cond_runs_one_branch_and_differentiates_through_it(device, pred):
    x, w = t64((3,), device), t64((3,), device)
    calls = []

    def true_fn(a):
        calls.append("true")
        return a.sin() * w

    def false_fn(a):
        calls.append("false")
        return a.cos() + w

    for p in (pred, tg.tensor(pred, device=device), tg.tensor([float(pred)], device=device)):
        calls.clear()
        out = tg.cond(p, true_fn, false_fn, (x,))
        assert calls == ["true" if pred else "false"]
        a, b = host(x), host(w)
        np.testing.assert_allclose(host(out), np.sin(a) * b if pred else np.cos(a) + b,
                                   rtol=1e-12)
    # the branch's graph, and the tensors it closes over, get their gradients
    assert_grads_match(lambda a, v: tg.cond(tg.tensor(pred), lambda t: t.sin() * v,
                                            lambda t: t.cos() + v, [a]), [x, w])


def test_cond_outputs_and_operands():
    x = t64((3,))
    out = tg.cond(tg.tensor(1.0), lambda d: {"k": (d["a"] * 2, 4)}, lambda d: {"k": (d["a"], 5)},
                  ({"a": x},))
    assert out["k"][1] == 4
    np.testing.assert_allclose(host(out["k"][0]), host(x) * 2)
    assert host(tg.cond(tg.tensor(False), lambda: tg.ones(2), lambda: tg.zeros(2))).tolist() \
        == [0.0, 0.0]
    with tg.no_grad():  # in inference a branch may modify and return its input
        y = tg.ones(2)
        assert tg.cond(tg.tensor(True), lambda a: a.add_(1), lambda a: a, (y,)) is y


def _twice(t):
    return t, t


@pytest.mark.parametrize("args, message", [
    ((tg.tensor([True, False]), tg.sin, tg.cos, (tg.ones(2),)),
     "Expected pred to be bool or single-element tensor"),
    (("yes", tg.sin, tg.cos, (tg.ones(2),)), "Expected pred to be bool or tensor, but got yes."),
    ((tg.tensor(True), 3, tg.cos, (tg.ones(2),)), "Expect both branches to be callable."),
    ((tg.tensor(True), tg.sin, tg.cos, tg.ones(2)),
     ("Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
      "tensor leaves")),
    ((tg.tensor(True), lambda a, b: a, lambda a, b: a, (tg.ones(2), 3)),
     "only consists of tensor leaves"),
    ((tg.tensor(True), lambda a: None, lambda a: None, (tg.ones(2),)),
     "output must consist of tensors or ints/bools only but got <class 'NoneType'>"),
    ((tg.tensor(True), lambda a: 2.5, lambda a: 3.5, (tg.ones(2),)),
     "output must consist of tensors or ints/bools only but got <class 'float'>"),
    ((tg.tensor(True), lambda a: a, tg.cos, (tg.ones(2),)),
     "Higher order ops do not support aliasing: an output is an input"),
    ((tg.tensor(True), lambda a: a.view(2), tg.cos, (tg.ones(2),)),
     "Higher order ops do not support aliasing: an output is an input"),
    ((tg.tensor(True), lambda a: _twice(a.sin()), lambda a: (a, a), (tg.ones(2),)),
     "an output is another output"),
    ((tg.tensor(True), lambda a: a.add_(1) * 1, tg.cos, (tg.ones(2),)),
     "Higher order ops do not support input mutation"),
])
def test_cond_errors(args, message):
    with pytest.raises(RuntimeError, match=message):
        tg.cond(*args)


# -- while_loop ------------------------------------------------------------------------------------

def test_while_loop_iterates_and_differentiates(device):
    x = t64((3,), device, 0.5, 1.5)
    i, y = tg.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * y),
                         (tg.tensor(0, device=device), x))
    assert int(i) == 3
    np.testing.assert_allclose(host(y), host(x) ** 8, rtol=1e-12)
    assert_grads_match(lambda a: tg.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * y),
                                               (tg.tensor(0), a))[1], [x])


def test_while_loop_structures():
    # ints as carries, Python bool conditions; the result keeps body_fn's structure
    n, y = tg.while_loop(lambda n, y: 2 * n < y.shape[0], lambda n, y: (n + 1, y + n),
                         (0, tg.zeros(4)))
    assert n == 2 and host(y).tolist() == [1.0] * 4
    out = tg.while_loop(lambda y: y.sum() < 10, lambda y: y * 2, (tg.ones(3),))
    assert host(out).tolist() == [4.0] * 3  # a lone tensor, as body_fn returned it
    out = tg.while_loop(lambda d: d["a"].sum() < 10, lambda d: {"a": d["a"] * 3},
                        ({"a": tg.ones(2)},))
    assert host(out["a"]).tolist() == [9.0, 9.0]
    x = tg.ones(2)
    none = tg.while_loop(lambda i, y: i < 0, lambda i, y: (i + 1, y), [tg.tensor(0), x])
    assert type(none) is tuple and none[1] is not x and host(none[1]).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("cond_fn, body_fn, carried, message", [
    (3, lambda x: x, (tg.ones(2),), "Expect cond_fn and body_fn to be callable."),
    (lambda x, f: x.sum() < 9, lambda x, f: (x * 2, f), (tg.ones(2), 2.5),
     "only consists of tensor or int leaves"),
    (lambda x: x < 9, lambda x: (x * 2,), (tg.ones(2),),
     "Expected cond_fn to return a scalar tensor or a bool but got tensor of shape \\[2\\]"),
    (lambda x: x.sum(), lambda x: (x * 2,), (tg.ones(2),),
     "Expected cond_fn to return a scalar tensor or a bool"),
    (lambda x: x.sum() < 9, lambda x: (x.sum(),), (tg.ones(2),),
     ("Expected body_fn_output and carried_inputs to have same metadata but found:\n"
      "pair\\[0\\] differ in 'shape")),
    (lambda x: x.sum() < 9, lambda x: (x.double(),), (tg.ones(2),), "differ in 'dtype"),
    (lambda x: x.sum() < 9, lambda x: (x * 2, x * 3), (tg.ones(2),),
     "to have same number of outputs but got 2 and 1"),
    (lambda i, n: i < 2, lambda i, n: (i + 1, tg.tensor(3)), (tg.tensor(0), 1),
     "pair\\[1\\] differ in type: Tensor vs int"),
    (lambda x: x.sum() < 9, lambda x: (x,), (tg.ones(2),),
     "Higher order ops do not support aliasing"),
    (lambda x: x.sum() < 9, lambda x: (x.mul_(2) * 1,), (tg.ones(2),),
     "Higher order ops do not support input mutation"),
    (lambda x: x.add_(1).sum() < 9, lambda x: (x * 2,), (tg.ones(2),),
     "Higher order ops do not support input mutation"),
])
def test_while_loop_errors(cond_fn, body_fn, carried, message):
    with pytest.raises(RuntimeError, match=message):
        tg.while_loop(cond_fn, body_fn, carried)


# -- RNN cells -------------------------------------------------------------------------------------

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _cell_reference(name, x, h, c, wi, wh, bi, bh):
    """PyTorch's documented cell equations (gate orders: LSTM i f g o, GRU r z n)."""
    gi, gh = x @ wi.T + bi, h @ wh.T + bh
    if name == "rnn_tanh_cell":
        return np.tanh(gi + gh)
    if name == "rnn_relu_cell":
        return np.maximum(gi + gh, 0)
    n = h.shape[1]
    if name == "gru_cell":
        r, z = _sigmoid(gi[:, :n] + gh[:, :n]), _sigmoid(gi[:, n:2 * n] + gh[:, n:2 * n])
        new = np.tanh(gi[:, 2 * n:] + r * gh[:, 2 * n:])
        return (1 - z) * new + z * h
    g = gi + gh
    i, f, o = _sigmoid(g[:, :n]), _sigmoid(g[:, n:2 * n]), _sigmoid(g[:, 3 * n:])
    c2 = f * c + i * np.tanh(g[:, 2 * n:3 * n])
    return o * np.tanh(c2), c2


_GATES = {"lstm_cell": 4, "gru_cell": 3, "rnn_tanh_cell": 1, "rnn_relu_cell": 1}


@pytest.mark.parametrize("name", sorted(_GATES))
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_the_equations_and_modules(device, name, bias):
    n, i, hid = 2, 3, 4
    g = _GATES[name] * hid
    arrays = [rng.standard_normal(s) for s in ((n, i), (n, hid), (n, hid), (g, i), (g, hid),
                                              (g,), (g,))]
    x, h, c, wi, wh, bi, bh = (tg.tensor(a, device=device) for a in arrays)
    hx = (h, c) if name == "lstm_cell" else h
    biases = (bi, bh) if bias else ()
    got = getattr(tg, name)(x, hx, wi, wh, *biases)
    ref_bias = arrays[5:] if bias else [0.0, 0.0]
    want = _cell_reference(name, *arrays[:5], *ref_bias)
    for gv, wv in zip(got if name == "lstm_cell" else (got,),
                      want if name == "lstm_cell" else (want,)):
        np.testing.assert_allclose(host(gv), wv, rtol=1e-10)
    # the modules are these functions over their parameters
    module = {"lstm_cell": tg.nn.LSTMCell, "gru_cell": tg.nn.GRUCell,
              "rnn_tanh_cell": tg.nn.RNNCell,
              "rnn_relu_cell": lambda a, b, bias: tg.nn.RNNCell(a, b, bias, "relu")}[name]
    m = module(i, hid, bias=bias).double().to(device)
    params = (m.weight_ih, m.weight_hh) + ((m.bias_ih, m.bias_hh) if bias else ())
    for gv, mv in zip(*(r if name == "lstm_cell" else (r,) for r in (
            getattr(tg, name)(x, hx, *params), m(x, hx)))):
        np.testing.assert_array_equal(host(gv), host(mv))


@pytest.mark.parametrize("name", sorted(_GATES))
def test_cell_gradients(name):
    g, hid = _GATES[name], 3
    shapes = ((2, 2), (2, hid), (2, hid), (g * hid, 2), (g * hid, hid), (g * hid,), (g * hid,))
    inputs = [t64(s).requires_grad_() for s in shapes]

    def fn(x, h, c, wi, wh, bi, bh):
        if name == "lstm_cell":
            return tg.stack(tg.lstm_cell(x, (h, c), wi, wh, bi, bh))
        return getattr(tg, name)(x, h, wi, wh, bi, bh) + 0 * c
    assert tg.autograd.gradcheck(fn, inputs)


@pytest.mark.parametrize("call, error, message", [
    (lambda: tg.rnn_tanh_cell(tg.zeros(2, 3), tg.zeros(2, 4), tg.zeros(5, 2), tg.zeros(4, 4)),
     RuntimeError, "weight_ih first dim must be 1 \\* hidden_size = 4, but got 5"),
    (lambda: tg.rnn_tanh_cell(tg.zeros(2, 3), tg.zeros(2, 4), tg.zeros(4, 3), tg.zeros(5, 4)),
     RuntimeError, "weight_hh first dim must be 1 \\* hidden_size = 4, but got 5"),
    (lambda: tg.gru_cell(tg.zeros(2, 3), tg.zeros(2, 4), tg.zeros(12, 2), tg.zeros(12, 4)),
     RuntimeError, "input has inconsistent input_size: got 3 expected 2"),
    (lambda: tg.rnn_relu_cell(tg.zeros(2, 3), tg.zeros(1, 4), tg.zeros(4, 3), tg.zeros(4, 4)),
     RuntimeError, "Input batch size 2 doesn't match hidden0 batch size 1"),
    (lambda: tg.rnn_tanh_cell(tg.zeros(2, 3), tg.zeros(2, 3), tg.zeros(4, 3), tg.zeros(4, 4)),
     RuntimeError, "hidden0 has inconsistent hidden_size: got 3, expected 4"),
    (lambda: tg.lstm_cell(tg.zeros(2, 3), (tg.zeros(2, 4), tg.zeros(1, 4)), tg.zeros(16, 3),
                          tg.zeros(16, 4)),
     RuntimeError, "Input batch size 2 doesn't match hidden1 batch size 1"),
    (lambda: tg.lstm_cell(tg.zeros(2, 3), (tg.zeros(2, 4),), tg.zeros(16, 3), tg.zeros(16, 4)),
     RuntimeError, "lstm_cell expects two hidden states"),
    (lambda: tg.lstm_cell(tg.zeros(2, 3), tg.zeros(2, 4), tg.zeros(16, 3), tg.zeros(16, 4)),
     TypeError, "argument 'hx' \\(position 2\\) must be tuple of Tensors, not Tensor"),
    (lambda: tg.rnn_tanh_cell(tg.zeros(3), tg.zeros(4), tg.zeros(4, 3), tg.zeros(4, 4)),
     IndexError, "dimension out of range"),
    (lambda: tg.gru_cell(tg.zeros(2, 3), (tg.zeros(2, 4),), tg.zeros(12, 3), tg.zeros(12, 4)),
     TypeError, "gru_cell\\(\\): argument 'hx' \\(position 2\\) must be Tensor, not tuple"),
])
def test_cell_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
