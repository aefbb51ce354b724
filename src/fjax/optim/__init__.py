"""fjax.optim: torch's optimizers over optax transforms, and ``lr_scheduler``."""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "LBFGS", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
