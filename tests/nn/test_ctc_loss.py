"""nn.functional.ctc_loss and nn.CTCLoss (nn/_ctc_loss.py, autograd/ops/ctc.py,
kernels/numpy/ctc.py): the loss against a float64 brute force over every alignment (tiny T
and C), both target layouts, each reduction, a blank other than 0, unbatched input, on the CPU
and the (emulated) CUDA device; gradients by gradcheck through a log_softmax, and PyTorch's
gradient formula with respect to log_probs against finite differences; zero_infinity; and
PyTorch's errors."""

import itertools
import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(7)

T, N, C = 5, 3, 4
LOGITS = rng.standard_normal((T, N, C))
PADDED = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])  # (targets past each length: ignored)
INPUT_LENGTHS, TARGET_LENGTHS = (5, 4, 3), (3, 2, 1)


def log_softmax(x):
    return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - x.max(-1, keepdims=True)


def brute_force_nll(lp, target, length, blank):
    """-log of the summed probability of every path of ``length`` steps that collapses
    (repeats merged, then blanks dropped) to ``target``: inf where none does."""
    total = 0.0
    for path in itertools.product(range(lp.shape[1]), repeat=length):
        merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        if [c for c in merged if c != blank] == list(target):
            total += math.prod(math.exp(lp[t, c]) for t, c in enumerate(path))
    return -math.log(total) if total > 0 else math.inf


def reference(lp, padded, input_lengths, target_lengths, blank, reduction, zero_infinity=False):
    losses = np.array([brute_force_nll(lp[:, n], padded[n, :target_lengths[n]],
                                       input_lengths[n], blank)
                       for n in range(lp.shape[1])])
    if zero_infinity:
        losses = np.where(np.isinf(losses), 0.0, losses)
    if reduction == "mean":
        return (losses / np.maximum(target_lengths, 1)).mean()
    return losses.sum() if reduction == "sum" else losses


def concatenated(padded, target_lengths):
    return np.concatenate([padded[n, :k] for n, k in enumerate(target_lengths)])


@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_loss_matches_the_brute_force(device, layout, reduction):
    lp = log_softmax(LOGITS)
    targets = PADDED if layout == "padded" else concatenated(PADDED, TARGET_LENGTHS)
    out = F.ctc_loss(tg.tensor(lp, device=device), tg.tensor(targets, device=device),
                     INPUT_LENGTHS, TARGET_LENGTHS, reduction=reduction)
    assert out.device.type == device and out.dtype is tg.float64
    np.testing.assert_allclose(host(out), reference(lp, PADDED, INPUT_LENGTHS, TARGET_LENGTHS,
                                                    0, reduction), rtol=1e-12)


def test_blank_not_zero_lengths_as_tensors_and_float32(device):
    lp = log_softmax(LOGITS)
    padded = np.array([[0, 1, 1], [3, 0, 2], [1, 2, 2]])  # labels around blank 2
    lengths = (tg.tensor([5, 5, 4], dtype=tg.int32), tg.tensor([3, 2, 1]))
    out = F.ctc_loss(tg.tensor(lp, device=device), tg.tensor(padded, device=device), *lengths,
                     blank=2, reduction="none")
    np.testing.assert_allclose(host(out), reference(lp, padded, (5, 5, 4), (3, 2, 1), 2,
                                                    "none"), rtol=1e-12)
    low = F.ctc_loss(tg.tensor(lp, dtype=tg.float32, device=device),
                     tg.tensor(padded, device=device), *lengths, blank=2, reduction="sum")
    assert low.dtype is tg.float32
    np.testing.assert_allclose(low.item(), host(out).sum(), rtol=1e-5)


def test_unbatched_and_empty_targets(device):
    lp = log_softmax(LOGITS[:, 0])
    x = tg.tensor(lp, device=device)
    out = F.ctc_loss(x, tg.tensor([2, 1], device=device), (5,), (2,), reduction="none")
    assert out.shape == ()
    np.testing.assert_allclose(out.item(), brute_force_nll(lp, [2, 1], 5, 0), rtol=1e-12)
    # an empty target: the all-blank path; no input steps: 0 for an empty target, else inf
    out = F.ctc_loss(tg.tensor(log_softmax(LOGITS), device=device),
                     tg.tensor([[1], [1], [1]], device=device), (5, 0, 0), (0, 0, 1),
                     reduction="none")
    np.testing.assert_allclose(host(out), [-log_softmax(LOGITS)[:, 0, 0].sum(), 0.0, np.inf])


def _grad_check_fn(layout, reduction, device, blank=0):
    targets = tg.tensor(PADDED if layout == "padded" else concatenated(PADDED, TARGET_LENGTHS),
                        device=device)
    lengths = ((tg.tensor(INPUT_LENGTHS), tg.tensor(TARGET_LENGTHS)) if layout == "padded"
               else (INPUT_LENGTHS, TARGET_LENGTHS))
    # through a log_softmax, as PyTorch's tests: the rule is the logits' exact gradient there
    return lambda x: F.ctc_loss(x.log_softmax(2), targets, *lengths, blank=blank,
                                reduction=reduction)


@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_gradcheck(layout, reduction):
    x = tg.tensor(LOGITS, requires_grad=True)
    assert tg.autograd.gradcheck(_grad_check_fn(layout, reduction, "cpu"), (x,))


def test_gradcheck_on_the_device_with_another_blank(device):
    x = tg.tensor(LOGITS[:4, :2], device=device, requires_grad=True)
    targets = tg.tensor([[0, 1], [2, 2]], device=device)
    assert tg.autograd.gradcheck(
        lambda v: F.ctc_loss(v.log_softmax(2), targets, (4, 3), (2, 1), blank=3), (x,),
        fast_mode=True)


def test_gradient_with_respect_to_log_probs_is_pytorchs(device):
    """PyTorch's rule gives exp(lp) + d loss / d lp at the steps within each input (its
    exp(lp) term vanishes through a log_softmax), and 0 past them."""
    lp = log_softmax(LOGITS)
    x = tg.tensor(lp, device=device, requires_grad=True)
    weights = np.array([0.5, 2.0, 1.5])
    F.ctc_loss(x, tg.tensor(PADDED, device=device), INPUT_LENGTHS, TARGET_LENGTHS,
               reduction="none").backward(tg.tensor(weights, device=device))
    eps, numeric = 1e-6, np.zeros_like(lp)
    for idx in np.ndindex(lp.shape):
        n = idx[1]
        step = np.zeros_like(lp)
        step[idx] = eps
        plus, minus = (brute_force_nll((lp + s)[:, n], PADDED[n, :TARGET_LENGTHS[n]],
                                       INPUT_LENGTHS[n], 0) for s in (step, -step))
        numeric[idx] = weights[n] * (plus - minus) / (2 * eps)
    within = np.arange(T)[:, None, None] < np.array(INPUT_LENGTHS)[None, :, None]
    expected = np.where(within, numeric + weights[None, :, None] * np.exp(lp), 0.0)
    np.testing.assert_allclose(host(x.grad), expected, atol=1e-7)


def test_zero_infinity(device):
    lp = log_softmax(LOGITS)
    targets = tg.tensor([[1, 1, 1], [1, 2, 3], [2, 0, 0]], device=device)
    lengths = ((2, 4, 3), (3, 3, 1))  # sample 0: 1 1 1 needs 5 steps; sample 1 fits
    x = tg.tensor(lp, device=device, requires_grad=True)
    loss = F.ctc_loss(x, targets, *lengths, reduction="none")
    assert math.isinf(loss[0].item()) and math.isfinite(loss[1].item())
    loss.sum().backward()
    assert np.isnan(host(x.grad)[:2, 0]).all()  # (PyTorch's too: inf - inf)
    for reduction in ("none", "mean", "sum"):
        x = tg.tensor(lp, device=device, requires_grad=True)
        out = F.ctc_loss(x, targets, *lengths, reduction=reduction, zero_infinity=True)
        np.testing.assert_allclose(host(out), reference(lp, host(targets), *lengths, 0,
                                                        reduction, zero_infinity=True),
                                   rtol=1e-12)
        out.sum().backward()
        grad = host(x.grad)
        assert np.isfinite(grad).all() and (grad[:, 0] == 0).all()
        assert (grad[:, 1] != 0).any()


def test_module_and_autograd_surface():
    lp = tg.tensor(log_softmax(LOGITS), requires_grad=True)
    targets = tg.tensor(PADDED)
    loss = nn.CTCLoss(blank=0, reduction="sum")(lp, targets, INPUT_LENGTHS, TARGET_LENGTHS)
    np.testing.assert_allclose(loss.item(), reference(log_softmax(LOGITS), PADDED,
                                                      INPUT_LENGTHS, TARGET_LENGTHS, 0, "sum"),
                               rtol=1e-12)
    rows = F.ctc_loss(lp, targets, INPUT_LENGTHS, TARGET_LENGTHS, reduction="none")
    assert rows.grad_fn.name() == "CtcLossBackward0"
    (g,) = tg.autograd.grad(rows.sum(), lp, create_graph=True)
    assert g.grad_fn.name() == "NotImplemented"  # (recorded: the same gradient)
    np.testing.assert_array_equal(host(g), host(tg.autograd.grad(rows.sum(), lp)[0]))
    with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward is not "
                                           "implemented"):
        g.sum().backward()
    fwAD = tg.autograd.forward_ad
    with fwAD.dual_level(), pytest.raises(Exception, match="forward AD"):
        F.ctc_loss(fwAD.make_dual(lp.detach(), tg.ones_like(lp)), targets, INPUT_LENGTHS,
                   TARGET_LENGTHS)


def test_autocast_runs_it_in_float32_on_the_cpu(device):
    # PyTorch's CPU autocast lists ctc_loss as a float32 op; its CUDA list does not, and its
    # kernels take float and double only, so half precision is refused there
    low = tg.bfloat16 if device == "cpu" else tg.float16
    lp = tg.tensor(log_softmax(LOGITS), dtype=low, device=device)
    args = (tg.tensor(PADDED, device=device), INPUT_LENGTHS, TARGET_LENGTHS)
    with tg.autocast(device, dtype=low):
        if device == "cpu":
            assert F.ctc_loss(lp, *args).dtype is tg.float32
        else:
            with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
                F.ctc_loss(lp, *args)


def test_errors():
    lp = tg.tensor(log_softmax(LOGITS))
    targets = tg.tensor(PADDED)
    il, tl = INPUT_LENGTHS, TARGET_LENGTHS
    cases = [
        ((lp, targets, (6, 4, 3), tl), RuntimeError,
         "Expected input_lengths to have value at most 5, but got value 6"),
        ((lp, targets, (5, -1, 3), tl), RuntimeError,
         "Expected input_lengths to have value at least 0, but got value -1"),
        ((lp, targets, il, (4, 2, 1)), RuntimeError,
         ("Expected tensor to have size at least 4 at dimension 1, but got size 3 for "
          "argument #2 'targets'")),
        ((lp, targets, il, (-1, 2, 1)), RuntimeError,
         "Expected target_lengths to have value at least 0, but got value -1"),
        ((lp, targets[:2], il, tl), RuntimeError,
         "Expected tensor to have size 3 at dimension 0, but got size 2 for argument #2"),
        ((lp, tg.tensor([1, 2, 2, 3]), il, tl), RuntimeError,
         "Expected tensor to have size 6 at dimension 0, but got size 4 for argument #2"),
        ((lp, targets, (5, 4), tl), RuntimeError, "input_lengths must be of size batch_size"),
        ((lp, targets, il, (3, 2)), RuntimeError, "target_lengths must be of size batch_size"),
        ((lp, targets, tg.tensor([5.0, 4.0, 3.0]), tg.tensor(tl)), RuntimeError,
         "input_lengths must be integral"),
        ((lp, targets, tg.tensor(il), tl), TypeError, "both be tensors or both be tuples"),
        ((lp, targets, [5.0, 4, 3], tl), TypeError, "'input_lengths' must be a tuple of ints"),
        ((lp.float().half(), targets, il, tl), NotImplementedError,
         "\"ctc_loss_cpu\" not implemented for 'Half'"),
        ((lp.unsqueeze(0), targets, il, tl), RuntimeError, "Expected 3-dimensional tensor"),
        ((lp[:0], targets, (0, 0, 0), tl), RuntimeError, "log_probs tensor must not be empty"),
        ((lp, tg.tensor([[1, 4, 0], [1, 1, 0], [2, 0, 0]]), il, tl), IndexError,
         "Target 4 is out of bounds"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
            F.ctc_loss(*args)
    with pytest.raises(RuntimeError, match="^blank must be in label range$"):
        F.ctc_loss(lp, targets, il, tl, blank=4)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.ctc_loss(lp, targets, il, tl, reduction="foo")
