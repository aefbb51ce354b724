"""Op-table samples: elementwise arithmetic, rounding, clamping, transcendental functions."""

from .spec import D, F, I, S

# Integer and bool cases do not depend on the float dtype: run them once, without gradients.
INT = {"_grad": False, "_dtypes": ("float32",)}

# Integer-valued floats: ties and zeros for the gradient conventions at kinks.
TIES = D(I((4, 5), -2, 3), "float32")

SAMPLES = {
    "add": [
        S((3, 4), (4,)),
        S((), (2, 3)),
        S((0, 3), (3,)),
        S((3,), 2.5),
        S(I((3,)), 1.5, **INT),
        S((2, 3), (2, 3), alpha=2.0),
    ],
    "sub": [S((3, 4), (3, 1)), S((2,), (), alpha=0.5)],
    "mul": [S((3, 4), (4,)), S((), ()), S(I((3,)), I((3,)), **INT)],
    "div": [
        S((3, 4), F((4,), 0.5, 2.0)),
        S(I((5,), 1, 9), I((5,), 1, 4), **INT),
        S(I((5,), -9, 9), I((5,), 1, 4), rounding_mode="floor", **INT),
        S(I((5,), -9, 9), I((5,), 1, 4), rounding_mode="trunc", **INT),
    ],
    "neg": [S((3, 4)), S(())],
    "exp": [S((3, 4)), S((0,)), S(I((3,)), **INT)],
    "true_divide": [S((3, 4), F((4,), 0.5, 2.0)), S(I((5,), 1, 9), I((5,), 1, 4), **INT), S((2, 3), 2)],
    "floor_divide": [
        S((3, 4), F((4,), 0.5, 2.0), _grad=False),
        S(I((6,), -9, 9), I((6,), 1, 4), **INT),
        S(I((6,), -9, 9), 2.5, **INT),
    ],
    "remainder": [
        S((3, 4), F((4,), 0.5, 2.0)),
        S((3,), 1.5),
        S(I((6,), -9, 9), I((6,), 1, 4), **INT),
        S(I((6,), -9, 9), 3, **INT),
        S(I((6,), -9, 9), -2.5, **INT),
    ],
    "fmod": [
        S((3, 4), F((4,), 0.5, 2.0)),
        S((3,), -1.5),
        S(I((6,), -9, 9), I((6,), 1, 4), **INT),
        S(I((6,), -9, 9), 3, **INT),
    ],
    "pow": [
        S(F((3, 4), 0.5, 2.0), 2.5),
        S((3, 4), 2),
        S((3, 4), 3.0),
        S(F((3, 4), 0.5, 2.0), F((4,), -1.0, 1.0)),
        S(F((2, 1), 0.5, 2.0), F((3,), -1.0, 1.0)),
        S(2.0, F((3,), -1.0, 1.0)),
        S((), ()),
        S(I((4,), 0, 5), I((4,), 0, 4), **INT),
        S(I((4,), 0, 5), 3, **INT),
        S(I((4,), 0, 5), 0.5, **INT),
        S(F((0,), 0.5, 2.0), 2.0),
    ],
    "float_power": [S(F((3, 4), 0.5, 2.0), 2.5), S(F((3,), 0.5, 2.0), F((3,), -1.0, 1.0)), S(I((4,), 0, 5), 2, **INT)],
    "abs": [S((3, 4)), S(()), S((0, 2)), S(TIES), S(I((5,), -5, 5), **INT)],
    "sign": [S((3, 4)), S(TIES), S(I((5,), -5, 5), **INT)],
    "square": [S((3, 4)), S(()), S(I((5,), -5, 5), **INT)],
    "reciprocal": [S(F((3, 4), 0.5, 2.0)), S(I((5,), 1, 5), **INT)],
    "sigmoid": [S((3, 4)), S(()), S((0,)), S(I((3,), -3, 3), **INT)],
    "logit": [S(F((3, 4), 0.05, 0.95)), S(F((3, 4), 0.0, 1.0), eps=0.2), S(F((3, 4), 0.0, 1.0), 0.1)],
    "floor": [S((3, 4)), S(TIES), S(I((5,), -5, 5), **INT)],
    "ceil": [S((3, 4)), S(()), S(I((5,), -5, 5), **INT)],
    "trunc": [S((3, 4)), S(()), S(I((5,), -5, 5), **INT)],
    "round": [
        S((3, 4)),
        S(D(F((8,), -3.0, 3.0), "float32"), _grad=False),
        S(F((3, 4), -100.0, 100.0), decimals=2),
        S(F((3, 4), -1000.0, 1000.0), decimals=-2),
        S(I((5,), -5, 5), **INT),
    ],
    "frac": [S(F((3, 4), -5.0, 5.0)), S(())],
    "clamp": [
        S((3, 4), -0.5, 0.5),
        S((3, 4), min=-0.5),
        S((3, 4), max=0.2),
        S((3, 4), (3, 4), (4,)),
        S((3, 4), min=(4,)),
        S((2, 3), 0.5, -0.5),
        S(TIES, -1.0, 1.0),
        S(TIES, D(I((5,), -2, 3), "float32"), D(I((4, 1), -1, 4), "float32")),
        S((0, 2), 0.0, 1.0),
        S(I((6,), -5, 5), -2, 3, **INT),
        S(I((6,), -5, 5), min=0.5, **INT),
    ],
    "clamp_min": [S((3, 4), 0.1), S((3, 4), (4,)), S(TIES, 0.0), S(I((6,), -5, 5), 1, **INT)],
    "clamp_max": [S((3, 4), 0.1), S((3, 4), (3, 1)), S(TIES, 0.0), S(I((6,), -5, 5), 1, **INT)],
    "maximum": [
        S((3, 4), (4,)),
        S((), (2,)),
        S(TIES, D(I((5,), -2, 3), "float32")),
        S(I((6,), -5, 5), I((6,), -5, 5), **INT),
    ],
    "minimum": [
        S((3, 4), (4,)),
        S((), (2,)),
        S(TIES, D(I((5,), -2, 3), "float32")),
        S(I((6,), -5, 5), I((6,), -5, 5), **INT),
    ],
    "fmax": [S((3, 4), (4,)), S(TIES, D(I((5,), -2, 3), "float32")), S(I((6,), -5, 5), I((6,), -5, 5), **INT)],
    "fmin": [S((3, 4), (4,)), S(TIES, D(I((5,), -2, 3), "float32")), S(I((6,), -5, 5), I((6,), -5, 5), **INT)],
    "lerp": [S((3, 4), (3, 4), 0.3), S((3, 4), (3, 4), 0.8), S((3, 4), (4,), F((3, 4), 0.0, 1.0)), S((), (), ())],
    "addcmul": [
        S((3, 4), (3, 4), (4,)),
        S((3, 4), (3, 1), (4,), value=0.5),
        S((), (2,), ()),
        S(I((3,)), I((3,)), I((3,)), value=2, **INT),
    ],
    "addcdiv": [S((3, 4), (3, 4), F((4,), 0.5, 2.0)), S((3, 4), (3, 1), F((4,), 0.5, 2.0), value=-0.5)],
    "nan_to_num": [S((3, 4)), S((3, 4), nan=1.0, posinf=2.0, neginf=-2.0), S(I((3,)), **INT)],
    "copysign": [
        S((3, 4), (4,)),
        S((3, 4), -1.0),
        S(TIES, D(I((5,), -2, 3), "float32")),
        S(I((5,), -5, 5), I((5,), -5, 5), **INT),
    ],
    # transcendental.py
    "exp2": [S((3, 4)), S(()), S(I((3,), -3, 3), **INT)],
    "expm1": [S((3, 4)), S((0,)), S(I((3,), -3, 3), **INT)],
    "log": [S(F((3, 4), 0.1, 3.0)), S(F((), 0.1, 3.0)), S(I((3,), 1, 5), **INT)],
    "log2": [S(F((3, 4), 0.1, 3.0)), S(I((3,), 1, 5), **INT)],
    "log10": [S(F((3, 4), 0.1, 3.0)), S(I((3,), 1, 5), **INT)],
    "log1p": [S(F((3, 4), -0.5, 3.0)), S(I((3,), 0, 5), **INT)],
    "sqrt": [S(F((3, 4), 0.1, 3.0)), S(F((0,), 0.1, 3.0)), S(I((3,), 0, 5), **INT)],
    "rsqrt": [S(F((3, 4), 0.1, 3.0)), S(I((3,), 1, 5), **INT)],
    "sin": [S((3, 4)), S(()), S(I((3,), -3, 3), **INT)],
    "cos": [S((3, 4)), S(()), S(I((3,), -3, 3), **INT)],
    "tan": [S(F((3, 4), -1.2, 1.2)), S(I((3,), -1, 2), **INT)],
    "asin": [S(F((3, 4), -0.9, 0.9)), S(I((3,), -1, 2), **INT)],
    "acos": [S(F((3, 4), -0.9, 0.9)), S(I((3,), -1, 2), **INT)],
    "atan": [S((3, 4)), S(I((3,), -3, 3), **INT)],
    "sinh": [S((3, 4)), S(I((3,), -3, 3), **INT)],
    "cosh": [S((3, 4)), S(I((3,), -3, 3), **INT)],
    "tanh": [S((3, 4)), S(()), S((0,)), S(I((3,), -3, 3), **INT)],
    "asinh": [S((3, 4)), S(I((3,), -3, 3), **INT)],
    "acosh": [S(F((3, 4), 1.1, 4.0)), S(I((3,), 1, 5), **INT)],
    "atanh": [S(F((3, 4), -0.9, 0.9)), S(I((3,), 0, 1), **INT)],
    "erf": [S((3, 4)), S(I((3,), -3, 3), **INT)],
    "erfc": [S((3, 4)), S(I((3,), -3, 3), **INT)],
    "erfinv": [S(F((3, 4), -0.9, 0.9)), S(I((3,), 0, 1), **INT)],
    "lgamma": [S(F((3, 4), 0.2, 5.0)), S(F((3,), -2.9, -2.1)), S(I((3,), 1, 6), **INT)],
    "digamma": [S(F((3, 4), 0.2, 5.0)), S(I((3,), 1, 6), **INT)],
    # away from tiny |x|: there float32 derivatives of sin(pi x)/(pi x) cancel differently in each library
    "sinc": [
        S(F((3, 4), 0.05, 3.0)),
        S(F((4,), -3.0, -0.05)),
        S(D(I((5,), -2, 3), "float32")),
        S(I((3,), -3, 3), **INT),
    ],
    "deg2rad": [S((3, 4)), S(I((3,), -90, 90), **INT)],
    "rad2deg": [S((3, 4)), S(I((3,), -3, 3), **INT)],
    "atan2": [S((3, 4), (4,)), S((), (2, 1)), S(I((3,), -3, 3), I((3,), 1, 3), **INT)],
    "hypot": [S((3, 4), (4,)), S((), (2, 1))],
    "logaddexp": [S((3, 4), (4,)), S((3, 4), F((3, 1), 20.0, 30.0)), S((), ())],
    "logaddexp2": [S((3, 4), (4,)), S((), ())],
    "xlogy": [
        S((3, 4), F((4,), 0.1, 3.0)),
        S(D(I((5,), 0, 2), "float32"), F((5,), 0.1, 3.0)),
        S((3,), 2.0),
        S(I((3,), 0, 3), I((3,), 1, 4), **INT),
    ],
}

SAMPLES.update(
    {
        "gcd": [
            S(I((3, 4), -20, 20), I((4,), -20, 20), **INT),
            S(I((5,), 0, 3), I((5,), 0, 3), **INT),
            S(D(I((5,), -30, 30), "int32"), I((5,), 1, 9), **INT),
        ],
        "lcm": [
            S(I((3, 4), -12, 12), I((4,), -12, 12), **INT),
            S(D(I((5,), -30, 30), "int32"), D(I((5,), 0, 9), "int32"), **INT),
        ],
        "heaviside": [
            S(TIES, D(I((5,), 0, 3), "float32"), _grad=False, _dtypes=("float32",)),
            S(I((3, 4), -2, 3), I((4,), 5, 9), **INT),
            S(D(I((6,), -2, 3), "float64"), D(F((1,)), "float64"), _grad=False, _dtypes=("float32",)),
        ],
        "ldexp": [
            # torch's gradient for an integer exponent is computed in integers (0 below 2 ** 0): only
            # non-negative integer exponents are compared with gradients
            S((3, 4), I((4,), 0, 4)),
            S((3, 4), I((4,), -3, 4), _grad=False),
            S((3, 4), F((3, 4), -2, 2)),
            S(I((5,), -3, 3), I((5,), -2, 4), **INT),
            S(D((3,), "float16"), I((3,), 0, 4), _dtypes=("float32",)),
            # a float64 0-dim exponent does not promote the float32 result: its gradient is a float32
            # sum of six terms, rounded differently by torch and XLA (~2e-6 relative)
            S((2, 3), D(F((), -2, 2), "float64"), _rtol=1e-5, _atol=1e-6),
        ],
    }
)

SAMPLES.update(
    {
        "positive": [S((3, 4)), S(I((3,)), **INT)],
        "rsub": [S((3, 4), (4,)), S((3,), 2.5), S((2, 3), (2, 3), alpha=2.0)],
        "fill": [S((3, 4), 2.5, _grad=False), S(I((3,)), 7, **INT)],
        "nextafter": [S((3, 4), (3, 4), _grad=False), S(D((3,), "float64"), D((3,), "float64"), _grad=False)],
        "frexp": [S((3, 4)), S(F((5,), -100.0, 100.0))],
    }
)
