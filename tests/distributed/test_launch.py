"""Two processes on this machine (loopback, gloo CPU collectives) train like one; failures stop the run."""

from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import sys
import time

import numpy as np
import pytest

import fjax
import fjax.env
from fjax.distributed import checkpoint, launch

from .ranks import free_port

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import launch_worker  # noqa: E402

WORKER = str(pathlib.Path(__file__).parent / "launch_worker.py")


def _launch(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "fjax.distributed.launch", "--nproc_per_node", "2"]
    command += ["--master_port", str(free_port()), *args]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # one CPU device per process
    cwd = pathlib.Path(__file__).parent  # where `-m launch_worker` is found
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def test_two_process_data_parallel_matches_one_process(tmp_path):
    seed = random.randrange(2**31)
    proc = _launch(WORKER, str(tmp_path), str(seed))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [(r["rank"], r["world"], r["devices"], r["local_devices"]) for r in reports] == [(0, 2, 2, 1), (1, 2, 2, 1)]

    reference = launch_worker.make_graph(1)
    losses = launch_worker.train(reference, seed)
    for r in range(2):
        np.testing.assert_allclose(reports[r]["losses"], losses, rtol=1e-5, atol=1e-6, err_msg=f"seed={seed}")
        params = np.load(tmp_path / f"params{r}.npz")
        for k, v in reference.model.state_dict().items():
            np.testing.assert_allclose(params[k], v.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{k} seed={seed}")

    # The checkpoint was written by both processes, each its own shard, and loads in one process.
    state = tmp_path / "ckpt" / str(launch_worker.STEPS) / "state"
    assert (state / "ocdbt.process_0").is_dir() and (state / "ocdbt.process_1").is_dir()
    restored, shards = launch_worker.make_graph(1), fjax.zeros(4, 3)
    checkpoint.load(tmp_path / "ckpt", {"graph": restored, "shards": shards})
    np.testing.assert_array_equal(shards.numpy(), np.concatenate([launch_worker.rank_rows(r) for r in range(2)]))
    for k, v in reference.model.state_dict().items():
        np.testing.assert_allclose(restored.model.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)


def test_a_failing_rank_stops_the_others_and_sets_the_exit_status(tmp_path):
    start = time.monotonic()
    proc = _launch("-m", "launch_worker", "--fail", str(tmp_path), timeout=120)  # run as a module
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "rank 1" in proc.stderr and "exited with status 3" in proc.stderr
    assert time.monotonic() - start < 50  # rank 0 would sleep for 60 s
    pid = int((tmp_path / "pid0").read_text())
    assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read().lower()


def test_env_outside_a_launched_run(monkeypatch):
    assert (fjax.env.get_rank(), fjax.env.get_world_size(), fjax.env.get_local_rank()) == (0, 1, 0)
    assert fjax.env.get_node_size() == 1
    assert fjax.env.init() is False  # a single process has nothing to join
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(ValueError, match="MASTER_ADDR and MASTER_PORT"):
        fjax.env.init()
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    with pytest.raises(RuntimeError, match="already started its devices"):
        fjax.env.init()  # this process already ran JAX computations
    monkeypatch.setenv("RANK", "5")
    with pytest.raises(ValueError, match="RANK must be in"):
        fjax.env.init()


def test_bad_launch_arguments():
    with pytest.raises(SystemExit, match="0 <= node_rank < nnodes"):
        launch.main(["--nnodes", "2", "--node_rank", "2", WORKER])
