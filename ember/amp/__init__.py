"""Mixed precision: policies (which dtype parameters are stored, computed and
returned in), autocast (matmuls in bfloat16/float16, softmax, normalisation and
losses in float32), and dynamic loss scaling for float16.

Example:
    >>> import ember.numpy as enp
    >>> from ember import amp, nn, optim
    >>> model = nn.Linear(4, 2)
    >>> step = nn.TrainStep(model, optim.SGD(model, lr=0.1),
    ...                     lambda m, x: (m(x) ** 2).mean(), policy=amp.Policy(compute_dtype="bfloat16"))
    >>> str(step(enp.ones((3, 4))).dtype), str(model.weight.dtype)
    ('float32', 'float32')
"""
from ._autocast import autocast, current_dtype, full_precision, lower_precision
from ._loss_scale import DynamicLossScale, GradScaler, all_finite, select_tree
from ._policy import Policy, get_policy

__all__ = ["DynamicLossScale", "GradScaler", "Policy", "all_finite", "autocast", "current_dtype",
           "full_precision", "get_policy", "lower_precision", "select_tree"]
