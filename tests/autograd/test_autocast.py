"""autocast: every listed op's output dtype under autocast on the CPU (bfloat16) and the
(emulated) CUDA device (float16, and bfloat16 for the matmul family), against the policies of
PyTorch's Autocast Op Reference (written out here, independently of the op tables); gradients'
dtypes and values against float32 runs; nesting, disabling, the decorator form, thread
locality, the weight-cast cache, and the argument errors."""

import re
import threading
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn
from tritongrad.autograd import autocast as ac
from tritongrad.autograd.ops import FAMILIES
from tritongrad.nn import functional as F

rng = np.random.default_rng(5)


def make(shape, dtype, device, positive=False, grad=False):
    v = rng.standard_normal(shape)
    v = np.abs(v) + 0.5 if positive else v
    return tg.tensor(v, dtype=dtype, device=device, requires_grad=grad)


# name -> (policy on the cpu, policy on cuda, fn(device, dtype of the inputs)): the op applied
# to small inputs. "lower" ops get float32 inputs, "float32" ops the lower precision dtype,
# "promote" ops one float32 input among lower precision ones.
def _on_positive(f):
    return lambda d, t: f(make((4,), t, d, positive=True))


def _mats(n=2):
    return lambda d, t: [make((3, 4) if i % 2 == 0 else (4, 3), t, d) for i in range(n)]


CASES = {
    # lower precision
    "mm": ("lower", "lower", lambda d, t: tg.mm(*_mats()(d, t))),
    "matmul": ("lower", "lower", lambda d, t: tg.matmul(*_mats()(d, t))),
    "__matmul__": ("lower", "lower", lambda d, t: _mats()(d, t)[0] @ _mats()(d, t)[1]),
    "bmm": ("lower", "lower", lambda d, t: tg.bmm(make((2, 3, 4), t, d), make((2, 4, 3), t, d))),
    "addmm": ("lower", "lower",
              lambda d, t: tg.addmm(make((3, 3), t, d), *_mats()(d, t))),
    "addmv": (None, "lower", lambda d, t: tg.addmv(make((3,), t, d), make((3, 4), t, d),
                                                   make((4,), t, d))),
    "mv": (None, "lower", lambda d, t: tg.mv(make((3, 4), t, d), make((4,), t, d))),
    "addr": (None, "lower", lambda d, t: tg.addr(make((3, 4), t, d), make((3,), t, d),
                                                 make((4,), t, d))),
    "addbmm": ("lower", "lower", lambda d, t: tg.addbmm(
        make((3, 3), t, d), make((2, 3, 4), t, d), make((2, 4, 3), t, d))),
    "baddbmm": ("lower", "lower", lambda d, t: tg.baddbmm(
        make((2, 3, 3), t, d), make((2, 3, 4), t, d), make((2, 4, 3), t, d))),
    "einsum": ("lower", "lower",
               lambda d, t: tg.einsum("ij,jk->ik", *_mats()(d, t))),
    "tensordot": ("lower", "lower", lambda d, t: tg.tensordot(*_mats()(d, t), 1)),
    "inner": ("lower", "lower", lambda d, t: tg.inner(make((3, 4), t, d), make((2, 4), t, d))),
    "prelu": ("lower", "lower", lambda d, t: F.prelu(make((3, 4), t, d), make((1,), t, d))),
    "linear": ("lower", "lower", lambda d, t: F.linear(make((2, 4), t, d), make((3, 4), t, d),
                                                       make((3,), t, d))),
    "conv1d": ("lower", "lower", lambda d, t: F.conv1d(make((1, 2, 5), t, d),
                                                       make((3, 2, 2), t, d))),
    "conv2d": ("lower", "lower", lambda d, t: F.conv2d(make((1, 1, 3, 3), t, d),
                                                       make((2, 1, 2, 2), t, d))),
    "conv_transpose3d": ("lower", "lower", lambda d, t: F.conv_transpose3d(
        make((1, 1, 2, 2, 2), t, d), make((1, 2, 2, 2, 2), t, d))),
    "scaled_dot_product_attention": ("lower", "lower", lambda d, t: (
        F.scaled_dot_product_attention(*[make((1, 2, 3), t, d) for _ in range(3)]))),
    # float32 everywhere
    "prod": ("float32", "float32", lambda d, t: tg.prod(make((4,), t, d))),
    "mse_loss": ("float32", "float32", lambda d, t: F.mse_loss(make((4,), t, d),
                                                               make((4,), t, d))),
    "l1_loss": ("float32", "float32", lambda d, t: F.l1_loss(make((4,), t, d),
                                                             make((4,), t, d))),
    "smooth_l1_loss": ("float32", "float32", lambda d, t: F.smooth_l1_loss(
        make((4,), t, d), make((4,), t, d))),
    "huber_loss": ("float32", "float32", lambda d, t: F.huber_loss(make((4,), t, d),
                                                                   make((4,), t, d))),
    "kl_div": ("float32", "float32", lambda d, t: F.kl_div(
        make((2, 3), t, d), make((2, 3), t, d, positive=True), reduction="batchmean")),
    "nll_loss": ("float32", "float32", lambda d, t: F.nll_loss(
        make((2, 3), t, d), tg.tensor([0, 2], device=d))),
    "cross_entropy": ("float32", "float32", lambda d, t: F.cross_entropy(
        make((2, 3), t, d), tg.tensor([0, 2], device=d))),
    "binary_cross_entropy_with_logits": ("float32", "float32", lambda d, t: (
        F.binary_cross_entropy_with_logits(make((4,), t, d), make((4,), t, d).sigmoid()))),
    "multilabel_margin_loss": ("float32", "float32", lambda d, t: F.multilabel_margin_loss(
        make((2, 3), t, d), tg.tensor([[2, -1, 0], [0, 1, -1]], device=d))),
    "cdist": ("float32", "float32", lambda d, t: tg.cdist(make((3, 4), t, d),
                                                         make((2, 4), t, d))),
    # float32 on CUDA only (on the CPU they run in their inputs' dtype, as PyTorch's do)
    **{n: (None, "float32", _on_positive(f))
       for n, f in {"exp": tg.exp, "log": tg.log, "rsqrt": tg.rsqrt, "reciprocal": tg.reciprocal,
                    "tan": tg.tan, "log1p": tg.log1p, "expm1": tg.expm1, "sum": tg.sum,
                    "log2": tg.log2, "log10": tg.log10, "asin": tg.asin, "acos": tg.acos,
                    "sinh": tg.sinh, "cosh": tg.cosh,
                    "norm": tg.norm, "softplus": F.softplus,
                    "logsumexp": lambda x: tg.logsumexp(x, 0),
                    "cumsum": lambda x: tg.cumsum(x, 0), "softmax": lambda x: tg.softmax(x, 0),
                    "log_softmax": lambda x: tg.log_softmax(x, 0),
                    "F.softmax": lambda x: F.softmax(x, 0),
                    "F.log_softmax": lambda x: F.log_softmax(x, 0),
                    "Tensor.exp": lambda x: x.exp(), "Tensor.sum": lambda x: x.sum(),
                    "pow": lambda x: tg.pow(x, 2.0), "__pow__": lambda x: x ** 2,
                    "__rpow__": lambda x: 2.0 ** x,
                    "__rtruediv__": lambda x: 2.0 / x}.items()},
    "layer_norm": (None, "float32", lambda d, t: F.layer_norm(make((2, 4), t, d), (4,))),
    "group_norm": (None, "float32", lambda d, t: F.group_norm(make((1, 4, 2), t, d), 2)),
    "normalize": (None, "float32", lambda d, t: F.normalize(make((2, 4), t, d))),
    # float32 on the CPU only (PyTorch's CPU list; on CUDA they keep their input's dtype)
    "trace": ("float32", None, lambda d, t: tg.trace(make((3, 3), t, d))),
    "max_pool3d": ("float32", None, lambda d, t: F.max_pool3d(make((1, 1, 2, 2, 2), t, d), 2)),
    "avg_pool3d": ("float32", None, lambda d, t: F.avg_pool3d(make((1, 1, 2, 2, 2), t, d), 2)),
    "adaptive_avg_pool3d": ("float32", None, lambda d, t: F.adaptive_avg_pool3d(
        make((1, 1, 2, 2, 2), t, d), 1)),
    "adaptive_max_pool3d": ("float32", None, lambda d, t: F.adaptive_max_pool3d(
        make((1, 1, 2, 2, 2), t, d), 1)),
    # promote to the widest input
    "cat": ("promote", "promote", lambda d, t: tg.cat([make((2,), t, d),
                                                       make((2,), tg.float32, d)])),
    "stack": ("promote", "promote", lambda d, t: tg.stack([make((2,), tg.float32, d),
                                                           make((2,), t, d)])),
    "addcmul": (None, "promote", lambda d, t: tg.addcmul(
        make((3,), t, d), make((3,), tg.float32, d), make((3,), t, d))),
    "addcdiv": (None, "promote", lambda d, t: tg.addcdiv(
        make((3,), t, d), make((3,), t, d), make((3,), tg.float32, d, positive=True))),
    "index_put": (None, "promote", lambda d, t: tg.index_put(
        make((4,), t, d), (tg.tensor([0, 2], device=d),), make((2,), tg.float32, d))),
    "scatter_add": (None, "promote", lambda d, t: tg.scatter_add(
        make((4,), t, d), 0, tg.tensor([0, 2], device=d), make((2,), tg.float32, d))),
    "index_copy": ("promote", None, lambda d, t: tg.index_copy(
        make((4,), t, d), 0, tg.tensor([0, 2], device=d), make((2,), tg.float32, d))),
}


def _expected(policy, low, fn, device):
    if policy == "lower":
        return low
    if policy in ("float32", "promote"):
        return tg.float32
    return fn(device, low).dtype  # not autocast on this device: what it gives outside


def _check_case(name, device, low):
    cpu_policy, cuda_policy, fn = CASES[name]
    policy = cpu_policy if device == "cpu" else cuda_policy
    inputs_dtype = tg.float32 if policy == "lower" else low
    try:
        expected = _expected(policy, low, fn, device)
    except RuntimeError as e:  # refused outside autocast (index_put of two dtypes on the CPU,
        with tg.autocast(device, dtype=low), pytest.raises(RuntimeError, match=re.escape(str(e))):
            fn(device, inputs_dtype)  # as PyTorch's): refused inside too
        return
    with tg.autocast(device, dtype=low):
        out = fn(device, inputs_dtype)
    assert out.dtype is expected, (name, device, out.dtype, expected)
    if policy in ("lower", "float32"):  # the region made the difference, and is left
        assert fn(device, inputs_dtype).dtype is inputs_dtype, name


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_dtype_cpu(name):
    _check_case(name, "cpu", tg.bfloat16)


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_dtype_cuda_float16(name):
    _check_case(name, "cuda", tg.float16)


@pytest.mark.parametrize("name", ["mm", "linear", "addmm", "bmm"])
def test_output_dtype_cuda_bfloat16(name):
    _check_case(name, "cuda", tg.bfloat16)


# float32 on the CPU (PyTorch's CPU list), ops that refuse half precision outside a region, so
# that CASES' check cannot run them: their policies (results: tests/test_autocast_ops33.py)
REFUSING_HALF = dict.fromkeys(["quantile", "nanquantile", "cholesky", "cholesky_solve",
                               "inverse", "qr", "svd", "pinverse", "triangular_solve",
                               "lu_solve", "geqrf", "orgqr", "ormqr", "polar",
                               "view_as_complex"], ("float32", None))


def test_every_row_with_a_policy_is_tested():
    """The op tables' autocast column agrees with the policies written out above."""
    for rows in FAMILIES.values():
        for row in rows:
            if row.autocast is None:
                continue
            assert row.name in CASES or row.name in REFUSING_HALF, row.name
            cpu_policy, cuda_policy = REFUSING_HALF[row.name] if row.name in REFUSING_HALF \
                else CASES[row.name][:2]
            policies = ac.parse_policy(row.autocast)
            assert (policies.get("cpu"), policies.get("cuda")) == (cpu_policy, cuda_policy), \
                row.name


def test_policy_spec_parsing():
    assert ac.parse_policy("lower") == {"cpu": "lower", "cuda": "lower"}
    assert ac.parse_policy("float32 on cuda") == {"cuda": "float32"}
    assert ac.parse_policy("float32 on cpu, banned on cuda") == {"cpu": "float32",
                                                                 "cuda": "banned"}
    with pytest.raises(ValueError, match="autocast policy must be one of"):
        ac.parse_policy("half")
    with pytest.raises(ValueError, match="autocast policy must be one of"):
        tg.autograd.registry.OpInfo("x", lambda: None, autocast="lower on xpu")


def test_binary_cross_entropy_is_banned_on_cuda_and_float32_on_cpu():
    p = make((4,), tg.float16, "cuda").sigmoid()
    with tg.autocast("cuda"), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(p, p)
    q = make((4,), tg.bfloat16, "cpu").sigmoid()
    with tg.autocast("cpu"):
        assert F.binary_cross_entropy(q, q).dtype is tg.float32


def test_ineligible_inputs_are_not_cast():
    a64 = make((2, 2), tg.float64, "cpu")
    i = tg.tensor([[1, 2], [3, 4]])
    with tg.autocast("cpu"):
        assert tg.mm(a64, a64).dtype is tg.float64            # float64 is never cast
        assert tg.mm(i, i).dtype is tg.int64                  # nor are integers
        x = make((4,), tg.bfloat16, "cpu")
        assert tg.prod(x, dtype=tg.bfloat16).dtype is tg.bfloat16  # explicit dtype= wins
        a = make((2, 2), tg.float32, "cpu")
        a.add_(a)                                             # in-place ops run as called
        assert a.dtype is tg.float32
    c = make((2, 2), tg.float32, "cuda")
    with tg.autocast("cpu"):                                  # a CPU region leaves CUDA alone
        assert tg.mm(c, c).dtype is tg.float32
    with tg.autocast("cuda"):
        x = make((4,), tg.float16, "cuda")
        assert tg.softmax(x, 0, dtype=tg.float16).dtype is tg.float16


def test_ops_inside_a_listed_op_are_not_cast_again():
    # cross_entropy runs log_softmax and nll_loss inside: under CUDA autocast the whole op is
    # one float32 op, and linear's matmul and bias add run once in float16
    x = make((2, 4), tg.float32, "cpu")
    w = make((3, 4), tg.float32, "cpu")
    with tg.autocast("cpu", dtype=tg.float16):
        y = F.linear(x, w)
    assert y.dtype is tg.float16
    assert type(y.grad_fn).__name__ != "ToCopyBackward0"


def _mlp_grads(device, low, autocast_on):
    r = np.random.default_rng(3)
    x = tg.tensor(r.standard_normal((8, 6)), dtype=tg.float32, device=device)
    w1 = tg.tensor(r.standard_normal((5, 6)) * 0.3, dtype=tg.float32, device=device,
                   requires_grad=True)
    w2 = tg.tensor(r.standard_normal((3, 5)) * 0.3, dtype=tg.float32, device=device,
                   requires_grad=True)
    target = tg.tensor([0, 1, 2, 0, 1, 2, 0, 1], device=device)
    with tg.autocast(device, dtype=low, enabled=autocast_on):
        h = F.linear(x, w1).relu()
        logits = F.linear(h, w2)
        loss = F.cross_entropy(logits, target)
    loss.backward()
    return logits, loss, w1.grad, w2.grad


@pytest.mark.parametrize("device,low,tol", [("cpu", tg.bfloat16, 3e-2),
                                            ("cuda", tg.float16, 5e-3),
                                            ("cuda", tg.bfloat16, 3e-2)])
def test_gradients_come_back_in_the_parameters_dtype(device, low, tol):
    logits, loss, g1, g2 = _mlp_grads(device, low, True)
    assert logits.dtype is low and loss.dtype is tg.float32
    assert g1.dtype is tg.float32 and g2.dtype is tg.float32
    _, ref_loss, r1, r2 = _mlp_grads(device, low, False)
    np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=tol, atol=tol)
    for g, r in ((g1, r1), (g2, r2)):
        np.testing.assert_allclose(g.cpu().numpy(), r.cpu().numpy(), rtol=tol * 4,
                                   atol=tol * np.abs(r.cpu().numpy()).max())


def test_backward_runs_in_the_forward_dtypes():
    a = make((3, 4), tg.float32, "cpu", grad=True)
    b = make((4, 2), tg.float32, "cpu", grad=True)
    with tg.autocast("cpu"):
        y = a @ b
    # the matmul's node saw bfloat16 operands, reached through recorded casts
    edges = [e[0] for e in y.grad_fn.next_functions]
    assert all(type(e).__name__ == "ToCopyBackward0" for e in edges)
    seen = []
    y.register_hook(lambda g: seen.append(g.dtype))
    y.float().sum().backward()
    assert seen == [tg.bfloat16]
    assert a.grad.dtype is tg.float32 and b.grad.dtype is tg.float32
    ga = a.grad.clone()
    a.grad = b.grad = None
    with tg.autocast("cpu"):  # a backward run inside the region is the same backward
        (a @ b).float().sum().backward()
    assert a.grad.dtype is tg.float32
    np.testing.assert_array_equal(a.grad.numpy(), ga.numpy())


def test_nesting_and_disabling():
    a = make((2, 2), tg.float32, "cpu")
    assert not tg.is_autocast_enabled("cpu")
    with tg.autocast("cpu"):
        assert tg.is_autocast_enabled("cpu") and not tg.is_autocast_enabled("cuda")
        assert tg.mm(a, a).dtype is tg.bfloat16
        with tg.autocast("cpu", enabled=False):
            assert not tg.is_autocast_enabled("cpu")
            assert tg.mm(a, a).dtype is tg.float32
        with tg.autocast("cpu", dtype=tg.float16):
            assert tg.get_autocast_dtype("cpu") is tg.float16
            assert tg.mm(a, a).dtype is tg.float16
        assert tg.get_autocast_dtype("cpu") is tg.bfloat16
        assert tg.mm(a, a).dtype is tg.bfloat16
    assert not tg.is_autocast_enabled("cpu") and tg.mm(a, a).dtype is tg.float32
    assert ac._threads_on == 0  # the one test listed ops make fails again: zero cost


def test_state_is_restored_on_an_exception():
    with pytest.raises(ZeroDivisionError), tg.autocast("cpu"):
        raise ZeroDivisionError
    assert not tg.is_autocast_enabled("cpu") and ac._threads_on == 0


def test_defaults_and_aliases():
    assert tg.get_autocast_dtype("cpu") is tg.bfloat16
    assert tg.get_autocast_dtype("cuda") is tg.float16
    assert tg.amp.autocast is tg.autocast
    assert tg.is_autocast_available("cuda") and not tg.is_autocast_available("xpu")
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is "
                                           r"deprecated"), tg.cuda.amp.autocast():
        assert tg.is_autocast_enabled("cuda") and tg.is_autocast_enabled()
    with pytest.warns(FutureWarning, match=r"torch.amp.autocast\('cpu', args...\)"), \
            tg.cpu.amp.autocast():
        assert tg.is_autocast_enabled("cpu")
    import tritongrad.cuda.amp as cuda_amp
    assert cuda_amp is tg.cuda.amp


def test_argument_errors():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        tg.autocast(tg.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xpu'"):
        tg.autocast("xpu")
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):
        region = tg.autocast("cpu", dtype=tg.float32)
    with region:
        assert not tg.is_autocast_enabled("cpu")


def test_decorator():
    @tg.autocast("cpu")
    def f(a, b):
        return tg.mm(a, b)

    a = make((2, 2), tg.float32, "cpu")
    assert f(a, a).dtype is tg.bfloat16
    assert tg.mm(a, a).dtype is tg.float32

    @tg.autocast("cpu")
    def recurse(n):  # each call's region is its own: the outer one survives the inner's exit
        if n:
            recurse(n - 1)
        return tg.mm(a, a).dtype

    assert recurse(2) is tg.bfloat16 and not tg.is_autocast_enabled("cpu")


def test_thread_local():
    a = make((2, 2), tg.float32, "cpu")
    seen = []
    with tg.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append(tg.mm(a, a).dtype))
        t.start()
        t.join()
        assert tg.mm(a, a).dtype is tg.bfloat16
    assert seen == [tg.float32]


def _cast_node(y):
    return y.grad_fn.next_functions[1][0]  # mm(x, w): the edge to w's cast


def test_weight_casts_are_cached_per_region():
    x = make((2, 3), tg.float32, "cpu")
    w = make((3, 3), tg.float32, "cpu", grad=True)
    with tg.autocast("cpu"):
        y1, y2 = tg.mm(x, w), tg.mm(x, w)
        assert _cast_node(y1) is _cast_node(y2)  # one cast of the weight, reused
        with tg.autocast("cpu"):                 # nested regions share the cache
            assert _cast_node(tg.mm(x, w)) is _cast_node(y1)
        x1, x2 = tg.mm(w, x.t()), tg.mm(w, x.t())
        assert x1.grad_fn.next_functions[0][0] is x2.grad_fn.next_functions[0][0]
        with tg.no_grad():
            w.add_(1.0)                          # a weight changed in place is cast again
        y3 = tg.mm(x, w)
        assert _cast_node(y3) is not _cast_node(y1)
        np.testing.assert_allclose(y3.float().detach().numpy(), (x.numpy() @ w.detach().numpy()),
                                   rtol=2e-2, atol=2e-2)
    assert ac._tls.cache == {}                   # cleared on leaving the outermost region
    with tg.autocast("cpu"):
        assert _cast_node(tg.mm(x, w)) is not _cast_node(y1)
    (y1.float().sum() + y2.float().sum()).backward()
    # (atol: a column sum near cancellation has a large relative bfloat16 error; the draws
    # depend on the tests run before this one)
    np.testing.assert_allclose(w.grad.numpy(), 2 * x.numpy().sum(0)[:, None].repeat(3, 1),
                               rtol=2e-2, atol=2e-2)


def test_what_is_not_cached():
    x = make((2, 3), tg.float32, "cpu", grad=True)
    w = make((3, 3), tg.float32, "cpu", grad=True)
    with tg.autocast("cpu", cache_enabled=False):
        assert _cast_node(tg.mm(x, w)) is not _cast_node(tg.mm(x, w))
    with tg.autocast("cpu"):
        h = w * 2                                # not a leaf
        assert tg.mm(x, h).grad_fn.next_functions[1][0] is not \
            tg.mm(x, h).grad_fn.next_functions[1][0]
        plain = make((3, 3), tg.float32, "cpu")  # does not require grad
        tg.mm(x, plain)
        assert len(ac._tls.cache) == 1           # x only

    w.grad = None
    with tg.autocast("cpu"):
        with tg.no_grad():                       # a cast made without history ...
            tg.mm(x, w)
        tg.mm(x, w).float().sum().backward()     # ... is not what a recorded op reuses
    assert w.grad is not None


def test_module_forward_under_autocast_on_cuda():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to("cuda")
    x = make((3, 4), tg.float32, "cuda")
    with tg.autocast("cuda"):
        out = model(x)
        loss = out.float().pow(2).mean()
    assert out.dtype is tg.float16
    loss.backward()
    assert all(p.grad.dtype is tg.float32 for p in model.parameters())


def test_no_warnings_outside_regions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = make((2, 2), tg.float32, "cpu")
        assert tg.mm(a, a).dtype is tg.float32


def test_recurrent_layers_run_in_the_lower_precision():
    # PyTorch's RNN layers are lower-precision ops under autocast (mkldnn/cudnn layers; on the
    # CPU its RNN's linears make it one): the output and the final state come out in the
    # region's dtype, gradients reach the weights. Its CPU GRU blends the float32 state with
    # the lower precision gates in float32: float32 out (tests/test_autocast_ops33.py)
    tg.manual_seed(0)
    for cls in (tg.nn.LSTM, tg.nn.GRU, tg.nn.RNN):
        m = cls(4, 3, batch_first=True)
        x = make((2, 5, 4), tg.float32, "cpu")
        with tg.autocast("cpu", dtype=tg.bfloat16):
            out, state = m(x)
        h = state[0] if cls is tg.nn.LSTM else state
        want_dtype = tg.float32 if cls is tg.nn.GRU else tg.bfloat16
        assert out.dtype is want_dtype and h.dtype is want_dtype
        out.float().sum().backward()
        assert m.weight_ih_l0.grad.dtype is tg.float32
        with tg.no_grad():
            want, _ = m(x)
        np.testing.assert_allclose(out.float().detach().numpy(), want.numpy(), atol=3e-2)
