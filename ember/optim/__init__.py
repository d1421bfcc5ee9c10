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
from .core import (GradientTransformation, EmptyState, InjectState, chain, apply_updates,  # noqa: F401
                   inject_hyperparams, get_hyperparam, set_hyperparam, hyperparams,
                   check_same_structure, validate_hyperparam)
from .transforms import (identity, scale, scale_by_learning_rate, scale_by_schedule,  # noqa: F401
                         clip_by_global_norm, clip_by_value, add_decayed_weights,
                         default_decay_mask, multi_transform, accumulate_gradients,
                         ScaleByScheduleState, MultiTransformState, AccumulateState)
from .optimizers import (sgd, adam, adamw, nadam, radam, adamax, rmsprop, adagrad,  # noqa: F401
                         adadelta, lion, lamb, SGDState, AdamState, AdamaxState, NAdamState,
                         RAdamState, RMSpropState, AdagradState, AdadeltaState, LionState,
                         LambState)
from . import schedules  # noqa: F401
from .schedules import (constant, linear, polynomial, cosine_decay, warmup_cosine,  # noqa: F401
                        exponential_decay, piecewise_constant, one_cycle)
from .shim import (Optimizer, SGD, Adam, AdamW, NAdam, RAdam, Adamax, RMSprop,  # noqa: F401
                   Adagrad, Adadelta, Lion, LAMB)
from . import lr_scheduler  # noqa: F401
