"""``fjax._order.after``: the same values, computed after the awaited ones."""

from __future__ import annotations

import doctest

import jax
import jax.numpy as jnp
import numpy as np

from fjax import _order


def test_values_are_unchanged_for_every_awaited_bit_pattern():
    """The never-running loop's trip count is ``min(0, bits)``: negative, zero and positive bit
    patterns (negative floats, zero, NaN, infinities) all leave the values as they are."""
    f = jax.jit(lambda x, y: _order.after({"a": x, "i": jnp.arange(3)}, y))
    x = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    for y in (-2.0, -0.0, 0.0, 3.0, np.inf, -np.inf, np.nan):
        out = f(x, jnp.full(4, y, jnp.float32))
        np.testing.assert_array_equal(out["a"], x)
        np.testing.assert_array_equal(out["i"], np.arange(3))
    c = jax.jit(lambda x, y: _order.after(x, y))(jnp.ones(2, jnp.complex64), jnp.ones(1, jnp.complex64))
    np.testing.assert_array_equal(c, np.ones(2))


def test_outside_a_trace_and_with_nothing_floating_it_returns_its_argument():
    x = jnp.ones(3)
    assert _order.after(x, jnp.zeros(2)) is x
    tree = [jnp.arange(3)]
    assert jax.jit(lambda t, y: _order.after(t, y))(tree, jnp.zeros(1))[0].dtype == tree[0].dtype
    assert _order.after(x, jnp.arange(2)) is x


def test_the_loop_is_in_the_cpu_program_and_gradients_flow_through():
    text = jax.jit(lambda x, y: _order.after(x, y) * 2).lower(jnp.ones(3), jnp.ones(2)).compile().as_text()
    assert "while" in text
    g = jax.grad(lambda x: jax.jit(lambda x, y: _order.after(x, y))(x, x * 1).sum())(jnp.ones(3))
    np.testing.assert_array_equal(g, np.ones(3))


def test_doctests():
    failed, attempted = doctest.testmod(_order, raise_on_error=False, verbose=False)[:2]
    assert attempted and not failed
