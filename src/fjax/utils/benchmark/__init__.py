"""``fjax.utils.benchmark``: time fjax statements and compare the results (torch.utils.benchmark's API).

``Timer`` runs a statement in timed blocks and waits for JAX's asynchronous work at each clock
read, ``Measurement`` holds the times with their statistics, ``Compare`` prints many of them as
tables. Valgrind instruction counts (``CallgrindStats``...) and the fuzzers are not provided.
"""

from .common import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)
from .compare import Colorize, Compare
from .timer import Language, Timer, timer

__all__ = [
    "Colorize",
    "Compare",
    "Language",
    "Measurement",
    "TaskSpec",
    "Timer",
    "ordered_unique",
    "select_unit",
    "set_torch_threads",
    "timer",
    "trim_sigfig",
    "unit_to_english",
]
