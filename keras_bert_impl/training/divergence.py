"""Stopping a run that diverged: a non-finite loss, metric or weight, or a loss grown far beyond its start,
raises `TrainingDivergedError`.

`DivergenceGuard` is a Keras callback: after every train batch and every epoch it checks that the loss and
every other logged metric are finite, and that the loss has not grown beyond `GROWTH_LIMIT` (100) times its
start, and otherwise raises `TrainingDivergedError` naming the global optimizer step
(`model.optimizer.iterations`), the metric and its value, and, when it is given the run's checkpoint
directory, the newest checkpoint whose values are all finite (the one a rerun resumes from).

The growth rule: the run is stopped when the logged loss (Keras' running mean over the epoch so far)
exceeds 100 x max(1, start), where the start is the first loss the guard sees (the first step's, before any
update; a resumed run passes the first loss of its train log, `reference_loss`). A diverging run crosses it
within a few steps (at --learning_rate=1000 the tiny fine-tuning model of the tests logs 0.69 at step 1,
about 8e3 at step 2 and 2e7 at step 6, all finite on TensorFlow and JAX), while a healthy run's loss stays
below its start, warmup and dropout included: the curve of docs/pretraining_curve.json falls from 7.74
(the first loop's mean; the first step's loss is about ln(vocab_size) + ln(2)) and never rises above it.
The floor of 1 keeps a run whose start is already small (a fine-tuned model trained further, a resumed run)
from being stopped by an ordinary batch: a loss above 100 is beyond the start of every task here (a
classifier starts near ln(classes), the masked LM near ln(vocab_size) ~ 10).

Raising inside `fit` ends it before the callbacks that come after the guard in the list run for that batch
or epoch, so put it first; `fit` then skips `on_train_end`, so no end-of-training checkpoint is written.

A checkpoint written after the weights became non-finite (the loss of step N is finite, its update is not,
so the checkpoint of step N already holds NaN) is renamed `diverged-ckpt-<step>.weights.h5` by the guard:
it is kept for inspection and is no longer taken for a checkpoint (`checkpoint_store.list_checkpoints`).

`check_finite_weights(model, where)` raises the same error when a variable of the model is not finite; the
drivers call it before they write a best or final model.
"""

import math
import os

import keras
import numpy as np

from keras_bert_impl.training import checkpoint_store
from keras_bert_impl.training.metrics_log import read_metrics_log
from keras_bert_impl.utils.errors import TrainingDivergedError

DIVERGED_PREFIX = "diverged-"
# The growth rule (module docstring): a loss above GROWTH_LIMIT x max(1, its start) stops the run.
GROWTH_LIMIT = 100.0


def _non_finite_logs(logs):
    """`[(name, value), ...]` of the numeric entries of `logs` that are NaN or infinite, `loss` first."""
    found = []
    for name, value in (logs or {}).items():
        try:
            number = float(np.asarray(value))
        except (TypeError, ValueError):  # a non-numeric entry (e.g. a string) is not a metric
            continue
        if not math.isfinite(number):
            found.append((name, number))
    return sorted(found, key=lambda item: (item[0] != "loss", item[0]))


def _is_finite_checkpoint(path):
    """Whether every floating-point array of the `.weights.h5` file `path` is finite."""
    import h5py

    arrays = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda _, item: arrays.append(item[()]) if isinstance(item, h5py.Dataset) else None)
    return all(np.isfinite(a).all() for a in arrays if np.issubdtype(np.asarray(a).dtype, np.floating))


def newest_finite_checkpoint(directory):
    """The `(step, path)` of the newest checkpoint of `directory` whose values are all finite, or `None`.

    Newer checkpoints holding a NaN or an infinity are renamed `diverged-ckpt-<step>.weights.h5`, so that
    `checkpoint_store.restore_latest_checkpoint` (a rerun of the same command) resumes from the finite one.

    Args:
        directory: A checkpoint directory of `checkpoint_store.save_checkpoint`.

    Examples:

    >>> newest_finite_checkpoint("/nonexistent") is None
    True
    """
    for step, path in reversed(checkpoint_store.list_checkpoints(directory)):
        if _is_finite_checkpoint(path):
            return step, path
        name = os.path.basename(path)
        for companion in os.listdir(directory):  # the checkpoint and its side files (e.g. a checksum)
            if companion.startswith(name):
                os.replace(os.path.join(directory, companion), os.path.join(directory, DIVERGED_PREFIX + companion))
    return None


def check_finite_weights(model, where):
    """Raises `TrainingDivergedError` naming `where` and the first variable of `model` that holds a NaN or
    an infinity.

    Args:
        model: A built Keras model.
        where: What the message starts with, e.g. "epoch 3" or "step 1200".

    Examples:

    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="dense")], name="tiny")
    >>> check_finite_weights(model, "step 0")
    >>> _ = model.layers[0].bias.assign([float("nan")])
    >>> try:
    ...     check_finite_weights(model, "step 1")
    ... except TrainingDivergedError as error:
    ...     print(error)
    step 1: the weights are not finite (tiny/dense/bias holds nan).
    """
    for variable in model.weights:
        values = keras.ops.convert_to_numpy(variable)
        if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
            bad = values[~np.isfinite(values)].reshape(-1)[0]
            raise TrainingDivergedError(f"{where}: the weights are not finite ({variable.path} holds {bad}).")


class DivergenceGuard(keras.callbacks.Callback):
    """Raises `TrainingDivergedError` as soon as the loss or a logged metric of a train batch (or of an
    epoch, dev metrics included) is NaN or infinite, or the loss exceeds `GROWTH_LIMIT` x max(1, its start)
    (see the module docstring); the message names the global optimizer step.

    Args:
        checkpoint_dir: The run's checkpoint directory (`checkpoint_store.save_checkpoint`), or `None`. When given,
            the message names its newest finite checkpoint, and newer non-finite ones are set aside
            (`newest_finite_checkpoint`).
        reference_loss: The loss the run started from (a resumed run: the first loss of its train log); None:
            the first loss this guard sees.

    Examples:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer=keras.optimizers.SGD(1e30), loss="mse")
    >>> x = np.ones((8, 2), "float32")
    >>> try:
    ...     model.fit(x, 1e10 * x[:, :1], batch_size=2, epochs=3, verbose=0, callbacks=[DivergenceGuard()])
    ... except TrainingDivergedError as error:
    ...     print(error)
    step 2: loss is inf.

    A finite loss that grows: with a too large learning rate, 1 at the start, 140 after one update.

    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    >>> model.compile(optimizer=keras.optimizers.SGD(3.0), loss="mse")
    >>> try:
    ...     model.fit(x, x[:, :1], batch_size=2, epochs=3, verbose=0, callbacks=[DivergenceGuard()])
    ... except TrainingDivergedError as error:
    ...     print(error)
    step 2: loss is 1.4e+02, more than 100 x max(1, its start 1): the run is diverging.
    """

    def __init__(self, checkpoint_dir=None, reference_loss=None):
        super().__init__()
        self.checkpoint_dir = checkpoint_dir
        self.reference_loss = None if reference_loss is None else float(reference_loss)

    def on_train_batch_end(self, batch, logs=None):
        self._check(logs)

    def on_epoch_end(self, epoch, logs=None):
        self._check(logs, f"epoch {epoch + 1}, ")

    def _check(self, logs, epoch=""):
        problems = [f"{name} is {value}" for name, value in _non_finite_logs(logs)]
        if not problems:
            problems = self._grown(logs)
        if not problems:
            return
        # Read only on failure: reading the model from a callback syncs the JAX state.
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        message = f"{epoch}step {step}: {', '.join(problems)}"
        if self.checkpoint_dir is not None:
            newest = newest_finite_checkpoint(self.checkpoint_dir)
            if newest is None:
                message += f"; {self.checkpoint_dir} holds no finite checkpoint"
            else:
                message += f"; the newest finite checkpoint is {newest[1]} (step {newest[0]})"
        raise TrainingDivergedError(message + ".")

    def _grown(self, logs):
        """["loss is X, more than 100 x max(1, its start S)"] when the loss broke the growth rule, else []."""
        try:
            loss = float(np.asarray((logs or {})["loss"]))
        except (KeyError, TypeError, ValueError):
            return []
        if self.reference_loss is None:
            self.reference_loss = loss
        if loss <= GROWTH_LIMIT * max(1.0, self.reference_loss):
            return []
        return [f"loss is {loss:.2g}, more than {GROWTH_LIMIT:g} x max(1, its start {self.reference_loss:.4g}): "
                "the run is diverging"]


def first_logged_loss(path):
    """The loss of the first record of a train log (`metrics_log.MetricsLogger`'s JSON lines) at `path`, or
    None: the start a resumed run's `DivergenceGuard` compares with."""
    for record in read_metrics_log(path):
        if isinstance(record.get("loss"), (int, float)) and math.isfinite(record["loss"]):
            return float(record["loss"])
    return None
