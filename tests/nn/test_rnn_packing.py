"""nn.utils.rnn (PackedSequence, pack/pad and their inverses) against NumPy float64 layouts
built here, and RNN/LSTM/GRU on packed input against each sequence run alone, unpadded,
through the same module; gradients against finite differences."""

import numpy as np
import pytest
from tritongrad.nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn


def _random_batch(seed: int):
    """Lengths (1..6, unsorted, with ties likely), the sequences (L_i, *trailing) in float64."""
    r = np.random.default_rng(seed)
    lengths = r.integers(1, 7, size=int(r.integers(1, 6)))
    trailing = tuple(int(n) for n in r.integers(1, 4, size=int(r.integers(0, 3))))
    return lengths, [r.standard_normal((int(n),) + trailing) for n in lengths]


def _np_pad(seqs, batch_first, value, side="right", total=None):
    steps = total or max(len(s) for s in seqs)
    out = np.full((steps, len(seqs)) + seqs[0].shape[1:], value, dtype=np.float64)
    for b, s in enumerate(seqs):
        if side == "right":
            out[:len(s), b] = s
        elif len(s):
            out[steps - len(s):, b] = s
    return out.swapaxes(0, 1) if batch_first else out


def _np_pack(seqs):
    """PyTorch's layout: longest first (ties keep their order), step by step."""
    order = sorted(range(len(seqs)), key=lambda b: -len(seqs[b]))
    steps = len(seqs[order[0]])
    rows = [seqs[b][t] for t in range(steps) for b in order if len(seqs[b]) > t]
    sizes = [sum(len(s) > t for s in seqs) for t in range(steps)]
    return np.stack(rows), sizes, order


# -- packing and padding -----------------------------------------------------------------------

# (device, seed): fewer seeds on the emulated device, whose gathers run in Triton's interpreter
SEEDED = [("cpu", seed) for seed in range(8)] + [("cuda", seed) for seed in range(2)]


@pytest.mark.parametrize("device, seed", SEEDED)
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_pad_round_trip_on_random_lengths(seed, batch_first, device):
    lengths, seqs = _random_batch(seed)
    padded = tg.tensor(_np_pad(seqs, batch_first, 0.0), device=device)
    ref_data, ref_sizes, order = _np_pack(seqs)

    packed = pack_padded_sequence(padded, tg.tensor(lengths), batch_first=batch_first,
                                  enforce_sorted=False)
    np.testing.assert_array_equal(host(packed.data), ref_data)
    assert packed.batch_sizes.dtype == tg.int64 and packed.batch_sizes.device.type == "cpu"
    assert packed.batch_sizes.tolist() == ref_sizes
    assert packed.sorted_indices.tolist() == order
    assert packed.sorted_indices.device.type == device
    assert packed.unsorted_indices.tolist() == np.argsort(order).tolist()

    out, out_lengths = pad_packed_sequence(packed, batch_first=batch_first, padding_value=-3.0,
                                           total_length=int(lengths.max()) + 1)
    np.testing.assert_array_equal(host(out), _np_pad(seqs, batch_first, -3.0,
                                                     total=int(lengths.max()) + 1))
    assert out_lengths.tolist() == lengths.tolist() and out_lengths.device.type == "cpu"
    for got, ref in zip(unpack_sequence(packed), seqs):
        np.testing.assert_array_equal(host(got), ref)

    # already sorted: no permutation kept
    by_length = [seqs[b] for b in order]
    packed = pack_sequence([tg.tensor(s, device=device) for s in by_length])
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    np.testing.assert_array_equal(host(packed.data), ref_data)


@pytest.mark.parametrize("device, seed", SEEDED[:4] + SEEDED[-1:])
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_sides_and_unpad(seed, side, batch_first, device):
    _, seqs = _random_batch(seed)
    seqs[0] = seqs[0][:0]  # an empty sequence pads fully
    tensors = [tg.tensor(s, device=device) for s in seqs]
    out = pad_sequence(tensors, batch_first=batch_first, padding_value=7.0, padding_side=side)
    np.testing.assert_array_equal(host(out), _np_pad(seqs, batch_first, 7.0, side))
    if side == "right":
        for got, ref in zip(unpad_sequence(out, tg.tensor([len(s) for s in seqs]),
                                           batch_first), seqs):
            np.testing.assert_array_equal(host(got), ref)


def test_gradients_flow_through_packing_and_padding(device):
    seqs = [tg.randn(n, 2, dtype=tg.float64, device=device, requires_grad=True)
            for n in (2, 4, 1)]

    def chain(a, b, c):  # pad -> pack (unsorted) -> pad, and back to the sequences
        packed = pack_padded_sequence(pad_sequence([a, b, c], padding_side="left").flip(0),
                                      [2, 4, 1], enforce_sorted=False)
        out, _ = pad_packed_sequence(packed, batch_first=True, total_length=5)
        return out.sin() * tg.arange(1.0, 6.0, dtype=tg.float64, device=device)[:, None]

    if device == "cpu":  # (the interpreter makes the Jacobian's many backwards slow)
        assert tg.autograd.gradcheck(chain, seqs)
    # element s of a sequence of length L lands (reversed) at step L-1-s, weighted L-s
    chain(*seqs).sum().backward()
    a = host(seqs[1])
    np.testing.assert_allclose(host(seqs[1].grad), np.cos(a) * np.arange(4, 0, -1)[:, None],
                               rtol=1e-12)


def test_packed_sequence_is_a_namedtuple_that_converts_its_data(device):
    packed = pack_sequence([tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0, 5.0])],
                           enforce_sorted=False)
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert data.tolist() == [3.0, 1.0, 4.0, 2.0, 5.0] and batch_sizes.tolist() == [2, 2, 1]
    assert sorted_indices.tolist() == [1, 0] and unsorted_indices.tolist() == [1, 0]
    assert repr(packed).startswith("PackedSequence(data=tensor(")
    assert packed.to(tg.float32) is packed and packed.cpu() is packed
    assert packed.double().data.dtype == tg.float64 and packed.int().data.dtype == tg.int32
    assert packed.long().data.dtype == tg.int64 and packed.half().data.dtype == tg.float16
    assert packed.byte().data.dtype == tg.uint8 and packed.char().data.dtype == tg.int8
    assert packed.short().data.dtype == tg.int16
    moved = packed.to(device)
    assert moved.is_cuda == (device == "cuda") and moved.data.device.type == device
    assert moved.sorted_indices.device.type == device
    assert moved.batch_sizes.device.type == "cpu"  # always
    if device == "cuda":
        assert packed.cuda().is_cuda and not moved.cpu().is_cuda
        with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
            PackedSequence(data, batch_sizes.to(device))
    assert invert_permutation(tg.tensor([2, 0, 3, 1], device=device)).tolist() == [1, 3, 0, 2]
    assert invert_permutation(None) is None
    again = PackedSequence((data, batch_sizes), sorted_indices=tg.tensor([1, 0]))  # tuple form
    assert again.unsorted_indices.tolist() == [1, 0]


def test_packing_errors_as_pytorch():
    x = tg.randn(4, 3, 2)
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order "
                                           "when `enforce_sorted` is True. You can pass "
                                           "`enforce_sorted=False`"):
        pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [3, 2, 0])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [3, 0, 2], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to "
                                           r"batch_size, but got 2 \(batch_size=3\)"):
        pack_padded_sequence(x, [3, 2])
    with pytest.raises(RuntimeError, match="a length of 5 exceeds the input's 4 time steps"):
        pack_padded_sequence(x, [5, 2, 1])
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 "
                                           "tensor, but got 2D cpu Long tensor"):
        pack_padded_sequence(x, tg.tensor([[3, 2, 1]]))
    with pytest.raises(RuntimeError, match="Cannot pack empty tensors."):
        pack_padded_sequence(tg.randn(0, 3, 2), [1, 1, 1])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of "
                                         "the longest sequence in input, but got "
                                         "total_length=2 and max sequence length being 4"):
        pad_packed_sequence(pack_padded_sequence(x, [4, 2, 1]), total_length=2)
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match="Expected iterable for input sequences"):
        pad_sequence(3)
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, "
                                           "but got middle."):
        pad_sequence([tg.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        pad_sequence([tg.ones(2, 3), tg.ones(3, 4)])
    # float lengths are truncated to int64, as PyTorch converts them
    assert pack_padded_sequence(x, tg.tensor([3.0, 2.0, 1.0])).batch_sizes.tolist() == [3, 2, 1]
    # the output takes the first sequence's dtype; an integer padding value
    out = pad_sequence([tg.tensor([1, 2]), tg.tensor([3.5])], padding_value=9)
    assert out.dtype == tg.int64 and out.tolist() == [[1, 3], [2, 9]]


# -- RNN, LSTM and GRU on packed input ---------------------------------------------------------

CASES = [(nn.LSTM, {}), (nn.LSTM, {"num_layers": 2, "bidirectional": True}),
         (nn.LSTM, {"bidirectional": True, "proj_size": 2, "batch_first": True}),
         (nn.GRU, {"num_layers": 2, "bidirectional": True}),
         (nn.RNN, {"num_layers": 2, "bidirectional": True, "nonlinearity": "relu"}),
         (nn.RNN, {"batch_first": True})]


def _state(module, batch, r):
    dirs = 2 if module.bidirectional else 1
    h = tg.tensor(r.standard_normal((dirs * module.num_layers, batch,
                                     module.proj_size or module.hidden_size)))
    if isinstance(module, nn.LSTM):
        return h, tg.tensor(r.standard_normal((dirs * module.num_layers, batch,
                                               module.hidden_size)))
    return h


def _alone(module, seq, hx, b):
    """Sequence b run by itself, unpadded: (output (L, D*H), its states (.., 1, H))."""
    one = hx[:, b:b + 1] if isinstance(hx, tg.Tensor) else tuple(t[:, b:b + 1] for t in hx)
    x = seq.unsqueeze(0 if module.batch_first else 1)
    out, state = module(x, one)
    return out.squeeze(0 if module.batch_first else 1), state


@pytest.mark.parametrize("cls, kw", CASES, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_packed_rnn_equals_each_sequence_alone(cls, kw, enforce_sorted):
    r = np.random.default_rng(3)
    module = cls(3, 4, **kw).double()
    lengths = [5, 4, 4, 2, 1] if enforce_sorted else [2, 5, 1, 4, 5]
    seqs = [tg.tensor(r.standard_normal((n, 3))) for n in lengths]
    hx = _state(module, len(lengths), r)
    packed = pack_padded_sequence(pad_sequence(seqs, batch_first=module.batch_first), lengths,
                                  batch_first=module.batch_first, enforce_sorted=enforce_sorted)
    out, state = module(packed, hx)
    assert isinstance(out, PackedSequence) and out.batch_sizes is packed.batch_sizes
    padded, _ = pad_packed_sequence(out, batch_first=True)
    states = state if isinstance(state, tuple) else (state,)
    for b, seq in enumerate(seqs):
        ref_out, ref_state = _alone(module, seq, hx, b)
        np.testing.assert_allclose(host(padded[b, :lengths[b]]), host(ref_out), rtol=1e-12,
                                   atol=1e-12)
        assert not host(padded[b, lengths[b]:]).any()
        ref_states = ref_state if isinstance(ref_state, tuple) else (ref_state,)
        for got, ref in zip(states, ref_states):
            np.testing.assert_allclose(host(got[:, b]), host(ref[:, 0]), rtol=1e-12,
                                       atol=1e-12)
    # no initial state: zeros, the same as passing them
    zeros = tuple(tg.zeros_like(t) for t in (hx if isinstance(hx, tuple) else (hx,)))
    out0, _ = module(packed)
    out1, _ = module(packed, zeros if isinstance(hx, tuple) else zeros[0])
    np.testing.assert_array_equal(host(out0.data), host(out1.data))


def test_packed_gru_parameter_gradients_equal_the_sum_over_sequences():
    r = np.random.default_rng(4)
    gru = nn.GRU(2, 3, num_layers=2, bidirectional=True).double()
    lengths = [3, 1, 4]
    seqs = [tg.tensor(r.standard_normal((n, 2))) for n in lengths]
    out, h = gru(pack_sequence(seqs, enforce_sorted=False))
    (out.data.sum() + (h * h).sum()).backward()
    packed_grads = [host(p.grad) for p in gru.parameters()]
    gru.zero_grad()
    for seq in seqs:
        o, hb = gru(seq.unsqueeze(1))
        (o.sum() + (hb * hb).sum()).backward()
    for got, p in zip(packed_grads, gru.parameters()):
        np.testing.assert_allclose(got, host(p.grad), rtol=1e-10, atol=1e-12)


def test_packed_lstm_gradcheck():
    r = np.random.default_rng(6)
    lstm = nn.LSTM(2, 2, num_layers=2, bidirectional=True).double()
    lengths = [2, 3, 1]
    x = tg.tensor(r.standard_normal((3, 3, 2)), requires_grad=True)
    h0, c0 = (tg.tensor(r.standard_normal((4, 3, 2)), requires_grad=True) for _ in range(2))
    w = lstm.weight_hh_l0_reverse.detach().clone().requires_grad_(True)
    del lstm.weight_hh_l0_reverse  # the reverse direction's recurrent weight becomes an input

    def fn(x, h0, c0, w):
        object.__setattr__(lstm, "weight_hh_l0_reverse", w)
        out, (h, c) = lstm(pack_padded_sequence(x, lengths, enforce_sorted=False), (h0, c0))
        return pad_packed_sequence(out)[0], h, c

    assert tg.autograd.gradcheck(fn, (x, h0, c0, w))


def test_packed_dropout_between_layers():
    # dropout=1 zeroes the first layer's outputs: the second layer reads zeros, packed or not
    gru = nn.GRU(2, 3, num_layers=2, dropout=1.0).double()
    seqs = [tg.randn(n, 2, dtype=tg.float64) for n in (3, 1, 2)]
    out, h = gru(pack_sequence(seqs, enforce_sorted=False))
    for b, seq in enumerate(seqs):
        ref_out, ref_h = gru(seq.unsqueeze(1))
        np.testing.assert_allclose(host(unpack_sequence(out)[b]), host(ref_out[:, 0]),
                                   rtol=1e-12)
        np.testing.assert_allclose(host(h[:, b]), host(ref_h[:, 0]), rtol=1e-12)
    gru.eval()
    assert gru(pack_sequence(seqs, enforce_sorted=False))[0].data.shape == (6, 3)


def test_packed_rnn_errors():
    lstm = nn.LSTM(2, 3)
    packed = pack_padded_sequence(tg.randn(4, 3, 2), [4, 2, 1])
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 3\), got "
                                           r"\[1, 2, 3\]"):
        lstm(packed, (tg.zeros(1, 2, 3), tg.zeros(1, 2, 3)))
    with pytest.raises(RuntimeError, match="input must have 2 dimensions, got 3"):
        lstm(PackedSequence(tg.randn(7, 3, 2), tg.tensor([3, 2, 1, 1])))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 2, got 4"):
        lstm(PackedSequence(tg.randn(7, 4), tg.tensor([3, 2, 1, 1])))
    with pytest.raises(TypeError, match="expected a Tensor or PackedSequence input"):
        lstm([1.0, 2.0])
