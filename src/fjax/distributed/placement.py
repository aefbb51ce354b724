"""OneFlow's placement and sbp over jax.sharding: a placement is a Mesh, an sbp tuple a PartitionSpec."""

from __future__ import annotations

import warnings

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..errors import OpError


def _backend_devices(type: str):  # noqa: A002 - OneFlow's name
    """``"cuda"`` is the default accelerator; on a machine without one it falls back to CPU."""
    if type not in ("cuda", "cpu"):
        raise ValueError(f"placement: type must be 'cuda' or 'cpu', got {type!r}")
    if type == "cuda":
        try:
            return jax.devices("gpu")
        except RuntimeError:
            return jax.devices("cpu")
    return jax.devices("cpu")


class placement:  # noqa: N801 - OneFlow's name
    """Devices a global tensor lives on: ``fjax.placement("cuda", [0, 1, 2, 3])``.

    A nested ``ranks`` list (``[[0, 1], [2, 3]]``) is a 2-D mesh; an sbp tuple then has one
    entry per mesh axis. Axis names are ``"p0"``, ``"p1"``, ... unless given (mesh configs name
    them ``data``, ``model``, ...).

    Args:
        type: ``"cuda"`` or ``"cpu"``.
        ranks: the device indices, a list or a nested list for a mesh.
        axis_names: the mesh axes' names.

    Example:
        >>> p = fjax.placement("cpu", [0])
        >>> x = fjax.ones(4, 6).to_global(p, fjax.sbp.split(0))
        >>> x.placement == p, x.sbp
        (True, (fjax.sbp.split(dim=0),))
        >>> mesh = fjax.placement("cpu", [[0, 1], [2, 3]])  # a 2-D mesh on 4 devices  # doctest: +SKIP
    """

    def __init__(self, type: str = "cuda", ranks=None, axis_names=None):  # noqa: A002
        devices = _backend_devices(type)
        if ranks is None:
            ranks = list(range(len(devices)))
        grid = np.asarray(ranks)
        if grid.dtype.kind not in "iu" or grid.ndim == 0:
            raise OpError(f"placement: ranks must be a (nested) list of device indices, got {ranks!r}")
        if grid.size and (grid.min() < 0 or grid.max() >= len(devices)):
            raise OpError(
                f"placement: ranks {grid.ravel().tolist()} out of range; {len(devices)} {type} device(s) exist "
                f"(for virtual CPU devices set XLA_FLAGS=--xla_force_host_platform_device_count=N before jax starts)"
            )
        if len(set(grid.ravel().tolist())) != grid.size:
            raise OpError(f"placement: ranks {ranks!r} repeat a device")
        names = tuple(axis_names) if axis_names is not None else tuple(f"p{i}" for i in range(grid.ndim))
        if len(names) != grid.ndim:
            raise OpError(f"placement: {len(names)} axis names {names} for a {grid.ndim}-d ranks list")
        self.type = type
        self._ranks = grid.tolist()
        self.mesh = Mesh(np.asarray(devices, dtype=object)[grid], names)

    @classmethod
    def all(cls, type: str = "cuda") -> "placement":  # noqa: A002
        """Every device of that type.

        Args:
            type: the device type, ``"cuda"`` or ``"cpu"``.

        Example:
            >>> fjax.placement.all("cpu").type
            'cpu'
        """
        return cls(type, list(range(len(_backend_devices(type)))))

    @classmethod
    def from_mesh(cls, mesh: Mesh) -> "placement":
        """The placement of an existing jax Mesh.

        Args:
            mesh: a ``jax.sharding.Mesh``.

        Example:
            >>> p = fjax.placement("cpu", [0])
            >>> fjax.placement.from_mesh(p.mesh) == p
            True
        """
        p = object.__new__(cls)
        p.type = "cpu" if mesh.devices.flat[0].platform == "cpu" else "cuda"
        all_devices = _backend_devices(p.type)
        index = {d.id: i for i, d in enumerate(all_devices)}
        p._ranks = np.vectorize(lambda d: index[d.id])(mesh.devices).tolist()
        p.mesh = mesh
        return p

    @property
    def ranks(self) -> np.ndarray:
        """The device indices as a numpy array shaped like the mesh (OneFlow's ``placement.ranks``).

        Example::

            >>> fjax.placement("cpu", [0]).ranks
            array([0])
        """
        return np.asarray(self._ranks, dtype=np.int64)

    @property
    def hierarchy(self) -> tuple:
        """The mesh's shape (OneFlow deprecates it for ``ranks.shape``).

        Example:
            >>> fjax.placement("cpu", [0]).hierarchy
            (1,)
        """
        return tuple(self.mesh.devices.shape)

    def __eq__(self, other):
        return isinstance(other, placement) and (self.type, self._ranks) == (other.type, other._ranks)

    def __hash__(self):
        return hash((self.type, str(self._ranks)))

    def __repr__(self):
        return f'fjax.placement(type="{self.type}", ranks={self._ranks})'


class sbp:  # noqa: N801 - OneFlow's name (``fjax.sbp.sbp``)
    """The type of every sbp value: ``isinstance(s, fjax.sbp.sbp)``.

    An sbp value called with no arguments is itself, as in OneFlow (``fjax.sbp.broadcast()``
    is ``fjax.sbp.broadcast``, ``fjax.sbp.split(0)()`` equals ``fjax.sbp.split(0)``).

    Example::

        >>> isinstance(fjax.sbp.split(1), fjax.sbp.sbp)
        True
        >>> fjax.sbp.split(0)() == fjax.sbp.split(0)
        True
    """

    __slots__ = ()

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self).__name__)

    def __call__(self):
        return self


_SbpBase = sbp


class split(_SbpBase):  # noqa: N801 - OneFlow's name
    """The tensor's dim ``dim`` is cut into equal pieces along this mesh axis.

    ``axis=`` is OneFlow's old name of ``dim`` (before 0.8), accepted with a warning.

    Example::

        >>> fjax.sbp.split(1)
        fjax.sbp.split(dim=1)
    """

    __slots__ = ("dim",)

    def __init__(self, dim: int | None = None, **kwargs):
        if set(kwargs) - {"axis"}:
            raise TypeError(f"sbp.split: unexpected keyword argument(s) {sorted(set(kwargs) - {'axis'})}")
        if "axis" in kwargs:
            if dim is not None:
                raise TypeError("sbp.split: got both dim and axis (axis is the old name of dim)")
            warnings.warn("sbp.split: 'axis' is OneFlow's old name of 'dim'; use dim", stacklevel=2)
            dim = kwargs["axis"]
        if dim is None:
            raise TypeError("sbp.split: missing the required argument 'dim'")
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 0:
            raise ValueError(f"sbp.split: dim must be a non-negative int, got {dim!r}")
        self.dim = dim

    def __eq__(self, other):
        return isinstance(other, split) and other.dim == self.dim

    def __hash__(self):
        return hash(("split", self.dim))

    def __repr__(self):
        return f"fjax.sbp.split(dim={self.dim})"


class _Broadcast(_SbpBase):
    """OneFlow's sbp value ``broadcast`` (``broadcast()`` is the same value); called with a tensor
    it is torch's collective ``torch.distributed.broadcast(tensor, src)`` (``collectives.broadcast``)."""

    __slots__ = ()

    def __repr__(self):
        return "fjax.sbp.broadcast"

    def __call__(self, tensor=None, src=None, group=None, async_op: bool = False, group_src=None):
        if tensor is None and src is None and group is None and group_src is None and not async_op:
            return self
        from .collectives import broadcast as collective

        return collective(tensor, src, group, async_op, group_src)


class _PartialSum(_SbpBase):
    __slots__ = ()

    def __repr__(self):
        return "fjax.sbp.partial_sum"


broadcast = _Broadcast()
partial_sum = _PartialSum()


def as_sbp_tuple(sbp, p: placement, op: str = "to_global") -> tuple:
    """One sbp per mesh axis (a single sbp is allowed for a 1-D placement)."""
    if isinstance(sbp, _SbpBase):
        sbp = (sbp,)
    try:
        sbp = tuple(sbp)
    except TypeError:
        raise OpError(f"{op}: expected fjax.sbp.split(d), broadcast or partial_sum (or a tuple), got {sbp!r}") from None
    if len(sbp) != p.mesh.devices.ndim:
        raise OpError(f"{op}: {p!r} has {p.mesh.devices.ndim} mesh axes but sbp {sbp} has {len(sbp)} entries")
    for s in sbp:
        if not isinstance(s, _SbpBase):
            raise OpError(f"{op}: expected fjax.sbp.split(d), broadcast or partial_sum, got {s!r}")
    return sbp


def partition_spec(sbp: tuple, p: placement, shape: tuple, op: str = "to_global") -> PartitionSpec:
    """The PartitionSpec of an sbp tuple for a tensor of ``shape`` (partial_sum: not split)."""
    dims: list = [None] * len(shape)
    for axis_name, size, s in zip(p.mesh.axis_names, p.mesh.devices.shape, sbp):
        if isinstance(s, split):
            if s.dim >= len(shape):
                raise OpError(f"{op}: {s!r} on a tensor of shape {tuple(shape)}")
            if shape[s.dim] % size:
                raise OpError(
                    f"{op}: dim {s.dim} of shape {tuple(shape)} is not divisible by the {size} devices of mesh "
                    f"axis {axis_name!r}"
                )
            prev = dims[s.dim]
            dims[s.dim] = axis_name if prev is None else (*((prev,) if isinstance(prev, str) else prev), axis_name)
    return PartitionSpec(*dims)


def sbp_of(sharding: NamedSharding, ndim: int) -> tuple:
    """The sbp tuple that a NamedSharding means (one entry per mesh axis)."""
    spec = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
    out = []
    for name in sharding.mesh.axis_names:
        dim = next((d for d, e in enumerate(spec) if e == name or (isinstance(e, tuple) and name in e)), None)
        out.append(broadcast if dim is None else split(dim))
    return tuple(out)
