"""FlopCounterMode (utils/flop_counter.py) and ModuleTracker (utils/module_tracker.py).

The expected counts are written out from the formulas for small fixed shapes: a product
(m, k) @ (k, n) is 2mkn FLOPs and its backward one such product per operand that needs a
gradient; a convolution is 2 * N * C_out * C_in/groups * prod(output spatial) *
prod(kernel). The last tests compare whole programs with PyTorch's FlopCounterMode where
PyTorch is installed."""

from __future__ import annotations

import math
import warnings

import pytest

import tritongrad as tg
from tritongrad.utils import flop_counter
from tritongrad.utils.flop_counter import FlopCounterMode, register_flop_formula
from tritongrad.utils.module_tracker import ModuleTracker


def counts(fc) -> dict:
    """get_flop_counts() with the op keys as their names (``aten.mm``)."""
    return {mod: {str(op): n for op, n in ops.items()} for mod, ops in
            fc.get_flop_counts().items()}


def mm(m, k, n) -> int:
    return 2 * m * k * n


def test_mm_forward_and_backward_by_operand():
    a = tg.randn(3, 4, requires_grad=True)
    b = tg.randn(4, 5, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        (a @ b).sum().backward()
    # forward, then dA = g @ B^T (3x5 @ 5x4) and dB = A^T @ g (4x3 @ 3x5)
    assert counts(fc) == {"Global": {"aten.mm": mm(3, 4, 5) + mm(3, 5, 4) + mm(4, 3, 5)}}
    assert fc.get_total_flops() == 3 * 120
    with FlopCounterMode(display=False) as fc:  # only b needs a gradient: one product back
        (a.detach() @ b).sum().backward()
    assert fc.get_total_flops() == 2 * 120
    with FlopCounterMode(display=False) as fc:
        with tg.no_grad():
            a @ b
    assert fc.get_total_flops() == 120


def test_batched_products_einsum_and_addmm():
    a = tg.randn(2, 3, 4, requires_grad=True)
    w = tg.randn(4, 5, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        a @ w                                    # folded to one mm: (6, 4) @ (4, 5)
        tg.bmm(a, a.transpose(1, 2))             # 2 x (3, 4) @ (4, 3)
        tg.einsum("bij,bjk->bik", a, tg.randn(2, 4, 6))
        tg.addmm(tg.randn(3, 5), a[0], w, beta=0.5, alpha=2.0)
        tg.matmul(tg.randn(2, 2, 3, 4), tg.randn(2, 2, 4, 5))
    got = counts(fc)["Global"]
    assert got == {"aten.mm": mm(6, 4, 5),
                   "aten.bmm": 2 * mm(3, 4, 3) + 2 * mm(3, 4, 6) + 4 * mm(3, 4, 5),
                   "aten.addmm": mm(3, 4, 5)}


def test_linear_mlp_by_module():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(4, 5), tg.nn.ReLU(),
                             tg.nn.Sequential(tg.nn.Linear(5, 3, bias=False)))
    x = tg.randn(2, 4)
    with FlopCounterMode(display=False) as fc:
        model(x).sum().backward()
    first = {"aten.addmm": mm(2, 4, 5),          # the input needs no gradient: dW only
             "aten.mm": mm(5, 2, 4)}
    second = {"aten.mm": mm(2, 5, 3) + mm(2, 3, 5) + mm(3, 2, 5)}  # forward, dX, dW
    total = {"aten.addmm": first["aten.addmm"], "aten.mm": first["aten.mm"] + second["aten.mm"]}
    assert counts(fc) == {"Global": total, "Sequential": total, "Sequential.0": first,
                          "Sequential.2": second, "Sequential.2.0": second}
    assert fc.get_total_flops() == sum(total.values())


def conv_flops(n, c_out, c_in, out_spatial, kernel) -> int:
    return 2 * n * c_out * c_in * math.prod(out_spatial) * math.prod(kernel)


def test_convolutions_forward_and_backward():
    tg.manual_seed(0)
    conv = tg.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    x = tg.randn(2, 4, 7, 7, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        conv(x).sum().backward()
    fwd = conv_flops(2, 6, 2, (4, 4), (3, 3))  # output 4x4; C_in per group 2
    # PyTorch's formulas: the input gradient is a transposed convolution of the output
    # gradient (counted over its 4x4 positions, as the forward); the weight gradient a
    # convolution of the input (batch and channels swapped: batch 4) with the output gradient
    # as the filter (4x4), over the weight's 3x3 positions
    dx = fwd
    dw = conv_flops(4, 6, 2, (3, 3), (4, 4))
    assert counts(fc) == {"Global": {"aten.convolution": fwd,
                                     "aten.convolution_backward": dx + dw},
                          "Conv2d": {"aten.convolution": fwd,
                                     "aten.convolution_backward": dx + dw}}
    with FlopCounterMode(display=False) as fc:  # the input needs no gradient
        conv(x.detach()).sum().backward()
    assert counts(fc)["Global"]["aten.convolution_backward"] == dw


def test_conv1d_and_transposed_convolution():
    tg.manual_seed(0)
    c1 = tg.nn.Conv1d(3, 4, 3, stride=2)
    t2 = tg.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
    with FlopCounterMode(display=False) as fc:
        c1(tg.randn(2, 3, 11))                                  # output length 5
        t2(tg.randn(2, 4, 5, 5, requires_grad=True)).sum().backward()
    c = counts(fc)
    assert c["Conv1d"] == {"aten.convolution": conv_flops(2, 4, 3, (5,), (3,))}
    # transposed: counted over the input's positions; its input gradient is a plain
    # convolution over them, its weight gradient one over the 10x10 output's
    fwd_t = conv_flops(2, 4, 3, (5, 5), (3, 3))
    assert c["ConvTranspose2d"] == {"aten.convolution": fwd_t,
                                    "aten.convolution_backward": fwd_t + fwd_t}


def sdpa_fwd(b, h, sq, sk, d, dv) -> int:
    return 2 * b * h * sq * sk * d + 2 * b * h * sq * sk * dv


def test_ops_reported_as_one_event_count_once():
    # an op that reports itself around the ops it runs (observe.op_range, as composites do
    # with observed_op) is counted by its own formula, its parts not again
    from tritongrad.autograd import observe
    c, a, b = tg.randn(2, 3, 3), tg.randn(2, 3, 4), tg.randn(2, 4, 3)
    with FlopCounterMode(display=False) as fc:
        with observe.op_range("aten::baddbmm", (c, a, b), (0.5,)):
            c + tg.bmm(a, b)
        with observe.op_range("aten::_scaled_mm", (a[0], b[0], tg.ones(()), tg.ones(()))):
            a[0] @ b[0]
        with observe.op_range("aten::linear", (a, b)):  # (no formula: its parts count)
            a[0] @ b[0]
    assert counts(fc) == {"Global": {"aten.baddbmm": 2 * mm(3, 4, 3),
                                     "aten._scaled_mm": mm(3, 4, 3), "aten.mm": mm(3, 4, 3)}}


def test_fused_attention_counts_as_flash_attention():
    q = tg.randn(2, 3, 5, 8, requires_grad=True)
    k = tg.randn(2, 3, 7, 8, requires_grad=True)
    v = tg.randn(2, 3, 7, 8, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    fwd = sdpa_fwd(2, 3, 5, 7, 8, 8)
    bwd = 6 * 5 * 7 * 8 * 2 * 5  # five products of the same size
    assert counts(fc) == {"Global": {"aten._scaled_dot_product_flash_attention": fwd,
                                     "aten._scaled_dot_product_flash_attention_backward": bwd}}
    assert flop_counter.sdpa_flop_count((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)) == fwd
    assert flop_counter.sdpa_backward_flop_count((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 7, 8),
                                                 (2, 3, 7, 8)) == bwd


def test_attention_with_a_mask_counts_its_products():
    q = tg.randn(1, 2, 4, 6, requires_grad=True)
    k = tg.randn(1, 2, 3, 6)
    v = tg.randn(1, 2, 3, 5)
    mask = tg.ones(4, 3).bool()
    with FlopCounterMode(display=False) as fc:
        tg.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
    # forward: scores (4x6 @ 6x3) and out (4x3 @ 3x5) per head; backward: dP and dQ only
    fwd = 2 * (mm(4, 6, 3) + mm(4, 3, 5))
    bwd = 2 * (mm(4, 5, 3) + mm(4, 3, 6))
    assert counts(fc) == {"Global": {"aten.bmm": fwd + bwd}}


def test_checkpoint_recomputes_and_keeps_the_fused_backward():
    from tritongrad.utils.checkpoint import checkpoint
    tg.manual_seed(0)
    conv = tg.nn.Conv2d(2, 3, 3)
    x = tg.randn(1, 2, 5, 5, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        checkpoint(conv, x, use_reentrant=False).sum().backward()
    fwd = conv_flops(1, 3, 2, (3, 3), (3, 3))
    # the forward and its recomputation; the backward from the packed saved tensors' shapes
    assert counts(fc)["Global"] == {"aten.convolution": 2 * fwd,
                                    "aten.convolution_backward": 2 * fwd}


def test_table_format_and_display(capsys):
    lin = tg.nn.Linear(4, 5)
    with FlopCounterMode() as fc:
        lin(tg.randn(2, 4))
    printed = capsys.readouterr().out
    assert printed == fc.get_table() + "\n"
    # (the tables below are what the tabulate package, 0.9, prints for these rows, as
    # PyTorch's get_table calls it) 80 FLOPs: no suffix, so the cells read as numbers and
    # print as such
    assert fc.get_table() == ("Module           FLOP    % Total\n"
                              "-------------  ------  ---------\n"
                              "Linear             80    100.00%\n"
                              " - aten.addmm      80    100.00%")
    with FlopCounterMode(display=False) as fc:
        with tg.no_grad():
            tg.randn(64, 32) @ tg.randn(32, 16)        # 65536: shown in K, outside modules
            lin(tg.randn(2, 4))
    assert fc.get_table().splitlines() == [
        "Module             FLOP    % Total",
        "--------------  -------  ---------",
        "Global          65.616K    100.00%",
        " - aten.mm      65.536K     99.88%",
        " - aten.addmm    0.080K      0.12%",
        " Linear          0.080K      0.12%",
        "  - aten.addmm   0.080K      0.12%"]
    assert FlopCounterMode(display=False).get_table() == (
        "Module      FLOP    % Total\n--------  ------  ---------\nGlobal         0         0%")


def test_table_depth():
    model = tg.nn.Sequential(tg.nn.Sequential(tg.nn.Linear(2, 2)))
    with FlopCounterMode(display=False, depth=1) as fc:
        model(tg.randn(1, 2))
    assert [r.split()[0] for r in fc.get_table().splitlines()[2:]] == ["Sequential", "-"]
    assert "Sequential.0.0" in fc.get_table(depth=3)


def test_keys_formulas_and_registration():
    a = tg.randn(2, 3)
    with FlopCounterMode(display=False) as fc:
        a @ tg.randn(3, 4)
    (key,) = fc.get_flop_counts()["Global"]
    assert str(key) == "aten.mm" and key == tg.ops.aten.mm and key is flop_counter.aten.mm
    assert flop_counter.flop_registry[key] is not None
    assert flop_counter.mm_flop((2, 3), (3, 4)) == 48
    assert flop_counter.bmm_flop((5, 2, 3), (5, 3, 4)) == 240
    assert flop_counter.addmm_flop((4,), (2, 3), (3, 4)) == 48
    assert flop_counter.conv_flop((1, 2, 5, 5), (3, 2, 3, 3), None, (1, 1), (0, 0), (1, 1),
                                  False, out_val=(1, 3, 3, 3)) == 972  # (wrapped: out_val)
    with pytest.raises(AssertionError, match="inner dimensions must match"):
        flop_counter.mm_flop((2, 3), (4, 5))
    with pytest.raises(ValueError, match="OpOverloadPacket"):
        register_flop_formula("aten::mm")(lambda *a, **k: 0)
    with pytest.raises(RuntimeError, match="duplicate registrations for aten.mm"):
        register_flop_formula(tg.ops.aten.mm)(lambda *a, **k: 0)
    with pytest.warns(UserWarning, match="mods argument is not needed"):
        FlopCounterMode(tg.nn.Linear(1, 1), display=False)


def test_custom_mapping_and_a_custom_op():
    seen = []

    def my_mm(a_shape, b_shape, *args, out_shape=None, **kwargs):
        seen.append((tuple(a_shape), tuple(b_shape), tuple(out_shape)))
        return 7

    with FlopCounterMode(display=False, custom_mapping={tg.ops.aten.mm: my_mm}) as fc:
        tg.randn(2, 3) @ tg.randn(3, 4)
    assert fc.get_total_flops() == 7 and seen == [((2, 3), (3, 4), (2, 4))]

    def raw(a, b, *args, out_val=None, **kwargs):
        assert isinstance(a, tg.Tensor)
        return a.shape[0]
    raw._get_raw = True
    with FlopCounterMode(display=False, custom_mapping={tg.ops.aten.mm: raw}) as fc:
        tg.randn(5, 3) @ tg.randn(3, 4)
    assert fc.get_total_flops() == 5

    @tg.library.custom_op("flop_test::scale", mutates_args=())
    def scale(x: tg.Tensor, factor: float) -> tg.Tensor:
        return x * factor

    @register_flop_formula(tg.ops.flop_test.scale)
    def scale_flop(x_shape, *args, out_shape=None, **kwargs) -> int:
        # (a custom op reports its Tensor arguments only: `factor` does not reach here)
        return math.prod(x_shape)

    with FlopCounterMode(display=False) as fc:
        scale(tg.randn(3, 4), 2.0)
    assert counts(fc) == {"Global": {"flop_test.scale": 12}}
    with pytest.raises(ValueError, match="custom_mapping"):
        FlopCounterMode(custom_mapping={"aten.mm": my_mm})


def test_module_tracker_forward_and_backward():
    inner = tg.nn.Linear(2, 2)
    model = tg.nn.Sequential(inner, tg.nn.ReLU())
    seen = []

    def record(where):
        return lambda *args: seen.append((where, tracker.is_bw, sorted(tracker.parents)))

    with ModuleTracker() as tracker:
        h1 = inner.register_forward_pre_hook(record("fw"))  # (runs after the tracker's)
        out = model(tg.randn(3, 2, requires_grad=True))
        assert tracker.parents == {"Global"} and not tracker.is_bw
        out.register_hook(record("out"))
        h2 = inner.weight.register_hook(record("weight"))
        out.sum().backward()
        seen.append(("after", tracker.is_bw, sorted(tracker.parents)))
    h1.remove(), h2.remove()
    # in backward, a module is entered when its outputs' gradient is computed and left when
    # its inputs' is: the ReLU while the output's gradient arrives; the Linear left before
    # its weight's gradient (computed after its input's), as PyTorch's tracker does; reset to
    # "Global" when the backward ends
    assert seen == [("fw", False, ["Global", "Sequential", "Sequential.0"]),
                    ("out", True, ["Global", "Sequential", "Sequential.1"]),
                    ("weight", True, ["Global"]),
                    ("after", False, ["Global"])]
    model(tg.randn(1, 2))  # the tracker's hooks are gone: nothing more recorded
    assert len(seen) == 4


def _tracker_trace(lib, tracker_cls) -> list:
    """What a ModuleTracker shows at hooks in forward and backward of a small network."""
    lib.manual_seed(0)
    inner = lib.nn.Linear(3, 3)
    model = lib.nn.Sequential(lib.nn.Sequential(inner, lib.nn.Tanh()), lib.nn.Linear(3, 2))
    seen = []
    with tracker_cls() as tracker:
        def record(where):
            return lambda *args: seen.append((where, tracker.is_bw, sorted(tracker.parents)))
        handles = [inner.register_forward_pre_hook(record("inner")),
                   model[1].register_forward_pre_hook(record("last"))]
        out = model(lib.randn(4, 3, requires_grad=True))
        mid = model[0](lib.randn(4, 3))
        mid.register_hook(record("mid"))
        (out.sum() + model[1](mid).sum()).backward()
        seen.append(("after", tracker.is_bw, sorted(tracker.parents)))
        for h in handles:
            h.remove()
    return seen


def test_module_tracker_matches_pytorch():
    torch = pytest.importorskip("torch")
    from torch.utils.module_tracker import ModuleTracker as TorchModuleTracker
    ours = _tracker_trace(tg, ModuleTracker)
    assert ours == _tracker_trace(torch, TorchModuleTracker)
    assert len(ours) > 4


def test_counts_on_the_cuda_device(device):
    tg.manual_seed(0)
    lin = tg.nn.Linear(4, 3).to(device)
    conv = tg.nn.Conv2d(2, 3, 3).to(device)
    q = tg.randn(1, 2, 4, 8, device=device, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        lin(tg.randn(2, 4, device=device)).sum().backward()
        conv(tg.randn(1, 2, 5, 5, device=device)).sum().backward()
        tg.nn.functional.scaled_dot_product_attention(q, q, q).sum().backward()
    assert counts(fc)["Global"] == {
        "aten.addmm": mm(2, 4, 3), "aten.mm": mm(3, 2, 4),
        "aten.convolution": 972, "aten.convolution_backward": 972,
        "aten._scaled_dot_product_flash_attention": sdpa_fwd(1, 2, 4, 4, 8, 8),
        "aten._scaled_dot_product_flash_attention_backward": 5 * mm(2 * 4, 4, 8)}


# -- against PyTorch -----------------------------------------------------------------------------

def _programs(lib):
    nn, F = lib.nn, lib.nn.functional

    def mlp():
        m = nn.Sequential(nn.Linear(4, 6), nn.GELU(),
                          nn.Sequential(nn.Linear(6, 3, bias=False), nn.Linear(3, 2)))
        m(lib.randn(2, 5, 4, requires_grad=True)).sum().backward()

    def convnet():
        m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, stride=2, groups=2), nn.ReLU(),
                          nn.Flatten(), nn.Linear(8, 10))
        m(lib.randn(2, 3, 8, 8)).sum().backward()
        t = nn.Sequential(nn.Conv1d(3, 4, 3, stride=2), nn.ConvTranspose1d(4, 2, 3, stride=2))
        t(lib.randn(2, 3, 11, requires_grad=True)).sum().backward()
        nn.Conv2d(2, 4, (2, 3), padding="same", dilation=2)(lib.randn(1, 2, 7, 6)).sum().backward()

    def attention():  # shapes that take PyTorch's CPU math path (bmm) and tritongrad's too
        q = lib.randn(2, 3, 5, 8, requires_grad=True)
        k = lib.randn(2, 3, 7, 8, requires_grad=True)
        v = lib.randn(2, 3, 7, 4, requires_grad=True)
        F.scaled_dot_product_attention(q, k, v).sum().backward()
        F.scaled_dot_product_attention(q, k, v, attn_mask=lib.ones(5, 7).tril().bool()
                                       ).sum().backward()

    def matmuls():
        a = lib.randn(2, 3, 4, requires_grad=True)
        b = lib.randn(4, 5, requires_grad=True)
        (a @ b).sum().backward()
        lib.einsum("bij,bjk->bik", a, lib.randn(2, 4, 6)).sum().backward()
        lib.bmm(a, a.transpose(1, 2)).sum().backward()
        lib.addmm(lib.randn(3, 5), a[0], b, beta=0.5, alpha=2.0).sum().backward()

    return {"mlp": mlp, "convnet": convnet, "attention": attention, "matmuls": matmuls}


@pytest.mark.parametrize("name", ["mlp", "convnet", "attention", "matmuls"])
def test_counts_and_tables_match_pytorch(name):
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounterMode
    results = {}
    for lib, mode in ((torch, TorchFlopCounterMode), (tg, FlopCounterMode)):
        lib.manual_seed(0)
        with mode(display=False, depth=3) as fc:
            _programs(lib)[name]()
        results[lib.__name__] = (counts(fc), fc)
    assert results["torch"][0] == results["tritongrad"][0]
    assert results["tritongrad"][0]["Global"]  # (something was counted)
    try:  # PyTorch prints with tabulate; from 0.10 on it drops the leading spaces it asks for
        import tabulate
    except ImportError:
        return
    if tuple(int(p) for p in tabulate.__version__.split(".")[:2]) < (0, 10):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert results["torch"][1].get_table() == results["tritongrad"][1].get_table()
