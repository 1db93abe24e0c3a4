"""nn.Transformer and its layers (nn/transformer.py): the order of operations of each layer
(post-norm and pre-norm) written out here from the submodules, gradients against central
differences in float64, masks, PyTorch's parameter names and checks, and a small model that
learns a copy task."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(3)


def ff(layer, x):
    return layer.linear2(layer.activation(layer.linear1(x)))


def sa(attn, x, mem=None, **kw):
    mem = x if mem is None else mem
    return attn(x, mem, mem, need_weights=False, **kw)[0]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", F.silu])
def test_encoder_layer_order_of_operations(norm_first, activation):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first).double()
    x = tg.tensor(rng.standard_normal((2, 5, 8)))
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=tg.float64)
    if norm_first:
        h = x + sa(layer.self_attn, layer.norm1(x), attn_mask=mask)
        want = h + ff(layer, layer.norm2(h))
    else:
        h = layer.norm1(x + sa(layer.self_attn, x, attn_mask=mask))
        want = layer.norm2(h + ff(layer, h))
    np.testing.assert_allclose(layer(x, src_mask=mask).detach().numpy(), want.detach().numpy(), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_order_of_operations(norm_first):
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first).double()
    x, mem = tg.tensor(rng.standard_normal((4, 2, 8))), tg.tensor(rng.standard_normal((6, 2, 8)))
    kpm = tg.tensor([[False] * 6, [False] * 4 + [True] * 2])
    if norm_first:
        h = x + sa(layer.self_attn, layer.norm1(x))
        h = h + sa(layer.multihead_attn, layer.norm2(h), mem, key_padding_mask=kpm)
        want = h + ff(layer, layer.norm3(h))
    else:
        h = layer.norm1(x + sa(layer.self_attn, x))
        h = layer.norm2(h + sa(layer.multihead_attn, h, mem, key_padding_mask=kpm))
        want = layer.norm3(h + ff(layer, h))
    got = layer(x, mem, memory_key_padding_mask=kpm)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_gradients_match_finite_differences():
    tg.manual_seed(0)
    enc = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, batch_first=True).double()
    dec = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, batch_first=True,
                                     norm_first=True).double()
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=tg.float64)
    x = tg.tensor(rng.standard_normal((2, 3, 4)))
    m = tg.tensor(rng.standard_normal((2, 5, 4)))
    assert_grads_match(lambda x: enc(x, src_mask=mask), [x], atol=1e-6)
    assert_grads_match(lambda x, m: dec(x, m, tgt_mask=mask), [x, m], atol=1e-6)


def test_causal_mask_and_is_causal_agree():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).double().eval()
    x = tg.tensor(rng.standard_normal((2, 6, 8)))
    mask = nn.Transformer.generate_square_subsequent_mask(6, dtype=tg.float64)
    a = layer(x, src_mask=mask)
    b = layer(x, src_mask=mask, is_causal=True)  # the hint: the mask is the causal mask
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
    # the prefix does not see the future: changing the last position leaves the rest alone
    y = x.clone()
    y[:, -1] = 0.0
    np.testing.assert_allclose(layer(y, src_mask=mask)[:, :-1].detach().numpy(), a[:, :-1].detach().numpy(),
                               rtol=1e-12, atol=1e-12)
    assert mask.tolist()[1] == [0.0, 0.0] + [float("-inf")] * 4


def test_stacks_copy_their_layer_and_apply_the_final_norm():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(8))
    assert len(enc.layers) == 3 and enc.layers[0] is not layer
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    x = tg.randn(5, 2, 8)
    h = x
    for sub in enc.layers:
        h = sub(h)
    np.testing.assert_allclose(enc(x).detach().numpy(), enc.norm(h).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_parameter_names_and_checks_are_pytorch_s():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    names = {n for n, _ in model.named_parameters()}
    for n in ["encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias",
              "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.linear1.weight",
              "encoder.layers.0.linear2.bias", "encoder.layers.0.norm2.weight",
              "encoder.norm.weight", "decoder.layers.0.multihead_attn.in_proj_weight",
              "decoder.layers.0.norm3.bias", "decoder.norm.bias"]:
        assert n in names, n
    assert len(names) == 12 + 18 + 4
    src, tgt = tg.randn(5, 2, 8), tg.randn(3, 2, 8)
    assert model(src, tgt).shape == (3, 2, 8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(src, tg.randn(3, 4, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal "
                                           "to d_model"):
        model(src, tg.randn(3, 2, 6))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_a_small_transformer_learns_to_copy():
    tg.manual_seed(0)
    vocab, d = 8, 32
    emb, pos = nn.Embedding(vocab, d), nn.Parameter(tg.randn(6, d) * 0.1)  # learned positions
    model = nn.Transformer(d, 4, 1, 1, 64, dropout=0.0, batch_first=True)
    head = nn.Linear(d, vocab)
    params = [pos, *emb.parameters(), *model.parameters(), *head.parameters()]
    opt = tg.optim.Adam(params, lr=3e-3)
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    losses = []
    for _ in range(200):  # (PyTorch 2.13 from the same seed: the same losses, ratio 0.036)
        seq = tg.randint(1, vocab, (16, 6))
        tgt_in = tg.cat([tg.zeros(16, 1, dtype=tg.int64), seq[:, :-1]], 1)  # shifted right
        out = head(model(emb(seq) + pos, emb(tgt_in) + pos, tgt_mask=mask))
        loss = F.cross_entropy(out.reshape(-1, vocab), seq.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-10:]) < 0.25 * np.mean(losses[:10])
