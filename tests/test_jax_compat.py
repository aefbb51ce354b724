"""fjax's one door to JAX's private API (``fjax._jax_compat``): both jaxpr conventions for a
traced function's captured values read the same, and nothing else in fjax imports ``jax._src``."""

from __future__ import annotations

import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend import core as jcore
from jax.extend import linear_util as lu

from fjax import _jax_compat

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "fjax"


def _traced():
    w = jnp.arange(6.0).reshape(2, 3)  # captured: a constant of the trace
    fun = lu.wrap_init(lambda x: [jnp.tanh(x @ w).sum(0)], debug_info=jcore.DebugInfo("t", "t", None, None))
    jaxpr, _, consts = _jax_compat.trace_to_jaxpr_dynamic(fun, [jax.core.ShapedArray((4, 2), jnp.float32)])
    return jaxpr, consts


def test_both_conventions_normalize_to_constvars():
    jaxpr, consts = _traced()
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)
    expected = jax.core.eval_jaxpr(jaxpr, consts, x)[0]
    assert len(consts) >= 1
    # this JAX's form, unchanged
    same, same_consts = _jax_compat.normalize_jaxpr(jaxpr, consts, 1)
    assert same is jaxpr and len(same_consts) == len(consts)
    # the other form, built by hand: no constvars, captured values as the leading inputs
    leading = jaxpr.replace(constvars=[], invars=[*jaxpr.constvars, *jaxpr.invars])
    assert len(leading.invars) == len(consts) + 1 and not leading.constvars
    fixed, fixed_consts = _jax_compat.normalize_jaxpr(leading, consts, 1)
    assert len(fixed.constvars) == len(consts) and len(fixed.invars) == 1
    np.testing.assert_array_equal(jax.core.eval_jaxpr(fixed, fixed_consts, x)[0], expected)


def test_an_unknown_form_names_the_counts():
    jaxpr, consts = _traced()
    broken = jaxpr.replace(constvars=[], invars=list(jaxpr.invars))
    with pytest.raises(RuntimeError, match=r"0 constvars and 1 inputs for \d+ captured values and 1 arguments"):
        _jax_compat.normalize_jaxpr(broken, consts, 1)


def test_transforms_read_the_leading_input_form(monkeypatch):
    """fjax.func on a closure works when the trace comes back in the leading-input form."""
    import fjax

    real = _jax_compat.trace_to_jaxpr_dynamic

    def leading_form(fun, avals):
        jaxpr, out_avals, consts = real(fun, avals)
        return jaxpr.replace(constvars=[], invars=[*jaxpr.constvars, *jaxpr.invars]), out_avals, consts

    monkeypatch.setattr(_jax_compat, "trace_to_jaxpr_dynamic", leading_form)
    w = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
    x = fjax.tensor([0.5, -1.0])
    g = fjax.func.grad(lambda x_: (w @ x_).sin().sum())(x)
    expected = (w.numpy().T @ np.cos(w.numpy() @ x.numpy())).astype(np.float32)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_no_private_jax_import_outside_the_compat_module():
    offenders = [
        f"{path.relative_to(SRC)}:{i}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "_jax_compat.py" and path.relative_to(SRC).as_posix() != "env.py"  # loaded before fjax
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bjax\._src\b", line)
    ]
    assert not offenders, f"import JAX's private modules through fjax._jax_compat: {offenders}"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "complex64", "float16", "bfloat16"])
def test_host_to_device_makes_the_array_device_put_makes(dtype):
    rng = np.random.default_rng(0)
    host = (rng.standard_normal((3, 5)) * 4).astype(jnp.dtype(dtype))
    for committed, device in ((False, None), (True, jax.devices()[0])):
        fast = _jax_compat.host_to_device(host, device, committed=committed)
        slow = jax.device_put(host, device) if committed else jax.device_put(host)
        assert (fast.dtype, fast.shape, fast.weak_type) == (slow.dtype, slow.shape, slow.weak_type)
        assert (fast.committed, fast.sharding) == (slow.committed, slow.sharding)
        np.testing.assert_array_equal(np.asarray(fast), host)
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: a * 2)(fast)), np.asarray(slow * 2))
    columns = host[:, ::2]  # not contiguous: jax.device_put's own path
    np.testing.assert_array_equal(np.asarray(_jax_compat.host_to_device(columns)), columns)
    jax.config.update("jax_enable_x64", False)  # 64-bit types off: device_put narrows them, so must this
    try:
        assert _jax_compat.host_to_device(host).dtype == jax.device_put(host).dtype
    finally:
        jax.config.update("jax_enable_x64", True)
