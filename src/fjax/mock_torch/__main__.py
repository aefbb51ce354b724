"""``python -m fjax.mock_torch [--lazy] script.py [args...]``: run a PyTorch script on fjax.

The script runs as ``__main__`` with ``sys.argv == [script.py, args...]`` and its directory first
on ``sys.path``, as ``python script.py`` would run it, but with ``fjax.mock_torch`` enabled so
its ``import torch`` gives fjax. ``--lazy`` imports torch modules fjax lacks as placeholders.
"""

from __future__ import annotations

import os
import runpy
import sys

from . import enable

_USAGE = "usage: python -m fjax.mock_torch [--lazy] script.py [args...]"


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    lazy = False
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag == "--lazy":
            lazy = True
        elif flag in ("-h", "--help"):
            print(_USAGE)
            return
        else:
            sys.exit(f"{_USAGE}\nunknown option {flag!r}")
    if not args:
        sys.exit(_USAGE)
    script = args[0]
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    enable(lazy=lazy)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
