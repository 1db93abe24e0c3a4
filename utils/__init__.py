"""``tritongrad.utils``: what training programs use around the model, as ``torch.utils``:

* ``tritongrad.utils.data``: ``Dataset``, samplers, ``DataLoader``, ``random_split``;
* ``tritongrad.utils.checkpoint``: activation checkpointing (recompute instead of store);
* ``tritongrad.utils.safetensors``: state dicts to and from ``.safetensors`` files;
* ``tritongrad.utils.hooks`` (``RemovableHandle``) and ``tritongrad.utils.dlpack``
  (``to_dlpack``, ``from_dlpack``);
* ``tritongrad.utils.flop_counter`` (``FlopCounterMode``) and
  ``tritongrad.utils.module_tracker`` (``ModuleTracker``);
* ``tritongrad.utils._pytree`` (``tree_map``, ``tree_flatten``, ...) and
  ``tritongrad.utils.weak`` (``WeakIdKeyDictionary``, ``WeakTensorKeyDictionary``);
* ``swap_tensors(t1, t2)``: exchange two Tensor objects' contents;
* ``tritongrad.utils.tensorboard``: ``SummaryWriter`` (through the optional tensorboardX;
  imported on demand, as it raises ImportError without it).
"""

import copyreg
import weakref

from . import _pytree, checkpoint, data, dlpack, hooks, safetensors, weak

__all__ = ["checkpoint", "data", "dlpack", "hooks", "safetensors", "swap_tensors", "weak"]


_POISONED = ("Trying to execute AccumulateGrad node that was poisoned by swap_tensors this can "
             "happen when you try to run backward on a tensor that was swapped. For a module m "
             "with `torch.__future__.set_swap_module_params_on_conversion(True)` you should not "
             "change the device or dtype of the module (e.g. `m.cpu()` or `m.half()`) between "
             "running forward and backward. To resolve this, please only change the "
             "device/dtype before running forward (or after both forward and backward).")


def _poison_grad_accumulator(t) -> None:
    """A leaf whose gradient accumulator is alive is in a graph that would accumulate into
    this object after the swap: that node raises if a backward reaches it, and the next graph
    gets a new accumulator (PyTorch poisons it the same way)."""
    acc_ref = t.__dict__.pop("_grad_acc", None)
    acc = acc_ref() if acc_ref is not None else None
    if acc is not None:
        def error_pre_hook(grad_outputs):
            raise RuntimeError(_POISONED)
        acc.register_prehook(error_pre_hook)


def swap_tensors(t1, t2) -> None:
    """This function swaps the content of the two Tensor objects. At a high level, this will
    make t1 have the content of t2 while preserving its identity: its class (a ``Parameter``
    stays with its content), its ``__dict__`` (attributes, ``grad``, hooks) and its slots
    (data, dtype, device, ``requires_grad``, ``grad_fn``, version counter) are exchanged.

    This will not work if t1 and t2 have different slots, or while either has a weak
    reference. A leaf whose gradient accumulator is in a live graph has it poisoned: a backward
    that reaches it raises (swap before the forward, or after both forward and backward).
    Unlike PyTorch, tritongrad cannot count the other references to a Tensor (a graph that
    saved it for backward): such a backward reads the swapped content.

    Example:
        >>> a, b = tg.zeros(2), tg.ones(3)
        >>> swap_tensors(a, b)
        >>> a.tolist(), b.tolist()
        ([1.0, 1.0, 1.0], [0.0, 0.0])
    """
    from ..autograd.tensor import Tensor
    for t, name in ((t1, "t1"), (t2, "t2")):
        if not isinstance(t, Tensor):
            raise TypeError(f"swap_tensors(): expected {name} to be a Tensor, got "
                            f"{type(t).__name__}")
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    t1_slots = set(copyreg._slotnames(t1.__class__))
    t2_slots = set(copyreg._slotnames(t2.__class__))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    if t1 is t2:
        return
    _poison_grad_accumulator(t1)
    _poison_grad_accumulator(t2)

    def swap_attr(name: str) -> None:
        tmp = getattr(t1, name)
        setattr(t1, name, getattr(t2, name))
        setattr(t2, name, tmp)

    swap_attr("__class__")
    swap_attr("__dict__")
    for slot in t1_slots:
        if hasattr(t1, slot) and hasattr(t2, slot):
            swap_attr(slot)
        elif hasattr(t1, slot):
            setattr(t2, slot, getattr(t1, slot))
            delattr(t1, slot)
        elif hasattr(t2, slot):
            setattr(t1, slot, getattr(t2, slot))
            delattr(t2, slot)
