"""``torch.utils._pytree`` against torch's: leaves and their order, structures, rebuilding,
maps over several trees, registered nodes and the errors of mismatched trees."""

from __future__ import annotations

import collections

import pytest
import torch
import torch.utils._pytree as tp

import fjax
from fjax.utils import _pytree as fp

Point = collections.namedtuple("Point", "x y")


def _trees(mod):
    return [
        [1, None, (2, {"b": 3, "a": 4})],
        {"z": [1, 2], "a": (3,), "m": None},
        collections.OrderedDict(b=1, a=[2, 3]),
        collections.defaultdict(list, {"y": 1, "x": (2, 3)}),
        collections.deque([1, [2]], maxlen=5),
        Point(1, [2, Point(3, 4)]),
        mod.Size([2, 3]),
        (),
        7,
        None,
    ]


@pytest.mark.parametrize("k", range(10))
def test_flatten_unflatten_and_map_as_torch(k):
    mine, theirs = _trees(fjax)[k], _trees(torch)[k]
    fl, fs = fp.tree_flatten(mine)
    tl, ts = tp.tree_flatten(theirs)
    assert fl == tl and fs.num_leaves == ts.num_leaves
    rebuilt_mine = fp.tree_unflatten([("leaf", i) for i in range(len(fl))], fs)
    rebuilt_theirs = tp.tree_unflatten([("leaf", i) for i in range(len(tl))], ts)
    assert repr(rebuilt_mine).replace("fjax.Size", "torch.Size") == repr(rebuilt_theirs)
    assert type(rebuilt_mine).__name__ == type(rebuilt_theirs).__name__
    double = lambda x: x * 2 if isinstance(x, int) else x  # noqa: E731
    assert repr(fp.tree_map(double, mine)).replace("fjax.Size", "torch.Size") == repr(tp.tree_map(double, theirs))
    assert fp.tree_any(lambda x: x is None, mine) == tp.tree_any(lambda x: x is None, theirs)
    assert fp.tree_all_only(int, lambda x: x > 0, mine) == tp.tree_all_only(int, lambda x: x > 0, theirs)


def test_map_over_several_trees_flattens_them_up_to_the_first():
    for p in (tp, fp):
        assert p.tree_map(lambda a, b: (a, b), [1, {"u": 2, "v": 3}], [[9], {"v": 5, "u": 4}]) == [
            (1, [9]),
            {"u": (2, 4), "v": (3, 5)},
        ]
        with pytest.raises(ValueError):
            p.tree_map(lambda a, b: a, [1, 2], [1])
        with pytest.raises(ValueError):
            p.tree_map(lambda a, b: a, {"a": 1}, {"b": 1})


def test_registered_nodes_and_tensors():
    for p in (tp, fp):

        class Pair:
            def __init__(self, a, b):
                self.a, self.b = a, b

        p.register_pytree_node(Pair, lambda x: ([x.a, x.b], "pair"), lambda v, c: Pair(*v))
        leaves, spec = p.tree_flatten({"p": Pair(1, [2, 3])})
        assert leaves == [1, 2, 3] and spec.num_leaves == 3
        back = p.tree_unflatten([4, 5, 6], spec)["p"]
        assert (back.a, back.b) == (4, [5, 6])
        with pytest.raises(ValueError):
            p.register_pytree_node(Pair, lambda x: ([], None), lambda v, c: Pair(0, 0))
    x = fjax.ones(2)
    assert fp.tree_leaves({"w": x, "n": 3}) == [x, 3]
    assert fp.tree_map_only(fjax.Tensor, lambda t: t * 2, {"w": x, "n": 3})["n"] == 3
    with pytest.raises(ValueError, match="holds 2 items"):
        fp.tree_unflatten([1], fp.tree_structure([1, 2]))
