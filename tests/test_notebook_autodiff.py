"""The autodiff research notebook runs top to bottom (its cells assert their own results)."""

from __future__ import annotations

from .notebook_helper import execute, images


def test_autodiff_notebook_executes():
    nb = execute("autodiff_research.ipynb", timeout=240)
    assert len(images(nb)) >= 4, "every section draws its plot"
