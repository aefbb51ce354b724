"""Op-table samples: ops that exist as views (select, unfold, tensor_split ...) and the view
kernels that read and write a storage (compared with torch.as_strided and an in-place
copy into it)."""

import torch

from .spec import S


def _as_strided(x, storage, base_offset, offset, *, base_shape, base_strides, shape, strides):
    return torch.as_strided(x, shape, strides, offset)


def _as_strided_scatter(x, src, storage, base_offset, offset, *, base_shape, base_strides, shape, strides):
    # not torch.as_strided_scatter: its gradient for x zeroes the complement of the view
    out = x.clone()
    out.as_strided(shape, strides, offset).copy_(src)
    return out


def _strided_overwrite(x, src, size, stride, storage_offset=None):
    out = x.clone()
    out.as_strided(size, stride, storage_offset or 0).copy_(src)
    return out


def _geometry(base_shape, shape, strides):
    """Static geometry keywords, as lists (a tuple would be read as a tensor spec)."""
    base_strides = list(torch.empty(base_shape).stride())
    return dict(base_shape=list(base_shape), base_strides=base_strides, shape=list(shape), strides=list(strides))


SAMPLES = {
    "select": [S((3, 4), 0, 1), S((3, 4), 1, -1), S((2, 3, 4), 2, 3)],
    "view_as": [
        S((3, 4), (6, 2), _torch=lambda x, o: x.view_as(o)),
        S((2, 6), (12,), _torch=lambda x, o: x.view_as(o)),
    ],
    "unfold": [
        S((8,), 0, 3, 2, _torch=lambda x, *a: x.unfold(*a)),
        S((3, 7), 1, 2, 1, _torch=lambda x, *a: x.unfold(*a)),
        S((4, 5), -2, 4, 3, _torch=lambda x, *a: x.unfold(*a)),
    ],
    "tensor_split": [S((7, 3), 3), S((7, 3), [1, 5]), S((3, 8), 3, dim=1), S((5,), [-2, 9])],
    "_view_read": [
        S((4, 6), None, None, 1, **_geometry((4, 6), (2, 3), (6, 2)), _torch=_as_strided),
        S((4, 6), None, None, 5, **_geometry((4, 6), (6,), (1,)), _torch=_as_strided),
        S((3, 4), None, None, 0, **_geometry((3, 4), (4, 3), (1, 4)), _torch=_as_strided),
    ],
    "_view_write": [
        S((4, 6), (2, 3), None, None, 1, **_geometry((4, 6), (2, 3), (6, 2)), _torch=_as_strided_scatter),
        S((4, 6), (6,), None, None, 5, **_geometry((4, 6), (6,), (1,)), _torch=_as_strided_scatter),
        S((3, 4), (4, 3), None, None, 0, **_geometry((3, 4), (4, 3), (1, 4)), _torch=_as_strided_scatter),
    ],
}

SAMPLES.update(
    {
        "expand_copy": [S((3, 1), [2, 3, 4])],
        "permute_copy": [S((2, 3, 4), [2, 0, 1])],
        "diagonal_copy": [S((3, 4)), S((2, 3, 4), 1, 1, 2)],
        "alias_copy": [S((3, 4))],
        "narrow_copy": [S((5, 3), 0, 1, 3)],
        "split_with_sizes_copy": [S((5, 3), [2, 3])],
        "unbind_copy": [S((3, 4)), S((3, 4), 1)],
        "unfold_copy": [S((7,), 0, 3, 2)],
        "squeeze_copy": [S((3, 1, 4)), S((3, 1, 4), 1)],
        "unsqueeze_copy": [S((3, 4), 1)],
        "transpose_copy": [S((2, 3, 4), 0, 2)],
        "t_copy": [S((3, 4))],
        "view_copy": [S((4, 6), [2, 12]), S((4, 6), [-1, 3, 2])],
        "as_strided_copy": [S((3, 3), [2, 2], [1, 2]), S((3, 3), [2, 2], [1, 2], 1), S((16,), [2, 2, 2], [1, 0, 4])],
        # the exact gradient: torch's as_strided_scatter keeps the input's gradient inside the view and
        # zeroes it outside, the reverse of what the forward does
        "as_strided_scatter": [
            S((3, 3), (2, 2), [2, 2], [1, 2], 1, _torch=_strided_overwrite),
            S((4, 5), (5,), [5], [4], _torch=_strided_overwrite),
        ],
    }
)
