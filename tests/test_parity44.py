"""Differences from PyTorch found in session 44, each pinned to PyTorch's behaviour as measured
against torch 2.13, checked here against hand-computed values (torch is not installed in CI)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritongrad as tg


def test_size_converts_its_elements_through_index():
    s = tg.Size([np.int64(3), tg.tensor(4), True])
    assert s == (3, 4, 1) and all(type(d) is int for d in s) and isinstance(s, tg.Size)
    for bad, name in ((3.5, "float"), (tg.tensor(3.0), "Tensor"), ("a", "str")):
        with pytest.raises(TypeError, match=f"item 0 is '{name}'"):
            tg.Size([bad])
    with pytest.raises(TypeError):
        tg.Size(3)
    assert tg.zeros(2, 3).shape == tg.Size([2, 3]) and tg.zeros(2, 3).size() == (2, 3)


def test_vander_needs_more_than_one_column():
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        tg.linalg.vander(tg.tensor([1.0, 2.0]), N=1)
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        tg.linalg.vander(tg.tensor([2.0]))  # (N defaults to the length)


def test_slogdet_of_a_singular_matrix_backpropagates_non_finite_values():
    """PyTorch's gradient at a singular matrix comes from an LU solve on singular factors
    (infs and NaNs); it is not an error. The other matrices of the batch keep theirs."""
    A = tg.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 4.0]]], dtype=tg.float64,
                  requires_grad=True)
    sign, logabs = tg.linalg.slogdet(A)
    assert sign[0].item() == 0 and logabs[0].item() == -math.inf
    logabs.sum().backward()
    assert not np.isfinite(A.grad[0].numpy()).any()
    np.testing.assert_allclose(A.grad[1].numpy(), [[0.5, 0.0], [0.0, 0.25]])  # A^-T


def test_eig_refuses_non_finite_input_and_eigvals_without_a_graph_gives_nan():
    bad = tg.tensor([[[math.nan, 1.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 3.0]]])
    with pytest.raises(RuntimeError, match="linalg.eig: input tensor should not contain infs "
                                           "or NaNs"):
        tg.linalg.eig(bad)
    w = tg.linalg.eigvals(bad)
    assert w.dtype is tg.complex64 and np.isnan(w[0].numpy()).all()
    np.testing.assert_allclose(np.sort_complex(w[1].numpy()), [2, 3])
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        tg.linalg.eigvals(bad.clone().requires_grad_())  # (with a graph: eig's refusal)


def test_save_keeps_attributes_given_to_plain_tensors_and_parameters():
    import io
    x = tg.ones(2)
    x.note, x.extra = 5, {"a": [1, 2]}
    p = tg.nn.Parameter(tg.zeros(3))
    p.tag = "w"
    kept = tg.ones(2, requires_grad=True) * 2
    kept.retain_grad()  # (the library's own per-instance field is not an attribute to save)
    buf = io.BytesIO()
    tg.save({"x": [x, x], "p": p, "kept": kept.detach(), "plain": tg.ones(1)}, buf)
    for weights_only in (True, False):
        buf.seek(0)
        out = tg.load(buf, weights_only=weights_only)
        assert out["x"][0] is out["x"][1]
        assert out["x"][0].note == 5 and out["x"][0].extra == {"a": [1, 2]}
        assert isinstance(out["p"], tg.nn.Parameter) and out["p"].tag == "w"
        assert out["plain"].__dict__ == {} and out["kept"].__dict__ == {}
        np.testing.assert_array_equal(out["x"][0].numpy(), [1, 1])


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_take_tensors_only(op):
    x = tg.tensor([1, 0, 2])
    with pytest.raises(TypeError, match=f"{op}.*'other'.*must be Tensor, not int"):
        getattr(tg, op)(x, 2)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        getattr(x, op)(2)
    want = {"logical_and": [1, 0, 0], "logical_or": [1, 0, 1], "logical_xor": [0, 0, 1]}[op]
    r = getattr(tg, op)(x, tg.tensor([1.0, 0.0, 0.0]))
    assert r.dtype is tg.bool and r.tolist() == [bool(v) for v in want]


@pytest.mark.parametrize("op", ["xlogy", "special.xlog1py", "hypot", "copysign"])
def test_real_only_binary_ops_refuse_complex_operands(op):
    fn = tg
    for part in op.split("."):
        fn = getattr(fn, part)
    name = op.split(".")[-1]
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for '
                                                  f"'ComplexFloat'"):
        fn(tg.tensor([1.0, 2.0]), tg.tensor([1j, 2.0]))
    # (hypot takes no number, as PyTorch's: a TypeError)
    with pytest.raises(TypeError if name == "hypot" else NotImplementedError):
        fn(tg.tensor([1.0, 2.0]), 1j)


def test_dequantize_of_a_plain_tensor_is_float32():
    x = tg.tensor([1, 2], dtype=tg.int64)
    for r in (x.dequantize(), tg.dequantize(x)):
        assert r.dtype is tg.float32 and r.tolist() == [1.0, 2.0]
    f = tg.ones(2)
    assert f.dequantize() is f
    assert tg.dequantize(tg.ones(2, dtype=tg.float64)).dtype is tg.float32


def test_nansum_and_nanmean_refuse_complex_on_the_cpu():
    z = tg.tensor([1j, math.nan])
    for fn in (tg.nansum, tg.nanmean, lambda t: t.nansum(0)):
        with pytest.raises(RuntimeError, match="nansum on CPU does not support complex inputs"):
            fn(z)
    with pytest.raises(NotImplementedError, match="\"nansum_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        tg.nansum(tg.tensor([1.0]), dtype=tg.complex64)
    assert tg.nansum(tg.tensor([1.0, math.nan, 2.0])).item() == 3.0


def test_repeat_interleave_counts_are_int32_or_int64():
    for dt, name in ((tg.uint8, "Byte"), (tg.int16, "Short"), (tg.bool, "Bool"),
                     (tg.float32, "Float")):
        with pytest.raises(NotImplementedError, match=f"not implemented for '{name}'"):
            tg.repeat_interleave(tg.tensor([1, 2]).to(dt))
        with pytest.raises(NotImplementedError, match=f"not implemented for '{name}'"):
            tg.repeat_interleave(tg.tensor([5, 6]), tg.tensor([1, 1]).to(dt))
    r = tg.repeat_interleave(tg.tensor([1, 2], dtype=tg.int32))
    assert r.dtype is tg.int32 and r.tolist() == [0, 1, 1]  # (the counts' dtype)


@pytest.mark.parametrize("early_stop", [True, False])
def test_checkpoint_recomputation_updates_running_statistics_as_pytorch(early_stop):
    """PyTorch's batch norm updates its running statistics inside the op, before it saves: a
    non-reentrant checkpoint's recomputation updates them a second time even where it stops
    at that op's saves. Its instance norm copies them after its saves: the early stop skips
    that second update. (Values: torch 2.13.)"""
    from tritongrad.utils import checkpoint as cp
    with cp.set_checkpoint_early_stop(early_stop):
        bn = tg.nn.BatchNorm1d(2)
        x = tg.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
        cp.checkpoint(bn, x, use_reentrant=False).sum().backward()
        np.testing.assert_allclose(bn.running_mean.numpy(), [0.38, 0.665], rtol=1e-6)
        np.testing.assert_allclose(bn.running_var.numpy(), [1.19, 1.665], rtol=1e-6)
        assert int(bn.num_batches_tracked) == 2
        inorm = tg.nn.InstanceNorm1d(2, track_running_stats=True)
        x = tg.tensor([[[1.0, 2.0, 4.0], [3.0, 5.0, 0.0]]], requires_grad=True)
        cp.checkpoint(inorm, x, use_reentrant=False).sum().backward()
        once = [0.1 * 7 / 3, 0.1 * 8 / 3]
        twice = [m * 0.9 + m for m in once]
        np.testing.assert_allclose(inorm.running_mean.numpy(), once if early_stop else twice,
                                   rtol=1e-5)


def test_clamp_nodes_are_named_per_op_and_bound_kind():
    a = tg.ones(2, requires_grad=True)
    names = {"clamp(min=1)": a.clamp(min=1), "clamp(max=1)": a.clamp(max=1),
             "clamp_min(1)": a.clamp_min(1), "clamp_max(1)": a.clamp_max(1),
             "clamp(min=t)": a.clamp(min=tg.zeros(2)),
             "clamp_min(t)": a.clamp_min(tg.zeros(2)), "clamp_max(t)": a.clamp_max(tg.ones(2)),
             "clamp_min_(1)": a.clone().clamp_min_(1),
             "clamp_max_(t)": a.clone().clamp_max_(tg.zeros(2))}
    want = {"clamp(min=1)": "ClampBackward1", "clamp(max=1)": "ClampBackward1",
            "clamp_min(1)": "ClampMinBackward0", "clamp_max(1)": "ClampMaxBackward0",
            "clamp(min=t)": "ClampBackward0", "clamp_min(t)": "ClampMinBackward1",
            "clamp_max(t)": "ClampMaxBackward1", "clamp_min_(1)": "ClampMinBackward0",
            "clamp_max_(t)": "ClampMaxBackward1"}
    assert {k: type(v.grad_fn).__name__ for k, v in names.items()} == want
    assert names["clamp_max(t)"].grad_fn._saved_max.tolist() == [1.0, 1.0]
    x = tg.tensor([-1.0, 0.5, 3.0], requires_grad=True)
    y = x.clone().clamp_max_(tg.tensor([0.0, 1.0, 1.0]))
    y.sum().backward()
    assert y.tolist() == [-1.0, 0.5, 1.0] and x.grad.tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(RuntimeError, match="can't be cast"):
        tg.tensor([1, 5]).clamp_min_(2.5)


def test_lbfgs_strong_wolfe_reads_the_loss_without_the_scalar_warning():
    import warnings
    w = tg.zeros(2, requires_grad=True)
    opt = tg.optim.LBFGS([w], max_iter=3, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step(closure)
    np.testing.assert_allclose(w.detach().numpy(), [1.0, 1.0], atol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
def test_pad_packed_sequence_of_an_unsorted_pack_is_an_index_select(batch_first):
    rnn = tg.nn.utils.rnn
    x = tg.arange(24.0).reshape((3, 4, 2) if batch_first else (4, 3, 2)).requires_grad_()
    p = rnn.pack_padded_sequence(x, tg.tensor([2, 4, 3]), batch_first=batch_first,
                                 enforce_sorted=False)
    out, lengths = rnn.pad_packed_sequence(p, batch_first=batch_first, padding_value=-1)
    assert out.is_contiguous() and type(out.grad_fn).__name__ == "IndexSelectBackward0"
    assert lengths.tolist() == [2, 4, 3]
    seq = (out if batch_first else out.transpose(0, 1)).detach()
    ref = x.detach() if batch_first else x.detach().transpose(0, 1)
    for b, n in enumerate([2, 4, 3]):
        np.testing.assert_array_equal(seq[b, :n].numpy(), ref[b, :n].numpy())
        assert (seq[b, n:].numpy() == -1).all()


def test_a_string_given_to_to_is_a_device_and_bad_rounding_modes_are_runtime_errors():
    with pytest.raises(RuntimeError, match="device string: 'float32'"):
        tg.ones(2).to("float32")
    assert tg.ones(2).to("cpu", tg.float64).dtype is tg.float64
    for fn in (lambda: tg.div(tg.ones(2), 2, rounding_mode="foo"),
               lambda: tg.ones(2).div_(2, rounding_mode="foo")):
        with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or "
                                               "'floor' but found 'foo'"):
            fn()


def test_gradcheck_gives_each_run_a_fresh_grad_output():
    """A backward that scales its grad_output in place is still reentrant: PyTorch fills the
    grad_output afresh for each column."""
    class Double(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            g.mul_(2)
            return g
    x = tg.rand(3, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(Double.apply, (x,))
    assert tg.autograd.gradcheck(Double.apply, (x,), fast_mode=True)


def test_variable_is_a_class_every_tensor_is_an_instance_of():
    from tritongrad.autograd import Variable
    assert isinstance(tg.ones(1), Variable) and not isinstance([1.0], Variable)
    v = Variable(tg.ones(2), requires_grad=True)
    assert type(v) is tg.Tensor and v.requires_grad and v.is_leaf
    e = Variable()
    assert e.shape == (0,) and e.dtype is tg.float32
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1.0])


def test_save_on_cpu_takes_the_cpu_device_type():
    a = tg.ones(2, requires_grad=True)
    with tg.autograd.graph.save_on_cpu(pin_memory=False, device_type="cpu"):
        y = a * a
    y.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]


def test_the_in_place_error_hint_under_anomaly_detection():
    for anomaly, hint in ((False, "enable anomaly detection"),
                          (True, "the backtrace further above shows the operation")):
        with tg.autograd.set_detect_anomaly(anomaly):
            a = tg.ones(2, requires_grad=True)
            b = a.sigmoid()
            b.mul_(2)
            with pytest.raises(RuntimeError, match=hint):
                b.sum().backward()


def test_repr_names_the_engines_own_nodes_without_their_namespace():
    a = tg.ones(2, requires_grad=True)
    b = a.clone()
    b[0] = 5
    c = tg.zeros(2)
    c.copy_(a)
    assert repr(b).endswith("grad_fn=<CopySlices>)") and repr(c).endswith("grad_fn=<CopyBackwards>)")
    assert c.grad_fn.name().endswith("::CopyBackwards")  # (name() keeps it)
