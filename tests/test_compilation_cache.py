"""JAX's persistent compilation cache is on by default, per user, bounded, and can be moved or
turned off; a folder the user configured in jax before importing fjax is kept."""

from __future__ import annotations

import os
import subprocess
import sys

import jax

import fjax

_CHILD = (
    "import fjax, jax; x = fjax.randn(3, 4); (x @ x.T).tanh().sum().item(); "
    "print(fjax.config.compilation_cache, jax.config.jax_compilation_cache_max_size)"
)


def _run(tmp_path, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("FJAX_COMPILATION_CACHE")}
    full.update(XDG_CACHE_HOME=str(tmp_path), **env)
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=full, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


def test_on_by_default_in_the_user_cache_and_bounded(tmp_path):
    folder, limit = _run(tmp_path)
    assert folder == str(tmp_path / "fjax" / "xla") and int(limit) == 4 << 30
    assert len(os.listdir(folder)) > 0  # eager kernels are kept (they compile in well under JAX's 1 s default)


def test_moved_or_turned_off_by_the_environment(tmp_path):
    folder, limit = _run(
        tmp_path, FJAX_COMPILATION_CACHE=str(tmp_path / "elsewhere"), FJAX_COMPILATION_CACHE_MAX_BYTES="1000"
    )
    assert folder == str(tmp_path / "elsewhere") and int(limit) == 1000 and os.listdir(folder)
    folder, _ = _run(tmp_path / "off", FJAX_COMPILATION_CACHE="0")
    assert folder == "None" and not (tmp_path / "off" / "fjax").exists()


def test_a_folder_set_in_jax_first_is_kept():
    # this suite's conftest sets jax_compilation_cache_dir before importing fjax
    assert fjax.config.compilation_cache == jax.config.jax_compilation_cache_dir is not None
