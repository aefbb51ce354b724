"""torch's public surface, name by name: every public name torch 2.13 defines in the namespaces
programs use has an fjax counterpart at the same dotted path, or belongs to a family fjax will not
provide (``EXCLUDED``, each with its reason). ``PENDING`` names what is still missing: the test fails
for a missing name not listed there, and for a listed name that now exists (so the list only
shrinks). Under ``mock_torch`` an excluded or pending name raises ``NotImplementedError`` naming it.

Signatures of the names both have are compared where torch's are Python (``inspect.signature``):
torch's positional parameters lead fjax's in order and its keyword-only ones are accepted.
``tests/test_signatures.py`` does the same for torch's builtins (top level, Tensor, functional, nn).

``python tests/test_public_surface.py`` prints the coverage table and the missing names.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import types

import pytest
import torch

import fjax
from fjax._missing import EXCLUDED, exclusion_reason

# The namespaces programs touch (torch path; fjax's is the same with ``fjax``).
NAMESPACES = [
    "torch",
    "torch.Tensor",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.nn.utils",
    "torch.nn.utils.rnn",
    "torch.nn.utils.parametrize",
    "torch.nn.utils.parametrizations",
    "torch.nn.utils.prune",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torch.autograd",
    "torch.autograd.functional",
    "torch.func",
    "torch.distributions",
    "torch.utils.data",
    "torch.utils.benchmark",
    "torch.cuda",
    "torch.backends",
    "torch.accelerator",
    "torch.linalg",
    "torch.special",
    "torch.fft",
    "torch.amp",
] + sorted(
    f"torch.nn.modules.{m.name}"  # the module paths code imports from (torch.nn.modules.linear, ...)
    for m in pkgutil.iter_modules(importlib.import_module("torch.nn.modules").__path__)
    if not m.name.startswith("_")
)

# Missing names still to provide (the ratchet: a name here that exists fails the test, to be removed).
PENDING: set[str] = set()

_FOREIGN = ("typing", "builtins", "collections", "abc", "dataclasses", "numbers", "math", "functools", "warnings")


def _resolve(path: str):
    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: i + 1]))
    return obj


def public_names(namespace: str) -> list[str]:
    """torch's public names in ``namespace``: ``__all__`` and the torch-defined public names it
    leaves out (``torch.set_default_dtype``), else ``dir``;
    never submodules (each namespace is counted on its own; torch.backends' are its backends) or
    typing/stdlib re-exports."""
    obj = _resolve(namespace)
    if namespace == "torch.backends":  # every backend, not just those other tests happened to import
        for sub in pkgutil.iter_modules(obj.__path__):
            if not sub.name.startswith("_"):
                importlib.import_module(f"{namespace}.{sub.name}")
    listed = set(getattr(obj, "__all__", ()) if isinstance(obj, types.ModuleType) else ())
    out = []
    for name in {n for n in dir(obj) if not n.startswith("_")} | listed:
        try:
            value = inspect.getattr_static(obj, name) if isinstance(obj, type) else getattr(obj, name)
        except AttributeError:
            continue
        if isinstance(value, types.ModuleType) and namespace != "torch.backends":  # backends are modules
            continue
        owner = getattr(value, "__module__", None)
        if (owner or "").split(".")[0] in _FOREIGN or (value is torch.Tensor and namespace != "torch"):
            continue  # typing/stdlib re-exports
        if isinstance(obj, types.ModuleType) and name not in listed:
            if listed and (owner or type(value).__module__) != namespace:
                continue  # a module with __all__: also the names it defines itself that __all__ leaves out
            if type(value).__module__ == "builtins" and not callable(value):
                continue  # data: docstring fragments, mode tables
        out.append(name)
    return sorted(out)


def _fjax_namespace(namespace: str):
    try:
        return _resolve("fjax" + namespace[len("torch") :])
    except (ImportError, AttributeError):
        return None


def coverage(namespace: str) -> tuple[list[str], list[str], list[str]]:
    """(present, missing, excluded) names of ``namespace``."""
    target = _fjax_namespace(namespace)
    present, missing, skipped = [], [], []
    for name in public_names(namespace):
        if exclusion_reason(namespace, name):
            skipped.append(name)
        elif target is not None and hasattr(target, name):
            present.append(name)
        else:
            missing.append(name)
    return present, missing, skipped


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_public_name_has_a_counterpart(namespace):
    present, missing, _ = coverage(namespace)
    unexpected = [n for n in missing if f"{namespace}.{n}" not in PENDING]
    assert not unexpected, f"{namespace}: no fjax counterpart and no exclusion for {unexpected}"
    done = [n for n in present if f"{namespace}.{n}" in PENDING]
    assert not done, f"{namespace}: {done} exist now: take them off PENDING"


def test_coverage_is_at_least_98_percent():
    have = sum(len(coverage(ns)[0]) for ns in NAMESPACES)
    total = have + sum(len(coverage(ns)[1]) for ns in NAMESPACES)
    assert have / total >= 0.98, f"{have}/{total} = {have / total:.1%} of torch's non-excluded public names"


def test_every_exclusion_is_used_and_has_a_reason():
    for ns, pattern, reason in EXCLUDED:
        assert len(reason) > 20, pattern
        hits = [n for namespace in NAMESPACES if re.fullmatch(ns, namespace) for n in public_names(namespace)]
        assert any(re.fullmatch(pattern, n) for n in hits), f"exclusion {pattern!r} matches no torch name"


def _python_signature(obj):
    try:
        if isinstance(obj, type):
            return inspect.signature(obj.__init__) if "__init__" in vars(obj) else None
        return inspect.signature(obj) if inspect.isfunction(obj) else None
    except (TypeError, ValueError):
        return None


def _signature_pairs():
    """(dotted name, fjax object, torch signature) for names both have where torch's is Python,
    outside the namespaces ``test_signatures.py`` compares."""
    pairs = []
    for namespace in NAMESPACES:
        if namespace in ("torch", "torch.Tensor", "torch.nn.functional", "torch.nn"):
            continue
        tmod, fmod = _resolve(namespace), _fjax_namespace(namespace)
        for name in coverage(namespace)[0]:
            tobj, fobj = getattr(tmod, name), getattr(fmod, name)
            tsig = _python_signature(tobj)
            if tsig is None or not callable(fobj) or isinstance(tobj, type) != isinstance(fobj, type):
                continue
            kinds = [p.kind for p in tsig.parameters.values()]
            if inspect.Parameter.VAR_POSITIONAL in kinds and inspect.Parameter.VAR_KEYWORD in kinds:
                continue  # torch's own signature says nothing
            pairs.append((f"{namespace}.{name}", fobj, tsig, isinstance(tobj, type)))
    return pairs


SIGNATURE_PAIRS = _signature_pairs()

# Where OneFlow's signature and torch's disagree and fjax keeps OneFlow's positional order (torch's
# names are still accepted as keywords).
_ONEFLOW_FIRST = {
    "torch.optim.lr_scheduler.CosineAnnealingWarmRestarts": "OneFlow's (T_0, T_mult, eta_min, decay_rate, "
    "restart_limit, last_step); torch's last_epoch is keyword-only in fjax",
    "torch.optim.lr_scheduler.PolynomialLR": "OneFlow's (decay_batch, end_learning_rate, power, cycle); torch's "
    "total_iters is accepted as a keyword (and steps=)",
}


@pytest.mark.parametrize("name,fobj,tsig,is_class", SIGNATURE_PAIRS, ids=[p[0] for p in SIGNATURE_PAIRS])
def test_signature_accepts_torchs_parameters(name, fobj, tsig, is_class):
    from .test_signatures import _TORCH_ONLY

    ps = [p for p in list(tsig.parameters.values())[1 if is_class else 0 :] if p.name not in _TORCH_ONLY]
    ps = [p for p in ps if not p.name.startswith("_")]  # torch's private knobs
    positional = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword = [p.name for p in ps if p.kind is p.KEYWORD_ONLY]
    fsig = inspect.signature(fobj.__init__ if is_class else fobj)
    fps = [p for p in list(fsig.parameters.values())[1 if is_class else 0 :] if p.name not in _TORCH_ONLY]
    fps = [p for p in fps if not p.name.startswith("_")]
    if name in _ONEFLOW_FIRST:
        pytest.skip(_ONEFLOW_FIRST[name])
    if any(p.kind is p.VAR_KEYWORD for p in fps) and any(p.kind is p.VAR_POSITIONAL for p in fps) and ps:
        pytest.fail(f"{name}: fjax's signature is (*args, **kwargs); torch's is {tsig}")
    names = [p.name for p in fps]
    lead = [p.name for p in fps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    assert lead[: len(positional)] == positional, f"{name}: fjax {fsig} vs torch {tsig}"
    missing = [k for k in keyword if k not in names]
    assert not missing or any(p.kind is p.VAR_KEYWORD for p in fps), (
        f"{name}: torch's keyword-only {missing} not accepted: fjax {fsig} vs torch {tsig}"
    )


def test_mock_torch_names_a_missing_torch_name():
    """A name fjax lacks, reached through ``import torch`` under mock_torch, raises NotImplementedError
    naming it (and, for an excluded family, why), never a bare AttributeError deep in a program;
    it is also an AttributeError, so ``hasattr`` answers False."""
    import importlib

    from fjax.mock_torch import enable

    with enable():
        mocked = importlib.import_module("torch")
        cases = [
            (mocked, "torch.quantize_per_tensor", "quantization"),
            (importlib.import_module("torch.cuda"), "torch.cuda.jiterator", "CUDA runtime"),
            (importlib.import_module("torch.nn.functional"), "torch.nn.functional.no_such_op", None),
            (mocked.ones(2), "torch.Tensor.int_repr", "quantization"),
        ]
        for owner, path, reason in cases:
            name = path.rpartition(".")[2]
            with pytest.raises(NotImplementedError, match=re.escape(f"'{path}'") + (f".*{reason}" if reason else "")):
                getattr(owner, name)
            assert not hasattr(owner, name)
    with pytest.raises(AttributeError) as info:  # without mock_torch: Python's own message
        getattr(fjax.ones(2), "int_repr")  # noqa: B009
    assert not isinstance(info.value, NotImplementedError) and "int_repr" in str(info.value)


if __name__ == "__main__":
    rows, total_have, total_all = [], 0, 0
    for ns in NAMESPACES:
        present, missing, skipped = coverage(ns)
        n = len(present) + len(missing)
        total_have, total_all = total_have + len(present), total_all + n
        rows.append(f"| {ns} | {len(present)}/{n} | {len(present) / max(n, 1):.0%} | {len(skipped)} |")
        if missing:
            print(f"{ns} missing: {' '.join(missing)}")
    print("\n| namespace | present | share | excluded |\n|---|---|---|---|")
    print("\n".join(rows))
    print(f"| all | {total_have}/{total_all} | {total_have / total_all:.1%} | |")
