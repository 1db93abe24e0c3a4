"""Norms, products and einsum (autograd/ops/linalg_ext.py, contraction.py, tritongrad.linalg):
values against NumPy float64 (np.linalg.norm, np.einsum), gradients by finite differences,
PyTorch's errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order, t64

rng = np.random.default_rng(7)
INF = math.inf


def close(t, ref, rtol=1e-10, atol=1e-12):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_allclose(host(t), ref, rtol=rtol, atol=atol)


# -- vector norms -------------------------------------------------------------------------------

@pytest.mark.parametrize("ord", [2, 1, INF, -INF, 0, 3, 0.5, -1])
def test_vector_norm_values_and_gradients(ord, device):
    x = t64((3, 4), device)
    a = host(x)
    close(tg.linalg.vector_norm(x, ord), np.linalg.norm(a.ravel(), ord))
    for dim, keepdim in ((1, False), (-2, True)):
        ref = np.linalg.norm(a, ord, axis=dim, keepdims=keepdim)
        close(tg.linalg.vector_norm(x, ord, dim, keepdim), ref)
    y = t64((2, 3, 4), device)
    ref = np.linalg.norm(host(y).transpose(1, 0, 2).reshape(3, 8), ord, axis=1)
    close(tg.linalg.vector_norm(y, ord, (0, 2)), ref)
    close(tg.linalg.vector_norm(y, ord, (2, 0), keepdim=True), ref.reshape(1, 3, 1))
    if ord != 0:
        assert_grads_match(lambda t: tg.linalg.vector_norm(t, ord, 1), [x], atol=1e-5)
    else:
        r = tg.linalg.vector_norm(x.requires_grad_(), 0)  # (recorded; its gradient is None)
        assert r.requires_grad and r.grad_fn.name() == "LinalgVectorNormBackward0"


def test_vector_norm_gradient_at_zero_is_zero(device):
    for ord in (2, 3):
        x = tg.zeros(3, dtype=tg.float64, device=device, requires_grad=True)
        y = tg.linalg.vector_norm(x, ord)
        y.backward()
        assert y.item() == 0 and host(x.grad).tolist() == [0.0, 0.0, 0.0]
    # one row zero, the other not: only the zero row takes the subgradient
    x = tg.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=tg.float64, device=device, requires_grad=True)
    tg.linalg.vector_norm(x, dim=1).sum().backward()
    np.testing.assert_allclose(host(x.grad), [[0, 0], [0.6, 0.8]])


def test_vector_norm_dtype_and_errors():
    x = tg.tensor([3.0, 4.0])
    y = tg.linalg.vector_norm(x, dtype=tg.float64)
    assert y.dtype is tg.float64 and y.item() == 5.0
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        tg.linalg.vector_norm(tg.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="dtype should be floating point or complex, but got "
                                           "Long"):
        tg.linalg.vector_norm(x, dtype=tg.int64)
    with pytest.raises(RuntimeError, match=r"the dtype of the input \(Double\) should be "
                                           r"convertible without narrowing"):
        tg.linalg.vector_norm(x.double(), dtype=tg.float32)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        tg.linalg.vector_norm(tg.zeros(0), INF)
    with pytest.raises(TypeError, match="argument 'ord' .* must be Number, not str"):
        tg.linalg.vector_norm(x, "fro")


# -- matrix norms -------------------------------------------------------------------------------

@pytest.mark.parametrize("ord", ["fro", 1, -1, INF, -INF])
def test_matrix_norm(ord, device):
    A = t64((2, 3, 4), device)
    a = host(A)
    close(tg.linalg.matrix_norm(A, ord), np.linalg.norm(a, ord, axis=(-2, -1)))
    close(tg.linalg.matrix_norm(A, ord, (0, 2), keepdim=True),
          np.linalg.norm(a, ord, axis=(0, 2), keepdims=True))
    close(tg.linalg.matrix_norm(A, ord, (2, 1)), np.linalg.norm(a, ord, axis=(2, 1)))
    assert_grads_match(lambda t: tg.linalg.matrix_norm(t, ord), [A], atol=1e-5)


def test_matrix_norm_errors():
    A = tg.ones(3, 3)
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        tg.linalg.matrix_norm(tg.ones(3))
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        tg.linalg.matrix_norm(A, 3)
    with pytest.raises(RuntimeError, match="Order abc not supported"):
        tg.linalg.matrix_norm(A, "abc")
    with pytest.raises(RuntimeError, match=r"dims must be different. Got \(0, 0\)"):
        tg.linalg.matrix_norm(A, 1, (0, 0))
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 0"):
        tg.linalg.matrix_norm(A, 1, (0,))


@pytest.mark.parametrize("ord, ref", [("nuc", np.sum), (2, np.max), (-2, np.min)])
def test_matrix_norm_through_singular_values(ord, ref, device):
    a = np.random.default_rng(3).standard_normal((2, 4, 3, 5))
    A = tg.tensor(a, dtype=tg.float64, device=device)
    want = ref(np.linalg.svd(np.moveaxis(a, (1, 3), (-2, -1)), compute_uv=False), -1)
    got = tg.linalg.matrix_norm(A, ord, dim=(1, 3))
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-12)
    kept = tg.linalg.matrix_norm(A, ord, dim=(3, 1), keepdim=True)
    assert kept.shape == (2, 1, 3, 1)
    np.testing.assert_allclose(kept.cpu().numpy()[:, 0, :, 0], want, rtol=1e-12)
    np.testing.assert_allclose(tg.linalg.norm(A[0, :, 0], ord).cpu().numpy(), want[0, 0],
                               rtol=1e-12)
    if device == "cpu":
        x = tg.tensor(a[0, :, 0], dtype=tg.float64, requires_grad=True)
        assert tg.autograd.gradcheck(lambda m: tg.linalg.matrix_norm(m, ord), (x,))


def test_linalg_norm_dispatch(device):
    A = t64((3, 4), device)
    a = host(A)
    close(tg.linalg.norm(A), np.linalg.norm(a))
    close(tg.linalg.norm(A, 1), np.linalg.norm(a, 1))
    close(tg.linalg.norm(A, INF, dim=1), np.linalg.norm(a, INF, axis=1))
    close(tg.linalg.norm(A, dim=(1, 0)), np.linalg.norm(a, axis=(1, 0)))
    close(tg.linalg.norm(A[0], 3), np.linalg.norm(a[0], 3))
    close(tg.linalg.norm(A, keepdim=True), np.linalg.norm(a.ravel()).reshape(1, 1))
    with pytest.raises(RuntimeError, match="the input must be 1D or 2D. Got 3D"):
        tg.linalg.norm(tg.ones(2, 2, 2), 2)
    with pytest.raises(RuntimeError, match="must be of length 1 or 2"):
        tg.linalg.norm(tg.ones(2, 2, 2), dim=(0, 1, 2))


def test_torch_norm_and_method(device):
    x = t64((2, 3, 4), device)
    a = host(x)
    close(tg.norm(x), np.linalg.norm(a.ravel()))
    close(x.norm(), np.linalg.norm(a.ravel()))
    close(x.norm(1, dim=2), np.linalg.norm(a, 1, axis=2))
    close(x.norm(dim=(0, 1)), np.sqrt((a * a).sum((0, 1))))
    close(x.norm(p=INF, dim=(0, 2), keepdim=True), np.abs(a).max((0, 2), keepdims=True))
    close(tg.norm(x[0], "fro"), np.linalg.norm(a[0]))
    close(x.norm(None), np.linalg.norm(a.ravel()))
    assert x.float().norm(dtype=tg.float64).dtype is tg.float64
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 0 1 2"):
        tg.norm(x, "fro", dim=(0, 1, 2))
    assert_grads_match(lambda t: t.norm(3, dim=1), [x], atol=1e-5)


def test_vecdot(device):
    x, y = t64((3, 4), device), t64((4,), device)
    close(tg.linalg.vecdot(x, y), host(x) @ host(y))
    close(tg.linalg.vecdot(x, x, dim=0), (host(x) ** 2).sum(0))
    assert_grads_match(tg.linalg.vecdot, [x, y])
    with pytest.raises(RuntimeError, match="Expected x and y to have the same dtype"):
        tg.linalg.vecdot(x, y.float())
    assert tg.linalg.matmul is tg.matmul


# -- products -----------------------------------------------------------------------------------

def test_outer_and_ger(device):
    a, b = t64((3,), device), t64((4,), device)
    close(tg.outer(a, b), np.outer(host(a), host(b)))
    close(a.ger(b), np.outer(host(a), host(b)))
    assert_grads_match(tg.outer, [a, b])
    assert tg.outer(tg.tensor([1, 2]), tg.tensor([0.5])).dtype is tg.float32
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        tg.outer(tg.ones(2, 2), tg.ones(2))
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 2-D"):
        tg.outer(tg.ones(2), tg.ones(2, 1))


def test_dot_vdot_mv(device):
    a, b, m = t64((5,), device), t64((5,), device), t64((3, 5), device)
    close(tg.dot(a, b), np.dot(host(a), host(b)))
    close(a.dot(b), np.dot(host(a), host(b)))
    close(tg.mv(m, a), host(m) @ host(a))
    close(m.mv(a), host(m) @ host(a))
    assert_grads_match(tg.dot, [a, b])
    assert_grads_match(tg.mv, [m, a])
    z = tg.tensor(host(a) + 1j * host(b), device=device)
    close(tg.vdot(z, z), np.vdot(host(z), host(z)))
    close(tg.dot(z, z), np.dot(host(z), host(z)))
    close(tg.vdot(a, b), np.vdot(host(a), host(b)))
    if device == "cpu":  # (integer products are CPU-only, as in PyTorch)
        assert tg.dot(tg.tensor([1, 2]), tg.tensor([3, 4])).item() == 11
    with pytest.raises(RuntimeError, match="dot: 1D tensors expected, but got 2D and 1D"):
        tg.dot(m, a)
    with pytest.raises(RuntimeError, match=r"dot: inconsistent tensor size, expected tensor "
                                           r"\[5\] and src \[3\]"):
        tg.dot(a, tg.ones(3, dtype=tg.float64, device=device))
    with pytest.raises(RuntimeError, match="dot: expected both operands to have the same "
                                           "dtype, but found Double and Float"):
        tg.dot(a, tg.ones(5, device=device))
    with pytest.raises(RuntimeError, match=r"mv: size mismatch, got input \(3\), mat \(3x5\), "
                                           r"vec \(3\)"):
        tg.mv(m, tg.ones(3, dtype=tg.float64, device=device))
    with pytest.raises(RuntimeError, match="mv: vector \\+ matrix @ vector expected, got 2, 2"):
        tg.mv(m, m)


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3.0)])
def test_addmm_addmv_baddbmm(beta, alpha, device):
    inp, m1, m2 = t64((1, 4), device), t64((3, 2), device), t64((2, 4), device)
    ref = beta * host(inp) + alpha * host(m1) @ host(m2)
    close(tg.addmm(inp, m1, m2, beta=beta, alpha=alpha), ref)
    assert_grads_match(lambda i, a, b: tg.addmm(i, a, b, beta=beta, alpha=alpha), [inp, m1, m2])
    v, vec = t64((3,), device), t64((2,), device)
    close(tg.addmv(v, m1, vec, beta=beta, alpha=alpha),
          beta * host(v) + alpha * host(m1) @ host(vec))
    assert_grads_match(lambda i, a, b: i.addmv(a, b, beta=beta, alpha=alpha), [v, m1, vec])
    bi, b1, b2 = t64((2, 3, 4), device), t64((2, 3, 2), device), t64((2, 2, 4), device)
    close(tg.baddbmm(bi, b1, b2, beta=beta, alpha=alpha),
          beta * host(bi) + alpha * host(b1) @ host(b2))
    assert_grads_match(lambda i, a, b: tg.baddbmm(i, a, b, beta=beta, alpha=alpha),
                       [bi, b1, b2])


def test_addmm_beta_zero_ignores_nan_and_inplace_forms(device):
    nan = tg.full((2, 2), math.nan, dtype=tg.float64, device=device)
    eye = tg.eye(2, dtype=tg.float64, device=device)
    close(tg.addmm(nan, eye, eye, beta=0), np.eye(2))
    y = tg.ones(2, 2, dtype=tg.float64, device=device)
    assert y.addmm_(eye, eye, alpha=2) is y
    close(y, np.ones((2, 2)) + 2 * np.eye(2))
    v = tg.ones(2, dtype=tg.float64, device=device)
    v.addmv_(eye, tg.tensor([1.0, 2.0], dtype=tg.float64, device=device), beta=2)
    close(v, [3.0, 4.0])
    b = tg.zeros(1, 2, 2, dtype=tg.float64, device=device)
    b.baddbmm_(eye.unsqueeze(0), eye.unsqueeze(0))
    close(b, np.eye(2)[None])
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        tg.ones(1, 2, dtype=tg.float64).addmm_(tg.ones(2, 2, dtype=tg.float64),
                                               tg.ones(2, 2, dtype=tg.float64))


def test_product_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x4 and 5x3\)"):
        tg.addmm(tg.zeros(2, 3), tg.zeros(2, 4), tg.zeros(5, 3))
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x4\), vec "
                                           r"\(5\)"):
        tg.addmv(tg.zeros(2), tg.zeros(2, 4), tg.zeros(5))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 4\] but got: \[2, 5\]."):
        tg.baddbmm(tg.zeros(2, 2, 3), tg.zeros(2, 2, 4), tg.zeros(2, 5, 3))
    with pytest.raises(RuntimeError, match="must have the same dtype"):
        tg.addmm(tg.zeros(2, 3, dtype=tg.float64), tg.zeros(2, 4), tg.zeros(4, 3))


# -- einsum -------------------------------------------------------------------------------------

EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("i,j->ij", [(2,), (3,)]), ("i,i->", [(3,), (3,)]), ("iij->j", [(2, 2, 3)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]), ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
    ("...,...", [(2, 3), (3,)]), ("Ab,bA", [(2, 3), (3, 2)]), ("i,i,i->i", [(3,), (3,), (3,)]),
    ("i...->...", [(2, 3, 4)]), ("ijk,ik->j", [(2, 3, 4), (2, 4)]), ("i,i->i", [(3,), (1,)]),
    ("b i j , b j -> b i", [(2, 3, 4), (2, 4)]), ("ij,ij->ij", [(0, 3), (0, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_against_numpy(eq, shapes):
    xs = [t64(s) for s in shapes]
    close(tg.einsum(eq, *xs), np.einsum(eq.replace(" ", ""), *[host(x) for x in xs]))
    close(tg.einsum(eq, xs), np.einsum(eq.replace(" ", ""), *[host(x) for x in xs]))
    if all(0 not in s for s in shapes):
        assert_grads_match(lambda *a: tg.einsum(eq, *a), xs)


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(2, 3), (3, 2)]),
                                       ("bii->bi", [(2, 3, 3)])])
def test_einsum_on_device(eq, shapes, device):
    xs = [t64(s, device) for s in shapes]
    close(tg.einsum(eq, *xs), np.einsum(eq, *[host(x) for x in xs]))
    assert_grads_match(lambda *a: tg.einsum(eq, *a), xs)


def test_einsum_single_operand_is_a_view():
    x = tg.ones(2, 3)
    assert tg.einsum("ij->ji", x)._base is x


@pytest.mark.parametrize("args,message", [
    (("ij,jk", tg.ones(2, 3)), "fewer operands were provided than specified"),
    (("ij", tg.ones(2, 3), tg.ones(3)), "more operands were provided than specified"),
    (("ij,jk->ik", tg.ones(2, 3), tg.ones(4, 5)),
     "subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    (("ij->ii", tg.ones(2, 3)), "output subscript i appears more than once in the output"),
    (("ij->k", tg.ones(2, 3)), "output subscript k does not appear in the equation"),
    (("ijk->ij", tg.ones(2, 3)), (r"the number of subscripts in the equation \(3\) does not "
                                  r"match the number of dimensions \(2\) for operand 0")),
    (("ijk...->ij", tg.ones(2, 3)), "is more than the number of dimensions"),
    (("i1->i", tg.ones(2, 3)), "invalid subscript given at index 1 in the equation string"),
    (("ii->i", tg.ones(2, 3)), ("subscript i is repeated for operand 0 but the sizes don't "
                                "match, 3 != 2")),
    (("i.j", tg.ones(2, 3)), "found '.' for operand 0 that is not part of any ellipsis"),
    (("i,i->", tg.ones(3), tg.ones(3, dtype=tg.float64)), "expected scalar type"),
])
def test_einsum_errors(args, message):
    with pytest.raises(RuntimeError, match=message):
        tg.einsum(*args)


SUBLISTS = [  # (shapes, the sublist arguments after each operand, the output's or None)
    ([(2, 3), (3, 4)], [[0, 1], [1, 2]], [0, 2]),
    ([(2, 3), (3, 4)], [[0, 1], [1, 2]], None),           # implicit output
    ([(3, 3)], [[5, 5]], []),                              # trace
    ([(2, 3, 4)], [[Ellipsis, 51]], None),                 # 51 is 'z': sorted after the rest
    ([(2, 3, 4), (4, 5)], [[Ellipsis, 26], [26, 30]], [Ellipsis, 30]),
    ([(2, 3), (3,), (3,)], [(0, 1), (1,), (1,)], (0,)),    # tuples as lists
]


@pytest.mark.parametrize("shapes,subs,out", SUBLISTS)
def test_einsum_sublist_format(shapes, subs, out):
    xs = [t64(s) for s in shapes]

    def call(*a):
        args = [v for pair in zip(a, subs) for v in pair]
        return tg.einsum(*args, *([] if out is None else [out]))

    nargs = [v for pair in zip([host(x) for x in xs], subs) for v in pair]
    close(call(*xs), np.einsum(*nargs, *([] if out is None else [out])))
    assert_grads_match(call, xs)


def test_einsum_sublist_matches_the_equation():
    rng = np.random.default_rng(0)
    a = tg.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    b = tg.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    by_list = tg.einsum(a, [Ellipsis, 0, 1], b, [1, 2], [Ellipsis, 0, 2])
    by_string = tg.einsum("...AB,BC->...AC", a, b)
    assert np.allclose(by_list.detach().numpy(), by_string.detach().numpy())
    (ga, gb) = tg.autograd.grad(by_list.sum(), (a, b))
    (ha, hb) = tg.autograd.grad(by_string.sum(), (a, b))
    assert np.allclose(ga.numpy(), ha.numpy()) and np.allclose(gb.numpy(), hb.numpy())


@pytest.mark.parametrize("args,error,message", [
    ((tg.ones(2, 3), [0, 52]), ValueError, r"not within the valid range \[0, 52\)"),
    ((tg.ones(2, 3), [0, -1]), ValueError, r"not within the valid range \[0, 52\)"),
    ((tg.ones(2, 3), [0, "j"]), TypeError, "subscripts must be ints or ..., got str"),
    ((tg.ones(2), [True]), TypeError, "subscripts must be ints or ..., got bool"),
    ((tg.ones(2), [1.0]), TypeError, "subscripts must be ints or ..., got float"),
    ((tg.ones(2, 3), [0, 1], tg.ones(3)), TypeError, "ends with an operand's subscripts"),
    ((tg.ones(2, 3), 0, [0]), TypeError, "followed by a list of subscripts, got int"),
    ((tg.ones(2, 3), [0, 1], tg.ones(2, 3), [1, 2]), RuntimeError,
     "subscript B has size 2 for operand 1 which does not broadcast with previously seen "
     "size 3"),
])
def test_einsum_sublist_errors(args, error, message):
    with pytest.raises(error, match=message):
        tg.einsum(*args)


@st.composite
def _equations(draw):
    """Random two-operand equations over the letters a-e, with random size-1 dims (which
    broadcast) and a random explicit or implicit output."""
    sizes = {c: draw(st.integers(1, 3)) for c in "abcde"}
    la = draw(st.lists(st.sampled_from("abcde"), min_size=0, max_size=3, unique=True))
    lb = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=3, unique=True))
    used = sorted(set(la) | set(lb))
    explicit = draw(st.booleans())
    out = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
    shape_a = tuple(1 if draw(st.integers(0, 3)) == 0 else sizes[c] for c in la)
    shape_b = tuple(sizes[c] for c in lb)
    eq = f"{''.join(la)},{''.join(lb)}" + (f"->{''.join(out)}" if explicit else "")
    return eq, shape_a, shape_b


@settings(max_examples=60, deadline=None)
@given(_equations())
def test_einsum_matches_numpy_on_random_equations(case):
    eq, sa, sb = case
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    out = tg.einsum(eq, tg.tensor(a), tg.tensor(b))
    close(out, np.einsum(eq, a, b), rtol=1e-10)


# -- second derivatives (through the parts, with create_graph) ----------------------------------

@pytest.mark.parametrize("fn", [
    lambda t: tg.linalg.vector_norm(t, 2, 1),
    lambda t: tg.linalg.vector_norm(t, 3),
    lambda t: tg.linalg.matrix_norm(t, "fro"),
    lambda t: tg.einsum("ij,ij->i", t, t),
    lambda t: tg.einsum("ij,jk->ik", t, t.t()),
], ids=["norm2", "norm3", "fro", "einsum-dot", "einsum-mm"])
def test_second_order(fn):
    second_order(fn, t64((2, 3)))


def test_zero_norm_is_recorded_and_has_no_gradient():
    # PyTorch's: the count of nonzeros is a LinalgVectorNormBackward0 whose gradient is
    # undefined (.grad stays None); it was not recorded, so backward() through it raised
    x = tg.tensor([[1.0, 0.0, 2.0], [3.0, 1.0, 0.0]], requires_grad=True)
    for r in (x.norm(p=0, dim=1), tg.linalg.vector_norm(x, 0),
              tg.linalg.vector_norm(x * 1j, 0)):
        assert r.requires_grad and r.grad_fn.name() == "LinalgVectorNormBackward0"
        r.sum().backward()
        assert x.grad is None
    # cdist(p=0) is PyTorch's CdistBackward0, whose gradient is zeros, not None
    c = tg.cdist(x, x, p=0)
    assert c.grad_fn.name() == "CdistBackward0"
    c.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
    x.grad = None
    np.testing.assert_array_equal(tg.linalg.vector_norm(x, 0, dim=1).detach().numpy(), [2, 2])
    np.testing.assert_array_equal(tg.cdist(x, x, p=0).detach().numpy(), [[0, 3], [3, 0]])
    (tg.linalg.vector_norm(x, 0) + x.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    _, t = tg.func.jvp(lambda a: tg.linalg.vector_norm(a, 0), (x.detach(),), (tg.ones(2, 3),))
    assert t.item() == 0.0
