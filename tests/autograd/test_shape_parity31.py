"""Shape and view ops against PyTorch's behaviour, found by a differential sweep: keyword names
of PyTorch's bindings, row-major results of flip/diag_embed/cat/stack, copies that must not
share memory (repeat/tile), cat/stack ``out=`` checks, 0-d inputs, duplicate dims.

Each behaviour is checked against NumPy float64 references or finite differences (no torch),
then, where torch is installed, against torch itself."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64

A = np.arange(24.0).reshape(2, 3, 4)


def row_major(t) -> bool:
    """Whether ``t``'s strides are the row-major strides of its shape."""
    want, acc = [], 1
    for n in reversed(t.shape):
        want.insert(0, acc)
        acc *= max(n, 1)
    return all(s == w for s, w, n in zip(t.stride(), want, t.shape) if n > 1)


# -- keyword names of PyTorch's bindings -----------------------------------------------------

KEYWORD_FORMS = [
    (lambda L, x: L.reshape(input=x, shape=(4, -1)), lambda a: a.reshape(4, -1)),
    (lambda L, x: x.reshape(shape=(6, 4)), lambda a: a.reshape(6, 4)),
    (lambda L, x: x.view(size=(3, 8)), lambda a: a.reshape(3, 8)),
    (lambda L, x: L.permute(input=x, dims=(2, 0, 1)), lambda a: a.transpose(2, 0, 1)),
    (lambda L, x: x.permute(dims=(1, 0, 2)), lambda a: a.transpose(1, 0, 2)),
    (lambda L, x: L.transpose(input=x, dim0=0, dim1=-1), lambda a: a.swapaxes(0, -1)),
    (lambda L, x: L.flatten(input=x, start_dim=1), lambda a: a.reshape(2, 12)),
    (lambda L, x: L.squeeze(input=x[:1], dim=0), lambda a: a[0]),
    (lambda L, x: L.unsqueeze(input=x, dim=1), lambda a: a[:, None]),
    (lambda L, x: L.broadcast_to(input=x, size=(2, 2, 3, 4)),
     lambda a: np.broadcast_to(a, (2, 2, 3, 4))),
    (lambda L, x: x[:, :1].expand(size=(2, 5, 4)), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    (lambda L, x: L.as_strided(input=x, size=(2, 2), stride=(2, 1), storage_offset=3),
     lambda a: np.lib.stride_tricks.as_strided(a.reshape(-1)[3:], (2, 2), (16, 8))),
    (lambda L, x: x.repeat(repeats=(1, 2, 1)), lambda a: np.tile(a, (1, 2, 1))),
    (lambda L, x: x.tile(2, 1), lambda a: np.tile(a, (2, 1))),
    (lambda L, x: x.tile(dims=(2,)), lambda a: np.tile(a, (2,))),
    (lambda L, x: L.tile(input=x, dims=(2, 1, 1, 1)), lambda a: np.tile(a, (2, 1, 1, 1))),
    (lambda L, x: x.split(split_size=2, dim=2), lambda a: np.split(a, 2, 2)),
    (lambda L, x: L.split_with_sizes(x, [1, 3], 2), lambda a: np.split(a, [1], 2)),
    (lambda L, x: L.tensor_split(x, sections=3, dim=2), lambda a: np.array_split(a, 3, 2)),
    (lambda L, x: L.tensor_split(x, indices=[1, 3], dim=2), lambda a: np.split(a, [1, 3], 2)),
    (lambda L, x: L.tensor_split(x, tensor_indices_or_sections=L.tensor([1]), dim=1),
     lambda a: np.split(a, [1], 1)),
]


@pytest.mark.parametrize("i", range(len(KEYWORD_FORMS)))
def test_keyword_forms_match_numpy(i):
    fn, ref = KEYWORD_FORMS[i]
    got, want = fn(tg, tg.tensor(A)), ref(A)
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(host(g), w)
    else:
        np.testing.assert_array_equal(host(got), want)


def test_keyword_forms_refuse_two_values_and_wrong_kinds():
    x = tg.tensor(A)
    for call, name in [(lambda: x.view(24, size=(24,)), "size"),
                       (lambda: x.reshape(24, shape=(24,)), "shape"),
                       (lambda: x.permute(0, 1, 2, dims=(0, 1, 2)), "dims"),
                       (lambda: x.repeat(1, 1, 1, repeats=(1, 1, 1)), "repeats"),
                       (lambda: x.tile(1, dims=(1,)), "dims")]:
        with pytest.raises(TypeError, match=f"multiple values for argument '{name}'"):
            call()
    with pytest.raises(TypeError, match="exactly one of"):
        tg.tensor_split(x, 2, sections=2)
    with pytest.raises(TypeError, match="exactly one of"):
        tg.tensor_split(x)
    with pytest.raises(TypeError, match="'sections' must be int, not list"):
        tg.tensor_split(x, sections=[1])
    with pytest.raises(TypeError, match="Tensor.split.. got an unexpected keyword"):
        x.split(split_size_or_sections=1)  # (the method's argument is split_size, as PyTorch's)
    assert len(tg.split(x, split_size_or_sections=1)) == 2
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "dims"'):
        x.tile()


def test_keyword_forms_keep_gradients():
    x = t64((2, 3, 4))
    assert_grads_match(lambda t: t.permute(dims=(2, 0, 1)), [x])
    assert_grads_match(lambda t: t.tile(2, 1), [x])
    assert_grads_match(lambda t: tg.tensor_split(t, indices=[1], dim=2)[1], [x])
    assert_grads_match(lambda t: tg.split_with_sizes(t, [1, 2], 1)[0], [x])


# -- copies that must not share the input's memory ---------------------------------------------

@pytest.mark.parametrize("make", [lambda x: x.repeat(1, 1, 1), lambda x: x.tile(1),
                                  lambda x: x.tile(()), lambda x: tg.tile(x, (1, 1))])
def test_repeat_and_tile_by_ones_copy(make):
    x = tg.tensor(A)
    r = make(x)
    r.mul_(0)
    np.testing.assert_array_equal(host(x), A)  # the input is untouched
    assert r._base is None and host(r).sum() == 0


# -- results laid out row-major, as PyTorch's ---------------------------------------------------

ROW_MAJOR = [
    (lambda t: t.flip(0, 2), lambda a: a[::-1, :, ::-1]),
    (lambda t: t.flip(1), lambda a: a[:, ::-1]),
    (lambda t: tg.fliplr(t), lambda a: a[:, ::-1]),
    (lambda t: tg.rot90(t, 1, (1, 2)), lambda a: np.rot90(a, 1, (1, 2))),
    (lambda t: tg.diag_embed(t[0], 1, 0, 1), None),
    (lambda t: tg.stack([t.transpose(1, 2), t.transpose(1, 2)]),
     lambda a: np.stack([a.transpose(0, 2, 1)] * 2)),
    (lambda t: tg.cat([t.transpose(0, 2), t.transpose(0, 2)], 1),
     lambda a: np.concatenate([a.transpose(2, 1, 0)] * 2, 1)),
]


def _diag_embed_ref(v, offset, d1, d2):
    """NumPy diag_embed of the last dim of ``v`` into planes (d1, d2) of side n + |offset|."""
    n = v.shape[-1]
    m = n + abs(offset)
    out = np.zeros(v.shape[:-1] + (m, m))
    i = np.arange(n)
    out[..., i + max(-offset, 0), i + max(offset, 0)] = v
    return np.moveaxis(out, (-2, -1), (d1, d2))


@pytest.mark.parametrize("i", range(len(ROW_MAJOR)))
def test_copies_are_row_major_and_view_flat(i, device):
    fn, ref = ROW_MAJOR[i]
    x = tg.tensor(A, device=device)
    got = fn(x)
    want = ref(A) if ref else _diag_embed_ref(A[0], 1, 0, 1)
    np.testing.assert_array_equal(host(got), want)
    if i != 3:  # (rot90 transposes a flip: a view, not row-major, in PyTorch too)
        assert got.is_contiguous() and row_major(got)
        np.testing.assert_array_equal(host(got.view(-1)), np.ascontiguousarray(want).ravel())


def test_row_major_copies_keep_gradients():
    x = t64((2, 3, 4))
    assert_grads_match(lambda t: t.flip(0, 2).view(-1), [x])
    assert_grads_match(lambda t: tg.diag_embed(t, -1, 0, 2).view(-1), [x])
    assert_grads_match(lambda t: tg.stack([t.transpose(1, 2)] * 2).view(-1), [x])
    assert_grads_match(lambda t: tg.cat([t.transpose(0, 2), t.transpose(0, 2)], 1).view(-1),
                       [x])


# -- cat / stack out= ---------------------------------------------------------------------------

def test_cat_and_stack_out_refusals():
    x = tg.tensor([1.0, 2.0])
    for f in (tg.cat, tg.stack, tg.hstack, tg.vstack):
        with pytest.raises(TypeError, match="input types can't be cast to the desired output "
                                            "type Int"):
            f([x, x], out=tg.empty(0, dtype=tg.int32))
    with pytest.raises(TypeError, match="type Double"):
        tg.cat([tg.tensor([1j])], out=tg.empty(1, dtype=tg.float64))
    buf = tg.arange(6.0)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        tg.cat([buf[:3]], out=buf[2:5])
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        tg.cat([x, x], out=x)
    tg.cat([buf[:3]], out=buf[3:])  # disjoint parts of one storage: allowed
    assert buf.tolist() == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]
    out = tg.empty(0, dtype=tg.float64)  # float into double: allowed, as PyTorch
    tg.stack([x, x], out=out)
    assert out.dtype is tg.float64 and out.tolist() == [[1.0, 2.0], [1.0, 2.0]]


def test_cat_of_only_empty_vectors_skips_the_dim_check():
    assert tuple(tg.cat([tg.zeros(0), tg.zeros(0)], 1).shape) == (0,)
    with pytest.raises(IndexError, match="imension out of range"):
        tg.cat([tg.zeros(0, 2), tg.zeros(0)], 3)  # (a 2-D input: dim is checked)
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        tg.stack([])


# -- 0-d inputs, duplicates, ambiguity ----------------------------------------------------------

def test_zero_dim_inputs():
    s = tg.tensor(3.0)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dim"):
        s.roll(1, 0)
    assert s.roll(1).item() == 3.0
    with pytest.raises(RuntimeError, match="Dimension specified as 0 but tensor has no dim"):
        s.unflatten(0, (1,))
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "dims"'):
        s.permute()
    for get, msg in [(lambda t: t.mT, "Tensor.mT is deprecated on 0-D"),
                     (lambda t: t.mH, "Tensor.mH is deprecated on 0-D"),
                     (lambda t: t.adjoint(), "adjoint.. is deprecated on 0-D")]:
        with pytest.warns(UserWarning, match=msg):
            r = get(s)
        assert r.shape == () and r.item() == 3.0
    z = tg.tensor(1 + 2j)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert z.mH.item() == 1 - 2j and z.mT.item() == 1 + 2j


def test_narrow_and_unflatten_errors():
    x = tg.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative"):
        x.narrow(0, 0, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.unflatten(1, (-1, -1))
    assert tuple(x.narrow(1, 3, 0).shape) == (2, 0)


def test_squeeze_refuses_repeated_dims():
    x = tg.zeros(1, 3, 1)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.squeeze((0, 0))
    with pytest.raises(RuntimeError, match="dim 2 appears multiple times"):
        x.squeeze((2, -1))
    assert tuple(x.squeeze((0, 2)).shape) == (3,)


def test_reshape_of_empty_with_ambiguous_minus_one():
    x = tg.zeros(0, 3)
    for shape in ((0, -1), (-1, 0)):
        with pytest.raises(RuntimeError, match="the unspecified dimension size -1 can be any "
                                               "value and is ambiguous"):
            x.reshape(shape)
    assert tuple(x.reshape(-1, 3).shape) == (0, 3)


# -- against torch --------------------------------------------------------------------------------

TORCH_CASES = {
    "reshape_kw": lambda L, x: L.reshape(input=x, shape=(4, -1)),
    "view_size": lambda L, x: x.view(size=(3, 8)),
    "permute_kw": lambda L, x: L.permute(input=x, dims=(2, 0, 1)),
    "permute_m_kw": lambda L, x: x.permute(dims=(2, 0, 1)),
    "transpose_kw": lambda L, x: L.transpose(input=x, dim0=0, dim1=2),
    "flatten_kw": lambda L, x: L.flatten(input=x, start_dim=0, end_dim=1),
    "squeeze_kw": lambda L, x: L.squeeze(input=x[:1], dim=0),
    "unsqueeze_kw": lambda L, x: L.unsqueeze(input=x, dim=-1),
    "broadcast_to_kw": lambda L, x: L.broadcast_to(input=x, size=(2, 2, 3, 4)),
    "expand_kw": lambda L, x: x[:, :1].expand(size=(2, 5, 4)),
    "as_strided_kw": lambda L, x: L.as_strided(input=x, size=(2, 2), stride=(2, 1),
                                              storage_offset=3),
    "repeat_kw": lambda L, x: x.repeat(repeats=(2, 1, 1)),
    "tile_m": lambda L, x: x.tile(2, 1),
    "split_m": lambda L, x: x.split(split_size=3, dim=2),
    "split_with_sizes": lambda L, x: L.split_with_sizes(x, [1, 3], 2),
    "tensor_split_sections": lambda L, x: L.tensor_split(x, sections=3, dim=2),
    "tensor_split_indices": lambda L, x: L.tensor_split(x, indices=[1, 3], dim=2),
    "flip": lambda L, x: x.flip(0, 2),
    "diag_embed": lambda L, x: L.diag_embed(x, -1, 0, 2),
    "stack_t": lambda L, x: L.stack([x.mT, x.mT]),
    "cat_t": lambda L, x: L.cat([x.mT, x.mT], 1),
    "rot90": lambda L, x: L.rot90(x, 1, (1, 2)),
    "tile_ones": lambda L, x: x.tile(1),
    "cat_empty_only": lambda L, x: L.cat([L.zeros(0), L.zeros(0)], 1),
    "squeeze_dup": lambda L, x: x[:1].squeeze((0, 0)),
    "roll_0d": lambda L, x: x[0, 0, 0].roll(1, 0),
    "unflatten_0d": lambda L, x: x[0, 0, 0].unflatten(0, (1,)),
    "cat_out_int": lambda L, x: L.cat([x.detach()], out=L.empty(0, dtype=L.int32)),
    "stack_out_int": lambda L, x: L.stack([x.detach()], out=L.empty(0, dtype=L.int32)),
    "cat_out_alias": lambda L, x: (lambda b: L.cat([b[:3]], out=b[2:5]))(L.arange(6.0)),
    "stack_empty": lambda L, x: L.stack([]),
    "reshape_ambiguous": lambda L, x: x[:0].reshape(0, -1),
    "narrow_negative": lambda L, x: x.narrow(0, 0, -1),
    "unflatten_two_inferred": lambda L, x: x.unflatten(1, (-1, -1)),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    fn = TORCH_CASES[name]

    def run(L):
        x = L.tensor(A).requires_grad_(True)
        try:
            out = fn(L, x)
        except Exception as e:  # noqa: BLE001 - the error itself is compared
            return type(e), None, None
        outs = out if isinstance(out, (tuple, list)) else (out,)
        meta = [(tuple(o.shape), tuple(o.stride()) if o.numel() > 1 else None,
                 o.is_contiguous(), o._base is x) for o in outs]
        vals = [o.detach().numpy() for o in outs]
        grad = None
        if all(o.requires_grad for o in outs):
            loss = sum((o * (1 + L.arange(float(o.numel())).double().view(o.shape))).sum()
                       for o in outs)
            grad = L.autograd.grad(loss, x)[0].numpy()
        return vals, meta, grad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = run(torch), run(tg)
    if isinstance(want[0], type) or isinstance(got[0], type):
        assert got[0] == want[0], (got[0], want[0])
        return
    assert got[1] == want[1]  # shapes, strides, contiguity, view-ness
    for g, w in zip(got[0], want[0]):
        np.testing.assert_array_equal(g, w)
    if want[2] is not None:
        np.testing.assert_allclose(got[2], want[2])
