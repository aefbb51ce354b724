"""torch's own OpInfo database as the oracle: every OpInfo with float32 CPU samples against fjax.

For each OpInfo in ``torch.testing._internal.common_methods_invocations.op_db`` that supports
float32 on CPU, the first ``FJAX_OPINFO_SAMPLES`` (default 4) samples of
``op.sample_inputs("cpu", torch.float32, requires_grad=op.supports_autograd)`` (under CI: the
first and one more, rotated daily, see ``EXTRA``) run through torch and through fjax's
counterpart (inputs converted via numpy, recursively through lists, tuples and dicts; aliasing
kept). Compared, per sample where torch itself does not raise:

* the forward outputs (after the sample's ``output_process_fn_grad``, which fixes the gauge of
  e.g. SVD/eigen vectors): structure, named-tuple fields, dtypes, shapes and values with
  ``torch.testing.assert_close``'s dtype defaults (float32: rtol=1.3e-6, atol=1e-5), NaNs equal;
* the gradient of a fixed random weighting of the floating outputs w.r.t. every floating input
  that requires grad (``torch.autograd.grad`` vs ``fjax.autograd.grad``), same tolerances;
* forward only: the Tensor-method variant ``x.op(...)`` when the OpInfo has one.

fjax's counterpart: the OpInfo's own wrapper (a lambda in torch's testing code) run with
``torch`` rebound to fjax; else ``NAME_MAP``; else ``fjax.<name>`` (dotted names such as
``nn.functional.conv2d``, ``linalg.det``, ``special.i0e``, ``fft.fft`` resolve under fjax), then
``fjax.nn.functional.<name>``; else the Tensor method. ``op.gradcheck_wrapper`` (e.g. symmetrizing
the input of eigh) is applied on both sides.

    PYTHONPATH=src pytest tests/oracle/test_opinfo.py -n 2
    PYTHONPATH=src python tests/oracle/test_opinfo.py --report [-k SUBSTR] [--emit-skips]

The report ignores opinfo_support.UNSUPPORTED, prints the pass rate and the failures grouped by
cause; ``--emit-skips`` also prints an UNSUPPORTED dict for the failures.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import itertools
import math
import os
import pathlib
import random
import sys
import time
import traceback
import types
import warnings
import zlib
from collections import defaultdict

if __package__ in (None, ""):  # script mode: make `tests.oracle` importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import numpy as np
import pytest
import torch

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.opinfo.core import gradcheck_wrapper_hermitian_input

import fjax
from tests.oracle import opinfo_support as support
from tests.oracle.helper import _np

for _namespace in ("special", "fft", "signal", "masked", "sparse"):  # some are being written elsewhere
    try:
        importlib.import_module(f"fjax.{_namespace}")
    except Exception:  # noqa: BLE001 - absent or half-written: the lookups report "no counterpart"
        pass

_REPORT_MODE = False  # the report ignores the skip lists (UNSUPPORTED, METHOD_UNSUPPORTED)
N_SAMPLES = int(os.environ.get("FJAX_OPINFO_SAMPLES", 4))
# Under CI each OpInfo checks its first sample and FJAX_ORACLE_EXTRA_SAMPLES more of its first
# N_SAMPLES (as the op-table oracle does), the extra ones rotated daily so each of the N_SAMPLES
# runs within N_SAMPLES - 1 days of CI; a sample torch rejects does not count, the next one in
# that order is checked instead. Locally (and in the report) every one of the N_SAMPLES runs.
EXTRA = int(os.environ.get("FJAX_ORACLE_EXTRA_SAMPLES", 1 if os.environ.get("CI") else 10**6))
DAY = int(time.strftime("%j"))
OPINFOS = [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]


def opinfo_id(op) -> str:
    return f"{op.name}-{op.variant_test_name}" if op.variant_test_name else op.name


class NoCounterpart(AssertionError):
    """fjax has no function, method or argument value for what the OpInfo calls."""


class NoArgument(NoCounterpart):
    """fjax has no counterpart for an argument value of the sample (a memory_format, a layout, ...)."""


class Mismatch(AssertionError):
    """fjax returned, but not torch's result. ``kind``: forward, gradient or method."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------------------------------------
# torch -> fjax: values, callables, the OpInfo's own wrappers


class _Missing:
    """Stands for a torch namespace fjax lacks (torch.masked, ...): any use names it."""

    def __init__(self, path):
        self._path = path

    def __getattr__(self, name):
        raise NoCounterpart(f"{self._path} does not exist (for {self._path}.{name})")


def _fjax_path(path: str):
    """fjax's object at a dotted path ("nn.functional.conv2d", "Tensor.add"), or None."""
    obj = fjax
    for part in path.split("."):
        nxt = getattr(obj, part, None)
        if nxt is None and isinstance(obj, types.ModuleType):
            try:
                nxt = importlib.import_module(f"{obj.__name__}.{part}")
            except Exception:  # noqa: BLE001
                nxt = None
        if nxt is None:
            return None
        obj = nxt
    return obj


def _fjax_module(torch_module: types.ModuleType):
    if torch_module is torch:
        return fjax
    path = torch_module.__name__.removeprefix("torch.")
    found = _fjax_path(path)
    return found if found is not None else _Missing(f"fjax.{path}")


_TRANSPLANTED: dict = {}


def _is_testing_function(fn) -> bool:
    return isinstance(fn, types.FunctionType) and (fn.__module__ or "").startswith("torch.testing")


def _transplant(fn):
    """``fn`` (a function of torch's testing code) with its torch modules rebound to fjax's."""
    if not _is_testing_function(fn):
        return fn
    if fn in _TRANSPLANTED:
        return _TRANSPLANTED[fn]
    glob = dict(fn.__globals__)
    for key, value in fn.__globals__.items():
        if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == "torch":
            if not value.__name__.startswith("torch.testing"):
                glob[key] = _fjax_module(value)
    closure = None
    if fn.__closure__:
        cells = []
        for cell in fn.__closure__:
            try:
                cells.append(types.CellType(_transplant(cell.cell_contents)))
            except ValueError:  # an empty cell
                cells.append(cell)
        closure = tuple(cells)
    new = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    _TRANSPLANTED[fn] = new
    return new


def _method_caller(name: str):
    def call(self, *args, **kwargs):
        if not hasattr(self, name):
            raise NoCounterpart(f"fjax.Tensor has no method {name}")
        return getattr(self, name)(*args, **kwargs)

    call.__name__ = f"Tensor.{name}"
    return call


def _fjax_callable(fn):
    """An fjax counterpart of a callable found among a sample's arguments."""
    if _is_testing_function(fn):
        return _transplant(fn)
    name = getattr(fn, "__name__", None)
    module = getattr(fn, "__module__", None) or ""
    if name and not isinstance(fn, torch.nn.Module):
        paths = [f"nn.functional.{name}", name] if module.startswith("torch.nn") else [name, f"nn.functional.{name}"]
        for path in paths:
            found = _fjax_path(path)
            if callable(found):
                return found
    raise NoArgument(f"no fjax counterpart for the callable argument {fn!r}")


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


class ToFjax:
    """Converts a sample's values; records (torch, fjax) pairs of tensors that require grad."""

    def __init__(self):
        self.memo: dict[int, tuple] = {}
        self.grad_pairs: list[tuple] = []

    def __call__(self, x):
        if isinstance(x, torch.Tensor):
            return self.tensor(x)
        if isinstance(x, torch.Size):
            return tuple(x)
        if isinstance(x, (list, tuple)):
            values = [self(v) for v in x]
            if type(x) in (list, tuple):
                return type(x)(values)
            return type(x)(*values) if hasattr(x, "_fields") else tuple(values)
        if isinstance(x, dict):
            return {k: self(v) for k, v in x.items()}
        if isinstance(x, slice):
            return slice(self(x.start), self(x.stop), self(x.step))
        if isinstance(x, torch.dtype):
            dtype = getattr(fjax, _dtype_name(x), None)
            if not isinstance(dtype, fjax.dtype):
                raise NoArgument(f"fjax has no dtype {_dtype_name(x)}")
            return dtype
        if isinstance(x, torch.device):
            return fjax.device(str(x))
        if isinstance(x, (torch.memory_format, torch.layout)):
            found = getattr(fjax, _dtype_name(x), None)
            if found is None:
                raise NoArgument(f"fjax has no {type(x).__name__} {_dtype_name(x)}")
            return found
        if isinstance(x, torch.Generator):
            raise NoArgument("a torch.Generator argument")
        if callable(x) and not isinstance(x, type):
            return _fjax_callable(x)
        return x

    def tensor(self, t: torch.Tensor):
        if id(t) in self.memo:
            return self.memo[id(t)][1]
        if t.layout != torch.strided:
            raise NoArgument(f"{t.layout} tensor inputs")
        data = t.detach().resolve_conj().resolve_neg()
        name = _dtype_name(t.dtype)
        dtype = getattr(fjax, name, None)
        if not isinstance(dtype, fjax.dtype) or t.dtype == torch.complex32:
            raise NoArgument(f"fjax has no dtype {name}")
        array = (data.float() if t.dtype == torch.bfloat16 else data).numpy().copy()
        needs = t.requires_grad and (t.is_floating_point() or t.is_complex())
        out = fjax.tensor(array, dtype=dtype, requires_grad=needs)
        self.memo[id(t)] = (t, out)  # holds t, so its id stays unique
        if needs:
            self.grad_pairs.append((t, out))
        return out


# ---------------------------------------------------------------------------------------------
# the counterpart


_HINT_NAMESPACES = ("", "nn.functional.", "linalg.", "special.", "fft.", "Tensor.")


def _hint(name: str) -> str:
    """Where fjax has something of that name elsewhere, for the no-counterpart message."""
    last = name.split(".")[-1]
    found = [
        f"fjax.{ns}{cand}"
        for ns in _HINT_NAMESPACES
        for cand in dict.fromkeys((last, f"linalg_{last}", last.lstrip("_")))
        if f"{ns}{cand}" != name and callable(_fjax_path(f"{ns}{cand}"))
    ]
    return f" (fjax has {', '.join(found)})" if found else ""


def resolve(op):
    """(fjax callable, how it was found) for an OpInfo; NoCounterpart when there is none."""
    oid = opinfo_id(op)
    mapped = support.NAME_MAP.get(oid, support.NAME_MAP.get(op.name))
    if mapped is not None:
        if mapped.startswith("Tensor."):
            return _method_caller(mapped.removeprefix("Tensor.")), mapped
        found = _fjax_path(mapped)
        if not callable(found):
            raise NoCounterpart(f"NAME_MAP names fjax.{mapped}, which does not exist")
        return found, f"fjax.{mapped}"
    if _is_testing_function(op.op):
        return _transplant(op.op), "the OpInfo's wrapper on fjax"
    paths = [op.name] if "." in op.name else [op.name, f"nn.functional.{op.name}"]
    for path in paths:
        found = _fjax_path(path)
        if callable(found) and not isinstance(found, (fjax.dtype, type)):
            return found, f"fjax.{path}"
    method = op.method_variant
    if method is not None:
        if _is_testing_function(method):
            return _transplant(method), "the OpInfo's method wrapper on fjax"
        if hasattr(fjax.Tensor, method.__name__):
            return _method_caller(method.__name__), f"Tensor.{method.__name__}"
    also = f" nor Tensor.{method.__name__}" if method is not None else ""
    raise NoCounterpart(f"fjax has no {' nor '.join(f'fjax.{p}' for p in paths)}{also}{_hint(op.name)}")


def _hermitian_input(op, input, *args, **kwargs):
    """torch's gradcheck_wrapper_hermitian_input without ``.mH`` (checked by its own OpInfo), so
    that a missing ``mH`` does not hide cholesky/eigh/pinv: A + A^H of the (real or complex) input."""
    transposed = input.transpose(-2, -1)
    if input.dtype in (fjax.complex64, fjax.complex128):
        transposed = transposed.conj()
    return op(input + transposed, *args, **kwargs)


# torch's gradcheck wrappers the fjax side replaces (the others run transplanted)
_WRAPPERS = {gradcheck_wrapper_hermitian_input: _hermitian_input}


def _fjax_wrapper(op):
    return _WRAPPERS.get(op.gradcheck_wrapper) or _transplant(op.gradcheck_wrapper)


def _method_variant(op, how: str):
    """The Tensor-method variant to check next to a function variant, or None."""
    method = op.method_variant
    if method is None or how.startswith("Tensor.") or "method wrapper" in how:
        return None
    if opinfo_id(op) in support.METHOD_UNSUPPORTED and not _REPORT_MODE:
        return None
    return _transplant(method) if _is_testing_function(method) else _method_caller(method.__name__)


# ---------------------------------------------------------------------------------------------
# comparison


def _tolerance(oid: str, grad: bool):
    entry = support.TOLERANCES.get(oid, {})
    prefix = "grad_" if grad else ""
    rtol, atol = entry.get(f"{prefix}rtol"), entry.get(f"{prefix}atol")
    return (rtol, atol) if rtol is not None and atol is not None else (None, None)


def _to_torch(t) -> torch.Tensor:
    return torch.from_numpy(np.array(_np(t)))


def compare(fj, th, where: str, kind: str, tol=(None, None), shape_only: bool = False) -> None:
    """fjax's output ``fj`` against torch's ``th``: structure, fields, dtypes, shapes, values."""
    if isinstance(th, torch.Tensor):
        if not isinstance(fj, fjax.Tensor):
            raise Mismatch(kind, f"{where}: fjax returned {type(fj).__name__}, torch a Tensor")
        if _dtype_name(fj.dtype) != _dtype_name(th.dtype):
            raise Mismatch(kind, f"{where}: dtype {_dtype_name(fj.dtype)} != torch {_dtype_name(th.dtype)}")
        if tuple(fj.shape) != tuple(th.shape):
            raise Mismatch(kind, f"{where}: shape {tuple(fj.shape)} != torch {tuple(th.shape)}")
        if shape_only:
            return
        expected = th.detach().resolve_conj().resolve_neg()
        expected = expected.float() if expected.dtype == torch.bfloat16 else expected
        try:
            torch.testing.assert_close(_to_torch(fj), expected, rtol=tol[0], atol=tol[1], equal_nan=True)
        except AssertionError as e:
            raise Mismatch(kind, f"{where}: values differ: {e}") from None
    elif isinstance(th, (tuple, list)):
        if not isinstance(fj, (tuple, list)) or len(fj) != len(th):
            got = f"{type(fj).__name__} of {len(fj)}" if isinstance(fj, (tuple, list)) else type(fj).__name__
            raise Mismatch(kind, f"{where}: fjax returned {got}, torch {type(th).__name__} of {len(th)}")
        fields = getattr(type(th), "__match_args__", None) or getattr(th, "_fields", None)
        if fields and not all(hasattr(fj, f) for f in fields):
            raise Mismatch(kind, f"{where}: fjax's result lacks the fields {fields} of torch's {type(th).__name__}")
        for i, (a, b) in enumerate(zip(fj, th)):
            compare(a, b, f"{where}[{i}]", kind, tol, shape_only)
    elif isinstance(th, (bool, int, float, complex)) and not shape_only:
        if isinstance(fj, fjax.Tensor) or type(fj) is not type(th):
            raise Mismatch(kind, f"{where}: fjax returned {type(fj).__name__} {fj!r}, torch {type(th).__name__} {th!r}")
        same = fj == th or (isinstance(th, (float, complex)) and _scalar_close(fj, th))
        if not same:
            raise Mismatch(kind, f"{where}: {fj!r} != torch {th!r}")
    elif th is None:
        if fj is not None:
            raise Mismatch(kind, f"{where}: fjax returned {type(fj).__name__}, torch None")
    elif isinstance(th, torch.dtype):
        if not isinstance(fj, fjax.dtype) or _dtype_name(fj) != _dtype_name(th):
            raise Mismatch(kind, f"{where}: fjax returned {fj!r}, torch {th!r}")
    elif not shape_only and fj != th:
        raise Mismatch(kind, f"{where}: fjax returned {fj!r}, torch {th!r}")


def _scalar_close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= 1e-5 + 1.3e-6 * abs(b)


def _flatten(out) -> list:
    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _flatten(item)]
    return [out]


def _differentiable(t) -> bool:
    return isinstance(t, torch.Tensor) and t.requires_grad and (t.is_floating_point() or t.is_complex())


def compare_gradients(oid, fj_out, th_out, converter: ToFjax, seed: int, where: str) -> bool:
    """Gradients of sum(w * out) for fixed random w, w.r.t. every input that requires grad.

    False where there is nothing to compare (no differentiable output or input, or torch has
    no derivative)."""
    pairs = converter.grad_pairs
    th_flat, fj_flat = _flatten(th_out), _flatten(fj_out)
    chosen = [i for i, t in enumerate(th_flat) if _differentiable(t)]
    if not pairs or not chosen:
        return False
    gen = torch.Generator().manual_seed(seed)
    weights = [torch.randn(th_flat[i].shape, generator=gen, dtype=th_flat[i].dtype) for i in chosen]
    try:
        th_grads = torch.autograd.grad([th_flat[i] for i in chosen], [t for t, _ in pairs], weights, allow_unused=True)
    except Exception:  # noqa: BLE001 - torch has no gradient here: nothing to compare with
        return False
    for i in chosen:
        if not isinstance(fj_flat[i], fjax.Tensor) or not fj_flat[i].requires_grad:
            raise Mismatch("gradient", f"{where}: output {i} does not require grad in fjax (torch's does)")
    fj_grads = fjax.autograd.grad(
        [fj_flat[i] for i in chosen], [f for _, f in pairs], [ToFjax().tensor(w) for w in weights], allow_unused=True
    )
    tol = _tolerance(oid, grad=True)
    for k, (g_fj, g_th, (t, _)) in enumerate(zip(fj_grads, th_grads, pairs)):
        if g_fj is None and g_th is None:
            continue
        expected = torch.zeros_like(t.detach()) if g_th is None else g_th
        actual = fjax.zeros(tuple(t.shape), dtype=getattr(fjax, _dtype_name(t.dtype))) if g_fj is None else g_fj
        compare(actual, expected, f"{where}: grad of input {k} {tuple(t.shape)}", "gradient", tol)
    return True


# ---------------------------------------------------------------------------------------------
# one OpInfo


@dataclasses.dataclass
class Outcome:
    samples: int = 0  # float32 CPU samples taken (at most N_SAMPLES)
    ran: int = 0  # of which torch ran (the others are skipped)
    how: str = ""  # how fjax's counterpart was found
    stage: str = "samples"  # what was running when it failed
    sample: int = -1
    gradients: int = 0  # samples whose gradients were compared


def sample_order(oid: str, n: int, extra: int | None) -> list[int]:
    """The order in which ``run_opinfo`` tries the ``n`` samples of OpInfo ``oid``: the first, then
    (with ``extra``) the ``extra`` rotated by the day of the year, then the others (tried only
    where torch rejects one of those)."""
    rest = list(range(1, n))
    if extra is None or len(rest) <= extra:
        return [0, *rest][:n]
    start = (DAY + zlib.crc32(oid.encode())) % len(rest)
    chosen = sorted((rest * 2)[start : start + extra])
    return [0, *chosen, *(i for i in rest if i not in chosen)]


def run_opinfo(
    op, outcome: Outcome, n_samples: int = N_SAMPLES, method_failures: list | None = None, extra: int | None = None
) -> None:
    """Raises on the first sample where fjax does not match torch.

    ``method_failures``: a list collects the first failure of the Tensor-method variant instead
    (the report counts the function variant; pytest fails on either). ``extra``: check only the
    first sample torch runs and ``extra`` more (``sample_order``); None checks every sample.
    """
    oid = opinfo_id(op)
    if oid in support.HARNESS_LIMITS:
        return
    seed = zlib.crc32(oid.encode())
    torch.manual_seed(seed)
    random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(
            itertools.islice(op.sample_inputs("cpu", torch.float32, requires_grad=op.supports_autograd), n_samples)
        )
    outcome.samples = len(samples)
    if not samples:
        return
    fj_fn = method = None
    fj_wrapper = _fjax_wrapper(op)
    shape_only = oid in support.SHAPE_ONLY
    for i in sample_order(oid, len(samples), extra):
        if extra is not None and outcome.ran > extra:
            break
        sample = samples[i]
        outcome.sample = i
        where = f"{oid} sample {i}"
        outcome.stage = "convert"
        converter = ToFjax()  # before torch runs: in-place ops change the sample
        try:
            fj_in, fj_args, fj_kwargs = converter((sample.input, sample.args, sample.kwargs))
            m_in, m_args, m_kwargs = ToFjax()((sample.input, sample.args, sample.kwargs))  # for the method
            unconvertible = None
        except NoArgument as e:  # counts only where torch accepts the sample
            unconvertible = e
        outcome.stage = "torch"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                th_out = sample.output_process_fn_grad(
                    op.gradcheck_wrapper(op.op, sample.input, *sample.args, **sample.kwargs)
                )
        except Exception:  # noqa: BLE001 - torch rejects this sample: skip it
            continue
        outcome.ran += 1
        if unconvertible is not None:
            outcome.stage = "convert"
            raise unconvertible
        if fj_fn is None:  # once torch ran a sample: CUDA-only OpInfos do not count against fjax
            outcome.stage = "resolve"
            fj_fn, outcome.how = resolve(op)
            method = _method_variant(op, outcome.how)
        outcome.stage = "forward"
        fj_out = _transplant(sample.output_process_fn_grad)(fj_wrapper(fj_fn, fj_in, *fj_args, **fj_kwargs))
        outcome.stage = "compare"
        compare(fj_out, th_out, where, "forward", _tolerance(oid, grad=False), shape_only)
        if not shape_only:
            outcome.stage = "gradient"
            outcome.gradients += compare_gradients(oid, fj_out, th_out, converter, seed + i, where)
        if method is not None:
            outcome.stage = "method"
            try:
                m_out = _transplant(sample.output_process_fn_grad)(fj_wrapper(method, m_in, *m_args, **m_kwargs))
                compare(m_out, th_out, f"{where} (Tensor method)", "method", _tolerance(oid, grad=False), shape_only)
            except Exception as e:
                if method_failures is None:
                    raise
                method_failures.append((e, outcome.sample))
                method = None


# ---------------------------------------------------------------------------------------------
# pytest


def _param(op):
    oid = opinfo_id(op)
    reason = support.UNSUPPORTED.get(oid) or support.HARNESS_LIMITS.get(oid)
    marks = [pytest.mark.skip(reason=reason)] if reason else []
    return pytest.param(op, id=oid, marks=marks)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("op", [_param(op) for op in OPINFOS])
def test_opinfo(op):
    outcome = Outcome()
    run_opinfo(op, outcome, extra=EXTRA)
    if outcome.samples == 0:
        pytest.skip("no float32 CPU samples")
    if outcome.ran == 0:
        pytest.skip("torch raises on every float32 CPU sample")


def test_support_lists_name_real_opinfos():
    ids = {opinfo_id(op) for op in OPINFOS}
    names = {op.name for op in OPINFOS}
    for table in ("NAME_MAP", "SHAPE_ONLY", "TOLERANCES", "HARNESS_LIMITS", "METHOD_UNSUPPORTED", "UNSUPPORTED"):
        stale = sorted(k for k in getattr(support, table) if k not in ids and k not in names)
        assert not stale, f"opinfo_support.{table} names no float32 CPU OpInfo: {stale}"


# ---------------------------------------------------------------------------------------------
# report mode


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:160]


def _raw_jax(e: BaseException) -> bool:
    """The exception comes from inside JAX: fjax neither checked nor translated the input."""
    if (type(e).__module__ or "").split(".")[0] in ("jax", "jaxlib"):
        return True
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and any(p in frames[-1].filename for p in ("/jax/", "/jaxlib/"))


def classify(e: BaseException, outcome: Outcome) -> tuple[str, str]:
    """(cause group, detail) for a failure."""
    if isinstance(e, NoCounterpart) and outcome.stage == "method":
        return "Tensor-method variant", str(e).splitlines()[0]
    if isinstance(e, NoArgument):
        return "no counterpart for an argument value", str(e).splitlines()[0]
    if isinstance(e, NoCounterpart):
        return "no counterpart", str(e).splitlines()[0]
    if isinstance(e, Mismatch):
        group = {"forward": "forward mismatch", "gradient": "gradient mismatch", "method": "Tensor-method variant"}
        return group[e.kind], " ".join(str(e).split())[:200]
    message = str(e)
    missing = ("'fjax", "Tensor' object", "type object 'Tensor'", "fjax.")
    if outcome.stage == "method" and isinstance(e, (AttributeError, TypeError)):
        return "Tensor-method variant", _first_line(e)
    if isinstance(e, AttributeError) and any(m in message for m in missing):
        return "no counterpart", _first_line(e)
    stage = {"forward": "forward", "gradient": "backward", "method": "Tensor method", "convert": "input conversion"}
    where = stage.get(outcome.stage, outcome.stage)
    if isinstance(e, NotImplementedError):
        return f"NotImplementedError ({where})", _first_line(e)
    if _raw_jax(e):
        return f"raw JAX error ({where})", _first_line(e)
    if isinstance(e, TypeError) and "unexpected keyword argument" in message:
        return f"TypeError for an unsupported keyword, not NotImplementedError ({where})", _first_line(e)
    if isinstance(e, fjax.OpError):
        return f"OpError: fjax rejects an input torch accepts ({where})", _first_line(e)
    return f"{type(e).__name__} ({where})", _first_line(e)


DEFECT_GROUPS = ("forward mismatch", "gradient mismatch", "raw JAX error")


def _short(group: str, detail: str, limit: int = 160) -> str:
    text = f"{group}: {detail.split(': ', 1)[1] if detail.startswith('sample ') else detail}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def report(substring: str | None, emit_skips: bool, n_samples: int) -> int:
    """Every OpInfo, ignoring the skip lists; prints the pass rate and the failures by cause."""
    global _REPORT_MODE
    from tests import conftest  # noqa: F401 - JAX's persistent compilation cache, as under pytest

    _REPORT_MODE = True
    started = time.perf_counter()
    failures: dict[str, list] = defaultdict(list)
    method_groups: dict[str, list] = defaultdict(list)
    passed, no_samples, torch_only, limits, timings, forward_only = [], [], [], [], [], []
    ops = [op for op in OPINFOS if substring is None or substring in opinfo_id(op)]
    for n, op in enumerate(ops):
        oid = opinfo_id(op)
        outcome = Outcome()
        method_failures: list = []
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run_opinfo(op, outcome, n_samples, method_failures)
        except Exception as e:  # noqa: BLE001
            group, detail = classify(e, outcome)
            failures[group].append((oid, f"sample {outcome.sample}: {detail}" if outcome.sample >= 0 else detail))
            status = group
        else:
            if oid in support.HARNESS_LIMITS:
                limits.append(oid)
                status = "not comparable by this harness"
            elif outcome.samples == 0:
                no_samples.append(oid)
                status = "no samples"
            elif outcome.ran == 0:
                torch_only.append(oid)
                status = "torch raises on every sample"
            else:
                passed.append(oid)
                status = "pass"
                if not outcome.gradients:
                    forward_only.append(oid)
                    status += " (forward only: no gradient to compare)"
        for e, sample in method_failures:
            group, detail = classify(e, dataclasses.replace(outcome, stage="method"))
            method_groups[group].append((oid, f"sample {sample}: {detail}"))
            status += " (Tensor-method variant fails)"
        timings.append((time.perf_counter() - t0, oid))
        print(f"[{n + 1}/{len(ops)}] {oid}: {status} ({timings[-1][0]:.2f}s)", file=sys.stderr, flush=True)

    with_samples = len(ops) - len(no_samples) - len(limits)
    runnable = with_samples - len(torch_only)
    failed = sum(len(v) for v in failures.values())
    print(f"\nOpInfos supporting float32 on CPU: {len(ops)} (first {n_samples} samples each)")
    print(f"  not comparable by this harness (HARNESS_LIMITS, excluded): {len(limits)} {limits}")
    print(f"  with float32 CPU samples: {with_samples}  (without any: {no_samples})")
    print(f"  torch raises on every sample (CUDA-only): {len(torch_only)} {torch_only}")
    print(f"  PASS forward+gradient: {len(passed)} / {with_samples} = {len(passed) / max(with_samples, 1):.1%}")
    print(f"  (of the OpInfos torch runs on CPU: {len(passed)} / {runnable} = {len(passed) / max(runnable, 1):.1%})")
    print(f"  of the passing, no gradient to compare (integer/bool outputs, no autograd): {len(forward_only)}")
    print(f"  failing: {failed}; Tensor-method variant failing: {sum(len(v) for v in method_groups.values())}")
    order = sorted(failures, key=lambda g: (not g.startswith(DEFECT_GROUPS), g))
    for title, groups, keys in (
        ("", failures, order),
        ("(not counted above) ", method_groups, sorted(method_groups)),
    ):
        for group in keys:
            defect = "  <-- DEFECTS" if group.startswith(DEFECT_GROUPS) else ""
            print(f"\n== {title}{group}: {len(groups[group])}{defect}")
            for oid, detail in groups[group]:
                print(f"  {oid}: {' '.join(detail.split())[:300]}")
    print(f"\nslowest: {', '.join(f'{o} {t:.1f}s' for t, o in sorted(timings, reverse=True)[:10])}")
    print(f"total time: {time.perf_counter() - started:.0f}s")
    if emit_skips:
        for name, groups, keys in (
            ("UNSUPPORTED", failures, order),
            ("METHOD_UNSUPPORTED", method_groups, method_groups),
        ):
            print(f"\n{name} = {{")
            for group in keys:
                print(f"    # --- {group} ---")
                for oid, detail in groups[group]:
                    print(f"    {oid!r}: {_short(group, ' '.join(detail.split()))!r},")
            print("}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--report", action="store_true", help="run every OpInfo, ignoring the skip list")
    parser.add_argument("-k", dest="substring", help="only OpInfo ids containing this")
    parser.add_argument("--emit-skips", action="store_true", help="print an UNSUPPORTED dict of the failures")
    parser.add_argument("--samples", type=int, default=N_SAMPLES)
    args = parser.parse_args()
    if not args.report:
        parser.error("script mode needs --report (run the tests with pytest)")
    sys.exit(report(args.substring, args.emit_skips, args.samples))
