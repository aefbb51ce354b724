"""Re-execute the notebooks in place, at full size, and keep only what a reviewer needs to see.

    python notebooks/run.py                      # every notebook in this folder
    python notebooks/run.py sharding_mesh.ipynb  # some of them

Each notebook runs top to bottom in a fresh kernel whose working directory is this folder, with
``FJAX_NOTEBOOK_SMALL`` and ``XLA_FLAGS`` removed from its environment (full sizes; the sharding
notebook sets its own device count) and this checkout's ``src`` first on ``PYTHONPATH``. An error
in any cell stops the run and leaves that notebook's file untouched. The written file keeps the
sources, the outputs and the plots (PNG), and drops what changes on every run without saying
anything: execution counts, per-cell execution timestamps and the kernel's version details.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def kernel_env() -> dict:
    """The kernel's environment: full sizes, no inherited device count, this checkout's fjax."""
    env = {k: v for k, v in os.environ.items() if k not in ("FJAX_NOTEBOOK_SMALL", "XLA_FLAGS")}
    paths = [str(SRC)] + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def strip_noise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop execution counts, per-cell execution metadata and kernel details, in place."""
    nb.metadata = nbformat.from_dict(METADATA)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        if cell.cell_type == "code":
            cell.execution_count = None
            for output in cell.outputs:
                if "execution_count" in output:
                    output.execution_count = None
    return nb


def run(path: Path, timeout: int) -> float:
    """Execute ``path`` and write it back with its outputs; returns the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(HERE)}})
    client.execute(env=kernel_env())
    seconds = time.perf_counter() - start
    nbformat.validate(strip_noise(nb))
    nbformat.write(nb, path)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook file names in notebooks/ (default: all)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed per cell (default 900)")
    args = parser.parse_args(argv)
    paths = [HERE / name for name in args.notebooks] or sorted(HERE.glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        sys.exit(f"notebooks/run.py: no such notebook: {', '.join(missing)}")
    for path in paths:
        seconds = run(path, args.timeout)
        print(f"{path.name}: {seconds:.1f} s, {path.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
