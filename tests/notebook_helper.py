"""Run a notebook from notebooks/ top to bottom, as the notebook tests do.

The notebook runs in memory at small sizes (``FJAX_NOTEBOOK_SMALL=1``) with this checkout's
``src`` first on the kernel's ``PYTHONPATH``; nothing is written back to notebooks/ (that is
``notebooks/run.py``'s job).
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def kernel_env() -> dict:
    """The test process's environment with small sizes on, JAX's persistent compilation cache off
    (the notebooks time compiles: loads from an earlier run's cache would flatten them) and an
    absolute ``PYTHONPATH``: the kernel's working directory is notebooks/, where a relative
    ``PYTHONPATH=src`` finds nothing."""
    env = dict(os.environ, FJAX_NOTEBOOK_SMALL="1", FJAX_COMPILATION_CACHE="0")
    paths = [str(ROOT / "src")] + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def execute(name: str, timeout: int) -> nbformat.NotebookNode:
    """Execute ``notebooks/<name>`` (``timeout``: seconds per cell); fail on any error output."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in nb.cells:  # start from scratch: the committed outputs must not count
        if cell.cell_type == "code":
            cell.outputs = []
    resources = {"metadata": {"path": str(NOTEBOOKS)}}  # the notebooks' working directory
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=resources).execute(env=kernel_env())
    errors = [o for o in outputs(nb) if o.output_type == "error"]
    assert not errors, errors
    return nb


def outputs(nb) -> list:
    """Every output of the notebook's code cells, in order."""
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def images(nb) -> list:
    return [o for o in outputs(nb) if "image/png" in o.get("data", {})]


def printed(nb) -> str:
    """Everything the notebook's code cells printed (their stream outputs), joined."""
    return "".join(o.get("text", "") for o in outputs(nb))
