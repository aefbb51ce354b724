"""Run a notebook from notebooks/ top to bottom, as the notebook tests do."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute(name: str, timeout: int) -> nbformat.NotebookNode:
    """Execute ``notebooks/<name>`` (``timeout``: seconds per cell); fail on any error output."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    resources = {"metadata": {"path": str(NOTEBOOKS)}}  # the notebooks' working directory
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=resources).execute()
    errors = [o for o in outputs(nb) if o.output_type == "error"]
    assert not errors, errors
    return nb


def outputs(nb) -> list:
    """Every output of the notebook's code cells, in order."""
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def images(nb) -> list:
    return [o for o in outputs(nb) if "image/png" in o.get("data", {})]
