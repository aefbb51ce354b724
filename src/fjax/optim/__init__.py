"""fjax.optim: torch's optimizers over optax transforms, and ``lr_scheduler``."""

from . import lr_scheduler, swa_utils
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lamb import LAMB
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "ASGD",
    "SGD",
    "LBFGS",
    "LAMB",
    "Muon",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SparseAdam",
    "lr_scheduler",
    "swa_utils",
    "swap_in_optimizer_params_and_state",
]
