"""Op-table samples: comparisons, predicates, logical and bitwise ops, where."""

import numpy as np

from .spec import B, D, I, S

# Integer and bool cases do not depend on the float dtype: run them once, without gradients.
INT = {"_grad": False, "_dtypes": ("float32",)}

# Integer-valued floats, so that equality and closeness actually occur.
SMALL = D(I((3, 4), -2, 3), "float32")


def _cmp():
    return [
        S((3, 4), (4,), _grad=False),
        S(SMALL, D(I((4,), -2, 3), "float32"), _grad=False),
        S((3, 4), 0.0, _grad=False),
        S((), (2,), _grad=False),
        S((0, 2), (2,), _grad=False),
        S(I((5,), -3, 3), I((5,), -3, 3), **INT),
        S(I((5,), -3, 3), 0.5, **INT),
        S(I((5,), -3, 3), 1, **INT),
        S(B((4,)), B((4,)), **INT),
    ]


def _logical():
    return [
        S((3, 4), SMALL, _grad=False),
        S(B((3, 4)), B((4,)), **INT),
        S(I((5,), -2, 2), (5,), _grad=False),
        S((), B((2,)), _grad=False),
    ]


def _bitwise():
    return [
        S(I((3, 4), 0, 16), I((4,), 0, 16), **INT),
        S(I((5,), -8, 8), 5, **INT),
        S(B((3, 4)), B((3, 4)), **INT),
        S(D(I((4,), 0, 100), "int32"), D(I((4,), 0, 100), "int32"), **INT),
    ]


SAMPLES = {
    **{name: _cmp() for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    "isnan": [S((3, 4), _grad=False), S(I((3,)), **INT)],
    "isinf": [S((3, 4), _grad=False), S(I((3,)), **INT)],
    "isposinf": [S((3, 4), _grad=False), S(I((3,)), **INT)],
    "isneginf": [S((3, 4), _grad=False), S(I((3,)), **INT)],
    "isfinite": [S((3, 4), _grad=False), S(I((3,)), **INT), S((0,), _grad=False)],
    "signbit": [S((3, 4), _grad=False), S(I((5,), -3, 3), **INT)],
    "isclose": [
        S(SMALL, SMALL, _grad=False),
        S((3, 4), (4,), _grad=False),
        S((3, 4), (3, 4), rtol=10.0, _grad=False),
        S((3, 4), (3, 4), atol=1.0, rtol=0.0, _grad=False),
        S((3, 4), (3, 4), rtol=0.0, atol=0.0, _grad=False),
        S(I((5,), 0, 3), I((5,), 0, 3), **INT),
        S((2,), (2,), equal_nan=True, _grad=False),
    ],
    "logical_and": _logical(),
    "logical_or": _logical(),
    "logical_xor": _logical(),
    "logical_not": [S((3, 4), _grad=False), S(SMALL, _grad=False), S(B((4,)), **INT), S(I((4,), 0, 2), **INT)],
    "bitwise_and": _bitwise(),
    "bitwise_or": _bitwise(),
    "bitwise_xor": _bitwise(),
    **{
        name: [
            S(I((3, 4), -100, 100), I((4,), 0, 12), **INT),
            S(D(I((5,), -50, 50), "int8"), D(I((5,), -2, 10), "int8"), **INT),
            S(D(I((5,), 0, 200), "uint8"), 3, **INT),
        ]
        for name in ("bitwise_left_shift", "bitwise_right_shift")
    },
    "bitwise_not": [S(I((3, 4), -8, 8), **INT), S(B((4,)), **INT), S(D(I((4,), 0, 100), "int32"), **INT)],
    "where": [
        S(B((3, 4)), (3, 4), (4,)),
        S(B((4,)), (3, 1), ()),
        S(B((3, 4)), (3, 4), 0.0),
        S(B(()), (), ()),
        S(B((3, 4)), I((3, 4)), I((4,)), **INT),
        S(B((3, 4)), I((3, 4)), 0.5, **INT),
        S(B((0, 2)), (0, 2), (2,)),
    ],
}

# Sorted sequences are fixed arrays (random draws would not be sorted); the looked-up values are random.
_SEQ = np.array([-1.5, -0.5, 0.0, 0.0, 0.5, 1.5], np.float32)
_ROWS = np.sort(np.random.default_rng(0).standard_normal((3, 5)), axis=1).astype(np.float32)
_UNSORTED = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
_GRID = np.array([-1.0, 0.0, 0.0, 1.0], np.float32)
SAMPLES.update(
    {
        "searchsorted": [
            S(_SEQ, (3, 4), _grad=False),
            S(_SEQ, D(I((7,), -2, 2), "float32"), right=True, **INT),
            S(_SEQ, D(I((7,), -2, 2), "float32"), side="right", out_int32=True, **INT),
            S(_ROWS, (3, 6), _grad=False),
            S(_ROWS, (3, 2), side="right", _grad=False),
            S(_UNSORTED, (5,), sorter=np.argsort(_UNSORTED), _grad=False),
            S(np.arange(6), I((2, 3), -1, 8), **INT),
            S(_SEQ, 0.25, **INT),
        ],
        "bucketize": [
            S((3, 4), _GRID, _grad=False),
            S(D(I((3, 4), -2, 2), "float32"), _GRID, right=True, **INT),
            S(I((5,), -2, 3), np.array([-1, 0, 2]), out_int32=True, **INT),
            S((), _GRID, _grad=False),
        ],
        "isin": [
            S(I((3, 4), 0, 6), I((5,), 0, 6), **INT),
            S(I((3, 4), 0, 6), I((2, 2), 0, 6), invert=True, **INT),
            S(SMALL, D(I((3,), -2, 3), "float32"), **INT),
            S(I((5,), 0, 3), 1, **INT),
            S(I((5,), 0, 3), D(I((0,)), "float32"), **INT),
            S(I((4,), 0, 3), I((3,), 0, 3), assume_unique=True, **INT),
        ],
    }
)
