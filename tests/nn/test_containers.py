"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict: torch's container API."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from .helper import check_module, rng


def test_sequential_forward_matches_torch():
    fj = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 2))
    th = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
    check_module(fj, th, [rng().standard_normal((5, 4))])


def _names(m):
    return [n for n, _ in m.named_children()]


def test_sequential_indexing_and_editing():
    layers = [nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3), nn.Tanh()]
    seq = nn.Sequential(*layers)
    assert seq[0] is layers[0] and seq[-1] is layers[3] and len(seq) == 4
    assert isinstance(seq[1:3], nn.Sequential) and list(seq[1:3]) == layers[1:3]
    assert _names(seq[1:3]) == ["1", "2"]  # torch keeps the original keys in a slice
    del seq[1]
    assert _names(seq) == ["0", "1", "2"] and seq[1] is layers[2]
    seq.insert(1, layers[1])
    seq.append(nn.Identity())
    assert list(seq)[:4] == layers and _names(seq) == ["0", "1", "2", "3", "4"]
    assert seq.pop(4).__class__ is nn.Identity and len(seq) == 4
    seq[3] = nn.Sigmoid()
    assert isinstance(seq[3], nn.Sigmoid)
    named = nn.Sequential(OrderedDict(first=nn.Linear(2, 2), second=nn.ReLU()))
    assert _names(named) == ["first", "second"] and named.first is named[0]
    assert len(named + seq) == 6
    with pytest.raises(IndexError, match="index 9 is out of range for length 4"):
        seq[9]


def test_module_list():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    ml.insert(0, nn.Identity())
    assert len(ml) == 6 and isinstance(ml[0], nn.Identity) and isinstance(ml[-1], nn.Tanh)
    assert len(list(ml.parameters())) == 6
    del ml[0]
    assert _names(ml) == ["0", "1", "2", "3", "4"] and isinstance(ml[3], nn.ReLU)
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    ml += [nn.Sigmoid()]
    assert len(ml) == 6
    with pytest.raises(TypeError, match="iterable, but got ReLU"):
        ml.extend(nn.ReLU())
    # a Sequential is an iterable of modules: torch takes it as the list's items
    seq, th_seq = nn.Sequential(nn.ReLU(), nn.Tanh()), torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Tanh())
    assert len(nn.ModuleList(seq)) == len(torch.nn.ModuleList(th_seq)) == 2
    assert nn.ModuleList(seq)[1] is seq[1]
    th = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)] + [torch.nn.ReLU(), torch.nn.ReLU()])
    fj = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.ReLU()])
    assert repr(fj) == repr(th)
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())


def test_module_dict():
    md = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    md["c"] = nn.Tanh()
    md.update([("d", nn.Identity())])
    assert list(md) == ["a", "b", "c", "d"] and "c" in md and len(md) == 4
    assert md.pop("b").__class__ is nn.ReLU and list(md.keys()) == ["a", "c", "d"]
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(ValueError, match=r"element #0 should be a \(name, module\) pair"):
        md.update([nn.ReLU()])
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(fjax.ones(2, 3)), fjax.zeros(4)])
    assert all(isinstance(p, nn.Parameter) for p in pl)  # plain tensors are wrapped
    pl.append(fjax.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"] and len(pl) == 3
    th = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2, 3)), torch.zeros(4), torch.ones(1)])
    assert repr(pl).replace("fjax", "torch") == repr(th)
    pd = nn.ParameterDict({"w": fjax.ones(2)})
    pd["b"] = nn.Parameter(fjax.zeros(3))
    assert list(pd) == ["w", "b"] and isinstance(pd["w"], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    del pd["w"]
    assert list(pd.keys()) == ["b"] and pd.get("w") is None
    assert repr(pd) == "ParameterDict(  (b): Parameter containing: [fjax.float32 of size 3])"

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = nn.ParameterList([fjax.ones(2) for _ in range(2)])

    model = Model()
    state = {k: np.full(2, 3.0) for k in model.state_dict()}
    model.load_state_dict(state)
    assert list(state) == ["ws.0", "ws.1"] and float(model.ws[1].sum()) == 6.0
