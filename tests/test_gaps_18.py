"""Correctness gaps against PyTorch, round 18: ``clip_grad_norm_`` / ``get_total_norm`` with
negative norm types (-inf is the least |g|) and mixed dtypes, ``foreach=True`` on CPU tensors
(accepted, as PyTorch 2.13's), ``clamp`` / ``clip`` refusing a tensor bound beside a number
bound, the dense optimizers' sparse-gradient errors (LBFGS densifies), and
``gather(..., sparse_grad=True)``'s sparse COO gradient. Values against float64 NumPy
references, gradients against finite differences (tests/helpers.py), errors against
PyTorch's messages."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host, numeric_grads
from tritongrad import nn

rng = np.random.default_rng(18)


def _params(vals: list, dtypes, device: str = "cpu") -> list:
    """Parameters whose gradients are ``vals`` (one dtype each, or one for all)."""
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes] * len(vals)
    params = []
    for v, dt in zip(vals, dtypes):
        p = nn.Parameter(tg.zeros(np.shape(v), dtype=dt, device=device))
        p.grad = tg.tensor(v, dtype=dt, device=device)
        params.append(p)
    return params


def _p_norm(vals: list, p: float) -> float:
    """The p-norm of all elements together, in float64 (p < 0 included; -inf: min |g|)."""
    flat = np.concatenate([np.abs(np.asarray(v, np.complex128)).reshape(-1) for v in vals])
    if p == -math.inf:
        return float(flat.min())
    if p == math.inf:
        return float(flat.max())
    if p == 0:
        return float(sum(np.count_nonzero(v) > 0 for v in vals))
    with np.errstate(divide="ignore"):
        return float((flat ** p).sum() ** (1 / p))


# -- clip_grad_norm_ / get_total_norm: negative norm types ---------------------------------------

@pytest.mark.parametrize("p", [-math.inf, -1.0, -2.5])
@pytest.mark.parametrize("dt", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_norm_negative_norm_types(device, p, dt, foreach):
    # PyTorch: the -inf norm is the least |g| over all gradients (was the greatest); negative p
    # the p-"norm" of all elements. Every gradient is scaled by min(max_norm / (total + 1e-6), 1)
    vals = [rng.uniform(0.5, 3, (3, 4)), rng.uniform(0.5, 3, 5), rng.uniform(0.5, 3, (2, 1, 2))]
    vals[1][2] = -0.25  # the least |g|, negative
    if dt == "complex64":
        vals[0] = vals[0] * np.exp(1j)
    dtype = getattr(tg, dt)
    params = _params(vals, dtype, device)
    want = _p_norm(vals, p)
    total = nn.utils.clip_grad_norm_(params, 0.1, norm_type=p, foreach=foreach)
    assert total.dtype is dtype.to_real() and total.shape == () and total.device.type == device
    assert total.item() == pytest.approx(want, rel=1e-5)
    coef = min(0.1 / (want + 1e-6), 1.0)
    for q, v in zip(params, vals):
        np.testing.assert_allclose(host(q.grad), v * coef, rtol=1e-5)
    assert nn.utils.get_total_norm([tg.tensor(v, dtype=dtype) for v in vals],
                                   norm_type=p).item() == pytest.approx(want, rel=1e-5)


def test_neg_inf_norm_of_half_gradients_and_clip_grads_with_norm_():
    vals = [np.array([1.0, -3.0]), np.array([0.5, 2.0, -5.0])]
    params = _params(vals, tg.float16)
    total = nn.utils.clip_grad_norm_(params, 0.25, norm_type="-inf")
    assert total.dtype is tg.float16 and total.item() == 0.5  # PyTorch's: tensor(0.5000)
    np.testing.assert_allclose(host(params[1].grad).astype(np.float64), vals[1] * 0.5,
                               rtol=1e-3)
    params = _params(vals, tg.float32)
    total = nn.utils.get_total_norm([q.grad for q in params], norm_type=-math.inf)
    nn.utils.clip_grads_with_norm_(params, 0.25, total)
    np.testing.assert_allclose(host(params[0].grad), vals[0] * 0.25 / (0.5 + 1e-6), rtol=1e-6)


def test_neg_inf_norm_nonfinite_follows_the_least_element():
    # one infinite element: the least |g| is finite (PyTorch: no error, the total is 1)
    params = _params([np.array([1.0, np.inf]), np.array([4.0])], tg.float32)
    total = nn.utils.clip_grad_norm_(params, 10.0, norm_type=-math.inf, error_if_nonfinite=True)
    assert total.item() == 1.0
    # all infinite, or a NaN: non-finite, PyTorch's error
    for bad in ([np.inf, -np.inf], [1.0, np.nan]):
        params = _params([np.array(bad)], tg.float32)
        with pytest.raises(RuntimeError, match="The total norm of order -inf for gradients "
                           "from `parameters` is non-finite, so it cannot be clipped"):
            nn.utils.clip_grad_norm_(params, 1.0, norm_type=-math.inf, error_if_nonfinite=True)


@pytest.mark.parametrize("p,word", [(-math.inf, "-inf"), (-1.0, "-1")])
def test_negative_norm_of_an_empty_gradient_raises(p, word):
    # min has no identity: PyTorch's linalg.vector_norm error, on every path
    params = _params([np.array([3.0, 4.0]), np.zeros(0)], tg.float32)
    msg = (f"linalg.vector_norm cannot compute the {word} norm on an empty tensor because the "
           f"operation does not have an identity")
    for foreach in (None, False, True):
        with pytest.raises(RuntimeError, match=msg):
            nn.utils.clip_grad_norm_(params, 1.0, norm_type=p, foreach=foreach)
    with pytest.raises(RuntimeError, match=msg):
        nn.utils.get_total_norm([q.grad for q in params], norm_type=p)


# -- clip_grad_norm_: the total's dtype with mixed gradient dtypes ------------------------------

@pytest.mark.parametrize("p", [2.0, math.inf, 1.0, 0.0, -math.inf, 3.0])
@pytest.mark.parametrize("dts,want_dt", [(("float32", "float64"), "float64"),
                                         (("float16", "float32"), "float32"),
                                         (("bfloat16", "float16"), "float32"),
                                         (("complex64", "float32"), "float32"),
                                         (("float32", "complex128"), "float64")])
def test_clip_grad_norm_mixed_dtypes_total_dtype(p, dts, want_dt):
    # PyTorch stacks the per-gradient norms, so the total has their promoted dtype
    vals = [np.array([3.0, 0.5]), np.array([4.0, 0.25])]
    params = _params(vals, [getattr(tg, d) for d in dts])
    total = nn.utils.clip_grad_norm_(params, 0.1, norm_type=p)
    assert total.dtype is getattr(tg, want_dt)
    assert total.item() == pytest.approx(_p_norm(vals, p), rel=1e-2)


def test_vector_norm_zero_norm_of_complex_is_real():
    x = tg.tensor([3 + 4j, 0j, 1j], dtype=tg.complex64)
    n = tg.linalg.vector_norm(x, 0)
    assert n.dtype is tg.float32 and n.item() == 2.0
    params = _params([np.array([1j, 0j]), np.array([0.0, 0.0])], tg.complex64)
    assert nn.utils.clip_grad_norm_(params, 1.0, norm_type=0).item() == 1.0


# -- foreach=True on CPU tensors: accepted (PyTorch 2.13 lists cpu among the foreach devices) ----

def test_foreach_true_on_cpu_is_accepted():
    vals = [rng.standard_normal((4, 3)), rng.standard_normal(5)]
    for_each, per_grad = _params(vals, tg.float32), _params(vals, tg.float32)
    t1 = nn.utils.clip_grad_norm_(for_each, 0.5, foreach=True)
    t2 = nn.utils.clip_grad_norm_(per_grad, 0.5, foreach=False)
    assert t1.item() == pytest.approx(t2.item(), rel=1e-6)
    nn.utils.clip_grad_value_(for_each, 0.05, foreach=True)
    nn.utils.clip_grad_value_(per_grad, 0.05, foreach=False)
    for a, b in zip(for_each, per_grad):
        np.testing.assert_allclose(host(a.grad), host(b.grad), rtol=1e-6)
    total = nn.utils.get_total_norm([q.grad for q in for_each], foreach=True)
    nn.utils.clip_grads_with_norm_(for_each, 0.01, total, foreach=True)


# -- clamp / clip: a tensor bound beside a number bound -----------------------------------------

_CLAMP_MSG = ("clamp() received an invalid combination of arguments - got (Tensor, {}), but "
              "expected one of:\n"
              " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
              " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")


@pytest.mark.parametrize("call,got", [
    (lambda x, t: tg.clamp(x, min=t, max=2.0), "Tensor, float"),
    (lambda x, t: tg.clamp(x, 0, t), "int, Tensor"),
    (lambda x, t: x.clamp(t, 2.0), "Tensor, float"),
    (lambda x, t: tg.clip(x, t, np.float64(2.0)), "Tensor, numpy.float64"),
    (lambda x, t: x.clip(min=-1.0, max=t), "float, Tensor"),
    (lambda x, t: tg.clamp(x, t.new_zeros(()).requires_grad_(), 2.0), "Tensor, float"),
    (lambda x, t: tg.clamp(x, t[:1], 2.0), "Tensor, float"),
])
def test_clamp_refuses_a_tensor_and_a_number_bound(device, call, got):
    x, t = tg.tensor([1.0, 5.0, -3.0], device=device), tg.zeros(3, device=device)
    with pytest.raises(TypeError) as e:
        call(x, t)
    assert str(e.value) == _CLAMP_MSG.format(got)


def test_clamp_inplace_refusal_message():
    x = tg.tensor([1.0, 5.0, -3.0])
    with pytest.raises(TypeError) as e:
        x.clamp_(tg.zeros(3), 2.0)
    why = ("      didn't match because some of the arguments have invalid types: "
           "(Tensor, !Tensor!, !float!)\n")
    assert str(e.value) == (
        "clamp_() received an invalid combination of arguments - got (Tensor, Tensor, float), "
        "but expected one of:\n * (Tensor input, Tensor min = None, Tensor max = None)\n" + why
        + " * (Tensor input, Number min = None, Number max = None)\n" + why)
    np.testing.assert_array_equal(host(x), [1.0, 5.0, -3.0])  # refused before writing


def test_clamp_zero_dim_tensor_beside_a_number_is_a_number(device):
    # PyTorch's parser reads a 0-d tensor that does not require grad as a Number
    x = tg.tensor([1.0, 5.0, -3.0], device=device, requires_grad=True)
    y = tg.clamp(x, tg.tensor(0.0, device=device), 2.0)
    assert y.tolist() == [1.0, 2.0, 0.0] and type(y.grad_fn).__name__ == "ClampBackward1"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0]
    xi = tg.tensor([1, 5, -3], device=device)
    assert tg.clamp(xi, tg.tensor(0.5), 2).tolist() == [1.0, 2.0, 0.5]  # int x: float result
    z = x.detach().clone()
    z.clamp_(-1.0, tg.tensor(True))
    assert z.tolist() == [1.0, 1.0, -1.0]
    # tensors for both bounds, or one alone, stay the tensor overload
    assert tg.clamp(x, tg.zeros(3, device=device), tg.ones(3, device=device)).tolist() == \
        [1.0, 1.0, 0.0]
    assert tg.clamp(x, min=tg.zeros(3, device=device)).tolist() == [1.0, 5.0, 0.0]


def test_clamp_without_bounds_message():
    with pytest.raises(RuntimeError, match=r"^torch\.clamp: At least one of 'min' or 'max' "
                       r"must not be None$"):
        tg.clamp(tg.ones(2))


# -- optimizers meeting a sparse gradient --------------------------------------------------------

_DENSE_ONLY = [
    (tg.optim.Adam, {}, "Adam does not support sparse gradients, please consider SparseAdam "
     "instead"),
    (tg.optim.AdamW, {}, "Adam does not support sparse gradients, please consider SparseAdam "
     "instead"),
    (tg.optim.Adam, {"foreach": True, "amsgrad": True}, "Adam does not support sparse "
     "gradients, please consider SparseAdam instead"),
    (tg.optim.Adamax, {}, "Adamax does not support sparse gradients"),
    (tg.optim.NAdam, {}, "NAdam does not support sparse gradients"),
    (tg.optim.RAdam, {}, "RAdam does not support sparse gradients"),
    (tg.optim.Adadelta, {}, "Adadelta does not support sparse gradients"),
    (tg.optim.RMSprop, {}, "RMSprop does not support sparse gradients"),
    (tg.optim.Rprop, {}, "Rprop does not support sparse gradients"),
    (tg.optim.ASGD, {}, "ASGD does not support sparse gradients"),
    (tg.optim.Adafactor, {}, "Adafactor does not support sparse gradients"),
    (tg.optim.Muon, {}, "Muon does not support sparse gradients"),
    (tg.optim.SGD, {"fused": True}, "`_fused_sgd` does not support sparse gradients"),
]


@pytest.mark.parametrize("cls,kw,msg", _DENSE_ONLY)
def test_dense_optimizers_refuse_sparse_gradients(device, cls, kw, msg):
    dense = nn.Linear(3, 3, bias=False).to(device)
    emb = nn.Embedding(5, 3, sparse=True).to(device)
    opt = cls([dense.weight, emb.weight], lr=0.1, **kw)
    before = [host(dense.weight).copy(), host(emb.weight).copy()]
    dense(emb(tg.tensor([1, 2, 2], device=device))).sum().backward()
    assert emb.weight.grad.is_sparse
    with pytest.raises(RuntimeError) as e:
        opt.step()
    assert str(e.value) == msg
    # raised before any parameter of the group changed (PyTorch's _init_group)
    np.testing.assert_array_equal(host(dense.weight), before[0])
    np.testing.assert_array_equal(host(emb.weight), before[1])


def test_sparse_taking_optimizers_still_take_them():
    for cls, kw in ((tg.optim.SGD, {}), (tg.optim.SGD, {"fused": False, "momentum": 0.9}),
                    (tg.optim.Adagrad, {}), (tg.optim.SparseAdam, {})):
        emb = nn.Embedding(5, 3, sparse=True)
        before = host(emb.weight).copy()
        opt = cls(emb.parameters(), lr=0.1, **kw)
        emb(tg.tensor([1, 2])).sum().backward()
        opt.step()
        changed = (host(emb.weight) != before).any(axis=1)
        assert changed.tolist() == [False, True, True, False, False]


def test_lbfgs_takes_a_sparse_gradient_as_its_dense_form():
    # PyTorch's LBFGS gathers p.grad.to_dense(): the run equals the dense embedding's
    w0 = rng.standard_normal((5, 3))
    target = tg.tensor(rng.standard_normal((4, 3)))
    idx = tg.tensor([1, 3, 3, 0])
    results = []
    for sparse in (True, False):
        emb = nn.Embedding(5, 3, sparse=sparse, _weight=tg.tensor(w0, dtype=tg.float32))
        opt = tg.optim.LBFGS(emb.parameters(), lr=0.5, max_iter=5)

        def closure():
            opt.zero_grad()
            loss = ((emb(idx) - target) ** 2).sum()
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        results.append(host(emb.weight).copy())
    assert not np.allclose(results[0], w0)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-7)


# -- gather(..., sparse_grad=True) ---------------------------------------------------------------

def _gather_grad_coords(index: np.ndarray, dim: int) -> np.ndarray:
    """PyTorch's _gather_sparse_backward coordinates: per element of index (row-major), its
    coordinates with ``dim``'s replaced by its value."""
    coords = np.indices(index.shape).reshape(index.ndim, -1)
    coords[dim] = index.reshape(-1)
    return coords


@pytest.mark.parametrize("shape,ishape,dim", [((3, 4), (2, 4), 0), ((3, 4), (3, 2), 1),
                                              ((3, 4), (1, 2), -1), ((2, 3, 4), (2, 2, 3), 1),
                                              ((2, 3, 4), (2, 3, 0), 2), ((5,), (7,), 0)])
def test_gather_sparse_grad(device, shape, ishape, dim):
    x0 = rng.standard_normal(shape)
    d = dim % len(shape)
    index = rng.integers(0, shape[d], ishape)
    go = rng.standard_normal(ishape)
    x = tg.tensor(x0, device=device, requires_grad=True)
    idx = tg.tensor(index, device=device)
    y = tg.gather(x, dim, idx, sparse_grad=True)
    window = tuple(slice(None) if j == d else slice(0, n) for j, n in enumerate(ishape))
    np.testing.assert_array_equal(host(y), np.take_along_axis(x0[window], index, d))
    assert type(y.grad_fn).__name__ == "GatherBackward0"
    y.backward(tg.tensor(go, device=device))
    g = x.grad
    assert g.is_sparse and g.shape == shape and not g.is_coalesced()
    assert g.device.type == device and g.dtype is tg.float64
    np.testing.assert_array_equal(host(g._indices()), _gather_grad_coords(index, d))
    np.testing.assert_array_equal(host(g._values()), go.reshape(-1))  # one per element
    # its dense form is the dense gradient (finite differences)
    want = numeric_grads(lambda t: t.gather(dim, tg.tensor(index)), [tg.tensor(x0)],
                         grad_output=go)[0]
    np.testing.assert_allclose(host(g.to_dense()), want, atol=1e-8)


def test_gather_sparse_grad_scalar_method_and_through_a_dense_op():
    s = tg.tensor(5.0, requires_grad=True)
    tg.gather(s, 0, tg.tensor(0), sparse_grad=True).backward()
    assert s.grad.is_sparse and s.grad.shape == () and tuple(s.grad._indices().shape) == (0, 1)
    assert s.grad.to_dense().item() == 1.0
    x = tg.arange(6.0).reshape(2, 3).requires_grad_()
    assert x.gather(1, tg.tensor([[0], [2]]), sparse_grad=True).tolist() == [[0.0], [5.0]]
    # into a computed tensor the gradient continues dense (docs/sparse.md)
    w = tg.arange(6.0).reshape(2, 3).requires_grad_()
    tg.gather(w * 2, 1, tg.tensor([[0, 0], [1, 2]]), sparse_grad=True).sum().backward()
    assert not w.grad.is_sparse and w.grad.tolist() == [[4.0, 0.0, 0.0], [0.0, 2.0, 2.0]]
    with pytest.raises(RuntimeError, match="out of bounds"):
        tg.gather(w, 1, tg.tensor([[0, 5]]), sparse_grad=True)


def test_gather_sparse_grad_double_backward_and_forward_ad():
    x = tg.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    idx = tg.tensor([[0, 2, 1, 0], [2, 2, 1, 1]])
    g = tg.tensor(rng.standard_normal((2, 4)), requires_grad=True)
    gx, = tg.autograd.grad(tg.gather(x, 0, idx, sparse_grad=True), x, g, create_graph=True)
    assert gx.is_sparse and gx.requires_grad
    w = rng.standard_normal((3, 4))
    (gx.to_dense() * tg.tensor(w)).sum().backward()  # d<gx, w>/dg = w gathered
    np.testing.assert_allclose(host(g.grad), np.take_along_axis(w, host(idx), 0))
    fwAD = tg.autograd.forward_ad
    t = rng.standard_normal((3, 4))
    with fwAD.dual_level():
        y = tg.gather(fwAD.make_dual(x.detach(), tg.tensor(t)), 0, idx, sparse_grad=True)
        np.testing.assert_array_equal(host(fwAD.unpack_dual(y).tangent),
                                      np.take_along_axis(t, host(idx), 0))


def test_sparse_tensor_without_sparse_dims():
    # (a 0-d input's sparse gradient has no sparse dims: PyTorch's to_dense sums its values)
    v = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    s = tg.sparse_coo_tensor(tg.zeros(0, 2, dtype=tg.int64), v, (2,))
    assert s.sparse_dim() == 0 and s.dense_dim() == 1 and s._nnz() == 2
    assert s.coalesce()._values().tolist() == [[4.0, 6.0]]
    d = s.to_dense()
    assert d.tolist() == [4.0, 6.0]
    (d * tg.tensor([3.0, 4.0])).sum().backward()
    assert v.grad.tolist() == [[3.0, 4.0], [3.0, 4.0]]
    x = tg.tensor(5.0, requires_grad=True)
    for _ in range(2):  # two sparse gradients accumulated
        tg.gather(x, 0, tg.tensor(0), sparse_grad=True).backward()
    assert x.grad.to_dense().item() == 2.0
