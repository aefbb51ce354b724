"""``fjax.env``: this process's place in a multi-process run (OneFlow's ``oneflow.env``).

A run of several processes (``python -m fjax.distributed.launch``, or any launcher that sets
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``) is one
``jax.distributed`` job: every process sees every device (``jax.devices()``), owns its local
ones, and compiles only its own program; a placement or mesh spans all processes' devices.

``init()`` must run before JAX starts its devices, and ``import fjax`` starts them (it seeds
the default generator). The launcher therefore runs ``init()`` in each process before the
script starts; under another launcher, call ``jax.distributed.initialize(...)`` before
``import fjax``. This module imports nothing from fjax, so the launcher can load it first.
"""

from __future__ import annotations

import os

import jax


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"fjax.env: environment variable {name}={value!r} is not an integer") from None


def _backends_started() -> bool:
    # JAX's private API is fjax._jax_compat's, but this module imports nothing from fjax (the
    # launcher loads it as a file before fjax): the one other place it is named
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def init(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: list[int] | None = None,
    initialization_timeout: int = 300,
) -> bool:
    """Join the multi-process run the environment describes (``jax.distributed.initialize``).

    Arguments left out come from ``MASTER_ADDR:MASTER_PORT``, ``WORLD_SIZE`` and ``RANK``.
    With several processes per node (``LOCAL_WORLD_SIZE > 1``) each process uses the GPU
    numbered ``LOCAL_RANK`` (``local_device_ids``; ignored on CPU). CPU collectives across
    processes use gloo.

    Returns:
        True when this process is part of a multi-process run (now or already), False for a
        single-process run (nothing to do).
    """
    if jax.distributed.is_initialized():
        return True
    world = num_processes if num_processes is not None else _env_int("WORLD_SIZE", 1)
    if world <= 1:
        return False
    rank = process_id if process_id is not None else _env_int("RANK", -1)
    if not 0 <= rank < world:
        raise ValueError(f"fjax.env.init: RANK must be in [0, {world}) for WORLD_SIZE={world}, got {rank}")
    if coordinator_address is None:
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if not addr or not port:
            raise ValueError("fjax.env.init: WORLD_SIZE > 1 needs MASTER_ADDR and MASTER_PORT (the rank-0 host)")
        coordinator_address = f"{addr}:{port}"
    if local_device_ids is None and _env_int("LOCAL_WORLD_SIZE", 1) > 1:
        local_device_ids = [_env_int("LOCAL_RANK", 0)]
    if _backends_started():
        raise RuntimeError(
            "fjax.env.init: JAX already started its devices in this process, so it can no longer join a "
            f"{world}-process run; start the script with `python -m fjax.distributed.launch`, or call "
            "jax.distributed.initialize() before `import fjax`"
        )
    if hasattr(jax.config, "jax_cpu_collectives_implementation"):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=world,
        process_id=rank,
        local_device_ids=local_device_ids,
        initialization_timeout=initialization_timeout,
    )
    return True


def get_rank() -> int:
    """This process's index in the run (0 in a single-process run)."""
    return jax.process_index() if jax.distributed.is_initialized() else _env_int("RANK", 0)


def get_world_size() -> int:
    """The number of processes in the run."""
    return jax.process_count() if jax.distributed.is_initialized() else _env_int("WORLD_SIZE", 1)


def get_local_rank() -> int:
    """This process's index on its node."""
    return _env_int("LOCAL_RANK", 0)


def get_node_size() -> int:
    """The number of nodes in the run."""
    return max(1, get_world_size() // _env_int("LOCAL_WORLD_SIZE", get_world_size()))
