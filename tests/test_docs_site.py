"""The documentation site builds with warnings as errors, and every public name is documented.

``python docs/build.py OUTDIR`` is the README's command; it runs Sphinx with ``-W`` over the
hand-written pages, the notebooks (rendered from their stored outputs) and the API pages it
generates from each public module's names.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _build_module():
    spec = importlib.util.spec_from_file_location("fjax_docs_build", REPO / "docs" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_site_builds_with_warnings_as_errors(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(REPO / "docs" / "build.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}"
    for page in [
        "index",
        "install",
        "quickstart",
        "architecture",
        "api/index",
        "guides/graph",
        "guides/asyncs",
        "guides/pipeline",
    ]:
        assert (tmp_path / f"{page}.html").is_file(), page
    nn_page = (tmp_path / "api" / "nn.html").read_text()
    assert 'id="fjax.nn.Linear"' in nn_page and "in_features" in nn_page
    assert 'id="fjax.Tensor.backward"' in (tmp_path / "api" / "tensor.html").read_text()
    assert 'id="fjax.nn.Graph.add_optimizer"' in (tmp_path / "api" / "nn.Graph.html").read_text()
    for notebook in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        stored = sum("image/png" in out.get("data", {}) for cell in cells for out in cell.get("outputs", []))
        page = (tmp_path / "notebooks" / f"{notebook.stem}.html").read_text()
        assert page.count("<img") >= stored, f"{notebook.name}: {stored} stored images, fewer rendered"
    assert (tmp_path / "notebooks" / "autodiff_research.html").read_text().count("<img") >= 1


def test_undocumented_public_name_fails_the_build(monkeypatch):
    build = _build_module()

    def documented(x):
        """Return ``x``."""
        return x

    def undocumented(x):
        return x

    fake = types.ModuleType("fjax_docs_fake")
    fake.__all__ = ["documented", "undocumented"]
    fake.documented, fake.undocumented = documented, undocumented
    monkeypatch.setitem(sys.modules, "fjax_docs_fake", fake)
    text, names, missing = build._rst_page("fake", "fjax_docs_fake", "fjax_docs_fake", {})
    assert names == ["fjax_docs_fake.documented", "fjax_docs_fake.undocumented"]
    assert missing == ["fjax_docs_fake.undocumented"]
    assert ".. autofunction:: documented" in text and ":py:obj:`undocumented <fjax_docs_fake.undocumented>`" in text


@pytest.mark.parametrize("doc,first", [("One. Two.", "One."), ("Count ``0 .. n - 1``. More.", "Count ``0 .. n - 1``.")])
def test_summary_is_the_first_sentence(doc, first):
    assert _build_module().summary(doc) == first
