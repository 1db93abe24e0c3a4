"""Options of tritongrad.optim against float64 references written out here (no torch needed):
complex parameters (Note [Complex parameters]) of the adaptive optimizers and of L-BFGS,
Adagrad's complex initial accumulator, Adam's tensor betas, differentiable=True (SGD, RMSprop,
Adadelta, Adagrad, RAdam, Adamax: gradients through step, checked by finite differences),
the fused option checks, SparseAdam's complex refusal, CosineAnnealingWarmRestarts resumed past
several cycles, L-BFGS's float32 scalars and its saved H_diag; plus one comparison with torch
where it is installed."""

import copy
import math

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn, optim

RNG = np.random.default_rng(7)
Z0 = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))
GRADS = [RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2)) for _ in range(4)]


def _run(cls, z0, grads, dtype, **kw):
    p = nn.Parameter(tg.tensor(z0, dtype=dtype))
    opt = cls([p], **kw)
    for g in grads:
        p.grad = tg.tensor(g, dtype=dtype)
        opt.step()
    return p, opt


def _as_real(z):
    return np.stack([z.real, z.imag], axis=-1)


# -- float64 references of the single-tensor rules, on real arrays --------------------------

def _adam_ref(x, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              amsgrad=False, maximize=False, decoupled=False):
    m, v, vmax = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled:
                x = x * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * x
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / math.sqrt(1 - betas[1] ** t) + eps
        x = x - lr / (1 - betas[0] ** t) * m / denom
    return x


def _adagrad_ref(x, grads, lr=1e-2, lr_decay=0.0, initial=0.0, eps=1e-10):
    s = np.full_like(x, initial)
    for t, g in enumerate(grads, 1):
        s = s + g * g
        x = x - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s) + eps)
    return x


def _rmsprop_ref(x, grads, lr=1e-2, alpha=0.99, eps=1e-8, momentum=0.0, centered=False):
    v, b, ga = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    for g in grads:
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = np.sqrt(v - ga * ga) + eps
        else:
            avg = np.sqrt(v) + eps
        if momentum:
            b = momentum * b + g / avg
            x = x - lr * b
        else:
            x = x - lr * g / avg
    return x


def _adamax_ref(x, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8):
    m, u = np.zeros_like(x), np.zeros_like(x)
    for t, g in enumerate(grads, 1):
        m = betas[0] * m + (1 - betas[0]) * g
        u = np.maximum(betas[1] * u, np.abs(g) + eps)
        x = x - lr / (1 - betas[0] ** t) * m / u
    return x


def _radam_ref(x, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    m, v = np.zeros_like(x), np.zeros_like(x)
    rho_inf = 2 / (1 - betas[1]) - 1
    for t, g in enumerate(grads, 1):
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        corrected = m / (1 - betas[0] ** t)
        rho_t = rho_inf - 2 * t * betas[1] ** t / (1 - betas[1] ** t)
        if rho_t > 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                          / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            x = x - lr * corrected * r * math.sqrt(1 - betas[1] ** t) / (np.sqrt(v) + eps)
        else:
            x = x - lr * corrected
    return x


def _rprop_ref(x, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)):
    prev, size = np.zeros_like(x), np.full_like(x, lr)
    for g in grads:
        sign = np.sign(g * prev)
        size = np.clip(np.where(sign > 0, size * etas[1],
                                np.where(sign < 0, size * etas[0], size)), *step_sizes)
        g = np.where(sign < 0, 0.0, g)
        x = x - np.sign(g) * size
        prev = g
    return x


def _adadelta_ref(x, grads, lr=1.0, rho=0.9, eps=1e-6):
    v, u = np.zeros_like(x), np.zeros_like(x)
    for g in grads:
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        x = x - lr * delta
    return x


COMPLEX_CASES = [
    (optim.Adam, dict(lr=0.01), lambda x, gs: _adam_ref(x, gs, lr=0.01)),
    (optim.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True),
     lambda x, gs: _adam_ref(x, gs, lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    (optim.AdamW, dict(lr=0.01), lambda x, gs: _adam_ref(x, gs, lr=0.01, weight_decay=1e-2,
                                                         decoupled=True)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5),
     lambda x, gs: _adagrad_ref(x, gs, lr=0.1, lr_decay=0.1, initial=0.5)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True),
     lambda x, gs: _rmsprop_ref(x, gs, lr=0.01, momentum=0.5, centered=True)),
    (optim.Adamax, dict(lr=0.01), lambda x, gs: _adamax_ref(x, gs, lr=0.01)),
    (optim.Rprop, dict(lr=0.01), lambda x, gs: _rprop_ref(x, gs, lr=0.01)),
    (optim.Adadelta, dict(lr=0.5), lambda x, gs: _adadelta_ref(x, gs, lr=0.5)),
]


@pytest.mark.parametrize("cls,kw,ref", COMPLEX_CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(COMPLEX_CASES)])
def test_complex_parameter_steps_as_its_real_view(cls, kw, ref):
    # PyTorch's rule: the real and imaginary parts are two independent real parameters
    p, opt = _run(cls, Z0, GRADS, tg.complex128, **kw)
    want = ref(_as_real(Z0), [_as_real(g) for g in GRADS])
    np.testing.assert_allclose(_as_real(p.detach().numpy()), want, rtol=1e-12, atol=1e-14)
    # the state stays complex and shaped as the parameter (what state_dict() shows)
    for key, value in opt.state_dict()["state"][0].items():
        if isinstance(value, tg.Tensor) and value.ndim:
            assert value.dtype == tg.complex128 and tuple(value.shape) == (3, 2), key


@pytest.mark.parametrize("cls", [optim.NAdam, optim.RAdam, optim.Adam])
def test_complex_matches_the_same_optimizer_on_the_real_view(cls):
    # (NAdam and RAdam: the formulas are their own tests'; here, complex == real view, also
    # in complex64, and a state dict round trip resumes the same trajectory)
    for cdt, rdt, tol in ((tg.complex128, tg.float64, 1e-13), (tg.complex64, tg.float32, 1e-6)):
        z, opt = _run(cls, Z0, GRADS[:2], cdt, lr=0.01, weight_decay=0.1)
        r, _ = _run(cls, _as_real(Z0), [_as_real(g) for g in GRADS], rdt, lr=0.01,
                    weight_decay=0.1)
        z2 = nn.Parameter(z.detach().clone())
        opt2 = cls([z2], lr=0.01, weight_decay=0.1)
        opt2.load_state_dict(opt.state_dict())
        for g in GRADS[2:]:
            z2.grad = tg.tensor(g, dtype=cdt)
            opt2.step()
        np.testing.assert_allclose(_as_real(z2.detach().numpy()), r.detach().numpy(),
                                   rtol=tol, atol=tol)


def test_adam_tensor_betas_round_their_scalars_as_float32():
    # Note [Adam's tensor betas]: float32 0-d betas make float32 bias corrections and step
    # size (the moment's weight 1 - beta1 in the parameter's float64)
    x0 = RNG.standard_normal(4)
    grads = [RNG.standard_normal(4) for _ in range(4)]
    p = nn.Parameter(tg.tensor(x0))
    opt = optim.Adam([p], lr=0.01, betas=(tg.tensor(0.8), tg.tensor(0.9)))
    f = np.float32
    b1, b2 = f(0.8), f(0.9)
    x, m, v = x0.copy(), np.zeros(4), np.zeros(4)
    for t, g in enumerate(grads, 1):
        p.grad = tg.tensor(g)
        opt.step()
        m = m + (1 - float(b1)) * (g - m)
        v = v * float(b2) + float(f(1) - b2) * g * g
        step_size = float(f(1) / (f(1) - b1 ** f(t)) * f(0.01))
        denom = np.sqrt(v) / float(np.sqrt(f(1) - b2 ** f(t))) + 1e-8
        x = x - step_size * m / denom
    np.testing.assert_allclose(p.detach().numpy(), x, rtol=1e-13)
    # (float betas give the float64 result, which differs)
    q, _ = _run(optim.Adam, x0, grads, tg.float64, lr=0.01, betas=(0.8, 0.9))
    assert np.abs(q.detach().numpy() - x).max() > 1e-11
    with pytest.raises(ValueError, match="betas must be either both floats or both Tensors"):
        optim.Adam([p], betas=(tg.tensor(0.8), 0.9))


def test_adagrad_complex_accumulator_starts_in_both_parts():
    p = nn.Parameter(tg.tensor([1 + 1j, 2 - 1j]))
    opt = optim.Adagrad([p], initial_accumulator_value=0.25)
    np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), [0.25 + 0.25j] * 2)


def test_fused_refuses_complex_and_conflicting_options():
    z = nn.Parameter(tg.zeros(2, dtype=tg.complex64))
    for cls in (optim.SGD, optim.Adam, optim.AdamW, optim.Adagrad):
        with pytest.raises(RuntimeError, match="floating point Tensors"):
            cls([z], lr=0.1, fused=True)
        p = nn.Parameter(tg.zeros(2))
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True`"):
            cls([p], lr=0.1, fused=True, foreach=True)
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            cls([p], lr=0.1, fused=True, differentiable=True)


def test_sparse_adam_refuses_complex_parameters_naming_them():
    a, z = nn.Parameter(tg.zeros(2)), nn.Parameter(tg.zeros(2, dtype=tg.complex64))
    with pytest.raises(ValueError, match=r"Complex params at indices \[\[1, 0\]\]"):
        optim.SparseAdam([{"params": [a]}, {"params": [z]}])


def test_sgd_lr_tensor_with_complex_parameter():
    p, _ = _run(optim.SGD, Z0, GRADS, tg.complex128, lr=tg.tensor(0.1), momentum=0.9)
    x, b = Z0.copy(), None
    for g in GRADS:
        b = g if b is None else 0.9 * b + g
        x = x - np.float64(np.float32(0.1)) * b  # (the tensor's float32 value)
    np.testing.assert_allclose(p.detach().numpy(), x, rtol=1e-12)


# -- SGD(differentiable=True) ---------------------------------------------------------------

def _sgd_unrolled(x0, grads, lr, momentum, nesterov, weight_decay=0.0, dampening=0.0):
    """What the differentiable step computes, in tritongrad ops on x0 (the first buffer is a
    detached copy of the gradient, as PyTorch's)."""
    p = x0.clone()
    opt = optim.SGD([p], lr=lr, momentum=momentum, nesterov=nesterov,
                    weight_decay=weight_decay, dampening=dampening, differentiable=True)
    for g in grads:
        p.grad = g * 1.0
        opt.step()
    loss = (p * p).sum()
    if momentum:
        loss = loss + (opt.state[p]["momentum_buffer"] ** 2).sum()
    return p, loss


def _sgd_loss_ref(x0, grads, lr, momentum, nesterov, wd, frozen_buf=None):
    """The same unrolled steps and loss in NumPy; the first momentum buffer is ``frozen_buf``
    where given (a constant, as the detached copy is for autograd)."""
    x, buf = x0, None
    for k, g in enumerate(grads):
        g = g + wd * x
        if momentum:
            if k == 0:
                buf = g if frozen_buf is None else frozen_buf
            else:
                buf = momentum * buf + g
            g = g + momentum * buf if nesterov else buf
        x = x - lr * g
    return (x * x).sum() + ((buf * buf).sum() if momentum else 0.0)


@pytest.mark.parametrize("momentum,nesterov,wd", [(0.0, False, 0.0), (0.0, False, 0.2),
                                                  (0.9, False, 0.1), (0.9, True, 0.0)])
def test_sgd_differentiable_gradients_match_finite_differences(momentum, nesterov, wd):
    x0_np = np.array([1.0, 2.0, -1.0])
    g_np = [np.array([0.3 * k, -0.2, 0.7 + k]) for k in range(3)]
    frozen = g_np[0] + wd * x0_np  # the first buffer, a constant to autograd

    x0 = tg.tensor(x0_np, requires_grad=True)
    gs = [tg.tensor(g, requires_grad=True) for g in g_np]
    p, loss = _sgd_unrolled(x0, gs, 0.1, momentum, nesterov, wd)
    assert not p.is_leaf and p.requires_grad
    np.testing.assert_allclose(float(loss), _sgd_loss_ref(x0_np, g_np, 0.1, momentum,
                                                          nesterov, wd), rtol=1e-12)
    got = tg.autograd.grad(loss, [x0] + gs, allow_unused=True)
    h = 1e-6
    args = [x0_np] + g_np
    for k in range(len(args)):
        want = np.zeros(3)
        for i in range(3):
            bump = np.zeros(3)
            bump[i] = h
            hi = [a + bump if j == k else a for j, a in enumerate(args)]
            lo = [a - bump if j == k else a for j, a in enumerate(args)]
            want[i] = (_sgd_loss_ref(hi[0], hi[1:], 0.1, momentum, nesterov, wd, frozen)
                       - _sgd_loss_ref(lo[0], lo[1:], 0.1, momentum, nesterov, wd,
                                       frozen)) / (2 * h)
        value = np.zeros(3) if got[k] is None else got[k].numpy()
        np.testing.assert_allclose(value, want, rtol=1e-6, atol=1e-8, err_msg=f"input {k}")


DIFFERENTIABLE_CASES = [
    (optim.RMSprop, dict(lr=0.1, momentum=0.5), lambda x, gs: _rmsprop_ref(x, gs, 0.1,
                                                                         momentum=0.5)),
    # (centered over several steps: autograd refuses, its saved grad_avg changed in place,
    # as PyTorch's does)
    (optim.RMSprop, dict(lr=0.1, alpha=0.5), lambda x, gs: _rmsprop_ref(x, gs, 0.1, alpha=0.5)),
    (optim.Adadelta, dict(lr=0.5), lambda x, gs: _adadelta_ref(x, gs, 0.5)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.2),
     lambda x, gs: _adagrad_ref(x, gs, 0.1, 0.1, 0.2)),
    # (beta2 = 0.9 over 7 steps: the rectified branch from the sixth on)
    (optim.RAdam, dict(lr=0.1, betas=(0.9, 0.9)), lambda x, gs: _radam_ref(x, gs, 0.1,
                                                                         (0.9, 0.9))),
    # (one step: over several, autograd refuses, the saved exp_avg changed in place, as
    # PyTorch's does)
    (optim.Adamax, dict(lr=0.1), lambda x, gs: _adamax_ref(x, gs[:1], 0.1)),
]


@pytest.mark.parametrize("cls,kw,ref", DIFFERENTIABLE_CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, _, _) in
                              enumerate(DIFFERENTIABLE_CASES)])
def test_differentiable_adaptive_steps_match_finite_differences(cls, kw, ref):
    x0_np = np.array([1.0, 2.0, -1.0])
    g_np = [np.array([0.3 * k + 0.1, -0.2, 0.7 + k])
            for k in range(7 if cls is optim.RAdam else 3)]
    x0 = tg.tensor(x0_np, requires_grad=True)
    gs = [tg.tensor(g, requires_grad=True) for g in g_np]
    p = x0.clone()
    opt = cls([p], differentiable=True, **kw)
    for g in gs[:1] if cls is optim.Adamax else gs:
        p.grad = g * 1.0
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), ref(x0_np, g_np), rtol=1e-12)
    got = tg.autograd.grad((p * p).sum(), [x0] + gs, allow_unused=True)
    got = [tg.zeros(3, dtype=tg.float64) if v is None else v for v in got]
    h, args = 1e-6, [x0_np] + g_np
    for k in range(len(args)):
        want = np.zeros(3)
        for i in range(3):
            bump = np.zeros(3)
            bump[i] = h
            hi = ref(*[(a + bump if j == k else a) for j, a in enumerate(args[:1])],
                     [a + bump if j + 1 == k else a for j, a in enumerate(args[1:])])
            lo = ref(*[(a - bump if j == k else a) for j, a in enumerate(args[:1])],
                     [a - bump if j + 1 == k else a for j, a in enumerate(args[1:])])
            want[i] = ((hi * hi).sum() - (lo * lo).sum()) / (2 * h)
        np.testing.assert_allclose(got[k].numpy(), want, rtol=1e-6, atol=1e-8,
                                   err_msg=f"input {k}")


def test_differentiable_refusals():
    # complex parameters step through real views, which do not carry the graph here
    z = tg.ones(2, dtype=tg.complex128, requires_grad=True) * 1
    opt = optim.RMSprop([z], differentiable=True)
    z.grad = tg.ones(2, dtype=tg.complex128)
    with pytest.raises(NotImplementedError, match="differentiable=True with complex"):
        opt.step()


def _adam_differentiable_ref(x, g, lr, betas, eps, wd=0.0, decoupled=False, maximize=False,
                             amsgrad=False):
    """One differentiable Adam step in NumPy float64, with PyTorch's float32 scalars (Note
    [differentiable Adam] in optim/adam.py)."""
    f32 = np.float32
    b1, b2 = betas
    g = -g if maximize else g
    if wd and decoupled:
        x = x * (1 - lr * wd)
    elif wd:
        g = g + wd * x
    m, v = (1 - b1) * g, (1 - b2) * g * g
    step_size_neg = -(f32(lr) / (f32(1) - f32(b1) ** f32(1)))
    bc2_sqrt = np.sqrt(f32(1) - f32(b2) ** f32(1))
    denom = np.sqrt(v) / float(bc2_sqrt * step_size_neg) + float(f32(eps) / step_size_neg)
    return x + m / denom


@pytest.mark.parametrize("cls,kw", [
    (optim.Adam, {}), (optim.AdamW, {}), (optim.Adam, dict(amsgrad=True)),
    (optim.Adam, dict(weight_decay=0.1, maximize=True)),
    (optim.AdamW, dict(amsgrad=True, weight_decay=0.05))])
def test_adam_differentiable_step_and_its_gradients(cls, kw):
    # Adam/AdamW(differentiable=True) were refused: the step is recorded, its values those
    # of PyTorch's (float32 scalars), its gradients to the parameter and the gradient exact
    x0_np, g_np = np.array([0.5, -1.0, 2.0]), np.array([0.3, -0.2, 0.7])
    x0, g0 = tg.tensor(x0_np, requires_grad=True), tg.tensor(g_np, requires_grad=True)

    def step(x, g):
        p = x.clone()
        opt = cls([p], lr=0.1, differentiable=True, **kw)
        p.grad = g * 1.0
        opt.step()
        return p

    wd = kw.get("weight_decay", 0.01 if cls is optim.AdamW else 0.0)
    want = _adam_differentiable_ref(x0_np, g_np, 0.1, (0.9, 0.999), 1e-8, wd,
                                    cls is optim.AdamW, kw.get("maximize", False))
    np.testing.assert_allclose(step(x0, g0).detach().numpy(), want, rtol=1e-15)
    assert tg.autograd.gradcheck(step, (x0, g0))
    torch = pytest.importorskip("torch")
    tx, tgr = (torch.tensor(a, requires_grad=True) for a in (x0_np, g_np))
    tp = tx.clone()
    topt = getattr(torch.optim, cls.__name__)([tp], lr=0.1, differentiable=True, **kw)
    tp.grad = tgr * 1.0
    topt.step()
    (tp * tp).sum().backward()
    p = step(x0, g0)
    (p * p).sum().backward()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-15)
    np.testing.assert_allclose(x0.grad.numpy(), tx.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(g0.grad.numpy(), tgr.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_sgd_non_leaf_parameter_needs_differentiable():
    p = tg.ones(2, requires_grad=True) * 2
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p], lr=0.1)
    assert optim.SGD([p], lr=0.1, differentiable=True).defaults["differentiable"] is True


# -- schedulers, L-BFGS ---------------------------------------------------------------------

def test_warm_restarts_resumed_past_several_cycles():
    # last_epoch=3 with T_0=2, T_mult=2: the initial step reaches epoch 4, a multiple of the
    # first cycle: T_cur = 4 % 2 = 0 and T_i = 4 (PyTorch's remainder, not 4 - 2 = 2)
    p = nn.Parameter(tg.ones(1))
    opt = optim.SGD([p], lr=0.1)
    opt.param_groups[0]["initial_lr"] = 0.1
    sched = optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2,
                                                           eta_min=0.001, last_epoch=3)
    got = [sched.get_last_lr()[0]]
    for _ in range(4):
        opt.step()
        sched.step()
        got.append(sched.get_last_lr()[0])
    want = [0.001 + 0.099 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(4)] + [0.1]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _quartic(x, a, b):
    return 0.5 * (x * (a @ x)).sum() - (b * x).sum() + 0.1 * (x ** 4).sum()


def test_lbfgs_saves_h_diag_as_a_tensor_and_resumes():
    a = tg.tensor([[3.0, 1.0, 0.2], [1.0, 2.0, 0.5], [0.2, 0.5, 1.0]], dtype=tg.float64)
    b = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64)

    def make(start):
        x = nn.Parameter(tg.tensor(start, dtype=tg.float64))
        opt = optim.LBFGS([x], max_iter=4, history_size=3)

        def closure():
            opt.zero_grad()
            loss = _quartic(x, a, b)
            loss.backward()
            return loss
        return x, opt, closure

    x, opt, closure = make([1.5, -0.5, 2.0])
    opt.step(closure)
    saved = copy.deepcopy(opt.state_dict())  # (the live lists change with the next step)
    middle = x.detach().numpy().copy()
    state = saved["state"][0]
    h = state["H_diag"]
    assert isinstance(h, tg.Tensor) and h.ndim == 0 and h.dtype == tg.float64
    # H_diag = y.s / y.y of the last kept pair
    y, s = state["old_dirs"][-1], state["old_stps"][-1]
    np.testing.assert_allclose(float(h), float(y.dot(s)) / float(y.dot(y)), rtol=1e-12)
    opt.step(closure)
    x2, opt2, closure2 = make(middle)
    opt2.load_state_dict(saved)
    opt2.step(closure2)
    np.testing.assert_allclose(x2.detach().numpy(), x.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_complex_parameter_steps_as_its_real_view(line_search_fn):
    c = np.array([0.5 - 1j, 1 + 1j, -2 + 0.5j])
    start = np.array([1 + 2j, -0.5 + 0.3j, 2 - 1j])

    def solve(param, parts):
        opt = optim.LBFGS([param], history_size=3, line_search_fn=line_search_fn)

        def closure():
            opt.zero_grad()
            re, im = parts(param)
            loss = ((re - tg.tensor(c.real)) ** 2 + (im - tg.tensor(c.imag)) ** 2).sum() \
                + 0.1 * (re ** 4 + im ** 4).sum()
            loss.backward()
            return loss
        for _ in range(2):
            opt.step(closure)
        return opt

    z = nn.Parameter(tg.tensor(start))
    opt = solve(z, lambda t: (t.real, t.imag))
    x = nn.Parameter(tg.tensor(_as_real(start)))
    solve(x, lambda t: (t[:, 0], t[:, 1]))
    np.testing.assert_allclose(_as_real(z.detach().numpy()), x.detach().numpy(), rtol=1e-12)
    assert tuple(opt.state[z]["d"].shape) == (6,)  # (two real entries per element)


def test_lbfgs_float32_scalars_round_to_float32():
    # the recursion's scalars in float32 (Note [L-BFGS scalars]): the first step length is
    # float32(1 / sum|g|) * lr, and the point reached after one iteration says so
    x = nn.Parameter(tg.tensor([1.5, -0.5, 2.0], dtype=tg.float32))
    opt = optim.LBFGS([x], max_iter=1, lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss
    opt.step(closure)
    g = np.array([3.0, -1.0, 4.0], dtype=np.float32)
    t = float(min(1.0, 1.0 / np.float32(np.abs(g).sum())) * 0.5)
    assert opt.state[x]["t"] == t
    np.testing.assert_allclose(x.detach().numpy(),
                               np.array([1.5, -0.5, 2.0], np.float32) - np.float32(t) * g,
                               rtol=1e-6)


# -- against torch, where installed -----------------------------------------------------------

@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("NAdam", dict(lr=0.01, decoupled_weight_decay=True,
                                                    weight_decay=0.1)),
                                     ("RAdam", dict(lr=0.01)), ("Adagrad", dict(lr=0.1)),
                                     ("RMSprop", dict(lr=0.01, centered=True)),
                                     ("Rprop", dict(lr=0.01)), ("Adadelta", dict())])
def test_complex_options_match_torch(name, kw):
    torch = pytest.importorskip("torch")
    p, opt = _run(getattr(optim, name), Z0, GRADS, tg.complex128, **kw)
    tp = torch.nn.Parameter(torch.tensor(Z0))
    topt = getattr(torch.optim, name)([tp], **kw)
    for g in GRADS:
        tp.grad = torch.tensor(g)
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    ours, theirs = opt.state_dict()["state"][0], topt.state_dict()["state"][0]
    assert list(ours) == list(theirs)
    for key in theirs:
        np.testing.assert_allclose(np.asarray(ours[key].numpy()),
                                   theirs[key].numpy(), rtol=1e-12, atol=1e-14)
