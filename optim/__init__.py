"""``tritongrad.optim``: optimizers over module parameters (PyTorch's ``torch.optim``
surface): ``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``, ``Adadelta``, ``Adamax``,
``NAdam``, ``RAdam``, ``Rprop``, ``ASGD``, ``Adafactor``, ``Muon``, ``LBFGS``, ``SparseAdam``,
and learning-rate schedules in ``tritongrad.optim.lr_scheduler``;
weight averaging (SWA, EMA) in ``tritongrad.optim.swa_utils``;
``swap_in_optimizer_params_and_state`` runs an optimizer on other tensors for a while.

Example:
    >>> import tritongrad as tg
    >>> model = tg.nn.Linear(4, 1)
    >>> opt = tg.optim.AdamW(model.parameters(), lr=1e-3)
    >>> for _ in range(3):
    ...     opt.zero_grad()
    ...     loss = model(tg.randn(8, 4)).pow(2).mean()
    ...     loss.backward()
    ...     opt.step()
"""

from . import lr_scheduler, swa_utils
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .asgd import ASGD
from .grad_scaler import GradScaler
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "LBFGS", "Rprop", "ASGD", "Adafactor", "Optimizer", "lr_scheduler", "GradScaler",
           "swa_utils"]
__all__ += ["Muon"]
__all__ += ["SparseAdam"]
__all__ += ["swap_in_optimizer_params_and_state"]
