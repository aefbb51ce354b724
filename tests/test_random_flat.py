"""fjax draws random tensors flat and reshapes them (``fjax.random.flat``): XLA compiles a flat
threefry draw far faster than one of 3 or 4 dims. The numbers must be those of the shaped draw."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fjax
from fjax.random import flat

DRAWS = {
    "uniform": lambda k, s: jax.random.uniform(k, s, jnp.float32, -0.3, 0.7),
    "normal": lambda k, s: jax.random.normal(k, s, jnp.float32),
    "randint": lambda k, s: jax.random.randint(k, s, 0, 1000, jnp.int64),
    "bernoulli": lambda k, s: jax.random.bernoulli(k, 0.3, s),
    "truncated_normal": lambda k, s: jax.random.truncated_normal(k, -2.0, 2.0, s, jnp.float32),
}


@pytest.mark.parametrize("partitionable", [True, False])
@pytest.mark.parametrize("name", list(DRAWS))
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4, 5), (4, 1, 3), (0, 3)])
def test_a_flat_draw_is_the_shaped_draw(name, shape, partitionable):
    draw = DRAWS[name]
    key = jax.random.key(int(np.random.default_rng().integers(1 << 30)))
    with jax.threefry_partitionable(partitionable):
        np.testing.assert_array_equal(np.asarray(flat(lambda s: draw(key, s), shape)), np.asarray(draw(key, shape)))


def test_seeded_tensors_and_inits_are_the_shaped_draws():
    """``rand``, ``randn``, ``randint``, ``Tensor.uniform_`` and ``nn.init.kaiming_uniform_`` give
    what ``jax.random`` gives at the tensor's shape from the generator's key."""
    shape = (3, 4, 2, 2)
    cases = [
        (lambda: fjax.rand(*shape), lambda k: jax.random.uniform(k, shape, jnp.float32)),
        (lambda: fjax.randn(*shape), lambda k: jax.random.normal(k, shape, jnp.float32)),
        (lambda: fjax.randint(0, 9, shape), lambda k: jax.random.randint(k, shape, 0, 9, jnp.int64)),
        (lambda: fjax.empty(shape).uniform_(-1, 2), lambda k: jax.random.uniform(k, shape, jnp.float32, -1, 2)),
    ]
    for make, expected in cases:
        fjax.manual_seed(11)
        key = fjax.default_generator.next_key()
        fjax.manual_seed(11)
        np.testing.assert_array_equal(make().numpy(), np.asarray(expected(key)))
    w = fjax.empty(shape)
    fjax.manual_seed(5)
    key = fjax.default_generator.next_key()
    fjax.manual_seed(5)
    fjax.nn.init.uniform_(w, -0.5, 0.5)
    np.testing.assert_array_equal(w.numpy(), np.asarray(jax.random.uniform(key, shape, jnp.float32, -0.5, 0.5)))
