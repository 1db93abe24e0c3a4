"""Eager mode quantization: ``prepare`` (observers attached), ``convert`` (modules swapped for
their quantized forms), ``prepare_qat``, ``quantize``, ``quantize_qat`` and
``quantize_dynamic``, and the module mappings they use (PyTorch's
``torch.ao.quantization.quantize`` and ``quantization_mappings``)."""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from tritongrad import nn

from ..nn import intrinsic as nni, qat as nnqat
from ..nn.intrinsic import qat as nniqat, quantized as nniq
from ..nn.quantized import dynamic as nnqd, modules as nnq
from .fake_quantize import FakeQuantizeBase
from .observer import ObserverBase
from .qconfig import default_dynamic_qconfig
from .stubs import DeQuantStub, QuantStub, QuantWrapper

__all__ = ["get_default_static_quant_module_mappings", "get_default_qat_module_mappings",
           "get_default_dynamic_quant_module_mappings", "get_default_qconfig_propagation_list",
           "no_observer_set", "propagate_qconfig_", "add_quant_dequant", "prepare",
           "prepare_qat", "convert", "quantize", "quantize_qat", "quantize_dynamic",
           "swap_module"]

DEFAULT_STATIC_QUANT_MODULE_MAPPINGS = {
    QuantStub: nnq.Quantize,
    DeQuantStub: nnq.DeQuantize,
    nn.Conv2d: nnq.Conv2d,
    nn.Linear: nnq.Linear,
    nn.BatchNorm2d: nnq.BatchNorm2d,
    nn.ReLU6: nnq.ReLU6,
    nn.Dropout: nnq.Dropout,
    nnq.FloatFunctional: nnq.QFunctional,
    nni.ConvReLU2d: nniq.ConvReLU2d,
    nni.LinearReLU: nniq.LinearReLU,
    nniqat.ConvBn2d: nnq.Conv2d,
    nniqat.ConvBnReLU2d: nniq.ConvReLU2d,
    nniqat.ConvReLU2d: nniq.ConvReLU2d,
    nniqat.LinearReLU: nniq.LinearReLU,
    nnqat.Linear: nnq.Linear,
    nnqat.Conv2d: nnq.Conv2d,
}
# Note [Swapped parameter-free modules] (ao/nn/quantized/modules.py): swapped by convert,
# never observed
_SWAP_ONLY_MODULE_MAPPINGS = {
    nn.ReLU: nnq.ReLU,
    nn.MaxPool2d: nnq.MaxPool2d,
    nn.AvgPool2d: nnq.AvgPool2d,
    nn.AdaptiveAvgPool2d: nnq.AdaptiveAvgPool2d,
}
DEFAULT_STATIC_QUANT_MODULE_MAPPINGS.update(_SWAP_ONLY_MODULE_MAPPINGS)
DEFAULT_QAT_MODULE_MAPPINGS = {
    nn.Conv2d: nnqat.Conv2d,
    nn.Linear: nnqat.Linear,
    nni.ConvBn2d: nniqat.ConvBn2d,
    nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
    nni.ConvReLU2d: nniqat.ConvReLU2d,
    nni.LinearReLU: nniqat.LinearReLU,
}
DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = {
    nn.Linear: nnqd.Linear,
    nn.LSTM: nnqd.LSTM,
}
_INCLUDE_QCONFIG_PROPAGATE_LIST = {nn.Sequential}


def get_default_static_quant_module_mappings() -> dict:
    """Get module mapping for post training static quantization."""
    return copy.deepcopy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_default_qat_module_mappings() -> dict:
    """Get default module mapping for quantization aware training."""
    return copy.deepcopy(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_dynamic_quant_module_mappings() -> dict:
    """Get module mapping for post training dynamic quantization."""
    return DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS


def get_default_qconfig_propagation_list() -> set:
    """Get the default list of module types that we'll attach qconfig attribute to in
    prepare."""
    return ((set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) - set(_SWAP_ONLY_MODULE_MAPPINGS))
            | set(DEFAULT_QAT_MODULE_MAPPINGS) | set(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)
            | _INCLUDE_QCONFIG_PROPAGATE_LIST)


def no_observer_set() -> set:
    """These modules cannot have observers inserted by default."""
    return set()


def _is_activation_post_process(module) -> bool:
    return isinstance(module, (ObserverBase, FakeQuantizeBase))


def _propagate_qconfig_helper(module, qconfig_dict, qconfig_parent=None, prefix="") -> None:
    module_qconfig = qconfig_dict.get(type(module), qconfig_parent)
    module_qconfig = qconfig_dict.get(prefix, module_qconfig)
    module_qconfig = getattr(module, "qconfig", module_qconfig)
    module.qconfig = module_qconfig
    for name, child in module.named_children():
        _propagate_qconfig_helper(child, qconfig_dict, module_qconfig,
                                  prefix + "." + name if prefix else name)


def propagate_qconfig_(module: nn.Module, qconfig_dict: dict | None = None,
                       prepare_custom_config_dict: dict | None = None) -> None:
    """Propagate qconfig through the module hierarchy and assign `qconfig` attribute on each
    leaf module.

    Args:
        module: input module.
        qconfig_dict: dictionary that maps from name or type of submodule to quantization
            configuration, qconfig applies to all submodules of a given module unless qconfig
            for the submodules are specified (when the submodule already has qconfig
            attribute).
        prepare_custom_config_dict: customization configuration dictionary for prepare
            function (custom modules are not supported: an error names them).
    """
    _refuse_custom_modules("propagate_qconfig_", prepare_custom_config_dict,
                           "float_to_observed_custom_module_class")
    _propagate_qconfig_helper(module, qconfig_dict or {})


def _observer_forward_hook(self, input, output):
    """Forward hook that calls observer on the output."""
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self, input):
    """Forward pre hook that calls observer on the input."""
    return self.activation_post_process(input[0])


def _activation_is_memoryless(qconfig) -> bool:
    """An activation observer that keeps no state between calls (a dynamic
    MovingAverage observer with averaging constant 1): it observes the input instead."""
    act = qconfig.activation()
    obs = getattr(act, "activation_post_process", act)
    return getattr(obs, "averaging_constant", None) == 1 and getattr(obs, "is_dynamic", False)


def _register_activation_post_process_hook(module, pre_hook: bool = False) -> None:
    if not hasattr(module, "activation_post_process"):
        raise AssertionError("Expect activation_post_process attribute already attached to "
                             "the module")
    if pre_hook:
        module.register_forward_pre_hook(_observer_forward_pre_hook, prepend=True)
    else:
        module.register_forward_hook(_observer_forward_hook, prepend=True)


def _devices(module) -> set:
    return {p.device for p in module.parameters()} | {b.device for b in module.buffers()}


def _add_observer_(module, qconfig_propagation_list=None, non_leaf_module_list=None,
                   device=None) -> None:
    """Add observer for the leaf child of the module: an ``activation_post_process`` child
    and a forward hook that runs it on the module's output."""
    if qconfig_propagation_list is None:
        qconfig_propagation_list = get_default_qconfig_propagation_list()
    if device is None:
        devices = _devices(module)
        if len(devices) > 1:
            raise AssertionError(f"_add_observer_ only works with cpu or single-device CUDA "
                                 f"modules, but got devices {devices}")
        device = next(iter(devices)) if devices else None

    def make(qconfig):
        act = qconfig.activation()
        return act.to(device) if device is not None else act

    def needs_observation(m) -> bool:
        return getattr(m, "qconfig", None) is not None

    def insert(m) -> None:
        if needs_observation(m) and not isinstance(m, DeQuantStub):
            m.add_module("activation_post_process", make(m.qconfig))
            _register_activation_post_process_hook(
                m, pre_hook=_activation_is_memoryless(m.qconfig))

    for child in module.children():
        if type(child) is nn.Dropout:
            continue
        if issubclass(type(child), (nnq.FloatFunctional, nnq.QFunctional)):
            if needs_observation(child):
                child.activation_post_process = make(child.qconfig)
        elif isinstance(child, nni._FusedModule):
            if needs_observation(child):
                insert(child)
        elif non_leaf_module_list is not None and type(child) in non_leaf_module_list:
            if needs_observation(child):
                insert(child)
        else:
            _add_observer_(child, qconfig_propagation_list, non_leaf_module_list, device)
    leaf = len(module._modules) == 0 or hasattr(module, "weight_fake_quant")
    if (leaf and not isinstance(module, nn.Sequential)
            and type(module) in qconfig_propagation_list):
        insert(module)


def add_quant_dequant(module: nn.Module) -> nn.Module:
    """Wrap the leaf child module in QuantWrapper if it has a valid qconfig. Note that this
    function will modify the children of module inplace and it can return a new module
    which wraps the input module as well."""
    if len(module._modules) == 0 and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


def prepare(model: nn.Module, inplace: bool = False, allow_list: set | None = None,
            observer_non_leaf_module_list: set | None = None,
            prepare_custom_config_dict: dict | None = None) -> nn.Module:
    """Prepares a copy of the model for quantization calibration or quantization-aware
    training: quantization configuration is propagated to the submodules, and observers
    are attached (their forward hooks record the outputs' statistics).

    Args:
        model: input model to be modified in-place.
        inplace: carry out model transformations in-place, the original module is mutated.
        allow_list: list of quantizable modules.
        observer_non_leaf_module_list: list of non-leaf modules we want to add observer.
        prepare_custom_config_dict: customization configuration dictionary for prepare
            function (custom modules are not supported: an error names them).
    """
    _refuse_custom_modules("prepare", prepare_custom_config_dict,
                           "float_to_observed_custom_module_class")
    if not inplace:
        model = copy.deepcopy(model)
    propagation = get_default_qconfig_propagation_list() if allow_list is None else allow_list
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules", stacklevel=2)
    _add_observer_(model, propagation, observer_non_leaf_module_list)
    return model


def _refuse_custom_modules(op: str, config: dict | None, key: str) -> None:
    """Custom module classes are not supported: refused by name rather than ignored."""
    if config and config.get(key):
        raise NotImplementedError(f"{op}: custom module classes ({key}) are not supported")


def _remove_activation_post_process(module) -> None:
    if hasattr(module, "activation_post_process") and _is_activation_post_process(
            module.activation_post_process):
        delattr(module, "activation_post_process")
    for hooks, fn in ((module._forward_pre_hooks, _observer_forward_pre_hook),
                      (module._forward_hooks, _observer_forward_hook)):
        for handle_id in [h for h, f in hooks.items() if f is fn]:
            hooks.pop(handle_id)


def _remove_qconfig(module) -> None:
    """Clean up the qconfig left in the module so that new qconfig can be propagated."""
    for child in module.children():
        _remove_qconfig(child)
    if hasattr(module, "qconfig"):
        del module.qconfig
    _remove_activation_post_process(module)


def quantize(model: nn.Module, run_fn: Callable, run_args: Any, mapping: dict | None = None,
             inplace: bool = False) -> nn.Module:
    """Quantize the input float model with post training static quantization: prepare,
    calibrate with ``run_fn(model, *run_args)``, convert.

    Return:
        Quantized model.
    """
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


def quantize_dynamic(model: nn.Module, qconfig_spec: dict | set | None = None, dtype=None,
                     mapping: dict | None = None, inplace: bool = False) -> nn.Module:
    """Converts a float model to dynamic (i.e. weights-only) quantized model: the weights of
    the chosen modules (``nn.Linear`` and ``nn.LSTM`` by default) are quantized to int8
    ahead of time, the activations are quantized on the fly from their own range.

    Args:
        model: input model.
        qconfig_spec: Either a dictionary that maps from name or type of submodule to
            quantization configuration, or a set of types and/or submodule names to apply
            dynamic quantization to.
        dtype: the quantized dtype of the weights (``qint8``, the default); other dtypes
            (float16, quint8 embeddings) are not supported here.
        mapping: maps type of a submodule to a type of corresponding dynamically quantized
            version with which the submodule needs to be replaced.
        inplace: carry out model transformations in-place, the original module is mutated.
    """
    from .. import _qtensor as q
    dtype = q.qint8 if dtype is None else dtype
    if dtype is not q.qint8:
        raise NotImplementedError(f"quantize_dynamic: dtype {dtype} is not supported (only "
                                  f"qint8)")
    if qconfig_spec is None:
        # (PyTorch's default also names GRU and the RNN cells, which have no dynamic
        # quantized form here and stay float)
        qconfig_spec = {nn.Linear: default_dynamic_qconfig, nn.LSTM: default_dynamic_qconfig}
    elif isinstance(qconfig_spec, set):
        qconfig_spec = dict.fromkeys(qconfig_spec, default_dynamic_qconfig)
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model


def prepare_qat(model: nn.Module, mapping: dict | None = None,
                inplace: bool = False) -> nn.Module:
    """Prepares a copy of the model for quantization aware training and converts it to
    quantized version: the float modules are swapped for their QAT forms (weights fake
    quantized) and fake quantize modules are attached to their outputs.

    Args:
        model: input model to be modified in-place (in training mode).
        mapping: dictionary that maps float modules to quantized modules to be replaced.
        inplace: carry out model transformations in-place, the original module is mutated.
    """
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def quantize_qat(model: nn.Module, run_fn: Callable, run_args: Any,
                 inplace: bool = False) -> nn.Module:
    """Do quantization aware training and output a quantized model: prepare_qat, train with
    ``run_fn(model, *run_args)``, convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model


def convert(module: nn.Module, mapping: dict | None = None, inplace: bool = False,
            remove_qconfig: bool = True, is_reference: bool = False,
            convert_custom_config_dict: dict | None = None,
            use_precomputed_fake_quant: bool = False) -> nn.Module:
    """Converts submodules in input module to a different module according to `mapping` by
    calling `from_float` method on the target module class. And remove qconfig at the end
    if remove_qconfig is set to True.

    Args:
        module: prepared and calibrated module.
        mapping: a dictionary that maps from source module type to target module type, can
            be overwritten to allow swapping user defined Modules.
        inplace: carry out model transformations in-place, the original module is mutated.
        is_reference: reference quantized modules are not supported (an error).
        convert_custom_config_dict: custom module classes are not supported (an error).
        use_precomputed_fake_quant: use the fake quantize modules' current parameters for
            the weights instead of observing them once more.
    """
    if is_reference:
        raise NotImplementedError("convert: reference quantized modules (is_reference=True) "
                                  "are not supported")
    _refuse_custom_modules("convert", convert_custom_config_dict,
                           "observed_to_quantized_custom_module_class")
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping, inplace=True,
             use_precomputed_fake_quant=use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def _convert(module: nn.Module, mapping: dict | None = None, inplace: bool = False,
             use_precomputed_fake_quant: bool = False) -> nn.Module:
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    reassign = {}
    for name, mod in module.named_children():
        # (a fused module is converted whole: PyTorch's QAT conv-bn modules are fused
        # modules too, so the batch norm they hold is not swapped on its own)
        if not isinstance(mod, (nni._FusedModule, nniqat.ConvBn2d)):
            _convert(mod, mapping, True, use_precomputed_fake_quant)
        reassign[name] = swap_module(mod, mapping, {}, use_precomputed_fake_quant)
    for key, value in reassign.items():
        module._modules[key] = value
    return module


def swap_module(mod: nn.Module, mapping: dict, custom_module_class_mapping: dict | None = None,
                use_precomputed_fake_quant: bool = False) -> nn.Module:
    """Swaps the module if it has a quantized counterpart and it has an `observer`
    attached.

    Args:
        mod: input module.
        mapping: a dictionary that maps from nn module to nnq module.
        custom_module_class_mapping: custom module classes are not supported (an error when
            not empty).
        use_precomputed_fake_quant: passed to ``from_float`` where it takes it.

    Return:
        The corresponding quantized module of `mod`.
    """
    if custom_module_class_mapping:
        raise NotImplementedError("swap_module: custom module classes "
                                  "(custom_module_class_mapping) are not supported")
    if getattr(mod, "qconfig", None) is None or type(mod) not in mapping:
        return mod
    qmod = mapping[type(mod)]
    if "use_precomputed_fake_quant" in inspect.signature(qmod.from_float).parameters:
        new_mod = qmod.from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
    else:
        new_mod = qmod.from_float(mod)
    for hook in mod._forward_pre_hooks.values():
        if hook is not _observer_forward_pre_hook:
            new_mod.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new_mod.register_forward_hook(hook)
    devices = _devices(mod)
    if len(devices) > 1:
        raise AssertionError(f"swap_module only works with cpu or single-device CUDA modules, "
                             f"but got devices {devices}")
    if devices:
        new_mod.to(next(iter(devices)))
    return new_mod
