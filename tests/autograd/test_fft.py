"""Discrete Fourier transforms (autograd/ops/fft.py, tritongrad.fft): values and dtypes against
numpy.fft in float64 (the hermitian N-D transforms, which NumPy lacks, against their formulas
in NumPy's), gradients and second derivatives by gradcheck/gradgradcheck for real and
complex inputs (n/s trimming and padding, several dims, each norm), PyTorch's errors, on the
CPU and the (emulated) CUDA device (a host round trip)."""

import numpy as np
import pytest

import tritongrad as tg

F = tg.fft
gradcheck, gradgradcheck = tg.autograd.gradcheck, tg.autograd.gradgradcheck
rng = np.random.default_rng(7)
_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def real(*shape):
    return rng.standard_normal(shape)


def cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def t(a, device="cpu", requires_grad=False):
    return tg.tensor(a, device=device, requires_grad=requires_grad)


def host(x):
    return x.detach().cpu().numpy()


def close(x, ref, tol=1e-10):
    assert tuple(x.shape) == np.shape(ref), (tuple(x.shape), np.shape(ref))
    np.testing.assert_allclose(host(x), ref, rtol=tol, atol=tol)


# NumPy's hfftn/ihfftn: the hermitian transforms are the real ones of the conjugate under the
# other direction's scaling
def np_hfftn(a, s=None, axes=None, norm=None):
    return np.fft.irfftn(np.conj(a), s, axes, norm=_DUAL[norm])


def np_ihfftn(a, s=None, axes=None, norm=None):
    return np.conj(np.fft.rfftn(a, s, axes, norm=_DUAL[norm]))


# (name, input kind, kwargs, NumPy's reference): the transforms with n/s smaller and larger
# than the input, along several dims, each norm
ONE_DIM = [
    (name, kind, {"n": n, "dim": dim, "norm": norm})
    for name, kinds in [("fft", "rc"), ("ifft", "rc"), ("rfft", "r"), ("ihfft", "r"),
                        ("irfft", "c"), ("hfft", "c")]
    for kind in kinds
    for n, dim, norm in [(None, -1, None), (3, 0, "forward"), (7, 1, "ortho"), (6, -1, "backward")]
]
N_DIM = [
    (name, kind, kw)
    for name, kinds in [("fftn", "rc"), ("ifftn", "rc"), ("rfftn", "r"), ("irfftn", "c"),
                        ("hfftn", "c"), ("ihfftn", "r")]
    for kind in kinds
    for kw in [{}, {"s": (3, 6), "norm": "forward"}, {"s": (2, -1, 5), "norm": "ortho"},
               {"s": (4,), "dim": (0,), "norm": "backward"}, {"s": (5, 2), "dim": (2, 0),
                                                              "norm": "backward"}]
] + [(name, kind, {"s": (3, 4), "norm": "ortho"}) for name, kinds in [
    ("fft2", "rc"), ("ifft2", "rc"), ("rfft2", "r"), ("irfft2", "c"), ("hfft2", "c"),
    ("ihfft2", "r")] for kind in kinds]


def reference(name, a, kw):
    if name in ("fft", "ifft", "rfft", "ihfft", "irfft", "hfft"):
        return getattr(np.fft, name)(a, kw["n"], kw["dim"], kw["norm"])
    axes = kw.get("dim")
    if name.endswith("2"):
        name, axes = name[:-1] + "n", (-2, -1) if axes is None else axes
    fn = {"hfftn": np_hfftn, "ihfftn": np_ihfftn}.get(name) or getattr(np.fft, name)
    s = kw.get("s")
    if s is not None and -1 in s:  # (NumPy has no -1: the input's size, or 2 (m - 1) in c2r)
        axes_ = range(a.ndim - len(s), a.ndim) if axes is None else axes
        s = [(2 * (a.shape[d] - 1) if name in ("irfftn", "hfftn") and i == len(s) - 1 else
              a.shape[d]) if v == -1 else v for i, (v, d) in enumerate(zip(s, axes_))]
    if s is not None and axes is None:  # (NumPy 2 wants the axes with s)
        axes = tuple(range(a.ndim - len(s), a.ndim))
    return fn(a, s, axes, kw.get("norm"))


def case_id(case):
    name, kind, kw = case
    return f"{name}-{kind}-" + ",".join(f"{k}={v}" for k, v in kw.items())


# -- values ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ONE_DIM + N_DIM, ids=case_id)
def test_values_match_numpy(case):
    name, kind, kw = case
    a = (real if kind == "r" else cplx)(3, 4, 5)
    out = getattr(F, name)(t(a), **kw)
    ref = reference(name, a, kw)
    assert out.dtype is (tg.complex128 if np.iscomplexobj(ref) else tg.float64)
    close(out, ref)


def test_values_on_the_device(device):
    a, z = real(3, 6), cplx(3, 4)
    close(F.fft(t(a, device), n=4, dim=0), np.fft.fft(a, 4, 0))
    close(F.ifft(t(z, device), n=7, norm="ortho"), np.fft.ifft(z, 7, norm="ortho"))
    close(F.rfft2(t(a, device), s=(2, 5)), np.fft.rfft2(a, (2, 5), (0, 1)))
    close(F.irfftn(t(z, device), s=(4, 5), norm="forward"),
          np.fft.irfftn(z, (4, 5), (0, 1), norm="forward"))
    close(F.hfft(t(z, device), n=5), np.fft.hfft(z, 5))
    close(F.ihfft(t(a, device)), np.fft.ihfft(a))
    assert F.fft(t(a, device)).device.type == device


def test_result_dtypes_keep_the_precision():
    x32 = tg.tensor(real(2, 4), dtype=tg.float32)
    z64 = tg.tensor(cplx(2, 4), dtype=tg.complex64)
    for fn in (F.fft, F.ifft, F.rfft, F.ihfft, F.fft2, F.fftn, F.rfftn, F.ihfftn):
        assert fn(x32).dtype is tg.complex64, fn.__name__
    for fn in (F.fft, F.ifft, F.fft2, F.ifftn):
        assert fn(z64).dtype is tg.complex64, fn.__name__
    for fn in (F.irfft, F.hfft, F.irfft2, F.irfftn, F.hfftn):
        assert fn(z64).dtype is tg.float32, fn.__name__
        assert fn(x32).dtype is tg.float32, fn.__name__  # real input: as complex64
    np.testing.assert_allclose(host(F.fft(x32)), np.fft.fft(host(x32).astype(np.float64)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(F.irfft(z64, 5)), np.fft.irfft(host(z64).astype(
        np.complex128), 5), rtol=1e-5, atol=1e-5)
    # integers and bools take the default dtype first
    assert F.fft(tg.arange(4)).dtype is tg.complex64
    assert F.rfft(tg.tensor([True, False, True])).dtype is tg.complex64
    assert F.irfft(tg.arange(4)).dtype is tg.float32
    close(F.fft(tg.arange(4)), np.fft.fft(np.arange(4)), tol=1e-6)
    previous = tg.get_default_dtype()
    tg.set_default_dtype(tg.float64)
    try:
        assert F.rfft(tg.arange(4)).dtype is tg.complex128
    finally:
        tg.set_default_dtype(previous)


def test_edge_shapes():
    z = cplx(2, 3)
    # fftn over no dims is a (complex) copy; of a 0-d tensor, over its no dims
    close(F.fftn(t(z), dim=()), z)
    close(F.fftn(tg.tensor(2.0, dtype=tg.float64)), np.complex128(2.0))
    # an empty dim that is not transformed
    assert tuple(F.fft(tg.zeros(3, 0), n=2, dim=0).shape) == (2, 0)
    # a size-1 c2r: n = 1 given explicitly
    close(F.irfft(t(z), n=1), np.fft.irfft(z, 1))
    # s as one int, dim as one int
    a = real(3, 4)
    close(F.fftn(t(a), s=3), np.fft.fftn(a, (3,), (-1,)))
    close(F.rfftn(t(a), dim=0), np.fft.rfftn(a, axes=(0,)))


# -- gradients -----------------------------------------------------------------------------------

# (the values cover the rest: here each norm's scaling, n/s below and above the input's size,
# and dims out of order, per function and input kind)
GRADIENT_CASES = [c for c in ONE_DIM + N_DIM
                  if c[2].get("norm") != "backward" or len(c[2].get("s", ())) > 1]


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=case_id)
def test_gradients(case):
    name, kind, kw = case
    shape = (2, 3, 4) if name.endswith("n") else (3, 4)
    if name.endswith("n") and "dim" not in kw and kw.get("s") is not None and len(kw["s"]) == 2:
        shape = (3, 4)  # (2-D s over the last dims: the leading dim adds nothing)
    if kind == "r":
        x = tg.tensor(real(*shape), dtype=tg.float64, requires_grad=True)
    else:
        x = tg.tensor(cplx(*shape), dtype=tg.complex128, requires_grad=True)
    fn = getattr(F, name)

    def f(x):
        return fn(x, **kw)

    assert gradcheck(f, (x,), eps=1e-6, atol=1e-6, rtol=1e-5)
    if kw.get("norm") == "ortho":  # (one case per function: the rules record what they run)
        assert gradgradcheck(f, (x,), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_gradients_on_the_device(device):
    # (the CPU's are gradchecked above; here the same backward runs on the device, one case
    # per primitive, and must give the CPU's gradients)
    cases = [(F.fft, cplx(3, 4), {"n": 2, "norm": "ortho"}), (F.rfft, real(3, 4), {"n": 5}),
             (F.irfft, cplx(3, 4), {"n": 6, "norm": "forward", "dim": 0})]
    for fn, a, kw in cases:
        grads, g = [], None
        for dev in ("cpu", device):
            x = t(a, dev, requires_grad=True)
            y = fn(x, **kw)
            g = (cplx if y.is_complex() else real)(*y.shape) if g is None else g
            grads.append(host(tg.autograd.grad(y, x, t(g, dev))[0]))
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-12)


def test_hermitian_gradients_by_hand():
    # irfft(X, n)[j] = (1/n) sum_k w_k Re(X_k e^(2 pi i jk/n)) with w_k = 2 for the bins whose
    # mirror image is dropped (k = 1 .. n - (n//2 + 1)), else 1 (and the imaginary parts of the
    # DC and, for even n, Nyquist bins ignored); so the gradient of sum(g * y) is
    # (w_k / n) sum_j g_j e^(-2 pi i jk/n) = (w_k / n) rfft(g)_k, PyTorch's convention (dL/dRe +
    # i dL/dIm)
    for n in (6, 7):
        m = n // 2 + 1
        z = tg.tensor(cplx(m), requires_grad=True)
        g = real(n)
        (F.irfft(z, n) * tg.tensor(g)).sum().backward()
        w = np.ones(m)
        w[1:n - m + 1] = 2
        np.testing.assert_allclose(host(z.grad), w / n * np.fft.rfft(g), rtol=1e-12,
                                   atol=1e-12)
    # rfft's gradient: Re of the unscaled inverse of the zero-padded gradient
    x = tg.tensor(real(5), requires_grad=True)
    gc = cplx(3)
    F.rfft(x).backward(tg.tensor(gc))
    full = np.concatenate([gc, np.zeros(2)])
    np.testing.assert_allclose(host(x.grad), np.real(np.fft.ifft(full) * 5), rtol=1e-12,
                               atol=1e-12)


def test_grad_fn_names_are_pytorchs():
    x = tg.tensor(real(4), requires_grad=True)
    z = tg.tensor(cplx(4), requires_grad=True)
    assert type(F.fft(z).grad_fn).__name__ == "FftC2CBackward0"
    assert type(F.fft(x).grad_fn).__name__ == "FftR2CBackward0"
    assert type(F.rfft(x).grad_fn).__name__ == "FftR2CBackward0"
    assert type(F.irfft(z).grad_fn).__name__ == "FftC2RBackward0"
    assert type(F.ifft(x).grad_fn).__name__ == "ConjBackward0"


# -- frequencies and shifts ------------------------------------------------------------------------

def test_fftfreq_and_rfftfreq(device):
    close(F.fftfreq(5, device=device), np.fft.fftfreq(5), tol=1e-7)
    close(F.fftfreq(6, 0.5, dtype=tg.float64, device=device), np.fft.fftfreq(6, 0.5))
    close(F.rfftfreq(7, d=2.0, dtype=tg.float64, device=device), np.fft.rfftfreq(7, 2.0))
    f = F.fftfreq(4, device=device)
    assert f.dtype is tg.float32 and f.device.type == device and not f.requires_grad
    assert F.rfftfreq(4, requires_grad=True).requires_grad
    assert F.fftfreq(3, dtype=tg.complex64).dtype is tg.complex64
    assert tuple(F.fftfreq(0).shape) == (0,)
    out = tg.empty(5)
    assert F.fftfreq(5, out=out) is out
    close(out, np.fft.fftfreq(5), tol=1e-7)
    with pytest.raises(RuntimeError, match="fftfreq requires a floating point or complex dtype"):
        F.fftfreq(5, dtype=tg.int64)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        F.rfftfreq(-1)


def test_fftshift_and_ifftshift(device):
    a = np.arange(30.0).reshape(5, 6)
    x = t(a, device, requires_grad=True)
    close(F.fftshift(x), np.fft.fftshift(a))
    close(F.ifftshift(x), np.fft.ifftshift(a))
    close(F.fftshift(x, dim=0), np.fft.fftshift(a, axes=0))
    close(F.ifftshift(x, dim=(-1,)), np.fft.ifftshift(a, axes=(-1,)))
    close(F.ifftshift(F.fftshift(x)), a)
    g = real(5, 6)
    F.fftshift(x).backward(t(g, device))
    close(x.grad, np.fft.ifftshift(g))  # the gradient is shifted back
    assert F.fftshift(tg.arange(5)).tolist() == np.fft.fftshift(np.arange(5)).tolist()


# -- arguments -----------------------------------------------------------------------------------

def test_out():
    a = real(3, 4)
    out = tg.empty(3, 4, dtype=tg.complex128)
    assert F.fft(t(a), out=out) is out
    close(out, np.fft.fft(a))
    out = tg.empty(3, 6, dtype=tg.float64)
    assert F.irfft(t(cplx(3, 4)), out=out) is out
    with pytest.raises(RuntimeError, match="fft expects a complex output tensor, but got Double"):
        F.fft(t(a), out=tg.empty(3, 4, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="irfft expects a floating point output tensor, but "
                                           "got ComplexFloat"):
        F.irfft(t(cplx(3, 4)), out=tg.empty(3, 6, dtype=tg.complex64))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        F.fft(t(a, requires_grad=True), out=tg.empty(3, 4, dtype=tg.complex128))


@pytest.mark.parametrize("call,error,match", [
    (lambda x, z: F.fft(x, norm="xyz"), RuntimeError, 'Invalid normalization mode: "xyz"'),
    (lambda x, z: F.rfft(z), RuntimeError, ("rfft expects a real input tensor, but got "
                                           "ComplexDouble")),
    (lambda x, z: F.ihfft2(z), RuntimeError, "ihfftn expects a real input tensor"),
    (lambda x, z: F.fft(x.half()), RuntimeError, "Unsupported dtype Half"),
    (lambda x, z: F.rfft(x.bfloat16()), RuntimeError, "Unsupported dtype BFloat16"),
    (lambda x, z: F.fft(x, n=0), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x, z: F.irfft(z[:, :1]), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda x, z: F.fft(tg.zeros(0)), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda x, z: F.fftn(x, s=(0, 2)), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda x, z: F.fftn(x, dim=(0, -2)), RuntimeError, "FFT dims must be unique"),
    (lambda x, z: F.fftn(x, s=(3,), dim=(0, 1)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda x, z: F.fftn(x, s=(3, 2, 1)), RuntimeError,
     "Got shape with 3 values but input tensor only has 2 dimensions."),
    (lambda x, z: F.rfftn(x, dim=()), RuntimeError, "rfftn must transform at least one axis"),
    (lambda x, z: F.irfftn(z, s=()), RuntimeError, "irfftn must transform at least one axis"),
    (lambda x, z: F.fft(tg.tensor(1.0)), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    (lambda x, z: F.fft(x, dim=2), IndexError, "out of range"),
    (lambda x, z: F.fft2(x[0]), IndexError, "out of range"),
    (lambda x, z: F.fft([1.0, 2.0]), TypeError, "argument 'input' \\(position 1\\) must be Tensor, not list"),
    (lambda x, z: F.fft(x, 2.5), TypeError, r"argument 'n' \(position 2\) must be int"),
])
def test_errors(call, error, match):
    x, z = t(real(3, 4)), t(cplx(3, 4))
    with pytest.raises(error, match=match):
        call(x, z)


def test_autocast_runs_the_transforms_in_float32():
    # (PyTorch's autocast lists the FFTs as float32 ops: half inputs are cast, not refused)
    x = tg.tensor(real(4), dtype=tg.bfloat16)
    with tg.autocast("cpu"):
        assert F.rfft(x).dtype is tg.complex64
        assert F.fft2(x.reshape(2, 2)).dtype is tg.complex64
        assert F.irfft(x).dtype is tg.float32
        with pytest.raises(RuntimeError, match="Unsupported dtype BFloat16"):
            F.hfft2(x.reshape(2, 2))  # (not in PyTorch's lists: refused there too)


def test_the_namespace():
    from tritongrad import fft
    assert fft is tg.fft and "fft" in tg.__all__
    assert set(fft.__all__) == {
        "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
        "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq",
        "rfftfreq", "fftshift", "ifftshift"}
    assert all(callable(getattr(fft, n)) for n in fft.__all__)
    assert "rfft" not in tg.__all__ and "fftshift" not in tg.__all__  # torch.fft only


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "hfft", "ihfft"])
def test_forward_mode_ad_of_the_transforms(name):
    # each transform is linear: the tangent's is the same transform of the input's tangent
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((4, 6)), requires_grad=True)
    z = tg.tensor(rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6)),
                  requires_grad=True)
    fn, arg = {
        "fft": (lambda v: tg.view_as_real(tg.fft.fft(v)), z),
        "rfft": (lambda v: tg.view_as_real(tg.fft.rfft(v)), x),
        "irfft": (lambda v: tg.fft.irfft(v), z),
        "fft2": (lambda v: tg.view_as_real(tg.fft.fft2(v, norm="ortho")), z),
        "hfft": (lambda v: tg.fft.hfft(v, n=7), z),
        "ihfft": (lambda v: tg.view_as_real(tg.fft.ihfft(v)), x),
    }[name]
    assert tg.autograd.gradcheck(fn, (arg,), check_forward_ad=True)
