"""``torch.utils._pytree``: torch's pytrees, which library code uses to walk nested outputs.

torch's rules differ from JAX's (``jax.tree_util``), so this is its own small walker rather than
a wrapper: ``None`` is a leaf (JAX: an empty node), a dict's children come in insertion order
(JAX sorts the keys), and a registered node's ``flatten_fn(obj)`` returns ``(children, context)``
and ``unflatten_fn(children, context)`` rebuilds it (JAX's ``unflatten(aux, children)``). Nodes:
list, tuple (and ``Size``, rebuilt as a tuple), namedtuple, dict, OrderedDict, defaultdict, deque,
and what ``register_pytree_node`` adds.

Example::

    >>> from fjax.utils import _pytree as pytree
    >>> leaves, spec = pytree.tree_flatten({"b": [1, None], "a": (2,)})
    >>> leaves, spec.num_leaves
    ([1, None, 2], 3)
    >>> pytree.tree_unflatten([10, 20, 30], spec)
    {'b': [10, 20], 'a': (30,)}
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable

from ..tensor import Size

__all__ = [
    "LeafSpec",
    "SUPPORTED_NODES",
    "TreeSpec",
    "register_pytree_node",
    "tree_all",
    "tree_all_only",
    "tree_any",
    "tree_any_only",
    "tree_flatten",
    "tree_iter",
    "tree_leaves",
    "tree_map",
    "tree_map_",
    "tree_map_only",
    "tree_map_only_",
    "tree_structure",
    "tree_unflatten",
]


@dataclasses.dataclass(frozen=True)
class NodeDef:
    type: type
    flatten_fn: Callable
    unflatten_fn: Callable


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(
    cls: type,
    flatten_fn: Callable,
    unflatten_fn: Callable,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context=None,
    from_dumpable_context=None,
    flatten_with_keys_fn=None,
) -> None:
    """Make ``cls`` a node: ``flatten_fn(obj) -> (children, context)``,
    ``unflatten_fn(children, context) -> obj``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None, maybe_from_str_fn=None, **kwargs) -> None:
    """torch's older name (libraries still call it)."""
    register_pytree_node(cls, flatten_fn, unflatten_fn, **kwargs)


def _namedtuple_unflatten(values, context):
    return context(*values)


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


register_pytree_node(list, lambda x: (list(x), None), lambda v, c: list(v))
register_pytree_node(tuple, lambda x: (list(x), None), lambda v, c: tuple(v))
register_pytree_node(dict, lambda x: (list(x.values()), list(x)), lambda v, c: dict(zip(c, v)))
register_pytree_node(
    collections.OrderedDict,
    lambda x: (list(x.values()), list(x)),
    lambda v, c: collections.OrderedDict(zip(c, v)),
)
register_pytree_node(
    collections.defaultdict,
    lambda x: (list(x.values()), [x.default_factory, list(x)]),
    lambda v, c: collections.defaultdict(c[0], zip(c[1], v)),
)
register_pytree_node(collections.deque, lambda x: (list(x), x.maxlen), lambda v, c: collections.deque(v, maxlen=c))
_NAMEDTUPLE = type("namedtuple", (), {})  # the key namedtuples share (their class is the context)
SUPPORTED_NODES[_NAMEDTUPLE] = NodeDef(_NAMEDTUPLE, lambda x: (list(x), type(x)), _namedtuple_unflatten)


def _node_type(obj) -> type | None:
    if _is_namedtuple(obj):
        return _NAMEDTUPLE
    t = type(obj)
    if t is Size:  # torch flattens a Size as a tuple (and rebuilds a tuple)
        return tuple
    return t if t in SUPPORTED_NODES else None


class TreeSpec:
    """The structure of a pytree: its node type, the node's context and its children's specs."""

    def __init__(self, type: type | None, context: Any, children_specs: list):  # noqa: A002 - torch's name
        self.type, self.context, self.children_specs = type, context, children_specs
        self.num_leaves = 1 if type is None else sum(c.num_leaves for c in children_specs)
        self.num_children = len(children_specs)

    def is_leaf(self) -> bool:
        return self.type is None

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeSpec) and (self.type, self.context, self.children_specs) == (
            other.type,
            other.context,
            other.children_specs,
        )

    def __hash__(self):
        return hash((self.type, repr(self.context), tuple(self.children_specs)))

    def __repr__(self) -> str:
        if self.type is None:
            return "*"
        name = "namedtuple" if self.type is _NAMEDTUPLE else self.type.__name__
        return f"TreeSpec({name}, {self.context!r}, [{', '.join(map(repr, self.children_specs))}])"


def LeafSpec() -> TreeSpec:  # noqa: N802 - torch's name
    """The spec of a single leaf."""
    return TreeSpec(None, None, [])


def _flatten(tree, is_leaf, leaves: list) -> TreeSpec:
    kind = None if is_leaf is not None and is_leaf(tree) else _node_type(tree)
    if kind is None:
        leaves.append(tree)
        return LeafSpec()
    children, context = SUPPORTED_NODES[kind].flatten_fn(tree)
    return TreeSpec(kind, context, [_flatten(c, is_leaf, leaves) for c in children])


def tree_flatten(tree, is_leaf: Callable | None = None) -> tuple[list, TreeSpec]:
    """``(leaves, spec)``: the leaves in torch's order and the structure around them."""
    leaves: list = []
    spec = _flatten(tree, is_leaf, leaves)
    return leaves, spec


def tree_unflatten(leaves, treespec: TreeSpec):
    """The pytree of ``treespec``'s structure with ``leaves`` (as many as it has)."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(
            f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got {type(treespec)}"
        )
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(
            f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a pytree that "
            f"holds {treespec.num_leaves} items ({treespec})."
        )
    it = iter(leaves)

    def build(spec: TreeSpec):
        if spec.type is None:
            return next(it)
        return SUPPORTED_NODES[spec.type].unflatten_fn([build(c) for c in spec.children_specs], spec.context)

    return build(treespec)


def tree_leaves(tree, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree, is_leaf: Callable | None = None):
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree, is_leaf: Callable | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree, *rests, is_leaf: Callable | None = None):
    """``func`` on each leaf (and the matching leaves of ``rests``, of the same structure)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_leaves_like(r, spec, is_leaf) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def _leaves_like(tree, spec: TreeSpec, is_leaf) -> list:
    """``tree`` flattened up to ``spec`` (torch's ``flatten_up_to``): where ``spec`` has a leaf,
    the whole subtree of ``tree`` there is one leaf; a dict's keys are matched as a set."""
    out: list = []

    def walk(node: TreeSpec, sub) -> None:
        if node.type is None:
            out.append(sub)
            return
        kind = _node_type(sub)
        if kind is not node.type:
            raise ValueError(f"Node type mismatch; expected {node}, but got {type(sub).__name__}.")
        if kind in (dict, collections.OrderedDict, collections.defaultdict):
            keys = node.context if kind is not collections.defaultdict else node.context[1]
            if set(sub) != set(keys):
                raise ValueError(
                    f"Node keys mismatch; expected {sorted(map(repr, keys))}, but got {sorted(map(repr, sub))}."
                )
            children = [sub[k] for k in keys]
        else:
            children = SUPPORTED_NODES[kind].flatten_fn(sub)[0]
            if len(children) != node.num_children:
                raise ValueError(f"Node arity mismatch; expected {node.num_children}, but got {len(children)}.")
        for child_spec, child in zip(node.children_specs, children):
            walk(child_spec, child)

    walk(spec, tree)
    return out


def tree_map_(func: Callable, tree, *rests, is_leaf: Callable | None = None):
    """``func`` on each leaf for its effects; returns ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_leaves_like(r, spec, is_leaf) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _only(types, func):
    return lambda x: func(x) if isinstance(x, types) else x


def tree_map_only(type_or_types, func: Callable, tree, is_leaf: Callable | None = None):
    """``func`` on the leaves that are instances of ``type_or_types``; other leaves stay."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types, func: Callable, tree, is_leaf: Callable | None = None):
    return tree_map_(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_all_only(type_or_types, pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))
