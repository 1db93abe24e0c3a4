"""torch.func / vmap, a second sweep (/tmp/h38/vmap against torch 2.13): vmap over ~150 more ops
(shape ops with negative dims, indexing and scatters, linalg, F.* layers and losses, factories
inside the function, in-place ops on mapped inputs) against the per-sample loop and float64
NumPy; the errors it fixed (out_dims out of range, outputs of data-dependent shape, writes into
tensors that are not vmapped over, a bool in_dim); and, where torch is installed, the same
cases against torch.func (values, shapes, dtypes, error types and first words)."""

import functools

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.func import functional_call, grad, jacrev, stack_module_state, vmap

B = 3


def _arr(seed, *shape):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, shape)


def _np(x):
    return x.detach().cpu().numpy()


def _F(L):
    return L.nn.functional


def _spd(L, x):
    return x @ x.mT + 3 * L.eye(x.shape[-1], dtype=x.dtype)


# (name, f(L, x, y), x's shape (the batch at in_dims[0]), y: None, ("r", shape) of reals or
# ("i", high, shape) of indices, in_dims)
OPS = [
    ("add_both_neg", lambda L, x, y: x.add(y, alpha=2), (4, 2, B), ("r", (B, 4, 1)), (-1, 0)),
    ("div_floor", lambda L, x, y: L.div(x, y, rounding_mode="floor"), (B, 4), ("r", (4,)),
     (0, None)),
    ("remainder", lambda L, x, y: L.remainder(x, y), (B, 4), ("r", (4,)), (0, None)),
    ("lerp", lambda L, x, y: L.lerp(x, y, 0.3), (B, 4), ("r", (4,)), (0, None)),
    ("addcmul", lambda L, x, y: L.addcmul(x, x, y, value=0.5), (B, 4), ("r", (4,)), (0, None)),
    ("nan_to_num", lambda L, x, y: L.nan_to_num(x.log(), nan=0.0, neginf=-1.0), (B, 4), None,
     (0, None)),
    ("to_long", lambda L, x, y: (x * 3).long(), (B, 4), None, (0, None)),
    ("prod_keep", lambda L, x, y: x.prod(1, keepdim=True), (B, 4, 5), None, (0, None)),
    ("amax_all", lambda L, x, y: x.amax(), (4, B, 5), None, (1, None)),
    ("argmax_keep", lambda L, x, y: x.argmax(dim=-1, keepdim=True), (B, 4, 5), None, (0, None)),
    ("argmin_all", lambda L, x, y: x.argmin(), (B, 4, 5), None, (0, None)),
    ("count_nonzero", lambda L, x, y: L.count_nonzero(x > 0, dim=-1), (B, 4, 5), None,
     (0, None)),
    ("min_dim0", lambda L, x, y: x.min(0), (B, 4, 5), None, (0, None)),
    ("std_mean", lambda L, x, y: L.std_mean(x, 1), (B, 4, 5), None, (0, None)),
    ("aminmax", lambda L, x, y: L.aminmax(x, dim=0), (B, 4, 5), None, (0, None)),
    ("quantile", lambda L, x, y: L.quantile(x, 0.3, dim=1), (B, 4, 5), None, (0, None)),
    ("cummax", lambda L, x, y: x.cummax(1), (B, 4, 5), None, (0, None)),
    ("logcumsumexp", lambda L, x, y: x.logcumsumexp(1), (B, 4, 5), None, (0, None)),
    ("sort_desc", lambda L, x, y: x.sort(-1, descending=True), (B, 4, 5), None, (0, None)),
    ("kthvalue", lambda L, x, y: x.kthvalue(2, dim=-1), (B, 4, 5), None, (0, None)),
    ("view_dim1", lambda L, x, y: x.view(5, 4), (4, B, 5), None, (1, None)),
    ("reshape_dim2", lambda L, x, y: x.reshape(2, -1), (4, 5, B), None, (2, None)),
    ("permute_neg", lambda L, x, y: x.permute(-1, -3, -2), (B, 4, 5, 2), None, (0, None)),
    ("transpose_neg", lambda L, x, y: x.transpose(-1, 0), (B, 4, 5), None, (0, None)),
    ("expand_m1", lambda L, x, y: x.expand(2, -1, -1), (B, 4, 5), None, (0, None)),
    ("expand_as", lambda L, x, y: x.expand_as(y), (B, 1, 5), ("r", (4, 5)), (0, None)),
    ("squeeze_neg", lambda L, x, y: x.squeeze(-2), (B, 1, 5), None, (0, None)),
    ("flatten_neg", lambda L, x, y: x.flatten(-2, -1), (B, 2, 4, 5), None, (0, None)),
    ("unflatten", lambda L, x, y: x.unflatten(-1, (2, 2)), (B, 5, 4), None, (0, None)),
    ("movedim_list", lambda L, x, y: L.movedim(x, (0, 1), (-1, -2)), (B, 4, 5, 2), None,
     (0, None)),
    ("unbind_neg", lambda L, x, y: x.unbind(-1), (B, 4, 3), None, (0, None)),
    ("split_sizes", lambda L, x, y: x.split([1, 3], dim=0), (B, 4, 5), None, (0, None)),
    ("tensor_split", lambda L, x, y: x.tensor_split(3, dim=1), (B, 4, 5), None, (0, None)),
    ("cat_neg", lambda L, x, y: L.cat([x, y], -1), (B, 4, 5), ("r", (4, 2)), (0, None)),
    ("cat_both", lambda L, x, y: L.cat([x, y, x]), (B, 4, 5), ("r", (B, 2, 5)), (0, 0)),
    ("stack_neg", lambda L, x, y: L.stack([x, y], -1), (B, 4, 5), ("r", (4, 5)), (0, None)),
    ("hstack", lambda L, x, y: L.hstack([x, y]), (B, 4, 5), ("r", (4, 5)), (0, None)),
    ("narrow_neg", lambda L, x, y: x.narrow(-1, 1, 2), (B, 4, 5), None, (0, None)),
    ("getitem_mixed", lambda L, x, y: x[1:, None, ..., ::2], (B, 4, 5), None, (0, None)),
    ("roll_flat", lambda L, x, y: x.roll(2), (B, 4, 5), None, (0, None)),
    ("rot90", lambda L, x, y: x.rot90(1, (0, 1)), (B, 4, 5), None, (0, None)),
    ("repeat_interleave", lambda L, x, y: x.repeat_interleave(2, dim=-1), (B, 4, 5), None,
     (0, None)),
    ("diag_embed", lambda L, x, y: L.diag_embed(x), (B, 4, 5), None, (0, None)),
    ("pad_reflect", lambda L, x, y: _F(L).pad(x, (1, 2), mode="reflect"), (B, 4, 5), None,
     (0, None)),
    ("as_strided", lambda L, x, y: x.as_strided((2, 2), (1, 2)), (B, 4, 5), None, (0, None)),
    ("index_batched", lambda L, x, y: x[y], (B, 4, 5), ("i", 4, (B, 3)), (0, 0)),
    ("index_dim1", lambda L, x, y: x[:, y], (B, 4, 5), ("i", 5, (B, 2)), (0, 0)),
    ("index_two", lambda L, x, y: x[y, y], (B, 4, 5), ("i", 4, (B, 2)), (0, 0)),
    ("index_select_b", lambda L, x, y: x.index_select(0, y), (B, 4, 5), ("i", 4, (B, 3)),
     (0, 0)),
    ("gather_ub", lambda L, x, y: x.gather(0, y), (B, 4, 5), ("i", 4, (2, 5)), (0, None)),
    ("take_along_dim", lambda L, x, y: L.take_along_dim(x, y, 1), (B, 4, 5), ("i", 5, (4, 1)),
     (0, None)),
    ("take", lambda L, x, y: L.take(x, y), (B, 4, 5), ("i", 20, (B, 3)), (0, 0)),
    ("scatter_new", lambda L, x, y: L.zeros(4, 5, dtype=x.dtype).scatter(0, y, x), (B, 4, 5),
     ("i", 4, (B, 2, 5)), (0, 0)),
    ("scatter_reduce", lambda L, x, y: x.scatter_reduce(1, y, x, "amax", include_self=False),
     (B, 4, 5), ("i", 5, (B, 4, 5)), (0, 0)),
    ("index_copy", lambda L, x, y: x.index_copy(1, y, x[:, :2]), (B, 4, 5), ("i", 5, (B, 2)),
     (0, 0)),
    ("index_fill", lambda L, x, y: x.index_fill(1, y, -1.0), (B, 4, 5), ("i", 5, (2,)),
     (0, None)),
    ("index_put", lambda L, x, y: x.index_put((y,), L.tensor(7.0, dtype=x.dtype)), (B, 4, 5),
     ("i", 4, (B, 2)), (0, 0)),
    ("masked_fill_ub", lambda L, x, y: x.masked_fill(y > 0, 1.0), (B, 4, 5), ("r", (5,)),
     (0, None)),
    ("masked_scatter", lambda L, x, y: x.masked_scatter(x > 0, y), (B, 4, 5), ("r", (4, 5)),
     (0, None)),
    ("bincount", lambda L, x, y: y.bincount(minlength=5), (B, 4), ("i", 5, (B, 6)), (None, 0)),
    ("searchsorted", lambda L, x, y: L.searchsorted(x.sort(-1).values, y), (B, 5),
     ("r", (B, 3)), (0, 0)),
    ("one_hot", lambda L, x, y: _F(L).one_hot(y, 5), (B, 4), ("i", 5, (B, 3)), (None, 0)),
    ("embedding_b", lambda L, x, y: _F(L).embedding(y, x), (B, 6, 3), ("i", 6, (B, 4)), (0, 0)),
    ("matmul_mv_b", lambda L, x, y: x @ y, (B, 3, 4), ("r", (4, B)), (0, 1)),
    ("mm_rhs", lambda L, x, y: L.mm(y, x), (B, 4, 2), ("r", (3, 4)), (0, None)),
    ("einsum_3", lambda L, x, y: L.einsum("ij,jk,k->i", x, y, y[0]), (B, 3, 4), ("r", (4, 4)),
     (0, None)),
    ("tensordot", lambda L, x, y: L.tensordot(x, y, dims=([1], [0])), (B, 3, 4), ("r", (4, 2)),
     (0, None)),
    ("kron", lambda L, x, y: L.kron(x, y), (B, 2, 2), ("r", (2, 3)), (0, None)),
    ("baddbmm", lambda L, x, y: L.baddbmm(y, x, x.mT), (B, 2, 3, 4), ("r", (B, 2, 3, 3)),
     (0, 0)),
    ("slogdet", lambda L, x, y: tuple(L.linalg.slogdet(x)), (B, 3, 3), None, (0, None)),
    ("pinv", lambda L, x, y: L.linalg.pinv(x), (B, 3, 4), None, (0, None)),
    ("matrix_exp", lambda L, x, y: L.linalg.matrix_exp(x), (B, 3, 3), None, (0, None)),
    ("lstsq", lambda L, x, y: L.linalg.lstsq(x, y).solution, (B, 4, 3), ("r", (4, 2)),
     (0, None)),
    ("inv_spd", lambda L, x, y: L.linalg.inv(_spd(L, x)), (B, 3, 3), None, (0, None)),
    ("linear_wb", lambda L, x, y: _F(L).linear(y, x), (B, 3, 4), ("r", (2, 4)), (0, None)),
    ("conv1d_weight", lambda L, x, y: _F(L).conv1d(y, x), (B, 4, 3, 3), ("r", (2, 3, 6)),
     (0, None)),
    ("conv2d_groups", lambda L, x, y: _F(L).conv2d(x, y, groups=2), (B, 1, 4, 5, 5),
     ("r", (4, 2, 3, 3)), (0, None)),
    ("conv_transpose2d", lambda L, x, y: _F(L).conv_transpose2d(x, y, stride=2),
     (B, 1, 3, 4, 4), ("r", (3, 2, 3, 3)), (0, None)),
    ("max_pool2d_idx", lambda L, x, y: _F(L).max_pool2d(x, 2, return_indices=True),
     (B, 2, 3, 6, 6), None, (0, None)),
    ("adaptive_avg_pool2d", lambda L, x, y: _F(L).adaptive_avg_pool2d(x, (2, 3)),
     (B, 2, 3, 6, 6), None, (0, None)),
    ("interpolate", lambda L, x, y: _F(L).interpolate(x, scale_factor=2, mode="bilinear"),
     (B, 1, 2, 3, 3), None, (0, None)),
    ("gelu", lambda L, x, y: _F(L).gelu(x), (B, 4, 5), None, (0, None)),
    ("mish", lambda L, x, y: _F(L).mish(x), (B, 4, 5), None, (0, None)),
    ("glu", lambda L, x, y: _F(L).glu(x, -1), (B, 4, 6), None, (0, None)),
    ("normalize", lambda L, x, y: _F(L).normalize(x, dim=-1), (B, 4, 6), None, (0, None)),
    ("smooth_l1", lambda L, x, y: _F(L).smooth_l1_loss(x, y, beta=0.5), (B, 4, 5),
     ("r", (4, 5)), (0, None)),
    ("cross_entropy_idx", lambda L, x, y: _F(L).cross_entropy(x, y), (B, 4, 5),
     ("i", 5, (B, 4)), (0, 0)),
    ("cross_entropy_ls", lambda L, x, y: _F(L).cross_entropy(x, y, label_smoothing=0.1,
                                                             reduction="sum"),
     (B, 4, 5), ("i", 5, (4,)), (0, None)),
    ("nll", lambda L, x, y: _F(L).nll_loss(x.log_softmax(-1), y), (B, 4, 5), ("i", 5, (B, 4)),
     (0, 0)),
    ("bce_logits", lambda L, x, y: _F(L).binary_cross_entropy_with_logits(x, y.sigmoid()),
     (B, 4), ("r", (B, 4)), (0, 0)),
    ("kl_div", lambda L, x, y: _F(L).kl_div(x.log_softmax(-1), y.softmax(-1),
                                            reduction="batchmean"),
     (B, 4, 5), ("r", (4, 5)), (0, None)),
    ("cosine_similarity", lambda L, x, y: _F(L).cosine_similarity(x, y, dim=-1), (B, 4, 5),
     ("r", (5,)), (0, None)),
    ("cdist", lambda L, x, y: L.cdist(x, y), (B, 4, 3), ("r", (5, 3)), (0, None)),
    ("layer_norm_w", lambda L, x, y: _F(L).layer_norm(y, (5,), x), (B, 5), ("r", (4, 5)),
     (0, None)),
    ("group_norm", lambda L, x, y: _F(L).group_norm(x, 2), (B, 2, 4, 5), None, (0, None)),
    ("instance_norm", lambda L, x, y: _F(L).instance_norm(x), (B, 2, 4, 5), None, (0, None)),
    ("rms_norm", lambda L, x, y: _F(L).rms_norm(x, (5,)), (B, 4, 5), None, (0, None)),
    ("sdpa_causal", lambda L, x, y: _F(L).scaled_dot_product_attention(x, x, x, is_causal=True),
     (B, 2, 4, 3), None, (0, None)),
    ("grid_sample", lambda L, x, y: _F(L).grid_sample(x, y.tanh(), align_corners=False),
     (B, 1, 2, 4, 4), ("r", (1, 3, 3, 2)), (0, None)),
    ("ones_like_int", lambda L, x, y: L.ones_like(x, dtype=L.int32), (B, 4, 5), None,
     (0, None)),
    ("new_tensor", lambda L, x, y: x.new_tensor([1.0, 2.0]) * x[0, 0], (B, 4, 5), None,
     (0, None)),
    ("new_full", lambda L, x, y: x.new_full((2,), 3.0), (B, 4, 5), None, (0, None)),
    ("arange_add", lambda L, x, y: x + L.arange(5, dtype=x.dtype), (B, 4, 5), None, (0, None)),
    ("linspace", lambda L, x, y: L.linspace(0, 1, 5, dtype=x.dtype) * x, (B, 4, 5), None,
     (0, None)),
    ("add_inplace_clone", lambda L, x, y: x.clone().add_(y), (B, 4), ("r", (4,)), (0, None)),
    ("add_inplace_both", lambda L, x, y: x.add_(y), (B, 4), ("r", (B, 4)), (0, 0)),
    ("clamp_inplace", lambda L, x, y: x.clamp_(min=0), (B, 4), None, (0, None)),
    ("copy_inplace", lambda L, x, y: x.copy_(y), (B, 4), ("r", (4,)), (0, None)),
    ("t_inplace", lambda L, x, y: x.t_(), (B, 4, 5), None, (0, None)),
    ("complex_abs", lambda L, x, y: L.complex(x, y).abs(), (B, 4), ("r", (4,)), (0, None)),
    ("rfft_abs", lambda L, x, y: L.fft.rfft(x).abs(), (B, 4, 8), None, (0, None)),
    ("histc", lambda L, x, y: L.histc(x, 4, -1, 1), (B, 8), None, (0, None)),
    ("diff", lambda L, x, y: L.diff(x, dim=-1), (B, 4, 5), None, (0, None)),
    ("half", lambda L, x, y: x.half().exp().float(), (B, 4), None, (0, None)),
    ("int_input", lambda L, x, y: (y > 2).sum(-1), (B, 4), ("i", 5, (B, 4)), (None, 0)),
    ("promote_0d", lambda L, x, y: x.float() + y, (B, 4), ("r", (B,)), (0, 0)),
]


def _inputs(L, case):
    name, _, xs, y, _ = case
    seed = sum(map(ord, name))
    x = L.tensor(_arr(seed, *xs), dtype=L.float64)
    if y is None:
        return x, None
    if y[0] == "r":
        return x, L.tensor(_arr(seed + 1, *y[1]), dtype=L.float64)
    return x, L.tensor(np.random.default_rng(seed + 1).integers(0, y[1], y[2]))


def _flat(out) -> list:
    if isinstance(out, dict):
        out = [out[k] for k in sorted(out)]
    return [o for x in out for o in _flat(x)] if isinstance(out, (tuple, list)) else [out]


def _loop(L, case):
    """vmap by its definition: the function on each entry (``select`` of the mapped inputs),
    each output stacked along dim 0."""
    _, fn, _, _, in_dims = case
    x, y = _inputs(L, case)
    rows = []
    for i in range(B):
        entry = [v if d is None else v.select(d, i) for v, d in zip((x, y), in_dims)]
        rows.append([_np(o) for o in _flat(fn(L, *entry))])
    return [np.stack(col) for col in zip(*rows)]


def _vmapped(L, case):
    _, fn, _, _, in_dims = case
    return _flat(L.func.vmap(functools.partial(fn, L), in_dims=in_dims)(*_inputs(L, case)))


@pytest.mark.parametrize("case", OPS, ids=[c[0] for c in OPS])
def test_vmap_op_matches_per_sample_loop(case):
    if case[0] == "view_dim1":  # (an entry of dim 1 is not contiguous: view refuses it)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            _vmapped(tg, case)
        return
    got = _vmapped(tg, case)
    ref = _loop(tg, case)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert tuple(g.shape) == r.shape
        np.testing.assert_allclose(_np(g), r, rtol=1e-9, atol=1e-12)


# float64 NumPy references for one entry (x, y: that entry's arrays)
NP_REF = {
    "add_both_neg": lambda x, y: x + 2 * y,
    "div_floor": lambda x, y: np.floor(x / y),
    "lerp": lambda x, y: x + 0.3 * (y - x),
    "prod_keep": lambda x, y: x.prod(1, keepdims=True),
    "permute_neg": lambda x, y: x.transpose(2, 0, 1),
    "movedim_list": lambda x, y: np.moveaxis(x, (0, 1), (-1, -2)),
    "cat_neg": lambda x, y: np.concatenate([x, y], -1),
    "stack_neg": lambda x, y: np.stack([x, y], -1),
    "getitem_mixed": lambda x, y: x[1:, None, ..., ::2],
    "rot90": lambda x, y: np.rot90(x, 1, (0, 1)),
    "index_batched": lambda x, y: x[y],
    "index_two": lambda x, y: x[y, y],
    "take": lambda x, y: x.reshape(-1)[y],
    "take_along_dim": lambda x, y: np.take_along_axis(x, y, 1),
    "einsum_3": lambda x, y: x @ y @ y[0],
    "kron": np.kron,
    "tensordot": lambda x, y: np.tensordot(x, y, ([1], [0])),
    "pinv": lambda x, y: np.linalg.pinv(x),
    "inv_spd": lambda x, y: np.linalg.inv(x @ x.T + 3 * np.eye(3)),
    "cdist": lambda x, y: np.sqrt(((x[:, None] - y[None]) ** 2).sum(-1)),
    "glu": lambda x, y: x[:, :3] / (1 + np.exp(-x[:, 3:])),
    "diff": lambda x, y: np.diff(x, axis=-1),
    "bincount": lambda x, y: np.bincount(y, minlength=5),
    "add_inplace_both": lambda x, y: x + y,
}


@pytest.mark.parametrize("name", list(NP_REF))
def test_vmap_op_against_float64_numpy(name):
    case = next(c for c in OPS if c[0] == name)
    in_dims = case[4]
    got = _vmapped(tg, case)[0]
    x, y = (None if v is None else _np(v) for v in _inputs(tg, case))

    def entry(v, d, i):
        return None if v is None else v if d is None else np.moveaxis(v, d, 0)[i]

    ref = np.stack([NP_REF[name](entry(x, in_dims[0], i), entry(y, in_dims[1], i))
                    for i in range(B)])
    np.testing.assert_allclose(_np(got), ref, rtol=1e-9, atol=1e-12)


# -- the errors this sweep fixed --------------------------------------------------------------

@pytest.mark.parametrize("func,out_dims,rng,got", [
    (lambda x: x, 3, "[-2, 1]", 3),
    (lambda x: x, -4, "[-2, 1]", -4),
    (lambda x: x.sum(), 1, "[-1, 0]", 1),
    (lambda x: {"a": x, "b": (x.sum(), x[0])}, 1, "[-1, 0]", 1),  # (one out_dim for all)
])
def test_out_dims_out_of_range(func, out_dims, rng, got):
    msg = (rf"^Dimension out of range \(expected to be in range of \{rng}, but got "
           rf"{got}\)$")
    with pytest.raises(IndexError, match=msg):
        vmap(func, out_dims=out_dims)(tg.zeros(3, 2))
    with pytest.raises(IndexError, match=msg):  # (the empty batch is checked alike)
        vmap(func, out_dims=out_dims)(tg.zeros(0, 2))


def test_outputs_of_data_dependent_shape():
    x = tg.tensor([[1.0, -1.0, 2.0], [3.0, 4.0, 5.0]])
    for f in (lambda r: (r > 0).nonzero(), lambda r: r[r > 0], lambda r: r.masked_select(r > 0),
              lambda r: tg.unique(r.abs())):
        with pytest.raises(RuntimeError, match=r"^vmap: We do not support batching operators "
                                               r"that can output dynamic shape\. .*shape \[2\] "
                                               r"for entry 0 .*\[3\] for entry 1"
                           if f(x[0]).dim() == 1 else "dynamic shape"):
            vmap(f)(x)
    # entries whose results agree in shape are stacked (functorch refuses these as well)
    out = vmap(lambda r: r[r > -10])(x)
    np.testing.assert_array_equal(_np(out), _np(x))
    np.testing.assert_array_equal(_np(vmap(lambda r: (r > 1).nonzero())(
                                      tg.tensor([[0.0, 2.0], [3.0, 0.0]]))),
                                  [[[1]], [[0]]])


def test_writes_into_unmapped_tensors_say_so_in_functorch_words():
    x = tg.tensor(_arr(0, 3, 4))
    start = tg.tensor(_arr(1, 4))
    for func, in_dims in [(lambda a, b: b.mul_(a), (0, None)), (lambda a, b: b.copy_(a), (0, None)),
                          (lambda a, b: b.add_(1.0) + a, (0, None))]:
        y = start.clone()
        with pytest.raises(RuntimeError, match=r"^vmap: inplace arithmetic\(self, \*extra_args\) "
                                               r"is not possible on a Tensor that is not "
                                               r"vmapped over \(input 1 .*made 3 times"):
            vmap(func, in_dims=in_dims)(x, y)
    captured = tg.zeros(4, dtype=tg.float64)
    with pytest.raises(RuntimeError, match=r"^vmap: inplace arithmetic.*a tensor the function "
                                           r"captures"):
        vmap(lambda a: captured.add_(a))(x)


def test_bool_in_dim_is_refused():
    with pytest.raises(TypeError, match="in_dim must be an int, not bool"):
        vmap(lambda x: x, in_dims=True)(tg.zeros(3, 4))
    with pytest.raises(TypeError, match="not bool"):
        vmap(lambda x, y: x + y, in_dims=(0, False))(tg.zeros(3, 4), tg.zeros(3, 4))
    # (ints are fine, and an in_dim None for a non-tensor argument)
    assert vmap(lambda x, n: x * n, in_dims=(1, None))(tg.ones(4, 3), 2.0).shape == (3, 4)


def test_result_layout_as_functorch_lays_it_out():
    a = _arr(12, 5, 2, 3)
    x = tg.tensor(a)
    # the batch stacked first, then moved to out_dims: a non-contiguous view, as in functorch
    out = vmap(lambda r: r.sin(), out_dims=1)(x)
    assert tuple(out.shape) == (2, 5, 3) and not out.is_contiguous()
    np.testing.assert_allclose(_np(out), np.sin(a).transpose(1, 0, 2), rtol=1e-12)
    assert tuple(out.stride()) == (3, 6, 1)
    out = vmap(lambda r: r.sum(-1), out_dims=-1)(x)
    assert tuple(out.shape) == (2, 5) and not out.is_contiguous()
    np.testing.assert_allclose(_np(out), a.sum(-1).T, rtol=1e-12)
    assert vmap(lambda r: r.sin())(x).is_contiguous()
    # an empty batch too
    assert tuple(vmap(lambda r: r.sin(), out_dims=2)(tg.zeros(0, 2, 3)).shape) == (2, 3, 0)
    # chunk_size: PyTorch concatenates the chunks, so the results are new contiguous tensors
    for chunk in (1, 2, 10):
        out = vmap(lambda r: r.sin(), out_dims=1, chunk_size=chunk)(x)
        assert out.is_contiguous()
        np.testing.assert_allclose(_np(out), np.sin(a).transpose(1, 0, 2), rtol=1e-12)
        view = vmap(lambda r: r[1:], chunk_size=chunk)(x)
        view.add_(1.0)  # (a copy: the input is untouched)
        np.testing.assert_array_equal(_np(x), a)
        assert tuple(vmap(lambda r: r.sum(), out_dims=0, chunk_size=chunk)(
            tg.zeros(0, 2)).shape) == (0,)
    # without chunk_size, a view op's result is a view of the input (functorch's)
    vmap(lambda r: r[1:])(x).add_(1.0)
    np.testing.assert_array_equal(_np(x)[:, 1:], a[:, 1:] + 1)


def test_per_sample_grads_of_a_cnn_against_the_loop():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 3), tg.nn.ReLU(), tg.nn.MaxPool2d(2),
                             tg.nn.Flatten(), tg.nn.Linear(8, 3)).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs, ys = tg.tensor(_arr(1, 5, 1, 6, 6)), tg.tensor([0, 2, 1, 1, 0])

    def loss(p, x, y):
        out = functional_call(model, p, (x.unsqueeze(0),))
        return tg.nn.functional.cross_entropy(out, y.unsqueeze(0))

    per = vmap(grad(loss), in_dims=(None, 0, 0), chunk_size=2)(params, xs, ys)
    for i in range(5):
        xi = xs[i:i + 1]
        model.zero_grad()
        tg.nn.functional.cross_entropy(model(xi), ys[i:i + 1]).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(_np(per[k][i]), _np(p.grad), rtol=1e-10, atol=1e-13)


def test_ensemble_backward_reaches_the_stacked_state():
    models = [tg.nn.Linear(4, 2).double() for _ in range(3)]
    params, buffers = stack_module_state(models)
    x = tg.tensor(_arr(2, 5, 4))
    out = vmap(lambda p, b: functional_call(models[0], (p, b), (x,)))(params, buffers)
    (out ** 2).sum().backward()
    for i, m in enumerate(models):
        y = _np(x) @ _np(m.weight).T + _np(m.bias)
        np.testing.assert_allclose(_np(params["weight"].grad[i]), 2 * y.T @ _np(x), rtol=1e-10)
        np.testing.assert_allclose(_np(params["bias"].grad[i]), 2 * y.sum(0), rtol=1e-10)
    # jacrev through a vmapped function of a closure
    w = tg.tensor(_arr(3, 3))
    jac = jacrev(lambda u: vmap(lambda r, u: r * u, in_dims=(0, None))(tg.ones(4, 3), u))(w)
    np.testing.assert_array_equal(_np(jac), np.broadcast_to(np.eye(3), (4, 3, 3)))


# -- against torch ------------------------------------------------------------------------------

def _outcome(L, thunk):
    try:
        return _flat(thunk(L))
    except Exception as e:  # noqa: BLE001 - its type and first words are compared
        return e


def _compare(ours, ref, tol=1e-9, words=3):
    if isinstance(ref, Exception):
        assert isinstance(ours, Exception), ours
        assert type(ours).__name__ == type(ref).__name__, (ours, ref)
        assert str(ours).split()[:words] == str(ref).split()[:words], (ours, ref)
        return
    assert not isinstance(ours, Exception), ours
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        assert tuple(o.shape) == tuple(r.shape)
        assert str(o.dtype).split(".")[-1] == str(r.dtype).split(".")[-1]
        np.testing.assert_allclose(_np(o), r.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", OPS, ids=[c[0] for c in OPS])
def test_vmap_ops_against_torch(case):
    torch = pytest.importorskip("torch")
    _compare(_outcome(tg, lambda L: _vmapped(L, case)),
             _outcome(torch, lambda L: _vmapped(L, case)), tol=1e-7)


API = {
    "out_oob": lambda L: L.func.vmap(lambda x: x, out_dims=3)(L.zeros(3, 2)),
    "out_oob_neg": lambda L: L.func.vmap(lambda x: x, out_dims=-4)(L.zeros(3, 2)),
    "out_prefix_oob": lambda L: L.func.vmap(lambda x: {"a": x, "b": x.sum()}, out_dims=1)(
        L.zeros(3, 2)),
    "dynamic_shape": lambda L: L.func.vmap(lambda x: x.nonzero())(L.eye(3)[:2] + L.tensor(
        [[0.0, 0, 0], [0, 0, 1]])),
    "mul_into_unmapped": lambda L: L.func.vmap(lambda x, y: y.mul_(x), in_dims=(0, None))(
        L.ones(3, 2), L.ones(2)),
    "copy_into_unmapped": lambda L: L.func.vmap(lambda x, y: y.copy_(x), in_dims=(0, None))(
        L.ones(3, 2), L.ones(2)),
    "bool_in_dim": lambda L: L.func.vmap(lambda x: x, in_dims=True)(L.ones(3, 2)),
    "nested_out_dims": lambda L: L.func.vmap(L.func.vmap(lambda x: x * 2, out_dims=1),
                                             out_dims=1)(L.tensor(_arr(4, 3, 4, 2))),
    "layout_out_dims": lambda L: [L.tensor(float(t.is_contiguous())) for t in L.func.vmap(
        lambda x: (x.sin(), x.sum(-1)), out_dims=(1, -1))(L.tensor(_arr(12, 5, 2, 3)))],
    "layout_chunked": lambda L: [L.tensor(float(t.is_contiguous())) for t in L.func.vmap(
        lambda x: (x.sin(), x[1:]), out_dims=(1, -1), chunk_size=2)(L.tensor(_arr(12, 5, 2, 3)))],
    "in_dims_dict": lambda L: L.func.vmap(lambda d: d["a"] * d["b"],
                                          in_dims=({"a": 1, "b": None},))(
        {"a": L.tensor(_arr(5, 4, 3)), "b": L.tensor(_arr(6, 4))}),
    "out_dims_tree": lambda L: L.func.vmap(lambda x: {"a": x, "b": (x.sum(), x[0])},
                                           out_dims={"a": 1, "b": (0, -1)})(
        L.tensor(_arr(7, 3, 2, 2))),
    "jacrev_chunk_aux": lambda L: L.func.jacrev(lambda x: (x.sin() * x.sum(), x.cos()),
                                                has_aux=True, chunk_size=2)(
        L.tensor(_arr(8, 5))),
    "vmap_hessian": lambda L: L.func.vmap(L.func.hessian(lambda x: (x.sin() * x.sum()).sum()))(
        L.tensor(_arr(9, 2, 3))),
    "linearize_vmap": lambda L: L.func.vmap(L.func.linearize(
        lambda x: x.sin() * x.sum(), L.tensor(_arr(10, 3)))[1])(L.tensor(_arr(11, 4, 3))),
}


@pytest.mark.parametrize("name", list(API))
def test_func_api_against_torch(name):
    torch = pytest.importorskip("torch")
    # (PyTorch's words for a bool in_dim are its size() call's: the type is compared)
    _compare(_outcome(tg, API[name]), _outcome(torch, API[name]),
             words=0 if name == "bool_in_dim" else 3)
