"""tritongrad.func (torch.func): grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
linearize, vmap, functional_call and stack_module_state, against closed forms, float64
central differences and per-sample loops; nesting; pytrees; PyTorch's errors."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev,
                             jvp, linearize, stack_module_state, vjp, vmap)

_rng = np.random.default_rng(7)


def arr(*shape):
    return _rng.uniform(-1.5, 1.5, shape)


def t(a, device="cpu"):
    return tg.tensor(a, dtype=tg.float64, device=device)


def np_(x):
    return x.detach().cpu().numpy()


def close(x, ref, atol=1e-9):
    np.testing.assert_allclose(np_(x), ref, rtol=1e-7, atol=atol)


def fd_jacobian(f, a, eps=1e-6):
    """d f / d a by central differences in float64 (f: ndarray -> ndarray), shaped
    f(a).shape + a.shape."""
    a = np.array(a, dtype=np.float64)
    cols = []
    for i in range(a.size):
        d = np.zeros(a.size)
        d[i] = eps
        plus, minus = f(a + d.reshape(a.shape)), f(a - d.reshape(a.shape))
        cols.append((np.asarray(plus) - np.asarray(minus)) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(f(a)) + a.shape)


# -- grad, grad_and_value ------------------------------------------------------------------------

def sin_times(x, y):
    return (x.sin() * y).sum()


def test_grad_argnums_closed_form(device):
    a, b = arr(4), arr(4)
    x, y = t(a, device), t(b, device)
    close(grad(sin_times)(x, y), np.cos(a) * b)
    close(grad(sin_times, argnums=1)(x, y), np.sin(a))
    close(grad(sin_times, argnums=-1)(x, y), np.sin(a))
    gx, gy = grad(sin_times, argnums=(0, 1))(x, y)
    close(gx, np.cos(a) * b)
    close(gy, np.sin(a))
    assert gx.device == x.device
    (only,) = grad(sin_times, argnums=(1,))(x, y)
    close(only, np.sin(a))


def test_grad_is_functional():
    # no input needs requires_grad, nothing lands in .grad, results carry no history
    x = t(arr(3))
    g = grad(lambda x: (x ** 3).sum())(x)
    close(g, 3 * np_(x) ** 2)
    assert not g.requires_grad and g.grad_fn is None and x.grad is None
    xr = t(arr(3)).requires_grad_()
    g = grad(lambda x: (x ** 3).sum())(xr)
    assert xr.grad is None and g.requires_grad  # differentiable w.r.t. xr, as in PyTorch
    (g2,) = tg.autograd.grad(g.sum(), xr)
    close(g2, 6 * np_(xr))
    with tg.no_grad():
        g = grad(lambda x: (x ** 3).sum())(xr)
    assert not g.requires_grad
    close(g, 3 * np_(xr) ** 2)


def test_grad_closure_parameter_keeps_history():
    w = t(arr(3)).requires_grad_()
    x = t(arr(3))
    g = grad(lambda x: (x * w).sin().sum())(x)
    close(g, np_(w) * np.cos(np_(x) * np_(w)))
    (gw,) = tg.autograd.grad(g.sum(), w)
    close(gw, np.cos(np_(x) * np_(w)) - np_(x) * np_(w) * np.sin(np_(x) * np_(w)))


def test_grad_and_value_aux_and_pytrees():
    a, b = arr(3), arr(2, 3)
    g, (value, aux) = grad_and_value(
        lambda d: ((d["a"] * d["b"][0].sum(0)).sum(), {"cos": d["a"].cos()}), has_aux=True)(
        {"a": t(a), "b": [t(b)]})
    assert set(g) == {"a", "b"} and isinstance(g["b"], list)
    close(g["a"], b.sum(0))
    close(g["b"][0], np.broadcast_to(a, (2, 3)))
    close(value, (a * b.sum(0)).sum())
    close(aux["cos"], np.cos(a))
    g, value = grad_and_value(lambda x, n: (x * n).sum())(t(a), 3)  # non-tensor arguments pass
    close(g, np.full(3, 3.0))
    close(grad(lambda x, y: (y * 2).sum())(t(a), t(a)), np.zeros(3))  # unused: zeros


def test_grad_nesting_closed_forms():
    x0 = 0.7
    x = tg.tensor(x0, dtype=tg.float64)
    close(grad(grad(lambda x: x.sin() * x))(x), 2 * np.cos(x0) - x0 * np.sin(x0))
    close(grad(grad(grad(lambda x: x.sin())))(x), -np.cos(x0))
    # the inner grad's x is the outer one's (no perturbation confusion): d/dx [x] = 1
    close(grad(lambda x: grad(lambda y: x * y)(x))(x), 1.0)
    close(grad(lambda x: grad(lambda y: (x * y) ** 2)(x))(x), 6 * x0 ** 2)  # 2 x^3
    # a transform run inside another is no variable of the outer one: no history leaks out
    a = arr(3)
    g = grad(lambda v: vjp(lambda x: x.sin(), t(a))[1](v)[0].sum())(t(np.ones(3)))
    close(g, np.cos(a))
    assert not g.requires_grad


def test_grad_errors():
    x = t(arr(3))
    with pytest.raises(RuntimeError, match=r"Expected f\(\*args\) to return a scalar Tensor, "
                                           r"got tensor with 1 dims"):
        grad(lambda x: x * 2)(x)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 2 positional inputs"):
        grad(sin_times, argnums=2)(x, x)
    with pytest.raises(RuntimeError, match=r"argnums elements must be unique, got \(0, 0\)"):
        grad(sin_times, argnums=(0, -2))(x, x)
    with pytest.raises(RuntimeError, match="argnums must be non-empty"):
        grad(sin_times, argnums=())(x, x)
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        grad(sin_times, argnums=[0])(x, x)
    with pytest.raises(RuntimeError, match=r"should be a tuple: \(output, aux\)"):
        grad(lambda x: x.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type"):
        grad(lambda x: (x.sum(), 3), has_aux=True)(x)
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
        grad(lambda x: x)(3.0)
    with pytest.raises(RuntimeError, match="floating point"):
        grad(lambda x: x.sum())(tg.arange(3))


# -- vjp, jvp, linearize -------------------------------------------------------------------------

def test_vjp_against_closed_form(device):
    a, b, v = arr(3), arr(3), arr(3)
    out, vjp_fn = vjp(lambda x, y: x.sin() * y, t(a, device), t(b, device))
    close(out, np.sin(a) * b)
    assert not out.requires_grad
    gx, gy = vjp_fn(t(v, device))
    close(gx, v * np.cos(a) * b)
    close(gy, v * np.sin(a))
    gx2, _ = vjp_fn(t(2 * v, device))  # the graph is kept: vjp_fn can be called again
    close(gx2, 2 * v * np.cos(a) * b)


def test_vjp_pytrees_aux_and_errors():
    a = arr(3)
    _, vjp_fn, aux = vjp(lambda x, y: ({"p": x * 2, "q": [x.exp()]}, y.sum()), t(a), t(a),
                         has_aux=True)
    close(aux, a.sum())
    gx, gy = vjp_fn({"p": t(np.ones(3)), "q": [t(np.ones(3))]})
    close(gx, 2 + np.exp(a))
    close(gy, np.zeros(3))  # y only reaches aux
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents to be the "
                                           "same as pytree structure of outputs"):
        vjp_fn([t(np.ones(3))])
    with pytest.raises(RuntimeError, match="All outputs of f must be floating-point"):
        vjp(lambda x: x > 0, t(a))
    with pytest.raises(RuntimeError, match="expected f\\(\\*primals\\) to return only tensors"):
        vjp(lambda x: [x, 2], t(a))


def test_jvp_against_closed_form(device):
    a, b, u, w = arr(3), arr(3), arr(3), arr(3)
    out, tangent = jvp(lambda x, y: x.sin() * y, (t(a, device), t(b, device)),
                       (t(u, device), t(w, device)))
    close(out, np.sin(a) * b)
    close(tangent, np.cos(a) * b * u + np.sin(a) * w)
    out, tangent, aux = jvp(lambda x: ((x * 3, x.exp()), x.sum()), (t(a),), (t(u),),
                            has_aux=True)
    close(tangent[0], 3 * u)
    close(tangent[1], np.exp(a) * u)
    close(aux, a.sum())
    # nested forward mode (computed by the double-backward trick): f'' u w for f = sin
    _, tangent = jvp(lambda x: jvp(lambda y: y.sin(), (x,), (t(w),))[1], (t(a),), (t(u),))
    close(tangent, -np.sin(a) * u * w)
    _, tangent = jvp(lambda x: tg.ones(3, dtype=tg.float64), (t(a),), (t(u),))
    close(tangent, np.zeros(3))
    with pytest.raises(RuntimeError, match="The output of f is independent of the inputs"):
        jvp(lambda x: tg.ones(3), (t(a),), (t(u),), strict=True)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(lambda x: x, t(a), t(u))
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same "
                                           "python structure"):
        jvp(lambda x: x, (t(a),), [t(u)])


def test_linearize_matches_jvp():
    a, u = arr(2, 3), arr(2, 3)
    out, jvp_fn = linearize(lambda x: x.sin() * x, t(a))
    close(out, np.sin(a) * a)
    close(jvp_fn(t(u)), (np.cos(a) * a + np.sin(a)) * u)
    with pytest.raises(RuntimeError, match="tangent:0 with shape"):
        jvp_fn(t(np.ones(3)))
    with pytest.raises(RuntimeError, match="tangent:0 with dtype"):
        jvp_fn(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="to have the same argspec as the primals"):
        jvp_fn(t(u), t(u))


# -- jacrev, jacfwd, hessian ---------------------------------------------------------------------

A = arr(2, 3)


def vec_fn(x):  # R^3 -> R^2: A tanh(x) + x0 * x2; its Jacobian A diag(1 - tanh^2) + ...
    return t(A, x.device) @ x.tanh() + x[0] * x[2]


def vec_fn_jacobian(a):
    jac = A * (1 - np.tanh(a) ** 2)
    jac[:, 0] += a[2]
    jac[:, 2] += a[0]
    return jac


@pytest.mark.parametrize("transform", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_of_vector_function(device, transform):
    a = arr(3)
    jac = transform(vec_fn)(t(a, device))
    assert tuple(jac.shape) == (2, 3) and jac.device == t(a, device).device
    close(jac, vec_fn_jacobian(a))
    assert not jac.requires_grad


@pytest.mark.parametrize("transform", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_argnums_pytrees_and_finite_differences(transform):
    a, b = arr(3), arr(2)

    def f(x, y):
        return (x[:, None] * y).sin(), {"s": (x.exp() * y.sum()).sum()}

    jac = transform(f, argnums=(0, 1))(t(a), t(b))
    assert isinstance(jac, tuple) and isinstance(jac[1], dict)
    np_f = [lambda x: np.sin(x[:, None] * b), lambda y: np.sin(a[:, None] * y),
            lambda x: (np.exp(x) * b.sum()).sum(), lambda y: (np.exp(a) * y.sum()).sum()]
    close(jac[0][0], fd_jacobian(np_f[0], a), atol=1e-7)
    close(jac[0][1], fd_jacobian(np_f[1], b), atol=1e-7)
    close(jac[1]["s"][0], fd_jacobian(np_f[2], a), atol=1e-7)
    close(jac[1]["s"][1], fd_jacobian(np_f[3], b), atol=1e-7)
    jac, aux = transform(lambda d: (d["x"] * 2, d["x"].cos()), has_aux=True)({"x": t(a)})
    close(jac["x"], 2 * np.eye(3))
    close(aux, np.cos(a))
    close(transform(lambda x: x * 3)(t(np.array(0.5))), 3.0)  # 0-d in, 0-d out


def test_jacrev_chunk_sizes_agree():
    a = arr(4)
    def f(x):
        return (x[:, None] * x).sin().flatten()

    full = np_(jacrev(f)(t(a)))
    for chunk in (1, 3, 100):
        close(jacrev(f, chunk_size=chunk)(t(a)), full)
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        jacrev(f, chunk_size=0)


def test_jacobian_errors():
    c = t(arr(3)).to(tg.complex128)
    with pytest.raises(RuntimeError, match="jacrev: Expected all inputs to be real"):
        jacrev(lambda x: x)(c)
    with pytest.raises(RuntimeError, match="jacfwd: Expected all inputs to be real"):
        jacfwd(lambda x: x)(c)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in "
                                           "randomness error mode"):
        jacfwd(lambda x: x * tg.rand(3, dtype=tg.float64))(t(arr(3)))
    close(jacfwd(lambda x: x * tg.ones(3, dtype=tg.float64), randomness="different")(
        t(arr(3))), np.eye(3))


def cubic(x, y):  # the Hessian: d2/dx2 = diag(6 x * sum(y)), d2/dxdy = 3 x^2 (each y), 0
    return ((x ** 3).sum() * y.sum())


def test_hessian_closed_form(device):
    a, b = arr(3), arr(2)
    h = hessian(cubic, argnums=(0, 1))(t(a, device), t(b, device))
    close(h[0][0], np.diag(6 * a * b.sum()))
    close(h[0][1], np.repeat((3 * a ** 2)[:, None], 2, axis=1))
    close(h[1][0], np.repeat((3 * a ** 2)[None, :], 2, axis=0))
    close(h[1][1], np.zeros((2, 2)))
    m = arr(2, 2)
    h = hessian(lambda w: (w @ w).sum())(t(m))
    np_h = fd_jacobian(lambda w: fd_jacobian(lambda v: (v @ v).sum(), w, 1e-5), m, 1e-4)
    close(h, np_h, atol=1e-5)


def test_nested_jacobians_agree():
    a = arr(3)
    def f(x):  # d2 f_i / dx_j dx_k: analytic below
        return x.sin() * x.sum()

    ref = np.zeros((3, 3, 3))
    for i in range(3):
        ref[i, i, i] += -np.sin(a[i]) * a.sum()
        ref[i, i, :] += np.cos(a[i])
        ref[i, :, i] += np.cos(a[i])
    for outer in (jacrev, jacfwd):
        for inner in (jacrev, jacfwd):
            close(outer(inner(f))(t(a)), ref)
    close(hessian(lambda x: f(x).sum())(t(a)), ref.sum(0))


# -- vmap ----------------------------------------------------------------------------------------

def mat_fn(m, v):  # one matrix and vector -> (vector, scalar)
    out = (m @ v).tanh()
    return out, (out * v[:2]).sum()


def test_vmap_against_loop(device):
    ms, vs = arr(4, 2, 3), arr(4, 3)
    out, s = vmap(mat_fn)(t(ms, device), t(vs, device))
    ref = [mat_fn(t(m), t(v)) for m, v in zip(ms, vs)]
    close(out, np.stack([np_(r[0]) for r in ref]))
    close(s, np.array([np_(r[1]) for r in ref]))
    # mapped dims elsewhere, an unmapped input, out_dims
    out, s = vmap(mat_fn, in_dims=(2, None), out_dims=(1, 0))(t(ms.transpose(1, 2, 0)),
                                                              t(vs[0]))
    assert tuple(out.shape) == (2, 4)
    close(out, np.stack([np_(mat_fn(t(m), t(vs[0]))[0]) for m in ms], axis=1))
    out, _ = vmap(mat_fn, in_dims=(-1, 0), out_dims=-1)(t(ms.transpose(1, 2, 0)), t(vs))
    close(out, np.stack([np_(mat_fn(t(m), t(v))[0]) for m, v in zip(ms, vs)], axis=-1))


def test_vmap_pytrees_kwargs_nesting_and_chunks():
    x, y = arr(4, 3), arr(3)
    def f(d, scale=1.0):
        return {"p": d["a"] * d["b"][0] * scale, "s": [d["a"].sum()]}

    out = vmap(f, in_dims=({"a": 0, "b": [None]},))({"a": t(x), "b": [t(y)]}, scale=2.0)
    close(out["p"], x * y * 2)
    close(out["s"][0], x.sum(1))
    z = arr(2, 4, 3)
    close(vmap(vmap(tg.dot))(t(z), t(z)), (z * z).sum(-1))
    close(vmap(lambda r: r.exp().sum(), chunk_size=3)(t(x)), np.exp(x).sum(1))
    out, const = vmap(lambda r: (r * 2, t(y)), out_dims=(0, None))(t(x))
    close(const, y)
    empty = vmap(lambda r: (r * 2).sum())(t(np.zeros((0, 3))))
    assert tuple(empty.shape) == (0,)


def test_vmap_autograd_flows_into_inputs():
    x = t(arr(4, 3)).requires_grad_()
    vmap(lambda r: r.sin().sum())(x).sum().backward()
    close(x.grad, np.cos(np_(x)))


def test_vmap_errors():
    x = t(arr(4, 3))
    with pytest.raises(ValueError, match=r"vmap: Expected all tensors to have the same size in "
                                         r"the mapped dimension, got sizes \[4, 5\]"):
        vmap(tg.dot)(x, t(arr(5, 3)))
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        vmap(lambda r: r, in_dims=(0, 1))(x)
    with pytest.raises(ValueError, match=r"Got in_dim=2 for some input, but that input is a "
                                         r"Tensor of dimensionality 2"):
        vmap(lambda r: r, in_dims=2)(x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda r, n: r, in_dims=(0, 0))(x, 3)
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        vmap(lambda r: r, in_dims=(None,))(x)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
        vmap(lambda r: r, in_dims=[0])(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda r: 3)(x)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        vmap(lambda r: r, out_dims=None)(x)
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(lambda: 1)()
    with pytest.raises(ValueError, match=r"chunk_size should be None or greater than 0"):
        vmap(lambda r: r, chunk_size=0)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda r: r, randomness="sometimes")


def test_vmap_randomness(device):
    x = tg.zeros(4, 3, device=device)
    for draw in (lambda r: r + tg.rand(3, device=device),
                 lambda r: tg.nn.functional.dropout(r + 1, 0.5),
                 lambda r: r + tg.randn_like(r)):
        with pytest.raises(RuntimeError, match="vmap: called random operation while in "
                                               "randomness error mode"):
            vmap(draw)(x)
    tg.manual_seed(3)
    same = np_(vmap(lambda r: r + tg.rand(3, device=device), randomness="same")(x))
    after = np_(tg.rand(2, device=device))
    tg.manual_seed(3)
    once = np_(tg.rand(3, device=device))
    assert (same == once).all()  # every entry draws what one call draws ...
    assert (after == np_(tg.rand(2, device=device))).all()  # ... and the state moves once
    diff = np_(vmap(lambda r: r + tg.rand(3, device=device), randomness="different")(x))
    assert len({tuple(row) for row in diff.tolist()}) == 4
    g = tg.Generator().manual_seed(0)
    same = np_(vmap(lambda r: r + tg.rand(3, generator=g, dtype=tg.float64),
                    randomness="same")(tg.zeros(3, 3, dtype=tg.float64)))
    assert (same == same[0]).all()
    tg.rand(2, device=device)  # (no check is left behind)


# -- modules: functional_call, stack_module_state, per-sample gradients --------------------------

class Tied(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = tg.nn.Linear(3, 3)
        self.l2 = tg.nn.Linear(3, 3)
        self.l2.weight = self.l1.weight
        self.register_buffer("shift", tg.ones(3))

    def forward(self, x, scale=1.0):
        return self.l2(self.l1(x)) * scale + self.shift


def np_tied(x, w1, b1, w2, b2, shift, scale=1.0):
    return ((x @ w1.T + b1) @ w2.T + b2) * scale + shift


def test_functional_call_replaces_and_restores():
    m = Tied().double()
    own = {k: np_(v) for k, v in m.named_parameters()}
    x, w, s = arr(2, 3), arr(3, 3), arr(3)
    out = functional_call(m, ({"l1.weight": t(w)}, {"shift": t(s)}), (t(x),), {"scale": 2.0})
    # tied: l2.weight follows l1.weight
    close(out, np_tied(x, w, own["l1.bias"], w, own["l2.bias"], s, 2.0))
    out = functional_call(m, {"l1.weight": t(w)}, t(x), tie_weights=False)
    close(out, np_tied(x, w, own["l1.bias"], own["l1.weight"], own["l2.bias"], np.ones(3)))
    assert m.l1.weight is m.l2.weight and isinstance(m.l1.weight, tg.nn.Parameter)
    close(m.l1.weight, own["l1.weight"])
    close(m.shift, np.ones(3))
    with pytest.raises(ValueError, match=r"functional_call got multiple values for keys "
                                         r"\['l1.weight', 'l2.weight'\], which are tied"):
        functional_call(m, {"l1.weight": t(w), "l2.weight": t(w * 2)}, (t(x),))
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(m, ({"shift": t(s)}, {"shift": t(s)}), (t(x),))
    with pytest.raises(RuntimeError, match=r"Error\(s\) in reparametrizing for Tied:\n\t"
                                           r"Missing key\(s\): 'l1.bias', 'l2.bias', 'shift'."):
        functional_call(m, {"l1.weight": t(w)}, (t(x),), strict=True)
    full = dict(m.named_parameters(remove_duplicate=False)) | {"shift": t(s), "extra": t(s)}
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\): 'extra'."):
        functional_call(m, full, (t(x),), strict=True)
    del full["extra"]
    close(functional_call(m, full, (t(x),), strict=True),
          np_tied(x, own["l1.weight"], own["l1.bias"], own["l1.weight"], own["l2.bias"], s))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = tg.nn.utils.stateless.functional_call(m, {"shift": t(s)}, t(x))
    assert any(issubclass(w.category, FutureWarning) for w in caught)
    close(out, np_tied(x, own["l1.weight"], own["l1.bias"], own["l1.weight"], own["l2.bias"],
                       s))


def test_functional_call_buffer_updates_land_in_the_dict():
    bn = tg.nn.BatchNorm1d(3).double()
    state = {k: v.clone() for k, v in bn.named_buffers()}
    x = arr(5, 3)
    functional_call(bn, state, (t(x),))
    close(state["running_mean"], 0.1 * x.mean(0))
    assert int(state["num_batches_tracked"]) == 1
    close(bn.running_mean, np.zeros(3))


def test_per_sample_gradients_equal_autograd(device):
    model = tg.nn.Linear(3, 2).double().to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = t(arr(5, 3), device), t(arr(5, 2), device)

    def loss(params, xi, yi):
        return ((functional_call(model, params, (xi,)) - yi) ** 2).sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    assert tuple(per_sample["weight"].shape) == (5, 2, 3)
    for i in range(5):
        model.zero_grad()
        ((model(x[i]) - y[i]) ** 2).sum().backward()
        close(per_sample["weight"][i], np_(model.weight.grad))
        close(per_sample["bias"][i], np_(model.bias.grad))
    assert model.weight.grad is not None and not per_sample["weight"].requires_grad


def test_stack_module_state_ensemble():
    models = [tg.nn.Linear(3, 2).double() for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert tuple(params["weight"].shape) == (4, 2, 3) and buffers == {}
    assert params["weight"].is_leaf and params["weight"].requires_grad
    data = t(arr(6, 3))
    out = vmap(lambda p, b, d: functional_call(models[0], (p, b), (d,)),
               in_dims=(0, 0, None))(params, buffers, data)
    for i, m in enumerate(models):
        close(out[i], np_(m(data)))
    out.sum().backward()  # the stacked parameters are leaves an optimizer can take
    close(params["bias"].grad, np.full((4, 2), 6.0))
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0."):
        stack_module_state([])
    models[1].eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state(models)
    with pytest.raises(RuntimeError, match="Expected all models to be of the same class."):
        stack_module_state([models[0], tg.nn.ReLU()])


def test_namespace():
    from tritongrad import func
    assert tg.func is func and tg.vmap is func.vmap and {"func", "vmap"} <= set(tg.__all__)
    assert all(callable(getattr(func, n)) for n in func.__all__)
    assert tg.nn.utils.stateless.functional_call is not func.functional_call  # (deprecated)


def test_functionalize_and_debug_unwrap_run_eagerly():
    """Eagerly, functionalize's program is the function's: same results, same mutated
    inputs (PyTorch copies mutations back)."""
    def f(x):
        x.add_(1)
        return x * 2

    x = tg.ones(2)
    np.testing.assert_array_equal(tg.func.functionalize(f)(x).numpy(), [4.0, 4.0])
    np.testing.assert_array_equal(x.numpy(), [2.0, 2.0])
    assert tg.func.functionalize(f, remove="mutations_and_views") is f
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        tg.func.functionalize(f, remove="views")
    assert tg.func.debug_unwrap(x) is x
