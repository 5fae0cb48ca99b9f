"""BERT's optimizers: the warmup + linear-decay schedule, AdamWeightDecay and LAMB.

This mirrors google-research/bert `optimization.py`:

* `WarmupLinearDecay` is the learning rate that `create_optimizer` builds there
  (`tf.train.polynomial_decay(..., power=1.0, end_learning_rate=0.0)` plus a linear warmup).
* `AdamWeightDecay` is `AdamWeightDecayOptimizer`: Adam moments *without* bias correction and
  the decoupled weight decay added to the update before it is scaled by the learning rate.
* `Lamb` is the layer-wise adaptive optimizer of You et al. (2019) used for large-batch BERT
  pre-training (the TF-Addons / NVIDIA formulation with the weight decay inside the trust ratio).

Weight-decay exclusions are regular expressions searched (`re.search`) in each Keras 3
variable's `path` (e.g. `"bert_backbone/transformer_layer_0/attention_layer_norm/gamma"`), the
Keras 3 counterpart of the TF1 variable names the original matched against.

All update math uses `keras.ops`, so the optimizers run on the TensorFlow, JAX and PyTorch
backends and inside `model.fit`'s compiled train step.
"""

import functools
import re

import keras
from keras import ops

from keras_bert_impl import backends
from keras_bert_impl.backends.tf_replicas import num_replicas_in_sync, replica_sum
from keras_bert_impl.utils import keras_compat
from keras_bert_impl.utils.errors import UserInputError

#: The exclusions of the original `create_optimizer`. Every LayerNormalization layer of this
#: package has "layer_norm" in its name and every bias variable is called "bias".
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("layer_norm", "LayerNorm", "bias")


def _variable_path(variable):
    return getattr(variable, "path", None) or variable.name


@functools.lru_cache(maxsize=4096)
def _path_matches_any(patterns, path):
    return any(re.search(pattern, path) is not None for pattern in patterns)


def _matches_any(patterns, variable):
    return _path_matches_any(tuple(patterns), _variable_path(variable))


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup followed by linear decay to zero, as in google-research/bert.

    With `step` the optimizer's iteration count *before* the update (Keras passes
    `optimizer.iterations`, which starts at 0, exactly like the original's `global_step`):

    * `decayed = init_lr * (1 - min(step, num_train_steps) / num_train_steps)`
      (`tf.train.polynomial_decay` with `power=1.0`, `end_learning_rate=0.0`, `cycle=False`);
    * if `num_warmup_steps > 0` and `step < num_warmup_steps`:
      `lr = init_lr * step / num_warmup_steps`, else `lr = decayed`.

    As in the original, the very first update (step 0) therefore uses a learning rate of 0 when
    there is a warmup, and the decay is counted from step 0 (not from the end of the warmup), so
    right after the warmup the rate is `init_lr * (1 - num_warmup_steps / num_train_steps)`.

    Args:
        init_lr: Peak learning rate (float).
        num_train_steps: Step at which the rate reaches 0 (int > 0); later steps stay at 0.
        num_warmup_steps: Number of warmup steps (int >= 0); 0 disables the warmup.
        name: Optional name of the schedule.

    Examples:

    >>> schedule = WarmupLinearDecay(init_lr=1e-4, num_train_steps=100, num_warmup_steps=10)
    >>> [round(float(schedule(s)), 8) for s in (0, 5, 10, 50, 100, 200)]
    [0.0, 5e-05, 9e-05, 5e-05, 0.0, 0.0]
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, name=None):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be positive, got {num_train_steps}.")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}.")
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.name = name

    def __call__(self, step):
        step = ops.cast(step, "float32")
        init_lr = ops.cast(self.init_lr, "float32")
        decay_step = ops.minimum(step, float(self.num_train_steps))
        learning_rate = init_lr * (1.0 - decay_step / float(self.num_train_steps))
        if self.num_warmup_steps:
            warmup_learning_rate = init_lr * (step / float(self.num_warmup_steps))
            learning_rate = ops.where(step < float(self.num_warmup_steps), warmup_learning_rate, learning_rate)
        return learning_rate

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "name": self.name,
        }


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class OptimizerStepSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """`schedule` counted in optimizer steps under gradient accumulation: `schedule(batch // accumulation_steps)`.

    Keras evaluates an optimizer's schedule at its count of batches; with `gradient_accumulation_steps` N the
    variables are updated once every N batches (at the group's last batch), and `optimizer.iterations` counts
    those updates. `AdamWeightDecay` and `Lamb` wrap their schedule in this one, so that warmup and decay are
    counted in updates, as without accumulation: update k (0-based) uses `schedule(k)`.

    Examples:

    >>> schedule = OptimizerStepSchedule(WarmupLinearDecay(1.0, num_train_steps=10, num_warmup_steps=4), 2)
    >>> [round(float(schedule(batch)), 2) for batch in (1, 3, 5, 7, 9)]  # updates 0..4
    [0.0, 0.25, 0.5, 0.75, 0.6]
    """

    def __init__(self, schedule, accumulation_steps):
        if isinstance(schedule, dict):
            schedule = keras.optimizers.schedules.deserialize(schedule)
        self.schedule = schedule
        self.accumulation_steps = int(accumulation_steps)

    def __call__(self, step):
        return self.schedule(ops.floor_divide(step, self.accumulation_steps))

    def get_config(self):
        return {"schedule": keras.optimizers.schedules.serialize(self.schedule),
                "accumulation_steps": self.accumulation_steps}


class _BertOptimizerBase(keras_compat.OptimizerHooks):
    """Shared plumbing: Adam's moments and direction, weight-decay exclusion by variable path, clipping,
    config. Its arguments and defaults are those of both subclasses (see their docstrings)."""

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay_rate=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=None,
        global_clipnorm=1.0,
        **kwargs,
    ):
        if kwargs.get("weight_decay") is not None:
            raise ValueError(
                f"{type(self).__name__} applies its own decoupled weight decay; pass "
                "`weight_decay_rate` instead of Keras's `weight_decay`."
            )
        kwargs.pop("weight_decay", None)
        accumulation_steps = kwargs.get("gradient_accumulation_steps")
        if (accumulation_steps and isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule)
                and not isinstance(learning_rate, OptimizerStepSchedule)):
            learning_rate = OptimizerStepSchedule(learning_rate, accumulation_steps)
        super().__init__(learning_rate=learning_rate, global_clipnorm=global_clipnorm, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        if exclude_from_weight_decay is None:
            exclude_from_weight_decay = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY
        # Not `self.exclude_from_weight_decay`: that name is a method of the Keras base class.
        self._exclude_from_weight_decay_patterns = tuple(exclude_from_weight_decay)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(var_list, ["m", "v"])

    def _update_moments(self, gradient, variable):
        """m = beta_1 m + (1 - beta_1) g;  v = beta_2 v + (1 - beta_2) g^2.  Returns the new (m, v)."""
        index = self.variable_index(variable)
        m = self._momentums[index]
        v = self._velocities[index]
        self.assign(m, ops.add(ops.multiply(m, self.beta_1), ops.multiply(gradient, 1.0 - self.beta_1)))
        self.assign(v, ops.add(ops.multiply(v, self.beta_2), ops.multiply(ops.square(gradient), 1.0 - self.beta_2)))
        return m, v

    def _adam_direction(self, gradient, variable, bias_correction):
        """The update before the learning rate: m / (sqrt(v) + epsilon), with bias-corrected m and v when
        `bias_correction`, plus `weight_decay_rate * variable` unless the variable is excluded."""
        dtype = variable.dtype
        m, v = self._update_moments(ops.cast(gradient, dtype), variable)
        if bias_correction:
            local_step = ops.cast(self.iterations + 1, dtype)
            m = ops.divide(m, 1.0 - ops.power(ops.cast(self.beta_1, dtype), local_step))
            v = ops.divide(v, 1.0 - ops.power(ops.cast(self.beta_2, dtype), local_step))
        update = ops.divide(m, ops.add(ops.sqrt(v), self.epsilon))
        if self._do_use_weight_decay(variable):
            update = ops.add(update, ops.multiply(variable, self.weight_decay_rate))
        return update

    def clip_gradients(self, grads):
        """Global-norm clipping of the GLOBAL gradient, also under a tf.distribute strategy.

        Keras clips inside each replica, before the gradients are summed over the replicas, which clips
        each replica's share instead of the whole gradient. Here the shares are summed first, the sum is
        clipped, and every replica gets an equal part of it, so that Keras' own sum gives exactly the
        clipped global gradient. (Costs one extra all-reduce; nothing changes on one device, JAX or torch.)
        """
        replicas = num_replicas_in_sync()
        if self.global_clipnorm is None or replicas == 1:
            if self.global_clipnorm and not self.clipnorm:
                return backends.clip_by_global_norm(grads, self.global_clipnorm, super().clip_gradients)
            return super().clip_gradients(grads)
        summed = replica_sum([g for g in grads if g is not None])
        summed = iter(super().clip_gradients(summed))
        return [None if g is None else next(summed) / replicas for g in grads]

    def _do_use_weight_decay(self, variable):
        """Whether `variable` is decayed (the original's `_do_use_weight_decay`, on paths)."""
        if not self.weight_decay_rate:
            return False
        return not _matches_any(self._exclude_from_weight_decay_patterns, variable)

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay", None)
        config.update(
            {
                "weight_decay_rate": self.weight_decay_rate,
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "exclude_from_weight_decay": list(self._exclude_from_weight_decay_patterns),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class AdamWeightDecay(_BertOptimizerBase):
    """The original BERT `AdamWeightDecayOptimizer` (Adam without bias correction + decoupled L2).

    For every variable `w` with (globally clipped) gradient `g`:

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g**2
        update = m / (sqrt(v) + epsilon)
        update += weight_decay_rate * w        # unless the variable path matches an exclusion
        w -= learning_rate * update

    With `bias_correction=True`, `m` and `v` in `update` are replaced by
    `m / (1 - beta_1**t)` and `v / (1 - beta_2**t)` (`t` = iterations + 1), i.e. standard AdamW
    (Loshchilov & Hutter) with the decay scaled by the learning rate.

    Gradients are clipped with Keras's own `global_clipnorm` (default 1.0, like the original's
    `tf.clip_by_global_norm(grads, clip_norm=1.0)`). The learning rate may be a float or a
    `LearningRateSchedule` such as `WarmupLinearDecay`, evaluated at the step count before the
    update.

    With `gradient_accumulation_steps=N` (Keras' argument) the variables are updated once every N
    batches, with the mean of their N gradients (clipped as one), and the schedule and bias correction
    count those updates (`OptimizerStepSchedule`): N batches of B examples make the update one batch of
    N * B makes.

    Args:
        learning_rate: Float or `keras.optimizers.schedules.LearningRateSchedule`.
        bias_correction: If True, use bias-corrected moments (standard AdamW). The original BERT
            optimizer has none (False).
        name: Optimizer name.
        **kwargs: The keyword arguments below, and other `keras.optimizers.Optimizer` arguments
            (`clipnorm`, `clipvalue`, `use_ema`, `gradient_accumulation_steps`, ...). Keras's
            `weight_decay` is refused: use `weight_decay_rate`.

    Keyword Args:
        weight_decay_rate: Decoupled weight decay coefficient; 0 disables it.
        beta_1: Decay rate of the first moment.
        beta_2: Decay rate of the second moment.
        epsilon: Added to `sqrt(v)` in the denominator.
        exclude_from_weight_decay: Regular expressions; a variable whose `path` contains a match
            (`re.search`) gets no weight decay. `None` means
            `("layer_norm", "LayerNorm", "bias")`.
        global_clipnorm: Clip all gradients together to this global norm (Keras base argument);
            `None` disables clipping.

    Examples:

    >>> schedule = WarmupLinearDecay(init_lr=2e-5, num_train_steps=1000, num_warmup_steps=100)
    >>> optimizer = AdamWeightDecay(learning_rate=schedule, weight_decay_rate=0.01)
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer=optimizer, loss="mse")
    """

    def __init__(self, learning_rate=0.001, *, bias_correction=False, name="adam_weight_decay", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.bias_correction = bool(bias_correction)

    def update_variables(self, grads, variables, learning_rate):
        backends.adam_weight_decay_update(
            self, grads, variables, learning_rate,
            keras_update=lambda: super(AdamWeightDecay, self).update_variables(grads, variables, learning_rate))

    def update_step(self, gradient, variable, learning_rate):
        update = self._adam_direction(gradient, variable, self.bias_correction)
        self.assign_sub(variable, ops.multiply(ops.cast(learning_rate, variable.dtype), update))

    def get_config(self):
        config = super().get_config()
        config.update(
            {"bias_correction": self.bias_correction}
        )
        return config


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class Lamb(_BertOptimizerBase):
    """LAMB (You et al., 2019, "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes").

    For every variable `w` with (globally clipped) gradient `g`, `t` = iterations + 1:

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g**2
        r = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)
        r += weight_decay_rate * w                # unless excluded from weight decay
        trust_ratio = ||w|| / ||r||               # 1.0 if either norm is 0, or if excluded
        w -= learning_rate * trust_ratio * r      #     from layer adaptation

    Norms are the L2 norms of the whole variable (the "layer"). This is the TF-Addons / NVIDIA
    BERT formulation.

    Args:
        learning_rate: as in `AdamWeightDecay`.
        exclude_from_layer_adaptation: Regular expressions; matching variables use a trust ratio
            of 1. `None` means the same patterns as `exclude_from_weight_decay`.
        name: Optimizer name.
        **kwargs: The keyword arguments below, and other `keras.optimizers.Optimizer` arguments
            (Keras's `weight_decay` is refused).

    Keyword Args:
        weight_decay_rate: as in `AdamWeightDecay`.
        beta_1: as in `AdamWeightDecay`.
        beta_2: as in `AdamWeightDecay`.
        epsilon: Added to `sqrt(v_hat)` in the denominator.
        exclude_from_weight_decay: as in `AdamWeightDecay`.
        global_clipnorm: Clip all gradients together to this global norm before the update
            (as BERT's LAMB recipes do); `None` disables clipping.

    Examples:

    >>> optimizer = Lamb(learning_rate=1e-3, weight_decay_rate=0.01)
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer=optimizer, loss="mse")
    """

    def __init__(self, learning_rate=0.001, *, exclude_from_layer_adaptation=None, name="lamb", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        if exclude_from_layer_adaptation is None:
            self._exclude_from_layer_adaptation_patterns = None
        else:
            self._exclude_from_layer_adaptation_patterns = tuple(exclude_from_layer_adaptation)

    def _do_layer_adaptation(self, variable):
        patterns = self._exclude_from_layer_adaptation_patterns
        if patterns is None:
            patterns = self._exclude_from_weight_decay_patterns
        return not _matches_any(patterns, variable)

    def update_step(self, gradient, variable, learning_rate):
        update = self._adam_direction(gradient, variable, bias_correction=True)
        if self._do_layer_adaptation(variable):
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            r_norm = ops.sqrt(ops.sum(ops.square(update)))
            safe_r_norm = ops.where(r_norm > 0, r_norm, ops.ones_like(r_norm))
            trust_ratio = ops.where(
                ops.logical_and(w_norm > 0, r_norm > 0), w_norm / safe_r_norm, ops.ones_like(w_norm)
            )
            update = ops.multiply(trust_ratio, update)
        self.assign_sub(variable, ops.multiply(ops.cast(learning_rate, variable.dtype), update))

    def get_config(self):
        config = super().get_config()
        patterns = self._exclude_from_layer_adaptation_patterns
        config.update(
            {"exclude_from_layer_adaptation": None if patterns is None else list(patterns)}
        )
        return config


def create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer_type="adamw", **kwargs):
    """The optimizer of google-research/bert `create_optimizer`, as a Keras 3 optimizer.

    Builds a `WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)` schedule and returns
    an `AdamWeightDecay` (`optimizer_type="adamw"`, the original) or a `Lamb`
    (`optimizer_type="lamb"`) optimizer driven by it, with gradients clipped to a global norm
    of `global_clipnorm`.

    Args:
        init_lr: Peak learning rate.
        num_train_steps: Total number of optimizer steps (the rate decays to 0 there).
        num_warmup_steps: Number of linear warmup steps (0 for none).
        optimizer_type: `"adamw"` or `"lamb"`.
        **kwargs: The optimizer's other arguments, with its defaults: `weight_decay_rate=0.01`,
            `beta_1=0.9`, `beta_2=0.999`, `epsilon=1e-6`, `exclude_from_weight_decay=None` (path
            patterns exempt from weight decay and, for LAMB, from layer adaptation; `None` for
            `("layer_norm", "LayerNorm", "bias")`), `global_clipnorm=1.0` (the original's; `None`
            disables it); and `bias_correction` (default False) for "adamw",
            `exclude_from_layer_adaptation` for "lamb".

    Returns:
        An `AdamWeightDecay` or `Lamb` instance.

    Examples:

    >>> optimizer = create_optimizer(5e-5, num_train_steps=1000, num_warmup_steps=100)
    >>> type(optimizer).__name__
    'AdamWeightDecay'
    >>> type(create_optimizer(1e-3, 1000, 100, optimizer_type="lamb")).__name__
    'Lamb'
    """
    schedule = WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)
    optimizer_type = optimizer_type.lower()
    if optimizer_type in ("adamw", "adam_weight_decay", "adamweightdecay"):
        return AdamWeightDecay(schedule, **kwargs)
    if optimizer_type == "lamb":
        return Lamb(schedule, **kwargs)
    raise ValueError(f"Unknown optimizer_type {optimizer_type!r}; expected 'adamw' or 'lamb'.")


def accumulation_options(gradient_accumulation_steps, train_batch_size):
    """The optimizer's `gradient_accumulation_steps` option ({} for 1), or a `UserInputError` naming the flag
    when it does not divide `--train_batch_size` (each update's batch is split into that many).

    Examples:

    >>> accumulation_options(4, 32), accumulation_options(1, 32)
    ({'gradient_accumulation_steps': 4}, {})
    """
    if gradient_accumulation_steps < 1 or train_batch_size % gradient_accumulation_steps:
        raise UserInputError(f"--gradient_accumulation_steps={gradient_accumulation_steps}: expected a positive "
                             f"divisor of --train_batch_size={train_batch_size}.")
    return {"gradient_accumulation_steps": gradient_accumulation_steps} if gradient_accumulation_steps > 1 else {}
