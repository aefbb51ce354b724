"""nn.Graph.save never loses data: a process killed at any point of a save leaves the previous
save or the new one, whole; concurrent saves end with one complete save."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import fjax
from fjax import nn

CHILD = textwrap.dedent(
    """
    import sys, fjax
    from fjax import nn
    lin = nn.Linear(64, 64)
    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin
        def build(self, x):
            return self.lin(x).sum()
    g = G()
    g(fjax.ones(2, 64))
    k = 0
    while True:
        with fjax.no_grad():
            lin.weight.fill_(float(k))
            lin.bias.fill_(float(k))
        g.save(sys.argv[1])
        print(k, flush=True)
        k += 1
    """
)


class _SumOf(nn.Graph):
    def __init__(self, lin):
        super().__init__()
        self.lin = lin

    def build(self, x):
        return self.lin(x).sum()


def _saved_version(path):
    """The version number a saved graph holds, checking every state array agrees."""
    with np.load(os.path.join(path, "state.npz")) as z:
        arrays = [z[name] for name in z.files if z[name].size >= 64]
    values = {float(v) for a in arrays for v in np.unique(a)}
    assert len(values) == 1, f"a mix of versions: {sorted(values)[:5]}"
    return values.pop()


def test_a_killed_save_leaves_the_old_or_the_new_graph(tmp_path):
    path = str(tmp_path / "graph")
    rng = random.Random(os.getpid())
    for _ in range(3):
        child = subprocess.Popen([sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, text=True)
        first = child.stdout.readline()  # one save done
        assert first.strip().isdigit(), first
        time.sleep(rng.uniform(0.0, 1.5))
        child.send_signal(signal.SIGKILL)
        child.wait()
        version = _saved_version(path)
        assert version.is_integer() and version >= 0
        loaded = nn.Graph.load(path)  # loads, and runs
        assert np.isfinite(float(loaded(fjax.ones(2, 64))))
        leftovers = [n for n in os.listdir(tmp_path) if n != "graph"]
        for name in leftovers:  # only temporaries of the killed save, never the target
            assert name.startswith(".graph.tmp-"), leftovers


def test_concurrent_saves_from_threads_end_whole_and_leave_the_graph_working(tmp_path):
    g = _SumOf(nn.Linear(64, 64))
    x = fjax.ones(2, 64)
    expected = float(g(x))
    path = str(tmp_path / "graph")
    errors = []

    def saver():
        try:
            for _ in range(3):
                g.save(path)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=saver) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert float(g(x)) == expected  # the graph still runs, same numbers
    loaded = nn.Graph.load(path)
    assert float(loaded(x)) == expected
    assert os.listdir(tmp_path) == ["graph"]


def test_a_loaded_graph_names_the_input_it_was_given_wrongly(tmp_path):
    g = _SumOf(nn.Linear(4, 2))
    g(fjax.ones(3, 4))
    g.save(str(tmp_path / "g"))
    loaded = nn.Graph.load(str(tmp_path / "g"))
    with pytest.raises(fjax.OpError, match=r"input 0 must be float32\[3, 4\] .* got float32\[3, 5\]"):
        loaded(fjax.ones(3, 5))
    with pytest.raises(fjax.OpError, match=r"input 0 must be float32\[3, 4\] .* got float64\[3, 4\]"):
        loaded(fjax.ones(3, 4, dtype=fjax.float64))
    with pytest.raises(fjax.OpError, match=r"takes 1 input tensors \(float32\[3, 4\]\), got 2"):
        loaded(fjax.ones(3, 4), fjax.ones(1))
    assert float(loaded(fjax.ones(3, 4))) == float(g(fjax.ones(3, 4)))
