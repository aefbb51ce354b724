"""nn.Graph steps donate the state's buffers: every alias taken before (``.data``, views,
``state_dict`` entries, ``detach()``) and the optimizer's state must read the new values after
each step, never a deleted array."""

import numpy as np

import fjax as flow


def test_aliases_and_optimizer_state_stay_readable_across_steps():
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(4, 8), flow.nn.BatchNorm1d(8), flow.nn.Linear(8, 2))
    opt = flow.optim.Adam(model.parameters(), lr=0.01)

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            self.config.set_gradient_accumulation_steps(2)

        def build(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            return loss

    weight = model[0].weight
    data, detached, row = weight.data, weight.detach(), weight[1]
    sd = model.state_dict()
    running_mean = model[1].running_mean
    graph, x = TrainGraph(), flow.randn(8, 4)
    previous = weight.numpy().copy()
    for _ in range(4):
        graph(x)
        now = weight.numpy()
        assert not np.array_equal(now, previous)
        for alias in (data, detached, sd["0.weight"]):
            np.testing.assert_array_equal(alias.numpy(), now)
        np.testing.assert_array_equal(row.numpy(), now[1])
        np.testing.assert_array_equal(sd["1.running_mean"].numpy(), running_mean.numpy())
        state = opt.state_dict()["state"]
        assert len(state) == len(list(model.parameters()))
        for entry in state.values():  # Adam's moments are live arrays
            for value in entry.values():
                np.asarray(value.numpy() if isinstance(value, flow.Tensor) else value)
        previous = now.copy()
    # writes through an alias reach the next step
    data.fill_(0.5)
    graph(x)
    assert not np.allclose(weight.numpy(), 0.5) and np.all(np.abs(weight.numpy() - 0.5) < 0.1)
    np.testing.assert_array_equal(sd["0.weight"].numpy(), weight.numpy())
