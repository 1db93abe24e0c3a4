"""Arguments tritongrad accepts for PyTorch compatibility are honoured or refused, never
silently ignored: a value it cannot honour raises NotImplementedError (a RuntimeError, PyTorch's
type for unsupported combinations) naming the op, the argument and what is supported.

Honoured as hints, as PyTorch documents them: ``non_blocking=True`` from pageable memory (the
copy is complete on return; from pinned memory it is asynchronous: tests/runtime/test_pinned.py),
clip_grad's ``foreach``.
"""

import io
import re
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn

F = nn.functional


def refused(op, arg, value):
    return pytest.raises(NotImplementedError,
                         match="^" + re.escape(f"{op}: {arg}={value!r} is not supported by "
                                               f"tritongrad ("))


# -- generator= --------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [tg.rand, tg.randn])
def test_generator_is_honoured_and_checked(fn):
    # generator= is honoured (tests/autograd/test_ops_random.py); anything but a Generator is
    # PyTorch's TypeError, never silently ignored
    with pytest.raises(TypeError, match=f"{fn.__name__}\\(\\): argument 'generator' must be "
                                        f"Generator, not str"):
        fn(2, generator="gen")
    a = fn(3, generator=tg.Generator().manual_seed(7))
    b = fn(3, generator=tg.Generator().manual_seed(7))
    assert a.tolist() == b.tolist() and tuple(fn(2, generator=None).shape) == (2,)


@pytest.mark.parametrize("init", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_",
                                  "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
                                  "orthogonal_", "sparse_"])
def test_init_generator_is_honoured_and_checked(init):
    args = (0.5,) if init == "sparse_" else ()

    def draw(gen):
        w = tg.zeros(3, 4)
        getattr(nn.init, init)(w, *args, generator=gen)
        return w

    tg.manual_seed(0)
    a = draw(tg.Generator().manual_seed(7))
    after_a = tg.rand(2)  # (a Generator's draws leave the global stream alone)
    tg.manual_seed(0)
    b = draw(tg.Generator().manual_seed(7))
    assert tg.equal(a, b) and tg.equal(after_a, tg.rand(2))
    assert not tg.equal(a, draw(tg.Generator().manual_seed(8)))
    w = tg.zeros(3, 4)
    with pytest.raises(TypeError, match="argument 'generator' must be Generator, not int"):
        getattr(nn.init, init)(w, *args, generator=0)
    assert (w == 0).all().item()  # refused before anything was written


# -- memory_format= ----------------------------------------------------------------------------

def test_memory_formats_exist_as_pytorch_names():
    assert repr(tg.contiguous_format) == "tritongrad.contiguous_format"
    assert isinstance(tg.channels_last, tg.memory_format)


@pytest.mark.parametrize("call, op", [
    (lambda x, f: x.clone(memory_format=f), "clone"),
    (lambda x, f: tg.empty_like(x, memory_format=f), "empty_like"),
    (lambda x, f: tg.zeros_like(x, memory_format=f), "zeros_like"),
    (lambda x, f: tg.ones_like(x, memory_format=f), "ones_like"),
    (lambda x, f: tg.empty(2, 3, 4, 5, memory_format=f), "empty"),
    (lambda x, f: x.to(tg.float64, memory_format=f), "to"),
    (lambda x, f: x.cuda(memory_format=f), "cuda"),
])
def test_memory_format(device, call, op):
    # (the layouts themselves: test_memory_format.py)
    x = tg.ones(2, 3, 4, 5, device=device)
    for fmt in (tg.contiguous_format,) if op == "empty" else (tg.contiguous_format,
                                                               tg.preserve_format):
        out = call(x, fmt)
        assert out.is_contiguous() and tuple(out.shape) == (2, 3, 4, 5)
    assert call(x, tg.channels_last).is_contiguous(memory_format=tg.channels_last)
    with pytest.raises(TypeError, match="must be memory_format, not str"):
        call(x, "channels_last")


def test_module_to_memory_format():
    m = nn.Linear(2, 2).to(memory_format=tg.contiguous_format)
    assert m.to(memory_format=tg.channels_last) is m
    assert m.weight.stride() == (2, 1)  # 2-D: only 4-D and 5-D tensors are laid out


def test_contiguous_memory_formats(device):
    x = tg.ones(2, 3, device=device).t()
    assert x.contiguous(memory_format=tg.contiguous_format).is_contiguous()
    assert x.is_contiguous(memory_format=tg.contiguous_format) is False
    assert x.is_contiguous(memory_format=tg.channels_last) is False
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the "
                                           "contiguous operator"):
        x.contiguous(memory_format=tg.preserve_format)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        x.contiguous(memory_format=tg.channels_last)


# -- non_blocking= (a hint: the copy is synchronous, complete on return) -----------------------

def test_non_blocking_copies_are_complete_on_return(device):
    x = tg.arange(6.0)
    assert x.to(device, non_blocking=True).cpu().tolist() == x.tolist()
    assert x.to(device, tg.float64, True).cpu().tolist() == x.tolist()  # to(dev, dt, nb)
    dst = tg.zeros(6, device=device)
    assert dst.copy_(x, non_blocking=True) is dst
    assert dst.cpu().tolist() == x.tolist()


# -- other arguments ---------------------------------------------------------------------------

def test_zeros_out_is_written(device):
    out = tg.ones(2, 3, device=device)
    assert tg.zeros(2, 3, out=out) is out
    assert (out == 0).all().item()
    assert tg.zeros(3, 4, out=out) is out and out.shape == (3, 4)  # resized, as PyTorch's
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tg.zeros(2, 3, out=tg.ones(2, 3, requires_grad=True))


def test_randint_requires_grad_is_checked():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        tg.randint(0, 5, (3,), requires_grad=True)


def test_save_on_cpu_device_type():
    with refused("save_on_cpu", "device_type", "xpu"):
        tg.autograd.graph.save_on_cpu(device_type="xpu")


def test_variable_volatile_warns_as_pytorch():
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        tg.autograd.Variable(tg.ones(1), volatile=True)


def test_array_protocol_copy():
    x = tg.arange(3.0)
    c = np.array(x, copy=True)
    assert not np.shares_memory(c, np.asarray(x)) and c.tolist() == [0, 1, 2]
    assert np.shares_memory(np.asarray(x, copy=False), x.numpy())
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.array(x, dtype=np.float64, copy=False)
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.array(x.bfloat16(), copy=False)


# -- nn ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [F.silu, lambda x, inplace: F.dropout(x, 0.5, True, inplace)])
def test_inplace_activations_write_and_record(device, fn):
    x = tg.randn(6, device=device, requires_grad=True)
    tg.manual_seed(1)
    h = x * 1.0
    y = fn(h, inplace=True)
    assert y is h
    y.sum().backward()
    x2 = x.detach().clone().requires_grad_()
    tg.manual_seed(1)
    ref = fn(x2 * 1.0, inplace=False)
    ref.sum().backward()
    np.testing.assert_allclose(y.detach().cpu().numpy(), ref.detach().cpu().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), x2.grad.cpu().numpy(), rtol=1e-6)


def test_silu_module_passes_inplace():
    h = tg.randn(4)
    assert nn.SiLU(inplace=True)(h) is h
    assert repr(nn.SiLU(inplace=True)) == "SiLU(inplace=True)"


def test_mse_loss_weight_is_applied():
    x, w = tg.tensor([1.0, 2.0, 3.0]), tg.tensor([1.0, 1.0, 4.0])
    # ('mean' divides by the weights' sum, as PyTorch 2.13)
    assert float(F.mse_loss(x, tg.zeros(3), weight=w)) == pytest.approx((1 + 4 + 36) / 6)


# -- serialization -----------------------------------------------------------------------------

def _saved() -> bytes:
    buf = io.BytesIO()
    tg.save({"w": tg.ones(2)}, buf)
    return buf.getvalue()


def test_load_weights_only_both_ways_for_plain_values():
    assert tg.load(io.BytesIO(_saved()), weights_only=True)["w"].tolist() == [1.0, 1.0]
    assert tg.load(io.BytesIO(_saved()), weights_only=False)["w"].tolist() == [1.0, 1.0]
    assert tg.load(io.BytesIO(_saved()), weights_only=None)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="weights_only must be a bool"):
        tg.load(io.BytesIO(_saved()), weights_only="yes")


def test_load_mmap_and_pickle_args_are_refused():
    assert tg.load(io.BytesIO(_saved()), mmap=False)["w"].shape == (2,)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
        tg.load(io.BytesIO(_saved()), mmap=True)
    with refused("load", "encoding", "latin1"):
        tg.load(io.BytesIO(_saved()), encoding="latin1")


def test_save_pickle_arguments_are_accepted():
    # (PyTorch code passing them runs; the file is tritongrad's format all the same)
    for kwargs in ({"pickle_protocol": 2}, {"pickle_protocol": 5},
                   {"_use_new_zipfile_serialization": False}):
        buf = io.BytesIO()
        tg.save({"w": tg.arange(3.0)}, buf, **kwargs)
        assert tg.load(io.BytesIO(buf.getvalue()))["w"].tolist() == [0.0, 1.0, 2.0]
    for bad in (1, 99, "4"):
        with pytest.raises(ValueError, match="pickle_protocol must be an int from 2"):
            tg.save({}, io.BytesIO(), pickle_protocol=bad)


def test_nothing_warns_for_defaults():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.load(io.BytesIO(_saved()))
        tg.ones(2).clone(memory_format=None).contiguous()
