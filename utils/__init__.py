"""``tritongrad.utils``: what training programs use around the model, as ``torch.utils``:

* ``tritongrad.utils.data``: ``Dataset``, samplers, ``DataLoader``, ``random_split``;
* ``tritongrad.utils.checkpoint``: activation checkpointing (recompute instead of store);
* ``tritongrad.utils.safetensors``: state dicts to and from ``.safetensors`` files;
* ``tritongrad.utils.hooks`` (``RemovableHandle``) and ``tritongrad.utils.dlpack``
  (``to_dlpack``, ``from_dlpack``);
* ``tritongrad.utils.tensorboard``: ``SummaryWriter`` (through the optional tensorboardX;
  imported on demand, as it raises ImportError without it).
"""

from . import checkpoint, data, dlpack, hooks, safetensors

__all__ = ["checkpoint", "data", "dlpack", "hooks", "safetensors"]
