"""``tritongrad.utils._pytree``: PyTorch's ``torch.utils._pytree`` (nested containers of
leaves: ``tree_flatten``, ``tree_unflatten``, ``tree_map``, ``register_pytree_node``, ...).

The implementation lives in ``tritongrad.autograd._pytree`` (``tritongrad.func`` uses it);
this module is its public name.
"""

from ..autograd._pytree import *  # noqa: F403  (the public names; __all__ below)
from ..autograd._pytree import (  # noqa: F401  (private names PyTorch code reaches for)
    BUILTIN_TYPES, STANDARD_DICT_TYPES, SUPPORTED_NODES, GetAttrKey, KeyPath, MappingKey,
    NodeDef, SequenceKey, __all__, _broadcast_to_and_flatten, _deregister_pytree_node,
    _get_node_type, _register_pytree_node, arg_tree_leaves, map_only, treespec_dict,
    treespec_leaf, treespec_tuple)
