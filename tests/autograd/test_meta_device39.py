"""The meta device (Note [The meta device], kernels/meta.py): tensors with a shape, strides and
a dtype but no values.

Each case of ``CASES`` builds its inputs on device ``DEVICE[0]`` with library ``T`` and returns
a tensor or a tuple of tensors; ``run_case`` gives ("ok", shapes and dtypes, strides) or
("error", exception type). Every case that reads no values gives on meta exactly what the same
op gives on the CPU (shapes, dtypes and strides), and what PyTorch 2.13's meta tensors give
where torch is installed; then the workflows meta tensors exist for: building a model without
memory, ``to_empty`` and ``load_state_dict(assign=True)``.
"""
import copy
import tracemalloc
import warnings

import numpy as np
import pytest

import tritongrad as tg

DEVICE = ["meta"]

# the cases that read values: on meta they refuse (PyTorch's one_hot and nll_loss do not)
READS_VALUES = {"item", "bool", "tolist", "cpu", "to_cpu", "nonzero", "masked_select",
                "one_hot", "nll_none"}


def _x(T, *shape, dtype=None, grad=False):
    # (zeros: on the CPU an index drawn from garbage could be out of range)
    return T.zeros(*shape, device=DEVICE[0], dtype=dtype or T.float32, requires_grad=grad)


def _long(T, *shape):
    return T.zeros(*shape, device=DEVICE[0], dtype=T.int64)


def _backward(T, f, *shapes):
    xs = [_x(T, *s, grad=True) for s in shapes]
    f(*xs).sum().backward()
    return tuple(x.grad for x in xs)


def _double_grad(T, x):
    (g,) = T.autograd.grad((x * x).sum(), [x], create_graph=True)
    return g, T.autograd.grad(g.sum(), [x])[0]


def _part(module, i: int, self_attention: bool = False):
    """``module``'s output number ``i`` as a one-input callable."""
    if self_attention:
        return lambda x: module(x, x, x)[i]
    return lambda x: module(x)[i]


def _module(T, make, *shape, dtype=None):
    with T.device(DEVICE[0]):
        m = make(T.nn)
    return m(_x(T, *shape, dtype=dtype))


CASES = {
    # creation
    "empty": lambda T: T.empty(2, 3, device=DEVICE[0]),
    "zeros_int": lambda T: T.zeros(4, dtype=T.int32, device=DEVICE[0]),
    "ones": lambda T: T.ones(2, 3, device=DEVICE[0], dtype=T.float64),
    "full": lambda T: T.full((2, 2), 7.0, device=DEVICE[0]),
    "arange": lambda T: T.arange(10, device=DEVICE[0]),
    "arange_float": lambda T: T.arange(0, 1, 0.25, device=DEVICE[0]),
    "linspace": lambda T: T.linspace(0, 1, 5, device=DEVICE[0]),
    "eye": lambda T: T.eye(3, device=DEVICE[0]),
    "rand": lambda T: T.rand(3, 4, device=DEVICE[0]),
    "randn_bf16": lambda T: T.randn(3, device=DEVICE[0], dtype=T.bfloat16),
    "randint": lambda T: T.randint(0, 10, (5,), device=DEVICE[0]),
    "randperm": lambda T: T.randperm(6, device=DEVICE[0]),
    "tensor": lambda T: T.tensor([[1, 2], [3, 4]], device=DEVICE[0]),
    "empty_like": lambda T: T.empty_like(_x(T, 2, 5)),
    "zeros_like_dtype": lambda T: T.zeros_like(_x(T, 2, 5), dtype=T.float16),
    "new_full": lambda T: _x(T, 2).new_full((3, 3), 1.0),
    "to_meta": lambda T: T.ones(2, 3).to(DEVICE[0]),
    "to_meta_dtype": lambda T: T.ones(2, 3).to(DEVICE[0], T.float64),
    # views
    "view": lambda T: _x(T, 2, 6).view(3, 4),
    "reshape_t": lambda T: _x(T, 2, 6).t().reshape(12),
    "permute": lambda T: _x(T, 2, 3, 4).permute(2, 0, 1),
    "transpose": lambda T: _x(T, 2, 3, 4).transpose(0, 2),
    "slice": lambda T: _x(T, 5, 6)[1:4, ::2],
    "select": lambda T: _x(T, 5, 6)[2],
    "unsqueeze": lambda T: _x(T, 5).unsqueeze(0),
    "expand": lambda T: _x(T, 1, 3).expand(4, 3),
    "flatten": lambda T: _x(T, 2, 3, 4).flatten(1),
    "chunk": lambda T: _x(T, 6, 2).chunk(3),
    "split": lambda T: _x(T, 7, 2).split(3),
    "unbind": lambda T: _x(T, 3, 2).unbind(1),
    "narrow": lambda T: _x(T, 6, 2).narrow(0, 1, 3),
    "diagonal": lambda T: _x(T, 4, 4).diagonal(),
    "as_strided": lambda T: _x(T, 16).as_strided((3, 3), (4, 1), 1),
    "unfold": lambda T: _x(T, 10).unfold(0, 4, 2),
    "view_as_real": lambda T: T.view_as_real(_x(T, 3, dtype=T.complex64)),
    "view_as_complex": lambda T: T.view_as_complex(_x(T, 3, 2)),
    "real_imag": lambda T: (_x(T, 3, dtype=T.complex128).real,
                            _x(T, 3, dtype=T.complex128).imag),
    # pointwise and promotion
    "add": lambda T: _x(T, 2, 3) + _x(T, 3),
    "mul_scalar": lambda T: _x(T, 2, 3) * 2,
    "int_div": lambda T: _long(T, 4) / 2,
    "int_float": lambda T: _long(T, 4) + _x(T, 4),
    "half_promote": lambda T: _x(T, 4, dtype=T.float16) + _x(T, 4, dtype=T.float64),
    "compare": lambda T: _x(T, 3) > 0,
    "where": lambda T: T.where(_x(T, 3) > 0, _x(T, 2, 3), 0.0),
    "exp": lambda T: _x(T, 3).exp(),
    "tanh": lambda T: _x(T, 2, 3).tanh(),
    "sigmoid_bf16": lambda T: _x(T, 2, dtype=T.bfloat16).sigmoid(),
    "pow": lambda T: _x(T, 3) ** 2,
    "clamp": lambda T: _x(T, 3).clamp(0, 1),
    "abs_complex": lambda T: _x(T, 3, dtype=T.complex64).abs(),
    "angle": lambda T: _x(T, 3, dtype=T.complex64).angle(),
    "lerp": lambda T: T.lerp(_x(T, 3), _x(T, 3), 0.5),
    "addcmul": lambda T: T.addcmul(_x(T, 3), _x(T, 3), _x(T, 3), value=2),
    "inplace_add": lambda T: _x(T, 3).add_(1),
    "inplace_mul_t": lambda T: _x(T, 2, 3).mul_(_x(T, 3)),
    "fill_": lambda T: _x(T, 2, 2).fill_(3),
    "uniform_": lambda T: _x(T, 2, 2).uniform_(),
    "normal_": lambda T: _x(T, 2, 2).normal_(0, 2),
    "zero_": lambda T: _x(T, 2, 2).zero_(),
    "copy_": lambda T: _x(T, 2, 2).copy_(_x(T, 2)),
    "masked_fill": lambda T: _x(T, 2, 3).masked_fill(_x(T, 3) > 0, 1.0),
    "to_dtype": lambda T: _x(T, 3).to(T.int32),
    "float": lambda T: _long(T, 3).float(),
    "clone": lambda T: _x(T, 3, 4).t().clone(),
    "contiguous": lambda T: _x(T, 3, 4).t().contiguous(),
    "tanh_permuted": lambda T: _x(T, 2, 3, 4).permute(2, 0, 1).tanh(),
    "add_permuted_contiguous": lambda T: _x(T, 4, 3).t() + _x(T, 3, 4),
    "add_contiguous_permuted": lambda T: _x(T, 3, 4) + _x(T, 4, 3).t(),
    "mul_expanded": lambda T: _x(T, 1, 3).expand(4, 3) * 2,
    "pow_permuted_scalar": lambda T: _x(T, 5, 1, 3).transpose(0, 2) ** 3,
    "gt_bcast_permuted": lambda T: _x(T, 4, 3).t() > _x(T, 4),
    "where_permuted": lambda T: T.where(_x(T, 3, 2).t() > 0, _x(T, 2, 3), _x(T, 3)),
    "bool_ops": lambda T: (_x(T, 3) > 0) & (_x(T, 2, 3) < 1),
    "int_ops": lambda T: (_long(T, 3, 2).t() * 3) // 2,
    "half_unary": lambda T: _x(T, 3, 4, dtype=T.float16).t().sin(),
    "complex_mul": lambda T: _x(T, 3, dtype=T.complex64) * _x(T, 2, 3, dtype=T.complex64),
    "sum_permuted": lambda T: _x(T, 2, 3, 4).permute(2, 0, 1).sum(1),
    "sum_bool": lambda T: (_x(T, 2, 3) > 0).sum(),
    "sum_half": lambda T: _x(T, 2, 3, dtype=T.float16).sum(0, keepdim=True),
    "prod_int": lambda T: _long(T, 2, 3).prod(1),
    "argmax_permuted": lambda T: _x(T, 3, 4).t().argmax(1, keepdim=True),
    "cumsum_permuted": lambda T: _x(T, 3, 4).t().cumsum(0),
    "softmax_permuted": lambda T: _x(T, 3, 4, 5).transpose(0, 2).softmax(1),
    "matmul_t": lambda T: _x(T, 4, 3).t() @ _x(T, 4, 5),
    "matmul_vec": lambda T: _x(T, 3, 4) @ _x(T, 4),
    "vec_matmul": lambda T: _x(T, 3) @ _x(T, 2, 3, 4),
    "mv_dot": lambda T: T.dot(_x(T, 3), _x(T, 3)),
    "matmul_half": lambda T: _x(T, 2, 3, dtype=T.bfloat16) @ _x(T, 3, 2, dtype=T.bfloat16),
    "baddbmm": lambda T: T.baddbmm(_x(T, 3, 5), _x(T, 2, 3, 4), _x(T, 2, 4, 5)),
    # reductions
    "sum": lambda T: _x(T, 3, 4).sum(),
    "sum_dim": lambda T: _x(T, 3, 4).sum(1, keepdim=True),
    "sum_int": lambda T: _long(T, 3, 4).sum(0),
    "mean": lambda T: _x(T, 3, 4).mean(0),
    "var": lambda T: _x(T, 3, 4).var(1),
    "max_dim": lambda T: _x(T, 3, 4).max(1),
    "argmax": lambda T: _x(T, 3, 4).argmax(),
    "amax": lambda T: _x(T, 3, 4).amax((0, 1)),
    "norm": lambda T: _x(T, 3, 4).norm(dim=1),
    "logsumexp": lambda T: _x(T, 3, 4).logsumexp(1),
    "cumsum": lambda T: _x(T, 3, 4).cumsum(1),
    "all": lambda T: (_x(T, 3) > 0).all(),
    "topk": lambda T: _x(T, 3, 8).topk(2),
    "sort": lambda T: _x(T, 3, 8).sort(descending=True),
    "softmax": lambda T: _x(T, 3, 8).softmax(-1),
    "log_softmax": lambda T: _x(T, 3, 8).log_softmax(0),
    # products
    "matmul": lambda T: _x(T, 3, 4) @ _x(T, 4, 5),
    "bmm": lambda T: T.bmm(_x(T, 2, 3, 4), _x(T, 2, 4, 5)),
    "matmul_batched": lambda T: _x(T, 7, 1, 3, 4) @ _x(T, 2, 4, 5),
    "addmm": lambda T: T.addmm(_x(T, 5), _x(T, 3, 4), _x(T, 4, 5)),
    "einsum": lambda T: T.einsum("bij,bjk->bik", _x(T, 2, 3, 4), _x(T, 2, 4, 5)),
    "outer": lambda T: T.outer(_x(T, 3), _x(T, 4)),
    "matmul_mismatch": lambda T: _x(T, 3, 4) @ _x(T, 5, 6),
    # joining and indexing
    "cat": lambda T: T.cat([_x(T, 2, 3), _x(T, 4, 3)]),
    "stack": lambda T: T.stack([_x(T, 2, 3), _x(T, 2, 3)], 1),
    "index_select": lambda T: _x(T, 5, 3).index_select(0, _long(T, 4)),
    "gather": lambda T: _x(T, 5, 3).gather(1, _long(T, 5, 2)),
    "scatter_add": lambda T: _x(T, 5, 3).scatter_add(0, _long(T, 2, 3), _x(T, 2, 3)),
    "index_long": lambda T: _x(T, 5, 3)[_long(T, 4)],
    "index_put": lambda T: _x(T, 5, 3).index_put_((_long(T, 2),), _x(T, 3)),
    "embedding": lambda T: T.nn.functional.embedding(_long(T, 2, 7), _x(T, 10, 4)),
    "one_hot": lambda T: T.nn.functional.one_hot(_long(T, 3), 5),
    "repeat": lambda T: _x(T, 2, 3).repeat(2, 1, 2),
    "flip": lambda T: _x(T, 2, 3).flip(0),
    "tril": lambda T: _x(T, 3, 3).tril(),
    "pad": lambda T: T.nn.functional.pad(_x(T, 2, 3), (1, 2)),
    "nonzero": lambda T: _x(T, 3).nonzero(),
    "masked_select": lambda T: _x(T, 3).masked_select(_x(T, 3) > 0),
    # item and host reads
    "item": lambda T: T.tensor(1.0, device=DEVICE[0]).item(),
    "bool": lambda T: bool(_x(T, 1) > 0),
    "tolist": lambda T: _x(T, 2).tolist(),
    "cpu": lambda T: _x(T, 2).cpu(),
    "to_cpu": lambda T: _x(T, 2).to("cpu"),
    "mixed_devices": lambda T: _x(T, 2) + T.ones(2),
    # nn.functional
    "linear": lambda T: T.nn.functional.linear(_x(T, 2, 3), _x(T, 4, 3), _x(T, 4)),
    "conv2d": lambda T: T.nn.functional.conv2d(_x(T, 2, 3, 8, 8), _x(T, 4, 3, 3, 3), padding=1),
    "conv1d_stride": lambda T: T.nn.functional.conv1d(_x(T, 2, 3, 9), _x(T, 4, 3, 3), stride=2),
    "max_pool2d": lambda T: T.nn.functional.max_pool2d(_x(T, 1, 2, 8, 8), 2),
    "avg_pool2d": lambda T: T.nn.functional.avg_pool2d(_x(T, 1, 2, 8, 8), 3, 2),
    "adaptive_avg": lambda T: T.nn.functional.adaptive_avg_pool2d(_x(T, 1, 2, 8, 8), 1),
    "interpolate": lambda T: T.nn.functional.interpolate(_x(T, 1, 2, 4, 4), scale_factor=2),
    "layer_norm": lambda T: T.nn.functional.layer_norm(_x(T, 2, 5), (5,)),
    "group_norm": lambda T: T.nn.functional.group_norm(_x(T, 2, 4, 3), 2),
    "batch_norm_eval": lambda T: T.nn.functional.batch_norm(_x(T, 4, 3), _x(T, 3), _x(T, 3)),
    "gelu": lambda T: T.nn.functional.gelu(_x(T, 2, 3)),
    "silu": lambda T: T.nn.functional.silu(_x(T, 2, 3)),
    "dropout": lambda T: T.nn.functional.dropout(_x(T, 2, 3), 0.5),
    "sdpa": lambda T: T.nn.functional.scaled_dot_product_attention(
        _x(T, 2, 4, 8, 16), _x(T, 2, 4, 8, 16), _x(T, 2, 4, 8, 16), is_causal=True),
    "cross_entropy": lambda T: T.nn.functional.cross_entropy(_x(T, 4, 10), _long(T, 4)),
    "mse": lambda T: T.nn.functional.mse_loss(_x(T, 4, 10), _x(T, 4, 10)),
    "nll_none": lambda T: T.nn.functional.nll_loss(_x(T, 4, 10), _long(T, 4), reduction="none"),
    # autograd
    "backward_mul": lambda T: _backward(T, lambda a, b: a * b, (2, 3), (3,)),
    "backward_matmul": lambda T: _backward(T, lambda a, b: (a @ b).tanh(), (2, 3), (3, 4)),
    "backward_softmax": lambda T: _backward(T, lambda a: a.softmax(-1) * 2, (2, 3)),
    "grad": lambda T: _double_grad(T, _x(T, 3, grad=True)),
    # modules built on meta
    "Linear": lambda T: _module(T, lambda nn: nn.Linear(3, 5), 2, 3),
    "Conv2d": lambda T: _module(T, lambda nn: nn.Conv2d(3, 4, 3, stride=2), 1, 3, 9, 9),
    "LayerNorm": lambda T: _module(T, lambda nn: nn.LayerNorm(6), 2, 6),
    "BatchNorm1d": lambda T: _module(T, lambda nn: nn.BatchNorm1d(6), 4, 6),
    "Embedding": lambda T: _module(T, lambda nn: nn.Embedding(10, 3), 2, dtype=T.int64),
    "MultiheadAttention": lambda T: _module(
        T, lambda nn: _part(nn.MultiheadAttention(8, 2), 0, self_attention=True), 5, 2, 8),
    "TransformerEncoderLayer": lambda T: _module(
        T, lambda nn: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).train(), 2, 5, 8),
    "LSTM": lambda T: _module(T, lambda nn: _part(nn.LSTM(4, 6), 0), 5, 2, 4),
    "GRU": lambda T: _module(T, lambda nn: _part(nn.GRU(4, 6, 2), 1), 5, 2, 4),
    "Sequential": lambda T: _module(T, lambda nn: nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 2)), 3, 4),
}


def run_case(T, fn, device: str = "meta"):
    """("ok", ((shape, dtype name, device type), ...), (strides, ...)) or ("error", type
    name), of ``fn`` on ``device``."""
    DEVICE[0] = device
    try:
        out = fn(T)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return ("error", type(e).__name__)
    if not hasattr(out, "shape") and not isinstance(out, tuple):  # item(), tolist(), bool()
        return ("ok", type(out).__name__)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
    shapes = tuple((tuple(o.shape), str(o.dtype).split(".")[-1], o.device.type) for o in outs)
    strides = tuple(o.stride() for o in outs)
    return ("ok", shapes, strides)


# PyTorch's meta kernels of these need no values; tritongrad's ops read them on the host
# (one_hot's and nll_loss's range checks), so they refuse a meta tensor
TORCH_DIFFERS = {"one_hot", "nll_none"}
# strides that differ from PyTorch's on the CPU too: a binary op's result follows NumPy's
# layout rule where PyTorch's follows its first operand; the attention's output layout
TORCH_STRIDES_DIFFER = {"MultiheadAttention", "add_permuted_contiguous", "where_permuted"}


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", sorted(set(CASES) - READS_VALUES - {"mixed_devices"}))
def test_meta_gives_what_the_cpu_gives(name):
    meta, cpu = run_case(tg, CASES[name], "meta"), run_case(tg, CASES[name], "cpu")
    if cpu[0] == "error":  # (a bad call: the same error)
        assert meta == cpu
        return
    assert meta[0] == "ok", (meta, cpu)
    assert [s[:2] for s in meta[1]] == [s[:2] for s in cpu[1]]
    assert all(s[2] == "meta" for s in meta[1]), meta
    assert meta[2] == cpu[2], "strides"


@pytest.mark.parametrize("name", sorted(READS_VALUES | {"mixed_devices"}))
def test_reading_values_refuses(name):
    result = run_case(tg, CASES[name], "meta")
    assert result[0] == "error", result
    assert result[1] in ("NotImplementedError", "RuntimeError")


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_as_torch(name):
    torch = _torch()
    mine, theirs = run_case(tg, CASES[name]), run_case(torch, CASES[name])
    if name in TORCH_DIFFERS:
        assert (mine[0], theirs[0]) == ("error", "ok")
        return
    assert mine[:2] == theirs[:2]
    if name not in TORCH_STRIDES_DIFFER:
        assert mine[2:] == theirs[2:], "strides"


def test_messages_and_facts():
    x = tg.empty(3, 4, device="meta")
    assert repr(x) == "tensor(..., device='meta', size=(3, 4))"
    assert repr(tg.arange(5, device="meta")) == \
        "tensor(..., device='meta', size=(5,), dtype=tritongrad.int64)"
    y = tg.empty(2, device="meta", requires_grad=True)
    assert repr(y * 2) == "tensor(..., device='meta', size=(2,), grad_fn=<MulBackward0>)"
    assert str(tg.empty((), device="meta")) == "tensor(..., device='meta', size=())"
    assert x.is_meta and not tg.ones(1).is_meta and not x.is_cuda
    assert x.device == tg.device("meta") and x.get_device() == -1
    assert x.data_ptr() == 0 and x.untyped_storage().nbytes() == 48
    assert x.type() == "tritongrad.meta.FloatTensor"
    assert tg.device("meta:0").index == 0
    assert tg.empty(2, device="meta:0").device == tg.device("meta")
    with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta"):
        tg.empty(1, device="meta").item()
    with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta"):
        bool(tg.empty(1, device="meta"))
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        x.cpu()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        x.numpy()
    with pytest.raises(NotImplementedError, match="nonzero: not supported on the meta device"):
        x.nonzero()
    with pytest.raises(NotImplementedError, match="reads the tensor's values on the host"):
        tg.linalg.inv(tg.empty(3, 3, device="meta"))
    with pytest.raises(RuntimeError, match="cpu, cuda, meta device type"):
        tg.device("metal")


def test_nothing_is_allocated_or_drawn():
    """A 400 MB model built on meta holds no memory, and its initialisation draws nothing
    (the CPU generator is where it was, as PyTorch's)."""
    tg.manual_seed(3)
    tracemalloc.start()
    with tg.device("meta"):
        model = tg.nn.Sequential(tg.nn.Linear(10_000, 10_000), tg.nn.Linear(10_000, 10))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sum(p.numel() for p in model.parameters()) == 100_110_010
    assert peak < 2_000_000, peak
    after = tg.rand(3)
    tg.manual_seed(3)
    np.testing.assert_array_equal(after.numpy(), tg.rand(3).numpy())


def _net():
    nn = tg.nn
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 2))


def test_load_state_dict_assign_gives_the_model_its_weights():
    tg.manual_seed(0)
    ref = _net()
    with tg.device("meta"):
        model = _net()
    assert all(p.is_meta for p in model.parameters())
    with warnings.catch_warnings(record=True) as caught:  # a copy into meta does nothing
        warnings.simplefilter("always")
        model.load_state_dict(ref.state_dict())
    assert len(caught) == 6 and "copying from a non-meta parameter in the checkpoint to a " \
        "meta parameter" in str(caught[0].message) and "assign=True" in str(caught[0].message)
    assert all(p.is_meta for p in model.parameters())
    copied = copy.deepcopy(model)
    assert copied[0].weight.is_meta and copied[0].weight.shape == (8, 4)
    model.load_state_dict(ref.state_dict(), assign=True)
    w = model[0].weight
    assert type(w) is tg.nn.Parameter and w.requires_grad and w.device.type == "cpu"
    x = tg.randn(5, 4)
    np.testing.assert_array_equal(model(x).detach().numpy(), ref(x).detach().numpy())
    # the weights' values, against a float64 NumPy forward of the first layer
    want = x.numpy().astype(np.float64) @ ref[0].weight.detach().numpy().T.astype(np.float64) \
        + ref[0].bias.detach().numpy()
    np.testing.assert_allclose(model[0](x).detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_to_empty_then_reset_parameters_is_a_fresh_init():
    with tg.device("meta"):
        lin = tg.nn.Linear(4, 8)
    with pytest.raises(NotImplementedError, match="Please use torch.nn.Module.to_empty"):
        lin.to("cpu")
    lin.to_empty(device="cpu")
    assert lin.weight.device.type == "cpu" and isinstance(lin.weight, tg.nn.Parameter)
    tg.manual_seed(1)
    lin.reset_parameters()
    tg.manual_seed(1)
    fresh = tg.nn.Linear(4, 8)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), fresh.weight.detach().numpy())
    np.testing.assert_array_equal(lin.bias.detach().numpy(), fresh.bias.detach().numpy())


def test_a_training_step_on_meta():
    """Forward, backward and an optimizer step run on meta: every gradient and optimizer
    state has its parameter's shape, nothing has values."""
    with tg.device("meta"):
        model = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.ReLU(), tg.nn.Linear(8, 3))
        x, target = tg.empty(5, 4), tg.empty(5, dtype=tg.int64)
    opt = tg.optim.AdamW(model.parameters(), lr=0.1)
    loss = tg.nn.functional.cross_entropy(model(x), target)
    assert loss.is_meta and loss.shape == ()
    loss.backward()
    opt.step()
    for p in model.parameters():
        assert p.grad.is_meta and p.grad.shape == p.shape and p.grad.stride() == p.stride()
        assert opt.state[p]["exp_avg"].is_meta and opt.state[p]["exp_avg"].shape == p.shape


def test_to_meta_from_cpu_keeps_shape_dtype_and_history():
    x = tg.ones(2, 3, dtype=tg.float64, requires_grad=True)
    m = x.to("meta")
    assert m.is_meta and m.dtype is tg.float64 and m.grad_fn is not None
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        m.sum().backward()  # (the gradient has no values to bring back: PyTorch's error)


def test_between_meta_and_cuda():
    """The same moves with the CUDA device (emulated without a GPU, real on one)."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    c = tg.ones(2, 3, device="cuda").t()
    m = c.to("meta")
    assert m.is_meta and m.shape == (3, 2) and m.stride() == c.stride()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        m.to("cuda")
    with pytest.raises(RuntimeError, match="same device"):
        c + tg.empty(3, 2, device="meta")
    with tg.device("meta"):
        lin = tg.nn.Linear(3, 4)
    lin.to_empty(device="cuda")
    assert lin.weight.device.type == "cuda" and lin(tg.ones(2, 3, device="cuda")).shape == (2, 4)


@pytest.mark.parametrize("name", ["uniform_", "normal_", "xavier_uniform_", "xavier_normal_",
                                  "kaiming_uniform_", "kaiming_normal_", "trunc_normal_",
                                  "orthogonal_", "sparse_", "eye_", "zeros_", "ones_"])
def test_init_on_meta_fills_nothing_and_draws_nothing(name):
    args = (0.5,) if name == "sparse_" else ()
    tg.manual_seed(5)
    t = tg.empty(4, 5, device="meta")
    assert getattr(tg.nn.init, name)(t, *args) is t and t.shape == (4, 5)
    after = tg.rand(2)
    tg.manual_seed(5)
    np.testing.assert_array_equal(after.numpy(), tg.rand(2).numpy())


def test_bernoulli_of_meta_probabilities():
    p = tg.empty(3, 2, device="meta")
    out = tg.bernoulli(p)
    assert out.is_meta and out.shape == (3, 2) and out.dtype is tg.float32
