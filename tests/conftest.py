"""Test-wide settings: JAX's persistent compilation cache shortens repeated suite runs."""

import os
import zlib

import jax
import pytest

jax.config.update(
    "jax_compilation_cache_dir", os.environ.get("FJAX_TEST_CACHE", os.path.expanduser("~/.cache/fjax-tests"))
)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.05)


# Eager fusion in both modes without running everything twice: the autograd suites run with
# fusion off (every backward node by node); the views matrix, the OpInfo/op-table oracle and the
# whole programs run half of their cases each way (by a stable hash of the test's id, so a case
# always runs in the same mode); the rest runs the default (fused). FJAX_TEST_FUSION=all runs
# every suite fused, =off every suite unfused (to check one mode everywhere locally).
_MODE = os.environ.get("FJAX_TEST_FUSION", "")
_UNFUSED = () if _MODE == "all" else ("tests/autograd/",)
_SPLIT = () if _MODE == "all" else ("tests/test_views.py", "tests/oracle/", "tests/test_programs.py")


@pytest.fixture(autouse=True)
def _fresh_buckets():
    """Each test starts with no op padding its batch (``fjax._bucket``): an op pads once its batch
    met new sizes in three steps, which would otherwise depend on the tests that ran before."""
    import fjax._bucket

    fjax._bucket.forget()
    yield


def _unfused(request) -> bool:
    if _MODE == "off":
        return True
    path = request.node.path.as_posix()
    if any(part in path for part in _UNFUSED):
        return True
    return any(part in path for part in _SPLIT) and zlib.crc32(request.node.nodeid.encode()) % 2 == 1


@pytest.fixture(autouse=True)
def _eager_fusion_mode(request):
    if not _unfused(request):
        yield
        return
    import fjax

    saved, fjax.config.eager_fusion = fjax.config.eager_fusion, False
    try:
        yield
    finally:
        fjax.config.eager_fusion = saved


@pytest.fixture
def fused():
    """Eager fusion on for this test, whatever the suite's mode; what it recorded runs at the end."""
    import fjax

    saved, fjax.config.eager_fusion = fjax.config.eager_fusion, True
    try:
        yield
        fjax.sync()
    finally:
        fjax.config.eager_fusion = saved
