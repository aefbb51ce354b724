"""Every registered op against torch 2.13 on fresh random inputs: values, dtypes, gradients.

Set FJAX_TEST_SEED to replay a failure (the seed is in every failure message). Under CI each op
runs its first sample and one more, rotated daily (``FJAX_ORACLE_EXTRA_SAMPLES`` sets how many).
"""

from __future__ import annotations

import importlib
import os
import pathlib
import random
import time
import zlib

import pytest

from fjax.ops import OPS

from .helper import run_case

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))
SAMPLES: dict = {}
for path in sorted(pathlib.Path(__file__).parent.glob("samples_*.py")):
    module = importlib.import_module(f".{path.stem}", __package__)
    for name, cases in module.SAMPLES.items():
        assert name not in SAMPLES, f"op {name!r} has samples in two files"
        SAMPLES[name] = cases


def _dtypes(index, case):
    """float32 for every sample; float64 too for each op's first sample (it doubles compile time)."""
    return case.options.get("_dtypes", ("float32", "float64") if index == 0 else ("float32",))


# CI keeps each op's first sample (in float32 and float64) and FJAX_ORACLE_EXTRA_SAMPLES more,
# rotated daily so every sample runs over a week of CI runs (a choice by date, not by SEED, so
# every xdist worker collects the same tests); locally every sample runs.
EXTRA = int(os.environ.get("FJAX_ORACLE_EXTRA_SAMPLES", 1 if os.environ.get("CI") else 10**6))
DAY = int(time.strftime("%j"))


def _chosen(name, n):
    """The sample indices of op ``name`` (``n`` samples) this run checks."""
    rest = list(range(1, n))
    if len(rest) <= EXTRA:
        return [0, *rest]
    start = (DAY + zlib.crc32(name.encode())) % len(rest)
    return [0, *sorted((rest * 2)[start : start + EXTRA])]


CASES = [
    pytest.param(name, i, dtype, id=f"{name}-{i}-{dtype}")
    for name in sorted(SAMPLES)
    for i in _chosen(name, len(SAMPLES[name]))
    for dtype in _dtypes(i, SAMPLES[name][i])
]


def test_every_op_has_samples():
    missing = sorted(set(OPS) - set(SAMPLES))
    assert not missing, f"ops registered without oracle samples: {missing}"
    unknown = sorted(set(SAMPLES) - set(OPS))
    assert not unknown, f"samples for ops that are not registered: {unknown}"


def test_op_table_size():
    assert len(OPS) >= 150, f"the op table has {len(OPS)} ops"


@pytest.mark.parametrize("name, index, dtype", CASES)
def test_op_matches_torch(name, index, dtype):
    run_case(name, SAMPLES[name][index], dtype, SEED + index)
