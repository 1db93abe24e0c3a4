"""Which ops return views and which return new tensors, as PyTorch's "Tensor Views" page lists
them: a write through a view reaches its base, a write into a copy does not (a copy that
should be a view, or a view that should be a copy, gives silently wrong values)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nn.functional as F

# (fn of (lib, x) for x = arange(12.).reshape(3, 4))
VIEWS = {
    "basic slice": lambda T, x: x[1:, ::2],
    "select": lambda T, x: x[-1],
    "None and ...": lambda T, x: x[None, ..., 1],
    "adjoint (real)": lambda T, x: x.adjoint(),
    "H (real)": lambda T, x: x.H,
    "mH (real)": lambda T, x: x.mH,
    "mT": lambda T, x: x.mT,
    "T": lambda T, x: x.T,
    "conj (real: itself)": lambda T, x: x.conj(),
    "as_strided": lambda T, x: x.as_strided((2, 2), (1, 2)),
    "detach": lambda T, x: x.detach(),
    "diagonal": lambda T, x: T.diagonal(x, 1),
    "expand": lambda T, x: x[:1].expand(3, 4),
    "movedim": lambda T, x: x.movedim(0, 1),
    "narrow": lambda T, x: x.narrow(1, 1, 2),
    "unflatten": lambda T, x: x.unflatten(1, (2, 2)),
    "unfold": lambda T, x: x.unfold(1, 2, 1),
    "unbind": lambda T, x: x.unbind(1)[2],
    "split": lambda T, x: x.split([1, 2])[1],
    "tensor_split": lambda T, x: T.tensor_split(x, 2, dim=1)[1],
    "chunk": lambda T, x: x.chunk(3)[1],
    "view": lambda T, x: x.view(2, 6),
    "reshape (viewable)": lambda T, x: x.reshape(6, 2),
    "flatten": lambda T, x: x.flatten(),
    "view_as_real": lambda T, x: T.view_as_real(x),
    "real": lambda T, x: x.real,
    "imag": lambda T, x: x.imag,
}
COPIES = {
    "x[True]": lambda T, x: x[True],
    "x[False] (empty)": lambda T, x: x[False],
    "index tensor": lambda T, x: x[T.tensor([0, 1])],
    "mask": lambda T, x: x[x.real > 5],
    "pad by zero": lambda T, x: F.pad(x, (0, 0)) if T is tg else T.nn.functional.pad(x, (0, 0)),
    "pad cropping only": lambda T, x: (F if T is tg else T.nn.functional).pad(x, (-1, 0)),
    "replicate pad by zero": lambda T, x: (F if T is tg else T.nn.functional).pad(
        x[None].real, (0, 0), mode="replicate"),
    "clone": lambda T, x: x.clone(),
    "contiguous of a transpose": lambda T, x: x.t().contiguous(),
    "reshape (not viewable)": lambda T, x: x.t().reshape(12),
}
COMPLEX = {"view_as_real", "real", "imag"}


def _base(lib, name):
    x = lib.arange(12.0).reshape(3, 4)
    return x.to(lib.complex64) if name in COMPLEX else x


def _root(x):
    return x if x._base is None else x._base


def _writes_through(lib, fn, name) -> bool:
    x = _base(lib, name)
    before = x.clone()
    y = fn(lib, x)
    if y.numel():
        with lib.no_grad():
            y.fill_(99)
    return not bool((before == x).all())


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_memory(name):
    x = _base(tg, name)
    y = VIEWS[name](tg, x)
    if name not in ("detach", "conj (real: itself)"):  # (no _base, as PyTorch's)
        assert y._base is _root(x)
    assert _writes_through(tg, VIEWS[name], name)


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_do_not_alias(name):
    x = _base(tg, name)
    y = COPIES[name](tg, x)
    assert y._base is not _root(x)
    assert not _writes_through(tg, COPIES[name], name)


def test_x_true_is_an_index_copy_with_pytorchs_shapes():
    x = tg.arange(6.0).reshape(2, 3).requires_grad_()
    y = x[True]
    assert y.shape == (1, 2, 3) and type(y.grad_fn).__name__ == "IndexBackward0"
    assert x[False].shape == (0, 2, 3) and x[None, True].shape == (1, 1, 2, 3)
    (y * tg.arange(6.0).reshape(1, 2, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6.0).reshape(2, 3))


def test_matrix_property_errors_and_nodes():
    x = tg.ones(2, 3, requires_grad=True)
    assert type(x.H.grad_fn).__name__ == "TransposeBackward0"
    assert type(x.mT.grad_fn).__name__ == "TransposeBackward0"
    with pytest.raises(RuntimeError, match=r"tensor.H is only supported on matrices \(2-D "
                                           r"tensors\). Got 1-D tensor.$"):
        tg.ones(3).H
    with pytest.raises(RuntimeError, match="Got 3-D tensor. For batches of matrices, consider "
                                           "using tensor.mH"):
        tg.ones(2, 3, 4).H
    for name in ("mT", "mH"):
        with pytest.raises(RuntimeError, match=f"tensor.{name} is only supported on matrices or "
                                               f"batches of matrices. Got 1-D tensor."):
            getattr(tg.ones(3), name)
    z = tg.ones(2, 3, dtype=tg.complex64, requires_grad=True)
    assert type(z.mH.grad_fn).__name__ == "ConjBackward0"


def test_T_warns_off_matrices_as_pytorch():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tg.ones(2, 3).T.shape == (3, 2)
    with pytest.warns(UserWarning, match="on tensors of dimension other than 2"):
        assert tg.ones(2, 3, 4).T.shape == (4, 3, 2)
    with pytest.warns(UserWarning, match="deprecated on 0-D tensors"):
        tg.tensor(1.0).T


def test_against_torch():
    torch = pytest.importorskip("torch")
    for table in (VIEWS, COPIES):
        for name, fn in table.items():
            assert _writes_through(tg, fn, name) == _writes_through(torch, fn, name), name
