"""Test-wide settings: JAX's persistent compilation cache shortens repeated suite runs."""

import os

import jax
import pytest

jax.config.update(
    "jax_compilation_cache_dir", os.environ.get("FJAX_TEST_CACHE", os.path.expanduser("~/.cache/fjax-tests"))
)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.05)


# Eager fusion in both modes without running everything twice: the views matrix and the autograd
# suites run every backward fused (at first sight); the rest runs the default (node by node the
# first time a tape structure is seen, fused from its second sight on, as programs' steps are).
_FUSED_AT_FIRST_SIGHT = ("tests/autograd/", "tests/test_views.py")


@pytest.fixture(autouse=True)
def _eager_fusion_mode(request):
    path = request.node.path.as_posix()
    if not any(part in path for part in _FUSED_AT_FIRST_SIGHT):
        yield
        return
    from fjax.autograd import engine

    saved, engine._FUSE_AFTER = engine._FUSE_AFTER, 0
    try:
        yield
    finally:
        engine._FUSE_AFTER = saved
