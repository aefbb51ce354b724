"""Public ops show torch's signatures: ``inspect.signature`` and ``help()`` name the parameters
torch names, in torch's order, so keyword calls written for torch work and IDEs show the truth.

The oracle is torch itself: ``inspect.signature`` where torch's function is Python
(``torch.nn.functional``, layers), else every overload its docstring documents
(``add(input, other, *, alpha=1, out=None) -> Tensor``).
"""

from __future__ import annotations

import inspect
import re

import pytest
import torch
import torch.nn.functional as TF

import fjax
import fjax.nn.functional as F
from fjax import nn

# Parameters torch has that fjax has no use for: output buffers, memory layouts, legacy
# reduction flags, cuDNN switches, named tensors, pickling knobs.
_TORCH_ONLY = {
    "out",
    "layout",
    "pin_memory",
    "memory_format",
    "names",
    "cudnn_enabled",
    "pickle_module",
    "pickle_protocol",
    "pickle_load_args",
    "_use_new_zipfile_serialization",
    "_disable_byteorder_record",
    "_stacklevel",
    "_random_samples",
}


_OVERRIDES = torch.overrides.get_testing_overrides()

# Where the oracle misdescribes torch: each entry was checked by calling torch.
_ORACLE_WRONG = {
    "fjax.relu": "overrides table lists inplace; torch.relu(x, inplace=True) raises TypeError",
    "fjax.selu": "overrides table lists inplace; torch.selu(x, inplace=True) raises TypeError",
    "fjax.celu": "overrides table lists inplace; torch.celu(x, 1.0, inplace=True) raises TypeError",
    "fjax.threshold": "overrides table lists inplace; torch.threshold(x, 0.1, 0., inplace=True) raises TypeError",
    "fjax.rrelu": "overrides table lists inplace; torch.rrelu(x, inplace=True) raises TypeError",
    "fjax.dropout": "overrides table lists inplace; torch.dropout(x, 0.5, True, inplace=True) raises TypeError",
    "fjax.logsumexp": "overrides table lists names, not dim; torch.logsumexp(x, names=...) raises TypeError",
    "fjax.adaptive_max_pool1d": "overrides table says inputs; torch.adaptive_max_pool1d(inputs=x, ...) raises",
    "fjax.broadcast_to": "docstring says shape; torch.broadcast_to(x, shape=s) raises, it takes size=",
    "fjax.true_divide": "docstring says (dividend, divisor); torch rejects them, it takes input=, other=",
    "fjax.Tensor.uniform_": "torch names its bounds from/to; from is a Python keyword, no def can name it",
    "fjax.Tensor.random_": "torch's bounds are from/to; from is a Python keyword (random_ takes it in **kwargs)",
    "fjax.Tensor.atanh_": "docstring says atanh_(other); torch's atanh_ takes no arguments",
    "fjax.Tensor.arctanh_": "docstring says arctanh_(other); torch's arctanh_ takes no arguments",
    "fjax.orgqr": "docstring says (input, tau); torch.orgqr(x, tau=t) raises, it takes input2=",
    "fjax.alpha_dropout": "overrides table lists inplace; torch.alpha_dropout(x, 0.5, True, inplace=True) raises",
    "fjax.nuclear_norm": "overrides table says (input, p, dim, ...); torch.nuclear_norm(x, p='fro') raises",
    "fjax.unsafe_split_with_sizes": "overrides table says split_size_or_sections; torch takes split_sizes=",
    "fjax.Tensor.frexp": "docstring shows frexp(input); torch's x.frexp() takes no arguments",
    "fjax.Tensor.put": "docstring lists input first; torch's x.put(index, source) takes the index first",
    "fjax.Tensor.map_": "docstring says map_(tensor, callable); torch's x.map_(tensor=...) raises, it takes other=",
    "fjax.Tensor.masked_scatter": "docstring says masked_scatter(mask, tensor); torch takes source=",
    "fjax.Tensor.narrow_copy": "docstring says narrow_copy(dimension, ...); torch's x.narrow_copy(dimension=0) raises",
    **{
        f"fjax.Tensor.{name}": f"docstring says {name}(split_size_or_sections); torch's method takes it positionally"
        for name in ("hsplit", "vsplit", "dsplit")
    },
    "fjax.view_copy": "overrides table lists only view_copy(self, dtype); torch.view_copy(x, size=(2, 2)) works",
    "fjax.Tensor.new_empty_strided": "docstring shows dtype positional; x.new_empty_strided(s, st, float64) raises",
    "fjax.Tensor.resize_": "overrides table says (memory_format, *, sizes); torch's x.resize_(2, 2) takes sizes first",
    "fjax.Tensor.resize_as_": "overrides table says (tensor, memory_format); x.resize_as_(the_template=y) works",
    "fjax.ormqr": "docstring says (input, tau, other); torch.ormqr rejects tau=/other=, it takes input2=, input3=",
    "fjax.Tensor.histogram": "docstring says histogram(input, bins); torch's x.histogram(2) takes bins first",
    "fjax.convolution": "overrides table says output_adding; torch.convolution takes output_padding= and rejects it",
    "fjax.max_pool1d_with_indices": "overrides table lists return_indices; torch.max_pool1d_with_indices rejects it",
    "fjax.embedding_bag": "overrides table lists F.embedding_bag's; torch.embedding_bag takes (weight, indices, ...)",
}
# torch.Tensor docstrings whose parameter names torch's methods reject: each takes fjax's name
# (x.mul(other=y), not value=; x.take(index=i), not indices=; x.where(c, other=y), not y=).
_ORACLE_WRONG.update(
    {
        f"fjax.Tensor.{name}": f"docstring misnames a parameter; torch's Tensor.{name} takes fjax's name"
        for name in (
            "bmm broadcast_to div div_ divide divide_ dot floor_divide floor_divide_ fmod fmod_ index_copy index_copy_ "
            "matmul mul mul_ multiply multiply_ narrow remainder remainder_ take tensor_split true_divide true_divide_ "
            "where"
        ).split()
    }
)
# torch.Tensor docstrings that show ``dtype``/``decimals`` positional; torch's methods take them keyword-only.
_ORACLE_WRONG.update(
    {
        f"fjax.Tensor.{name}": f"docstring shows a positional dtype/decimals; torch's Tensor.{name} rejects it"
        for name in "cumsum cumsum_ cumprod cumprod_ sum prod nansum round round_".split()
    }
)


def _split_top(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in parts + [cur] if p.strip()]


def _doc_overloads(obj, name):
    """Every ``name(params) -> ...`` signature torch's docstring documents, as (positional
    names, keyword-only names)."""
    out = []
    for match in re.finditer(rf"(?<![\w.]){re.escape(name)}\((.*?)\)\s*->", obj.__doc__ or "", re.S):
        positional, keyword, star = [], [], False
        for part in _split_top(match.group(1)):
            if part in ("*", r"\*"):
                star = True
                continue
            if part == "/":
                continue
            pname = re.split(r"[=:\s]", part.lstrip("\\*"))[0]
            if pname == "self":
                pname = "input"
            (keyword if star or part.startswith("*") else positional).append(pname)
        out.append((positional, keyword))
    return out


def _torch_overloads(obj, name):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        overloads = _doc_overloads(obj, name)
        if overloads or obj not in _OVERRIDES:
            return overloads
        sig = inspect.signature(_OVERRIDES[obj])  # torch's own table of its builtins' parameters
    ps = sig.parameters.values()
    if [p.kind for p in ps] == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return []  # torch's own signature says nothing
    positional = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword = [p.name for p in ps if p.kind is p.KEYWORD_ONLY]
    return [(positional, keyword)]


def _torch_method_overloads(meth, name):
    """Like ``_torch_overloads`` for ``torch.Tensor.<name>``, without ``self`` (which torch's
    method docstrings leave out)."""
    try:
        ps = list(inspect.signature(meth).parameters.values())[1:]
    except (TypeError, ValueError):
        overloads = _doc_overloads(meth, name)
    else:
        positional = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        overloads = [(positional, [p.name for p in ps if p.kind is p.KEYWORD_ONLY])]
        if [p.kind for p in ps] == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
            overloads = [([], ["args", "kwargs"])]
    if ([], ["args", "kwargs"]) in overloads:
        return []  # torch's own signature says nothing
    return overloads


def _mismatch(fn, overloads, method=False):
    """None when ``fn``'s signature serves one of torch's overloads: torch's positional
    parameters are its leading ones, in order, and every keyword-only one of torch's is a
    parameter of ``fn``. Else the reason. A ``method``'s first parameter (self) is left out."""
    ps = list(inspect.signature(fn).parameters.values())[1 if method else 0 :]
    if any(p.kind is p.VAR_POSITIONAL and p.name == "args" for p in ps) and any(p.kind is p.VAR_KEYWORD for p in ps):
        return "signature is (*args, **kwargs)"
    names = [p.name for p in ps]
    leading = [
        p.name
        for p in ps
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) and p.name not in _TORCH_ONLY
    ]
    for positional, keyword in overloads:
        positional = [n for n in positional if n not in _TORCH_ONLY]
        keyword = [n for n in keyword if n not in _TORCH_ONLY]
        if leading[: len(positional)] == positional and all(k in names for k in keyword):
            return None
    shown = "; ".join(f"({', '.join(p)}{', *, ' + ', '.join(k) if k else ''})" for p, k in overloads)
    return f"fjax {inspect.signature(fn)} vs torch {shown}"


def _method_pairs():
    """``fjax.Tensor.<name>`` against ``torch.Tensor.<name>`` for every public method both have."""
    pairs = []
    for name in sorted(dir(fjax.Tensor)):
        fn, tfn = inspect.getattr_static(fjax.Tensor, name), getattr(torch.Tensor, name, None)
        if name.startswith("_") or isinstance(fn, (staticmethod, classmethod, property)) or not callable(fn):
            continue
        if tfn is None or isinstance(tfn, type) or not callable(tfn):
            continue
        overloads = _torch_method_overloads(tfn, name)
        if overloads:
            pairs.append((f"fjax.Tensor.{name}", fn, overloads))
    return pairs


def _pairs():
    pairs = []
    for prefix, mod, tmod in (("fjax", fjax, torch), ("fjax.nn.functional", F, TF)):
        for name in sorted(dir(mod)):
            fn = getattr(mod, name)
            if name.startswith("_") or inspect.ismodule(fn) or isinstance(fn, type) or not callable(fn):
                continue
            tfn = getattr(tmod, name, None)
            if tfn is None or inspect.ismodule(tfn) or isinstance(tfn, type) or not callable(tfn):
                continue
            overloads = _torch_overloads(tfn, name)
            if overloads:
                pairs.append((f"{prefix}.{name}", fn, overloads))
    for name in sorted(dir(nn)):
        cls, tcls = getattr(nn, name), getattr(torch.nn, name, None)
        if isinstance(cls, type) and isinstance(tcls, type) and not name.startswith("_"):
            tsig = inspect.signature(tcls.__init__)
            varargs = [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]
            if [p.kind for p in tsig.parameters.values()][1:] == varargs:
                continue  # torch's own signature says nothing
            positional = [p.name for p in tsig.parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD][1:]
            keyword = [p.name for p in tsig.parameters.values() if p.kind is p.KEYWORD_ONLY]
            pairs.append((f"fjax.nn.{name}", cls, [(positional, keyword)]))
    return pairs


PAIRS = _pairs()
METHOD_PAIRS = _method_pairs()


def test_the_oracle_covers_the_api():
    assert len(PAIRS) > 400, len(PAIRS)


@pytest.mark.parametrize("name,fn,overloads", PAIRS, ids=[p[0] for p in PAIRS])
def test_signature_matches_torch(name, fn, overloads):
    if name in _ORACLE_WRONG:
        pytest.skip(_ORACLE_WRONG[name])
    reason = _mismatch(fn, overloads)
    assert reason is None, f"{name}: {reason}"


def test_the_oracle_covers_the_tensor_methods():
    assert len(METHOD_PAIRS) > 300, len(METHOD_PAIRS)


@pytest.mark.parametrize("name,fn,overloads", METHOD_PAIRS, ids=[p[0] for p in METHOD_PAIRS])
def test_tensor_method_signature_matches_torch(name, fn, overloads):
    if name in _ORACLE_WRONG:
        pytest.skip(_ORACLE_WRONG[name])
    reason = _mismatch(fn, overloads, method=True)
    assert reason is None, f"{name}: {reason}"
