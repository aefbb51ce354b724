"""fjax.optim: torch's optimizers over optax transforms, and ``lr_scheduler``."""

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lamb import LAMB
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "LBFGS", "LAMB", "Adadelta", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
