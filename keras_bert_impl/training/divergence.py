"""Stopping a run that diverged: a non-finite loss, metric or weight raises `TrainingDivergedError`.

`DivergenceGuard` is a Keras callback: after every train batch and every epoch it checks that the loss and
every other logged metric are finite, and otherwise raises `TrainingDivergedError` naming the global
optimizer step (`model.optimizer.iterations`), the metric and its value, and, when it is given the run's
checkpoint directory, the newest checkpoint whose values are all finite (the one a rerun resumes from).
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
from keras_bert_impl.utils.errors import TrainingDivergedError

DIVERGED_PREFIX = "diverged-"


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
    epoch, dev metrics included) is NaN or infinite; the message names the global optimizer step.

    Args:
        checkpoint_dir: The run's checkpoint directory (`checkpoint_store.save_checkpoint`), or `None`. When given,
            the message names its newest finite checkpoint, and newer non-finite ones are set aside
            (`newest_finite_checkpoint`).

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
    """

    def __init__(self, checkpoint_dir=None):
        super().__init__()
        self.checkpoint_dir = checkpoint_dir

    def on_train_batch_end(self, batch, logs=None):
        self._check(logs)

    def on_epoch_end(self, epoch, logs=None):
        self._check(logs, f"epoch {epoch + 1}, ")

    def _check(self, logs, epoch=""):
        non_finite = _non_finite_logs(logs)
        if not non_finite:
            return
        # Read only on failure: reading the model from a callback syncs the JAX state.
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        values = ", ".join(f"{name} is {value}" for name, value in non_finite)
        message = f"{epoch}step {step}: {values}"
        if self.checkpoint_dir is not None:
            newest = newest_finite_checkpoint(self.checkpoint_dir)
            if newest is None:
                message += f"; {self.checkpoint_dir} holds no finite checkpoint"
            else:
                message += f"; the newest finite checkpoint is {newest[1]} (step {newest[0]})"
        raise TrainingDivergedError(message + ".")
