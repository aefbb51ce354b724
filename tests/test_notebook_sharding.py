"""The sharding notebook runs top to bottom on 8 virtual devices (its cells assert their own results)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "sharding_mesh.ipynb"


def test_sharding_notebook_executes(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)  # the first cell sets it, as a user's kernel would need
    nb = nbformat.read(NOTEBOOK, as_version=4)
    resources = {"metadata": {"path": str(NOTEBOOK.parent)}}
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources=resources)  # seconds per cell
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2, "the loss and memory plots"
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "ZeRO-3 / DP argument memory" in text, text[-2000:]
    shardings = [
        o["data"]["text/plain"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "display_data" and "image/png" not in o["data"]
    ]
    dp, zero3, tp_fc1, tp_fc2 = shardings  # visualize_array_sharding's drawings, one per parameter shown
    assert "CPU 0,1,2,3,4,5,6,7" in dp  # replicated
    assert "CPU 7" in zero3 and "CPU 0,1" not in zero3  # 8 row blocks over data
    assert "CPU 0,4" in tp_fc1 and "CPU 0,4" in tp_fc2  # split over model (4), replicated over data (2)
