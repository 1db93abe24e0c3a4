"""``tritongrad.nn``: modules, parameters, initialisation and the functional API (PyTorch's
``torch.nn`` surface, on tritongrad's autograd).

Example:
    >>> import tritongrad as tg
    >>> model = tg.nn.Sequential(tg.nn.Linear(64, 32), tg.nn.GELU(), tg.nn.Linear(32, 10))
    >>> loss = tg.nn.CrossEntropyLoss()(model(tg.randn(8, 64)), tg.randint(0, 10, (8,)))
    >>> loss.backward()
"""

from . import functional, init, parallel, utils
from .activation import *  # noqa: F403 (activation.__all__)
from .activation import __all__ as _activations
from .attention import MultiheadAttention
from ._adaptive_softmax import AdaptiveLogSoftmaxWithLoss
from ._feature_alpha_dropout import FeatureAlphaDropout
from ._legacy import Container
from .rnn import RNNCellBase
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import (AlphaDropout, Bilinear, ChannelShuffle, CosineSimilarity, Dropout,
                     Dropout1d, Dropout2d, Dropout3d,
                     Embedding, EmbeddingBag, Flatten, Fold, Identity, LayerNorm, Linear,
                     PairwiseDistance, PixelShuffle, PixelUnshuffle, Unflatten, Unfold)
from .lazy import __all__ as _lazy
from .lazy import *  # noqa: F403 (lazy.__all__)
from .loss import *  # noqa: F403 (loss.__all__)
from .loss import __all__ as _losses
from .module import Module
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d, LocalResponseNorm, RMSNorm, SyncBatchNorm)
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from .padding import *  # noqa: F403 (padding.__all__)
from .padding import __all__ as _paddings
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,
                      AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d,
                      FractionalMaxPool2d, FractionalMaxPool3d, LPPool1d, LPPool2d, LPPool3d,
                      MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from ._sampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)

__all__ = [
    "AdaptiveLogSoftmaxWithLoss", "Container", "FeatureAlphaDropout", "FractionalMaxPool2d",
    "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d",
    "MaxUnpool3d", "RNNCellBase", "SyncBatchNorm",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AlphaDropout", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Bilinear", "Buffer", "ChannelShuffle",
    "Conv1d",
    "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "CosineSimilarity", "DataParallel",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Embedding", "EmbeddingBag", "Flatten",
    "Fold", "GRU", "GRUCell", "GroupNorm", "Identity", "InstanceNorm1d", "InstanceNorm2d",
    "InstanceNorm3d", "LSTM", "LSTMCell", "LayerNorm", "Linear",
    "LocalResponseNorm", "MaxPool1d",
    "MaxPool2d", "MaxPool3d", "Module", "ModuleDict", "ModuleList", "MultiheadAttention",
    "PairwiseDistance", "Parameter", "ParameterDict", "ParameterList", "PixelShuffle", "PixelUnshuffle", "RMSNorm",
    "RNN", "RNNBase", "RNNCell", "Sequential", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "UninitializedBuffer", "UninitializedParameter", "Unflatten",
    "Unfold", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "functional", "init",
    "parallel", "utils",
] + list(_activations) + list(_losses) + list(_paddings) + [n for n in _lazy if n != "LazyModuleMixin"]

from ._legacy_layers import CrossMapLRN2d, NLLLoss2d  # noqa: E402
from ._linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions  # noqa: E402

__all__ += ["CrossMapLRN2d", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions", "NLLLoss2d"]

# PyTorch's import paths (nn.modules.loss._Loss, nn.common_types, ...): re-exports, loaded last
from . import common_types, grad, modules  # noqa: E402

_FACTORY_KEYS = ("device", "dtype", "memory_format")


def factory_kwargs(kwargs: dict | None) -> dict:
    """Return a canonicalized dict of factory kwargs: the ``device``, ``dtype`` and
    ``memory_format`` of ``kwargs``, and those of its ``factory_kwargs`` entry (which names
    them where another argument of the same name exists); refuses other keys and a key given
    both ways, with PyTorch's TypeErrors. For module constructors: ``Parameter(tg.empty(10,
    **nn.factory_kwargs(kwargs)))``."""
    if kwargs is None:
        return {}
    unexpected = set(kwargs) - {*_FACTORY_KEYS, "factory_kwargs"}
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    out = {k: kwargs[k] for k in _FACTORY_KEYS if k in kwargs}
    for k, v in kwargs.get("factory_kwargs", {}).items():
        if k in out:
            raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
        out[k] = v
    return out


__all__ += ["factory_kwargs", "grad"]
from .layers import NonDynamicallyQuantizableLinear  # noqa: E402
