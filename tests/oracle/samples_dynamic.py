"""Op-table samples: ops whose output shape depends on the values (nonzero, unique, ...)."""

from .spec import B, F, I, S

SAMPLES = {
    "nonzero": [S(I((3, 4), 0, 3)), S(B((2, 3)), as_tuple=True), S(F((5,)))],
    "nonzero_static": [S(I((3, 4), 0, 3), size=4), S(B((5,)), size=8, fill_value=7)],
    "argwhere": [S(I((3, 4), 0, 3)), S(B((2, 3, 2)))],
    "masked_select": [S((3, 4), B((3, 4))), S((1, 4), B((3, 1))), S((2, 3), B((3,)))],
    "unique": [
        S(I((12,), 0, 4)),
        S(I((3, 5), 0, 3), return_inverse=True, return_counts=True),
        S(I((6, 2), 0, 2), dim=0, return_inverse=True),
    ],
    "unique_consecutive": [S(I((12,), 0, 2)), S(I((6, 2), 0, 2), return_counts=True, dim=0)],
    "bincount": [S(I((20,), 0, 6)), S(I((8,), 0, 4), (8,), minlength=6, _grad=False)],
    "histc": [S((50,), _grad=False), S((4, 6), bins=7, min=-1, max=1, _grad=False)],
}
