"""An nn.Graph step writes back only the state it changes (``Executable``'s ``changed`` set).

An inference step changes no parameter or buffer: nothing is donated, returned or written back,
no version moves and every tensor keeps its very array. A training step writes (and bumps the
version of) what its optimizer updates, and only that: a frozen parameter stays read-only, and
a change made to it between calls reaches the next call. ``compile_from_torch``'s inference calls
leave the torch module's tensors untouched too.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

import fjax
import fjax.nn as nn
import fjax.optim as optim
from fjax.graph import Graph


class Forward(Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


class Train(Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        return loss


def _model():
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


def _state(model):
    return [*model.parameters(), *model.buffers()]


def _entry(graph):
    ex = graph._executables
    return ex.cache[ex.last_key]


def test_inference_graph_writes_no_state_and_bumps_no_version():
    fjax.manual_seed(0)
    model = _model().eval()
    x = fjax.randn(5, 6)
    with fjax.no_grad():
        expected = model(x).numpy()
    tensors = _state(model)
    arrays = [t._data for t in tensors]
    versions = [t._version for t in tensors]
    graph = Forward(model)
    for _ in range(3):  # the first call, then the repeat path
        np.testing.assert_allclose(graph(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert _entry(graph).record["changed"] == ()
    assert [t._version for t in tensors] == versions
    assert all(t._data is a for t, a in zip(tensors, arrays))  # not donated, not replaced
    assert "jax.buffer_donor" not in graph.stablehlo() and "tf.aliasing_output" not in graph.stablehlo()


def test_train_mode_forward_writes_only_the_running_statistics():
    fjax.manual_seed(1)
    model = _model().train()
    twin = _model().train()
    twin.load_state_dict(model.state_dict())
    graph = Forward(model)
    bn = model[1]
    written = {id(bn.running_mean), id(bn.running_var), id(bn.num_batches_tracked)}
    params = list(model.parameters())
    param_arrays, param_versions = [p._data for p in params], [p._version for p in params]
    for call in range(3):
        x = fjax.randn(5, 6)
        with fjax.no_grad():
            expected = twin(x).numpy()
        np.testing.assert_allclose(graph(x).numpy(), expected, rtol=1e-5, atol=1e-6)
        if call == 0:  # (tracing moves the versions of what the step writes in place too)
            buffer_versions = [b._version for b in model.buffers()]
    state = _entry(graph).state
    assert {id(state.tensors[i]) for i in _entry(graph).record["changed"]} == written
    assert [p._version for p in params] == param_versions and all(p._data is a for p, a in zip(params, param_arrays))
    assert [b._version for b in model.buffers()] == [v + 2 for v in buffer_versions]
    for name, b in twin.named_buffers():
        np.testing.assert_allclose(dict(model.named_buffers())[name].numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_training_graph_updates_parameters_as_eager_and_leaves_frozen_ones_readable():
    fjax.manual_seed(2)
    models = [_model().train(), _model().train()]
    models[1].load_state_dict(models[0].state_dict())
    for m in models:
        m[0].bias.requires_grad_(False)  # frozen: read by the step, never written
    opts = [optim.SGD([p for p in m.parameters() if p.requires_grad], lr=0.1, momentum=0.9) for m in models]
    graph = Train(models[1], opts[1])
    params = [p for p in models[1].parameters() if p.requires_grad]
    frozen = models[1][0].bias
    frozen_array, frozen_version = frozen._data, frozen._version
    for step in range(4):
        x, y = fjax.randn(5, 6), fjax.randn(5, 3)
        if step == 2:  # a change between calls: the next (repeated) call reads it
            with fjax.no_grad():
                for m in models:
                    m[0].bias.fill_(0.5)
            frozen_array, frozen_version = frozen._data, frozen._version
        versions = [p._version for p in params]
        opts[0].zero_grad()
        eager_loss = nn.functional.mse_loss(models[0](x), y)
        eager_loss.backward()
        opts[0].step()
        loss = graph(x, y)
        np.testing.assert_allclose(loss.item(), eager_loss.item(), rtol=1e-5, atol=1e-6)
        assert [p._version for p in params] == [v + 1 for v in versions]  # every updated one bumped
        assert frozen._data is frozen_array and frozen._version == frozen_version
    assert len(_entry(graph).record["changed"]) == len(params) + 3  # + BatchNorm's running statistics
    for (name, a), b in zip(models[0].state_dict().items(), models[1].state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_compile_from_torch_inference_leaves_torch_tensors_alone():
    torch.manual_seed(3)
    tm = torch.nn.Sequential(
        torch.nn.Embedding(11, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(5)
    ).eval()
    m = fjax.compile_from_torch(tm)
    storages = list(m._storages())
    arrays = [st.array for st in storages]
    versions = [t._version for t in [*tm.parameters(), *tm.buffers()]]
    for _ in range(3):
        x = torch.randint(0, 11, (2, 5))
        with torch.no_grad():
            torch.testing.assert_close(m(x), tm(x), rtol=1e-5, atol=1e-6)
    assert [t._version for t in [*tm.parameters(), *tm.buffers()]] == versions
    assert all(st.array is a for st, a in zip(storages, arrays))  # no write, no re-import
    with torch.no_grad():  # a torch-side write still reaches the next call
        tm[2].bias.add_(1.0)
        x = torch.randint(0, 11, (2, 5))
        torch.testing.assert_close(m(x), tm(x), rtol=1e-5, atol=1e-6)
    twin = copy.deepcopy(tm).train()
    m.train()  # a train-mode call writes BatchNorm's running statistics into torch, as torch does
    for _ in range(2):
        x = torch.randint(0, 11, (2, 5))
        with torch.no_grad():
            torch.testing.assert_close(m(x), twin(x), rtol=1e-5, atol=1e-5)
    for (name, a), b in zip(twin.named_buffers(), tm.buffers()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)
