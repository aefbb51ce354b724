"""Op-table samples: loss functions.

torch cannot differentiate class weights of nll_loss, cross_entropy (index targets),
binary_cross_entropy and binary_cross_entropy_with_logits, nor pos_weight (fjax can): those
cases compare values only, and the same losses without weights check the gradients.
"""

import numpy as np
import torch.nn.functional as F_

from .spec import F, I, S

_P = F((4, 3), 0.05, 0.95)  # probabilities
_W = F((3,), 0.5, 2.0)  # class weights
_R = ("none", "sum")

SAMPLES = {
    "cross_entropy": [
        S((4, 3), I((4,), 0, 3)),
        S((3,), I((), 0, 3)),
        S((2, 4, 3, 2), I((2, 3, 2), 0, 4)),
        S((5, 4), I((5,), 0, 4), ignore_index=1),
        S((5, 4), I((5,), 0, 4), reduction="none", ignore_index=2),
        S((5, 4), I((5,), 0, 4), reduction="sum"),
        S((6, 4), I((6,), 0, 4), label_smoothing=0.2),
        S((6, 4), I((6,), 0, 4), label_smoothing=0.1, ignore_index=0, reduction="none"),
        S((2, 4, 3), I((2, 3), 0, 4), label_smoothing=0.3, reduction="sum"),
        S((5, 4), I((5,), 0, 4), F((4,), 0.5, 2.0), _grad=False),
        S((5, 4), I((5,), 0, 4), F((4,), 0.5, 2.0), ignore_index=3, label_smoothing=0.2, _grad=False),
        S((6, 4), I((6,), 0, 4), F((4,), 0.5, 2.0), reduction="none", label_smoothing=0.1, _grad=False),
        S((4, 3), F((4, 3), 0, 1)),
        S((4, 3), F((4, 3), 0, 1), label_smoothing=0.2, reduction="sum"),
        S((2, 3, 4), F((2, 3, 4), 0, 1), _W, reduction="none"),
        S((2, 3, 4), F((2, 3, 4), 0, 1), _W),
        S((0, 3), I((0,), 0, 3), reduction="sum"),
    ],
    "nll_loss": [
        S((4, 3), I((4,), 0, 3)),
        S((3,), I((), 0, 3)),
        S((2, 4, 3, 2), I((2, 3, 2), 0, 4)),
        S((5, 4), I((5,), 0, 4), ignore_index=1),
        S((5, 4), I((5,), 0, 4), reduction="none"),
        S((5, 4), I((5,), 0, 4), reduction="sum", ignore_index=0),
        S((5, 4), I((5,), 0, 4), F((4,), 0.5, 2.0), _grad=False),
        S((5, 4), I((5,), 0, 4), F((4,), 0.5, 2.0), ignore_index=2, reduction="none", _grad=False),
    ],
    "mse_loss": [
        S((4, 3), (4, 3)),
        S((4, 3), (4, 3), reduction="none"),
        S((), ()),
        S((4, 3), (4, 3), reduction="sum"),
        S((4, 3), (4, 3), weight=F((4, 3), 0, 2)),
        S((4, 3), (4, 3), reduction="none", weight=F((4, 3), 0, 2)),
    ],
    "l1_loss": [
        S((4, 3), (4, 3)),
        S((4, 3), (4, 3), reduction="none"),
        S((5,), (5,), reduction="sum"),
        S((4, 3), (4, 3), weight=F((4, 3), 0, 2)),
    ],
    "smooth_l1_loss": [
        S((4, 3), (4, 3)),
        S((4, 3), (4, 3), reduction="none", beta=0.5),
        S((6,), (6,), reduction="sum", beta=2.0),
        S((4, 3), (4, 3), beta=0.0),
    ],
    "huber_loss": [
        S((4, 3), (4, 3)),
        S((4, 3), (4, 3), reduction="none", delta=0.5),
        S((6,), (6,), "sum", 2.0),
        S((4, 3), (4, 3), weight=F((4, 3), 0, 2)),
    ],
    "binary_cross_entropy": [
        S(_P, F((4, 3), 0, 1)),
        S(_P, F((4, 3), 0, 1), reduction="none"),
        S(F((5,), 0.05, 0.95), F((5,), 0, 1), reduction="sum"),
        S(_P, F((4, 3), 0, 1), F((4, 3), 0.5, 2.0), _grad=False),
        S(F((4, 3), 0, 1), F((4, 3), 0, 1), _grad=False),
        S(F((4, 3), 0, 0), F((4, 3), 0, 1), reduction="none", _grad=False),
    ],
    "binary_cross_entropy_with_logits": [
        S((4, 3), F((4, 3), 0, 1)),
        S((4, 3), F((4, 3), 0, 1), reduction="none"),
        S(F((4, 3), -30, 30), F((4, 3), 0, 1), reduction="sum"),
        S((4, 3), F((4, 3), 0, 1), pos_weight=_W, _grad=False),
        S((4, 3), F((4, 3), 0, 1), reduction="none", pos_weight=_W, _grad=False),
        S((4, 3), F((4, 3), 0, 1), _W, _grad=False),
    ],
    "kl_div": [
        S((4, 3), F((4, 3), 0.1, 1)),
        S((4, 3), F((4, 3), 0.1, 1), reduction="batchmean"),
        S((4, 3), F((4, 3), 0.1, 1), reduction="none"),
        S((4, 3), (4, 3), reduction="sum", log_target=True),
        S((4, 3), (4, 3), reduction="batchmean", log_target=True),
    ],
    "cosine_embedding_loss": [
        S((4, 5), (4, 5), I((4,), -1, 2)),
        S((5,), (5,), I((), -1, 2)),
        S((6, 3), (6, 3), I((6,), -1, 2), 0.2, reduction="none"),
        S((6, 3), (6, 3), I((6,), -1, 2), margin=-0.3, reduction="sum"),
    ],
    "margin_ranking_loss": [
        S((5,), (5,), (5,)),
        S((5,), (5,), (5,), 0.3, reduction="none"),
        S((4, 2), (4, 2), (4, 2), margin=0.5, reduction="sum"),
    ],
    "hinge_embedding_loss": [
        S((5,), I((5,), -1, 2)),
        S((4, 3), I((4, 3), -1, 2), 0.5, reduction="none"),
        S((4, 3), I((4, 3), -1, 2), margin=2.0, reduction="sum"),
    ],
    "soft_margin_loss": [
        S((5,), I((5,), -1, 2)),
        S((4, 3), I((4, 3), -1, 2), reduction="none"),
        S((4, 3), I((4, 3), -1, 2), reduction="sum"),
    ],
    "multilabel_soft_margin_loss": [
        S((4, 3), F((4, 3), 0, 1)),
        S((4, 3), I((4, 3), 0, 2), reduction="none"),
        S((4, 3), F((4, 3), 0, 1), _W, reduction="sum"),
    ],
    "poisson_nll_loss": [
        S((4, 3), F((4, 3), 0, 4)),
        S(F((4, 3), 0.1, 3), F((4, 3), 0, 4), False),
        S((4, 3), F((4, 3), 0, 4), full=True, reduction="none"),
        S(F((4, 3), 0.1, 3), F((4, 3), 0, 4), False, True, eps=1e-3, reduction="sum"),
    ],
    "gaussian_nll_loss": [
        S((4, 3), (4, 3), F((4, 3), 0.1, 2)),
        S((4, 3), (4, 3), F((4,), 0.1, 2), full=True),
        S((4, 3), (4, 3), F((4, 1), 0.1, 2), reduction="none"),
        S((4, 3), (4, 3), F((4, 3), 0.0, 0.5), eps=0.1, reduction="sum"),
    ],
    "triplet_margin_loss": [
        S((4, 5), (4, 5), (4, 5)),
        S((5,), (5,), (5,)),
        S((4, 5), (4, 5), (4, 5), 0.5, 1.0, swap=True, reduction="none"),
        S((4, 5), (4, 5), (4, 5), margin=2.0, p=3, eps=1e-3, reduction="sum"),
    ],
    "multi_margin_loss": [
        S((4, 5), I((4,), 0, 5)),
        S((5,), I((), 0, 5), p=2, margin=0.5),
        S((4, 5), I((4,), 0, 5), weight=F((5,), 0.5, 2.0), reduction="none", _grad=False),
        S((4, 5), I((4,), 0, 5), 1, 2.0, reduction="sum"),
    ],
    "ctc_loss": [
        S(F((6, 2, 4), -3.0, 0.0), I((2, 3), 1, 4), np.array([6, 5]), np.array([3, 2])),
        S(F((6, 2, 4), -3.0, 0.0), I((5,), 1, 4), np.array([6, 4]), np.array([3, 2]), reduction="sum"),
        S(F((5, 3, 4), -3.0, 0.0), I((3, 2), 0, 3), np.array([5, 5, 3]), np.array([2, 0, 2]), 3, "none"),
        S(F((3, 4), -3.0, 0.0), I((3,), 1, 4), np.array(3), np.array(3), reduction="none", zero_infinity=True),
    ],
    "multilabel_margin_loss": [
        S((4, 5), I((4, 5), -1, 5)),
        S((5,), I((5,), 0, 5), reduction="sum"),
        S((4, 5), I((4, 5), -1, 5), reduction="none"),
    ],
}

for _name, _cases in SAMPLES.items():
    for _case in _cases:
        if "_torch" not in _case.options:
            _case.options["_torch"] = getattr(F_, _name)
