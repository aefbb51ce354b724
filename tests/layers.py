"""The layers of ``src/fjax``, lowest first, and the imports allowed to point up them.

``tests/test_architecture.py`` checks the code and docs/architecture.md's table against this
file. A name is a path under ``src/fjax`` without ``.py``: ``x/`` is a package and everything
in it, ``x/__init__`` the package's ``__init__`` alone, ``__init__`` the top-level one.
``python -m tests.layers`` prints the doc's module column and exceptions table.
"""

from __future__ import annotations

LAYERS: list[tuple[str, list[str]]] = [
    (
        "base",
        [
            "errors",
            "_public",
            "version",
            "types",
            "dtypes",
            "device",
            "env",
            "_config",
            "_tracing",
            "_atomic",
            "_artifact",
            "profiler",
            "_memory",
            "_jax_compat",
            "_order",
            "_lazy",
            "_dims",
            "_missing",
            "_tensor_str",
        ],
    ),
    ("op table", ["ops/"]),
    ("tensor", ["tensor", "_indexing", "creation", "random"]),
    (
        "tape",
        [
            "autograd/__init__",
            "autograd/engine",
            "autograd/grad_mode",
            "autograd/anomaly_mode",
            "autograd/api",
            "autograd/function",
            "autograd/graph",
            "autograd/variable",
            "autograd/gradcheck",
            "autograd/profiler",
            "autograd/forward_ad",
        ],
    ),
    ("dispatch", ["dispatch", "_bucket", "amp/", "asyncs/"]),
    (
        "eager API",
        [
            "_methods",
            "return_types",
            "linalg",
            "special",
            "fft",
            "signal/",
            "_windows",
            "masked",
            "onnx",
            "sparse",
            "testing",
            "cuda",
            "_nvtx",
            "cpu",
            "backends/",
            "accelerator",
            "_lobpcg",
            "_legacy",
            "_misc",
            "_settings",
            "distributed/__init__",
            "distributed/placement",
            "distributed/global_tensor",
            "distributed/process_group",
            "distributed/collectives",
            "distributed/mesh",
            "distributed/strategy",
            "sbp",
            "utils/__init__",
            "utils/global_view",
            "utils/checkpoint",
            "utils/data/",
            "utils/benchmark/",
            "utils/dlpack",
            "utils/_pytree",
            "overrides",
            "multiprocessing",
        ],
    ),
    ("nn, optim", ["nn/", "optim/", "distributions/", "_toplevel", "_aten_extra", "utils/hooks"]),
    (
        "transforms",
        [
            "_transforms/",
            "autograd/functional",
            "func",
            "graph/",
            "distributed/checkpoint",
            "distributed/pipeline",
            "serialization",
            "hub",
            "utils/model_zoo",
        ],
    ),
    (
        "entry",
        [
            "__init__",
            "__main__",
            "compiler",
            "_dynamo",
            "jit",
            "mock_torch/",
            "framework/",
            "_C",
            "_oneflow_internal",
            "distributed/launch",
        ],
    ),
]

# (importer, imported, why): the imports that point up the table. Importing ``a/b`` runs
# ``a/__init__`` too (unless the importer is inside ``a``), so that edge needs its own entry.
ALLOWED: list[tuple[str, str, str]] = [
    (
        "tensor",
        "autograd/grad_mode",
        "at call time: a view re-derives its `grad_fn` under `enable_grad`, an in-place write reads"
        " `is_grad_enabled`; `grad_mode` imports nothing",
    ),
    (
        "tensor",
        "autograd/__init__",
        "the same imports run the autograd package's `__init__`, loaded before any Tensor method runs",
    ),
    (
        "autograd/api",
        "_transforms/pipeline",
        "at call time: `grad(create_graph=True)` replays the recorded program through the pipeline",
    ),
    (
        "distributed/__init__",
        "distributed/checkpoint",
        "the `fjax.distributed` namespace re-exports sharded checkpoints; `checkpoint` imports"
        " nn, optim and graph only inside its functions",
    ),
    (
        "distributed/__init__",
        "distributed/pipeline",
        "the namespace re-exports the pipeline schedules; `pipeline` imports dispatch and nn only inside its functions",
    ),
    (
        "nn/__init__",
        "graph/__init__",
        "OneFlow's `nn.Graph` is `fjax.nn.Graph`; `graph/` imports nn and optim only inside its functions",
    ),
    (
        "nn/utils/stateless",
        "_transforms/reparametrize",
        "torch.nn.utils.stateless's `functional_call` is torch.func's; `reparametrize` imports only tensor",
    ),
    (
        "utils/checkpoint",
        "nn/module",
        "at call time: checkpoint finds the parameters and buffers a function reaches through a Module",
    ),
    ("utils/checkpoint", "nn/__init__", "the same import runs nn's `__init__`"),
]


def modules_cell(entries: list[str]) -> str:
    """The doc table's module column for one layer."""
    return ", ".join(f"`{e}`" for e in entries)


def allowed_row(importer: str, imported: str, why: str) -> str:
    return f"| `{importer}` | `{imported}` | {why} |"


if __name__ == "__main__":
    for layer, entries in LAYERS:
        print(f"| {layer} | {modules_cell(entries)} |")
    print()
    for entry in ALLOWED:
        print(allowed_row(*entry))
