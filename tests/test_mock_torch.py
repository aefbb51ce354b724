"""``fjax.mock_torch``: unchanged PyTorch programs import fjax as ``torch``.

Real torch is the oracle: the programs in ``tests/programs/mock_*.py`` are plain PyTorch, run
once on torch and once under the hook, and must print the same losses.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as real_torch

import fjax
import fjax.mock_torch as mock_torch

PROGRAMS = Path(__file__).parent / "programs"


def _torch_modules():
    return {name: mod for name, mod in sys.modules.items() if name == "torch" or name.startswith("torch.")}


@pytest.fixture(autouse=True)
def _always_disabled():
    before = _torch_modules()
    yield
    mock_torch.disable()
    after = _torch_modules()
    assert all(after.get(name) is mod for name, mod in before.items())  # the real torch modules are back


def test_torch_imports_are_fjax_inside_and_real_torch_after():
    real_nn = sys.modules["torch.nn"]
    with mock_torch.enable():
        assert mock_torch.is_enabled()
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        import torch.optim as optim
        from torch.optim.lr_scheduler import StepLR
        from torch.utils.data import DataLoader, TensorDataset

        assert torch is fjax and nn is fjax.nn and F is fjax.nn.functional and optim is fjax.optim
        assert StepLR is fjax.optim.lr_scheduler.StepLR
        assert (DataLoader, TensorDataset) == (fjax.utils.data.DataLoader, fjax.utils.data.TensorDataset)
        for name in ("autograd", "func", "nn.utils", "nn.init", "distributed", "return_types"):
            __import__(f"torch.{name}")
            assert sys.modules[f"torch.{name}"] is sys.modules[f"fjax.{name}"]
        assert fjax.nn.__spec__.name == "fjax.nn" and fjax.__name__ == "fjax"  # aliases leave fjax alone
    assert not mock_torch.is_enabled()
    import torch

    assert torch is real_torch and sys.modules["torch.nn"] is real_nn
    assert "torch.optim.lr_scheduler" not in sys.modules or sys.modules["torch.optim.lr_scheduler"].__name__ == (
        "torch.optim.lr_scheduler"
    )


def test_enable_without_with_stays_on_until_disable():
    mock_torch.enable()
    import torch

    assert torch is fjax and mock_torch.is_enabled()
    with mock_torch.enable():  # a nested context leaves the outer state on
        pass
    import torch

    assert torch is fjax
    mock_torch.disable()
    import torch

    assert torch is real_torch


def test_a_module_fjax_lacks_names_itself():
    with mock_torch.enable():
        with pytest.raises(ImportError, match=r"fjax does not provide 'torch\.quantization'"):
            import torch.quantization  # noqa: F401
        with pytest.raises(ImportError, match=r"fjax does not provide 'torch\.quantization'"):
            from torch import quantization  # noqa: F401
        with pytest.raises(ImportError, match=r"'torch\.nn\.NoSuchLayer'"):
            from torch.nn import NoSuchLayer  # noqa: F401
        with pytest.raises(mock_torch.MockTorchError, match=r"'torch\.quantization'"):
            importlib.import_module("torch.quantization")
    assert not hasattr(fjax, "quantization")


def test_lazy_mode_imports_a_placeholder_that_fails_when_used():
    with mock_torch.enable(lazy=True):
        import torch.quantization as quantization
        from torch import quantization as same

        assert same is quantization
        with pytest.raises(
            ImportError,
            match=r"fjax does not provide 'torch\.quantization' \(needed for 'torch\.quantization\.quantize'\)",
        ):
            quantization.quantize  # noqa: B018
        import torch

        assert torch is fjax
    assert not hasattr(fjax, "quantization") and "fjax.quantization" not in sys.modules
    import torch.quantization

    assert torch.quantization.__name__ == "torch.quantization"  # real torch's module again


def test_env_var_turns_enable_into_a_no_op(monkeypatch):
    monkeypatch.setenv("FJAX_MOCK_TORCH", "0")
    with mock_torch.enable():
        import torch

        assert torch is real_torch and not mock_torch.is_enabled()


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("program", ["mock_cnn_classifier", "mock_char_gru"])
def test_program_trains_as_on_torch(program):
    path = PROGRAMS / f"{program}.py"
    want = _load(path, f"{program}_on_torch").main(10, 0)
    with mock_torch.enable():
        on_fjax = _load(path, f"{program}_on_fjax")
        assert on_fjax.torch is fjax
        got = on_fjax.main(10, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[0] != want[-1]


def _run_cli(*args, cwd=None):
    env = dict(os.environ)
    env.setdefault(
        "JAX_COMPILATION_CACHE_DIR", os.environ.get("FJAX_TEST_CACHE", os.path.expanduser("~/.cache/fjax-tests"))
    )
    env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.05")
    return subprocess.run(
        [sys.executable, "-m", "fjax.mock_torch", *args], capture_output=True, text=True, env=env, cwd=cwd, check=True
    )


def test_cli_runs_a_training_script_as_main():
    path = PROGRAMS / "mock_mlp_regression.py"
    want = _load(path, "mock_mlp_regression_on_torch").main(10, 0)
    got = json.loads(_run_cli(str(path), "--steps", "10", "--seed", "0").stdout.splitlines()[-1])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[0] != want[-1]


def test_cli_sets_argv_name_and_path(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    script = tmp_path / "script.py"
    script.write_text(
        "import json, sys\nimport torch\nimport helper\n"
        "print(json.dumps([sys.argv, __name__, torch.__name__, helper.VALUE]))\n"
    )
    out = _run_cli(str(script), "a", "--b", cwd=str(PROGRAMS)).stdout.splitlines()[-1]
    assert json.loads(out) == [[str(script), "a", "--b"], "__main__", "fjax", 7]


def _torch_texts(torch, x, i):
    """What a program prints or compares: dtypes, shapes, type names, tensors, grad_fn."""
    y = x.log_softmax(0)
    return [
        str(x.dtype),
        repr(torch.float16),
        str(x.shape),
        x.type(),
        i.type(),
        torch.typename(x),
        repr(torch.FloatTensor),
        repr(x.detach()),
        repr(i),
        repr(i.int()),
        repr(torch.tensor([True, False])),
        repr(torch.zeros(0, 2)),
        repr(x.detach().double()),
        repr(torch.max(x.detach().reshape(2, 1), 0)),
        repr(torch.ones(2, requires_grad=True)),
        repr(y),
    ]


def test_reprs_and_type_names_print_torch_names_while_enabled():
    x, i = [0.5, -1.25], [3, 1]
    want = _torch_texts(real_torch, real_torch.tensor(x, requires_grad=True), real_torch.tensor(i))
    with mock_torch.enable():
        import torch

        got = _torch_texts(torch, torch.tensor(x, requires_grad=True), torch.tensor(i))
    assert got == want
    assert str(fjax.float32) == "fjax.float32" and repr(fjax.ones(1)) == "tensor([1.], dtype=fjax.float32)"  # off again
