"""README.md's Python examples are programs: every ```python block runs as written, on its own.

Each block runs in a fresh interpreter in an empty working directory (so files a block writes,
such as ``trace.json`` or a saved graph, land there), with no ``XLA_FLAGS`` set: a block that
needs several devices sets them itself, as a reader's script would have to.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_FENCE = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` for every fenced ```python block; ``line`` is the fence's 1-based line."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _FENCE.finditer(text)]


BLOCKS = python_blocks(README.read_text())


def test_the_readme_has_its_python_examples():
    assert len(BLOCKS) >= 5, f"README.md: expected at least 5 ```python blocks, found {len(BLOCKS)}"


def test_python_blocks_finds_fences_and_their_lines():
    text = "intro\n```python\nx = 1\n```\n\n```bash\nls\n```\n```python\ny = 2\nprint(y)\n```\n"
    assert python_blocks(text) == [(2, "x = 1\n"), (9, "y = 2\nprint(y)\n")]


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_block_runs(line, code, tmp_path):
    script = tmp_path / f"readme_line_{line}.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "FJAX_LOG_COMPILES")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.expanduser("~/.cache/fjax-tests"))
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, (
        f"README.md line {line}: the ```python block failed (exit {proc.returncode})\n"
        f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    )
