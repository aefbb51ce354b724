"""torch.distributed's process group over jax.distributed: one group, the world of processes.

``init_process_group`` joins the run that ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT``
(torchrun's and ``python -m fjax.distributed.launch``'s variables) or its arguments describe: a
world of one process needs nothing else; several processes are one ``jax.distributed`` job
(``fjax.env.init``), whose rank and size the group reports. Without those variables and
arguments it makes a world of one process (torch raises there, asking for ``RANK``).
"""

from __future__ import annotations

import datetime
import os

import jax

from .. import env

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class Backend(str):
    """torch's backend names; ``Backend("GLOO")`` is ``"gloo"``. Every backend runs on jax's collectives.

    Example::

        >>> from fjax.distributed import Backend
        >>> Backend("NCCL"), Backend.GLOO
        ('nccl', 'gloo')
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        return name.lower() if value == Backend.UNDEFINED else value


class ProcessGroup:
    """A group of processes that collectives run over; fjax's groups all span the whole world.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> pg = dist.group.WORLD
        >>> pg.rank(), pg.size()
        (0, 1)
        >>> dist.destroy_process_group()
    """

    def __init__(self, rank: int, size: int, backend: str, name: str = "") -> None:
        self._rank, self._size, self._backend, self._name = rank, size, backend, name

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"ProcessGroup(rank={self._rank}, size={self._size}, backend={self._backend!r})"


class _World:
    default: ProcessGroup | None = None


class _WorldMeta(type):
    @property
    def WORLD(cls) -> ProcessGroup | None:  # noqa: N802 - torch's name
        return _World.default


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD``: the default process group (None before ``init_process_group``).

    Example::

        >>> from fjax.distributed import GroupMember
        >>> GroupMember.WORLD is None
        True
    """

    NON_GROUP_MEMBER = -100


class group(metaclass=_WorldMeta):  # noqa: N801 - torch's name
    """``group.WORLD``: the default process group, as ``GroupMember.WORLD``.

    Example::

        >>> from fjax.distributed import group
        >>> group.WORLD is None
        True
    """


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    if value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"init_process_group: environment variable {name}={value!r} is not an integer") from None


def _check_backend(backend) -> str:
    if backend is None:
        return Backend.UNDEFINED
    name = str(backend).lower()
    if name in Backend.backend_list:
        return Backend(name)
    pairs = [p.split(":") for p in name.split(",")] if ":" in name else None
    if pairs is None or any(len(p) != 2 for p in pairs):
        raise ValueError(
            f"init_process_group: unknown backend type {backend!r}; expected one of {Backend.backend_list}"
        )
    return name


def _coordinator(init_method: str | None) -> str | None:
    """``host:port`` of rank 0 from ``tcp://host:port`` or ``MASTER_ADDR``/``MASTER_PORT``."""
    if init_method is not None and init_method.startswith("tcp://"):
        return init_method[len("tcp://") :].split("?")[0].rstrip("/")
    if init_method not in (None, "env://") and not init_method.startswith("env://"):
        raise NotImplementedError(
            f"init_process_group: init_method {init_method!r} is not supported for several processes; use env:// "
            "(MASTER_ADDR, MASTER_PORT) or tcp://host:port"
        )
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    return f"{addr}:{port}" if addr and port else None


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Join the run and make the default process group (torch's signature).

    ``world_size``/``rank`` default to ``WORLD_SIZE``/``RANK`` (or to an already initialized
    ``jax.distributed`` job), else one process of rank 0. Several processes rendezvous at
    ``init_method="tcp://host:port"`` or ``MASTER_ADDR:MASTER_PORT`` through
    ``jax.distributed.initialize``, which must run before JAX starts its devices: call this
    before creating any tensor, or start the script with ``python -m fjax.distributed.launch``
    (which joins the run before the script starts). ``backend`` is recorded (``get_backend``);
    every backend runs on jax's collectives (gloo on CPU). ``store``, ``pg_options`` and
    ``device_id`` are accepted for one process; ``device_id`` is left to jax.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group(backend="gloo")  # no RANK/WORLD_SIZE: a world of one
        >>> dist.is_initialized(), dist.get_rank(), dist.get_world_size(), dist.get_backend()
        (True, 0, 1, 'gloo')
        >>> dist.destroy_process_group()
    """
    if _World.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _check_backend(backend)
    joined = jax.distributed.is_initialized()
    if world_size == -1:
        world_size = jax.process_count() if joined else _env_int("WORLD_SIZE") or 1
    if rank == -1:
        rank = jax.process_index() if joined else _env_int("RANK")
        if rank is None:
            if world_size > 1:
                raise ValueError(
                    "init_process_group: environment variable RANK expected, but not set (world_size="
                    f"{world_size}); pass rank= or start the script with python -m fjax.distributed.launch"
                )
            rank = 0
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(
            f"init_process_group: rank must be in [0, world_size), got rank={rank}, world_size={world_size}"
        )
    if world_size > 1:
        if store is not None:
            raise NotImplementedError(
                "init_process_group: a store rendezvous is not supported for several processes; fjax's processes "
                "meet at jax.distributed's coordinator (init_method='tcp://host:port' or MASTER_ADDR/MASTER_PORT)"
            )
        if not joined:
            address = _coordinator(init_method)
            if address is None:
                raise ValueError(
                    "init_process_group: several processes need MASTER_ADDR and MASTER_PORT (or "
                    "init_method='tcp://host:port') to find rank 0"
                )
            seconds = int(timeout.total_seconds()) if timeout is not None else 300
            env.init(address, world_size, rank, initialization_timeout=seconds)
        if (jax.process_count(), jax.process_index()) != (world_size, rank):
            raise ValueError(
                f"init_process_group: world_size={world_size}, rank={rank} do not match the jax.distributed job "
                f"this process is part of ({jax.process_count()} processes, this one is {jax.process_index()})"
            )
    _World.default = ProcessGroup(rank, world_size, name, group_name)


def is_available() -> bool:
    """Whether the distributed package is available: always True.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.is_available()
        True
    """
    return True


def is_initialized() -> bool:
    """Whether ``init_process_group`` has made the default group.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.is_initialized()
        False
    """
    return _World.default is not None


def is_gloo_available() -> bool:
    """True: CPU collectives run on gloo (through jax).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.is_gloo_available()
        True
    """
    return True


def is_nccl_available() -> bool:
    """Whether a GPU backend is present (jax's GPU collectives use NCCL).

    Example::

        >>> import fjax.distributed as dist
        >>> isinstance(dist.is_nccl_available(), bool)
        True
    """
    return jax.default_backend() == "gpu"


def is_mpi_available() -> bool:
    """False: fjax has no MPI backend of its own.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.is_mpi_available()
        False
    """
    return False


def is_torchelastic_launched() -> bool:
    """Whether torchelastic started this process (``TORCHELASTIC_RUN_ID`` is set), as torch reports.

    Example::

        >>> import fjax.distributed as dist
        >>> isinstance(dist.is_torchelastic_launched(), bool)
        True
    """
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _group(group: ProcessGroup | None) -> ProcessGroup:
    """The group a call works on: ``group`` or the default; raises torch's error before init."""
    if _World.default is None:
        raise ValueError(_NOT_INITIALIZED)
    if group is None:
        return _World.default
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"expected a ProcessGroup (dist.group.WORLD or dist.new_group()), got {type(group).__name__}")
    return group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (the default group when None).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.get_rank()
        0
        >>> dist.destroy_process_group()
    """
    return _group(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of processes in ``group`` (the default group when None).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.get_world_size()
        1
        >>> dist.destroy_process_group()
    """
    return _group(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend name given to ``init_process_group`` (``'undefined'`` when it was None, as torch).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("nccl")
        >>> dist.get_backend()
        'nccl'
        >>> dist.destroy_process_group()
    """
    return _group(group)._backend


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    """The global ranks in ``group``: every rank, since fjax's groups span the world.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.get_process_group_ranks(dist.group.WORLD)
        [0]
        >>> dist.destroy_process_group()
    """
    return list(range(_group(group).size()))


def get_global_rank(group: ProcessGroup | None, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group``: the same number, as fjax's groups span the world.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.get_global_rank(dist.group.WORLD, 0)
        0
        >>> dist.destroy_process_group()
    """
    if group is None or group is _World.default:  # (torch does not check a rank of the world)
        return group_rank
    if not 0 <= group_rank < group.size():
        raise ValueError(f"get_global_rank: group rank {group_rank} is not part of the group (size {group.size()})")
    return group_rank


def get_group_rank(group: ProcessGroup | None, global_rank: int) -> int:
    """The rank of global rank ``global_rank`` in ``group``: the same number (groups span the world).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.get_group_rank(dist.group.WORLD, 0)
        0
        >>> dist.destroy_process_group()
    """
    return get_global_rank(group, global_rank)


def new_group(
    ranks: list[int] | None = None,
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options=None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
    device_id=None,
    sort_ranks: bool = True,
) -> ProcessGroup:
    """A group of ``ranks``; only the whole world is supported (``ranks`` None or every rank).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.new_group([0]).size()
        1
        >>> dist.destroy_process_group()
    """
    world = _group(None)
    size = world.size()
    if ranks is not None:
        ranks = sorted(ranks) if sort_ranks else list(ranks)
        bad = [r for r in ranks if not 0 <= r < size]
        if bad:
            raise ValueError(
                f"new_group: rank {bad[0]} is out of range; valid ranks are 0 to {size - 1} (world_size={size})"
            )
        if sorted(ranks) != list(range(size)):
            raise NotImplementedError(
                f"new_group: only a group of every rank (the world) is supported, got ranks={ranks} of {size}"
            )
    name = _check_backend(backend) if backend is not None else world._backend
    return ProcessGroup(world.rank(), size, name, group_desc or "")


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Forget the default group (``group`` None or the world); ``init_process_group`` may run again.

    A multi-process ``jax.distributed`` job stays joined: JAX cannot rejoin a run once its devices
    have started, so a later ``init_process_group`` joins the same job.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.destroy_process_group()
        >>> dist.is_initialized()
        False
    """
    _group(group)
    if group is None or group is _World.default:
        _World.default = None
