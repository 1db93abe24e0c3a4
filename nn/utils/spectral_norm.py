"""``nn.utils.spectral_norm`` / ``remove_spectral_norm``: PyTorch's older, hook-based
spectral normalization: the parameter ``name`` becomes ``name_orig``, the power method's
vectors the buffers ``name_u`` and ``name_v``, and a forward pre-hook recomputes
``module.name = W / sigma(W)`` before each forward (one power iteration step in training
mode)."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...autograd.ops import creation
from ...autograd.ops.linalg_ext import dot, mv
from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from ..parameter import Parameter

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm`` on the parameter ``name``."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        mat = weight
        if self.dim != 0:  # (dim first)
            mat = mat.permute(self.dim, *(d for d in range(mat.dim()) if d != self.dim))
        return mat.reshape(mat.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            # u and v are updated in place (the buffers are the power method's state); the
            # clones keep what backward reads from the next forward's update
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(mv(weight_mat, v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            # random starting vectors (the power method converges from almost any)
            u = F.normalize(creation.empty(h, dtype=weight.dtype, device=weight.device)
                            .normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(creation.empty(w, dtype=weight.dtype, device=weight.device)
                            .normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # a plain attribute until the first forward's hook computes it
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Applies spectral normalization to a parameter in the given module:
    ``W_SN = W / sigma(W)``, sigma estimated by the power method (Miyato et al., 2018), with
    ``name_orig`` the parameter, ``name_u`` and ``name_v`` buffers and ``name`` recomputed
    before every forward.

    Args:
        module: containing module.
        name: name of the weight parameter. Default: ``"weight"``.
        n_power_iterations: number of power iterations per forward. Default: 1.
        eps: epsilon for numerical stability in calculating norms. Default: 1e-12.
        dim: the dimension of the output channels: 0, except for the ConvTranspose modules
            (1).

    Example::

        >>> m = spectral_norm(tg.nn.Linear(20, 40))
        >>> m.weight_u.shape
        tritongrad.Size([40])
    """
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Removes the spectral normalization reparameterization from a module: ``name`` is a
    parameter again, holding the current normalized weight."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
