"""The committed notebooks carry their outputs (written by ``notebooks/run.py``) and nothing noisy."""

from __future__ import annotations

import importlib.util

import nbformat
import pytest

from .notebook_helper import NOTEBOOKS, images, outputs

NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
PLOTS = {"autodiff_research.ipynb": 5, "long_sequence_lstm.ipynb": 2, "pipeline_3d.ipynb": 3, "sharding_mesh.ipynb": 2}


def _run_module():
    spec = importlib.util.spec_from_file_location("notebooks_run", NOTEBOOKS / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_notebook_is_listed():
    assert NAMES == sorted(PLOTS)


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_has_outputs_and_no_noise(name):
    path = NOTEBOOKS / name
    assert path.stat().st_size < 500 * 1024, f"{name}: {path.stat().st_size} bytes; draw smaller figures"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert len(images(nb)) == PLOTS[name], f"{name}: run `python notebooks/run.py {name}` to store its outputs"
    assert not [o for o in outputs(nb) if o.output_type == "error"], name
    assert nb.metadata == _run_module().METADATA, nb.metadata
    for cell in nb.cells:
        assert "execution" not in cell.metadata, (name, cell.get("id"))
        if cell.cell_type == "code":
            assert cell.execution_count is None, (name, cell.get("id"))
            assert all(o.get("execution_count") is None for o in cell.outputs), (name, cell.get("id"))


def test_strip_noise_drops_counts_timestamps_and_kernel_details():
    run = _run_module()
    cell = nbformat.v4.new_code_cell("1 + 1", execution_count=3)
    cell.metadata = {"execution": {"iopub.status.busy": "2026-01-01T00:00:00Z"}, "tags": ["keep"]}
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=3)]
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python", "version": "3.11.7", "codemirror_mode": {"name": "ipython"}},
    }
    run.strip_noise(nb)
    nbformat.validate(nb)
    assert nb.metadata == run.METADATA
    assert cell.execution_count is None and cell.outputs[0].execution_count is None
    assert cell.metadata == {"tags": ["keep"]} and cell.outputs[0].data == {"text/plain": "2"}
