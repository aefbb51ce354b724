"""A function for ``fjax.multiprocessing.spawn`` to run in a child process: it imports nothing
of fjax, so the child starts fast."""

import os


def write_rank(i, directory):
    with open(os.path.join(directory, f"rank{i}"), "w") as f:
        f.write(str(i))


def fail_on_one(i):
    if i == 1:
        raise ValueError("rank one fails")
