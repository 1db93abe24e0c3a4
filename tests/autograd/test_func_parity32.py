"""torch.func / torch.utils.checkpoint parity fixes (sweep /tmp/h32/func_sweep.py):
``torch.func.rearrange``, selective activation checkpointing's API
(``create_selective_checkpoint_contexts``, ``CheckpointPolicy``,
``SelectiveCheckpointContext``), and forward-over-reverse / reverse-over-forward through
in-place ops (hessian, ``jvp(grad(f))``). Each behaviour is checked against NumPy / closed
forms / finite differences, and against torch where it is installed."""

import functools
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.func import grad, hessian, jacfwd, jvp, rearrange, vmap
from tritongrad.utils import checkpoint as ckpt


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# -- rearrange ---------------------------------------------------------------------------------

# (pattern, axes lengths, the NumPy reference on an array of shape (2, 4, 6, 3))
_PATTERNS = [
    ("b h w c -> b h w c", {}, lambda a: a),
    ("b h w c -> (b h) w c", {}, lambda a: a.reshape(8, 6, 3)),
    ("b h w c -> h (b w) c", {}, lambda a: a.transpose(1, 0, 2, 3).reshape(4, 12, 3)),
    ("b h w c -> b c h w", {}, lambda a: a.transpose(0, 3, 1, 2)),
    ("b h w c -> b (c h w)", {}, lambda a: a.transpose(0, 3, 1, 2).reshape(2, 72)),
    ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2},
     lambda a: a.reshape(2, 2, 2, 2, 3, 3).transpose(0, 1, 3, 2, 4, 5).reshape(8, 2, 3, 3)),
    ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2},
     lambda a: a.reshape(2, 2, 2, 3, 2, 3).transpose(0, 1, 3, 5, 2, 4).reshape(2, 2, 3, 12)),
    ("... c -> c ...", {}, lambda a: a.transpose(3, 0, 1, 2)),
    ("b ... c -> (... b) c", {}, lambda a: a.transpose(1, 2, 0, 3).reshape(48, 3)),
    ("b h w c -> b h w c 1 ()", {}, lambda a: a.reshape(2, 4, 6, 3, 1, 1)),
    ("b h w c -> (b h w c)", {}, lambda a: a.reshape(-1)),
]


@pytest.mark.parametrize("pattern,lengths,ref", _PATTERNS)
def test_rearrange_values_and_grad(pattern, lengths, ref):
    a = _x(2, 4, 6, 3)
    x = tg.tensor(a, requires_grad=True)
    out = rearrange(x, pattern, **lengths)
    np.testing.assert_array_equal(out.detach().numpy(), ref(a))
    # a permutation of the elements: the gradient of sum(w * out) is w put back in place
    w = _x(*out.shape, seed=1)
    (out * tg.tensor(w)).sum().backward()
    idx = ref(np.arange(a.size).reshape(a.shape))
    expected = np.zeros(a.size)
    expected[idx.reshape(-1)] = w.reshape(-1)
    np.testing.assert_array_equal(x.grad.numpy(), expected.reshape(a.shape))


def test_rearrange_sequence_zero_dim_and_vmap():
    a, b = _x(2, 3), _x(2, 3, seed=1)
    out = rearrange([tg.tensor(a), tg.tensor(b)], "n x y -> x (n y)")
    np.testing.assert_array_equal(out.numpy(), np.stack([a, b]).transpose(1, 0, 2).reshape(2, 6))
    assert rearrange((tg.tensor(a), tg.tensor(b)), "n x y -> y x n").shape == (3, 2, 2)
    assert rearrange(tg.tensor(2.0), "->").shape == ()
    assert rearrange(tg.tensor(2.0), "-> 1 1").shape == (1, 1)  # (torch gives (), einops (1, 1))
    assert rearrange(tg.zeros(0, 3), "a b -> b a").shape == (3, 0)
    assert rearrange(tg.tensor(np.arange(6).reshape(2, 3)), "a b -> (b a)").tolist() == \
        [0, 3, 1, 4, 2, 5]
    c = _x(2, 3, 4)
    np.testing.assert_array_equal(
        vmap(lambda t: rearrange(t, "h w -> w h"))(tg.tensor(c)).numpy(), c.transpose(0, 2, 1))


@pytest.mark.parametrize("pattern,lengths,exc,match", [
    ("b h w c -> b h w", {}, ValueError, "Identifiers only on one side"),
    ("b b w c -> b w c", {}, ValueError, "Indexing expression contains duplicate dimension"),
    ("b h w c", {}, ValueError, "Pattern must contain a single '->' separator"),
    ("b h w c -> b h w c", {"z": 2}, ValueError, "Identifiers not found"),
    ("b h w c -> b h w c", {"b": 2.0}, TypeError, "rearrange axis lengths must be integers"),
    ("(b ...) -> b", {}, ValueError, "Ellipsis is parenthesis in the left side"),
    ("b h w c -> ... b", {}, ValueError, "Ellipsis found in right side"),
    ("b.h w c -> b", {}, ValueError, "Expression may contain dots only inside ellipsis"),
    ("_b h w c -> h _b w c", {}, ValueError, "Invalid axis identifier: _b"),
    ("b h w c -> b h w 2 c", {}, ValueError, "rearrange only supports unnamed axes of size 1"),
    ("b h w c d -> b h w c d", {}, ValueError, "Number of dimensions in pattern"),
    ("b h w c -> b h w c", {"b": 5}, ValueError, r"Dimension sizes to do not match \(2 != 5\)"),
    ("b (h1 h) w c -> b h1 h w c", {"h1": 3}, ValueError, "does not evenly fit"),
    ("b (h1 h) w c -> b h1 h w c", {}, ValueError, "cannot infer the sizes of two"),
    ("b h w 1 -> b h w", {}, ValueError, "unit axis"),  # (size 3: torch sums it away)
    ("b ((h) w) c -> b", {}, ValueError, "Axis composition is one-level"),
    ("b h w c) -> b", {}, ValueError, "Brackets are not balanced"),
    ("b h w c -> b h w c %", {}, ValueError, "Unknown character '%'"),
])
def test_rearrange_errors(pattern, lengths, exc, match):
    with pytest.raises(exc, match=match):
        rearrange(tg.zeros(2, 4, 6, 3), pattern, **lengths)


def test_rearrange_in_func_all():
    assert "rearrange" in tg.func.__all__ and tg.func.rearrange is rearrange


# -- selective activation checkpointing ---------------------------------------------------------

def _f(t):
    return (t @ t.mT).sigmoid() @ t


def _f_grad_reference(a, w):
    """d/da sum(w * sigmoid(a a^T) a), closed form."""
    s = 1 / (1 + np.exp(-(a @ a.T)))
    g_s = (w @ a.T) * s * (1 - s)  # through sigmoid
    return g_s @ a + g_s.T @ a + s.T @ w


def _run_sac(policy):
    a, w = _x(3, 3), _x(3, 3, seed=1)
    x = tg.tensor(a, requires_grad=True)
    context_fn = functools.partial(ckpt.create_selective_checkpoint_contexts, policy)
    out = ckpt.checkpoint(_f, x, use_reentrant=False, context_fn=context_fn)
    (out * tg.tensor(w)).sum().backward()
    s = 1 / (1 + np.exp(-(a @ a.T)))
    np.testing.assert_allclose(out.detach().numpy(), s @ a, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), _f_grad_reference(a, w), rtol=1e-10)


@pytest.mark.parametrize("answer", [ckpt.CheckpointPolicy.MUST_SAVE,
                                    ckpt.CheckpointPolicy.PREFER_RECOMPUTE, True, False])
def test_sac_policy_function_is_consulted_in_forward(answer):
    seen = []

    def policy(ctx, op, *args, **kwargs):
        assert isinstance(ctx, ckpt.SelectiveCheckpointContext)
        seen.append((ctx.is_recompute, op == tg.ops.aten.mm.default))
        return answer
    _run_sac(policy)
    # the forward's two matmuls, asked about once each, never while recomputing
    assert sum(1 for rec, mm in seen if mm) == 2
    assert not any(rec for rec, _ in seen)


def test_sac_op_list_values_and_errors():
    _run_sac([tg.ops.aten.mm.default])
    with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload but got"
                                         ".*Please update the OpOverloadPacket"):
        ckpt.create_selective_checkpoint_contexts([tg.ops.aten.mm])
    with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload"):
        ckpt.create_selective_checkpoint_contexts([3])
    with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a list"):
        ckpt.create_selective_checkpoint_contexts(3)
    assert [(p.name, p.value) for p in ckpt.CheckpointPolicy] == [
        ("MUST_SAVE", 0), ("PREFER_SAVE", 1), ("MUST_RECOMPUTE", 2), ("PREFER_RECOMPUTE", 3),
        ("MUST_CPU_OFFLOAD", 4), ("PREFER_CPU_OFFLOAD", 5)]
    assert ckpt.SelectiveCheckpointContext(is_recompute=True).is_recompute is True


def test_checkpoint_default_warning_wording():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ckpt.checkpoint(tg.sin, tg.ones(2, requires_grad=True))
    text = " ".join(str(w.message) for w in got)
    assert "PyTorch uses use_reentrant=True" in text and "will raise" not in text


# -- higher-order derivatives through in-place ops ----------------------------------------------

_INPLACE = [  # (f, its elementwise second derivative of sum(f))
    ("mul_", lambda a: a.clone().mul_(a), lambda a: 2 + 0 * a),
    ("mul_exp_", lambda a: a.clone().mul_(a).add_(a.exp()), lambda a: 2 + np.exp(a)),
    ("sin_", lambda a: a.clone().sin_(), lambda a: -np.sin(a)),
    ("pow_", lambda a: a.clone().pow_(3), lambda a: 6 * a),
    ("exp_", lambda a: a.clone().exp_(), np.exp),
    ("div_", lambda a: (a.clone() + 2).div_(a + 3), lambda a: -2 / (a + 3) ** 3),
    ("view_mul_", lambda a: (lambda c: (c[:].mul_(a), c)[1])(a.clone()), lambda a: 2 + 0 * a),
]


@pytest.mark.parametrize("name,f,d2", _INPLACE, ids=[c[0] for c in _INPLACE])
def test_hessian_and_jvp_of_grad_through_inplace(name, f, d2):
    a = np.array([0.3, -0.5, 1.1])
    x = tg.tensor(a)
    np.testing.assert_allclose(hessian(lambda t: f(t).sum())(x).numpy(), np.diag(d2(a)),
                               rtol=1e-10, atol=1e-12)
    _, tangent = jvp(grad(lambda t: f(t).sum()), (x,), (tg.ones(3, dtype=x.dtype),))
    np.testing.assert_allclose(tangent.numpy(), d2(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jacfwd(grad(lambda t: f(t).sum()))(x).numpy(), np.diag(d2(a)),
                               rtol=1e-10, atol=1e-12)


def test_reverse_over_jvp_through_inplace_gradcheck():
    def tangent_out(a, t):
        return jvp(lambda c: c.clone().mul_(c).add_(c.exp()), (a,), (t,))[1]
    a = tg.tensor(_x(3), requires_grad=True)
    t = tg.tensor(_x(3, seed=1), requires_grad=True)
    assert tg.autograd.gradcheck(tangent_out, (a, t), eps=1e-6, atol=1e-6)


# -- against torch ----------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    a = _x(2, 4, 6, 3)
    for pattern, lengths, _ in _PATTERNS:
        np.testing.assert_array_equal(
            rearrange(tg.tensor(a), pattern, **lengths).numpy(),
            torch.func.rearrange(torch.tensor(a), pattern, **lengths).numpy())
    for pattern, lengths in [("b h w c -> b h w", {}), ("b h w c -> b h w c", {"b": 2.0}),
                             ("b h w c -> ... b", {})]:
        with pytest.raises(Exception) as t_err:
            torch.func.rearrange(torch.zeros(2, 4, 6, 3), pattern, **lengths)
        with pytest.raises(Exception) as g_err:
            rearrange(tg.zeros(2, 4, 6, 3), pattern, **lengths)
        assert type(g_err.value) is type(t_err.value)
        assert str(g_err.value).split()[:3] == str(t_err.value).split()[:3]
    assert set(torch.func.__all__) <= set(tg.func.__all__)
    # selective checkpointing: the same values, gradients and policy calls
    results = []
    for lib, mod in ((torch, torch.utils.checkpoint), (tg, ckpt)):
        seen = []

        def policy(ctx, op, *args, lib=lib, seen=seen, **kwargs):
            seen.append((ctx.is_recompute, op == lib.ops.aten.mm.default))
            return mod.CheckpointPolicy.MUST_SAVE

        x = lib.tensor(_x(3, 3), requires_grad=True)
        out = mod.checkpoint(_f, x, use_reentrant=False, context_fn=functools.partial(
            mod.create_selective_checkpoint_contexts, policy))
        out.sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy(),
                        sum(1 for r, m in seen if m and not r), any(r for r, _ in seen)))
    (t_out, t_grad, t_mm, t_rec), (g_out, g_grad, g_mm, g_rec) = results
    np.testing.assert_allclose(g_out, t_out, rtol=1e-12)
    np.testing.assert_allclose(g_grad, t_grad, rtol=1e-10)
    assert (g_mm, g_rec) == (t_mm, t_rec)
    assert [(p.name, p.value) for p in ckpt.CheckpointPolicy] == \
        [(p.name, p.value) for p in torch.utils.checkpoint.CheckpointPolicy]


def test_inplace_second_order_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    a = np.array([0.3, -0.5, 1.1])
    for _, f, _ in _INPLACE:
        ref = torch.func.jacrev(torch.func.jacrev(lambda t, f=f: f(t).sum()))(torch.tensor(a))
        # (jacrev of jacrev: reverse over reverse, right without the dispatch change)
        got = tg.func.jacrev(tg.func.jacrev(lambda t, f=f: f(t).sum()))(tg.tensor(a))
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
