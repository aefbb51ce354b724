"""Module's extra-state protocol (``get_extra_state``/``set_extra_state`` in ``state_dict`` and
``load_state_dict``) and ``set_submodule``, against torch: keys, their order, what loads, and
the missing/unexpected keys reported."""

from __future__ import annotations

import pytest
import torch

import fjax


def _build(mod):
    class Counter(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.lin = mod.nn.Linear(2, 2)
            self.register_buffer("seen", mod.zeros(1))

        def get_extra_state(self):
            return {"calls": self.calls}

        def set_extra_state(self, state):
            self.calls = state["calls"]

    return mod.nn.Sequential(Counter(), mod.nn.ReLU(), mod.nn.Sequential(Counter()))


def _outcome(fn):
    try:
        out = fn()
    except RuntimeError as e:  # (fjax's OpError is one)
        return ("raised", str(e).split("\n", 1)[1].strip())
    return ("ok", sorted(out.missing_keys), sorted(out.unexpected_keys))


def _script(mod):
    a, b = _build(mod), _build(mod)
    a[0].calls, a[2][0].calls = 5, 7
    sd = a.state_dict()
    results = [list(sd), [sd["0._extra_state"], sd["2.0._extra_state"]]]
    results.append(_outcome(lambda: b.load_state_dict(sd)))
    results.append([b[0].calls, b[2][0].calls])
    partial = {k: v for k, v in sd.items() if k != "2.0._extra_state"}
    results.append(_outcome(lambda: b.load_state_dict(partial)))
    results.append(_outcome(lambda: b.load_state_dict(partial, strict=False)))
    plain = mod.nn.Sequential(mod.nn.Linear(2, 2))
    extra = {"0.weight": mod.ones(2, 2), "0.bias": mod.ones(2), "0._extra_state": 1}
    results.append(_outcome(lambda: plain.load_state_dict(extra)))
    results.append(_outcome(lambda: plain.load_state_dict(extra, strict=False)))
    return results


def test_extra_state_round_trips_as_torch():
    assert _script(fjax) == _script(torch)


def test_the_base_methods_raise_and_set_submodule_as_torch():
    for mod in (fjax, torch):
        with pytest.raises(RuntimeError, match="should never be called"):
            mod.nn.Linear(1, 1).get_extra_state()
        net = mod.nn.Sequential(mod.nn.Linear(2, 2), mod.nn.Sequential(mod.nn.ReLU()))
        net.set_submodule("1.0", mod.nn.Tanh())
        assert type(net[1][0]).__name__ == "Tanh"
        with pytest.raises(AttributeError):
            net.set_submodule("1.missing", mod.nn.Tanh(), strict=True)
        with pytest.raises(AttributeError):
            net.set_submodule("nope.0", mod.nn.Tanh())
        with pytest.raises(ValueError):
            net.set_submodule("", mod.nn.Tanh())


def test_module_to_takes_a_memory_format_as_torch():
    for mod in (fjax, torch):
        m = mod.nn.Conv2d(3, 4, 3)
        before = m.weight.detach().clone()
        assert m.to(memory_format=mod.channels_last) is m
        assert mod.equal(m.weight.detach(), before)
        with pytest.raises(TypeError):
            m.to(memory_format="channels_last")
