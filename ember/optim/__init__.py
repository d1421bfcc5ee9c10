"""`ember.optim`: functional optimisers (pure `init`/`update` transformations with
hyperparameters as state arrays), a stateful PyTorch-style `Optimizer` shim, and
learning-rate schedules.

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> params = {"w": enp.asarray([1.0, -1.0])}
    >>> opt = optim.SGD(params, lr=0.25)
    >>> opt.step({"w": enp.asarray([1.0, 1.0])})["w"].tolist()
    [0.75, -1.25]
"""
from . import lr_scheduler, schedules, swa_utils
from .adafactor import Adafactor, AdafactorState, adafactor
from .lbfgs import LBFGS
from .core import (EmptyState, GradientTransformation, InjectState, apply_updates, chain,
                   check_same_structure, get_hyperparam, hyperparams, inject_hyperparams,
                   set_hyperparam, validate_hyperparam)
from .optimizers import (AdadeltaState, AdagradState, AdamaxState, AdamState, ASGDState,
                         LambState, LionState, NAdamState, RAdamState, RMSpropState, RpropState,
                         SGDState, adadelta, adagrad, adam, adamax, adamw, asgd, lamb, lion, nadam,
                         radam, rmsprop, rprop, sgd)
from .schedules import (constant, cosine_decay, exponential_decay, linear, one_cycle,
                        piecewise_constant, polynomial, warmup_cosine)
from .shim import (ASGD, LAMB, SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, Lion, NAdam,
                   Optimizer, RAdam, RMSprop, Rprop)
from .transforms import (AccumulateState, MultiTransformState, ScaleByScheduleState,
                         accumulate_gradients, add_decayed_weights, clip_by_global_norm,
                         clip_by_value, default_decay_mask, identity, multi_transform, scale,
                         scale_by_learning_rate, scale_by_schedule)

__all__ = [
    # core
    "GradientTransformation", "EmptyState", "InjectState", "chain", "apply_updates",
    "inject_hyperparams", "get_hyperparam", "set_hyperparam", "hyperparams",
    "check_same_structure", "validate_hyperparam",
    # building blocks
    "identity", "scale", "scale_by_learning_rate", "scale_by_schedule", "clip_by_global_norm",
    "clip_by_value", "add_decayed_weights", "default_decay_mask", "multi_transform",
    "accumulate_gradients", "ScaleByScheduleState", "MultiTransformState", "AccumulateState",
    # optimisers (functional)
    "sgd", "adam", "adamw", "nadam", "radam", "adamax", "rmsprop", "adagrad", "adadelta", "lion",
    "lamb", "SGDState", "AdamState", "AdamaxState", "NAdamState", "RAdamState", "RMSpropState",
    "AdagradState", "AdadeltaState", "LionState", "LambState", "asgd", "rprop", "ASGDState",
    "RpropState",
    # schedules
    "schedules", "constant", "linear", "polynomial", "cosine_decay", "warmup_cosine",
    "exponential_decay", "piecewise_constant", "one_cycle",
    # stateful shim and schedulers
    "Optimizer", "SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adagrad",
    "Adadelta", "Lion", "LAMB", "ASGD", "Rprop", "lr_scheduler",
    # in their own files
    "adafactor", "Adafactor", "AdafactorState", "LBFGS", "swa_utils",
]
