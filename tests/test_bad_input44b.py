"""Bad input gets PyTorch's exception type and a clear message naming the op (and valid input
still works): in-place writes into expanded tensors, soft_margin_loss's shapes, bool scans,
unknown keywords, sort's flags, linspace's bounds, empty LDL factorizations, and the error
types of slice_scatter, kthvalue, indexing by strings, narrow, layout= and arange."""

import warnings

import pytest

import tritongrad as tg

F = tg.nn.functional
_OVERLAP = "more than one element of the written-to tensor"


def _expanded():
    return tg.zeros(1, 3).expand(3, 3)


# -- in-place writes into an expanded tensor ---------------------------------------------------

@pytest.mark.parametrize("write", [
    lambda t: t.index_add_(1, tg.tensor([0]), tg.ones(3, 1)),
    lambda t: t.index_copy_(1, tg.tensor([0]), tg.ones(3, 1)),
    lambda t: t.index_reduce_(1, tg.tensor([0]), tg.ones(3, 1), "prod"),
    lambda t: t.scatter_(1, tg.tensor([[0]]), tg.ones(3, 1)),
    lambda t: t.scatter_add_(1, tg.tensor([[0]]), tg.ones(3, 1)),
    lambda t: t.masked_scatter_(tg.tensor([True, False, False]), tg.ones(3, 3)),
    lambda t: t.put_(tg.tensor([0]), tg.ones(1)),
], ids=["index_add_", "index_copy_", "index_reduce_", "scatter_", "scatter_add_",
        "masked_scatter_", "put_"])
def test_writes_into_expanded_tensor_refused(write):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (an error, not index_put_'s deprecation warning)
        with pytest.raises(RuntimeError, match=_OVERLAP):
            write(_expanded())


def test_index_add_and_copy_still_write_dense_tensors():
    t = tg.zeros(3, 3).index_add_(1, tg.tensor([0, 0]), tg.ones(3, 2))
    assert t[:, 0].tolist() == [2.0, 2.0, 2.0]
    t = tg.zeros(3, 3).index_copy_(1, tg.tensor([2]), tg.ones(3, 1))
    assert t[:, 2].tolist() == [1.0, 1.0, 1.0]


def test_index_fill_of_expanded_tensor_warns_and_fills_each_location():
    a = tg.arange(3.).reshape(3, 1).expand(3, 3)
    with pytest.warns(UserWarning, match="Use of index_fill_ on expanded tensors is deprecated"):
        a.index_fill_(1, tg.tensor([0]), 9.0)
    assert a.tolist() == [[9.0] * 3] * 3  # (every row's one location has an alias at col 0)
    b = tg.arange(3.).reshape(1, 3).expand(2, 3)
    with pytest.warns(UserWarning, match="index_fill_"):
        b.index_fill_(1, tg.tensor([1]), tg.tensor(7.0))
    assert b.tolist() == [[0.0, 7.0, 2.0]] * 2


@pytest.mark.parametrize("name,diagonal,want", [
    ("tril_", 0, [1.0, 0.0, 0.0]), ("tril_", 1, [1.0, 1.0, 0.0]), ("tril_", -1, [0.0] * 3),
    ("triu_", 0, [0.0, 0.0, 1.0]), ("triu_", -1, [0.0, 1.0, 1.0]),
])
def test_tril_triu_of_expanded_tensor_zero_a_location_any_alias_drops(name, diagonal, want):
    a = tg.ones(1, 3).expand(3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (allowed silently, as PyTorch's)
        getattr(a, name)(diagonal)
    assert a.tolist() == [want] * 3


def test_tril_of_dense_tensor_unchanged():
    x = tg.ones(3, 3, requires_grad=True)
    y = x * 1
    y.tril_()
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]


# -- soft_margin_loss: the target broadcasts to input, not the reverse -------------------------

@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_soft_margin_loss_refuses_input_smaller_than_target(reduction):
    with pytest.raises(RuntimeError, match=r"soft_margin_loss: output with shape \[3\] doesn't "
                                           r"match the broadcast shape \[2, 3\]"):
        F.soft_margin_loss(tg.ones(3), tg.ones(2, 3), reduction=reduction)
    out = F.soft_margin_loss(tg.ones(2, 3), tg.ones(3), reduction=reduction)  # (allowed)
    assert tuple(out.shape) == ((2, 3) if reduction == "none" else ())


# -- bool scans --------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_into_bool_not_implemented(op):
    fn = getattr(tg, op)
    with pytest.raises(NotImplementedError, match=f'"{op}_out_cpu" not implemented for '
                                                  f"'Bool'"):
        fn(tg.ones(3), 0, out=tg.empty(3, dtype=tg.bool))
    with pytest.raises(NotImplementedError, match=f"{op}_out_cpu"):
        fn(tg.ones(3), 0, dtype=tg.bool)
    assert fn(tg.ones(3), 0, out=tg.empty(3, dtype=tg.int32)).dtype is tg.int32
    assert fn(tg.ones(3, dtype=tg.bool), 0).dtype is tg.int64  # (a bool input is fine)


# -- unknown keywords --------------------------------------------------------------------------

def test_uniform_refuses_unknown_keyword():
    with pytest.raises(TypeError, match="uniform_\\(\\) got an unexpected keyword argument "
                                        "'foo'"):
        tg.ones(3).uniform_(foo=1)
    x = tg.ones(100).uniform_(**{"from": 2.0, "to": 3.0})
    assert bool(((x >= 2) & (x < 3)).all())


def test_type_keywords():
    t = tg.ones(3)
    with pytest.raises(TypeError, match="type\\(\\) got an unexpected keyword argument 'foo'"):
        t.type(tg.float64, foo=1)
    assert t.type(tg.float64, non_blocking=True).dtype is tg.float64
    assert t.type(dtype=tg.float64, memory_format=tg.contiguous_format).dtype is tg.float64
    with pytest.warns(UserWarning, match="This overload of type is deprecated"):
        assert t.type(tg.float64, **{"async": True}).dtype is tg.float64


# -- sort's flags ------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda t: tg.sort(t, stable="x"), lambda t: t.sort(stable=1),
    lambda t: tg.argsort(t, stable="x"), lambda t: tg.sort(t, descending="x"),
])
def test_sort_flags_must_be_bool(call):
    with pytest.raises(TypeError, match=r"(arg)?sort\(\): argument '(stable|descending)' must "
                                        r"be bool"):
        call(tg.tensor([3.0, 1.0, 2.0]))


def test_sort_valid_flags():
    t = tg.tensor([3.0, 1.0, 2.0])
    assert tg.sort(t, stable=None).indices.tolist() == [1, 2, 0]
    assert tg.sort(t, stable=True, descending=True).values.tolist() == [3.0, 2.0, 1.0]
    assert tg.argsort(t, stable=False).tolist() == [1, 2, 0]


# -- linspace's bounds -------------------------------------------------------------------------

@pytest.mark.parametrize("start,end,bad", [
    (tg.tensor([0.0]), 1, "start with 1 dimension"),
    (0, tg.tensor([1.0]), "end with 1 dimension"),
    (tg.tensor([0.0, 1.0]), 1, "start with 1 dimension"),
    (tg.tensor([0.0]), tg.tensor([[1.0]]), "start with 1 dimension\\(s\\) and end with 2"),
])
def test_linspace_bounds_must_be_0d(start, end, bad):
    with pytest.raises(RuntimeError, match="linspace only supports 0-dimensional start and "
                                           "end tensors, but got " + bad):
        tg.linspace(start, end, 5)
    with pytest.raises(RuntimeError, match="only supports 0-dimensional start and end"):
        tg.logspace(start, end, 5)


def test_linspace_0d_bounds_work():
    assert tg.linspace(tg.tensor(0.0), tg.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]


# -- empty LDL factorizations ------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_ldl_of_empty_matrices(shape):
    LD, piv = tg.linalg.ldl_factor(tg.ones(*shape))
    assert tuple(LD.shape) == shape and tuple(piv.shape) == shape[:-1]
    assert piv.dtype is tg.int32
    LD, piv, info = tg.linalg.ldl_factor_ex(tg.ones(*shape))
    assert tuple(info.shape) == shape[:-2]
    x = tg.linalg.ldl_solve(LD, piv, tg.ones(*shape[:-1], 2))
    assert tuple(x.shape) == shape[:-1] + (2,)


def test_ldl_solve_empty_rhs_and_usual_case():
    LD, piv = tg.linalg.ldl_factor(tg.eye(3))
    assert tuple(tg.linalg.ldl_solve(LD, piv, tg.ones(3, 0)).shape) == (3, 0)
    assert tg.linalg.ldl_solve(LD, piv, tg.ones(3, 2)).tolist() == [[1.0, 1.0]] * 3
    b = tg.ones(0, 2, requires_grad=True)
    tg.linalg.ldl_solve(tg.ones(0, 0), tg.zeros(0, dtype=tg.int32), b).sum().backward()
    assert tuple(b.grad.shape) == (0, 2)


# -- exception types ---------------------------------------------------------------------------

@pytest.mark.parametrize("step", [0, -1])
def test_slice_scatter_step_must_be_positive(step):
    with pytest.raises(RuntimeError, match="slice_scatter: slice step must be positive"):
        tg.slice_scatter(tg.zeros(4), tg.ones(2), 0, 0, 4, step=step)
    assert tg.slice_scatter(tg.zeros(4), tg.ones(2), 0, 0, 4, step=2).tolist() == \
        [1.0, 0.0, 1.0, 0.0]


def test_kthvalue_of_empty_dim_is_index_error():
    with pytest.raises(IndexError, match="kthvalue\\(\\): Expected reduction dim 0 to have "
                                         "non-zero size"):
        tg.ones(0).kthvalue(1)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        tg.ones(3).kthvalue(4)
    assert tuple(tg.ones(2, 0).kthvalue(1, dim=0).values.shape) == (0,)


@pytest.mark.parametrize("index", ["a", ("a",), (0, "a"), b"a", ["a"], [0, "a"]])
def test_string_index_is_type_error(index):
    t = tg.ones(3, 3)
    with pytest.raises(TypeError, match="__getitem__: invalid data type"):
        t[index]
    with pytest.raises(TypeError, match="__setitem__: invalid data type"):
        t[index] = 1.0


def test_other_bad_indices_stay_index_errors():
    with pytest.raises(IndexError, match="valid indices"):
        tg.ones(3)[1.5]
    assert tg.ones(3, 3)[[0, 1]].shape == (2, 3)


@pytest.mark.parametrize("start", [tg.tensor(1.0), tg.tensor([1]), tg.tensor(True)])
def test_narrow_start_tensor_must_be_0d_integral(start):
    with pytest.raises(RuntimeError, match="narrow\\(\\): start must be an 0-dim integral "
                                           "Tensor"):
        tg.arange(5.0).narrow(0, start, 2)


def test_narrow_integer_start_tensor_works():
    assert tg.arange(5.0).narrow(0, tg.tensor(1), 2).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("make", [
    lambda layout: tg.zeros(2, layout=layout), lambda layout: tg.full((2,), 1.0, layout=layout),
    lambda layout: tg.zeros_like(tg.ones(2), layout=layout),
    lambda layout: tg.arange(2, layout=layout),
])
def test_layout_of_wrong_type_is_type_error(make):
    with pytest.raises(TypeError, match="argument 'layout' must be tritongrad.layout, not str"):
        make("foo")
    with pytest.raises(NotImplementedError, match="layout"):  # (a layout, not implemented)
        make(tg.sparse_coo)
    assert make(tg.strided).shape == (2,)


@pytest.mark.parametrize("args", [(tg.tensor([3, 5]),), (tg.tensor([3]),),
                                  (0, tg.tensor([3, 5]))])
def test_arange_bound_must_be_number(args):
    with pytest.raises(TypeError, match="arange\\(\\): argument 'end' must be Number, not "
                                        "Tensor"):
        tg.arange(*args)


def test_arange_0d_tensor_bound_works():
    assert tg.arange(tg.tensor(3)).tolist() == [0, 1, 2]
