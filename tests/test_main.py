"""The README's main job, and the LSTM's one-scan structure inside nn.Graph."""

from __future__ import annotations

import re
import subprocess
import sys

import fjax
import fjax.nn as nn
import fjax.optim as optim
from fjax.__main__ import LSTMTrainGraph


def test_main_job_runs_and_prints_a_row_per_length():
    out = subprocess.run(
        [sys.executable, "-m", "fjax", "--lengths", "20", "40", "--steps", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split() for line in out.stdout.splitlines() if line.strip().split(" ")[0].isdigit()]
    assert [r[0] for r in rows] == ["20", "40"], out.stdout
    for r in rows:
        compile_s, step_ms, first, last = map(float, r[1:])
        assert compile_s > 0 and step_ms > 0 and first > 0 and last > 0


def _graph_stablehlo(seq_len: int) -> str:
    fjax.manual_seed(0)
    model = nn.LSTM(16, 8, bias=False, batch_first=True)
    graph = LSTMTrainGraph(model, optim.SGD(model.parameters(), lr=0.01, momentum=0.99, nesterov=True))
    x = fjax.randn(4, seq_len, 16)
    graph(x, x[..., :8])
    return graph.stablehlo()


def test_graph_step_structure_does_not_grow_with_sequence_length():
    short, long = _graph_stablehlo(150), _graph_stablehlo(20_000)
    assert "while" in short  # the time loop is a loop, not unrolled steps
    masked = [re.sub(r"\d+", "N", text) for text in (short, long)]  # shapes differ, nothing else may
    assert len(masked[0]) == len(masked[1]) and masked[0] == masked[1], "the program grew with the length"
