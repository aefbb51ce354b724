"""OneFlow's pipeline-parallelism tutorial (docs.oneflow.org, "Pipelining Parallelism"), unchanged
but for ``import fjax as flow``: two stage modules moved with ``to_global`` to their placements,
the activation moved between them with ``to_global``, ``set_stage`` in the graph and gradient
accumulation over 2 micro-batches.

    python examples/oneflow_pipeline.py

Without a GPU the script runs on virtual CPU devices (the two lines before the import set
XLA_FLAGS, before JAX starts, unless you set it); "cuda" placements then name CPU devices.
"""

import glob
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "") and not glob.glob("/dev/nvidia[0-9]*"):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()

# ---- OneFlow's script from here on; only this import differs ("import oneflow as flow") ----
import fjax as flow  # noqa: E402

BROADCAST = [flow.sbp.broadcast]
P0 = flow.placement("cuda", ranks=[0])
P1 = flow.placement("cuda", ranks=[1])


class Stage0Module(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = flow.nn.Flatten()
        self.linear0 = flow.nn.Linear(28 * 28, 512)
        self.relu0 = flow.nn.ReLU()

    def forward(self, x):
        out = self.flatten(x)
        out = self.linear0(out)
        out = self.relu0(out)
        return out


class Stage1Module(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = flow.nn.Linear(512, 512)
        self.relu1 = flow.nn.ReLU()
        self.linear2 = flow.nn.Linear(512, 10)
        self.relu2 = flow.nn.ReLU()

    def forward(self, x):
        out = self.linear1(x)
        out = self.relu1(out)
        out = self.linear2(out)
        out = self.relu2(out)
        return out


class PipelineModule(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.m_stage0 = Stage0Module()
        self.m_stage1 = Stage1Module()

        self.m_stage0.to_global(placement=P0, sbp=BROADCAST)
        self.m_stage1.to_global(placement=P1, sbp=BROADCAST)

    def forward(self, x):
        out_stage0 = self.m_stage0(x)
        in_stage1 = out_stage0.to_global(placement=P1, sbp=BROADCAST)
        out_stage1 = self.m_stage1(in_stage1)
        return out_stage1


module_pipeline = PipelineModule()
sgd = flow.optim.SGD(module_pipeline.parameters(), lr=0.001)


class PipelineGraph(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.module_pipeline = module_pipeline
        self.module_pipeline.m_stage0.config.set_stage(stage_id=0, placement=P0)
        self.module_pipeline.m_stage1.config.set_stage(stage_id=1, placement=P1)
        self.loss_fn = flow.nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(2)
        self.add_optimizer(sgd)

    def build(self, x, y):
        out = self.module_pipeline(x)
        loss = self.loss_fn(out, y)
        loss.backward()
        return loss


graph_pipeline = PipelineGraph()

x = flow.randn(16, 1, 28, 28)
y = flow.randint(0, 10, (16,))
x = x.to_global(P0, BROADCAST)
y = y.to_global(P1, BROADCAST)

for i in range(20):  # noqa: B007  (as OneFlow wrote it)
    loss = graph_pipeline(x, y)
    print(loss.to_local())
