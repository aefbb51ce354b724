"""No deadlock when fjax writes into torch memory while XLA still runs on torch's buffers.

The hang this guards against: a train-mode forward writes BatchNorm's running statistics back into
the torch module (``_TorchStorage.array``'s setter). Waiting for the new array while holding the
GIL, as ``unsafe_buffer_pointer`` does, deadlocks when XLA's worker threads, finishing that very
computation, drop DLPack-imported torch buffers: torch's deleter needs the GIL. The stress runs
many train-mode steps from several threads at once, in a subprocess with a deadline, so a hang is
one failed test with the child's stacks, never a stuck suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent(
    """
    import faulthandler, sys, threading
    faulthandler.dump_traceback_later(float(sys.argv[1]), exit=True)  # a hang prints every stack
    import torch
    import fjax

    def model():
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
        ).train()

    errors = []

    def run(seed, steps):
        try:
            torch.manual_seed(seed)
            tm = model()
            m = fjax.compile_from_torch(tm, use_graph=False)
            for i in range(steps):
                x = torch.randn(4, 3, 12, 12)
                with torch.no_grad():
                    m(x)  # torch in, torch out: the running statistics are written into tm
                y = m(fjax.tensor(x.numpy()))
                y.sum().backward()  # fjax in: the tape reaches the shared parameters
            assert torch.isfinite(tm[1].running_mean).all()
        except BaseException as exc:  # reported by the main thread
            errors.append(f"thread {seed}: {exc!r}")

    threads = [threading.Thread(target=run, args=(s, 15)) for s in range(3)]
    for t in threads:
        t.start()
    run(99, 15)  # the main thread too, as in the suite
    for t in threads:
        t.join()
    assert not errors, errors
    print("ok")
    """
)


def test_train_mode_write_back_from_many_threads_does_not_hang():
    proc = subprocess.run([sys.executable, "-c", _CHILD, "240"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (
        f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )
