"""The sharding notebook runs top to bottom on 8 virtual devices (its cells assert their own results)."""

from __future__ import annotations

from .notebook_helper import execute, images, outputs, printed


def test_sharding_notebook_executes(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)  # the first cell sets it, as a user's kernel would need
    nb = execute("sharding_mesh.ipynb", timeout=300)
    assert len(images(nb)) == 2, "the loss and memory plots"
    text = printed(nb)
    assert "ZeRO-3 / DP argument memory" in text, text[-2000:]
    shardings = [
        o["data"]["text/plain"] for o in outputs(nb) if o.output_type == "display_data" and "image/png" not in o["data"]
    ]
    dp, zero3, tp_fc1, tp_fc2 = shardings  # visualize_array_sharding's drawings, one per parameter shown
    assert "CPU 0,1,2,3,4,5,6,7" in dp  # replicated
    assert "CPU 7" in zero3 and "CPU 0,1" not in zero3  # 8 row blocks over data
    assert "CPU 0,4" in tp_fc1 and "CPU 0,4" in tp_fc2  # split over model (4), replicated over data (2)
