"""``tritongrad.nn.modules``: PyTorch's ``torch.nn.modules`` import paths
(``nn.modules.module.Module``, ``nn.modules.loss._Loss``, ``nn.modules.batchnorm._BatchNorm``,
``nn.modules.conv._ConvNd``, ...). Every submodule only re-exports classes defined elsewhere
in nn/, so ``nn.modules.linear.Linear is nn.Linear``.

Example:
    >>> from tritongrad.nn.modules.batchnorm import _BatchNorm
    >>> bn, inorm = tg.nn.BatchNorm2d(3), tg.nn.InstanceNorm2d(3)
    >>> isinstance(bn, _BatchNorm), isinstance(inorm, _BatchNorm)
    (True, False)
"""

from . import (activation, adaptive, batchnorm, channelshuffle, container, conv, distance,
               dropout, flatten, fold, instancenorm, lazy, linear, loss, module, normalization,
               padding, pixelshuffle, pooling, rnn, sparse, transformer, upsampling, utils)
from .activation import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .batchnorm import *  # noqa: F403
from .channelshuffle import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .fold import *  # noqa: F403
from .instancenorm import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import Module
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .pixelshuffle import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403
from .upsampling import *  # noqa: F403

__all__ = sorted({name for sub in (activation, adaptive, batchnorm, channelshuffle, container,
                                   conv, distance, dropout, flatten, fold, instancenorm, linear,
                                   loss, normalization, padding, pixelshuffle, pooling, rnn,
                                   sparse, transformer, upsampling) for name in sub.__all__}
                 | {"Module"})
