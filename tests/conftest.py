"""Test-wide settings: JAX's persistent compilation cache shortens repeated suite runs."""

import os

import jax
import pytest

jax.config.update(
    "jax_compilation_cache_dir", os.environ.get("FJAX_TEST_CACHE", os.path.expanduser("~/.cache/fjax-tests"))
)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.05)


# Eager fusion in both modes without running everything twice: the views matrix and the autograd
# suites run with fusion off (every backward node by node); the rest runs the default (fused).
# FJAX_TEST_FUSION=all runs those fused too (to check every suite in the fused mode locally).
_UNFUSED = () if os.environ.get("FJAX_TEST_FUSION") == "all" else ("tests/autograd/", "tests/test_views.py")


@pytest.fixture(autouse=True)
def _fresh_buckets():
    """Each test starts with no op padding its batch (``fjax._bucket``): an op pads once its batch
    met new sizes in three steps, which would otherwise depend on the tests that ran before."""
    import fjax._bucket

    fjax._bucket.forget()
    yield


@pytest.fixture(autouse=True)
def _eager_fusion_mode(request):
    path = request.node.path.as_posix()
    if not any(part in path for part in _UNFUSED):
        yield
        return
    import fjax

    saved, fjax.config.eager_fusion = fjax.config.eager_fusion, False
    try:
        yield
    finally:
        fjax.config.eager_fusion = saved
