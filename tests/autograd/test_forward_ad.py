"""Forward-mode AD (autograd/forward_ad.py, dispatch.py's Note [Forward AD]).

Every op whose table row says it has a jvp ("forward AD: yes" in docs/ops.md) is run here on
dual float64 tensors, and its tangent compared with central differences of the op itself,
``(f(x + eps t) - f(x - eps t)) / 2 eps``, on the CPU and on the (emulated) CUDA device; the
unary rows are driven from test_ops_pointwise's REFERENCE table. Then levels (nesting, exit),
in-place ops and views, custom Functions, the functional API against reverse mode, a property
test over random compositions, and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import tritongrad.autograd.forward_ad as fwAD
from hypothesis import given, settings
from hypothesis import strategies as st
from tritongrad.autograd import functional
from tritongrad.autograd.ops import FAMILIES

import tritongrad as torch
from tests.autograd.test_ops_pointwise import REFERENCE, UNARY_ROWS
from tests.helpers import host, t64

EPS = 1e-6


def _outputs(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _float(o) -> bool:
    return isinstance(o, torch.Tensor) and o.dtype.is_floating_point


def forward_tangents(fn, inputs, tangents):
    """(outputs, their tangents) of ``fn`` on duals of ``inputs``."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, t) for x, t in zip(inputs, tangents)]
        outs = _outputs(fn(*duals))
        got = [fwAD.unpack_dual(o).tangent if isinstance(o, torch.Tensor) else None
               for o in outs]
    return outs, got


def central_differences(fn, inputs, tangents, eps=EPS):
    with torch.no_grad():
        plus = _outputs(fn(*[x + eps * t for x, t in zip(inputs, tangents)]))
        minus = _outputs(fn(*[x - eps * t for x, t in zip(inputs, tangents)]))
    return [None if not _float(p) else (host(p) - host(m)) / (2 * eps)
            for p, m in zip(plus, minus)]


def assert_jvp_matches(fn, inputs, atol=1e-6, rtol=1e-5, seed=0):
    """The tangents of ``fn``'s outputs match central differences along random tangents."""
    rng = np.random.default_rng(seed)
    tangents = [torch.tensor(rng.standard_normal(tuple(x.shape)), dtype=torch.float64,
                             device=x.device) for x in inputs]
    outs, got = forward_tangents(fn, inputs, tangents)
    expected = central_differences(fn, inputs, tangents)
    for i, (o, g, e) in enumerate(zip(outs, got, expected)):
        if e is None:
            assert g is None, f"output {i} is not differentiable but has a tangent"
            continue
        assert g is not None, f"output {i} has no tangent"
        assert tuple(g.shape) == tuple(o.shape) and g.dtype is o.dtype
        assert g.device == o.device
        np.testing.assert_allclose(host(g), e, atol=atol, rtol=rtol, err_msg=f"output {i}")


def _idx(values, device):
    return torch.tensor(values, dtype=torch.int64, device=device)


def _clone_then(method, *args):
    def fn(a, *rest):
        c = a.clone()
        getattr(c, method)(*args, *rest)
        return c
    return fn


def _setitem(a, b):
    c = a.clone()
    c[1] = b
    return c


def _copy_into(a):
    return torch.zeros(3, 4, dtype=torch.float64, device=a.device).copy_(a)


# Each differentiable row of the op tables (but the unary rows, driven from REFERENCE): a
# function of float64 tensors (all get tangents) and those tensors, on ``d``.
SAMPLES = {
    # elementwise
    "add": lambda d: (lambda a, b: torch.add(a, b, alpha=2), [t64((3, 4), d), t64((4,), d)]),
    "sub": lambda d: (lambda a, b: a.sub(b, alpha=0.5), [t64((3, 4), d), t64((3, 1), d)]),
    "mul": lambda d: (lambda a, b: (a * b, a * 3), [t64((3, 4), d), t64((4,), d)]),
    "div": lambda d: (lambda a, b: (a / b, a / 4), [t64((3, 4), d), t64((3, 4), d, 0.5, 2)]),
    "pow": lambda d: (lambda a, b: (a ** b, a ** 3, a ** 0.5, 2 ** b),
                      [t64((3, 4), d, 0.5, 2), t64((4,), d)]),
    "rsub": lambda d: (lambda a, b: torch.rsub(a, b, alpha=2), [t64((3,), d), t64((3,), d)]),
    "reciprocal": lambda d: (torch.reciprocal, [t64((5,), d, 0.5, 2)]),
    "maximum": lambda d: (torch.maximum, [t64((3, 4), d), t64((4,), d)]),
    "minimum": lambda d: (torch.minimum, [t64((3, 4), d), t64((3, 4), d)]),
    "where": lambda d: (lambda a, b: torch.where(a > 0, a, b), [t64((3, 4), d), t64((4,), d)]),
    "positive": lambda d: (torch.positive, [t64((3,), d)]),
    "logaddexp2": lambda d: (torch.logaddexp2, [t64((3, 4), d), t64((4,), d)]),
    "nan_to_num": lambda d: (lambda a: torch.nan_to_num(a, posinf=3.0), [t64((3, 4), d)]),
    # pointwise
    "atan2": lambda d: (torch.atan2, [t64((3, 4), d), t64((4,), d)]),
    "clamp": lambda d: (lambda a, lo, hi: (a.clamp(-0.5, 0.5), torch.clamp(a, lo, hi)),
                        [t64((3, 4), d), t64((4,), d, -1, -0.1), t64((3, 1), d, 0.1, 1)]),
    "clamp_min": lambda d: (lambda a: torch.clamp_min(a, 0.3), [t64((6,), d)]),
    "clamp_max": lambda d: (lambda a: torch.clamp_max(a, 0.3), [t64((6,), d)]),
    "floor_divide": lambda d: (lambda a, b: a // b, [t64((5,), d, 0.1, 3),
                                                    t64((5,), d, 0.5, 2)]),
    "remainder": lambda d: (lambda a, b: (a % b, a % 0.7), [t64((5,), d, 0.1, 3),
                                                           t64((5,), d, 0.5, 2)]),
    "fmod": lambda d: (lambda a, b: (torch.fmod(a, b), torch.fmod(a, 0.7)),
                       [t64((5,), d, 0.1, 3), t64((5,), d, 0.5, 2)]),
    "fill_": lambda d: (lambda a, v: (_clone_then("fill_", v)(a), _clone_then("fill_", 2.0)(a)),
                        [t64((3, 4), d), t64((), d)]),
    "zero_": lambda d: (_clone_then("zero_"), [t64((3,), d)]),
    # reduction
    "sum": lambda d: (lambda a: (a.sum(), a.sum((0, 2)), a.sum(1, keepdim=True)),
                      [t64((2, 3, 4), d)]),
    "mean": lambda d: (lambda a: (a.mean(), a.mean(1, keepdim=True)), [t64((3, 4), d)]),
    "max": lambda d: (lambda a: (a.max(), a.max(1).values, a.max(0, keepdim=True)[0]),
                      [t64((3, 4), d)]),
    "min": lambda d: (lambda a: (a.min(), a.min(1).values), [t64((3, 4), d)]),
    "amax": lambda d: (lambda a: (a.amax(1), a.amax((0, 1), keepdim=True)), [t64((3, 4), d)]),
    "amin": lambda d: (lambda a: a.amin(0), [t64((3, 4), d)]),
    "var": lambda d: (lambda a: (a.var(), a.var(1, keepdim=True), a.var(0, correction=0)),
                      [t64((3, 4), d)]),
    "std": lambda d: (lambda a: (a.std(), a.std(1)), [t64((3, 4), d)]),
    "var_mean": lambda d: (lambda a: torch.var_mean(a, 1) + torch.var_mean(a, keepdim=True),
                           [t64((3, 4), d)]),
    "std_mean": lambda d: (lambda a: torch.std_mean(a, 0, correction=0), [t64((3, 4), d)]),
    "lerp": lambda d: (lambda a, b, w: (torch.lerp(a, b, 0.3), torch.lerp(a, b, 0.8),
                                        torch.lerp(a, b, w)),
                       [t64((3, 4), d), t64((4,), d), t64((3, 4), d, -1, 2)]),
    "norm": lambda d: (lambda a: (a.norm(), a.norm(3, dim=1), torch.norm(a, float("inf"), 0)),
                       [t64((3, 4), d, 0.2, 2)]),
    "addcmul": lambda d: (lambda a, b, c: torch.addcmul(a, b, c, value=0.5),
                          [t64((3, 4), d), t64((4,), d), t64((3, 1), d)]),
    "addcdiv": lambda d: (lambda a, b, c: torch.addcdiv(a, b, c, value=0.5),
                          [t64((3, 4), d), t64((4,), d), t64((3, 1), d, 0.5, 2)]),
    "addmm": lambda d: (lambda c, a, b: (torch.addmm(c, a, b),
                                         torch.addmm(c, a, b, beta=0.5, alpha=-2.0)),
                        [t64((4,), d), t64((3, 2), d), t64((2, 4), d)]),
    "prod": lambda d: (lambda a: (a.prod(), a.prod(1)), [t64((3, 4), d, 0.5, 1.5)]),
    "logsumexp": lambda d: (lambda a: (a.logsumexp(1), a.logsumexp((0, 1), keepdim=True)),
                            [t64((3, 4), d)]),
    "cumsum": lambda d: (lambda a: a.cumsum(1), [t64((3, 4), d)]),
    # softmax, linalg
    "softmax": lambda d: (lambda a: a.softmax(1), [t64((3, 4), d)]),
    "log_softmax": lambda d: (lambda a: a.log_softmax(0), [t64((3, 4), d)]),
    "mm": lambda d: (torch.mm, [t64((3, 4), d), t64((4, 2), d)]),
    "bmm": lambda d: (torch.bmm, [t64((2, 3, 4), d), t64((2, 4, 2), d)]),
    "matmul": lambda d: (lambda a, b, v: (a @ b, v @ b, a @ v),
                         [t64((2, 3, 4), d), t64((4, 2), d), t64((4,), d)]),
    # shape
    "cat": lambda d: (lambda a, b: torch.cat([a, b], 0), [t64((2, 3), d), t64((1, 3), d)]),
    "stack": lambda d: (lambda a, b: torch.stack([a, b], 1), [t64((2, 3), d), t64((2, 3), d)]),
    "split": lambda d: (lambda a: a.split(2, 1), [t64((2, 5), d)]),
    "split_with_sizes": lambda d: (lambda a: a.split_with_sizes([1, 4], 1), [t64((2, 5), d)]),
    "chunk": lambda d: (lambda a: a.chunk(2, 0), [t64((4, 3), d)]),
    "unsafe_split": lambda d: (lambda a: a.unsafe_split(2, 1), [t64((2, 5), d)]),
    "unsafe_split_with_sizes": lambda d: (lambda a: a.unsafe_split_with_sizes([1, 4], 1),
                                          [t64((2, 5), d)]),
    "unsafe_chunk": lambda d: (lambda a: a.unsafe_chunk(2, 0), [t64((4, 3), d)]),
    "unbind": lambda d: (lambda a: a.unbind(1), [t64((2, 3), d)]),
    "narrow": lambda d: (lambda a: a.narrow(1, 1, 2), [t64((2, 4), d)]),
    "select": lambda d: (lambda a: a.select(0, 1), [t64((2, 4), d)]),
    "movedim": lambda d: (lambda a: a.movedim(0, 2), [t64((2, 3, 4), d)]),
    "repeat": lambda d: (lambda a: a.repeat(2, 3), [t64((2, 3), d)]),
    "tile": lambda d: (lambda a: a.tile((2,)), [t64((2, 3), d)]),
    "tril": lambda d: (lambda a: a.tril(), [t64((3, 3), d)]),
    "triu": lambda d: (lambda a: a.triu(1), [t64((3, 4), d)]),
    # views
    "view": lambda d: (lambda a: a.view(4, 3), [t64((3, 4), d)]),
    "reshape": lambda d: (lambda a: a.t().reshape(-1), [t64((3, 4), d)]),
    "flatten": lambda d: (lambda a: a.flatten(), [t64((2, 3, 2), d)]),
    "permute": lambda d: (lambda a: a.permute(2, 0, 1), [t64((2, 3, 4), d)]),
    "transpose": lambda d: (lambda a: a.transpose(0, 1), [t64((2, 3), d)]),
    "t": lambda d: (lambda a: a.t(), [t64((2, 3), d)]),
    "expand": lambda d: (lambda a: a.expand(2, 3, 4), [t64((3, 1), d)]),
    "expand_as": lambda d: (lambda a, b: a.expand_as(b), [t64((1, 4), d), t64((3, 4), d)]),
    "broadcast_to": lambda d: (lambda a: torch.broadcast_to(a, (2, 4)), [t64((4,), d)]),
    "unsqueeze": lambda d: (lambda a: a.unsqueeze(1), [t64((2, 3), d)]),
    "squeeze": lambda d: (lambda a: a.squeeze(), [t64((2, 1, 3), d)]),
    "as_strided": lambda d: (lambda a: a.as_strided((2, 2), (1, 2), 1), [t64((6,), d)]),
    "as_subclass": lambda d: (lambda a: a.as_subclass(torch.nn.Parameter), [t64((3,), d)]),
    "sum_to_size": lambda d: (lambda a: a.sum_to_size(1, 4), [t64((3, 4), d)]),
    "getitem": lambda d: (lambda a: (a[1:, ::2], a[0], a[_idx([2, 0, 2], a.device)]),
                          [t64((3, 4), d)]),
    # indexing
    "gather": lambda d: (lambda a: a.gather(1, _idx([[0, 2], [1, 1], [3, 0]], a.device)),
                         [t64((3, 4), d)]),
    "scatter": lambda d: (lambda a, s: (a.scatter(1, _idx([[0], [2], [1]], a.device), s),
                                        a.scatter(0, _idx([[1, 0, 2, 1]], a.device), 0.5)),
                          [t64((3, 4), d), t64((3, 1), d)]),
    "scatter_add": lambda d: (lambda a, s: a.scatter_add(1, _idx([[0, 0], [2, 1], [1, 3]],
                                                                  a.device), s),
                              [t64((3, 4), d), t64((3, 2), d)]),
    "scatter_reduce": lambda d: (lambda a, s: a.scatter_reduce(
        1, _idx([[0, 0], [2, 1], [1, 3]], a.device), s, "amax", include_self=False),
        [t64((3, 4), d), t64((3, 2), d)]),
    "index_select": lambda d: (lambda a: a.index_select(1, _idx([3, 0, 0], a.device)),
                               [t64((3, 4), d)]),
    "index_put": lambda d: (lambda a, v: a.index_put((_idx([0, 2], a.device),), v,
                                                     accumulate=True),
                            [t64((3, 4), d), t64((4,), d)]),
    "index_put_": lambda d: (lambda a, v: a.clone().index_put_((_idx([1], a.device),), v),
                             [t64((3, 4), d), t64((1, 4), d)]),
    "masked_fill": lambda d: (lambda a, v: (a.masked_fill(a > 0, 2.0), a.masked_fill(a > 0, v)),
                              [t64((3, 4), d), t64((), d)]),
    "masked_select": lambda d: (lambda a: a.masked_select(a > 0), [t64((3, 4), d)]),
    "index_add": lambda d: (lambda a, s: a.index_add(0, _idx([2, 0], a.device), s, alpha=2),
                            [t64((3, 4), d), t64((2, 4), d)]),
    "setitem": lambda d: (_setitem, [t64((3, 4), d), t64((4,), d)]),
    # conversion
    "clone": lambda d: (torch.clone, [t64((3, 4), d)]),
    "to": lambda d: (lambda a: a.to(torch.float64), [t64((3,), d)]),
    "cpu": lambda d: (lambda a: a.cpu(), [t64((3,), d)]),
    "cuda": lambda d: (lambda a: a.cuda(), [t64((3,), d)]),
    "pin_memory": lambda d: (lambda a: a.cpu().pin_memory(), [t64((3,), d)]),
    "contiguous": lambda d: (lambda a: a.t().contiguous(), [t64((3, 4), d)]),
    "copy_": lambda d: (_copy_into, [t64((4,), d)]),
    "type_as": lambda d: (lambda a, b: a.type_as(b), [t64((3,), d), t64((3,), d)]),
    "type": lambda d: (lambda a: a.type(torch.float64), [t64((3,), d)]),
    "double": lambda d: (lambda a: a.double(), [t64((3,), d)]),
    # decompositions (square inputs shifted to be well conditioned / positive-definite)
    "inverse": lambda d: (lambda a: torch.inverse(a + 4 * torch.eye(3, device=d)),
                          [t64((3, 3), d)]),
    "det": lambda d: (lambda a: torch.det(a + 4 * torch.eye(3, device=d)), [t64((2, 3, 3), d)]),
    "logdet": lambda d: (lambda a: torch.logdet(a + 4 * torch.eye(3, device=d)),
                         [t64((3, 3), d)]),
    "slogdet": lambda d: (lambda a: torch.slogdet(a + 4 * torch.eye(3, device=d)),
                          [t64((3, 3), d)]),
    "cholesky": lambda d: (lambda a: torch.cholesky(a @ a.mT + torch.eye(3, device=d)),
                           [t64((3, 3), d)]),
    "cholesky_solve": lambda d: (
        lambda b, l: torch.cholesky_solve(b, l.tril() + 4 * torch.eye(3, device=d)),
        [t64((3, 2), d), t64((3, 3), d)]),
    "triangular_solve": lambda d: (
        lambda b, a: torch.triangular_solve(b, a + 4 * torch.eye(3, device=d)).solution,
        [t64((3, 2), d), t64((3, 3), d)]),
    # (tall inputs; the vectors through gauge-invariant products: their signs are arbitrary)
    "qr": lambda d: (lambda a: torch.qr(a), [t64((4, 3), d)]),
    "svd": lambda d: (lambda a: (lambda U, S, V: (U @ V.mT, S))(*torch.svd(a)),
                      [t64((4, 3), d)]),
    "pinverse": lambda d: (torch.pinverse, [t64((4, 3), d)]),
    "matrix_exp": lambda d: (torch.matrix_exp, [t64((3, 3), d)]),
}
# Conversions to lower precision or to non-float dtypes: the tangent is converted alike (or
# dropped, for an integer result), checked exactly rather than by differences.
CASTS = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16,
         "long": torch.int64, "int": torch.int32, "bool": torch.bool, "byte": torch.uint8,
         "char": torch.int8, "short": torch.int16}

# The families whose differentiable rows all have jvp rules: each row is here, in SAMPLES,
# CASTS or (unary rows) test_ops_pointwise's REFERENCE and ROUNDING.
MINE = ("elementwise", "pointwise", "reduction", "softmax", "linalg", "shape", "views",
        "indexing", "conversion", "composite", "linalg_ext", "decompositions")


def _rows(claim: str):
    return sorted(row.name for family in MINE for row in FAMILIES[family]
                  if row.forward_ad == claim)


def test_every_row_with_a_jvp_is_tested():
    tested = set(SAMPLES) | set(CASTS) | set(UNARY_ROWS)
    assert sorted(set(_rows("yes")) - tested) == []
    assert sorted(set(SAMPLES) - set(_rows("yes"))) == [], "a sample for a row without a jvp"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_op_tangent_matches_finite_differences(name, device):
    fn, inputs = SAMPLES[name](device)
    assert_jvp_matches(fn, inputs)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_unary_row_tangent_matches_finite_differences(name, device):
    _, (lo, hi) = REFERENCE[name]
    assert_jvp_matches(UNARY_ROWS[name].fn, [t64((3, 5), device, lo, hi)])


@pytest.mark.parametrize("name", sorted(set(UNARY_ROWS) - set(REFERENCE)))
def test_rounding_rows_have_zero_tangents(name, device):
    x = t64((7,), device, 0.1, 0.9)  # away from the jumps
    _, (t,) = forward_tangents(UNARY_ROWS[name].fn, [x], [torch.ones_like(x)])
    np.testing.assert_array_equal(host(t), np.zeros(7))


def test_unary_builder_takes_an_explicit_jvp():
    from tritongrad.autograd.ops.elementwise import unary
    # a rule that differs from the vjp's (doubled), to see that it is the one used
    row = unary("sin", lambda ctx, k, s, g: k.mul(g, k.unary("cos", s[0])), saves="input",
                jvp=lambda ctx, k, x, t, y: k.mul(k.mul(t, k.unary("cos", x)), 2))
    assert row.forward_ad == "yes"
    x, v = t64((4,)), t64((4,))
    _, (t,) = forward_tangents(row.fn, [x], [v])
    np.testing.assert_allclose(host(t), 2 * np.cos(host(x)) * host(v))


@pytest.mark.parametrize("name", sorted(CASTS))
def test_casts_convert_the_tangent(name, device):
    x, v = t64((4,), device), t64((4,), device)
    (out,), (t,) = forward_tangents(lambda a: getattr(a, name)(), [x], [v])
    assert out.dtype is CASTS[name]
    if CASTS[name].is_floating_point:
        assert t.dtype is CASTS[name]
        np.testing.assert_array_equal(host(t), host(v.to(CASTS[name])))
    else:
        assert t is None


def test_nn_fused_ops(device):
    from tritongrad.nn import functional as F
    target = _idx([1, 0, 3], device)
    assert_jvp_matches(lambda x, w, b: F.layer_norm(x, (4,), w, b),
                       [t64((3, 4), device), t64((4,), device), t64((4,), device)])
    assert_jvp_matches(lambda x: F.layer_norm(x, (2, 3)), [t64((2, 2, 3), device)])
    assert_jvp_matches(lambda x: (F.gelu(x), F.gelu(x, approximate="tanh")),
                       [t64((3, 4), device)])
    assert_jvp_matches(lambda x: (F.cross_entropy(x, target),
                                  F.cross_entropy(x, target, label_smoothing=0.1,
                                                  reduction="none")),
                       [t64((3, 4), device)])
    assert_jvp_matches(lambda w: F.embedding(_idx([[0, 2], [2, 1]], device), w),
                       [t64((3, 4), device)])


def test_gelu_backward_tangent_forward_over_reverse(device):
    from tritongrad.nn import functional as F

    def grad_of_gelu(x):
        with torch.enable_grad():
            x = x if x.requires_grad else x.detach().requires_grad_()
            y = F.gelu(x).sum()
            return torch.autograd.grad(y, x, create_graph=True)[0]
    x = t64((5,), device).requires_grad_()
    assert_jvp_matches(grad_of_gelu, [x])


# -- levels ----------------------------------------------------------------------------------

def test_level_exit_drops_tangents_and_levels_do_not_nest():
    x = torch.tensor([1.0, 2.0])
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, torch.ones(2))
        y = d * d
        assert fwAD.unpack_dual(y).tangent is not None
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"), \
                fwAD.dual_level():
            pass
    assert fwAD.unpack_dual(y).tangent is None and fwAD.unpack_dual(d).tangent is None
    assert fwAD.unpack_dual(y).primal is y
    assert fwAD.enter_dual_level() == 0  # a new level after the last one exited
    assert fwAD.unpack_dual(y).tangent is None
    fwAD.exit_dual_level(level=0)
    with pytest.raises(RuntimeError, match="not the last one that was created"):
        fwAD.exit_dual_level(level=0)


def test_level_exits_on_exception():
    with pytest.raises(ValueError), fwAD.dual_level():
        d = fwAD.make_dual(torch.ones(2), torch.ones(2))
        raise ValueError
    assert fwAD.unpack_dual(d).tangent is None
    with fwAD.dual_level():  # and a new one can start
        pass


def test_make_dual_and_unpack_dual():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    v = torch.tensor([3.0, 4.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        assert d is not x and d._base is x and d.grad_fn is not None  # a view, with history
        u = fwAD.unpack_dual(d)
        assert isinstance(u, fwAD.UnpackedDualTensor) and u._fields == ("primal", "tangent")
        assert u.tangent is v
        assert fwAD.unpack_dual(u.primal).tangent is None
        np.testing.assert_array_equal(host(u.primal), [1.0, 2.0])
        assert fwAD.unpack_dual(x).tangent is None  # the original keeps no tangent
        (d * d).sum().backward()  # make_dual is backward differentiable
    np.testing.assert_array_equal(host(x.grad), [2.0, 4.0])


def test_tangent_layout_follows_the_primal():
    x = torch.ones(3, 2, dtype=torch.float64).t()
    v = torch.arange(6.0, dtype=torch.float64).view(2, 3)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        t = fwAD.unpack_dual(d).tangent
        assert t.stride() == x.stride()
        np.testing.assert_array_equal(host(t), host(v))
        s = d.as_strided((2,), (1,), 1)  # reads the primal's storage layout: so does the tangent
        np.testing.assert_array_equal(host(fwAD.unpack_dual(s).tangent), host(t).T.ravel()[1:3])


def test_tangent_computation_is_differentiable_in_reverse():
    x = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, torch.ones(2, dtype=torch.float64))
        t = fwAD.unpack_dual(d.exp() * d).tangent  # (1 + x) e^x
        assert t.requires_grad
        (g,) = torch.autograd.grad(t.sum(), x)
    np.testing.assert_allclose(host(g), (2 + host(x.detach())) * np.exp(host(x.detach())))


# -- in place and views ------------------------------------------------------------------------

def test_inplace_ops_update_tangents(device):
    x, v = t64((4,), device), t64((4,), device)
    xs = host(x)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        y = d.clone()
        y.mul_(d).add_(1)  # y = x * x + 1
        np.testing.assert_allclose(host(fwAD.unpack_dual(y).tangent), 2 * xs * host(v))
        z = torch.zeros(4, dtype=torch.float64, device=device)
        z.copy_(d)  # a tensor without a tangent gets one
        np.testing.assert_array_equal(host(fwAD.unpack_dual(z).tangent), host(v))
        w = torch.zeros(4, dtype=torch.float64, device=device)
        w.mul_(2)
        assert fwAD.unpack_dual(w).tangent is None


def test_views_share_their_base_tangent(device):
    v = t64((4,), device)
    with fwAD.dual_level():
        base = torch.zeros(4, dtype=torch.float64, device=device)
        src = fwAD.make_dual(t64((2,), device), v[:2])
        base[1:3] = src  # the base had no tangent: it gets zeros, its slice src's tangent
        np.testing.assert_array_equal(host(fwAD.unpack_dual(base).tangent),
                                      [0, *host(v[:2]), 0])
        d = fwAD.make_dual(t64((4,), device), v.clone())
        view_ = d[2:]
        view_.mul_(3)  # in place through a view: the base's tangent changes too
        expected = host(v).copy()
        expected[2:] *= 3
        np.testing.assert_allclose(host(fwAD.unpack_dual(d).tangent), expected)
        np.testing.assert_allclose(host(fwAD.unpack_dual(view_).tangent), expected[2:])


# -- custom Function -------------------------------------------------------------------------

class _Sin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_forward(x)
        ctx.scale = scale
        return x.sin() * scale

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("not used")

    @staticmethod
    def jvp(ctx, x_t, scale_t):
        assert scale_t is None  # a non-tensor argument's tangent
        x, = ctx.saved_tensors
        return x_t * x.cos() * ctx.scale


def test_custom_function_jvp(device):
    assert_jvp_matches(lambda a: _Sin.apply(a, 2.0), [t64((5,), device)])


def _function(name: str, forward, **rules) -> type:
    """A custom Function called ``name`` with ``forward`` and the given static rules."""
    body = {k: staticmethod(v) for k, v in dict(rules, forward=forward).items()}
    return type(name, (torch.autograd.Function,), body)


def test_custom_function_without_jvp_refuses_forward_ad():
    no_jvp = _function("NoJvp", lambda ctx, x: x * 2, backward=lambda ctx, g: g * 2)
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.ones(2), torch.ones(2))
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            no_jvp.apply(d)
        no_jvp.apply(torch.ones(2))  # no tangent in: no jvp needed


def test_custom_function_jvp_errors():
    wrong = _function("Wrong", lambda ctx, x: (x * 2, x * 3), jvp=lambda ctx, t: (t * 2,))
    bad_shape = _function("BadShape", lambda ctx, x: x * 2, jvp=lambda ctx, t: t.sum())
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.ones(2), torch.ones(2))
        with pytest.raises(RuntimeError, match="invalid number of forward gradients"):
            wrong.apply(d)
        with pytest.raises(RuntimeError, match="Trying to set a forward gradient that has a "
                                               "different size"):
            bad_shape.apply(d)
        with pytest.raises(TypeError, match="save_for_forward expects all arguments to be "
                                            "tensors"):
            torch.autograd.function.FunctionCtx().save_for_forward(1.0)


# -- functional API: forward mode against reverse mode ------------------------------------------

def _f(a, b):
    return (a.exp() * b).sum(0), (a @ b.t()).tanh()


def test_functional_jvp_matches_reverse_mode(device):
    a, b = t64((3, 2), device), t64((3, 2), device)
    v = (t64((3, 2), device), t64((3, 2), device))
    out, res = functional.jvp(_f, (a, b), v)
    jac = functional.jacobian(_f, (a, b))
    for i in range(2):
        expected = sum((host(jac[i][k]).reshape(host(out[i]).size, -1)
                        @ host(v[k]).ravel()) for k in range(2))
        np.testing.assert_allclose(host(res[i]).ravel(), expected, atol=1e-12)


def test_functional_jvp_create_graph(device):
    x = t64((3,), device).requires_grad_()
    _, res = functional.jvp(lambda a: a.exp(), x, torch.ones_like(x), create_graph=True)
    assert res.requires_grad
    (g,) = torch.autograd.grad(res.sum(), x)
    np.testing.assert_allclose(host(g), np.exp(host(x.detach())))


def test_functional_jacobian_forward_mode(device):
    a, b = t64((3, 2), device), t64((3, 2), device)
    forward = functional.jacobian(_f, (a, b), strategy="forward-mode", vectorize=True)
    reverse = functional.jacobian(_f, (a, b))
    for i in range(2):
        for k in range(2):
            assert tuple(forward[i][k].shape) == tuple(reverse[i][k].shape)
            assert not forward[i][k].requires_grad
            np.testing.assert_allclose(host(forward[i][k]), host(reverse[i][k]), atol=1e-12)
    single = functional.jacobian(torch.sin, a, strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(host(single), host(functional.jacobian(torch.sin, a)))


def test_functional_hessian_forward_over_reverse(device):
    def fn(a, b):
        return (a.pow(3) * b.exp()).sum() + (a * b).softmax(0).logsumexp(0).sum()
    inputs = (t64((3,), device), t64((3,), device))
    forward = functional.hessian(fn, inputs, outer_jacobian_strategy="forward-mode",
                                 vectorize=True)
    reverse = functional.hessian(fn, inputs)
    for i in range(2):
        for k in range(2):
            np.testing.assert_allclose(host(forward[i][k]), host(reverse[i][k]), atol=1e-10)


def test_functional_forward_mode_errors():
    x = torch.ones(2, dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        functional.jacobian(torch.sin, x, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True` and `strategy=\"forward-mode\"` are "
                                           "not supported together"):
        functional.jacobian(torch.sin, x, strategy="forward-mode", vectorize=True, strict=True)
    with pytest.raises(NotImplementedError, match="`create_graph=True` and "
                                                  "`strategy=\"forward-mode\"`"):
        functional.jacobian(torch.sin, x, strategy="forward-mode", vectorize=True,
                            create_graph=True)


# -- random compositions ------------------------------------------------------------------------

_UNARY = {"exp": lambda a: (a * 0.3).exp(), "tanh": torch.tanh, "sin": torch.sin,
          "sigmoid": torch.sigmoid, "square": lambda a: a * a,
          "log1p_abs": lambda a: (a.abs() + 0.5).log1p()}
_BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
           "div": lambda a, b: a / (b * b + 1), "maximum": torch.maximum,
           "pow": lambda a, b: (a * a + 0.5) ** (b * 0.5)}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(_UNARY) + sorted(_BINARY)),
                          st.integers(0, 1)), min_size=1, max_size=6),
       st.integers(0, 2 ** 31 - 1))
def test_random_compositions_match_finite_differences(program, seed):
    def fn(a, b):
        values = [a, b]
        for op, arg in program:
            if op in _UNARY:
                values.append(_UNARY[op](values[-1 - arg]))
            else:
                values.append(_BINARY[op](values[-1], values[arg]))
        return values[-1]
    rng = np.random.default_rng(seed)
    inputs = [torch.tensor(rng.uniform(-1, 1, (3,)), dtype=torch.float64) for _ in range(2)]
    assert_jvp_matches(fn, inputs, atol=1e-5, rtol=1e-4, seed=seed)


# -- errors ------------------------------------------------------------------------------------

def test_make_dual_errors(device):
    x = torch.ones(2, device=device)
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"different size than that of the original "
                                               r"Tensor.*size \[2\].*size \[3\]"):
            fwAD.make_dual(x, torch.ones(3, device=device))
        # (a tangent of another floating dtype is cast, as PyTorch 2.13 takes it; a complex
        # tangent of a real primal is refused)
        assert fwAD.unpack_dual(fwAD.make_dual(x, torch.ones(2, dtype=torch.float64,
                                                              device=device))).tangent.dtype \
            is torch.float32
        with pytest.raises(RuntimeError, match="different dtype"):
            fwAD.make_dual(x, torch.ones(2, dtype=torch.complex64, device=device))
        other = "cuda" if device == "cpu" else "cpu"
        with pytest.raises(RuntimeError, match="different device"):
            fwAD.make_dual(x, torch.ones(2, device=other))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(torch.ones(2, dtype=torch.int64), x)
        with pytest.raises(ValueError, match="Expected tangent to be floating point"):
            fwAD.make_dual(x, torch.ones(2, dtype=torch.int64, device=device))
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            fwAD.make_dual(x, x, level=3)
        d = fwAD.make_dual(x, x)
        with pytest.raises(RuntimeError, match="already has a forward gradient at the same "
                                               "level 0"):
            fwAD.make_dual(d, x)
        with pytest.raises(RuntimeError, match="Invalid level given to _unpack_dual"):
            fwAD.unpack_dual(d, level=3)
    with pytest.raises(RuntimeError, match="Dual level must be a positive number"):
        fwAD.exit_dual_level()


def test_rows_without_a_jvp_refuse_forward_ad():
    # (cfloat and cdouble: casts to complex, and forward AD refuses complex tensors)
    assert _rows("no") == ["cdouble", "cfloat", "igamma", "igammac", "index_reduce", "lobpcg"]
    a, s = t64((3, 4)), t64((3, 2))
    with fwAD.dual_level(), pytest.raises(NotImplementedError,
                                          match="forward AD with index_reduce that does not "
                                                "support it"):
        fwAD.make_dual(a, a).index_reduce(1, _idx([0, 3], "cpu"), s, "prod")


def test_op_without_a_jvp_names_itself():
    from tritongrad.autograd.dispatch import Primitive, apply

    class FrobnicateBackward0(Primitive):
        op_name = "frobnicate"

        @staticmethod
        def forward(ctx, k, x):
            return k.neg(x)

    x = torch.ones(2)
    apply(FrobnicateBackward0, (x,))  # no level: fine
    with fwAD.dual_level():
        apply(FrobnicateBackward0, (x,))  # no tangent: fine
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with frobnicate that "
                                               "does not support it"):
            apply(FrobnicateBackward0, (fwAD.make_dual(x, x),))


def test_forward_ad_under_the_profiler():
    x, v = t64((3,)), t64((3,))
    with torch.autograd.profiler.profile() as prof, fwAD.dual_level():
        y = fwAD.make_dual(x, v).exp()
        y.mul_(2)
        t = fwAD.unpack_dual(y).tangent
    np.testing.assert_allclose(host(t), 2 * np.exp(host(x)) * host(v))
    names = [e.name for e in prof.function_events]
    assert "aten::exp" in names and "aten::mul" in names  # (mul_ is named as its primitive)


def test_custom_function_jvp_gets_zero_tangents_for_tensors_without_one():
    class Prod(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            ctx.k = k
            return k * x * y

        @staticmethod
        def jvp(ctx, x_t, y_t, k_t):
            assert k_t is None  # not a tensor: no tangent
            x, y = ctx.saved_tensors
            return ctx.k * (y * x_t + x * y_t)  # y_t: zeros, materialized

    a, b = t64((3,), "cpu"), t64((3,), "cpu")
    with fwAD.dual_level():
        out = Prod.apply(fwAD.make_dual(a, torch.ones(3, dtype=torch.float64)), b, 4)
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), 4 * b.numpy())
