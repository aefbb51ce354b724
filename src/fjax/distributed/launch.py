"""``python -m fjax.distributed.launch``: start one process per device slot (torchrun's role).

Example (2 nodes of 4 processes; run on each node with its ``--node_rank``)::

    python -m fjax.distributed.launch --nproc_per_node 4 --nnodes 2 --node_rank 0 \\
        --master_addr 10.0.0.1 --master_port 29500 train.py --lr 3e-4

Each process gets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``,
``NODE_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` and joins the run (``fjax.env.init``, i.e.
``jax.distributed.initialize``) before the script runs, so the script's ``import fjax`` and
everything after it already see every process's devices. If a process fails, the others are
stopped and the launcher exits with the failing process's status.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

# Runs in each child before the user's script: join the run, then run the script as __main__.
# It loads fjax/env.py by path because ``import fjax`` would start JAX's devices too early.
_BOOTSTRAP = """
import ctypes, importlib.util, os, runpy, signal, sys, traceback
try:  # Linux: die with the launcher, so no orphan waits for its peers
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
if os.getppid() != int(os.environ["FJAX_LAUNCHER_PID"]):
    sys.exit(1)
spec = importlib.util.spec_from_file_location("_fjax_env_bootstrap", sys.argv[1])
env = importlib.util.module_from_spec(spec)
spec.loader.exec_module(env)
env.init()
module, target = sys.argv[2] == "-m", sys.argv[3]
sys.argv = [target] + sys.argv[4:]
try:
    if module:
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")
except SystemExit as e:
    if e.code in (None, 0):
        raise
    if not isinstance(e.code, int):
        print(e.code, file=sys.stderr)
    code = e.code if isinstance(e.code, int) else 1
except BaseException:
    traceback.print_exc()
    code = 1
else:
    code = 0
if code:  # a failed rank must not wait in jax.distributed's shutdown barrier for its peers
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
"""

_ENV_PY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "env.py")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fjax.distributed.launch",
        description="Start --nproc_per_node processes of a multi-process fjax run on this node.",
    )
    p.add_argument("--nproc_per_node", type=int, default=1, help="processes on this node (one per GPU)")
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes")
    p.add_argument("--node_rank", type=int, default=0, help="this node's index in [0, nnodes)")
    p.add_argument("--master_addr", default="127.0.0.1", help="address of the node with rank 0")
    p.add_argument("--master_port", type=int, default=29500, help="a free port on the master node")
    p.add_argument("-m", "--module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    return p


def _stop(procs: list, first: int = signal.SIGTERM, grace: float = 3.0) -> None:
    """Send ``first`` to every live child's process group, then SIGKILL what is left after ``grace`` s.

    JAX treats SIGTERM as a preemption notice and keeps running, hence the short grace.
    """
    for sig in (first, signal.SIGKILL):
        live = [p for p in procs if p.poll() is None]
        for p in live:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while any(p.poll() is None for p in live) and time.monotonic() < deadline:
            time.sleep(0.05)


def _exit_status(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode


def launch(args: argparse.Namespace) -> int:
    """Start the processes of this node, wait for them, and return the run's exit status."""
    if args.nproc_per_node < 1 or args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        raise SystemExit(
            f"fjax.distributed.launch: need nproc_per_node >= 1, nnodes >= 1 and 0 <= node_rank < nnodes; got "
            f"nproc_per_node={args.nproc_per_node}, nnodes={args.nnodes}, node_rank={args.node_rank}"
        )
    world = args.nnodes * args.nproc_per_node
    command = [sys.executable, "-u", "-c", _BOOTSTRAP, _ENV_PY, "-m" if args.module else "-f", args.script]
    command += args.script_args
    procs = []
    for local_rank in range(args.nproc_per_node):
        env = {
            **os.environ,
            "RANK": str(args.node_rank * args.nproc_per_node + local_rank),
            "WORLD_SIZE": str(world),
            "LOCAL_RANK": str(local_rank),
            "LOCAL_WORLD_SIZE": str(args.nproc_per_node),
            "NODE_RANK": str(args.node_rank),
            "MASTER_ADDR": args.master_addr,
            "MASTER_PORT": str(args.master_port),
            "FJAX_LAUNCHER_PID": str(os.getpid()),
        }
        procs.append(subprocess.Popen(command, env=env, start_new_session=True))

    def forward(signum, _frame):
        _stop(procs, first=signum)
        raise SystemExit(128 + signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            for local_rank, p in enumerate(procs):
                rc = p.poll()
                if rc is not None and rc != 0:
                    rank = args.node_rank * args.nproc_per_node + local_rank
                    print(
                        f"fjax.distributed.launch: rank {rank} (pid {p.pid}) exited with status {rc}; "
                        "stopping the other processes",
                        file=sys.stderr,
                        flush=True,
                    )
                    _stop(procs)
                    return _exit_status(rc)
            if all(p.poll() == 0 for p in procs):
                return 0
            time.sleep(0.05)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run ``launch``."""
    return launch(_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
