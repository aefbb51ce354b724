"""JAX's persistent compilation cache is on by default, per user, bounded (by fjax, cheaply), and
can be moved or turned off; a folder the user configured in jax before importing fjax is kept."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import jax

import fjax

_CHILD = (
    "import fjax, jax; x = fjax.randn(3, 4); (x @ x.T).tanh().sum().item(); "
    "print(fjax.config.compilation_cache, fjax._config.cache_limit, jax.config.jax_compilation_cache_max_size)"
)


def _run(tmp_path, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("FJAX_COMPILATION_CACHE")}
    full.update(XDG_CACHE_HOME=str(tmp_path), **env)
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=full, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


def test_on_by_default_in_the_user_cache_and_bounded(tmp_path):
    folder, limit, jax_limit = _run(tmp_path)
    # fjax's bound, not JAX's: JAX's scans the whole folder at each write (seconds per compile)
    assert folder == str(tmp_path / "fjax" / "xla") and int(limit) == 4 << 30 and int(jax_limit) == -1
    assert len(os.listdir(folder)) > 0  # eager kernels are kept (they compile in well under JAX's 1 s default)


def test_moved_or_turned_off_by_the_environment(tmp_path):
    folder, limit, _ = _run(
        tmp_path, FJAX_COMPILATION_CACHE=str(tmp_path / "elsewhere"), FJAX_COMPILATION_CACHE_MAX_BYTES="1000"
    )
    assert folder == str(tmp_path / "elsewhere") and int(limit) == 1000 and os.listdir(folder)
    folder, _, _ = _run(tmp_path / "off", FJAX_COMPILATION_CACHE="0")
    assert folder == "None" and not (tmp_path / "off" / "fjax").exists()


def test_a_folder_set_in_jax_first_is_kept():
    # this suite's conftest sets jax_compilation_cache_dir before importing fjax
    assert fjax.config.compilation_cache == jax.config.jax_compilation_cache_dir is not None


def test_the_bound_drops_the_oldest_programs_at_most_once_an_hour(tmp_path):
    now = time.time()
    for i in range(10):  # ten 100-byte programs, written one minute apart; JAX's atime files beside
        (tmp_path / f"k{i}-cache").write_bytes(bytes(100))
        (tmp_path / f"k{i}-atime").write_bytes(bytes(8))
        os.utime(tmp_path / f"k{i}-cache", (now - 600 + 60 * i, now - 600 + 60 * i))
    assert fjax._config.bound_cache(str(tmp_path), 1000) == 0  # 1000 bytes: within
    (tmp_path / ".fjax-bounded").unlink()
    assert fjax._config.bound_cache(str(tmp_path), 500) == 6  # down to 90% of 500: the 4 newest stay
    assert sorted(p.name for p in tmp_path.glob("*-cache")) == [f"k{i}-cache" for i in range(6, 10)]
    assert sorted(p.name for p in tmp_path.glob("*-atime")) == [f"k{i}-atime" for i in range(6, 10)]
    assert fjax._config.bound_cache(str(tmp_path), 100) == 0  # bounded less than an hour ago: not again
    assert fjax._config.bound_cache(str(tmp_path), 100, every=0) == 4


def test_setting_the_folder_after_a_compile_takes_effect(tmp_path):
    """JAX decides once per process whether and where its cache is used: the setter makes it decide again."""
    child = (
        "import sys, os, fjax; fjax.ones(3).tanh().sum().item(); "
        "fjax.config.compilation_cache = sys.argv[1]; (fjax.ones(5, 7) * 3).exp().sum().item(); "
        "print(len(os.listdir(sys.argv[1])))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FJAX_COMPILATION_CACHE")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "home"))
    later = tmp_path / "later"
    out = subprocess.run(
        [sys.executable, "-c", child, str(later)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout.split()[-1]) > 0  # the kernels compiled after the switch are kept there
