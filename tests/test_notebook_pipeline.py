"""The pipeline notebook runs top to bottom on 8 virtual devices (its cells assert their own results:
each schedule's bubble is the theory's, every schedule's losses are the single device's)."""

from __future__ import annotations

from .notebook_helper import execute, images, printed


def test_pipeline_notebook_executes(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)  # the first cell sets it, as a user's kernel would need
    nb = execute("pipeline_3d.ipynb", timeout=300)
    assert len(images(nb)) == 3, "the timelines, the mesh and the losses"
    text = printed(nb)
    assert "all schedules within 1e-5 of one device" in text, text[-2000:]
    assert "device 7: data 1 tensor 1 pipe 1: layers 2-3, w1 cols 32-63, rows 4-7" in text, text[-3000:]
