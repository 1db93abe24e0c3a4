"""``SummaryWriter``: TensorBoard logging as ``torch.utils.tensorboard`` offers it.

The event files are written by the ``tensorboardX`` package (optional: ``pip install
tensorboardX``, or the ``train`` extra), whose ``SummaryWriter`` has PyTorch's methods and
arguments and writes what TensorBoard reads. It takes NumPy arrays and Python numbers; this
subclass hands it tritongrad tensors as such (detached, on the host), wherever they appear
among a method's arguments (``add_scalars``' dict of values, ``add_hparams``' metrics too).

Not provided: ``add_graph`` (it needs a traced graph of the model; tritongrad records none
that TensorBoard could show). ``add_scalar``'s ``new_style`` and ``double_precision`` are
accepted and write the classic scalar summary, which TensorBoard shows the same way.

Example::

    from tritongrad.utils.tensorboard import SummaryWriter
    writer = SummaryWriter("runs/exp1")
    for step in range(100):
        writer.add_scalar("loss/train", loss, step)   # loss: a 0-d tensor or a float
    writer.add_histogram("fc.weight", model.fc.weight, step)
    writer.close()
"""

from __future__ import annotations

import functools

from ..autograd.tensor import Tensor

try:
    import tensorboardX as _tbx
except ImportError:
    raise ImportError("tritongrad.utils.tensorboard needs the tensorboardX package: pip install "
                      "tensorboardX (or pip install 'tritongrad[train]')") from None

__all__ = ["SummaryWriter"]


def _host(value):
    """``value`` with every tensor in it (also inside dicts, lists and tuples) as a NumPy
    array; anything else as it is."""
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, dict):
        return {k: _host(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_host(v) for v in value)
    return value


def _converting(method):
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return method(self, *(_host(a) for a in args), **{k: _host(v) for k, v in kwargs.items()})
    return call


class SummaryWriter(_tbx.SummaryWriter):
    """Writes entries to event files in ``log_dir`` for TensorBoard (default
    ``runs/CURRENT_DATETIME_HOSTNAME``). Its ``add_*`` methods take tritongrad tensors wherever
    PyTorch's take torch tensors.

    Args:
        log_dir: the directory of the event files.
        comment: suffix of the default ``log_dir``.
        purge_step: drop events from a crashed run at and after this step.
        max_queue: events kept in memory before a write.
        flush_secs: how often pending events are written to disk.
        filename_suffix: suffix of the event file names.
    """

    def __init__(self, log_dir: str | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        super().__init__(log_dir=log_dir, comment=comment, purge_step=purge_step,
                         max_queue=max_queue, flush_secs=flush_secs,
                         filename_suffix=filename_suffix)

    def add_scalar(self, tag: str, scalar_value, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Adds one scalar (a number or a one-element tensor) to the summary."""
        super().add_scalar(tag, _host(scalar_value), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        raise NotImplementedError("SummaryWriter.add_graph: tritongrad records no traced "
                                  "graph of a model that TensorBoard could show")


for _name in ("add_scalars", "add_histogram", "add_image", "add_images", "add_image_with_boxes",
              "add_figure", "add_video", "add_audio", "add_text", "add_embedding",
              "add_pr_curve", "add_mesh", "add_hparams", "add_custom_scalars"):
    setattr(SummaryWriter, _name, _converting(getattr(_tbx.SummaryWriter, _name)))
del _name
