"""The stateful, PyTorch-shaped optimiser shim over the functional core.

`Adam(model_or_params_or_groups, lr=...)` keeps parameter groups (`param_groups`,
a list of dicts with PyTorch's keys), one functional state per group, and runs
`step(grads)` as one pure, jitted update.  Hyperparameters reach the compiled
update as array inputs, so writing `opt.param_groups[0]["lr"]` takes effect at
the next step without recompiling.

What can be optimised:
- a *module*: any object with `parameters()` returning a nested-dict pytree of
  arrays and `load_parameters(tree)` (or `_set_parameters(tree)`) writing one
  back; `step` rebinds the module's (immutable) arrays in place.  A view of a
  module's parameters works the same way: `model.parameters()`,
  `model.layer.parameters()` (e.g. as a group's "params"),
  `model.trainable_parameters()` and `model.named_parameters()` remember their
  module, and `step` updates it.  A tied parameter (`dec.weight = enc.weight`) is
  one leaf of those views, as in PyTorch: one state, and `step` writes its new value
  into every slot that holds it;
- a plain pytree of arrays: the optimiser keeps the current values in
  `opt.params` and `step` returns the new ones; arrays that a module holds
  (`SGD([model.weight, model.bias])`, or such lists as groups' "params", as in
  PyTorch) are also rebound in the module's slots, so the module trains;
- a list of parameter groups `[{"params": module_or_pytree, "lr": ...}, ...]`:
  `opt.params` (and the `grads` that `step` takes) is then the list of the
  groups' pytrees.

A compiled training step uses the pure view instead of `step`:

    update = ember.jit(opt.update_fn)
    params, state = update(opt.params, grads, opt.functional_state())
    opt.params = params                  # into the module(s) or the optimizer
    opt.apply_functional_state(state)

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.Adam({"w": enp.asarray([1.0, 2.0])}, lr=0.1)
    >>> new = opt.step({"w": enp.asarray([1.0, -1.0])})
    >>> [round(v, 4) for v in new["w"].tolist()]
    [0.9, 2.1]
    >>> opt.param_groups[0]["lr"] = 0.01          # next step uses it, no recompile
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .. import dtypes as _dt
from .. import tree
from ..fx.core import get_aval
from . import _ops
from . import optimizers as _opt
from .core import (
    InjectState,
    _as_hp,
    apply_updates,
    check_same_structure,
    validate_hyperparam,
)

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop",
           "Adagrad", "Adadelta", "Lion", "LAMB", "ASGD", "Rprop", "ParamGroup"]

# Keys that learning-rate schedulers keep in parameter groups (PyTorch's names).
SCHEDULER_KEYS = frozenset({"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum",
                            "swa_lr"})
# Performance switches of torch.optim that have no meaning here: ember always runs
# the whole update as one compiled, differentiable program.
_TORCH_PERF_FLAGS = frozenset({"foreach", "fused", "capturable", "differentiable"})


def _is_module(obj) -> bool:
    return callable(getattr(obj, "parameters", None)) and not isinstance(obj, (dict, list, tuple))


def _module_setter(module):
    for name in ("load_parameters", "_set_parameters"):
        fn = getattr(module, name, None)
        if callable(fn):
            return fn
    raise TypeError(f"{type(module).__name__} has parameters() but no load_parameters(tree) or "
                    f"_set_parameters(tree); the optimiser needs one to write updated values back")


def _module_source(src):
    """(module, read) when `src` is a module or a view of a module's parameters
    (`model.parameters()`, `model.layer.parameters()`, `model.named_parameters()`):
    `read()` gives the current values as a plain nested dict and the module's
    `load_parameters` writes new ones back.  None for a plain pytree."""
    if callable(getattr(type(src), "module_source", None)):
        module, read = src.module_source()
        _module_setter(module)
        return module, read
    if _is_module(src):
        _module_setter(src)
        return src, lambda: dict(src.parameters())
    return None


def _is_group_list(obj) -> bool:
    return (isinstance(obj, (list, tuple)) and len(obj) > 0
            and all(isinstance(g, dict) and "params" in g for g in obj))


def _registration_order(ptree):
    """perm with perm[j] = the pytree-leaf index of the j-th parameter in
    registration order: dicts in insertion order (a module's parameters() is built
    in registration order), lists and tuples by index, other nodes in pytree order.
    PyTorch numbers optimiser state this way; pytree leaves sort dict keys."""
    index = {path: i for i, (path, _) in enumerate(tree.leaves_with_path(ptree))}
    perm = []
    stack = [((), ptree)]
    while stack:
        path, node = stack.pop()
        if type(node) in (dict, OrderedDict, list, tuple):
            items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            stack.extend((path + (k,), v) for k, v in reversed(items))
        elif path in index:
            perm.append(index[path])
        else:  # another container: its leaves in pytree order
            perm.extend(index[path + sub] for sub, _ in tree.leaves_with_path(node))
    if sorted(perm) != list(range(len(index))):
        # a node type whose paths do not compose as above: fall back to pytree order
        return list(range(len(index)))
    return perm


def _reject_detached_names(cls, src):
    """A list made from a module's parameter listing has lost the module: stepping it
    would update a copy the module never sees, so say what to pass instead."""
    if not isinstance(src, (list, tuple)) or not src:
        return
    if all(isinstance(x, str) for x in src):
        raise TypeError(f"{cls}: got a list of names {list(src)[:3]}...: iterating "
                        f"model.parameters() gives its keys; pass the module, or "
                        f"model.parameters() itself, so that step() updates the module")
    if all(isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in src):
        raise TypeError(f"{cls}: got a list of (name, array) pairs: the list no longer knows its "
                        f"module, so step() could not update it; pass the module, "
                        f"model.parameters() or model.named_parameters() itself")


def _reject_partial_groups(cls, params, defaults):
    """A list of dicts that looks like parameter groups but where some lack "params"
    (`[{"lr": 0.1}]`, or one group without it) is a mistake PyTorch refuses; as a pytree
    it would silently optimise the hyperparameter values themselves."""
    if not isinstance(params, (list, tuple)) or not params or \
            not all(isinstance(g, dict) for g in params):
        return
    has = ["params" in g for g in params]
    hyper = set(defaults) | SCHEDULER_KEYS
    if any(has) and not all(has) or (not any(has) and any(set(g) & hyper for g in params)):
        i = has.index(False)
        raise ValueError(f"{cls}: parameter group {i} ({sorted(params[i])}) has no 'params' "
                         f"entry; PyTorch raises here too. Hint: every group is a dict "
                         f"{{'params': ..., 'lr': ...}}")


def _held_by_modules(ptree) -> bool:
    """Whether any leaf of a plain pytree is an array some live module holds as a
    parameter or buffer (`SGD([model.weight], ...)`, PyTorch's habit)."""
    from ..nn.module import holding_slots
    return any(holding_slots(leaf) for leaf in tree.leaves(ptree))


class ParamGroup(dict):
    """One parameter group: a dict of PyTorch's keys whose writes are validated.

    Assigning a hyperparameter (`group["lr"] = 0.01`) takes effect at the next
    `step`; structural flags (`amsgrad`, `nesterov`, ...) and `params` are fixed.

    Example:
        >>> import ember.numpy as enp
        >>> opt = SGD([enp.asarray(1.0)], lr=0.1)
        >>> opt.param_groups[0]["lr"] = 0.05
        >>> opt.param_groups[0]["lr"]
        0.05
    """

    def __init__(self, optimizer, data=()):
        super().__init__(data)
        self._optimizer = optimizer

    def __setitem__(self, key, value):
        self._optimizer._check_group_item(self, key, value)
        super().__setitem__(key, value)

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args, **kwargs):
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def __reduce__(self):
        return (dict, (dict(self),))


class Optimizer:
    """Base class of the PyTorch-style optimisers.  Subclasses name a functional
    factory (`_factory`), their defaults, and which keys are structural.

    `zero_grad()` exists and does nothing: ember gradients are values returned by
    `ember.grad`, never buffers accumulated on the parameters.
    """
    _factory = None
    _static_keys: tuple = ("maximize",)
    _init_only_keys: tuple = ()

    def __init__(self, params, defaults: dict, *, jit: bool = True):
        self.defaults = dict(defaults)
        for k, v in self.defaults.items():
            self._validate_value(k, v)
        self.param_groups: list[ParamGroup] = []
        self._slots: list[dict] = []
        self._grouped = False
        self._jit = bool(jit)
        self._compiled = None
        if params is None or isinstance(params, (str, bytes)):
            raise TypeError(f"{type(self).__name__} needs a module, a pytree of parameters or a "
                            f"list of parameter groups, got {type(params).__name__}")
        _reject_partial_groups(type(self).__name__, params, self.defaults)
        if _is_group_list(params):
            groups = list(params)
            self._grouped = True
        else:
            if _module_source(params) is None and not isinstance(params, (dict, list, tuple)) \
                    and hasattr(params, "__iter__") and not _ops.is_array(params):
                params = list(params)
            groups = [{"params": params}]
        for g in groups:
            self.add_param_group(g)

    # --- groups -----------------------------------------------------------------

    def _validate_value(self, key, value):
        if key in self._static_keys:
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{type(self).__name__}: {key} must be a bool, got {value!r}")
            return
        if key in ("betas", "etas", "step_sizes"):
            if not isinstance(value, (tuple, list)) or len(value) != 2 or \
                    any(_ops.concrete(b) is None for b in value):
                raise ValueError(f"Invalid {key}: {value!r} (expected a pair of numbers)")
            if key == "etas" and not 0.0 < _ops.concrete(value[0]) < 1.0 < _ops.concrete(value[1]):
                raise ValueError(f"Invalid eta values: {value[0]}, {value[1]} (need "
                                 f"0 < etaminus < 1 < etaplus)")
        elif _ops.concrete(value) is None:
            raise TypeError(f"{type(self).__name__}: hyperparameter {key} must be a number, got "
                            f"{type(value).__name__}")
        validate_hyperparam(key, value)

    def _check_group_item(self, group, key, value):
        cls = type(self).__name__
        if key == "params":
            raise ValueError(f"{cls}: a parameter group's 'params' cannot be replaced; use "
                             f"add_param_group or a new optimizer")
        if key in SCHEDULER_KEYS:
            return
        if key not in self.defaults:
            raise ValueError(f"{cls}: unknown parameter group key {key!r}; valid keys are "
                             f"{sorted(self.defaults)} (and the scheduler keys "
                             f"{sorted(SCHEDULER_KEYS)})")
        self._validate_value(key, value)
        if key in self._static_keys and key in group and bool(group[key]) != bool(value):
            raise ValueError(f"{cls}: {key} fixes the structure of the optimizer state and cannot "
                             f"change after construction (it is {group[key]}); create a new "
                             f"optimizer instead")

    def add_param_group(self, param_group: dict) -> None:
        """Add a group: a dict with "params" (a module or a pytree of arrays) and any
        hyperparameters that differ from the defaults.

        Example:
            >>> import ember.numpy as enp
            >>> opt = SGD([{"params": [enp.asarray(1.0)]}], lr=0.1)
            >>> opt.add_param_group({"params": [enp.asarray(2.0)], "lr": 0.5})
            >>> [g["lr"] for g in opt.param_groups]
            [0.1, 0.5]
        """
        cls = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError(f"{cls}: a parameter group needs a 'params' entry")
        src = param_group["params"]
        source = _module_source(src)
        module, read = source if source is not None else (None, None)
        if module is not None:
            ptree = read()
            ids = {id(v) for v in tree.leaves(ptree)}
            if any(s["module"] is not None and ids & {id(v) for v in tree.leaves(s["read"]())}
                   for s in self._slots):
                raise ValueError(f"{cls}: some parameters appear in more than one parameter group")
        else:
            if _ops.is_array(src):
                raise TypeError(f"{cls}: params must be a pytree of arrays (e.g. a dict or a list), "
                                f"not a single array; wrap it as [x]")
            _reject_detached_names(cls, src)
            ptree = src
        ptree = self._check_params(ptree)
        held = module is None and _held_by_modules(ptree)
        if module is None:
            ids = {id(v) for v in tree.leaves(ptree)}
            if any(s["module"] is None and ids & {id(v) for v in tree.leaves(g["params"])}
                   for g, s in zip(self.param_groups, self._slots)):
                raise ValueError(f"{cls}: some parameters appear in more than one parameter group")
        group = ParamGroup(self)
        dict.__setitem__(group, "params", module if module is not None else ptree)
        for k, v in param_group.items():
            if k != "params":
                group[k] = v
        for k, v in self.defaults.items():
            if k not in group:
                group[k] = v
        tx = self._build(group)
        self.param_groups.append(group)
        # held: arrays that module slots hold (`[model.weight]`); step rebinds those slots
        # to the new values, so the module trains as it would in PyTorch
        self._slots.append({"module": module, "read": read, "tx": tx, "state": tx.init(ptree),
                            "held": held})
        if len(self.param_groups) > 1:
            self._grouped = True
        self._compiled = None

    def _check_params(self, ptree):
        cls = type(self).__name__

        def conv(path, x):
            if not _ops.is_array(x):
                if isinstance(x, (np.ndarray, np.generic, float)):
                    x = _ops.asarray(x)
                else:
                    raise TypeError(f"{cls}: parameter at {''.join(f'[{k!r}]' for k in path) or '<root>'}"
                                    f" is a {type(x).__name__}, not an array")
            if not _dt.is_inexact(get_aval(x).dtype):
                raise TypeError(f"{cls} can only optimize floating-point arrays, but the parameter "
                                f"at {''.join(f'[{k!r}]' for k in path) or '<root>'} has dtype "
                                f"{get_aval(x).dtype}")
            return x
        out = tree.map_with_path(conv, ptree)
        if not tree.leaves(out):
            raise ValueError(f"{cls} got an empty parameter list")
        return out

    def _factory_kwargs(self, group):
        return {k: (tuple(v) if isinstance(v, list) else v) for k, v in group.items()
                if k in self.defaults}

    def _build(self, group):
        return type(self)._factory(**self._factory_kwargs(group))

    # --- the pure view ------------------------------------------------------------

    @property
    def params(self):
        """The current parameters: one pytree, or a list of the groups' pytrees when the
        optimizer was given parameter groups."""
        trees = [s["read"]() if s["module"] is not None else g["params"]
                 for g, s in zip(self.param_groups, self._slots)]
        return trees if self._grouped else trees[0]

    @params.setter
    def params(self, new):
        """Write parameters (shaped like `opt.params`, e.g. from a compiled step built on
        `update_fn`) back into the module(s) or the optimizer's own trees."""
        check_same_structure(new, self.params, "new params", "params")
        trees = new if self._grouped else [new]
        for group, slot, t in zip(self.param_groups, self._slots, trees):
            if slot["module"] is not None:
                _module_setter(slot["module"])(t)
            else:
                if slot.get("held"):
                    from ..nn.module import rebind_array
                    for old, new_leaf in zip(tree.leaves(group["params"]), tree.leaves(t)):
                        rebind_array(old, new_leaf)
                dict.__setitem__(group, "params", t)

    def _hyper(self, group, state: InjectState):
        hp = {}
        for k in state.hyperparams:
            v = group[k]
            hp[k] = _as_hp(k, tuple(v) if isinstance(v, list) else v)
        return InjectState(state.count, hp, state.inner_state)

    def functional_state(self) -> list:
        """The optimiser state as a pytree of arrays (one entry per parameter group),
        with the hyperparameters of `param_groups` as float64 arrays.

        Example:
            >>> import ember.numpy as enp
            >>> opt = SGD([enp.asarray(1.0)], lr=0.1)
            >>> float(opt.functional_state()[0].hyperparams["lr"])
            0.1
        """
        return [self._hyper(g, s["state"]) for g, s in zip(self.param_groups, self._slots)]

    def apply_functional_state(self, state) -> None:
        """Adopt `state` (as returned by `update_fn`) as the optimiser's state.
        Hyperparameters stay those of `param_groups`, which remain their source.

        Example:
            >>> import ember.numpy as enp
            >>> opt = SGD([enp.asarray(1.0)], lr=0.1)
            >>> opt.apply_functional_state(opt.functional_state())
        """
        check_same_structure(state, self.functional_state(), "state", "the optimizer's state")
        for s, new in zip(self._slots, state):
            s["state"] = new

    def update_fn(self, params, grads, state):
        """The pure update: `(params, grads, state) -> (new_params, new_state)`, with
        `params` shaped like `opt.params` and `state` like `functional_state()`.
        Wrap it in `ember.jit` for a compiled training step.

        Example:
            >>> import ember, ember.numpy as enp
            >>> opt = SGD([enp.asarray(1.0)], lr=0.5)
            >>> step = ember.jit(opt.update_fn)
            >>> p, s = step(opt.params, [enp.asarray(1.0)], opt.functional_state())
            >>> p[0].tolist()
            0.5
        """
        ps = params if self._grouped else [params]
        gs = grads if self._grouped else [grads]
        if len(ps) != len(self._slots) or len(gs) != len(self._slots) or len(state) != len(self._slots):
            raise ValueError(f"update_fn expects one params tree, grads tree and state per "
                             f"parameter group ({len(self._slots)})")
        new_p, new_s = [], []
        for i, (slot, p, g, s) in enumerate(zip(self._slots, ps, gs, state)):
            self._check_grad_shapes(i, g, p)
            u, s = slot["tx"].update(g, s, p)
            new_p.append(apply_updates(p, u))
            new_s.append(s)
        return (new_p if self._grouped else new_p[0]), new_s

    def _check_grad_shapes(self, group_index, grads, params):
        check_same_structure(grads, params, "grads", "params")
        for (path, g), p in zip(tree.leaves_with_path(grads), tree.leaves(params)):
            gs, ps = tuple(get_aval(g).shape), tuple(get_aval(p).shape)
            if gs != ps:
                where = f" in parameter group {group_index}" if self._grouped else ""
                raise ValueError(f"{type(self).__name__}.step: the gradient for parameter "
                                 f"{'.'.join(str(k) for k in path) or '<root>'}{where} has shape {gs} "
                                 f"but the parameter has shape {ps}; grads must be shaped like "
                                 f"opt.params")

    # --- the stateful API -----------------------------------------------------------

    def _runner(self):
        if not self._jit:
            return self.update_fn
        if self._compiled is None:
            import ember
            self._compiled = ember.jit(self.update_fn)
        return self._compiled

    def step(self, grads=None):
        """Apply one update with `grads` (shaped like `opt.params`), write the new
        parameters back (into the module(s), or `opt.params`) and return them.

        Example:
            >>> import ember.numpy as enp
            >>> opt = SGD({"w": enp.asarray(1.0)}, lr=0.5)
            >>> opt.step({"w": enp.asarray(1.0)})["w"].tolist()
            0.5
        """
        if grads is None or callable(grads):
            raise TypeError(f"{type(self).__name__}.step(grads) needs the gradients, a pytree "
                            f"shaped like opt.params (compute them with ember.grad); closures "
                            f"are not supported")
        params = self.params
        check_same_structure(grads, params, "grads", "params")
        new_params, new_state = self._runner()(params, grads, self.functional_state())
        self.params = new_params
        for slot, s in zip(self._slots, new_state):
            slot["state"] = s
        return new_params

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Does nothing, on purpose: ember gradients are the values `ember.grad` returns,
        not buffers accumulated on the parameters, so there is nothing to clear.
        Kept so that PyTorch training loops run unchanged.

        Example:
            >>> import ember.numpy as enp
            >>> SGD([enp.asarray(1.0)], lr=0.1).zero_grad()
        """
        return None

    # --- state_dict ----------------------------------------------------------------

    def _exported_fields(self, group, inner):
        """(field name, value) pairs of a group's rule state that PyTorch keeps per parameter."""
        out = []
        for name in inner._fields:
            v = getattr(inner, name)
            if v is None or name == "momentum_started":
                continue
            out.append((name, v))
        return out

    def state_dict(self) -> dict:
        """The optimizer state in PyTorch's layout:
        `{"state": {index: {"step": ..., "exp_avg": ..., ...}}, "param_groups": [{..., "params": [index, ...]}]}`.
        Parameters are numbered across groups in registration order, as PyTorch
        numbers them: a module's parameters as `named_parameters()` lists them, a
        dict's in insertion order, a list's by position.

        Example:
            >>> import ember.numpy as enp
            >>> opt = Adam([enp.asarray(1.0)], lr=0.1)
            >>> _ = opt.step([enp.asarray(1.0)])
            >>> sorted(opt.state_dict()["state"][0])
            ['exp_avg', 'exp_avg_sq', 'step']
        """
        state, groups, index = {}, [], 0
        for group, slot, ptree in zip(self.param_groups, self._slots, self._trees()):
            n = len(tree.leaves(ptree))
            ids = list(range(index, index + n))
            index += n
            st = slot["state"]
            if int(st.count) > 0:
                per = [dict() for _ in range(n)]  # in pytree-leaf order
                for name, v in self._exported_fields(group, st.inner_state):
                    if name == "step":
                        for d in per:
                            d["step"] = _ops.asarray(np.float32(int(v)))
                    elif _ops.is_array(v):
                        # a scalar the group shares (NAdam's mu_product): PyTorch keeps a copy
                        # per parameter
                        for d in per:
                            d[name] = v
                    else:
                        for d, leaf in zip(per, tree.leaves(v)):
                            d[name] = leaf
                for i, leaf_index in zip(ids, _registration_order(ptree)):
                    if per[leaf_index]:
                        state[i] = per[leaf_index]
            g = {k: (tuple(v) if isinstance(v, list) else v) for k, v in group.items() if k != "params"}
            g["params"] = ids
            groups.append(g)
        return {"state": state, "param_groups": groups}

    def _trees(self):
        p = self.params
        return p if self._grouped else [p]

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state from `state_dict()` (ours, or PyTorch's with the same groups: its
        tensors convert through numpy, and its foreach/fused/... switches are ignored).

        Example:
            >>> import ember.numpy as enp
            >>> opt = Adam([enp.asarray(1.0)], lr=0.1)
            >>> opt.load_state_dict(opt.state_dict())
        """
        cls = type(self).__name__
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict \
                or "state" not in state_dict:
            raise ValueError(f"{cls}.load_state_dict needs a dict with 'state' and 'param_groups'")
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        trees = self._trees()
        for sg, ptree in zip(saved_groups, trees):
            if len(sg["params"]) != len(tree.leaves(ptree)):
                raise ValueError("loaded state dict contains a parameter group that doesn't match "
                                 "the size of optimizer's group")
        saved_state = state_dict["state"]
        new_states = []
        for group, slot, sg, ptree in zip(self.param_groups, self._slots, saved_groups, trees):
            for k, v in sg.items():
                if k != "params" and k not in _TORCH_PERF_FLAGS:
                    group[k] = tuple(v) if isinstance(v, list) else v
            entries = [None] * len(sg["params"])  # in pytree-leaf order
            for i, leaf_index in zip(sg["params"], _registration_order(ptree)):
                e = saved_state.get(i, saved_state.get(str(i))) or {}
                # PyTorch may store None for a buffer it has not created yet
                entries[leaf_index] = {k: v for k, v in e.items() if v is not None}
            new_states.append(self._import_group(slot, ptree, entries))
        for slot, s in zip(self._slots, new_states):
            slot["state"] = s

    def _import_group(self, slot, ptree, entries):
        cls = type(self).__name__
        fresh = slot["tx"].init(ptree)
        inner = fresh.inner_state
        if not any(entries):
            return fresh
        leaves, treedef = tree.flatten(ptree)
        values = {}
        count = None
        for name in inner._fields:
            cur = getattr(inner, name)
            if name == "momentum_started":
                continue
            if name == "step":
                steps = {float(np.asarray(e["step"])) for e in entries if "step" in e}
                if len(steps) > 1:
                    raise ValueError(f"{cls}.load_state_dict: the parameters of a group have different "
                                     f"step counts {sorted(steps)}; ember keeps one count per group")
                count = int(steps.pop()) if steps else 0
                values["step"] = _ops.asarray(np.int32(count))
                continue
            if cur is None:
                continue
            have = [name in e for e in entries]
            if not any(have):
                continue
            if not all(have):
                raise ValueError(f"{cls}.load_state_dict: {name!r} is saved for some parameters of a "
                                 f"group but not for others")
            if _ops.is_array(cur):
                values[name] = _ops.astype(_ops.asarray(np.asarray(entries[0][name])), get_aval(cur).dtype)
                continue
            arrs = []
            for e, p, path in zip(entries, leaves, tree.leaves_with_path(ptree)):
                a = _ops.asarray(np.asarray(e[name]))
                if get_aval(a).shape != get_aval(p).shape:
                    raise ValueError(f"{cls}.load_state_dict: {name!r} for the parameter at "
                                     f"{''.join(f'[{k!r}]' for k in path[0])} has shape "
                                     f"{get_aval(a).shape}, expected {get_aval(p).shape}")
                arrs.append(_ops.astype(a, get_aval(p).dtype))
            values[name] = tree.unflatten(treedef, arrs)
        if "momentum_started" in inner._fields:
            values["momentum_started"] = _ops.asarray(np.bool_("momentum_buffer" in values))
        inner = inner._replace(**values)
        if count is None:
            count = int(any(entries))
        return InjectState(_ops.asarray(np.int32(count)), fresh.hyperparams, inner)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


def _perf_flags(cls, flags):
    bad = sorted(set(flags) - _TORCH_PERF_FLAGS)
    if bad:
        raise TypeError(f"{cls}.__init__() got unexpected keyword arguments {bad}")


class SGD(Optimizer):
    """Stochastic gradient descent, `torch.optim.SGD`'s arguments and semantics
    (momentum, dampening, Nesterov, coupled L2 weight decay).

    Example:
        >>> import ember.numpy as enp
        >>> SGD([enp.asarray(1.0)], lr=0.1, momentum=0.9).defaults["momentum"]
        0.9
    """
    _factory = staticmethod(_opt.sgd)
    _static_keys = ("nesterov", "maximize")

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, jit=True, **torch_flags):
        _perf_flags("SGD", torch_flags)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize), jit=jit)

    def _exported_fields(self, group, inner):
        if not bool(inner.momentum_started):
            return []
        return [("momentum_buffer", inner.momentum_buffer)]


class Adam(Optimizer):
    """Adam, `torch.optim.Adam`'s arguments and formula (coupled L2 weight decay, amsgrad;
    `decoupled_weight_decay=True` makes it AdamW).

    Example:
        >>> import ember.numpy as enp
        >>> Adam([enp.asarray(1.0)]).defaults["betas"]
        (0.9, 0.999)
    """
    _factory = staticmethod(_opt.adam)
    _static_keys = ("amsgrad", "maximize", "decoupled_weight_decay")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, maximize=False, decoupled_weight_decay=False, jit=True,
                 **torch_flags):
        _perf_flags("Adam", torch_flags)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay), jit=jit)


class AdamW(Optimizer):
    """AdamW, `torch.optim.AdamW`'s arguments and formula (decoupled weight decay,
    default 1e-2).

    Example:
        >>> import ember.numpy as enp
        >>> AdamW([enp.asarray(1.0)]).defaults["weight_decay"]
        0.01
    """
    _factory = staticmethod(_opt.adam)
    _static_keys = ("amsgrad", "maximize", "decoupled_weight_decay")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, jit=True, **torch_flags):
        _perf_flags("AdamW", torch_flags)
        # PyTorch's AdamW is Adam with decoupled_weight_decay=True, and its groups say so
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, decoupled_weight_decay=True), jit=jit)


class NAdam(Optimizer):
    """NAdam, `torch.optim.NAdam`'s arguments and formula (momentum_decay,
    decoupled_weight_decay for NAdamW).  The momentum product `mu_product` is
    float64 and exact; PyTorch keeps it as a float32 scalar unless its default
    dtype is float64, so a float64 run matches PyTorch under
    `torch.set_default_dtype(torch.float64)` (to ~1e-16) and differs from its
    float32 default by ~1e-10 per step.

    Example:
        >>> import ember.numpy as enp
        >>> NAdam([enp.asarray(1.0)]).defaults["momentum_decay"]
        0.004
    """
    _factory = staticmethod(_opt.nadam)
    _static_keys = ("decoupled_weight_decay", "maximize")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, maximize=False, jit=True,
                 **torch_flags):
        _perf_flags("NAdam", torch_flags)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize), jit=jit)


class RAdam(Optimizer):
    """RAdam, `torch.optim.RAdam`'s arguments and formula.

    Example:
        >>> import ember.numpy as enp
        >>> RAdam([enp.asarray(1.0)]).defaults["lr"]
        0.001
    """
    _factory = staticmethod(_opt.radam)
    _static_keys = ("decoupled_weight_decay", "maximize")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, maximize=False, jit=True, **torch_flags):
        _perf_flags("RAdam", torch_flags)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize), jit=jit)


class Adamax(Optimizer):
    """Adamax, `torch.optim.Adamax`'s arguments and formula.

    Example:
        >>> import ember.numpy as enp
        >>> Adamax([enp.asarray(1.0)]).defaults["lr"]
        0.002
    """
    _factory = staticmethod(_opt.adamax)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, *,
                 maximize=False, jit=True, **torch_flags):
        _perf_flags("Adamax", torch_flags)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize), jit=jit)


class RMSprop(Optimizer):
    """RMSprop, `torch.optim.RMSprop`'s arguments and formula (alpha, centered, momentum).

    Example:
        >>> import ember.numpy as enp
        >>> RMSprop([enp.asarray(1.0)]).defaults["alpha"]
        0.99
    """
    _factory = staticmethod(_opt.rmsprop)
    _static_keys = ("centered", "maximize")

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, *, maximize=False, jit=True, **torch_flags):
        _perf_flags("RMSprop", torch_flags)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize),
                         jit=jit)

    def _exported_fields(self, group, inner):
        out = super()._exported_fields(group, inner)
        if not float(group["momentum"]) > 0:
            out = [(n, v) for n, v in out if n != "momentum_buffer"]
        return out


class Adagrad(Optimizer):
    """Adagrad, `torch.optim.Adagrad`'s arguments and formula (lr_decay,
    initial_accumulator_value, which only matters at construction).

    Example:
        >>> import ember.numpy as enp
        >>> Adagrad([enp.asarray(1.0)]).defaults["eps"]
        1e-10
    """
    _factory = staticmethod(_opt.adagrad)

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, *, maximize=False, jit=True,
                 **torch_flags):
        _perf_flags("Adagrad", torch_flags)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize), jit=jit)


class Adadelta(Optimizer):
    """Adadelta, `torch.optim.Adadelta`'s arguments and formula.

    Example:
        >>> import ember.numpy as enp
        >>> Adadelta([enp.asarray(1.0)]).defaults["rho"]
        0.9
    """
    _factory = staticmethod(_opt.adadelta)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, *, maximize=False,
                 jit=True, **torch_flags):
        _perf_flags("Adadelta", torch_flags)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize), jit=jit)


class Lion(Optimizer):
    """Lion (Chen et al. 2023): sign of an interpolated momentum, decoupled weight decay.

    Example:
        >>> import ember.numpy as enp
        >>> Lion([enp.asarray(1.0)]).defaults["betas"]
        (0.9, 0.99)
    """
    _factory = staticmethod(_opt.lion)

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, *, maximize=False,
                 jit=True):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay,
                                      maximize=maximize), jit=jit)


class LAMB(Optimizer):
    """LAMB (You et al. 2019): Adam steps scaled per tensor by the trust ratio ||p|| / ||r||.

    Example:
        >>> import ember.numpy as enp
        >>> LAMB([enp.asarray(1.0)]).defaults["eps"]
        1e-06
    """
    _factory = staticmethod(_opt.lamb)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, *,
                 maximize=False, jit=True):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize), jit=jit)


class ASGD(Optimizer):
    """Averaged SGD, `torch.optim.ASGD`'s arguments and formula; the averaged
    parameters are the `ax` entries of `state_dict()["state"]`.

    Example:
        >>> import ember.numpy as enp
        >>> opt = ASGD([enp.asarray(1.0)], lr=0.1)
        >>> round(opt.step([enp.asarray(1.0)])[0].item(), 6)
        0.89999
    """
    _factory = staticmethod(_opt.asgd)

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, *,
                 maximize=False, jit=True, **torch_flags):
        _perf_flags("ASGD", torch_flags)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, maximize=maximize), jit=jit)


class Rprop(Optimizer):
    """Resilient backpropagation, `torch.optim.Rprop`'s arguments and formula (full-batch
    training: only the gradient's sign moves the parameters).

    Example:
        >>> import ember.numpy as enp
        >>> opt = Rprop([enp.asarray(1.0)], lr=0.1)
        >>> round(opt.step([enp.asarray(3.0)])[0].item(), 6)
        0.9
    """
    _factory = staticmethod(_opt.rprop)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0), *,
                 maximize=False, jit=True, **torch_flags):
        _perf_flags("Rprop", torch_flags)
        pair = lambda v: tuple(v) if isinstance(v, (list, tuple)) else v  # noqa: E731
        super().__init__(params, dict(lr=lr, etas=pair(etas), step_sizes=pair(step_sizes),
                                      maximize=maximize), jit=jit)
