"""A OneFlow-style pipeline script, run as OneFlow runs it: only the import says fjax.

Two stages of a small classifier of 20-feature records: an encoder on rank 0 and a head on rank
1. Each stage module is moved with ``to_global`` to its placement, the encoder's output goes to
the head's placement with ``to_global``, the graph marks the stages with ``config.set_stage``
and splits each batch into 3 micro-batches (``set_gradient_accumulation_steps``).

    python examples/oneflow_pipeline.py

Without a GPU the script runs on virtual CPU devices (the lines before the import set XLA_FLAGS
before JAX starts, unless you set it); "cuda" placements then name CPU devices.
"""

import glob
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "") and not glob.glob("/dev/nvidia[0-9]*"):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()

import fjax as flow  # noqa: E402  (a OneFlow user writes: import oneflow as flow)

FEATURES, HIDDEN, CLASSES, BATCH, MICRO_BATCHES, STEPS = 20, 48, 5, 12, 3, 15
REPLICATED = [flow.sbp.broadcast]
FIRST = flow.placement("cuda", ranks=[0])
SECOND = flow.placement("cuda", ranks=[1])


class Encoder(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = flow.nn.Linear(FEATURES, HIDDEN)
        self.act = flow.nn.GELU()

    def forward(self, records):
        return self.act(self.proj(records))


class Head(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = flow.nn.Linear(HIDDEN, HIDDEN)
        self.out = flow.nn.Linear(HIDDEN, CLASSES)

    def forward(self, h):
        return self.out(flow.tanh(self.hidden(h)))


class TwoStageClassifier(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder().to_global(placement=FIRST, sbp=REPLICATED)
        self.head = Head().to_global(placement=SECOND, sbp=REPLICATED)

    def forward(self, records):
        h = self.encoder(records)
        return self.head(h.to_global(placement=SECOND, sbp=REPLICATED))


model = TwoStageClassifier()
optimizer = flow.optim.SGD(model.parameters(), lr=0.05)


class StagedTraining(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.model.encoder.config.set_stage(stage_id=0, placement=FIRST)
        self.model.head.config.set_stage(stage_id=1, placement=SECOND)
        self.criterion = flow.nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(MICRO_BATCHES)
        self.add_optimizer(optimizer)

    def build(self, records, labels):
        loss = self.criterion(self.model(records), labels)
        loss.backward()
        return loss


step = StagedTraining()
records = flow.randn(BATCH, FEATURES).to_global(FIRST, REPLICATED)
labels = flow.randint(0, CLASSES, (BATCH,)).to_global(SECOND, REPLICATED)
for _ in range(STEPS):
    loss = step(records, labels)
    print(loss.to_local())
