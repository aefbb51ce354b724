"""OneFlow-style nn.Graph gradient accumulation: mean of the micro-batch gradients, packed outputs,
buffers and random numbers as an eager loop over the micro-batches gives them."""

import numpy as np
import pytest

import fjax as flow


def _linear_sgd():
    linear = flow.nn.Linear(3, 8)
    flow.nn.init.constant_(linear.weight, 2.068758)
    flow.nn.init.constant_(linear.bias, 1.23)
    return linear, flow.optim.SGD(linear.parameters(), lr=0.01, momentum=0.9)


def test_grad_acc_matches_eager_with_scaled_loss_and_packs_outputs():
    # OneFlow scales each micro-batch's gradient by 1/n (autograd.cpp: ScaleModelDiffByLossInstanceNum),
    # so the eager reference backpropagates loss * 0.25 and steps every 4 micro-batches
    x = flow.tensor(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32))
    free_one = flow.tensor([1.0])  # an eager tensor the graph captures
    eager_linear, eager_sgd = _linear_sgd()
    eager_weights, eager_losses = [], []
    for i in range(12):
        index = (i % 4) * 2
        out = eager_linear(x[index : index + 2])
        out += free_one
        out += flow.ones(out.shape, dtype=out.dtype, device=out.device)
        loss = flow.reshape(out, shape=[-1]).sum()
        (loss * 0.25).backward()
        eager_losses.append(loss.item())
        if (i + 1) % 4 == 0:
            eager_sgd.step()
            eager_sgd.zero_grad()
            eager_weights.append((eager_linear.weight.numpy().copy(), eager_linear.bias.numpy().copy()))

    graph_linear, graph_sgd = _linear_sgd()

    class LinearTrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.linear = graph_linear
            self.add_optimizer(graph_sgd)
            self.config.set_gradient_accumulation_steps(4)

        def build(self, x):
            out = self.linear(x)
            out += free_one
            out += flow.ones(out.shape, dtype=out.dtype, device=out.device)
            out = flow.reshape(out, shape=[-1])
            loss = out.sum()
            loss.backward()
            return out, loss

    graph = LinearTrainGraph()
    for step in range(3):
        packed, losses = graph(x)
        assert tuple(packed.shape) == (64,)  # OneFlow's pack: 4 micro-batch outputs of shape (16,) concatenated
        assert tuple(losses.shape) == (4,)  # a scalar per micro-batch
        np.testing.assert_allclose(losses.numpy(), eager_losses[4 * step : 4 * step + 4], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(graph_linear.weight.numpy(), eager_weights[step][0], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(graph_linear.bias.numpy(), eager_weights[step][1], rtol=1e-6, atol=1e-7)


def _model(kind):
    flow.manual_seed(0)
    nn = flow.nn
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.Dropout(0.3), nn.ReLU(), nn.Linear(16, 3))
    if kind == "adam":
        opt = flow.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.1)
    else:
        opt = flow.optim.SGD(
            [{"params": model.parameters(), "clip_grad_max_norm": 0.5, "clip_grad_norm_type": 2.0}],
            lr=0.1,
            momentum=0.9,
        )
    return model, opt


@pytest.mark.parametrize("kind", ["adam", "sgd_clip"])
@pytest.mark.parametrize("n", [1, 4])
def test_grad_acc_with_dropout_batchnorm_matches_the_eager_micro_batch_loop(kind, n):
    rng = np.random.default_rng(1)
    x = flow.tensor(rng.standard_normal((16, 6)).astype(np.float32))
    y = flow.tensor(rng.standard_normal((16, 3)).astype(np.float32))

    model, opt = _model(kind)
    flow.manual_seed(5)
    eager_losses = []
    for _ in range(3):
        for xs, ys in zip(x.chunk(n), y.chunk(n)):
            loss = flow.nn.functional.mse_loss(model(xs), ys)
            (loss / n).backward()
            eager_losses.append(loss.item())
        if kind == "sgd_clip":
            flow.nn.utils.clip_grad_norm_(model.parameters(), 0.5, 2.0)
        opt.step()
        opt.zero_grad()
    eager_next = flow.rand(3).numpy()

    model2, opt2 = _model(kind)

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model2
            self.add_optimizer(opt2)
            self.config.set_gradient_accumulation_steps(n)

        def build(self, x, y):
            loss = flow.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            return loss

    graph = TrainGraph()
    flow.manual_seed(5)
    losses = [graph(x, y) for _ in range(3)]
    graph_losses = np.concatenate([np.atleast_1d(v.numpy()) for v in losses])
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5, atol=1e-6)
    # the dropout masks are the eager loop's: the graph continued the random stream micro-batch by micro-batch
    np.testing.assert_array_equal(flow.rand(3).numpy(), eager_next)
    for (name, a), b in zip(model.state_dict().items(), model2.state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_grad_acc_under_amp_sums_in_float32():
    flow.manual_seed(0)
    model = flow.nn.Linear(4, 1, bias=False)
    flow.nn.init.constant_(model.weight, 1.0)
    opt = flow.optim.SGD(model.parameters(), lr=1.0)

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            self.config.enable_amp(True, dtype=flow.bfloat16)
            self.config.set_gradient_accumulation_steps(8)

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss

    # micro-batch gradients 1 + 2^-7 * k: exact in bfloat16 one by one, their mean is not
    values = 1.0 + np.arange(8, dtype=np.float32) / 128
    x = flow.tensor(np.repeat(values, 4).reshape(8, 4))
    TrainGraph()(x)
    np.testing.assert_allclose(model.weight.numpy(), 1.0 - values.mean(), rtol=0, atol=1e-6)
    assert model.weight.dtype == flow.float32


def test_grad_acc_rejects_a_batch_that_does_not_split():
    model = flow.nn.Linear(2, 1)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            self.config.set_gradient_accumulation_steps(4)

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss

    with pytest.raises(Exception, match="divisible by 4"):
        TrainGraph()(flow.randn(6, 2))
