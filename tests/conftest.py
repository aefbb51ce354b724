"""Test-wide settings: JAX's persistent compilation cache shortens repeated suite runs."""

import os

import jax

jax.config.update(
    "jax_compilation_cache_dir", os.environ.get("FJAX_TEST_CACHE", os.path.expanduser("~/.cache/fjax-tests"))
)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.05)
