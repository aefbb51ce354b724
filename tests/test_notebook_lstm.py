"""The long-sequence LSTM notebook runs top to bottom (its cells assert their own results)."""

from __future__ import annotations

from .notebook_helper import execute, images


def test_lstm_notebook_executes():
    nb = execute("long_sequence_lstm.ipynb", timeout=240)
    assert len(images(nb)) >= 2, "the compile-time and loss plots are drawn"
