"""``fuse_modules`` / ``fuse_modules_qat``: replace a list of modules (conv-bn, conv-bn-relu,
conv-relu, linear-relu, linear-bn) by one fused module, the others by ``Identity`` (PyTorch's
``torch.ao.quantization.fuse_modules`` and ``fuser_method_mappings``)."""

from __future__ import annotations

import copy
from collections.abc import Callable

from tritongrad import nn
from tritongrad.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

from ..nn import intrinsic as nni

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_known_modules", "get_fuser_method",
           "fuse_conv_bn", "fuse_conv_bn_relu", "fuse_linear_bn"]


def fuse_conv_bn(is_qat: bool, conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Module:
    """Return the fused conv and bn modules: ``nni.ConvBn2d`` for QAT, else a convolution
    with the batch norm folded into it (both must be in eval mode)."""
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        if bn.num_features != conv.out_channels:
            raise AssertionError("Output channel of Conv2d must match num_features of "
                                 "BatchNorm2d")
        if not bn.affine:
            raise AssertionError("Only support fusing BatchNorm2d with affine set to True")
        if not bn.track_running_stats:
            raise AssertionError("Only support fusing BatchNorm2d with tracking_running_stats "
                                 "set to True")
        return nni.ConvBn2d(conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat: bool, conv: nn.Conv2d, bn: nn.BatchNorm2d,
                      relu: nn.ReLU) -> nn.Module:
    """Return the fused conv, bn and relu modules: ``nni.ConvBnReLU2d`` for QAT, else
    ``nni.ConvReLU2d`` of the folded convolution."""
    if not conv.training == bn.training == relu.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        if bn.num_features != conv.out_channels:
            raise AssertionError("Output channel of Conv must match num_features of BatchNorm")
        return nni.ConvBnReLU2d(conv, bn, relu)
    return nni.ConvReLU2d(fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat: bool, linear: nn.Linear, bn: nn.BatchNorm1d) -> nn.Module:
    """Return the fused linear and bn modules (eval mode only: the batch norm folded into
    the linear layer)."""
    if linear.training != bn.training:
        raise AssertionError("Linear and BN both must be in the same mode (train or eval).")
    if is_qat:
        raise NotImplementedError("fuse_linear_bn: QAT fusion of Linear and BatchNorm1d "
                                  "(nni.LinearBn1d) is not supported")
    return fuse_linear_bn_eval(linear, bn)


def _sequential_wrapper2(sequential):
    def fuser_method(is_qat, m1, m2):
        return sequential(m1, m2)
    return fuser_method


_DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU2d),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _sequential_wrapper2(nni.LinearReLU),
}


def get_fuser_method(op_list: tuple | list,
                     additional_fuser_method_mapping: dict | None = None) -> Callable | None:
    """Get fuser method for the given list of module types; None if there is none."""
    mapping = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    return mapping.get(tuple(op_list))


def fuse_known_modules(mod_list: list, is_qat: bool,
                       additional_fuser_method_mapping: dict | None = None) -> list:
    """Return a list of known fuse modules: the fused module first, then ``Identity`` for
    each of the others. The first module's forward pre-hooks and the last module's forward
    hooks move to the fused module."""
    types = tuple(type(m) for m in mod_list)
    fuser_method = get_fuser_method(types, additional_fuser_method_mapping)
    if fuser_method is None:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    fused = fuser_method(is_qat, *mod_list)
    for hook in list(mod_list[0]._forward_pre_hooks.values()):
        fused.register_forward_pre_hook(hook)
    mod_list[0]._forward_pre_hooks.clear()
    for hook in list(mod_list[-1]._forward_hooks.values()):
        fused.register_forward_hook(hook)
    mod_list[-1]._forward_hooks.clear()
    new_mod = [fused]
    for _ in range(1, len(mod_list)):
        identity = nn.Identity()
        identity.training = mod_list[0].training
        new_mod.append(identity)
    return new_mod


def _get_module(model, name: str):
    for part in name.split("."):
        model = getattr(model, part)
    return model


def _set_module(model, name: str, new_module) -> None:
    *parents, last = name.split(".")
    for part in parents:
        model = getattr(model, part)
    setattr(model, last, new_module)


def _fuse_modules_helper(model, modules_to_fuse, is_qat, fuser_func,
                         fuse_custom_config_dict) -> None:
    additional = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    mod_list = [_get_module(model, item) for item in modules_to_fuse]
    new_mod_list = fuser_func(mod_list, is_qat, additional)
    for item, new in zip(modules_to_fuse, new_mod_list):
        _set_module(model, item, new)


def _fuse_modules(model, modules_to_fuse, is_qat, inplace=False, fuser_func=fuse_known_modules,
                  fuse_custom_config_dict=None):
    if not inplace:
        model = copy.deepcopy(model)
    if all(isinstance(m, str) for m in modules_to_fuse):
        _fuse_modules_helper(model, modules_to_fuse, is_qat, fuser_func,
                             fuse_custom_config_dict)
    else:
        for module_list in modules_to_fuse:
            _fuse_modules_helper(model, module_list, is_qat, fuser_func,
                                 fuse_custom_config_dict)
    return model


def fuse_modules(model: nn.Module, modules_to_fuse: list, inplace: bool = False,
                 fuser_func: Callable = fuse_known_modules,
                 fuse_custom_config_dict: dict | None = None) -> nn.Module:
    """Fuse a list of modules into a single module.

    Fuses only the following sequence of modules: conv, bn; conv, bn, relu; conv, relu;
    linear, relu; linear, bn (bn folded, so the model must be in eval mode). Any other
    sequence raises ``NotImplementedError`` (``Cannot fuse modules: (types)``). For these
    sequences, replaces the first item in the list with the fused module, replacing the rest
    of the modules with identity.

    Args:
        model: Model containing the modules to be fused.
        modules_to_fuse: list of list of module names to fuse. Can also be a list of strings
            if there is only a single list of modules to fuse.
        inplace: bool specifying if fusion happens in place on the model, by default a new
            model is returned.
        fuser_func: Function that takes in a list of modules and outputs a list of fused
            modules of the same length.
        fuse_custom_config_dict: custom configuration for fusion
            (``{"additional_fuser_method_mapping": {(types...): fuser}}``).

    Returns:
        model with fused modules. A new copy is created if inplace=False.

    Example:
        >>> m = tg.nn.Sequential(tg.nn.Conv2d(3, 4, 3), tg.nn.BatchNorm2d(4), tg.nn.ReLU())
        >>> fused = fuse_modules(m.eval(), [["0", "1", "2"]])
        >>> type(fused[0]).__name__
        'ConvReLU2d'
    """
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func,
                         fuse_custom_config_dict)


def fuse_modules_qat(model: nn.Module, modules_to_fuse: list, inplace: bool = False,
                     fuser_func: Callable = fuse_known_modules,
                     fuse_custom_config_dict: dict | None = None) -> nn.Module:
    """QAT version for :func:`fuse_modules`: conv-bn and conv-bn-relu become
    ``nni.ConvBn2d`` / ``nni.ConvBnReLU2d`` (the batch norm kept, for training)."""
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func,
                         fuse_custom_config_dict)
