"""Bad input raises an fjax error naming the op, the shapes/dtypes and what was expected."""

from __future__ import annotations

import pytest

import fjax
from fjax.dispatch import functions as F
from fjax.nn import functional as F_nn

x23 = fjax.ones(2, 3)

CASES = [
    # (call, exception type, fragments that must all appear in the message)
    (lambda: fjax.ones(3) + fjax.ones(4), fjax.OpError, ["fjax.add", "(3,)", "(4,)"]),
    (lambda: x23 @ fjax.ones(4, 5), fjax.OpError, ["matmul", "(2, 3)", "(4, 5)"]),
    (lambda: fjax.bmm(fjax.ones(2, 3, 4), fjax.ones(3, 4, 5)), fjax.OpError, ["bmm", "(2, 3, 4)", "(3, 4, 5)"]),
    (lambda: fjax.cat([x23, fjax.ones(2, 4)], dim=0), fjax.OpError, ["cat", "(2, 3)", "(2, 4)"]),
    (lambda: x23.reshape(4, 2), fjax.OpError, ["reshape", "(2, 3)"]),
    (lambda: x23.sum(dim=5), fjax.OpError, ["sum", "dim 5"]),
    (lambda: fjax.softmax(fjax.ones(3), dim=2), fjax.OpError, ["softmax", "dim 2"]),
    (lambda: fjax.gather(x23, 1, x23), fjax.OpError, ["gather", "float32"]),
    (lambda: x23.expand(4, 4), fjax.OpError, ["expand", "(2, 3)"]),
    (lambda: x23.permute(0, 0), fjax.OpError, ["permute"]),
    (lambda: fjax.where(fjax.ones(3) > 0, fjax.ones(3), fjax.ones(4)), fjax.OpError, ["where", "(4,)"]),
    (lambda: fjax.ones(4).split([1, 2]), fjax.OpError, ["split", "4"]),
    (lambda: F.conv2d(fjax.ones(1, 3, 8, 8), fjax.ones(4, 2, 3, 3)), fjax.OpError, ["conv2d", "(4, 2, 3, 3)"]),
    (
        lambda: F.cross_entropy(fjax.ones(4, 5), fjax.zeros(3, dtype=fjax.int64)),
        fjax.OpError,
        ["cross_entropy", "(4,)", "(3,)"],
    ),
    (lambda: F.mse_loss(fjax.ones(4, 5), fjax.ones(4, 6)), fjax.OpError, ["mse_loss", "(4, 6)", "(4, 5)"]),
    (lambda: F.linear(fjax.ones(4, 5), fjax.ones(3, 6)), fjax.OpError, ["linear", "(3, 6)", "(4, 5)"]),
    (lambda: F.layer_norm(fjax.ones(4, 5), (6,)), fjax.OpError, ["layer_norm", "(4, 5)", "(6,)"]),
    (lambda: F.embedding(fjax.ones(4), fjax.ones(10, 3)), fjax.OpError, ["embedding", "float32"]),
    (lambda: x23[5], IndexError, ["index 5", "dimension 0", "size 2"]),
    (lambda: F_nn.embedding(fjax.tensor([0, 5]), fjax.ones(5, 2)), IndexError, ["embedding", "index 5", "5 rows"]),
    (lambda: x23[:, fjax.tensor([0, 3])], IndexError, ["index 3", "dimension 1", "size 3"]),
    (lambda: x23[0, 0, 0], IndexError, ["too many indices", "(2, 3)"]),
    (lambda: x23[fjax.ones(2)], fjax.OpError, ["long, int or bool", "float32"]),
    (lambda: x23.to("float128"), fjax.OpError, ["Tensor.to", "float128"]),
    (lambda: x23.to("cuda:7") if not fjax.is_cuda_available() else 1 / 0, RuntimeError, ["cuda"]),
    (lambda: fjax.tensor([1, 2]).requires_grad_(), fjax.OpError, ["floating point", "int64"]),
    (lambda: fjax.ones(3).item(), fjax.OpError, ["item", "3 elements"]),
    (lambda: bool(fjax.ones(3)), fjax.OpError, ["ambiguous", "3 elements"]),
    (lambda: fjax.randint(5, 2, (3,)), fjax.OpError, ["randint", "low=5", "high=2"]),
    (lambda: fjax.zeros(2, -1), fjax.OpError, ["zeros", "negative"]),
    (lambda: fjax.ones(3).sum(dim=fjax.tensor([0.5])), fjax.OpError, ["sum", "'dim'", "Python value"]),
    (lambda: fjax.dtypes.to_dtype("float128"), TypeError, ["unknown dtype", "float128"]),
    (lambda: fjax.tensor([[1, 2], [3]]), Exception, ["tensor"]),
]


def _inplace_cast():
    t = fjax.tensor([1, 2])
    t += 1.5


def _leaf_inplace():
    t = fjax.ones(2, requires_grad=True)
    t.mul_(2)


CASES += [
    (_inplace_cast, RuntimeError, ["add_", "float32", "int64"]),
    (_leaf_inplace, RuntimeError, ["mul_", "leaf Variable"]),
]


@pytest.mark.parametrize("call, exc, fragments", CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input_message(call, exc, fragments):
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    missing = [f for f in fragments if f not in msg]
    assert not missing, f"message {msg!r} lacks {missing}"
    assert "Traceback" not in msg and "jaxlib" not in msg


def test_error_count():
    assert len(CASES) >= 20
