"""``tritongrad.func``: PyTorch's ``torch.func`` function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` and
``linearize`` are built on the autograd tape (autograd/func.py: Note [Function transforms on
the tape]); they nest (``grad(grad(f))``, ``jacrev(jacrev(f))``, ``vmap(grad(f))``), take
pytrees (tuples, lists, dicts) of Tensors, and need no input to require grad. ``vmap`` runs
``func`` once per entry of the mapped dimension and stacks the results: PyTorch's semantics,
a loop's speed (autograd/vmap.py). ``functional_call`` and ``stack_module_state`` call
modules as functions of their state (nn/_functional_call.py); ``replace_all_batch_norm_modules_``
makes a model's batch norms usable under ``vmap``; ``rearrange`` is einops' (a reshape and a
permute, so a view where the layout allows).

Example:
    >>> from tritongrad.func import functional_call, grad, vmap
    >>> model = tg.nn.Linear(3, 1)
    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> def loss(params, x, y):
    ...     return ((functional_call(model, params, (x,)) - y) ** 2).mean()
    >>> x, y = tg.randn(8, 3), tg.randn(8, 1)
    >>> per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    >>> per_sample["weight"].shape
    tritongrad.Size([8, 1, 3])
"""

import keyword
import warnings

from .autograd.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from .autograd.vmap import vmap
from .nn._functional_call import functional_call, stack_module_state
from .nn.module import Module
from .nn.normalization import _BatchNorm, _InstanceNorm

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value",
           "hessian", "jacfwd", "jacrev", "jvp", "linearize", "rearrange",
           "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]


def functionalize(func, *, remove: str = "mutations"):
    """PyTorch's functionalization pass, for graph capture: the function with its mutations
    replaced by out-of-place ops, then copied back into the inputs it mutated. Run eagerly (as
    tritongrad runs every program), that is the function itself: the same results and the
    same mutated inputs. ``remove``: "mutations" or "mutations_and_views"."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n     remove='mutations': "
                           f"all inplace and out= operators will be removed from the program, "
                           f"and replaced with their out-of-place equivalents.\n     "
                           f"remove='mutations_and_views': In addition to the above, all "
                           f"aliasing operators {{view}} will be replaced with their "
                           f"non-aliasing counterparts, {{view}}_copy.\n")
    return func


def debug_unwrap(tensor, *, recurse: bool = True):
    """The plain tensor under a torch.func transform's wrapper, for debugging; tritongrad's
    transforms do not wrap tensors, so ``tensor`` itself."""
    return tensor


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Stops every batch norm module in ``root`` (BatchNorm1d/2d/3d, SyncBatchNorm; not the
    instance norms, as in PyTorch) from tracking running statistics, in place: their
    ``running_mean``, ``running_var`` and ``num_batches_tracked`` become None and
    ``track_running_stats`` False, so they normalise with each batch's own statistics, in
    training and in eval mode. Under ``vmap`` that is what makes them correct: each mapped
    entry is its own batch, and there is no shared running buffer for all of them to update.

    Args:
        root: the module whose submodules (and itself) are changed.

    Returns:
        ``root``.

    Example:
        >>> model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4))
        >>> _ = replace_all_batch_norm_modules_(model)
        >>> vmap(model)(tg.randn(2, 5, 3)).shape
        tritongrad.Size([2, 5, 4])
    """
    for module in root.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm) \
                and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


# -- rearrange ----------------------------------------------------------------------------------

class DimensionBindError(ValueError):
    """``rearrange``: the tensor's sizes do not fit the pattern (functorch's error of that name;
    a ValueError here, as einops raises for it)."""


_ELLIPSIS = "\u2026"  # ("..." as one character while parsing, as functorch's parser does)


def _axis_name_problem(name: str) -> str | None:
    if not name.isidentifier():
        return "not a valid python identifier"
    if name[0] == "_" or name[-1] == "_":
        return "axis name should should not start or end with underscore"
    if keyword.iskeyword(name):
        warnings.warn(f"It is discouraged to use axes names that are keywords: {name}",
                      RuntimeWarning, stacklevel=4)
    if name == "axis":
        warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an error "
                      "in future", FutureWarning, stacklevel=4)
    return None


def _parse_side(expression: str):
    """One side of a pattern: (composition, identifiers, has ellipsis, ellipsis in brackets).
    The composition lists, per dimension, the names of the axes it is made of (``[]``: a
    unit axis, ``1`` or ``()``), or ``_ELLIPSIS``; functorch's parser and messages."""
    composition: list = []
    names: set = set()
    has_ellipsis, in_brackets = False, False
    if "." in expression:
        if "..." not in expression:
            raise ValueError("Expression may contain dots only inside ellipsis (...)")
        if expression.count("...") != 1 or expression.count(".") != 3:
            raise ValueError("Expression may contain dots only inside ellipsis (...); only one "
                             "ellipsis for tensor ")
        expression = expression.replace("...", _ELLIPSIS)
        has_ellipsis = True
    group: list | None = None
    non_unit = False

    def add(name: str) -> None:
        nonlocal in_brackets, non_unit
        if name in names:
            raise ValueError(f"Indexing expression contains duplicate dimension '{name}'")
        if name == _ELLIPSIS:
            names.add(name)
            (composition if group is None else group).append(name)
            in_brackets = group is not None
            return
        if name.isdecimal():
            if int(name) == 1:
                if group is None:
                    composition.append([])
                return
            if int(name) < 1:
                raise ValueError(f"Anonymous axis should have positive length, not {int(name)}")
            non_unit = True
            return
        problem = _axis_name_problem(name)
        if problem is not None:
            raise ValueError(f"Invalid axis identifier: {name}\n{problem}")
        names.add(name)
        (composition if group is None else group).append(name if group is not None else [name])

    current = None
    for char in expression:
        if char in "() ":
            if current is not None:
                add(current)
            current = None
            if char == "(":
                if group is not None:
                    raise ValueError("Axis composition is one-level (brackets inside brackets "
                                     "not allowed)")
                group = []
            elif char == ")":
                if group is None:
                    raise ValueError("Brackets are not balanced")
                composition.append(group)
                group = None
        elif char.isalnum() or char in ("_", _ELLIPSIS):
            current = char if current is None else current + char
        else:
            raise ValueError(f"Unknown character '{char}'")
    if group is not None:
        raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
    if current is not None:
        add(current)
    return composition, names, has_ellipsis, in_brackets, non_unit


def rearrange(tensor, pattern: str, **axes_lengths: int):
    r"""A native implementation of `einops.rearrange`, a reader-friendly smart element
    reordering for multidimensional tensors. This operation includes functionality of
    transpose (axes permutation), reshape (view), squeeze, unsqueeze, stack, concatenate and
    other operations. See: https://einops.rocks/api/rearrange/

    The pattern's left side names the tensor's dimensions (``(h w)``: a dimension made of
    two axes, ``...``: any number of dimensions, ``1`` or ``()``: a dimension of size 1); the
    right side says how to lay those axes out. A result that is a view of ``tensor`` when the
    layout allows is one (``reshape`` and ``permute``), so gradients flow as through those.
    Unlike PyTorch's (which sums it away), a unit axis on the left whose size is not 1 is an
    error, as in einops.

    Args:
        tensor (Tensor or sequence of Tensor): the tensor(s) to rearrange (a sequence is
            stacked along a new first dimension)
        pattern (str): the rearrangement pattern
        axes_lengths (int): any additional length specifications for dimensions

    Returns:
        Tensor: the rearranged tensor

    Example:
        >>> images = tg.randn(32, 30, 40, 3)
        >>> rearrange(images, "b h w c -> b (c h w)").shape
        tritongrad.Size([32, 3600])
        >>> rearrange(images, "b (h h1) (w w1) c -> b h w (c h1 w1)", h1=2, w1=2).shape
        tritongrad.Size([32, 15, 20, 12])
    """
    from .autograd.ops.shape import stack
    from .autograd.tensor import Tensor
    if not isinstance(tensor, Tensor):
        tensor = stack(list(tensor))
    try:
        left_str, right_str = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    if _ELLIPSIS in axes_lengths:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    left, lnames, l_ell, l_ell_br, l_nonunit = _parse_side(left_str)
    right, rnames, r_ell, _, r_nonunit = _parse_side(right_str)
    if not l_ell and r_ell:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern "
                         f"{pattern}")
    if l_ell and l_ell_br:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if l_nonunit or r_nonunit:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    difference = lnames ^ rnames
    if difference:
        raise ValueError(f"Identifiers only on one side of rearrange expression (should be on "
                         f"both): {difference}")
    unmatched = axes_lengths.keys() - lnames
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")
    ndim = tensor.dim()
    if l_ell:
        n_ell = ndim - (len(left) - 1)
        if len(left) - 1 > ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left) - 1}) must be less "
                             f"than or equal to the number of dimensions in the tensor ({ndim})")
    else:
        n_ell = 0
        if len(left) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left)}) must be equal to "
                             f"the number of dimensions in the tensor ({ndim})")
    # the sizes of the elementary axes, in the left side's order (the ellipsis: its dims)
    sizes: dict = {}
    order: list = []
    dim = 0
    for part in left:
        if part == _ELLIPSIS:
            ell = [f"{_ELLIPSIS}{i}" for i in range(n_ell)]
            for i, name in enumerate(ell):
                sizes[name] = tensor.shape[dim + i]
            order += ell
            dim += n_ell
            continue
        size = tensor.shape[dim]
        if not part:  # (a unit axis: einops' check; PyTorch sums the dimension away)
            if size != 1:
                raise DimensionBindError(f"rearrange: the unit axis at dimension {dim} of the "
                                         f"pattern {pattern!r} has size {size}, expected 1")
            dim += 1
            continue
        known = [axes_lengths[n] for n in part if n in axes_lengths]
        unknown = [n for n in part if n not in axes_lengths]
        if any(k < 0 for k in known):
            raise DimensionBindError(f"rearrange: axis lengths must be non-negative, got "
                                     f"{axes_lengths}")
        prod = 1
        for k in known:
            prod *= k
        if len(unknown) > 1:
            raise DimensionBindError(f"cannot infer the sizes of two dimensions at once "
                                     f"{unknown[0]} and {unknown[1]}")
        if unknown:
            if prod == 0 or size % prod:
                raise DimensionBindError(f"inferred dimension does not evenly fit into larger "
                                         f"dimension: {size} vs {tuple(known) + ('?',)}")
            sizes[unknown[0]] = size // prod
        elif prod != size:
            raise DimensionBindError(f"Dimension sizes to do not match ({size} != {prod}) when "
                                     f"matching dimension pack {tuple(part)}")
        for n in part:
            sizes.setdefault(n, axes_lengths.get(n))
        order += part
        dim += 1
    out_order: list = []
    out_shape: list = []
    for part in right:
        if part == _ELLIPSIS:
            ell = [f"{_ELLIPSIS}{i}" for i in range(n_ell)]
            out_order += ell
            out_shape += [sizes[n] for n in ell]
            continue
        names = [m for n in part  # ("(... c)": the ellipsis's dims merged into one)
                 for m in ([f"{_ELLIPSIS}{i}" for i in range(n_ell)] if n == _ELLIPSIS else [n])]
        size = 1
        for n in names:
            size *= sizes[n]
        out_order += names
        out_shape.append(size)
    flat = tensor.reshape([sizes[n] for n in order])
    flat = flat.permute([order.index(n) for n in out_order])
    return flat.reshape(out_shape)
