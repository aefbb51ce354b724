"""PipelineStack in nn.Graph on a DP2 x TP2 x PP2 mesh with ZeRO-1: a GPT whose blocks are a GPipe
pipeline over ``pipe``, Megatron tensor parallelism over ``model`` and data parallelism with
sharded optimizer state over ``data`` trains with the one-device losses and weights."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
from test_pipeline_stack import _train, reference

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "examples"))
from gpt import TENSOR_PARALLEL  # noqa: E402


def test_pipeline_stack_dp2_tp2_pp2_zero1_matches_one_device():
    seed, data, want = reference()  # (the one-device run test_pipeline_stack compares with, when it ran)
    mesh = {"mesh": {"data": 2, "model": 2, "pipe": 2}, "tensor_parallel": TENSOR_PARALLEL, "zero_stage": 1}
    got = _train(seed, data, mesh)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, err_msg=f"seed {seed}")
    for k, v in want[1].items():
        np.testing.assert_allclose(got[1][k], v, rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}: {k}")
