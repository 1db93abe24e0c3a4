"""Bad input to ``nn.functional`` and the nn modules: a clear error of PyTorch's type that names
the op and what was wrong, never a NumPy traceback, a silently wrong result or a hang.

``CASES`` is one table of bad calls, each written once over a module ``m`` (``tritongrad``,
or ``torch`` for the comparison test) and checked here against the expected exception type
and a fragment of its message; ``test_torch_raises_the_same_type`` runs the same table on
PyTorch (when installed) and checks it raises the same type. The rows where PyTorch's own
behaviour is an accident (an IndexError from deep inside, or no check at all, reading
garbage) say what PyTorch does in ``torch=``, and the reason. The last tests check, against
NumPy, the calls that bad-input checks must still let through (empty batches, integer
dtypes PyTorch takes).
"""

from __future__ import annotations

import os
import traceback
import warnings

import numpy as np
import pytest

import tritongrad as tg

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _r(m, *shape, dtype="float32"):
    """A tensor of ``m`` from a fixed NumPy draw (integers in [0, 3) for integer dtypes)."""
    rng = np.random.default_rng(0)
    if dtype in ("int64", "int32", "bool", "uint8"):
        a = rng.integers(0, 3, shape).astype(dtype)
    else:
        a = np.asarray(rng.standard_normal(shape)).astype(dtype)
    return m.tensor(a)


def _i(m, values):
    return m.tensor(np.asarray(values, dtype=np.int64))


def _F(m):
    return m.nn.functional


# (id, call over m, exception type, message fragment, PyTorch's type where it differs and why)
CASES = [
    # activations: integer and bool inputs PyTorch's kernels refuse
    ("silu_int", lambda m: _F(m).silu(_r(m, 3, dtype="int64")), NotImplementedError, "silu"),
    ("softplus_int", lambda m: _F(m).softplus(_r(m, 3, dtype="int64")), NotImplementedError,
     "softplus"),
    ("mish_int", lambda m: _F(m).mish(_r(m, 3, dtype="int64")), NotImplementedError, "mish"),
    ("hardswish_int", lambda m: _F(m).hardswish(_r(m, 3, dtype="int64")), NotImplementedError,
     "hardswish"),
    ("hardsigmoid_int", lambda m: _F(m).hardsigmoid(_r(m, 3, dtype="int64")),
     NotImplementedError, "hardsigmoid"),
    ("logsigmoid_int", lambda m: _F(m).logsigmoid(_r(m, 3, dtype="int64")),
     NotImplementedError, "log_sigmoid"),
    ("leaky_relu_bool", lambda m: _F(m).leaky_relu(_r(m, 3, dtype="bool")),
     NotImplementedError, "leaky_relu"),
    ("leaky_relu_int", lambda m: _F(m).leaky_relu(_r(m, 3, dtype="int64")),
     NotImplementedError, "leaky_relu"),
    ("rrelu_int", lambda m: _F(m).rrelu(_r(m, 3, dtype="int64")), NotImplementedError,
     "leaky_relu"),
    ("rrelu_int_training", lambda m: _F(m).rrelu(_r(m, 3, dtype="int64"), training=True),
     NotImplementedError, "rrelu_with_noise"),
    ("Softplus_module_int", lambda m: m.nn.Softplus()(_r(m, 3, dtype="int64")),
     NotImplementedError, "softplus"),
    ("gelu_int", lambda m: _F(m).gelu(_r(m, 3, dtype="int64")), NotImplementedError, "gelu"),
    ("gelu_bad_approximate", lambda m: _F(m).gelu(_r(m, 3), approximate="foo"), RuntimeError,
     "approximate"),
    ("normalize_int", lambda m: _F(m).normalize(_r(m, 2, 3, dtype="int64")), RuntimeError,
     "floating point"),
    ("glu_dim_out_of_range", lambda m: _F(m).glu(_r(m, 4), dim=3), IndexError,
     "out of range"),
    ("glu_odd", lambda m: _F(m).glu(_r(m, 3)), RuntimeError, "must be even"),
    ("celu_alpha_0", lambda m: _F(m).celu(_r(m, 3), alpha=0.0), RuntimeError, "CELU"),
    ("softmax_dim", lambda m: _F(m).softmax(_r(m, 2, 3), dim=2), IndexError, "softmax"),
    ("softmax_int", lambda m: _F(m).softmax(_r(m, 2, 3, dtype="int64"), dim=1),
     NotImplementedError, "softmax"),
    ("layer_norm_int", lambda m: _F(m).layer_norm(_r(m, 2, 3, dtype="int64"), (3,)),
     NotImplementedError, "layer_norm"),
    ("cross_entropy_int", lambda m: _F(m).cross_entropy(_r(m, 2, 3, dtype="int64"),
                                                        _i(m, [0, 1])),
     NotImplementedError, "cross_entropy"),
    ("glu_int", lambda m: _F(m).glu(_r(m, 4, dtype="int64")), NotImplementedError, "glu"),
    ("softshrink_int", lambda m: _F(m).softshrink(_r(m, 4, dtype="int64")),
     NotImplementedError, "softshrink"),
    ("hardtanh_bool", lambda m: _F(m).hardtanh(_r(m, 3, dtype="bool")), RuntimeError,
     "Bool inputs not supported for hardtanh"),
    ("ReLU6_bool", lambda m: m.nn.ReLU6()(_r(m, 3, dtype="bool")), RuntimeError,
     "Bool inputs not supported for hardtanh"),
    ("Hardtanh_bounds", lambda m: m.nn.Hardtanh(2.0, 1.0), AssertionError, "max_val"),
    ("Unflatten_sizes", lambda m: m.nn.Unflatten(1, (2, 2))(_r(m, 2, 3)), RuntimeError,
     "don't multiply up to the size of dim 1 (3)"),
    ("local_response_norm_size_0", lambda m: _F(m).local_response_norm(_r(m, 1, 3, 4), 0),
     RuntimeError, "greater than zero"),
    ("Unflatten_dim", lambda m: m.nn.Unflatten(4, (1, 3))(_r(m, 2, 3)), IndexError,
     "out of range"),
    # dropout
    ("dropout_p", lambda m: _F(m).dropout(_r(m, 3), p=1.5), ValueError, "dropout probability"),
    ("dropout1d_p_before_rank", lambda m: _F(m).dropout1d(_r(m, 2, 3, 4, 5), p=-0.1),
     ValueError, "dropout probability"),
    ("dropout_int", lambda m: _F(m).dropout(_r(m, 3, dtype="int64"), 0.5, True), RuntimeError,
     "can't be cast"),
    ("dropout_bool", lambda m: _F(m).dropout(_r(m, 3, dtype="bool"), 0.5, True), RuntimeError,
     "can't be cast"),
    ("dropout2d_int", lambda m: _F(m).dropout2d(_r(m, 2, 3, 4, dtype="int64"), 0.5, True),
     RuntimeError, "can't be cast"),
    ("alpha_dropout_int", lambda m: _F(m).alpha_dropout(_r(m, 2, 3, dtype="int64"), 0.5, True),
     RuntimeError, "can't be cast"),
    ("Dropout_module_p", lambda m: m.nn.Dropout(2.0), ValueError, "dropout probability"),
    # linear and embedding
    ("linear_features", lambda m: _F(m).linear(_r(m, 2, 3), _r(m, 4, 5)), RuntimeError,
     "cannot be multiplied"),
    ("linear_dtypes", lambda m: _F(m).linear(_r(m, 2, 3, dtype="float64"), _r(m, 4, 3)),
     RuntimeError, "dtype"),
    ("linear_0d_input", lambda m: _F(m).linear(_r(m), _r(m, 4, 5)), RuntimeError, "linear"),
    ("linear_3d_weight", lambda m: _F(m).linear(_r(m, 2, 3), _r(m, 4, 3, 1)), RuntimeError,
     "linear", ),
    ("Linear_int_input", lambda m: m.nn.Linear(3, 4)(_r(m, 2, 3, dtype="int64")), RuntimeError,
     "linear: mat1 and mat2 must have the same dtype"),
    ("embedding_out_of_range", lambda m: _F(m).embedding(_i(m, [0, 5]), _r(m, 5, 3)),
     IndexError, "index out of range"),
    ("embedding_no_rows", lambda m: _F(m).embedding(_i(m, [0]), _r(m, 0, 3)), RuntimeError,
     "should be positive"),
    ("embedding_float_indices", lambda m: _F(m).embedding(_r(m, 2), _r(m, 5, 3)), RuntimeError,
     "indices"),
    ("Embedding_from_pretrained_1d", lambda m: m.nn.Embedding.from_pretrained(_r(m, 5)),
     AssertionError, "2-dimensional"),
    ("embedding_bag_offsets_decreasing",
     lambda m: _F(m).embedding_bag(_i(m, [0, 1, 2]), _r(m, 5, 3), _i(m, [0, 2, 1])),
     RuntimeError, "non-decreasing", ("unchecked", "PyTorch's check of them is unreliable")),
    ("embedding_bag_offsets_start", lambda m: _F(m).embedding_bag(
        _i(m, [0, 1]), _r(m, 5, 3), _i(m, [1])), RuntimeError, "offsets[0]"),
    # convolution
    ("conv2d_rank", lambda m: _F(m).conv2d(_r(m, 1, 1, 2, 6, 6), _r(m, 4, 2, 3, 3)),
     RuntimeError, "conv2d"),
    ("conv2d_channels", lambda m: _F(m).conv2d(_r(m, 1, 3, 6, 6), _r(m, 4, 2, 3, 3)),
     RuntimeError, "channels"),
    ("conv2d_stride_0", lambda m: _F(m).conv2d(_r(m, 1, 2, 6, 6), _r(m, 4, 2, 3, 3), stride=0),
     RuntimeError, "stride"),
    ("conv2d_groups", lambda m: _F(m).conv2d(_r(m, 1, 4, 6, 6), _r(m, 3, 2, 3, 3), groups=2),
     RuntimeError, "groups"),
    ("conv1d_bias_size", lambda m: _F(m).conv1d(_r(m, 1, 2, 6), _r(m, 4, 2, 3), _r(m, 5)),
     RuntimeError, "expected bias to be 1-dimensional with 4 elements"),
    ("conv2d_bias_size", lambda m: _F(m).conv2d(_r(m, 1, 2, 6, 6), _r(m, 4, 2, 3, 3),
                                                _r(m, 5)),
     RuntimeError, "expected bias to be 1-dimensional with 4 elements"),
    ("conv_transpose2d_bias_size", lambda m: _F(m).conv_transpose2d(
        _r(m, 1, 2, 6, 6), _r(m, 2, 4, 3, 3), _r(m, 7)), RuntimeError,
     "expected bias to be 1-dimensional with 4 elements"),
    ("conv2d_kernel_0", lambda m: _F(m).conv2d(_r(m, 1, 2, 6, 6), _r(m, 4, 2, 0, 3)),
     RuntimeError, "kernel size should be greater than zero"),
    ("Conv2d_kernel_0", lambda m: m.nn.Conv2d(4, 4, 0)(_r(m, 1, 4, 5, 5)), RuntimeError,
     "kernel size should be greater than zero"),
    ("conv2d_no_filters", lambda m: _F(m).conv2d(_r(m, 1, 2, 6, 6), _r(m, 0, 2, 3, 3)),
     RuntimeError, "at least 1 at dimension 0"),
    ("conv2d_padding_string", lambda m: _F(m).conv2d(_r(m, 1, 2, 6, 6), _r(m, 4, 2, 3, 3),
                                                     padding="foo"),
     RuntimeError, "Invalid padding string"),
    ("conv_transpose2d_output_padding", lambda m: _F(m).conv_transpose2d(
        _r(m, 1, 2, 6, 6), _r(m, 2, 4, 3, 3), stride=2, output_padding=2), RuntimeError,
     "output padding must be smaller"),
    ("unfold_stride_0", lambda m: _F(m).unfold(_r(m, 1, 2, 4, 4), 2, stride=0), RuntimeError,
     "stride should be greater than zero"),
    ("unfold_kernel_0", lambda m: _F(m).unfold(_r(m, 1, 2, 4, 4), 0), RuntimeError,
     "kernel size should be greater than zero"),
    ("unfold_padding", lambda m: _F(m).unfold(_r(m, 1, 2, 4, 4), 2, padding=-1), RuntimeError,
     "padding should be non-negative"),
    ("unfold_int", lambda m: _F(m).unfold(_r(m, 1, 1, 4, 4, dtype="int64"), 2),
     NotImplementedError, "im2col"),
    ("fold_int", lambda m: _F(m).fold(_r(m, 1, 4, 9, dtype="int64"), (4, 4), 2),
     NotImplementedError, "col2im"),
    ("ConvTranspose2d_output_size_length", lambda m: m.nn.ConvTranspose2d(3, 4, 3, stride=2)(
        _r(m, 1, 3, 5, 5), output_size=(11, 11, 11)), ValueError, "output_size must have"),
    ("fold_stride_0", lambda m: _F(m).fold(_r(m, 1, 8, 9), (4, 4), 2, stride=0), RuntimeError,
     "stride should be greater than zero"),
    ("fold_dilation_0", lambda m: _F(m).fold(_r(m, 1, 8, 9), (4, 4), 2, dilation=0),
     RuntimeError, "dilation should be greater than zero"),
    # pooling
    ("max_pool2d_kernel_0", lambda m: _F(m).max_pool2d(_r(m, 1, 1, 4, 4), 0), RuntimeError,
     "greater than zero"),
    ("max_pool2d_output_size", lambda m: _F(m).max_pool2d(_r(m, 1, 1, 2, 2), 3), RuntimeError,
     "Output size is too small"),
    ("avg_pool1d_padding", lambda m: _F(m).avg_pool1d(_r(m, 1, 1, 4), 2, 2, 2), RuntimeError,
     "pad should be at most half"),
    ("avg_pool2d_bool", lambda m: _F(m).avg_pool2d(_r(m, 1, 1, 4, 4, dtype="bool"), 2),
     NotImplementedError, "avg_pool2d"),
    ("max_pool1d_int", lambda m: _F(m).max_pool1d(_r(m, 1, 1, 4, dtype="int64"), 2),
     NotImplementedError, "max_pool1d"),
    ("max_pool2d_bool", lambda m: _F(m).max_pool2d(_r(m, 1, 1, 4, 4, dtype="bool"), 2),
     NotImplementedError, "max_pool2d"),
    ("adaptive_avg_pool2d_int", lambda m: _F(m).adaptive_avg_pool2d(
        _r(m, 1, 1, 4, 4, dtype="int64"), 2), NotImplementedError, "adaptive_avg_pool2d"),
    ("adaptive_max_pool3d_int", lambda m: _F(m).adaptive_max_pool3d(
        _r(m, 1, 1, 4, 4, 4, dtype="int64"), 2), NotImplementedError, "adaptive_max_pool3d"),
    ("adaptive_avg_pool2d_rank", lambda m: _F(m).adaptive_avg_pool2d(_r(m, 4), 2),
     RuntimeError, "adaptive_avg_pool2d"),
    ("avg_pool2d_rank", lambda m: _F(m).avg_pool2d(_r(m, 4, 4), 2), RuntimeError, "avg_pool2d",
     (IndexError, "PyTorch indexes dim -3 before checking the rank")),
    ("fractional_max_pool2d_rank", lambda m: _F(m).fractional_max_pool2d(
        _r(m, 4, 4), 2, output_size=2), RuntimeError, "fractional_max_pool2d",
     (IndexError, "PyTorch indexes dim -3 before checking the rank")),
    ("fractional_max_pool2d_ratio", lambda m: _F(m).fractional_max_pool2d(
        _r(m, 1, 1, 4, 4), 2, output_ratio=1.5), ValueError, "output_ratio must be between",
     (TypeError, "PyTorch's functional form takes len() of a float ratio")),
    # normalisation
    ("batch_norm_rank", lambda m: _F(m).batch_norm(_r(m, 3), _r(m, 3), _r(m, 3).abs()),
     RuntimeError, "batch_norm"),
    ("batch_norm_0d", lambda m: _F(m).batch_norm(_r(m), _r(m, 3), _r(m, 3).abs()),
     RuntimeError, "batch_norm"),
    ("batch_norm_running_size", lambda m: _F(m).batch_norm(_r(m, 2, 3, 4), _r(m, 4),
                                                           _r(m, 4).abs()),
     RuntimeError, "running_mean should contain 3 elements not 4"),
    ("batch_norm_int", lambda m: _F(m).batch_norm(_r(m, 2, 3, dtype="int64"), _r(m, 3),
                                                  _r(m, 3).abs()),
     NotImplementedError, "batch_norm"),
    ("batch_norm_mixed_dtypes", lambda m: _F(m).batch_norm(
        _r(m, 2, 3, dtype="float64"), _r(m, 3), _r(m, 3).abs()), RuntimeError, "mixed dtype"),
    ("batch_norm_one_value", lambda m: _F(m).batch_norm(_r(m, 1, 3), None, None, training=True),
     ValueError, "Expected more than 1 value per channel"),
    ("BatchNorm1d_channels", lambda m: m.nn.BatchNorm1d(3)(_r(m, 2, 4)), RuntimeError,
     "running_mean should contain"),
    ("BatchNorm2d_rank", lambda m: m.nn.BatchNorm2d(3)(_r(m, 3, 4, 4)), ValueError,
     "expected 4D input"),
    ("layer_norm_mixed_dtypes", lambda m: _F(m).layer_norm(
        _r(m, 2, 3, dtype="float64"), (3,), _r(m, 3)), RuntimeError, "mixed dtype"),
    ("layer_norm_empty_shape", lambda m: _F(m).layer_norm(_r(m, 2, 3), ()), RuntimeError,
     "at least 1-dimensional"),
    ("layer_norm_shape", lambda m: _F(m).layer_norm(_r(m, 2, 3), (4,)), RuntimeError,
     "normalized_shape"),
    ("group_norm_mixed_dtypes", lambda m: _F(m).group_norm(
        _r(m, 2, 4, dtype="float64"), 2, _r(m, 4)), RuntimeError, "mixed dtype"),
    ("group_norm_groups", lambda m: _F(m).group_norm(_r(m, 2, 3, 4), 2), RuntimeError,
     "divisible by num_groups"),
    ("group_norm_zero_groups", lambda m: _F(m).group_norm(_r(m, 2, 4, 4), 0), RuntimeError,
     "num_groups", (ZeroDivisionError, "PyTorch divides by num_groups before checking it")),
    ("instance_norm_mixed_dtypes", lambda m: _F(m).instance_norm(
        _r(m, 2, 3, 4, dtype="float64"), weight=_r(m, 3)), RuntimeError, "mixed dtype"),
    ("instance_norm_weight_size", lambda m: _F(m).instance_norm(
        _r(m, 2, 3, 4), weight=_r(m, 4)), RuntimeError, "weight should contain"),
    ("rms_norm_int", lambda m: _F(m).rms_norm(_r(m, 2, 3, dtype="int64"), (3,)),
     NotImplementedError, "rms_norm"),
    # losses
    ("mse_loss_reduction", lambda m: _F(m).mse_loss(_r(m, 3), _r(m, 3), reduction="foo"),
     ValueError, "is not a valid value for reduction"),
    ("cross_entropy_reduction", lambda m: _F(m).cross_entropy(_r(m, 2, 3), _i(m, [0, 1]),
                                                              reduction="foo"),
     ValueError, "is not a valid value for reduction"),
    ("cross_entropy_target_out_of_range", lambda m: _F(m).cross_entropy(
        _r(m, 2, 3), _i(m, [0, 3])), IndexError, "Target 3 is out of bounds"),
    ("nll_loss_target_negative", lambda m: _F(m).nll_loss(_r(m, 2, 3), _i(m, [0, -2])),
     IndexError, "out of bounds"),
    ("nll_loss_spatial_out_of_range", lambda m: _F(m).nll_loss(
        _r(m, 2, 3, 4), _i(m, np.full((2, 4), 3))), IndexError, "out of bounds"),
    ("nll_loss_0d", lambda m: _F(m).nll_loss(_r(m), _i(m, 0)), ValueError,
     "Expected 1 or more dimensions"),
    ("nll_loss_int_input", lambda m: _F(m).nll_loss(_r(m, 2, 3, dtype="int64"), _i(m, [0, 1])),
     NotImplementedError, "nll_loss"),
    ("nll_loss_weight_dtype", lambda m: _F(m).nll_loss(
        _r(m, 2, 3, dtype="float64"), _i(m, [0, 1]), _r(m, 3).abs()), RuntimeError,
     "expected scalar type Double but found Float"),
    ("cross_entropy_weight_dtype", lambda m: _F(m).cross_entropy(
        _r(m, 2, 3, dtype="float64"), _i(m, [0, 1]), _r(m, 3).abs()), RuntimeError,
     "expected scalar type Double but found Float"),
    ("nll_loss_batch", lambda m: _F(m).nll_loss(_r(m, 2, 3), _i(m, [0, 1, 2])), ValueError,
     "Expected input batch_size (2) to match target batch_size (3)"),
    ("cross_entropy_spatial_target", lambda m: _F(m).cross_entropy(
        _r(m, 2, 3, 4), _i(m, np.zeros((2, 5)))), RuntimeError,
     "Expected target size [2, 4], got [2, 5]"),
    ("nll_loss_1d_input_target_size", lambda m: _F(m).nll_loss(_r(m, 3), _i(m, [0, 1])),
     ValueError, "For 1D input, 1D target must have size 1"),
    ("nll_loss_2d_input_0d_target", lambda m: _F(m).nll_loss(_r(m, 2, 3), _i(m, 0)),
     ValueError, "target batch_size (0)"),
    ("nll_loss_2d_input_2d_target", lambda m: _F(m).nll_loss(_r(m, 2, 3), _i(m, [[0], [1]])),
     RuntimeError, "multi-target not supported"),
    ("nll_loss_float_target", lambda m: _F(m).nll_loss(_r(m, 2, 3), _r(m, 2)), RuntimeError,
     "Long"),
    ("cross_entropy_label_smoothing", lambda m: _F(m).cross_entropy(
        _r(m, 2, 3), _i(m, [0, 1]), label_smoothing=2.0), RuntimeError, "label_smoothing"),
    ("CrossEntropyLoss_out_of_range", lambda m: m.nn.CrossEntropyLoss()(
        _r(m, 2, 3), _i(m, [0, 3])), IndexError, "out of bounds"),
    ("kl_div_int_target", lambda m: _F(m).kl_div(_r(m, 2, 3), _r(m, 2, 3, dtype="int64")),
     RuntimeError, "kl_div: Integral inputs not supported"),
    ("binary_cross_entropy_int_target", lambda m: _F(m).binary_cross_entropy(
        _r(m, 3).sigmoid(), _i(m, [0, 1, 1])), RuntimeError, "Found dtype Long but expected"),
    ("binary_cross_entropy_dtypes", lambda m: _F(m).binary_cross_entropy(
        _r(m, 3, dtype="float64").sigmoid(), _r(m, 3).sigmoid()), RuntimeError,
     "Found dtype Float but expected Double"),
    ("binary_cross_entropy_range", lambda m: _F(m).binary_cross_entropy(
        _r(m, 3) + 5, _r(m, 3).sigmoid()), RuntimeError, "between 0 and 1"),
    ("binary_cross_entropy_shape", lambda m: _F(m).binary_cross_entropy(
        _r(m, 3).sigmoid(), _r(m, 4).sigmoid()), ValueError, "target size"),
    ("bce_with_logits_int_target", lambda m: _F(m).binary_cross_entropy_with_logits(
        _r(m, 3), _i(m, [0, 1, 1])), RuntimeError, "can't be cast"),
    ("bce_with_logits_int_input", lambda m: _F(m).binary_cross_entropy_with_logits(
        _i(m, [1, 2]), _i(m, [1, 0])), NotImplementedError, "log_sigmoid"),
    ("smooth_l1_loss_int", lambda m: _F(m).smooth_l1_loss(
        _r(m, 2, 3, dtype="int64"), _r(m, 2, 3, dtype="int64")), NotImplementedError,
     "smooth_l1"),
    ("huber_loss_int", lambda m: _F(m).huber_loss(
        _r(m, 2, 3, dtype="int64"), _r(m, 2, 3, dtype="int64")), NotImplementedError, "huber"),
    ("huber_loss_int_input", lambda m: _F(m).huber_loss(_i(m, [1, 2]), _r(m, 2)), RuntimeError,
     "can't be cast"),
    ("soft_margin_loss_int", lambda m: _F(m).soft_margin_loss(
        _r(m, 2, 3, dtype="int64"), _r(m, 2, 3, dtype="int64")), RuntimeError, "can't be cast"),
    ("multi_margin_loss_weight_size", lambda m: _F(m).multi_margin_loss(
        _r(m, 2, 3), _i(m, [0, 1]), weight=_r(m, 4)), RuntimeError, "inconsistent weight size"),
    ("multi_margin_loss_weight_rank", lambda m: _F(m).multi_margin_loss(
        _r(m, 2, 3), _i(m, [0, 1]), weight=_r(m, 3, 1)), ValueError, "one-dimensional"),
    ("cosine_embedding_loss_ranks", lambda m: _F(m).cosine_embedding_loss(
        _r(m, 3), _r(m, 3), _r(m, 1)), RuntimeError, "1D target tensor expects 2D input"),
    ("cosine_embedding_loss_2d_target", lambda m: _F(m).cosine_embedding_loss(
        _r(m, 2, 3), _r(m, 2, 3), _r(m, 2, 1)), RuntimeError, "multi-target not supported"),
    ("huber_loss_delta", lambda m: m.nn.HuberLoss(delta=0.0)(_r(m, 3), _r(m, 3)), RuntimeError,
     "delta"),
    ("gaussian_nll_loss_var", lambda m: _F(m).gaussian_nll_loss(
        _r(m, 2, 3), _r(m, 2, 3), _r(m, 4).abs()), ValueError, "var is of incorrect size"),
    ("ctc_loss_blank", lambda m: _F(m).ctc_loss(
        _r(m, 5, 1, 4).log_softmax(2), _i(m, [[1, 2]]), _i(m, [5]), _i(m, [2]), blank=4),
     RuntimeError, "blank"),
    ("ctc_loss_target_out_of_range", lambda m: _F(m).ctc_loss(
        _r(m, 5, 1, 4).log_softmax(2), _i(m, [[1, 7]]), _i(m, [5]), _i(m, [2])), IndexError,
     "Target 7 is out of bounds", (None, "PyTorch's CPU kernel reads past the classes")),
    # sampling and padding
    ("interpolate_size_and_scale", lambda m: _F(m).interpolate(_r(m, 1, 1, 4), size=8,
                                                               scale_factor=2.0),
     ValueError, "only one of size or scale_factor"),
    ("interpolate_empty_spatial", lambda m: _F(m).interpolate(_r(m, 1, 1, 0), size=8),
     RuntimeError, "Input and output sizes should be greater than 0"),
    ("interpolate_linear_int", lambda m: _F(m).interpolate(
        _r(m, 1, 1, 4, dtype="int64"), size=8, mode="linear"), NotImplementedError,
     "floating point"),
    ("interpolate_empty_channels", lambda m: _F(m).interpolate(_r(m, 1, 0, 4), size=8,
                                                               mode="linear"),
     RuntimeError, "Non-empty 3D data tensor expected"),
    ("interpolate_nearest_int", lambda m: _F(m).interpolate(
        _r(m, 1, 3, 4, 4, dtype="int64"), scale_factor=2), NotImplementedError, "nearest"),
    ("pad_replicate_bool", lambda m: _F(m).pad(_r(m, 1, 1, 3, 3, dtype="bool"), (1, 1, 1, 1),
                                               mode="replicate"),
     NotImplementedError, "replication_pad2d"),
    ("interpolate_mode_rank", lambda m: _F(m).interpolate(_r(m, 1, 1, 4), size=8,
                                                          mode="bilinear"),
     NotImplementedError, "bilinear"),
    ("grid_sample_grid_shape", lambda m: _F(m).grid_sample(
        _r(m, 1, 1, 4, 4), _r(m, 1, 2, 2, 3), align_corners=False), RuntimeError,
     "grid_sampler"),
    ("grid_sample_dtypes", lambda m: _F(m).grid_sample(
        _r(m, 1, 1, 4, 4), _r(m, 1, 2, 2, 2, dtype="float64"), align_corners=False),
     RuntimeError, "expected scalar type Float but found Double"),
    ("grid_sample_int", lambda m: _F(m).grid_sample(
        _r(m, 1, 1, 4, 4, dtype="int64"), _r(m, 1, 2, 2, 2), align_corners=False),
     NotImplementedError, "grid_sampler_2d"),
    ("pad_too_many", lambda m: _F(m).pad(_r(m, 2, 3), (1, 1, 1, 1, 1, 1)), RuntimeError,
     "Padding length"),
    ("pad_float_sizes", lambda m: _F(m).pad(_r(m, 2, 3), (1.5, 1)), TypeError,
     "must be tuple of ints"),
    ("pad_bool_sizes", lambda m: _F(m).pad(_r(m, 2, 3), (True, 1)), TypeError,
     "must be tuple of ints"),
    ("pad_reflect_value", lambda m: _F(m).pad(_r(m, 1, 2, 3), (1, 1), mode="reflect",
                                              value=1.0),
     RuntimeError, "doesn't take in value argument"),
    ("pad_reflect_too_big", lambda m: _F(m).pad(_r(m, 1, 2, 3), (3, 3), mode="reflect"),
     RuntimeError, "Padding size should be less than"),
    # attention and recurrent layers
    ("sdpa_dropout_p", lambda m: _F(m).scaled_dot_product_attention(
        _r(m, 1, 2, 4, 8), _r(m, 1, 2, 4, 8), _r(m, 1, 2, 4, 8), dropout_p=2.0), RuntimeError,
     "dropout probability"),
    ("sdpa_dtypes", lambda m: _F(m).scaled_dot_product_attention(
        _r(m, 1, 2, 4, 8, dtype="float64"), _r(m, 1, 2, 4, 8), _r(m, 1, 2, 4, 8)),
     RuntimeError, "to have the same dtype"),
    ("sdpa_int", lambda m: _F(m).scaled_dot_product_attention(
        *[_r(m, 1, 2, 4, 8, dtype="int64")] * 3), RuntimeError, "floating point"),
    ("MultiheadAttention_key_padding_mask", lambda m: m.nn.MultiheadAttention(4, 2)(
        _r(m, 3, 1, 4), _r(m, 3, 1, 4), _r(m, 3, 1, 4),
        key_padding_mask=_r(m, 1, 5, dtype="bool")), AssertionError, "key_padd"),
    ("MultiheadAttention_embed", lambda m: m.nn.MultiheadAttention(4, 2)(
        _r(m, 3, 1, 6), _r(m, 3, 1, 6), _r(m, 3, 1, 6)), AssertionError, "embed"),
    ("RNN_input_size", lambda m: m.nn.RNN(3, 4)(_r(m, 5, 2, 6)), RuntimeError, "input_size"),
    ("RNN_dtype", lambda m: m.nn.RNN(3, 4)(_r(m, 5, 2, 3, dtype="float64")), ValueError,
     "does not match weight dtype"),
    ("LSTM_int", lambda m: m.nn.LSTM(3, 4)(_r(m, 5, 2, 3, dtype="int64")), ValueError,
     "does not match weight dtype"),
    ("LSTM_hx_not_a_pair", lambda m: m.nn.LSTM(3, 4)(_r(m, 5, 2, 3), _r(m, 1, 2, 4)),
     IndexError, "expected hx to be a tuple"),  # (PyTorch's: from indexing hx[1])
    ("LSTM_empty_sequence", lambda m: m.nn.LSTM(3, 4)(_r(m, 0, 2, 3)), RuntimeError,
     "sequence length to be larger than 0"),
    ("GRUCell_input_size", lambda m: m.nn.GRUCell(3, 4)(_r(m, 2, 5)), RuntimeError,
     "input_size"),
]


def _case_params():
    return [pytest.param(*row[1:4], id=row[0]) for row in CASES]


def _frames_in_library(error: BaseException) -> None:
    """The error comes from tritongrad's own code, not from NumPy or Python internals: its
    last frame is in the repository (not in site-packages)."""
    last = traceback.extract_tb(error.__traceback__)[-1].filename
    assert os.path.abspath(last).startswith(_ROOT) and "site-packages" not in last, last
    assert "/tests/" not in last.replace(os.sep, "/"), last  # (the test's lambda is no op)


@pytest.mark.parametrize("call, error, fragment", _case_params())
def test_bad_input_raises_a_clear_error(call, error, fragment):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            call(tg)
    assert type(info.value) is error, f"{type(info.value).__name__}: {info.value}"
    assert fragment in str(info.value)
    _frames_in_library(info.value)


def test_table_ids_are_unique():
    names = [row[0] for row in CASES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("row", CASES, ids=[row[0] for row in CASES])
def test_torch_raises_the_same_type(row):
    torch = pytest.importorskip("torch")
    call, error = row[1], row[2]
    expected = row[4][0] if len(row) > 4 else error
    if expected == "unchecked":
        pytest.skip(row[4][1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call(torch)
        except Exception as e:  # noqa: BLE001 (the type is what is compared)
            assert expected is not None, f"PyTorch raised {type(e).__name__}: {e}"
            assert type(e) is expected, f"{type(e).__name__}: {e}"
        else:
            assert expected is None, "PyTorch returned"


# -- what the checks must still let through, against NumPy ------------------------------------

def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def test_batch_norm_accepts_an_empty_batch_in_training():
    x = tg.zeros(0, 3)
    mean, var = tg.zeros(3), tg.ones(3)
    y = tg.nn.functional.batch_norm(x, mean, var, training=True)
    assert tuple(y.shape) == (0, 3)
    np.testing.assert_array_equal(_np(mean), np.zeros(3))  # (no statistics to update)
    np.testing.assert_array_equal(_np(var), np.ones(3))


@pytest.mark.parametrize("make", [
    lambda: tg.nn.functional.group_norm(tg.zeros(0, 4, 3), 2, tg.ones(4), tg.zeros(4)),
    lambda: tg.nn.functional.instance_norm(tg.zeros(0, 3, 4)),
    lambda: tg.nn.GroupNorm(2, 4)(tg.zeros(0, 4, 3)),
    lambda: tg.nn.InstanceNorm1d(3)(tg.zeros(0, 3, 4)),
    lambda: tg.nn.functional.layer_norm(tg.zeros(2, 0), (0,)),
    lambda: tg.nn.functional.layer_norm(tg.zeros(0, 3), (3,), tg.ones(3), tg.zeros(3)),
    lambda: tg.nn.functional.unfold(tg.zeros(0, 2, 4, 4), 2),
    lambda: tg.nn.functional.grid_sample(tg.zeros(0, 1, 4, 4), tg.zeros(0, 2, 2, 2),
                                         align_corners=False),
    lambda: tg.nn.functional.scaled_dot_product_attention(tg.zeros(0, 2, 4, 8),
                                                          tg.zeros(0, 2, 4, 8),
                                                          tg.zeros(0, 2, 4, 8)),
], ids=["group_norm", "instance_norm", "GroupNorm", "InstanceNorm1d", "layer_norm_0_features",
        "layer_norm_0_rows", "unfold", "grid_sample", "sdpa"])
def test_empty_inputs_give_empty_results(make):
    y = make()
    assert y.numel() == 0 and y.ndim >= 2


def test_instance_norm_of_a_one_value_plane_is_refused_but_not_more():
    F = tg.nn.functional
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(tg.zeros(2, 3, 1))
    x = np.random.default_rng(5).standard_normal((2, 3, 2))
    y = F.instance_norm(tg.tensor(x), eps=0.0)
    ref = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)
    np.testing.assert_allclose(_np(y), ref, rtol=1e-6, atol=1e-6)


def test_batch_norm_takes_half_inputs_with_float_parameters():
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float16)
    y = tg.nn.functional.batch_norm(tg.tensor(x), tg.zeros(3), tg.ones(3), eps=0.0)
    np.testing.assert_allclose(_np(y).astype(np.float64), x.astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_convolutions_of_an_empty_batch(nd):
    F = tg.nn.functional
    conv = getattr(F, f"conv{nd}d")
    y = conv(tg.zeros(0, 2, *(6,) * nd), tg.ones(4, 2, *(3,) * nd), tg.ones(4))
    assert tuple(y.shape) == (0, 4) + (4,) * nd
    t = getattr(F, f"conv_transpose{nd}d")(tg.zeros(0, 2, *(6,) * nd), tg.ones(2, 4, *(3,) * nd))
    assert tuple(t.shape) == (0, 4) + (8,) * nd


def test_conv3d_bias_and_values_against_numpy():
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((1, 2, 4, 4, 4)), rng.standard_normal((3, 2, 3, 3, 3)), \
        rng.standard_normal(3)
    y = tg.nn.functional.conv3d(tg.tensor(x), tg.tensor(w), tg.tensor(b))
    ref = np.zeros((1, 3, 2, 2, 2))
    for o in range(3):
        for i, j, k in np.ndindex(2, 2, 2):
            ref[0, o, i, j, k] = (x[0, :, i:i + 3, j:j + 3, k:k + 3] * w[o]).sum() + b[o]
    np.testing.assert_allclose(_np(y), ref, rtol=1e-10, atol=1e-10)


def test_integer_dropout_where_nothing_is_scaled():
    F = tg.nn.functional
    x = tg.tensor([1, 2, 3])
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0, training=True) is x
    zeroed = F.dropout(x, 1.0, training=True)
    assert zeroed.dtype == tg.int64 and _np(zeroed).tolist() == [0, 0, 0]
    assert tuple(F.dropout(tg.tensor([], dtype=tg.int64), 0.5, True).shape) == (0,)


def test_nll_loss_of_an_unbatched_input_with_a_one_element_target():
    logp = np.log(np.array([0.2, 0.5, 0.3]))
    for target in (tg.tensor(1), tg.tensor([1])):
        loss = tg.nn.functional.nll_loss(tg.tensor(logp), target)
        np.testing.assert_allclose(_np(loss), -logp[1], rtol=1e-12)


def test_nearest_interpolation_of_uint8_images():
    x = np.arange(4, dtype=np.uint8).reshape(1, 1, 2, 2)
    y = tg.nn.functional.interpolate(tg.tensor(x), scale_factor=2)
    assert y.dtype == tg.uint8
    np.testing.assert_array_equal(_np(y), x.repeat(2, axis=2).repeat(2, axis=3))


def test_pad_takes_index_like_sizes():
    x = tg.arange(6.0).reshape(2, 3)
    y = tg.nn.functional.pad(x, (tg.tensor(1), np.int64(2)))
    np.testing.assert_array_equal(_np(y), np.pad(np.arange(6.0).reshape(2, 3), ((0, 0), (1, 2))))
    z = tg.nn.functional.pad(tg.ones(1, 2, 3), (1, 1), mode="reflect", value=0.0)
    assert tuple(z.shape) == (1, 2, 5)


def test_unbatched_ctc_loss_takes_padded_targets():
    F = tg.nn.functional
    lp = F.log_softmax(tg.tensor(np.random.default_rng(3).standard_normal((5, 4))), 1)
    a = F.ctc_loss(lp, tg.tensor([[1, 2]]), tg.tensor([5]), tg.tensor([2]))
    b = F.ctc_loss(lp, tg.tensor([1, 2]), tg.tensor([5]), tg.tensor([2]))
    assert np.isfinite(_np(a)) and abs(a.item() - b.item()) < 1e-12


def test_max_pool_keeps_integers_pooling():
    x = np.arange(16).reshape(1, 1, 4, 4)
    y = tg.nn.functional.max_pool2d(tg.tensor(x), 2)
    np.testing.assert_array_equal(_np(y), x.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5)))
    values, idx = tg.nn.functional.max_pool1d(tg.tensor(np.array([[[3, 1, 4, 1]]])), 2,
                                              return_indices=True)
    assert _np(values).tolist() == [[[3, 4]]] and _np(idx).tolist() == [[[0, 2]]]


def test_embedding_bag_equal_offsets_are_empty_bags():
    F = tg.nn.functional
    w = np.random.default_rng(4).standard_normal((5, 3))
    y = F.embedding_bag(tg.tensor([0, 1, 2]), tg.tensor(w), tg.tensor([0, 2, 2]), mode="sum")
    np.testing.assert_allclose(_np(y), np.stack([w[0] + w[1], np.zeros(3), w[2]]), rtol=1e-12)


# -- on CUDA the checks read shapes and dtypes only: no device-to-host wait ---------------------

_NO_SYNC = ("conv1d_bias_size", "conv2d_bias_size", "conv_transpose2d_bias_size",
            "conv2d_kernel_0", "batch_norm_running_size", "batch_norm_mixed_dtypes",
            "batch_norm_int", "layer_norm_mixed_dtypes", "group_norm_mixed_dtypes",
            "nll_loss_weight_dtype", "cross_entropy_weight_dtype", "nll_loss_batch",
            "cross_entropy_spatial_target", "nll_loss_0d", "grid_sample_dtypes",
            "dropout_int", "silu_int", "softmax_int", "kl_div_int_target",
            "binary_cross_entropy_int_target", "pad_float_sizes", "interpolate_empty_spatial",
            "unfold_stride_0", "max_pool2d_bool", "adaptive_avg_pool2d_int")


class _OnCuda:
    """``tg``, with ``tensor`` making its tensors on the CUDA device (real or emulated)."""

    def __init__(self):
        self.nn = tg.nn

    @staticmethod
    def tensor(a):
        return tg.tensor(a, device="cuda")


@pytest.mark.parametrize("name", _NO_SYNC)
def test_checks_on_cuda_wait_for_nothing(name):
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, real or emulated")
    _, call, error, fragment = next(row for row in CASES if row[0] == name)[:4]
    tg.cuda.set_sync_debug_mode("error")  # (a device-to-host wait would raise instead)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(error, match=None) as info:
                call(_OnCuda())
    finally:
        tg.cuda.set_sync_debug_mode(0)
    assert fragment in str(info.value)


def test_sync_debug_mode_catches_a_check_that_reads_data():
    """The negative control of the test above: binary_cross_entropy's range check reads the
    input back, and the "error" mode stops it before its own error can be raised."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, real or emulated")
    call = next(row for row in CASES if row[0] == "binary_cross_entropy_range")[1]
    tg.cuda.set_sync_debug_mode("error")
    try:
        with pytest.raises(RuntimeError) as info:
            call(_OnCuda())
    finally:
        tg.cuda.set_sync_debug_mode(0)
    assert "between 0 and 1" not in str(info.value)
