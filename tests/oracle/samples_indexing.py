"""Op-table samples: gather/scatter, index_*, masked_fill and tensor[index]."""

from .spec import B, F, I, L, S


def _torch_index(arrays, index):
    """The torch index that fjax's static index template stands for."""
    out = []
    for e in index:
        if isinstance(e, str) and e.startswith("tensor:"):
            out.append(arrays[int(e[7:])])
        elif isinstance(e, (tuple, list)) and e and e[0] == "slice":
            out.append(slice(*e[1:]))
        else:
            out.append(e)
    return tuple(out)


def _getitem(x, arrays, index):
    return x[_torch_index(arrays, index)]


def _setitem(x, arrays, index, value):
    y = x.clone()
    y[_torch_index(arrays, index)] = value
    return y


_ALL = ("slice", None, None, None)

SAMPLES = {
    "gather": [
        S((3, 4), 1, I((3, 2), 0, 4)),
        S((3, 4), 0, I((5, 4), 0, 3)),
        S((3, 4), 0, I((2, 3), 0, 3)),
        S((2, 3, 4), -1, I((2, 3, 6), 0, 4)),
        S((3,), 0, I((0,), 0, 3)),
        S((), 0, I((), 0, 1)),
    ],
    # torch's backward gives src the index's shape, so a larger src is checked forward only.
    "scatter": [
        S((3, 4), 0, I((1, 4), 0, 3), (1, 4)),
        S((3, 4), 1, I((3, 1), 0, 4), (3, 1)),
        S((3, 4), 0, I((1, 3), 0, 3), (2, 5), _grad=False),
        S((3, 4), 1, I((2, 1), 0, 4), 2.5),
        S((3, 4), 0, I((1, 3), 0, 3), value=-1.0),
        S(I((3, 4)), 1, I((3, 1), 0, 4), I((3, 2)), _grad=False),
    ],
    "scatter_add": [
        S((3, 4), 0, I((5, 4), 0, 3), (5, 4)),
        S((3, 4), 1, I((3, 6), 0, 4), (3, 6)),
        S((2, 3, 4), 2, I((2, 2, 3), 0, 4), (2, 2, 3)),
        S((3, 4), 1, I((2, 6), 0, 4), (3, 7), _grad=False),
    ],
    "index_select": [
        S((3, 4), 0, I((5,), 0, 3)),
        S((3, 4), 1, I((2,), 0, 4)),
        S((3, 4), -1, I((), 0, 4)),
        S((2, 3, 4), 1, I((0,), 0, 3)),
        S(I((3, 4)), 0, I((2,), 0, 3), _grad=False),
    ],
    "index_add": [
        S((5, 3), 0, I((4,), 0, 5), (4, 3)),
        S((3, 5), 1, I((2,), 0, 5), (3, 2), alpha=2.0),
        S(I((5, 3)), 0, I((4,), 0, 5), I((4, 3)), _grad=False),
    ],
    "index_put": [
        S((5, 3), L(I((1,), 0, 5)), (1, 3)),  # one index: duplicates would make "set" order-dependent
        S((5, 3), L(I((3,), 0, 5)), (3, 3), True),
        S((5, 3), L(I((4,), 0, 5), I((4,), 0, 3)), (4,), True),
        S((4, 3), L(I((1,), 0, 4)), (), _grad=False),
    ],
    "index_copy": [S((5, 3), 0, I((1,), 0, 5), (1, 3)), S((3, 5), 1, I((1,), 0, 5), (3, 1))],
    "index_fill": [
        S((5, 3), 0, I((2,), 0, 5), 1.5),
        S((3, 5), 1, I((3,), 0, 5), -2.0),
        S(I((3, 5)), 1, I((3,), 0, 5), 4, _grad=False),
    ],
    "masked_fill": [
        S((3, 4), B((3, 4)), 1.5),
        S((3, 4), B((4,)), -2.0),
        S((3, 4), B((3, 1)), ()),
        S((4,), B((3, 4)), 0.0),
        S(I((3, 4)), B((3, 4)), 7, _grad=False),
        S((), B(()), 2.0),
    ],
    "take_along_dim": [
        S((3, 4), I((3, 2), 0, 4), 1),
        S((3, 4), I((5, 4), 0, 3), 0),
        S((3, 4), I((5,), 0, 12)),
        S((3, 4), I((1, 2), 0, 4), 1),
        S((2, 3, 4), I((2, 3, 2), 0, 4), -1),
    ],
    "take": [S((3, 4), I((5,), 0, 12)), S((3, 4), I((2, 3), 0, 12)), S((5,), I((), 0, 5))],
    "getitem": [
        S((4, 5), L(), [1], _torch=_getitem),
        S((4, 5), L(), [-1, ("slice", 1, None, 2)], _torch=_getitem),
        S((4, 5, 6), L(), [Ellipsis, None, ("slice", None, 3, None)], _torch=_getitem),
        S((4, 5), L(I((3,), 0, 4)), ["tensor:0"], _torch=_getitem),
        S((4, 5), L(I((2, 3), -4, 4)), ["tensor:0", ("slice", 1, 4, None)], _torch=_getitem),
        S((4, 5, 6), L(I((3,), 0, 4), I((3,), 0, 6)), ["tensor:0", _ALL, "tensor:1"], _torch=_getitem),
        S((4, 5, 6), L(I((3,), 0, 5), I((3,), 0, 6)), [_ALL, "tensor:0", "tensor:1"], _torch=_getitem),
        S((4, 5, 6), L(I((3,), 0, 6)), [0, _ALL, "tensor:0"], _torch=_getitem),
        S((2, 3, 4, 5), L(I((3,), 0, 5)), [_ALL, 1, _ALL, "tensor:0"], _torch=_getitem),
        S((4, 5, 6), L(I((3,), 0, 4), I((1,), 0, 5)), ["tensor:0", None, "tensor:1"], _torch=_getitem),
        S((4, 5), L(I((), 0, 4)), ["tensor:0"], _torch=_getitem),
        S((4,), L(), [None], _torch=_getitem),
        S(I((4, 5)), L(I((3,), 0, 4)), ["tensor:0", 2], _torch=_getitem, _grad=False),
    ],
    "setitem": [
        S((4, 5), L(), [1], (5,), _torch=_setitem),
        S((4, 5), L(), [_ALL, ("slice", 1, 3, None)], 2.5, _torch=_setitem),
        S((4, 5), L(I((1,), 0, 4)), ["tensor:0"], (1, 5), _torch=_setitem),
        S((4, 5, 6), L(I((1,), 0, 6)), [0, _ALL, "tensor:0"], (5, 1), _torch=_setitem),
        S((4, 5, 6), L(I((1,), 0, 6)), [_ALL, 1, "tensor:0"], (4, 1), _torch=_setitem),
        S((4, 5), L(), [Ellipsis, 0], (), _torch=_setitem),
        S(I((4, 5)), L(), [("slice", 1, None, None)], 3, _torch=_setitem, _grad=False),
    ],
}

SAMPLES.update(
    {
        "scatter_reduce": [
            S((3, 4), 0, I((5, 4), 0, 3), (5, 4), "sum"),
            S((3, 4), 1, I((3, 6), 0, 4), (3, 6), "sum", include_self=False),
            S(
                F((3, 4), 0.5, 2.0), 0, I((5, 4), 0, 3), F((5, 4), 0.5, 2.0), "prod", _grad=False
            ),  # JAX: no scatter_mul gradient for repeats
            S((3, 4), 0, I((5, 4), 0, 3), (5, 4), "mean"),
            S((3, 4), 0, I((5, 4), 0, 3), (5, 4), "mean", include_self=False),
            S((3, 4), 0, I((5, 4), 0, 3), (5, 4), "amax"),
            S((3, 4), 1, I((3, 6), 0, 4), (3, 6), "amin", include_self=False),
        ],
        "index_reduce": [
            S(
                F((3, 4), 0.5, 2.0), 0, I((5,), 0, 3), F((5, 4), 0.5, 2.0), "prod", _grad=False
            ),  # JAX: no scatter_mul gradient for repeats
            S((3, 4), 1, I((6,), 0, 4), (3, 6), "mean"),
            S((3, 4), 0, I((5,), 0, 3), (5, 4), "amax", include_self=False),
            S((3, 4), 0, I((5,), 0, 3), (5, 4), "amin"),
        ],
        "put": [S((3, 4), I((5,), -12, 12), (5,), _grad=False), S((3, 4), I((5,), 0, 12), (5,), True)],
        "masked_scatter": [S((3, 4), B((3, 4)), (12,)), S((3, 4), B((4,)), (3, 4))],
    }
)
