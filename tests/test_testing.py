"""fjax.testing.assert_close and make_tensor against torch.testing (messages, tolerances, errors)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import fjax
import fjax.testing
from fjax import nn

torch = pytest.importorskip("torch")


def _outcome(lib, build, kwargs):
    """(exception type name, message) of assert_close on what ``build(lib)`` makes, or None."""
    actual, expected = build(lib)
    try:
        lib.testing.assert_close(actual, expected, **kwargs)
    except (AssertionError, TypeError, ValueError) as err:
        return type(err).__name__, str(err).replace("torch.", "fjax.")
    return None


def _t(lib, values, dtype="float32"):
    return lib.tensor(values, dtype=getattr(lib, dtype))


nan, inf = float("nan"), float("inf")

CASES = {
    "equal": (lambda L: (_t(L, [1.0, 2.0]), _t(L, [1.0, 2.0])), {}),
    "within_default_tol": (lambda L: (_t(L, [1.0, 2.0]), _t(L, [1.0, 2.0 + 1e-6])), {}),
    "float32_mismatch": (lambda L: (_t(L, [1.0, 2.0, 3.0]), _t(L, [1.0, 2.1, 3.0])), {}),
    "2d_index": (lambda L: (_t(L, [[1.0, 2.0], [3.0, 4.0]]), _t(L, [[1.0, 2.0], [3.0, 5.0]])), {}),
    "int_equal_msg": (lambda L: (_t(L, [1, 2, 3], "int64"), _t(L, [1, 2, 4], "int64")), {}),
    "uint8": (lambda L: (_t(L, [1, 2], "uint8"), _t(L, [2, 1], "uint8")), {}),
    "bool_tensor": (lambda L: (_t(L, [True, False], "bool"), _t(L, [True, True], "bool")), {}),
    "zero_dim": (lambda L: (L.tensor(1.0), L.tensor(1.1)), {}),
    "float64": (lambda L: (_t(L, [1.0], "float64"), _t(L, [1.0 + 1e-6], "float64")), {}),
    "float16": (lambda L: (_t(L, [1.0, 2.0], "float16"), _t(L, [1.0, 2.1], "float16")), {}),
    "bfloat16": (lambda L: (_t(L, [1.0, 2.0], "bfloat16"), _t(L, [1.0, 2.1], "bfloat16")), {}),
    "bfloat16_close": (lambda L: (_t(L, [1.0, 2.0], "bfloat16"), _t(L, [1.0, 2.01], "bfloat16")), {}),
    "mixed_promoted": (lambda L: (_t(L, [1.0, 2.0]), _t(L, [1.0, 2.1], "float16")), {"check_dtype": False}),
    "int_vs_float": (lambda L: (_t(L, [1, 2], "int64"), _t(L, [1.0, 2.1])), {"check_dtype": False}),
    "dtype_attr": (lambda L: (_t(L, [1.0]), _t(L, [1.0], "float64")), {}),
    "dtype_ignored": (lambda L: (_t(L, [1.0]), _t(L, [1.0], "float64")), {"check_dtype": False}),
    "shape_attr": (lambda L: (_t(L, [1.0]), _t(L, [1.0, 2.0])), {}),
    "nan_unequal": (lambda L: (_t(L, [nan, 1.0]), _t(L, [nan, 2.0])), {}),
    "nan_equal": (lambda L: (_t(L, [nan]), _t(L, [nan])), {"equal_nan": True}),
    "nan_vs_number": (lambda L: (_t(L, [3.0, 1.0]), _t(L, [nan, 2.0])), {}),
    "inf_equal": (lambda L: (_t(L, [1.0, inf]), _t(L, [1.0, inf])), {}),
    "inf_signs": (lambda L: (_t(L, [1.0, inf]), _t(L, [1.0, -inf])), {}),
    "rel_inf": (lambda L: (_t(L, [1.0, 2.0]), _t(L, [0.0, 2.5])), {}),
    "custom_tol": (lambda L: (_t(L, [[1.0]]), _t(L, [[2.0]])), {"rtol": 0.1, "atol": 0.2}),
    "custom_tol_ok": (lambda L: (_t(L, [1.0]), _t(L, [1.1])), {"rtol": 0.0, "atol": 0.2}),
    "int_with_tol": (lambda L: (_t(L, [1, 2], "int64"), _t(L, [1, 3], "int64")), {"rtol": 0.1, "atol": 0.5}),
    "only_rtol": (lambda L: (_t(L, [1.0]), _t(L, [1.0])), {"rtol": 1e-3}),
    "only_atol": (lambda L: (_t(L, [1.0]), _t(L, [1.0])), {"atol": 1e-3}),
    "msg_str": (lambda L: (_t(L, [1.0]), _t(L, [1.5])), {"msg": "custom"}),
    "msg_callable": (lambda L: (_t(L, [1.0]), _t(L, [1.5])), {"msg": lambda m: "X " + m}),
    "complex": (lambda L: (_t(L, [1 + 1j], "complex64"), _t(L, [1 + 2j], "complex64")), {}),
    "empty": (lambda L: (L.zeros(0), L.zeros(0)), {}),
    "float_scalars": (lambda L: (1.0, 1.1), {}),
    "int_scalars": (lambda L: (1, 2), {}),
    "int_float_scalars": (lambda L: (1, 1.0), {}),
    "nan_scalars": (lambda L: (nan, nan), {}),
    "nan_scalars_equal": (lambda L: (nan, nan), {"equal_nan": True}),
    "numpy_scalars": (lambda L: (np.float32(1.0), np.float32(1.1)), {}),
    "booleans": (lambda L: (True, False), {}),
    "none": (lambda L: (None, None), {}),
    "none_vs_int": (lambda L: (None, 1), {}),
    "numpy_arrays": (lambda L: (np.array([1.0]), np.array([1.1])), {}),
    "list_item": (lambda L: ([L.tensor(1.0), L.tensor(2.0)], [L.tensor(1.0), L.tensor(2.5)]), {}),
    "nested_item": (lambda L: ([[_t(L, [1.0])]], [[_t(L, [2.0])]]), {}),
    "dict_item": (lambda L: ({"a": [L.tensor(1.0)]}, {"a": [L.tensor(2.0)]}), {}),
    "dict_ints": (lambda L: ({"b": 1, "a": 2}, {"a": 2, "b": 3}), {}),
    "dict_keys": (lambda L: ({"a": 1}, {"b": 1}), {}),
    "seq_length": (lambda L: ([L.tensor(1.0)], [L.tensor(1.0), L.tensor(2.0)]), {}),
    "list_vs_tuple": (lambda L: ((1, 2), [1, 2]), {}),
    "item_msg_callable": (lambda L: ([_t(L, [1.0])], [_t(L, [2.0], "float64")]), {"msg": lambda m: "<" + m + ">"}),
    "item_msg_str": (lambda L: ([_t(L, [1.0])], [_t(L, [2.0])]), {"msg": "m"}),
    "stride": (lambda L: (L.ones(2, 3).t(), L.ones(3, 2)), {"check_stride": True}),
    "stride_unchecked": (lambda L: (L.ones(2, 3).t(), L.ones(3, 2)), {}),
    "requires_grad": (lambda L: (_t(L, [1.0]).requires_grad_(), _t(L, [1.0])), {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_assert_close_matches_torch(name):
    build, kwargs = CASES[name]
    assert _outcome(fjax, build, kwargs) == _outcome(torch, build, kwargs)


@pytest.mark.parametrize(
    "build",
    [
        lambda L: (_t(L, [1.0]), np.array([1.0], dtype=np.float32)),
        lambda L: (_t(L, [1.0]), 1.0),
        lambda L: (_t(L, [1.0, 2.0]), [1.0, 2.0]),
        lambda L: ("a", "a"),
        lambda L: ([_t(L, [1.0]), "a"], [_t(L, [2.0]), "a"]),
    ],
)
def test_unsupported_inputs_raise_type_error(build):
    """The same TypeError as torch's, up to the Tensor class's name."""
    ours, theirs = _outcome(fjax, build, {}), _outcome(torch, build, {})
    assert ours[0] == theirs[0] == "TypeError"
    norm = {"<class 'fjax.tensor.Tensor'>": "T", "<class 'fjax.Tensor'>": "T"}  # torch.Tensor, renamed
    a, b = ours[1], theirs[1]
    for k, v in norm.items():
        a, b = a.replace(k, v), b.replace(k, v)
    assert a == b


def test_subclasses():
    p = nn.Parameter(fjax.tensor([1.0]))
    fjax.testing.assert_close(fjax.tensor([1.0]), p)
    with pytest.raises(TypeError, match="No comparison pair"):
        fjax.testing.assert_close(fjax.tensor([1.0]), p, allow_subclasses=False)


def test_make_tensor():
    mt = fjax.testing.make_tensor
    t = mt(2, 3, dtype=fjax.float32, device="cpu")
    assert t.shape == (2, 3) and t.dtype == fjax.float32
    a = t.numpy()
    assert ((a >= -9) & (a < 9)).all()
    assert mt((4,), dtype=fjax.int64, device="cpu", low=5, high=6).tolist() == [5] * 4
    u = mt(50, dtype=fjax.uint8, device="cpu").numpy()
    assert u.min() >= 0 and u.max() < 10
    i8 = mt(50, dtype=fjax.int8, device="cpu", low=-1000, high=1000).numpy()
    assert i8.dtype == np.int8
    assert mt(3, dtype=fjax.bool, device="cpu").dtype == fjax.bool
    c = mt(3, dtype=fjax.complex64, device="cpu")
    assert c.dtype == fjax.complex64 and np.abs(c.numpy().imag).max() > 0
    assert mt(dtype=fjax.float32, device="cpu").shape == ()
    nz = mt(200, dtype=fjax.int64, device="cpu", low=-1, high=2, exclude_zero=True).numpy()
    assert (nz != 0).all()
    g = mt(2, dtype=fjax.float64, device="cpu", requires_grad=True)
    assert g.requires_grad and g.is_leaf
    nc = mt(3, 4, dtype=fjax.float32, device="cpu", noncontiguous=True)
    assert nc.shape == (3, 4) and not nc.is_contiguous()
    b16 = mt(2, dtype=fjax.bfloat16, device="cpu", low=0, high=1)
    assert b16.dtype == fjax.bfloat16


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(dtype="float32", low=3, high=1),
        dict(dtype="int64", low=1, high=1),
        dict(dtype="float32", low=float("nan")),
        dict(dtype="bool", requires_grad=True),
        dict(dtype="int64", requires_grad=True),
    ],
)
def test_make_tensor_errors_match_torch(kwargs):
    def message(lib):
        kw = dict(kwargs, dtype=getattr(lib, kwargs["dtype"]), device="cpu")
        with pytest.raises(ValueError) as info:
            lib.testing.make_tensor((2,), **kw)
        return str(info.value).replace("torch.", "fjax.")

    assert message(fjax) == message(torch)


@pytest.mark.parametrize("obj", [fjax.testing.assert_close, fjax.testing.make_tensor])
def test_docstring_examples(obj):
    parser = doctest.DocTestParser()
    test = parser.get_doctest(obj.__doc__, {"fjax": fjax, "nn": nn}, obj.__name__, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    out = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)
